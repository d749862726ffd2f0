"""Fused attention as plain data: problems, tile configurations, the launch plan and the NumPy reference.

    problem = AttentionProblem(batch=4, heads=16, q_len=4096, kv_len=4096, head_dim=128, dtype=f16, causal=True)
    config = default_config(problem, target)          # tiles asked of the target (its cooperative-matrix shapes)
    plan = attention_plan(problem, config, target)    # constexprs, grids and push constants of one or two passes
    reference(problem, q, k, v)                       # float64 softmax(q kᵀ scale) v

O = softmax(Q Kᵀ * scale) V in torch's layout: Q (batch, heads, q_len, head_dim), K and V (batch, kv_heads, kv_len,
head_dim), kv_heads dividing heads (grouped-query and multi-query attention: query head h reads KV head
h // (heads // kv_heads)). Causal masking is aligned bottom-right: query i sits at position p = i + kv_len - q_len
among the keys and sees keys j <= p (a query that sees no key gets zeros); `window` W masks the keys W or more
before it (p - j >= W, llama.cpp's sliding window), with or without causal masking. The arithmetic is a float64
softmax of the f32 scores (`reference`): NaN and infinities propagate as they do there. The decode path
(config.splits > 1) splits the keys into SPLITS ranges, each workgroup writing its range's unnormalised O with the
row maximum and sum, and a second kernel combines them (flash-decoding). Launching, timing and the checks live
above this layer (hydroplane.ops.attention); the kernels are in source.py. Imports only lang and spirv.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.attention import scalar, source
from hydroplane.spirv import types
from hydroplane.spirv.enums import CooperativeMatrixUse, Scope
from hydroplane.spirv.target import Target

DTYPE_NAMES = ("f16", "bf16")
MAX_HEAD_DIM = 256
HEAD_DIM_STEP = 16  # head_dim is a multiple of it: 16-byte rows and whole tiles on every device
MAX_ELEMENTS = 2 ** 31 - 1  # indices into Q, K, V and the partial results are s32
F32_MAX = float(np.finfo(np.float32).max)  # the largest scale: the scale is an f32 push constant
USE_A, USE_B, USE_ACC = (CooperativeMatrixUse.MatrixAKHR, CooperativeMatrixUse.MatrixBKHR,
                         CooperativeMatrixUse.MatrixAccumulatorKHR)


class AttentionError(HydroplaneError):
    """An attention request that cannot be run as asked: shapes, dtypes, heads, head_dim, or a configuration."""


def parse_dtype(name) -> types.Scalar:
    """'f16' or 'bf16' (also a NumPy dtype or a types.Scalar of them). A NumPy dtype must be exactly float16 or
    ml_dtypes.bfloat16 (as matmul's types.scalar_of_dtype takes them): native byte order, no fields, no subarray."""
    if isinstance(name, types.Scalar):
        text = str(name)
    elif isinstance(name, str) and name in DTYPE_NAMES:
        text = name
    else:
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise AttentionError(f"attention takes f16 or bf16 inputs, not {name}") from None
        if dtype.names is not None or dtype.subdtype is not None:
            raise AttentionError(f"attention takes f16 or bf16 inputs, not the structured dtype {dtype}")
        if dtype.kind == "f" and dtype.itemsize == 2 and not dtype.isnative:
            raise AttentionError(f"attention takes f16 or bf16 in native byte order, not {dtype.str} (a "
                                 "byte-swapped array; hydroplane.attention converts NumPy ones)")
        try:
            text = str(types.scalar_of_dtype(dtype))
        except types.TypeModelError:
            text = str(dtype)
    if text not in DTYPE_NAMES:
        raise AttentionError(f"attention takes f16 or bf16 inputs, not {name}")
    return types.scalar(text)


@dataclass(frozen=True)
class AttentionProblem:
    """One attention call: shapes, element type, masking and scale (None: 1/sqrt(head_dim))."""

    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    dtype: types.Scalar = types.scalar("f16")
    kv_heads: int | None = None  # None: heads
    causal: bool = False
    scale: float | None = None
    window: int | None = None  # None: no sliding window; W >= 1 masks keys W or more before the query's position
    device_kv_len: bool = False  # the keys in use: the first n of kv_len, n read by the kernels from a device buffer

    def __post_init__(self):
        for name in ("batch", "heads", "q_len", "kv_len", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise AttentionError(f"attention: {name} must be a positive integer, not {value!r}")
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        if isinstance(self.kv_heads, bool) or not isinstance(self.kv_heads, int | np.integer) or self.kv_heads < 1:
            raise AttentionError(f"attention: kv_heads must be a positive integer, not {self.kv_heads!r}")
        if self.heads % self.kv_heads:
            raise AttentionError(f"attention: the {self.kv_heads} KV heads must divide the {self.heads} query heads "
                                 "(grouped-query attention)")
        object.__setattr__(self, "dtype", parse_dtype(self.dtype))
        if self.head_dim % HEAD_DIM_STEP or self.head_dim > MAX_HEAD_DIM:
            raise AttentionError(f"attention: head_dim {self.head_dim} is not supported: it must be a multiple of "
                                 f"{HEAD_DIM_STEP} up to {MAX_HEAD_DIM} (64 and 128 are the tuned ones)")
        # (a number under F32_MAX + half its ulp rounds to F32_MAX: 3.4028235e38 as written is taken)
        if self.scale is not None and not (math.isfinite(self.scale) and abs(self.scale) < F32_MAX + 2.0 ** 103):
            raise AttentionError(f"attention: scale must be a finite number within float32's range (|scale| <= "
                                 f"{F32_MAX:.8g}: the scores are f32), not {self.scale!r}")
        if self.window is not None and (isinstance(self.window, bool) or not isinstance(self.window, int | np.integer)
                                        or self.window < 1):
            raise AttentionError(f"attention: window must be a positive integer (keys that far or farther before "
                                 f"the query are masked) or None, not {self.window!r}")
        if self.window is not None:  # wider than any sequence the kernel indexes: no window
            object.__setattr__(self, "window", None if self.window > MAX_ELEMENTS else int(self.window))
        largest = max(self.batch * self.heads * self.q_len, self.batch * self.kv_heads * self.kv_len) * self.head_dim
        if largest > MAX_ELEMENTS:
            raise AttentionError(f"attention: {largest} elements in one tensor; at most {MAX_ELEMENTS} (s32 indices)")

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def flops(self) -> float:
        """4 * B * H * S_q * S_kv * D (two matrix products), halved for causal masking (the convention of
        FlashAttention's and torch's benchmarks)."""
        full = 4.0 * self.batch * self.heads * self.q_len * self.kv_len * self.head_dim
        return full / 2 if self.causal else full

    @property
    def kv_bytes(self) -> int:
        """Bytes of K and V: what a decode step must read."""
        return 2 * self.batch * self.kv_heads * self.kv_len * self.head_dim * self.dtype.width // 8

    def shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(Q and O shape, K and V shape)."""
        return ((self.batch, self.heads, self.q_len, self.head_dim),
                (self.batch, self.kv_heads, self.kv_len, self.head_dim))

    def describe(self) -> str:
        extras = []
        if self.kv_heads != self.heads:
            extras.append(f"{self.kv_heads} KV heads")
        if self.causal:
            extras.append("causal")
        if self.scale is not None:
            extras.append(f"scale {self.scale:g}")
        if self.window is not None:
            extras.append(f"window {self.window}")
        if self.device_kv_len:
            extras.append("keys in use read from the device")
        return (f"B={self.batch} H={self.heads} S_q={self.q_len} S_kv={self.kv_len} D={self.head_dim} {self.dtype}"
                + (f" ({', '.join(extras)})" if extras else ""))


@dataclass(frozen=True)
class AttentionConfig:
    """A tile configuration. tile (QT, SN, QK): the query tile's rows, the columns of a score matrix (also the
    contraction of P V and the width of an output matrix) and the contraction step of Q Kᵀ; subgroups per workgroup
    (WM), query_tiles per subgroup (SMQ), key_tiles score matrices per key block (NS: BN = NS * SN keys), pad
    (16-byte chunks added to each shared row against bank conflicts), splits (1: one pass; N > 1: the decode path,
    the keys split into N ranges and combined in a second pass; 0: chosen from the problem), grouped (a KV head's
    query heads served by one workgroup: their rows packed, K and V read once per group; the decode path of
    grouped-query attention), key_split (the subgroups share the query tiles and split each key block), q_rounds
    (the Q block staged in parts), column_split (the subgroups share the query tiles and every key, each holding
    P V for its head_dim / subgroups columns of O: a decode step at head dim 256 in fewer registers), scalar (the
    decode path's main pass without cooperative matrices, for heads of at most 4 rows (grouped: a KV head's query
    rows): kernels/attention/scalar.py; subgroups per workgroup, key_tiles keys whose loads a key group issues
    together, splits the keys' ranges (each key group's own); tile, query_tiles and pad unused; always two passes;
    the default where one query row a head meets keys of SCALAR_LEADS_HEAD_DIMS, elsewhere only with SCALAR_DECODE),
    fused (where the keys are split: no combining pass, the last workgroup of each block to arrive at a counter
    merges the splits, the same bits; measured slower on an H100, 2026-12-06: never the default unless
    FUSED_COMBINE)."""

    tile: tuple[int, int, int] = (16, 16, 16)
    subgroups: int = 4
    query_tiles: int = 1
    key_tiles: int = 4
    pad: int = 1
    splits: int = 1
    grouped: bool = False
    key_split: bool = False  # the subgroups share the query tiles and split each key block (decode)
    q_rounds: int = 1  # the Q block staged through shared memory in this many parts (head dim 256, 8 subgroups)
    column_split: bool = False  # the subgroups share the query tiles and the keys, each its own columns of O
    scalar: bool = False  # the scalar decode main pass (no cooperative matrices; at most 4 rows per head)
    fused: bool = False  # the splits merged by the last workgroup to arrive (no combining pass)

    def __post_init__(self):
        if len(self.tile) != 3 or any(not isinstance(t, int) or t < 1 for t in self.tile):
            raise AttentionError(f"an attention tile is three positive ints (QT, SN, QK), not {self.tile!r}")
        for name in ("subgroups", "query_tiles", "key_tiles"):
            if getattr(self, name) < 1:
                raise AttentionError(f"an attention config's {name} must be positive, not {getattr(self, name)}")
        if not isinstance(self.q_rounds, int) or self.q_rounds < 1 or self.subgroups % self.q_rounds \
                or (self.key_split and self.q_rounds > 1):
            raise AttentionError(f"an attention config's q_rounds divides its subgroups (without key_split), not "
                                 f"{self.q_rounds!r}")
        if self.column_split and (self.key_split or self.q_rounds > 1):
            raise AttentionError("an attention config's column_split goes without key_split and q_rounds")
        if self.scalar and (self.key_split or self.column_split or self.q_rounds > 1):
            raise AttentionError("an attention config's scalar goes without key_split, column_split and q_rounds")
        if self.pad < 0 or self.splits < 0:
            raise AttentionError(f"an attention config's pad and splits are >= 0, not {self.pad}, {self.splits}")

    @property
    def block(self) -> tuple[int, int]:
        """(BM, BN): queries per workgroup, keys per step (scalar: the most rows a head may have, the keys a key group
        loads at a time)."""
        if self.scalar:
            return scalar.MAX_ROWS, self.key_tiles
        if self.key_split:
            return self.query_tiles * self.tile[0], self.subgroups * self.key_tiles * self.tile[1]
        if self.column_split:
            return self.query_tiles * self.tile[0], self.key_tiles * self.tile[1]
        return self.subgroups * self.query_tiles * self.tile[0], self.key_tiles * self.tile[1]

    def describe(self) -> str:
        if self.scalar:
            text = (f"scalar decode pass: {self.subgroups} subgroup{'s' * (self.subgroups > 1)}, key groups of "
                    f"up to head_dim / 8 lanes each its own split, {self.key_tiles} key{'s' * (self.key_tiles > 1)} "
                    "loaded at a time")
            if self.grouped:
                text += ", query heads grouped per KV head"
            text += f", {self.splits} KV splits" if self.splits else ""
            return text + (", combined by the last workgroup (fused)" if self.fused else "")
        bm, bn = self.block
        qt, sn, qk = self.tile
        text = (f"tiles {qt}x{sn}x{qk}: block {bm} queries x {bn} keys, {self.subgroups} "
                f"subgroup{'s' * (self.subgroups > 1)} of {self.query_tiles} query tile{'s' * (self.query_tiles > 1)}")
        if self.pad:
            text += f", rows padded by {16 * self.pad} bytes"
        if self.key_split:
            text += ", the subgroups splitting each key block"
        if self.column_split:
            text += ", the subgroups splitting O's columns"
        if self.q_rounds > 1:
            text += f", Q staged in {self.q_rounds} rounds"
        if self.grouped:
            text += ", query heads grouped per KV head"
        if self.splits > 1:
            text += f", {self.splits} KV splits (decode path)"
        if self.fused:
            text += ", combined by the last workgroup (fused)"
        return text

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> AttentionConfig:
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as err:
            raise AttentionError(f"a malformed attention config {d!r}: {err}") from None


@dataclass(frozen=True)
class Pass:
    """One dispatch: the kernel (a lang Kernel), its constexprs, grid and push-constant values."""

    kernel: object
    constexprs: dict
    grid: tuple[int, int, int]
    scalars: dict


@dataclass(frozen=True)
class AttentionPlan:
    """The main pass and, on the decode path, the combining pass with the partial results' sizes (f32 elements);
    with the fused combine (config.fused) no combining pass but `counters` arrival counts (int32, zero between
    calls: the plan's user makes them zeroed once and keeps them with the plan)."""

    problem: AttentionProblem
    config: AttentionConfig
    main: Pass
    combine: Pass | None = None
    partial_o: int = 0  # f32 elements of the split results (0 without splits)
    partial_stats: int = 0
    counters: int = 0  # int32 arrival counters of the fused combine (0 without it)

    @property
    def splits(self) -> int:
        return self.main.scalars["SPLITS"]


def matrix(component, rows, cols, use) -> types.CoopMatrix:
    return types.CoopMatrix(component, rows, cols, use, Scope.Subgroup)


def direct_p(dtype: types.Scalar, tile, target: Target) -> bool:
    """Whether P goes from the f32 scores to the input type's A use in one NV2 conversion: where the target offers
    no accumulator of the input type to pass through (the H200 has no bf16 accumulator)."""
    qt, sn, _ = tile
    return not target.offers(matrix(dtype, qt, sn, USE_ACC))


def offers_tile(dtype: types.Scalar, tile, target: Target) -> bool:
    """Whether the target runs every matrix of the kernel at this tile: Q's A, Kᵀ's and V's B, the f32 scores, P's
    A (through an input-type accumulator, or NV2's conversions), and the two MulAdds."""
    qt, sn, qk = tile
    f32 = types.scalar("f32")
    a, kt = matrix(dtype, qt, qk, USE_A), matrix(dtype, qk, sn, USE_B)
    p, vt = matrix(dtype, qt, sn, USE_A), matrix(dtype, sn, sn, USE_B)
    s = matrix(f32, qt, sn, USE_ACC)
    if not all(target.offers(t) for t in (a, kt, p, vt, s)):
        return False
    if direct_p(dtype, tile, target) and not target.has_nv2("cooperativeMatrixConversions"):
        return False
    return target.offers_muladd(a, kt, s, s) and target.offers_muladd(p, vt, s, s)


def target_tiles(dtype: types.Scalar, target: Target) -> list[tuple[int, int, int]]:
    """The tiles (QT, SN, QK) the target runs for the dtype: its fixed shapes, largest first, then (on tiles of 16
    rows or more) wider ones from NV2 flexible dimensions; the reference executor: 16x16x16."""
    if target.is_reference:
        return [(16, 16, 16)]
    found = [(s.m, s.n, s.k) for s in target.shapes(dtype, "f32")]
    for s in target.coop_nv2_flexible:
        if s.scope == Scope.Subgroup and s.a == dtype and s.c == types.scalar("f32") and s.m >= 16:
            found += [(s.m, 2 * s.n, s.k), (s.m, 4 * s.n, s.k), (s.m, 2 * s.n, 2 * s.k), (s.m, 4 * s.n, 4 * s.k)]
    return [t for t in dict.fromkeys(found) if offers_tile(dtype, t, target)]


def check_config(problem: AttentionProblem, config: AttentionConfig, target: Target) -> None:
    """Refuse (AttentionError, naming it) what cannot run: a tile the target lacks, head_dim that is no multiple of
    the tiles, a workgroup or shared memory larger than the target allows."""
    if config.scalar:
        check_scalar(problem, config, target)
        return
    qt, sn, qk = config.tile
    d = problem.head_dim
    offered = offers_tile(problem.dtype, config.tile, target) if target.is_reference else \
        tuple(config.tile) in target_tiles(problem.dtype, target)  # (lavapipe's 16x16 flexible tiles crash it)
    if not offered:
        tiles = ", ".join("x".join(map(str, t)) for t in target_tiles(problem.dtype, target)) or "none"
        raise AttentionError(f"{target.name} does not run attention tiles {qt}x{sn}x{qk} of {problem.dtype} "
                             f"(it offers: {tiles})")
    if d % qk or d % sn or qk % source.WIDE or sn % source.WIDE:
        raise AttentionError(f"head_dim {d} is no multiple of the tiles' {sn} and {qk} (multiples of 8)")
    if config.column_split and (d // sn) % config.subgroups:
        raise AttentionError(f"the {d // sn} output tiles of a row (head_dim {d}, tiles {sn} wide) do not split "
                             f"among {config.subgroups} subgroups")
    threads = config.subgroups * target.subgroup_size
    if threads > target.max_workgroup_invocations or threads > target.max_workgroup_size[0]:
        raise AttentionError(f"{threads} invocations per workgroup; {target.name} allows "
                             f"{target.max_workgroup_invocations}")
    shared = 16 * source.shared_chunks(d, config.pad, config.subgroups, config.query_tiles, qt, sn, config.key_tiles,
                                       config.key_split, config.q_rounds, config.column_split,
                                       source.combine_lanes(d) if config.fused else 0)
    if shared > target.shared_memory:
        raise AttentionError(f"the configuration needs {shared} bytes of shared memory; {target.name} has "
                             f"{target.shared_memory}")


def check_scalar(problem: AttentionProblem, config: AttentionConfig, target: Target) -> None:
    """Refuse what the scalar decode pass cannot run: more than scalar.MAX_ROWS rows per head (grouped: a KV head's
    query rows), a head_dim whose 16-byte chunks are no power of two, more than SCALAR_MOST_KEYS keys loaded at a
    time, a workgroup larger than the target allows."""
    rows, _ = packed(problem, config)
    if rows > scalar.MAX_ROWS:
        raise AttentionError(f"the scalar decode pass holds at most {scalar.MAX_ROWS} rows per head, not {rows} "
                             f"({'query heads x queries of a KV head' if config.grouped else 'queries'})")
    chunks = problem.head_dim // source.WIDE
    if chunks & (chunks - 1):
        raise AttentionError(f"the scalar decode pass reads head_dim {problem.head_dim} in 16-byte chunks among "
                             "lanes: it takes head dims of 16, 32, 64, 128 or 256")
    if config.key_tiles > SCALAR_MOST_KEYS:
        raise AttentionError(f"the scalar decode pass loads at most {SCALAR_MOST_KEYS} keys at a time, not "
                             f"{config.key_tiles}")
    if target.subgroup_size % scalar.scalar_lanes(problem.head_dim, target.subgroup_size):
        raise AttentionError(f"{target.name}'s subgroups of {target.subgroup_size} do not hold whole key groups")
    threads = config.subgroups * target.subgroup_size
    if threads > target.max_workgroup_invocations or threads > target.max_workgroup_size[0]:
        raise AttentionError(f"{threads} invocations per workgroup; {target.name} allows "
                             f"{target.max_workgroup_invocations}")


SCALAR_DECODE = False  # True: candidate_configs puts the scalar decode pass first on every decode path
SCALAR_LEADS_HEAD_DIMS = frozenset({128})  # ... and, with SCALAR_DECODE False, where one query row a head meets keys of
# these head dims: measured on an H100 (2026-12-06 05:30 UTC, docs/perf.md; attention_h200.py, ggml's decode cases)
# at 14.6, 17.0 and 38.5 us against 16.2, 21.3 and 39.2 for the matrix path's default at d128 h8 kv4096, h32 on 8
# KV heads kv4096 and h8 kv16384; head dims 64 and 256 and several query rows were not measured (the matrix path)
FUSED_COMBINE = False  # True: candidate_configs gives every configuration that splits the keys the fused combine
# (config.fused: no combining pass; the last split workgroup to arrive merges, the same bits). Measured slower on an
# H100 (2026-12-06 05:30 UTC, its first form, one merge chain an invocation): +3% to +153% against the same
# configuration with the combining pass at ggml's three d128 decode cases (docs/perf.md)
SCALAR_KEY_GROUPS = 2048  # the scalar pass's splits: about this many key groups in all (unmeasured; the H200 holds
# about 3000 of them at once at head dim 128, each with key_tiles rows of K and V in flight)
SCALAR_MERGES_PER_LANE = 8  # the combining pass after the scalar pass: lanes added until each merges at most this many
SCALAR_SHORTEST_SPLIT = 32  # keys: a key group's range at least this long (its partial rows cost about 1/16 of them)
SCALAR_MOST_KEYS = 16  # keys a key group loads at a time (key_tiles): its registers
ROUNDS_WORKGROUPS = 64  # the Q block in rounds leads head dim 256 prefill from this many workgroups (candidate_configs)
DECODE_WORKGROUPS = 512  # the decode path's grid (the H200's 2026-12-02 sweep, docs/perf.md: 250 to 1000 best)
GROUPED_WORKGROUPS = 512  # the grouped decode path's (each workgroup serves a whole query group)
COLUMN_SPLIT_WORKGROUPS = 256  # ... where its subgroups split O's columns (head dim 256): ggml's d256 decode cases,
# 32 query heads on 2 KV heads, ran 18.1 and 33.0 us with 125 splits (250 workgroups) against 25.8 and 41.6 with the
# 209 and 250 splits of 512 workgroups, and 18.2 and 41.4 with 63 (an H100, 2026-12-06 07:42 UTC, docs/perf.md);
# head dim 64 on the grouped path without the column split ran 36 us with 240 workgroups against 15 with 480
SHORTEST_SPLIT = 64  # keys: shorter splits cost more in the combining pass than they gain
# (the column split: two key blocks; the model's decode step (4 heads on 1 KV head, head dim 256, 4288 keys) ran its
# main pass in 7.5-8.5 us with 134 splits of 32 keys against 11-12.3 with 67 of 64 on the H200, 2026-12-05)
LONGEST_SPLIT = 1024  # keys: (16, 32, 1, 8192, 128) ran at 3.2 TB/s with 8 or 16 splits (512 keys), docs/perf.md


def packed(problem: AttentionProblem, config: AttentionConfig) -> tuple[int, int]:
    """(rows per head, heads) of the grid: (S_q, H), or grouped (group * S_q, H_kv)."""
    if config.grouped:
        return problem.group * problem.q_len, problem.kv_heads
    return problem.q_len, problem.heads


def auto_splits(problem: AttentionProblem, config: AttentionConfig, target_workgroups: int | None = None) -> int:
    """Splits of the keys. Where every query of a head (grouped: of a KV head's group) fits one block: enough to
    make about `target_workgroups` workgroups (DECODE_WORKGROUPS; on the grouped path GROUPED_WORKGROUPS, or
    COLUMN_SPLIT_WORKGROUPS where the subgroups split O's columns) and none longer than LONGEST_SPLIT keys, each at
    least two key blocks and (but with the column split) SHORTEST_SPLIT keys long. Otherwise 1 (the kernel splits a
    prefill too when asked: config.splits > 1)."""
    if config.scalar:
        return scalar_splits(problem, config)
    bm, bn = config.block
    rows, heads = packed(problem, config)
    q_blocks = -(-rows // bm)
    if problem.kv_len < 4 * bn:
        return 1
    workgroups = q_blocks * heads * problem.batch
    if q_blocks > 1:  # (a split prefill of few workgroups measured slower on the H200: docs/perf.md)
        return 1
    if target_workgroups is None:
        target_workgroups = (DECODE_WORKGROUPS if not config.grouped else
                             COLUMN_SPLIT_WORKGROUPS if config.column_split else GROUPED_WORKGROUPS)
    wanted = max(-(-target_workgroups // workgroups), problem.kv_len // LONGEST_SPLIT)
    shortest = 2 * bn if config.column_split else max(2 * bn, SHORTEST_SPLIT)
    return max(1, min(wanted, problem.kv_len // shortest))


def scalar_splits(problem: AttentionProblem, config: AttentionConfig) -> int:
    """The scalar decode pass's splits of a head's keys (one per key group): about SCALAR_KEY_GROUPS key groups in
    all, each at least SCALAR_SHORTEST_SPLIT keys."""
    _, heads = packed(problem, config)
    wanted = -(-SCALAR_KEY_GROUPS // (heads * problem.batch))
    return max(1, min(wanted, problem.kv_len // SCALAR_SHORTEST_SPLIT))


def combine_pass(problem: AttentionProblem, config: AttentionConfig, rows: int, heads: int, splits: int,
                 split_len: int, lanes: int | None = None) -> Pass:
    """The decode path's combining pass over `splits` partial results of `split_len` keys per head, `lanes` split
    lanes (None: source.combine_lanes)."""
    return Pass(source.attention_combine(problem.dtype),
                {"D": problem.head_dim, "LANES": lanes or source.combine_lanes(problem.head_dim),
                 "CAUSAL": problem.causal,
                 "GROUPED": config.grouped, "KV_DEVICE": problem.device_kv_len, "WINDOWED": problem.window is not None},
                (rows, heads, problem.batch),
                {"S_Q": rows, "S_KV": problem.kv_len, "HEADS": heads, "SPLITS": splits, "Q_LEN": problem.q_len,
                 "SPLIT_LEN": split_len, "WINDOW": problem.window or 0})


def scalar_plan(problem: AttentionProblem, config: AttentionConfig, target: Target) -> AttentionPlan:
    """The scalar decode pass (kernels/attention/scalar.py) and the combining pass: workgroups of config.subgroups
    subgroups, each key group of a subgroup its own split of split_len keys (a multiple of key_tiles); about
    config.splits splits (0: scalar_splits), whole workgroups of them (the last ones may hold no key: they write
    nothing and the combining pass reads none)."""
    rows, heads = packed(problem, config)
    lanes = scalar.scalar_lanes(problem.head_dim, target.subgroup_size)
    per_workgroup = config.subgroups * (target.subgroup_size // lanes)
    wanted = config.splits or scalar_splits(problem, config)
    keys = config.key_tiles
    split_len = -(-problem.kv_len // (-(-wanted // per_workgroup) * per_workgroup * keys)) * keys
    workgroups = -(-problem.kv_len // (per_workgroup * split_len))
    splits = workgroups * per_workgroup
    check_grid((workgroups, heads, problem.batch), target)
    constexprs = {"IN": problem.dtype, "D": problem.head_dim, "R": rows, "LK": lanes, "NSG": config.subgroups,
                  "SG": target.subgroup_size, "U": keys, "CAUSAL": problem.causal,
                  "WINDOWED": problem.window is not None, "GROUPED": config.grouped,
                  "KV_DEVICE": problem.device_kv_len}
    scalars = {"S_Q": rows, "S_KV": problem.kv_len, "HEADS": heads,
               "KV_HEADS": heads if config.grouped else problem.kv_heads, "SPLITS": splits, "SPLIT_LEN": split_len,
               "scale": problem.softmax_scale, "WINDOW": problem.window or 0, "Q_LEN": problem.q_len}
    partial = problem.batch * heads * splits * rows
    lanes = scalar_combine_lanes(problem.head_dim, splits, target)
    if config.fused:  # one pass: the last workgroup of a head merges its splits, with the combining pass's lanes
        shared = 16 * scalar.fused_shared(rows, problem.head_dim, lanes)
        if shared > target.shared_memory:
            raise AttentionError(f"the fused combine needs {shared} bytes of shared memory; {target.name} has "
                                 f"{target.shared_memory}")
        constexprs.update(FUSED=True, LANES=lanes)
        main = Pass(scalar.attention_scalar, constexprs, (workgroups, heads, problem.batch), scalars)
        return AttentionPlan(problem, replace(config, splits=splits), main, None, partial * problem.head_dim,
                             partial * 2, problem.batch * heads)
    main = Pass(scalar.attention_scalar, constexprs, (workgroups, heads, problem.batch), scalars)
    return AttentionPlan(problem, replace(config, splits=splits), main,
                         combine_pass(problem, config, rows, heads, splits, split_len, lanes),
                         partial * problem.head_dim, partial * 2)


def check_grid(grid: tuple[int, int, int], target: Target) -> None:
    """Refuse a main pass's grid beyond the target's workgroup counts."""
    if any(n > most for n, most in zip(grid, target.max_workgroup_count)):
        raise AttentionError(f"the grid {grid} exceeds {target.name}'s workgroup counts {target.max_workgroup_count}")


def scalar_combine_lanes(head_dim: int, splits: int, target: Target) -> int:
    """The combining pass's split lanes after the scalar pass, whose splits (one per key group) outnumber the matrix
    pass's: source.combine_lanes doubled while a lane would merge more than SCALAR_MERGES_PER_LANE splits and the
    workgroup stays within 1024 invocations (the same kernel; each lane's merges are a chain of loads)."""
    lanes = source.combine_lanes(head_dim)
    most = min(1024, target.max_workgroup_invocations, target.max_workgroup_size[0])
    while splits > SCALAR_MERGES_PER_LANE * lanes and 2 * lanes * (head_dim // 4) <= most:
        lanes *= 2
    return lanes


def attention_plan(problem: AttentionProblem, config: AttentionConfig, target: Target) -> AttentionPlan:
    """The passes for `problem` with `config` on `target` (checked first)."""
    check_config(problem, config, target)
    if config.scalar:
        return scalar_plan(problem, config, target)
    qt, sn, qk = config.tile
    bm, bn = config.block
    splits = config.splits or auto_splits(problem, config)
    split_len = -(-problem.kv_len // (splits * bn)) * bn  # a multiple of the key block
    splits = -(-problem.kv_len // split_len)  # none empty
    rows, heads = packed(problem, config)
    q_blocks = -(-rows // bm)
    check_grid((q_blocks * splits, heads, problem.batch), target)
    constexprs = {"IN": problem.dtype, "D": problem.head_dim, "QT": qt, "SN": sn, "QK": qk, "WM": config.subgroups,
                  "SMQ": config.query_tiles, "NS": config.key_tiles, "SG": target.subgroup_size, "PAD": config.pad,
                  "CAUSAL": problem.causal, "WINDOWED": problem.window is not None, "GROUPED": config.grouped,
                  "SPLIT": splits > 1,
                  "GUARD_KV": problem.kv_len % bn != 0 or problem.device_kv_len,
                  "DIRECT_P": direct_p(problem.dtype, config.tile, target), "KSPLIT": config.key_split,
                  "QROUNDS": config.q_rounds, "KV_DEVICE": problem.device_kv_len, "DSPLIT": config.column_split}
    scalars = {"S_Q": rows, "S_KV": problem.kv_len, "HEADS": heads,
               "KV_HEADS": heads if config.grouped else problem.kv_heads, "SPLITS": splits, "SPLIT_LEN": split_len,
               "scale": problem.softmax_scale, "WINDOW": problem.window or 0, "Q_LEN": problem.q_len}
    if splits == 1:
        return AttentionPlan(problem, replace(config, fused=False),
                             Pass(source.attention, constexprs, (q_blocks, heads, problem.batch), scalars))
    partial = problem.batch * heads * splits * rows
    if config.fused:  # one pass: the last workgroup of each query block merges its splits (no combining pass)
        constexprs.update(FUSED=True, LANES=source.combine_lanes(problem.head_dim))
        main = Pass(source.attention, constexprs, (q_blocks * splits, heads, problem.batch), scalars)
        return AttentionPlan(problem, replace(config, splits=splits), main, None, partial * problem.head_dim,
                             partial * 2, problem.batch * heads * q_blocks)
    main = Pass(source.attention, constexprs, (q_blocks * splits, heads, problem.batch), scalars)
    return AttentionPlan(problem, replace(config, splits=splits), main,
                         combine_pass(problem, config, rows, heads, splits, split_len), partial * problem.head_dim,
                         partial * 2)


def default_config(problem: AttentionProblem, target: Target) -> AttentionConfig:
    """The first candidate."""
    return candidate_configs(problem, target)[0]


def candidate_configs(problem: AttentionProblem, target: Target) -> list[AttentionConfig]:
    """Configurations that run on the target for this problem, the expected fastest first (the order measured on the
    H200, docs/perf.md): on GPUs with tiles of 16 rows, 8 subgroups of one query tile against 64-key blocks (128 for
    head_dim <= 64; with causal masking the narrowest fixed tile first), then 4-subgroup and two-query-tile blocks;
    on small tiles (lavapipe's 8x8x8) 2 subgroups; where few query blocks would leave the GPU idle, the decode path
    (one subgroup, splits chosen from the problem) leads."""
    tiles = target_tiles(problem.dtype, target)
    if not tiles:
        raise AttentionError(f"{target.name} offers no cooperative matrices for attention in {problem.dtype} "
                             "(f16 or bf16 inputs with f32 accumulators)")
    if problem.causal:  # measured on the H200 (docs/perf.md): 16x8x16 196 TFLOP/s causal against 188 for 16x16x16
        fixed = [t for t in tiles if t in [(s.m, s.n, s.k) for s in target.shapes(problem.dtype, "f32")]]
        tiles = sorted(fixed, key=lambda t: (t[1], -t[2])) + [t for t in tiles if t not in fixed]
    found = []
    for tile in tiles:
        qt, sn, _ = tile
        big = qt >= 16
        # (subgroups, query tiles per subgroup, keys per block)
        shapes = [(8, 1, 64), (4, 1, 32), (8, 1, 32), (4, 1, 64), (8, 2, 32), (4, 2, 64)] if big else \
            [(2, 1, 2 * sn), (1, 1, 2 * sn), (2, 2, sn)]
        if big and problem.head_dim <= 64:  # small heads leave registers for longer key blocks (the H200: 163 TFLOP/s
            shapes = [(8, 1, 128), shapes[0], (4, 1, 128), *shapes[1:]]  # at 8x32x1024x64 against 123 with 64 keys)
        for subgroups, query_tiles, keys in shapes:
            if keys % sn:
                continue
            config = AttentionConfig(tile, subgroups, query_tiles, keys // sn, pad=1, splits=1)
            if auto_splits(problem, config) > 1:
                found.append(replace(config, splits=0))
            found.append(config)
        found.append(AttentionConfig(tile, 1, 1, max(1, (16 if big else 2 * sn) // sn), pad=1, splits=0))  # decode
        found += grouped_configs(problem, tile)
        found += column_split_configs(problem, tile)
    if problem.head_dim > 128 and tiles and tiles[0][0] >= 16 and problem.q_len > 64:
        # 8 subgroups x 32 keys, Q staged in 2 rounds. First where its 128-query blocks make ROUNDS_WORKGROUPS or
        # more workgroups: the H200 (2026-12-05, docs/attention.md) ran ggml's prefill cases at head dim 256 (128
        # workgroups) in 1.086 and 1.807 ms with it against 1.607-1.629 and 2.905 with 4 subgroups x 32 keys, but
        # the model's causal prefill of 512 on 4 heads (16 workgroups) in 70 us against 47
        tile = (16, 16, 16) if (16, 16, 16) in tiles else tiles[0]
        rounds = AttentionConfig(tile, 8, 1, max(1, 32 // tile[1]), pad=1, splits=1, q_rounds=2)
        if -(-problem.q_len // 128) * problem.heads * problem.batch >= ROUNDS_WORKGROUPS:
            found.insert(0, rounds)
        else:
            found.append(rounds)
    for tile in tiles[:1]:  # last: the subgroups splitting each key block (not measured yet: never the default)
        if tile[0] >= 16 and problem.q_len <= tile[0]:
            subgroups = 4 if problem.head_dim <= 128 else 2  # the K and V blocks within 48 KiB
            found.append(AttentionConfig(tile, subgroups, 1, 1, pad=1, splits=0, key_split=True))
            if problem.group > 1 and problem.group * problem.q_len <= tile[0]:
                found.append(AttentionConfig(tile, subgroups, 1, 1, pad=1, splits=0, grouped=True, key_split=True))
    found += scalar_configs(problem)
    runnable = []
    for config in found:
        try:
            check_config(problem, config, target)
        except AttentionError:
            continue
        if config not in runnable:
            runnable.append(config)
    if not runnable:
        raise AttentionError(f"no attention configuration fits {target.name} for {problem.describe()}")
    decode = problem.q_len <= runnable[0].block[0] and any(c.splits == 0 and auto_splits(problem, c) > 1
                                                           for c in runnable)
    if decode:  # few queries against many keys: the grouped split configs lead, then the one-subgroup one; at head
        # dims over 128 the column split leads each, on tiles 16 wide first (one subgroup's output accumulators
        # crowd its registers: the H200 ran the model's decode attention in 7.5-8.5 us with 4 subgroups on 16x16x16
        # against 17.6 on 16x8x16 and 24-97 with one subgroup; ggml's d256 h32/2 kv20000 in 41 us against 54)
        wide = problem.head_dim > 128

        scalar_first = SCALAR_DECODE or (problem.q_len == 1 and problem.head_dim in SCALAR_LEADS_HEAD_DIMS)

        def rank(c: AttentionConfig) -> tuple:  # the scalar pass first where measured faster (scalar_first), else last
            column = 0 if wide and c.column_split and c.tile[1] >= 16 else 1 if wide and c.column_split else 2
            return c.scalar != scalar_first, not c.grouped, column, \
                c.subgroups != 1 and not c.column_split or c.splits != 0

        runnable.sort(key=rank)
    if FUSED_COMBINE:  # every configuration that splits the keys merges them in its last workgroup
        runnable = [fused for fused in (replace(c, fused=True) if splitting(problem, c) else c for c in runnable)
                    if fits(problem, fused, target)]
    return runnable


def splitting(problem: AttentionProblem, config: AttentionConfig) -> bool:
    """Whether the configuration's plan splits the keys (the scalar pass always does)."""
    return config.scalar or config.splits > 1 or (config.splits == 0 and auto_splits(problem, config) > 1)


def fits(problem: AttentionProblem, config: AttentionConfig, target: Target) -> bool:
    """Whether attention_plan makes a plan of the configuration on the target (refusing nothing)."""
    try:
        attention_plan(problem, config, target)
    except AttentionError:
        return False
    return True


def grouped_configs(problem: AttentionProblem, tile) -> list[AttentionConfig]:
    """The grouped decode path's configurations where a KV head's query rows (group * S_q) fill at most 4 query
    tiles: one subgroup per tile (head dims up to 256: 16-key blocks there, 32 below, the registers' limit), then one
    subgroup holding two tiles; splits chosen from the problem."""
    qt, sn, _ = tile
    tiles = -(-problem.group * problem.q_len // qt)
    if problem.group == 1 or tiles > 4:
        return []
    keys = 16 if problem.head_dim > 128 else 32
    found = [AttentionConfig(tile, tiles, 1, max(1, keys // sn), pad=1, splits=0, grouped=True)]
    if qt >= 16:  # (lavapipe's 8x8 tiles: 8 key tiles a block did not finish a dispatch within 60 s)
        found.append(AttentionConfig(tile, tiles, 1, max(1, 2 * keys // sn), pad=1, splits=0, grouped=True))
    if 1 < tiles <= 2 and problem.head_dim <= 128:
        found.append(AttentionConfig(tile, 1, tiles, max(1, keys // sn), pad=1, splits=0, grouped=True))
    return found


def scalar_configs(problem: AttentionProblem) -> list[AttentionConfig]:
    """The scalar decode pass's configurations for heads of at most scalar.MAX_ROWS rows: grouped (a KV head's query
    rows) first where they fit, then one query head a head; 4 subgroups loading 4 or 8 keys at a time, then 2
    subgroups of 8; splits chosen from the problem (the first leads where SCALAR_LEADS_HEAD_DIMS says)."""
    found = []
    for grouped in (True, False):
        rows = problem.group * problem.q_len if grouped else problem.q_len
        if (grouped and problem.group == 1) or rows > scalar.MAX_ROWS:
            continue
        found += [AttentionConfig(subgroups=subgroups, key_tiles=keys, splits=0, grouped=grouped, scalar=True)
                  for subgroups, keys in ((4, 4), (4, 8), (2, 8))]
    return found


def column_split_configs(problem: AttentionProblem, tile) -> list[AttentionConfig]:
    """The decode path with the subgroups splitting O's columns (config.column_split), on tiles of 16 rows and head
    dims of 128 and more (where one subgroup's output accumulators crowd its registers) for rows that fill one query
    tile (grouped where a KV head's query rows do): 4 and 2 subgroups against 16-key blocks; splits chosen from the
    problem."""
    qt, sn, _ = tile
    if qt < 16 or problem.head_dim < 128:
        return []
    grouped = problem.group > 1 and problem.group * problem.q_len <= qt
    rows = problem.group * problem.q_len if grouped else problem.q_len
    tiles = -(-rows // qt)
    if tiles > 1:  # each subgroup holds every query tile's Q: at head dim 256 the model's 16-token prefill (4 tiles)
        return []  # ran its attention in 15.9 us with 4 subgroups of 4 tiles against 7.6 with one tile a subgroup
    return [AttentionConfig(tile, subgroups, tiles, max(1, 16 // sn), pad=1, splits=0, grouped=grouped,
                            column_split=True)
            for subgroups in (4, 2) if (problem.head_dim // sn) % subgroups == 0]


# inputs and the NumPy reference ---------------------------------------------------------------------
def random_inputs(problem: AttentionProblem, rng: np.random.Generator, logit_scale: float = 1.0) -> dict:
    """Q, K, V of normal values in the input type; `logit_scale` multiplies Q and K (so the scaled logits reach
    about logit_scale**2 times their usual spread: the online softmax must stay stable)."""
    q_shape, kv_shape = problem.shapes()
    np_dtype = problem.dtype.dtype

    def normal(shape, factor):
        return (rng.standard_normal(shape) * factor).astype(np.float32).astype(np_dtype)

    return {"q": normal(q_shape, logit_scale), "k": normal(kv_shape, logit_scale), "v": normal(kv_shape, 1.0)}


def visible_keys(problem: AttentionProblem, valid: int | None = None) -> np.ndarray:
    """(q_len, kv_len) bools: which keys each query sees (causal: j <= p, window W: p - j < W, where p = i + n -
    q_len is query i's position among the keys; n the keys in use: kv_len, or `valid` clamped to 0 .. kv_len, the
    keys from it on masked)."""
    n = problem.kv_len if valid is None else min(max(int(valid), 0), problem.kv_len)
    rows = np.arange(problem.q_len)[:, None] + (n - problem.q_len)
    cols = np.arange(problem.kv_len)[None, :]
    visible = np.broadcast_to(cols < n, (problem.q_len, problem.kv_len)).copy()
    if problem.causal:
        visible &= cols <= rows
    if problem.window is not None:
        visible &= rows - cols < problem.window
    return visible


def scores32(problem: AttentionProblem, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The f32 scores (B, H, S_q, S_kv): the products of the inputs summed (exactly, then rounded to f32: the
    kernel sums them in f32) times the f32 scale, in f32 (so a score overflows to ±inf where the kernel's does)."""
    q64 = np.asarray(q).astype(np.float64)
    k64 = np.repeat(np.asarray(k).astype(np.float64), problem.group, axis=1)
    kt = np.swapaxes(k64, -1, -2)
    with np.errstate(all="ignore"):
        if np.isfinite(q64).all() and np.isfinite(k64).all():
            dots = q64 @ kt
        else:  # inf * 0 = NaN and inf - inf = NaN, element by element (a BLAS may skip zeros)
            dots = np.einsum("bhid,bhdj->bhij", q64, kt, optimize=False)
        return dots.astype(np.float32) * np.float32(problem.softmax_scale)


def reference(problem: AttentionProblem, q: np.ndarray, k: np.ndarray, v: np.ndarray, valid: int | None = None) \
        -> np.ndarray:
    """The float64 softmax of the f32 scores (`scores32`) times V, with GQA's shared KV heads, the bottom-right
    causal mask and the window: per row m = max of the visible scores (NaN if one is NaN), w = exp(s - m) (a +inf
    score gives inf - inf = NaN, a row of only -inf scores -inf - -inf = NaN), O = w V / sum(w); masked keys weigh
    0 (a NaN or inf in a masked key's V still gives 0 * NaN, as the kernel's P V can); a row that sees no key is
    zeros. `valid`: the keys in use (visible_keys), None: all."""
    v64 = np.repeat(np.asarray(v).astype(np.float64), problem.group, axis=1)
    visible = visible_keys(problem, valid)
    seen = visible.any(axis=-1)[:, None]
    with np.errstate(all="ignore"):
        scores = np.where(visible, scores32(problem, q, k).astype(np.float64), -np.inf)
        top = np.where(seen, scores.max(axis=-1, keepdims=True), 0.0)
        weights = np.where(visible, np.exp(scores - top), 0.0)
        total = weights.sum(axis=-1, keepdims=True)
        if np.isfinite(v64).all() and np.isfinite(weights).all():
            out = weights @ v64
        else:
            out = np.einsum("bhij,bhjd->bhid", weights, v64, optimize=False)
        return np.where(seen, out / np.where(seen, total, 1.0), 0.0)


def relative_error(out: np.ndarray, exact: np.ndarray) -> float:
    """||O - R|| / ||R|| (Frobenius; the plain norm of O - R when R is 0)."""
    diff = float(np.linalg.norm(np.asarray(out).astype(np.float64) - exact))
    norm = float(np.linalg.norm(exact))
    return diff / norm if norm else diff


def tolerance(problem: AttentionProblem) -> float:
    """The verification bound on relative_error: P is rounded to the input type before P V, and O to it at the
    end (f16: 11 significant bits, bf16: 8)."""
    return 3e-3 if str(problem.dtype) == "f16" else 1.5e-2
