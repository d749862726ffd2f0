"""The decode GEMV's prologue (ops.quant_matmul.Prologue, kernels/quant/source.py PROLOGUES) and its column writes
(`col0`) and f32 results of f16 activations (`out_dtype`), against float64 NumPy on gguf's dequantized weights, on
the reference executor and lavapipe: each prologue over the formats of Gemma 3 270M's projections, inputs with
negatives, zeros and an extreme, outputs and the running sum poisoned first, the columns beside col0's untouched,
a split K (the reduction after a prologue), and the refusals."""

from dataclasses import replace

import gguf
import numpy as np
import pytest

from hydroplane.launch.jit import device_array
from hydroplane.launch.runtime import runtime
from hydroplane.ops import nn, quant_matmul
from hydroplane.ops.quant_matmul import Prologue, QuantMatmulError, prologue_fits, run_quantized, weight_of
from hydroplane.quant import FORMATS, quantize

DEVICES = ["ref", 0]  # 0: lavapipe in the test userland
BOUND = 2e-3  # relative L2 error against float64
POISON = -12345.0
rng = np.random.default_rng()


def table(fmt: str, n: int, k: int):
    w = rng.standard_normal((n, k)).astype(np.float32) * rng.uniform(0.05, 2, (n, 1)).astype(np.float32)
    w[rng.random((n, k)) < 0.05] = 0
    qw = quantize(w, fmt)
    ggml = gguf.GGMLQuantizationType(FORMATS[fmt].ggml_type)
    return qw, gguf.quants.dequantize(qw.blocks, ggml).astype(np.float64)


def row(k: int, scale: float = 1.0) -> np.ndarray:
    """One row with negatives, zeros and an extreme."""
    x = (rng.standard_normal(k) * scale).astype(np.float32)
    x[rng.random(k) < 0.1] = 0.0
    x[rng.integers(k)] = 40.0 * scale
    return x


def rms(v: np.ndarray, eps: float) -> np.ndarray:
    v = v.astype(np.float64)
    return v / np.sqrt(np.mean(v * v) + eps)


def rel(got, want) -> float:
    return float(np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want))


# K <= 8 x 128 (the unit GEMV's invocations): the norms' inputs held in registers (quant_matmul.PROLOGUE_HELD); 1536:
# the loop form
PROJECTIONS = [("q5_0", 96, 640), ("q8_0", 64, 640), ("q4_k", 40, 1024), ("q6_k", 24, 512), ("q4_0", 33, 256),
               ("q8_0", 16, 1536)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["norm", "add_norm", "postnorm_add_norm"])
@pytest.mark.parametrize("fmt, n, k", PROJECTIONS)
def test_norm_prologues(device, kind, fmt, n, k):
    eps = 1e-6
    qw, w64 = table(fmt, n, k)
    x, delta = row(k, 3.0), row(k, 0.5)
    weight, delta_weight = row(k) + 1.0, row(k) + 1.0
    total = x.astype(np.float64)
    if kind == "add_norm":
        total = total + delta
    elif kind == "postnorm_add_norm":
        total = total + rms(delta, eps) * delta_weight
    want = (rms(total, eps) * weight) @ w64.T
    d = {name: device_array(v, device) for name, v in
         (("x", x[None]), ("w", weight), ("delta", delta), ("dw", delta_weight))}
    out = device_array(np.full((1, n), POISON, np.float32), device)
    sum_out = device_array(np.full(k, POISON, np.float32), device) if kind != "norm" else None
    prologue = Prologue(kind, weight=d["w"], eps=eps, delta=d["delta"] if kind != "norm" else None,
                        delta_weight=d["dw"] if kind == "postnorm_add_norm" else None, sum_out=sum_out)
    got = run_quantized(d["x"], weight_of(qw.T), out=out, prologue=prologue)
    assert got is out
    assert rel(got.numpy()[0], want) < BOUND
    if sum_out is not None:
        np.testing.assert_allclose(sum_out.numpy(), total, rtol=1e-5, atol=1e-5 * np.abs(total).max())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["norm", "add_norm", "postnorm_add_norm"])
def test_norm_prologues_held_in_registers_are_the_loop_form(device, kind, monkeypatch):
    """The norms' inputs loaded at once into registers (HELD, K = 704: 6 a row per invocation, the last partly past
    K) give the loop form's bits: the same arithmetic in the same order, the result and the running sum."""
    eps, k, n = 1e-6, 704, 16
    sg = runtime(device).executor.target.subgroup_size
    monkeypatch.setitem(quant_matmul.UNITS_TUNING, ("q8_0", 1, n, k), {"nsg": max(1, 128 // sg)})  # 128 invocations
    qw, _ = table("q8_0", n, k)
    arrays = {name: device_array(v, device) for name, v in
              (("x", row(k, 3.0)[None]), ("w", row(k) + 1.0), ("delta", row(k, 0.5)), ("dw", row(k) + 1.0))}
    launched = []
    launch = quant_matmul._launch
    monkeypatch.setattr(quant_matmul, "_launch", lambda rt, kernel, constexprs, *rest: (
        launched.append(constexprs.get("HELD", 0)), launch(rt, kernel, constexprs, *rest))[1])
    results = []
    for held in (quant_matmul.PROLOGUE_HELD, 0):
        monkeypatch.setattr(quant_matmul, "PROLOGUE_HELD", held)
        out = device_array(np.full((1, n), POISON, np.float32), device)
        sum_out = device_array(np.full(k, POISON, np.float32), device) if kind != "norm" else None
        prologue = Prologue(kind, weight=arrays["w"], eps=eps, delta=arrays["delta"] if kind != "norm" else None,
                            delta_weight=arrays["dw"] if kind == "postnorm_add_norm" else None, sum_out=sum_out)
        run_quantized(arrays["x"], weight_of(qw.T), out=out, prologue=prologue)
        results.append((out.numpy(), None if sum_out is None else sum_out.numpy()))
    assert launched[0] == -(-k // (max(1, 128 // sg) * sg)) and launched[-1] == 0, launched
    assert np.isfinite(results[0][0]).all()
    np.testing.assert_array_equal(results[0][0], results[1][0])
    if kind != "norm":
        np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation", ["gelu_tanh", "silu", "gelu"])
@pytest.mark.parametrize("fmt, n, k", [("q6_k", 40, 2048), ("q4_k", 24, 512), ("q5_0", 16, 640)])
def test_gated_prologue_is_nn_gated_then_the_matmul(device, activation, fmt, n, k):
    qw, w64 = table(fmt, n, k)
    gate_up = np.concatenate([row(k, 2.0), row(k)])[None]
    gated = np.asarray(nn.gated(gate_up[:, :k], gate_up[:, k:], activation, device="ref"), np.float64)
    want = gated[0] @ w64.T
    x = device_array(gate_up, device)
    got = run_quantized(x, weight_of(qw.T), prologue=Prologue("gated", activation=activation))
    assert got.shape == (1, n) and rel(got.numpy()[0], want) < BOUND


@pytest.mark.parametrize("device", DEVICES)
def test_columns_of_a_wider_out_and_f32_results_of_f16(device):
    """Two weights of different formats into the columns of one array (the others untouched); f16 x, f32 out."""
    k = 512
    (qa, wa), (qb, wb) = table("q5_0", 48, k), table("q8_0", 16, k)
    x = row(k).astype(np.float16)[None]
    out = device_array(np.full((1, 70), POISON, np.float32), device)
    dx = device_array(x, device)
    run_quantized(dx, weight_of(qa.T), out=out, col0=0, out_dtype=np.float32)
    run_quantized(dx, weight_of(qb.T), out=out, col0=48, out_dtype=np.float32)
    got = out.numpy()[0]
    assert rel(got[:48], x[0].astype(np.float64) @ wa.T) < BOUND
    assert rel(got[48:64], x[0].astype(np.float64) @ wb.T) < BOUND
    assert (got[64:] == POISON).all()
    m = row(3 * k).reshape(3, k).astype(np.float16)  # several rows: the GEMV's columns of each row
    wide = device_array(np.full((3, 70), POISON, np.float32), device)
    run_quantized(device_array(m, device), weight_of(qa.T), out=wide, col0=10, out_dtype=np.float32)
    got = wide.numpy()
    assert rel(got[:, 10:58], m.astype(np.float64) @ wa.T) < BOUND
    assert (got[:, :10] == POISON).all() and (got[:, 58:] == POISON).all()


def test_a_prologue_with_a_split_k(monkeypatch):
    """K split (forced): each range computes the prologue, the reduction adds."""
    monkeypatch.setitem(quant_matmul.UNITS_TUNING, ("q8_0", 1, 4, 2048), {"lpr": 2, "split": 4})
    assert quant_matmul.units_plan("q8_0", 1, 4, 2048, 32, True, {"lpr": 2, "split": 4}).split == 4
    k = 2048
    qw, w64 = table("q8_0", 4, k)
    x, weight = row(k), row(k) + 1.0
    got = run_quantized(device_array(x[None], "ref"), weight_of(qw.T),
                        prologue=Prologue("norm", weight=device_array(weight, "ref"), eps=1e-5))
    assert rel(got.numpy()[0], (rms(x, 1e-5) * weight) @ w64.T) < BOUND


def test_prologue_refusals():
    qw, _ = table("q5_0", 8, 640)
    w = device_array(np.ones(640, np.float32), "ref")
    norm = Prologue("norm", weight=w)
    with pytest.raises(QuantMatmulError, match="one row of f32"):
        run_quantized(device_array(np.ones((2, 640), np.float32), "ref"), weight_of(qw.T), prologue=norm)
    with pytest.raises(QuantMatmulError, match="one row of f32"):
        run_quantized(np.ones((1, 640), np.float32), weight_of(qw.T), prologue=norm)
    with pytest.raises(QuantMatmulError, match="one row of f32"):
        run_quantized(device_array(np.ones((1, 640), np.float32), "ref"), weight_of(qw.T),
                      prologue=Prologue("softmax", weight=w))
    with pytest.raises(QuantMatmulError, match=r"1280 \(a gated prologue\), K=640"):
        run_quantized(device_array(np.ones((1, 640), np.float32), "ref"), weight_of(qw.T),
                      prologue=Prologue("gated"))
    kv_len = device_array(np.array([5], np.int32), "ref")
    stats = device_array(np.zeros(2 * 4 * 5, np.float32), "ref")
    split_results = device_array(np.zeros((1, 4 * 640), np.float32), "ref")
    geometry = (4, 32, 0, 128, 5, 128, 4)  # 4 splits of 32 keys, 5 rows of head dim 128: K = 640
    combine = Prologue("combine", weight=kv_len, delta=stats, combine=geometry)
    with pytest.raises(QuantMatmulError, match=r"2560 \(a combine prologue\), K=640"):
        run_quantized(device_array(np.ones((1, 640), np.float32), "ref"), weight_of(qw.T), prologue=combine)
    with pytest.raises(QuantMatmulError, match="head dim that divides K=640"):
        run_quantized(split_results, weight_of(qw.T), prologue=replace(combine, combine=(4, 32, 0, 128, 5, 96, 4)))
    with pytest.raises(QuantMatmulError, match="head dim that divides K=640"):
        run_quantized(split_results, weight_of(qw.T), prologue=replace(combine, combine=geometry[:6]))
    with pytest.raises(QuantMatmulError, match="int32 DeviceArray"):
        run_quantized(split_results, weight_of(qw.T), prologue=replace(combine, weight=stats))
    with pytest.raises(QuantMatmulError, match="40 f32 maxima and sums"):
        run_quantized(split_results, weight_of(qw.T), prologue=replace(combine, delta=stats[:39]))
    with pytest.raises(QuantMatmulError, match="col0"):
        run_quantized(device_array(np.ones((1, 640), np.float32), "ref"), weight_of(qw.T),
                      out=device_array(np.ones((1, 8), np.float32), "ref"), col0=4)
    assert prologue_fits("q5_0", 640) and not prologue_fits("q5_0", 4096) and not prologue_fits("q8_0", 96)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt_a, fmt_b, k", [("q5_0", "q8_0", 640), ("q8_0", "q4_0", 512), ("q4_0", "q5_0", 1024)])
def test_two_weights_of_two_formats_in_one_launch(device, fmt_a, fmt_b, k, monkeypatch):
    """q | k in Q5_0 and v in Q8_0 (Gemma 3 270M's blocks): one unit GEMV for both, with and without a prologue; the
    weights' first units loaded before the prologue or after it (PROLOGUE_PRELOAD) give the same bits."""
    from hydroplane.launch.runtime import capture, runtime

    (qa, wa), (qb, wb) = table(fmt_a, 64, k), table(fmt_b, 32, k)
    a, b = weight_of(qa.T), weight_of(qb.T)
    target = runtime(device).executor.target
    assert quant_matmul.pair_plan(a, b, 1, target.subgroup_size, runtime(device).is_reference) is not None
    x, weight = row(k, 2.0), row(k) + 1.0
    want = np.concatenate([x.astype(np.float64) @ wa.T, x.astype(np.float64) @ wb.T])
    dx = device_array(x[None], device)
    out = device_array(np.full((1, 96), POISON, np.float32), device)
    assert run_quantized(dx, a, second=b, out=out) is out
    assert rel(out.numpy()[0], want) < BOUND
    normed = rms(x, 1e-6) * weight
    want = np.concatenate([normed @ wa.T, normed @ wb.T])
    prologue = Prologue("norm", weight=device_array(weight, device), eps=1e-6)
    out = device_array(np.full((1, 96), POISON, np.float32), device)
    with capture(device) as graph:
        run_quantized(dx, a, second=b, out=out, prologue=prologue)
    assert graph.launches == 1
    graph.replay()
    assert rel(out.numpy()[0], want) < BOUND
    monkeypatch.setattr(quant_matmul, "UNITS_PIPE", True)  # each lane's next unit loaded ahead: the same bits
    piped = device_array(np.full((1, 96), POISON, np.float32), device)
    run_quantized(dx, a, second=b, out=piped, prologue=prologue)
    np.testing.assert_array_equal(piped.numpy(), out.numpy())
    monkeypatch.setattr(quant_matmul, "PROLOGUE_PRELOAD", False)
    later = device_array(np.full((1, 96), POISON, np.float32), device)
    run_quantized(dx, a, second=b, out=later, prologue=prologue)
    np.testing.assert_array_equal(later.numpy(), out.numpy())


def test_two_weights_that_cannot_share_a_launch_take_two():
    (qa, wa), (qb, wb) = table("q4_k", 8, 512), table("q6_k", 8, 512)  # units of 1 block in 16-byte loads, of 2 in 4
    a, b = weight_of(qa.T), weight_of(qb.T)
    assert quant_matmul.pair_plan(a, b, 1, 32, True) is None
    x = row(512)
    got = run_quantized(device_array(x[None], "ref"), a, second=b)
    assert rel(got.numpy()[0], np.concatenate([x.astype(np.float64) @ wa.T, x.astype(np.float64) @ wb.T])) < BOUND
    with pytest.raises(QuantMatmulError, match="second weight"):
        run_quantized(x[None], a, second=weight_of(table("q8_0", 8, 256)[0].T))


@pytest.mark.parametrize("device", DEVICES)
def test_a_weight_in_two_windows_takes_one_launch(device, monkeypatch):
    """Gemma 3's tied 178 MB Q8_0 table is two windows of one binding each: its decode GEMV (with the final norm's
    prologue) and its row gather (with the embedding scale) bind both in one launch (shrunk here to 16-row
    windows)."""
    from hydroplane.launch.runtime import capture

    monkeypatch.setattr(quant_matmul, "WINDOW_ALIGN", 16)
    monkeypatch.setattr(quant_matmul, "BIND_LIMIT", 16 * 34 * 8)  # 16 q8_0 rows of K=256
    qw, w64 = table("q8_0", 28, 256)
    table_on_device = quant_matmul.upload(qw, device)
    assert [(a, b) for a, b, _ in quant_matmul.windows(weight_of(qw.T), table_on_device)] == [(0, 16), (16, 28)]
    x, weight = row(256), row(256) + 1.0
    dx, dw = device_array(x[None], device), device_array(weight, device)
    out = device_array(np.full((1, 28), POISON, np.float32), device)
    ids = device_array(np.array([27, 0, 16, 15, 3, 28, -1], np.int32), device)
    run_quantized(dx, weight_of(qw.T), out=out, prologue=Prologue("norm", weight=dw, eps=1e-6))  # planned once
    with capture(device) as graph:
        run_quantized(dx, weight_of(qw.T), out=out, prologue=Prologue("norm", weight=dw, eps=1e-6))
    assert graph.launches == 1
    graph.replay()
    assert rel(out.numpy()[0], (rms(x, 1e-6) * weight) @ w64.T) < BOUND
    rows = quant_matmul.quantized_rows(table_on_device, ids, np.float32, scale=2.5)
    want = np.zeros((7, 256))
    want[:5] = w64[[27, 0, 16, 15, 3]] * 2.5  # ids outside the table give zero rows
    np.testing.assert_array_equal(rows.numpy(), want.astype(np.float32))
