"""Cooperative-matrix arithmetic with exact rounding: MulAdd, element conversions, ConvertUse,
transpose, and matrix-times-scalar.

MulAdd order (documented, the same for every family):
  * floats: every product A[i,k]*B[k,j] is formed exactly in float64 (exact for f16, bf16, fp8
    and f32 inputs: at most 48 significant bits), the K products are summed in float64, C is
    added in float64, and the float64 result is rounded once, to nearest even, to the result
    type (through round-to-odd float32 for bf16/fp8, so there is no double rounding). The sum
    is exact whenever its partial sums fit float64's 53 bits (true for CTS-style inputs);
  * integers: each operand's bits are read signed or unsigned as its CooperativeMatrixOperands
    bit says (MatrixA/B/C/ResultSignedComponents), products and sums are exact (int64, or
    Python integers when int64 could overflow), then the exact value is saturated to the result
    range (SaturatingAccumulation) or wrapped to the result width.
Element-wise +, -, *, / on f16/bf16 matrices in their own dtype are correctly rounded: NumPy
and ml_dtypes compute them in float32, which has more than 2p+2 bits for p = 11 and 8.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hydroplane.ref.coopmat.matrix import (
    DEFAULT_DISTRIBUTION,
    CoopMatError,
    ElementDistribution,
    check_value,
    uniform_per_instance,
)
from hydroplane.spirv.enums import CooperativeMatrixOperands as Operands
from hydroplane.spirv.enums import CooperativeMatrixUse as Use
from hydroplane.spirv.enums import FPRoundingMode
from hydroplane.spirv.types import CoopMatrix

F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
FLOAT_DTYPES = frozenset(np.dtype(t) for t in (
    np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2))


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_DTYPES


def is_int(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def _bits_dtype(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def step_toward(values: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The next representable float above (up) or below each value, by its bit pattern."""
    dtype = values.dtype
    width = dtype.itemsize * 8
    bits = values.view(_bits_dtype(dtype)).astype(np.int64)
    sign_bit = np.int64(1) << (width - 1)
    negative = (bits & sign_bit) != 0
    magnitude = bits & (sign_bit - 1)
    grow = np.where(negative, ~up, up)  # moving away from zero
    shrink_to_other_side = (magnitude == 0) & ~grow
    magnitude = np.where(grow, magnitude + 1, np.where(shrink_to_other_side, 1, magnitude - 1))
    negative = np.where(shrink_to_other_side, ~negative, negative)
    out = np.where(negative, magnitude | sign_bit, magnitude)
    return out.astype(_bits_dtype(dtype)).view(dtype)


def _round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd: a later rounding to <= 22 bits is then correct."""
    nearest = x.astype(F32)
    inexact = (nearest.astype(F64) != x) & ~np.isnan(x)
    even = (nearest.view(np.uint32) & 1) == 0
    fix = inexact & even
    if fix.any():
        nearest = nearest.copy()
        nearest[fix] = step_toward(nearest[fix], nearest[fix].astype(F64) < x[fix])
    return nearest


def round_from_f64(x, dtype, rounding: FPRoundingMode = FPRoundingMode.RTE) -> np.ndarray:
    """Round exact float64 values once to a float dtype with an FPRoundingMode."""
    x = np.asarray(x, dtype=F64)
    dtype = np.dtype(dtype)
    if dtype == F64:
        return x.copy()
    if dtype in (F32, np.dtype(np.float16)):
        with np.errstate(over="ignore"):  # overflow to infinity is the correct rounding
            out = x.astype(dtype)
    elif dtype in FLOAT_DTYPES:
        out = _round_to_odd_f32(x).astype(dtype)
    else:
        raise CoopMatError(f"{dtype} is not a float component type")
    if rounding == FPRoundingMode.RTE:
        return out
    back = out.astype(F64)
    finite = ~np.isnan(x)
    if rounding == FPRoundingMode.RTZ:
        move = finite & (np.abs(back) > np.abs(x))
        up = x < 0
    elif rounding == FPRoundingMode.RTP:
        move, up = finite & (back < x), np.ones_like(x, bool)
    else:
        move, up = finite & (back > x), np.zeros_like(x, bool)
    if move.any():
        out = out.copy()
        out[move] = step_toward(out[move], up[move])
    return out


def as_integers(values: np.ndarray, signed: bool) -> np.ndarray:
    """The exact integers that integer bits stand for, read signed or unsigned."""
    width = values.dtype.itemsize
    view = values.view(np.dtype(f"{'i' if signed else 'u'}{width}"))
    if not signed and width == 8:
        return view.astype(object)
    return view.astype(np.int64)


def integer_range(dtype, signed: bool) -> tuple[int, int]:
    bits = np.dtype(dtype).itemsize * 8
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def wrap_integers(exact: np.ndarray, dtype) -> np.ndarray:
    """Exact integers wrapped (two's complement) into dtype's bits."""
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    if exact.dtype == object:
        exact = np.asarray([int(v) % (1 << bits) for v in exact.reshape(-1)], dtype=np.uint64).reshape(exact.shape)
        return exact.astype(_bits_dtype(dtype)).view(dtype)
    return exact.astype(np.int64).astype(_bits_dtype(dtype)).view(dtype)


def saturate_integers(exact: np.ndarray, dtype, signed: bool) -> np.ndarray:
    """Exact integers clamped to dtype's signed or unsigned range, as dtype's bits."""
    low, high = integer_range(dtype, signed)
    if exact.dtype == object:
        clipped = np.asarray([min(max(int(v), low), high) for v in exact.reshape(-1)], dtype=object)
        return wrap_integers(clipped.reshape(exact.shape), dtype)
    return wrap_integers(np.clip(exact, max(low, -(1 << 63)), min(high, (1 << 63) - 1)), dtype)


def _check_muladd_shapes(a, b, c):
    if a.ndim != 3 or b.ndim != 3 or c.ndim != 3:
        raise CoopMatError("MulAdd operands must be (instances, rows, cols) matrices")
    (na, m, k), (nb, kb, n), (nc, mc, nn) = a.shape, b.shape, c.shape
    if kb != k or mc != m or nn != n:
        raise CoopMatError(f"MulAdd shapes do not chain: A {m}x{k}, B {kb}x{n}, C {mc}x{nn} "
                           f"(need A MxK, B KxN, C MxN)")
    if not na == nb == nc:
        raise CoopMatError(f"MulAdd operands have {na}, {nb}, {nc} scope instances")


def muladd(a: np.ndarray, b: np.ndarray, c: np.ndarray, result_dtype, operands: int = 0) -> np.ndarray:
    """OpCooperativeMatrixMulAddKHR/NV: A*B + C per instance, exact, with one rounding."""
    _check_muladd_shapes(a, b, c)
    result_dtype = np.dtype(result_dtype)
    kinds = [is_float(x.dtype) for x in (a, b, c)] + [is_float(result_dtype)]
    if all(kinds):
        exact = np.matmul(a.astype(F64, copy=False), b.astype(F64, copy=False))
        exact += c.astype(F64, copy=False)
        return round_from_f64(exact, result_dtype)
    if any(kinds) or not all(is_int(x.dtype) for x in (a, b, c)) or not is_int(result_dtype):
        raise CoopMatError(f"MulAdd mixes float and integer components: A {a.dtype}, B {b.dtype}, "
                           f"C {c.dtype}, result {result_dtype}")
    ops = Operands(operands)
    ai = as_integers(a, Operands.MatrixASignedComponentsKHR in ops)
    bi = as_integers(b, Operands.MatrixBSignedComponentsKHR in ops)
    ci = as_integers(c, Operands.MatrixCSignedComponentsKHR in ops)
    bound = _magnitude(ai) * _magnitude(bi) * a.shape[2] + _magnitude(ci)
    if bound >= 1 << 62 or object in (ai.dtype, bi.dtype, ci.dtype):
        ai, bi, ci = ai.astype(object), bi.astype(object), ci.astype(object)
    exact = np.matmul(ai, bi) + ci
    if Operands.SaturatingAccumulationKHR in ops:
        return saturate_integers(exact, result_dtype, Operands.MatrixResultSignedComponentsKHR in ops)
    return wrap_integers(exact, result_dtype)


def _magnitude(values: np.ndarray) -> int:
    return max((abs(int(values.max())), abs(int(values.min())))) if values.size else 0


def _float_to_int(values, dtype, signed: bool) -> np.ndarray:
    # Out-of-range and NaN are undefined in SPIR-V; the reference saturates and maps NaN to 0.
    x = np.nan_to_num(np.trunc(values.astype(F64)), nan=0.0)
    low, high = integer_range(dtype, signed)
    x = np.clip(x, float(low), float(high))
    if np.dtype(dtype).itemsize == 8:
        exact = np.asarray([int(v) for v in x.reshape(-1)], dtype=object).reshape(x.shape)
        return saturate_integers(exact, dtype, signed)
    return wrap_integers(x.astype(np.int64), dtype)


def _int_to_float(values, dtype, signed: bool, rounding: FPRoundingMode) -> np.ndarray:
    exact = as_integers(values, signed)
    if exact.dtype == object or np.abs(exact).max(initial=0) >= 1 << 53:
        raise CoopMatError("integer-to-float conversion of values past 2**53 is not implemented exactly")
    return round_from_f64(exact.astype(F64), dtype, rounding)


def _bitcast(values, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if values.dtype.itemsize != dtype.itemsize:
        raise CoopMatError(f"OpBitcast between {values.dtype} and {dtype}: component widths differ")
    return np.ascontiguousarray(values).view(dtype)


CONVERSIONS = {
    "FConvert": lambda v, d, r: round_from_f64(v.astype(F64), d, r),
    "ConvertFToS": lambda v, d, r: _float_to_int(v, d, True),
    "ConvertFToU": lambda v, d, r: _float_to_int(v, d, False),
    "ConvertSToF": lambda v, d, r: _int_to_float(v, d, True, r),
    "ConvertUToF": lambda v, d, r: _int_to_float(v, d, False, r),
    "SConvert": lambda v, d, r: wrap_integers(as_integers(v, True), d),
    "UConvert": lambda v, d, r: wrap_integers(as_integers(v, False), d),
    "Bitcast": lambda v, d, r: _bitcast(v, d),
}


def convert(values: np.ndarray, opname: str, dtype, rounding: FPRoundingMode = FPRoundingMode.RTE) -> np.ndarray:
    """An element-wise conversion by its SPIR-V name (without Op), e.g. convert(m, 'FConvert', f16)."""
    rule = CONVERSIONS.get(opname)
    if rule is None:
        raise CoopMatError(f"Op{opname} is not a cooperative-matrix conversion ({', '.join(CONVERSIONS)})")
    source_float = is_float(values.dtype)
    wants_float_source = opname in ("FConvert", "ConvertFToS", "ConvertFToU")
    if opname != "Bitcast" and source_float != wants_float_source:
        raise CoopMatError(f"Op{opname} cannot take {values.dtype} components")
    return rule(values, np.dtype(dtype), FPRoundingMode(rounding))


def _same_component_or_signedness(src: np.dtype, dst: np.dtype) -> bool:
    return src == dst or (is_int(src) and is_int(dst) and src.itemsize == dst.itemsize)


def convert_use(mats: np.ndarray, src: CoopMatrix, dst: CoopMatrix, transpose: bool = False) -> np.ndarray:
    """OpCooperativeMatrixConvertUseEXT (= NV2 ConvertNV), transposing when decorated
    CooperativeMatrixTransposeEXT; validates the rules of seed 000."""
    check_value(src, mats, "ConvertUse operand")
    what = "ConvertUse" + (" (CooperativeMatrixTransposeEXT)" if transpose else "")
    if src.scope != dst.scope:
        raise CoopMatError(f"{what}: scope {src.scope.name} -> {dst.scope.name}; scopes must match")
    if not _same_component_or_signedness(src.component.dtype, dst.component.dtype):
        raise CoopMatError(f"{what}: component {src.component.dtype} -> {dst.component.dtype}; use OpFConvert/"
                           f"OpSConvert/OpUConvert to change the component type")
    want = (src.cols, src.rows) if transpose else src.shape
    if dst.shape != want:
        raise CoopMatError(f"{what}: {src.rows}x{src.cols} -> {dst.rows}x{dst.cols}; result must be "
                           f"{want[0]}x{want[1]}")
    to_ab = src.use == Use.MatrixAccumulatorKHR and dst.use in (Use.MatrixAKHR, Use.MatrixBKHR)
    to_acc = src.use in (Use.MatrixAKHR, Use.MatrixBKHR) and dst.use == Use.MatrixAccumulatorKHR
    if not (to_ab or to_acc):
        raise CoopMatError(f"{what}: Use {getattr(src.use, 'name', None)} -> {getattr(dst.use, 'name', None)}; "
                           f"Accumulator must become A or B, and A or B must become Accumulator")
    out = mats.swapaxes(1, 2) if transpose else mats
    return np.ascontiguousarray(out).view(dst.component.dtype)


def _conversion_between(src: np.dtype, dst: np.dtype) -> str:
    """The OpConvert* that turns src components into dst components."""
    if is_float(src):
        return "FConvert" if is_float(dst) else ("ConvertFToS" if dst.kind == "i" else "ConvertFToU")
    if is_float(dst):
        return "ConvertSToF" if src.kind == "i" else "ConvertUToF"
    return "SConvert" if src.kind == "i" else "UConvert"


def convert_nv(mats: np.ndarray, src: CoopMatrix, dst: CoopMatrix) -> np.ndarray:
    """NV2 OpCooperativeMatrixConvertNV changing the component type: the OpConvert* of the two
    component types (source signedness for integer sources), plus Accumulator -> A/B or the same Use."""
    check_value(src, mats, "ConvertNV operand")
    if src.scope != dst.scope or src.shape != dst.shape:
        raise CoopMatError(f"ConvertNV: {src} -> {dst}; scope and shape must match")
    to_ab = src.use == Use.MatrixAccumulatorKHR and dst.use in (Use.MatrixAKHR, Use.MatrixBKHR)
    if not (src.use == dst.use or to_ab):
        raise CoopMatError(f"ConvertNV: Use {getattr(src.use, 'name', None)} -> {getattr(dst.use, 'name', None)}; "
                           f"only Accumulator -> A or B, or the same Use")
    return convert(mats, _conversion_between(src.component.dtype, dst.component.dtype), dst.component.dtype)


def transpose_nv(mats: np.ndarray, src: CoopMatrix, dst: CoopMatrix) -> np.ndarray:
    """OpCooperativeMatrixTransposeNV: the transposed matrix with the result's Use."""
    check_value(src, mats, "TransposeNV operand")
    if src.scope != dst.scope or dst.shape != (src.cols, src.rows):
        raise CoopMatError(f"TransposeNV: {src} -> {dst}; result must be "
                           f"{src.cols}x{src.rows} with the same scope")
    if not _same_component_or_signedness(src.component.dtype, dst.component.dtype):
        raise CoopMatError(f"TransposeNV: component {src.component.dtype} -> {dst.component.dtype} must stay the same")
    return np.ascontiguousarray(mats.swapaxes(1, 2)).view(dst.component.dtype)


def times_scalar(mats: np.ndarray, scalars, lanes: int, dist: ElementDistribution = DEFAULT_DISTRIBUTION) -> np.ndarray:
    """OpMatrixTimesScalar: each element times the scalar of the lane that holds it.

    `scalars` is a scalar, (instances,) or (instances, lanes); one rounding in the component type.
    """
    scalars = np.asarray(scalars)
    n, rows, cols = mats.shape
    if scalars.ndim == 2:
        try:
            scalars = uniform_per_instance(scalars, "scalar")
        except CoopMatError:
            owner_lane, _ = dist.owner(rows, cols, lanes)
            per_element = scalars[:, owner_lane].reshape(n, rows, cols).astype(mats.dtype)
            return (mats * per_element).astype(mats.dtype)
    factor = scalars.astype(mats.dtype).reshape(-1, 1, 1)
    return (mats * factor).astype(mats.dtype)
