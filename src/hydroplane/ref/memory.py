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
from hydroplane.ref.visibility import BUFFER_STORAGE

PSB_REGION_SHIFT = 40  # PhysicalStorageBuffer address = (region number + 1) << 40 | byte offset
MAX_REGION_BYTES = 1 << 30


def buffer_address(number: int) -> int:
    """The PhysicalStorageBuffer base address of the executor's buffer `number` (its byte 0)."""
    return (number + 1) << PSB_REGION_SHIFT

# Workgroup tracking tables hold, per byte: -1 no access since the last barrier, >= 0 the local
# invocation index of the one accessor, -2 several readers, SUBGROUP_ORDERED - s an access by
# subgroup s that a subgroup barrier has since ordered for that subgroup's invocations.
SUBGROUP_ORDERED = -16  # Workgroup/Function/Private memory of one batch, all rows together
SHARED_MARK = -3  # in a region's scratch table: a byte accessed by two invocations in one access


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
            self._scratch: np.ndarray | None = None
        # no writer (reader) entry other than -1 anywhere: accesses since the last barrier that
        # reached every row have no writes (reads) to look up
        self.writer_clean = self.reader_clean = True
        self.all_written = False  # every byte written (`written` only grows): set when found so

    @property
    def scratch(self) -> np.ndarray:
        """A flat int32 table over the tracked bytes for `Memory._shared_elements` (values only meaningful
        where that access wrote them)."""
        if self._scratch is None:
            self._scratch = np.empty(self.written.size, np.int32)
        return self._scratch

    def rows(self, lanes: np.ndarray) -> np.ndarray | int:
        return 0 if self.row_of_lane is None else self.row_of_lane[lanes]

    def reset_epoch(self, rows=None) -> None:
        """A barrier: accesses before it are ordered before accesses after it."""
        if self.track:
            sel = slice(None) if rows is None else rows
            self.writer[sel] = -1
            self.reader[sel] = -1
            if rows is None or len(np.unique(rows)) == self.writer.shape[0]:
                self.writer_clean = self.reader_clean = True
        self.all_written = False  # every byte written (`written` only grows): set when found so

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
        self._accessors_kept: list[tuple[np.ndarray, _Accessors]] = []  # (lanes, their accessors), newest last
        self._every_lane_accessors: _Accessors | None = None  # of lanes 0, 1, ..., all lanes of the batch
        self.visibility = None  # a ref.visibility.Visibility: buffer memory handed between workgroups is checked

    # -- bounds -------------------------------------------------------------------------
    def _in_bounds(self, region: Region, offsets: np.ndarray, itemsize: int, lanes, what: str) -> np.ndarray | None:
        if getattr(region, "unsupported", False):
            self.diagnose("unsupported", f"{what} of {region.name}: variables of this storage class are not "
                          "supported by the reference executor", lanes)
        if not offsets.size or (offsets.min() >= 0 and offsets.max() <= region.nbytes - itemsize):
            return None
        bad = (offsets < 0) | (offsets + itemsize > region.nbytes)
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
        aligned = _aligned(offsets, dtype.itemsize)
        flat = _flat_bytes(region, rows, offsets)
        if region.track and self.checks:
            self._track(region, rows, offsets, dtype.itemsize, lanes, write=False, skip=bad, aligned=aligned,
                        flat=flat)
        elif self.visibility is not None and region.storage in BUFFER_STORAGE and lanes is not None:
            keep = slice(None) if bad is None else ~bad
            self.visibility.read(region, offsets[keep], dtype.itemsize, np.broadcast_to(lanes, offsets.shape)[keep],
                                 self.diagnose)
        out = self._gather(region, rows, offsets, dtype, aligned, flat)
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
        aligned = _aligned(offsets, dtype.itemsize)
        flat = _flat_bytes(region, rows, offsets)
        if region.track and self.checks:
            self._track(region, rows, offsets, dtype.itemsize, lanes, write=True, skip=None, aligned=aligned,
                        flat=flat)
        elif self.visibility is not None and region.storage in BUFFER_STORAGE and lanes is not None:
            self.visibility.write(region, offsets, dtype.itemsize, np.broadcast_to(lanes, offsets.shape))
        self._scatter(region, rows, offsets, values, aligned, flat)

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
    def _gather(region: Region, rows, offsets: np.ndarray, dtype: np.dtype, aligned: bool | None = None,
                flat: np.ndarray | None = None) -> np.ndarray:
        """Elements at (rows, byte offsets); `aligned`: whether every offset is a multiple of the size
        (None: look); `flat`: `_flat_bytes` of them (None: computed here)."""
        size = dtype.itemsize
        if dtype.kind == "b":
            return region.data[rows, offsets] != 0
        if _aligned(offsets, size) if aligned is None else aligned:
            if flat is not None and region.data.flags.c_contiguous:
                return np.take(region.data.view(dtype).reshape(-1), _divide(flat, size))
            if region.data.flags.c_contiguous:
                return np.take(region.data.view(dtype).reshape(-1), _flat_index(region, rows, offsets, size))
            return region.data.view(dtype)[rows, _divide(offsets, size)]
        raw = region.data[np.asarray(rows)[..., None], offsets[..., None] + np.arange(size)]
        return np.ascontiguousarray(raw).view(dtype)[..., 0]

    @staticmethod
    def _scatter(region: Region, rows, offsets: np.ndarray, values: np.ndarray, aligned: bool | None = None,
                 flat: np.ndarray | None = None) -> None:
        dtype = values.dtype
        size = dtype.itemsize
        if aligned is None:
            aligned = _aligned(offsets, size)
        if dtype.kind == "b":
            region.data[rows, offsets] = values
        elif aligned and flat is not None and region.data.flags.c_contiguous:
            region.data.view(dtype).reshape(-1)[_divide(flat, size)] = values
        elif aligned and region.data.flags.c_contiguous:
            region.data.view(dtype).reshape(-1)[_flat_index(region, rows, offsets, size)] = values
        elif aligned:
            region.data.view(dtype)[rows, _divide(offsets, size)] = values
        else:
            raw = np.ascontiguousarray(values).view(np.uint8).reshape(values.shape + (size,))
            region.data[np.asarray(rows)[..., None], offsets[..., None] + np.arange(size)] = raw

    # -- Workgroup tracking -------------------------------------------------------------------------
    def _track(self, region: Region, rows, offsets, itemsize, lanes, write: bool, skip,
               aligned: bool | None = None, flat: np.ndarray | None = None) -> None:
        """Race and uninitialised-read tracking of one access; `aligned`: whether every offset is a
        multiple of itemsize (None: look; rows start at multiples of 8 bytes); `flat`: `_flat_bytes`
        of the access (None: computed here)."""
        if lanes is None or self.local_index is None:
            return
        shape = np.broadcast_shapes(np.shape(offsets), np.shape(rows), np.shape(lanes))
        offs = np.broadcast_to(offsets, shape)
        rws = np.broadcast_to(rows, shape)
        lns = np.broadcast_to(lanes, shape)
        whole = skip is None and isinstance(lanes, np.ndarray) and lanes.shape == shape
        if flat is None:
            flat = _flat_bytes(region, rws, offs)
        flat = np.broadcast_to(flat, shape)
        if skip is not None:
            keep = ~np.broadcast_to(skip, shape)
            lns, flat = lns[keep], flat[keep]
        first = np.asarray(flat).reshape(-1)  # flat index of each element's first byte
        element_lane = np.asarray(lns).reshape(-1)
        accessors = self._accessors(lanes if whole else None, element_lane)
        clean = region.writer_clean, region.reader_clean
        if write:
            region.writer_clean = False
        else:
            region.reader_clean = False
        if aligned is None:
            aligned = not (first & (itemsize - 1)).any() if itemsize in _WIDE_BITS else False
        if itemsize in _WIDE_BITS and aligned:
            if self._track_elements(region, first, itemsize, accessors, write, *clean):
                return
        self._track_bytes(region, first, itemsize, element_lane, accessors.who, write)

    def _accessors(self, lanes: np.ndarray | None, element_lane: np.ndarray) -> _Accessors:
        """The invocation of every element of an access; kept for a lanes array met again (the same
        object: cooperative-matrix loads and stores pass one per matrix shape)."""
        if lanes is not None:
            for source, accessors in self._accessors_kept:
                if source is lanes:
                    return accessors
        count = len(self.local_index)
        every_lane = (len(element_lane) == count and count and element_lane[0] == 0
                      and element_lane[-1] == count - 1 and (np.diff(element_lane) == 1).all())
        if every_lane and self._every_lane_accessors is not None:  # a store or load by every lane of the batch
            return self._every_lane_accessors
        accessors = _Accessors(self.local_index[element_lane].astype(np.int32), self.subgroup_size)
        if every_lane:
            self._every_lane_accessors = accessors
        if lanes is not None:
            self._accessors_kept.append((lanes, accessors))
            if len(self._accessors_kept) > ACCESSORS_KEPT:
                self._accessors_kept.pop(0)
        return accessors

    def _track_elements(self, region: Region, first: np.ndarray, itemsize: int, accessors: _Accessors,
                        write: bool, writer_clean: bool, reader_clean: bool) -> bool:
        """The tracking of an access whose elements start at multiples of their size, on words of the
        tables (an int64 word holds the entries of two bytes; the int32 entry itself for 1-byte
        elements): done (True) when every accessed byte is written (reads) and every entry met is
        settled (no access, or one by the same invocation or by its subgroup since a subgroup
        barrier), so that nothing is reported. Otherwise nothing is changed (False) and the
        byte-level pass decides and reports. A clean table (all -1) is not looked up."""
        written = region.written.reshape(-1).view(_WIDE_BITS[itemsize])
        element = first >> (itemsize.bit_length() - 1)  # index of each element in `written`
        if not write and not region.all_written:
            if len(first) * itemsize * 8 >= region.written.size:  # a look at the whole table costs little more
                region.all_written = bool(region.written.all())
            if not region.all_written and not (written[element] == _ALL_WRITTEN[itemsize]).all():
                return False
        mine, ordered = accessors.words(itemsize)
        writers, readers = _words(region.writer, itemsize), _words(region.reader, itemsize)
        base = first if itemsize == 1 else first >> 1
        spans = range(max(1, itemsize // 2))  # words per element
        if not writer_clean and not all(_all_settled(writers[base + j], mine, ordered) for j in spans):
            return False
        if write:
            if not reader_clean and not all(_all_settled(readers[base + j], mine, ordered) for j in spans):
                return False
            old = None if writer_clean else writers[base]
            writers[base] = mine
            if (writers[base] != mine).any():
                # two invocations wrote one element (equal addresses, different values read back):
                # undone (equal addresses had equal entries), and the byte-level pass reports the race
                writers[base] = -1 if old is None else old
                return False
            for j in spans[1:]:
                writers[base + j] = mine
            written[element] = _ALL_WRITTEN[itemsize]
            return True
        several = _word(-2, itemsize)
        updates = []
        for j in spans:
            new = mine
            entries = None if reader_clean else readers[base + j]
            if entries is not None and not (entries == -1).all():
                settled = _settled(entries, mine, ordered)
                if not settled.all():
                    if itemsize > 1 and not _uniform(entries[~settled]).all():
                        return False  # a word half settled: the byte-level pass
                    new = np.where(settled, mine, several)
            updates.append(new)
        for j, new in zip(spans, updates):
            # an element read by two invocations (equal addresses, different values written here)
            # records several readers: what is read back differs from what some element wrote
            index = base + j
            readers[index] = new
            other = readers[index] != new
            if other.any():
                readers[index[other]] = several
        return True

    def _track_bytes(self, region: Region, first: np.ndarray, itemsize: int, element_lane: np.ndarray,
                     element_who: np.ndarray, write: bool) -> None:
        padded = region.data.shape[1]
        key = (first[:, None] + np.arange(itemsize)).reshape(-1)  # flat byte index per accessed byte
        byte_lane = np.repeat(element_lane, itemsize)
        who = np.repeat(element_who, itemsize)
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
        multi = self._shared_elements(region, key, who)
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
    def _shared_elements(region: Region, index: np.ndarray, who: np.ndarray) -> np.ndarray | None:
        """Which entries of `index` (flat byte indices: every byte, or the first byte of elements of
        one size that start at multiples of it, which then coincide or do not overlap) this one
        access reaches from two different invocations (None: none).

        Each index's accessor is written to the region's scratch table (one of them stays where
        several write) and read back: an index with another accessor reads a different one. Every
        index found so is marked in the table, so that all of its accessors see the mark.
        """
        scratch = region.scratch
        scratch[index] = who
        other = scratch[index] != who
        if not other.any():
            return None
        scratch[index[other]] = SHARED_MARK
        return scratch[index] == SHARED_MARK


def _aligned(offsets: np.ndarray, size: int) -> bool:
    """Whether every offset is a multiple of `size`."""
    if size & (size - 1):
        return not (offsets % size).any()
    return size == 1 or not (offsets & (size - 1)).any()


def _flat_bytes(region: Region, rows, offsets: np.ndarray) -> np.ndarray:
    """Index of the bytes at (row, byte offset) in the region's data viewed flat (rows and offsets
    broadcast; the tracking tables have the data's shape)."""
    if np.ndim(rows) == 0 and rows == 0:
        return offsets
    return np.asarray(rows, np.int64) * region.data.shape[1] + offsets


def _flat_index(region: Region, rows, offsets: np.ndarray, size: int) -> np.ndarray:
    """Index of the elements of `size` bytes at (row, byte offset) in the region's data viewed flat as
    such elements (one flat gather or scatter is cheaper than NumPy's two-array indexing)."""
    index = _divide(offsets, size)
    if np.ndim(rows) == 0 and rows == 0:
        return index
    return np.asarray(rows, np.int64) * (region.data.shape[1] // size) + index


def _divide(offsets: np.ndarray, size: int) -> np.ndarray:
    """offsets // size for offsets that are multiples of size."""
    return offsets // size if size & (size - 1) else offsets >> (size.bit_length() - 1)


_WIDE_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
_ALL_WRITTEN = {size: dtype.type(int.from_bytes(b"\x01" * size, "little")) for size, dtype in _WIDE_BITS.items()}
_LOW_32 = np.int64(0xFFFFFFFF)
ACCESSORS_KEPT = 8


def _word(values, itemsize: int):
    """Table entries as the words `_track_elements` compares: int64 words holding the entry twice
    (elements of 2 or more bytes), the int32 entries themselves for 1-byte elements."""
    if itemsize == 1:
        return np.asarray(values, np.int32)
    wide = np.asarray(values, np.int64)
    return (wide & _LOW_32) | (wide << 32)


def _words(table: np.ndarray, itemsize: int) -> np.ndarray:
    """A per-byte int32 table, flat, as `_word` words (word w: bytes 2w and 2w+1)."""
    flat = table.reshape(-1)
    return flat if itemsize == 1 else flat.view(np.int64)


def _settled(entries: np.ndarray, mine: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Words whose bytes record no access, or one by `mine`'s invocation, or one by its subgroup that a
    subgroup barrier has ordered (`ordered`): nothing there races with this invocation."""
    return (entries == -1) | (entries == mine) | (entries == ordered)


def _all_settled(entries: np.ndarray, mine: np.ndarray, ordered: np.ndarray) -> bool:
    return bool((entries == -1).all() or _settled(entries, mine, ordered).all())


def _uniform(words: np.ndarray) -> np.ndarray:
    """Words whose two bytes hold the same entry."""
    return words.astype(np.int32) == (words >> 32).astype(np.int32)


class _Accessors:
    """The invocation (local index) and its subgroup within the workgroup, per element of an access."""

    def __init__(self, who: np.ndarray, subgroup_size: int):
        self.who = who
        self.subgroup_size = subgroup_size
        self._words: dict[bool, tuple[np.ndarray, np.ndarray]] = {}

    def words(self, itemsize: int) -> tuple[np.ndarray, np.ndarray]:
        """(this invocation, its subgroup ordered by a subgroup barrier) as `_word` words."""
        wide = itemsize > 1
        if wide not in self._words:
            ordered = SUBGROUP_ORDERED - self.who // self.subgroup_size
            self._words[wide] = (_word(self.who, itemsize), _word(ordered, itemsize))
        return self._words[wide]
