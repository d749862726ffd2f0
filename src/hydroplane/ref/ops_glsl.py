"""OpExtInst: GLSL.std.450 as a table of NumPy functions; NonSemantic.* sets are ignored (debug info).

Functions take the operand values and the result type's dtype. Integer entries read their
operands as signed ('S...') or unsigned ('U...') as their names say.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import as_signed, as_unsigned, reinterpret
from hydroplane.spirv import grammar


def _f64(fn):
    """A float function evaluated in float64 and rounded once to the result type."""
    return lambda dt, *a: fn(*(x.astype(np.float64) for x in a)).astype(dt)


def _same(fn):
    return lambda dt, *a: np.asarray(fn(*a)).astype(dt, copy=False)


def _signed(fn):
    return lambda dt, *a: reinterpret(np.asarray(fn(*(as_signed(x) for x in a))), dt)


def _unsigned(fn):
    return lambda dt, *a: reinterpret(np.asarray(fn(*(as_unsigned(x) for x in a))), dt)


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _smooth_step(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _find_lsb(x):
    u = as_unsigned(x).astype(np.uint64)
    low = u & (~u + np.uint64(1))
    out = np.where(u == 0, -1, np.log2(np.where(low == 0, 1, low).astype(np.float64)).astype(np.int64))
    return out


def _find_umsb(x):
    u = as_unsigned(x).astype(np.uint64)
    out = np.full(u.shape, -1, np.int64)
    nz = u != 0
    out[nz] = np.floor(np.log2(u[nz].astype(np.float64))).astype(np.int64)
    # float64 log2 can round up just below a power of two
    over = nz & ((np.uint64(1) << np.maximum(out, 0).astype(np.uint64)) > u)
    out[over] -= 1
    return out


def _find_smsb(x):
    s = as_signed(x).astype(np.int64)
    return _find_umsb(np.where(s < 0, ~s, s).astype(np.uint64))


def _length(x):
    return np.sqrt(np.sum(x * x, axis=-1))


def _normalize(x):
    return x / _length(x)[..., None]


def _cross(a, b):
    return np.cross(a, b)


def _pack_half_2x16(v):
    h = v.astype(np.float16).view(np.uint16).astype(np.uint32)
    return h[..., 0] | (h[..., 1] << 16)


def _unpack_half_2x16(v):
    u = as_unsigned(v).astype(np.uint32)
    lo = (u & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (u >> 16).astype(np.uint16).view(np.float16)
    return np.stack([lo, hi], axis=-1).astype(np.float32)


def _fmix(x, y, a):
    return x * (1 - a) + y * a


def _ldexp(x, e):
    return np.ldexp(x, as_signed(e).astype(np.int32))


GLSL_STD_450 = {
    "Round": _f64(_round_half_away),
    "RoundEven": _same(np.rint),
    "Trunc": _same(np.trunc),
    "FAbs": _same(np.abs),
    "SAbs": _signed(np.abs),
    "FSign": _same(np.sign),
    "SSign": _signed(np.sign),
    "Floor": _same(np.floor),
    "Ceil": _same(np.ceil),
    "Fract": _same(lambda x: x - np.floor(x)),
    "Radians": _f64(np.radians),
    "Degrees": _f64(np.degrees),
    "Sin": _f64(np.sin), "Cos": _f64(np.cos), "Tan": _f64(np.tan),
    "Asin": _f64(np.arcsin), "Acos": _f64(np.arccos), "Atan": _f64(np.arctan),
    "Sinh": _f64(np.sinh), "Cosh": _f64(np.cosh), "Tanh": _f64(np.tanh),
    "Asinh": _f64(np.arcsinh), "Acosh": _f64(np.arccosh), "Atanh": _f64(np.arctanh),
    "Atan2": _f64(np.arctan2),
    "Pow": _f64(np.power),
    "Exp": _f64(np.exp), "Log": _f64(np.log), "Exp2": _f64(np.exp2), "Log2": _f64(np.log2),
    "Sqrt": _f64(np.sqrt),
    "InverseSqrt": _f64(lambda x: 1.0 / np.sqrt(x)),
    "FMin": _same(np.fmin), "UMin": _unsigned(np.minimum), "SMin": _signed(np.minimum),
    "FMax": _same(np.fmax), "UMax": _unsigned(np.maximum), "SMax": _signed(np.maximum),
    "NMin": _same(np.fmin), "NMax": _same(np.fmax),
    "FClamp": _same(lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi)),
    "UClamp": _unsigned(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "SClamp": _signed(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "NClamp": _same(lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi)),
    "FMix": _same(_fmix),
    "Step": _same(lambda edge, x: np.where(x < edge, 0.0, 1.0)),
    "SmoothStep": _f64(_smooth_step),
    "Fma": _f64(lambda a, b, c: a * b + c),
    "Ldexp": lambda dt, x, e: _ldexp(x, e).astype(dt),
    "Length": _same(_length),
    "Distance": _same(lambda a, b: _length(a - b)),
    "Cross": _same(_cross),
    "Normalize": _same(_normalize),
    "FaceForward": _same(lambda n, i, nref: np.where((np.sum(nref * i, axis=-1) < 0)[..., None], n, -n)),
    "Reflect": _same(lambda i, n: i - 2 * np.sum(n * i, axis=-1)[..., None] * n),
    "FindILsb": _signed(_find_lsb),
    "FindSMsb": _signed(_find_smsb),
    "FindUMsb": _signed(_find_umsb),
    "PackHalf2x16": _same(_pack_half_2x16),
    "UnpackHalf2x16": _same(_unpack_half_2x16),
}


@register(Op.ExtInst)
def _ext_inst(ctx, inst):
    set_name = ctx.program.ext_sets.get(inst.args[0], "")
    if set_name.startswith("NonSemantic."):
        return
    number = inst.literals[0]
    if set_name != "GLSL.std.450":
        ctx.unsupported(f"extended instruction set {set_name!r} (instruction {number})")
    try:
        name = grammar.extinst("GLSL.std.450", number).name
    except grammar.GrammarError:
        name = str(number)
    fn = GLSL_STD_450.get(name)
    if fn is None:
        ctx.unsupported(f"GLSL.std.450 {name}")
    operands = [ctx.get(i) for i in inst.args[1:]]
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, fn(inst.type.dtype, *operands))
