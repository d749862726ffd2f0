"""ctypes layouts of the capability structs: device properties, features and cooperative-matrix queries.

Kept apart from `structs` (objects and commands) so each file stays short; same conventions, and
tests/vk/test_vk_layout.py checks these against vulkan_core.h too.
"""

from __future__ import annotations

from ctypes import c_char, c_float, c_int32, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p  # noqa: F401

from hydroplane.vk.structs import _Struct, declared_structs


class VkPhysicalDeviceLimits(_Struct):
    _fields_ = [("maxImageDimension1D", c_uint32), ("maxImageDimension2D", c_uint32),
        ("maxImageDimension3D", c_uint32), ("maxImageDimensionCube", c_uint32),
        ("maxImageArrayLayers", c_uint32), ("maxTexelBufferElements", c_uint32),
        ("maxUniformBufferRange", c_uint32), ("maxStorageBufferRange", c_uint32),
        ("maxPushConstantsSize", c_uint32), ("maxMemoryAllocationCount", c_uint32),
        ("maxSamplerAllocationCount", c_uint32), ("bufferImageGranularity", c_uint64),
        ("sparseAddressSpaceSize", c_uint64), ("maxBoundDescriptorSets", c_uint32),
        ("maxPerStageDescriptorSamplers", c_uint32),
        ("maxPerStageDescriptorUniformBuffers", c_uint32),
        ("maxPerStageDescriptorStorageBuffers", c_uint32),
        ("maxPerStageDescriptorSampledImages", c_uint32),
        ("maxPerStageDescriptorStorageImages", c_uint32),
        ("maxPerStageDescriptorInputAttachments", c_uint32), ("maxPerStageResources", c_uint32),
        ("maxDescriptorSetSamplers", c_uint32), ("maxDescriptorSetUniformBuffers", c_uint32),
        ("maxDescriptorSetUniformBuffersDynamic", c_uint32),
        ("maxDescriptorSetStorageBuffers", c_uint32),
        ("maxDescriptorSetStorageBuffersDynamic", c_uint32),
        ("maxDescriptorSetSampledImages", c_uint32), ("maxDescriptorSetStorageImages", c_uint32),
        ("maxDescriptorSetInputAttachments", c_uint32), ("maxVertexInputAttributes", c_uint32),
        ("maxVertexInputBindings", c_uint32), ("maxVertexInputAttributeOffset", c_uint32),
        ("maxVertexInputBindingStride", c_uint32), ("maxVertexOutputComponents", c_uint32),
        ("maxTessellationGenerationLevel", c_uint32), ("maxTessellationPatchSize", c_uint32),
        ("maxTessellationControlPerVertexInputComponents", c_uint32),
        ("maxTessellationControlPerVertexOutputComponents", c_uint32),
        ("maxTessellationControlPerPatchOutputComponents", c_uint32),
        ("maxTessellationControlTotalOutputComponents", c_uint32),
        ("maxTessellationEvaluationInputComponents", c_uint32),
        ("maxTessellationEvaluationOutputComponents", c_uint32),
        ("maxGeometryShaderInvocations", c_uint32), ("maxGeometryInputComponents", c_uint32),
        ("maxGeometryOutputComponents", c_uint32), ("maxGeometryOutputVertices", c_uint32),
        ("maxGeometryTotalOutputComponents", c_uint32), ("maxFragmentInputComponents", c_uint32),
        ("maxFragmentOutputAttachments", c_uint32), ("maxFragmentDualSrcAttachments", c_uint32),
        ("maxFragmentCombinedOutputResources", c_uint32),
        ("maxComputeSharedMemorySize", c_uint32), ("maxComputeWorkGroupCount", c_uint32 * 3),
        ("maxComputeWorkGroupInvocations", c_uint32), ("maxComputeWorkGroupSize", c_uint32 * 3),
        ("subPixelPrecisionBits", c_uint32), ("subTexelPrecisionBits", c_uint32),
        ("mipmapPrecisionBits", c_uint32), ("maxDrawIndexedIndexValue", c_uint32),
        ("maxDrawIndirectCount", c_uint32), ("maxSamplerLodBias", c_float),
        ("maxSamplerAnisotropy", c_float), ("maxViewports", c_uint32),
        ("maxViewportDimensions", c_uint32 * 2), ("viewportBoundsRange", c_float * 2),
        ("viewportSubPixelBits", c_uint32), ("minMemoryMapAlignment", c_size_t),
        ("minTexelBufferOffsetAlignment", c_uint64),
        ("minUniformBufferOffsetAlignment", c_uint64),
        ("minStorageBufferOffsetAlignment", c_uint64), ("minTexelOffset", c_int32),
        ("maxTexelOffset", c_uint32), ("minTexelGatherOffset", c_int32),
        ("maxTexelGatherOffset", c_uint32), ("minInterpolationOffset", c_float),
        ("maxInterpolationOffset", c_float), ("subPixelInterpolationOffsetBits", c_uint32),
        ("maxFramebufferWidth", c_uint32), ("maxFramebufferHeight", c_uint32),
        ("maxFramebufferLayers", c_uint32), ("framebufferColorSampleCounts", c_uint32),
        ("framebufferDepthSampleCounts", c_uint32), ("framebufferStencilSampleCounts", c_uint32),
        ("framebufferNoAttachmentsSampleCounts", c_uint32), ("maxColorAttachments", c_uint32),
        ("sampledImageColorSampleCounts", c_uint32),
        ("sampledImageIntegerSampleCounts", c_uint32),
        ("sampledImageDepthSampleCounts", c_uint32),
        ("sampledImageStencilSampleCounts", c_uint32), ("storageImageSampleCounts", c_uint32),
        ("maxSampleMaskWords", c_uint32), ("timestampComputeAndGraphics", c_uint32),
        ("timestampPeriod", c_float), ("maxClipDistances", c_uint32),
        ("maxCullDistances", c_uint32), ("maxCombinedClipAndCullDistances", c_uint32),
        ("discreteQueuePriorities", c_uint32), ("pointSizeRange", c_float * 2),
        ("lineWidthRange", c_float * 2), ("pointSizeGranularity", c_float),
        ("lineWidthGranularity", c_float), ("strictLines", c_uint32),
        ("standardSampleLocations", c_uint32), ("optimalBufferCopyOffsetAlignment", c_uint64),
        ("optimalBufferCopyRowPitchAlignment", c_uint64), ("nonCoherentAtomSize", c_uint64)]


class VkPhysicalDeviceSparseProperties(_Struct):
    _fields_ = [("residencyStandard2DBlockShape", c_uint32),
        ("residencyStandard2DMultisampleBlockShape", c_uint32),
        ("residencyStandard3DBlockShape", c_uint32), ("residencyAlignedMipSize", c_uint32),
        ("residencyNonResidentStrict", c_uint32)]


class VkPhysicalDeviceProperties(_Struct):
    _fields_ = [("apiVersion", c_uint32), ("driverVersion", c_uint32), ("vendorID", c_uint32),
        ("deviceID", c_uint32), ("deviceType", c_int32), ("deviceName", c_char * 256),
        ("pipelineCacheUUID", c_uint8 * 16), ("limits", VkPhysicalDeviceLimits),
        ("sparseProperties", VkPhysicalDeviceSparseProperties)]


class VkPhysicalDeviceProperties2(_Struct):
    STYPE = 1000059001  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("properties", VkPhysicalDeviceProperties)]


class VkPhysicalDeviceFeatures(_Struct):
    _fields_ = [("robustBufferAccess", c_uint32), ("fullDrawIndexUint32", c_uint32),
        ("imageCubeArray", c_uint32), ("independentBlend", c_uint32),
        ("geometryShader", c_uint32), ("tessellationShader", c_uint32),
        ("sampleRateShading", c_uint32), ("dualSrcBlend", c_uint32), ("logicOp", c_uint32),
        ("multiDrawIndirect", c_uint32), ("drawIndirectFirstInstance", c_uint32),
        ("depthClamp", c_uint32), ("depthBiasClamp", c_uint32), ("fillModeNonSolid", c_uint32),
        ("depthBounds", c_uint32), ("wideLines", c_uint32), ("largePoints", c_uint32),
        ("alphaToOne", c_uint32), ("multiViewport", c_uint32), ("samplerAnisotropy", c_uint32),
        ("textureCompressionETC2", c_uint32), ("textureCompressionASTC_LDR", c_uint32),
        ("textureCompressionBC", c_uint32), ("occlusionQueryPrecise", c_uint32),
        ("pipelineStatisticsQuery", c_uint32), ("vertexPipelineStoresAndAtomics", c_uint32),
        ("fragmentStoresAndAtomics", c_uint32),
        ("shaderTessellationAndGeometryPointSize", c_uint32),
        ("shaderImageGatherExtended", c_uint32), ("shaderStorageImageExtendedFormats", c_uint32),
        ("shaderStorageImageMultisample", c_uint32),
        ("shaderStorageImageReadWithoutFormat", c_uint32),
        ("shaderStorageImageWriteWithoutFormat", c_uint32),
        ("shaderUniformBufferArrayDynamicIndexing", c_uint32),
        ("shaderSampledImageArrayDynamicIndexing", c_uint32),
        ("shaderStorageBufferArrayDynamicIndexing", c_uint32),
        ("shaderStorageImageArrayDynamicIndexing", c_uint32), ("shaderClipDistance", c_uint32),
        ("shaderCullDistance", c_uint32), ("shaderFloat64", c_uint32), ("shaderInt64", c_uint32),
        ("shaderInt16", c_uint32), ("shaderResourceResidency", c_uint32),
        ("shaderResourceMinLod", c_uint32), ("sparseBinding", c_uint32),
        ("sparseResidencyBuffer", c_uint32), ("sparseResidencyImage2D", c_uint32),
        ("sparseResidencyImage3D", c_uint32), ("sparseResidency2Samples", c_uint32),
        ("sparseResidency4Samples", c_uint32), ("sparseResidency8Samples", c_uint32),
        ("sparseResidency16Samples", c_uint32), ("sparseResidencyAliased", c_uint32),
        ("variableMultisampleRate", c_uint32), ("inheritedQueries", c_uint32)]


class VkPhysicalDeviceFeatures2(_Struct):
    STYPE = 1000059000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("features", VkPhysicalDeviceFeatures)]


class VkConformanceVersion(_Struct):
    _fields_ = [("major", c_uint8), ("minor", c_uint8), ("subminor", c_uint8), ("patch", c_uint8)]


class VkPhysicalDeviceDriverProperties(_Struct):
    STYPE = 1000196000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("driverID", c_int32),
        ("driverName", c_char * 256), ("driverInfo", c_char * 256),
        ("conformanceVersion", VkConformanceVersion)]


class VkPhysicalDeviceSubgroupProperties(_Struct):
    STYPE = 1000094000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("subgroupSize", c_uint32),
        ("supportedStages", c_uint32), ("supportedOperations", c_uint32),
        ("quadOperationsInAllStages", c_uint32)]


class VkPhysicalDeviceSubgroupSizeControlProperties(_Struct):
    STYPE = 1000225000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("minSubgroupSize", c_uint32),
        ("maxSubgroupSize", c_uint32), ("maxComputeWorkgroupSubgroups", c_uint32),
        ("requiredSubgroupSizeStages", c_uint32)]


class VkPhysicalDeviceSubgroupSizeControlFeatures(_Struct):
    STYPE = 1000225002  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("subgroupSizeControl", c_uint32),
        ("computeFullSubgroups", c_uint32)]


class VkPhysicalDeviceShaderFloat16Int8Features(_Struct):
    STYPE = 1000082000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("shaderFloat16", c_uint32),
        ("shaderInt8", c_uint32)]


class VkPhysicalDevice16BitStorageFeatures(_Struct):
    STYPE = 1000083000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("storageBuffer16BitAccess", c_uint32),
        ("uniformAndStorageBuffer16BitAccess", c_uint32), ("storagePushConstant16", c_uint32),
        ("storageInputOutput16", c_uint32)]


class VkPhysicalDevice8BitStorageFeatures(_Struct):
    STYPE = 1000177000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("storageBuffer8BitAccess", c_uint32),
        ("uniformAndStorageBuffer8BitAccess", c_uint32), ("storagePushConstant8", c_uint32)]


class VkPhysicalDeviceScalarBlockLayoutFeatures(_Struct):
    STYPE = 1000221000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("scalarBlockLayout", c_uint32)]


class VkPhysicalDeviceVulkanMemoryModelFeatures(_Struct):
    STYPE = 1000211000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("vulkanMemoryModel", c_uint32),
        ("vulkanMemoryModelDeviceScope", c_uint32),
        ("vulkanMemoryModelAvailabilityVisibilityChains", c_uint32)]


class VkPhysicalDeviceBufferDeviceAddressFeatures(_Struct):
    STYPE = 1000257000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("bufferDeviceAddress", c_uint32),
        ("bufferDeviceAddressCaptureReplay", c_uint32),
        ("bufferDeviceAddressMultiDevice", c_uint32)]


class VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures(_Struct):
    STYPE = 1000175000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("shaderSubgroupExtendedTypes", c_uint32)]


class VkPhysicalDeviceHostQueryResetFeatures(_Struct):
    STYPE = 1000261000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("hostQueryReset", c_uint32)]

class VkPhysicalDeviceMaintenance4Features(_Struct):
    STYPE = 1000413000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("maintenance4", c_uint32)]


class VkPhysicalDeviceShaderIntegerDotProductFeatures(_Struct):
    STYPE = 1000280000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("shaderIntegerDotProduct", c_uint32)]


class VkPhysicalDeviceShaderSubgroupRotateFeatures(_Struct):
    STYPE = 1000416000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_ROTATE_FEATURES
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("shaderSubgroupRotate", c_uint32),
        ("shaderSubgroupRotateClustered", c_uint32)]


class VkPhysicalDeviceShaderBfloat16FeaturesKHR(_Struct):
    STYPE = 1000141000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("shaderBFloat16Type", c_uint32),
        ("shaderBFloat16DotProduct", c_uint32), ("shaderBFloat16CooperativeMatrix", c_uint32)]


class VkPhysicalDeviceShaderFloat8FeaturesEXT(_Struct):
    STYPE = 1000567000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT8_FEATURES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("shaderFloat8", c_uint32),
        ("shaderFloat8CooperativeMatrix", c_uint32)]


class VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR(_Struct):
    STYPE = 1000269000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pipelineExecutableInfo", c_uint32)]


class VkPhysicalDeviceRobustness2FeaturesEXT(_Struct):
    STYPE = 1000286000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("robustBufferAccess2", c_uint32),
        ("robustImageAccess2", c_uint32), ("nullDescriptor", c_uint32)]


class VkPhysicalDeviceRobustness2PropertiesEXT(_Struct):
    STYPE = 1000286001  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_PROPERTIES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("robustStorageBufferAccessSizeAlignment", c_uint64),
        ("robustUniformBufferAccessSizeAlignment", c_uint64)]


class VkPhysicalDevicePipelineRobustnessFeaturesEXT(_Struct):
    STYPE = 1000068001  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pipelineRobustness", c_uint32)]


class VkPhysicalDevicePipelineRobustnessPropertiesEXT(_Struct):
    STYPE = 1000068002  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_PROPERTIES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("defaultRobustnessStorageBuffers", c_int32),
        ("defaultRobustnessUniformBuffers", c_int32), ("defaultRobustnessVertexInputs", c_int32),
        ("defaultRobustnessImages", c_int32)]


class VkPhysicalDeviceCooperativeMatrixFeaturesKHR(_Struct):
    STYPE = 1000506000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("cooperativeMatrix", c_uint32),
        ("cooperativeMatrixRobustBufferAccess", c_uint32)]


class VkPhysicalDeviceCooperativeMatrixPropertiesKHR(_Struct):
    STYPE = 1000506002  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("cooperativeMatrixSupportedStages", c_uint32)]


class VkCooperativeMatrixPropertiesKHR(_Struct):
    STYPE = 1000506001  # VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("MSize", c_uint32), ("NSize", c_uint32),
        ("KSize", c_uint32), ("AType", c_int32), ("BType", c_int32), ("CType", c_int32),
        ("ResultType", c_int32), ("saturatingAccumulation", c_uint32), ("scope", c_int32)]


class VkPhysicalDeviceCooperativeMatrixFeaturesNV(_Struct):
    STYPE = 1000249000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("cooperativeMatrix", c_uint32),
        ("cooperativeMatrixRobustBufferAccess", c_uint32)]


class VkPhysicalDeviceCooperativeMatrixPropertiesNV(_Struct):
    STYPE = 1000249002  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("cooperativeMatrixSupportedStages", c_uint32)]


class VkCooperativeMatrixPropertiesNV(_Struct):
    STYPE = 1000249001  # VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("MSize", c_uint32), ("NSize", c_uint32),
        ("KSize", c_uint32), ("AType", c_int32), ("BType", c_int32), ("CType", c_int32),
        ("DType", c_int32), ("scope", c_int32)]


class VkPhysicalDeviceCooperativeMatrix2FeaturesNV(_Struct):
    STYPE = 1000593000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("cooperativeMatrixWorkgroupScope", c_uint32),
        ("cooperativeMatrixFlexibleDimensions", c_uint32),
        ("cooperativeMatrixReductions", c_uint32), ("cooperativeMatrixConversions", c_uint32),
        ("cooperativeMatrixPerElementOperations", c_uint32),
        ("cooperativeMatrixTensorAddressing", c_uint32),
        ("cooperativeMatrixBlockLoads", c_uint32)]


class VkPhysicalDeviceCooperativeMatrix2PropertiesNV(_Struct):
    STYPE = 1000593002  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("cooperativeMatrixWorkgroupScopeMaxWorkgroupSize", c_uint32),
        ("cooperativeMatrixFlexibleDimensionsMaxDimension", c_uint32),
        ("cooperativeMatrixWorkgroupScopeReservedSharedMemory", c_uint32)]


class VkCooperativeMatrixFlexibleDimensionsPropertiesNV(_Struct):
    STYPE = 1000593001  # VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("MGranularity", c_uint32),
        ("NGranularity", c_uint32), ("KGranularity", c_uint32), ("AType", c_int32),
        ("BType", c_int32), ("CType", c_int32), ("ResultType", c_int32),
        ("saturatingAccumulation", c_uint32), ("scope", c_int32),
        ("workgroupInvocations", c_uint32)]


class VkPhysicalDeviceCooperativeMatrixMaintenance1FeaturesEXT(_Struct):
    STYPE = 1000659000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_MAINTENANCE_1_FEATURES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("cooperativeMatrixProperties2", c_uint32), ("cooperativeMatrixReductions", c_uint32),
        ("cooperativeMatrixConversions", c_uint32),
        ("cooperativeMatrixPerElementOperations", c_uint32),
        ("cooperativeMatrixGetCoordinate", c_uint32)]


class VkPhysicalDeviceCooperativeMatrixInfo2EXT(_Struct):
    STYPE = 1000659001  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_INFO_2_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("scope", c_int32),
        ("invocations", c_uint32), ("subgroupSize", c_uint32), ("flags", c_uint32)]


class VkCooperativeMatrixProperties2EXT(_Struct):
    STYPE = 1000659002  # VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_2_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("MGranularity", c_uint32),
        ("NGranularity", c_uint32), ("KGranularity", c_uint32), ("AType", c_int32),
        ("BType", c_int32), ("CType", c_int32), ("ResultType", c_int32)]


STRUCTS = declared_structs(globals())
