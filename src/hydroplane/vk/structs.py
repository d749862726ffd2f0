"""ctypes layouts of the Vulkan structs the runtime passes to the driver: objects, memory, pipelines, commands.

Field lists follow vulkan_core.h exactly (tests/vk/test_vk_layout.py compiles a C program against the
header and compares sizeof/offsetof of every struct declared here and in `structs_caps`).
Conventions: every handle and pointer is `c_void_p` (64-bit hosts only), enums are `c_int32`,
VkFlags/VkBool32 are `c_uint32`, VkDeviceSize/VkDeviceAddress are `c_uint64`. A struct with an
sType gets it filled in from its `STYPE` when constructed.
"""

from __future__ import annotations

import ctypes
from ctypes import (  # noqa: F401  (the names below use them)
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)


class _Struct(ctypes.Structure):
    """Base of every Vulkan struct: fills sType from the class's STYPE."""

    STYPE: int | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.STYPE is not None and "sType" not in kwargs:
            self.sType = self.STYPE


class _Union(ctypes.Union):
    """Base of the Vulkan unions."""

    STYPE = None


class VkApplicationInfo(_Struct):
    STYPE = 0  # VK_STRUCTURE_TYPE_APPLICATION_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pApplicationName", c_char_p),
        ("applicationVersion", c_uint32), ("pEngineName", c_char_p), ("engineVersion", c_uint32),
        ("apiVersion", c_uint32)]


class VkInstanceCreateInfo(_Struct):
    STYPE = 1  # VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("pApplicationInfo", c_void_p), ("enabledLayerCount", c_uint32),
        ("ppEnabledLayerNames", c_char_p), ("enabledExtensionCount", c_uint32),
        ("ppEnabledExtensionNames", c_char_p)]


class VkLayerProperties(_Struct):
    _fields_ = [("layerName", c_char * 256), ("specVersion", c_uint32),
        ("implementationVersion", c_uint32), ("description", c_char * 256)]


class VkExtensionProperties(_Struct):
    _fields_ = [("extensionName", c_char * 256), ("specVersion", c_uint32)]


class VkExtent3D(_Struct):
    _fields_ = [("width", c_uint32), ("height", c_uint32), ("depth", c_uint32)]


class VkQueueFamilyProperties(_Struct):
    _fields_ = [("queueFlags", c_uint32), ("queueCount", c_uint32),
        ("timestampValidBits", c_uint32), ("minImageTransferGranularity", VkExtent3D)]


class VkDeviceQueueCreateInfo(_Struct):
    STYPE = 2  # VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("queueFamilyIndex", c_uint32), ("queueCount", c_uint32), ("pQueuePriorities", c_void_p)]


class VkDeviceCreateInfo(_Struct):
    STYPE = 3  # VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("queueCreateInfoCount", c_uint32), ("pQueueCreateInfos", c_void_p),
        ("enabledLayerCount", c_uint32), ("ppEnabledLayerNames", c_char_p),
        ("enabledExtensionCount", c_uint32), ("ppEnabledExtensionNames", c_char_p),
        ("pEnabledFeatures", c_void_p)]


class VkMemoryType(_Struct):
    _fields_ = [("propertyFlags", c_uint32), ("heapIndex", c_uint32)]


class VkMemoryHeap(_Struct):
    _fields_ = [("size", c_uint64), ("flags", c_uint32)]


class VkPhysicalDeviceMemoryProperties(_Struct):
    _fields_ = [("memoryTypeCount", c_uint32), ("memoryTypes", VkMemoryType * 32),
        ("memoryHeapCount", c_uint32), ("memoryHeaps", VkMemoryHeap * 16)]


class VkPhysicalDeviceMemoryProperties2(_Struct):
    STYPE = 1000059006  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
        ("memoryProperties", VkPhysicalDeviceMemoryProperties)]


class VkPhysicalDeviceMemoryBudgetPropertiesEXT(_Struct):
    STYPE = 1000237000  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("heapBudget", c_uint64 * 16),
        ("heapUsage", c_uint64 * 16)]


class VkMemoryRequirements(_Struct):
    _fields_ = [("size", c_uint64), ("alignment", c_uint64), ("memoryTypeBits", c_uint32)]


class VkMemoryAllocateInfo(_Struct):
    STYPE = 5  # VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("allocationSize", c_uint64),
        ("memoryTypeIndex", c_uint32)]


class VkMemoryAllocateFlagsInfo(_Struct):
    STYPE = 1000060000  # VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("deviceMask", c_uint32)]


class VkMappedMemoryRange(_Struct):
    STYPE = 6  # VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("memory", c_void_p),
        ("offset", c_uint64), ("size", c_uint64)]


class VkBufferCreateInfo(_Struct):
    STYPE = 12  # VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("size", c_uint64),
        ("usage", c_uint32), ("sharingMode", c_int32), ("queueFamilyIndexCount", c_uint32),
        ("pQueueFamilyIndices", c_void_p)]


class VkBufferDeviceAddressInfo(_Struct):
    STYPE = 1000244001  # VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("buffer", c_void_p)]


class VkShaderModuleCreateInfo(_Struct):
    STYPE = 16  # VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("codeSize", c_size_t), ("pCode", c_void_p)]


class VkDescriptorSetLayoutBinding(_Struct):
    _fields_ = [("binding", c_uint32), ("descriptorType", c_int32), ("descriptorCount", c_uint32),
        ("stageFlags", c_uint32), ("pImmutableSamplers", c_void_p)]


class VkDescriptorSetLayoutCreateInfo(_Struct):
    STYPE = 32  # VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("bindingCount", c_uint32), ("pBindings", c_void_p)]


class VkPushConstantRange(_Struct):
    _fields_ = [("stageFlags", c_uint32), ("offset", c_uint32), ("size", c_uint32)]


class VkPipelineLayoutCreateInfo(_Struct):
    STYPE = 30  # VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("setLayoutCount", c_uint32), ("pSetLayouts", c_void_p),
        ("pushConstantRangeCount", c_uint32), ("pPushConstantRanges", c_void_p)]


class VkSpecializationMapEntry(_Struct):
    _fields_ = [("constantID", c_uint32), ("offset", c_uint32), ("size", c_size_t)]


class VkSpecializationInfo(_Struct):
    _fields_ = [("mapEntryCount", c_uint32), ("pMapEntries", c_void_p), ("dataSize", c_size_t),
        ("pData", c_void_p)]


class VkPipelineShaderStageCreateInfo(_Struct):
    STYPE = 18  # VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("stage", c_int32),
        ("module", c_void_p), ("pName", c_char_p), ("pSpecializationInfo", c_void_p)]


class VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(_Struct):
    STYPE = 1000225001  # VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("requiredSubgroupSize", c_uint32)]


class VkPipelineRobustnessCreateInfoEXT(_Struct):
    STYPE = 1000068000  # VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("storageBuffers", c_int32),
        ("uniformBuffers", c_int32), ("vertexInputs", c_int32), ("images", c_int32)]


class VkComputePipelineCreateInfo(_Struct):
    STYPE = 29  # VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("stage", VkPipelineShaderStageCreateInfo), ("layout", c_void_p),
        ("basePipelineHandle", c_void_p), ("basePipelineIndex", c_int32)]


class VkPipelineCacheCreateInfo(_Struct):
    STYPE = 17  # VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("initialDataSize", c_size_t), ("pInitialData", c_void_p)]


class VkDescriptorPoolSize(_Struct):
    _fields_ = [("type", c_int32), ("descriptorCount", c_uint32)]


class VkDescriptorPoolCreateInfo(_Struct):
    STYPE = 33  # VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("maxSets", c_uint32), ("poolSizeCount", c_uint32), ("pPoolSizes", c_void_p)]


class VkDescriptorSetAllocateInfo(_Struct):
    STYPE = 34  # VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("descriptorPool", c_void_p),
        ("descriptorSetCount", c_uint32), ("pSetLayouts", c_void_p)]


class VkDescriptorBufferInfo(_Struct):
    _fields_ = [("buffer", c_void_p), ("offset", c_uint64), ("range", c_uint64)]


class VkWriteDescriptorSet(_Struct):
    STYPE = 35  # VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("dstSet", c_void_p),
        ("dstBinding", c_uint32), ("dstArrayElement", c_uint32), ("descriptorCount", c_uint32),
        ("descriptorType", c_int32), ("pImageInfo", c_void_p), ("pBufferInfo", c_void_p),
        ("pTexelBufferView", c_void_p)]


class VkCommandPoolCreateInfo(_Struct):
    STYPE = 39  # VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("queueFamilyIndex", c_uint32)]


class VkCommandBufferAllocateInfo(_Struct):
    STYPE = 40  # VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("commandPool", c_void_p),
        ("level", c_int32), ("commandBufferCount", c_uint32)]


class VkCommandBufferInheritanceInfo(_Struct):
    STYPE = 41  # VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("renderPass", c_uint64), ("subpass", c_uint32),
        ("framebuffer", c_uint64), ("occlusionQueryEnable", c_uint32), ("queryFlags", c_uint32),
        ("pipelineStatistics", c_uint32)]


class VkCommandBufferBeginInfo(_Struct):
    STYPE = 42  # VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("pInheritanceInfo", c_void_p)]


class VkBufferCopy(_Struct):
    _fields_ = [("srcOffset", c_uint64), ("dstOffset", c_uint64), ("size", c_uint64)]


class VkMemoryBarrier(_Struct):
    STYPE = 46  # VK_STRUCTURE_TYPE_MEMORY_BARRIER
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("srcAccessMask", c_uint32),
        ("dstAccessMask", c_uint32)]


class VkSubmitInfo(_Struct):
    STYPE = 4  # VK_STRUCTURE_TYPE_SUBMIT_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("waitSemaphoreCount", c_uint32),
        ("pWaitSemaphores", c_void_p), ("pWaitDstStageMask", c_void_p),
        ("commandBufferCount", c_uint32), ("pCommandBuffers", c_void_p),
        ("signalSemaphoreCount", c_uint32), ("pSignalSemaphores", c_void_p)]


class VkFenceCreateInfo(_Struct):
    STYPE = 8  # VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32)]


class VkQueryPoolCreateInfo(_Struct):
    STYPE = 11  # VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("queryType", c_int32), ("queryCount", c_uint32), ("pipelineStatistics", c_uint32)]


class VkDebugUtilsLabelEXT(_Struct):
    STYPE = 1000128002  # VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pLabelName", c_char_p),
        ("color", c_float * 4)]


class VkDebugUtilsObjectNameInfoEXT(_Struct):
    STYPE = 1000128000  # VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("objectType", c_int32),
        ("objectHandle", c_uint64), ("pObjectName", c_char_p)]


class VkDebugUtilsMessengerCallbackDataEXT(_Struct):
    STYPE = 1000128003  # VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("pMessageIdName", c_char_p), ("messageIdNumber", c_int32), ("pMessage", c_char_p),
        ("queueLabelCount", c_uint32), ("pQueueLabels", c_void_p), ("cmdBufLabelCount", c_uint32),
        ("pCmdBufLabels", c_void_p), ("objectCount", c_uint32), ("pObjects", c_void_p)]


class VkDebugUtilsMessengerCreateInfoEXT(_Struct):
    STYPE = 1000128004  # VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
        ("messageSeverity", c_uint32), ("messageType", c_uint32), ("pfnUserCallback", c_void_p),
        ("pUserData", c_void_p)]


class VkPipelineInfoKHR(_Struct):
    STYPE = 1000269001  # VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pipeline", c_void_p)]


class VkPipelineExecutablePropertiesKHR(_Struct):
    STYPE = 1000269002  # VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("stages", c_uint32),
        ("name", c_char * 256), ("description", c_char * 256), ("subgroupSize", c_uint32)]


class VkPipelineExecutableInfoKHR(_Struct):
    STYPE = 1000269003  # VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("pipeline", c_void_p),
        ("executableIndex", c_uint32)]


class VkPipelineExecutableStatisticValueKHR(_Union):
    _fields_ = [("b32", c_uint32), ("i64", c_int64), ("u64", c_uint64), ("f64", c_double)]


class VkPipelineExecutableStatisticKHR(_Struct):
    STYPE = 1000269004  # VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("name", c_char * 256),
        ("description", c_char * 256), ("format", c_int32),
        ("value", VkPipelineExecutableStatisticValueKHR)]


def declared_structs(namespace: dict) -> list[type]:
    """The Vulkan structs and unions declared in a module namespace (for the layout test)."""
    return [v for k, v in namespace.items()
            if k.startswith("Vk") and isinstance(v, type) and issubclass(v, (_Struct, _Union))]


STRUCTS = declared_structs(globals())
