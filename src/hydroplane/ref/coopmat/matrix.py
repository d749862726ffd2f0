"""Cooperative-matrix values in the reference executor: which invocation holds which element (the
element-to-invocation distribution), and the lane-level views of a matrix (Length,
OpCompositeExtract/Insert/Construct, GetCoordinate).

A matrix's type is a `hydroplane.spirv.types.CoopMatrix`; its value is one NumPy array of shape
(instances, rows, cols): a whole matrix per scope instance (per subgroup for Subgroup scope, per
workgroup for Workgroup scope), with the component's own dtype (ml_dtypes for bf16 and fp8). Lanes
only matter where an invocation sees single elements; there `ElementDistribution` says which (lane,
index) pair holds which element. The default, STRIDED, puts element i of lane l of an R x C matrix
over S lanes at row-major flat index l + i*S; Length = ceil(R*C / S); slots past R*C are padding
(read as zero, writes dropped).

Semantics that are not about lanes live beside this file: memory (load/store), arith (MulAdd,
conversions, ConvertUse, transpose), reduce (Reduce, PerElementOp), tensor (NV2 tensor layouts and
views).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.spirv.types import CoopMatrix


class CoopMatError(HydroplaneError):
    """A cooperative-matrix operation the reference executor cannot give a defined answer for."""


def check_value(mtype: CoopMatrix, mats: np.ndarray, what: str = "matrix") -> np.ndarray:
    """Return mats if it is a (instances, rows, cols) array of cooperative-matrix type `mtype`, else raise."""
    if mats.ndim != 3 or mats.shape[1:] != mtype.shape or mats.dtype != mtype.component.dtype:
        raise CoopMatError(f"{what} has shape {mats.shape} and dtype {mats.dtype}; "
                           f"{mtype} needs (instances, {mtype.rows}, {mtype.cols})")
    return mats


FlatIndexRule = Callable[[np.ndarray, np.ndarray, int, int, int], np.ndarray]


def _strided(lane, i, lanes, rows, cols):
    return lane + i * lanes


def _blocked(lane, i, lanes, rows, cols):
    return lane * math.ceil(rows * cols / lanes) + i


@dataclass(frozen=True)
class ElementDistribution:
    """Which (lane, index) slot of an R x C matrix over S lanes holds which element.

    `rule(lane, index, S, R, C)` gives the row-major flat index for every slot (NumPy arrays
    broadcast); a result outside [0, R*C) marks padding. `length(R, C, S)` gives Length.
    A device's own layout can be given as an explicit table with `from_table`.
    """

    name: str
    rule: FlatIndexRule
    length_rule: Callable[[int, int, int], int] = lambda rows, cols, lanes: math.ceil(rows * cols / lanes)
    _tables: dict = field(default_factory=dict, compare=False, repr=False)

    def length(self, rows: int, cols: int, lanes: int) -> int:
        """OpCooperativeMatrixLengthKHR: elements per invocation."""
        if lanes <= 0:
            raise CoopMatError(f"scope instance needs at least one invocation, got {lanes}")
        return int(self.length_rule(rows, cols, lanes))

    def table(self, rows: int, cols: int, lanes: int) -> np.ndarray:
        """(lanes, Length) int64 array of row-major flat indices; -1 marks a padding slot."""
        key = (rows, cols, lanes)
        found = self._tables.get(key)
        if found is not None:
            return found
        length = self.length(rows, cols, lanes)
        lane = np.arange(lanes, dtype=np.int64)[:, None]
        index = np.arange(length, dtype=np.int64)[None, :]
        flat = np.broadcast_to(np.asarray(self.rule(lane, index, lanes, rows, cols), dtype=np.int64),
                               (lanes, length)).copy()
        flat[(flat < 0) | (flat >= rows * cols)] = -1
        held = np.zeros(rows * cols, dtype=bool)
        held[flat[flat >= 0]] = True
        if not held.all():
            missing = np.flatnonzero(~held)[:4]
            raise CoopMatError(f"distribution {self.name!r} leaves elements of a {rows}x{cols} matrix "
                               f"over {lanes} lanes unheld (row-major flat indices {missing.tolist()} ...)")
        flat.setflags(write=False)
        self._tables[key] = flat
        return flat

    def owner(self, rows: int, cols: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
        """For each row-major flat element, the first (lane, index) slot that holds it."""
        table = self.table(rows, cols, lanes)
        lane_of = np.full(rows * cols, -1, dtype=np.int64)
        index_of = np.full(rows * cols, -1, dtype=np.int64)
        lane_idx, slot_idx = np.nonzero(table >= 0)  # ascending (lane, slot)
        flat = table[lane_idx, slot_idx]
        lane_of[flat[::-1]] = lane_idx[::-1]  # reversed: the first holder is written last and stays
        index_of[flat[::-1]] = slot_idx[::-1]
        return lane_of, index_of

    @staticmethod
    def from_table(name: str, table) -> ElementDistribution:
        """A distribution from an explicit (lanes, Length) table of flat indices (-1: padding)."""
        fixed = np.asarray(table, dtype=np.int64)
        if fixed.ndim != 2:
            raise CoopMatError(f"distribution table {name!r} must be 2-D (lanes, Length), got {fixed.shape}")

        def rule(lane, index, lanes, rows, cols):
            if lanes != fixed.shape[0]:
                raise CoopMatError(f"distribution table {name!r} is for {fixed.shape[0]} lanes, used with {lanes}")
            return fixed[lane, index]

        return ElementDistribution(name, rule, lambda rows, cols, lanes: fixed.shape[1])


STRIDED = ElementDistribution("strided", _strided)
BLOCKED = ElementDistribution("blocked", _blocked)
DEFAULT_DISTRIBUTION = STRIDED


def _flat(mats: np.ndarray) -> np.ndarray:
    return mats.reshape(mats.shape[0], -1)


def lane_elements(mats: np.ndarray, lanes: int, dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """(instances, lanes, Length): what each invocation holds; padding slots read as zero."""
    n, rows, cols = mats.shape
    table = dist.table(rows, cols, lanes)
    flat = _flat(mats)[:, np.maximum(table, 0)]
    flat[:, table < 0] = 0
    return flat


def from_lane_elements(values: np.ndarray, rows: int, cols: int,
                       dist: ElementDistribution = DEFAULT_DISTRIBUTION, into: np.ndarray | None = None,
                       active: np.ndarray | None = None) -> np.ndarray:
    """Matrices from (instances, lanes, Length) per-lane elements (padding dropped).

    Where two slots hold one element the later lane wins. With `into` and an (instances,
    lanes) `active` mask, inactive lanes leave their elements as they are in `into`.
    """
    n, lanes, length = values.shape
    table = dist.table(rows, cols, lanes)
    if table.shape[1] != length:
        raise CoopMatError(f"{length} elements per lane given; the distribution holds {table.shape[1]}")
    out = np.zeros((n, rows * cols), values.dtype) if into is None else _flat(into).astype(values.dtype, copy=True)
    keep = np.broadcast_to(table >= 0, (n, lanes, length))
    if active is not None:
        keep = keep & np.asarray(active, bool)[:, :, None]
    inst, lane, slot = np.nonzero(keep)
    out[inst, table[lane, slot]] = values[inst, lane, slot]
    return out.reshape(n, rows, cols)


def _check_index(index, length: int, what: str) -> np.ndarray:
    index = np.asarray(index, dtype=np.int64)
    bad = (index < 0) | (index >= length)
    if bad.any():
        where = np.argwhere(np.broadcast_to(bad, bad.shape))[:4].tolist()
        values = np.broadcast_to(index, bad.shape)[bad][:4].tolist()
        raise CoopMatError(f"{what}: index {values} outside [0, {length}) (instance, lane) {where}")
    return index


def extract(mats: np.ndarray, index, lanes: int, dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """OpCompositeExtract (literal index) or a dynamic index (instances, lanes): each lane's element."""
    n, rows, cols = mats.shape
    table = dist.table(rows, cols, lanes)
    index = np.broadcast_to(_check_index(index, table.shape[1], "cooperative-matrix element"), (n, lanes))
    flat = table[np.arange(lanes)[None, :], index]
    values = _flat(mats)[np.arange(n)[:, None], np.maximum(flat, 0)]
    values[flat < 0] = 0
    return values


def insert(mats: np.ndarray, values, index, lanes: int, dist: ElementDistribution = DEFAULT_DISTRIBUTION,
           active: np.ndarray | None = None) -> np.ndarray:
    """OpCompositeInsert: a copy of mats with each (active) lane's element `index` set to its value."""
    n, rows, cols = mats.shape
    table = dist.table(rows, cols, lanes)
    index = np.broadcast_to(_check_index(index, table.shape[1], "cooperative-matrix element"), (n, lanes))
    values = np.broadcast_to(np.asarray(values).astype(mats.dtype, copy=False), (n, lanes))
    flat = table[np.arange(lanes)[None, :], index]
    keep = flat >= 0
    if active is not None:
        keep &= np.asarray(active, bool)
    out = _flat(mats).copy()
    inst, lane = np.nonzero(keep)
    out[inst, flat[inst, lane]] = values[inst, lane]
    return out.reshape(n, rows, cols)


def construct(values, mtype: CoopMatrix, lanes: int, dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """OpCompositeConstruct/OpConstantComposite: every element a lane holds becomes its scalar.

    `values` is (instances, lanes), (instances,) or a scalar; a uniform value fills the matrix.
    """
    values = np.asarray(values).astype(mtype.component.dtype, copy=False)
    if values.ndim <= 1:
        n = 1 if values.ndim == 0 else values.shape[0]
        return np.broadcast_to(values.reshape(n, 1, 1), (n, mtype.rows, mtype.cols)).copy()
    n = values.shape[0]
    length = dist.length(mtype.rows, mtype.cols, lanes)
    spread = np.broadcast_to(values[:, :, None], (n, lanes, length))
    return from_lane_elements(spread, mtype.rows, mtype.cols, dist)


def get_coordinate(index, rows: int, cols: int, lanes: int, instances: int,
                   dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """OpCooperativeMatrixGetCoordinateEXT: (instances, lanes, 2) uint32 (row, column) of element index.

    An index past Length, or a padding slot, has no element: the spec leaves the value undefined,
    the reference executor raises instead.
    """
    table = dist.table(rows, cols, lanes)
    index = np.broadcast_to(_check_index(index, table.shape[1], "GetCoordinate"), (instances, lanes))
    flat = table[np.arange(lanes)[None, :], index]
    if (flat < 0).any():
        where = np.argwhere(flat < 0)[:4].tolist()
        raise CoopMatError(f"GetCoordinate: index names a padding slot (no element) at (instance, lane) {where}")
    return np.stack([flat // cols, flat % cols], axis=-1).astype(np.uint32)


def uniform_per_instance(values, what: str) -> np.ndarray:
    """(instances,) from (instances, lanes) values that must agree within each scope instance."""
    values = np.asarray(values)
    if values.ndim == 0:
        return values.reshape(1)
    if values.ndim == 1:
        return values
    first = values[:, :1]
    differs = values != first
    if differs.any():
        inst, lane = np.argwhere(differs)[0]
        raise CoopMatError(f"{what} must be the same for every invocation of a scope instance; "
                           f"instance {inst}: lane 0 has {first[inst, 0].item()!r}, "
                           f"lane {lane} has {values[inst, lane].item()!r}")
    return values[:, 0]

