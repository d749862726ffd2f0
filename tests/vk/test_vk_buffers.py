"""Buffers from and to NumPy arrays of any dtype, mapped or behind a staging copy, and their errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from vk_support import device, validated_instance, vk_info, vk_instance  # noqa: F401 - fixtures

from hydroplane.vk import OutOfDeviceMemory, UsageError

DTYPES = [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float32, np.float64,
          np.int8, np.uint8, np.int16, np.uint32, np.int64, np.complex64, np.bool_]


def _random(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.uniform(-8, 8, size=shape).astype(dtype)


@pytest.mark.parametrize("host_visible", [True, False], ids=["mapped", "staged"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype(device, dtype, host_visible):
    rng = np.random.default_rng(abs(hash(np.dtype(dtype).name)) % 2**32)
    data = _random(rng, dtype, (5, 7))
    with device.buffer(data, host_visible=host_visible) as buf:
        assert buf.mapped == host_visible
        assert buf.nbytes == data.nbytes and buf.size % 16 == 0 and buf.size >= buf.nbytes
        back = buf.read(dtype, (5, 7))
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.view(np.uint8), data.view(np.uint8))


def test_write_at_an_offset_and_read_a_slice(device):
    with device.buffer(64) as buf:
        buf.fill(0)
        buf.write(np.array([1, 2, 3], np.uint32), offset=8)
        np.testing.assert_array_equal(buf.read(np.uint32, (6,)), [0, 0, 1, 2, 3, 0])
        np.testing.assert_array_equal(buf.read(np.uint32, (2,), offset=12), [2, 3])


def test_non_contiguous_arrays_are_copied_in_order(device):
    data = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::2]
    with device.buffer(data) as buf:
        np.testing.assert_array_equal(buf.read(np.int32, (4, 3)), data)


def test_alignment_rounds_the_size(device):
    with device.buffer(10, align=256) as buf:
        assert buf.size == 256 and buf.nbytes == 10
    with pytest.raises(UsageError, match="power of two"):
        device.buffer(10, align=24)


def test_overflowing_reads_and_writes_say_by_how_much(device):
    with device.buffer(16) as buf:
        with pytest.raises(UsageError, match="writing 20 bytes at offset 0 overflows a buffer of 16 bytes"):
            buf.write(np.zeros(5, np.float32))
        with pytest.raises(UsageError, match="reading 32 bytes"):
            buf.read(np.float64, (4,))
        with pytest.raises(UsageError, match="overflows"):
            buf.write(np.zeros(1, np.float32), offset=-4)


def test_bad_sizes_and_dtypes(device):
    with pytest.raises(UsageError, match="positive size"):
        device.buffer(0)
    with pytest.raises(UsageError, match="Python objects"):
        device.buffer(np.array([object()], dtype=object))


def test_a_buffer_larger_than_every_heap_is_out_of_device_memory(device, vk_info):
    biggest = max(h["size"] for h in vk_info.memory_heaps)
    with pytest.raises(OutOfDeviceMemory, match="larger than every memory heap") as info:
        device.buffer(biggest + (1 << 20))
    assert info.value.result == "VK_ERROR_OUT_OF_DEVICE_MEMORY"


def test_device_addresses_where_the_feature_is_on(device, vk_info):
    if not vk_info.support()["buffer_device_address"]:
        pytest.fail("this test expects lavapipe, which has bufferDeviceAddress")
    with device.buffer(64) as a, device.buffer(64) as b:
        assert a.addressable and a.address != 0 and a.address != b.address


def test_device_addresses_need_the_feature(vk_info):
    from hydroplane.vk import Device, UnsupportedFeature

    with Device(vk_info) as plain, plain.buffer(16) as buf:
        assert not buf.addressable
        with pytest.raises(UnsupportedFeature, match="PhysicalStorageBufferAddresses"):
            _ = buf.address
    with Device(vk_info, capabilities=["PhysicalStorageBufferAddresses"]) as bda, bda.buffer(16) as buf:
        assert buf.address > 0


def test_empty_reads(device):
    with device.buffer(8, host_visible=False) as buf:
        assert buf.read(np.float32, (0,)).shape == (0,)


def test_staging_reads_go_through_host_cached_memory_not_the_bar():
    """A discrete GPU's memory types (the H200's order): device-local; host-visible coherent; host-visible coherent
    cached; device-local host-visible coherent (the BAR). Mapped buffers prefer the BAR, which the CPU writes at
    speed; read-back staging must take cached host memory, as the CPU reads uncached BAR memory very slowly."""
    from hydroplane.vk import enums as E  # noqa: PLC0415
    from hydroplane.vk import structs as S  # noqa: PLC0415
    from hydroplane.vk.memory import HOST_COHERENT, _find_memory_type  # noqa: PLC0415

    local, cached = E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, E.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
    props = S.VkPhysicalDeviceMemoryProperties(memoryTypeCount=4)
    for i, flags in enumerate([local, HOST_COHERENT, HOST_COHERENT | cached, local | HOST_COHERENT]):
        props.memoryTypes[i].propertyFlags = flags
    assert _find_memory_type(props, 0b1111, local) == 0
    assert _find_memory_type(props, 0b1111, HOST_COHERENT, local) == 3
    assert _find_memory_type(props, 0b1111, HOST_COHERENT, cached, avoided=local) == 2
    assert _find_memory_type(props, 0b1001, HOST_COHERENT, cached, avoided=local) == 3  # only the BAR allowed
    assert _find_memory_type(props, 0b1011, HOST_COHERENT, cached, avoided=local) == 1  # no cached type allowed
    assert _find_memory_type(props, 0b0001, HOST_COHERENT) is None
