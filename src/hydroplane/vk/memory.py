"""Device buffers filled from and read back to NumPy arrays of any dtype (float16, bfloat16, float8 too).

Placement: a buffer lives in host-visible coherent memory when mapping it is fast (CPU and
integrated devices, or memory that is device-local, host-visible and cached), and otherwise in
device-local memory reached through a staging copy (what a discrete GPU such as the H200 wants); reads stage
through host-cached memory, never the uncached device-local BAR the CPU reads slowly.
`host_visible=True/False` overrides the choice. Sizes are rounded up to `align` (default 16 bytes).
"""

from __future__ import annotations

import ctypes

import numpy as np

from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import OutOfDeviceMemory, UnsupportedFeature, UsageError
from hydroplane.vk.handles import Owned
from hydroplane.vk.transfer import copy_buffer

HOST_COHERENT = E.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | E.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
STORAGE_USAGE = (E.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | E.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
                 | E.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | E.VK_BUFFER_USAGE_TRANSFER_DST_BIT)


def _as_bytes_array(array) -> np.ndarray:
    arr = np.asarray(array)
    if arr.dtype.hasobject:
        raise UsageError(f"cannot put an array of dtype {arr.dtype} (Python objects) in a device buffer")
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def _find_memory_type(props, type_bits: int, required: int, preferred: int = 0, avoided: int = 0) -> int | None:
    """The first allowed memory type with every `required` flag, ranked: all `preferred` flags before not, then
    no `avoided` flag before some."""
    ranked: dict[int, int] = {}
    for i in range(props.memoryTypeCount):
        flags = props.memoryTypes[i].propertyFlags
        if type_bits & (1 << i) and flags & required == required:
            rank = 2 * (flags & preferred != preferred) + (flags & avoided != 0)
            ranked.setdefault(rank, i)
    return ranked[min(ranked)] if ranked else None


def mapping_is_fast(device) -> bool:
    """True when a buffer should live in mapped memory rather than behind a staging copy."""
    if device.info.device_type in ("cpu", "integrated"):
        return True
    props = device._memory_properties
    fast = E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | HOST_COHERENT | E.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
    return any(props.memoryTypes[i].propertyFlags & fast == fast for i in range(props.memoryTypeCount))


class Buffer(Owned):
    """A VkBuffer with its own VkDeviceMemory; `nbytes` is the usable size, `mapped` says where it lives."""

    def __init__(self, device, nbytes: int, *, host_visible: bool | None = None, align: int = 16,
                 usage: int = STORAGE_USAGE, readback: bool = False):
        device._require_open("Device")
        if int(nbytes) <= 0:
            raise UsageError(f"a buffer needs a positive size, got {nbytes} bytes")
        if align <= 0 or align & (align - 1):
            raise UsageError(f"alignment must be a power of two, got {align}")
        self.nbytes = int(nbytes)
        self.size = -(-self.nbytes // max(4, align)) * max(4, align)
        self.device = device
        self.mapped = mapping_is_fast(device) if host_visible is None else bool(host_visible)
        self.readback = readback  # mapped memory the CPU reads: host-cached, never uncached device-local (BAR)
        self._check_heap_sizes()
        self.addressable = device.has_bit("buffer_device_address", "bufferDeviceAddress")
        if self.addressable:  # PhysicalStorageBufferAddresses kernels reach buffers by address
            usage |= E.VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
        info = S.VkBufferCreateInfo(size=self.size, usage=usage, sharingMode=E.VK_SHARING_MODE_EXCLUSIVE)
        handle = ctypes.c_void_p()
        device.call("vkCreateBuffer", ctypes.byref(info), None, ctypes.byref(handle))
        self.handle, self.memory, self._pointer = handle.value, None, None
        self._adopt(device)
        try:
            self._allocate()
        except BaseException:
            self.close()
            raise

    @classmethod
    def create(cls, device, data_or_nbytes, **kwargs) -> Buffer:
        """From an int (byte size) or an array (size and contents)."""
        if isinstance(data_or_nbytes, (int, np.integer)):
            return cls(device, int(data_or_nbytes), **kwargs)
        data = _as_bytes_array(data_or_nbytes)
        buf = cls(device, max(1, data.nbytes), **kwargs)
        if data.nbytes:
            buf.write(data)
        return buf

    def _check_heap_sizes(self) -> None:
        heaps = self.device.info.memory_heaps
        if heaps and self.size > max(h["size"] for h in heaps):
            raise OutOfDeviceMemory(f"a buffer of {self.size} bytes is larger than every memory heap of "
                                    f"{self.device.info.name} (largest {max(h['size'] for h in heaps)} bytes)",
                                    result="VK_ERROR_OUT_OF_DEVICE_MEMORY", call="Buffer")

    def _allocate(self) -> None:
        device = self.device
        req = S.VkMemoryRequirements()
        device.call("vkGetBufferMemoryRequirements", self.handle, ctypes.byref(req))
        props = device._memory_properties
        if self.mapped and self.readback:
            index = _find_memory_type(props, req.memoryTypeBits, HOST_COHERENT, E.VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                      avoided=E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        elif self.mapped:
            index = _find_memory_type(props, req.memoryTypeBits, HOST_COHERENT, E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        else:
            index = _find_memory_type(props, req.memoryTypeBits, E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        if index is None:
            raise OutOfDeviceMemory(f"no memory type fits a {'mapped' if self.mapped else 'device-local'} buffer",
                                    result="VK_ERROR_OUT_OF_DEVICE_MEMORY", call="Buffer")
        flags = S.VkMemoryAllocateFlagsInfo(flags=E.VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT)
        alloc = S.VkMemoryAllocateInfo(pNext=ctypes.addressof(flags) if self.addressable else None,
                                       allocationSize=req.size, memoryTypeIndex=index)
        memory = ctypes.c_void_p()
        device.call("vkAllocateMemory", ctypes.byref(alloc), None, ctypes.byref(memory))
        self.memory = memory.value
        self.memory_type = index
        device.call("vkBindBufferMemory", self.handle, self.memory, 0)
        if self.mapped:
            pointer = ctypes.c_void_p()
            device.call("vkMapMemory", self.memory, 0, E.VK_WHOLE_SIZE, 0, ctypes.byref(pointer))
            self._pointer = pointer.value

    @property
    def address(self) -> int:
        """The buffer's device address (for PhysicalStorageBuffer pointers); needs bufferDeviceAddress."""
        self._require_open("Buffer")
        if not self.addressable:
            raise UnsupportedFeature("device addresses need the bufferDeviceAddress feature: create the Device "
                                     "with capability PhysicalStorageBufferAddresses", missing=("bufferDeviceAddress",))
        info = S.VkBufferDeviceAddressInfo(buffer=self.handle)
        return self.device.call("vkGetBufferDeviceAddress", ctypes.byref(info))

    def _view(self) -> np.ndarray:
        # np.asarray of the ctypes array is what np.ctypeslib.as_array returns (without importing np.ctypeslib)
        return np.asarray((ctypes.c_uint8 * self.nbytes).from_address(self._pointer))

    def write(self, array, offset: int = 0) -> None:
        """Copy an array's bytes into the buffer at byte `offset`."""
        self._require_open("Buffer")
        data = _as_bytes_array(array)
        if offset < 0 or offset + data.nbytes > self.nbytes:
            raise UsageError(f"writing {data.nbytes} bytes at offset {offset} overflows a buffer of "
                             f"{self.nbytes} bytes")
        if self.mapped:
            self._view()[offset: offset + data.nbytes] = data
        else:
            self._upload(data, offset)

    def read(self, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray:
        """A NumPy copy of the buffer's bytes as `dtype` (any NumPy or ml_dtypes dtype), reshaped to `shape`."""
        self._require_open("Buffer")
        dtype = np.dtype(dtype)
        count = (self.nbytes - offset) // dtype.itemsize if shape is None else int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        if offset < 0 or offset + nbytes > self.nbytes:
            raise UsageError(f"reading {nbytes} bytes ({count} x {dtype}) at offset {offset} overflows a buffer "
                             f"of {self.nbytes} bytes")
        if nbytes == 0:
            raw = np.zeros(0, dtype=np.uint8)
        elif self.mapped:
            raw = self._view()[offset: offset + nbytes].copy()
        else:
            raw = self._download(nbytes, offset)
        out = raw.view(dtype)
        return out.reshape(shape) if shape is not None else out

    def _upload(self, data: np.ndarray, offset: int) -> None:
        """Copy bytes into this device-local buffer through a temporary host-visible staging buffer."""
        with Buffer(self.device, data.nbytes, host_visible=True) as staging:
            staging.write(data)
            copy_buffer(self.device, staging, self, 0, offset, data.nbytes)

    def _download(self, nbytes: int, offset: int) -> np.ndarray:
        """Copy bytes out of this device-local buffer through a temporary staging buffer in host-cached memory: the
        CPU reads uncached memory (a discrete GPU's device-local, host-visible BAR) at a small fraction of its
        bandwidth."""
        with Buffer(self.device, nbytes, host_visible=True, readback=True) as staging:
            copy_buffer(self.device, self, staging, offset, 0, nbytes)
            return staging.read(np.uint8, (nbytes,))

    def fill(self, byte: int) -> None:
        """Set every byte (used to poison outputs before a run)."""
        self.write(np.full(self.nbytes, byte, dtype=np.uint8))

    def _destroy(self) -> None:
        device = self.device
        if device.handle is None:
            return
        if self._pointer:
            device.release("vkUnmapMemory", self.memory)
        if self.handle:
            device.release("vkDestroyBuffer", self.handle, None)
        if self.memory:
            device.release("vkFreeMemory", self.memory, None)
        self.handle = self.memory = self._pointer = None
