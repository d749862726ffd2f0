"""f32 -> f16 / bf16 rounds to nearest even on the bits, the same on every device (the H200 folded f32(f16(x))
back to x and truncated f32 -> bf16 through OpFConvert): random bit patterns, subnormals, ties, overflow, NaN."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.lang import Buffer, bf16, f16, f32, global_id, readonly, vec

pytestmark = pytest.mark.vulkan


@hydroplane.kernel(local_size=64)
def to_f16(x: Buffer[f32, readonly], h: Buffer[f16], back: Buffer[f32], pair: Buffer[f16]):
    i = global_id()
    h[i] = f16(x[i])
    back[i] = f32(f16(x[i]))  # must round: no folding back to x
    v = f16(vec(x[i], -x[i]))
    pair[i * 2] = v[0]
    pair[i * 2 + 1] = v[1]


@hydroplane.kernel(local_size=64)
def to_bf16(x: Buffer[f32, readonly], b: Buffer[bf16], back: Buffer[f32]):
    i = global_id()
    b[i] = bf16(x[i])
    back[i] = f32(bf16(x[i]))


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504, 65519.99, 65520, -65520, 2.0 ** -24, 2.0 ** -25,
           3 * 2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 1 + 2.0 ** -11,
           1 + 3 * 2.0 ** -11, 2049, 2051, 255.5, 256.5, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.0e38, 3.4028235e38,
           1e-40, -1e-45]


def _inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng()
    x = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32).copy()  # any bits
    x[: n // 4] = rng.uniform(-7e4, 7e4, n // 4)
    x[n // 4: n // 2] = rng.standard_normal(n // 4) * 1e-5  # f16 subnormals
    x[n // 2: n // 2 + len(SPECIAL)] = np.array(SPECIAL, np.float32)
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16)


def assert_same_f32(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit (signed zeros too), except that a NaN's payload after widening is the device's."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("device", ["ref", 0])
def test_f16_rounds_to_nearest_even_on_the_bits(device):
    n = 1024
    x = _inputs(n)
    h, back, pair = np.full(n, -777, np.float16), np.full(n, -1, np.float32), np.full(2 * n, -777, np.float16)
    to_f16[(n // 64,)](x, h, back, pair, device=device)
    with np.errstate(all="ignore"):
        want, want_negated = x.astype(np.float16), (-x).astype(np.float16)
    np.testing.assert_array_equal(_bits(h), _bits(want))
    assert_same_f32(back, want.astype(np.float32))
    np.testing.assert_array_equal(_bits(pair)[0::2], _bits(want))
    # -x is a float operation: a device may give a NaN another payload (Vulkan preserves none without
    # SignedZeroInfNanPreserve), so NaNs of the negated half compare as NaNs
    negated, nan = pair[1::2], np.isnan(want_negated)
    np.testing.assert_array_equal(np.isnan(negated), nan)
    np.testing.assert_array_equal(_bits(negated)[~nan], _bits(want_negated)[~nan])


def test_bf16_rounds_to_nearest_even_on_the_bits():  # lavapipe has no bf16 scalars; the H200 runs it (conformance)
    n = 1024
    x = _inputs(n)
    b, back = np.zeros(n, ml_dtypes.bfloat16), np.full(n, -1, np.float32)
    to_bf16[(n // 64,)](x, b, back, device="ref")
    with np.errstate(all="ignore"):
        want = x.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(_bits(b), _bits(want))
    assert_same_f32(back, want.astype(np.float32))
