"""Runnable semantics of a curated instruction family: the VOP1 conversions of the excerpts.

Each entry of `SEMANTICS` maps an instruction name to its pseudocode line and a NumPy
function from the source's raw bits (one value per lane) to the destination's raw bits.
`execute` runs one over a wave of 32 or 64 lanes: lanes whose EXEC bit is clear keep the
destination's old value. Floats follow IEEE round-to-nearest-even with denormals kept;
float-to-integer conversions truncate (or floor / round half up where named), clamp to the
destination range and turn NaN into 0, as AMD documents for these instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hydroplane.isa.errors import SemanticsError, close_matches

UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}
FLOAT = {16: np.float16, 32: np.float32, 64: np.float64}
INT32_RANGE = (-(2 ** 31), 2 ** 31 - 1)
UINT32_RANGE = (0, 2 ** 32 - 1)

# v_cvt_off_f32_i4: the signed 4-bit value of S0[3:0], divided by 16.
CVT_OFF_TABLE = np.array([((i ^ 8) - 8) / 16 for i in range(16)], dtype=np.float32)


@dataclass(frozen=True)
class Semantics:
    """One instruction's behaviour: source/destination widths, pseudocode, and the function."""

    source_bits: int
    dest_bits: int
    pseudocode: str
    function: Callable[[np.ndarray], np.ndarray]
    table_inputs: tuple[int, ...] = ()  # inputs a page tabulates, in display order
    table_bits: int = 0  # how many low source bits the table shows


def _as_float(bits: np.ndarray, width: int) -> np.ndarray:
    return bits.astype(UINT[width]).view(FLOAT[width])


def _float_bits(values: np.ndarray, width: int) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # out of range -> inf, NaN stays NaN
        return values.astype(FLOAT[width]).view(UINT[width])


def _float_to_int(width: int, rounding: Callable[[np.ndarray], np.ndarray], bounds: tuple[int, int],
                  out: type) -> Callable[[np.ndarray], np.ndarray]:
    def convert(bits: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            x = _as_float(bits, width).astype(np.float64)
            r = np.clip(np.nan_to_num(rounding(x), nan=0.0), *bounds)
        return r.astype(np.int64).astype(out).view(UINT[32])
    return convert


def _float_to_float(src: int, dst: int, rounding: Callable[[np.ndarray], np.ndarray] | None = None):
    def convert(bits: np.ndarray) -> np.ndarray:
        x = _as_float(bits, src)
        if rounding is not None:
            x = rounding(x)
        with np.errstate(over="ignore"):
            return _float_bits(x, dst)
    return convert


def _ubyte(n: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda bits: _float_bits(((bits.astype(np.uint32) >> (8 * n)) & 0xFF).astype(np.float32), 32)


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5)


SEMANTICS: dict[str, Semantics] = {
    "V_CVT_I32_F32": Semantics(32, 32, "D0.i32 = f32_to_i32(S0.f32)",
                               _float_to_int(32, np.trunc, INT32_RANGE, np.int32)),
    "V_CVT_NEAREST_I32_F32": Semantics(32, 32, "D0.i32 = f32_to_i32(floor(S0.f32 + 0.5F))",
                                       _float_to_int(32, _round_half_up, INT32_RANGE, np.int32)),
    "V_CVT_FLOOR_I32_F32": Semantics(32, 32, "D0.i32 = f32_to_i32(floor(S0.f32))",
                                     _float_to_int(32, np.floor, INT32_RANGE, np.int32)),
    "V_CVT_U32_F64": Semantics(64, 32, "D0.u32 = f64_to_u32(S0.f64)",
                               _float_to_int(64, np.trunc, UINT32_RANGE, np.uint32)),
    "V_CVT_F16_F32": Semantics(32, 16, "D0.f16 = f32_to_f16(S0.f32)", _float_to_float(32, 16)),
    "V_CVT_F32_F16": Semantics(16, 32, "D0.f32 = f16_to_f32(S0.f16)", _float_to_float(16, 32)),
    "V_CVT_F32_F64": Semantics(64, 32, "D0.f32 = f64_to_f32(S0.f64)", _float_to_float(64, 32)),
    "V_CVT_F64_F32": Semantics(32, 64, "D0.f64 = f32_to_f64(S0.f32)", _float_to_float(32, 64)),
    "V_CVT_F64_U32": Semantics(32, 64, "D0.f64 = u32_to_f64(S0.u32)",
                               lambda b: _float_bits(b.astype(np.uint32).astype(np.float64), 64)),
    "V_TRUNC_F64": Semantics(64, 64, "D0.f64 = trunc(S0.f64)", _float_to_float(64, 64, np.trunc)),
    "V_CEIL_F64": Semantics(64, 64, "D0.f64 = ceil(S0.f64)", _float_to_float(64, 64, np.ceil)),
    "V_RNDNE_F64": Semantics(64, 64, "D0.f64 = roundNearestEven(S0.f64)", _float_to_float(64, 64, np.rint)),
    "V_FLOOR_F64": Semantics(64, 64, "D0.f64 = floor(S0.f64)", _float_to_float(64, 64, np.floor)),
    "V_MOV_B16": Semantics(16, 16, "D0.b16 = S0.b16", lambda b: b.astype(np.uint16)),
    "V_CVT_OFF_F32_I4": Semantics(32, 32, "declare CVT_OFF_TABLE : 32'F[16]; "
                                  "D0.f32 = CVT_OFF_TABLE[S0.u32[3 : 0]]",
                                  lambda b: CVT_OFF_TABLE[b.astype(np.uint32) & 0xF].view(np.uint32),
                                  table_inputs=tuple(range(8, 16)) + tuple(range(8)), table_bits=4),
    **{f"V_CVT_F32_UBYTE{n}": Semantics(32, 32, f"D0.f32 = u32_to_f32(S0[{8 * n + 7}:{8 * n}].u32)", _ubyte(n))
       for n in range(4)},
}


def semantics_of(name: str) -> Semantics | None:
    return SEMANTICS.get(name.strip().upper())


def execute(name: str, source: np.ndarray, dest: np.ndarray, exec_mask: int | np.ndarray) -> np.ndarray:
    """Run `name` over a wave: `source` and `dest` hold raw bits per lane (32 or 64 lanes).

    Returns the new destination; lanes whose EXEC bit is 0 keep `dest`'s values.
    """
    sem = semantics_of(name)
    if sem is None:
        raise SemanticsError(f"no runnable semantics for {name!r}; curated: "
                             f"{', '.join(close_matches(name, SEMANTICS) or sorted(SEMANTICS)[:5])}")
    source, dest = np.asarray(source), np.asarray(dest)
    lanes = source.shape[0] if source.ndim == 1 else -1
    if lanes not in (32, 64) or dest.shape != (lanes,):
        raise SemanticsError(f"{name}: source and dest must be 1-D arrays of 32 or 64 lanes, "
                             f"got {source.shape} and {dest.shape}")
    if source.dtype.kind not in "ui" or dest.dtype.kind not in "ui":
        raise SemanticsError(f"{name}: source and dest hold raw bits (unsigned integers), "
                             f"got {source.dtype} and {dest.dtype}")
    active = _exec_lanes(exec_mask, lanes, name)
    src = source.astype(np.uint64) & np.uint64((1 << sem.source_bits) - 1)
    result = sem.function(src.astype(UINT[sem.source_bits])).astype(UINT[sem.dest_bits])
    return np.where(active, result, dest.astype(UINT[sem.dest_bits]))


def lookup_table(name: str) -> list[tuple[int, float]]:
    """(input, result) rows of a tabulated instruction, computed by running it (else [])."""
    sem = semantics_of(name)
    if sem is None or not sem.table_inputs:
        return []
    lanes = np.zeros(32, dtype=UINT[sem.source_bits])
    lanes[: len(sem.table_inputs)] = sem.table_inputs
    out = execute(name, lanes, np.zeros(32, dtype=UINT[sem.dest_bits]), (1 << 32) - 1)
    values = _as_float(out, sem.dest_bits)
    return [(i, float(values[k])) for k, i in enumerate(sem.table_inputs)]


def _exec_lanes(exec_mask: int | np.ndarray, lanes: int, name: str) -> np.ndarray:
    if isinstance(exec_mask, (int, np.integer)):
        if exec_mask < 0 or exec_mask >= 1 << lanes:
            raise SemanticsError(f"{name}: EXEC mask 0x{int(exec_mask):x} does not fit {lanes} lanes")
        return (np.uint64(exec_mask) >> np.arange(lanes, dtype=np.uint64)) & np.uint64(1) == 1
    mask = np.asarray(exec_mask)
    if mask.shape != (lanes,):
        raise SemanticsError(f"{name}: EXEC mask must be an int or {lanes} booleans, got shape {mask.shape}")
    return mask.astype(bool)
