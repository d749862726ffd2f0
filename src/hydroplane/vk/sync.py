"""Queue submission and fences: submit a command buffer, wait with a timeout, turn failures into exceptions."""

from __future__ import annotations

import ctypes

from hydroplane.vk import _ffi
from hydroplane.vk import structs as S
from hydroplane.vk.errors import DeviceTimeout
from hydroplane.vk.handles import Owned
from hydroplane.vk.results import TIMEOUT

DEFAULT_TIMEOUT_NS = 60 * 1_000_000_000
CPU_TIMEOUT_NS = 600 * 1_000_000_000  # a CPU device's (lavapipe's): it compiles a pipeline at its first dispatch,
# on cores it shares with everything else (a head-dim-256 attention's took over 60 s on a loaded 2-core machine)


class Fence(Owned):
    """A VkFence owned by a device; `wait()` raises DeviceLost on VK_ERROR_DEVICE_LOST, VulkanError on timeout."""

    def __init__(self, device, signaled: bool = False):
        info = S.VkFenceCreateInfo(flags=1 if signaled else 0)
        handle = ctypes.c_void_p()
        device.call("vkCreateFence", ctypes.byref(info), None, ctypes.byref(handle))
        self.device, self.handle = device, handle.value
        self._array = (ctypes.c_void_p * 1)(self.handle)
        self._wait_for_fences = _ffi.core("vkWaitForFences")
        self._adopt(device)

    def wait(self, timeout_ns: int | None = None) -> None:
        """Wait for the fence: `timeout_ns`, else the device's timeout (`Device.set_timeout`, default 60 s; 600 s
        on a CPU device)."""
        device = self.device
        if timeout_ns is None:
            timeout_ns = getattr(device, "timeout_ns", DEFAULT_TIMEOUT_NS)
        if getattr(device, "hung", False):
            raise DeviceTimeout(f"{device.info.name} hung earlier (a dispatch never finished); create a new Device",
                                result="VK_TIMEOUT", call="vkWaitForFences")
        result = self._wait_for_fences(device.handle, 1, self._array, 1, timeout_ns)
        if result < 0:
            device.fail(result, "vkWaitForFences")
        if result == TIMEOUT:
            device.mark_hung()
            raise DeviceTimeout(f"a dispatch did not finish within {timeout_ns / 1e9:g} s (an endless loop, or a "
                                "longer kernel: raise the timeout); the device is marked lost and its objects are "
                                "left to the process's end", result="VK_TIMEOUT", call="vkWaitForFences")

    def reset(self) -> None:
        self.device.call("vkResetFences", 1, self._array)

    def _destroy(self) -> None:
        if self.device.handle is not None:
            self.device.release("vkDestroyFence", self.handle, None)
        self.handle = None


def submit(device, command_buffer_array, fence_handle) -> None:
    """vkQueueSubmit of one command buffer (a ctypes array of one handle) signalling a fence."""
    info = S.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=ctypes.addressof(command_buffer_array))
    device.queue_call("vkQueueSubmit", 1, ctypes.byref(info), fence_handle)
