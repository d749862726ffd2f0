"""Loads libvulkan.so.1 and declares the entry points we call, each from its C prototype.

The C prototype is the source of truth: `PROTOTYPES` holds each entry point's C declaration
(as in vulkan_core.h), and the ctypes signature is derived from it by `_ctypes_signature`.
tests/vk/test_vk_layout.py compiles these declarations against the real header.

Core entry points are taken from the loader's exports; extension entry points (`EXTENSION_
PROTOTYPES`) only through vkGetInstanceProcAddr / vkGetDeviceProcAddr, and only after the caller
has checked that the extension is present: calling an absent one would crash.
"""

from __future__ import annotations

import ctypes
import os
import re

from hydroplane.vk.errors import LoaderMissing, VulkanError

# Core (Vulkan 1.0-1.3) entry points the loader exports.
PROTOTYPES = (
    "VkResult vkCreateInstance(const VkInstanceCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkInstance* pInstance)",
    "void vkDestroyInstance(VkInstance instance, const VkAllocationCallbacks* pAllocator)",
    "VkResult vkEnumerateInstanceVersion(uint32_t* pApiVersion)",
    "VkResult vkEnumerateInstanceLayerProperties(uint32_t* pPropertyCount, VkLayerProperties* pProperties)",
    "VkResult vkEnumerateInstanceExtensionProperties(const char* pLayerName, uint32_t* pPropertyCount, "
     "VkExtensionProperties* pProperties)",
    "PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char* pName)",
    "PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char* pName)",
    "VkResult vkEnumeratePhysicalDevices(VkInstance instance, uint32_t* pPhysicalDeviceCount, "
     "VkPhysicalDevice* pPhysicalDevices)",
    "void vkGetPhysicalDeviceProperties(VkPhysicalDevice physicalDevice, "
     "VkPhysicalDeviceProperties* pProperties)",
    "void vkGetPhysicalDeviceProperties2(VkPhysicalDevice physicalDevice, "
     "VkPhysicalDeviceProperties2* pProperties)",
    "void vkGetPhysicalDeviceFeatures2(VkPhysicalDevice physicalDevice, VkPhysicalDeviceFeatures2* pFeatures)",
    "void vkGetPhysicalDeviceQueueFamilyProperties(VkPhysicalDevice physicalDevice, "
     "uint32_t* pQueueFamilyPropertyCount, VkQueueFamilyProperties* pQueueFamilyProperties)",
    "void vkGetPhysicalDeviceMemoryProperties(VkPhysicalDevice physicalDevice, "
     "VkPhysicalDeviceMemoryProperties* pMemoryProperties)",
    "void vkGetPhysicalDeviceMemoryProperties2(VkPhysicalDevice physicalDevice, "
     "VkPhysicalDeviceMemoryProperties2* pMemoryProperties)",
    "VkResult vkEnumerateDeviceExtensionProperties(VkPhysicalDevice physicalDevice, "
     "const char* pLayerName, uint32_t* pPropertyCount, VkExtensionProperties* pProperties)",
    "VkResult vkCreateDevice(VkPhysicalDevice physicalDevice, const VkDeviceCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkDevice* pDevice)",
    "void vkDestroyDevice(VkDevice device, const VkAllocationCallbacks* pAllocator)",
    "void vkGetDeviceQueue(VkDevice device, uint32_t queueFamilyIndex, uint32_t queueIndex, VkQueue* pQueue)",
    "VkResult vkDeviceWaitIdle(VkDevice device)",
    "VkResult vkQueueSubmit(VkQueue queue, uint32_t submitCount, const VkSubmitInfo* pSubmits, VkFence fence)",
    "VkResult vkQueueWaitIdle(VkQueue queue)",
    "VkResult vkAllocateMemory(VkDevice device, const VkMemoryAllocateInfo* pAllocateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkDeviceMemory* pMemory)",
    "void vkFreeMemory(VkDevice device, VkDeviceMemory memory, const VkAllocationCallbacks* pAllocator)",
    "VkResult vkMapMemory(VkDevice device, VkDeviceMemory memory, VkDeviceSize offset, VkDeviceSize size, "
     "VkMemoryMapFlags flags, void** ppData)",
    "void vkUnmapMemory(VkDevice device, VkDeviceMemory memory)",
    "VkResult vkFlushMappedMemoryRanges(VkDevice device, uint32_t memoryRangeCount, "
     "const VkMappedMemoryRange* pMemoryRanges)",
    "VkResult vkInvalidateMappedMemoryRanges(VkDevice device, uint32_t memoryRangeCount, "
     "const VkMappedMemoryRange* pMemoryRanges)",
    "VkResult vkCreateBuffer(VkDevice device, const VkBufferCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkBuffer* pBuffer)",
    "void vkDestroyBuffer(VkDevice device, VkBuffer buffer, const VkAllocationCallbacks* pAllocator)",
    "void vkGetBufferMemoryRequirements(VkDevice device, VkBuffer buffer, "
     "VkMemoryRequirements* pMemoryRequirements)",
    "VkResult vkBindBufferMemory(VkDevice device, VkBuffer buffer, VkDeviceMemory memory, "
     "VkDeviceSize memoryOffset)",
    "VkDeviceAddress vkGetBufferDeviceAddress(VkDevice device, const VkBufferDeviceAddressInfo* pInfo)",
    "VkResult vkCreateShaderModule(VkDevice device, const VkShaderModuleCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkShaderModule* pShaderModule)",
    "void vkDestroyShaderModule(VkDevice device, VkShaderModule shaderModule, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkCreatePipelineCache(VkDevice device, const VkPipelineCacheCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkPipelineCache* pPipelineCache)",
    "void vkDestroyPipelineCache(VkDevice device, VkPipelineCache pipelineCache, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkGetPipelineCacheData(VkDevice device, VkPipelineCache pipelineCache, size_t* pDataSize, "
     "void* pData)",
    "VkResult vkCreateComputePipelines(VkDevice device, VkPipelineCache pipelineCache, "
     "uint32_t createInfoCount, const VkComputePipelineCreateInfo* pCreateInfos, "
     "const VkAllocationCallbacks* pAllocator, VkPipeline* pPipelines)",
    "void vkDestroyPipeline(VkDevice device, VkPipeline pipeline, const VkAllocationCallbacks* pAllocator)",
    "VkResult vkCreatePipelineLayout(VkDevice device, const VkPipelineLayoutCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkPipelineLayout* pPipelineLayout)",
    "void vkDestroyPipelineLayout(VkDevice device, VkPipelineLayout pipelineLayout, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkCreateDescriptorSetLayout(VkDevice device, "
     "const VkDescriptorSetLayoutCreateInfo* pCreateInfo, const VkAllocationCallbacks* pAllocator, "
     "VkDescriptorSetLayout* pSetLayout)",
    "void vkDestroyDescriptorSetLayout(VkDevice device, VkDescriptorSetLayout descriptorSetLayout, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkCreateDescriptorPool(VkDevice device, const VkDescriptorPoolCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkDescriptorPool* pDescriptorPool)",
    "void vkDestroyDescriptorPool(VkDevice device, VkDescriptorPool descriptorPool, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkAllocateDescriptorSets(VkDevice device, const VkDescriptorSetAllocateInfo* pAllocateInfo, "
     "VkDescriptorSet* pDescriptorSets)",
    "void vkUpdateDescriptorSets(VkDevice device, uint32_t descriptorWriteCount, "
     "const VkWriteDescriptorSet* pDescriptorWrites, uint32_t descriptorCopyCount, "
     "const VkCopyDescriptorSet* pDescriptorCopies)",
    "VkResult vkCreateCommandPool(VkDevice device, const VkCommandPoolCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkCommandPool* pCommandPool)",
    "void vkDestroyCommandPool(VkDevice device, VkCommandPool commandPool, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkAllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo* pAllocateInfo, "
     "VkCommandBuffer* pCommandBuffers)",
    "void vkFreeCommandBuffers(VkDevice device, VkCommandPool commandPool, uint32_t commandBufferCount, "
     "const VkCommandBuffer* pCommandBuffers)",
    "VkResult vkBeginCommandBuffer(VkCommandBuffer commandBuffer, const VkCommandBufferBeginInfo* pBeginInfo)",
    "VkResult vkEndCommandBuffer(VkCommandBuffer commandBuffer)",
    "void vkCmdBindPipeline(VkCommandBuffer commandBuffer, VkPipelineBindPoint pipelineBindPoint, "
     "VkPipeline pipeline)",
    "void vkCmdBindDescriptorSets(VkCommandBuffer commandBuffer, VkPipelineBindPoint pipelineBindPoint, "
     "VkPipelineLayout layout, uint32_t firstSet, uint32_t descriptorSetCount, "
     "const VkDescriptorSet* pDescriptorSets, uint32_t dynamicOffsetCount, const uint32_t* pDynamicOffsets)",
    "void vkCmdPushConstants(VkCommandBuffer commandBuffer, VkPipelineLayout layout, "
     "VkShaderStageFlags stageFlags, uint32_t offset, uint32_t size, const void* pValues)",
    "void vkCmdDispatch(VkCommandBuffer commandBuffer, uint32_t groupCountX, uint32_t groupCountY, "
     "uint32_t groupCountZ)",
    "void vkCmdCopyBuffer(VkCommandBuffer commandBuffer, VkBuffer srcBuffer, VkBuffer dstBuffer, "
     "uint32_t regionCount, const VkBufferCopy* pRegions)",
    "void vkCmdFillBuffer(VkCommandBuffer commandBuffer, VkBuffer dstBuffer, VkDeviceSize dstOffset, "
     "VkDeviceSize size, uint32_t data)",
    "void vkCmdUpdateBuffer(VkCommandBuffer commandBuffer, VkBuffer dstBuffer, VkDeviceSize dstOffset, "
     "VkDeviceSize dataSize, const void* pData)",
    "VkResult vkFreeDescriptorSets(VkDevice device, VkDescriptorPool descriptorPool, uint32_t descriptorSetCount, "
     "const VkDescriptorSet* pDescriptorSets)",
    "void vkCmdExecuteCommands(VkCommandBuffer commandBuffer, uint32_t commandBufferCount, "
     "const VkCommandBuffer* pCommandBuffers)",
    "void vkCmdPipelineBarrier(VkCommandBuffer commandBuffer, VkPipelineStageFlags srcStageMask, "
     "VkPipelineStageFlags dstStageMask, VkDependencyFlags dependencyFlags, uint32_t memoryBarrierCount, "
     "const VkMemoryBarrier* pMemoryBarriers, uint32_t bufferMemoryBarrierCount, "
     "const VkBufferMemoryBarrier* pBufferMemoryBarriers, uint32_t imageMemoryBarrierCount, "
     "const VkImageMemoryBarrier* pImageMemoryBarriers)",
    "void vkCmdResetQueryPool(VkCommandBuffer commandBuffer, VkQueryPool queryPool, uint32_t firstQuery, "
     "uint32_t queryCount)",
    "void vkCmdWriteTimestamp(VkCommandBuffer commandBuffer, VkPipelineStageFlagBits pipelineStage, "
     "VkQueryPool queryPool, uint32_t query)",
    "VkResult vkCreateFence(VkDevice device, const VkFenceCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkFence* pFence)",
    "void vkDestroyFence(VkDevice device, VkFence fence, const VkAllocationCallbacks* pAllocator)",
    "VkResult vkWaitForFences(VkDevice device, uint32_t fenceCount, const VkFence* pFences, "
     "VkBool32 waitAll, uint64_t timeout)",
    "VkResult vkResetFences(VkDevice device, uint32_t fenceCount, const VkFence* pFences)",
    "VkResult vkGetFenceStatus(VkDevice device, VkFence fence)",
    "VkResult vkCreateQueryPool(VkDevice device, const VkQueryPoolCreateInfo* pCreateInfo, "
     "const VkAllocationCallbacks* pAllocator, VkQueryPool* pQueryPool)",
    "void vkDestroyQueryPool(VkDevice device, VkQueryPool queryPool, const VkAllocationCallbacks* pAllocator)",
    "VkResult vkGetQueryPoolResults(VkDevice device, VkQueryPool queryPool, uint32_t firstQuery, "
     "uint32_t queryCount, size_t dataSize, void* pData, VkDeviceSize stride, VkQueryResultFlags flags)",
)

# Extension entry points, loaded through the Get*ProcAddr functions only when the extension is on.
EXTENSION_PROTOTYPES = (
    "VkResult vkCreateDebugUtilsMessengerEXT(VkInstance instance, "
     "const VkDebugUtilsMessengerCreateInfoEXT* pCreateInfo, const VkAllocationCallbacks* pAllocator, "
     "VkDebugUtilsMessengerEXT* pMessenger)",
    "void vkDestroyDebugUtilsMessengerEXT(VkInstance instance, VkDebugUtilsMessengerEXT messenger, "
     "const VkAllocationCallbacks* pAllocator)",
    "VkResult vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(VkPhysicalDevice physicalDevice, "
     "uint32_t* pPropertyCount, VkCooperativeMatrixPropertiesKHR* pProperties)",
    "VkResult vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(VkPhysicalDevice physicalDevice, "
     "uint32_t* pPropertyCount, VkCooperativeMatrixPropertiesNV* pProperties)",
    "VkResult vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(VkPhysicalDevice physicalDevice, "
     "uint32_t* pPropertyCount, VkCooperativeMatrixFlexibleDimensionsPropertiesNV* pProperties)",
    "VkResult vkGetPhysicalDeviceCooperativeMatrixProperties2EXT(VkPhysicalDevice physicalDevice, "
     "const VkPhysicalDeviceCooperativeMatrixInfo2EXT* pCooperativeMatrixInfo, uint32_t* pPropertyCount, "
     "VkCooperativeMatrixProperties2EXT* pProperties)",
    "VkResult vkGetPipelineExecutablePropertiesKHR(VkDevice device, "
     "const VkPipelineInfoKHR* pPipelineInfo, uint32_t* pExecutableCount, "
     "VkPipelineExecutablePropertiesKHR* pProperties)",
    "VkResult vkGetPipelineExecutableStatisticsKHR(VkDevice device, "
     "const VkPipelineExecutableInfoKHR* pExecutableInfo, uint32_t* pStatisticCount, "
     "VkPipelineExecutableStatisticKHR* pStatistics)",
)

# C scalar types of the prototypes -> ctypes; every pointer and handle is a c_void_p.
_SCALARS = {
    "void": None,
    "VkResult": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "VkBool32": ctypes.c_uint32,
    "VkDeviceSize": ctypes.c_uint64,
    "VkDeviceAddress": ctypes.c_uint64,
    "VkMemoryMapFlags": ctypes.c_uint32,
    "VkShaderStageFlags": ctypes.c_uint32,
    "VkPipelineStageFlags": ctypes.c_uint32,
    "VkPipelineStageFlagBits": ctypes.c_uint32,
    "VkDependencyFlags": ctypes.c_uint32,
    "VkQueryResultFlags": ctypes.c_uint32,
    "VkPipelineBindPoint": ctypes.c_int32,
    "PFN_vkVoidFunction": ctypes.c_void_p,
}
HANDLES = frozenset("""VkInstance VkPhysicalDevice VkDevice VkQueue VkCommandBuffer VkDeviceMemory VkBuffer
    VkShaderModule VkPipelineCache VkPipeline VkPipelineLayout VkDescriptorSetLayout VkDescriptorPool
    VkDescriptorSet VkCommandPool VkFence VkQueryPool VkDebugUtilsMessengerEXT""".split())

_PROTOTYPE = re.compile(r"^(\w+)\s+(vk\w+)\((.*)\)$")
_PARAMETER = re.compile(r"^(?:const\s+)?(\w+)\s*(\**)\s*(\w+)$")


def parse_prototype(text: str) -> tuple[str, str, list[tuple[str, str, str]]]:
    """Split a C prototype into (return type, name, [(type, stars, parameter name)])."""
    restype, name, params = _PROTOTYPE.match(text).groups()
    parsed = []
    for param in params.split(","):
        ptype, stars, pname = _PARAMETER.match(param.strip()).groups()
        parsed.append((ptype, stars, pname))
    return restype, name, parsed


def _ctype_of(ctype: str, stars: str):
    if stars or ctype in HANDLES:
        return ctypes.c_void_p
    if ctype not in _SCALARS:
        raise VulkanError(f"internal: no ctypes mapping for C type {ctype} in a prototype")
    return _SCALARS[ctype]


def _ctypes_signature(text: str):
    restype, name, params = parse_prototype(text)
    return name, _ctype_of(restype, ""), [_ctype_of(t, s) for t, s, _ in params]


SIGNATURES = {name: (res, args) for name, res, args in map(_ctypes_signature, PROTOTYPES + EXTENSION_PROTOTYPES)}
_library = None


def library() -> ctypes.CDLL:
    """The Vulkan loader (HYDROPLANE_VULKAN_LIBRARY overrides the name), loaded once."""
    global _library
    if _library is None:
        name = os.environ.get("HYDROPLANE_VULKAN_LIBRARY", "libvulkan.so.1")
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            raise LoaderMissing(f"cannot load the Vulkan loader {name}: {exc}") from exc
        for proto in PROTOTYPES:
            pname = _PROTOTYPE.match(proto).group(2)
            restype, argtypes = SIGNATURES[pname]
            func = getattr(lib, pname, None)
            if func is None:
                continue  # an old loader: calling it raises through `core()` below
            func.restype, func.argtypes = restype, argtypes
        _library = lib
    return _library


def core(name: str):
    """A core entry point exported by the loader, typed from its prototype."""
    func = getattr(library(), name, None)
    if func is None or name not in SIGNATURES:
        raise VulkanError(f"the Vulkan loader does not export {name}")
    return func


def recording(name: str):
    """A core entry point that only records into a command buffer (vkCmd*), typed from its prototype like `core`'s,
    called without releasing the GIL: such a call returns at once, and a queued call makes several (a debug
    messenger's Python callback still runs: ctypes takes the GIL it holds)."""
    if not name.startswith("vkCmd"):
        raise VulkanError(f"{name} is not a command-recording entry point")
    found = _recording.get(name)
    if found is None:
        typed = core(name)
        found = ctypes.PyDLL(library()._name)[name]
        found.restype, found.argtypes = typed.restype, typed.argtypes
        _recording[name] = found
    return found


_recording: dict = {}


def proc(name: str, address: int | None):
    """Wrap an address from vkGet*ProcAddr in the prototype of `name`; None when the driver lacks it."""
    if not address:
        return None
    restype, argtypes = SIGNATURES[name]
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)


def instance_proc(instance, name: str):
    """An instance-level extension entry point, or None (call it only if its extension is enabled)."""
    get = core("vkGetInstanceProcAddr")
    return proc(name, get(instance, name.encode()))


def device_proc(device, name: str):
    """A device-level extension entry point, or None (call it only if its extension is enabled)."""
    get = core("vkGetDeviceProcAddr")
    return proc(name, get(device, name.encode()))
