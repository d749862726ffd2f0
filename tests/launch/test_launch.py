"""The run API (`hydroplane.launch`) and the `hydroplane run` command, on the reference executor and,
differentially, on the Vulkan device of the test userland (lavapipe)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_tool

from hydroplane.cli import main
from hydroplane.launch import executors as launch

KERNEL = """#version 450
layout(local_size_x = 32) in;
layout(constant_id = 0) const float SCALE = 1.0;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
layout(push_constant) uniform P { float offset; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    b[i] = a[i] * SCALE + offset + b[i];
}
"""


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory, glslang):
    d = tmp_path_factory.mktemp("launch")
    src = d / "k.comp"
    src.write_text(KERNEL)
    out = d / "k.spv"
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(src), "-o", str(out)])
    return out


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)


def test_run_on_the_reference_executor(kernel_path):
    a, b = _inputs(1)
    out = launch.run(kernel_path.read_bytes(), (2, 1, 1), {0: a, 1: b}, spec={0: 3.0},
                     push=np.float32(0.5), device="ref")
    assert out[1].dtype == np.float32 and out[1].shape == (64,)
    np.testing.assert_array_equal(out[1], a * np.float32(3) + np.float32(0.5) + b)
    np.testing.assert_array_equal(out[0], a)


def test_get_executor_and_protocol():
    ex = launch.get_executor("ref", subgroup_size=16)
    assert isinstance(ex, launch.Executor)
    assert ex.subgroup_size == 16
    ex.close()
    with pytest.raises(launch.LaunchError, match="'ref' or a Vulkan device number"):
        launch.get_executor("gpu")
    with pytest.raises(launch.LaunchError, match="only apply to the reference executor"):
        launch.get_executor(0, subgroup_size=8)


def test_unknown_spec_id_and_entry_are_errors(kernel_path):
    a, b = _inputs(2)
    with pytest.raises(launch.SpecConstantError, match=r"specialization constant 7: the module has no such SpecId"):
        launch.run(kernel_path.read_bytes(), (2, 1, 1), {0: a, 1: b}, spec={7: 1}, push=np.float32(0))
    with pytest.raises(launch.LaunchError, match="no GLCompute entry point 'other' \\(the module has: main\\)"):
        launch.run(kernel_path.read_bytes(), (2, 1, 1), {0: a, 1: b}, entry="other", push=np.float32(0))


def test_cli_run(kernel_path, tmp_path, capsys):
    a, b = _inputs(3)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "p.npy", np.array([2.0], np.float32))
    rc = main(["run", str(kernel_path), "--grid", "2,1,1", "--buf", f"0={tmp_path / 'a.npy'}",
               "--buf", f"1={tmp_path / 'b.npy'}", "--out", f"1={tmp_path / 'o.npy'}", "--spec", "0=0.5",
               "--push", str(tmp_path / "p.npy"), "--device", "ref", "--subgroup-size", "8"])
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), a * np.float32(0.5) + np.float32(2) + b)


def test_cli_push_values_pack_by_the_blocks_declared_types(kernel_path, tmp_path, capsys):
    a, b = _inputs(8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    base = ["run", str(kernel_path), "--grid", "2", "--buf", f"0={tmp_path / 'a.npy'}", "--buf",
            f"1={tmp_path / 'b.npy'}", "--out", f"1={tmp_path / 'o.npy'}", "--device", "ref"]
    assert main([*base, "--push", "-1.25"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), a + np.float32(-1.25) + b)
    assert main([*base, "--push", "1,2"]) == 1
    assert "2 values given for the block's 1 members" in capsys.readouterr().err
    assert main([*base, "--push", "x"]) == 1
    assert "'x' is not a number" in capsys.readouterr().err


def test_cli_errors_are_one_line(kernel_path, tmp_path, capsys):
    a, _ = _inputs(4)
    np.save(tmp_path / "a.npy", a)
    rc = main(["run", str(kernel_path), "--buf", f"0={tmp_path / 'a.npy'}", "--out", f"1={tmp_path / 'o.npy'}"])
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("hydroplane: error: --out 1: binding 1 has no --buf")
    rc = main(["run", str(kernel_path), "--buf", f"0={tmp_path / 'missing.npy'}"])
    assert rc == 1 and "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", str(kernel_path), "--grid", "2,x"])


@pytest.mark.vulkan
def test_same_answer_on_lavapipe_and_the_reference_executor(kernel_path):
    a, b = _inputs(5)
    args = dict(spec={0: 1.5}, push=np.float32(-0.25))
    ref = launch.run(kernel_path.read_bytes(), (2, 1, 1), {0: a, 1: b}, device="ref", **args)
    dev = launch.run(kernel_path.read_bytes(), (2, 1, 1), {0: a, 1: b}, device=0, **args)
    np.testing.assert_array_equal(ref[1], dev[1])


@pytest.mark.vulkan
def test_cli_run_on_device_0(kernel_path, tmp_path):
    a, b = _inputs(6)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "p.npy", np.array([0.75], np.float32))
    outs = {}
    for device in ("ref", "0"):
        out = tmp_path / f"o_{device}.npy"
        rc = main(["run", str(kernel_path), "--grid", "2", "--buf", f"0={tmp_path / 'a.npy'}",
                   "--buf", f"1={tmp_path / 'b.npy'}", "--out", f"1={out}", "--device", device,
                   "--push", str(tmp_path / "p.npy")])
        assert rc == 0
        outs[device] = np.load(out)
    np.testing.assert_array_equal(outs["ref"], a + np.float32(0.75) + b)  # SCALE defaults to 1
    np.testing.assert_array_equal(outs["0"], outs["ref"])


def test_unset_push_constants_are_reported(kernel_path, tmp_path, capsys):
    a, b = _inputs(7)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    rc = main(["run", str(kernel_path), "--buf", f"0={tmp_path / 'a.npy'}", "--buf", f"1={tmp_path / 'b.npy'}"])
    assert rc == 1
    assert "push constants" in capsys.readouterr().err


def test_cli_collect_lists_every_diagnostic(glslang, tmp_path, capsys):
    src = tmp_path / "oob.comp"
    src.write_text("""#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
void main() { uint i = gl_GlobalInvocationID.x; b[i + 16u] = a[i + 8u]; }""")
    spv = tmp_path / "oob.spv"
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(src), "-o", str(spv)])
    a = np.arange(32, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.full(32, -1, np.float32))
    rc = main(["run", str(spv), "--buf", f"0={tmp_path / 'a.npy'}", "--buf", f"1={tmp_path / 'b.npy'}",
               "--out", f"1={tmp_path / 'o.npy'}", "--collect"])
    assert rc == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("hydroplane: out-of-bounds:") for line in err)
    assert "read" in err[0] and "write" in err[1]
    out = np.load(tmp_path / "o.npy")
    want = np.full(32, -1, np.float32)
    want[16:] = np.concatenate([a[8:], np.zeros(8, np.float32)])[:16]
    np.testing.assert_array_equal(out, want)
