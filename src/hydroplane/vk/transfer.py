"""Copies between buffers in one-off command buffers (memory.py stages device-local buffers through them)."""

from __future__ import annotations

import ctypes

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.results import check
from hydroplane.vk.sync import Fence, submit


def one_time_submit(device, record) -> None:
    """Allocate a command buffer, let `record(cmd)` fill it, submit, wait on a fence, free it."""
    alloc = S.VkCommandBufferAllocateInfo(commandPool=device.command_pool, level=E.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          commandBufferCount=1)
    handles = (ctypes.c_void_p * 1)()
    device.call("vkAllocateCommandBuffers", ctypes.byref(alloc), handles)
    try:
        begin = S.VkCommandBufferBeginInfo(flags=E.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        check(_ffi.core("vkBeginCommandBuffer")(handles[0], ctypes.byref(begin)), "vkBeginCommandBuffer")
        record(handles[0])
        check(_ffi.core("vkEndCommandBuffer")(handles[0]), "vkEndCommandBuffer")
        with Fence(device) as fence:
            submit(device, handles, fence.handle)
            fence.wait()
    finally:
        device.release("vkFreeCommandBuffers", device.command_pool, 1, handles)


def barrier(cmd, src_access: int, dst_access: int, src_stage: int, dst_stage: int) -> None:
    """A global memory barrier (its arguments made once per accesses and stages: a queued call records one or more)."""
    _ffi.core("vkCmdPipelineBarrier")(cmd, *barrier_arguments(src_access, dst_access, src_stage, dst_stage))


def barrier_arguments(src_access: int, dst_access: int, src_stage: int, dst_stage: int) -> tuple:
    """vkCmdPipelineBarrier's arguments after the command buffer for one global memory barrier, as ctypes objects
    made once (read-only: the same tuple serves every call)."""
    key = (src_access, dst_access, src_stage, dst_stage)
    found = _BARRIERS.get(key)
    if found is None:
        struct = S.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)
        zero, one = ctypes.c_uint32(0), ctypes.c_uint32(1)
        found = _BARRIERS[key] = (ctypes.c_uint32(src_stage), ctypes.c_uint32(dst_stage), zero, one,
                                  ctypes.pointer(struct), zero, None, zero, None)
    return found


_BARRIERS: dict = {}  # (accesses, stages) -> vkCmdPipelineBarrier's arguments after the command buffer


def copy_buffer(device, src, dst, src_offset: int, dst_offset: int, nbytes: int) -> None:
    """Copy bytes between two buffers on the device, with barriers against shader and host access."""

    def record(cmd):
        barrier(cmd, E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_HOST_WRITE_BIT,
                E.VK_ACCESS_TRANSFER_READ_BIT | E.VK_ACCESS_TRANSFER_WRITE_BIT,
                E.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | E.VK_PIPELINE_STAGE_HOST_BIT, E.VK_PIPELINE_STAGE_TRANSFER_BIT)
        region = S.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)
        _ffi.core("vkCmdCopyBuffer")(cmd, src.handle, dst.handle, 1, ctypes.byref(region))
        barrier(cmd, E.VK_ACCESS_TRANSFER_WRITE_BIT,
                E.VK_ACCESS_SHADER_READ_BIT | E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_HOST_READ_BIT,
                E.VK_PIPELINE_STAGE_TRANSFER_BIT, E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | E.VK_PIPELINE_STAGE_HOST_BIT)

    one_time_submit(device, record)
