"""OpCooperativeMatrixReduceEXT/NV and OpCooperativeMatrixPerElementOpEXT/NV, exactly as seed 000
states, with the call order of CombineFunc and Func made explicit.

Both take the SPIR-V function as a vectorised Python callable (the interpreter runs the
function body over a vector of virtual lanes, one per call):
  * Reduce: `combine(x, y) -> z` on 1-D arrays of equal length. Pairs are combined as a
    balanced tree: at each level combine(v[2k], v[2k+1]) over the remaining values in
    row-major order, an odd last value passing through unchanged. Row reduces each row, Column
    each column, Row|Column reduces each row and then the row results; 2x2 computes
    combine(combine(m[2r,2c], m[2r+1,2c]), combine(m[2r,2c+1], m[2r+1,2c+1])).
  * PerElementOp: `func(row, col, element, *extra) -> result`, one call per element of every
    instance (rows and columns as uint32). A matrix operand passes its element; any other
    operand passes the value of the invocation that holds that element (the distribution's
    first holder) when given per lane, or its per-instance value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hydroplane.ref.coopmat.matrix import DEFAULT_DISTRIBUTION, CoopMatError, ElementDistribution, check_value
from hydroplane.spirv.enums import CooperativeMatrixReduce as ReduceMode
from hydroplane.spirv.enums import CooperativeMatrixUse as Use
from hydroplane.spirv.types import CoopMatrix

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _call_combine(combine: Combine, x: np.ndarray, y: np.ndarray, dtype) -> np.ndarray:
    out = np.asarray(combine(x, y))
    if out.shape != x.shape:
        raise CoopMatError(f"CombineFunc returned shape {out.shape} for {x.shape} inputs")
    return out.astype(dtype, copy=False)


def tree_reduce(values: np.ndarray, combine: Combine) -> np.ndarray:
    """Reduce the last axis of values with a balanced pairwise tree of combine calls."""
    dtype = values.dtype
    while values.shape[-1] > 1:
        pairs = values.shape[-1] // 2
        left = values[..., 0:2 * pairs:2]
        right = values[..., 1:2 * pairs:2]
        merged = _call_combine(combine, left.reshape(-1), right.reshape(-1), dtype).reshape(left.shape)
        if values.shape[-1] % 2:
            merged = np.concatenate([merged, values[..., -1:]], axis=-1)
        values = merged
    return values[..., 0]


def check_reduce_types(src: CoopMatrix, dst: CoopMatrix, mode: int) -> ReduceMode:
    """The Reduce rules of seed 000; returns the mode as flags."""
    if int(mode) & ~int(ReduceMode.Row | ReduceMode.Column | ReduceMode.CooperativeMatrixReduce2x2):
        raise CoopMatError(f"Reduce mode {int(mode):#x} has unknown bits")
    mode = ReduceMode(mode)
    if mode not in (ReduceMode.Row, ReduceMode.Column, ReduceMode.Row | ReduceMode.Column,
                    ReduceMode.CooperativeMatrixReduce2x2):
        raise CoopMatError(f"Reduce must be Row, Column, Row|Column or 2x2, got {mode!r}")
    if src.component.dtype != dst.component.dtype:
        raise CoopMatError(f"Reduce: component {src.component.dtype} -> {dst.component.dtype}; they must match")
    if src.use != Use.MatrixAccumulatorKHR or dst.use != Use.MatrixAccumulatorKHR:
        raise CoopMatError("Reduce: Matrix and Result Type must both have Use MatrixAccumulatorKHR")
    if src.scope != dst.scope:
        raise CoopMatError(f"Reduce: scope {src.scope.name} -> {dst.scope.name}; scopes must match")
    if mode == ReduceMode.CooperativeMatrixReduce2x2 and (src.rows % 2 or src.cols % 2 or
                                         dst.shape != (src.rows // 2, src.cols // 2)):
        raise CoopMatError(f"Reduce 2x2: {src.rows}x{src.cols} -> {dst.rows}x{dst.cols}; the result "
                           f"must have half the rows and half the columns")
    if mode == ReduceMode.Row and dst.rows != src.rows:
        raise CoopMatError(f"Reduce Row: result has {dst.rows} rows, Matrix has {src.rows}")
    if mode == ReduceMode.Column and dst.cols != src.cols:
        raise CoopMatError(f"Reduce Column: result has {dst.cols} columns, Matrix has {src.cols}")
    return mode


def reduce(mats: np.ndarray, src: CoopMatrix, dst: CoopMatrix, mode: int, combine: Combine) -> np.ndarray:
    """(instances, dst.rows, dst.cols): the reduction of each instance's matrix."""
    check_value(src, mats, "Reduce operand")
    mode = check_reduce_types(src, dst, mode)
    n = mats.shape[0]
    if mode == ReduceMode.CooperativeMatrixReduce2x2:
        e00, e10 = mats[:, 0::2, 0::2], mats[:, 1::2, 0::2]
        e01, e11 = mats[:, 0::2, 1::2], mats[:, 1::2, 1::2]
        dtype = mats.dtype
        left = _call_combine(combine, e00.reshape(-1), e10.reshape(-1), dtype)
        right = _call_combine(combine, e01.reshape(-1), e11.reshape(-1), dtype)
        return _call_combine(combine, left, right, dtype).reshape(n, dst.rows, dst.cols)
    if mode == ReduceMode.Row:
        per_row = tree_reduce(mats, combine)  # (n, rows)
        return np.repeat(per_row[:, :, None], dst.cols, axis=2)
    if mode == ReduceMode.Column:
        per_col = tree_reduce(mats.swapaxes(1, 2), combine)  # (n, cols)
        return np.repeat(per_col[:, None, :], dst.rows, axis=1)
    total = tree_reduce(tree_reduce(mats, combine), combine)  # rows first, then the row results
    return np.broadcast_to(total[:, None, None], (n, dst.rows, dst.cols)).copy()


@dataclass(frozen=True)
class MatrixOperand:
    """A PerElementOp optional operand of cooperative-matrix type: (instances, rows, cols)."""

    mats: np.ndarray


@dataclass(frozen=True)
class LaneOperand:
    """A PerElementOp optional operand that is not a matrix (a scalar or vector), given
    per="lane": (instances, lanes, *shape); per="instance": (instances, *shape);
    per="uniform": (*shape), the same everywhere."""

    values: np.ndarray
    per: str = "lane"


PerElementFunc = Callable[..., np.ndarray]


def per_element_op(mats: np.ndarray, mtype: CoopMatrix, func: PerElementFunc,
                   extra: Sequence[MatrixOperand | LaneOperand] = (), lanes: int | None = None,
                   dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """(instances, rows, cols): func(row, col, element, *extra) for every element."""
    check_value(mtype, mats, "PerElementOp operand")
    n, rows, cols = mats.shape
    count = n * rows * cols
    row = np.broadcast_to(np.arange(rows, dtype=np.uint32)[None, :, None], mats.shape).reshape(-1)
    col = np.broadcast_to(np.arange(cols, dtype=np.uint32)[None, None, :], mats.shape).reshape(-1)
    args = [row, col, mats.reshape(-1)]
    for position, operand in enumerate(extra):
        args.append(_element_argument(operand, mtype, n, lanes, dist, position))
    out = np.asarray(func(*args))
    if out.shape != (count,):
        raise CoopMatError(f"PerElementOp Func returned shape {out.shape}, expected ({count},)")
    return out.astype(mtype.component.dtype, copy=False).reshape(mats.shape)


def _element_argument(operand, mtype: CoopMatrix, n: int, lanes: int | None,
                      dist: ElementDistribution, position: int) -> np.ndarray:
    rows, cols = mtype.shape
    if isinstance(operand, MatrixOperand):
        if operand.mats.shape != (n, rows, cols):
            raise CoopMatError(f"PerElementOp operand {position}: matrix shape {operand.mats.shape} "
                               f"must match Matrix ({n}, {rows}, {cols})")
        return operand.mats.reshape(-1)
    if not isinstance(operand, LaneOperand):
        raise CoopMatError(f"PerElementOp operand {position} must be MatrixOperand or LaneOperand")
    values = np.asarray(operand.values)
    count = n * rows * cols
    if operand.per == "lane":
        if lanes is None or values.shape[:2] != (n, lanes):
            raise CoopMatError(f"PerElementOp operand {position}: per-lane values {values.shape} "
                               f"need (instances, lanes) = ({n}, {lanes}) first")
        owner_lane, _ = dist.owner(rows, cols, lanes)
        return values[:, owner_lane].reshape((count,) + values.shape[2:])
    if operand.per == "instance":
        if values.shape[:1] != (n,):
            raise CoopMatError(f"PerElementOp operand {position}: per-instance values {values.shape} "
                               f"need {n} instances first")
        return np.repeat(values, rows * cols, axis=0)
    if operand.per == "uniform":
        return np.broadcast_to(values, (count,) + values.shape)
    raise CoopMatError(f"PerElementOp operand {position}: per must be 'lane', 'instance' or 'uniform'")
