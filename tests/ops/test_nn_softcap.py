"""`hydroplane.nn.softcap(x, cap)`: cap * tanh(x / cap) on ref and lavapipe against float64, f32 / f16 / bf16, large
and tiny values (the stable tanh: no overflow, no cancellation), NaN and infinities, in place, refusals."""

import ml_dtypes
import numpy as np
import pytest

from hydroplane.launch.jit import device_array
from hydroplane.ops import nn
from hydroplane.ops.nn import NNError, reference_softcap


def values(rng, n, dtype):
    x = np.concatenate([rng.standard_normal(n) * 40.0, rng.standard_normal(n) * 1e-3,
                        [0.0, -0.0, 1e30 if dtype == np.float32 else 6e4, -3e4, 0.0624 * 30, -0.0626 * 30]])
    return x.astype(np.float32).astype(dtype)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-6), (np.float16, 1e-3), (ml_dtypes.bfloat16, 8e-3)])
def test_softcap_against_float64(device, dtype, rtol):
    rng = np.random.default_rng(1)
    x = values(rng, 700, dtype)
    got = nn.softcap(x, 30.0, device=device)
    want = reference_softcap(x.astype(np.float64), 30.0)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=1e-30)
    assert np.abs(got.astype(np.float64)).max() <= 30.0


def test_softcap_in_place_on_a_device_array_and_non_finite_values():
    x = np.array([[np.nan, np.inf, -np.inf, 3.0], [-5.0, 1e-6, 80.0, -0.5]], np.float32)
    dx = device_array(x, "ref")
    assert nn.softcap(dx, 4.0, out=dx) is dx
    got = dx.numpy()
    assert np.isnan(got[0, 0]) and got[0, 1] == 4.0 and got[0, 2] == -4.0
    np.testing.assert_allclose(got[:, 3:].ravel(), reference_softcap(x[:, 3:].ravel(), 4.0), rtol=2e-6)
    np.testing.assert_allclose(got[1], reference_softcap(x[1], 4.0), rtol=2e-6)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_tiny_normal_values_come_back_whole(device):
    """|x| < cap x 2^-126: x / cap is subnormal (lavapipe flushed it, so these came back as 0 until 2026-12-07), but
    the result, about x, is a normal f32: within an ulp of float64 on every device."""
    x = np.array([2e-38, -1e-37, 3e-37, 1.2e-38, -5e-36, 7e-30, -1e-20], np.float32)
    got = nn.softcap(device_array(x, device), 30.0).numpy()
    np.testing.assert_allclose(got.astype(np.float64), reference_softcap(x.astype(np.float64), 30.0), rtol=1.2e-7,
                               atol=0)


@pytest.mark.parametrize("cap, message", [(0.0, "finite and positive"), (-1.0, "finite and positive"),
                                          (float("inf"), "finite and positive"), ("3", "real number")])
def test_bad_caps_are_refused(cap, message):
    with pytest.raises(NNError, match=message):
        nn.softcap(np.ones(4, np.float32), cap, device="ref")


def test_an_integer_array_is_refused():
    with pytest.raises(NNError, match="softcap: x is int32"):
        nn.softcap(np.ones(4, np.int32), 3.0, device="ref")
