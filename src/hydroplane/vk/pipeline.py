"""Compute pipelines from SPIR-V words plus a plain-data description of the module's interface.

vk does not parse SPIR-V: the caller (the launch layer, through `spirv.reflect`) says which
descriptor bindings the module uses (`Binding(set, binding, kind)` or `(set, binding, kind)`
tuples), the push-constant block size in bytes, the specialization constant values keyed by
SpecId, and the module's capability/extension names (checked against what the Device enabled).
`robust=True` asks for robust buffer access for this pipeline alone (VK_EXT_pipeline_robustness).
"""

from __future__ import annotations

import ctypes
import itertools
import struct
from dataclasses import dataclass

import numpy as np

from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import UnsupportedFeature, UsageError
from hydroplane.vk.handles import Owned
from hydroplane.vk.timing import pipeline_statistics

_SERIALS = itertools.count(1)  # Pipeline.serial

SPIRV_MAGIC = 0x07230203
DESCRIPTOR_KINDS = {"storage": E.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, "uniform": E.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER}
REFLECTED_KINDS = {"storage_buffer": "storage", "uniform_buffer": "uniform", "storage": "storage", "uniform": "uniform"}


@dataclass(frozen=True, order=True)
class Binding:
    """One descriptor binding of a module: set, binding number, and 'storage' or 'uniform'."""

    set: int
    binding: int
    kind: str = "storage"

    def __post_init__(self):
        if self.kind not in DESCRIPTOR_KINDS:
            raise UsageError(f"binding ({self.set}, {self.binding}): kind must be one of "
                             f"{sorted(DESCRIPTOR_KINDS)}, got {self.kind!r}")
        if self.set < 0 or self.binding < 0:
            raise UsageError(f"binding ({self.set}, {self.binding}): set and binding must be >= 0")


def as_binding(item) -> Binding:
    if isinstance(item, Binding):
        return item
    if isinstance(item, tuple) and 2 <= len(item) <= 3:
        return Binding(*item)
    if hasattr(item, "set") and hasattr(item, "binding"):  # a reflection's binding record
        kind = getattr(item, "kind", None) or REFLECTED_KINDS.get(getattr(item, "descriptor_type", "storage_buffer"))
        if kind is None:
            raise UsageError(f"binding ({item.set}, {item.binding}): descriptor type "
                             f"{getattr(item, 'descriptor_type', '?')!r} is not a buffer; "
                             "hydroplane.vk binds buffers only")
        return Binding(int(item.set), int(item.binding), kind)
    raise UsageError(f"cannot read a descriptor binding from {item!r}: give Binding(set, binding, kind)")


def spirv_words(words) -> np.ndarray:
    """The module as a uint32 array, checked for the SPIR-V magic number and a header."""
    if isinstance(words, (bytes, bytearray, memoryview)):
        if len(words) % 4:
            raise UsageError(f"SPIR-V bytes must be a multiple of 4 long, got {len(words)}")
        arr = np.frombuffer(bytes(words), dtype="<u4")
    else:
        arr = np.asarray(words)
        if arr.size == 0:
            arr = arr.astype(np.uint32).reshape(-1)
        if arr.dtype.kind not in "ui" or arr.ndim != 1:
            raise UsageError(f"SPIR-V words must be a 1-D sequence of uint32, got dtype {arr.dtype} shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise UsageError("SPIR-V words must fit in 32 bits")
        arr = arr.astype("<u4")
    if arr.size < 5 or arr[0] != SPIRV_MAGIC:
        first = f"0x{int(arr[0]):08x}" if arr.size else "nothing"
        raise UsageError(f"not a SPIR-V module: {arr.size} words, first word {first} (expected 0x{SPIRV_MAGIC:08x})")
    return np.ascontiguousarray(arr)


def spec_bytes(value) -> bytes:
    """Bytes of one specialization constant: bytes as given, NumPy scalars as their dtype, bool as
    VkBool32, int as 32-bit (signed if negative), float as float32."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, (np.generic, np.ndarray)):
        return np.asarray(value).tobytes()
    if isinstance(value, bool):
        return struct.pack("<I", int(value))
    if isinstance(value, int):
        return struct.pack("<i" if value < 0 else "<I", value)
    if isinstance(value, float):
        return struct.pack("<f", value)
    raise UsageError(f"specialization constant value {value!r}: give bytes, a NumPy scalar, int, float or bool")


class Pipeline(Owned):
    """A compute pipeline with its layout; created through `Device.pipeline(words, bindings, ...)`."""

    def __init__(self, device, words, bindings=(), *, push_constant_size: int = 0, spec: dict | None = None,
                 entry: str = "main", capabilities=(), extensions=(), subgroup_size: int | None = None,
                 require_full_subgroups: bool = False, capture_statistics: bool = False, robust: bool = False):
        """`robust=True`: out-of-bounds storage- and uniform-buffer accesses of this pipeline are robust
        (`Device.pipeline_robustness` says how: robustBufferAccess2 where the device supports it, else
        robustBufferAccess), through a VkPipelineRobustnessCreateInfoEXT chained into the pipeline's create info
        (none is needed on a `Device(robust=True)`); UnsupportedFeature where the device can give neither.
        `robustness` records what the pipeline got (None: no robust access, neither asked for nor device-wide)."""
        device._require_open("Device")
        device.require(capabilities, extensions)
        self.device = device
        self.words = spirv_words(words)
        self.bindings = tuple(sorted({as_binding(b) for b in bindings}))
        keys = [(b.set, b.binding) for b in self.bindings]
        if len(keys) != len(set(keys)):
            raise UsageError(f"a (set, binding) pair is listed twice with different kinds: {self.bindings}")
        if push_constant_size < 0 or push_constant_size % 4:
            raise UsageError(f"push_constant_size must be a non-negative multiple of 4, got {push_constant_size}")
        if push_constant_size > device.info.max_push_constants:
            raise UnsupportedFeature(f"push constants of {push_constant_size} bytes exceed the device's "
                                     f"maxPushConstantsSize {device.info.max_push_constants}",
                                     missing=("maxPushConstantsSize",))
        self.push_constant_size = push_constant_size
        self.subgroup_size = subgroup_size
        self.entry = entry
        self.capture_statistics = capture_statistics and device.has_bit("pipeline_executable_properties",
                                                                         "pipelineExecutableInfo")
        self.robustness = self._robustness(robust)
        self.robustness_info: S.VkPipelineRobustnessCreateInfoEXT | None = None  # what was chained, if anything
        self.shader = self.layout = self.handle = None
        self.set_layouts: list[int] = []
        # never reused, unlike the handles (a driver may give a destroyed layout's handle to the next): what caches of
        # this pipeline's descriptor sets are keyed by (stream.DescriptorSets)
        self.serial = next(_SERIALS)
        self._adopt(device)
        try:
            self._create_layouts()
            self._create_pipeline(spec or {}, require_full_subgroups)
        except BaseException:
            self.close()
            raise

    @property
    def set_count(self) -> int:
        return max((b.set for b in self.bindings), default=-1) + 1

    def _create_layouts(self) -> None:
        device = self.device
        for set_index in range(self.set_count):
            members = [b for b in self.bindings if b.set == set_index]
            array = (S.VkDescriptorSetLayoutBinding * max(1, len(members)))()
            for slot, b in zip(array, members):
                slot.binding, slot.descriptorType = b.binding, DESCRIPTOR_KINDS[b.kind]
                slot.descriptorCount, slot.stageFlags = 1, E.VK_SHADER_STAGE_COMPUTE_BIT
            info = S.VkDescriptorSetLayoutCreateInfo(bindingCount=len(members), pBindings=ctypes.addressof(array))
            handle = ctypes.c_void_p()
            device.call("vkCreateDescriptorSetLayout", ctypes.byref(info), None, ctypes.byref(handle))
            self.set_layouts.append(handle.value)
        layouts = (ctypes.c_void_p * max(1, len(self.set_layouts)))(*self.set_layouts)
        push = S.VkPushConstantRange(stageFlags=E.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=self.push_constant_size)
        info = S.VkPipelineLayoutCreateInfo(setLayoutCount=len(self.set_layouts), pSetLayouts=ctypes.addressof(layouts),
                                            pushConstantRangeCount=1 if self.push_constant_size else 0,
                                            pPushConstantRanges=ctypes.addressof(push))
        handle = ctypes.c_void_p()
        device.call("vkCreatePipelineLayout", ctypes.byref(info), None, ctypes.byref(handle))
        self.layout = handle.value

    def _robustness(self, robust: bool) -> str | None:
        if self.device.robust:  # every pipeline of a robust Device is robust
            return self.device.pipeline_robustness
        if not robust:
            return None
        behaviour = self.device.pipeline_robustness
        if behaviour is None:
            name = self.device.info.name
            raise UnsupportedFeature(f"{name} cannot make one pipeline robust: it lacks VK_EXT_pipeline_robustness "
                                     "(pipelineRobustness) and the Device was created without robust access",
                                     missing=("pipelineRobustness",))
        return behaviour

    def _robustness_chain(self) -> S.VkPipelineRobustnessCreateInfoEXT | None:
        """The per-pipeline robustness struct for VkComputePipelineCreateInfo.pNext (None: none asked for, or the
        Device is robust as a whole)."""
        if self.robustness is None or self.device.robust:
            return None
        value = (E.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_2_EXT
                 if self.robustness == "robustBufferAccess2" else
                 E.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_EXT)
        default = E.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT
        return S.VkPipelineRobustnessCreateInfoEXT(storageBuffers=value, uniformBuffers=value, vertexInputs=default,
                                                   images=E.VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT)

    def _subgroup_chain(self, require_full: bool):
        """(pNext struct or None, stage flags) for a required subgroup size / full subgroups."""
        device, size = self.device, self.subgroup_size
        flags, chained = 0, None
        if size is not None:
            info = device.info
            if not (device.has_bit("subgroup_size_control", "subgroupSizeControl")
                    and info.required_subgroup_size_compute):
                raise UnsupportedFeature(f"{info.name} cannot require a subgroup size for compute shaders",
                                         missing=("subgroupSizeControl",))
            if size & (size - 1) or not info.min_subgroup_size <= size <= info.max_subgroup_size:
                raise UnsupportedFeature(f"subgroup size {size} is outside {info.name}'s range "
                                         f"[{info.min_subgroup_size}, {info.max_subgroup_size}] "
                                         "(or not a power of two)",
                                         missing=(f"subgroup size {size}",))
            chained = S.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=size)
        if require_full:
            if not device.has_bit("subgroup_size_control", "computeFullSubgroups"):
                raise UnsupportedFeature("computeFullSubgroups is not available", missing=("computeFullSubgroups",))
            flags |= E.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
        return chained, flags

    def _create_pipeline(self, spec: dict, require_full: bool) -> None:
        device = self.device
        code = self.words
        info = S.VkShaderModuleCreateInfo(codeSize=code.nbytes, pCode=code.ctypes.data)
        handle = ctypes.c_void_p()
        device.call("vkCreateShaderModule", ctypes.byref(info), None, ctypes.byref(handle))
        self.shader = handle.value
        entries, blob = [], b""
        for spec_id, value in sorted(spec.items()):
            data = spec_bytes(value)
            entries.append((int(spec_id), len(blob), len(data)))
            blob += data
        map_array = (S.VkSpecializationMapEntry * max(1, len(entries)))(*entries)
        blob_buffer = ctypes.create_string_buffer(blob, max(1, len(blob)))
        spec_info = S.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=ctypes.addressof(map_array),
                                           dataSize=len(blob), pData=ctypes.addressof(blob_buffer))
        chained, stage_flags = self._subgroup_chain(require_full)
        self._entry_name = self.entry.encode()
        stage = S.VkPipelineShaderStageCreateInfo(
            pNext=ctypes.addressof(chained) if chained is not None else None, flags=stage_flags,
            stage=E.VK_SHADER_STAGE_COMPUTE_BIT, module=self.shader, pName=self._entry_name,
            pSpecializationInfo=ctypes.addressof(spec_info) if entries else None)
        self.robustness_info = robustness = self._robustness_chain()
        create = S.VkComputePipelineCreateInfo(
            pNext=ctypes.addressof(robustness) if robustness is not None else None,
            flags=E.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR if self.capture_statistics else 0,
            stage=stage, layout=self.layout)
        handle = ctypes.c_void_p()
        device.call("vkCreateComputePipelines", device.pipeline_cache, 1, ctypes.byref(create), None,
                    ctypes.byref(handle))
        self.handle = handle.value

    def statistics(self):
        """The driver's pipeline executable statistics (see `timing.pipeline_statistics`)."""
        return pipeline_statistics(self)

    def _destroy(self) -> None:
        device = self.device
        if device.handle is None:
            return
        if self.handle:
            device.release("vkDestroyPipeline", self.handle, None)
        if self.shader:
            device.release("vkDestroyShaderModule", self.shader, None)
        if self.layout:
            device.release("vkDestroyPipelineLayout", self.layout, None)
        for layout in self.set_layouts:
            device.release("vkDestroyDescriptorSetLayout", layout, None)
        self.handle = self.shader = self.layout = None
        self.set_layouts = []
