"""OpExtInst: GLSL.std.450 as tables of NumPy functions; NonSemantic.* sets are ignored (debug info).

`GLSL_STD_450` entries take the result type's dtype and the operand values. Integer entries read
their operands as signed ('S...') or unsigned ('U...') as their names say. `GLSL_STD_450_OUT`
entries (Modf, Frexp) return the result and the value stored through their pointer operand;
`GLSL_STD_450_STRUCT` entries (ModfStruct, FrexpStruct) return the struct's members.
`GEOMETRIC_VECTOR_OPERANDS` says how many leading operands of a geometric instruction are its
vectors, so that the scalar forms (`length(float)`, `reflect(float, float)`) reduce over a
one-component axis, never across lanes. `GLSL_STD_450_REFUSED` names the instructions the
executor refuses and why; every other instruction of the set that none of these tables holds is
refused by name too.

Precision: the reference computes what the GLSL.std.450 text defines, exactly where the text
is exact (rounding, modf, frexp, the pack/unpack formulas with IEEE f32 arithmetic), and rounds
once from float64 where Vulkan only bounds the error (transcendentals, Determinant,
MatrixInverse). docs/ref.md lists where Vulkan allows an implementation slack.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.access import store_value
from hydroplane.ref.layout import value_dtype
from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import as_signed, as_unsigned, reinterpret
from hydroplane.spirv import grammar
from hydroplane.spirv import types as T


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


def _dot(a, b):
    return np.sum(a * b, axis=-1)


def _refract(i, n, eta):
    """k < 0 ? 0 : eta * I - (eta * dot(N, I) + sqrt(k)) * N, k = 1 - eta^2 * (1 - dot(N, I)^2)."""
    eta = eta[..., None].astype(i.dtype)
    d = _dot(n, i)[..., None]
    one = i.dtype.type(1)
    k = one - eta * eta * (one - d * d)
    return np.where(k < 0, i.dtype.type(0), eta * i - (eta * d + np.sqrt(np.maximum(k, 0))) * n)


def _minor(m, column, row):
    """The matrix (..., C-1, R-1) left when column `column` and row `row` are removed."""
    keep_c = [c for c in range(m.shape[-2]) if c != column]
    keep_r = [r for r in range(m.shape[-1]) if r != row]
    return m[..., keep_c, :][..., keep_r]


def _determinant(m):
    """Cofactor expansion along the first column (the formula GLSL defines), for 1x1 .. 4x4."""
    if m.shape[-1] == 1:
        return m[..., 0, 0]
    return sum((-1) ** r * m[..., 0, r] * _determinant(_minor(m, 0, r)) for r in range(m.shape[-1]))


def _matrix_inverse(m):
    """Adjugate over determinant; m[c, r] is column c, row r, so inverse[c, r] = cofactor(r, c) / det."""
    size = m.shape[-1]
    det = _determinant(m)
    cof = np.stack([np.stack([(-1) ** (r + c) * _determinant(_minor(m, r, c)) for r in range(size)], axis=-1)
                    for c in range(size)], axis=-2)
    return cof / det[..., None, None]


def _modf(dt, x):
    """(fraction, whole): both with the sign of x (C modf; an infinity has fraction +-0)."""
    frac, whole = np.modf(x)
    return frac.astype(dt), whole.astype(dt)


def _frexp(dt, exp_dt, x):
    """(significand in [0.5, 1) with the sign of x, exponent); 0 gives (0, 0)."""
    mant, exp = np.frexp(x.astype(np.float64))
    return mant.astype(dt), exp.astype(exp_dt)


def _round_ties_even_to_int(x, bits):
    """GLSL.std.450 round(): ties go to even here (the spec lets the implementation choose)."""
    return (np.rint(x).astype(np.int64) & ((1 << bits) - 1)).astype(np.uint32)


def _pack(lo, hi, scale, bits):
    """Pack 32 // bits components: round(clamp(c, lo, hi) * scale), component 0 in the low bits."""
    def pack(v):
        v = v.astype(np.float32)
        fields = _round_ties_even_to_int(np.clip(v, np.float32(lo), np.float32(hi)) * np.float32(scale), bits)
        out = np.zeros(v.shape[:-1], np.uint32)
        for c in range(32 // bits):
            out |= fields[..., c] << np.uint32(c * bits)
        return out
    return pack


def _unpack(signed, scale, bits):
    """Unpack 32 // bits components: f / scale (IEEE f32 division), clamped to [-1, 1] when signed."""
    def unpack(p):
        u = as_unsigned(p).astype(np.uint32)
        fields = np.stack([(u >> np.uint32(c * bits)) & np.uint32((1 << bits) - 1) for c in range(32 // bits)],
                          axis=-1).astype(np.int64)
        if signed:
            fields = np.where(fields >= 1 << (bits - 1), fields - (1 << bits), fields)
        f = fields.astype(np.float32) / np.float32(scale)
        return np.clip(f, np.float32(-1), np.float32(1)) if signed else f
    return unpack


def _pack_double_2x32(v):
    u = as_unsigned(v).astype(np.uint64)
    return (u[..., 0] | (u[..., 1] << np.uint64(32))).view(np.float64)


def _unpack_double_2x32(d):
    u = np.ascontiguousarray(d, np.float64).view(np.uint64)
    return np.stack([u & np.uint64(0xFFFFFFFF), u >> np.uint64(32)], axis=-1).astype(np.uint32)


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
    "Refract": _same(_refract),
    "Determinant": _f64(_determinant),
    "MatrixInverse": _f64(_matrix_inverse),
    "PackSnorm4x8": _same(_pack(-1, 1, 127, 8)),
    "PackUnorm4x8": _same(_pack(0, 1, 255, 8)),
    "PackSnorm2x16": _same(_pack(-1, 1, 32767, 16)),
    "PackUnorm2x16": _same(_pack(0, 1, 65535, 16)),
    "UnpackSnorm4x8": _same(_unpack(True, 127, 8)),
    "UnpackUnorm4x8": _same(_unpack(False, 255, 8)),
    "UnpackSnorm2x16": _same(_unpack(True, 32767, 16)),
    "UnpackUnorm2x16": _same(_unpack(False, 65535, 16)),
    "PackDouble2x32": _same(_pack_double_2x32),
    "UnpackDouble2x32": lambda dt, d: reinterpret(_unpack_double_2x32(d), dt),
}

# Result and the value stored through the last (pointer) operand: fn(result dtype, pointee dtype, x).
GLSL_STD_450_OUT = {
    "Modf": lambda dt, whole_dt, x: _modf(dt, x),
    "Frexp": _frexp,
}

# Members of the result struct: fn(member dtypes, x).
GLSL_STD_450_STRUCT = {
    "ModfStruct": lambda dts, x: _modf(dts[0], x),
    "FrexpStruct": lambda dts, x: _frexp(dts[0], dts[1], x),
}

# How many leading operands are the vectors of a geometric instruction (the rest are scalars).
GEOMETRIC_VECTOR_OPERANDS = {"Length": 1, "Distance": 2, "Normalize": 1, "FaceForward": 3, "Reflect": 2,
                             "Refract": 2}

# Instructions of the set the executor refuses on purpose, with the reason its error gives.
GLSL_STD_450_REFUSED = {
    "IMix": "is reserved by GLSL.std.450 (it has no defined semantics; spirv-val rejects it)",
    "InterpolateAtCentroid": "interpolates a fragment-shader input (Fragment execution model only)",
    "InterpolateAtSample": "interpolates a fragment-shader input (Fragment execution model only)",
    "InterpolateAtOffset": "interpolates a fragment-shader input (Fragment execution model only)",
}


def glsl_std_450_supported(name: str) -> bool:
    """Whether the executor runs the GLSL.std.450 instruction `name` (the coverage table reads this)."""
    return name in GLSL_STD_450 or name in GLSL_STD_450_OUT or name in GLSL_STD_450_STRUCT


@register(Op.ExtInst, Op.ExtInstWithForwardRefsKHR)  # the second only ever names a NonSemantic set
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
    if not glsl_std_450_supported(name):
        reason = GLSL_STD_450_REFUSED.get(name, "is not implemented by the reference executor")
        ctx.unsupported(f"GLSL.std.450 {name} {reason}")
        return
    ids = inst.args[1:]
    operands = [ctx.get(i) for i in ids]
    with np.errstate(all="ignore"):
        if name in GLSL_STD_450_STRUCT:
            dtypes = [value_dtype(m.type) for m in inst.type.members]
            ctx.set(inst.result_id, tuple(GLSL_STD_450_STRUCT[name](dtypes, *operands)))
        elif name in GLSL_STD_450_OUT:
            pointer = operands[-1]
            result, stored = GLSL_STD_450_OUT[name](inst.dtype, value_dtype(pointer.type), *operands[:-1])
            store_value(ctx, pointer, pointer.type, stored)
            ctx.set(inst.result_id, result)
        elif name in GEOMETRIC_VECTOR_OPERANDS and isinstance(ctx.type_of(ids[0]), T.Scalar):
            # scalar form: the vector operands get a one-component axis for the dot products
            count = GEOMETRIC_VECTOR_OPERANDS[name]
            operands = [x[..., None] if k < count else x for k, x in enumerate(operands)]
            result = GLSL_STD_450[name](inst.dtype, *operands)
            ctx.set(inst.result_id, result[..., 0] if result.ndim > 1 else result)
        else:
            ctx.set(inst.result_id, GLSL_STD_450[name](inst.dtype, *operands))
