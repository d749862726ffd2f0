"""`python3 -m hydroplane run` with bad inputs (issue 8, "What was found" 4): each is refused before any work
with exit status 1 and one line naming the binding or file, the same on `--device ref` and `--device 0`
(lavapipe). Also: --out B=SHAPE:DTYPE, progress on a terminal and Ctrl-C, --version, `spirv reflect`, files of
the wrong kind, and an old spirv-val named by its version."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import REPO, run_tool

from hydroplane.spirv import text

KERNEL = """#version 450
layout(local_size_x = 16) in;
layout(constant_id = 0) const uint BIAS = 0u;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
layout(push_constant) uniform P { float scale; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    b[i] = a[i] * scale + b[i] + float(BIAS);
}
"""

DEVICES = ["ref", pytest.param("0", marks=pytest.mark.vulkan)]


SIGINT_DEFAULT = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "runpy.run_module('hydroplane', run_name='__main__', alter_sys=True)")  # `python -m hydroplane`


def hydroplane(*args, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    """`python3 -m hydroplane ARGS` in a fresh interpreter (what the console command runs)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), **(extra_env or {}))
    return subprocess.run([sys.executable, "-m", "hydroplane", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def files(tmp_path_factory, glslang):
    """The module and good inputs: a (64 float32), b (64 float32, poisoned), push (one float32)."""
    d = tmp_path_factory.mktemp("run_cli")
    (d / "k.comp").write_text(KERNEL)
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(d / "k.comp"), "-o", str(d / "k.spv")])
    rng = np.random.default_rng(8)
    np.save(d / "a.npy", rng.standard_normal(64).astype(np.float32))
    np.save(d / "b.npy", rng.standard_normal(64).astype(np.float32))
    np.save(d / "a64.npy", rng.standard_normal(64))
    np.save(d / "push.npy", np.array([2.5], np.float32))
    np.save(d / "push8.npy", np.array([2.5, 1.0], np.float32))
    (d / "a.txt").write_text("1 2 3\n")
    (d / "k.spvasm").write_text(text.disassemble((d / "k.spv").read_bytes()))
    return d


def good_args(d, device, changes=()):
    """A good command line; `changes` (flag, value) pairs replace the good value of the same flag (and binding)."""
    pairs = [("--grid", "4"), ("--buf", f"0={d / 'a.npy'}"), ("--buf", f"1={d / 'b.npy'}"),
             ("--push", str(d / "push.npy")), ("--device", device)]
    for flag, value in changes:
        same = [i for i, (f, v) in enumerate(pairs) if f == flag and (flag != "--buf" or v[:2] == value[:2])]
        if same:
            pairs[same[0]] = (flag, value)
        else:
            pairs.append((flag, value))
    return ["run", d / "k.spv"] + [x for pair in pairs for x in pair]


def assert_one_line_error(proc, message: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("hydroplane: error: "), proc.stderr
    assert message in proc.stderr, proc.stderr


@pytest.mark.parametrize("device", DEVICES)
def test_good_run_writes_the_answer(files, device, tmp_path):
    proc = hydroplane(*good_args(files, device), "--spec", "0=3", "--out", f"1={tmp_path / 'o.npy'}")
    assert proc.returncode == 0, proc.stderr
    a, b = np.load(files / "a.npy"), np.load(files / "b.npy")
    # lavapipe may fuse the multiply-add; the reference executor rounds each operation
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), a * np.float32(2.5) + b + np.float32(3), rtol=1e-6)


BAD_INPUTS = [
    ("float64 .npy for a float buffer", ["--buf", "0={d}/a64.npy"],
     "binding 0 (A): a float64 array for a buffer of f32[]; give float32 (or RawBytes / --raw"),
    ("a binding the module lacks", ["--buf", "3={d}/a.npy"],
     "binding 3: the module has no such binding (it has: binding 0, binding 1)"),
    ("--out into a missing folder", ["--out", "1={d}/missing/o.npy", "--grid", "0"],
     "--out 1: cannot write {d}/missing/o.npy: folder {d}/missing does not exist"),
    ("--out into a folder", ["--out", "1={d}"], "--out 1: {d} is a folder, not a file"),
    ("--grid 0", ["--grid", "0"], "grid (0, 1, 1) has a dimension below 1: no workgroup would run"),
    ("--grid beyond the limit", ["--grid", "4,70000"],
     "grid (4, 70000, 1): y = 70000 is above the executor's maxComputeWorkGroupCount"),
    ("push constants of the wrong size", ["--push", "{d}/push8.npy"],
     "push constants: 8 bytes given for the module's 4-byte block"),
    ("a spec value that does not fit", ["--spec", "0=-1"], "specialization constant 0 (u32): -1 does not fit u32"),
    ("an unknown spec id", ["--spec", "4=1"], "specialization constant 4: the module has no such SpecId (it has: 0)"),
    ("a text file for --buf", ["--buf", "0={d}/a.txt"], "--buf 0: {d}/a.txt is not a .npy array"),
    ("a SPIR-V module for --buf", ["--buf", "0={d}/k.spv"],
     "--buf 0: {d}/k.spv is not a .npy array (it is a SPIR-V binary)"),
    ("--out without a --buf", ["--out", "5={d}/o.npy"],
     "--out 5: binding 5 has no --buf (its size and dtype are unknown); give --out 5={d}/o.npy:SHAPE:DTYPE"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("what, extra, message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_1(files, device, what, extra, message):
    changes = [(extra[i], extra[i + 1].format(d=files)) for i in range(0, len(extra), 2)]
    args = good_args(files, device, changes)
    assert_one_line_error(hydroplane(*args), message.format(d=files))


@pytest.mark.parametrize("device", DEVICES)
def test_missing_buffer_is_the_same_error_on_both(files, device):
    args = ["run", files / "k.spv", "--grid", "4", "--buf", f"0={files / 'a.npy'}", "--push", files / "push.npy",
            "--device", device]
    assert_one_line_error(hydroplane(*args), "binding 1 (B): no buffer given; the module declares it as f32[] "
                                             "(read-write)")


@pytest.mark.parametrize("device", DEVICES)
def test_assembly_text_as_the_module_points_to_spirv_as(files, device):
    args = good_args(files, device)
    args[1] = files / "k.spvasm"
    assert_one_line_error(hydroplane(*args), f"{files}/k.spvasm: this is SPIR-V assembly text; use "
                                             f"`hydroplane spirv as {files}/k.spvasm -o OUT.spv`")


@pytest.mark.parametrize("device", DEVICES)
def test_out_shape_dtype_allocates_without_a_placeholder(files, device, tmp_path):
    base = ["run", files / "k.spv", "--grid", "4", "--buf", f"0={files / 'a.npy'}", "--push", files / "push.npy",
            "--device", device]
    proc = hydroplane(*base, "--out", f"1={tmp_path / 'o.npy'}:8x8:float32")
    assert proc.returncode == 0, proc.stderr
    out = np.load(tmp_path / "o.npy")
    assert out.shape == (8, 8) and out.dtype == np.float32
    np.testing.assert_array_equal(out.reshape(-1), np.load(files / "a.npy") * np.float32(2.5))
    printed = hydroplane(*base, "--grid", "1", "--out", "1=16:f32")
    assert printed.returncode == 0, printed.stderr
    head, body = printed.stdout.split("\n", 1)
    assert head == "binding 1 (16 float32):"
    values = np.array(body.replace("[", " ").replace("]", " ").split(), np.float32)
    np.testing.assert_allclose(values, np.load(files / "a.npy")[:16] * np.float32(2.5), rtol=1e-6)
    bad = hydroplane(*base, "--out", "1=8x8:float33")
    assert bad.returncode == 2 and "SHAPE:DTYPE" in bad.stderr


@pytest.mark.parametrize("device", DEVICES)
def test_raw_takes_any_dtype(files, device, tmp_path):
    bits = np.load(files / "a.npy").view(np.uint32)
    np.save(tmp_path / "bits.npy", bits)
    args = good_args(files, device, [("--buf", f"0={tmp_path / 'bits.npy'}")])
    refused = hydroplane(*args)
    assert_one_line_error(refused, "binding 0 (A): a uint32 array for a buffer of f32[]")
    proc = hydroplane(*args, "--raw", "0", "--out", f"1={tmp_path / 'o.npy'}")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"),
                               np.load(files / "a.npy") * np.float32(2.5) + np.load(files / "b.npy"), rtol=1e-6)


def test_long_reference_run_shows_progress_and_stops_on_ctrl_c(files, tmp_path):
    n = 65535 * 16
    np.save(tmp_path / "a.npy", np.zeros(n, np.float32))
    np.save(tmp_path / "b.npy", np.zeros(n, np.float32))
    primary, secondary = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    # SIGINT raises KeyboardInterrupt in the child even where the test runner was started with SIGINT ignored (a
    # background job of a shell without job control: a CI run started with `&` failed here, 2026-12-06), since an
    # ignored signal stays ignored through exec and Python then leaves it so
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_DEFAULT, "run", str(files / "k.spv"), "--grid", "65535,64",
                             "--buf", f"0={tmp_path / 'a.npy'}", "--buf", f"1={tmp_path / 'b.npy'}",
                             "--push", str(files / "push.npy"), "--out", f"1={tmp_path / 'o.npy'}"],
                            stdout=subprocess.PIPE, stderr=secondary, env=env)
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while b"workgroups " not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if ready:
                seen += os.read(primary, 4096)
        assert b"hydroplane: workgroups " in seen and b"/4194240 (" in seen, seen
        proc.send_signal(signal.SIGINT)
        while True:
            ready, _, _ = select.select([primary], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            seen += chunk
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    tail = seen.decode(errors="replace").replace("\r\n", "\n")
    assert rc == 130, tail
    assert tail.endswith("\r\x1b[Khydroplane: interrupted\n"), tail[-200:]
    assert "Traceback" not in tail
    assert not (tmp_path / "o.npy").exists()


def test_no_progress_when_stderr_is_not_a_terminal(files, tmp_path):
    proc = hydroplane(*good_args(files, "ref"), "--out", f"1={tmp_path / 'o.npy'}")
    assert proc.returncode == 0 and proc.stderr == ""


def test_version():
    proc = hydroplane("--version")
    assert proc.returncode == 0 and proc.stdout == "hydroplane 0.1.0\n"


def test_reflect_text_and_json(files):
    proc = hydroplane("spirv", "reflect", files / "k.spv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "entry point main (GLCompute): local size 16 x 1 x 1"
    assert "  set 0 binding 0  A  storage_buffer  f32[]  read-only  4 bytes per element" in lines
    assert "  set 0 binding 1  B  storage_buffer  f32[]  read-write  4 bytes per element" in lines
    assert "push constants: 4 bytes" in lines and "  SpecId 0  BIAS  u32  default 0" in lines
    assert "capabilities: Shader" in lines
    data = json.loads(hydroplane("spirv", "reflect", "--json", files / "k.spv").stdout)
    assert data["push_constant_size"] == 4
    assert data["entry_points"][0]["local_size"] == [16, 1, 1]
    assert [(b["binding"], b["element"], b["access"]) for b in data["bindings"]] == [
        (0, "f32[]", "read-only"), (1, "f32[]", "read-write")]
    assert data["spec_constants"] == [{"spec_id": 0, "name": "BIAS", "type": "u32", "default": 0}]


def test_reflect_lists_matrix_types(tmp_path):
    from hydroplane.spirv.samples import coop_matmul_tile

    (tmp_path / "tile.spv").write_bytes(coop_matmul_tile(8, 8, 8, a_type="f16", c_type="f32").tobytes())
    data = json.loads(hydroplane("spirv", "reflect", "--json", tmp_path / "tile.spv").stdout)
    assert "coopmat<f16, Subgroup, 8x8, A>" in data["matrix_types"]
    assert "CooperativeMatrixKHR" in data["capabilities"]
    assert [b["element"] for b in data["bindings"]] == ["f16[]", "f16[]", "f32[]", "f32[]"]


@pytest.mark.parametrize("command", ["dis", "val", "reflect"])
def test_assembly_text_given_where_a_binary_belongs(files, command):
    proc = hydroplane("spirv", command, files / "k.spvasm")
    assert_one_line_error(proc, f"{files}/k.spvasm: this is SPIR-V assembly text; use `hydroplane spirv as")


def test_binary_given_to_spirv_as_points_to_dis(files, tmp_path):
    proc = hydroplane("spirv", "as", files / "k.spv", "-o", tmp_path / "x.spv")
    assert_one_line_error(proc, f"{files}/k.spv: this is a SPIR-V binary, not assembly text; use "
                                f"`hydroplane spirv dis {files}/k.spv`")


def test_glsl_and_npy_given_as_a_module(files):
    assert_one_line_error(hydroplane("spirv", "dis", files / "k.comp"), f"{files}/k.comp: this is GLSL source")
    assert_one_line_error(hydroplane("spirv", "reflect", files / "a.npy"),
                          f"{files}/a.npy: this is a NumPy .npy array, not a SPIR-V module")


def test_an_old_spirv_val_is_named_with_its_version(tmp_path):
    """A stand-in for bookworm's spirv-val 2023.1: its --version line and the parse error it gives a
    cooperative-matrix module (the real one is not installable next to the current one)."""
    from hydroplane.spirv.samples import coop_matmul_tile

    fake = tmp_path / "spirv-val"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = --version ]; then echo 'SPIRV-Tools v2023.1 unknown hash, 2023-01-17T00:00:00'; "
                    "exit 0; fi\n"
                    "echo 'error: line 2: Invalid capability operand: 6022' >&2; exit 1\n")
    fake.chmod(0o755)
    (tmp_path / "tile.spv").write_bytes(coop_matmul_tile(8, 8, 8, a_type="f16", c_type="f32").tobytes())
    proc = hydroplane("spirv", "val", tmp_path / "tile.spv", extra_env={"HYDROPLANE_SPIRV_VAL": str(fake)})
    assert_one_line_error(proc, f"spirv-val ({fake}, SPIRV-Tools v2023.1 unknown hash, 2023-01-17T00:00:00) does "
                                "not know capability CooperativeMatrixKHR (6022) that the module uses: the "
                                "validator is too old, not the module wrong; install spirv-tools 2026.4 or newer")
