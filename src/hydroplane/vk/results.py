"""VkResult codes by name, and `check()`, which turns a failing VkResult into the right exception."""

from __future__ import annotations

from hydroplane.vk.errors import (
    DeviceLost,
    OutOfDeviceMemory,
    OutOfHostMemory,
    VulkanError,
)

# Every VkResult value of the Vulkan 1.4 headers (aliases are left out: one name per value).
RESULT_NAMES: dict[int, str] = {
    0: "VK_SUCCESS",
    1: "VK_NOT_READY",
    2: "VK_TIMEOUT",
    3: "VK_EVENT_SET",
    4: "VK_EVENT_RESET",
    5: "VK_INCOMPLETE",
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -5: "VK_ERROR_MEMORY_MAP_FAILED",
    -6: "VK_ERROR_LAYER_NOT_PRESENT",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -8: "VK_ERROR_FEATURE_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
    -10: "VK_ERROR_TOO_MANY_OBJECTS",
    -11: "VK_ERROR_FORMAT_NOT_SUPPORTED",
    -12: "VK_ERROR_FRAGMENTED_POOL",
    -13: "VK_ERROR_UNKNOWN",
    -1000011001: "VK_ERROR_VALIDATION_FAILED",
    -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
    -1000072003: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
    -1000257000: "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS",
    -1000161000: "VK_ERROR_FRAGMENTATION",
    1000297000: "VK_PIPELINE_COMPILE_REQUIRED",
    -1000174001: "VK_ERROR_NOT_PERMITTED",
    -1000000000: "VK_ERROR_SURFACE_LOST_KHR",
    -1000000001: "VK_ERROR_NATIVE_WINDOW_IN_USE_KHR",
    1000001003: "VK_SUBOPTIMAL_KHR",
    -1000001004: "VK_ERROR_OUT_OF_DATE_KHR",
    -1000003001: "VK_ERROR_INCOMPATIBLE_DISPLAY_KHR",
    -1000012000: "VK_ERROR_INVALID_SHADER_NV",
    -1000023000: "VK_ERROR_IMAGE_USAGE_NOT_SUPPORTED_KHR",
    -1000023001: "VK_ERROR_VIDEO_PICTURE_LAYOUT_NOT_SUPPORTED_KHR",
    -1000023002: "VK_ERROR_VIDEO_PROFILE_OPERATION_NOT_SUPPORTED_KHR",
    -1000023003: "VK_ERROR_VIDEO_PROFILE_FORMAT_NOT_SUPPORTED_KHR",
    -1000023004: "VK_ERROR_VIDEO_PROFILE_CODEC_NOT_SUPPORTED_KHR",
    -1000023005: "VK_ERROR_VIDEO_STD_VERSION_NOT_SUPPORTED_KHR",
    -1000158000: "VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT",
    -1000208000: "VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT",
    -1000255000: "VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT",
    1000268000: "VK_THREAD_IDLE_KHR",
    1000268001: "VK_THREAD_DONE_KHR",
    1000268002: "VK_OPERATION_DEFERRED_KHR",
    1000268003: "VK_OPERATION_NOT_DEFERRED_KHR",
    -1000299000: "VK_ERROR_INVALID_VIDEO_STD_PARAMETERS_KHR",
    -1000338000: "VK_ERROR_COMPRESSION_EXHAUSTED_EXT",
    1000482000: "VK_INCOMPATIBLE_SHADER_BINARY_EXT",
    1000483000: "VK_PIPELINE_BINARY_MISSING_KHR",
    -1000483000: "VK_ERROR_NOT_ENOUGH_SPACE_KHR",
}

SUCCESS = 0
NOT_READY = 1
TIMEOUT = 2
INCOMPLETE = 5

# Results that get their own exception class; every other negative result is a VulkanError.
_ERROR_CLASSES = {
    -1: OutOfHostMemory,
    -2: OutOfDeviceMemory,
    -4: DeviceLost,
}


def result_name(code: int) -> str:
    """The VkResult name of `code` (an unknown value reads VK_RESULT_<value>)."""
    return RESULT_NAMES.get(code, f"VK_RESULT_{code}")


def check(code: int, call: str = "Vulkan call") -> int:
    """Return `code` when it is not an error (>= 0); raise the matching VulkanError otherwise."""
    if code >= 0:
        return code
    name = result_name(code)
    cls = _ERROR_CLASSES.get(code, VulkanError)
    raise cls(f"{call} failed with {name}", result=name, call=call)
