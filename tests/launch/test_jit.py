"""Launching language kernels: hydroplane.kernel[grid](...) on ref, on Vulkan device 0, and by default."""

from __future__ import annotations

import inspect
import logging

import ml_dtypes
import numpy as np
import pytest
from lang.lang_helpers import lavapipe_shapes, validate_compiled

import hydroplane
from hydroplane import coop
from hydroplane.errors import HydroplaneError
from hydroplane.lang import (
    Buffer,
    CompilationError,
    barrier,
    bf16,
    constexpr,
    f16,
    f32,
    global_id,
    local_id,
    readonly,
    s32,
    shared_array,
)
from hydroplane.launch.jit import JitLaunchError, KernelError, device_array
from hydroplane.launch.prepared import ReleasedError
from hydroplane.spirv.target import Target

pytestmark = pytest.mark.vulkan


@pytest.fixture(autouse=True)
def every_module_passes_spirv_val():
    """After each test: every specialization the launches compiled passes spirv-val."""
    yield
    kernels = [v for v in globals().values() if isinstance(v, hydroplane.launch.jit.JitKernel)]
    assert validate_compiled(kernels) >= 1


@hydroplane.kernel(local_size=64)
def saxpy(x: Buffer[f32, readonly], y: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        y[i] = alpha * x[i] + y[i]


@pytest.mark.parametrize("device", ["ref", 0])
def test_launch_copies_written_arrays_back(device):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(200).astype(np.float32), rng.standard_normal(200).astype(np.float32)
    y0, x0 = y.copy(), x.copy()
    result = saxpy[(4,)](x, y, 2.5, 190, device=device)
    np.testing.assert_array_equal(y[:190], np.float32(2.5) * x0[:190] + y0[:190])
    np.testing.assert_array_equal(y[190:], y0[190:])
    np.testing.assert_array_equal(x, x0)  # read-only: not copied back
    assert result.device == "ref" if device == "ref" else result.device.startswith("vk:0")
    assert set(result.outputs) == {"y"}


def test_default_device_is_the_first_vulkan_device_that_runs_it(caplog):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    with caplog.at_level(logging.INFO, logger="hydroplane.launch.jit"):
        result = saxpy[lambda meta: (1,)](x=x, y=y, alpha=1.0, n=64)
    assert result.device.startswith("vk:0")
    assert "runs on vk:0" in caplog.text
    np.testing.assert_array_equal(y, x)


@hydroplane.kernel(local_size=32)
def bf16_tile(a: Buffer[bf16, readonly], b: Buffer[bf16, readonly], d: Buffer[f32], M: constexpr = 8):
    ta = coop.load(coop.Matrix[bf16, M, M, coop.A], a, 0, M)
    tb = coop.load(coop.Matrix[bf16, M, M, coop.B], b, 0, M)
    coop.store(coop.mul_add(ta, tb, coop.fill(coop.Matrix[f32, M, M, coop.Accumulator], 0.0)), d, 0, M)


def test_default_device_that_cannot_run_a_kernel_is_an_error_not_a_silent_move():
    """device=None is the process's default device (lavapipe here), which lists no bf16 matrices: the launch is
    refused by name at the kernel's line; device="ref" runs it."""
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-4, 4, (2, 8, 8)) / 2).astype(ml_dtypes.bfloat16)
    d = np.full(64, -1, np.float32)
    with pytest.raises(HydroplaneError, match="bf16") as caught:
        bf16_tile[(1,)](a.ravel(), b.ravel(), d)
    assert "llvmpipe" in str(caught.value)
    assert (d == -1).all()
    result = bf16_tile[(1,)](a.ravel(), b.ravel(), d, device="ref")
    assert result.device == "ref"
    np.testing.assert_array_equal(d.reshape(8, 8), a.astype(np.float32) @ b.astype(np.float32))


@hydroplane.func
def plus(x, y):
    return x + y


@hydroplane.kernel(local_size=32)
def row_sums(x: Buffer[f32, readonly], out: Buffer[f32], M: constexpr = 8):
    m = coop.load(coop.Matrix[f32, M, M, coop.Accumulator], x, 0, M)
    coop.store(coop.reduce(m, coop.Row, plus), out, 0, M)


def test_ext_module_is_lowered_for_a_device_without_ext():
    x = np.arange(64, dtype=np.float32)
    expected = np.repeat(x.reshape(8, 8).sum(axis=1, keepdims=True), 8, axis=1).ravel()
    for device in ("ref", 0):
        out = np.zeros(64, np.float32)
        result = row_sums[(1,)](x, out, device=device)
        assert result.lowered == (device == 0)
        np.testing.assert_array_equal(out, expected, err_msg=str(device))


def test_device_arrays_stay_on_the_device():
    x = device_array(np.ones(64, np.float32), device=0)
    y = device_array(np.full(64, 2.0, np.float32), device=0)
    result = saxpy[(1,)](x, y, 3.0, 64)  # the device comes from the arrays
    assert result.device.startswith("vk:0") and result.outputs == {}
    np.testing.assert_array_equal(y.numpy(), np.full(64, 5.0, np.float32))


def test_pipelines_are_cached_per_device_and_specialization():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    saxpy[(1,)](x, y, 1.0, 8, device="ref")
    before = len(saxpy._pipelines)
    saxpy[(1,)](x, y, 1.0, 8, device="ref")
    assert len(saxpy._pipelines) == before


def test_bad_arguments_are_refused_by_name():
    x, y = np.ones(8, np.float64), np.zeros(8, np.float32)
    with pytest.raises(JitLaunchError, match="x: an array of float64, the kernel takes f32"):
        saxpy[(1,)](x, y, 1.0, 8, device="ref")
    with pytest.raises(JitLaunchError, match="missing a required argument: 'n'"):
        saxpy[(1,)](y, y, 1.0, device="ref")
    with pytest.raises(JitLaunchError, match="n: 2.5 is not an integer"):
        saxpy[(1,)](y, y, 1.0, 2.5, device="ref")
    with pytest.raises(JitLaunchError, match="a grid is 1 to 3 positive ints"):
        saxpy[(0,)](y, y, 1.0, 8, device="ref")


@hydroplane.kernel(local_size=32)
def racy(out: Buffer[f32]):
    shared = shared_array(f32, 32)
    shared[0] = f32(local_id())  # every invocation writes one slot: a race
    barrier()
    out[local_id()] = shared[0]


@hydroplane.kernel(local_size=32)
def out_of_bounds(out: Buffer[f32], n: s32):
    i = global_id()
    out[i + n] = 1.0


@hydroplane.kernel(local_size=32)
def non_uniform_matrix(x: Buffer[f32, readonly], out: Buffer[f32]):
    m = coop.load(coop.Matrix[f32, 8, 8, coop.Accumulator], x, 0, 8)
    if local_id() < 16:  # half the subgroup
        coop.store(m, out, 0, 8)


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("kernel_, args, text, kind", [
    (racy, (np.zeros(32, np.float32),), "shared[0] = f32(local_id())", "race"),
    (out_of_bounds, (np.zeros(32, np.float32), 16), "out[i + n] = 1.0", "out-of-bounds"),
    (non_uniform_matrix, (np.ones(64, np.float32), np.zeros(64, np.float32)), "coop.store(m, out, 0, 8)",
     "non-uniform"),
])
def test_reference_executor_diagnostics_point_at_the_python_line(kernel_, args, text, kind):
    with pytest.raises(KernelError) as info:
        kernel_[(1,)](*args, device="ref")
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line(kernel_.kernel.fn, text))
    assert err.diagnostic.kind == kind and text in str(err) and "^" in str(err)
    assert str(err).startswith(f"{__file__}:{err.location.line}:{err.location.column}: {kernel_.kernel.name}: {kind}")


@hydroplane.kernel(local_size=32)
def device_sized_tile(a: Buffer[f16, readonly], b: Buffer[f16, readonly], d: Buffer[f32],
                      SHAPE: constexpr = coop.largest_shape(f16, f32, default=(16, 16, 16))):
    """The largest f16 x f16 + f32 tile the device offers (the reference executor: the default)."""
    M, N, K = SHAPE
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    acc = coop.mul_add(coop.load(coop.Matrix[f16, M, K, coop.A], a, 0, K),
                       coop.load(coop.Matrix[f16, K, N, coop.B], b, 0, N), acc)
    coop.store(acc, d, 0, N)


@pytest.mark.parametrize("device", ["ref", 0])
def test_a_kernel_asks_the_device_for_its_largest_tile(device):
    m, n, k = (16, 16, 16) if device == "ref" else lavapipe_shapes("f16", "f32")[0]
    rng = np.random.default_rng(3)
    a = (rng.integers(-4, 4, (m, k)) / 2).astype(np.float16)
    b = (rng.integers(-4, 4, (k, n)) / 2).astype(np.float16)
    d = np.full(m * n, -1, np.float32)
    result = device_sized_tile[lambda meta: (meta["SHAPE"][0] // m,)](a.ravel(), b.ravel(), d, device=device)
    assert result.grid == (1, 1, 1)
    np.testing.assert_array_equal(d.reshape(m, n), a.astype(np.float32) @ b.astype(np.float32))


def test_a_shape_the_target_lacks_is_a_located_compile_error():
    with pytest.raises(CompilationError) as info:
        bf16_tile.compile(Target.profile("lavapipe"))
    err = info.value
    assert err.message.startswith("lavapipe offers no coopmat<bf16")
    assert err.line == _line(bf16_tile.kernel.fn, "ta = coop.load(coop.Matrix[bf16, M, M, coop.A], a, 0, M)")
    with pytest.raises(CompilationError, match="SHAPE: largest_shape.*asks the target"):
        device_sized_tile.compile()


# kernel[grid](...) of device arrays and scalars keeps its PreparedLaunch per signature ------------------------------
@hydroplane.kernel(local_size=64)
def _scaled_sum(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_a_kept_launch_binds_each_calls_arrays_and_scalars(device):
    """Calls of one signature reuse one PreparedLaunch: each call's arrays (aliased ones too) and scalars are the
    ones it runs with, and a released array is refused as on the first call."""
    rng = np.random.default_rng()
    n = 200
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    dxs = [hydroplane.device_array(x, device) for x in xs]
    outs = [hydroplane.device_array(np.full(n, -1e30, np.float32), device) for _ in range(2)]
    grid = (-(-n // 64),)
    _scaled_sum.clear_launches()
    for turn, alpha in enumerate((0.5, 0.5, -2.0, 0.5, 3.0, 3.0)):
        i, j, o = turn % 3, (turn + 1) % 3, turn % 2
        _scaled_sum[grid](dxs[i], dxs[j], outs[o], alpha, n)
        np.testing.assert_allclose(outs[o].numpy(), np.float32(alpha) * xs[i] + xs[j], rtol=1e-6)
        _scaled_sum[grid](dxs[i], dxs[i], outs[o], alpha, n)  # one array in two parameters
        np.testing.assert_allclose(outs[o].numpy(), np.float32(alpha) * xs[i] + xs[i], rtol=1e-6)
    assert 1 <= len(_scaled_sum._launches) <= 3
    gone = hydroplane.device_array(xs[0], device)
    gone.release()
    with pytest.raises(ReleasedError):
        _scaled_sum[grid](gone, dxs[1], outs[0], 0.5, n)
