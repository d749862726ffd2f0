"""The device runtime: ONE registry of devices, each with one executor, one kernel cache and its queue.

    rt = runtime(None)              # the process's default device (set_device(...) or the best one)
    buf = rt.alloc(4096)            # a buffer of that device
    rt.launch(kernel, grid, bound, push, "add")   # queued: returns at once
    rt.download(buf, 0, 4096)       # waits for the work that writes buf, then reads it
    synchronize()                   # waits for every device's queued work

Every way of naming a device goes through `canonical_device`: "ref" (the reference executor), a Vulkan device
number (int or its text), or None (the default device: the one `set_device` chose, else the first Vulkan device
with cooperative matrices, else the first Vulkan device, else "ref"; fixed once chosen). Each device is opened
once (one VkDevice per GPU, without robust buffer access: the library's kernels keep their accesses inside the
buffers their argument checks sized; users' kernels get robust access per pipeline, docs/runtime.md).

On a Vulkan device work is queued (`hydroplane.vk.Stream`): a launch records a dispatch and returns; barriers go
only between dispatches whose byte ranges conflict (read-after-write, write-after-read, write-after-write); a
batch is submitted at once when the GPU is idle, else with the next call, a full batch or a wait. Buffers stay
alive until the last batch that uses them has finished: `free` defers. `HYDROPLANE_LAUNCH_BLOCKING=1` waits after
every launch. The reference executor runs each launch at once (its queue is trivially in order).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import heapq
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.lang import disk_cache
from hydroplane.launch.executors import (
    CheckedKernel,
    Executor,
    LaunchError,
    VulkanExecutor,
    device_index,
    get_executor,
)
from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S

DeviceKey = str | int
POOL_BYTES = 1 << 30  # freed buffers a Vulkan device keeps for reuse (HYDROPLANE_POOL_BYTES overrides)
# Host-visible staging buffers a Vulkan device keeps for its uploads and reads: size classes of powers of two from
# STAGING_MIN_BYTES to STAGING_MAX_BYTES, STAGING_KEPT_BYTES in all; a larger transfer stages through a buffer of its
# own (made and destroyed), and a larger write into mapped memory that queued work uses waits for that work
STAGING_MIN_BYTES, STAGING_MAX_BYTES, STAGING_KEPT_BYTES = 4 << 10, 4 << 20, 32 << 20


class DeviceError(LaunchError):
    """A device that cannot be opened or used as asked (no Vulkan loader, no such device, a lost device)."""


class CaptureError(LaunchError):
    """A call that cannot be captured for replay (a host read or write, a NumPy operand), or a bad replay."""


@dataclass(frozen=True)
class Bound:
    """One buffer binding of a launch: (set, binding), the buffer, its byte range, and whether the kernel reads /
    writes it (from the compiled module's access qualifiers)."""

    set: int
    binding: int
    buffer: Any
    offset: int
    nbytes: int
    reads: bool = True
    writes: bool = True


def words_key(words, entry: str = "main", spec=None) -> tuple:
    """A kernel cache key from what a kernel depends on: its words' digest, entry point and specialization."""
    data = np.ascontiguousarray(np.asarray(words, dtype=np.uint32)).tobytes() if not isinstance(words, bytes) \
        else words
    return hashlib.sha256(data).hexdigest(), entry, tuple(sorted((spec or {}).items()))


class PlannedLaunch:
    """A launch ready to queue: its recorded commands (Vulkan) or its arguments (the reference executor), the byte
    ranges it reads and writes, and what it keeps alive. `read_keys`, `write_keys`: _access_keys of the ranges, made
    once; `self_conflict`: whether a second run must wait for the first (it writes some bytes); `seq`: the batch it
    was last queued into (the runtime's: that batch already keeps its objects and numbers its buffers)."""

    __slots__ = ("record", "reads", "writes", "keep", "label", "reference", "read_keys", "write_keys", "self_conflict",
                 "seq", "_after", "__weakref__")

    def __init__(self, record, reads: list, writes: list, keep: tuple, label: str, reference: tuple | None,
                 read_keys: tuple = (), write_keys: tuple = ()):
        self.record, self.reads, self.writes, self.keep, self.label = record, reads, writes, keep, label
        self.reference, self.read_keys, self.write_keys = reference, read_keys, write_keys
        self.self_conflict = any(start < end for _, (start, end) in write_keys)
        self.seq = 0
        self._after: tuple | None = None  # (a weak reference to a launch, whether this one conflicts with it)

    def conflicts_after(self, other: PlannedLaunch) -> bool:
        """Whether this launch must wait for `other` (their byte ranges conflict); the answer for the last `other`
        asked is kept (a loop of calls asks the same pair again and again)."""
        if other is self:
            return self.self_conflict
        after = self._after
        if after is not None and after[0]() is other:
            return after[1]
        pending: dict = {}
        _add_accesses(pending, other.read_keys, other.write_keys)
        conflict = _conflicts(pending, self.read_keys, self.write_keys)
        self._after = (weakref.ref(other), conflict)
        return conflict

    def __repr__(self) -> str:
        return f"PlannedLaunch({self.label!r}, reads={self.reads}, writes={self.writes})"


BUNDLE_LAUNCHES = True  # a planned call of several launches queued as one secondary command buffer (bundled)


def bundled(rt, planned: tuple | None) -> tuple | None:
    """A call's planned launches (`planned_of`) as one PlannedLaunch that runs them from a secondary command buffer
    (vk.SecondaryCommands, recorded once with the barriers their byte ranges need between them), where there are
    several and the runtime queues into a Vulkan stream; else `planned` as it is. The bundle's byte ranges are the
    union of theirs (a write covers a read of the same range), so the hazard check before and after it is that of
    one launch touching all of them: never fewer barriers than the launches alone would get. The caller holds the
    runtime's lock (recording into the device's command pool)."""
    if planned is None or len(planned) < 2 or not BUNDLE_LAUNCHES or rt.stream is None or rt.closed or \
            any(type(p.record) is not vk.DispatchRecorder for p in planned):
        return planned
    steps, pending = [], {}
    for launch in planned:
        barrier = bool(pending) and _conflicts(pending, launch.read_keys, launch.write_keys)
        if barrier:
            pending.clear()
        _add_accesses(pending, launch.read_keys, launch.write_keys)
        steps.append((launch.record, barrier))
    secondary = vk.SecondaryCommands(rt.executor.device, steps)
    writes = list(dict.fromkeys(w for launch in planned for w in launch.writes))
    written = set(writes)
    reads = [r for r in dict.fromkeys(r for launch in planned for r in launch.reads) if r not in written]
    keep = tuple(x for launch in planned for x in launch.keep) + (secondary,)
    label = " + ".join(launch.label for launch in planned if launch.label)
    return (PlannedLaunch(secondary, reads, writes, keep, label, None, _access_keys(reads), _access_keys(writes)),)


def _access_keys(ranges) -> tuple:
    """((id(buffer), (start, end)), ...) of byte ranges [(buffer, start, size), ...]: the hazard check's keys."""
    return tuple((id(buf), (start, start + n)) for buf, start, n in ranges)


def canonical_device(device) -> DeviceKey:
    """"ref", a Vulkan device number, or (None) the default device."""
    if device is None:
        return default_device()
    if isinstance(device, str) and device == "ref":
        return "ref"
    try:
        return device_index(device)
    except LaunchError as err:
        raise DeviceError(str(err)) from None


_lock = threading.RLock()
_registry: dict[DeviceKey, DeviceRuntime] = {}
_default: list[DeviceKey] = []


def set_device(device) -> DeviceKey:
    """Choose the process's default device ("ref" or N) before the first call that uses it; returns it."""
    key = canonical_device("ref" if device == "ref" else device) if device is not None else None
    if key is None:
        raise DeviceError("set_device takes 'ref' or a Vulkan device number, not None")
    with _lock:
        if _default and _default[0] != key:
            raise DeviceError(f"the default device is already {_default[0]!r} (chosen by an earlier call); "
                              "set_device must come before the first call that uses the default")
        if not _default:
            runtime(key)  # opens it now: a device that cannot be opened is refused here
            _default.append(key)
    return key


def default_device() -> DeviceKey:
    """The default device, chosen on first use (HYDROPLANE_DEVICE, else the best Vulkan device, else "ref")."""
    with _lock:
        if not _default:
            chosen = os.environ.get("HYDROPLANE_DEVICE")
            _default.append(canonical_device(chosen) if chosen else _best_device())
        return _default[0]


def _best_device() -> DeviceKey:
    try:
        infos = vk.devices()
    except HydroplaneError:
        return "ref"
    usable = [d for d in infos if d.compute_queue_family >= 0]
    if not usable:
        return "ref"
    best = min(usable, key=lambda d: (not d.cooperative_matrix_khr, d.index))
    return best.index


def runtime(device=None) -> DeviceRuntime:
    """The runtime of a device, opened on first use."""
    key = canonical_device(device)
    found = _registry.get(key)
    if found is not None and not found.closed:
        return found
    with _lock:
        found = _registry.get(key)
        if found is None or found.closed:
            found = _registry[key] = DeviceRuntime(key)
        return found


def shared_executor(device=None):
    """The executor of a device's runtime (None: the default device's)."""
    return runtime(device).executor


def runtime_of(executor) -> DeviceRuntime:
    """The runtime around an executor: the registry's for a registered device, else a private one made now."""
    found = getattr(executor, "_hp_runtime", None)
    if found is None or found.closed:
        key = "ref" if not isinstance(executor, VulkanExecutor) else executor.info.index
        found = DeviceRuntime(key, executor)
    return found


def synchronize(device=None) -> None:
    """Wait for the queued work of `device` (None: of every open device); a device fault raises here."""
    targets = [runtime(device)] if device is not None else list(_registry.values())
    for rt in targets:
        rt.synchronize()


def open_devices() -> list[DeviceRuntime]:
    return [rt for rt in _registry.values() if not rt.closed]


def _at_exit() -> None:
    for key in list(_registry):
        rt = _registry.pop(key)
        try:
            rt.synchronize()
        except HydroplaneError as err:
            print(f"hydroplane: queued work on {rt.name} failed at exit: {err}", file=sys.stderr)
        try:
            rt.close()
        except HydroplaneError:
            pass


atexit.register(_at_exit)


class DeviceRuntime:
    """One device: its executor, kernel cache, queue and the state of its buffers (who wrote them last)."""

    def __init__(self, key: DeviceKey, executor: Executor | None = None):
        """`executor`: wrap an executor made elsewhere (`executors.get_executor`) instead of opening the device;
        such a runtime is private to its executor (`runtime_of`) and closing it leaves the executor open."""
        self.key = key
        self.owns_executor = executor is None
        self.lock = threading.RLock()
        self.kernels: dict = {}
        self.blocking = os.environ.get("HYDROPLANE_LAUNCH_BLOCKING", "") not in ("", "0")
        self.closed = False
        self.capture: Any = None  # the Graph being captured, if any
        self.graphs: weakref.WeakSet = weakref.WeakSet()  # the graphs not yet closed (they keep their buffers)
        # buffer id -> {(start, end): writes}: the accesses recorded since the last barrier
        self._pending: dict[int, dict[tuple[int, int], bool]] = {}
        self._pending_only: PlannedLaunch | None = None  # when set: the accesses pending are this launch's alone
        # (`_pending` is then not kept up to date: `_pending_accesses` makes it so)
        self._timing = False  # while timing, the runs go out in whole batches (no gap between two timestamps)
        self._pool: dict[int, list] = {}  # freed Vulkan buffers by size, for the next alloc of that size: a heap
        # by creation order, so that a step of calls repeated gets the same buffers in the same places (its kept
        # launches find their plans) whatever order the last step freed them in
        self._made = 0  # Vulkan buffers made (their creation order)
        self._pooled_bytes = 0
        self._freed: dict[int, Any] = {}  # the pooled buffers by id, in the order freed (the oldest evicted first)
        self.pool_bytes = int(os.environ.get("HYDROPLANE_POOL_BYTES", POOL_BYTES))
        self._staging_kept: dict[tuple[int, bool], list] = {}  # (size, readback) -> staging buffers to reuse
        self._staging_bytes = 0
        self.executor: Any
        if executor is not None:
            self.executor = executor
        elif key == "ref":
            self.executor = get_executor("ref")  # a ReferenceExecutor (the `ref` layer loads now, not before)
        else:
            try:
                self.executor = VulkanExecutor(int(key), robust=False, pipeline_cache=self._load_pipeline_cache)
            except vk.LoaderMissing as err:
                raise DeviceError(f"device {key}: {err}") from None
        if isinstance(self.executor, VulkanExecutor):
            device = self.executor.device
            self.stream: vk.Stream | None = vk.Stream(device)
            self.sets: vk.DescriptorSets | None = vk.DescriptorSets(device)
            self.storage_alignment = max(4, self.executor.info.min_storage_buffer_offset_alignment)
        else:
            self.stream = self.sets = None
            self.storage_alignment = 4
        self.executor._hp_runtime = self  # runtime_of(executor) finds it

    # names -------------------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "ref" if self.key == "ref" else self.executor.name

    @property
    def is_reference(self) -> bool:
        return self.key == "ref"

    @property
    def target(self):
        return self.executor.target

    # kernels -----------------------------------------------------------------------------------------------------
    def kernel(self, key, make: Callable[[], CheckedKernel]) -> CheckedKernel:
        """The device's kernel for `key` (what the module, entry and specialization are), made once."""
        found = self.kernels.get(key)
        if found is None:
            with self.lock:
                found = self.kernels.get(key)
                if found is None:
                    found = self.kernels[key] = make()
        return found

    # buffers -----------------------------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        """A buffer of at least `nbytes` (4 at least): a freed buffer of that size when the pool holds one (a
        Vulkan allocation costs far more than a call), else a new one. Out of device memory: waits once for the
        deferred frees and empties the pool, then tries again (a second failure raises)."""
        nbytes = max(4, int(nbytes))
        with self.lock:
            pooled = self._pool.get(nbytes)
            while pooled:
                buf = heapq.heappop(pooled)[2]
                del self._freed[id(buf)]
                self._pooled_bytes -= nbytes
                if buf.closed:  # its array and the buffer were one garbage cycle: the collector finalized both,
                    continue    # the array's finalizer pooling the buffer its own then closed
                buf._hp_released = False  # a new owner: no graph's release of the old one applies to it
                buf._hp_zero_after_fault = False  # nor the old owner's zero_after_fault
                return buf
            try:
                buf = self.executor.buffer(nbytes)
            except vk.OutOfDeviceMemory:
                self.synchronize()
                self.trim()
                buf = self.executor.buffer(nbytes)
            buf._hp_write = buf._hp_access = 0
            self._made += 1
            buf._hp_made = self._made
            return buf

    def zero_after_fault(self, buf) -> None:
        """Zero the whole buffer `buf` (one `alloc` made) whenever a dispatch that binds it stops midway by raising:
        on the reference executor a diagnostic, the time limit or Ctrl-C inside an eager launch, a planned one or a
        graph's replay, which would leave the counts of the workgroups that had arrived (the fused attention
        combine's counters, which every finished call leaves at zero). A Vulkan dispatch does not stop midway: a
        fault there is a lost device, after which nothing of the runtime runs again. Until `alloc` hands the
        buffer to another owner."""
        buf._hp_zero_after_fault = True

    def trim(self) -> None:
        """Destroy the pooled buffers (their memory goes back to the driver), once the queued work is done (a
        pooled buffer may still be in use by work recorded before its free)."""
        with self.lock:
            self.synchronize()
            freed, self._pool, self._freed, self._pooled_bytes = self._freed, {}, {}, 0
            for buf in freed.values():
                self._destroy(buf)
            staging, self._staging_kept, self._staging_bytes = self._staging_kept, {}, 0
            for bufs in staging.values():
                for buf in bufs:
                    buf.close()

    def free(self, buf) -> None:
        """Free a buffer (at once on the reference executor). On a queue the buffer goes back to the pool at once,
        for the next alloc of its size, stream-ordered as torch's caching allocator: work recorded later runs
        after the work that still uses it (a batch starts with a full barrier; within a batch the byte ranges of
        the two uses conflict, so a barrier goes between them). A buffer the pool has no room for is destroyed
        once the work that uses it has finished."""
        with self.lock:
            # (the length first: iterating even an empty WeakSet costs about a microsecond a free)
            if self.graphs and any(not g.closed and g.uses(buf) for g in self.graphs):
                buf._hp_released = True  # a graph replays it: freed with the graph
                return
            if self.stream is None:
                self.executor.release(buf)
                return
            if self.stream.closed or self.closed or buf.closed:
                return
            buf._hp_released = False  # freed now: a graph that closes later must not free it again
            size = buf.nbytes
            if size > self.pool_bytes:
                self._destroy_after(buf)
                return
            while self._pooled_bytes + size > self.pool_bytes:  # the buffers freed longest ago make room
                old = self._freed.pop(next(iter(self._freed)))
                self._pooled_bytes -= old.nbytes
                heap = self._pool[old.nbytes]
                heap.remove((getattr(old, "_hp_made", 0), id(old), old))
                heapq.heapify(heap)
                self._destroy_after(old)
            heapq.heappush(self._pool.setdefault(size, []), (getattr(buf, "_hp_made", 0), id(buf), buf))
            self._freed[id(buf)] = buf
            self._pooled_bytes += size

    def _destroy_after(self, buf) -> None:
        """Destroy `buf` once the work recorded so far that uses it has finished."""
        self.stream.after(getattr(buf, "_hp_access", 0), lambda: None if buf.closed else self._destroy(buf))

    def _destroy(self, buf) -> None:
        if self.sets is not None and not self.sets.closed:
            self.sets.forget(buf)
        buf.close()

    def upload(self, buf, offset: int, data: np.ndarray) -> None:
        """Copy bytes into `buf` at `offset`, the caller free to reuse `data` at once: straight into mapped memory
        that no unfinished work uses; else queued (no wait: on mapped memory in use, the write runs after the work
        that uses the range): up to 64 KiB, a multiple of 4 bytes at an offset that is one, inside the command
        buffer (vkCmdUpdateBuffer: nothing allocated, however many such writes are in flight); else through a
        staging buffer kept for reuse (allocated when every kept one of its size class is still in flight)."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.nbytes == 0:
            return
        with self.lock:
            self._refuse_in_capture("a host write into a device array (write(), a NumPy operand such as a bias, or "
                                    "a call's first use at its shapes, which writes its plan's buffers: call it "
                                    "once before capturing)")
            if self.stream is None:
                buf.data[offset: offset + raw.nbytes] = raw
                return
            if buf.mapped and (raw.nbytes > STAGING_MAX_BYTES or self._finished(buf._hp_access)):
                self.stream.wait(buf._hp_access)
                buf.write(raw, offset)
                return
            if raw.nbytes <= vk.UPDATE_MAX_BYTES and raw.nbytes % 4 == 0 and offset % 4 == 0:
                data = raw.tobytes()  # held in the command buffer: no staging buffer, whatever is in flight
                self._transfer(lambda cmd: vk.record_update(cmd, buf, offset, data), reads=(),
                               writes=((buf, offset, raw.nbytes),), keep=(), label="upload")
                return
            staging = self._staging(raw.nbytes, readback=False)
            staging.write(raw)
            self._transfer(lambda cmd: vk.record_copy(cmd, staging, buf, 0, offset, raw.nbytes),
                           reads=(), writes=((buf, offset, raw.nbytes),), keep=(staging,), label="upload")
            self.stream.after(buf._hp_write, lambda: self._unstage(staging))

    def download(self, buf, offset: int, nbytes: int) -> np.ndarray:
        """A new array of the bytes of `buf` at [offset, offset + nbytes), after the work that writes them has
        finished: read straight from mapped memory; else copied, in the queue after that work, into a host-cached
        staging buffer kept for reuse, then read (one wait, no allocation)."""
        with self.lock:
            self._refuse_in_capture("a host read of a device array")
            if self.stream is None:
                return buf.data[offset: offset + nbytes].copy()
            if buf.mapped or nbytes <= 0:
                self.stream.wait(getattr(buf, "_hp_write", 0))
                return buf.read(np.uint8, (nbytes,), offset)
            return self.read_queued(buf, offset, nbytes)()  # the copy queued after the writes, waited for at once

    def read_queued(self, buf, offset: int, nbytes: int) -> Callable[[], np.ndarray]:
        """Queue a read of the bytes of `buf` at [offset, offset + nbytes) as the work recorded so far leaves them;
        calling the result waits for that work only (not for work queued after this call) and returns a new array.
        So a host can queue more work on a buffer before reading what earlier work wrote in it (a model's decode
        steps and the ids they sampled)."""
        with self.lock:
            self._refuse_in_capture("a host read of a device array")
            if self.stream is None:
                data = buf.data[offset: offset + nbytes].copy()
                return lambda: data
            if nbytes <= 0:
                return lambda: np.zeros(0, np.uint8)
            staging = self._staging(nbytes, readback=True)
            self._transfer(lambda cmd: vk.record_copy(cmd, buf, staging, offset, 0, nbytes),
                           reads=((buf, offset, nbytes),), writes=(), keep=(staging,), label="read")
            seq, taken = buf._hp_access, []

        def result() -> np.ndarray:
            with self.lock:
                if taken:
                    raise LaunchError("a queued read's result was taken already")
                taken.append(True)
                self.stream.wait(seq)
                try:
                    return staging.read(np.uint8, (nbytes,))
                finally:
                    self._unstage(staging)

        return result

    def _finished(self, seq: int) -> bool:
        """Whether batch `seq` has finished (retiring the finished batches first)."""
        stream = self.stream
        assert stream is not None
        if seq > stream.completed:
            stream.poll()
        return seq <= stream.completed

    def _staging(self, nbytes: int, readback: bool):
        """A host-visible buffer of at least `nbytes` (host-cached for `readback`): a kept one of its size class
        when there is one (after retiring the batches that have finished, whose staging buffers go back to the kept
        ones), else a new one."""
        size = max(STAGING_MIN_BYTES, 1 << (nbytes - 1).bit_length()) if nbytes <= STAGING_MAX_BYTES else nbytes
        kept = self._staging_kept.get((size, readback))
        if not kept and self.stream is not None and size <= STAGING_MAX_BYTES:
            self.stream.poll()  # a finished batch not yet retired may hold one: its retirement keeps it
            kept = self._staging_kept.get((size, readback))
        if kept:
            self._staging_bytes -= size
            return kept.pop()
        return vk.Buffer(self.executor.device, size, host_visible=True, readback=readback)

    def _unstage(self, staging) -> None:
        """Keep a staging buffer whose copy has finished for the next transfer of its class, else close it."""
        size = staging.nbytes
        if staging.closed:
            return
        if self.closed or size > STAGING_MAX_BYTES or self._staging_bytes + size > STAGING_KEPT_BYTES:
            staging.close()
            return
        self._staging_kept.setdefault((size, staging.readback), []).append(staging)
        self._staging_bytes += size

    def copy(self, src, src_offset: int, dst, dst_offset: int, nbytes: int) -> None:
        """A queued device-to-device copy of bytes."""
        if nbytes <= 0:
            return
        with self.lock:
            if self.stream is None:
                def run() -> None:
                    dst.data[dst_offset: dst_offset + nbytes] = src.data[src_offset: src_offset + nbytes]
                self._host_step(run, (src, dst))
                return
            self._transfer(lambda cmd: vk.record_copy(cmd, src, dst, src_offset, dst_offset, nbytes),
                           reads=((src, src_offset, nbytes),), writes=((dst, dst_offset, nbytes),), keep=(src, dst),
                           label="copy")

    def fill(self, buf, offset: int, nbytes: int, word: int) -> None:
        """A queued fill of `nbytes` (a multiple of 4) with a 32-bit pattern."""
        with self.lock:
            if self.stream is None:
                def run() -> None:
                    pattern = np.array([word & 0xFFFFFFFF], np.uint32).view(np.uint8)
                    buf.data[offset: offset + nbytes] = np.resize(pattern, nbytes)
                self._host_step(run, (buf,))
                return
            self._transfer(lambda cmd: vk.record_fill(cmd, buf, offset, nbytes, word),
                           reads=(), writes=((buf, offset, nbytes),), keep=(buf,), label="fill")

    def _host_step(self, run: Callable[[], None], buffers: tuple) -> None:
        """A copy or fill on the reference executor: run now, or, inside a capture, recorded in order with the
        captured launches and run by each replay."""
        graph = self.capture
        if graph is None:
            run()
            return
        graph.steps.append(run)
        graph.keep.extend(buffers)
        for buf in buffers:
            graph.buffers[id(buf)] = buf

    # launches ----------------------------------------------------------------------------------------------------
    def launch(self, kernel: CheckedKernel, grid: tuple[int, int, int], bound: Sequence[Bound], push: bytes | None,
               label: str = "") -> None:
        """Queue one dispatch of `kernel` (already checked against its arguments by the caller)."""
        self.launch_planned(self.plan_launch(kernel, grid, bound, push, label))

    def plan_launch(self, kernel: CheckedKernel, grid: tuple[int, int, int], bound: Sequence[Bound],
                    push: bytes | None, label: str = "") -> PlannedLaunch:
        """What queueing this launch needs, made once: its descriptor sets, its recorded commands, its byte
        ranges (a PreparedLaunch keeps it until one of its arguments is rebound)."""
        bound = tuple(bound)
        # each byte range once (vector views alias their buffer's binding); a range written needs no read entry
        writes = list(dict.fromkeys((b.buffer, b.offset, b.nbytes) for b in bound if b.writes))
        written = set(writes)
        reads = [r for r in dict.fromkeys((b.buffer, b.offset, b.nbytes) for b in bound if b.reads)
                 if r not in written]
        keep = tuple(dict.fromkeys(b.buffer for b in bound))
        if self.stream is None:
            return PlannedLaunch(None, reads, writes, keep, label, (kernel, grid, bound, push))
        pipeline = kernel.native
        with self.lock:
            exact = getattr(kernel, "robustness", None) is not None
            sets = self.sets.get(pipeline, tuple((b.set, b.binding, b.buffer, b.offset, _range(b, exact))
                                                 for b in bound)) if pipeline.set_layouts else None
        data = None if not push else push + bytes(-len(push) % 4)
        record = vk.dispatch_recorder(pipeline, sets, data, grid)
        return PlannedLaunch(record, reads, writes, keep + (pipeline, record), label, None, _access_keys(reads),
                             _access_keys(writes))

    def launch_kept(self, by_place: dict, places: tuple, planned: tuple) -> None:
        """Queue again a call's planned launches kept for its arrays' places (`by_place[places]`, `planned`); several
        are bundled first, at the places' second call (places met once never pay for it). The caller holds the lock."""
        if len(planned) > 1:
            planned = by_place[places] = bundled(self, planned)
        for launch in planned:
            self.launch_planned(launch)

    def launch_planned(self, planned: PlannedLaunch) -> None:
        """Queue a planned launch (its buffers must still be alive: the PreparedLaunch holding it checks)."""
        stream = self.stream
        if stream is None:
            self._launch_reference(*planned.reference)
            return
        with self.lock:
            if self.capture is not None:
                self._record(planned.record, planned.reads, planned.writes, planned.keep, planned.label,
                             planned.read_keys, planned.write_keys)
                return
            # as _record, with what a planned launch knows: while the accesses pending are one launch's alone (a
            # chain of dependent launches: each after a barrier), the hazard check is a question of two launches,
            # whose answer the launch keeps; and in the batch that holds it already nothing more to keep or number
            only, barrier = self._pending_only, False
            if not stream.recording:  # a new batch starts with a full barrier: nothing pending (a closed stream
                self._pending.clear()  # records nothing: its record raises)
                self._pending_only = planned
            elif only is not None:
                if planned.conflicts_after(only):
                    barrier = True
                    self._pending_only = planned
                else:
                    _add_accesses(self._pending_accesses(), planned.read_keys, planned.write_keys)
            else:
                pending = self._pending
                if not pending:
                    self._pending_only = planned
                elif _conflicts(pending, planned.read_keys, planned.write_keys):
                    pending.clear()
                    barrier = True
                    self._pending_only = planned
                else:
                    _add_accesses(pending, planned.read_keys, planned.write_keys)
            if planned.seq == stream.seq:  # recorded into the batch being recorded (not recording: seq is the next's)
                stream.record(planned.record, planned.label, (), barrier)
            else:
                seq = planned.seq = stream.record(planned.record, planned.label, planned.keep, barrier)
                for buf, _, _ in planned.reads:
                    buf._hp_access = seq
                for buf, _, _ in planned.writes:
                    buf._hp_access = buf._hp_write = seq
            if self.blocking:
                stream.wait(planned.seq)
            elif not self._timing:
                stream.submit_if_idle()

    def _launch_reference(self, kernel, grid, bound, push) -> None:
        buffers = {(b.set, b.binding): b.buffer if b.offset == 0 and b.nbytes == b.buffer.nbytes else
                   ref_window(b.buffer, b.offset, b.nbytes) for b in bound}
        if self.capture is not None:  # recorded, run by replay()
            self.capture.steps.append((kernel, grid, buffers, push))
            self.capture.keep.extend(b.buffer for b in bound)
            for b in bound:
                self.capture.buffers[id(b.buffer)] = b.buffer
            return
        try:
            self.executor.dispatch(kernel, grid, buffers, push)
        except BaseException:
            _zero_faulted(b.buffer for b in bound)
            raise

    def _transfer(self, fn, reads, writes, keep, label) -> None:
        reads, writes = list(reads), list(writes)
        self._record(fn, reads, writes, tuple(keep), label, _access_keys(reads), _access_keys(writes))

    def _record(self, fn, reads: list, writes: list, keep: tuple, label: str, read_keys: tuple,
                write_keys: tuple) -> None:
        """Record `fn(cmd)`, with a barrier before it when its byte ranges (`read_keys`, `write_keys`:
        _access_keys of `reads`, `writes`) conflict with those recorded since the last barrier (a new batch starts
        with a full barrier, so its list starts empty)."""
        stream = self.stream
        assert stream is not None
        graph = self.capture
        if graph is not None:
            pending = graph.pending
        elif not stream.recording:
            pending = self._pending
            pending.clear()
            self._pending_only = None
        else:
            pending = self._pending_accesses()
        if pending and _conflicts(pending, read_keys, write_keys):
            pending.clear()
            if graph is None:
                stream.barrier()
            else:
                vk.batch_barrier(graph.commands[0], graph.dispatches_only)
                graph.dispatches_only = True
        _add_accesses(pending, read_keys, write_keys)
        if graph is not None:
            fn(graph.commands[0])
            if type(fn) is not vk.DispatchRecorder:
                graph.dispatches_only = False
            graph.record(keep, label, reads, writes)
            return
        seq = stream.record(fn, label, keep)
        for buf, _, _ in reads:
            buf._hp_access = seq
        for buf, _, _ in writes:
            buf._hp_access = buf._hp_write = seq
        if self.blocking:
            stream.wait(seq)
        elif not self._timing:
            stream.submit_if_idle()

    def _pending_accesses(self) -> dict:
        """The accesses recorded since the last barrier, {buffer id: {(start, end): wrote}}, kept up to date from
        here on (not only one launch's any more)."""
        pending, only = self._pending, self._pending_only
        if only is not None:
            pending.clear()
            _add_accesses(pending, only.read_keys, only.write_keys)
            self._pending_only = None
        return pending

    def synchronize(self) -> None:
        """Wait for every queued launch of this device."""
        if self.stream is not None and not self.stream.closed:
            with self.lock:
                self.stream.wait()

    # timing ------------------------------------------------------------------------------------------------------
    def time(self, run: Callable[[], None], repeat: int, warmup: int = 1, warmup_s: float = 0.3) -> list[float]:
        """Seconds per `run()` (a sequence of launches): GPU timestamps around each run on Vulkan, after `warmup`
        runs and at least `warmup_s` seconds of back-to-back runs (an idle GPU runs at its idle clock); the wall
        clock around each run on the reference executor. On a GPU (not a CPU device such as lavapipe), with
        `warmup_s` > 0, the `repeat` timed runs are taken again while they still get faster, for up to
        `vk.timing.SETTLE_MAX_S` seconds (its clock still rising after the warm-up), and the last ones returned."""
        if self.stream is None:
            times = []
            for _ in range(warmup):
                run()
            for _ in range(repeat):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            return times
        with self.lock:
            self._refuse_in_capture("timing")
            for _ in range(max(warmup, 1)):
                run()
            self.synchronize()
            start = time.perf_counter()
            while time.perf_counter() - start < warmup_s:
                for _ in range(4):
                    run()
                self.synchronize()
            timing = vk.timing
            settle = timing.SETTLE_MAX_S if warmup_s > 0 and self.executor.info.device_type != "cpu" else 0.0
            return timing.settled(lambda: self._timestamps(run, repeat), settle)

    def _timestamps(self, run: Callable[[], None], repeat: int) -> list[float]:
        """Seconds of `repeat` runs queued back to back, by GPU timestamps around each (the lock held)."""
        pool = vk.QueryPool(self.executor.device, 2 * repeat)
        self._timing = True
        stream = self.stream
        try:
            stream.record(pool.reset, "timing", (pool,))
            for i in range(repeat):
                stream.record(lambda cmd, i=i: pool.write(cmd, 2 * i, False), "", (pool,))
                run()
                stream.record(lambda cmd, i=i: pool.write(cmd, 2 * i + 1, True), "", (pool,))
            self._timing = False
            self.synchronize()
            return [ns / 1e9 for ns in pool.nanoseconds()]
        finally:
            self._timing = False
            stream.after(stream.seq - 1, pool.close)

    # capture -----------------------------------------------------------------------------------------------------
    def _refuse_in_capture(self, what: str) -> None:
        if self.capture is not None:
            raise CaptureError(f"{what} cannot be captured (a replay would not repeat it): do it before or after "
                               "the capture")

    # the driver's pipeline cache on disk --------------------------------------------------------------------------
    _pipeline_cache_file: Any = None
    _pipeline_cache_seed = b""

    def _load_pipeline_cache(self, info) -> bytes | None:
        """The pipeline-cache bytes an earlier process saved for this device and driver (None: none, or off)."""
        path = pipeline_cache_file(info)
        self._pipeline_cache_file = path
        if path is None:
            return None
        try:
            self._pipeline_cache_seed = path.read_bytes()
        except OSError:
            return None
        return self._pipeline_cache_seed

    def save_pipeline_cache(self) -> None:
        """Write the driver's pipeline cache to disk when it holds pipelines the file lacks (at close; atomic: a
        temporary file renamed over the old one). A cache folder that cannot be written is passed over: the cache
        only saves time."""
        path = self._pipeline_cache_file
        if path is None or self.stream is None or self.executor.device.closed:
            return
        try:
            data = self.executor.device.pipeline_cache_data()
            if data == self._pipeline_cache_seed or not data:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self._pipeline_cache_seed = data
        except (OSError, HydroplaneError):
            pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.stream is not None:
            self.stream.close()
            self.trim()
            if self.owns_executor:
                self.save_pipeline_cache()
        if self.sets is not None:
            self.sets.close()
        if self.owns_executor:
            self.executor.close()


def pipeline_cache_file(info) -> Path | None:
    """Where the driver's pipeline cache of a device is kept between processes:
    $XDG_CACHE_HOME/hydroplane/pipelines/VENDOR-DEVICE-DRIVER.bin (~/.cache when XDG_CACHE_HOME is unset); None when
    $HYDROPLANE_DISK_CACHE is 0 or no cache folder is known. The driver checks the data's header (its own UUID) and
    ignores data of another driver or device."""
    folder = disk_cache.cache_folder("pipelines")
    if folder is None:
        return None
    driver = "".join(c if c.isalnum() or c in ".-" else "_" for c in f"{info.driver_name}-{info.driver_version}")
    return folder / f"{info.vendor_id:04x}-{info.device_id:04x}-{driver}.bin"


def _range(b: Bound, exact: bool = False) -> int:
    """The bytes a descriptor binds: the array's, rounded up to whole 32-bit words inside the buffer for the
    library's kernels (their word bindings of 16-bit data); exactly the array's for a robust pipeline (a user's
    kernel: robust access then stops at the array's last byte, not the next view's first)."""
    if exact and b.nbytes > 0:
        return b.nbytes
    return max(4, -(-b.nbytes // 4) * 4) if b.offset + max(4, -(-b.nbytes // 4) * 4) <= b.buffer.size else \
        b.buffer.size - b.offset


def _conflicts(pending: dict, read_keys: tuple, write_keys: tuple) -> bool:
    """Whether accesses (_access_keys of the ranges read and written) conflict with the pending ones ({buffer id:
    {(start, end): wrote}}): a read with a write of overlapping bytes, a write with any access of them."""
    get = pending.get
    for key, (start, end) in read_keys:
        ranges = get(key)
        if ranges:
            for (s, e), wrote in ranges.items():
                if wrote and s < end and start < e:
                    return True
    for key, (start, end) in write_keys:
        ranges = get(key)
        if ranges:
            for s, e in ranges:
                if s < end and start < e:
                    return True
    return False


def _add_accesses(pending: dict, read_keys: tuple, write_keys: tuple) -> None:
    """Add accesses to the pending ones (a range read again adds nothing to check; a write marks its range)."""
    get = pending.get
    for key, span in read_keys:
        ranges = get(key)
        if ranges is None:
            pending[key] = {span: False}
        elif span not in ranges:
            ranges[span] = False
    for key, span in write_keys:
        ranges = get(key)
        if ranges is None:
            pending[key] = {span: True}
        else:
            ranges[span] = True


class Graph:
    """A captured sequence of launches of one device (`capture`): `replay()` submits it again as one submit.

    Nothing runs while capturing (as CUDA graphs do). The arrays the launches use are the ones bound at capture
    time, kept alive by the graph; a replay reads and writes them again. Push constants are baked in: sizes that
    must change per replay belong in device buffers (which a replay reads anew). Host reads and writes, timing and
    NumPy operands inside a capture are refused (CaptureError): a replay could not repeat them."""

    def __init__(self, rt: DeviceRuntime):
        self.runtime = rt
        self.keep: list = []
        self.labels: list[str] = []
        self.pending: dict = {}  # as DeviceRuntime._pending, for the graph's command buffer
        self.dispatches_only = True  # every command since the last barrier a dispatch (vk.batch_barrier)
        self.steps: list = []  # the reference executor's launches, replayed in order
        self.buffers: dict[int, Any] = {}
        self.written: set[int] = set()
        self.last_seq = 0
        self.ended = self.closed = False
        self.commands = None
        rt.graphs.add(self)
        if rt.stream is not None:
            device = rt.executor.device
            self.commands = (ctypes.c_void_p * 1)()
            alloc = S.VkCommandBufferAllocateInfo(commandPool=device.command_pool,
                                                  level=E.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
            device.call("vkAllocateCommandBuffers", ctypes.byref(alloc), self.commands)
            begin = S.VkCommandBufferBeginInfo(flags=E.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT)  # replays overlap
            vk.check(_ffi.core("vkBeginCommandBuffer")(self.commands[0], ctypes.byref(begin)), "vkBeginCommandBuffer")
            vk.full_barrier(self.commands[0])

    def uses(self, buf) -> bool:
        return id(buf) in self.buffers

    def record(self, keep, label: str, reads, writes) -> None:
        self.keep.extend(keep)
        if label:
            self.labels.append(label)
        for buf, _, _ in reads:
            self.buffers[id(buf)] = buf
        for buf, _, _ in writes:
            self.buffers[id(buf)] = buf
            self.written.add(id(buf))

    def end(self) -> None:
        if self.commands is not None:
            vk.host_barrier(self.commands[0])
            vk.check(_ffi.core("vkEndCommandBuffer")(self.commands[0]), "vkEndCommandBuffer")
        self.ended = True

    @property
    def launches(self) -> int:
        return sum(not callable(step) for step in self.steps) if self.commands is None else len(self.labels)

    def replay(self) -> None:
        """Run the captured launches again: one submit on a Vulkan device (queued: returns at once)."""
        if self.closed or not self.ended:
            raise CaptureError("replay() of a graph that is " + ("closed" if self.closed else "still capturing"))
        rt = self.runtime
        with rt.lock:
            if rt.capture is not None:
                raise CaptureError("replay() inside a capture: replay the graph before or after it")
            if rt.stream is None:
                try:
                    for step in self.steps:
                        if callable(step):  # a copy or fill (DeviceRuntime._host_step)
                            step()
                        else:
                            rt.executor.dispatch(*step)
                except BaseException:
                    _zero_faulted(self.buffers.values())
                    raise
                return
            seq = rt.stream.submit_recorded(self.commands, keep=(self,), labels=self.labels)
            self.last_seq = seq
            for key, buf in self.buffers.items():
                buf._hp_access = seq
                if key in self.written:
                    buf._hp_write = seq
            rt._pending.clear()
            rt._pending_only = None
            if rt.blocking:
                rt.stream.wait(seq)

    def close(self) -> None:
        """Free the graph (after its last replay has finished); the arrays it kept are let go."""
        if self.closed:
            return
        self.closed = True
        rt = self.runtime
        if self.commands is not None and not rt.closed:
            commands, device = self.commands, rt.executor.device

            def free() -> None:
                device.release("vkFreeCommandBuffers", device.command_pool, 1, commands)

            rt.stream.after(self.last_seq, free) if self.last_seq else free()
        released = [b for b in self.buffers.values() if getattr(b, "_hp_released", False)]
        self.keep, self.steps, self.buffers = [], [], {}
        for buf in released:
            rt.free(buf)  # freed now unless another graph still replays it

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def capture(device=None):
    """`with hydroplane.capture(device) as graph:` records the launches of the calls inside (nothing runs);
    `graph.replay()` then submits them all at once, as often as wanted."""
    rt = runtime(device)
    with rt.lock:
        if rt.capture is not None:
            raise CaptureError(f"{rt.name} is already capturing a graph")
        rt.synchronize()
        graph = Graph(rt)
        rt.capture = graph
    try:
        yield graph
    except BaseException:
        rt.capture = None
        graph.end()
        graph.close()
        raise
    rt.capture = None
    graph.end()


def _zero_faulted(buffers) -> None:
    """The buffers marked by zero_after_fault among those of a reference dispatch that raised, zeroed."""
    for buf in buffers:
        if getattr(buf, "_hp_zero_after_fault", False):
            buf.data[:] = 0


def ref_window(buf, offset: int, nbytes: int):
    """Bytes [offset, offset + nbytes) of a reference-executor buffer as a buffer of their own, sharing its memory
    (a view at an offset binds without a copy)."""
    window = type(buf).__new__(type(buf))  # the executor's Buffer class (this layer need not import ref for it)
    window.nbytes = nbytes
    window.data = buf.data[offset: offset + max(8, -(-nbytes // 8) * 8)]
    if window.data.nbytes < nbytes:
        raise LaunchError(f"a window of {nbytes} bytes at {offset} overruns a buffer of {buf.nbytes} bytes")
    window.address = buf.address + offset
    window.released = False
    return window


__all__ = ["Bound", "CaptureError", "DeviceError", "DeviceRuntime", "Graph", "PlannedLaunch", "canonical_device",
           "capture", "default_device", "open_devices", "runtime", "runtime_of", "set_device", "shared_executor",
           "synchronize", "words_key"]
