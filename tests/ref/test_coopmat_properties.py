"""Hypothesis properties of the pure cooperative-matrix semantics: random shapes, lane counts,
layouts, strides and dtypes (the per-case tests pin the documented rules; these look for holes)."""

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import arith as ar
from hydroplane.ref.coopmat import memory as mem
from hydroplane.ref.coopmat import reduce as rd
from hydroplane.spirv.enums import CooperativeMatrixUse as Use

from ref_helpers import coop_type

SETTINGS = settings(max_examples=60, deadline=None)
DTYPES = [np.float16, np.float32, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32, np.uint32]


@SETTINGS
@given(rows=st.integers(1, 16), cols=st.integers(1, 16), lanes=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
       blocked=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_lane_views_round_trip_and_agree_with_coordinates(rows, cols, lanes, blocked, seed):
    dist = cm.BLOCKED if blocked else cm.STRIDED
    mats = np.random.default_rng(seed).standard_normal((2, rows, cols)).astype(np.float32)
    held = cm.lane_elements(mats, lanes, dist)
    np.testing.assert_array_equal(cm.from_lane_elements(held, rows, cols, dist), mats)
    table = dist.table(rows, cols, lanes)
    for i in range(table.shape[1]):
        values = cm.extract(mats, i, lanes, dist)
        real = table[:, i] >= 0
        np.testing.assert_array_equal(values[:, real], mats.reshape(2, -1)[:, table[real, i]])


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), rows=st.integers(1, 12), cols=st.integers(1, 12),
       column_major=st.booleans(), pad=st.integers(0, 5), pointee_factor=st.sampled_from([1, 2, 4]),
       base_elems=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_store_then_load_round_trips(dtype, rows, cols, column_major, pad, pointee_factor, base_elems, seed):
    dtype = np.dtype(dtype)
    layout = mem.Layout.ColumnMajorKHR if column_major else mem.Layout.RowMajorKHR
    size = dtype.itemsize
    pointee = size * pointee_factor
    minor = rows if column_major else cols
    stride = -(-(minor * size) // pointee) + pad  # in pointee units, at least a whole row/column
    majors = cols if column_major else rows
    base = base_elems * size
    nbytes = base + majors * stride * pointee + 16
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, nbytes, dtype=np.uint8)
    before = raw.copy()
    t = coop_type(dtype, rows, cols)
    mats = rng.integers(0, 100, (1, rows, cols)).astype(dtype)
    mem.store(raw, [base], mats, t, layout, stride, pointee)
    np.testing.assert_array_equal(mem.load(raw, [base], t, layout, stride, pointee).view(f"u{size}"),
                                  mats.view(f"u{size}"))
    touched = np.zeros(nbytes, bool)
    offs = base + mem.element_offsets(rows, cols, layout, stride, pointee, size)
    for o in offs.reshape(-1):
        touched[o:o + size] = True
    assert (raw[~touched] == before[~touched]).all()


@SETTINGS
@given(rows=st.integers(1, 9).map(lambda r: 2 * r), cols=st.integers(1, 9).map(lambda c: 2 * c),
       mode=st.sampled_from(["Row", "Column", "RowColumn", "2x2"]), seed=st.integers(0, 2**32 - 1))
def test_integer_sum_reductions_equal_numpy(rows, cols, mode, seed):
    mats = np.random.default_rng(seed).integers(-1000, 1000, (3, rows, cols)).astype(np.int32)
    flags = {"Row": 1, "Column": 2, "RowColumn": 3, "2x2": 4}[mode]
    out_shape = (rows // 2, cols // 2) if mode == "2x2" else (rows, cols)
    src = coop_type(np.int32, rows, cols, Use.MatrixAccumulatorKHR)
    dst = coop_type(np.int32, *out_shape, Use.MatrixAccumulatorKHR)
    got = rd.reduce(mats, src, dst, flags, np.add)
    if mode == "2x2":
        want = mats.reshape(3, rows // 2, 2, cols // 2, 2).sum(axis=(2, 4))
    else:
        axis = {"Row": (2,), "Column": (1,), "RowColumn": (1, 2)}[mode]
        want = np.broadcast_to(mats.sum(axis=axis, keepdims=True), mats.shape)
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(m=st.integers(1, 8), n=st.integers(1, 8), k=st.integers(1, 40), operands=st.integers(0, 31),
       ab=st.sampled_from([np.int8, np.uint8, np.int32]), cr=st.sampled_from([np.int8, np.int32, np.uint32]),
       seed=st.integers(0, 2**32 - 1))
def test_integer_muladd_equals_python_integers(m, n, k, operands, ab, cr, seed):
    rng = np.random.default_rng(seed)
    ia, ic = np.iinfo(ab), np.iinfo(cr)
    a = rng.integers(ia.min, ia.max, (1, m, k), endpoint=True).astype(ab)
    b = rng.integers(ia.min, ia.max, (1, k, n), endpoint=True).astype(ab)
    c = rng.integers(ic.min, ic.max, (1, m, n), endpoint=True).astype(cr)
    got = ar.muladd(a, b, c, cr, operands)

    def ints(x, signed):
        return x.view(f"{'i' if signed else 'u'}{x.dtype.itemsize}").astype(object)
    exact = ints(a, operands & 1) @ ints(b, operands & 2) + ints(c, operands & 4)
    bits = 8 * np.dtype(cr).itemsize
    lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if operands & 8 else (0, (1 << bits) - 1)
    vals = [min(max(int(v), lo), hi) if operands & 16 else int(v) for v in exact.reshape(-1)]
    want = np.array([v % (1 << bits) for v in vals], np.uint64).astype(f"u{bits // 8}")
    np.testing.assert_array_equal(got.reshape(-1).view(f"u{bits // 8}"), want)
