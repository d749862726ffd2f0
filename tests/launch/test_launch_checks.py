"""The launch checks (hydroplane.launch.checks) through `launch.run` and the executors' own `kernel`/`dispatch`:
each bad request is refused before any work with the same one-line error on the reference executor and on
lavapipe, naming the binding; a good request still runs and equals NumPy. Options are explicit keywords."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import run_tool

from hydroplane.launch import executors as launch
from hydroplane.launch.checks import check_output_path
from hydroplane.ref import Executor as PlainRefExecutor
from hydroplane.spirv import reflect

KERNEL = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
layout(set = 0, binding = 2) buffer C { uint count; int values[]; };
layout(push_constant) uniform P { float scale; uint n; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    b[i] = a[i] * scale + float(n);
    if (i == 0u) { count = n; }
    values[i] = int(i) - 3;
}
"""

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


@pytest.fixture(scope="module")
def words(tmp_path_factory, glslang) -> bytes:
    d = tmp_path_factory.mktemp("checks")
    (d / "k.comp").write_text(KERNEL)
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(d / "k.comp"), "-o", str(d / "k.spv")])
    return (d / "k.spv").read_bytes()


def good_buffers(seed=0) -> dict:
    rng = np.random.default_rng(seed)
    return {0: rng.standard_normal(32).astype(np.float32), 1: np.full(32, np.nan, np.float32),
            2: np.full(33, -7, np.int32)}


PUSH = np.array([(1.5, 4)], dtype=[("scale", "<f4"), ("n", "<u4")])


def test_reflect_gives_element_types_and_access(words):
    b = {x.binding: x for x in reflect(words).bindings}
    assert (b[0].element, b[0].access, [t.name for t in b[0].element_types]) == ("f32[]", "read-only", ["f32"])
    assert (b[1].element, b[1].access) == ("f32[]", "write-only")
    assert (b[2].element, b[2].access, [t.name for t in b[2].element_types]) == ("{u32, s32[]}", "read-write",
                                                                                ["u32", "s32"])


@pytest.mark.parametrize("device", DEVICES)
def test_a_good_request_runs(words, device):
    bufs = good_buffers(1)
    out = launch.run(words, (2, 1, 1), bufs, push=PUSH, device=device)
    np.testing.assert_array_equal(out[1], bufs[0] * np.float32(1.5) + np.float32(4))
    want = np.concatenate([[4], np.arange(32) - 3]).astype(np.int32)
    np.testing.assert_array_equal(out[2], want)


BAD_RUNS = [
    ("float64 for f32", dict(buffers={0: np.zeros(32, np.float64)}), launch.BindingError,
     r"^binding 0 \(A\): a float64 array for a buffer of f32\[\]; give float32 \(or RawBytes"),
    ("float32 for a {u32, s32[]} block", dict(buffers={2: np.zeros(33, np.float32)}), launch.BindingError,
     r"^binding 2 \(C\): a float32 array for a buffer of \{u32, s32\[\]\}; give uint32 or int32"),
    ("missing buffer", dict(drop=1), launch.BindingError,
     r"^binding 1 \(B\): no buffer given; the module declares it as f32\[\] \(write-only\)$"),
    ("extra binding", dict(buffers={5: np.zeros(4, np.float32)}), launch.BindingError,
     r"^binding 5: the module has no such binding \(it has: binding 0, binding 1, binding 2\)$"),
    ("extra set", dict(buffers={(1, 0): np.zeros(4, np.float32)}), launch.BindingError,
     r"^set 1 binding 0: the module has no such binding"),
    ("short push", dict(push=np.float32(1)), launch.PushConstantError,
     r"^push constants: 4 bytes given for the module's 8-byte block$"),
    ("no push", dict(push=None), launch.PushConstantError,
     r"^push constants: the module's block is 8 bytes; none were given$"),
    ("zero grid", dict(grid=(0, 1, 1)), launch.GridError,
     r"^grid \(0, 1, 1\) has a dimension below 1: no workgroup would run$"),
    ("huge grid", dict(grid=(1, 1 << 20, 1)), launch.GridError,
     r"^grid \(1, 1048576, 1\): y = 1048576 is above the executor's maxComputeWorkGroupCount"),
]


def _bad_run(words, device, change):
    bufs = good_buffers(2)
    bufs.update(change.get("buffers", {}))
    bufs.pop(change.get("drop"), None)
    return launch.run(words, change.get("grid", (2, 1, 1)), bufs, push=change.get("push", PUSH), device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("what, change, error, message", BAD_RUNS, ids=[b[0] for b in BAD_RUNS])
def test_bad_requests_are_refused_alike(words, device, what, change, error, message):
    with pytest.raises(error, match=message) as info:
        _bad_run(words, device, change)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("device", DEVICES)
def test_the_executors_own_dispatch_checks_bindings_push_and_grid(words, device):
    ex = launch.get_executor(device)
    try:
        kernel = ex.kernel(words)
        bufs = {k: ex.buffer(a) for k, a in good_buffers(3).items()}
        with pytest.raises(launch.BindingError, match=r"^binding 2 \(C\): no buffer given"):
            ex.dispatch(kernel, (2, 1, 1), {0: bufs[0], 1: bufs[1]}, PUSH)
        with pytest.raises(launch.BindingError, match=r"^binding 7: the module has no such binding"):
            ex.dispatch(kernel, (2, 1, 1), {**bufs, 7: bufs[0]}, PUSH)
        with pytest.raises(launch.PushConstantError, match="12 bytes given for the module's 8-byte block"):
            ex.dispatch(kernel, (2, 1, 1), bufs, np.zeros(3, np.float32))
        with pytest.raises(launch.GridError, match="has a dimension below 1"):
            ex.dispatch(kernel, (2, 0, 1), bufs, PUSH)
        ex.dispatch(kernel, (2, 1, 1), bufs, PUSH)
        np.testing.assert_array_equal(ex.read(bufs[1], np.float32), good_buffers(3)[0] * np.float32(1.5) + 4)
    finally:
        ex.close()


@pytest.mark.parametrize("device", DEVICES)
def test_raw_bytes_skip_the_element_type_check(words, device):
    bufs = good_buffers(4)
    a_bits = bufs[0].view(np.uint32)
    out = launch.run(words, (2, 1, 1), {**bufs, 0: launch.RawBytes(a_bits)}, push=PUSH, device=device)
    assert out[0].dtype == np.uint32
    np.testing.assert_array_equal(out[0], a_bits)
    np.testing.assert_array_equal(out[1], bufs[0] * np.float32(1.5) + np.float32(4))


@pytest.mark.parametrize("device", DEVICES)
def test_integers_of_either_signedness_are_accepted(words, device):
    bufs = good_buffers(5)
    out = launch.run(words, (2, 1, 1), {**bufs, 2: bufs[2].view(np.uint32)}, push=PUSH, device=device)
    np.testing.assert_array_equal(out[2].view(np.int32)[1:], np.arange(32) - 3)


def test_executor_limits():
    assert launch.get_executor("ref").max_workgroup_count == (65535, 65535, 65535)


@pytest.mark.vulkan
def test_vulkan_limit_is_the_devices():
    from hydroplane import vk

    info = vk.devices()[0]
    ex = launch.get_executor(0)
    try:
        assert ex.max_workgroup_count == tuple(info.max_workgroup_count) and min(info.max_workgroup_count) >= 65535
    finally:
        ex.close()


def test_options_are_explicit_keywords(words):
    with pytest.raises(TypeError, match="subgroup_sise"):
        launch.get_executor("ref", subgroup_sise=8)
    with pytest.raises(TypeError, match="subgroup_sise"):
        launch.run(words, (1, 1, 1), good_buffers(), push=PUSH, subgroup_sise=8)
    with pytest.raises(TypeError, match="coopmat_distributon"):
        PlainRefExecutor(coopmat_distributon="rows")
    with pytest.raises(launch.LaunchError, match=r"options \['subgroup_size'\] only apply to the reference"):
        launch.get_executor(0, subgroup_size=8)
    ex = launch.get_executor("ref", subgroup_size=16, diagnostics="collect", max_lanes=64)
    assert (ex.subgroup_size, ex.diagnostics, ex.max_lanes) == (16, "collect", 64)
    assert isinstance(ex, launch.Executor)


def test_a_plain_reference_executor_given_to_run_gets_the_checks(words):
    bufs = good_buffers(6)
    with pytest.raises(launch.BindingError, match="float64"):
        launch.run(words, (2, 1, 1), {**bufs, 1: np.zeros(32)}, push=PUSH, executor=PlainRefExecutor())
    out = launch.run(words, (2, 1, 1), bufs, push=PUSH, executor=PlainRefExecutor(subgroup_size=8))
    np.testing.assert_array_equal(out[1], bufs[0] * np.float32(1.5) + np.float32(4))


def test_output_path_checks(tmp_path):
    check_output_path(tmp_path / "fine.npy")
    with pytest.raises(launch.OutputPathError, match=r"cannot write .*/nowhere/o\.npy: folder .*/nowhere does not"):
        check_output_path(tmp_path / "nowhere" / "o.npy")
    with pytest.raises(launch.OutputPathError, match="is a folder, not a file"):
        check_output_path(tmp_path)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_only(words):
    assert launch.terminal_progress(io.StringIO()) is None
    term = FakeTerminal()
    progress = launch.terminal_progress(term, every_s=0.0)
    seen = []

    def record(done, total):
        seen.append((done, total))
        progress(done, total)

    bufs = good_buffers(7)
    bufs = {0: np.resize(bufs[0], 16 * 40), 1: np.zeros(16 * 40, np.float32), 2: np.zeros(16 * 40 + 1, np.int32)}
    out = launch.run(words, (40, 1, 1), bufs, push=PUSH, progress=record, executor=None)
    np.testing.assert_array_equal(out[1], bufs[0] * np.float32(1.5) + np.float32(4))
    assert seen == [(40, 40)]  # one batch: 40 workgroups of 16 lanes fit max_lanes
    ex = launch.get_executor("ref", max_lanes=32 * 8, progress=record)  # a 16-lane workgroup takes a 32-lane subgroup
    seen.clear()
    launch.run(words, (40, 1, 1), bufs, push=PUSH, executor=ex)
    assert seen == [(8, 40), (16, 40), (24, 40), (32, 40), (40, 40)]
    text = term.getvalue()
    assert "\rhydroplane: workgroups 8/40 (20%)" in text and text.endswith("\r\x1b[K")
