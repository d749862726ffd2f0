"""hydroplane.matmul(x, qw.T) against float64 NumPy on gguf's dequantized weights, on the reference executor (small
N and K) and lavapipe: every format, M in 1, 7, 16 (the decode GEMV, split over K for a small N) and 64, 200 (the
prefill GEMM), batched x, every activation dtype, the epilogue, out=, quantized DeviceArrays, the upload cache,
quantized_rows, and the refusals. Outputs are poisoned before a run."""

import gc
import importlib.util
import json

import gguf
import ml_dtypes
import numpy as np
import pytest
from conftest import REPO

import hydroplane
from hydroplane.kernels.gemm import source
from hydroplane.launch.jit import device_array
from hydroplane.launch.runtime import runtime
from hydroplane.ops import quant_matmul
from hydroplane.ops.quant_matmul import QuantMatmulError, quantized_rows, upload
from hydroplane.quant import FORMATS, quantize

BF16 = np.dtype(ml_dtypes.bfloat16)
DEVICES = ["ref", 0]  # 0: lavapipe in the test userland
BOUND = 2e-3  # relative Frobenius error against float64 (the bound for f16 results; f32 too)
BF16_BOUND = 6e-3  # a bf16 result's own rounding (8 significant bits) is about 2e-3 alone
rng = np.random.default_rng()


def table(fmt: str, n: int, k: int):
    """A random weight (rows of different scales, zeros) quantized, and gguf's float64 dequantization of it."""
    w = rng.standard_normal((n, k)).astype(np.float32) * rng.uniform(0.05, 2, (n, 1)).astype(np.float32)
    w[rng.random((n, k)) < 0.05] = 0
    qw = quantize(w, fmt)
    ggml = gguf.GGMLQuantizationType(FORMATS[fmt].ggml_type)
    return qw, gguf.quants.dequantize(qw.blocks, ggml).astype(np.float64)


def activations(shape, dtype):
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.05] = 0
    return x.astype(dtype)


def expected(x, w64, bias=None, activation="none"):
    y = x.astype(np.float64) @ w64.T
    if bias is not None:
        y = y + bias.astype(np.float64)
    if activation == "relu":
        y = np.maximum(y, 0)
    elif activation == "gelu":
        y = 0.5 * y * (1 + np.tanh(source.GELU_C * (y + source.GELU_CUBIC * y ** 3)))
    return y


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == np.dtype(dtype), (got.shape, got.dtype, want.shape, dtype)
    error = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    bound = BF16_BOUND if np.dtype(dtype) == BF16 else BOUND
    assert np.isfinite(error) and error <= bound, f"relative error {error:.2e}"


def sizes(device, fmt):
    block = FORMATS[fmt].block
    return (24, 2 * block) if device == "ref" else (72, 4 * block if block == 32 else 2 * block)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 7, 16, 64, 200])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_and_m(device, m, fmt):
    if device == "ref" and m == 200:
        m = 40  # the reference executor interprets: the prefill path at a smaller M
    n, k = sizes(device, fmt)
    qw, w64 = table(fmt, n, k)
    x = activations((m, k), np.float16)
    out = np.full((m, n), -777.0, np.float16)
    got = hydroplane.matmul(x, qw.T, out=out, device=device)
    assert got is out
    assert_close(out, expected(x, w64), np.float16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 3, 17])
def test_relu_keeps_a_nan(device, m):
    """A NaN activation makes NaN its row's outputs, through ReLU too (an FMax turned them into 0 until
    2026-12-06; np.maximum and torch.relu keep NaN), on the decode (M 1, 3) and prefill (M 17) paths."""
    fmt = ["q8_0", "q4_0", "q4_k"][m % 3]
    n, k = sizes(device, fmt)
    qw, w64 = table(fmt, n, k)
    x = activations((m, k), np.float16)
    x[0, 5] = np.nan
    got = np.asarray(hydroplane.matmul(x, qw.T, activation="relu", device=device)).astype(np.float64)
    assert np.all(np.isnan(got[0])) and not np.any(np.isnan(got[1:]))
    if m > 1:
        assert_close(got[1:].astype(np.float16), expected(x[1:], w64, activation="relu"), np.float16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("m", [3, 33])
def test_activation_dtypes_batched_and_epilogue(device, dtype, m):
    fmt = ["q8_0", "q4_k", "q5_0"][m % 3]
    n, k = sizes(device, fmt)
    qw, w64 = table(fmt, n, k)
    x = activations((2, m, k), dtype)
    bias = rng.standard_normal(n).astype(dtype)
    got = hydroplane.matmul(x, qw.T, bias=bias, activation="gelu", device=device)
    assert_close(got, expected(x, w64, bias, "gelu"), dtype)
    got = hydroplane.matmul(x[0, 0], qw.T, activation="relu", device=device)  # 1-D x: a row
    assert_close(got, expected(x[0, 0], w64, activation="relu"), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_device_arrays(device):
    n, k = sizes(device, "q6_k")
    qw, w64 = table("q6_k", n, k)
    dw = upload(qw, device)
    assert dw.format == "q6_k" and dw.shape == (n, k) and dw.nbytes >= qw.nbytes
    assert upload(qw, device) is dw  # uploaded once per device while qw lives
    for m in (2, 20):
        x = activations((m, k), np.float16)
        dx = device_array(x, device)
        dout = device_array(np.full((m, n), -777.0, np.float16), device)
        got = hydroplane.matmul(dx, dw.T, out=dout)
        assert got is dout
        assert_close(dout.numpy(), expected(x, w64), np.float16)
        assert_close(hydroplane.matmul(x, dw.T).numpy(), expected(x, w64), np.float16)  # a DeviceArray back
    assert quant_matmul._uploads[qw][device] is dw
    cached = len(quant_matmul._uploads)
    del qw
    gc.collect()
    assert len(quant_matmul._uploads) == cached - 1  # the cache entry went with the QuantizedArray


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=lambda d: np.dtype(d).name)
def test_quantized_rows(device, dtype):
    fmt = {np.dtype(np.float32): "q8_0", np.dtype(np.float16): "q4_k", BF16: "q5_0"}[np.dtype(dtype)]
    qw, w64 = table(fmt, 40, FORMATS[fmt].block * 2)
    ids = rng.integers(0, 40, (3, 5))
    got = quantized_rows(qw, ids, dtype, device=device)
    assert got.shape == (3, 5, qw.shape[1]) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float32), w64[ids].astype(np.float32).astype(dtype).astype(
        np.float32))
    with pytest.raises(QuantMatmulError, match="rows 0 .. 39"):
        quantized_rows(qw, np.array([40]), dtype, device=device)


def test_refusals():
    qw, _ = table("q4_0", 8, 64)
    x = activations((2, 64), np.float16)
    with pytest.raises(QuantMatmulError, match=r"multiply by its transpose"):
        hydroplane.matmul(x, qw, device="ref")
    with pytest.raises(QuantMatmulError, match="second operand"):
        hydroplane.matmul(qw.T, x, device="ref")
    with pytest.raises(QuantMatmulError, match="K=64"):
        hydroplane.matmul(activations((2, 32), np.float16), qw.T, device="ref")
    with pytest.raises(QuantMatmulError, match="f16, bf16 or f32"):
        hydroplane.matmul(x.astype(np.int8), qw.T, device="ref")
    with pytest.raises(QuantMatmulError, match="beyond f16's range"):
        big = x.astype(np.float32)
        big[1, 3] = 7e4
        hydroplane.matmul(big, qw.T, device="ref")
    for dtype in (np.float16, np.float32):  # an inf: the decode GEMV's q4_0 row would be NaN, the prefill's +-inf
        infinite = x.astype(dtype)
        infinite[0, 9] = -np.inf
        with pytest.raises(QuantMatmulError, match=r"x\[0, 9\] = -inf: an infinite activation"):
            hydroplane.matmul(infinite, qw.T, device="ref")
    with pytest.raises(QuantMatmulError, match="not c, alpha"):
        hydroplane.matmul(x, qw.T, c=np.zeros((2, 8), np.float16), beta=1.0, alpha=2.0, device="ref")
    with pytest.raises(QuantMatmulError, match="row of N=8"):
        hydroplane.matmul(x, qw.T, bias=np.zeros(7, np.float16), device="ref")
    with pytest.raises(QuantMatmulError, match="activation"):
        hydroplane.matmul(x, qw.T, activation="tanh", device="ref")
    with pytest.raises(QuantMatmulError, match="out is float32"):
        hydroplane.matmul(x, qw.T, out=np.zeros((2, 8), np.float32), device="ref")


def test_the_h200_benchmark_at_a_tiny_size(tmp_path):
    """benchmarks/quant_h200.py --tiny on lavapipe: every case runs, is checked, lands in the JSON and the table."""
    spec = importlib.util.spec_from_file_location("quant_h200", REPO / "benchmarks" / "quant_h200.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "q.json"
    assert bench.main(["--tiny", "--device", "0", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    cases = {(r["format"], r["m"], r["k"], r["n"]) for r in record["records"]}
    assert len(cases) == 2 * len(bench.TINY_SHAPES) * len(bench.FORMAT_ORDER) + 2
    assert all(r["ok"] and r["gpu_us"] > 0 and r["loop_us"] > 0 and r["copies"] >= 1 for r in record["records"])
    assert all(set(r["loop_gc"]) <= {"0", "1", "2"} for r in record["records"])  # loop collections by generation
    # hydroplane's f16 matmul beside the prefill rows: measured, or its failure recorded (the GEMM's own tests
    # check it; this benchmark must still give the quantized rows)
    assert all("f16_tflops" in r or "f16_error" in r for r in record["records"] if r["m"] > 16)


@pytest.mark.parametrize("device", DEVICES)
def test_a_weight_larger_than_one_binding_goes_in_windows(device, monkeypatch):
    """Gemma 3's 178 MB embedding exceeds lavapipe's 128 MiB binding: windows of rows (shrunk here to 16 rows)."""
    monkeypatch.setattr(quant_matmul, "WINDOW_ALIGN", 16)
    monkeypatch.setattr(quant_matmul, "BIND_LIMIT", 16 * 68)  # 16 q8_0 rows of K=64
    qw, w64 = table("q8_0", 40, 64)
    assert [(a, b) for a, b, _ in quant_matmul.windows(quant_matmul.weight_of(qw.T), upload(qw, device))] == \
        [(0, 16), (16, 32), (32, 40)]
    bias = rng.standard_normal(40).astype(np.float16)
    for m in (2, 24):
        x = activations((m, 64), np.float16)
        got = hydroplane.matmul(x, qw.T, bias=bias, activation="relu", device=device)
        assert_close(got, expected(x, w64, bias, "relu"), np.float16)
    ids = np.array([39, 0, 17, 16, 31, 5])
    rows = quantized_rows(qw, ids, np.float32, device=device)
    np.testing.assert_array_equal(rows, w64[ids].astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("split", [False, True])
def test_decode_with_and_without_the_k_split(device, split, monkeypatch):
    """The GEMVs' two endings: their own epilogue (no split) and the partial sums through the reduction; the unit
    GEMV (whole blocks in wide loads) and the 8-weight GEMV (a row of an odd count of 32-blocks)."""
    below = 1 << 30 if split else 1
    monkeypatch.setattr(quant_matmul, "SPLIT_BELOW", below)
    monkeypatch.setattr(quant_matmul, "REF_SPLIT_BELOW", below)
    monkeypatch.setattr(quant_matmul, "REF_SPLIT_TARGET", 1 << 20)
    monkeypatch.setattr(quant_matmul, "UNITS_LANES_TARGET", below)
    monkeypatch.setattr(quant_matmul, "REF_UNITS_LANES_TARGET", below)
    for fmt, k in (("q4_k" if split else "q5_0", sizes(device, "q4_k")[1]), ("q8_0", 27 * 32)):
        n = sizes(device, fmt)[0]
        sg = runtime(device).executor.target.subgroup_size
        tuned = {"lpr": 1}  # a lane a row: K ranges left to split
        for m in (1, 5):
            monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), tuned)
        units = quant_matmul.units_plan(fmt, 5, n, k, sg, device == "ref", tuned)
        if k == 27 * 32:  # an odd count of 32-blocks: no unit of whole blocks fits, the 8-weight GEMV runs
            assert units is None
            assert (quant_matmul.gemv_plan(5, n, k, sg, device == "ref").split > 1) == split
        else:
            assert (units.split > 1) == split
        qw, w64 = table(fmt, n, k)
        bias = rng.standard_normal(n).astype(np.float32)
        for m in (1, 5):
            x = activations((m, k), np.float32)
            got = hydroplane.matmul(x, qw.T, bias=bias, activation="gelu", device=device)
            assert_close(got, expected(x, w64, bias, "gelu"), np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_unit_gemv_at_every_load_width(device, fmt, monkeypatch):
    """The unit GEMV with 16-, 8- and 4-byte loads (units of 8, 4, 2 or 1 blocks: q6_k's 16-byte unit is 8 blocks of
    2048 weights, loaded block by block), several lanes a row and a split K, against float64 NumPy; rows of x
    beyond M (MR past M) read the last row and are not stored."""
    block = FORMATS[fmt].block
    k = 2048 if fmt == "q6_k" else 8 * block * 2
    n = 12 if device == "ref" else 40
    qw, w64 = table(fmt, n, k)
    sg = runtime(device).executor.target.subgroup_size
    for lw, lpr, split, rows in ((4, 2, 0, 1), (2, 4, 2, 2), (1, min(8, sg), 1, 3)):
        if device == "ref" and lw == 4 and fmt == "q6_k":
            continue  # 2048 weights per unit unrolled: minutes on the interpreter; lavapipe runs it
        tuned = {"lw": lw, "lpr": lpr, "split": split, "rows": rows}
        monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, 3, n, k), tuned)
        plan = quant_matmul.units_plan(fmt, 3, n, k, sg, device == "ref", tuned)
        assert plan is not None and plan.lw == lw and plan.lpr == lpr
        x = activations((3, k), BF16 if lw == 2 else np.float16)
        out = np.full((3, n), -777.0, x.dtype)
        got = hydroplane.matmul(x, qw.T, out=out, device=device)
        assert_close(got, expected(x, w64), x.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q5_0"])
def test_the_lane_gemv(device, fmt, monkeypatch):
    """The lane GEMV (four lanes a 32-weight block; a tuning entry's "lanes") against float64 NumPy: rows of W 1, 2
    and 4 a subgroup, 1-4 groups a lane a step (steps that run past the range: those groups are loaded again and
    dropped), K split or not, M 1, 3 and 8, f16, bf16 and f32 activations, bias and GELU, an output view of a
    wider array (ldd), and a weight whose blocks end inside a 32-bit word (17 rows of 5 blocks: the lanes' last
    loads stay within it). Outputs are poisoned; plans are checked to be the lane GEMV's."""
    k = 5 * 32 if device == "ref" else 13 * 32  # 20 or 52 groups of 8: steps past the range at every unroll
    for n in (17, 40):
        qw, w64 = table(fmt, n, k)
        bias = rng.standard_normal(n).astype(np.float32)
        for m, dtype, tuned in ((1, np.float16, {}), (3, BF16, {"rows": 1, "unroll": 3, "split": 2}),
                                (8, np.float32, {"rows": 4, "nsg": 2, "unroll": 1}),
                                (1, np.float32, {"unroll": 2, "split": 3})):
            tuned = {"lanes": True, **tuned}
            plan = quant_matmul.lanes_plan(fmt, m, n, k, tuned)
            assert plan is not None and plan.split == tuned.get("split", 1)
            monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), tuned)
            x = activations((m, k), dtype)
            x[0, :8] = [300, -300, 0, 1e-7, -3.5, 0, 1, -1]  # large values, an f16 subnormal, zeros
            wide = np.full((m, n + 5), -777.0, dtype)
            got = hydroplane.matmul(x, qw.T, bias=bias.astype(dtype), activation="gelu", out=wide[:, 2:2 + n],
                                    device=device)
            assert_close(got, expected(x, w64, bias.astype(dtype), "gelu"), dtype)
            assert (wide[:, :2] == -777).all() and (wide[:, 2 + n:] == -777).all()
    assert quant_matmul.lanes_plan("q4_k", 1, 64, 256, {"lanes": True}) is None  # K-quants: the unit GEMV
    assert quant_matmul.lanes_plan(fmt, 9, 64, k, {"lanes": True}) is None  # M over 8
    assert quant_matmul.lanes_plan(fmt, 1, 64, k, {}) is None  # only where an entry asks


@pytest.mark.parametrize("device", DEVICES)
def test_a_weight_whose_blocks_end_inside_a_word(device):
    """17 rows of 3 q4_0 blocks are 918 bytes: upload pads the buffer to whole 16 bytes, and the kernels bind the
    last word whole (before, the matmul refused the weight and asked to pad a buffer the user never made)."""
    qw, w64 = table("q4_0", 17, 96)
    assert qw.nbytes % 4 == 2
    for m in (1, 20):
        x = activations((m, 96), np.float16)
        got = hydroplane.matmul(x, qw.T, out=np.full((m, 17), -777.0, np.float16), device=device)
        assert_close(got, expected(x, w64), np.float16)
    dw = upload(qw, device)
    assert dw.nbytes == qw.nbytes  # the DeviceArray's bytes stay the blocks'
    got = hydroplane.matmul(device_array(x, device), dw.T).numpy()
    assert_close(got, expected(x, w64), np.float16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q5_0", "q4_k"])
def test_the_pipelined_unit_gemv_gives_the_same_bits(device, fmt, monkeypatch):
    """PIPE (each lane's next unit loaded while this one is multiplied) and XSH (one row of x converted into shared
    memory once per workgroup, in chunks: here of 2 or 3 units, so with 4 lanes a row the chunks are not a multiple
    of the lanes) add the same products in the same order as the plain loop: the same bits, with and without a K
    split, lanes taking 2-3 units or none of a range. Compared in f32 results as well as f16 ones: a different order
    of additions changes an f32 result's last bits in most outputs, an f16 result's in a few."""
    block = FORMATS[fmt].block
    k = 2048 if block == 256 else 16 * block * 5  # 10 units a row (16-byte loads: 8 blocks), or 8 (q4_k: 1 block)
    n = 12 if device == "ref" else 40
    qw, w64 = table(fmt, n, k)
    sg = runtime(device).executor.target.subgroup_size
    monkeypatch.setattr(quant_matmul, "UNITS_X_SHARED_BYTES", 3 * 260 * 4)  # 3 units of 256 values (+ padding)
    for m, dtype in ((1, np.float16), (1, np.float32), (3, np.float32)):
        x = activations((m, k), dtype)
        for lpr, split in ((2, 1), (2, 2), (4, 3)):
            results = []
            for pipe, xsh in ((False, False), (True, False), (False, True), (True, True)):
                if xsh and m > 1:
                    continue
                tuned = {"lw": 4, "lpr": lpr, "split": split, "rows": 1, "pipe": pipe, "xsh": xsh}
                monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), tuned)
                plan = quant_matmul.units_plan(fmt, m, n, k, sg, device == "ref", tuned)
                assert plan.span and (plan.pipe, plan.xsh) == (pipe, xsh) and plan.split == split
                if xsh:
                    assert quant_matmul.units_x_chunk(plan, block, 1 << 20) == (2 if lpr == 2 else 3) * 256
                out = np.full((m, n), -777.0, dtype)
                results.append(hydroplane.matmul(x, qw.T, out=out, device=device))
            assert_close(results[0], expected(x, w64), dtype)
            for other in results[1:]:
                np.testing.assert_array_equal(other, results[0])
    for dtype in (BF16, np.float32):  # XSH converts bf16 and f32 rows as the plain loop does
        x = activations((1, k), dtype)
        results = []
        for xsh in (False, True):
            tuned = {"lw": 4, "lpr": 2, "split": 2, "rows": 1, "xsh": xsh}
            monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, 1, n, k), tuned)
            results.append(hydroplane.matmul(x, qw.T, out=np.full((1, n), -777.0, dtype), device=device))
        assert_close(results[0], expected(x, w64), dtype)
        np.testing.assert_array_equal(results[1], results[0])
    assert not quant_matmul.units_plan("q6_k", 1, n, 2048, sg, True, {"pipe": True}).pipe  # no unit loaded whole


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q5_0", "q4_k", "q6_k"])
def test_the_coalesced_unit_gemv_gives_the_same_bits(device, fmt, monkeypatch):
    """COALESCE (W's loads by consecutive lanes in consecutive chunks through a shared stage, each unit then decoded
    whole) adds the same products in the same order as the plain loop: the same bits, and within the bound of
    float64. Weights with negatives, zeros, a row of zeros and rows a thousand times larger; activations with
    extremes; M 1 (with and without XSH) and 3; 1 and 2 rows a lane; K splits whose ranges leave lanes several
    units, steps of fewer units than lanes, and lanes with none."""
    block = FORMATS[fmt].block
    k = 2048 if block == 256 else 16 * block * 5  # 10 units a row (16-byte loads: 8 blocks), or 8 (q4_k); q6_k: 4
    n = 12 if device == "ref" else 40
    w = rng.standard_normal((n, k)).astype(np.float32) * rng.uniform(0.05, 2, (n, 1)).astype(np.float32)
    w[rng.random((n, k)) < 0.05] = 0
    w[3] = 0
    w[5:7] *= 100
    qw = quantize(w, fmt)
    w64 = gguf.quants.dequantize(qw.blocks, gguf.GGMLQuantizationType(FORMATS[fmt].ggml_type)).astype(np.float64)
    executor = runtime(device).executor
    sg, shared = executor.target.subgroup_size, executor.target.shared_memory
    lw = 1 if fmt == "q6_k" else 4  # q6_k: 4-byte loads, units of 2 blocks (16-byte loads: units of 8)
    most_rows = 1 if fmt == "q6_k" else 2  # q6_k's plans take a row a lane (and lavapipe's 32 KiB no more)
    for m, dtype, extreme in ((1, np.float32, 6e4), (3, np.float16, 50.0)):
        x = activations((m, k), dtype)
        x[0, 7] = extreme
        x[-1, k // 2] = -extreme
        x[0, 64:96] = 0
        for rows, lpr, split, xsh in ((1, 2, 1, False), (most_rows, 4, 3, m == 1), (1, min(8, sg), 2, False)):
            results = []
            for coalesce in (False, True):
                tuned = {"lw": lw, "lpr": lpr, "split": split, "rows": rows, "xsh": xsh, "coalesce": coalesce}
                monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), tuned)
                plan = quant_matmul.units_plan(fmt, m, n, k, sg, device == "ref", tuned, shared)
                assert (plan.coalesce, plan.xsh, plan.lw) == (coalesce, xsh, lw)
                out = np.full((m, n), -777.0, dtype)
                results.append(hydroplane.matmul(x, qw.T, out=out, device=device))
            assert_close(results[0], expected(x, w64), dtype)
            np.testing.assert_array_equal(results[1], results[0])
    # a stage that does not fit the device's shared memory: the plain loop instead
    assert not quant_matmul.units_plan(fmt, 1, n, k, sg, False, {"lw": lw, "coalesce": True}, 1024).coalesce


@pytest.mark.parametrize("device", DEVICES)
def test_the_unit_gemv_ablations_run(device, monkeypatch):
    """The ablations (measurement only: benchmarks/quant_sweep.py --gemv-ablate) compile and run, plain and with
    COALESCE: "alu" (each lane's first unit decoded for every unit) gives the whole kernel's bits where every lane
    has one unit; "loads" (the words folded, nothing decoded) writes every output."""
    fmt, k = "q4_0", 16 * 32 * 4  # 8 units of 8 blocks
    n = 12 if device == "ref" else 40
    qw, w64 = table(fmt, n, k)
    executor = runtime(device).executor
    sg, shared = executor.target.subgroup_size, executor.target.shared_memory
    x = activations((1, k), np.float16)
    for coalesce in (False, True):
        base = {"lw": 4, "lpr": 8, "split": 1, "rows": 2, "coalesce": coalesce}
        results = {}
        for ablate in ("", "alu", "loads"):
            tuned = dict(base, ablate=ablate)
            monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, 1, n, k), tuned)
            assert quant_matmul.units_plan(fmt, 1, n, k, sg, device == "ref", tuned, shared).ablate == ablate
            results[ablate] = hydroplane.matmul(x, qw.T, out=np.full((1, n), -777.0, np.float16), device=device)
        assert_close(results[""], expected(x, w64), np.float16)
        np.testing.assert_array_equal(results["alu"], results[""])
        assert (results["loads"] != -777.0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q5_0", "q4_k", "q6_k"])
def test_the_integer_unit_gemv(device, fmt, monkeypatch):
    """DOT (x as two levels of 8-bit integers a block, met with the weights' integers in packed dot products): every
    format against float64, within 2^-13 of each block's largest |x| of the float path; f16 rows (and bf16, f32 with
    q4_0) with extremes and zeros, a K split, lanes with no unit of a range; DeviceArrays with bias and GELU; an
    infinite activation makes its outputs NaN."""
    block = FORMATS[fmt].block
    k = 2048 if block == 256 else 16 * block * 5
    n = 12 if device == "ref" else 40
    qw, w64 = table(fmt, n, k)
    sg = runtime(device).executor.target.subgroup_size
    # the levels' kernel is the only part that depends on x's dtype: every dtype with q4_0, f16 with the others
    for dtype in (np.float16, BF16, np.float32) if fmt == "q4_0" else (np.float16,):
        x = activations((1, k), dtype)
        x[0, 5] = 1000.0 if dtype == np.float16 else 3e4  # one block with a large value beside small ones
        x[0, 40:72] = 0  # a block of zeros
        x[0, 100] = -1e-3
        results = {}
        for dot in (False, True):
            tuned = {"lw": 4, "lpr": 2, "split": 2, "rows": 1 if fmt == "q6_k" else 2, "dot": dot}
            monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, 1, n, k), tuned)
            plan = quant_matmul.units_plan(fmt, 1, n, k, sg, device == "ref", tuned)
            assert plan.dot == dot and not plan.xsh
            results[dot] = hydroplane.matmul(x, qw.T, out=np.full((1, n), -777.0, dtype), device=device)
        made = quant_matmul._pipelines[runtime(device).executor].values()
        assert any(spec.name == f"quant_x_levels_{quant_matmul.FLOATS[np.dtype(dtype)]}" for spec, _ in made)
        want = expected(x, w64)
        assert_close(results[True], want, dtype)
        # the levels' error: at most 2^-13 of each block's largest |x| per activation, summed over |w|
        blocks = np.abs(x.astype(np.float64)).reshape(k // 32, 32).max(axis=1).repeat(32)
        bound = (blocks / 8192) @ np.abs(w64.T) + 1e-3 * np.abs(want) + 1e-6
        assert (np.abs(results[True].astype(np.float64) - want) <= bound + np.abs(want) * 2.0 ** -8).all()
    x = activations((1, k), np.float16)
    tuned = {"lw": 4, "lpr": 2, "split": 1, "rows": 1, "dot": True}
    monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, 1, n, k), tuned)
    # DeviceArrays in and out (the levels' scratch made again by the call's replay), bias and GELU
    dx, dw = device_array(x, device), upload(qw, device)
    bias = rng.standard_normal(n).astype(np.float16)
    dout = device_array(np.full((1, n), -777.0, np.float16), device)
    for _ in range(2):
        hydroplane.matmul(dx, dw.T, bias=bias, activation="gelu", out=dout)
        assert_close(dout.numpy(), expected(x, w64, bias, "gelu"), np.float16)
    x[0, 3] = np.inf  # (a host array with an inf is refused; a DeviceArray's values are not inspected)
    got = hydroplane.matmul(device_array(x, device), dw.T).numpy()
    assert np.isnan(got).all()  # the block's scale is NaN (docs/quant.md, DOT)


@pytest.mark.parametrize("device", DEVICES)
def test_prefill_block_shapes(device, monkeypatch):
    """The prefill GEMM's other block shapes (two tiles a side per subgroup, 4-tile K steps, padded shared rows) on
    the small-tile targets, with M, N and K edges."""
    monkeypatch.setattr(quant_matmul, "SMALL_GEMM_SHAPE", {"wm": 2, "wn": 1, "sm": 2, "sn": 2, "kt": 4, "pad": 1})
    for fmt in ("q4_0", "q6_k"):
        n, k = (24, 512) if device == "ref" else (72, 512)
        qw, w64 = table(fmt, n, k)
        x = activations((37, k), np.float32)
        got = hydroplane.matmul(x, qw.T, device=device)
        assert_close(got, expected(x, w64), np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("shape", [{"prefetch": True}, {"prefetch": True, "split": 3, "kt": 4, "pad": 1},
                                   {"split": 2, "sm": 2}, {"prefetch": True, "stages": 1, "sn": 2},
                                   {"wm": 1, "wn": 1, "sn": 2, "kt": 4, "prefetch": True},
                                   {"prefetch": 2}, {"prefetch": 2, "stages": 1, "sn": 2, "split": 2}])
def test_prefill_prefetch_and_split(device, fmt, shape, monkeypatch):
    """The prefill GEMM with the next K step's loads in registers across the multiplications (PREFETCH; 2: two steps
    ahead, the unrolled pairs of steps with an odd count and a count of 1 or 2 in a split) and split over K (grid z,
    partial sums added by the reduction with the bias and activation): every format, odd M, N not a multiple of the
    block, each activation dtype, K not a multiple of the split."""
    monkeypatch.setattr(quant_matmul, "SMALL_GEMM_SHAPE", {"wm": 2, "wn": 2, "sm": 1, "sn": 1, "pad": 0, **shape})
    block = FORMATS[fmt].block
    # odd counts of blocks a row: rows of 2 bytes past a word, every other row's blocks aligned differently
    n, k = (22, 5 * 32 if block == 32 else 2 * block) if device == "ref" else (66, 9 * 32 if block == 32 else 3 * block)
    m = 19 if device == "ref" else 45
    qw, w64 = table(fmt, n, k)
    dtype = {"q8_0": np.float32, "q4_0": BF16, "q5_0": np.float16, "q4_k": np.float32, "q6_k": np.float16}[fmt]
    x = activations((m, k), dtype)
    bias = rng.standard_normal(n).astype(dtype)
    out = np.full((m, n), -777.0, dtype)
    got = hydroplane.matmul(x, qw.T, bias=bias, activation="gelu", out=out, device=device)
    assert_close(got, expected(x, w64, bias, "gelu"), dtype)


def test_prefill_plan_rule(monkeypatch):
    """gemm_plan on 16-wide tiles: the large block where its grid fills the GPU, else the small block, split over K
    where even that grid is short (K ranges whole K steps, covering K); GEMM_TUNING over the rule (the shipped
    entries too), a format's entry over the shape's; the small-tile shape unsplit."""
    tiles = (16, 16, 16)
    big = quant_matmul.gemm_plan(512, 4096, 640, tiles, False)
    assert (big.bm, big.bn, big.split, big.wm * big.wn) == (128, 128, 1, 8)
    short = quant_matmul.gemm_plan(512, 640, 3072, tiles, False)
    assert (short.bm, short.bn, short.prefetch) == (64, 64, True) and short.split > 1
    assert short.k_split % (short.kt * 16) == 0 and (short.split - 1) * short.k_split < 3072 <= short.split * \
        short.k_split
    shipped = quant_matmul.gemm_plan(512, 640, 2048, tiles, False)  # Gemma's down projection: a measured entry
    assert (shipped.bm, shipped.bn, shipped.split) == (128, 128, 4)  # its short grid split as the rule splits
    tuned = {"wm": 2, "wn": 2, "sm": 1, "sn": 2, "kt": 4, "split": 3}
    monkeypatch.setitem(quant_matmul.GEMM_TUNING, (512, 640, 3072), tuned)
    plan = quant_matmul.gemm_plan(512, 640, 3072, tiles, False)
    assert (plan.bm, plan.bn, plan.kt, plan.split, plan.k_split) == (32, 64, 4, 3, 1024)
    assert quant_matmul.gemm_plan(512, 640, 2048, tiles, True).split == 1
    # a device with less shared memory a workgroup than the large block's 48 KiB takes the block that fits
    assert quant_matmul.gemm_shared_bytes(16, 16, 16, 2, 4, 4, 2, 2, 1, 2) == 49152
    assert quant_matmul.gemm_plan(512, 4096, 14336, tiles, False, 49152).bm == 128
    small_device = quant_matmul.gemm_plan(512, 4096, 14336, tiles, False, 32768)
    assert (small_device.bm, small_device.bn) == (64, 64)
    assert quant_matmul.gemm_plan(512, 640, 2048, tiles, False, 32768).bm == 64  # the tuned entry does not fit
    # a format's own entry over the shape's: q8_0 at 512 x 14336 -> 4096 (shipped), other formats the rule
    q8 = quant_matmul.gemm_plan(512, 4096, 14336, tiles, False, 49152, "q8_0")
    assert (q8.stages, q8.kt, q8.bm, q8.bn) == (1, 4, 128, 128)
    assert quant_matmul.gemm_plan(512, 4096, 14336, tiles, False, 49152, "q4_0") == \
        quant_matmul.gemm_plan(512, 4096, 14336, tiles, False, 49152)
    monkeypatch.setitem(quant_matmul.GEMM_TUNING, ("q4_k", 512, 640, 3072), {"wm": 2, "wn": 2, "sm": 2, "sn": 2})
    assert quant_matmul.gemm_plan(512, 640, 3072, tiles, False, None, "q4_k").bm == 64
    assert quant_matmul.gemm_plan(512, 640, 3072, tiles, False, None, "q4_0").bm == 32  # the shape's entry above


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("which", [0, 1])
def test_prefill_h200_blocks(fmt, which, monkeypatch):
    """The blocks gemm_plan gives 16-wide tiles (GEMM_BLOCKS: 128 x 128, and 64 x 64 with prefetch, split over K as
    the rule splits a short grid) on the reference executor, whose tiles are the H200's 16x16x16: f32 activations as
    the model's prefill, M and N edges."""
    block = dict(quant_matmul.GEMM_BLOCKS[which])
    if which == 1:
        block["split"] = 3
    monkeypatch.setattr(quant_matmul, "SMALL_GEMM_SHAPE", block)
    n, k = (130 if which == 0 else 70, 96 if FORMATS[fmt].block == 32 else 512)
    qw, w64 = table(fmt, n, k)
    x = activations((37, k), np.float32)
    got = hydroplane.matmul(x, qw.T, device="ref")
    assert_close(got, expected(x, w64), np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q4_k", "q6_k", "q4_0"])
def test_the_prefill_gemm_keeps_the_bound_for_non_negative_activations(device, fmt):
    """Activations of one sign (after a ReLU) sum a rounding that the weights of a sub-block share: q4_k's prefill
    staging took dmin * m rounded to f16 once for its 32 weights, 2.5e-3 to 2.9e-3 here (found 2026-12-07)."""
    m, n, k = (17, 8, 512) if device == "ref" else (64, 64, 2048)
    w = rng.standard_normal((n, k)).astype(np.float32)
    qw = quantize(w, fmt)
    w64 = gguf.quants.dequantize(qw.blocks, gguf.GGMLQuantizationType(FORMATS[fmt].ggml_type)).astype(np.float64)
    for dtype in (np.float16, np.float32):
        x = np.abs(activations((m, k), dtype))
        assert_close(hydroplane.matmul(x, qw.T, device=device), expected(x, w64), dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q4_0", "q6_k"])
def test_decode_through_the_gemm_where_tuned(device, fmt, monkeypatch):
    """A GEMM_TUNING entry for (format, M, N, K) with M in the GEMV's range sends that decode through the prefill GEMM
    (its tensor cores; rows of x past M zero), split over K and reduced: the same answers as the GEMV's."""
    block = FORMATS[fmt].block
    n, k = (40, 8 * block) if device == "ref" else (72, 8 * block)
    qw, w64 = table(fmt, n, k)
    x = activations((1, k), np.float16)
    launched = []
    spied = quant_matmul._launch

    def spy(rt, kernel, *args, **kwargs):
        launched.append(kernel.name)
        return spied(rt, kernel, *args, **kwargs)

    monkeypatch.setattr(quant_matmul, "_launch", spy)
    gemv = hydroplane.matmul(x, qw.T, device=device)
    assert not any("quant_gemm" in name for name in launched)
    monkeypatch.setitem(quant_matmul.GEMM_TUNING, (fmt, 1, n, k), {"split": 3, "prefetch": 2, "pad": 1})
    monkeypatch.setattr(quant_matmul, "SMALL_GEMM_SHAPE", {"wm": 1, "wn": 2, "sm": 1, "sn": 1, "pad": 1,
                                                           "prefetch": 2, "split": 3})
    launched.clear()
    got = hydroplane.matmul(x, qw.T, device=device)
    assert any("quant_gemm" in name for name in launched) and any("reduce" in name for name in launched)
    assert_close(got, expected(x, w64), np.float16)
    assert_close(gemv, expected(x, w64), np.float16)
    launched.clear()  # small f32 activations too: scaled into f16's range first
    x32 = activations((1, k), np.float32) * np.float32(1e-6)
    got32 = hydroplane.matmul(x32, qw.T, device=device)
    assert any("quant_scaled_f16" in name for name in launched) and any("quant_gemm" in name for name in launched)
    assert_close(got32, expected(x32, w64), np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_k"])
def test_the_prefill_gemm_scales_each_row_into_f16s_range(device, dtype, fmt):
    """f32 and bf16 rows enter the tensor cores as f16 times a power of two each (undone in the epilogue), so that
    rows far below 2^-14 (f16's subnormals; found 2026-12-07: 2.1e-2 at 1e-6 before) or, in a DeviceArray, beyond
    65504 keep the bound: each row is checked on its own. A row of zeros stays zeros; an infinite activation in a
    DeviceArray beside finite values beyond 65504 gives NumPy's +-inf in its row (found 2026-12-07: NaN, the finite
    ones overflowing f16 unscaled), nothing in the others."""
    m, n, k = (20, 24, 256) if device == "ref" else (40, 72, 512)
    qw, w64 = table(fmt, n, k)
    scales = np.array([1e-30, 1e-12, 1e-6, 1e-5, 3e-5, 1, 1e4] * 6)[:m].astype(np.float32)
    x = (activations((m, k), np.float32) * scales[:, None]).astype(dtype)
    x[4] = 0
    x[6, : k // 2] *= np.float32(1e-20)  # one row's values 2^-66 apart
    bound = BF16_BOUND if np.dtype(dtype) == BF16 else BOUND
    y = np.asarray(hydroplane.matmul(x, qw.T, device=device)).astype(np.float64)
    want = expected(x, w64)
    assert not y[4].any()
    for r in (r for r in range(m) if r != 4):
        error = np.linalg.norm(y[r] - want[r]) / np.linalg.norm(want[r])
        assert error <= bound, f"row {r} (x about {scales[r]:g}): relative error {error:.2e}"
    big = (activations((m, k), np.float32) * scales[::-1, None] * np.float32(1e30)).astype(dtype)
    big[2] = (activations((k,), np.float32) * np.float32(1e30)).astype(dtype)
    big[2, 5] = np.inf  # beside finite values beyond 65504: +-inf as NumPy gives (NaN where W's column is 0)
    d = hydroplane.matmul(device_array(big, device), qw.T, device=device).numpy().astype(np.float64)
    with np.errstate(invalid="ignore"):
        numpy_row = big[2].astype(np.float64) @ w64.T
    assert np.array_equal(d[2], numpy_row, equal_nan=True) or \
        (np.array_equal(np.isnan(d[2]), np.isnan(numpy_row)) and np.array_equal(d[2][np.isinf(numpy_row)],
                                                                                 numpy_row[np.isinf(numpy_row)]))
    want = expected(np.where(np.isinf(big), 0, big), w64)
    for r in (r for r in range(m) if r != 2):
        error = np.linalg.norm(d[r] - want[r]) / np.linalg.norm(want[r])
        assert np.isfinite(d[r]).all() and error <= bound, f"row {r}: relative error {error:.2e}"
