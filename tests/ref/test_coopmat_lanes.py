"""The element-to-invocation distribution and the lane views of a cooperative matrix
(Length, composite extract/insert/construct, GetCoordinate) against plain NumPy indexing."""

import numpy as np
import pytest

from hydroplane.errors import HydroplaneError
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.spirv.enums import CooperativeMatrixUse as Use
from hydroplane.spirv.enums import Scope
from hydroplane.spirv.types import TypeModelError

from ref_helpers import coop_type

SHAPES = [(8, 8, 8), (16, 16, 32), (16, 8, 32), (8, 8, 32), (5, 7, 8), (16, 16, 64)]


def _mats(rng, n, rows, cols, dtype=np.float32):
    return rng.standard_normal((n, rows, cols)).astype(dtype)


@pytest.mark.parametrize("rows,cols,lanes", SHAPES)
def test_strided_default_places_element_i_of_lane_l_at_l_plus_i_times_s(rows, cols, lanes):
    table = cm.STRIDED.table(rows, cols, lanes)
    assert table.shape == (lanes, -(-rows * cols // lanes))
    for lane in range(lanes):
        for i in range(table.shape[1]):
            flat = lane + i * lanes
            assert table[lane, i] == (flat if flat < rows * cols else -1)
    assert cm.DEFAULT_DISTRIBUTION is cm.STRIDED


@pytest.mark.parametrize("dist", [cm.STRIDED, cm.BLOCKED])
@pytest.mark.parametrize("rows,cols,lanes", SHAPES)
def test_lane_views_round_trip_and_cover_every_element_once(dist, rows, cols, lanes):
    rng = np.random.default_rng(rows * 100 + cols + lanes)
    mats = _mats(rng, 3, rows, cols)
    held = cm.lane_elements(mats, lanes, dist)
    assert held.shape == (3, lanes, dist.length(rows, cols, lanes))
    table = dist.table(rows, cols, lanes)
    valid = table >= 0
    assert sorted(table[valid].tolist()) == list(range(rows * cols))
    assert (held[:, ~valid] == 0).all()
    np.testing.assert_array_equal(held[:, valid], mats.reshape(3, -1)[:, table[valid]])
    np.testing.assert_array_equal(cm.from_lane_elements(held, rows, cols, dist), mats)


def test_length_is_ceil_of_elements_over_lanes():
    assert cm.STRIDED.length(16, 16, 32) == 8
    assert cm.STRIDED.length(8, 8, 8) == 8
    assert cm.STRIDED.length(5, 7, 8) == 5
    assert cm.STRIDED.length(16, 16, 256) == 1


@pytest.mark.parametrize("rows,cols,lanes", SHAPES)
def test_extract_agrees_with_get_coordinate(rows, cols, lanes):
    rng = np.random.default_rng(7)
    mats = _mats(rng, 2, rows, cols)
    length = cm.STRIDED.length(rows, cols, lanes)
    table = cm.STRIDED.table(rows, cols, lanes)
    for i in range(length):
        got = cm.extract(mats, i, lanes)
        real = table[:, i] >= 0
        coords = None
        if real.all():
            coords = cm.get_coordinate(i, rows, cols, lanes, 2)
            expect = mats[np.arange(2)[:, None], coords[..., 0], coords[..., 1]]
            np.testing.assert_array_equal(got, expect)
        else:
            with pytest.raises(cm.CoopMatError, match="padding"):
                cm.get_coordinate(i, rows, cols, lanes, 2)
            assert (got[:, ~real] == 0).all()


def test_dynamic_index_per_lane():
    rng = np.random.default_rng(1)
    mats = _mats(rng, 2, 8, 8)
    index = rng.integers(0, 8, size=(2, 8))
    got = cm.extract(mats, index, 8)
    flat = np.arange(8)[None, :] + index * 8
    np.testing.assert_array_equal(got, mats.reshape(2, -1)[np.arange(2)[:, None], flat])
    coords = cm.get_coordinate(index, 8, 8, 8, 2)
    np.testing.assert_array_equal(coords[..., 0] * 8 + coords[..., 1], flat)
    assert coords.dtype == np.uint32


def test_insert_changes_only_the_lanes_element_and_respects_active_mask():
    rng = np.random.default_rng(2)
    mats = _mats(rng, 2, 8, 8)
    values = rng.standard_normal((2, 8)).astype(np.float32)
    active = rng.random((2, 8)) < 0.5
    active[0, 0] = True
    out = cm.insert(mats, values, 3, 8, active=active)
    expect = mats.reshape(2, -1).copy()
    for inst in range(2):
        for lane in range(8):
            if active[inst, lane]:
                expect[inst, lane + 3 * 8] = values[inst, lane]
    np.testing.assert_array_equal(out.reshape(2, -1), expect)
    assert not np.shares_memory(out, mats)


def test_index_out_of_range_is_a_specific_error():
    mats = np.ones((1, 8, 8), np.float16)
    with pytest.raises(cm.CoopMatError, match=r"index \[8\] outside \[0, 8\)") as info:
        cm.extract(mats, 8, 8)
    assert isinstance(info.value, HydroplaneError)
    with pytest.raises(cm.CoopMatError, match="GetCoordinate"):
        cm.get_coordinate(np.full((1, 8), -1), 8, 8, 8, 1)


def test_construct_uniform_and_per_lane_values():
    t = coop_type(np.float16, 8, 8, Use.MatrixAccumulatorKHR)
    uniform = cm.construct(np.float16(2.5), t, 8)
    assert uniform.shape == (1, 8, 8) and (uniform == 2.5).all() and uniform.dtype == np.float16
    per_lane = np.arange(16, dtype=np.float32).reshape(2, 8)
    built = cm.construct(per_lane, t, 8)
    flat = built.reshape(2, -1)
    for lane in range(8):
        np.testing.assert_array_equal(flat[:, lane::8], np.repeat(per_lane[:, lane:lane + 1], 8, axis=1))


def test_custom_table_mimics_a_device_and_must_cover_every_element():
    # A replicated layout, like RDNA3's WMMA A operand: lanes 0-3 and 4-7 hold the same elements.
    table = np.array([[r * 4 + c for c in range(4)] for r in range(4)] * 2)
    dist = cm.ElementDistribution.from_table("replicated", table)
    rng = np.random.default_rng(3)
    mats = _mats(rng, 1, 4, 4)
    assert dist.length(4, 4, 8) == 4
    held = cm.lane_elements(mats, 8, dist)
    np.testing.assert_array_equal(held[0, :4], held[0, 4:])
    lane_of, index_of = dist.owner(4, 4, 8)
    assert lane_of.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    np.testing.assert_array_equal(cm.get_coordinate(2, 4, 4, 8, 1, dist)[0, 5], [1, 2])
    bad = cm.ElementDistribution.from_table("holes", np.zeros((8, 2)))
    with pytest.raises(cm.CoopMatError, match="unheld"):
        bad.table(4, 4, 8)
    with pytest.raises(cm.CoopMatError, match="for 8 lanes"):
        dist.table(4, 4, 16)


def test_uniform_per_instance_names_the_disagreeing_lane():
    ok = np.array([[4, 4, 4], [9, 9, 9]])
    np.testing.assert_array_equal(cm.uniform_per_instance(ok, "stride"), [4, 9])
    with pytest.raises(cm.CoopMatError, match="stride .* instance 1: lane 0 has 9, lane 2 has 8"):
        cm.uniform_per_instance(np.array([[4, 4, 4], [9, 9, 8]]), "stride")


def test_type_checks():
    with pytest.raises(TypeModelError, match="positive"):
        coop_type(np.float16, 0, 8)
    t = coop_type(np.int8, 8, 8, 0)
    assert t.scope is Scope.Subgroup and t.use is Use.MatrixAKHR
    with pytest.raises(cm.CoopMatError, match="needs"):
        cm.check_value(t, np.zeros((1, 8, 4), np.int8))


def test_element_pointer_helpers_read_and_write_the_lanes_elements():
    """coopmat_instances.load_element/store_element (for access chains into matrix variables)."""
    from types import SimpleNamespace

    from hydroplane.ref.coopmat import instances as coopmat_instances
    from hydroplane.ref.lanes import Lanes
    from hydroplane.ref.values import Pointer

    lanes = Lanes(8, (16, 1, 1), np.zeros((1, 3), np.uint32), (1, 1, 1))  # two subgroups of 8
    rng = np.random.default_rng(12)
    t = coop_type(np.float32, 8, 8)
    mats = rng.standard_normal((2, 8, 8)).astype(np.float32)
    index = rng.integers(0, 8, 16)
    mask = rng.random(16) < 0.7
    ctx = SimpleNamespace(lanes=lanes, mask=mask, options={})
    ptr = Pointer(None, index, t.component)
    got = coopmat_instances.load_element(ctx, ptr, mats, t)
    flat = mats.reshape(2, -1)
    lane = np.arange(16) % 8
    inst = np.arange(16) // 8
    expect = flat[inst, lane + np.where(mask, index, 0) * 8]
    np.testing.assert_array_equal(got, expect)
    values = rng.standard_normal(16).astype(np.float32)
    out = coopmat_instances.store_element(ctx, ptr, mats, t, values).reshape(2, -1)
    want = flat.copy()
    want[inst[mask], (lane + index * 8)[mask]] = values[mask]
    np.testing.assert_array_equal(out, want)
