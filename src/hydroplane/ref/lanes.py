"""The lane structure of one batch of workgroups: which lane is which invocation, subgroup, workgroup.

Lane i of a batch belongs to workgroup i // wg_lanes of the batch; within it, its local invocation
index is i % wg_lanes. Workgroups are padded to a whole number of subgroups: padding lanes
(local index >= invocations per workgroup) never run (`valid` is False for them). Subgroup s of
the batch is lanes [s*S, (s+1)*S), so subgroup-wide operations are reshapes to (subgroups, S).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hydroplane.spirv.enums import Scope


@dataclass(eq=False)
class Lanes:
    """The invocations of one batch of workgroups as lanes: each lane's workgroup, local index and subgroup."""

    subgroup_size: int
    local_size: tuple[int, int, int]
    workgroup_ids: np.ndarray  # (workgroups in batch, 3) uint32: WorkgroupId of each
    num_workgroups: tuple[int, int, int]  # the whole grid
    virtual: bool = False  # lanes of a function applied element-wise (no invocations behind them)

    def __post_init__(self):
        lx, ly, lz = self.local_size
        self.invocations = lx * ly * lz
        s = self.subgroup_size
        self.wg_lanes = -(-self.invocations // s) * s
        self.workgroups = len(self.workgroup_ids)
        self.count = self.workgroups * self.wg_lanes
        lane = np.arange(self.count, dtype=np.int64)
        self.local_index = lane % self.wg_lanes
        self.workgroup = lane // self.wg_lanes
        self.valid = self.local_index < self.invocations
        self.subgroups = self.count // s
        self.subgroups_per_workgroup = self.wg_lanes // s

    @classmethod
    def flat(cls, n: int) -> Lanes:
        """`n` lanes with no dispatch behind them (element-wise function calls, constants)."""
        return cls(max(n, 1), (max(n, 1), 1, 1), np.zeros((1, 3), np.uint32), (1, 1, 1), virtual=True)

    def local_id(self) -> np.ndarray:
        lx, ly, _ = self.local_size
        li = self.local_index
        return np.stack([li % lx, (li // lx) % ly, li // (lx * ly)], axis=1).astype(np.uint32)

    def global_id(self) -> np.ndarray:
        wg = self.workgroup_ids[self.workgroup].astype(np.uint32)
        return wg * np.array(self.local_size, np.uint32) + self.local_id()

    def describe(self, lane: int) -> str:
        """'wg (x,y,z) local (x,y,z)' of a lane."""
        if self.virtual:
            return f"element {lane}"
        wg = tuple(int(v) for v in self.workgroup_ids[lane // self.wg_lanes])
        lx, ly, _ = self.local_size
        li = int(lane % self.wg_lanes)
        local = (li % lx, (li // lx) % ly, li // (lx * ly))
        return f"wg ({wg[0]},{wg[1]},{wg[2]}) local ({local[0]},{local[1]},{local[2]})"

    def by_subgroup(self, x: np.ndarray) -> np.ndarray:
        """(lanes, ...) -> (subgroups, S, ...)."""
        return x.reshape((self.subgroups, self.subgroup_size) + x.shape[1:])

    def by_workgroup(self, x: np.ndarray) -> np.ndarray:
        """(lanes, ...) -> (workgroups, wg_lanes, ...)."""
        return x.reshape((self.workgroups, self.wg_lanes) + x.shape[1:])

    def first_lanes(self, scope: Scope) -> np.ndarray:
        """The first lane of every scope instance (Subgroup, else Workgroup)."""
        step = self.subgroup_size if scope == Scope.Subgroup else self.wg_lanes
        return np.arange(0, self.count, step)

    def instances(self, scope: Scope) -> int:
        return self.subgroups if scope == Scope.Subgroup else self.workgroups

    def instance_of_lane(self, scope: Scope) -> np.ndarray:
        step = self.subgroup_size if scope == Scope.Subgroup else self.wg_lanes
        return np.arange(self.count) // step
