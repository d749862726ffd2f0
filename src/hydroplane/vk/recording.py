"""Record a dispatch once, submit it many times: descriptor set, command buffer, fence, timestamps.

`Recording(pipeline, grid, buffers, push)` binds buffers to the pipeline's descriptor bindings
(`{binding: buf}` for set 0 or `{(set, binding): buf}`), records bind + push + dispatch (with
barriers so that successive runs see each other's writes, and the host sees the results) into one
command buffer, and keeps a fence. `run()` = submit + wait; `submit()`/`wait()` split it. With
`timestamps=True` the dispatch is bracketed by timestamp queries and `device_time_ns()` reads them.
"""

from __future__ import annotations

import ctypes

import numpy as np

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import UnsupportedFeature, UsageError
from hydroplane.vk.handles import Owned
from hydroplane.vk.pipeline import DESCRIPTOR_KINDS
from hydroplane.vk.results import check
from hydroplane.vk.sync import Fence
from hydroplane.vk.transfer import barrier


def normalise_grid(grid) -> tuple[int, int, int]:
    """(x, y, z) workgroup counts from an int or a 1-3 tuple; each must be >= 1."""
    dims = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    if not 1 <= len(dims) <= 3:
        raise UsageError(f"grid must have 1 to 3 dimensions, got {grid!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if any(d < 1 for d in dims):
        raise UsageError(f"grid {dims}: every dimension must be at least 1")
    return dims


def push_bytes(push) -> bytes:
    """Push-constant bytes from None, bytes or a NumPy array/scalar/structured record."""
    if push is None:
        return b""
    if isinstance(push, (bytes, bytearray, memoryview)):
        return bytes(push)
    arr = np.asarray(push)
    if arr.dtype.hasobject:
        raise UsageError(f"push constants must be bytes or a NumPy array, got {type(push).__name__}")
    return np.ascontiguousarray(arr).tobytes()


def _key(item) -> tuple[int, int]:
    if isinstance(item, tuple):
        return int(item[0]), int(item[1])
    return 0, int(item)


class Recording(Owned):
    """One recorded dispatch of a pipeline over a grid, with its buffers bound."""

    def __init__(self, pipeline, grid, buffers: dict, push=None, *, timestamps: bool = False):
        pipeline._require_open("Pipeline")
        self.device = device = pipeline.device
        self.pipeline, self.grid = pipeline, normalise_grid(grid)
        self.buffers = {_key(k): b for k, b in dict(buffers).items()}
        self.push = push_bytes(push)
        self._check_arguments()
        self.pool = self.query_pool = None
        self._commands = (ctypes.c_void_p * 1)()
        self._adopt(pipeline)
        for buf in self.buffers.values():
            buf._children.add(self)  # closing a buffer first closes what uses it
        try:
            self.timestamps = timestamps and self._timestamps_available()
            if timestamps and not self.timestamps:
                raise UnsupportedFeature(f"{device.info.name}'s compute queue has no timestamps",
                                         missing=("timestampValidBits",))
            self.fence = Fence(device)
            self._allocate_descriptors()
            self._record()
        except BaseException:
            self.close()
            raise
        self._in_flight = False

    def _check_arguments(self) -> None:
        pipeline = self.pipeline
        wanted = {(b.set, b.binding) for b in pipeline.bindings}
        given = set(self.buffers)
        if wanted != given:
            raise UsageError(f"pipeline uses bindings {sorted(wanted)}; got buffers for {sorted(given)} "
                             f"(missing {sorted(wanted - given)}, extra {sorted(given - wanted)})")
        for key, buf in self.buffers.items():
            buf._require_open(f"buffer for binding {key}")
            if buf.device is not self.device:
                raise UsageError(f"buffer for binding {key} belongs to another Device")
        if len(self.push) != pipeline.push_constant_size:
            raise UsageError(f"pipeline has {pipeline.push_constant_size} bytes of push constants; "
                             f"got {len(self.push)} bytes")

    def _timestamps_available(self) -> bool:
        return self.device.info.timestamp_valid_bits > 0

    def _allocate_descriptors(self) -> None:
        device, pipeline = self.device, self.pipeline
        self.sets = []
        if not pipeline.set_layouts:
            return
        counts: dict[int, int] = {}
        for b in pipeline.bindings:
            kind = DESCRIPTOR_KINDS[b.kind]
            counts[kind] = counts.get(kind, 0) + 1
        sizes = (S.VkDescriptorPoolSize * len(counts))(*counts.items())
        info = S.VkDescriptorPoolCreateInfo(maxSets=len(pipeline.set_layouts), poolSizeCount=len(counts),
                                            pPoolSizes=ctypes.addressof(sizes))
        handle = ctypes.c_void_p()
        device.call("vkCreateDescriptorPool", ctypes.byref(info), None, ctypes.byref(handle))
        self.pool = handle.value
        layouts = (ctypes.c_void_p * len(pipeline.set_layouts))(*pipeline.set_layouts)
        alloc = S.VkDescriptorSetAllocateInfo(descriptorPool=self.pool, descriptorSetCount=len(layouts),
                                              pSetLayouts=ctypes.addressof(layouts))
        self._sets = (ctypes.c_void_p * len(layouts))()
        device.call("vkAllocateDescriptorSets", ctypes.byref(alloc), self._sets)
        infos = (S.VkDescriptorBufferInfo * len(pipeline.bindings))()
        writes = (S.VkWriteDescriptorSet * len(pipeline.bindings))()
        for i, b in enumerate(pipeline.bindings):
            buf = self.buffers[(b.set, b.binding)]
            infos[i].buffer, infos[i].offset, infos[i].range = buf.handle, 0, buf.size
            writes[i] = S.VkWriteDescriptorSet(dstSet=self._sets[b.set], dstBinding=b.binding, descriptorCount=1,
                                               descriptorType=DESCRIPTOR_KINDS[b.kind],
                                               pBufferInfo=ctypes.addressof(infos[i]))
        device.call("vkUpdateDescriptorSets", len(writes), writes, 0, None)

    def _record(self) -> None:
        device, pipeline = self.device, self.pipeline
        alloc = S.VkCommandBufferAllocateInfo(commandPool=device.command_pool,
                                              level=E.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
        device.call("vkAllocateCommandBuffers", ctypes.byref(alloc), self._commands)
        cmd = self._commands[0]
        if self.timestamps:
            info = S.VkQueryPoolCreateInfo(queryType=E.VK_QUERY_TYPE_TIMESTAMP, queryCount=2)
            handle = ctypes.c_void_p()
            device.call("vkCreateQueryPool", ctypes.byref(info), None, ctypes.byref(handle))
            self.query_pool = handle.value
        core = _ffi.core
        check(core("vkBeginCommandBuffer")(cmd, ctypes.byref(S.VkCommandBufferBeginInfo())), "vkBeginCommandBuffer")
        # Earlier work (host writes, a previous run, copies) must be visible to this dispatch.
        barrier(cmd, E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_WRITE_BIT | E.VK_ACCESS_HOST_WRITE_BIT,
                E.VK_ACCESS_SHADER_READ_BIT | E.VK_ACCESS_SHADER_WRITE_BIT,
                E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | E.VK_PIPELINE_STAGE_TRANSFER_BIT
                | E.VK_PIPELINE_STAGE_HOST_BIT,
                E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT)
        if self.timestamps:
            core("vkCmdResetQueryPool")(cmd, self.query_pool, 0, 2)
            core("vkCmdWriteTimestamp")(cmd, E.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 0)
        core("vkCmdBindPipeline")(cmd, E.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        if pipeline.set_layouts:
            core("vkCmdBindDescriptorSets")(cmd, E.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0,
                                            len(pipeline.set_layouts), self._sets, 0, None)
        if self.push:
            self._push_data = ctypes.create_string_buffer(self.push, len(self.push))
            core("vkCmdPushConstants")(cmd, pipeline.layout, E.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(self.push),
                                       self._push_data)
        core("vkCmdDispatch")(cmd, *self.grid)
        if self.timestamps:
            core("vkCmdWriteTimestamp")(cmd, E.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query_pool, 1)
        barrier(cmd, E.VK_ACCESS_SHADER_WRITE_BIT,
                E.VK_ACCESS_HOST_READ_BIT | E.VK_ACCESS_TRANSFER_READ_BIT | E.VK_ACCESS_SHADER_READ_BIT,
                E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                E.VK_PIPELINE_STAGE_HOST_BIT | E.VK_PIPELINE_STAGE_TRANSFER_BIT
                | E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT)
        check(core("vkEndCommandBuffer")(cmd), "vkEndCommandBuffer")
        # The submit path is hot (see benchmarks/vk_dispatch_overhead.py): bind what it calls once.
        self._reset_fences, self._queue_submit = core("vkResetFences"), core("vkQueueSubmit")
        self._submit_info = S.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=ctypes.addressof(self._commands))
        self._submit_ref = ctypes.byref(self._submit_info)

    def submit(self) -> None:
        """Queue the recorded dispatch (waits first if the previous submission is still running)."""
        if self._closed:
            self._require_open("Recording")
        if self._in_flight:
            self.wait()
        device, fence = self.device, self.fence
        if device._lost:
            device.call("vkResetFences")  # raises DeviceLost with the usual message
        result = self._reset_fences(device.handle, 1, fence._array)
        if result:
            device.fail(result, "vkResetFences")
        result = self._queue_submit(device.queue, 1, self._submit_ref, fence.handle)
        if result:
            device.fail(result, "vkQueueSubmit")
        self._in_flight = True

    def wait(self) -> None:
        """Wait for the last submission."""
        if self._in_flight:
            self._in_flight = False
            self.fence.wait()

    def run(self) -> None:
        """Submit and wait."""
        self.submit()
        self._in_flight = False
        self.fence.wait()

    def device_time_ns(self) -> float:
        """GPU time of the last run between the two timestamps, in nanoseconds."""
        if not self.timestamps:
            raise UsageError("this Recording was made without timestamps=True")
        self.wait()
        data = (ctypes.c_uint64 * 2)()
        self.device.call("vkGetQueryPoolResults", self.query_pool, 0, 2, ctypes.sizeof(data), data, 8,
                         E.VK_QUERY_RESULT_64_BIT | E.VK_QUERY_RESULT_WAIT_BIT)
        bits = self.device.info.timestamp_valid_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        ticks = (data[1] - data[0]) & mask
        return ticks * self.device.info.timestamp_period_ns

    def _destroy(self) -> None:
        device = self.device
        if device.handle is None:
            return
        if getattr(self, "_in_flight", False):
            try:
                self.fence.wait()
            except Exception:  # noqa: BLE001 - a lost device must still release its objects
                pass
        if self._commands[0]:
            device.release("vkFreeCommandBuffers", device.command_pool, 1, self._commands)
            self._commands[0] = None
        if self.pool:
            device.release("vkDestroyDescriptorPool", self.pool, None)
        if self.query_pool:
            device.release("vkDestroyQueryPool", self.query_pool, None)
        fence = getattr(self, "fence", None)
        if fence is not None:
            fence.close()
        self.pool = self.query_pool = None
