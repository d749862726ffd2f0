"""The exceptions of the Vulkan runtime: each says what failed and, for Vulkan calls, the VkResult name.

All derive from `hydroplane.errors.HydroplaneError`, the only thing of ours that vk imports.
"""

from __future__ import annotations

from hydroplane.errors import HydroplaneError


class VulkanError(HydroplaneError):
    """A Vulkan call failed; `result` is the VkResult name (or None), `call` the entry point."""

    def __init__(self, message: str, result: str | None = None, call: str | None = None):
        super().__init__(message)
        self.result = result
        self.call = call


class LoaderMissing(VulkanError):
    """libvulkan.so.1 (the Vulkan loader) could not be loaded."""


class UnsupportedFeature(VulkanError):
    """The device lacks an extension, feature bit or property that was asked for; `missing` names it."""

    def __init__(self, message: str, missing: tuple[str, ...] = ()):
        super().__init__(message)
        self.missing = tuple(missing)


class DeviceLost(VulkanError):
    """VK_ERROR_DEVICE_LOST: the device (or its driver) gave up; the Device cannot be used again."""


class DeviceTimeout(DeviceLost):
    """A dispatch did not finish within the device's timeout; the device is marked lost and its objects are
    left alone (a shader may still be running them) until the process ends."""


class OutOfDeviceMemory(VulkanError):
    """VK_ERROR_OUT_OF_DEVICE_MEMORY (or an allocation no heap can hold)."""


class OutOfHostMemory(VulkanError):
    """VK_ERROR_OUT_OF_HOST_MEMORY."""


class ValidationMessage(VulkanError):
    """The validation layer reported problems; `messages` lists them (severity, id, text)."""

    def __init__(self, messages):
        self.messages = list(messages)
        text = "\n".join(f"[{m.severity}] {m.message_id}: {m.text}" for m in self.messages)
        super().__init__(f"{len(self.messages)} Vulkan validation message(s):\n{text}")


class ClosedError(VulkanError):
    """An object was used after close() (or after its parent was closed)."""


class UsageError(VulkanError):
    """The runtime was called with arguments that cannot work (wrong size, dtype, binding ...)."""
