"""`hydroplane.device_array(x, device=None)`: an array in a device's buffer, whatever kind of array x is.

A NumPy array (or anything np.asarray takes) goes through `launch.jit.device_array` (a plain DeviceArray); a
block-quantized `hydroplane.quant.QuantizedArray` keeps its ggml blocks as they are (`ops.quant_matmul.upload`:
a DeviceArray whose `format` names the block format, shape (N, K), `nbytes` the blocks' bytes) so that
`hydroplane.matmul(x, dw.T)` multiplies by it without a dequantized copy. Layer: ops (it knows quant).

`ops.quant_matmul` (with the quantized kernels' modules) loads on the first quantized array: a process of plain
arrays does not import it (docs/runtime.md, "The first call").
"""

from __future__ import annotations

import importlib

from hydroplane.launch import jit
from hydroplane.launch.prepared import DeviceArray
from hydroplane.quant import QuantizedArray, QuantizedTranspose

# loaded on first use (a quantized array): name -> its module
_LAZY = {"upload": "hydroplane.ops.quant_matmul"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


def is_quantized(value) -> bool:
    """A QuantizedArray, its `.T`, or a DeviceArray of ggml blocks (its `format` set)."""
    return isinstance(value, QuantizedArray | QuantizedTranspose) or (
        isinstance(value, DeviceArray) and value.format is not None)


def device_array(array, device=None) -> DeviceArray:
    """Copy `array` into a buffer of `device` ("ref", a Vulkan device number, or None: the default device)."""
    if isinstance(array, QuantizedArray):
        return __getattr__("upload")(array, device)
    return jit.device_array(array, device)


__all__ = ["device_array", "is_quantized"]
