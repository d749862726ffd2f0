"""Cooperative-matrix load/store address math against element-by-element NumPy loops."""

import ml_dtypes
import numpy as np
import pytest

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import memory as mem
from hydroplane.spirv.enums import CooperativeMatrixUse as Use

from ref_helpers import coop_type

DTYPES = [np.float16, np.float32, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32]


def _reference_load(raw, base, rows, cols, layout, stride, pointee, dtype):
    dtype = np.dtype(dtype)
    out = np.empty((len(base), rows, cols), dtype)
    for n, b in enumerate(base):
        for r in range(rows):
            for c in range(cols):
                major, minor = (r, c) if layout == mem.Layout.RowMajorKHR else (c, r)
                at = b + major * stride * pointee + minor * dtype.itemsize
                out[n, r, c] = raw[at:at + dtype.itemsize].view(dtype)[0]
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", list(mem.Layout))
@pytest.mark.parametrize("stride,pointee", [(16, None), (24, None), (0, None), (5, 16), (3, 4)])
def test_load_matches_elementwise_reference(dtype, layout, stride, pointee):
    rng = np.random.default_rng(hash((np.dtype(dtype).name, int(layout), stride)) & 0xFFFF)
    size = np.dtype(dtype).itemsize
    pointee = pointee or size
    raw = rng.integers(0, 256, 4096, dtype=np.uint8)
    t = coop_type(dtype, 8, 16, Use.MatrixAKHR)
    base = np.array([0, size * 3, 1024 + 7 * size])
    got = mem.load(raw, base, t, layout, stride, pointee)
    expect = _reference_load(raw, base, 8, 16, layout, stride, pointee, dtype)
    np.testing.assert_array_equal(got.view(f"u{size}"), expect.view(f"u{size}"))


def test_unaligned_pointee_offsets_use_the_byte_path():
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 256, 512, dtype=np.uint8)
    t = coop_type(np.float32, 4, 4)
    got = mem.load(raw, [1], t, mem.Layout.RowMajorKHR, 3, 2)  # stride 6 bytes: unaligned rows
    expect = _reference_load(raw, [1], 4, 4, mem.Layout.RowMajorKHR, 3, 2, np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), expect.view(np.uint32))


@pytest.mark.parametrize("layout", list(mem.Layout))
@pytest.mark.parametrize("dtype", [np.float16, np.int32, ml_dtypes.bfloat16])
def test_store_then_load_round_trips_and_leaves_other_bytes(layout, dtype):
    rng = np.random.default_rng(11)
    t = coop_type(dtype, 8, 8, Use.MatrixAccumulatorKHR)
    mats = rng.integers(-100, 100, (2, 8, 8)).astype(dtype)
    raw = np.full(2048, 0xAB, np.uint8)
    size = np.dtype(dtype).itemsize
    base = [0, 1024]
    mem.store(raw, base, mats, t, layout, 12, size)
    np.testing.assert_array_equal(mem.load(raw, base, t, layout, 12, size), mats)
    touched = np.zeros(2048, bool)
    for b in base:
        for major in range(8):
            start = b + major * 12 * size
            touched[start:start + 8 * size] = True
    assert (raw[~touched] == 0xAB).all()


def test_store_with_stride_zero_keeps_the_last_row():
    t = coop_type(np.int32, 4, 4)
    mats = np.arange(16, dtype=np.int32).reshape(1, 4, 4) + 1
    raw = np.zeros(64, np.uint8)
    mem.store(raw, [0], mats, t, mem.Layout.RowMajorKHR, 0, 4)
    np.testing.assert_array_equal(raw.view(np.int32)[:4], mats[0, 3])
    assert (raw.view(np.int32)[4:] == 0).all()
    mem.store(raw, [0], mats, t, mem.Layout.ColumnMajorKHR, 0, 4)
    np.testing.assert_array_equal(raw.view(np.int32)[:4], mats[0, :, 3])
    loaded = mem.load(raw, [0], t, mem.Layout.RowMajorKHR, 0, 4)
    np.testing.assert_array_equal(loaded[0], np.tile(mats[0, :, 3], (4, 1)))


def test_inactive_instances_do_not_store():
    t = coop_type(np.int32, 2, 2)
    raw = np.zeros(64, np.uint8)
    mem.store(raw, [0, 32], np.ones((2, 2, 2), np.int32) * 7, t, mem.Layout.RowMajorKHR, 2, 4,
              active_instances=np.array([False, True]))
    assert (raw[:32] == 0).all() and (raw.view(np.int32)[8:12] == 7).all()


@pytest.mark.parametrize("base,stride,bad_instance", [(4000, 16, 1), (-4, 16, 1), (0, 300, 0)])
def test_out_of_bounds_names_instance_element_and_bytes(base, stride, bad_instance):
    t = coop_type(np.float16, 16, 16)
    raw = np.zeros(4096, np.uint8)
    message = rf"out of bounds: instance {bad_instance} element \(\d+, \d+\) at bytes"
    with pytest.raises(mem.CoopMatBoundsError, match=message) as info:
        mem.load(raw, [0, base], t, mem.Layout.RowMajorKHR, stride, 2)
    assert info.value.instance == bad_instance and info.value.size == 4096
    with pytest.raises(mem.CoopMatBoundsError, match="store"):
        mem.store(raw, [0, base], np.zeros((2, 16, 16), np.float16), t, mem.Layout.RowMajorKHR, stride, 2)
    assert (raw == 0).all()  # nothing written by a failing store


def test_layout_operands():
    assert mem.layout_of(0) is mem.Layout.RowMajorKHR and mem.layout_of(1) is mem.Layout.ColumnMajorKHR
    assert mem.layout_from_column_major(True) is mem.Layout.ColumnMajorKHR
    with pytest.raises(cm.CoopMatError, match="RowBlockedInterleavedARM is not implemented"):
        mem.layout_of(mem.Layout.RowBlockedInterleavedARM)
    with pytest.raises(cm.CoopMatError, match="not a CooperativeMatrixLayout"):
        mem.layout_of(7)
    with pytest.raises(cm.CoopMatError, match="flat uint8"):
        mem.load(np.zeros(16, np.float32), [0], coop_type(np.float32, 2, 2), mem.Layout.RowMajorKHR, 2, 4)


def test_element_offsets_take_per_instance_strides():
    strides = np.array([8, 0, 11])
    many = mem.element_offsets(4, 8, mem.Layout.ColumnMajorKHR, strides, 4, 2)
    for n, s in enumerate(strides):
        np.testing.assert_array_equal(many[n], mem.element_offsets(4, 8, mem.Layout.ColumnMajorKHR, int(s), 4, 2))
    one = mem.element_offsets(4, 8, mem.Layout.RowMajorKHR, 9, 4, 2)
    assert one[3, 5] == 3 * 9 * 4 + 5 * 2
