"""Inputs and NumPy expectations of the CTS-style matrix, independent of hydroplane.ref's code."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cts.cases import TILES, Case, pack, padding_mask, random_values, tile_elems, unpack

U_WORDS = 4096
POISON_U = 0xDEADBEEF


@dataclass
class Inputs:
    a: np.ndarray  # (TILES, M, K)
    b: np.ndarray  # (TILES, K, N)
    c: np.ndarray  # (TILES, M, N)
    d: np.ndarray
    scalar: np.ndarray  # 0-d, C dtype
    buffers: dict  # binding -> flat array (outputs poisoned)
    push: bytes


def poison_of(dtype, n: int) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        bits = np.full(n, 0x5A5A5A5A & ((1 << 8 * dtype.itemsize) - 1), np.uint64)
        return bits.astype(f"u{dtype.itemsize}").view(dtype)
    return np.full(n, np.nan, np.float32).astype(dtype)


def out_shape(case: Case) -> tuple[int, int]:
    if case.op == "transpose":
        return case.n, case.m
    if case.op == "reduce" and case.reduce == "2x2":
        return case.m // 2, case.n // 2
    return case.m, case.n


def make_inputs(case: Case, rng) -> Inputs:
    t = case.types
    m, n, k = case.m, case.n, case.k
    kind = "random" if case.random_floats else "small"
    a = random_values(rng, t.a, (TILES, m, k), "full" if case.op.startswith("muladd") else kind)
    b = random_values(rng, t.a, (TILES, k, n), "full" if case.op.startswith("muladd") else kind)
    if case.op.startswith("muladd") and t.a.kind not in "iu":
        a = random_values(rng, t.a, (TILES, m, k), kind)
        b = random_values(rng, t.a, (TILES, k, n), kind)
    c_kind = "full" if case.op.startswith("muladd") else kind
    c = random_values(rng, t.c, (TILES, m, n), c_kind)
    d = random_values(rng, t.c, (TILES, m, n), "divisor" if case.op == "div" else kind)
    scalar = random_values(rng, t.c, (), "divisor")
    size_a, size_b, size_c = tile_elems(case, m, k), tile_elems(case, k, n), tile_elems(case, m, n)
    om, on = out_shape(case)
    size_o = max(size_c, tile_elems(case, om, on)) * TILES
    buffers = {
        0: pack(case, a, random_values(rng, t.a, (TILES * size_a,), kind)),
        1: pack(case, b, random_values(rng, t.a, (TILES * size_b,), kind)),
        2: pack(case, c, random_values(rng, t.c, (TILES * size_c,), kind)),
        3: pack(case, d, random_values(rng, t.c, (TILES * size_c,), "divisor")),
        4: poison_of(t.c, size_o),
        5: np.full(U_WORDS, POISON_U, np.uint32),
        6: poison_of(t.a, TILES * size_c),
    }
    push = np.zeros(4, np.uint8)
    raw = np.asarray(scalar, t.c).reshape(1).view(np.uint8)
    push[:raw.size] = raw
    return Inputs(a, b, c, d, np.asarray(scalar, t.c), buffers, push.tobytes())


def _ints(x: np.ndarray) -> np.ndarray:
    return x.astype(object)


def _wrap(exact, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    bits = 8 * dtype.itemsize
    flat = [int(v) % (1 << bits) for v in np.asarray(exact).reshape(-1)]
    return np.array(flat, np.uint64).astype(f"u{dtype.itemsize}").view(dtype).reshape(np.shape(exact))


def _saturate(exact, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    flat = [min(max(int(v), info.min), info.max) for v in np.asarray(exact).reshape(-1)]
    return np.array(flat, dtype=object).astype(dtype).reshape(np.shape(exact))


def effective_a(case: Case, a: np.ndarray) -> np.ndarray:
    """A as the kernel loads it: with stride 0 every row (column) repeats the first."""
    if not case.stride_a0:
        return a
    if case.layout == "row":
        return np.repeat(a[:, :1, :], a.shape[1], axis=1)
    return np.repeat(a[:, :, :1], a.shape[2], axis=2)


def muladd(case: Case, a, b, c, saturating: bool) -> np.ndarray:
    t = case.types
    a = effective_a(case, a)
    if t.c.kind in "iu":
        exact = np.matmul(_ints(a), _ints(b)) + _ints(c)
        return _saturate(exact, t.c) if saturating else _wrap(exact, t.c)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64)) + c.astype(np.float64)
    return exact.astype(t.c) if t.c != np.dtype(np.float16) else exact.astype(np.float16)


def _int_div(x, y, dtype):
    q = np.trunc(x.astype(np.float64) / y.astype(np.float64))
    return q.astype(dtype)


def _reduce(case: Case, c: np.ndarray) -> np.ndarray:
    fn = np.add if case.combine == "sum" else np.minimum
    if case.reduce == "2x2":
        return fn(fn(c[:, 0::2, 0::2], c[:, 1::2, 0::2]), fn(c[:, 0::2, 1::2], c[:, 1::2, 1::2]))
    axis = {"row": (2,), "col": (1,), "rowcol": (1, 2)}[case.reduce]
    reduced = fn.reduce(c.astype(np.float64), axis=axis, keepdims=True).astype(c.dtype)
    return np.broadcast_to(reduced, c.shape).copy()


def _held_in_lane_order(case: Case, mats: np.ndarray) -> np.ndarray:
    """Tiles rewritten as o[lane * L + i] = element i of the lane under the documented default
    distribution (element i of lane l is row-major flat index l + i*S)."""
    length = case.m * case.n // case.sg
    lane = np.arange(case.sg)[:, None]
    i = np.arange(length)[None, :]
    flat = (lane + i * case.sg).reshape(-1)
    return mats.reshape(TILES, -1)[:, flat].reshape(mats.shape)


def expected(case: Case, x: Inputs) -> dict[str, np.ndarray]:
    """What the kernel must leave in its outputs: 'o' and 'oa' as tiles, 'u' as words."""
    t = case.types
    c, d, s = x.c, x.d, x.scalar
    rows = np.arange(case.m)[None, :, None]
    cols = np.arange(case.n)[None, None, :]
    op = case.op
    out: dict[str, np.ndarray] = {}
    with np.errstate(over="ignore"):
        if op in ("length", "convert_acc_to_a", "convert_acc_to_b", "get_coordinate"):
            out["o"] = c
        if op in ("convert_acc_to_a", "convert_acc_to_b"):
            out["oa"] = c.astype(np.float64).astype(t.a) if t.a.kind not in "iu" else c.astype(t.a)
        table = {
            "constant": lambda: np.full_like(c, 3),
            "construct": lambda: np.full_like(c, 1) + s,
            "composite_extract": lambda: _held_in_lane_order(case, (c + d).astype(t.c)),
            "add": lambda: (c + d).astype(t.c),
            "composite": lambda: (c + d).astype(t.c),
            "sub": lambda: (c - d).astype(t.c),
            "mul": lambda: (c * d).astype(t.c),
            "div": lambda: _int_div(c, d, t.c) if t.c.kind in "iu" else (c / d).astype(t.c),
            "negate": lambda: (-c).astype(t.c),
            "matrix_times_scalar": lambda: (c * s).astype(t.c),
            "func": lambda: (c + c + d).astype(t.c),
            "muladd": lambda: muladd(case, x.a, x.b, c, False),
            "muladd_saturating": lambda: muladd(case, x.a, x.b, c, True),
            "transpose": lambda: c.transpose(0, 2, 1).copy(),
            "reduce": lambda: _reduce(case, c),
            "per_element": lambda: ((c * s + d) + (rows * 3 + cols).astype(t.c)).astype(t.c),
        }
        if op in table:
            out["o"] = table[op]()
    if op == "get_coordinate":
        u = np.full(U_WORDS, POISON_U, np.uint32)
        size_c = tile_elems(case, case.m, case.n)
        for tile in range(TILES):
            idx = tile * size_c + np.arange(case.m * case.n)
            u[idx] = tile * 1000 + np.arange(case.m * case.n) + 1
        out["u"] = u
    return out


def outputs(case: Case, flat: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
    """The tiles a run left in its output buffers, plus the poison checks of the padding."""
    om, on = out_shape(case)
    got = {"o": unpack(case, flat[4], om, on), "oa": unpack(case, flat[6], case.m, case.n), "u": flat[5]}
    pad = padding_mask(case, om, on, flat[4].size)
    got["o_padding"] = flat[4][pad]
    return got


def padding_poison(case: Case, flat_o: np.ndarray) -> np.ndarray:
    om, on = out_shape(case)
    return flat_o[padding_mask(case, om, on, flat_o.size)]
