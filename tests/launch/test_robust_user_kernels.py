"""A user's `kernel[grid]` code runs with robust buffer access on its own pipeline (VK_EXT_pipeline_robustness),
the library's kernels on the same device without; the reference executor diagnoses the same accesses.

On lavapipe a pipeline that asks for nothing is robust too (its `default_storage_robustness` is
robustBufferAccess2), so the zeros and dropped writes alone do not tell the two apart: which pipelines asked for
robust access is checked on the pipelines themselves and on what their creation call received."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from lang.lang_helpers import validate_compiled

import hydroplane
from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.lang import Buffer, f16, f32, global_id, readonly, s32
from hydroplane.launch import runtime
from hydroplane.launch.executors import VulkanExecutor
from hydroplane.launch.jit import ROBUST_KEY, JitKernel, device_array

pytestmark = pytest.mark.vulkan

N = 64  # elements of each array the kernels are given (256 bytes: a view at N binds on any device)
RBA2 = vk.enums.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_2_EXT


@hydroplane.kernel(local_size=64)
def scale_add(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


@hydroplane.kernel(local_size=64)
def fill(out: Buffer[f32], value: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = value


@hydroplane.kernel(local_size=64)
def fill16(out: Buffer[f16], value: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = f16(value)


@pytest.fixture(autouse=True)
def every_module_passes_spirv_val():
    yield
    assert validate_compiled([v for v in globals().values() if isinstance(v, JitKernel)]) >= 1


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.float32]:
    """x and y of N elements with negatives, zeros, extremes and infinities; alpha. No subnormal input or product:
    lavapipe flushes them to zero."""
    rng = np.random.default_rng(seed)
    special = np.array([0.0, -0.0, 3.4e38, -3.4e38, 4e-38, -4e-38, np.inf, -np.inf], np.float32)
    x = np.concatenate([special, rng.standard_normal(N - len(special)) * 1e4]).astype(np.float32)
    y = rng.uniform(-1e3, 1e3, N).astype(np.float32)
    y[::7] = 0.0
    return rng.permutation(x), y, np.float32(rng.uniform(-3, -0.5))


def _expected(x, y, alpha):
    with np.errstate(over="ignore", invalid="ignore"):  # the extremes overflow, inf - inf: on the device too
        return alpha * x + y


def _neighbours(values: np.ndarray, device):
    """A DeviceArray of 2N elements and its two halves: the kernels get the first, the second is its neighbour."""
    base = device_array(values, device=device)
    return base, base[:N], base[N:]


@pytest.mark.parametrize("device", ["ref", 0])
def test_in_bounds_the_user_kernel_gives_numpy_s_answer(device):
    x, y, alpha = _inputs(1)
    out = np.full(N, np.nan, np.float32)
    result = scale_add[(1,)](x, y, out, alpha, N, device=device)
    np.testing.assert_array_equal(out, _expected(x, y, alpha))
    assert result.robustness == ("diagnosed" if device == "ref" else "robustBufferAccess2")

    dx, dy = device_array(x, device=device), device_array(y, device=device)
    dout = device_array(np.full(N, np.nan, np.float32), device=device)
    scale_add[(1,)](dx, dy, dout, -alpha, N)
    np.testing.assert_array_equal(dout.numpy(), _expected(x, y, -alpha))


def test_reads_past_the_end_of_a_view_give_zero_not_the_neighbour():
    """x and y are the first halves of arrays whose second halves hold other numbers: with n = 2N the kernel
    reads past their end, which robustBufferAccess2 turns into zeros (the bound range is the view's bytes)."""
    x, y, alpha = _inputs(2)
    rng = np.random.default_rng(3)
    _, dx, _ = _neighbours(np.concatenate([x, rng.uniform(1, 2, N).astype(np.float32)]), 0)
    _, dy, _ = _neighbours(np.concatenate([y, rng.uniform(5, 6, N).astype(np.float32)]), 0)
    dout = device_array(np.full(2 * N, np.nan, np.float32), device=0)
    result = scale_add[(2,)](dx, dy, dout, alpha, 2 * N)
    assert result.robustness == "robustBufferAccess2"
    got = dout.numpy()
    np.testing.assert_array_equal(got[:N], _expected(x, y, alpha))
    np.testing.assert_array_equal(got[N:], np.zeros(N, np.float32))


def test_reads_past_the_end_of_an_array_give_zero():
    x, y, alpha = _inputs(4)
    out = np.full(2 * N, np.nan, np.float32)
    scale_add[(2,)](x, y, out, alpha, 2 * N, device=0)  # NumPy x and y: copied into buffers of N elements
    np.testing.assert_array_equal(out[:N], _expected(x, y, alpha))
    np.testing.assert_array_equal(out[N:], np.zeros(N, np.float32))


def test_writes_past_the_end_leave_the_neighbouring_arrays_alone():
    rng = np.random.default_rng(5)
    values = rng.standard_normal(2 * N).astype(np.float32)
    base, first, second = _neighbours(values, 0)
    apart = [device_array(rng.standard_normal(N).astype(np.float32), device=0) for _ in range(3)]
    before = [a.numpy() for a in apart]
    result = fill[(4,)](first, -2.5, 4 * N)  # a view: its neighbour is the rest of its own buffer
    fill[(4,)](apart[1], 7.0, 4 * N)  # arrays of their own buffers, allocated one after another
    assert result.robustness == "robustBufferAccess2"
    np.testing.assert_array_equal(first.numpy(), np.full(N, -2.5, np.float32))
    np.testing.assert_array_equal(second.numpy(), values[N:])
    np.testing.assert_array_equal(base.numpy(), np.concatenate([np.full(N, -2.5, np.float32), values[N:]]))
    np.testing.assert_array_equal(apart[1].numpy(), np.full(N, 7.0, np.float32))
    np.testing.assert_array_equal(apart[0].numpy(), before[0])
    np.testing.assert_array_equal(apart[2].numpy(), before[2])


def test_a_robust_binding_ends_at_the_view_s_last_byte_not_a_word_later():
    """A view of 3 f16 elements (6 bytes) binds exactly its bytes for a user's kernel (the library's word-rounded
    range would reach the neighbour's first element): a write past its end leaves the next element alone."""
    rng = np.random.default_rng(6)
    values = rng.uniform(-4, 4, 16).astype(np.float16)
    base = device_array(values, device=0)
    result = fill16[(1,)](base[:3], -1.5, 16)
    assert result.robustness == "robustBufferAccess2"
    want = values.copy()
    want[:3] = -1.5
    np.testing.assert_array_equal(base.numpy(), want)


@pytest.mark.parametrize("kernel,arguments", [
    (scale_add, lambda x, y, alpha, out: (x, y, out, alpha, 2 * N)),
    (fill, lambda x, y, alpha, out: (x, alpha, 2 * N)),
], ids=["read", "write"])
def test_the_reference_executor_diagnoses_the_same_access(kernel, arguments):
    x, y, alpha = _inputs(6)
    out = np.full(2 * N, np.nan, np.float32)
    with pytest.raises(HydroplaneError, match="out-of-bounds|out of bounds"):
        kernel[(2,)](*arguments(x, y, alpha, out), device="ref")


def test_library_kernels_run_without_robust_access_and_users_kernels_with():
    """After library ops and a user's kernel on device 0, every pipeline of the device is plain but the users'
    (those the jit keys with ROBUST_KEY); a user's kernel whose words a library cache also holds gets its own."""
    rt = runtime.runtime(0)
    rng = np.random.default_rng(7)
    a = device_array(rng.standard_normal((13, 7)).astype(np.float16), device=0)
    b = device_array(rng.standard_normal((7, 5)).astype(np.float16), device=0)
    np.testing.assert_allclose(hydroplane.matmul(a, b).numpy(), a.numpy().astype(np.float32) @ b.numpy(),
                               rtol=2e-3, atol=2e-3)
    x = device_array(rng.standard_normal((3, 40)).astype(np.float32), device=0)
    hydroplane.nn.silu(x).numpy()
    hydroplane.nn.rms_norm(x, 40).numpy()

    spec = fill.compile(rt.executor.target)  # the words a library cache would key by words_key alone
    library = rt.kernel(runtime.words_key(spec.words), lambda: rt.executor.kernel(spec.words))
    assert library.robustness is None and library.native.robustness_info is None
    out = device_array(np.full(N, np.nan, np.float32), device=0)
    assert fill[(1,)](out, 1.5, N).robustness == "robustBufferAccess2"
    user = rt.kernels[(*runtime.words_key(spec.words), ROBUST_KEY)]
    assert user.native is not library.native
    robust_info = user.native.robustness_info
    assert (robust_info.storageBuffers, robust_info.uniformBuffers) == (RBA2, RBA2)

    users = {id(k.native) for key, k in rt.kernels.items() if key[-1] == ROBUST_KEY}
    pipelines = [p for p in gc.get_objects() if isinstance(p, vk.Pipeline) and not p.closed and
                 p.device is rt.executor.device]
    plain = [p for p in pipelines if id(p) not in users]
    assert len(plain) >= 4  # the GEMM's, the two nn ops', and `library`
    assert all(p.robustness is None and p.robustness_info is None for p in plain)
    assert all(p.robustness == "robustBufferAccess2" for p in pipelines if id(p) in users)


def test_the_pipeline_creation_call_receives_the_struct_for_a_user_kernel_only(monkeypatch):
    """What vkCreateComputePipelines gets: a fresh user kernel's create info chains VkPipelineRobustnessCreateInfoEXT,
    and a library kernel's made on the same device chains nothing."""
    seen = []
    call = vk.Device.call

    def spy(self, name, *args):
        if name == "vkCreateComputePipelines":
            seen.append(args[2]._obj.pNext)
        return call(self, name, *args)

    @hydroplane.kernel(local_size=32)
    def negate(v: Buffer[f32], n: s32):
        i = global_id()
        if i < n:
            v[i] = -v[i]

    rt = runtime.runtime(0)
    monkeypatch.setattr(vk.Device, "call", spy)
    v = np.linspace(-1, 1, 32, dtype=np.float32)
    got = v.copy()
    negate[(1,)](got, 32, device=0)
    np.testing.assert_array_equal(got, -v)
    (user_pnext,) = seen
    info = vk.structs.VkPipelineRobustnessCreateInfoEXT.from_address(user_pnext)
    assert info.sType == info.STYPE and (info.storageBuffers, info.uniformBuffers) == (RBA2, RBA2)
    rt.executor.kernel(negate.compile(rt.executor.target).words).native.close()  # as the ops make theirs
    assert seen[1:] == [None]


def test_on_a_device_without_pipeline_robustness_a_user_kernel_runs_as_before(monkeypatch):
    """No VK_EXT_pipeline_robustness and no device-wide robust access: `user_kernel_robustness` is None, a kernel
    asked to be robust gets a plain pipeline (out-of-bounds accesses are undefined, as documented) and runs."""
    infos = vk.devices()
    features = {k: dict(v) for k, v in infos[0].features.items()}
    features["pipeline_robustness"]["pipelineRobustness"] = False
    monkeypatch.setattr(vk, "devices", lambda: [dataclasses.replace(infos[0], features=features), *infos[1:]])
    with VulkanExecutor(0, robust=False) as executor:
        assert executor.user_kernel_robustness is None
        assert "VK_EXT_pipeline_robustness" not in executor.device.enabled_extensions
        spec = scale_add.compile(executor.target)
        kernel = executor.kernel(spec.words, robust=True)
        assert kernel.robustness is None and kernel.native.robustness_info is None
        x, y, alpha = _inputs(8)
        bufs = {0: executor.buffer(x), 1: executor.buffer(y), 2: executor.buffer(np.full(N, np.nan, np.float32))}
        executor.dispatch(kernel, (1, 1, 1), bufs, alpha.tobytes() + np.int32(N).tobytes())
        np.testing.assert_array_equal(executor.read(bufs[2], np.float32), _expected(x, y, alpha))
        kernel.native.close()
        for buf in bufs.values():
            executor.release(buf)


@hydroplane.kernel(local_size=64, robust=False)
def measured_fill(out: Buffer[f32], value: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = value


def test_a_kernel_that_opts_out_gets_the_plain_pipeline():
    rt = runtime.runtime(0)
    rng = np.random.default_rng(9)
    value = np.float32(rng.uniform(-1e6, 1e6))
    out = device_array(np.full(N, np.nan, np.float32), device=0)
    assert measured_fill[(1,)](out, value, N).robustness is None
    np.testing.assert_array_equal(out.numpy(), np.full(N, value, np.float32))
    spec = measured_fill.compile(rt.executor.target)
    kernel = rt.kernels[runtime.words_key(spec.words)]  # the library's key: one plain pipeline for these words
    assert kernel.native.robustness is None and kernel.native.robustness_info is None
    assert (*runtime.words_key(spec.words), ROBUST_KEY) not in rt.kernels
    assert measured_fill[(1,)](np.zeros(N, np.float32), 1.0, N, device="ref").robustness == "diagnosed"
