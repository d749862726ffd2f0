"""`hydroplane.device_array(x, device=None)`: an array in a device's buffer, whatever kind of array x is.

A NumPy array (or anything np.asarray takes) goes through `launch.jit.device_array` (a plain DeviceArray); a
block-quantized `hydroplane.quant.QuantizedArray` keeps its ggml blocks as they are (`ops.quant_matmul.upload`:
a DeviceArray whose `format` names the block format, shape (N, K), `nbytes` the blocks' bytes) so that
`hydroplane.matmul(x, dw.T)` multiplies by it without a dequantized copy. Layer: ops (it knows quant).
"""

from __future__ import annotations

from hydroplane.launch import jit
from hydroplane.launch.prepared import DeviceArray
from hydroplane.ops import quant_matmul
from hydroplane.quant import QuantizedArray


def device_array(array, device=None) -> DeviceArray:
    """Copy `array` into a buffer of `device` ("ref", a Vulkan device number, or None: the default device)."""
    if isinstance(array, QuantizedArray):
        return quant_matmul.upload(array, device)
    return jit.device_array(array, device)


__all__ = ["device_array"]
