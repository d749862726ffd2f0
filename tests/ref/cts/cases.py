"""Case tables of the CTS-style cooperative-matrix matrix (mirroring Vulkan-CTS cooperative_matrix)
and the NumPy expectations of every operation, written independently of hydroplane.ref.

A case is one compile of glsl/coopmat_case.comp: an operation, a component-type pair, a layout,
a storage (buffer or workgroup) and a shape. Expectations work on whole tiles (tiles, rows, cols).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)


@dataclass(frozen=True)
class TypePair:
    name: str
    a: np.dtype  # A and B components
    c: np.dtype  # C and result components
    glsl_a: str
    glsl_c: str
    device_a: str  # how hydroplane.vk.CoopMatrixProperties spells them
    device_c: str


TYPE_PAIRS = {p.name: p for p in [
    TypePair("f16/f16", np.dtype(np.float16), np.dtype(np.float16), "float16_t", "float16_t", "f16", "f16"),
    TypePair("f16/f32", np.dtype(np.float16), np.dtype(np.float32), "float16_t", "float", "f16", "f32"),
    TypePair("f32/f32", np.dtype(np.float32), np.dtype(np.float32), "float", "float", "f32", "f32"),
    TypePair("bf16/f32", BF16, np.dtype(np.float32), "bfloat16_t", "float", "bf16", "f32"),
    TypePair("e4m3/f32", E4M3, np.dtype(np.float32), "floate4m3_t", "float", "e4m3", "f32"),
    TypePair("e5m2/f32", E5M2, np.dtype(np.float32), "floate5m2_t", "float", "e5m2", "f32"),
    TypePair("s8/s32", np.dtype(np.int8), np.dtype(np.int32), "int8_t", "int32_t", "s8", "s32"),
    TypePair("u8/u32", np.dtype(np.uint8), np.dtype(np.uint32), "uint8_t", "uint32_t", "u8", "u32"),
    TypePair("u8/s32", np.dtype(np.uint8), np.dtype(np.int32), "uint8_t", "int32_t", "u8", "s32"),
]}
FLOAT_PAIRS = ["f16/f16", "f16/f32", "f32/f32", "bf16/f32"]
INT_PAIRS = ["s8/s32", "u8/u32", "u8/s32"]
FP8_PAIRS = ["e4m3/f32", "e5m2/f32"]  # no driver here offers fp8: reference executor only
ALL_PAIRS = FLOAT_PAIRS + INT_PAIRS
# Pairs whose C type differs (element-wise ops only see C).
C_TYPE_PAIRS = ["f16/f16", "f16/f32", "s8/s32", "u8/u32"]

REDUCE_MODES = {"row": 1, "col": 2, "rowcol": 3, "2x2": 4}
NV2_OPS = {"convert_acc_to_a", "convert_acc_to_b", "transpose", "reduce", "per_element"}


@dataclass(frozen=True)
class Case:
    op: str
    pair: str
    layout: str = "row"  # row | col
    shared: bool = False
    m: int = 8
    n: int = 8
    k: int = 8
    sg: int = 8
    pad: int = 0
    stride_a0: bool = False
    reduce: str = ""  # row | col | rowcol | 2x2
    combine: str = ""  # sum | min
    ext: bool = False  # EXT maintenance1 spelling (lowered to NV2 for the device)
    random_floats: bool = False  # inputs with full fraction bits: compared with CTS tolerances
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def types(self) -> TypePair:
        return TYPE_PAIRS[self.pair]

    @property
    def id(self) -> str:
        parts = [self.op + (f"_{self.combine}_{self.reduce}" if self.reduce else ""), self.pair.replace("/", "_"),
                 self.layout, "shared" if self.shared else "buffer", f"{self.m}x{self.n}x{self.k}sg{self.sg}"]
        parts += ["pad"] * bool(self.pad) + ["stride0"] * self.stride_a0 + ["ext"] * self.ext
        parts += ["random"] * self.random_floats
        return "-".join(parts)

    def defines(self) -> dict[str, object]:
        t = self.types
        layout = "gl_CooperativeMatrixLayout" + ("RowMajor" if self.layout == "row" else "ColumnMajor")
        d = {"A_T": t.glsl_a, "C_T": t.glsl_c, "M": self.m, "N": self.n, "K": self.k, "SG": self.sg,
             "HALF_M": self.m // 2, "HALF_N": self.n // 2, "LAYOUT": layout, "PAD": self.pad,
             "SHARED": int(self.shared), f"OP_{self.op.upper()}": 1,
             "STRIDE_A": "0" if self.stride_a0 else "STRIDE(M,K)", "CONSTANT_VALUE": 3}
        if t.a == BF16:
            d["NEED_BF16"] = 1
        if t.a in (E4M3, E5M2):
            d["NEED_FP8"] = 1
        if self.op in NV2_OPS and not self.ext:
            d["NEED_NV2"] = 1
        if self.ext:
            d["EXT_OPS"] = 1
        if self.reduce:
            d["REDUCE_MODE"] = REDUCE_MODES[self.reduce]
            d["COMBINE"] = f"combine_{self.combine}"
        return d


# Vulkan-CTS "composite": m[i] loaded and stored through OpAccessChain into the matrix variable (the
# interpreter's element pointers, docs/ref_coopmat.md).
COMPOSITE_CASES = [Case("composite", p) for p in C_TYPE_PAIRS]


def build_cases() -> list[Case]:
    cases: list[Case] = []
    for op in ["length", "constant", "construct", "composite_extract", "add", "sub", "mul", "div", "negate",
               "matrix_times_scalar", "func"]:
        cases += [Case(op, p) for p in C_TYPE_PAIRS]
    cases += COMPOSITE_CASES
    cases += [Case("add", "bf16/f32", shared=True), Case("mul", "u8/s32", layout="col")]
    for pair in ALL_PAIRS:
        for layout in ("row", "col"):
            for shared in (False, True):
                cases.append(Case("muladd", pair, layout, shared))
        cases.append(Case("muladd", pair, stride_a0=True))
        cases.append(Case("muladd", pair, pad=3, layout="col"))
        cases += [Case("convert_acc_to_a", pair), Case("convert_acc_to_b", pair), Case("transpose", pair),
                  Case("per_element", pair)]
    for pair in INT_PAIRS:
        cases.append(Case("muladd_saturating", pair))
    for pair in FP8_PAIRS:
        cases += [Case("muladd", pair), Case("muladd", pair, layout="col", shared=True),
                  Case("convert_acc_to_a", pair), Case("convert_acc_to_b", pair)]
    for pair in ["f16/f32", "f32/f32"]:
        cases.append(Case("muladd", pair, random_floats=True))
    cases.append(Case("muladd", "f16/f32", m=16, n=16, k=16, sg=32))  # the H200's KHR tile
    cases.append(Case("muladd", "f16/f16", m=16, n=16, k=16))  # NV2 flexible dimensions on lavapipe
    cases.append(Case("muladd", "s8/s32", m=16, n=16, k=32, sg=32, layout="col"))
    for pair in ["f16/f16", "f16/f32"]:
        for mode in REDUCE_MODES:
            for combine in ("sum", "min"):
                size = 16 if mode == "2x2" else 8  # the 2x2 result must be a device shape too
                cases.append(Case("reduce", pair, reduce=mode, combine=combine, m=size, n=size, k=size))
    # EXT maintenance1: the reference executor against NumPy; the device runs them lowered to NV2.
    for mode in REDUCE_MODES:
        size = 16 if mode == "2x2" else 8
        cases.append(Case("reduce", "f16/f32", reduce=mode, combine="sum", ext=True, m=size, n=size, k=size))
    cases += [Case("per_element", "f16/f32", ext=True), Case("per_element", "s8/s32", ext=True),
              Case("transpose", "f16/f32", ext=True), Case("get_coordinate", "f16/f32", ext=True),
              Case("get_coordinate", "s8/s32", ext=True, sg=32, m=16, n=16, k=16)]
    return cases


# -- buffers ------------------------------------------------------------------------------------------------

TILES = 4  # 2 workgroups x 2 subgroups


def stride(case: Case, rows: int, cols: int) -> int:
    return (cols if case.layout == "row" else rows) + case.pad


def tile_elems(case: Case, rows: int, cols: int) -> int:
    return (rows if case.layout == "row" else cols) * stride(case, rows, cols)


def pack(case: Case, tiles: np.ndarray, filler: np.ndarray) -> np.ndarray:
    """Tiles (TILES, rows, cols) laid out in a flat buffer with the case's layout and padding."""
    _, rows, cols = tiles.shape
    s, size = stride(case, rows, cols), tile_elems(case, rows, cols)
    flat = filler.copy()
    for t in range(TILES):
        view = tiles[t] if case.layout == "row" else tiles[t].T
        for major in range(view.shape[0]):
            start = t * size + major * s
            flat[start:start + view.shape[1]] = view[major]
    return flat


def unpack(case: Case, flat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    s, size = stride(case, rows, cols), tile_elems(case, rows, cols)
    out = []
    for t in range(TILES):
        majors = rows if case.layout == "row" else cols
        minors = cols if case.layout == "row" else rows
        tile = np.stack([flat[t * size + j * s:t * size + j * s + minors] for j in range(majors)])
        out.append(tile if case.layout == "row" else tile.T)
    return np.stack(out)


def padding_mask(case: Case, rows: int, cols: int, total: int) -> np.ndarray:
    """True where a flat buffer of `total` elements holds no tile element."""
    marker = pack(case, np.ones((TILES, rows, cols), np.uint8), np.zeros(total, np.uint8))
    return marker == 0


def random_values(rng, dtype: np.dtype, shape, kind: str) -> np.ndarray:
    """Fresh inputs: small integers (exact everywhere), divisors, full range ints or random floats."""
    dtype = np.dtype(dtype)
    if kind == "divisor":
        if dtype.kind in "iu":
            v = rng.integers(1, 9, shape)
            return (v * (rng.choice([-1, 1], shape) if dtype.kind == "i" else 1)).astype(dtype)
        return rng.choice([-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], shape).astype(dtype)
    if kind == "full" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    if kind == "random" and dtype.kind not in "iu":
        return rng.standard_normal(shape).astype(dtype)
    low = 0 if dtype.kind == "u" else -4
    return rng.integers(low, 5, shape).astype(dtype)
