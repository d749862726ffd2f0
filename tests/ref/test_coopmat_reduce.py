"""Reduce and PerElementOp as seed 000 states them, against NumPy reductions and loops."""

import numpy as np
import pytest

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import reduce as rd
from hydroplane.spirv.enums import CooperativeMatrixUse as Use

from ref_helpers import coop_type

ACC = Use.MatrixAccumulatorKHR


def _t(dtype, rows, cols, use=ACC):
    return coop_type(dtype, rows, cols, use)


def _counting(fn):
    calls = []

    def combine(x, y):
        calls.append(len(x))
        return fn(x, y)
    return combine, calls


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float32])
@pytest.mark.parametrize("name,fn,np_fn", [("sum", np.add, np.sum), ("min", np.minimum, np.min),
                                           ("max", np.maximum, np.max)])
@pytest.mark.parametrize("rows,cols", [(8, 8), (16, 8), (5, 7)])
def test_row_column_and_rowcol(dtype, name, fn, np_fn, rows, cols):
    rng = np.random.default_rng(rows * cols + len(name))
    mats = rng.integers(-50 if dtype != np.uint32 else 0, 50, (3, rows, cols)).astype(dtype)
    src = _t(dtype, rows, cols)
    row = rd.reduce(mats, src, _t(dtype, rows, 4), rd.ReduceMode.Row, fn)
    np.testing.assert_array_equal(row, np.repeat(np_fn(mats, axis=2)[:, :, None], 4, axis=2))
    col = rd.reduce(mats, src, _t(dtype, 2, cols), rd.ReduceMode.Column, fn)
    np.testing.assert_array_equal(col, np.repeat(np_fn(mats, axis=1)[:, None, :], 2, axis=1))
    both = rd.reduce(mats, src, _t(dtype, 3, 9), rd.ReduceMode.Row | rd.ReduceMode.Column, fn)
    np.testing.assert_array_equal(both, np.broadcast_to(np_fn(mats, axis=(1, 2))[:, None, None], (3, 3, 9)))
    assert row.dtype == col.dtype == both.dtype == np.dtype(dtype)


def test_2x2_combines_the_four_neighbours_in_the_documented_order():
    rng = np.random.default_rng(1)
    mats = rng.integers(0, 1000, (2, 8, 16)).astype(np.int32)
    order = []

    def combine(x, y):  # not commutative: exposes the order
        order.append(None)
        return x * 3 + y
    got = rd.reduce(mats, _t(np.int32, 8, 16), _t(np.int32, 4, 8), rd.ReduceMode.CooperativeMatrixReduce2x2, combine)
    e00, e10, e01, e11 = mats[:, 0::2, 0::2], mats[:, 1::2, 0::2], mats[:, 0::2, 1::2], mats[:, 1::2, 1::2]
    np.testing.assert_array_equal(got, (e00 * 3 + e10) * 3 + (e01 * 3 + e11))
    assert len(order) == 3  # three vectorised calls, each over every output element


def test_tree_order_for_a_non_associative_combine():
    mats = np.arange(1, 6, dtype=np.float64).reshape(1, 1, 5)
    got = rd.reduce(mats, _t(np.float64, 1, 5), _t(np.float64, 1, 1), rd.ReduceMode.Row, lambda x, y: x - y)
    # ((1-2) - (3-4)) - 5: pairs at each level, the odd last value passes through.
    assert got[0, 0, 0] == ((1 - 2) - (3 - 4)) - 5
    combine, calls = _counting(np.add)
    rd.reduce(np.ones((4, 8, 8), np.float32), _t(np.float32, 8, 8), _t(np.float32, 8, 8), rd.ReduceMode.Row, combine)
    assert calls == [4 * 8 * 4, 4 * 8 * 2, 4 * 8 * 1]  # log2(8) vectorised levels


@pytest.mark.parametrize("mode,dst,message", [
    (4, (8, 8), "half the rows"), (1, (4, 8), "result has 4 rows"), (2, (8, 4), "result has 4 columns"),
    (5, (4, 4), "Row, Column, Row|Column or 2x2"), (8, (8, 8), "unknown bits"),
])
def test_reduce_shape_rules(mode, dst, message):
    mats = np.zeros((1, 8, 8), np.float32)
    with pytest.raises(cm.CoopMatError, match=message):
        rd.reduce(mats, _t(np.float32, 8, 8), _t(np.float32, *dst), mode, np.add)


def test_reduce_type_rules():
    mats = np.zeros((1, 8, 8), np.float32)
    with pytest.raises(cm.CoopMatError, match="MatrixAccumulatorKHR"):
        rd.reduce(mats, _t(np.float32, 8, 8, Use.MatrixAKHR), _t(np.float32, 8, 8, Use.MatrixAKHR), 1, np.add)
    with pytest.raises(cm.CoopMatError, match="must match"):
        rd.reduce(mats, _t(np.float32, 8, 8), _t(np.float16, 8, 8), 1, np.add)
    with pytest.raises(cm.CoopMatError, match="CombineFunc returned shape"):
        rd.reduce(mats, _t(np.float32, 8, 8), _t(np.float32, 8, 8), 1, lambda x, y: x[:1])


def test_per_element_op_passes_row_col_element_and_extras():
    rng = np.random.default_rng(2)
    t = _t(np.float32, 8, 16)
    mats = rng.standard_normal((3, 8, 16)).astype(np.float32)
    other = rng.standard_normal((3, 8, 16)).astype(np.float32)
    per_instance = np.array([1.0, 2.0, 3.0], np.float32)
    lanes = 32
    per_lane = rng.standard_normal((3, lanes)).astype(np.float32)
    seen = {}

    def func(row, col, element, m, s, lane_value):
        seen.update(row=row, col=col)
        return element * 100 + row.astype(np.float32) * 10 + col.astype(np.float32) + m * s + lane_value

    got = rd.per_element_op(mats, t, func, [rd.MatrixOperand(other), rd.LaneOperand(per_instance, per="instance"),
                                            rd.LaneOperand(per_lane)], lanes=lanes)
    r = np.arange(8, dtype=np.float32)[None, :, None]
    c = np.arange(16, dtype=np.float32)[None, None, :]
    flat = np.arange(128).reshape(8, 16)
    owner_value = per_lane[:, flat % lanes]  # STRIDED: element f is held by lane f mod S
    expect = mats * 100 + r * 10 + c + other * per_instance[:, None, None] + owner_value
    np.testing.assert_array_equal(got, expect.astype(np.float32))
    assert seen["row"].dtype == np.uint32 and seen["row"].shape == (3 * 128,)


def test_per_element_op_errors():
    t = _t(np.float16, 8, 8)
    mats = np.ones((2, 8, 8), np.float16)
    with pytest.raises(cm.CoopMatError, match="returned shape"):
        rd.per_element_op(mats, t, lambda r, c, e: e[:3])
    with pytest.raises(cm.CoopMatError, match="must match Matrix"):
        rd.per_element_op(mats, t, lambda r, c, e, m: e, [rd.MatrixOperand(np.ones((2, 4, 4), np.float16))])
    with pytest.raises(cm.CoopMatError, match="need \\(instances, lanes\\)"):
        rd.per_element_op(mats, t, lambda r, c, e, m: e, [rd.LaneOperand(np.ones((2, 8)))], lanes=16)
    with pytest.raises(cm.CoopMatError, match="per must be"):
        rd.per_element_op(mats, t, lambda r, c, e, m: e, [rd.LaneOperand(np.ones(2), per="group")], lanes=8)


def test_per_element_op_vector_operands_per_lane_and_uniform():
    t = _t(np.float32, 4, 4)
    rng = np.random.default_rng(3)
    mats = rng.standard_normal((2, 4, 4)).astype(np.float32)
    per_lane = rng.standard_normal((2, 8, 3)).astype(np.float32)  # a vec3 per invocation
    uniform = np.array([1.0, 2.0], np.float32)

    def func(row, col, element, v3, v2):
        assert v3.shape == (32, 3) and v2.shape == (32, 2)
        return element + v3[:, 0] + v3[:, 2] * v2[:, 1]

    got = rd.per_element_op(mats, t, func, [rd.LaneOperand(per_lane), rd.LaneOperand(uniform, per="uniform")],
                            lanes=8)
    owner = np.arange(16) % 8  # STRIDED over 8 lanes
    want = mats.reshape(2, 16) + per_lane[:, owner, 0] + per_lane[:, owner, 2] * 2.0
    np.testing.assert_array_equal(got.reshape(2, 16), want.astype(np.float32))
