"""Issue 23 for hydroplane.matmul (and attention, device_array where they share the rule), on ref and lavapipe:
sizes refused before anything is copied or allocated, masked arrays refused by name, the result dtypes as
documented (NumPy's, with bf16 and the 8-bit integers as the exceptions), acc_dtype honoured on every route (the
skinny kernels for M <= 64 included), and the error classes under hydroplane.HydroplaneError."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.ops import matmul as matmul_module
from hydroplane.ops.matmul import MatmulError, matmul

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


def _huge(shape, dtype=np.float16):
    """An operand of any size that takes no memory (every element is one value)."""
    return np.broadcast_to(np.ones((), dtype), shape)


@pytest.mark.parametrize("a_shape, b_shape, says", [
    ((2, 1 << 31), (1 << 31, 2), r"a has 2x2147483648 = 4294967296 elements per matrix.*32-bit indices"),
    ((1 << 16, 1 << 16), (1 << 16, 4), r"a has 65536x65536 .* elements per matrix"),
    ((1 << 20, 1), (1, 1 << 20), r"the result has 1048576x1048576 .* elements per matrix"),
    ((1 << 14, 1 << 15, 1), (1, 1 << 15), r"takes 3.277e\+04 GiB, more than this machine's"),  # each matrix fits
    ((1 << 20, 1 << 20, 0), (0, 1 << 20), r"takes .* GiB, more than this machine's"),  # K = 0: on the host
])
def test_sizes_are_refused_before_any_copy(monkeypatch, a_shape, b_shape, says):
    copies = []
    monkeypatch.setattr(matmul_module, "run_call", lambda call: copies.append(call))  # nothing may get that far
    with pytest.raises(MatmulError, match=says):
        matmul(_huge(a_shape), _huge(b_shape), device="ref")
    assert not copies


def test_out_of_memory_while_running_is_a_matmul_error(monkeypatch):
    def no_memory(call, *rest):
        raise MemoryError
    monkeypatch.setattr(matmul_module, "run_call", no_memory)
    with pytest.raises(MatmulError, match=r"matmul of shapes \(4, 8\) and \(8, 4\): out of memory"):
        matmul(np.ones((4, 8), np.float16), np.ones((8, 4), np.float16), device="ref")


def test_masked_arrays_are_refused_by_name():
    a = np.ma.masked_array(np.ones((4, 8), np.float16), mask=np.eye(4, 8, dtype=bool))
    b = np.ones((8, 4), np.float16)
    for args, name in (((a, b), "a"), ((b.T, np.ma.masked_array(b.T.copy())), "b")):
        with pytest.raises(MatmulError, match=rf"^{name}: a masked array; hydroplane.matmul would drop its mask"):
            matmul(*args, device="ref")
    with pytest.raises(MatmulError, match="c: a masked array"):
        matmul(b.T, b, c=np.ma.masked_array(np.zeros((4, 4), np.float16)), beta=1.0, device="ref")
    q = np.ma.masked_array(np.ones((1, 1, 16, 64), np.float16))
    with pytest.raises(hydroplane.AttentionError, match="q is a masked array"):
        hydroplane.attention(q, q.data, q.data, device="ref")
    with pytest.raises(hydroplane.HydroplaneError, match="not a masked array"):
        hydroplane.device_array(q, "ref")


# input dtype -> the result dtype: NumPy's, except bf16 (torch's bf16) and the 8-bit integers (32-bit, not wrapped)
RESULT_DTYPES = [(np.float16, np.float16), (ml_dtypes.bfloat16, ml_dtypes.bfloat16), (np.int8, np.int32),
                 (np.uint8, np.uint32), (ml_dtypes.float8_e4m3fn, np.float32), (ml_dtypes.float8_e5m2, np.float32)]


@pytest.mark.parametrize("dtype, result", RESULT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_result_dtypes_as_documented(dtype, result):
    rng = np.random.default_rng(3)
    a = rng.integers(0 if np.dtype(dtype).kind == "u" else -4, 4, (5, 24)).astype(np.float32).astype(dtype)
    b = rng.integers(0 if np.dtype(dtype).kind == "u" else -4, 4, (24, 3)).astype(np.float32).astype(dtype)
    got = matmul(a, b, device="ref")
    assert got.dtype == np.dtype(result)
    exact = a.astype(np.float64) @ b.astype(np.float64)  # small integers: exact in every result type
    np.testing.assert_array_equal(got.astype(np.float64), exact)
    if np.dtype(dtype).kind in "iu":  # NumPy itself keeps the 8-bit type (and wraps): the exception is ours
        assert np.matmul(a, b).dtype == np.dtype(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 8, 64, 65, 200])  # the skinny kernels up to 64 rows, the GEMM above
@pytest.mark.parametrize("transposed", [False, True], ids=["nn", "nt"])
def test_acc_dtype_is_honoured_on_every_route(device, m, transposed):
    """300 * 300 = 90000: beyond f16's largest finite value (65504) in an f16 accumulator, exact in an f32 one,
    whatever order a kernel adds in. Every other product is 0 or a small integer."""
    rng = np.random.default_rng(m)
    a = rng.integers(-2, 3, (m, 40)).astype(np.float16)
    b = rng.integers(-2, 3, (40, 24)).astype(np.float16)
    a[:, 3], b[3, :] = 300, 300
    b_arg = np.ascontiguousarray(b.T).T if transposed else b
    wide = matmul(a, b_arg, acc_dtype="f32", out_dtype="f32", device=device)
    np.testing.assert_array_equal(wide, a.astype(np.float64) @ b.astype(np.float64))
    narrow = matmul(a, b_arg, acc_dtype="f16", out_dtype="f32", device=device)
    assert np.isinf(narrow).all(), np.unique(narrow)


def test_acc_dtype_refused_by_name_where_no_gemm_has_it():
    with pytest.raises(MatmulError, match=r"bf16 inputs accumulate in f32, not f16"):
        matmul(np.ones((2, 8), ml_dtypes.bfloat16), np.ones((8, 2), ml_dtypes.bfloat16), acc_dtype="f16")
    with pytest.raises(MatmulError, match=r"s8 inputs accumulate in s32, not f32"):
        matmul(np.ones((2, 8), np.int8), np.ones((8, 2), np.int8), acc_dtype="f32")


ERROR_CLASSES = ["HydroplaneError", "MatmulError", "AttentionError", "GemmError", "KernelError", "LaunchError",
                 "CompilationError", "SpirvError", "VulkanError", "RefError", "NNError", "QuantError",
                 "QuantMatmulError"]


def test_one_exception_hierarchy_exported_from_the_package():
    for name in ERROR_CLASSES:
        cls = getattr(hydroplane, name)
        assert issubclass(cls, hydroplane.HydroplaneError) and name in hydroplane.__all__, name
    assert hydroplane.MatmulError is MatmulError
    with pytest.raises(hydroplane.MatmulError):
        matmul(np.ones((2, 3), np.float16), np.ones((4, 2), np.float16))
    with pytest.raises(hydroplane.AttentionError):
        hydroplane.attention(np.ones((1, 1, 4, 64), np.float32), np.ones((1, 1, 4, 64), np.float32),
                             np.ones((1, 1, 4, 64), np.float32), device="ref")


def test_attention_sizes_are_refused_before_any_copy():
    """A tensor beyond the kernels' 32-bit indices is refused by its sizes before anything is copied (the inputs
    are broadcast views of one element: a copy would take 8 GiB)."""
    q = _huge((1, 2, 1 << 24, 64))
    with pytest.raises(hydroplane.AttentionError, match=r"2147483648 elements in one tensor; at most 2147483647"):
        hydroplane.attention(q, q, q, device="ref")


@pytest.mark.parametrize("m, n, k", [(256, 256, 777), (256, 256, 776), (1001, 1001, 1001), (3000, 512, 777),
                                     (100, 72, 100)])
def test_odd_sizes_on_ref_run_the_aligned_configuration_padded(m, n, k):
    """The reference executor's speed does not hang on alignment (docs/perf.md, benchmarks/ref_alignment.py): an
    odd size, or a K with a tail, runs the direct 64x64x64 configuration on padded copies, not the staged kernel."""
    call = matmul_module.check_call(np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), device="ref")
    runner = matmul_module.runner_for(call)
    problem = matmul_module.problem_of(call, "nn")
    config = runner.tuned_config(problem)
    assert config.direct and config.tile == (64, 64, 64)
    route = matmul_module.gemm_route(problem, config, runner.target, exact_output=False)
    assert [s.name for s in route.steps] == ["pad a", "pad b", "gemm"]
    assert route.padded.k % config.block[2] == 0 and route.padded.k - k < config.block[2]


@pytest.mark.parametrize("shape", [(3, 37, 777), (65, 9, 1001)], ids=["batch", "tails"])
def test_padded_odd_sizes_on_ref_are_right(shape):
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, shape).astype(np.float16)
    w = rng.integers(-3, 4, (40, shape[-1])).astype(np.float16)
    out = np.full(shape[:-1] + (40,), np.nan, np.float32)  # poisoned
    got = matmul(a, w.T, out_dtype="f32", out=out, device="ref")
    np.testing.assert_array_equal(got, a.astype(np.float64) @ w.T.astype(np.float64))
