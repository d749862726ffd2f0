"""Queued execution on one Vulkan device: commands recorded into batches, each batch one submit with a fence.

    stream = Stream(device)
    seq = stream.record(lambda cmd: ..., label="matmul 4096^3", keep=(buf_a, buf_b))  # returns at once
    stream.after(seq, lambda: buf_tmp.close())   # a deferred free: runs once batch `seq` has finished
    stream.wait(seq)                              # flushes the batch if it is still being recorded, then waits

Batches are numbered: `stream.seq` is the number of the batch being recorded (the next one when none is),
`stream.completed` the highest number known finished. `submit_if_idle()` submits the recorded batch when fewer than
`max_in_flight` (2) submits are unfinished: when the GPU is idle, and also while it runs one batch, so that the next
batch is queued behind it and the GPU does not idle between the end of one batch and the host's next look at its fence
(the GPU never waits for a host still recording). Else the work waits for the next call, a full batch (`max_commands`)
or a wait. One exception: a batch of fewer than `idle_batch` commands is held while the last submit is under IDLE_GAP_S
old, so a loop of calls each shorter on the GPU than on the host makes a submit per `idle_batch` commands, not one per
call (each submit costs the host and the GPU some tens of microseconds on a discrete GPU), while a call after a pause
is submitted at once. Every batch starts with a full memory barrier (work of earlier submits, host writes -> this
batch); `barrier()` orders commands inside a batch (`batch_barrier`: from the compute stage's shader writes alone
where every command since the last barrier was a dispatch, else from compute and transfer writes; to every later
shader and transfer in any case). A batch keeps the objects it uses alive (`keep`) until its fence signals. A
failed batch raises DeviceLost at the wait, naming the calls it held. The stream is not thread-safe by itself: `lock`
is for its caller (the launch layer's runtime).

A dispatch recorded from a `DispatchRecorder` (`dispatch_recorder`) binds only what the batch's command buffer does
not have bound already: the same pipeline, descriptor sets and push constants as the batch's last dispatch are not
bound again (Vulkan keeps them bound across dispatches, barriers and copies in one command buffer); any other command
recorded through `record` forgets what is bound, so the next dispatch binds everything.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import DeviceLost, UsageError
from hydroplane.vk.handles import Owned
from hydroplane.vk.results import check
from hydroplane.vk.sync import Fence
from hydroplane.vk.transfer import barrier, barrier_arguments

# What one dispatch or copy may have written -> what the next may read or write (compute and transfer).
_WRITES = E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_WRITE_BIT | E.VK_ACCESS_HOST_WRITE_BIT
_READS = (E.VK_ACCESS_SHADER_READ_BIT | E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_READ_BIT
          | E.VK_ACCESS_TRANSFER_WRITE_BIT)
_STAGES = E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | E.VK_PIPELINE_STAGE_TRANSFER_BIT
SUCCESS, NOT_READY = 0, 1
IDLE_BATCH = 8  # commands a batch holds before a call submits it soon after the last submit (submit_if_idle)
MAX_IN_FLIGHT = 2  # unfinished submits: the batch the GPU runs and the one queued behind it
IDLE_GAP_S = 200e-6  # "soon": a call this long after the last submit submits whatever the batch holds
_clock = time.perf_counter  # the clock of IDLE_GAP_S (a test sets it)


def full_barrier(cmd) -> None:
    """Every earlier shader, transfer and host write made visible to later shaders and transfers."""
    barrier(cmd, _WRITES, _READS, _STAGES | E.VK_PIPELINE_STAGE_HOST_BIT, _STAGES)


_FULL_BARRIER = barrier_arguments(_WRITES, _READS, _STAGES | E.VK_PIPELINE_STAGE_HOST_BIT, _STAGES)
# Inside a batch (after its opening full barrier, which orders the host's writes): what the commands since the last
# barrier may have written -> every later shader and transfer. Where they were dispatches alone, the compute stage's
# shader writes only (docs/runtime.md, "Queued execution", barriers); the second scope stays whole, so a later
# command that no barrier precedes (it conflicts with nothing recorded since) is still ordered after everything
# before this one.
_DISPATCHES_BARRIER = barrier_arguments(E.VK_ACCESS_SHADER_WRITE_BIT, _READS, E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                        _STAGES)
_INNER_BARRIER = barrier_arguments(E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_WRITE_BIT, _READS, _STAGES,
                                   _STAGES)
NARROW_BARRIERS = True  # False: every barrier inside a batch as its opening one (model_profile.py --barriers)


def batch_barrier(cmd, dispatches_only: bool) -> None:
    """The barrier between commands inside one command buffer that began with `full_barrier`: `dispatches_only`
    when every command since its previous barrier (or its beginning) was a dispatch."""
    _ffi.core("vkCmdPipelineBarrier")(cmd, *_inner_arguments(dispatches_only))


def _inner_arguments(dispatches_only: bool) -> tuple:
    if not NARROW_BARRIERS:
        return _FULL_BARRIER
    return _DISPATCHES_BARRIER if dispatches_only else _INNER_BARRIER


def host_barrier(cmd) -> None:
    """Every earlier shader and transfer write made visible to the host (the end of a batch)."""
    barrier(cmd, E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_WRITE_BIT, E.VK_ACCESS_HOST_READ_BIT, _STAGES,
            E.VK_PIPELINE_STAGE_HOST_BIT)


class Batch:
    """One command buffer with its fence, what it keeps alive, what runs when it is done, and its calls' names."""

    __slots__ = ("seq", "commands", "fence", "keep", "done", "labels", "count", "submitted", "foreign", "cmd",
                 "bound", "dispatches_only")

    def __init__(self, seq: int, commands, fence: Fence):
        self.seq, self.commands, self.fence = seq, commands, fence
        self.cmd = ctypes.c_void_p(commands[0])  # the command buffer as a call argument, converted once
        self.bound: DispatchRecorder | None = None  # whose pipeline, sets and push constants are bound (None: unknown)
        self.keep: list = []
        self.done: list = []
        self.labels: list[str] = []
        self.count = 0
        self.submitted = False
        self.foreign = False  # a command buffer the stream does not own (a captured graph's)
        self.dispatches_only = True  # every command since the last barrier a dispatch (batch_barrier)


class Stream(Owned):
    """The device's one queue of recorded work (docs/runtime.md)."""

    def __init__(self, device, *, max_commands: int = 256, idle_batch: int = IDLE_BATCH,
                 max_in_flight: int = MAX_IN_FLIGHT):
        device._require_open("Device")
        self.device = device
        self.max_commands = max_commands
        self.idle_batch = idle_batch
        self.max_in_flight = max_in_flight
        self._submitted_at = float("-inf")  # _clock() at the last submit
        self.lock = threading.RLock()
        self.seq = 1
        self.completed = 0
        self._current: Batch | None = None
        self._in_flight: deque[Batch] = deque()
        self._spare: list[tuple] = []  # (command buffer array, fence) to reuse
        self._failure: DeviceLost | None = None
        self._unsubmitted: list[Batch] = []
        self._spare_fences: list[Fence] = []
        core = _ffi.core
        self._begin, self._end, self._submit = core("vkBeginCommandBuffer"), core("vkEndCommandBuffer"), \
            core("vkQueueSubmit")
        self._status, self._reset = core("vkGetFenceStatus"), core("vkResetFences")
        self._barrier = _ffi.recording("vkCmdPipelineBarrier")
        self._begin_info = S.VkCommandBufferBeginInfo(flags=E.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self._adopt(device)

    # recording -------------------------------------------------------------------------------------
    def _batch(self) -> Batch:
        if self._current is None:
            if self._spare:
                commands, fence = self._spare.pop()
            else:
                commands = (ctypes.c_void_p * 1)()
                alloc = S.VkCommandBufferAllocateInfo(commandPool=self.device.command_pool,
                                                      level=E.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
                self.device.call("vkAllocateCommandBuffers", ctypes.byref(alloc), commands)
                fence = Fence(self.device)
            check(self._begin(commands[0], ctypes.byref(self._begin_info)), "vkBeginCommandBuffer")
            full_barrier(commands[0])
            self._current = Batch(self.seq, commands, fence)
        return self._current

    def record(self, fn, label: str = "", keep=(), barrier: bool = False) -> int:
        """Record commands (`fn(cmd)`, or a DispatchRecorder's dispatch) into the batch being recorded; returns its
        number. `keep`: objects the commands use, held until the batch has finished; `barrier`: after the commands
        recorded so far (as `barrier()` first)."""
        if self._closed:
            self._require_open("Stream")
        if self._failure is not None:
            raise self._failure
        batch = self._current or self._batch()
        if barrier:
            self._barrier(batch.cmd, *_inner_arguments(batch.dispatches_only))
            batch.dispatches_only = True
        if type(fn) is DispatchRecorder:
            fn.into(batch)
        else:
            fn(batch.commands[0])
            batch.bound = None  # what fn bound is not known
            batch.dispatches_only = False  # nor what it wrote how
        if keep:
            batch.keep.extend(keep)
        if label:
            batch.labels.append(label)
        batch.count += 1
        if batch.count >= self.max_commands:
            self.flush()
        return batch.seq

    def barrier(self) -> None:
        """Order the commands recorded so far before those that follow (inside the current batch)."""
        batch = self._current or self._batch()
        self._barrier(batch.cmd, *_inner_arguments(batch.dispatches_only))
        batch.dispatches_only = True

    @property
    def recording(self) -> bool:
        return self._current is not None

    # submitting and waiting ------------------------------------------------------------------------
    def flush(self) -> None:
        """Submit the batch being recorded (if any)."""
        batch = self._current
        if batch is None:
            return
        self._current = None
        self.seq += 1
        cmd = batch.commands[0]
        host_barrier(cmd)
        device = self.device
        check(self._end(cmd), "vkEndCommandBuffer")
        result = self._reset(device.handle, 1, batch.fence._array)
        if result:
            device.fail(result, "vkResetFences")
        info = S.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=ctypes.addressof(batch.commands))
        result = self._submit(device.queue, 1, ctypes.byref(info), batch.fence.handle)
        if result:
            self._unsubmitted.append(batch)  # never ran: its objects stay until the stream is closed
            device.fail(result, "vkQueueSubmit")
        batch.submitted = True
        self._in_flight.append(batch)
        self._submitted_at = _clock()

    def in_flight(self) -> int:
        """Submitted batches still unfinished (finished ones are retired on the way)."""
        self.poll()
        return len(self._in_flight)

    def busy(self) -> bool:
        """Whether submitted work is still running."""
        return self.in_flight() > 0

    def submit_if_idle(self) -> None:
        """Submit the recorded batch now if fewer than `max_in_flight` submits are unfinished, unless the batch is
        short and the last submit recent (MAX_IN_FLIGHT, IDLE_BATCH, IDLE_GAP_S: the module docstring)."""
        batch = self._current
        if batch is None or (batch.count < self.idle_batch and _clock() - self._submitted_at < IDLE_GAP_S):
            return  # held either way: the fences are not asked
        if self.in_flight() >= self.max_in_flight:
            return
        self.flush()

    def poll(self) -> None:
        """Retire the batches that have finished, without waiting."""
        while self._in_flight:
            batch = self._in_flight[0]
            result = self._status(self.device.handle, batch.fence.handle)
            if result == NOT_READY:
                return
            if result != SUCCESS:
                self._fail(batch, result)
            self._retire()

    def wait(self, seq: int | None = None) -> None:
        """Wait until batch `seq` (None: everything recorded so far) has finished, submitting it first."""
        self._require_open("Stream")
        if self._failure is not None:
            raise self._failure
        if seq is None:
            seq = self.seq if self._current is not None else self.seq - 1
        if seq <= self.completed:
            return
        if self._current is not None and seq >= self._current.seq:
            self.flush()
        while self._in_flight and self._in_flight[0].seq <= seq:
            batch = self._in_flight[0]
            try:
                batch.fence.wait()
            except DeviceLost as err:
                self._fail(batch, err)
            self._retire()

    def after(self, seq: int, callback) -> None:
        """Run `callback()` once batch `seq` has finished (now, if it has)."""
        if seq <= self.completed:
            callback()
            return
        if self._current is not None and self._current.seq == seq:
            self._current.done.append(callback)
            return
        for batch in self._in_flight:
            if batch.seq == seq:
                batch.done.append(callback)
                return
        callback()  # not recorded nor in flight: finished

    def submit_recorded(self, commands, keep=(), labels=()) -> int:
        """Submit a command buffer recorded elsewhere (a captured graph: it begins with `full_barrier` and ends with
        `host_barrier`), after the batch being recorded; returns its batch number. The stream never reuses it."""
        self._require_open("Stream")
        if self._failure is not None:
            raise self._failure
        self.flush()
        fence = self._spare_fences.pop() if self._spare_fences else Fence(self.device)
        batch = Batch(self.seq, commands, fence)
        batch.keep.extend(keep)
        batch.labels.extend(labels)
        self.seq += 1
        result = self._reset(self.device.handle, 1, fence._array)
        if result:
            self.device.fail(result, "vkResetFences")
        info = S.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=ctypes.addressof(commands))
        result = self._submit(self.device.queue, 1, ctypes.byref(info), fence.handle)
        if result:
            self._unsubmitted.append(batch)
            self.device.fail(result, "vkQueueSubmit")
        batch.submitted, batch.foreign = True, True
        self._in_flight.append(batch)
        self._submitted_at = _clock()
        return batch.seq

    def _retire(self) -> None:
        batch = self._in_flight.popleft()
        self.completed = max(self.completed, batch.seq)
        callbacks, batch.done, batch.keep = batch.done, [], []
        if batch.foreign:
            self._spare_fences.append(batch.fence)
        else:
            self._spare.append((batch.commands, batch.fence))
        for callback in callbacks:
            callback()

    def _fail(self, batch: Batch, cause) -> None:
        names = ", ".join(batch.labels[:8]) + (f" and {len(batch.labels) - 8} more" if len(batch.labels) > 8 else "")
        failure = DeviceLost(f"{self.device.info.name}: a submission failed ({cause}); its calls: {names or '?'}",
                             result=getattr(cause, "result", None), call="vkQueueSubmit")
        self._failure = failure
        raise failure

    def _destroy(self) -> None:
        device = self.device
        if device.handle is None:
            return
        try:
            if self._current is not None:
                self.flush()
            while self._in_flight:
                try:
                    self._in_flight[0].fence.wait()
                except DeviceLost:
                    pass
                self._retire()
        except Exception:  # noqa: BLE001 - closing must release what it can
            pass
        spare, self._spare = self._spare, []
        for commands, fence in spare:
            device.release("vkFreeCommandBuffers", device.command_pool, 1, commands)
            fence.close()
        for fence in self._spare_fences:
            fence.close()
        self._spare_fences = []


class QueryPool(Owned):
    """`count` timestamp queries: written by commands in a stream, read once their batch has finished."""

    def __init__(self, device, count: int):
        if count < 1:
            raise UsageError(f"a query pool needs at least one query, not {count}")
        if device.info.timestamp_valid_bits == 0:
            raise UsageError(f"{device.info.name}'s compute queue has no timestamps")
        self.device, self.count = device, count
        info = S.VkQueryPoolCreateInfo(queryType=E.VK_QUERY_TYPE_TIMESTAMP, queryCount=count)
        handle = ctypes.c_void_p()
        device.call("vkCreateQueryPool", ctypes.byref(info), None, ctypes.byref(handle))
        self.handle = handle.value
        self._adopt(device)

    def reset(self, cmd) -> None:
        _ffi.core("vkCmdResetQueryPool")(cmd, self.handle, 0, self.count)

    def write(self, cmd, index: int, end: bool) -> None:
        stage = E.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT if end else E.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
        _ffi.core("vkCmdWriteTimestamp")(cmd, stage, self.handle, index)

    def nanoseconds(self) -> list[float]:
        """Nanoseconds between the queries 2i and 2i + 1, for each pair (their batch must have finished)."""
        data = (ctypes.c_uint64 * self.count)()
        self.device.call("vkGetQueryPoolResults", self.handle, 0, self.count, ctypes.sizeof(data), data, 8,
                         E.VK_QUERY_RESULT_64_BIT | E.VK_QUERY_RESULT_WAIT_BIT)
        bits = self.device.info.timestamp_valid_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        period = self.device.info.timestamp_period_ns
        return [((data[i + 1] - data[i]) & mask) * period for i in range(0, self.count - 1, 2)]

    def _destroy(self) -> None:
        if self.device.handle is not None and self.handle:
            self.device.release("vkDestroyQueryPool", self.handle, None)
        self.handle = None


class DescriptorSets(Owned):
    """Descriptor sets made once per (pipeline layout, bound buffer ranges) and reused by every later dispatch;
    `forget(buffer)` gives the sets that name a buffer back (call it when the buffer's last use has finished).

    Sets are allocated up to REFILL at a time per set layout and kept: a set given back by `forget` is written again
    for the next binding of its layout (vkUpdateDescriptorSets) rather than freed and allocated anew, so that a new
    binding (a loop's first call with a new weight) costs one descriptor write, not an allocation. Each pool's sets
    and descriptors are counted, so that an allocation asks no more than the pool has left; a pool with no room for
    one more set of a layout is left for a new one (as is one the driver finds full anyway)."""

    POOL_SETS = 1024
    POOL_STORAGE = 8  # storage-buffer descriptors a pool holds per set (uniform buffers: 1 per set)
    REFILL = 16  # sets of one layout allocated at once at most

    def __init__(self, device):
        self.device = device
        self._pools: list[int] = []
        self._free_in_pool: dict[int, list] = {}  # pool -> [sets, storage descriptors, uniform descriptors] left
        self._sets: dict = {}  # key -> (ctypes array of set handles, [(set layout, handle)])
        self._by_buffer: dict[int, set] = {}
        # keyed by the pipeline's serial, never by a handle: a driver may give a destroyed layout's handle to a new
        # layout, whose bindings and descriptor types differ
        self._spare: dict[tuple, list] = {}  # (serial, set) -> handles allocated and not in use
        self._shapes: dict = {}  # serial -> ((set layout, (serial, set)) for each set, {(set, binding): type})
        self._needs: dict = {}  # (serial, set) -> (storage, uniform) descriptors of one set
        self.pools_filled = 0  # pools left with sets to spare, out of descriptors for the driver
        self._adopt(device)

    def get(self, pipeline, bound: tuple) -> ctypes.Array:
        """The sets of `pipeline` binding `bound`: ((set, binding, buffer, offset, range), ...) for every binding."""
        key = (pipeline.serial, tuple((s, b, buf.handle, off, size) for s, b, buf, off, size in bound))
        found = self._sets.get(key)
        if found is not None:
            return found[0]
        shape = self._shapes.get(pipeline.serial)
        if shape is None:
            shape = self._shapes[pipeline.serial] = self._shape(pipeline)
        layouts, kinds = shape
        handles = (ctypes.c_void_p * max(1, len(layouts)))()
        owners = []
        for index, (layout, kept) in enumerate(layouts):
            spare = self._spare.get(kept)
            if not spare:
                spare = self._refill(layout, kept)
            handle = spare.pop()
            handles[index] = handle
            owners.append((kept, handle))
        count = len(bound)
        infos = (S.VkDescriptorBufferInfo * max(1, count))()
        writes = (S.VkWriteDescriptorSet * max(1, count))()
        base, step = ctypes.addressof(infos), ctypes.sizeof(S.VkDescriptorBufferInfo)
        for i, (s, b, buf, off, size) in enumerate(bound):
            info = infos[i]
            info.buffer, info.offset, info.range = buf.handle, off, size
            write = writes[i]
            write.sType, write.dstSet, write.dstBinding, write.descriptorCount = _WRITE_STYPE, handles[s], b, 1
            write.descriptorType, write.pBufferInfo = kinds[(s, b)], base + i * step
        _ffi.core("vkUpdateDescriptorSets")(self.device.handle, count, writes, 0, None)
        self._sets[key] = (handles, owners)
        for _, _, buf, _, _ in bound:
            self._by_buffer.setdefault(buf.handle, set()).add(key)
        return handles

    def _shape(self, pipeline) -> tuple:
        """A pipeline's set layouts (each with its key for spare sets) and descriptor types, each set layout's
        descriptor counts noted."""
        kinds = {(b.set, b.binding): _descriptor_type(b.kind) for b in pipeline.bindings}
        layouts = []
        for index, layout in enumerate(pipeline.set_layouts):
            types = [kind for (s, _), kind in kinds.items() if s == index]
            uniform = types.count(E.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER)
            self._needs[pipeline.serial, index] = (len(types) - uniform, uniform)
            layouts.append((layout, (pipeline.serial, index)))
        return tuple(layouts), kinds

    def _refill(self, layout, kept: tuple) -> list:
        """New sets of `layout` into its spare list (`kept`: the pipeline's serial and the set): as many as REFILL
        and the pool's room allow (a new pool where none has room for one)."""
        spare = self._spare.setdefault(kept, [])
        storage, uniform = self._needs[kept]
        single = False
        while True:
            pool = self._pool(storage, uniform)
            left = self._free_in_pool[pool]
            count = 1 if single else min(self.REFILL, left[0], left[1] // storage if storage else self.REFILL,
                                         left[2] // uniform if uniform else self.REFILL)
            layouts = (ctypes.c_void_p * count)(*([layout] * count))
            alloc = S.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=count,
                                                  pSetLayouts=ctypes.addressof(layouts))
            made = (ctypes.c_void_p * count)()
            result = _ffi.core("vkAllocateDescriptorSets")(self.device.handle, ctypes.byref(alloc), made)
            if result in _POOL_FULL:  # the driver's count is not ours (fragmentation): one set, then the next pool
                if count > 1:
                    single = True
                    continue
                if left[0] == self.POOL_SETS:  # not one set in a new pool: say so
                    self.device.fail(result, "vkAllocateDescriptorSets")
                left[0] = 0
                self.pools_filled += 1
                single = False
                continue
            if result:
                self.device.fail(result, "vkAllocateDescriptorSets")
            left[0] -= count
            left[1] -= count * storage
            left[2] -= count * uniform
            spare.extend(made)
            return spare

    def _pool(self, storage: int, uniform: int) -> int:
        """A pool with room for one set of these descriptor counts (a new one where none has)."""
        for pool, (sets, st, un) in self._free_in_pool.items():
            if sets > 0 and st >= storage and un >= uniform:
                return pool
        counts = (max(self.POOL_STORAGE * self.POOL_SETS, storage), max(self.POOL_SETS, uniform))
        sizes = (S.VkDescriptorPoolSize * 2)((E.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, counts[0]),
                                             (E.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, counts[1]))
        info = S.VkDescriptorPoolCreateInfo(maxSets=self.POOL_SETS, poolSizeCount=2, pPoolSizes=ctypes.addressof(sizes))
        handle = ctypes.c_void_p()
        self.device.call("vkCreateDescriptorPool", ctypes.byref(info), None, ctypes.byref(handle))
        self._pools.append(handle.value)
        self._free_in_pool[handle.value] = [self.POOL_SETS, *counts]
        return handle.value

    def forget(self, buffer) -> None:
        """Give back every set that binds `buffer` (its last use has finished): it is written anew for a later
        binding of its layout."""
        for key in self._by_buffer.pop(buffer.handle, ()):
            found = self._sets.pop(key, None)
            if found is None:
                continue
            for kept, handle in found[1]:
                self._spare[kept].append(handle)

    def _destroy(self) -> None:
        if self.device.handle is None:
            return
        for pool in self._pools:
            self.device.release("vkDestroyDescriptorPool", pool, None)
        self._pools, self._sets, self._by_buffer, self._spare = [], {}, {}, {}


_WRITE_STYPE = S.VkWriteDescriptorSet.STYPE
_POOL_FULL = (-1000069000, -12)  # VK_ERROR_OUT_OF_POOL_MEMORY, VK_ERROR_FRAGMENTED_POOL


def _descriptor_type(kind: str) -> int:
    return E.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER if kind == "uniform" else E.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER


class DispatchRecorder:
    """One dispatch of a pipeline with its descriptor sets, push constants (bytes, padded to 4) and grid, its call
    arguments converted to ctypes objects once (a planned launch records it many times). `recorder(cmd)` records
    every bind and the dispatch; a stream's `record` calls `into(batch)`, which binds only what differs from the
    batch's last dispatch (`Batch.bound`)."""

    __slots__ = ("pipeline", "sets", "push", "keep", "_handle", "_layout", "_count", "_data", "_size", "_grid")

    def __init__(self, pipeline, sets, push: bytes | None, grid):
        self.pipeline, self.sets, self.push = pipeline, sets, push or None
        entry = _ENTRY
        self._handle, self._layout = ctypes.c_void_p(pipeline.handle), ctypes.c_void_p(pipeline.layout)
        self._count = _argument(entry.bind_sets, 4, len(pipeline.set_layouts)) if pipeline.set_layouts else None
        self._data = ctypes.create_string_buffer(push, len(push)) if push else None
        self._size = _argument(entry.push_constants, 4, len(push)) if push else None
        self._grid = tuple(_argument(entry.dispatch, 1 + i, int(n)) for i, n in enumerate(grid))
        self.keep = (pipeline, sets, self._data)  # what the recorder uses stays alive with it

    def __call__(self, cmd) -> None:
        """Record every bind and the dispatch into command buffer `cmd`."""
        entry = _ENTRY
        entry.bind(cmd, entry.compute, self._handle)
        if self._count is not None:
            entry.bind_sets(cmd, entry.compute, self._layout, entry.zero, self._count, self.sets, entry.zero, None)
        if self._data is not None:
            entry.push_constants(cmd, self._layout, entry.stage, entry.zero, self._size, self._data)
        entry.dispatch(cmd, *self._grid)

    def into(self, batch: Batch) -> None:
        """Record the dispatch into a stream's batch, binding only what its last dispatch left different."""
        entry, cmd, last = _ENTRY, batch.cmd, batch.bound
        if last is not self:
            same_layout = last is not None and last.pipeline.layout == self.pipeline.layout
            if not same_layout or last.pipeline.handle != self.pipeline.handle:
                entry.bind(cmd, entry.compute, self._handle)
            if self._count is not None and not (same_layout and last.sets is self.sets):
                entry.bind_sets(cmd, entry.compute, self._layout, entry.zero, self._count, self.sets, entry.zero,
                                None)
            if self._data is not None and not (same_layout and last.push == self.push):
                entry.push_constants(cmd, self._layout, entry.stage, entry.zero, self._size, self._data)
            batch.bound = self
        entry.dispatch(cmd, *self._grid)


class SecondaryCommands(Owned):
    """Dispatches with the barriers between them, recorded once into a secondary command buffer that a batch (or a
    captured graph) runs with one vkCmdExecuteCommands: `recorder(cmd)`. A call of several launches then costs the
    host one Vulkan call instead of up to four a launch (binds, push constants, dispatch, barrier). Begun for
    simultaneous use: batches in flight may run it at once. `steps`: (DispatchRecorder, barrier before it) pairs; the
    barriers are `batch_barrier`s after dispatches alone. Whoever queues it keeps it alive until the batches that run
    it have finished (a batch's `keep`); closing it frees the command buffer. After it the primary command buffer's
    bound pipeline, sets and push constants are undefined (Vulkan): the stream binds everything again."""

    def __init__(self, device, steps):
        device._require_open("Device")
        self.device = device
        self._array = (ctypes.c_void_p * 1)()
        alloc = S.VkCommandBufferAllocateInfo(commandPool=device.command_pool,
                                              level=E.VK_COMMAND_BUFFER_LEVEL_SECONDARY, commandBufferCount=1)
        device.call("vkAllocateCommandBuffers", ctypes.byref(alloc), self._array)
        self._adopt(device)
        cmd = self._array[0]
        inheritance = S.VkCommandBufferInheritanceInfo()
        begin = S.VkCommandBufferBeginInfo(flags=E.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
                                           pInheritanceInfo=ctypes.addressof(inheritance))
        check(_ffi.core("vkBeginCommandBuffer")(cmd, ctypes.byref(begin)), "vkBeginCommandBuffer")
        for recorder, barrier_before in steps:
            if barrier_before:
                batch_barrier(cmd, True)
            recorder(cmd)
        check(_ffi.core("vkEndCommandBuffer")(cmd), "vkEndCommandBuffer")
        self._execute = _ffi.recording("vkCmdExecuteCommands")
        self._one = ctypes.c_uint32(1)

    def __call__(self, cmd) -> None:
        """Record its execution into primary command buffer `cmd`."""
        self._execute(cmd, self._one, self._array)

    def _destroy(self) -> None:
        self.device.release("vkFreeCommandBuffers", self.device.command_pool, 1, self._array)


def _argument(func, index: int, value):
    """`value` as the ctypes object of a function's argument `index` (converted once, passed many times)."""
    return func.argtypes[index](value)


class _Entries:
    """The dispatch's entry points and constant arguments, made on first use (the loader is loaded then)."""

    def __getattr__(self, name: str):
        entry = _ffi.recording
        self.bind, self.bind_sets = entry("vkCmdBindPipeline"), entry("vkCmdBindDescriptorSets")
        self.push_constants, self.dispatch = entry("vkCmdPushConstants"), entry("vkCmdDispatch")
        self.compute = _argument(self.bind, 1, E.VK_PIPELINE_BIND_POINT_COMPUTE)
        self.stage = _argument(self.push_constants, 2, E.VK_SHADER_STAGE_COMPUTE_BIT)
        self.zero = _argument(self.bind_sets, 3, 0)
        return self.__dict__[name]


_ENTRY = _Entries()


def dispatch_recorder(pipeline, sets, push, grid) -> DispatchRecorder:
    """A DispatchRecorder of these arguments: `record(cmd)` records `record_dispatch` of them."""
    return DispatchRecorder(pipeline, sets, push, grid)


def record_dispatch(cmd, pipeline, sets, push, grid) -> None:
    """Bind `pipeline` and its descriptor `sets`, push the constants (bytes, padded to 4) and dispatch `grid`."""
    core = _ffi.core
    core("vkCmdBindPipeline")(cmd, E.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
    if pipeline.set_layouts:
        core("vkCmdBindDescriptorSets")(cmd, E.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0,
                                        len(pipeline.set_layouts), sets, 0, None)
    if push:
        core("vkCmdPushConstants")(cmd, pipeline.layout, E.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push), push)
    core("vkCmdDispatch")(cmd, *grid)


def record_copy(cmd, src, dst, src_offset: int, dst_offset: int, nbytes: int) -> None:
    region = S.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)
    _ffi.core("vkCmdCopyBuffer")(cmd, src.handle, dst.handle, 1, ctypes.byref(region))


UPDATE_MAX_BYTES = 65536  # vkCmdUpdateBuffer's limit on dataSize


def record_update(cmd, dst, offset: int, data: bytes) -> None:
    """Write `data` into `dst` at `offset`, the bytes held in the command buffer itself (no staging buffer): at
    most UPDATE_MAX_BYTES, its length and `offset` multiples of 4 (vkCmdUpdateBuffer's rules)."""
    if len(data) > UPDATE_MAX_BYTES or len(data) % 4 or offset % 4 or not data:
        raise UsageError(f"vkCmdUpdateBuffer takes 4 to {UPDATE_MAX_BYTES} bytes, a multiple of 4, at an offset "
                         f"that is a multiple of 4: not {len(data)} bytes at offset {offset}")
    _ffi.core("vkCmdUpdateBuffer")(cmd, dst.handle, offset, len(data), data)


def record_fill(cmd, dst, offset: int, nbytes: int, word: int) -> None:
    """Fill `nbytes` (a multiple of 4) at `offset` with a 32-bit pattern."""
    _ffi.core("vkCmdFillBuffer")(cmd, dst.handle, offset, nbytes, word & 0xFFFFFFFF)
