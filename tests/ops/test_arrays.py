"""hydroplane.device_array for every kind of array: plain ones (launch.jit) and block-quantized ones, whose blocks
go to the device as they are (issue 24: `device_array(qw)` is the runtime's DeviceArray with a format tag)."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane import quant

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_a_quantized_array_keeps_its_blocks_on_the_device(device, fmt):
    rng = np.random.default_rng()
    w = rng.standard_normal((24, 64)).astype(np.float32)
    w[3] = 0.0
    qw = quant.quantize(w, fmt)
    dw = hydroplane.device_array(qw, device)
    assert dw.format == fmt and dw.shape == (24, 64) and dw.nbytes == qw.nbytes
    np.testing.assert_array_equal(dw.view(np.uint8).numpy()[: qw.nbytes], np.asarray(qw.blocks).reshape(-1))
    x = rng.standard_normal((5, 64)).astype(np.float16)
    got = hydroplane.matmul(hydroplane.device_array(x, device), dw.T).numpy().astype(np.float64)
    want = x.astype(np.float64) @ qw.dequantize().astype(np.float64).T
    assert np.linalg.norm(got - want) <= 2e-3 * np.linalg.norm(want)
    with pytest.raises(hydroplane.HydroplaneError, match="blocks"):
        dw.numpy()


def test_a_plain_array_goes_through_the_launch_layer():
    d = hydroplane.device_array(np.arange(6, dtype=np.int32).reshape(2, 3), "ref")
    assert isinstance(d, hydroplane.DeviceArray) and d.format is None
    np.testing.assert_array_equal(d.T.numpy(), np.arange(6).reshape(2, 3).T)
