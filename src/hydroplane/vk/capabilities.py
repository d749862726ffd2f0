"""What each Vulkan device offers: `devices()` -> [DeviceInfo] with limits, features and cooperative-matrix shapes.

Properties and features are read through pNext chains that only include the structs whose
extension the device lists (or that are core in its API version); the cooperative-matrix queries
(KHR, legacy NV, NV2 flexible dimensions, EXT properties2) are only called when their extension is
present, since calling an absent extension's entry point crashes.
"""

from __future__ import annotations

import atexit
import ctypes
from dataclasses import asdict, dataclass, field, fields

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk import structs_caps as C
from hydroplane.vk.features import CORE, FEATURE_STRUCTS
from hydroplane.vk.instance import Instance, STyped, chain_structs, enumerate_structs


@dataclass(frozen=True)
class CoopMatrixProperties:
    """One VkCooperativeMatrixPropertiesKHR (or NV / NV2 flexible-dimensions) record as the device reports it,
    component types as names: plain data (vk imports nothing of ours). The type model's shape is
    `spirv.target.CoopShape`, which `Target.from_device_record` makes from these."""

    m: int
    n: int
    k: int
    a: str
    b: str
    c: str
    result: str
    saturating: bool
    scope: str
    workgroup_invocations: int = 0  # NV2 flexible dimensions: the workgroup size it applies to
    granularity: bool = False  # NV2/EXT: m, n, k are granularities (multiples allowed), not sizes

    def text(self) -> str:
        dims = f"{self.m}x{self.n}x{self.k}" + ("*" if self.granularity else "")
        sat = " sat" if self.saturating else ""
        wg = f" wg{self.workgroup_invocations}" if self.workgroup_invocations else ""
        return f"{dims} {self.a}*{self.b}+{self.c}->{self.result} {self.scope}{wg}{sat}"


@dataclass
class DeviceInfo:
    """A physical device and everything hydroplane reads about it."""

    index: int
    name: str
    vendor_id: int
    vendor: str
    device_id: int
    device_type: str
    driver_name: str
    driver_info: str
    driver_version: str
    api_version: str
    api_version_number: int  # the version it is used at: the device's, capped by the instance's
    subgroup_size: int
    min_subgroup_size: int
    max_subgroup_size: int
    required_subgroup_size_compute: bool
    shared_memory: int
    max_workgroup_invocations: int
    max_workgroup_size: tuple[int, int, int]
    max_push_constants: int
    timestamp_period_ns: float
    timestamp_valid_bits: int
    compute_queue_family: int
    memory_heaps: list[dict]
    extensions: frozenset[str]
    features: dict[str, dict[str, bool]]
    coop_khr: tuple[CoopMatrixProperties, ...] = ()
    coop_nv: tuple[CoopMatrixProperties, ...] = ()
    coop_nv2_flexible: tuple[CoopMatrixProperties, ...] = ()
    coop_nv2_properties: dict[str, int] = field(default_factory=dict)
    coop_ext: tuple[CoopMatrixProperties, ...] = ()
    max_workgroup_count: tuple[int, int, int] = (65535, 65535, 65535)  # maxComputeWorkGroupCount
    max_bound_descriptor_sets: int = 4  # maxBoundDescriptorSets
    min_storage_buffer_offset_alignment: int = 256  # minStorageBufferOffsetAlignment (Vulkan's largest allowed)
    # VK_EXT_pipeline_robustness's defaultRobustnessStorageBuffers: what a storage buffer access out of bounds does
    # in a pipeline that asks for nothing on a device created without robust access ("disabled": undefined,
    # "robustBufferAccess", "robustBufferAccess2"); None where the device lacks the extension (and says nothing)
    default_storage_robustness: str | None = None
    # VK_EXT_robustness2's robustStorageBufferAccessSizeAlignment: robustBufferAccess2 checks a binding's range
    # rounded up to this many bytes (1 or 4); 0 where the device lacks the extension
    robust_storage_access_alignment: int = 0
    handle: int = field(default=0, repr=False, compare=False)
    instance: Instance | None = field(default=None, repr=False, compare=False)

    def has_feature(self, key: str, bit: str) -> bool:
        return bool(self.features.get(key, {}).get(bit))

    @property
    def cooperative_matrix_khr(self) -> bool:
        """True when VK_KHR_cooperative_matrix is there with its cooperativeMatrix feature."""
        return self.has_feature("cooperative_matrix_khr", "cooperativeMatrix")

    @property
    def cooperative_matrix_nv2(self) -> bool:
        return "VK_NV_cooperative_matrix2" in self.extensions

    @property
    def cooperative_matrix_ext(self) -> bool:
        return "VK_EXT_cooperative_matrix_maintenance1" in self.extensions

    @property
    def pipeline_statistics(self) -> bool:
        return self.has_feature("pipeline_executable_properties", "pipelineExecutableInfo")

    def support(self) -> dict[str, bool]:
        """The number-format and memory-model support that kernels care about."""
        return {
            "float16": self.has_feature("float16_int8", "shaderFloat16"),
            "int8": self.has_feature("float16_int8", "shaderInt8"),
            "int16": self.has_feature(CORE, "shaderInt16"),
            "int64": self.has_feature(CORE, "shaderInt64"),
            "float64": self.has_feature(CORE, "shaderFloat64"),
            "storage_buffer_16bit": self.has_feature("storage_16bit", "storageBuffer16BitAccess"),
            "storage_buffer_8bit": self.has_feature("storage_8bit", "storageBuffer8BitAccess"),
            "bfloat16": self.has_feature("bfloat16", "shaderBFloat16Type"),
            "bfloat16_coop_matrix": self.has_feature("bfloat16", "shaderBFloat16CooperativeMatrix"),
            "float8": self.has_feature("float8", "shaderFloat8"),
            "float8_coop_matrix": self.has_feature("float8", "shaderFloat8CooperativeMatrix"),
            "vulkan_memory_model": self.has_feature("vulkan_memory_model", "vulkanMemoryModel"),
            "buffer_device_address": self.has_feature("buffer_device_address", "bufferDeviceAddress"),
            "subgroup_size_control": self.has_feature("subgroup_size_control", "subgroupSizeControl"),
            "integer_dot_product": self.has_feature("integer_dot_product", "shaderIntegerDotProduct"),
        }

    def coop_shapes(self, a: str | None = None, c: str | None = None,
                    scope: str = "subgroup") -> list[CoopMatrixProperties]:
        """KHR shapes filtered by A type (e.g. 'f16'), C type (e.g. 'f32') and scope."""
        return [s for s in self.coop_khr
                if (a is None or s.a == a) and (c is None or s.c == c) and s.scope == scope]

    def to_dict(self) -> dict:
        """Plain data for JSON (no handles)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("handle", "instance")}
        for key in ("coop_khr", "coop_nv", "coop_nv2_flexible", "coop_ext"):
            out[key] = [asdict(shape) for shape in out[key]]
        out["extensions"] = sorted(self.extensions)
        out["cooperative_matrix_khr"] = self.cooperative_matrix_khr
        out["support"] = self.support()
        return out


def _driver_version_text(vendor_id: int, version: int) -> str:
    if vendor_id == 0x10DE:  # NVIDIA packs 10.8.8.6 bits and prints the third part with two digits
        text = f"{(version >> 22) & 0x3FF}.{(version >> 14) & 0xFF}.{(version >> 6) & 0xFF:02d}"
        return text + (f".{version & 0x3F}" if version & 0x3F else "")
    return E.api_version_text(version)


def _extensions(handle: int) -> frozenset[str]:
    call = _ffi.core("vkEnumerateDeviceExtensionProperties")
    return frozenset(p.extensionName.decode() for p in enumerate_structs(call, S.VkExtensionProperties, handle, None))


def _read_features(handle: int, api_version: int, extensions) -> dict[str, dict[str, bool]]:
    present = {k: fs.struct() for k, fs in FEATURE_STRUCTS.items() if fs.available(api_version, extensions)}
    top = C.VkPhysicalDeviceFeatures2()
    chain_structs(top, *present.values())
    _ffi.core("vkGetPhysicalDeviceFeatures2")(handle, ctypes.byref(top))
    out = {CORE: {name: bool(getattr(top.features, name)) for name, _ in C.VkPhysicalDeviceFeatures._fields_}}
    for key, struct in present.items():
        out[key] = {bit: bool(getattr(struct, bit)) for bit in FEATURE_STRUCTS[key].bits}
    return out


def _khr_shape(p, granularity=False, invocations=0) -> CoopMatrixProperties:
    dims = (p.MGranularity, p.NGranularity, p.KGranularity) if granularity else (p.MSize, p.NSize, p.KSize)
    return CoopMatrixProperties(*dims, E.component_type_name(p.AType), E.component_type_name(p.BType),
                     E.component_type_name(p.CType), E.component_type_name(p.ResultType),
                     bool(getattr(p, "saturatingAccumulation", 0)), E.scope_name(getattr(p, "scope", 3)),
                     invocations, granularity)


def _query(inst: Instance, name: str, struct, *leading) -> list:
    """Enumerate through an instance-level extension entry point; [] if the loader cannot give it."""
    fn = _ffi.instance_proc(inst.handle, name)
    return [] if fn is None else enumerate_structs(fn, STyped(struct), *leading)


def _coop_queries(inst: Instance, handle: int, extensions, subgroup_size: int) -> dict:
    """Each cooperative-matrix query whose extension the device lists (never one it does not)."""
    out: dict = {}
    if "VK_KHR_cooperative_matrix" in extensions:
        props = _query(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", C.VkCooperativeMatrixPropertiesKHR,
                       handle)
        out["coop_khr"] = tuple(_khr_shape(p) for p in props)
    if "VK_NV_cooperative_matrix" in extensions:
        props = _query(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", C.VkCooperativeMatrixPropertiesNV,
                       handle)
        out["coop_nv"] = tuple(CoopMatrixProperties(p.MSize, p.NSize, p.KSize, E.component_type_name(p.AType),
                                         E.component_type_name(p.BType), E.component_type_name(p.CType),
                                         E.component_type_name(p.DType), False, E.scope_name(p.scope))
                               for p in props)
    if "VK_NV_cooperative_matrix2" in extensions:
        props = _query(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV",
                       C.VkCooperativeMatrixFlexibleDimensionsPropertiesNV, handle)
        out["coop_nv2_flexible"] = tuple(_khr_shape(p, True, p.workgroupInvocations) for p in props)
    if "VK_EXT_cooperative_matrix_maintenance1" in extensions:
        query = C.VkPhysicalDeviceCooperativeMatrixInfo2EXT(scope=E.VK_SCOPE_SUBGROUP_KHR, invocations=subgroup_size,
                                                            subgroupSize=subgroup_size, flags=0)
        props = _query(inst, "vkGetPhysicalDeviceCooperativeMatrixProperties2EXT", C.VkCooperativeMatrixProperties2EXT,
                       handle, ctypes.byref(query))
        out["coop_ext"] = tuple(_khr_shape(p, True, subgroup_size) for p in props)
    return out


def describe(inst: Instance, handle: int, index: int) -> DeviceInfo:
    """Read everything about one physical device."""
    base = C.VkPhysicalDeviceProperties()
    _ffi.core("vkGetPhysicalDeviceProperties")(handle, ctypes.byref(base))
    # The version the device is used at: its own, capped by what the instance asked for (a feature
    # core only above that needs its extension).
    api = min(base.apiVersion, getattr(inst, "api_version", base.apiVersion))
    extensions = _extensions(handle)
    top = C.VkPhysicalDeviceProperties2()
    driver, subgroup = C.VkPhysicalDeviceDriverProperties(), C.VkPhysicalDeviceSubgroupProperties()
    size_control = C.VkPhysicalDeviceSubgroupSizeControlProperties()
    nv2 = C.VkPhysicalDeviceCooperativeMatrix2PropertiesNV()
    robustness = C.VkPhysicalDevicePipelineRobustnessPropertiesEXT()
    chain = [top, driver, subgroup]
    has_pipeline_robustness = FEATURE_STRUCTS["pipeline_robustness"].available(api, extensions)
    if has_pipeline_robustness:
        chain.append(robustness)
    robustness2 = C.VkPhysicalDeviceRobustness2PropertiesEXT()
    has_robustness2 = FEATURE_STRUCTS["robustness2"].available(api, extensions)
    if has_robustness2:
        chain.append(robustness2)
    has_size_control = api >= E.VK_API_VERSION_1_3 or "VK_EXT_subgroup_size_control" in extensions
    if has_size_control:
        chain.append(size_control)
    if "VK_NV_cooperative_matrix2" in extensions:
        chain.append(nv2)
    chain_structs(*chain)
    _ffi.core("vkGetPhysicalDeviceProperties2")(handle, ctypes.byref(top))
    limits = top.properties.limits
    families = enumerate_structs(_ffi.core("vkGetPhysicalDeviceQueueFamilyProperties"), S.VkQueueFamilyProperties,
                                 handle)
    compute = next((i for i, f in enumerate(families) if f.queueFlags & E.VK_QUEUE_COMPUTE_BIT), -1)
    memory = S.VkPhysicalDeviceMemoryProperties()
    _ffi.core("vkGetPhysicalDeviceMemoryProperties")(handle, ctypes.byref(memory))
    heaps = [{"size": h.size, "device_local": bool(h.flags & E.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)}
             for h in memory.memoryHeaps[: memory.memoryHeapCount]]
    info = DeviceInfo(
        index=index, name=top.properties.deviceName.decode(), vendor_id=base.vendorID,
        vendor=E.VENDOR_NAMES.get(base.vendorID, hex(base.vendorID)), device_id=base.deviceID,
        device_type=E.DEVICE_TYPE_NAMES.get(base.deviceType, str(base.deviceType)),
        driver_name=driver.driverName.decode(), driver_info=driver.driverInfo.decode(),
        driver_version=_driver_version_text(base.vendorID, base.driverVersion),
        api_version=E.api_version_text(base.apiVersion), api_version_number=api,
        subgroup_size=subgroup.subgroupSize,
        min_subgroup_size=size_control.minSubgroupSize if has_size_control else subgroup.subgroupSize,
        max_subgroup_size=size_control.maxSubgroupSize if has_size_control else subgroup.subgroupSize,
        required_subgroup_size_compute=bool(
            has_size_control and size_control.requiredSubgroupSizeStages & E.VK_SHADER_STAGE_COMPUTE_BIT),
        shared_memory=limits.maxComputeSharedMemorySize,
        max_workgroup_invocations=limits.maxComputeWorkGroupInvocations,
        max_workgroup_size=tuple(limits.maxComputeWorkGroupSize), max_push_constants=limits.maxPushConstantsSize,
        max_workgroup_count=tuple(limits.maxComputeWorkGroupCount),
        max_bound_descriptor_sets=limits.maxBoundDescriptorSets,
        min_storage_buffer_offset_alignment=int(limits.minStorageBufferOffsetAlignment),
        default_storage_robustness=E.BUFFER_ROBUSTNESS_NAMES.get(robustness.defaultRobustnessStorageBuffers)
        if has_pipeline_robustness else None,
        robust_storage_access_alignment=int(robustness2.robustStorageBufferAccessSizeAlignment) if has_robustness2
        else 0,
        timestamp_period_ns=float(limits.timestampPeriod),
        timestamp_valid_bits=families[compute].timestampValidBits if compute >= 0 else 0,
        compute_queue_family=compute, memory_heaps=heaps, extensions=extensions,
        features=_read_features(handle, api, extensions), handle=handle, instance=inst,
        **_coop_queries(inst, handle, extensions, subgroup.subgroupSize),
    )
    if "VK_NV_cooperative_matrix2" in extensions:
        info.coop_nv2_properties = {name: getattr(nv2, name) for name, _ in nv2._fields_[2:]}
    return info


_default_instance: Instance | None = None


def _close_default_instance() -> None:
    """At exit, close the shared instance while its children are still known (devices first, then it)."""
    if _default_instance is not None:
        _default_instance.close()


atexit.register(_close_default_instance)


def default_instance() -> Instance:
    """One shared Instance for the process (validation per HYDROPLANE_VALIDATION)."""
    global _default_instance
    if _default_instance is None or _default_instance.closed:
        _default_instance = Instance()
    return _default_instance


def devices(instance: Instance | None = None) -> list[DeviceInfo]:
    """Every physical device of the instance (the shared default instance when None)."""
    inst = instance or default_instance()
    return [describe(inst, h, i) for i, h in enumerate(inst.physical_device_handles())]
