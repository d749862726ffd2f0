"""Conversions and bit casts, with the rounding SPIR-V specifies.

Float to integer truncates toward zero (out-of-range values saturate, NaN gives 0: SPIR-V
leaves them undefined); integer to float and float to float round to nearest even unless an
FPRoundingMode decoration says otherwise (RTE, RTZ, RTP, RTN).
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.layout import value_shape
from hydroplane.ref.memory import PSB
from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import Pointer, as_signed, as_unsigned, reinterpret
from hydroplane.spirv import types as T
from hydroplane.spirv.enums import FPRoundingMode

ROUNDING_MODES = {mode: mode.name for mode in FPRoundingMode}


def _saturating_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    x = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
    return np.clip(x, info.min, info.max).astype(dtype)


def round_float(x: np.ndarray, dtype: np.dtype, mode: str = "RTE") -> np.ndarray:
    """Values (any float or int array) rounded to `dtype` with the given rounding mode."""
    exact = x.astype(np.float64) if x.dtype.kind in "iub" else x.astype(np.float64)
    with np.errstate(all="ignore"):
        r = exact.astype(dtype)
        if mode == "RTE":
            return r
        back = r.astype(np.float64)
        if mode == "RTZ":
            fix = np.abs(back) > np.abs(exact)
            toward = np.zeros((), np.float64)
        elif mode == "RTP":
            fix = back < exact
            toward = np.array(np.inf)
        else:
            fix = back > exact
            toward = np.array(-np.inf)
        if fix.any():
            if mode == "RTZ":
                stepped = np.nextafter(r, np.zeros((), dtype))
            else:
                stepped = np.nextafter(r, toward.astype(dtype))
            r = np.where(fix & np.isfinite(exact), stepped, r)
    return r


def _rounding(ctx, inst) -> str:
    mode = ctx.program.decoration(inst.result_id, "FPRoundingMode")
    return ROUNDING_MODES.get(mode[0], "RTE") if mode else "RTE"


@register(Op.ConvertFToU)
def _f_to_u(ctx, inst):
    ctx.set(inst.result_id, _saturating_int(ctx.get(inst.args[0]), inst.dtype).view(inst.dtype))


@register(Op.ConvertFToS)
def _f_to_s(ctx, inst):
    dt = inst.dtype
    signed = np.dtype(f"i{dt.itemsize}")
    ctx.set(inst.result_id, reinterpret(_saturating_int(ctx.get(inst.args[0]), signed), dt))


@register(Op.ConvertSToF)
def _s_to_f(ctx, inst):
    ctx.set(inst.result_id, round_float(as_signed(ctx.get(inst.args[0])), inst.dtype, _rounding(ctx, inst)))


@register(Op.ConvertUToF)
def _u_to_f(ctx, inst):
    ctx.set(inst.result_id, round_float(as_unsigned(ctx.get(inst.args[0])), inst.dtype, _rounding(ctx, inst)))


@register(Op.UConvert)
def _u_convert(ctx, inst):
    dt = inst.dtype
    v = as_unsigned(ctx.get(inst.args[0])).astype(np.dtype(f"u{dt.itemsize}"))
    ctx.set(inst.result_id, reinterpret(v, dt))


@register(Op.SConvert)
def _s_convert(ctx, inst):
    dt = inst.dtype
    v = as_signed(ctx.get(inst.args[0])).astype(np.dtype(f"i{dt.itemsize}"))
    ctx.set(inst.result_id, reinterpret(v, dt))


@register(Op.FConvert)
def _f_convert(ctx, inst):
    ctx.set(inst.result_id, round_float(ctx.get(inst.args[0]), inst.dtype, _rounding(ctx, inst)))


@register(Op.QuantizeToF16)
def _quantize_to_f16(ctx, inst):
    v = ctx.get(inst.args[0])
    with np.errstate(all="ignore"):
        h = v.astype(np.float16)
    tiny = np.finfo(np.float16).tiny
    h = np.where((np.abs(h) < tiny) & np.isfinite(h), np.copysign(np.float16(0), h), h)
    ctx.set(inst.result_id, h.astype(v.dtype))


@register(Op.SatConvertSToU)
def _sat_s_to_u(ctx, inst):
    dt = inst.dtype
    v = as_signed(ctx.get(inst.args[0])).astype(np.int64)
    ctx.set(inst.result_id, np.clip(v, 0, np.iinfo(as_unsigned(np.zeros(1, dt)).dtype).max).astype(dt))


@register(Op.SatConvertUToS)
def _sat_u_to_s(ctx, inst):
    dt = inst.dtype
    v = as_unsigned(ctx.get(inst.args[0])).astype(np.uint64)
    top = np.iinfo(np.dtype(f"i{dt.itemsize}")).max
    ctx.set(inst.result_id, reinterpret(np.minimum(v, top).astype(np.dtype(f"i{dt.itemsize}")), dt))


@register(Op.Bitcast)
def _bitcast(ctx, inst):
    v = ctx.get(inst.args[0])
    t = inst.type
    if isinstance(v, Pointer) or isinstance(t, T.Pointer):
        if isinstance(v, Pointer):
            if v.region is not PSB:
                ctx.unsupported("OpBitcast of a pointer that is not a PhysicalStorageBuffer pointer")
            raw = v.offset.astype(np.uint64)
            ctx.set(inst.result_id, np.ascontiguousarray(raw).view(inst.dtype).reshape((raw.shape[0],)
                                                                                      + value_shape(t)))
        else:
            addr = np.ascontiguousarray(v).view(np.uint64).reshape(v.shape[0]).astype(np.int64)
            ctx.set(inst.result_id, Pointer(PSB, addr, ctx.program.pointee(t), elem_stride=t.stride))
        return
    w = v.shape[0]
    raw = np.ascontiguousarray(v).view(inst.dtype)
    if isinstance(t, T.CoopMatrix):
        ctx.set(inst.result_id, raw)
        return
    ctx.set(inst.result_id, raw.reshape((w,) + value_shape(t)))
