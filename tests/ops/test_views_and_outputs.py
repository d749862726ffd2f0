"""Views and outputs of the ops, found wrong by a randomized differential run against NumPy (2026-12-07) and fixed:
row slices of quantized DeviceArrays, out= sharing bytes with an input (quantized matmul, the nn ops, the planned
path too), a NumPy out= of a call on DeviceArrays, 0-D ids, the reference executor's captured copies, and the
refusals' classes. Each on the reference executor and lavapipe (device 0), inputs with negatives and zeros, outputs
poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane.kernels.attention import AttentionError
from hydroplane.lang import Buffer, f32, global_id, readonly, s32, writeonly
from hydroplane.launch.prepared import ArgumentError, ReleasedError
from hydroplane.ops import nn
from hydroplane.ops.nn import NNError
from hydroplane.ops.quant_matmul import QuantMatmulError
from hydroplane.quant import quantize

DEVICES = ["ref", 0]  # 0: lavapipe in the test userland


def _rel(got, want) -> float:
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    want = np.asarray(want, np.float64)
    return float(np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30))


# row slices of a quantized DeviceArray ------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt, k", [("q8_0", 64), ("q4_0", 256), ("q5_0", 128)])
def test_a_row_slice_of_a_quantized_device_array_multiplies_by_its_own_rows(device, fmt, k):
    rng = np.random.default_rng()
    qw = quantize(rng.standard_normal((40, k)).astype(np.float32), fmt)
    w = qw.dequantize().astype(np.float64)
    dw = hydroplane.device_array(qw, device)
    for lo, hi in ((0, 16), (16, 32), (8, 40), (4, 5)):
        view = dw[lo:hi]
        assert view.shape == (hi - lo, k) and view.nbytes == (hi - lo) * qw.nbytes // 40
        for m in (1, 3, 20):  # the decode GEMV and the prefill GEMM
            x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            got = hydroplane.matmul(x, view.T)
            assert _rel(got, x.astype(np.float64) @ w[lo:hi].T) < 2e-3, (lo, hi, m)
        ids = np.array([hi - lo - 1, 0, (hi - lo) // 2], np.int32)
        rows = nn.embedding(ids, view, device=device)
        np.testing.assert_array_equal(rows.numpy(), w[lo:hi][ids].astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_planned_calls_over_row_slices_of_one_signature_bind_each_slice(device):
    """Slices 16 rows apart share a signature (2304-byte offsets): the planned call of the first serves the others
    and must bind each one's rows."""
    rng = np.random.default_rng()
    qw = quantize(rng.standard_normal((48, 256)).astype(np.float32), "q4_0")
    w = qw.dequantize().astype(np.float64)
    dw = hydroplane.device_array(qw, device)
    for m in (1, 20):
        dx = hydroplane.device_array(rng.uniform(-1, 1, (m, 256)).astype(np.float16), device)
        x = dx.numpy().astype(np.float64)
        for _ in range(2):
            for lo in (0, 16, 32):
                assert _rel(hydroplane.matmul(dx, dw[lo:lo + 16].T), x @ w[lo:lo + 16].T) < 2e-3, (m, lo)


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_device_arrays_are_sliced_by_whole_rows_only(device):
    qw = quantize(np.linspace(-1, 1, 8 * 96, dtype=np.float32).reshape(8, 96), "q5_0")  # 66-byte rows
    dw = hydroplane.device_array(qw, device)
    for key in ((slice(None), slice(0, 32)), slice(0, 4, 2), 3):
        with pytest.raises(ArgumentError, match="whole rows"):
            dw[key]
    with pytest.raises(ArgumentError, match="whole rows"):
        dw.T[0:2]
    with pytest.raises(QuantMatmulError, match="byte 66 .* not a multiple of 4"):  # row 1 starts inside a word
        hydroplane.matmul(np.ones((1, 96), np.float32), dw[1:3].T)
    got = hydroplane.matmul(np.ones((1, 96), np.float32), dw[2:4].T)  # row 2 starts on a word
    assert _rel(got, np.ones((1, 96)) @ qw.dequantize()[2:4].astype(np.float64).T) < 2e-3


# out= sharing bytes with an input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 4, 20])
def test_a_quantized_matmul_into_an_out_overlapping_its_input_is_staged(device, m):
    rng = np.random.default_rng()
    k = n = 64
    qw = quantize(rng.standard_normal((n, k)).astype(np.float32), "q4_0")
    w = qw.dequantize().astype(np.float64)
    x = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    want = x.astype(np.float64) @ w.T
    for case in ("out=x", "shifted", "bias in out"):
        dx = hydroplane.device_array(np.concatenate([x, np.zeros((1, k), np.float16)]), device)
        if case == "bias in out":
            b = np.full((m + 1, n), np.nan, np.float16)
            b[0] = rng.uniform(-1, 1, n).astype(np.float16)
            db = hydroplane.device_array(b, device)
            got = hydroplane.matmul(dx[:m], qw.T, bias=db[0], out=db[:m])
            assert got is not None and _rel(got, want + b[0].astype(np.float64)) < 2e-3
            continue
        out = dx[:m] if case == "out=x" else dx[1:m + 1]
        assert hydroplane.matmul(dx[:m], qw.T, out=out) is out
        assert _rel(out, want) < 2e-3, case


@pytest.mark.parametrize("device", DEVICES)
def test_nn_ops_into_an_out_overlapping_an_input_are_staged_also_when_planned(device):
    rng = np.random.default_rng()
    n = 64  # 16-byte aligned views: bound as they are, no staged copy of an unbindable offset
    vals = rng.standard_normal(n + 8).astype(np.float32)
    vals[::9] = 0.0
    x64 = vals[:n].astype(np.float64)
    wants = {"silu": x64 / (1 + np.exp(-x64)), "softcap": 3.0 * np.tanh(x64 / 3.0), "add": x64 + vals[8:8 + n]}
    calls = {"silu": lambda d, out: nn.silu(d[:n], out=out),
             "softcap": lambda d, out: nn.softcap(d[:n], 3.0, out=out),
             "add": lambda d, out: nn.add(d[:n], d[8:8 + n], out=out)}
    for name, call in calls.items():
        # a disjoint call first, of the same signatures: its plan must not serve the overlapping one
        d = hydroplane.device_array(np.concatenate([vals, np.zeros(n, np.float32)]), device)
        call(d, d[n + 8:2 * n + 8])
        for _ in range(2):
            d = hydroplane.device_array(np.concatenate([vals, np.zeros(n, np.float32)]), device)
            assert call(d, d[8:8 + n]) is not None
            np.testing.assert_allclose(d[8:8 + n].numpy(), wants[name], rtol=2e-6, atol=1e-6, err_msg=name)
    d = hydroplane.device_array(vals[:n].reshape(8, 8).copy(), device)  # b a row of out=a
    nn.add(d, d[5], out=d)
    want = vals[:n].reshape(8, 8).astype(np.float64)
    np.testing.assert_allclose(d.numpy(), want + want[5], rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_a_numpy_out_of_an_nn_call_on_device_arrays_is_written_and_returned(device):
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 24)).astype(np.float32)
    dx = hydroplane.device_array(x, device)
    out = np.full_like(x, np.nan)
    assert nn.silu(dx, out=out) is out
    np.testing.assert_allclose(out, x / (1 + np.exp(-x.astype(np.float64))), rtol=2e-6, atol=1e-6)
    out = np.full_like(x, np.nan)
    assert nn.add(dx, x[0], out=out) is out
    np.testing.assert_allclose(out, x + x[0], rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_of_a_0d_id_and_a_quantized_table_into_any_out(device):
    table = np.arange(32, dtype=np.float32).reshape(8, 4)
    for ids in (np.int64(3), np.array(3, np.int32), hydroplane.device_array(np.array(3, np.int32), device)):
        got = nn.embedding(ids, table if not hasattr(ids, "numpy") else hydroplane.device_array(table, device),
                           device=device)
        assert tuple(got.shape) == (4,)
        np.testing.assert_array_equal(got.numpy() if hasattr(got, "numpy") else got, table[3])
    qw = quantize(np.linspace(-1, 1, 8 * 32, dtype=np.float32).reshape(8, 32), "q8_0")
    want = qw.dequantize()[[[1, 2], [3, 4]]]
    ids = np.array([[1, 2], [3, 4]])
    for weight in (qw, hydroplane.device_array(qw, device)):
        out = np.full((2, 2, 32), np.nan, np.float32)
        assert nn.embedding(ids, weight, out=out, device=device) is out
        np.testing.assert_array_equal(out, want)
        dout = hydroplane.device_array(np.full((2, 2, 32), np.nan, np.float32), device)
        assert nn.embedding(ids, weight, out=dout, device=device) is dout
        np.testing.assert_array_equal(dout.numpy(), want)
    assert nn.embedding(np.int32(5), qw, device=device).shape == (32,)


# the reference executor's copies inside a capture -------------------------------------------------------------------
def test_a_captured_staged_copy_on_the_reference_executor_runs_at_each_replay():
    rng = np.random.default_rng()
    base = hydroplane.device_array(np.zeros(3 + 64, np.float16), "ref")
    x = base[3:]  # 6 bytes in: not bindable there, so each launch copies it into scratch first
    out = hydroplane.device_array(np.zeros(64, np.float16), "ref")
    nn.silu(x, out=out)  # the call's first run, before the capture
    with hydroplane.capture("ref") as graph:
        nn.silu(x, out=out)
    for _ in range(2):
        values = rng.uniform(-4, 4, 64).astype(np.float16)
        x.write(values)
        graph.replay()
        v = values.astype(np.float64)
        np.testing.assert_allclose(out.numpy().astype(np.float64), v / (1 + np.exp(-v)), rtol=2e-3, atol=2e-3)
    a = hydroplane.device_array(rng.uniform(-1, 1, (72, 2)).astype(np.float16), "ref")
    b = hydroplane.device_array(rng.uniform(-1, 1, (2, 2)).astype(np.float16), "ref")
    hydroplane.matmul(a, b, out=a)  # staged: out is a
    with hydroplane.capture("ref") as graph:
        hydroplane.matmul(a, b, out=a)
    before = a.numpy().astype(np.float64)
    graph.replay()
    np.testing.assert_allclose(a.numpy().astype(np.float64), before @ b.numpy().astype(np.float64),
                               rtol=2e-2, atol=2e-2)


# refusals by class ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_refusals_name_the_op_and_keep_their_classes(device):
    x = np.ones((2, 8), np.float32)
    dead = hydroplane.device_array(x, device)
    dead.release()
    for call in (lambda: nn.silu(dead), lambda: nn.add(dead, x)):
        with pytest.raises(NNError, match="released") as caught:
            call()
        assert isinstance(caught.value, ReleasedError)
    with pytest.raises(NNError, match="eps must be within float32's range"):
        nn.rms_norm(x, 8, eps=1e300, device=device)
    with pytest.raises(NNError, match="cap must be within float32's range"):
        nn.softcap(x, 1e39, device=device)
    with pytest.raises(NNError, match="gelu: .*no Vulkan device 97"):
        nn.gelu(x, device=97)
    q = np.random.default_rng().standard_normal((1, 2, 3, 16)).astype(np.float16)
    k = q[:, :1]
    strided = hydroplane.device_array(np.zeros((1, 2, 6, 16), np.float16), device)[:, :, ::2]
    with pytest.raises(AttentionError, match="q is a strided DeviceArray view"):
        hydroplane.attention(strided, k, k, device=device)
    with pytest.raises(AttentionError, match="config is an AttentionConfig"):
        hydroplane.attention(q, k, k, config="fast", device=device)
    for scale in (3.4028235e38, -3.4028235e38):  # float32's largest as docs/attention.md writes it
        hydroplane.attention(q, k, k, scale=scale, device=device)
    with pytest.raises(AttentionError, match="scale"):
        hydroplane.attention(q, k, k, scale=3.41e38, device=device)
    dx = hydroplane.device_array(np.ones((4, 64), np.float32), device)
    qw = quantize(np.ones((8, 64), np.float32), "q8_0")
    with pytest.raises(QuantMatmulError, match="x: a strided DeviceArray view"):
        hydroplane.matmul(dx[:, :32], quantize(np.ones((8, 32), np.float32), "q8_0").T)
    with pytest.raises(QuantMatmulError, match="out: a strided DeviceArray view"):
        hydroplane.matmul(dx, qw.T, out=hydroplane.device_array(np.zeros((8, 4), np.float32), device).T)


@pytest.mark.parametrize("device", DEVICES)
def test_a_numpy_out_of_a_matmul_on_device_arrays_is_written_and_returned(device):
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (5, 8)).astype(np.float16)
    b = rng.uniform(-1, 1, (8, 3)).astype(np.float16)
    out = np.full((5, 3), np.nan, np.float16)
    assert hydroplane.matmul(hydroplane.device_array(a, device), b, out=out) is out
    np.testing.assert_allclose(out.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-2, atol=1e-2)
    c = rng.uniform(-1, 1, (5, 3)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    assert hydroplane.matmul(a, hydroplane.device_array(b, device), c=c, beta=1.0, out=c) is c
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_an_integer_matmul_of_k_0_wraps_before_its_relu(device):
    a, b = np.zeros((1, 0), np.int8), np.zeros((0, 4), np.int8)
    c = np.array([[2 ** 31 - 1, 5, -3, 2 ** 30 + 7]], np.int32)
    got = hydroplane.matmul(a, b, c=c, beta=2, activation="relu", out_dtype=np.int32, device=device)
    np.testing.assert_array_equal(got, [[0, 10, 0, 0]])  # 2 * (2^31 - 1) wraps to -2 in s32, then relu


# views, found by a second randomized run (2026-12-07 05:00 UTC) ------------------------------------------------------
@hydroplane.kernel(local_size=64)
def even_only(x: Buffer[f32, readonly], out: Buffer[f32, writeonly], n: s32):
    i = global_id()
    if i < n:
        if i % 2 == 0:
            out[i] = x[i]


@pytest.mark.parametrize("device", DEVICES)
def test_a_written_only_view_staged_through_a_copy_keeps_what_the_kernel_does_not_write(device):
    """A user kernel's writeonly buffer at an offset the device cannot bind goes through a copy: the copy starts as
    the view's bytes, so the elements the kernel leaves keep their values (not the pool's stale bytes)."""
    rng = np.random.default_rng()
    n = 40
    src = rng.uniform(-9, 9, n).astype(np.float32)
    x = hydroplane.device_array(src, device)
    for off in (4, 1, 3):  # 16 bytes: bound as it is; 4 and 12 bytes: staged through a copy
        junk = hydroplane.device_array(np.full(off + n + 8, 777.0, np.float32), device)
        junk.release()  # its buffer goes back to the pool, where the staged copy may come from
        old = rng.uniform(-5, 5, off + n).astype(np.float32)
        base = hydroplane.device_array(old, device)
        even_only[(1,)](x, base[off:off + n], n)
        want = old.copy()
        want[off::2] = src[::2]
        np.testing.assert_array_equal(base.numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_a_transposed_device_c_is_refused_and_never_read_as_stored(device):
    rng = np.random.default_rng()
    a = hydroplane.device_array(rng.integers(-3, 4, (4, 8)).astype(np.float16), device)
    b = hydroplane.device_array(rng.integers(-3, 4, (8, 6)).astype(np.float16), device)
    c = rng.integers(-3, 4, (4, 6)).astype(np.float16)
    with pytest.raises(hydroplane.MatmulError, match="c: .*not C-ordered"):
        hydroplane.matmul(a, b, c=hydroplane.device_array(np.ascontiguousarray(c.T), device).T, beta=1.0)
    got = hydroplane.matmul(a, b, c=hydroplane.device_array(c, device), beta=1.0).numpy()
    want = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64) + c
    np.testing.assert_array_equal(got, want.astype(np.float16))


@pytest.mark.parametrize("device", DEVICES)
def test_strided_vector_operands_of_matmul_are_refused_as_matmul_errors(device):
    a = hydroplane.device_array(np.ones((4, 6), np.float16), device)
    column = hydroplane.device_array(np.ones((6, 3), np.float16), device)[:, 1]
    for args, kwargs, name in (((a, column), {}, "b"), ((column, a.T), {}, "a"),
                               ((a, hydroplane.device_array(np.ones((6, 4), np.float16), device)),
                                {"bias": hydroplane.device_array(np.ones(8, np.float16), device)[::2]}, "bias")):
        with pytest.raises(hydroplane.MatmulError, match=f"^{name}: a strided 1-D"):
            hydroplane.matmul(*args, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_device_array_edges_follow_numpy(device):
    d = hydroplane.device_array(np.arange(5, dtype=np.int32) - 2, device)
    zero_d = d[0].view(np.uint32)
    assert zero_d.shape == () and zero_d.numpy() == np.uint32(2**32 - 2)
    with pytest.raises(ArgumentError, match="0-d"):
        d[0].view(np.uint8)
    empty = hydroplane.device_array(np.zeros((6, 0), np.float32), device)
    for view in (empty[4], empty[5], empty[2:]):  # views starting at or past the buffer's end
        assert view.numpy().shape == view.shape and view.numpy_later()().shape == view.shape
        view.write(np.zeros(view.shape, np.float32))
    m = hydroplane.device_array(np.zeros((2, 3), np.float32), device)
    with pytest.raises(ArgumentError, match="does not fit"):
        m.write(np.arange(6, dtype=np.float32).reshape(3, 2))
    m.write(np.array([1, -2, 3], np.float32))  # broadcasts, as NumPy's assignment
    np.testing.assert_array_equal(m.numpy(), [[1, -2, 3], [1, -2, 3]])
    m.write(np.arange(6, dtype=np.float32))  # flat, in C order
    np.testing.assert_array_equal(m.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ArgumentError, match="None"):
        d[None, 1:3]


@pytest.mark.parametrize("device", DEVICES)
def test_a_released_operand_of_a_planned_call_is_named(device):
    rng = np.random.default_rng()
    x = hydroplane.device_array(rng.uniform(-1, 1, (8, 32)).astype(np.float16), device)
    w = hydroplane.device_array(rng.uniform(-1, 1, (16, 32)).astype(np.float16), device)
    out = hydroplane.device_array(np.zeros((8, 16), np.float16), device)
    for _ in range(2):  # the second call is planned
        hydroplane.matmul(x[2:6], w.T, out=out[2:6])
    base = hydroplane.device_array(x.numpy(), device)
    view = base[2:6]
    base.release()
    with pytest.raises(ReleasedError, match="^matmul: a: "):
        hydroplane.matmul(view, w.T, out=out[2:6])
    q = hydroplane.device_array(rng.uniform(-1, 1, (1, 2, 4, 16)).astype(np.float16), device)
    kv = hydroplane.device_array(rng.uniform(-1, 1, (1, 2, 8, 16)).astype(np.float16), device)
    for _ in range(2):
        hydroplane.attention(q, kv, kv)
    q.release()
    with pytest.raises(ReleasedError, match="^attention: q: "):
        hydroplane.attention(q, kv, kv)


# quantized weights, found by a randomized run (2026-12-07 05:00 UTC) -------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_weights_beyond_f16s_range_are_refused_on_every_path(device):
    """q8_0 blocks of d = 1024 dequantize to finite weights up to 131072: the prefill GEMM (f16 staging) gave NaN
    where the decode GEMV gave the right answer."""
    from hydroplane.quant import from_bytes
    rng = np.random.default_rng()
    n, k = 4, 64
    for d, wide in ((1024.0, True), (0.5, False), (np.inf, False)):  # an infinite scale: inf weights, not refused
        raw = np.zeros((n * k // 32, 34), np.uint8)
        raw[:, 0:2] = np.full((raw.shape[0], 1), d, np.float16).view(np.uint8)
        raw[:, 2:] = rng.integers(-128, 128, (raw.shape[0], 32)).astype(np.int8).view(np.uint8)
        qw = from_bytes(raw.reshape(n, -1), "q8_0", (n, k))
        dw = hydroplane.device_array(qw, device)
        for m in (1, 17):
            x = rng.uniform(-1e-3, 1e-3, (m, k)).astype(np.float16)
            for weight in (qw.T, dw.T, dw[:2].T):
                if wide:
                    with pytest.raises(QuantMatmulError, match="beyond f16's range"):
                        hydroplane.matmul(x, weight)
                else:
                    hydroplane.matmul(x, weight)
    assert qw.beyond_f16() is None and from_bytes(raw.reshape(n, -1), "q8_0", (n, k)).beyond_f16() is None


@pytest.mark.parametrize("device", DEVICES)
def test_a_quantized_device_array_reshapes_only_to_its_own_shape(device):
    rng = np.random.default_rng()
    qw = quantize(rng.standard_normal((8, 128)).astype(np.float32), "q4_0")
    dw = hydroplane.device_array(qw, device)
    same = dw.reshape(8, 128)
    assert same.strides == dw.strides and same.nbytes == dw.nbytes
    x = rng.uniform(-1, 1, (2, 128)).astype(np.float32)
    want = x.astype(np.float64) @ qw.dequantize()[4:8].astype(np.float64).T
    assert _rel(hydroplane.matmul(x, same[4:8].T), want) < 2e-3
    with pytest.raises(ArgumentError, match="reshape"):
        dw.reshape(4, 256)
