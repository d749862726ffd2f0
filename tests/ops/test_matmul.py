"""`hydroplane.matmul` against NumPy on the reference executor and lavapipe: shapes 1, 7, 33, 255 and batches (leading
dimensions broadcast, 1-D operands), every layout through views (recognised, not copied), every dtype and the
dtype pairs, the epilogues, DeviceArrays in and out (batched ones sliced on the device), DLPack inputs, empty
problems, and every refusal. Inputs are random small integers with negatives and zeros (exact in every input
type), outputs poisoned before a run."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.kernels.gemm import source
from hydroplane.launch.prepared import DeviceArray
from hydroplane.ops import matmul as matmul_module
from hydroplane.ops.matmul import SUPPORTED, MatmulError, matmul, stored_layout

BF16, E4M3 = np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn)
POISON = {np.dtype(np.float16): -777.0, np.dtype(np.float32): -7.25e4, BF16: -777.0, np.dtype(np.int32): -77,
          np.dtype(np.uint32): 0xFFFFFFF0}


def values(rng, shape, dtype, low=-8, high=8):
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        low = 0
    return rng.integers(low, high, shape).astype(np.float32).astype(dtype) if dtype.kind not in "iu" else \
        rng.integers(low, high, shape).astype(dtype)


def expected(a, b, *, c=None, alpha=1.0, beta=0.0, bias=None, activation="none", integer=False):
    """The float64 (int64 for integers) result of the epilogue on NumPy's matmul."""
    work = np.int64 if integer else np.float64
    result = np.matmul(a.astype(work), b.astype(work)) * work(alpha)
    if c is not None:
        result = result + work(beta) * np.asarray(c).astype(work)
    if bias is not None:
        result = result + bias.astype(work)
    if activation == "relu":
        result = np.maximum(result, 0)
    elif activation == "gelu":
        result = 0.5 * result * (1 + np.tanh(source.GELU_C * (result + source.GELU_CUBIC * result ** 3)))
    return result


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got.astype(np.int64), want)
        return
    bound = 1e-3 if np.dtype(dtype).itemsize == 4 else 1e-2
    norm = np.linalg.norm(want)
    error = np.linalg.norm(got.astype(np.float64) - want) / (norm if norm else 1)
    assert np.isfinite(error) and error <= bound, f"relative error {error}"


@pytest.fixture
def layouts(monkeypatch):
    """The layouts of the GEMMs matmul runs (recorded from its routes)."""
    seen = []
    real = matmul_module.gemm_route

    def recording(problem, config, target, **kw):
        seen.append(problem.layout)
        return real(problem, config, target, **kw)

    monkeypatch.setattr(matmul_module, "gemm_route", recording)
    matmul_module.clear_plans()  # a call plans its GEMMs once per signature: every test here plans its own
    return seen


def operand_in(rng, rows, cols, dtype, letter):
    """A rows x cols operand stored as `letter` says: 'n' C-contiguous, 't' the transpose of a C-contiguous array."""
    return values(rng, (rows, cols), dtype) if letter == "n" else values(rng, (cols, rows), dtype).T


REF_SHAPES = [(1, 7, 33), (7, 33, 1), (33, 1, 7), (70, 255, 33), (255, 33, 7), (65, 40, 255)]
DTYPES = [np.float16, BF16, np.int8, np.uint8, E4M3]
RESULT = {np.dtype(np.float16): np.float16, BF16: BF16, np.dtype(np.int8): np.int32, np.dtype(np.uint8): np.uint32,
          E4M3: np.float32}


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("shape", REF_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_matches_numpy_on_ref(layout, shape, dtype, layouts):
    m, n, k = shape
    rng = np.random.default_rng(m * 100 + n + k)
    a = operand_in(rng, m, k, dtype, layout[0])
    b = operand_in(rng, k, n, dtype, layout[1])
    got = matmul(a, b, device="ref")
    assert_close(got, expected(a, b, integer=np.dtype(dtype).kind in "iu"), RESULT[np.dtype(dtype)])
    # a transposed view is a layout: what was asked reaches the GEMM (a row or a column is contiguous either way)
    assert layouts == [("n" if m == 1 or k == 1 else layout[0]) + ("n" if k == 1 or n == 1 else layout[1])]


def test_a_transposed_view_is_not_copied():
    x = np.zeros((5, 9), np.float16)
    letter, stored = stored_layout(x.T)
    assert letter == "t" and stored.shape == x.shape and stored.flags.c_contiguous and np.shares_memory(stored, x)
    letter, stored = stored_layout(x[:, ::2])  # other strides: a C-contiguous copy
    assert letter == "n" and stored.flags.c_contiguous and not np.shares_memory(stored, x)


@pytest.mark.parametrize("triple", SUPPORTED)
def test_every_dtype_pair(triple):
    a_name, acc, out = triple.split(":")
    in_dtype = {"f16": np.float16, "bf16": BF16, "s8": np.int8, "u8": np.uint8, "e4m3": E4M3,
                "e5m2": ml_dtypes.float8_e5m2}[a_name]
    rng = np.random.default_rng(len(triple))
    for m in (3, 80):  # the skinny kernels and the cooperative-matrix GEMM
        a, b = values(rng, (m, 24), in_dtype), values(rng, (24, 20), in_dtype)
        got = matmul(a, b, acc_dtype=acc, out_dtype=out, device="ref")
        assert_close(got, expected(a, b, integer=acc in ("s32", "u32")), hydroplane.ops.matmul.scalar_type(
            out, "out").dtype)


BATCHES = [((2, 1, 5, 6), (3, 6, 4)), ((3, 5, 6), (6, 4)), ((5, 6), (2, 6, 4)), ((4, 1, 3, 6), (1, 2, 6, 5)),
           ((2, 70, 16), (16, 24))]


@pytest.mark.parametrize("shapes", BATCHES, ids=str)
def test_batches_broadcast_like_numpy(shapes):
    rng = np.random.default_rng(len(shapes[0]))
    a, b = values(rng, shapes[0], np.float16), values(rng, shapes[1], np.float16)
    assert_close(matmul(a, b, device="ref"), expected(a, b), np.float16)


def test_a_batch_folds_into_one_gemm_when_b_has_none(monkeypatch):
    calls = []  # the GEMM problems the call plans
    real = matmul_module.gemm_route
    monkeypatch.setattr(matmul_module, "gemm_route", lambda problem, *a, **k: calls.append(problem) or
                        real(problem, *a, **k))
    matmul_module.clear_plans()
    rng = np.random.default_rng(4)
    a, b = values(rng, (2, 3, 5, 8), np.int8), values(rng, (8, 6), np.int8)
    assert_close(matmul(a, b, device="ref"), expected(a, b, integer=True), np.int32)
    assert len(calls) == 1 and (calls[0].m, calls[0].k) == (30, 8)
    calls.clear()
    swapped = np.swapaxes(values(rng, (3, 8, 5), np.int8), -1, -2)  # batches of transposed matrices: each its layout
    assert_close(matmul(swapped, b, device="ref"), expected(swapped, b, integer=True), np.int32)
    assert len(calls) == 3


def test_batched_transposed_views(layouts):
    rng = np.random.default_rng(8)
    a = np.swapaxes(values(rng, (2, 9, 70), np.float16), -1, -2)  # 2 x 70 x 9, each matrix transposed
    b = np.swapaxes(values(rng, (2, 12, 9), np.float16), -1, -2)
    assert_close(matmul(a, b, device="ref"), expected(a, b), np.float16)
    assert set(layouts) == {"tt"}


@pytest.mark.parametrize("shapes", [((6,), (6, 5)), ((4, 6), (6,)), ((6,), (6,)), ((3, 4, 6), (6,)), ((6,), (2, 6, 5))],
                         ids=str)
def test_one_dimensional_operands(shapes):
    rng = np.random.default_rng(6)
    a, b = values(rng, shapes[0], np.int8), values(rng, shapes[1], np.int8)
    got = matmul(a, b, device="ref")
    want = np.matmul(a.astype(np.int64), b.astype(np.int64))
    assert np.shape(got) == want.shape and np.asarray(got).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("m", [5, 80])
@pytest.mark.parametrize("c_shape", ["full", "row", "column", "none"])
def test_epilogue(m, c_shape):
    rng = np.random.default_rng(m)
    a, b = values(rng, (m, 33), np.float16), values(rng, (33, 20), np.float16).T.copy().T
    bias = values(rng, (20,), np.float16)
    c = {"full": values(rng, (m, 20), np.float32), "row": values(rng, (20,), np.float16),
         "column": values(rng, (m, 1), np.float16), "none": None}[c_shape]
    beta = 0.0 if c is None else -1.5
    for activation in ("none", "relu", "gelu"):
        got = matmul(a, b, c=c, alpha=0.5, beta=beta, bias=bias, activation=activation, out_dtype="f32",
                     device="ref")
        assert_close(got, expected(a, b, c=c, alpha=0.5, beta=beta, bias=bias, activation=activation), np.float32)


def test_integer_epilogue_wraps_like_the_gemm():
    rng = np.random.default_rng(3)
    a, b = values(rng, (40, 70), np.int8, -128, 128), values(rng, (70, 30), np.int8, -128, 128)
    c = values(rng, (40, 30), np.int32, -1000, 1000)
    bias = values(rng, (30,), np.int32, -1000, 1000)
    got = matmul(a, b, c=c, alpha=3, beta=-2, bias=bias, activation="relu", device="ref")
    assert_close(got, expected(a, b, c=c, alpha=3, beta=-2, bias=bias, activation="relu", integer=True), np.int32)


def test_out_is_written():
    rng = np.random.default_rng(2)
    a, b = values(rng, (2, 8, 16), np.float16), values(rng, (2, 16, 24), np.float16)
    out = np.full((2, 8, 24), -777.0, np.float16)
    assert matmul(a, b, out=out, device="ref") is out
    assert_close(out, expected(a, b), np.float16)
    strided = np.full((2, 8, 48), -777.0, np.float32)[:, :, ::2]  # a non-contiguous out
    matmul(a, b, out=strided, out_dtype=np.float32, device="ref")
    assert_close(strided, expected(a, b), np.float32)


def test_empty_problems():
    rng = np.random.default_rng(1)
    c = values(rng, (4, 3), np.float32)
    got = matmul(np.zeros((4, 0), np.float16), np.zeros((0, 3), np.float16), c=c, beta=2.0, bias=np.ones(3, np.float32),
                 out_dtype="f32", device="ref")
    assert_close(got, 2.0 * c + 1.0, np.float32)
    assert matmul(np.zeros((0, 5), np.int8), np.zeros((5, 3), np.int8), device="ref").shape == (0, 3)
    assert matmul(np.zeros((2, 0, 4, 5), np.float16), np.zeros((5, 3), np.float16), device="ref").shape == (2, 0, 4, 3)


class Exporter:
    """A CPU array that offers only DLPack (as a torch CPU tensor does)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kw):
        return self._array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_inputs(layouts):
    rng = np.random.default_rng(5)
    a, b = values(rng, (70, 20), np.int8), values(rng, (30, 20), np.int8).T  # b a transposed view
    got = matmul(Exporter(a), Exporter(b), device="ref")
    assert_close(got, expected(a, b, integer=True), np.int32)
    assert layouts == ["nt"]


class Unreadable:
    def __dlpack__(self, **kw):
        raise BufferError("the tensor lives on cuda:0")

    def __dlpack_device__(self):
        return (2, 0)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_device_arrays_in_and_out(device):
    rng = np.random.default_rng(9)
    a, b = values(rng, (72, 40), np.float16), values(rng, (40, 24), np.float16)
    bias = values(rng, (24,), np.float32)
    da, db = hydroplane.device_array(a, device), hydroplane.device_array(b, device)
    got = matmul(da, db, bias=bias, out_dtype="f32")
    assert isinstance(got, DeviceArray) and got.device == device and got.shape == (72, 24)
    assert_close(got.numpy(), expected(a, b, bias=bias), np.float32)
    out = hydroplane.device_array(np.full((72, 24), -7.25e4, np.float32), device)
    assert matmul(da, b, bias=hydroplane.device_array(bias, device), out_dtype="f32", out=out) is out
    assert_close(out.numpy(), expected(a, b, bias=bias), np.float32)
    for array in (da, db, got, out):
        array.release()


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_batched_device_arrays_are_sliced_on_the_device(device):
    """A batch that does not fold: each GEMM's B and result are matrices inside the DeviceArrays, bound as views at
    their offsets (no copy kernel); the skinny kernels and the GEMM both."""
    rng = np.random.default_rng(10)
    for m in (3, 40):
        a, b = values(rng, (m, 16), np.int8), values(rng, (3, 16, 8), np.int8)
        c = values(rng, (3, m, 8), np.int32)
        da, db, dc = (hydroplane.device_array(x, device) for x in (a, b, c))
        out = hydroplane.device_array(np.full((3, m, 8), -77, np.int32), device)
        matmul(da, db, c=dc, beta=1.0, out=out)
        assert_close(out.numpy(), expected(a, b, c=c, beta=1.0, integer=True), np.int32)
        for array in (da, db, dc, out):
            array.release()


@pytest.mark.vulkan
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8], ids=lambda d: np.dtype(d).name)
def test_matches_numpy_on_lavapipe(layout, dtype):
    rng = np.random.default_rng(len(layout))
    for m, n, k in ((1, 33, 7), (33, 7, 255), (7, 70, 40)):
        a, b = operand_in(rng, m, k, dtype, layout[0]), operand_in(rng, k, n, dtype, layout[1])
        assert_close(matmul(a, b, device=0), expected(a, b, integer=np.dtype(dtype).kind in "iu"),
                     RESULT[np.dtype(dtype)])


@pytest.mark.vulkan
def test_odd_sizes_on_lavapipe_are_padded(monkeypatch):
    steps = []
    real = matmul_module.PreparedGemm

    def recording(runner, route, inputs, **kw):
        steps.append([s.name for s in route.steps])
        return real(runner, route, inputs, **kw)

    monkeypatch.setattr(matmul_module, "PreparedGemm", recording)
    matmul_module.clear_plans()
    rng = np.random.default_rng(12)
    a, b = values(rng, (67, 37), np.float16), values(rng, (37, 29), np.float16)
    c = values(rng, (67, 29), np.float16)
    assert_close(matmul(a, b, c=c, beta=1.0, device=0), expected(a, b, c=c, beta=1.0), np.float16)
    assert steps[-1][0] == "pad a" and steps[-1][-1] == "gemm"  # a NumPy result is read from the padded scratch
    out = hydroplane.device_array(np.full((67, 29), -777.0, np.float16), 0)
    matmul(hydroplane.device_array(a, 0), b, c=c, beta=1.0, out=out)
    assert_close(out.numpy(), expected(a, b, c=c, beta=1.0), np.float16)
    assert steps[-1][0] == "pad a" and steps[-1][-1] == "extract d"  # into a DeviceArray: copied out of it
    out.release()


def test_refusals():
    f16 = np.ones((4, 5), np.float16)
    cases = [
        (lambda: matmul(f16, np.ones((6, 3), np.float16)), r"shapes \(4, 5\) and \(6, 3\): a has 5 columns \(K\), b 6"),
        (lambda: matmul(np.ones((2, 4, 5), np.float16), np.ones((3, 5, 2), np.float16)), "do not broadcast"),
        (lambda: matmul(np.ones((4, 5), np.float32), np.ones((5, 3), np.float32)), "no GEMM takes f32 inputs"),
        (lambda: matmul(f16, np.ones((5, 3), np.int8)), "a is float16 and b is int8"),
        (lambda: matmul(f16, f16.T, acc_dtype="s32"), "f16 inputs accumulate in f32 or f16, not s32"),
        (lambda: matmul(f16, f16.T, acc_dtype="f16", out_dtype="bf16"), "a f16:f16 GEMM writes f16 or f32, not bf16"),
        (lambda: matmul(f16, f16.T, out_dtype="float77"), "out_dtype: 'float77' is not a dtype"),
        (lambda: matmul(f16, f16.T, alpha=float("nan")), "alpha must be finite, not nan"),
        (lambda: matmul(f16, f16.T, c=np.ones((4, 4), np.float16), beta=float("inf")), "beta must be finite, not inf"),
        (lambda: matmul(f16, f16.T, alpha="2"), "alpha is a real number, not '2'"),
        (lambda: matmul(f16, f16.T, c=np.ones((4, 4), np.float16)), "c is given but beta is 0"),
        (lambda: matmul(f16, f16.T, beta=1.0), r"beta=1 scales c: pass c .* \(4, 4\)"),
        (lambda: matmul(f16, f16.T, c=np.ones((3, 4), np.float16), beta=1.0), r"c has shape \(3, 4\), which does not"),
        (lambda: matmul(f16, f16.T, bias=np.ones(5, np.float16)), r"bias has shape \(5,\); it is a row of N=4"),
        (lambda: matmul(f16, f16.T, out=np.ones((4, 5), np.float16)), r"out has shape \(4, 5\); the result's is"),
        (lambda: matmul(f16, f16.T, out=np.ones((4, 4), np.float32)), "out is float32; the result is float16"),
        (lambda: matmul(f16, f16.T, activation="tanh"), "activation is one of none, relu, gelu, not 'tanh'"),
        (lambda: matmul(np.ones((4, 5), np.int8), np.ones((5, 2), np.int8), alpha=0.5), "integer alpha and beta"),
        (lambda: matmul(np.ones((4, 5), np.int8), np.ones((5, 2), np.int8), activation="gelu"), "GELU needs a float"),
        (lambda: matmul(np.float16(2), f16), "1 or more dimensions"),
        (lambda: matmul(Unreadable(), f16), r"cannot read through DLPack \(the tensor lives on cuda:0\)"),
        (lambda: matmul(f16, f16.T, device="gpu"), "device is 'ref', a Vulkan device number or None"),
        (lambda: matmul(np.ones((4, 5), np.int8), np.ones((5, 2), np.int8), bias=np.ones(2, np.float32)),
         "bias is float32; the GEMM reads it as int32"),
    ]
    for call, message in cases:
        with pytest.raises(MatmulError, match=message):
            call()
    read_only = np.ones((4, 4), np.float16)
    read_only.flags.writeable = False
    with pytest.raises(MatmulError, match="out is a read-only array"):
        matmul(f16, f16.T, out=read_only)


def test_device_arrays_of_two_devices_are_refused():
    on_ref = hydroplane.device_array(np.ones((4, 5), np.float16), "ref")
    with pytest.raises(MatmulError, match=r"device=0, but the DeviceArrays are on device 'ref'"):
        matmul(on_ref, np.ones((5, 3), np.float16), device=0)
    with pytest.raises(MatmulError, match="c is a DeviceArray of shape"):
        matmul(on_ref, np.ones((5, 3), np.float16), c=hydroplane.device_array(np.ones((1, 3), np.float16), "ref"),
               beta=1.0)
    on_ref.release()


def test_the_package_exports_matmul():
    assert hydroplane.matmul is matmul


@pytest.mark.vulkan
def test_a_dtype_the_default_device_lacks_is_refused_by_name():
    """bf16 in the test userland: the default device (lavapipe) has no bf16; device=None means that device, so the
    call is refused naming it and the way out (never moved to another device behind the user's back)."""
    rng = np.random.default_rng(13)
    a, b = values(rng, (5, 24), BF16), values(rng, (24, 7), BF16)
    with pytest.raises(MatmulError, match=r"llvmpipe.*has no bf16 arithmetic; pass device=\"ref\""):
        matmul(a, b)
    assert_close(matmul(a, b, device="ref"), expected(a, b), BF16)
    f, g = values(rng, (5, 24), np.float16), values(rng, (24, 7), np.float16)
    with pytest.raises(MatmulError, match=r"llvmpipe.*has no bf16 arithmetic; pass device=\"ref\""):
        matmul(f, g, out_dtype="bf16")  # f16 inputs, a bf16 output: bf16 all the same
    got = matmul(f, g, out_dtype="bf16", device="ref")
    assert got.dtype == BF16
    assert_close(got, expected(f, g), BF16)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_results_land_in_views_at_offsets_the_device_cannot_bind(device):
    """A result DeviceArray at a byte offset off the storage alignment (16 on lavapipe, 4 on ref) goes through a
    staged copy; the skinny route binds d to two parameters (d, and its unused partial sums), which once had a copy
    each, the second copied back over the first's results: out= views at 2..14 bytes and batched results of 70-byte
    matrices came back poisoned for M <= 64 (2026-12-06). Each call here twice: checked, then planned (rebound)."""
    rng = np.random.default_rng()
    for m in (1, 3, 64, 65):
        a, b = values(rng, (m, 5), np.float16), values(rng, (5, 3), np.float16)
        da, db = hydroplane.device_array(a, device), hydroplane.device_array(b, device)
        flat = hydroplane.device_array(np.zeros(3 * m + 16, np.float16), device)
        for start in (1, 3, 5, 7, 1):
            out = flat[start:start + 3 * m].reshape(m, 3)
            flat.write(np.full(flat.shape, POISON[np.dtype(np.float16)], np.float16))
            assert matmul(da, db, out=out) is out
            got = flat.numpy()
            assert_close(got[start:start + 3 * m].reshape(m, 3), expected(a, b), np.float16)
            assert np.all(got[:start] == POISON[np.dtype(np.float16)])  # nothing written outside the view
            assert np.all(got[start + 3 * m:] == POISON[np.dtype(np.float16)])
    x, w = values(rng, (3, 7, 3), np.float16), values(rng, (3, 3, 5), np.float16)  # 7 x 5 f16: 70 bytes a matrix
    for _ in range(2):
        assert_close(matmul(hydroplane.device_array(x, device), w).numpy(), expected(x, w), np.float16)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_inf_and_nan_go_through_every_route_as_numpy_has_them(device):
    """An inf in B's last row (or A's last column), which the skinny kernels' loop steps past K load again and
    counted as 0 * inf = NaN for M <= 64 until 2026-12-06, and a NaN through ReLU, which an FMax turned into 0
    (np.maximum and torch.relu keep it), on the skinny (M 1, 5), tiled (M 65, 130) routes, both layouts of B."""
    rng = np.random.default_rng()
    for m, n, k in ((1, 6, 1), (1, 6, 37), (5, 40, 16), (65, 40, 33), (130, 72, 48)):
        for layout in ("nn", "nt"):
            a, b = values(rng, (m, k), np.float16, -3, 4), values(rng, (k, n), np.float16, -3, 4)
            b[k - 1, 0], a[m - 1, k - 1], b[0, n - 1] = np.inf, -np.inf, -np.inf
            a[0, 0] = np.nan if m > 1 else a[0, 0]
            bb = np.ascontiguousarray(b.T).T if layout == "nt" else b
            with np.errstate(all="ignore"):
                want = a.astype(np.float64) @ b.astype(np.float64)
            for activation in ("none", "relu"):
                got = np.asarray(matmul(a, bb, activation=activation, device=device)).astype(np.float64)
                ref = np.maximum(want, 0) if activation == "relu" else want
                assert np.array_equal(np.isnan(got), np.isnan(ref)), (m, k, layout, activation)
                finite = np.isfinite(ref)
                assert np.array_equal(got[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
                np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_matmul_refuses_an_integer_alpha_f32_would_round(device):
    """hydroplane.matmul(int8, alpha=2**24 + 1) gave 16777216 on both executors before 2026-12-07 (the f32 push
    constant rounded it); the exact integers up to 2**24 still scale exactly, on the skinny route and the GEMM."""
    a = np.ones((1, 16), np.int8)
    b = np.zeros((16, 16), np.int8)
    b[0, 0] = 1
    with pytest.raises(MatmulError, match="is not exact in f32"):
        hydroplane.matmul(a, b, alpha=2 ** 24 + 1, device=device)
    for rows in (1, 40):
        got = hydroplane.matmul(np.ones((rows, 16), np.int8), b, alpha=-(2 ** 24), device=device)
        assert got[0, 0] == -(2 ** 24) and got.dtype == np.int32 and not got[:, 1:].any()
