"""NV2 tensor layouts and views: loads/stores against NumPy slicing, padding and reshapes."""

import numpy as np
import pytest

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import tensor as tt
from hydroplane.ref.coopmat.memory import CoopMatBoundsError
from hydroplane.spirv.enums import CooperativeMatrixUse as Use
from hydroplane.spirv.enums import Scope

from ref_helpers import coop_type

F32 = np.float32


def _t(rows, cols, dtype=F32):
    return coop_type(dtype, rows, cols, Use.MatrixAccumulatorKHR, Scope.Workgroup)


def _tensor(rng, *shape, dtype=F32):
    return rng.integers(-1000, 1000, shape).astype(dtype)


def _poison(rows, cols, dtype=F32):
    return np.full((rows, cols), -7777, dtype)


def test_create_and_set_dimension_defaults():
    t = tt.TensorLayout.create(3, tt.ClampMode.Constant)
    assert t.block_size == (1, 1, 1) and t.dimension == t.stride == t.offset == t.span == (0, 0, 0)
    t = t.with_dimension(4, 5, 6)
    assert t.span == (4, 5, 6) and t.stride == (30, 6, 1) and t.offset == (0, 0, 0)
    t = t.slice(1, 2, -3 & 0xFFFFFFFF, 4, 0, 6).slice(1, 1, 1, 2, 0, 6)
    assert t.offset == (2, -2, 0) and t.span == (1, 2, 6)
    b = tt.TensorLayout.create(2).with_block_size(1, 4).with_dimension(8, 10)
    assert b.stride == (3, 1)
    with pytest.raises(cm.CoopMatError, match="takes 2 values"):
        tt.TensorLayout.create(2).with_dimension(1, 2, 3)
    with pytest.raises(cm.CoopMatError, match="1..5"):
        tt.TensorLayout.create(6)
    with pytest.raises(cm.CoopMatError, match="not a permutation"):
        tt.TensorView.create(2, False, (0, 0))


@pytest.mark.parametrize("row,col", [(0, 0), (8, 16), (24, 40)])
def test_row_major_slice_matches_numpy(row, col):
    rng = np.random.default_rng(row + col)
    tensor = _tensor(rng, 32, 48)
    layout = tt.TensorLayout.create(2).with_dimension(32, 48).slice(row, 8, col, 8)
    got = tt.load_tensor(tensor.view(np.uint8).reshape(-1), 0, _t(8, 8), layout, None, _poison(8, 8))
    np.testing.assert_array_equal(got, tensor[row:row + 8, col:col + 8])


def test_column_major_through_a_permuting_view():
    rng = np.random.default_rng(1)
    stored = _tensor(rng, 24, 16)  # memory holds columns outermost: stored[col, row]
    layout = tt.TensorLayout.create(2).with_dimension(24, 16).slice(4, 8, 8, 8)  # cols 4.., rows 8..
    view = tt.TensorView.create(2, False, (1, 0))
    got = tt.load_tensor(stored.view(np.uint8).reshape(-1), 0, _t(8, 8), layout, view, _poison(8, 8))
    np.testing.assert_array_equal(got, stored[4:12, 8:16].T)


@pytest.mark.parametrize("mode,pad_mode", [(tt.ClampMode.ClampToEdge, "edge"), (tt.ClampMode.Repeat, "wrap"),
                                           (tt.ClampMode.RepeatMirrored, "reflect")])
def test_clamp_modes_match_numpy_padding(mode, pad_mode):
    rng = np.random.default_rng(int(mode))
    tensor = _tensor(rng, 6, 7)
    layout = tt.TensorLayout.create(2, mode).with_dimension(6, 7).slice(-3 & 0xFFFFFFFF, 12, -4 & 0xFFFFFFFF, 16)
    got = tt.load_tensor(tensor.view(np.uint8).reshape(-1), 0, _t(12, 16), layout, None, _poison(12, 16))
    padded = np.pad(tensor, ((3, 9), (4, 12)), mode=pad_mode)
    np.testing.assert_array_equal(got, padded[:12, :16])


def test_constant_clamp_loads_the_value_bits_and_stores_drop():
    rng = np.random.default_rng(2)
    tensor = _tensor(rng, 10, 10)
    layout = (tt.TensorLayout.create(2, tt.ClampMode.Constant).with_dimension(10, 10)
              .slice(6, 8, 6, 8).with_clamp_value(np.float32(0.5).view(np.uint32).item()))
    raw = tensor.view(np.uint8).reshape(-1)
    got = tt.load_tensor(raw, 0, _t(8, 8), layout, None, _poison(8, 8))
    expect = np.full((8, 8), 0.5, F32)
    expect[:4, :4] = tensor[6:, 6:]
    np.testing.assert_array_equal(got, expect)
    mat = _tensor(rng, 8, 8)
    for mode in (tt.ClampMode.Constant, tt.ClampMode.ClampToEdge, tt.ClampMode.Repeat):
        before = tensor.copy()
        store_layout = tt.TensorLayout.create(2, mode).with_dimension(10, 10).slice(6, 8, 6, 8)
        tt.store_tensor(raw, 0, mat, _t(8, 8), store_layout, None)
        before[6:, 6:] = mat[:4, :4]
        np.testing.assert_array_equal(tensor, before)  # out-of-bounds elements dropped, nothing else touched


def test_undefined_clamp_mode_out_of_bounds_is_reported():
    layout = tt.TensorLayout.create(2).with_dimension(10, 10).slice(6, 8, 0, 8)
    with pytest.raises(cm.CoopMatError, match=r"Undefined .* coordinate 10 outside \[0, 10\) of dimension 0 "
                                              r"at matrix element \(4, 0\)"):
        tt.load_tensor(np.zeros(400, np.uint8), 0, _t(8, 8), layout, None, _poison(8, 8))


def test_clip_keeps_the_object_elements_and_skips_stores():
    rng = np.random.default_rng(3)
    tensor = _tensor(rng, 16, 16)
    layout = tt.TensorLayout.create(2).with_dimension(16, 16).slice(0, 3, 0, 5)
    view = tt.TensorView.create(2, False, (0, 1)).with_clip(2, 3, 1, 5)
    original = _tensor(rng, 8, 8)
    got = tt.load_tensor(tensor.view(np.uint8).reshape(-1), 0, _t(8, 8), layout, view, original)
    expect = original.copy()
    expect[2:5, 1:6] = tensor[0:3, 0:5]
    np.testing.assert_array_equal(got, expect)
    before = tensor.copy()
    tt.store_tensor(tensor.view(np.uint8).reshape(-1), 0, original, _t(8, 8), layout, view)
    before[0:3, 0:5] = original[2:5, 1:6]
    np.testing.assert_array_equal(tensor, before)


def test_three_dimensional_hwc_patch():
    rng = np.random.default_rng(4)
    hwc = _tensor(rng, 12, 10, 4)
    layout = tt.TensorLayout.create(3).with_dimension(12, 10, 4).slice(3, 2, 5, 4, 0, 4)
    got = tt.load_tensor(hwc.view(np.uint8).reshape(-1), 0, _t(8, 4), layout, None, _poison(8, 4))
    np.testing.assert_array_equal(got, hwc[3:5, 5:9, :].reshape(8, 4))


def test_space_to_depth_view_with_dimensions():
    rng = np.random.default_rng(5)
    h, w, ch = 4, 6, 2
    hwc = _tensor(rng, h, w, ch)
    layout = tt.TensorLayout.create(3).with_dimension(h, w, ch)
    view = tt.TensorView.create(5, True, (0, 2, 1, 3, 4)).with_dimension(h // 2, 2, w // 2, 2, ch)
    rows, cols = h // 2 * (w // 2), 4 * ch
    got = tt.load_tensor(hwc.view(np.uint8).reshape(-1), 0, _t(rows, cols), layout, view, _poison(rows, cols))
    expect = hwc.reshape(h // 2, 2, w // 2, 2, ch).transpose(0, 2, 1, 3, 4).reshape(rows, cols)
    np.testing.assert_array_equal(got, expect)


def test_block_size_divides_coordinates_into_block_strides():
    rng = np.random.default_rng(6)
    blocks = _tensor(rng, 4, 3)  # a 4 x 12 tensor stored as 4 x 3 blocks of 1 x 4 elements
    layout = tt.TensorLayout.create(2).with_block_size(1, 4).with_dimension(4, 12)
    got = tt.load_tensor(blocks.view(np.uint8).reshape(-1), 0, _t(4, 12), layout, None, _poison(4, 12))
    np.testing.assert_array_equal(got, np.repeat(blocks, 4, axis=1))


def test_base_offset_and_bounds():
    rng = np.random.default_rng(7)
    tensor = _tensor(rng, 8, 8)
    raw = np.concatenate([np.zeros(64, np.uint8), tensor.view(np.uint8).reshape(-1)])
    layout = tt.TensorLayout.create(2).with_dimension(8, 8)
    np.testing.assert_array_equal(tt.load_tensor(raw, 64, _t(8, 8), layout, None, _poison(8, 8)), tensor)
    with pytest.raises(CoopMatBoundsError, match="tensor load is out of bounds"):
        tt.load_tensor(raw, 128, _t(8, 8), layout, None, _poison(8, 8))
    with pytest.raises(cm.CoopMatError, match="zero span"):
        tt.load_tensor(raw, 0, _t(8, 8), tt.TensorLayout.create(2), None, _poison(8, 8))
