"""`hydroplane.attention(q, k, v)`: NumPy arrays, DeviceArrays (the result stays on the device) and DLPack CPU arrays
in, `out=`, the device choice, the decode path through the launch layer, and every refusal by name (AttentionError,
a HydroplaneError). Results against the float64 NumPy reference on ref and lavapipe."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.errors import HydroplaneError
from hydroplane.kernels.attention import AttentionConfig, AttentionError, AttentionProblem, reference, relative_error
from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import DeviceArray
from hydroplane.ops.attention import attention


def inputs(b=1, h=2, h_kv=2, s_q=33, s_kv=40, d=64, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, h, s_q, d)).astype(np.float32).astype(dtype),
            rng.standard_normal((b, h_kv, s_kv, d)).astype(np.float32).astype(dtype),
            rng.standard_normal((b, h_kv, s_kv, d)).astype(np.float32).astype(dtype))


def assert_close(out, q, k, v, causal=False, scale=None):
    b, h, s_q, d = q.shape
    problem = AttentionProblem(b, h, s_q, k.shape[2], d, q.dtype, k.shape[1], causal, scale)
    error = relative_error(np.asarray(out), reference(problem, q, k, v))
    assert 0 < error <= (3e-3 if q.dtype == np.float16 else 1.5e-2), error


class DLPackOnly:
    """A CPU array that offers only the DLPack protocol (as a torch CPU tensor does)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_the_package_exports_attention():
    assert hydroplane.attention is attention


def test_numpy_in_numpy_out_on_ref():
    q, k, v = inputs()
    out = attention(q, k, v, causal=True, device="ref")
    assert isinstance(out, np.ndarray) and out.shape == q.shape and out.dtype == np.float16
    assert_close(out, q, k, v, causal=True)


def test_scale_and_gqa_and_bf16_on_ref():
    q, k, v = inputs(h=4, h_kv=1, s_q=7, s_kv=33, dtype=ml_dtypes.bfloat16, seed=1)
    out = attention(q, k, v, scale=0.2, device="ref")
    assert out.dtype == ml_dtypes.bfloat16
    assert_close(out, q, k, v, scale=0.2)


def test_out_is_written_and_returned():
    q, k, v = inputs(seed=2)
    out = np.full(q.shape, 5.0, np.float16)
    assert attention(q, k, v, out=out, device="ref") is out
    assert_close(out, q, k, v)


def test_decode_path_through_the_api():
    q, k, v = inputs(h=4, h_kv=2, s_q=1, s_kv=300, seed=3)
    out = attention(q, k, v, device="ref", config=AttentionConfig((16, 16, 16), 1, 1, 2, splits=4))
    assert_close(out, q, k, v)


def test_device_arrays_stay_on_the_device():
    q, k, v = inputs(seed=4)
    dq, dk, dv = (device_array(x, "ref") for x in (q, k, v))
    out = attention(dq, dk, dv, causal=True)
    assert isinstance(out, DeviceArray) and out.device == "ref" and out.shape == q.shape
    assert_close(out.numpy(), q, k, v, causal=True)
    mixed = attention(q, dk, v)  # one device array is enough: the others are copied there, the result stays
    assert isinstance(mixed, DeviceArray)
    assert_close(mixed.numpy(), q, k, v)
    target = device_array(np.zeros(q.shape, np.float16), "ref")
    assert attention(dq, dk, dv, out=target) is target
    assert_close(target.numpy(), q, k, v)


def test_dlpack_cpu_arrays():
    q, k, v = inputs(seed=5)
    out = attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v), device="ref")
    assert isinstance(out, np.ndarray)
    assert_close(out, q, k, v)


@pytest.mark.vulkan
def test_lavapipe_numpy_and_device_arrays():
    q, k, v = inputs(h=2, h_kv=1, s_q=17, s_kv=20, d=32, seed=6)
    out = attention(q, k, v, causal=True)  # the default device: lavapipe (cooperative matrices for f16)
    assert_close(out, q, k, v, causal=True)
    dq, dk, dv = (device_array(x, 0) for x in (q, k, v))
    on_device = attention(dq, dk, dv, causal=True)
    assert isinstance(on_device, DeviceArray) and on_device.device == 0
    assert_close(on_device.numpy(), q, k, v, causal=True)


@pytest.mark.vulkan
def test_lavapipe_decode_path():
    q, k, v = inputs(h=2, h_kv=2, s_q=1, s_kv=90, d=32, seed=7)
    out = attention(q, k, v, device=0, config=AttentionConfig((8, 8, 8), 1, 1, 2, splits=3))
    assert_close(out, q, k, v)


@pytest.mark.vulkan
def test_bf16_where_the_device_has_none():
    q, k, v = inputs(d=32, dtype=ml_dtypes.bfloat16)
    with pytest.raises(AttentionError, match="offers no cooperative matrices for attention in bf16"):
        attention(q, k, v, device=0)


def refusal(args: dict):
    q, k, v = inputs(s_q=8, s_kv=8, d=16)
    call = {"q": q, "k": k, "v": v, "device": "ref", **args}
    with pytest.raises(AttentionError) as caught:
        attention(call.pop("q"), call.pop("k"), call.pop("v"), **call)
    assert isinstance(caught.value, HydroplaneError)
    return str(caught.value)


@pytest.mark.parametrize("args, message", [
    ({"q": np.zeros((2, 8, 16), np.float16)}, r"q has shape \(2, 8, 16\); it must be 4-D"),
    ({"k": np.zeros((1, 2, 8, 16), np.float32)}, "q, k and v must share one dtype, not q float16, k float32"),
    ({"q": np.zeros((1, 2, 8, 16), np.float32), "k": np.zeros((1, 2, 8, 16), np.float32),
      "v": np.zeros((1, 2, 8, 16), np.float32)}, "attention takes f16 or bf16 inputs, not float32"),
    ({"v": np.zeros((1, 2, 9, 16), np.float16)}, r"k \(1, 2, 8, 16\) and v \(1, 2, 9, 16\) must have one shape"),
    ({"k": np.zeros((2, 2, 8, 16), np.float16), "v": np.zeros((2, 2, 8, 16), np.float16)},
     "q has batch 1, k and v 2"),
    ({"k": np.zeros((1, 2, 8, 32), np.float16), "v": np.zeros((1, 2, 8, 32), np.float16)},
     "q has head_dim 16, k and v 32"),
    ({"q": np.zeros((1, 3, 8, 16), np.float16)}, "k and v have 2 heads, which must divide q's 3"),
    ({"q": np.zeros((1, 2, 8, 24), np.float16), "k": np.zeros((1, 2, 8, 24), np.float16),
      "v": np.zeros((1, 2, 8, 24), np.float16)}, "head_dim 24 is not supported"),
    ({"q": [[[[1.0]]]]}, "q must be a NumPy array, a hydroplane DeviceArray or a DLPack CPU array, not list"),
    ({"scale": "big"}, "scale must be a number or None, not str"),
    ({"causal": 1}, "causal must be a bool, not int"),
    ({"out": np.zeros((1, 2, 8, 16), np.float32)}, r"out is \(1, 2, 8, 16\) float32; it must be"),
    ({"out": np.zeros((1, 2, 16, 8), np.float16).transpose(0, 1, 3, 2)}, "writable C-contiguous NumPy array"),
    ({"device": "gpu"}, "device is 'ref', a Vulkan device number or None"),
    ({"scale": 1e39}, "scale must be a finite number within float32's range"),
    ({"scale": float("inf")}, "scale must be a finite number"),
    ({"window": 0}, "window must be a positive integer"),
    ({"window": 3.0}, "window must be a positive integer or None, not float"),
    ({"q": np.ma.masked_array(np.zeros((1, 2, 8, 16), np.float16))}, "q is a masked array"),
    ({"q": np.zeros((1, 2, 8, 16), [("x", np.float16)]), "k": np.zeros((1, 2, 8, 16), [("x", np.float16)]),
      "v": np.zeros((1, 2, 8, 16), [("x", np.float16)])}, "not the structured dtype"),
    ({"out": np.zeros((1, 2, 8, 16), ">f2")}, r"out is \(1, 2, 8, 16\) >f2; it must be"),
    # empty keys were refused as "kv_len must be a positive integer, not 0", a kv_len nobody passed (2026-12-07)
    ({"k": np.zeros((1, 2, 0, 16), np.float16), "v": np.zeros((1, 2, 0, 16), np.float16)},
     r"k's and v's sequence \(the keys\) is empty \(0\)"),
])
def test_refusals_name_what_is_wrong(args, message):
    assert re.search(message, refusal(args))


def test_byte_swapped_arrays_are_converted_not_misread():
    """'>f2' inputs (big-endian on this little-endian host) hold the same values: the result is the native one's."""
    q, k, v = inputs(s_q=9, s_kv=20, d=16, seed=8)
    swapped = [x.astype(">f2") for x in (q, k, v)]
    assert all(not x.dtype.isnative and (x == y).all() for x, y in zip(swapped, (q, k, v)))
    out = attention(*swapped, causal=True, device="ref")
    assert out.dtype == np.float16 and out.dtype.isnative
    np.testing.assert_array_equal(out, attention(q, k, v, causal=True, device="ref"))
    assert_close(out, q, k, v, causal=True)


def test_window_through_the_api():
    q, k, v = inputs(s_q=5, s_kv=40, seed=9)
    out = attention(q, k, v, causal=True, window=16, device="ref")
    problem = AttentionProblem(1, 2, 5, 40, 64, causal=True, window=16)
    assert 0 < relative_error(out, reference(problem, q, k, v)) <= 3e-3
    assert relative_error(out, reference(AttentionProblem(1, 2, 5, 40, 64, causal=True), q, k, v)) > 0.05


def test_a_dlpack_array_numpy_cannot_read_is_refused():
    class Broken(DLPackOnly):
        def __dlpack__(self, **kwargs):
            raise BufferError("the array lives on a CUDA device")

    q, k, v = inputs(s_q=8, s_kv=8, d=16)
    with pytest.raises(AttentionError, match="q .Broken. cannot be read through DLPack: the array lives on a CUDA"):
        attention(Broken(q), k, v, device="ref")


@pytest.mark.vulkan
def test_device_arrays_of_two_devices_are_refused():
    q, k, v = inputs(s_q=8, s_kv=8, d=16)
    with pytest.raises(AttentionError, match="device arrays of"):
        attention(device_array(q, "ref"), device_array(k, 0), v)
    with pytest.raises(AttentionError, match="with device=0"):
        attention(device_array(q, "ref"), k, v, device=0)


def test_a_grid_beyond_the_reference_executors_counts_is_an_attention_error():
    """65536 heads: lavapipe refused it as an AttentionError, the reference executor as a GridError from its
    dispatch (its target claimed 2**31 workgroups a dimension; the executor takes 65535: 2026-12-07)."""
    q = np.zeros((1, 65536, 1, 16), np.float16)
    kv = np.zeros((1, 1, 1, 16), np.float16)
    with pytest.raises(AttentionError, match=r"the grid \(1, 65536, 1\) exceeds ref's workgroup counts"):
        attention(q, kv, kv, device="ref")
