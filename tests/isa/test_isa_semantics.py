"""Runnable semantics of the curated VOP1 conversions, over 32 and 64 lanes with EXEC masks."""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np
import pytest
from isa_testdata import isa_files, library, page_facts, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import SEMANTICS, SemanticsError, execute
from hydroplane.isa.semantics import lookup_table

LANES = (32, 64)
# the references cast out-of-range doubles to float32/float16 on purpose (they become inf)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def wave(rng, lanes, bits=32):
    """Random raw bits per lane, a random EXEC mask, and a poisoned destination."""
    dtype = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    source = rng.integers(0, 2 ** bits, size=lanes, dtype=np.uint64).astype(dtype)
    exec_mask = int(rng.integers(1, 2 ** 63)) & ((1 << lanes) - 1) or 1
    return source, exec_mask


def poison(lanes, bits):
    dtype = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    return np.full(lanes, 0xDEADBEEFCAFEF00D & ((1 << bits) - 1), dtype=dtype)


def active(exec_mask, lanes):
    return np.array([(exec_mask >> i) & 1 == 1 for i in range(lanes)])


def test_curated_family_is_in_both_architectures(library):
    for arch in library.architectures:
        spec = library.spec(arch)
        for name in SEMANTICS:
            assert spec.has_instruction(name), f"{name} not in {arch}"


def test_cvt_off_table_matches_the_page_on_all_16_inputs(page_facts):
    table = page_facts.table
    assert sorted(table) == list(range(16))
    for lanes in LANES:
        source = np.arange(lanes, dtype=np.uint32) % 16
        out = execute("v_cvt_off_f32_i4", source, poison(lanes, 32), (1 << lanes) - 1).view(np.float32)
        assert [float(x) for x in out] == [table[i % 16] for i in range(lanes)]
    assert dict(lookup_table("V_CVT_OFF_F32_I4")) == table


@pytest.mark.parametrize("lanes", LANES)
def test_cvt_off_only_bits_3_0_count(page_facts, lanes):
    table = page_facts.table
    rng = np.random.default_rng(14 + lanes)
    source, exec_mask = wave(rng, lanes)
    source |= np.uint32(0x10)  # every lane has an upper bit set
    dest = poison(lanes, 32)
    out = execute("v_cvt_off_f32_i4", source, dest, exec_mask)
    on = active(exec_mask, lanes)
    expected = np.array([table[int(s) & 0xF] for s in source], dtype=np.float32).view(np.uint32)
    assert np.array_equal(out[on], expected[on])
    assert np.array_equal(out[~on], dest[~on])  # EXEC-off lanes keep the destination


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", int(bits)))[0]


def f64(bits):
    return struct.unpack("<d", struct.pack("<Q", int(bits)))[0]


def to_i32(x, rounding):
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return 2 ** 31 - 1 if x > 0 else -(2 ** 31)
    return int(min(max(rounding(x), -(2 ** 31)), 2 ** 31 - 1))


# name -> (source bits, reference from source bits to the destination value as a Python number)
REFERENCES = {
    "V_CVT_I32_F32": (32, lambda b: to_i32(f32(b), math.trunc)),
    "V_CVT_FLOOR_I32_F32": (32, lambda b: to_i32(f32(b), math.floor)),
    "V_CVT_NEAREST_I32_F32": (32, lambda b: to_i32(f32(b), lambda x: math.floor(x + 0.5))),
    "V_CVT_U32_F64": (64, lambda b: 0 if math.isnan(f64(b)) else int(min(max(
        math.trunc(f64(b)) if math.isfinite(f64(b)) else f64(b), 0), 2 ** 32 - 1))),
    "V_CVT_F64_U32": (32, lambda b: float(int(b))),
    "V_CVT_F64_F32": (32, lambda b: f32(b)),
    "V_CVT_F32_UBYTE0": (32, lambda b: float(int(b) & 0xFF)),
    "V_CVT_F32_UBYTE1": (32, lambda b: float((int(b) >> 8) & 0xFF)),
    "V_CVT_F32_UBYTE2": (32, lambda b: float((int(b) >> 16) & 0xFF)),
    "V_CVT_F32_UBYTE3": (32, lambda b: float((int(b) >> 24) & 0xFF)),
    "V_TRUNC_F64": (64, lambda b: math.trunc(f64(b)) if math.isfinite(f64(b)) else f64(b)),
    "V_FLOOR_F64": (64, lambda b: math.floor(f64(b)) if math.isfinite(f64(b)) else f64(b)),
    "V_CEIL_F64": (64, lambda b: math.ceil(f64(b)) if math.isfinite(f64(b)) else f64(b)),
    "V_RNDNE_F64": (64, lambda b: float(round(f64(b))) if math.isfinite(f64(b)) else f64(b)),
    "V_CVT_F32_F64": (64, lambda b: float(np.float32(f64(b)))),
    "V_CVT_F16_F32": (32, lambda b: float(np.float16(f32(b)))),
    "V_CVT_F32_F16": (16, lambda b: struct.unpack("<e", struct.pack("<H", int(b)))[0]),
    "V_MOV_B16": (16, lambda b: int(b)),
}

SPECIALS32 = [0x7FC00000, 0x7F800000, 0xFF800000, 0x4F000000, 0xCF000001, 0x3F000000, 0xBF000000,
              0x40200000, 0xC0200000, 0x00000001, 0x80000000, 0x501502F9]  # NaN, ±inf, 2^31, ±0.5, ±2.5, ...
SPECIALS64 = [0x7FF8000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x41F0000000000000,
              0xBFF0000000000000, 0x4004000000000000, 0xC004000000000000, 0x0000000000000001,
              0x3FE0000000000000, 0x3FF8000000000000, 0x4012000000000000]  # ..., 4.5 (rndne -> 4)


def result_value(name: str, bits: int):
    sem = SEMANTICS[name]
    if name in ("V_CVT_I32_F32", "V_CVT_FLOOR_I32_F32", "V_CVT_NEAREST_I32_F32"):
        return int(np.uint32(bits).view(np.int32))
    if name == "V_CVT_U32_F64" or name == "V_MOV_B16":
        return int(bits)
    return {16: lambda b: struct.unpack("<e", struct.pack("<H", b))[0], 32: f32, 64: f64}[sem.dest_bits](int(bits))


def same(a, b) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("lanes", LANES)
def test_conversion_against_reference(name, lanes):
    bits, reference = REFERENCES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()) + lanes)
    source, exec_mask = wave(rng, lanes, bits)
    specials = SPECIALS64 if bits == 64 else [s & ((1 << bits) - 1) for s in SPECIALS32]
    source[: len(specials)] = np.array(specials, dtype=source.dtype)
    if bits > 16:  # also ordinary magnitudes, not only random bit patterns
        values = rng.normal(0, 1e3, size=lanes // 2).astype(np.float64 if bits == 64 else np.float32)
        source[lanes // 2:] = values.view(source.dtype)
    dest = poison(lanes, SEMANTICS[name].dest_bits)
    out = execute(name, source, dest, exec_mask)
    on = active(exec_mask, lanes)
    for lane in range(lanes):
        if not on[lane]:
            assert out[lane] == dest[lane], f"{name} lane {lane}: EXEC off but written"
            continue
        got, want = result_value(name, out[lane]), reference(source[lane])
        assert same(got, want), f"{name} lane {lane}: source 0x{int(source[lane]):x} -> {got}, expected {want}"


def test_named_edge_cases():
    def run(name, values, dtype):
        lanes = np.zeros(32, dtype=dtype)
        lanes[: len(values)] = values
        out = execute(name, lanes.view(np.uint64 if dtype == np.float64 else np.uint32),
                      np.zeros(32, np.uint32 if SEMANTICS[name.upper()].dest_bits == 32 else np.uint64), (1 << 32) - 1)
        return out[: len(values)]
    assert list(run("v_cvt_nearest_i32_f32", [2.5, -2.5, 0.49999997], np.float32).view(np.int32)) == [3, -2, 0]
    assert list(run("v_cvt_i32_f32", [np.nan, 3e9, -3e9, -1.9], np.float32).view(np.int32)) == \
        [0, 2 ** 31 - 1, -(2 ** 31), -1]
    assert list(run("v_cvt_u32_f64", [-1.0, 5e9, np.nan, 7.9], np.float64)) == [0, 2 ** 32 - 1, 0, 7]
    assert list(run("v_rndne_f64", [2.5, 3.5, -0.5], np.float64).view(np.float64)) == [2.0, 4.0, -0.0]


def test_bad_inputs():
    with pytest.raises(SemanticsError, match="no runnable semantics for 'v_add_f32'"):
        execute("v_add_f32", np.zeros(32, np.uint32), np.zeros(32, np.uint32), 1)
    with pytest.raises(SemanticsError, match="32 or 64 lanes"):
        execute("v_cvt_off_f32_i4", np.zeros(16, np.uint32), np.zeros(16, np.uint32), 1)
    with pytest.raises(SemanticsError, match="does not fit 32 lanes"):
        execute("v_cvt_off_f32_i4", np.zeros(32, np.uint32), np.zeros(32, np.uint32), 1 << 32)
    with pytest.raises(SemanticsError, match="raw bits"):
        execute("v_cvt_off_f32_i4", np.zeros(32, np.float32), np.zeros(32, np.uint32), 1)
    with pytest.raises(SemanticsError, match="EXEC mask must be"):
        execute("v_cvt_off_f32_i4", np.zeros(32, np.uint32), np.zeros(32, np.uint32), np.ones(31, bool))
    mask = np.zeros(64, bool)
    mask[::3] = True
    out = execute("v_cvt_f32_ubyte1", np.full(64, 0x1234, np.uint32), np.full(64, 7, np.uint32), mask)
    assert list(out[mask].view(np.float32)) == [0x12] * mask.sum() and set(out[~mask]) == {7}
