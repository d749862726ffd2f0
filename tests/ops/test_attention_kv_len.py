"""`attention(..., kv_len=)`: the keys in use read from a device buffer (a preallocated KV cache whose length a
captured decode step reads on the device): keys at or past it masked, the causal diagonal aligned to it, combined
with `window=`, on the one-pass, split (decode) and grouped paths; the same planned call replayed at other lengths
by writing the buffer; a captured call; refusals. Results against the float64 reference on ref and lavapipe."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane.kernels.attention import AttentionConfig, AttentionError, AttentionProblem, reference, relative_error
from hydroplane.launch.jit import device_array
from hydroplane.ops.attention import attention

POISON = np.float16(-777.0)


def inputs(rng, h=4, h_kv=2, s_q=1, s_kv=96, d=32):
    def normal(shape):
        return rng.standard_normal(shape).astype(np.float32).astype(np.float16)

    return normal((1, h, s_q, d)), normal((1, h_kv, s_kv, d)), normal((1, h_kv, s_kv, d))


def check(out, q, k, v, valid, causal, window=None):
    problem = AttentionProblem(1, q.shape[1], q.shape[2], k.shape[2], q.shape[3], np.float16, k.shape[1], causal,
                               None, window)
    want = reference(problem, q, k, v, valid)
    got = np.asarray(out, np.float64)
    assert np.isfinite(got).all()
    if not np.abs(want).any():  # a row that sees no key is zeros
        assert not np.abs(got).any()
        return
    assert relative_error(got, want) <= 3e-3


def test_the_reference_masks_the_keys_past_the_length():
    rng = np.random.default_rng(0)
    q, k, v = inputs(rng, s_q=3, s_kv=20)
    problem = AttentionProblem(1, 4, 3, 20, 32, np.float16, 2, True)
    short = AttentionProblem(1, 4, 3, 9, 32, np.float16, 2, True)
    np.testing.assert_allclose(reference(problem, q, k, v, 9), reference(short, q, k[:, :, :9], v[:, :, :9]))


CASES = [  # (s_q, s_kv, causal, window, lengths, config)
    (1, 96, True, None, (1, 17, 50, 96), None),
    (1, 96, True, 5, (3, 40, 96), None),
    (3, 80, True, None, (3, 30, 80), None),
    (5, 64, False, 4, (1, 7, 64), None),
    (1, 300, True, None, (1, 150, 299), AttentionConfig((16, 16, 16), 1, 1, 2, splits=4)),
    (1, 160, True, 9, (2, 100), AttentionConfig((16, 16, 16), 1, 1, 1, splits=0, grouped=True)),
]


@pytest.mark.parametrize("s_q, s_kv, causal, window, lengths, config", CASES)
def test_kv_len_on_ref(s_q, s_kv, causal, window, lengths, config):
    rng = np.random.default_rng(s_kv + s_q)
    q, k, v = inputs(rng, s_q=s_q, s_kv=s_kv)
    dq, dk, dv = (device_array(x, "ref") for x in (q, k, v))
    n = device_array(np.array([lengths[0]], np.int32), "ref")
    out = device_array(np.full(q.shape, POISON), "ref")
    for length in lengths:  # one planned call, the length written between calls
        n.write(np.array([length], np.int32))
        out.write(np.full(q.shape, POISON))
        attention(dq, dk, dv, causal=causal, window=window, kv_len=n, out=out, config=config)
        check(out.numpy(), q, k, v, length, causal, window)


def test_lengths_outside_are_clamped_and_no_key_gives_zeros():
    rng = np.random.default_rng(5)
    q, k, v = inputs(rng, s_q=2, s_kv=40)
    n = device_array(np.array([99], np.int32), "ref")
    full = attention(q, k, v, causal=True, kv_len=n)
    check(full.numpy(), q, k, v, 40, True)
    for length, causal in ((0, True), (-3, False), (0, False)):
        n.write(np.array([length], np.int32))
        got = attention(q, k, v, causal=causal, kv_len=n).numpy()
        assert not np.abs(got.astype(np.float64)).any()


def test_an_integer_kv_len_on_numpy_arrays():
    rng = np.random.default_rng(6)
    q, k, v = inputs(rng, s_q=4, s_kv=48)
    out = attention(q, k, v, causal=True, kv_len=21, device="ref")
    assert isinstance(out, np.ndarray)
    check(out, q, k, v, 21, True)


def test_a_captured_call_replays_at_every_length():
    rng = np.random.default_rng(7)
    q, k, v = inputs(rng, s_q=1, s_kv=64, h=4, h_kv=1)
    dq, dk, dv = (device_array(x, "ref") for x in (q, k, v))
    n = device_array(np.array([1], np.int32), "ref")
    out = device_array(np.full(q.shape, POISON), "ref")
    attention(dq, dk, dv, causal=True, window=8, kv_len=n, out=out)  # planned before the capture
    with hydroplane.capture("ref") as graph:
        attention(dq, dk, dv, causal=True, window=8, kv_len=n, out=out)
    for length in (5, 33, 64):
        n.write(np.array([length], np.int32))
        out.write(np.full(q.shape, POISON))
        graph.replay()
        check(out.numpy(), q, k, v, length, True, 8)
    graph.close()


@pytest.mark.parametrize("kv_len, message", [
    (np.int64(-1), "outside 0 .. 48"),
    (49, "outside 0 .. 48"),
    (True, "not bool"),
    (2.0, "not float"),
])
def test_bad_kv_len_is_refused(kv_len, message):
    q, k, v = inputs(np.random.default_rng(8), s_kv=48)
    with pytest.raises(AttentionError, match=message):
        attention(q, k, v, kv_len=kv_len, device="ref")


def test_a_kv_len_array_of_another_dtype_or_size_is_refused():
    q, k, v = inputs(np.random.default_rng(9), s_kv=48)
    for bad in (np.array([3], np.int64), np.array([3, 4], np.int32)):
        with pytest.raises(AttentionError, match="must hold one int32"):
            attention(q, k, v, kv_len=device_array(bad, "ref"))


@pytest.mark.vulkan
@pytest.mark.parametrize("s_q, causal, window, config", [
    (1, True, None, None),
    (1, True, 6, AttentionConfig((8, 8, 8), 1, 1, 2, splits=3)),
    (4, True, 3, None),
])
def test_kv_len_on_lavapipe(s_q, causal, window, config):
    rng = np.random.default_rng(10 + s_q)
    q, k, v = inputs(rng, s_q=s_q, s_kv=72)
    dq, dk, dv = (device_array(x, 0) for x in (q, k, v))
    n = device_array(np.array([4], np.int32), 0)
    out = device_array(np.full(q.shape, POISON), 0)
    for length in (4, 29, 72):
        n.write(np.array([length], np.int32))
        out.write(np.full(q.shape, POISON))
        attention(dq, dk, dv, causal=causal, window=window, kv_len=n, out=out, config=config)
        check(out.numpy(), q, k, v, length, causal, window)
