"""Buffer memory handed between workgroups of one dispatch: the release and acquire that must order it.

The reference executor runs a batch of workgroups in lockstep and every write is seen at once by every later read,
whatever the memory semantics; a GPU is not so kind (a workgroup's writes reach another workgroup only through a
release at device scope, an atomic, and an acquire). So that a kernel missing one of them fails here too, a
dispatch of a module that synchronises across workgroups (an atomic on buffer memory, or a barrier or fence whose
memory scope is Device or QueueFamily: `Program.device_sync`) is checked against the Vulkan memory model's rule for
such a hand-over, at workgroup granularity:

* a plain write to a buffer byte records its workgroup and that workgroup's count of releases so far;
* a release at device scope (OpMemoryBarrier, or OpControlBarrier with a Device or QueueFamily memory scope, on
  Uniform (buffer) memory, with Release or AcquireRelease semantics, or an atomic with Release semantics) adds one
  to the count of every workgroup that runs it;
* an atomic write to a location records, per workgroup, the count of releases its writer had made (a
  read-modify-write keeps the earlier entries: Vulkan's release sequence, whose every RMW reads the one before;
  an atomic store starts the location afresh);
* an atomic read of a location (every read-modify-write) adds the location's entries to what its workgroup may
  acquire; an acquire (the fences and barriers above with Acquire or AcquireRelease semantics, or an atomic with
  Acquire semantics) makes them its own;
* a plain read of a byte another workgroup wrote in this dispatch is a "race" diagnostic unless the reader has
  acquired a release that its writer made after the write.

So the writer's order is: writes, (a workgroup barrier,) release, atomic; the reader's: atomic, acquire, reads
(`lang.fence`, docs/language.md; the fused attention combine, docs/attention.md). Workgroup granularity: a release
or an acquire by one invocation counts for its whole workgroup, taking the workgroup barrier that must stand
between it and the other invocations' writes or reads as given (the shared-memory race tracking checks those
barriers for shared memory only). Atomic accesses themselves are never a race. The checks cost a byte table per
buffer written; executors made with checks=False skip them.
"""

from __future__ import annotations

import numpy as np

from hydroplane.spirv.enums import MemorySemantics, Scope

DEVICE_SCOPES = (Scope.CrossDevice, Scope.Device, Scope.QueueFamily)
BUFFER_STORAGE = ("StorageBuffer", "PhysicalStorageBuffer", "Uniform")
RELEASES = int(MemorySemantics.Release | MemorySemantics.AcquireRelease | MemorySemantics.SequentiallyConsistent)
ACQUIRES = int(MemorySemantics.Acquire | MemorySemantics.AcquireRelease | MemorySemantics.SequentiallyConsistent)
ORDERED = RELEASES | ACQUIRES


def _root(data: np.ndarray) -> tuple[np.ndarray, int]:
    """The array whose memory `data` views and the byte offset of data's first byte in it."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root, data.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def _merge(into: dict, entries: dict) -> None:
    for wg, count in entries.items():
        if into.get(wg, -1) < count:
            into[wg] = count


class Visibility:
    """The hand-over state of one dispatch (every batch of it): workgroups are numbered x-fastest over the grid."""

    def __init__(self, grid: tuple[int, int, int], total: int):
        self.grid = grid
        self.releases = np.zeros(max(total, 1), np.int64)  # per workgroup: device-scope releases made so far
        self.tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # id(root) -> (root, writer, count)
        self.chains: dict[tuple[int, int], dict[int, int]] = {}  # (id(root), byte) of an atomic -> {wg: releases}
        self.pending: dict[int, dict[int, int]] = {}  # wg -> entries its atomics read, not yet acquired
        self.acquired: dict[int, dict[int, int]] = {}  # wg -> {writer wg: the releases of it this wg acquired}
        self.first = 0  # the batch's first workgroup
        self.workgroup_of_lane = np.zeros(1, np.int64)

    def batch(self, first: int, workgroup_of_lane: np.ndarray) -> None:
        self.first = first
        self.workgroup_of_lane = workgroup_of_lane

    def _workgroups(self, lanes) -> np.ndarray:
        return self.first + self.workgroup_of_lane[np.asarray(lanes, np.int64)]

    def _table(self, region, make: bool = True) -> tuple[int, int, np.ndarray | None, np.ndarray | None]:
        """(key, byte offset of the region in its buffer, the buffer's writer and count tables): made on its first
        write (`make`), else None (a buffer not written in this dispatch: nothing to check)."""
        root, start = _root(region.data)
        key = id(root)
        held = self.tables.get(key)
        if held is None:
            if not make:
                return key, start, None, None
            size = root.nbytes
            held = self.tables[key] = (root, np.zeros(size, np.int32), np.zeros(size, np.int32))
        return key, start, held[1], held[2]

    def describe(self, wg: int) -> str:
        gx, gy, _ = self.grid
        return f"({wg % gx},{wg // gx % gy},{wg // (gx * gy)})"

    # plain accesses -----------------------------------------------------------------------------------------
    def write(self, region, offsets: np.ndarray, itemsize: int, lanes) -> None:
        if lanes is None or not offsets.size:
            return
        _, start, writer, count = self._table(region)
        assert writer is not None and count is not None
        wgs = np.broadcast_to(self._workgroups(lanes), offsets.shape).reshape(-1)
        at = (start + offsets.reshape(-1, 1) + np.arange(itemsize)).reshape(-1)
        wgs = np.repeat(wgs, itemsize)
        writer[at] = wgs + 1
        count[at] = self.releases[wgs]

    def read(self, region, offsets: np.ndarray, itemsize: int, lanes, diagnose) -> None:
        if lanes is None or not offsets.size:
            return
        key, start, writer, count = self._table(region, make=False)
        if writer is None or count is None:
            return
        flat = offsets.reshape(-1)
        at = (start + flat.reshape(-1, 1) + np.arange(itemsize)).reshape(-1)
        who = writer[at]
        if not who.any():
            return
        wgs = np.repeat(np.broadcast_to(self._workgroups(lanes), offsets.shape).reshape(-1), itemsize)
        foreign = (who != 0) & (who - 1 != wgs)
        if not foreign.any():
            return
        readers, writers, counts = wgs[foreign], who[foreign] - 1, count[at][foreign]
        bad = np.zeros(len(readers), bool)
        for reader, wr in set(zip(readers.tolist(), writers.tolist())):
            sel = (readers == reader) & (writers == wr)
            have = self.acquired.get(reader, {}).get(wr, -1)
            bad |= sel & (counts >= have)  # the write came after the last release this reader acquired
        if not bad.any():
            return
        lanes_b = np.repeat(np.broadcast_to(np.asarray(lanes), offsets.shape).reshape(-1), itemsize)[foreign][bad]
        reader, wr = int(readers[bad][0]), int(writers[bad][0])
        acquired = self.acquired.get(reader, {}).get(wr)
        diagnose("race", f"a read of {region.name} at byte {int(at[foreign][bad][0]) - start} that workgroup "
                 f"{self.describe(wr)} wrote in this dispatch, not ordered before the read: the writer must release "
                 "at device scope after its writes (a fence or a barrier with a Device or QueueFamily memory scope, "
                 "or a release atomic) before an atomic write that an atomic of the reader's workgroup reads, then "
                 "the reader acquire (" + ("it acquired none of that workgroup's releases)" if acquired is None
                                           else f"it acquired that workgroup's releases up to its {acquired}th, made "
                                           "before the write)"), lanes_b)

    # synchronisation ------------------------------------------------------------------------------------------
    def fence(self, lanes, semantics: int) -> None:
        """A device-scope barrier or fence run by `lanes` (active lanes) with these semantics."""
        if not semantics & ORDERED or not semantics & MemorySemantics.UniformMemory:
            return
        for wg in np.unique(self._workgroups(lanes)).tolist():
            if semantics & ACQUIRES:
                _merge(self.acquired.setdefault(wg, {}), self.pending.get(wg, {}))
            if semantics & RELEASES:
                self.releases[wg] += 1

    def atomic(self, region, offset: int, lane: int, semantics: int, reads: bool, writes: bool, rmw: bool) -> None:
        """One lane's atomic on a buffer location (lanes in lane order: the executor's serial order)."""
        key, start, _, _ = self._table(region, make=False)
        wg = int(self._workgroups(lane))
        if not semantics & MemorySemantics.UniformMemory:  # (orders no buffer memory)
            semantics = 0
        if semantics & RELEASES:
            self.releases[wg] += 1
        location = (key, start + int(offset))
        chain = self.chains.get(location)
        if reads and chain:
            _merge(self.pending.setdefault(wg, {}), chain)
        if writes:
            if chain is None or not rmw:
                chain = self.chains[location] = {}
            made = int(self.releases[wg])
            if chain.get(wg, -1) < made:
                chain[wg] = made
        if semantics & ACQUIRES:
            _merge(self.acquired.setdefault(wg, {}), self.pending.get(wg, {}))
