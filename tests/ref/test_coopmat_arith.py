"""MulAdd, rounding, conversions, ConvertUse/TransposeNV and matrix-times-scalar against exact
references (every representable value enumerated, Python integers, fractions)."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import arith as ar
from hydroplane.spirv.enums import FPRoundingMode, Scope

from ref_helpers import coop_type

SMALL_FLOATS = [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def _finite_values(dtype):
    """Every finite value of a <= 16-bit float type, sorted, with its bit pattern."""
    dtype = np.dtype(dtype)
    bits = np.arange(1 << (8 * dtype.itemsize), dtype=np.uint64).astype(f"u{dtype.itemsize}")
    with np.errstate(invalid="ignore"):
        values = bits.view(dtype).astype(np.float64)
    keep = np.isfinite(values) & ~((values == 0) & np.signbit(values))
    order = np.argsort(values[keep], kind="stable")
    return values[keep][order], bits[keep][order]


def _reference_round(x, dtype, mode):
    values, bits = _finite_values(dtype)
    out = []
    for v in x:
        hi = np.searchsorted(values, v, side="left")
        if values[hi] == v:
            out.append(values[hi])
            continue
        lo_v, hi_v = values[hi - 1], values[hi]
        if mode == FPRoundingMode.RTZ:
            out.append(lo_v if v > 0 else hi_v)
        elif mode == FPRoundingMode.RTP:
            out.append(hi_v)
        elif mode == FPRoundingMode.RTN:
            out.append(lo_v)
        else:
            d_lo, d_hi = Fraction(v) - Fraction(lo_v), Fraction(hi_v) - Fraction(v)
            if d_lo != d_hi:
                out.append(lo_v if d_lo < d_hi else hi_v)
            else:
                out.append(lo_v if int(bits[hi - 1]) % 2 == 0 else hi_v)
    return np.array(out)


@pytest.mark.parametrize("dtype", SMALL_FLOATS)
@pytest.mark.parametrize("mode", list(FPRoundingMode))
def test_round_from_f64_is_correctly_rounded(dtype, mode):
    rng = np.random.default_rng(int(mode) * 10 + SMALL_FLOATS.index(dtype))
    values, _ = _finite_values(dtype)
    big = values.max() / 2
    # Midpoints, midpoints nudged by one f64 ulp (the double-rounding traps), and random values.
    i = rng.integers(1, len(values) - 2, 300)
    mids = (values[i] + values[i + 1]) / 2
    x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                        rng.uniform(-big, big, 300), values[i]])
    x = x[np.abs(x) < big]
    got = ar.round_from_f64(x, dtype, mode)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64), _reference_round(x, dtype, mode))


def test_round_overflow_and_nan():
    got = ar.round_from_f64(np.array([1e6, -1e6, np.nan]), np.float16)
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    assert ar.round_from_f64(np.array([1e6]), np.float16, FPRoundingMode.RTZ)[0] == 65504
    with pytest.raises(cm.CoopMatError, match="not a float"):
        ar.round_from_f64(np.ones(2), np.int32)


def test_step_toward_crosses_zero_and_reaches_max_from_inf():
    x = np.array([0.0, -0.0, np.inf, 1.0], np.float16)
    up = np.array([False, True, False, True])
    got = ar.step_toward(x, up)
    tiny = np.float16(2.0 ** -24)
    assert got[0] == -tiny and got[1] == tiny and got[2] == 65504 and got[3] == np.float16(1 + 2 ** -10)


def _quantize(x, quantum):
    return np.round(x / quantum) * quantum if quantum else x


@pytest.mark.parametrize("a_type,c_type", [(np.float16, np.float16), (np.float16, np.float32),
                                           (np.float32, np.float32), (ml_dtypes.bfloat16, np.float32),
                                           (ml_dtypes.float8_e4m3fn, np.float32)])
def test_float_muladd_is_exactly_rounded_once(a_type, c_type):
    rng = np.random.default_rng(3)
    # Fresh random values; f32 inputs keep 16 significant bits so the float64 sum stays exact
    # (the documented condition), the narrow types use their full precision.
    quantum = 2.0 ** -14 if np.dtype(a_type) == np.float32 else 0.0
    a = _quantize(rng.uniform(-2, 2, (3, 8, 8)), quantum).astype(a_type)
    b = _quantize(rng.uniform(-2, 2, (3, 8, 8)), quantum).astype(a_type)
    c = rng.uniform(-2, 2, (3, 8, 8)).astype(c_type)
    got = ar.muladd(a, b, c, c_type)
    assert got.dtype == np.dtype(c_type)
    for n in range(3):
        for i in range(8):
            for j in range(8):
                exact = sum(Fraction(float(a[n, i, k])) * Fraction(float(b[n, k, j])) for k in range(8))
                exact += Fraction(float(c[n, i, j]))
                # A 53-bit float64 holds these sums exactly, so rounding it once is the reference.
                assert Fraction(float(exact)) == exact
                ref = ar.round_from_f64(np.array([float(exact)]), c_type)[0]
                assert got[n, i, j] == ref


def test_float_muladd_rectangular_and_shape_errors():
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (2, 16, 8)).astype(np.float16)
    b = rng.integers(-3, 4, (2, 8, 4)).astype(np.float16)
    c = rng.integers(-3, 4, (2, 16, 4)).astype(np.float32)
    expect = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c
    np.testing.assert_array_equal(ar.muladd(a, b, c, np.float32), expect.astype(np.float32))
    with pytest.raises(cm.CoopMatError, match="do not chain"):
        ar.muladd(a, a, c, np.float32)
    with pytest.raises(cm.CoopMatError, match="mixes float and integer"):
        ar.muladd(a, b, c.astype(np.int32), np.int32)


def _int_reference(a, b, c, a_signed, b_signed, c_signed, r_signed, saturate, dtype):
    def ints(x, signed):
        w = x.dtype.itemsize
        return x.view(f"{'i' if signed else 'u'}{w}").astype(object)
    exact = np.matmul(ints(a, a_signed), ints(b, b_signed)) + ints(c, c_signed)
    bits = np.dtype(dtype).itemsize * 8
    lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if r_signed else (0, (1 << bits) - 1)
    flat = [min(max(int(v), lo), hi) if saturate else int(v) for v in exact.reshape(-1)]
    wrapped = np.array([v % (1 << bits) for v in flat], dtype=np.uint64).astype(f"u{bits // 8}")
    return wrapped.view(dtype).reshape(exact.shape)


@pytest.mark.parametrize("ab,cr", [(np.int8, np.int32), (np.uint8, np.uint32), (np.uint8, np.int32),
                                   (np.int8, np.int8), (np.uint8, np.uint8), (np.int32, np.int32)])
@pytest.mark.parametrize("operands", [0, 0b1111, 0b0011, 0b1100, 0x10, 0x1F, 0x1C, 0x13])
def test_integer_muladd_signedness_bits_and_saturation(ab, cr, operands):
    rng = np.random.default_rng(operands * 7 + np.dtype(ab).itemsize)
    info_ab, info_cr = np.iinfo(ab), np.iinfo(cr)
    a = rng.integers(info_ab.min, info_ab.max, (2, 8, 16), endpoint=True).astype(ab)
    b = rng.integers(info_ab.min, info_ab.max, (2, 16, 8), endpoint=True).astype(ab)
    c = rng.integers(info_cr.min, info_cr.max, (2, 8, 8), endpoint=True).astype(cr)
    got = ar.muladd(a, b, c, cr, operands)
    flags = [bool(operands & bit) for bit in (1, 2, 4, 8, 16)]
    expect = _int_reference(a, b, c, *flags, cr)
    assert got.dtype == np.dtype(cr)
    np.testing.assert_array_equal(got, expect)


def test_saturating_accumulation_clamps_and_wrapping_wraps():
    a = np.full((1, 2, 2), 100, np.int8)
    b = np.full((1, 2, 2), 100, np.int8)
    c = np.full((1, 2, 2), 2 ** 31 - 20000, np.int32)
    signed = 0b1111
    assert (ar.muladd(a, b, c, np.int32, signed | 0x10) == 2 ** 31 - 1).all()
    wrapped = ar.muladd(a, b, c, np.int32, signed)
    # 2*100*100 + 2**31 - 20000 = 2**31 exactly: one past the top, so it wraps to -2**31.
    assert (wrapped.astype(np.int64) == -(2 ** 31)).all()
    # Unsigned result saturates at 0 from below when C is read signed.
    neg = np.full((1, 2, 2), -5, np.int32)
    zero_ab = np.zeros((1, 2, 2), np.int8)
    assert (ar.muladd(zero_ab, zero_ab, neg, np.uint32, 0b0111 | 0x10) == 0).all()
    assert (ar.muladd(zero_ab, zero_ab, neg, np.uint32, 0b0111) == 2 ** 32 - 5).all()


CONVERSIONS = [
    ("FConvert", np.float32, np.float16), ("FConvert", np.float16, np.float32),
    ("FConvert", np.float32, ml_dtypes.bfloat16), ("ConvertFToS", np.float32, np.int32),
    ("ConvertFToU", np.float16, np.uint8), ("ConvertSToF", np.int32, np.float16),
    ("ConvertUToF", np.uint8, np.float32), ("SConvert", np.int8, np.int32),
    ("SConvert", np.int32, np.int8), ("UConvert", np.uint8, np.uint32), ("UConvert", np.int8, np.uint32),
]


@pytest.mark.parametrize("op,src,dst", CONVERSIONS)
def test_conversions_match_python_reference(op, src, dst):
    rng = np.random.default_rng(len(op) + np.dtype(src).itemsize)
    if ar.is_float(src):
        values = rng.uniform(-200, 200, (2, 8, 8)).astype(src)
        if op == "ConvertFToU":
            values = np.abs(values)
    else:
        info = np.iinfo(src)
        values = rng.integers(info.min, info.max, (2, 8, 8), endpoint=True).astype(src)
    got = ar.convert(values, op, dst)
    assert got.dtype == np.dtype(dst)
    flat = values.reshape(-1)
    bits = np.dtype(dst).itemsize * 8
    if op == "FConvert":
        expect = ar.round_from_f64(flat.astype(np.float64), dst)
    elif op in ("ConvertFToS", "ConvertFToU"):
        expect = np.array([int(float(v)) for v in flat]).astype(dst)
    elif op in ("ConvertSToF", "ConvertUToF"):
        expect = ar.round_from_f64(flat.astype(np.float64), dst)
    else:
        signed = op == "SConvert"
        ints = [int(v) if (signed or v >= 0) else int(v) + (1 << 8 * values.dtype.itemsize) for v in
                flat.view(f"{'i' if signed else 'u'}{values.dtype.itemsize}")]
        expect = np.array([i % (1 << bits) for i in ints], np.uint64).astype(f"u{bits // 8}").view(dst)
    np.testing.assert_array_equal(got.reshape(-1).view(f"u{np.dtype(dst).itemsize}"),
                                  np.asarray(expect).view(f"u{np.dtype(dst).itemsize}"))


def test_conversion_rounding_modes_bitcast_and_errors():
    x = np.array([1 + 2 ** -12, -(1 + 2 ** -12)], np.float32)
    assert ar.convert(x, "FConvert", np.float16, FPRoundingMode.RTP)[0] == np.float16(1 + 2 ** -10)
    assert ar.convert(x, "FConvert", np.float16, FPRoundingMode.RTZ)[1] == -1
    h = np.array([1.5, -2.0], np.float16)
    np.testing.assert_array_equal(ar.convert(h, "Bitcast", np.uint16), h.view(np.uint16))
    with pytest.raises(cm.CoopMatError, match="widths differ"):
        ar.convert(h, "Bitcast", np.uint32)
    with pytest.raises(cm.CoopMatError, match="OpConvertSToF cannot take float16"):
        ar.convert(h, "ConvertSToF", np.float32)
    with pytest.raises(cm.CoopMatError, match="OpFNegate is not a cooperative-matrix conversion"):
        ar.convert(h, "FNegate", np.float32)
    assert (ar.convert(np.array([np.nan, 1e10, -1e10], np.float32), "ConvertFToS", np.int8) == [0, 127, -128]).all()


def _t(dtype, rows, cols, use, scope=Scope.Subgroup):
    return coop_type(dtype, rows, cols, use, scope)


@pytest.mark.parametrize("src_use,dst_use", [(2, 0), (2, 1), (0, 2), (1, 2)])
@pytest.mark.parametrize("transpose", [False, True])
def test_convert_use_both_directions_with_and_without_transpose(src_use, dst_use, transpose):
    rng = np.random.default_rng(src_use * 3 + dst_use)
    mats = rng.standard_normal((2, 8, 16)).astype(np.float16)
    src = _t(np.float16, 8, 16, src_use)
    dst = _t(np.float16, 16, 8, dst_use) if transpose else _t(np.float16, 8, 16, dst_use)
    got = ar.convert_use(mats, src, dst, transpose)
    np.testing.assert_array_equal(got, mats.swapaxes(1, 2) if transpose else mats)


def test_convert_use_rules_from_seed_000():
    mats = np.arange(64, dtype=np.int8).reshape(1, 8, 8)
    acc = _t(np.int8, 8, 8, 2)
    np.testing.assert_array_equal(ar.convert_use(mats, acc, _t(np.uint8, 8, 8, 0)), mats.view(np.uint8))
    with pytest.raises(cm.CoopMatError, match="use OpFConvert"):
        ar.convert_use(mats, acc, _t(np.int32, 8, 8, 0))
    with pytest.raises(cm.CoopMatError, match="Use MatrixAKHR -> MatrixBKHR"):
        ar.convert_use(mats, _t(np.int8, 8, 8, 0), _t(np.int8, 8, 8, 1))
    with pytest.raises(cm.CoopMatError, match="Use MatrixAccumulatorKHR -> MatrixAccumulatorKHR"):
        ar.convert_use(mats, acc, acc)
    with pytest.raises(cm.CoopMatError, match="scopes must match"):
        ar.convert_use(mats, acc, _t(np.int8, 8, 8, 0, Scope.Workgroup))
    wide = np.zeros((1, 8, 4), np.int8)
    with pytest.raises(cm.CoopMatError, match="result must be 4x8"):
        ar.convert_use(wide, _t(np.int8, 8, 4, 2), _t(np.int8, 8, 4, 0), transpose=True)


def test_transpose_nv():
    rng = np.random.default_rng(9)
    mats = rng.standard_normal((3, 16, 8)).astype(np.float32)
    got = ar.transpose_nv(mats, _t(np.float32, 16, 8, 2), _t(np.float32, 8, 16, 1))
    np.testing.assert_array_equal(got, mats.transpose(0, 2, 1))
    with pytest.raises(cm.CoopMatError, match="must be 8x16"):
        ar.transpose_nv(mats, _t(np.float32, 16, 8, 2), _t(np.float32, 16, 8, 1))


def test_times_scalar_uniform_and_per_lane():
    rng = np.random.default_rng(10)
    mats = rng.standard_normal((2, 8, 8)).astype(np.float16)
    scale = np.array([1.5, -3.0], np.float16)
    np.testing.assert_array_equal(ar.times_scalar(mats, scale, 8), mats * scale[:, None, None])
    per_lane = rng.standard_normal((2, 8)).astype(np.float16)
    got = ar.times_scalar(mats, per_lane, 8)
    flat = got.reshape(2, -1)
    for lane in range(8):  # STRIDED: lane l holds flat indices l, l+8, ...
        np.testing.assert_array_equal(flat[:, lane::8], mats.reshape(2, -1)[:, lane::8] * per_lane[:, lane:lane + 1])
