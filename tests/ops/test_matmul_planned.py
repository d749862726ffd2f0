"""`hydroplane.matmul` on DeviceArrays called again with arrays of the same signature (ops/matmul.py's FastCall):
the planned call skips the checks, so these tests hold it to the checked path's answers and refusals; and the
runtime's stream-ordered reuse of freed buffers (a result dropped while queued work still reads it).

Every test runs on the reference executor and on lavapipe (device 0 in the test userland)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import hydroplane
from hydroplane import nn, quant
from hydroplane.lang import Buffer, f32, global_id, readonly
from hydroplane.launch.prepared import PreparedLaunch, ReleasedError
from hydroplane.launch.runtime import runtime
from hydroplane.ops import matmul as matmul_module

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


def _f16(rng, *shape) -> np.ndarray:
    x = rng.uniform(-2, 2, shape).astype(np.float16)
    x.reshape(-1)[::13] = 0
    x.reshape(-1)[1] = -2
    return x


def _want(x, w) -> np.ndarray:
    return (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)


def _close(got, want) -> None:
    got = np.asarray(got, np.float32)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_a_loop_over_weights_and_outputs_gives_every_answer(device):
    """Several weights, inputs and outputs of one signature, in turn: each call binds its own arrays."""
    rng = np.random.default_rng()
    m, n, k = 16, 64, 48
    xs = [_f16(rng, m, k) for _ in range(3)]
    ws = [_f16(rng, n, k) for _ in range(4)]
    dxs = [hydroplane.device_array(x, device) for x in xs]
    dws = [hydroplane.device_array(w, device) for w in ws]
    outs = [hydroplane.device_array(np.full((m, n), 7777, np.float16), device) for _ in range(2)]
    matmul_module.clear_plans()
    for turn in range(8):
        i, j, o = turn % 3, turn % 4, turn % 2
        got = hydroplane.matmul(dxs[i], dws[j].T, out=outs[o])
        assert got is outs[o]
        _close(got.numpy(), _want(xs[i], ws[j].T))
        fresh = hydroplane.matmul(dxs[i], dws[j].T)  # a new result each call
        _close(fresh.numpy(), _want(xs[i], ws[j].T))
    assert matmul_module._fast, "the calls of one signature were not planned"


@pytest.mark.parametrize("device", DEVICES)
def test_views_at_offsets_and_batches_bind_where_they_are(device):
    """Rows of a larger array (a view at an offset) and matrices of a batch: the planned call binds each call's
    view, not the first call's."""
    rng = np.random.default_rng()
    big = _f16(rng, 4, 32, 64)
    w = _f16(rng, 64, 32)
    dbig, dw = hydroplane.device_array(big, device), hydroplane.device_array(w, device)
    for i in (0, 2, 1, 3, 2):
        _close(hydroplane.matmul(dbig[i], dw).numpy(), _want(big[i], w))
    batched = hydroplane.matmul(dbig, dw)  # (4, 32, 64) @ (64, 32): one folded GEMM
    _close(batched.numpy(), _want(big, w))
    halves = [dbig[:2], dbig[2:]]
    for part, want in zip(halves * 2, [big[:2], big[2:]] * 2):
        _close(hydroplane.matmul(part, dw).numpy(), _want(want, w))


@pytest.mark.parametrize("device", DEVICES)
def test_bias_epilogue_and_keywords_key_the_plan(device):
    """alpha, activation and bias are part of the signature: a call with other values is not served by another's
    plan."""
    rng = np.random.default_rng()
    x, w = _f16(rng, 8, 32), _f16(rng, 32, 32)
    bias = rng.uniform(-1, 1, 32).astype(np.float16)
    dx, dw, db = (hydroplane.device_array(a, device) for a in (x, w, bias))
    plain = _want(x, w)
    for _ in range(2):
        _close(hydroplane.matmul(dx, dw).numpy(), plain)
        _close(hydroplane.matmul(dx, dw, alpha=2.0).numpy(), 2 * plain)
        _close(hydroplane.matmul(dx, dw, alpha=2).numpy(), 2 * plain)
        _close(hydroplane.matmul(dx, dw, bias=db, activation="relu").numpy(),
               np.maximum(plain + bias.astype(np.float32), 0))
    with pytest.raises(hydroplane.MatmulError):  # a bool is no alpha, even after alpha=1 was planned
        hydroplane.matmul(dx, dw, alpha=True)
    with pytest.raises(hydroplane.MatmulError):
        hydroplane.matmul(dx, dw, alpha=float("nan"))


@pytest.mark.parametrize("device", DEVICES)
def test_refusals_hold_after_the_call_is_planned(device):
    rng = np.random.default_rng()
    x, w = _f16(rng, 8, 32), _f16(rng, 32, 16)
    dx, dw = hydroplane.device_array(x, device), hydroplane.device_array(w, device)
    out = hydroplane.device_array(np.zeros((8, 16), np.float16), device)
    for _ in range(2):
        hydroplane.matmul(dx, dw, out=out)
    other = hydroplane.device_array(x, device)
    other.release()
    with pytest.raises(ReleasedError):
        hydroplane.matmul(other, dw, out=out)
    gone = hydroplane.device_array(np.zeros((8, 16), np.float16), device)
    gone.release()
    with pytest.raises(ReleasedError):
        hydroplane.matmul(dx, dw, out=gone)
    _close(hydroplane.matmul(dx, dw, out=out).numpy(), _want(x, w))


@pytest.mark.parametrize("device", DEVICES)
def test_out_sharing_an_input_buffer_is_staged_after_planning(device):
    """out = a's own bytes, for a signature already planned with disjoint arrays: computed into scratch first."""
    rng = np.random.default_rng()
    x, w = _f16(rng, 16, 16), _f16(rng, 16, 16)
    dw = hydroplane.device_array(w, device)
    for _ in range(2):
        hydroplane.matmul(hydroplane.device_array(x, device), dw, out=hydroplane.device_array(x * 0, device))
    dx = hydroplane.device_array(x, device)
    got = hydroplane.matmul(dx, dw, out=dx)  # in place: every row of the result reads every row of x
    _close(got.numpy(), _want(x, w))


@pytest.mark.parametrize("device", DEVICES)
def test_a_dropped_result_reused_while_queued_work_reads_it(device):
    """Stream-ordered reuse: a result still read by queued work, released, and its buffer handed to the next call's
    result at once: the reader sees the old values (a barrier orders the two), the writer's values land."""
    rng = np.random.default_rng()
    n = 64
    x1, x2, w, w2 = (_f16(rng, n, n) / 2 for _ in range(4))
    dx1, dx2, dw, dw2 = (hydroplane.device_array(a, device) for a in (x1, x2, w, w2))
    rt = runtime(device)
    for _ in range(3):
        if rt.stream is not None:
            rt.trim()  # no other pooled buffer of this size: the pool hands out its oldest, and R1 is then the only
        a = hydroplane.matmul(dx1, dw)               # R1
        b = hydroplane.matmul(a, dw2)                # reads R1 (queued)
        buffer_of_a = a.buffer
        a.release()
        c = hydroplane.matmul(dx2, dw)               # may take R1's buffer while b's work is queued
        if rt.stream is not None:
            assert c.buffer is buffer_of_a, "the freed buffer was not reused at once"
        a_want = _want(x1, w).astype(np.float16)
        _close(b.numpy(), _want(a_want, w2))
        _close(c.numpy(), _want(x2, w))
        del a, b, c


@pytest.mark.vulkan
def test_reusing_a_freed_buffer_records_a_barrier_after_its_last_reader(monkeypatch):
    """The ordering the reuse relies on, seen in the commands: with everything in one batch, the launch that writes
    the reused buffer comes after a barrier that follows the launch reading its old contents. (lavapipe runs a
    batch's dispatches in order anyway, so the answers alone cannot show a missing barrier.)"""
    rng = np.random.default_rng()
    n = 32
    dx, dw = (hydroplane.device_array(_f16(rng, n, n), 0) for _ in range(2))
    rt = runtime(0)
    hydroplane.matmul(hydroplane.matmul(dx, dw), dw)  # planned once
    hydroplane.synchronize()
    events: list[str] = []
    stream = rt.stream
    record, stream_barrier = stream.record, stream.barrier
    monkeypatch.setattr(stream, "submit_if_idle", lambda: None)  # one batch, flushed by the wait

    def logged_record(fn, label="", keep=(), barrier=False):  # barrier: one recorded before the commands
        if barrier:
            events.append("barrier")
        events.append(f"launch {id(keep[0]) if keep else None}")
        return record(fn, label, keep, barrier)

    def logged_barrier():
        events.append("barrier")
        stream_barrier()

    monkeypatch.setattr(stream, "record", logged_record)
    monkeypatch.setattr(stream, "barrier", logged_barrier)
    a = hydroplane.matmul(dx, dw)
    reused = a.buffer
    b = hydroplane.matmul(a, dw)
    a.release()
    start = len(events)
    c = hydroplane.matmul(dx, dw)
    assert c.buffer is reused
    assert events[start - 1].startswith("launch"), events  # b's launch, reading the old contents
    assert events[start] == "barrier", events              # then the barrier, then c's launch writing them
    assert events[start + 1].startswith("launch"), events
    assert b.numpy().shape == (n, n)


@pytest.mark.parametrize("device", DEVICES)
def test_planned_attention_calls_bind_each_calls_arrays(device):
    """hydroplane.attention of DeviceArrays called again with other arrays of the same signature (FastAttention):
    each call's q, k, v, kv_len and out are the ones it computes with; a released one is refused."""
    rng = np.random.default_rng()
    b, h, s, d = 1, 2, 16, 16

    def ref(q, k, v, n):
        scores = q.astype(np.float64) @ k[..., :n, :].astype(np.float64).swapaxes(-1, -2) / np.sqrt(d)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v[..., :n, :].astype(np.float64)

    sets = [tuple(_f16(rng, b, h, s, d) / 2 for _ in range(3)) for _ in range(3)]
    dsets = [tuple(hydroplane.device_array(a, device) for a in one) for one in sets]
    out = hydroplane.device_array(np.full((b, h, s, d), 7777, np.float16), device)
    lengths = [hydroplane.device_array(np.array([n], np.int32), device) for n in (16, 9)]
    for turn in range(6):
        (q, k, v), (dq, dk, dv) = sets[turn % 3], dsets[turn % 3]
        got = hydroplane.attention(dq, dk, dv, out=out)
        assert got is out
        np.testing.assert_allclose(got.numpy().astype(np.float32), ref(q, k, v, s), rtol=2e-2, atol=2e-2)
        n = (16, 9)[turn % 2]
        q1 = hydroplane.device_array(np.ascontiguousarray(q[:, :, :1]), device)
        fresh = hydroplane.attention(q1, dk, dv, kv_len=lengths[turn % 2])  # decode over the first n keys
        np.testing.assert_allclose(fresh.numpy().astype(np.float32), ref(q[:, :, :1], k, v, n), rtol=2e-2,
                                   atol=2e-2)
    gone = hydroplane.device_array(sets[0][0], device)
    gone.release()
    with pytest.raises(ReleasedError):
        hydroplane.attention(gone, dsets[0][1], dsets[0][2], out=out)


@pytest.mark.parametrize("device", DEVICES)
def test_planned_calls_do_not_keep_the_callers_arrays_alive(device):
    """A plan holds its last call's arrays weakly (parked): arrays the caller drops are freed at once, and the
    plan's next call of that signature binds the new arrays (matmul, attention, kernel[grid])."""
    @hydroplane.kernel(local_size=64)
    def double(x: Buffer[f32, readonly], out: Buffer[f32]):
        i = global_id()
        out[i] = 2.0 * x[i]

    rng = np.random.default_rng()
    for _ in range(2):  # the second round goes through the plans the first made
        x, w = _f16(rng, 8, 32), _f16(rng, 32, 16)
        dx, dw = hydroplane.device_array(x, device), hydroplane.device_array(w, device)
        y = hydroplane.matmul(dx, dw)
        q = hydroplane.device_array(_f16(rng, 1, 2, 16, 16), device)
        o = hydroplane.attention(q, q, q)
        f = hydroplane.device_array(rng.standard_normal(64).astype(np.float32), device)
        g = hydroplane.device_array(np.zeros(64, np.float32), device)
        double[(1,)](f, g)
        _close(y.numpy(), _want(x, w))
        np.testing.assert_array_equal(g.numpy(), 2 * f.numpy())
        refs = [weakref.ref(a.storage) for a in (dx, dw, y, q, o, f, g)]
        del dx, dw, y, q, o, f, g
        gc.collect()
        assert [r() for r in refs] == [None] * len(refs)


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_launches_kept_per_signature_bind_each_calls_arrays(device):
    """matmul(x, qw.T) keeps its launches per signature (ops/quant_matmul.py): rotating weights, inputs and
    outputs each give their own answer (decode rows and a prefill), and dropped arrays are freed."""
    rng = np.random.default_rng()
    k, n = 64, 32
    weights = [rng.standard_normal((n, k)).astype(np.float32) for _ in range(3)]
    qws = [quant.quantize(w, "q8_0") for w in weights]
    dqws = [hydroplane.device_array(q, device) for q in qws]
    for m in (1, 24):
        xs = [_f16(rng, m, k) for _ in range(2)]
        dxs = [hydroplane.device_array(x, device) for x in xs]
        out = hydroplane.device_array(np.full((m, n), 7777, np.float16), device)
        for turn in range(6):
            x, q = xs[turn % 2], qws[turn % 3]
            want = x.astype(np.float64) @ q.dequantize().astype(np.float64).T
            got = hydroplane.matmul(dxs[turn % 2], dqws[turn % 3].T, out=out)
            np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=2e-2, atol=2e-2)
            fresh = hydroplane.matmul(dxs[turn % 2], dqws[turn % 3].T)
            np.testing.assert_allclose(fresh.numpy().astype(np.float64), want, rtol=2e-2, atol=2e-2)
    refs = [weakref.ref(a.storage) for a in (*dxs, out, fresh)]
    del dxs, out, fresh, got
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


@pytest.mark.parametrize("device", DEVICES)
def test_nn_launches_kept_per_signature_bind_each_calls_arrays(device):
    """hydroplane.nn's launches are kept per signature (launch.prepared.dispatch_kept): rotating inputs, weights and
    outputs of rms_norm and add each give their own answer, and dropped arrays are freed."""
    rng = np.random.default_rng()
    xs = [rng.standard_normal((4, 64)).astype(np.float32) for _ in range(3)]
    ws = [rng.standard_normal(64).astype(np.float32) for _ in range(2)]
    dxs = [hydroplane.device_array(x, device) for x in xs]
    dws = [hydroplane.device_array(w, device) for w in ws]
    outs = [hydroplane.device_array(np.full((4, 64), np.nan, np.float32), device) for _ in range(2)]
    for turn in range(6):
        x, w = xs[turn % 3], ws[turn % 2]
        got = nn.rms_norm(dxs[turn % 3], 64, dws[turn % 2], eps=1e-6, out=outs[turn % 2])
        want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
        summed = nn.add(dxs[turn % 3], dxs[(turn + 1) % 3])
        np.testing.assert_allclose(summed.numpy(), x + xs[(turn + 1) % 3], rtol=1e-6)
    refs = [weakref.ref(a.storage) for a in (*dxs, *dws, *outs, summed)]
    del dxs, dws, outs, summed, got
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def _count_plans(monkeypatch, rt) -> list:
    """Count the launches the runtime plans (descriptor sets, recorded commands, byte ranges) and the rebinds of
    prepared launches from now on."""
    made = []
    plan, rebind = rt.plan_launch, PreparedLaunch.rebind

    def counted(*args, **kwargs):
        made.append(("plan", args[0]))
        return plan(*args, **kwargs)

    def counted_rebind(self, name, value):
        made.append(("rebind", name))
        return rebind(self, name, value)
    monkeypatch.setattr(rt, "plan_launch", counted)
    monkeypatch.setattr(PreparedLaunch, "rebind", counted_rebind)
    return made


@pytest.mark.parametrize("device", DEVICES)
def test_arrays_at_places_seen_before_queue_their_planned_launches_again(device, monkeypatch):
    """A loop over rotating weights, and nn / quantized launches of rotating inputs: from the second round on no
    launch is planned again on a queue (each call queues the plan of its arrays' buffers and offsets, new results
    taking pooled buffers in a fixed order), and every answer is still the call's own (outputs poisoned before
    each call)."""
    rng = np.random.default_rng()
    m, n, k = 4, 64, 64
    xs = [_f16(rng, m, k) for _ in range(2)]
    ws = [_f16(rng, n, k) for _ in range(3)]
    dxs = [hydroplane.device_array(x, device) for x in xs]
    dws = [hydroplane.device_array(w, device) for w in ws]
    out = hydroplane.device_array(np.zeros((m, n), np.float16), device)
    norm_w = rng.uniform(-2, 2, k).astype(np.float32)
    xs32 = [rng.uniform(-3, 3, (m, k)).astype(np.float32) for _ in range(2)]
    qw = quant.quantize(rng.uniform(-1, 1, (n, k)).astype(np.float32), "q8_0")
    dn, dx32s = hydroplane.device_array(norm_w, device), [hydroplane.device_array(x, device) for x in xs32]
    dq = hydroplane.device_array(qw, device)
    rt = runtime(device)
    made: list = []
    for turn in range(12):
        if turn == 6:  # every combination seen once
            made = _count_plans(monkeypatch, rt)
        i, j = turn % 2, turn % 3
        out.write(np.full((m, n), 7777, np.float16))
        _close(hydroplane.matmul(dxs[i], dws[j].T, out=out).numpy(), _want(xs[i], ws[j].T))
        normed = nn.rms_norm(dx32s[i], k, dn)
        want = xs32[i] / np.sqrt(np.mean(xs32[i].astype(np.float64) ** 2, -1, keepdims=True) + np.finfo(
            np.float32).eps) * norm_w
        np.testing.assert_allclose(normed.numpy(), want, rtol=1e-5, atol=1e-5)
        got = hydroplane.matmul(dx32s[i], dq.T).numpy()
        want_q = xs32[i].astype(np.float64) @ qw.dequantize().T.astype(np.float64)
        assert np.linalg.norm(got - want_q) <= 2e-3 * np.linalg.norm(want_q)
        del normed
    if rt.stream is not None:  # the reference executor frees at once: a new result is a new buffer there
        assert made == [], f"{len(made)} launches planned or rebound again for arrays at places seen before"


@pytest.mark.parametrize("device", DEVICES)
def test_a_new_array_on_a_freed_buffer_gets_its_own_answer(device):
    """An array released and a new one allocated on its buffer (the pool's oldest of that size): the call finds
    the plan of that place and must read the new contents."""
    rng = np.random.default_rng()
    m, n, k = 8, 32, 32
    w = _f16(rng, n, k)
    dw = hydroplane.device_array(w, device)
    out = hydroplane.device_array(np.zeros((m, n), np.float16), device)
    rt = runtime(device)
    for _ in range(3):
        if rt.stream is not None:
            rt.trim()  # the next array of this size gets the buffer released below
        x1, x2 = _f16(rng, m, k), _f16(rng, m, k)
        d1 = hydroplane.device_array(x1, device)
        _close(hydroplane.matmul(d1, dw.T, out=out).numpy(), _want(x1, w.T))
        place = d1.buffer
        d1.release()
        d2 = hydroplane.device_array(x2, device)
        if rt.stream is not None:
            assert d2.buffer is place
        out.write(np.full((m, n), 7777, np.float16))
        _close(hydroplane.matmul(d2, dw.T, out=out).numpy(), _want(x2, w.T))
        del d2


@pytest.mark.parametrize("device", DEVICES)
def test_threads_calling_one_planned_signature_each_get_their_own_answers(device):
    """Four threads call matmul, attention, an nn op and a kernel of one signature each on their own arrays, with
    the interpreter switching threads as often as it can: a planned call binds its arrays and queues them as one
    step (the runtime's lock), so no thread's launch runs on another's arrays."""
    import sys
    import threading

    rng = np.random.default_rng()
    m, n, k = 4, 32, 32
    per_thread = [(_f16(rng, m, k), _f16(rng, n, k), rng.uniform(-2, 2, (m, k)).astype(np.float32),
                   _f16(rng, 1, 2, 1, 16), _f16(rng, 1, 2, 8, 16)) for _ in range(4)]
    results: dict = {}
    errors: list = []

    def work(index):
        try:
            x, w, x32, q, kv = per_thread[index]
            dx, dw, d32 = (hydroplane.device_array(a, device) for a in (x, w, x32))
            dq, dkv = hydroplane.device_array(q, device), hydroplane.device_array(kv, device)
            out = hydroplane.device_array(np.zeros((m, n), np.float16), device)
            got = []
            for _ in range(25):
                got.append((hydroplane.matmul(dx, dw.T, out=out).numpy(), nn.silu(d32).numpy(),
                            hydroplane.attention(dq, dkv, dkv).numpy()))
            results[index] = got
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    for index, (x, w, x32, q, kv) in enumerate(per_thread):
        want_mm = _want(x, w.T)
        want_silu = x32 / (1 + np.exp(-x32.astype(np.float64)))
        s = (q.astype(np.float64) @ kv.astype(np.float64).swapaxes(-1, -2)) / np.sqrt(16)
        p = np.exp(s - s.max(-1, keepdims=True))
        want_att = (p / p.sum(-1, keepdims=True)) @ kv.astype(np.float64)
        for mm, silu, att in results[index]:
            _close(mm, want_mm)
            np.testing.assert_allclose(silu, want_silu, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(att, np.float32), want_att, rtol=2e-2, atol=2e-2)


def _counting(fn, calls: list):
    def counted(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)
    return counted


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_k"])
def test_the_quantized_matmul_of_a_signature_seen_before_skips_its_checks_and_gives_every_answer(fmt, device,
                                                                                              monkeypatch):
    """hydroplane.matmul(x, qw.T) on DeviceArrays: from the second call of a signature the launches recorded by
    the first are queued again on the call's arrays (no checks, no planning: run_quantized is not called), with
    the split GEMV's scratch made again; every answer is still the call's own, with and without out=, and a
    released argument or an out that is the input goes back to the checked path."""
    from hydroplane.ops import quant_matmul

    rng = np.random.default_rng()
    n, k = 48, 512
    ws = [rng.uniform(-1, 1, (n, k)).astype(np.float32) for _ in range(2)]
    ws[0][0, :40] = 0.0
    qws = [quant.quantize(w, fmt) for w in ws]
    dqs = [hydroplane.device_array(q, device) for q in qws]
    for m in (1, 3, 20):  # the GEMV (split over K where N is small) and the GEMM
        xs = [rng.uniform(-4, 4, (m, k)).astype(np.float32) for _ in range(3)]
        for x in xs:
            x[0, :3] = (0.0, -4.0, 4.0)
        dxs = [hydroplane.device_array(x, device) for x in xs]
        out = hydroplane.device_array(np.zeros((m, n), np.float32), device)
        calls = []
        for turn in range(6):
            if turn == 2:
                monkeypatch.setattr(quant_matmul, "run_quantized", _counting(quant_matmul.run_quantized, calls))
            i, j = turn % 3, turn % 2
            want = xs[i].astype(np.float64) @ qws[j].dequantize().T.astype(np.float64)
            out.write(np.full((m, n), np.nan, np.float32))
            for got in (hydroplane.matmul(dxs[i], dqs[j].T, out=out), hydroplane.matmul(dxs[i], dqs[j].T)):
                got = got.numpy()
                assert np.all(np.isfinite(got))
                assert np.linalg.norm(got - want) <= 2e-3 * np.linalg.norm(want)
        monkeypatch.undo()
        assert calls == [], f"{len(calls)} calls of a seen signature ran the checked path"
        dxs[0].release()
        with pytest.raises(ReleasedError):
            hydroplane.matmul(dxs[0], dqs[0].T)
        with pytest.raises(quant_matmul.QuantMatmulError):  # out shaped as x, not as the result: refused
            hydroplane.matmul(dxs[1], dqs[0].T, out=dxs[1])


@pytest.mark.vulkan
@pytest.mark.parametrize("bundle", [True, False])
def test_a_planned_call_of_several_launches_runs_from_one_secondary_command_buffer(bundle, monkeypatch):
    """A decode attention call (a main pass over key splits and a combining pass) planned for its arrays is queued,
    from the second call at those places, as one launch that runs both from a secondary command buffer
    (launch.runtime.bundled), with the barrier between them inside it; calls into two outputs in turn and over two
    KV caches, all in one held batch, give each call's own answer. BUNDLE_LAUNCHES False queues the two launches:
    the same answers."""
    from hydroplane import vk
    from hydroplane.launch import runtime as runtime_module
    from hydroplane.ops import attention as attention_module
    from hydroplane.vk import stream as stream_module

    monkeypatch.setattr(runtime_module, "BUNDLE_LAUNCHES", bundle)
    attention_module._fast.clear()
    rng = np.random.default_rng()
    b, h, kvh, s, d = 1, 4, 2, 1024, 64

    def ref(q, k, v):
        k, v = np.repeat(k, h // kvh, axis=1), np.repeat(v, h // kvh, axis=1)
        scores = q.astype(np.float64) @ k.astype(np.float64).swapaxes(-1, -2) / np.sqrt(d)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)

    q = _f16(rng, b, h, 1, d)
    caches = [(_f16(rng, b, kvh, s, d), _f16(rng, b, kvh, s, d)) for _ in range(2)]
    dq = hydroplane.device_array(q, 0)
    dcaches = [tuple(hydroplane.device_array(a, 0) for a in kv) for kv in caches]
    outs = [hydroplane.device_array(np.full((b, h, 1, d), np.nan, np.float16), 0) for _ in range(2)]
    for i in range(4):  # the checked call, then each (cache, out) pair's first planned call: launches one by one
        hydroplane.attention(dq, *dcaches[i % 2], out=outs[i // 2])
    fast = next(iter(attention_module._fast.values()))
    assert all(len(planned) == 2 for planned in fast.by_place.values()), "bundled only at the places' second call"
    for i in range(4):  # each pair's second call
        hydroplane.attention(dq, *dcaches[i % 2], out=outs[i // 2])
    hydroplane.synchronize(0)
    for planned in fast.by_place.values():
        if bundle:
            assert len(planned) == 1 and isinstance(planned[0].record, vk.SecondaryCommands), planned
        else:
            assert len(planned) == 2, "the decode path's two passes"
    stream = runtime(0).stream
    monkeypatch.setattr(stream_module, "_clock", lambda: 1.0)
    monkeypatch.setattr(stream, "idle_batch", 10 ** 6)
    stream._submitted_at = 1.0
    for round_ in range(2):
        for o in outs:
            o.write(np.full((b, h, 1, d), np.nan, np.float16))
        for i in range(4):
            hydroplane.attention(dq, *dcaches[(i + round_) % 2], out=outs[i % 2])
        assert stream.recording, "the round's calls wait in one batch"
        for i in (2, 3):  # the last call into each output
            got = outs[i % 2].numpy().astype(np.float64)
            np.testing.assert_allclose(got, ref(q, *caches[(i + round_) % 2]), rtol=2e-2, atol=2e-2)
