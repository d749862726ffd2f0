"""Workgroup-memory tracking (uninitialised reads, races) of `ref.memory.Memory` against a byte-by-byte model.

`Memory` tracks whole elements at once where it can (aligned accesses, int64 words of its per-byte
tables, clean tables skipped, per-lanes bookkeeping reused) and falls back to a byte-level pass;
hypothesis drives random sequences of reads and writes of 1/2/4/8-byte elements (aligned or
not, with repeated addresses and repeated lanes arrays), workgroup and subgroup barriers, and
compares every diagnostic and every table entry with a plain per-byte model of the documented
rules (ref/memory.py): no access -1, one accessor its local index, several readers -2, an access
ordered by a subgroup barrier SUBGROUP_ORDERED - subgroup.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hydroplane.ref.memory import SUBGROUP_ORDERED, Memory, Region

WORKGROUPS, WG_LANES, SUBGROUP = 2, 8, 4
LANES = WORKGROUPS * WG_LANES
NBYTES = 48


class ByteModel:
    """The rules, one byte at a time, in plain Python."""

    def __init__(self):
        self.written: dict[tuple[int, int], bool] = {}
        self.writer: dict[tuple[int, int], int] = {}
        self.reader: dict[tuple[int, int], int] = {}

    def access(self, offsets, itemsize, lanes, write, report):
        keys, whos, byte_lanes = [], [], []
        for off, lane in zip(offsets, lanes):
            for b in range(itemsize):
                keys.append((lane // WG_LANES, off + b))
                whos.append(lane % WG_LANES)
                byte_lanes.append(lane)
        accessors: dict[tuple[int, int], set[int]] = {}
        for key, who in zip(keys, whos):
            accessors.setdefault(key, set()).add(who)
        if not write:
            unwritten = [i for i, key in enumerate(keys) if not self.written.get(key, False)]
            if unwritten:
                report.append(("uninitialized-read", f"read of shared (Workgroup) at byte {keys[unwritten[0]][1]}, "
                               "never written", sorted({byte_lanes[i] for i in unwritten})))

        def foreign(entry, who):
            ordered_other = entry <= SUBGROUP_ORDERED and SUBGROUP_ORDERED - entry != who // SUBGROUP
            return (entry >= 0 and entry != who) or ordered_other

        conflicts = []
        for i, (key, who) in enumerate(zip(keys, whos)):
            reader = self.reader.get(key, -1)
            bad = foreign(self.writer.get(key, -1), who)
            if write:
                bad = bad or reader == -2 or foreign(reader, who) or len(accessors[key]) > 1
            if bad:
                conflicts.append(i)
        if conflicts:
            kind = "write" if write else "read"
            report.append(("race", f"{kind} of shared (Workgroup) at byte {keys[conflicts[0]][1]} races with another "
                           "invocation's access since the last barrier", sorted({byte_lanes[i] for i in conflicts})))
        new_readers = {}
        for key, who in zip(keys, whos):
            if write:
                self.writer[key] = who
                self.written[key] = True
            else:
                reader = self.reader.get(key, -1)
                mine = reader in (-1, who, SUBGROUP_ORDERED - who // SUBGROUP)
                new_readers[key] = -2 if len(accessors[key]) > 1 or not mine else who
        self.reader.update(new_readers)

    def barrier(self, rows):
        for table in (self.writer, self.reader):
            for key in [k for k in table if k[0] in rows]:
                table[key] = -1

    def subgroup_barrier(self, met):
        for table in (self.writer, self.reader):
            for key, entry in table.items():
                if entry >= 0 and met[key[0]][entry // SUBGROUP]:
                    table[key] = SUBGROUP_ORDERED - entry // SUBGROUP


def subgroup_barrier(region: Region, met: np.ndarray) -> None:
    """What OpControlBarrier with Subgroup scope does to the tables (ref/ops_memory.py)."""
    for table in (region.writer, region.reader):
        owner = np.where(table >= 0, table // SUBGROUP, 0)
        ordered = (table >= 0) & np.take_along_axis(met, owner, axis=1)
        table[ordered] = SUBGROUP_ORDERED - owner[ordered]


steps = st.one_of(
    st.tuples(st.just("access"), st.booleans(), st.sampled_from([1, 2, 4, 8]), st.booleans(),
              st.lists(st.integers(0, LANES - 1), min_size=1, max_size=6),
              st.lists(st.integers(0, NBYTES - 8), min_size=6, max_size=6), st.booleans()),
    st.tuples(st.just("barrier"), st.lists(st.booleans(), min_size=WORKGROUPS, max_size=WORKGROUPS)),
    st.tuples(st.just("subgroup barrier"),
              st.lists(st.booleans(), min_size=WORKGROUPS * WG_LANES // SUBGROUP,
                       max_size=WORKGROUPS * WG_LANES // SUBGROUP)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, min_size=1, max_size=25), st.booleans())
def test_tracking_matches_the_byte_model(program, start_written):
    report: list = []
    memory = Memory(lambda kind, message, lanes: report.append((kind, message, sorted(int(v) for v in lanes))),
                    local_index=np.arange(LANES) % WG_LANES)
    memory.subgroup_size = SUBGROUP
    region = Region("shared", "Workgroup", NBYTES, rows=WORKGROUPS, row_of_lane=np.arange(LANES) // WG_LANES,
                    track=True)
    model = ByteModel()
    if start_written:  # an initialiser: written, owned by none
        region.written[:] = True
        model.written = {(r, b): True for r in range(WORKGROUPS) for b in range(region.written.shape[1])}
    kept_lanes: dict[tuple, np.ndarray] = {}
    want: list = []
    for step in program:
        if step[0] == "access":
            _, write, itemsize, aligned, lane_list, raw_offsets, reuse = step
            offsets = [o - o % itemsize if aligned else o for o in raw_offsets[:len(lane_list)]]
            lanes = np.array(lane_list, np.int64)
            if reuse:  # the same lanes object again, as cooperative-matrix accesses pass it
                lanes = kept_lanes.setdefault(tuple(lane_list), lanes)
            offs = np.array(offsets, np.int64)
            if write:
                values = np.arange(len(offsets), dtype=f"u{itemsize}")
                memory.write(region, region.rows(lanes), offs, values, lanes)
            else:
                memory.read(region, region.rows(lanes), offs, np.dtype(f"u{itemsize}"), lanes)
            model.access(offsets, itemsize, lane_list, write, want)
        elif step[0] == "barrier":
            rows = np.flatnonzero(step[1])
            region.reset_epoch(rows)
            model.barrier(set(int(r) for r in rows))
        else:
            met = np.array(step[1]).reshape(WORKGROUPS, WG_LANES // SUBGROUP)
            subgroup_barrier(region, met)
            model.subgroup_barrier(met)
        assert report == want
        for row in range(WORKGROUPS):
            for byte in range(NBYTES):
                key = (row, byte)
                assert (bool(region.written[key]), int(region.writer[key]), int(region.reader[key])) == \
                    (model.written.get(key, False), model.writer.get(key, -1), model.reader.get(key, -1)), \
                    f"byte {key} after {step}"
