"""A user's loop of quantized matmuls on DeviceArrays: the later calls of a signature replay its first call's
launches (ops.quant_matmul's _Recorded), and a call whose arrays lie where an earlier call's did queues that call's
planned launches again (`by_place`). Each result is checked against float64 NumPy on gguf's dequantized weights,
through ping-pong outputs, rotating weights, host writes between queued calls, new results, the K split's scratch,
and released arguments. Outputs are poisoned before each call."""

import gguf
import numpy as np
import pytest

import hydroplane
from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import ReleasedError
from hydroplane.ops import quant_matmul
from hydroplane.ops.quant_matmul import upload
from hydroplane.quant import FORMATS, quantize

DEVICES = ["ref", 0]  # 0: lavapipe in the test userland
BOUND = 2e-3
rng = np.random.default_rng()


def weight(fmt: str, n: int, k: int):
    w = rng.standard_normal((n, k)).astype(np.float32) * rng.uniform(0.05, 2, (n, 1)).astype(np.float32)
    w[rng.random((n, k)) < 0.05] = 0
    qw = quantize(w, fmt)
    return qw, gguf.quants.dequantize(qw.blocks, gguf.GGMLQuantizationType(FORMATS[fmt].ggml_type)).astype(np.float64)


def activations(shape, dtype):
    x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 30.0], shape)).astype(np.float32)
    x[rng.random(shape) < 0.05] = 0
    return x.astype(dtype)


def check(got, x, w64):
    want = x.astype(np.float64) @ w64.T
    error = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert np.isfinite(error) and error <= BOUND, f"relative error {error:.2e}"


def recorded(dx, dw, out=None):
    key = (dx.signature, dw.T.signature, None, None if out is None else out.signature, "none", None)
    return quant_matmul._fast.get(key)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m, fmt, split", [(1, "q4_0", True), (1, "q6_k", False), (40, "q5_0", False)])
def test_a_loop_of_calls_replays_and_stays_right(device, m, fmt, split, monkeypatch):
    quant_matmul._fast.clear()
    block = FORMATS[fmt].block
    n, k = (24, 4 * block) if device == "ref" or block == 256 else (72, 8 * block)
    if split:  # the decode GEMV's K split: a scratch array of partial sums made again by every call
        monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), {"lw": 1, "lpr": 1, "split": 2})
    weights = [weight(fmt, n, k) for _ in range(3)]
    dws = [upload(qw, device) for qw, _ in weights]
    x = activations((m, k), np.float16)
    dx = device_array(x, device)
    outs = [device_array(np.full((m, n), -777.0, np.float16), device) for _ in range(2)]
    for step in range(8):
        i, o = step % 3, outs[step % 2]
        o.write(np.full((m, n), np.nan, np.float16))  # poisoned, queued behind the last call that read it
        if step == 4:  # a host write of x between queued calls: the calls after it see the new x
            x = activations((m, k), np.float16)
            dx.write(x)
        got = hydroplane.matmul(dx, dws[i].T, out=o)
        assert got is o
        check(o.numpy(), x, weights[i][1])
    found = recorded(dx, dws[0], outs[0])
    assert found is not None and found.by_place, "the loop's calls were not replayed from their places"
    if split:
        assert found.scratch, "the K split's partial sums were not scratch of the recording"
    # new results: each call's result its own array, right after the others are dropped or kept
    kept = []
    for step in range(4):
        y = hydroplane.matmul(dx, dws[step % 3].T)
        check(y.numpy(), x, weights[step % 3][1])
        if step % 2:
            kept.append(y)
        else:
            y.release()
    for y, step in zip(kept, (1, 3)):
        check(y.numpy(), x, weights[step % 3][1])
    # a released argument: the replay does not take it; the checked path says what is wrong
    outs[1].release()
    with pytest.raises(ReleasedError):
        hydroplane.matmul(dx, dws[0].T, out=outs[1])
    dws[2].release()
    with pytest.raises(ReleasedError):
        hydroplane.matmul(dx, dws[2].T, out=outs[0])
    got = hydroplane.matmul(dx, dws[1].T, out=outs[0])
    check(got.numpy(), x, weights[1][1])


@pytest.mark.parametrize("device", DEVICES)
def test_queued_calls_share_their_signature_s_scratch_and_stay_right(device, monkeypatch):
    """Calls of one signature bind the same scratch (made by the signature's first replay and kept), so they are
    found by place after one call per (weight, out); queued back to back in one held batch (lavapipe), each call's
    K split waits for the last call's reduction to read the partial sums before overwriting them."""
    from hydroplane.launch.runtime import runtime
    from hydroplane.vk import stream as stream_module

    quant_matmul._fast.clear()
    fmt, m = "q4_0", 1
    n, k = (24, 128) if device == "ref" else (72, 256)
    monkeypatch.setitem(quant_matmul.UNITS_TUNING, (fmt, m, n, k), {"lw": 1, "lpr": 1, "split": 2})
    weights = [weight(fmt, n, k) for _ in range(2)]
    dws = [upload(qw, device) for qw, _ in weights]
    x = activations((m, k), np.float16)
    dx = device_array(x, device)
    outs = [device_array(np.full((m, n), np.nan, np.float16), device) for _ in range(4)]
    hydroplane.matmul(dx, dws[0].T, out=outs[0])  # the checked call, recorded
    stream = runtime(device).stream
    if stream is not None:  # one batch held on the host until the wait: the calls' launches side by side
        hydroplane.synchronize(device)
        monkeypatch.setattr(stream_module, "_clock", lambda: 1.0)
        monkeypatch.setattr(stream, "idle_batch", 10 ** 6)
        stream._submitted_at = 1.0
    found = recorded(dx, dws[0], outs[0])
    assert found is not None and found.scratch, "the K split's partial sums are the recording's scratch"
    for _round in range(3):
        for i, o in enumerate(outs):
            o.write(np.full((m, n), np.nan, np.float16))
            hydroplane.matmul(dx, dws[i % 2].T, out=o)
        if stream is not None:
            assert stream.recording, "the round's calls wait in one batch"
        for i, o in enumerate(outs):
            check(o.numpy(), x, weights[i % 2][1])
        assert found.made is not None and len(found.by_place) == len(outs), found.by_place.keys()
