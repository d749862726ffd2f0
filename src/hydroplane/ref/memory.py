"""Memory of a dispatch: regions of bytes, gathers and scatters with bounds checks and shared-memory tracking.

A `Region` is one memory object: a storage/uniform buffer or push-constant block (one row shared
by every lane), a Workgroup variable (one row per workgroup of the batch), a Function or Private
variable (one row per lane). Addresses are (row, byte offset). Every access goes through
`Memory.read` / `Memory.write`, which check bounds (the out-of-bounds diagnostic) and, for
Workgroup regions, track which invocation wrote or read each byte since the last barrier
(uninitialised-read and race diagnostics).
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.errors import InvalidModuleError

PSB_REGION_SHIFT = 40  # PhysicalStorageBuffer address = (region number + 1) << 40 | byte offset
MAX_REGION_BYTES = 1 << 30
# Workgroup tracking tables hold, per byte: -1 no access since the last barrier, >= 0 the local
# invocation index of the one accessor, -2 several readers, SUBGROUP_ORDERED - s an access by
# subgroup s that a subgroup barrier has since ordered for that subgroup's invocations.
SUBGROUP_ORDERED = -16  # Workgroup/Function/Private memory of one batch, all rows together


class Region:
    """One memory object; `data` is (rows, padded bytes) uint8, `row_of_lane` maps lanes to rows."""

    def __init__(self, name: str, storage: str, nbytes: int, rows: int = 1, row_of_lane=None,
                 data: np.ndarray | None = None, track: bool = False):
        self.name = name
        self.storage = storage
        self.nbytes = nbytes
        padded = max(8, -(-nbytes // 8) * 8)
        if data is None and padded * rows > MAX_REGION_BYTES:
            raise InvalidModuleError(f"{storage} variable {name} needs {nbytes} bytes x {rows} copies, "
                                     f"more than the executor's {MAX_REGION_BYTES} bytes")
        if data is None:
            self.data = np.zeros((rows, padded), np.uint8)
        else:
            self.data = data  # a (1, padded) view on a buffer's bytes
        self.row_of_lane = row_of_lane  # None: every lane uses row 0
        self.track = track
        self.address = 0  # PhysicalStorageBuffer base address, 0 when it has none
        if track:
            self.written = np.zeros((rows, padded), bool)
            self.writer = np.full((rows, padded), -1, np.int32)
            self.reader = np.full((rows, padded), -1, np.int32)

    def rows(self, lanes: np.ndarray) -> np.ndarray | int:
        return 0 if self.row_of_lane is None else self.row_of_lane[lanes]

    def reset_epoch(self, rows=None) -> None:
        """A barrier: accesses before it are ordered before accesses after it."""
        if self.track:
            sel = slice(None) if rows is None else rows
            self.writer[sel] = -1
            self.reader[sel] = -1

    def __repr__(self) -> str:
        return f"Region({self.name!r}, {self.storage}, {self.nbytes} bytes x {self.data.shape[0]} rows)"


class PhysicalAddressSpace:
    """The region of every PhysicalStorageBuffer pointer: offsets are 64-bit addresses."""

    name = "PhysicalStorageBuffer memory"
    storage = "PhysicalStorageBuffer"
    row_of_lane = None
    track = False

    def rows(self, lanes):
        return 0


PSB = PhysicalAddressSpace()


class Memory:
    """Reads and writes of regions; reports problems through `diagnose(kind, message, lanes)`."""

    def __init__(self, diagnose, local_index: np.ndarray | None = None, checks: bool = True):
        self.diagnose = diagnose  # callable(kind, message, lanes ndarray) -> None (or raises)
        self.local_index = local_index  # lane -> index within its workgroup (race tracking)
        self.checks = checks
        self.psb_regions: list[Region] = []
        self.tracked_regions: list[Region] = []  # Workgroup regions (reset at barriers)
        self.subgroup_size = 1 << 30

    # -- bounds -------------------------------------------------------------------------
    def _in_bounds(self, region: Region, offsets: np.ndarray, itemsize: int, lanes, what: str) -> np.ndarray | None:
        if getattr(region, "unsupported", False):
            self.diagnose("unsupported", f"{what} of {region.name}: variables of this storage class are not "
                          "supported by the reference executor", lanes)
        bad = (offsets < 0) | (offsets + itemsize > region.nbytes)
        if not bad.any():
            return None
        lanes_b = np.broadcast_to(lanes, bad.shape)[bad] if lanes is not None else np.zeros(0, np.int64)
        first = int(offsets[bad].flat[0])
        self.diagnose("out-of-bounds",
                      f"{what} of {itemsize} bytes at byte offset {first} of {region.name} "
                      f"({region.storage}, {region.nbytes} bytes)", lanes_b)
        return bad

    # -- element access -----------------------------------------------------------------------
    def read(self, region: Region, rows, offsets: np.ndarray, dtype: np.dtype, lanes=None) -> np.ndarray:
        """Elements of `dtype` at byte `offsets` (any shape; rows broadcast against it)."""
        dtype = np.dtype(dtype)
        offsets = np.asarray(offsets, np.int64)
        if region is PSB:
            return self._physical(offsets, lanes, lambda r, o, ln: self.read(r, 0, o, dtype, ln), dtype)
        bad = self._in_bounds(region, offsets, dtype.itemsize, lanes, "read")
        if bad is not None:
            offsets = np.where(bad, 0, offsets)
        if region.track and self.checks:
            self._track(region, rows, offsets, dtype.itemsize, lanes, write=False, skip=bad)
        out = self._gather(region, rows, offsets, dtype)
        if bad is not None:
            out = np.where(bad, np.zeros((), dtype), out)
        return out

    def write(self, region: Region, rows, offsets: np.ndarray, values: np.ndarray, lanes=None) -> None:
        values = np.asarray(values)
        dtype = values.dtype
        offsets = np.asarray(offsets, np.int64)
        shape = np.broadcast_shapes(offsets.shape, values.shape, np.shape(rows))
        offsets = np.broadcast_to(offsets, shape)
        values = np.broadcast_to(values, shape)
        if region is PSB:
            vals = values

            def part(r, o, ln, sel):
                self.write(r, 0, o, vals[sel], ln)
            self._physical(offsets, lanes, part, None)
            return
        rows = np.broadcast_to(rows, shape)
        bad = self._in_bounds(region, offsets, dtype.itemsize, lanes, "write")
        if bad is not None:
            keep = ~bad
            offsets, values, rows = offsets[keep], values[keep], rows[keep]
            if lanes is not None:
                lanes = np.broadcast_to(lanes, shape)[keep]
        if region.track and self.checks:
            self._track(region, rows, offsets, dtype.itemsize, lanes, write=True, skip=None)
        self._scatter(region, rows, offsets, values)

    def _physical(self, addresses: np.ndarray, lanes, access, dtype):
        """Split an access through PhysicalStorageBuffer addresses by the buffer they fall in."""
        which = (addresses >> PSB_REGION_SHIFT) - 1
        offsets = addresses & ((1 << PSB_REGION_SHIFT) - 1)
        lanes_b = np.broadcast_to(lanes, addresses.shape) if lanes is not None else None
        out = np.zeros(addresses.shape, dtype) if dtype is not None else None
        bad = (which < 0) | (which >= len(self.psb_regions))
        if bad.any():
            self.diagnose("out-of-bounds", f"PhysicalStorageBuffer address {int(addresses[bad].flat[0]):#x} "
                          "is in no buffer", lanes_b[bad] if lanes_b is not None else None)
        for r in np.unique(which[~bad]):
            sel = which == r
            ln = lanes_b[sel] if lanes_b is not None else None
            if dtype is not None:
                out[sel] = access(self.psb_regions[int(r)], offsets[sel], ln)
            else:
                access(self.psb_regions[int(r)], offsets[sel], ln, sel)
        return out

    @staticmethod
    def _gather(region: Region, rows, offsets: np.ndarray, dtype: np.dtype) -> np.ndarray:
        size = dtype.itemsize
        if dtype.kind == "b":
            return region.data[rows, offsets] != 0
        if not (offsets % size).any():
            return region.data.view(dtype)[rows, offsets // size]
        raw = region.data[np.asarray(rows)[..., None], offsets[..., None] + np.arange(size)]
        return np.ascontiguousarray(raw).view(dtype)[..., 0]

    @staticmethod
    def _scatter(region: Region, rows, offsets: np.ndarray, values: np.ndarray) -> None:
        dtype = values.dtype
        size = dtype.itemsize
        if dtype.kind == "b":
            region.data[rows, offsets] = values
        elif not (offsets % size).any():
            region.data.view(dtype)[rows, offsets // size] = values
        else:
            raw = np.ascontiguousarray(values).view(np.uint8).reshape(values.shape + (size,))
            region.data[np.asarray(rows)[..., None], offsets[..., None] + np.arange(size)] = raw

    # -- Workgroup tracking -------------------------------------------------------------------------
    def _track(self, region: Region, rows, offsets, itemsize, lanes, write: bool, skip) -> None:
        if lanes is None or self.local_index is None:
            return
        shape = np.broadcast_shapes(np.shape(offsets), np.shape(rows), np.shape(lanes))
        offs = np.broadcast_to(offsets, shape)
        rws = np.broadcast_to(rows, shape)
        lns = np.broadcast_to(lanes, shape)
        if skip is not None:
            keep = ~np.broadcast_to(skip, shape)
            offs, rws, lns = offs[keep], rws[keep], lns[keep]
        padded = region.data.shape[1]
        first = (np.asarray(rws, np.int64) * padded + offs).reshape(-1)
        key = (first[:, None] + np.arange(itemsize)).reshape(-1)  # flat byte index per accessed byte
        byte_lane = np.repeat(np.asarray(lns).reshape(-1), itemsize)
        who = self.local_index[byte_lane].astype(np.int32)
        written, writer_flat, reader_flat = (region.written.reshape(-1), region.writer.reshape(-1),
                                             region.reader.reshape(-1))
        if not write:
            unwritten = ~written[key]
            if unwritten.any():
                byte = int(key[unwritten][0] % padded)
                self.diagnose("uninitialized-read",
                              f"read of {region.name} (Workgroup) at byte {byte}, never written",
                              np.unique(byte_lane[unwritten]))
        writer = writer_flat[key]
        reader = reader_flat[key]
        group = who // self.subgroup_size
        conflict = self._foreign(writer, who, group)
        if write:
            conflict |= (reader == -2) | self._foreign(reader, who, group)
        multi = self._shared_bytes(key, who, written.size)
        if multi is not None and write:
            conflict |= multi
        if conflict.any():
            byte = int(key[conflict][0] % padded)
            kind = "write" if write else "read"
            self.diagnose("race",
                          f"{kind} of {region.name} (Workgroup) at byte {byte} races with another "
                          f"invocation's access since the last barrier",
                          np.unique(byte_lane[conflict]))
        if write:
            writer_flat[key] = who
            written[key] = True
        else:
            mine = (reader == -1) | (reader == who) | (reader == SUBGROUP_ORDERED - group)
            new_reader = np.where(mine, who, -2)
            if multi is not None:
                new_reader = np.where(multi, -2, new_reader)
            reader_flat[key] = new_reader

    @staticmethod
    def _foreign(table: np.ndarray, who: np.ndarray, group: np.ndarray) -> np.ndarray:
        """Entries recording an access by another invocation that nothing has ordered with `who`."""
        return ((table >= 0) & (table != who)) | ((table <= SUBGROUP_ORDERED) & (SUBGROUP_ORDERED - table != group))

    @staticmethod
    def _shared_bytes(key: np.ndarray, who: np.ndarray, size: int) -> np.ndarray | None:
        """Which accessed bytes this one access touches from two different invocations (None: none)."""
        if size <= 16 * len(key) + 4096:
            counts = np.bincount(key, minlength=size)
            dup = counts[key] > 1
            if not dup.any():
                return None
            sub = np.flatnonzero(dup)
        else:
            sub = np.arange(len(key))
        order = sub[np.argsort(key[sub], kind="stable")]
        k, w = key[order], who[order]
        same = (k[1:] == k[:-1]) & (w[1:] != w[:-1])
        if not same.any():
            return None
        multi = np.zeros(len(key), bool)
        # every byte whose key is shared by two invocations
        bad_keys = np.unique(k[1:][same])
        multi[np.isin(key, bad_keys)] = True
        return multi
