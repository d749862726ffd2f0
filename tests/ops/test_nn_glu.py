"""hydroplane.nn.gated(x) without up: x's last dimension holds gate then up (one projection's output for both,
torch.nn.functional.glu's split), against NumPy float64 on the reference executor and lavapipe: odd and 16-byte
widths, f32, f16 and bf16, NumPy and DeviceArray inputs (out= poisoned first), the refusal of an odd width."""

import numpy as np
import pytest
from test_nn import BF16, DEVICES, assert_close, awkward, on, poisoned

from hydroplane.ops import nn
from hydroplane.ops.nn import NNError


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu", "silu"])
@pytest.mark.parametrize("dtype, shape", [(np.float32, (3, 90)), (np.float32, (2, 64)), (np.float16, (2, 64)),
                                          (BF16, (5, 18)), (np.float32, (1, 4096))])
def test_gated_halves(device, activation, dtype, shape):
    rng = np.random.default_rng(shape[1])
    x = awkward(rng, shape, dtype, 2.0, large=40.0)
    half = shape[1] // 2
    want = nn.reference_activation(x[:, :half], activation) * x[:, half:].astype(np.float64)
    got = nn.gated(x, None, activation, device=device)
    assert got.shape == (shape[0], half)
    rtol = 10.0 if dtype == np.float32 else 1.0
    assert_close(got, want, rtol, what=f"gated halves {activation}")
    (dx,) = on(device, x)
    out = poisoned((shape[0], half), dtype, device)
    assert nn.gated(dx, activation=activation, out=out) is out
    assert_close(out, want, rtol, what="gated halves on device")


def test_gated_halves_refuses_an_odd_width():
    with pytest.raises(NNError, match="even length"):
        nn.gated(np.ones((2, 7), np.float32), device="ref")
