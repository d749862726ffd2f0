"""The language's conformance cases: kernels, fresh inputs with the edge values, and NumPy's expectations.

Each `Case` is a kernel of the language and a `build(rng, setup)` that makes one `Trial`: the
constexprs, the grid, every buffer (outputs poisoned), the push-constant scalars and what NumPy says
each output must hold, with how to compare it (`COMPARE_MODES`). Together they cover what
tests/lang exercises (scalar and vector arithmetic of every type, conversions, control flow, helpers
and tuples, local and shared arrays, atomics, subgroup operations, cooperative matrices and the EXT
maintenance1 operations) plus every row of docs/language.md's "Defined semantics" table at its edges:
negative operands, zero and -1 divisors, INT_MIN and INT_MAX, shift counts of the width and more and
negative ones, NaN, infinities, signed zeros, out-of-range float -> int.

`run_case(case, setup, run)` runs one trial on two executors through `run(executor_name, spec, trial)`
(the caller's launch glue: this layer does not launch) and compares the device with the reference
executor element for element, and the reference executor with NumPy. tools/lang_on_device.py runs the
whole list on a Vulkan device; tests/lang/test_lang_conformance.py runs it on lavapipe in CI.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hydroplane.lang import coop
from hydroplane.lang.compiler import Kernel, func, kernel_source
from hydroplane.lang.core import (
    Buffer,
    atan2,
    atomic_add,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xor,
    barrier,
    bf16,
    clamp,
    constexpr,
    dot,
    exp,
    exp2,
    f16,
    f32,
    f64,
    floor,
    global_id,
    local_array,
    local_id,
    log,
    log2,
    maximum,
    minimum,
    readonly,
    rsqrt,
    s8,
    s16,
    s32,
    s64,
    select,
    shared_array,
    sign,
    sqrt,
    static_range,
    subgroup_add,
    subgroup_all,
    subgroup_any,
    subgroup_broadcast_first,
    subgroup_exclusive_add,
    subgroup_inclusive_add,
    subgroup_max,
    subgroup_min,
    subgroup_shuffle_xor,
    subgroup_size,
    u8,
    u16,
    u32,
    u64,
    vec,
    workgroup_id,
)
from hydroplane.spirv.target import Target

I32 = np.iinfo(np.int32)
INT_EDGES = (0, 1, -1, 2, -2, 3, -3, 7, -7, 8, -8, 31, 32, 33, 40, 64, 100, -100, I32.min, I32.min + 1, I32.max,
             I32.max - 1, 1 << 16, -(1 << 16))
FLOAT_EDGES = (math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0,
               -3.0, 127.5, 128.0, -128.5, 255.5, 256.0, 32767.5, 65504.0, 65520.0, 1e5, -1e5, 2147483520.0,
               2147483648.0, -2147483904.0, 3e9, -3e9, 4294967040.0, 4294967296.0, 1e19, 1e30, -1e30, 0.125)
POISON_INT, POISON_FLOAT = 0x5A5A5A5A, -7.25e4


# ---------------------------------------------------------------------------------------------------
# what a case knows about where it runs, one trial, one result
@dataclass(frozen=True)
class Setup:
    """The device a trial is made for: its target (shapes, subgroup size) and how large to make inputs
    (`scale` workgroups of 64 invocations for the element-wise cases)."""

    target: Target
    scale: int = 1

    @property
    def subgroup_size(self) -> int:
        return self.target.subgroup_size


@dataclass
class Trial:
    """One run: constexprs, grid, every buffer by parameter name, push-constant scalars, and per output
    the NumPy expectation and the compare mode."""

    constexprs: dict
    grid: tuple[int, int, int]
    arrays: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    compare: dict[str, str] = field(default_factory=dict)  # output -> mode (default "exact")
    scalars: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """A kernel and how to make a trial of it; `applies(setup)` gives None or why the device cannot run it."""

    name: str
    kernel: Kernel
    build: Callable[[np.random.Generator, Setup], Trial]
    applies: Callable[[Setup], str | None] = lambda setup: None


@dataclass
class Result:
    """One case on one device: status PASS, FAIL, ERROR (an exception) or N/A (the device cannot run it)."""

    name: str
    status: str
    elements: int = 0
    mismatches: int = 0  # device vs ref
    ref_mismatches: int = 0  # ref vs NumPy
    detail: str = ""


# ---------------------------------------------------------------------------------------------------
# comparing
def _float_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values, NaN equal to NaN, +0 equal to -0 (Vulkan does not promise the sign of a zero)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 == b64) | (np.isnan(a64) & np.isnan(b64))


def _ulps(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Within n units in the last place of b's type (special values exactly)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    spacing = np.abs(np.spacing(b.astype(b.dtype)).astype(np.float64))
    with np.errstate(invalid="ignore"):
        close = np.abs(a64 - b64) <= n * spacing
    return _float_equal(a, b) | (close & np.isfinite(a64) & np.isfinite(b64))


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """|a - b| <= atol + rtol * |b| (special values exactly)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(a64 - b64) <= atol + rtol * np.abs(b64)
    return _float_equal(a, b) | (close & np.isfinite(a64) & np.isfinite(b64))


def mismatches(mode: str, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """A bool array (one per element) of where `got` differs from `want` under a compare mode:
    "exact" (floats: NaN == NaN, +0 == -0), "ulp:N", "close:RTOL:ATOL" (Vulkan's bounds of the
    transcendentals), "sorted" (the same multiset: atomics' old values, whose order is the device's)."""
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    if mode == "sorted":
        got, want = np.sort(got), np.sort(want)
        mode = "exact"
    if got.shape != want.shape:
        return np.ones(max(got.size, want.size), bool)
    is_float = want.dtype.kind == "f" or want.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")
    if mode == "exact":
        return ~_float_equal(got, want) if is_float else got != want
    if mode.startswith("ulp:"):
        return ~_ulps(got, want, int(mode[4:]))
    if mode.startswith("close:"):
        _, rtol, atol = mode.split(":")
        return ~_close(got, want, float(rtol), float(atol))
    raise ValueError(f"unknown compare mode {mode!r}")


COMPARE_MODES = ("exact", "ulp:N", "close:RTOL:ATOL", "sorted")


def run_case(case: Case, setup: Setup, run: Callable[[str, object, Trial], dict], seed: int = 0) -> Result:
    """One trial of `case` on the device ("device") and on the reference executor ("ref"), compared.

    `run(where, kernel, trial)` compiles `kernel` for `where`'s target with the trial's constexprs, runs
    it and returns every buffer by parameter name."""
    reason = case.applies(setup)
    if reason is not None:
        return Result(case.name, "N/A", detail=reason)
    try:
        trial = case.build(np.random.default_rng(seed), setup)
        device = run("device", case.kernel, trial)
        ref = run("ref", case.kernel, trial)
    except Exception as err:  # noqa: BLE001 -- reported per case, the suite goes on
        return Result(case.name, "ERROR", detail=f"{type(err).__name__}: {err}".splitlines()[0][:300])
    result = Result(case.name, "PASS")
    for name, want in trial.expected.items():
        mode = trial.compare.get(name, "exact")
        bad = mismatches(mode, device[name], ref[name] if mode != "sorted" else want)
        bad_ref = mismatches(mode, ref[name], want)
        result.elements += int(np.asarray(want).size)
        result.mismatches += int(bad.sum())
        result.ref_mismatches += int(bad_ref.sum())
        if (bad.any() or bad_ref.any()) and not result.detail:
            where = int(np.argmax(bad if bad.any() else bad_ref))
            flat = lambda a: np.asarray(a).reshape(-1)  # noqa: E731
            result.detail = (f"{name}[{where}]: device {flat(device[name])[where]!r}, ref {flat(ref[name])[where]!r}, "
                             f"NumPy {flat(want)[where]!r}")
    if result.mismatches or result.ref_mismatches:
        result.status = "FAIL"
    return result


# ---------------------------------------------------------------------------------------------------
# NumPy's model of the language's defined semantics (written apart from the reference executor)
def _wrap(values, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    out = []
    for v in values:
        v = int(v) % (1 << bits)
        if dtype.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype)


def _pairs(a, b):
    return zip(np.asarray(a).reshape(-1).tolist(), np.broadcast_to(b, np.shape(a)).reshape(-1).tolist())


def int_divide(a: np.ndarray, b) -> np.ndarray:
    """a // b: toward zero, a divisor of 0 acts as 1, INT_MIN // -1 wraps."""
    def one(x, y):
        if y == 0:
            return x
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q
    return _wrap([one(x, y) for x, y in _pairs(a, b)], a.dtype).reshape(np.shape(a))


def int_remainder(a: np.ndarray, b) -> np.ndarray:
    """a % b: the sign of a; a % 0 == 0."""
    def one(x, y):
        if y == 0:
            return 0
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    return _wrap([one(x, y) for x, y in _pairs(a, b)], a.dtype).reshape(np.shape(a))


def shift(a: np.ndarray, count: np.ndarray, left: bool) -> np.ndarray:
    """a << count / a >> count: the count read as unsigned; the width or more gives 0 (arithmetic >>: the sign)."""
    bits = a.dtype.itemsize * 8
    count_bits = np.asarray(count).dtype.itemsize * 8

    def one(x, c):
        c %= 1 << count_bits
        if left:
            return 0 if c >= bits else x << c
        if a.dtype.kind == "i":
            return (-1 if x < 0 else 0) if c >= bits else x >> c
        return 0 if c >= bits else x >> c
    return _wrap([one(x, c) for x, c in _pairs(a, count)], a.dtype).reshape(np.shape(a))


def float_to_int(x: np.ndarray, dtype) -> np.ndarray:
    """Truncation toward zero, saturating at the integer range; NaN -> 0."""
    info = np.iinfo(dtype)
    out = []
    for v in np.asarray(x, np.float64).reshape(-1).tolist():
        out.append(0 if math.isnan(v) else info.max if v >= info.max + 1 else info.min if v <= info.min - 1
                   else int(v))
    return np.array(out, dtype).reshape(np.shape(x))


def matrix_float_to_int(x: np.ndarray, dtype) -> np.ndarray:
    """coop.convert of a float matrix to ints: clamped in the float type to the range as it holds it, NaN -> 0."""
    info = np.iinfo(dtype)
    ftype = x.dtype.type
    with np.errstate(over="ignore"):
        top, bottom = min(float(ftype(info.max)), float(np.finfo(x.dtype).max)), \
            max(float(ftype(info.min)), -float(np.finfo(x.dtype).max))
    if top > info.max:
        top = float(np.nextafter(ftype(top), ftype(0)))
    if bottom < info.min:
        bottom = float(np.nextafter(ftype(bottom), ftype(0)))
    v = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=top, neginf=bottom)
    return np.trunc(np.clip(v, bottom, top)).astype(dtype)


def minimum_of(a, b):
    """minimum: a NaN operand gives the other one; equal operands give a."""
    return np.where(np.isnan(a), b, np.where(b < a, b, a))


def maximum_of(a, b):
    return np.where(np.isnan(a), b, np.where(b > a, b, a))


def _edges_and_random(rng, n: int, edges, low, high, dtype) -> np.ndarray:
    """n values: every edge (shuffled, repeated as needed) in about a third, fresh random values in the rest."""
    edges = np.array(edges, dtype=np.float64 if np.dtype(dtype).kind == "f" else object)
    picks = edges[rng.integers(0, len(edges), n)]
    if np.dtype(dtype).kind == "f":
        fresh = rng.uniform(low, high, n)
    else:
        fresh = rng.integers(low, high, n, dtype=np.int64, endpoint=True)
    take = rng.random(n) < 0.4
    take[:len(edges)] = True  # every edge appears at least once
    picks[:len(edges)] = edges
    mixed = np.where(take, picks, fresh)
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):
            return mixed.astype(np.float64).astype(dtype)
    return _wrap(mixed.tolist(), dtype)


def ints(rng, n: int, dtype=np.int32, extra=()) -> np.ndarray:
    info = np.iinfo(dtype)
    edges = [e for e in (*INT_EDGES, *extra)] + [info.min, info.max, info.min + 1, info.max - 1]
    return _edges_and_random(rng, n, edges, -1000, 1000, dtype)


def floats(rng, n: int, dtype=np.float32, extra=(), low=-1e4, high=1e4) -> np.ndarray:
    return _edges_and_random(rng, n, (*FLOAT_EDGES, *extra), low, high, dtype)


def poisoned(n, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.full(n, POISON_FLOAT if dtype.itemsize > 2 or dtype.name == "bfloat16" else -777.0, dtype)
    info = np.iinfo(dtype)
    return np.full(n, POISON_INT % (info.max + 1) if dtype.kind == "u" else info.min + 3, dtype)


def _n(setup: Setup) -> int:
    return 64 * setup.scale


def _grid(n: int, local: int = 64) -> tuple[int, int, int]:
    return (-(-n // local), 1, 1)


# ---------------------------------------------------------------------------------------------------
# integer division, remainder, shifts, wrapping
@kernel_source(local_size=64)
def int_div_rem(a: Buffer[s32, readonly], b: Buffer[s32, readonly], q: Buffer[s32], r: Buffer[s32],
                by_literal: Buffer[s32], vq: Buffer[s32]):
    i = global_id()
    x = a[i]
    y = b[i]
    q[i] = x // y
    r[i] = x % y
    k = i * 8
    by_literal[k + 0] = x // 2
    by_literal[k + 1] = x % 2
    by_literal[k + 2] = x // -7
    by_literal[k + 3] = x % -7
    by_literal[k + 4] = x // -1
    by_literal[k + 5] = x % -1
    by_literal[k + 6] = x // 0
    by_literal[k + 7] = x % 0
    v = vec(x, y, -x) // vec(y, x, y)  # vectors take the same sequence
    vq[i * 3] = v[0]
    vq[i * 3 + 1] = v[1]
    vq[i * 3 + 2] = v[2]


def _int_div_rem(rng, setup):
    n = _n(setup)
    a, b = ints(rng, n), ints(rng, n)
    b[: n // 4] = rng.choice([0, -1, 1, 2, -2, I32.min], n // 4)  # plenty of the divisors that need care
    by_literal = np.stack([int_divide(a, 2), int_remainder(a, 2), int_divide(a, -7), int_remainder(a, -7),
                           int_divide(a, -1), int_remainder(a, -1), a, np.zeros_like(a)], axis=1)
    vq = np.stack([int_divide(a, b), int_divide(b, a), int_divide(_wrap((-a.astype(np.int64)).tolist(), np.int32), b)],
                  axis=1)
    return Trial({}, _grid(n), {"a": a, "b": b, "q": poisoned(n, np.int32), "r": poisoned(n, np.int32),
                                "by_literal": poisoned(n * 8, np.int32), "vq": poisoned(n * 3, np.int32)},
                 {"q": int_divide(a, b), "r": int_remainder(a, b), "by_literal": by_literal, "vq": vq})


@kernel_source(local_size=64)
def narrow_div_rem(a8: Buffer[s8, readonly], b8: Buffer[s8, readonly], a16: Buffer[s16, readonly],
                   b16: Buffer[s16, readonly], a64: Buffer[s64, readonly], b64: Buffer[s64, readonly],
                   ua: Buffer[u32, readonly], ub: Buffer[u32, readonly], o8: Buffer[s8], o16: Buffer[s16],
                   o64: Buffer[s64], ou: Buffer[u32]):
    i = global_id()
    o8[i * 2] = a8[i] // b8[i]
    o8[i * 2 + 1] = a8[i] % b8[i]
    o16[i * 2] = a16[i] // b16[i]
    o16[i * 2 + 1] = a16[i] % b16[i]
    o64[i * 2] = a64[i] // b64[i]
    o64[i * 2 + 1] = a64[i] % b64[i]
    ou[i * 4] = ua[i] // ub[i]
    ou[i * 4 + 1] = ua[i] % ub[i]
    ou[i * 4 + 2] = ua[i] // u32(10)
    ou[i * 4 + 3] = ua[i] % u32(0)


def _narrow_div_rem(rng, setup):
    n = _n(setup)
    arrays, expected = {}, {}
    for tag, dtype in (("8", np.int8), ("16", np.int16), ("64", np.int64)):
        a, b = ints(rng, n, dtype), ints(rng, n, dtype)
        b[: n // 4] = rng.choice([0, -1, 1, -3], n // 4)
        arrays |= {f"a{tag}": a, f"b{tag}": b, f"o{tag}": poisoned(2 * n, dtype)}
        expected[f"o{tag}"] = np.stack([int_divide(a, b), int_remainder(a, b)], axis=1)
    ua, ub = ints(rng, n, np.uint32), ints(rng, n, np.uint32)
    ub[: n // 4] = rng.choice([0, 1, 3, 0xFFFFFFFF], n // 4).astype(np.uint32)
    arrays |= {"ua": ua, "ub": ub, "ou": poisoned(4 * n, np.uint32)}
    expected["ou"] = np.stack([int_divide(ua, ub), int_remainder(ua, ub), ua // np.uint32(10), np.zeros_like(ua)],
                              axis=1)
    return Trial({}, _grid(n), arrays, expected)


@kernel_source(local_size=64)
def shifts(a: Buffer[s32, readonly], c: Buffer[s32, readonly], ua: Buffer[u32, readonly], out: Buffer[s32],
           uout: Buffer[u32], w64: Buffer[s64]):
    i = global_id()
    x = a[i]
    n = c[i]
    k = i * 6
    out[k + 0] = x << n
    out[k + 1] = x >> n
    out[k + 2] = x << 31
    out[k + 3] = x >> 31
    out[k + 4] = x << 32  # a literal count of the width: 0
    out[k + 5] = x >> 40  # arithmetic: the sign
    uout[i * 3] = ua[i] >> u32(n)
    uout[i * 3 + 1] = ua[i] << n
    uout[i * 3 + 2] = ua[i] >> 33
    w64[i] = s64(x) << n  # a 64-bit base with a 32-bit count


def _shifts(rng, setup):
    n = _n(setup)
    a, ua = ints(rng, n), ints(rng, n, np.uint32)
    c = _edges_and_random(rng, n, (0, 1, 31, 32, 33, 63, 64, 65, -1, -31, -32, I32.min, I32.max), -40, 70, np.int32)
    cu = c.view(np.uint32)
    out = np.stack([shift(a, c, True), shift(a, c, False), shift(a, np.int32(31), True), shift(a, np.int32(31), False),
                    np.zeros_like(a), shift(a, np.int32(40), False)], axis=1)
    uout = np.stack([shift(ua, cu, False), shift(ua, c, True), shift(ua, np.uint32(33), False)], axis=1)
    return Trial({}, _grid(n), {"a": a, "c": c, "ua": ua, "out": poisoned(6 * n, np.int32),
                                "uout": poisoned(3 * n, np.uint32), "w64": poisoned(n, np.int64)},
                 {"out": out, "uout": uout, "w64": shift(a.astype(np.int64), c, True)})


@kernel_source(local_size=64)
def wrapping(a: Buffer[s32, readonly], b: Buffer[s32, readonly], a8: Buffer[u8, readonly], out: Buffer[s32],
             out8: Buffer[u8], conv: Buffer[s32]):
    i = global_id()
    x = a[i]
    y = b[i]
    k = i * 6
    out[k + 0] = x + y
    out[k + 1] = x - y
    out[k + 2] = x * y
    out[k + 3] = -x
    out[k + 4] = abs(x)  # abs(INT_MIN) wraps to INT_MIN
    out[k + 5] = ~x
    out8[i * 2] = a8[i] + u8(200)
    out8[i * 2 + 1] = a8[i] * u8(3)
    conv[i * 3] = s32(s8(x))
    conv[i * 3 + 1] = s32(u16(x))
    conv[i * 3 + 2] = s32(s64(x) * s64(x) >> 20)


def _wrapping(rng, setup):
    n = _n(setup)
    a, b, a8 = ints(rng, n), ints(rng, n), ints(rng, n, np.uint8)
    wide = lambda v: v.astype(np.int64)  # noqa: E731
    out = np.stack([_wrap((wide(a) + wide(b)).tolist(), np.int32), _wrap((wide(a) - wide(b)).tolist(), np.int32),
                    _wrap([x * y for x, y in zip(a.tolist(), b.tolist())], np.int32),
                    _wrap((-wide(a)).tolist(), np.int32), _wrap(np.abs(wide(a)).tolist(), np.int32), ~a], axis=1)
    out8 = np.stack([_wrap((a8.astype(np.int64) + 200).tolist(), np.uint8),
                     _wrap((a8.astype(np.int64) * 3).tolist(), np.uint8)], axis=1)
    conv = np.stack([a.astype(np.int8).astype(np.int32), a.astype(np.uint16).astype(np.int32),
                     _wrap([(x * x) >> 20 for x in a.tolist()], np.int32)], axis=1)
    return Trial({}, _grid(n), {"a": a, "b": b, "a8": a8, "out": poisoned(6 * n, np.int32),
                                "out8": poisoned(2 * n, np.uint8), "conv": poisoned(3 * n, np.int32)},
                 {"out": out, "out8": out8, "conv": conv})


# ---------------------------------------------------------------------------------------------------
# conversions
@kernel_source(local_size=64)
def float_to_ints(x: Buffer[f32, readonly], h: Buffer[f16, readonly], o32: Buffer[s32], ou32: Buffer[u32],
                  o8: Buffer[s8], ou8: Buffer[u8], o16: Buffer[s16], ou16: Buffer[u16], o64: Buffer[s64],
                  ou64: Buffer[u64], h32: Buffer[s32], hu8: Buffer[u8], python_int: Buffer[s32]):
    i = global_id()
    v = x[i]
    o32[i] = s32(v)
    ou32[i] = u32(v)
    o8[i] = s8(v)
    ou8[i] = u8(v)
    o16[i] = s16(v)
    ou16[i] = u16(v)
    o64[i] = s64(v)
    ou64[i] = u64(v)
    h32[i] = s32(h[i])
    hu8[i] = u8(h[i])
    python_int[i] = int(v)


def _float_to_ints(rng, setup):
    n = _n(setup)
    x = floats(rng, n, np.float32, extra=(-1e19, 1.9e19, 9.3e18, -9.3e18))
    h = floats(rng, n, np.float16, low=-1000, high=1000)
    outs = {"o32": np.int32, "ou32": np.uint32, "o8": np.int8, "ou8": np.uint8, "o16": np.int16, "ou16": np.uint16,
            "o64": np.int64, "ou64": np.uint64}
    expected = {name: float_to_int(x, dt) for name, dt in outs.items()}
    expected |= {"h32": float_to_int(h, np.int32), "hu8": float_to_int(h, np.uint8), "python_int": expected["o32"]}
    arrays = {"x": x, "h": h, **{name: poisoned(n, dt) for name, dt in outs.items()},
              "h32": poisoned(n, np.int32), "hu8": poisoned(n, np.uint8), "python_int": poisoned(n, np.int32)}
    return Trial({}, _grid(n), arrays, expected)


@kernel_source(local_size=64)
def other_conversions(a: Buffer[s32, readonly], ua: Buffer[u32, readonly], x: Buffer[f32, readonly],
                      f: Buffer[f32], h: Buffer[f16], back: Buffer[f32], flags: Buffer[s32]):
    i = global_id()
    f[i * 2] = f32(a[i])
    f[i * 2 + 1] = f32(ua[i])
    h[i * 2] = f16(x[i])
    h[i * 2 + 1] = f16(a[i])
    back[i] = f32(f16(x[i]))
    flags[i] = s32(bool(x[i])) + s32(x[i] != x[i]) * 2 + s32(bool(a[i])) * 4


def _other_conversions(rng, setup):
    n = _n(setup)
    a, ua = ints(rng, n, extra=(16777217, -16777217, 33554435)), ints(rng, n, np.uint32)
    ties = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 2049.0, 2051.0, 65519.0, 65520.0, 1e-8, -1e-8], np.float64)
    x = floats(rng, n, np.float32, low=-7e4, high=7e4)
    x[-len(ties):] = ties.astype(np.float32)
    with np.errstate(over="ignore"):
        h = np.stack([x.astype(np.float16), a.astype(np.float64).astype(np.float16)], axis=1)
        back = x.astype(np.float16).astype(np.float32)
    flags = (np.where(np.isnan(x), True, x != 0) * 1 + np.isnan(x) * 2 + (a != 0) * 4).astype(np.int32)
    return Trial({}, _grid(n), {"a": a, "ua": ua, "x": x, "f": poisoned(2 * n, np.float32),
                                "h": poisoned(2 * n, np.float16), "back": poisoned(n, np.float32),
                                "flags": poisoned(n, np.int32)},
                 {"f": np.stack([a.astype(np.float32), ua.astype(np.float32)], axis=1), "h": h, "back": back,
                  "flags": flags})


@kernel_source(local_size=64)
def bf16_conversions(x: Buffer[f32, readonly], b: Buffer[bf16], back: Buffer[f32], ints: Buffer[s32]):
    i = global_id()
    v = bf16(x[i])
    b[i] = v
    back[i] = f32(v)
    ints[i] = s32(v)  # through f32: saturating, NaN -> 0


def _bf16_conversions(rng, setup):
    n = _n(setup)
    x = floats(rng, n, np.float32, extra=(1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.0e38), low=-1e6, high=1e6)
    rounded = x.astype(bf16.dtype)
    return Trial({}, _grid(n), {"x": x, "b": poisoned(n, bf16.dtype), "back": poisoned(n, np.float32),
                                "ints": poisoned(n, np.int32)},
                 {"b": rounded, "back": rounded.astype(np.float32),
                  "ints": float_to_int(rounded.astype(np.float32), np.int32)})


def _needs_bf16(setup: Setup) -> str | None:
    if setup.target.is_reference or "bfloat16" in setup.target.support:
        return None
    return f"{setup.target.name} has no bf16 scalars (VK_KHR_shader_bfloat16)"


# ---------------------------------------------------------------------------------------------------
# floats: arithmetic, min/max/clamp, remainder, math outside its domain, comparisons with NaN
@kernel_source(local_size=64)
def float_arithmetic(x: Buffer[f32, readonly], y: Buffer[f32, readonly], z: Buffer[f32, readonly],
                     hx: Buffer[f16, readonly], hy: Buffer[f16, readonly], out: Buffer[f32], hout: Buffer[f16],
                     d: Buffer[f64]):
    i = global_id()
    a = x[i]
    b = y[i]
    k = i * 6
    out[k + 0] = a + b
    out[k + 1] = a - b
    out[k + 2] = a * b
    out[k + 3] = a * b + z[i]  # two roundings (NoContraction), never one fma
    out[k + 4] = -a
    out[k + 5] = a * 0.5 - b * 2.0
    hout[i * 3] = hx[i] + hy[i]
    hout[i * 3 + 1] = hx[i] * hy[i]
    hout[i * 3 + 2] = hx[i] * hy[i] - hx[i]
    d[i] = f64(a) * f64(b) + f64(z[i])


def _float_arithmetic(rng, setup):
    n = _n(setup)
    x, y = floats(rng, n, low=-100, high=100), floats(rng, n, low=-100, high=100)
    z = floats(rng, n, low=-100, high=100)
    hx, hy = floats(rng, n, np.float16, low=-30, high=30), floats(rng, n, np.float16, low=-30, high=30)
    with np.errstate(all="ignore"):
        out = np.stack([x + y, x - y, x * y, x * y + z, -x, x * np.float32(0.5) - y * np.float32(2)], axis=1)
        hout = np.stack([hx + hy, hx * hy, hx * hy - hx], axis=1)
        d = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
    return Trial({}, _grid(n), {"x": x, "y": y, "z": z, "hx": hx, "hy": hy, "out": poisoned(6 * n, np.float32),
                                "hout": poisoned(3 * n, np.float16), "d": poisoned(n, np.float64)},
                 {"out": out, "hout": hout, "d": d})


@kernel_source(local_size=64)
def min_max_clamp(x: Buffer[f32, readonly], y: Buffer[f32, readonly], a: Buffer[s32, readonly],
                  b: Buffer[s32, readonly], out: Buffer[f32], iout: Buffer[s32], sg: Buffer[f32]):
    i = global_id()
    u = x[i]
    v = y[i]
    k = i * 6
    out[k + 0] = minimum(u, v)
    out[k + 1] = maximum(u, v)
    out[k + 2] = min(u, 1.0)
    out[k + 3] = clamp(u, -2.0, 2.0)
    out[k + 4] = clamp(u, 2.0, -2.0)  # lo > hi gives hi
    out[k + 5] = sign(u)
    iout[i * 4] = min(a[i], b[i])
    iout[i * 4 + 1] = max(a[i], b[i], 0)
    iout[i * 4 + 2] = clamp(a[i], -100, 100)
    iout[i * 4 + 3] = clamp(a[i], 100, -100)
    sg[i * 2] = subgroup_min(u)
    sg[i * 2 + 1] = subgroup_max(u)


def _min_max_clamp(rng, setup):
    n, size = _n(setup), setup.subgroup_size
    x, y = floats(rng, n), floats(rng, n)
    x[size: 2 * size] = np.nan  # one subgroup of NaNs only
    a, b = ints(rng, n), ints(rng, n)
    with np.errstate(invalid="ignore"):
        signs = np.where(np.isnan(x), x, np.sign(x))
    out = np.stack([minimum_of(x, y), maximum_of(x, y), minimum_of(x, np.float32(1)),
                    minimum_of(maximum_of(x, np.float32(-2)), np.float32(2)),
                    minimum_of(maximum_of(x, np.float32(2)), np.float32(-2)), signs], axis=1).astype(np.float32)
    iout = np.stack([np.minimum(a, b), np.maximum(np.maximum(a, b), 0), np.clip(a, -100, 100), np.full(n, -100)],
                    axis=1).astype(np.int32)
    low, high = [], []
    for group in x.reshape(-1, size):
        kept = group[~np.isnan(group)]
        low.append(kept.min() if kept.size else np.nan)
        high.append(kept.max() if kept.size else np.nan)
    low, high = np.array(low, np.float32), np.array(high, np.float32)
    sg = np.stack([np.repeat(low, size), np.repeat(high, size)], axis=1).astype(np.float32)
    return Trial({}, _grid(n), {"x": x, "y": y, "a": a, "b": b, "out": poisoned(6 * n, np.float32),
                                "iout": poisoned(4 * n, np.int32), "sg": poisoned(2 * n, np.float32)},
                 {"out": out, "iout": iout, "sg": sg})


@kernel_source(local_size=64)
def float_division(x: Buffer[f32, readonly], y: Buffer[f32, readonly], exact: Buffer[f32], rounded: Buffer[f32]):
    i = global_id()
    a = x[i]
    b = y[i]
    exact[i * 2] = a % b  # C fmod; a % 0, inf % b: NaN; finite % inf: a
    exact[i * 2 + 1] = a // b
    rounded[i] = a / b


def _float_division(rng, setup):
    n = _n(setup)
    specials = (math.nan, math.inf, -math.inf, 0.0, -0.0)
    x = (rng.integers(-1024, 1024, n) / 4).astype(np.float32)  # dyadic values: every result is exact
    y = (rng.integers(-32, 32, n) / 2).astype(np.float32)
    x[:len(specials) * 4] = np.repeat(specials, 4)
    y[:len(specials) * 4] = np.tile(specials[:4], len(specials))
    y[len(specials) * 4: len(specials) * 5] = specials
    with np.errstate(all="ignore"):
        exact = np.stack([np.fmod(x, y), np.floor(x / y)], axis=1)
        return Trial({}, _grid(n), {"x": x, "y": y, "exact": poisoned(2 * n, np.float32),
                                    "rounded": poisoned(n, np.float32)},
                     {"exact": exact, "rounded": x / y}, {"rounded": "ulp:3"})


@kernel_source(local_size=64)
def math_domains(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], powers: Buffer[f32],
                 exact: Buffer[f32]):
    i = global_id()
    a = x[i]
    b = y[i]
    k = i * 8
    out[k + 0] = sqrt(a)
    out[k + 1] = rsqrt(a)
    out[k + 2] = log(a)
    out[k + 3] = log2(a)
    out[k + 4] = exp(b * 0.01)
    out[k + 5] = exp2(b * 0.01)
    out[k + 6] = atan2(a, b)
    out[k + 7] = sqrt(b * b)
    powers[i * 3] = a ** b
    powers[i * 3 + 1] = a ** 2  # repeated multiplication: exact, any sign
    powers[i * 3 + 2] = b ** 3
    exact[i * 2] = floor(a)
    exact[i * 2 + 1] = sign(a) * 2.0


def c_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y as the language defines it: C's pow, except NaN for every negative base."""
    with np.errstate(all="ignore"):
        r = np.power(x.astype(np.float64), y.astype(np.float64))
        r = np.where((x == 0) & (y > 0), 0.0, r)
        r = np.where((x == 0) & (y < 0), np.inf, r)
        r = np.where((x < 0) | np.isnan(x) | np.isnan(y), np.nan, r)
        r = np.where((x == 1) | (y == 0), 1.0, r)
    return r.astype(x.dtype)


def _math_domains(rng, setup):
    n = _n(setup)
    x = floats(rng, n, extra=(4.0, 0.25, 1e-30), low=-100, high=100)
    y = floats(rng, n, extra=(2.0, 0.5, -0.5), low=-8, high=8)
    with np.errstate(invalid="ignore"):
        y = np.where(np.abs(y) > 1e6, np.sign(y) * np.inf, y).astype(np.float32)
    with np.errstate(all="ignore"):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        out = np.stack([
            np.where(x < 0, np.nan, np.sqrt(x64)), np.where(x == 0, np.inf, np.where(x < 0, np.nan, 1 / np.sqrt(x64))),
            np.where(x == 0, -np.inf, np.where(x < 0, np.nan, np.log(x64))),
            np.where(x == 0, -np.inf, np.where(x < 0, np.nan, np.log2(x64))),
            np.exp((y * np.float32(0.01)).astype(np.float64)), np.exp2((y * np.float32(0.01)).astype(np.float64)),
            np.where((x == 0) & (y == 0), 0.0, np.arctan2(x64, y64)), np.sqrt((y * y).astype(np.float64))],
            axis=1).astype(np.float32)
        powers = np.stack([c_pow(x, y), x * x, y * y * y], axis=1).astype(np.float32)
        exact = np.stack([np.floor(x), np.where(np.isnan(x), x, np.sign(x)) * np.float32(2)], axis=1)
    return Trial({}, _grid(n), {"x": x, "y": y, "out": poisoned(8 * n, np.float32),
                                "powers": poisoned(3 * n, np.float32), "exact": poisoned(2 * n, np.float32)},
                 {"out": out, "powers": powers, "exact": exact},
                 {"out": "close:1e-5:1e-6", "powers": "close:1e-5:1e-6"})


@kernel_source(local_size=64)
def nan_comparisons(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[s32]):
    i = global_id()
    a = x[i]
    b = y[i]
    bits = 0
    bits += s32(a == b)
    bits += s32(a != b) * 2
    bits += s32(a < b) * 4
    bits += s32(a <= b) * 8
    bits += s32(a > b) * 16
    bits += s32(a >= b) * 32
    bits += s32(a < b < 1e30) * 64
    bits += s32(not (a < b)) * 128
    out[i] = bits + select(a == a, 256, 0) + (512 if a < 0.0 or b < 0.0 else 0)


def _nan_comparisons(rng, setup):
    n = _n(setup)
    x, y = floats(rng, n, low=-3, high=3), floats(rng, n, low=-3, high=3)
    y[::3] = x[::3]
    with np.errstate(invalid="ignore"):
        bits = ((x == y) * 1 + (x != y) * 2 + (x < y) * 4 + (x <= y) * 8 + (x > y) * 16 + (x >= y) * 32
                + ((x < y) & (y < 1e30)) * 64 + (~(x < y)) * 128 + (x == x) * 256 + ((x < 0) | (y < 0)) * 512)
    return Trial({}, _grid(n), {"x": x, "y": y, "out": poisoned(n, np.int32)}, {"out": bits.astype(np.int32)})


# ---------------------------------------------------------------------------------------------------
# control flow, helpers, tuples, local arrays, vectors
@func
def collatz_steps(v, LIMIT: constexpr):
    steps = 0
    while v != 1 and steps < LIMIT:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    return steps, v


@func
def classify(v):
    if v < 0:
        return -1
    if v == 0:
        return 0
    return 1


@kernel_source(local_size=64)
def control(x: Buffer[s32, readonly], out: Buffer[s32], n: s32):
    i = global_id()
    if i >= n:
        return
    v = x[i]
    steps, last = collatz_steps(abs(v) % 1000 + 1, 60)
    total = 0
    for j in range(10, -3, -4):
        if j == 2:
            continue
        if total > 40:
            break
        total += j * classify(v)
    parts = local_array(s32, 4)
    for t in static_range(4):
        parts[t] = v >> (t * 8) & 255
    pick = parts[(v & 3)]
    out[i * 4] = steps
    out[i * 4 + 1] = last
    out[i * 4 + 2] = total
    out[i * 4 + 3] = pick if v > -50 and v < 50 else -pick


def _control(rng, setup):
    n = _n(setup)
    x = ints(rng, n)
    count = n - 5
    rows = []
    for v in x.tolist():
        w, steps = (abs(v) % 1000 + 1 if v != I32.min else -(2**31 % 1000) + 1), 0  # abs(INT_MIN) == INT_MIN
        while w != 1 and steps < 60:
            w = int(int_divide(np.array([w], np.int32), 2)[0]) if w % 2 == 0 else int(_wrap([3 * w + 1], np.int32)[0])
            steps += 1
        total = 0
        for j in range(10, -3, -4):
            if j == 2:
                continue
            if total > 40:
                break
            total += j * (-1 if v < 0 else 0 if v == 0 else 1)
        pick = (v >> ((v & 3) * 8)) & 255
        rows.append([steps, w, total, pick if -50 < v < 50 else -pick])
    expected = np.array(rows, np.int64).astype(np.int32)
    expected[count:] = poisoned(1, np.int32)[0]
    return Trial({}, _grid(n), {"x": x, "out": poisoned(4 * n, np.int32)}, {"out": expected}, scalars={"n": count})


@kernel_source(local_size=64)
def vectors(x: Buffer[f32, readonly], a: Buffer[s32, readonly], out: Buffer[f32], iout: Buffer[s32]):
    i = global_id()
    v = vec(x[i], x[i] * 2.0, -x[i], 1.0)
    w = vec(1.0, 0.5, 0.25, x[i])
    s = v * w + v
    out[i * 3] = s[0] + s[1] + s[2] + s[3]
    out[i * 3 + 1] = dot(v, w)
    m = minimum(v, w)
    out[i * 3 + 2] = m[i % 4]
    iv = vec(a[i], a[i] + 1, -a[i])
    sh = iv << vec(s32(1), 31, 33)
    iout[i * 3] = sh[0] + sh[1] + sh[2]
    dv = iv % vec(s32(3), -3, 0)
    iout[i * 3 + 1] = dv[0] * 100 + dv[1] * 10 + dv[2]
    iout[i * 3 + 2] = max(iv[0], iv[2])


def _vectors(rng, setup):
    n = _n(setup)
    x = (rng.integers(-64, 64, n) / 8).astype(np.float32)
    a = ints(rng, n)
    with np.errstate(all="ignore"):
        v = np.stack([x, x * 2, -x, np.ones(n, np.float32)], axis=1)
        w = np.stack([np.ones(n), np.full(n, 0.5), np.full(n, 0.25), x], axis=1).astype(np.float32)
        s = v * w + v
        m = minimum_of(v, w)
        out = np.stack([((s[:, 0] + s[:, 1]) + s[:, 2]) + s[:, 3], (v * w).sum(axis=1),
                        m[np.arange(n), np.arange(n) % 4]], axis=1).astype(np.float32)
    a1 = _wrap((a.astype(np.int64) + 1).tolist(), np.int32)
    na = _wrap((-a.astype(np.int64)).tolist(), np.int32)
    sh = [shift(a, np.int32(1), True), shift(a1, np.int32(31), True), shift(na, np.int32(33), True)]
    summed = _wrap((sh[0].astype(np.int64) + sh[1] + sh[2]).tolist(), np.int32)
    dv = [int_remainder(a, 3), int_remainder(a1, -3), int_remainder(na, 0)]
    mixed = _wrap((dv[0].astype(np.int64) * 100 + dv[1].astype(np.int64) * 10 + dv[2]).tolist(), np.int32)
    iout = np.stack([summed, mixed, np.maximum(a, na)], axis=1)
    return Trial({}, _grid(n), {"x": x, "a": a, "out": poisoned(3 * n, np.float32), "iout": poisoned(3 * n, np.int32)},
                 {"out": out, "iout": iout}, {"out": "ulp:1"})


# ---------------------------------------------------------------------------------------------------
# shared memory, atomics, subgroups
@kernel_source(local_size=64)
def block_reduce(x: Buffer[s32, readonly], sums: Buffer[s32], maxima: Buffer[s32]):
    partial = shared_array(s32, 64)
    top = shared_array(s32, 64)
    t = local_id()
    partial[t] = x[global_id()]
    top[t] = x[global_id()]
    barrier()
    stride = 32
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
            top[t] = max(top[t], top[t + stride])
        barrier()
        stride //= 2
    if t == 0:
        sums[workgroup_id()] = partial[0]
        maxima[workgroup_id()] = top[0]


def _block_reduce(rng, setup):
    n = _n(setup)
    x = ints(rng, n)
    groups = x.reshape(-1, 64).astype(np.int64)
    return Trial({}, _grid(n), {"x": x, "sums": poisoned(n // 64, np.int32), "maxima": poisoned(n // 64, np.int32)},
                 {"sums": _wrap(groups.sum(axis=1).tolist(), np.int32), "maxima": x.reshape(-1, 64).max(axis=1)})


@kernel_source(local_size=64)
def atomics(x: Buffer[s32, readonly], expect: Buffer[s32, readonly], acc: Buffer[s32], tickets: Buffer[s32],
            slots: Buffer[s32], olds: Buffer[s32], uacc: Buffer[u32]):
    i = global_id()
    v = x[i]
    tickets[i] = atomic_add(acc, 0, 1)  # the old values: 0 .. n-1 in the device's order
    atomic_min(acc, 1, v)
    atomic_max(acc, 2, v)
    atomic_add(acc, 3, v)  # wraps
    atomic_xor(acc, 4, v)
    atomic_or(uacc, 0, u32(v) & u32(0xF0F0F0F0))
    atomic_min(uacc, 1, u32(v))  # unsigned order: a negative s32 is large
    local = shared_array(s32, 4)
    if local_id() == 0:
        local[0] = 0
    barrier()
    atomic_add(local, 0, v & 7)
    barrier()
    if local_id() == 0:
        atomic_add(acc, 5, local[0])
    olds[i * 2] = atomic_compare_exchange(slots, i * 2, i + 100, expect[i])  # stored where slots[2i] == expect[i]
    olds[i * 2 + 1] = atomic_exchange(slots, i * 2 + 1, -i)


def _atomics(rng, setup):
    n = _n(setup)
    x = ints(rng, n)
    slots = rng.integers(-50, 50, 2 * n).astype(np.int32)
    expect = np.where(rng.random(n) < 0.5, slots[0::2], slots[0::2] + 1).astype(np.int32)
    start = np.array([0, I32.max, I32.min, 0, 0, 0], np.int32)
    wide = x.astype(np.int64)
    acc = np.array([n, x.min(), x.max(), _wrap([wide.sum()], np.int32)[0], np.bitwise_xor.reduce(x),
                    _wrap([int((wide & 7).sum())], np.int32)[0]], np.int32)
    uacc = np.array([np.bitwise_or.reduce(x.view(np.uint32) & np.uint32(0xF0F0F0F0)), x.view(np.uint32).min()],
                    np.uint32)
    after = slots.copy()
    after[0::2] = np.where(slots[0::2] == expect, np.arange(n) + 100, slots[0::2])
    after[1::2] = -np.arange(n)
    return Trial({}, _grid(n), {"x": x, "expect": expect, "acc": start, "tickets": poisoned(n, np.int32),
                                "slots": slots, "olds": poisoned(2 * n, np.int32),
                                "uacc": np.array([0, 0xFFFFFFFF], np.uint32)},
                 {"acc": acc, "tickets": np.arange(n, dtype=np.int32), "slots": after, "olds": slots, "uacc": uacc},
                 {"tickets": "sorted"})


@kernel_source(local_size=64)
def subgroups(x: Buffer[s32, readonly], out: Buffer[s32]):
    i = global_id()
    v = x[i]
    k = i * 7
    out[k + 0] = subgroup_add(v)
    out[k + 1] = subgroup_inclusive_add(v)
    out[k + 2] = subgroup_exclusive_add(v)
    out[k + 3] = subgroup_min(v) + subgroup_max(v)
    out[k + 4] = subgroup_shuffle_xor(v, u32(1))
    out[k + 5] = subgroup_broadcast_first(v)
    out[k + 6] = s32(subgroup_all(v > -2000)) + s32(subgroup_any(v > 900)) * 2 + subgroup_size() * 4


def _subgroups(rng, setup):
    n, size = _n(setup), setup.subgroup_size
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    g = x.reshape(-1, size).astype(np.int64)
    per = lambda col: np.repeat(col, size)  # noqa: E731
    lanes = np.arange(size)
    out = np.stack([per(g.sum(1)), np.cumsum(g, 1).ravel(), (np.cumsum(g, 1) - g).ravel(), per(g.min(1) + g.max(1)),
                    g[:, lanes ^ 1].ravel(), per(g[:, 0]),
                    per((g > -2000).all(1) * 1 + (g > 900).any(1) * 2 + size * 4)], axis=1)
    return Trial({}, _grid(n), {"x": x, "out": poisoned(7 * n, np.int32)}, {"out": out.astype(np.int32)})


# ---------------------------------------------------------------------------------------------------
# cooperative matrices (subgroup scope) at the device's shapes
def _needs_shape(a, c):
    def applies(setup: Setup) -> str | None:
        if setup.target.is_reference:
            return None
        if not setup.target.shapes(a, c):
            return f"{setup.target.name} reports no {a} x {a} + {c} subgroup shape"
        return None
    return applies


def _shape(setup: Setup, a, c, default=(16, 16, 16)) -> tuple[int, int, int]:
    if setup.target.is_reference:
        return default
    s = setup.target.largest_shape(a, c)
    return s.m, s.n, s.k


@kernel_source(local_size="SG")
def coop_tiles(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32, readonly], d: Buffer[f32],
               e: Buffer[f32], M: constexpr, N: constexpr, K: constexpr, SG: constexpr):
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[f32, M, N, coop.Accumulator], c, 0, N)
    r = coop.mul_add(ta, tb, tc)
    coop.store(r, d, 0, N)
    coop.store(r * 0.5 + tc - coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 1.0), e, 0, M, coop.ColumnMajor)


def _coop_tiles(rng, setup):
    m, n, k = _shape(setup, "f16", "f32")
    a = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (k, n)) / 4).astype(np.float16)
    c = (rng.integers(-8, 8, (m, n)) / 2).astype(np.float32)
    d = a.astype(np.float32) @ b.astype(np.float32) + c
    e = (d * np.float32(0.5) + c - 1).T
    return Trial({"M": m, "N": n, "K": k, "SG": setup.subgroup_size}, (1, 1, 1),
                 {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(), "d": poisoned(m * n, np.float32),
                  "e": poisoned(m * n, np.float32)}, {"d": d, "e": e})


@kernel_source(local_size="SG")
def coop_int8(a: Buffer[s8, readonly], b: Buffer[s8, readonly], c: Buffer[s32, readonly], d: Buffer[s32],
              M: constexpr, N: constexpr, K: constexpr, SG: constexpr):
    ta = coop.load(coop.Matrix[s8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[s8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[s32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc), d, 0, N)


def _coop_int8(rng, setup):
    m, n, k = _shape(setup, "s8", "s32", (16, 16, 32))
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (m, n), dtype=np.int64).astype(np.int32)
    c[0, :] = I32.max - 10  # the sum wraps past INT_MAX (no saturating accumulation asked)
    d = _wrap((a.astype(np.int64) @ b.astype(np.int64) + c).ravel().tolist(), np.int32).reshape(m, n)
    return Trial({"M": m, "N": n, "K": k, "SG": setup.subgroup_size}, (1, 1, 1),
                 {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(), "d": poisoned(m * n, np.int32)}, {"d": d})


@func
def add(x, y):
    return x + y


@func
def larger(x, y):
    return maximum(x, y)


@func
def scaled_by_position(row, col, x, bias):
    return x * f32(row + 1) + f32(col) * bias


def _ext_applies(setup: Setup) -> str | None:
    t = setup.target
    if t.is_reference:
        return None
    if not (t.ext_maintenance1 or t.has_nv2("cooperativeMatrixPerElementOperations")):
        return f"{t.name} has neither EXT maintenance1 nor NV2 per-element operations"
    return _needs_shape("f16", "f32")(setup)


@kernel_source(local_size="SG")
def coop_ext(x: Buffer[f32, readonly], mapped: Buffer[f32], rows: Buffer[f32], cols: Buffer[f32], total: Buffer[f32],
             gathered: Buffer[f32], product: Buffer[f32], ints: Buffer[s32], M: constexpr, SG: constexpr):
    T = coop.Matrix[f32, M, M, coop.Accumulator]
    m = coop.load(T, x, 0, M)
    coop.store(coop.map(scaled_by_position, m, 0.5), mapped, 0, M)
    coop.store(coop.reduce(m, coop.Row, add), rows, 0, M)
    coop.store(coop.reduce(m, coop.Column, larger), cols, 0, M)
    coop.store(coop.reduce(m, coop.Row | coop.Column, add), total, 0, M)
    for i in range(coop.length(m)):
        r, c = coop.coordinate(m, i)
        gathered[r * M + c] = m[i]
    h = coop.convert(m, f16)
    p = coop.mul_add(coop.convert_use(h, coop.A), coop.transpose(h), coop.fill(T, 0.0))
    coop.store(p, product, 0, M)
    coop.store(coop.convert(m * 1.0e9, s32), ints, 0, M)  # saturating, NaN -> 0, per element


def _coop_ext(rng, setup):
    m = _shape(setup, "f16", "f32")[0]
    x = (rng.integers(-16, 16, (m, m)) / 4).astype(np.float32)
    rows_, cols_ = np.indices((m, m))
    h = x.astype(np.float16).astype(np.float32)
    big = x * np.float32(1e9)
    return Trial({"M": m, "SG": setup.subgroup_size}, (1, 1, 1),
                 {"x": x.ravel(), **{k: poisoned(m * m, np.float32) for k in
                                           ("mapped", "rows", "cols", "total", "gathered", "product")},
                  "ints": poisoned(m * m, np.int32)},
                 {"mapped": x * (rows_ + 1) + cols_ * np.float32(0.5), "rows": np.repeat(x.sum(1, keepdims=True), m, 1),
                  "cols": np.repeat(x.max(0, keepdims=True), m, 0), "total": np.full((m, m), x.sum(), np.float32),
                  "gathered": x, "product": h @ h.T, "ints": matrix_float_to_int(big, np.int32)})


# ---------------------------------------------------------------------------------------------------
# workgroup-scope matrices (NV2), where the device reports them
def _workgroup_shape(setup: Setup):
    for s in setup.target.workgroup_shapes():
        if (str(s.a), str(s.c)) == ("f16", "f32"):
            return s
    return None


def _workgroup_applies(setup: Setup) -> str | None:
    if setup.target.is_reference:
        return None
    return None if _workgroup_shape(setup) else f"{setup.target.name} reports no workgroup-scope f16 x f16 + f32 shape"


@kernel_source(local_size="WG")
def coop_workgroup(a: Buffer[f16, readonly], b: Buffer[f16, readonly], d: Buffer[f32], T: constexpr, WG: constexpr):
    ta = coop.load(coop.Matrix[f16, T, T, coop.A, coop.Workgroup], a, 0, T)
    tb = coop.load(coop.Matrix[f16, T, T, coop.B, coop.Workgroup], b, 0, T)
    acc = coop.fill(coop.Matrix[f32, T, T, coop.Accumulator, coop.Workgroup], 1.0)
    coop.store(coop.mul_add(ta, tb, acc), d, 0, T)


def _coop_workgroup(rng, setup):
    shape = _workgroup_shape(setup)
    t, invocations = (2 * max(shape.m, shape.n, shape.k), shape.workgroup_invocations) if shape else (32, 64)
    a = (rng.integers(-8, 8, (t, t)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (t, t)) / 4).astype(np.float16)
    return Trial({"T": t, "WG": invocations}, (1, 1, 1), {"a": a.ravel(), "b": b.ravel(),
                                                          "d": poisoned(t * t, np.float32)},
                 {"d": a.astype(np.float32) @ b.astype(np.float32) + 1})


CASES: tuple[Case, ...] = (
    Case("int // and % (s32, run-time, literal, vector divisors)", int_div_rem, _int_div_rem),
    Case("int // and % (s8, s16, s64, u32)", narrow_div_rem, _narrow_div_rem),
    Case("shifts (counts < 0, >= width; s32, u32, s64)", shifts, _shifts),
    Case("integer wrapping and int -> int conversions", wrapping, _wrapping),
    Case("float -> int (NaN, inf, out of range; f32, f16)", float_to_ints, _float_to_ints),
    Case("int -> float, float -> f16, bool conversions", other_conversions, _other_conversions),
    Case("bf16 conversions (round to nearest even)", bf16_conversions, _bf16_conversions, _needs_bf16),
    Case("float + - * (f32, f16, f64; NoContraction)", float_arithmetic, _float_arithmetic),
    Case("min/max/clamp/sign with NaN; subgroup min/max of floats", min_max_clamp, _min_max_clamp),
    Case("float %, //, /", float_division, _float_division),
    Case("sqrt/rsqrt/log/pow/atan2 outside their domains", math_domains, _math_domains),
    Case("comparisons and logic with NaN", nan_comparisons, _nan_comparisons),
    Case("control flow, helpers, tuples, local arrays", control, _control),
    Case("vectors (arithmetic, dot, dynamic index, shifts, %)", vectors, _vectors),
    Case("shared memory and barriers", block_reduce, _block_reduce),
    Case("atomics (buffer and shared)", atomics, _atomics),
    Case("subgroup operations (s32)", subgroups, _subgroups),
    Case("coop f16 tile: load/mul_add/store, matrix arithmetic", coop_tiles, _coop_tiles, _needs_shape("f16", "f32")),
    Case("coop s8 tile (wrapping accumulation)", coop_int8, _coop_int8, _needs_shape("s8", "s32")),
    Case("coop map/reduce/coordinate/convert_use/transpose/convert", coop_ext, _coop_ext, _ext_applies),
    Case("coop workgroup scope (NV2)", coop_workgroup, _coop_workgroup, _workgroup_applies),
)


@kernel_source(local_size="SG")
def coop_int8_saturating(a: Buffer[s8, readonly], b: Buffer[s8, readonly], c: Buffer[s32, readonly], d: Buffer[s32],
                         M: constexpr, N: constexpr, K: constexpr, SG: constexpr):
    ta = coop.load(coop.Matrix[s8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[s8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[s32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc, saturating=True), d, 0, N)


@kernel_source(local_size="SG")
def k_loop_gemm(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32], N_TOTAL: constexpr,
                K_TOTAL: constexpr, M: constexpr, N: constexpr, K: constexpr, SG: constexpr):
    row = workgroup_id(1) * M
    col = workgroup_id(0) * N
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    for kk in range(0, K_TOTAL, K):
        ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, row * K_TOTAL + kk, K_TOTAL)
        tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, kk * N_TOTAL + col, N_TOTAL)
        acc = coop.mul_add(ta, tb, acc)
    coop.store(acc, c, row * N_TOTAL + col, N_TOTAL)


def _tile_at(shape):
    def build(rng, setup):
        m, n, k = shape
        a = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float16)
        b = (rng.integers(-8, 8, (k, n)) / 4).astype(np.float16)
        c = (rng.integers(-8, 8, (m, n)) / 2).astype(np.float32)
        d = a.astype(np.float32) @ b.astype(np.float32) + c
        return Trial({"M": m, "N": n, "K": k, "SG": setup.subgroup_size}, (1, 1, 1),
                     {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(), "d": poisoned(m * n, np.float32),
                      "e": poisoned(m * n, np.float32)}, {"d": d, "e": (d * np.float32(0.5) + c - 1).T})
    return build


def _int8_at(shape, saturate: bool):
    def build(rng, setup):
        m, n, k = shape
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
        c[0, :], a[0, :], b[:, :2] = I32.max - 50, 127, 127  # row 0 overflows
        exact = a.astype(np.int64) @ b.astype(np.int64) + c
        d = np.clip(exact, I32.min, I32.max).astype(np.int32) if saturate else \
            _wrap(exact.ravel().tolist(), np.int32).reshape(m, n)
        return Trial({"M": m, "N": n, "K": k, "SG": setup.subgroup_size}, (1, 1, 1),
                     {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(), "d": poisoned(m * n, np.int32)}, {"d": d})
    return build


def _k_loop(shape):
    def build(rng, setup):
        m, n, k = shape
        mt, nt, kt = 4 * m, 3 * n, 8 * k
        a = (rng.integers(-8, 8, (mt, kt)) / 4).astype(np.float16)
        b = (rng.integers(-8, 8, (kt, nt)) / 4).astype(np.float16)
        return Trial({"N_TOTAL": nt, "K_TOTAL": kt, "M": m, "N": n, "K": k, "SG": setup.subgroup_size},
                     (nt // n, mt // m, 1), {"a": a.ravel(), "b": b.ravel(), "c": poisoned(mt * nt, np.float32)},
                     {"c": a.astype(np.float32) @ b.astype(np.float32)})
    return build


def device_cases(setup: Setup) -> tuple[Case, ...]:
    """CASES, then seed 002's tiles at every subgroup shape the device reports (the saturating s8 tile where
    a shape reports saturating accumulation) and a K-loop GEMM at its largest square f16 tile."""
    extra: list[Case] = []
    target = setup.target
    if not target.is_reference:
        for s in target.shapes("f16", "f32"):
            extra.append(Case(f"coop f16 tile {s.m}x{s.n}x{s.k}", coop_tiles, _tile_at((s.m, s.n, s.k))))
        for s in target.shapes("s8", "s32"):
            extra.append(Case(f"coop s8 tile {s.m}x{s.n}x{s.k}", coop_int8, _int8_at((s.m, s.n, s.k), False)))
            if s.saturating:
                extra.append(Case(f"coop s8 tile {s.m}x{s.n}x{s.k} saturating", coop_int8_saturating,
                                  _int8_at((s.m, s.n, s.k), True)))
        square = [s for s in target.shapes("f16", "f32") if s.m == s.n == s.k]
        if square:
            s = square[0]
            extra.append(Case(f"K-loop GEMM in {s.m}x{s.n}x{s.k} tiles", k_loop_gemm, _k_loop((s.m, s.n, s.k))))
    return CASES + tuple(extra)


def summary(results: list[Result]) -> str:
    """One line per case: status, device-vs-ref mismatches, ref-vs-NumPy mismatches, the first difference."""
    width = max(len(r.name) for r in results)
    lines = [f"{'case'.ljust(width)}  status  device!=ref  ref!=NumPy  elements"]
    for r in results:
        lines.append(f"{r.name.ljust(width)}  {r.status:6}  {r.mismatches:11}  {r.ref_mismatches:10}  {r.elements:8}"
                     + (f"  {r.detail}" if r.detail else ""))
    failed = sum(r.status in ("FAIL", "ERROR") for r in results)
    lines.append(f"{len(results)} cases: {sum(r.status == 'PASS' for r in results)} PASS, {failed} FAIL/ERROR, "
                 f"{sum(r.status == 'N/A' for r in results)} N/A")
    return "\n".join(lines)
