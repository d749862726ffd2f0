"""`out=` that shares bytes with an input (issue 23 item 2): computed into scratch, then copied, on every executor;
disjoint views of one buffer are legal and not staged. And the result-size check of attention."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane.ops import attention as attention_module

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


def _values(rng, shape):
    x = rng.uniform(-2, 2, shape).astype(np.float16)
    x.flat[::7] = 0
    return x


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_out_aliasing_an_input_is_staged(device):
    rng = np.random.default_rng()
    a, b = _values(rng, (48, 48)), _values(rng, (48, 48))
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    for target in ("a", "b"):
        da, db = hydroplane.device_array(a, device), hydroplane.device_array(b, device)
        out = da if target == "a" else db
        assert hydroplane.matmul(da, db, out=out) is out
        np.testing.assert_allclose(out.numpy().astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_into_a_disjoint_view_of_an_input_buffer(device):
    rng = np.random.default_rng()
    a, b = _values(rng, (32, 16)), _values(rng, (16, 32))
    big = np.concatenate([a.reshape(-1), np.full(32 * 32, -777, np.float16)])
    dbig = hydroplane.device_array(big, device)
    da, out = dbig[: 32 * 16].reshape(32, 16), dbig[32 * 16:].reshape(32, 32)
    assert not out.overlaps(da)
    hydroplane.matmul(da, hydroplane.device_array(b, device), out=out)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(da.numpy(), a)  # the input half untouched


@pytest.mark.parametrize("device", DEVICES)
def test_attention_out_aliasing_v_is_staged(device):
    rng = np.random.default_rng()
    q, k, v = (_values(rng, (1, 2, 16, 16)) for _ in range(3))
    want = hydroplane.attention(q, k, v, device="ref")
    dq, dk, dv = (hydroplane.device_array(x, device) for x in (q, k, v))
    assert hydroplane.attention(dq, dk, dv, out=dv) is dv
    np.testing.assert_allclose(dv.numpy().astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_an_attention_result_beyond_memory_is_refused_before_any_work(monkeypatch):
    monkeypatch.setattr(attention_module, "host_memory", lambda: 1 << 20)
    q = np.zeros((1, 4, 512, 64), np.float16)  # 256 KiB of q, 256 KiB of result: fits
    hydroplane.attention(q, q, q, device="ref")
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), (4, 16, 1024, 64), (0, 0, 0, 0))
    with pytest.raises(hydroplane.AttentionError, match="more than this machine"):
        hydroplane.attention(big, big, big, device="ref")
