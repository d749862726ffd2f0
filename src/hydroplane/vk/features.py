"""What a SPIR-V module's capabilities and extensions need from a device, as data tables.

`FEATURE_STRUCTS` names each feature struct we know with the device extension that provides it
and the API version that made it core. `CAPABILITY_FEATURES` maps a SPIR-V capability name to the
(feature struct, field) bits it needs; `SPIRV_EXTENSIONS` maps a SPIR-V extension to the device
extension behind it. `requirements()` turns a module's names into one `Requirements` value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydroplane.vk import structs_caps as C
from hydroplane.vk.enums import VK_API_VERSION_1_1, VK_API_VERSION_1_2, VK_API_VERSION_1_3, VK_API_VERSION_1_4
from hydroplane.vk.errors import UnsupportedFeature


@dataclass(frozen=True)
class FeatureStruct:
    """A VkPhysicalDevice*Features struct: its ctypes class, extension, and the version it became core."""

    struct: type
    extension: str | None
    core_version: int | None = None

    def available(self, api_version: int, extensions) -> bool:
        if self.core_version is not None and api_version >= self.core_version:
            return True
        return self.extension is not None and self.extension in extensions

    def extension_needed(self, api_version: int) -> str | None:
        """The extension to enable for this struct on a device of `api_version` (None if core)."""
        if self.core_version is not None and api_version >= self.core_version:
            return None
        return self.extension

    @property
    def bits(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.struct._fields_[2:])


CORE = "core"  # the VkPhysicalDeviceFeatures inside VkPhysicalDeviceFeatures2

FEATURE_STRUCTS: dict[str, FeatureStruct] = {
    "float16_int8": FeatureStruct(C.VkPhysicalDeviceShaderFloat16Int8Features, "VK_KHR_shader_float16_int8",
                                  VK_API_VERSION_1_2),
    "storage_16bit": FeatureStruct(C.VkPhysicalDevice16BitStorageFeatures, "VK_KHR_16bit_storage", VK_API_VERSION_1_1),
    "storage_8bit": FeatureStruct(C.VkPhysicalDevice8BitStorageFeatures, "VK_KHR_8bit_storage", VK_API_VERSION_1_2),
    "scalar_block_layout": FeatureStruct(C.VkPhysicalDeviceScalarBlockLayoutFeatures, "VK_EXT_scalar_block_layout",
                                         VK_API_VERSION_1_2),
    "vulkan_memory_model": FeatureStruct(C.VkPhysicalDeviceVulkanMemoryModelFeatures, "VK_KHR_vulkan_memory_model",
                                         VK_API_VERSION_1_2),
    "buffer_device_address": FeatureStruct(C.VkPhysicalDeviceBufferDeviceAddressFeatures,
                                           "VK_KHR_buffer_device_address", VK_API_VERSION_1_2),
    "subgroup_extended_types": FeatureStruct(C.VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures,
                                             "VK_KHR_shader_subgroup_extended_types", VK_API_VERSION_1_2),
    "subgroup_size_control": FeatureStruct(C.VkPhysicalDeviceSubgroupSizeControlFeatures,
                                           "VK_EXT_subgroup_size_control", VK_API_VERSION_1_3),
    "maintenance4": FeatureStruct(C.VkPhysicalDeviceMaintenance4Features, "VK_KHR_maintenance4", VK_API_VERSION_1_3),
    "integer_dot_product": FeatureStruct(C.VkPhysicalDeviceShaderIntegerDotProductFeatures,
                                         "VK_KHR_shader_integer_dot_product", VK_API_VERSION_1_3),
    "subgroup_rotate": FeatureStruct(C.VkPhysicalDeviceShaderSubgroupRotateFeatures, "VK_KHR_shader_subgroup_rotate",
                                     VK_API_VERSION_1_4),
    "bfloat16": FeatureStruct(C.VkPhysicalDeviceShaderBfloat16FeaturesKHR, "VK_KHR_shader_bfloat16"),
    "float8": FeatureStruct(C.VkPhysicalDeviceShaderFloat8FeaturesEXT, "VK_EXT_shader_float8"),
    "pipeline_executable_properties": FeatureStruct(C.VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR,
                                                    "VK_KHR_pipeline_executable_properties"),
    "robustness2": FeatureStruct(C.VkPhysicalDeviceRobustness2FeaturesEXT, "VK_EXT_robustness2"),
    # per-pipeline robust access (`Pipeline(robust=True)`): enabling it costs nothing until a pipeline asks
    "pipeline_robustness": FeatureStruct(C.VkPhysicalDevicePipelineRobustnessFeaturesEXT,
                                         "VK_EXT_pipeline_robustness", VK_API_VERSION_1_4),
    "cooperative_matrix_khr": FeatureStruct(C.VkPhysicalDeviceCooperativeMatrixFeaturesKHR,
                                            "VK_KHR_cooperative_matrix"),
    "cooperative_matrix_nv": FeatureStruct(C.VkPhysicalDeviceCooperativeMatrixFeaturesNV, "VK_NV_cooperative_matrix"),
    "cooperative_matrix2_nv": FeatureStruct(C.VkPhysicalDeviceCooperativeMatrix2FeaturesNV,
                                            "VK_NV_cooperative_matrix2"),
    "cooperative_matrix_maintenance1_ext": FeatureStruct(C.VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT,
                                                         "VK_EXT_cooperative_matrix_maintenance1"),
}

# SPIR-V capability -> the feature bits it needs, as (feature struct key, field) pairs.
CAPABILITY_FEATURES: dict[str, tuple[tuple[str, str], ...]] = {
    "Float16": (("float16_int8", "shaderFloat16"),),
    "Int8": (("float16_int8", "shaderInt8"),),
    "Int16": ((CORE, "shaderInt16"),),
    "Int64": ((CORE, "shaderInt64"),),
    "Float64": ((CORE, "shaderFloat64"),),
    "StorageBuffer16BitAccess": (("storage_16bit", "storageBuffer16BitAccess"),),
    "UniformAndStorageBuffer16BitAccess": (("storage_16bit", "uniformAndStorageBuffer16BitAccess"),),
    "StoragePushConstant16": (("storage_16bit", "storagePushConstant16"),),
    "StorageBuffer8BitAccess": (("storage_8bit", "storageBuffer8BitAccess"),),
    "UniformAndStorageBuffer8BitAccess": (("storage_8bit", "uniformAndStorageBuffer8BitAccess"),),
    "StoragePushConstant8": (("storage_8bit", "storagePushConstant8"),),
    "VulkanMemoryModel": (("vulkan_memory_model", "vulkanMemoryModel"),),
    "VulkanMemoryModelDeviceScope": (("vulkan_memory_model", "vulkanMemoryModelDeviceScope"),),
    "PhysicalStorageBufferAddresses": (("buffer_device_address", "bufferDeviceAddress"),),
    "CooperativeMatrixKHR": (("cooperative_matrix_khr", "cooperativeMatrix"),),
    "CooperativeMatrixNV": (("cooperative_matrix_nv", "cooperativeMatrix"),),
    "CooperativeMatrixConversionsNV": (("cooperative_matrix2_nv", "cooperativeMatrixConversions"),),
    "CooperativeMatrixTensorAddressingNV": (("cooperative_matrix2_nv", "cooperativeMatrixTensorAddressing"),),
    "TensorAddressingNV": (("cooperative_matrix2_nv", "cooperativeMatrixTensorAddressing"),),
    "CooperativeMatrixBlockLoadsNV": (("cooperative_matrix2_nv", "cooperativeMatrixBlockLoads"),),
    "CooperativeMatrixConversionsEXT": (("cooperative_matrix_maintenance1_ext", "cooperativeMatrixConversions"),),
    "CooperativeMatrixGetCoordinateEXT": (("cooperative_matrix_maintenance1_ext", "cooperativeMatrixGetCoordinate"),),
    "BFloat16TypeKHR": (("bfloat16", "shaderBFloat16Type"),),
    "BFloat16DotProductKHR": (("bfloat16", "shaderBFloat16DotProduct"),),
    "BFloat16CooperativeMatrixKHR": (("bfloat16", "shaderBFloat16CooperativeMatrix"),),
    "DotProduct": (("integer_dot_product", "shaderIntegerDotProduct"),),
    "DotProductInputAll": (("integer_dot_product", "shaderIntegerDotProduct"),),
    "DotProductInput4x8Bit": (("integer_dot_product", "shaderIntegerDotProduct"),),
    "DotProductInput4x8BitPacked": (("integer_dot_product", "shaderIntegerDotProduct"),),
    "GroupNonUniformRotateKHR": (("subgroup_rotate", "shaderSubgroupRotate"),),
    "Float8EXT": (("float8", "shaderFloat8"),),
    "Float8CooperativeMatrixEXT": (("float8", "shaderFloat8CooperativeMatrix"),),
}

# One capability value, two names (NV and EXT), shared by SPV_NV_cooperative_matrix2 and
# SPV_EXT_cooperative_matrix_maintenance1: the module's extension decides whose feature bit it needs.
SHARED_CAPABILITIES = {
    "CooperativeMatrixReductions": "cooperativeMatrixReductions",
    "CooperativeMatrixPerElementOperations": "cooperativeMatrixPerElementOperations",
}
SHARED_CAPABILITY_EXTENSIONS = {
    "SPV_NV_cooperative_matrix2": "cooperative_matrix2_nv",
    "SPV_EXT_cooperative_matrix_maintenance1": "cooperative_matrix_maintenance1_ext",
}
_SUFFIX_EXTENSION = {"NV": "SPV_NV_cooperative_matrix2", "EXT": "SPV_EXT_cooperative_matrix_maintenance1"}


def _shared_capability_bits(cap: str, extensions) -> list[tuple[str, str]] | None:
    """(struct key, bit) pairs of a shared NV2/EXT capability, chosen by the module's extensions."""
    for suffix, default_extension in _SUFFIX_EXTENSION.items():
        base = cap.removesuffix(suffix)
        if base != cap and base in SHARED_CAPABILITIES:
            declared = [e for e in SHARED_CAPABILITY_EXTENSIONS if e in extensions] or [default_extension]
            return [(SHARED_CAPABILITY_EXTENSIONS[e], SHARED_CAPABILITIES[base]) for e in declared]
    return None


# Capabilities every Vulkan 1.1+ compute device has (subgroup operations are queried, not enabled).
CAPABILITIES_WITHOUT_FEATURES = frozenset({
    "Shader", "Matrix", "Addresses", "Linkage", "Kernel", "StorageBuffer", "GroupNonUniform",
    "GroupNonUniformVote", "GroupNonUniformArithmetic", "GroupNonUniformBallot", "GroupNonUniformShuffle",
    "GroupNonUniformShuffleRelative", "GroupNonUniformClustered", "GroupNonUniformQuad",
    "VariablePointersStorageBuffer", "DenormPreserve", "SignedZeroInfNanPreserve", "RoundingModeRTE",
})

# Bits enabled alongside a struct whenever the device has them: NV2 workgroup-scope and
# flexible-dimension matrices need no SPIR-V capability of their own.
COMPANION_BITS = {
    "cooperative_matrix2_nv": ("cooperativeMatrixWorkgroupScope", "cooperativeMatrixFlexibleDimensions"),
    "cooperative_matrix_maintenance1_ext": ("cooperativeMatrixProperties2",),
    "vulkan_memory_model": ("vulkanMemoryModelDeviceScope",),
    "subgroup_rotate": ("shaderSubgroupRotateClustered",),  # the ClusterSize operand has no capability
}

# Robust access (out-of-bounds reads give zero, writes are dropped): enabled only when a Device asks for it,
# never by enable_all, since it costs speed on some devices.
ROBUST_BITS = {CORE: ("robustBufferAccess",), "robustness2": ("robustBufferAccess2", "robustImageAccess2")}

# SPIR-V extension -> (device extension, API version where it became core or None).
SPIRV_EXTENSIONS: dict[str, tuple[str, int | None]] = {
    "SPV_KHR_cooperative_matrix": ("VK_KHR_cooperative_matrix", None),
    "SPV_NV_cooperative_matrix": ("VK_NV_cooperative_matrix", None),
    "SPV_NV_cooperative_matrix2": ("VK_NV_cooperative_matrix2", None),
    "SPV_NV_tensor_addressing": ("VK_NV_cooperative_matrix2", None),
    "SPV_EXT_cooperative_matrix_maintenance1": ("VK_EXT_cooperative_matrix_maintenance1", None),
    "SPV_KHR_16bit_storage": ("VK_KHR_16bit_storage", VK_API_VERSION_1_1),
    "SPV_KHR_8bit_storage": ("VK_KHR_8bit_storage", VK_API_VERSION_1_2),
    "SPV_KHR_storage_buffer_storage_class": ("VK_KHR_storage_buffer_storage_class", VK_API_VERSION_1_1),
    "SPV_KHR_vulkan_memory_model": ("VK_KHR_vulkan_memory_model", VK_API_VERSION_1_2),
    "SPV_KHR_physical_storage_buffer": ("VK_KHR_buffer_device_address", VK_API_VERSION_1_2),
    "SPV_KHR_variable_pointers": ("VK_KHR_variable_pointers", VK_API_VERSION_1_1),
    "SPV_KHR_non_semantic_info": ("VK_KHR_shader_non_semantic_info", VK_API_VERSION_1_3),
    "SPV_KHR_float_controls": ("VK_KHR_shader_float_controls", VK_API_VERSION_1_2),
    "SPV_KHR_bfloat16": ("VK_KHR_shader_bfloat16", None),
    "SPV_KHR_integer_dot_product": ("VK_KHR_shader_integer_dot_product", VK_API_VERSION_1_3),
    "SPV_KHR_subgroup_rotate": ("VK_KHR_shader_subgroup_rotate", VK_API_VERSION_1_4),
    "SPV_EXT_float8": ("VK_EXT_shader_float8", None),
}


@dataclass
class Requirements:
    """What a device must offer: feature bits by struct key, device extensions, and who asked for each."""

    bits: dict[str, set[str]] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)
    reasons: dict[str, str] = field(default_factory=dict)  # "struct.field" or extension -> capability

    def add_bit(self, key: str, bit: str, reason: str) -> None:
        self.bits.setdefault(key, set()).add(bit)
        self.reasons.setdefault(f"{key}.{bit}", reason)

    def merge(self, other: Requirements) -> Requirements:
        for key, bits in other.bits.items():
            self.bits.setdefault(key, set()).update(bits)
        self.extensions |= other.extensions
        for k, v in other.reasons.items():
            self.reasons.setdefault(k, v)
        return self


def requirements(capabilities=(), extensions=()) -> Requirements:
    """The feature bits and extensions a module with these SPIR-V capability/extension names needs."""
    req = Requirements()
    unknown = []
    for cap in capabilities:
        if cap in CAPABILITIES_WITHOUT_FEATURES:
            continue
        shared = _shared_capability_bits(cap, extensions)
        if shared is not None:
            for key, bit in shared:
                req.add_bit(key, bit, f"capability {cap}")
            continue
        if cap not in CAPABILITY_FEATURES:
            unknown.append(f"capability {cap}")
            continue
        for key, bit in CAPABILITY_FEATURES[cap]:
            req.add_bit(key, bit, f"capability {cap}")
    for ext in extensions:
        if ext not in SPIRV_EXTENSIONS:
            unknown.append(f"extension {ext}")
            continue
        req.extensions.add(ext)
        req.reasons.setdefault(ext, f"SPIR-V extension {ext}")
    if unknown:
        raise UnsupportedFeature("hydroplane.vk does not know what the device needs for: " + ", ".join(unknown),
                                 missing=tuple(unknown))
    return req


def struct_name(key: str) -> str:
    return "VkPhysicalDeviceFeatures" if key == CORE else FEATURE_STRUCTS[key].struct.__name__
