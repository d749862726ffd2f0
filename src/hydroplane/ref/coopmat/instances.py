"""Scope instances of a batch and the lanes that hold a cooperative matrix's elements.

A matrix value is (instances, rows, cols); lane-level values are (lanes, ...). `ScopeLanes` converts
between the two: instance k of a Subgroup-scope matrix is subgroup k of the batch, held by its S
lanes; of a Workgroup-scope matrix, workgroup k, held by its invocations (padding lanes hold
nothing). `load_element`/`store_element` are the lanes' view of a matrix variable through an
element pointer (OpAccessChain into it), which `ref.access` loads and stores.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.values import as_signed
from hydroplane.spirv.enums import Scope
from hydroplane.spirv.types import CoopMatrix as CM


def distribution(ctx) -> cm.ElementDistribution:
    return (ctx.options or {}).get("coopmat_distribution", cm.DEFAULT_DISTRIBUTION)


class ScopeLanes:
    """The scope instances of a batch and the lanes that hold their elements."""

    def __init__(self, ctx, scope: Scope):
        lanes = ctx.lanes
        self.lanes = lanes
        if scope == Scope.Subgroup:
            self.count, self.step, self.holders = lanes.subgroups, lanes.subgroup_size, lanes.subgroup_size
        elif scope == Scope.Workgroup:
            self.count, self.step, self.holders = lanes.workgroups, lanes.wg_lanes, lanes.invocations
        else:
            raise cm.CoopMatError(f"cooperative-matrix scope {Scope(scope).name} is neither Subgroup nor Workgroup")
        self.first_lane = np.arange(self.count, dtype=np.int64) * self.step

    def by_instance(self, values: np.ndarray) -> np.ndarray:
        """(lanes, ...) -> (instances, holders, ...)."""
        values = np.broadcast_to(values, (self.lanes.count,) + values.shape[1:])
        return values.reshape((self.count, self.step) + values.shape[1:])[:, :self.holders]

    def to_lanes(self, per: np.ndarray) -> np.ndarray:
        """(instances, holders, ...) -> (lanes, ...); padding lanes get zeros."""
        out = np.zeros((self.count, self.step) + per.shape[2:], per.dtype)
        out[:, :self.holders] = per
        return out.reshape((self.count * self.step,) + per.shape[2:])

    def first_active(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(active instances, their first active lane) under a lane mask."""
        grouped = self.by_instance(mask)
        active = grouped.any(axis=1)
        return np.flatnonzero(active), self.first_lane[active] + grouped[active].argmax(axis=1)


def full(value: np.ndarray, count: int) -> np.ndarray:
    """A matrix value with its instance axis materialised (constants have one instance)."""
    value = np.asarray(value)
    if value.shape[0] == count:
        return value
    return np.broadcast_to(value, (count,) + value.shape[1:])


def per_instance(ctx, sc: ScopeLanes, value, what: str) -> np.ndarray:
    """(instances,) from a lane value that must agree across each instance's active lanes."""
    lane_values = np.asarray(value)
    grouped = sc.by_instance(lane_values)
    mask = sc.by_instance(ctx.mask)
    first = mask.argmax(axis=1)
    chosen = grouped[np.arange(sc.count), first]
    differs = mask & (grouped != chosen[:, None])
    if differs.any():
        where = np.argwhere(differs)
        inst, lane = where[0]
        ctx.diagnose("non-uniform", f"{what} must be the same in every invocation of a scope instance; "
                     f"instance {inst} has {chosen[inst].item()!r} and {grouped[inst, lane].item()!r}",
                     sc.first_lane[where[:, 0]] + where[:, 1])
    return chosen


def owner_lanes(sc: ScopeLanes, dist, rows: int, cols: int) -> np.ndarray:
    lane_of, _ = dist.owner(rows, cols, sc.holders)
    return lane_of.reshape(rows, cols)


def lane_index(ctx, sc: ScopeLanes, value) -> np.ndarray:
    index = as_signed(np.asarray(value)).astype(np.int64)
    return np.where(sc.by_instance(ctx.mask), sc.by_instance(index), 0)  # inactive lanes read element 0


def load_element(ctx, ptr, matrix_value, t: CM) -> np.ndarray:
    """The element `ptr.offset` (a per-lane index) of each lane's matrix: OpLoad through
    OpAccessChain into a cooperative-matrix variable."""
    sc = ScopeLanes(ctx, t.scope)
    index = lane_index(ctx, sc, ptr.offset)
    return sc.to_lanes(cm.extract(full(matrix_value, sc.count), index, sc.holders, distribution(ctx)))


def store_element(ctx, ptr, matrix_value, t: CM, value) -> np.ndarray:
    """The matrix with each active lane's element `ptr.offset` replaced by its value (OpStore)."""
    sc = ScopeLanes(ctx, t.scope)
    index = lane_index(ctx, sc, ptr.offset)
    values = sc.by_instance(np.asarray(value))
    return cm.insert(full(matrix_value, sc.count), values, index, sc.holders, distribution(ctx),
                     sc.by_instance(ctx.mask))
