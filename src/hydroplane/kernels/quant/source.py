"""The quantized kernels in the kernel language: y = act(x @ W.T + bias) with W (N, K) in a ggml block format,
dequantized in the kernels' loads (never a dequantized copy of W in memory), and the row gather of a quantized
table. The decoders are decode.py's (`decode8`, `block_dot`, `group_ones`) and this module's register decoders of the
GEMM's staging (`store_block32`, `store_k4`, `store_k6`), the format a constexpr.

- `gemv_kernel(XDT, ODT)` (decode, M <= 16): a subgroup owns ROWS rows of W (outputs n); its lanes walk K in
  groups of 8 weights (lane l: groups l, l + SG, ...), each group decoded once from the block bytes (32-bit word
  loads) and met with the 8 matching activations of each of MR rows of x (16-byte loads through the V4 view of
  x), in f32; the lanes' sums meet in subgroup adds. NSG subgroups per workgroup. With SPLIT K ranges (grid z,
  for a small N) each range writes its f32 partial sums to `part` and `reduce_kernel` adds them and applies the
  epilogue.
- `gemv_units_kernel(XDT, ODT)`: the decode GEMV over whole units of blocks, with an optional prologue (PRO: the
  row it multiplies computed by each workgroup from its inputs: norms, residual adds, gating, attention's combining
  pass); with a prologue the lanes' first unit of W is loaded before it (PRELOAD), so both latencies overlap;
  COALESCE: the row group's units loaded by consecutive lanes in consecutive chunks into shared memory, each lane
  then reading its own unit from there.
- `gemm_kernel(ODT)` (prefill): the cooperative-matrix GEMM's staged K loop (kernels.gemm.source's
  `staged_k_loop`, with this module's `QUANT_STAGING`) over f16 activations: per K step `fetch_quant` loads the
  BM x BK block of x and the words of W's BN x BK block into registers (every load of the step issued at once, none
  used there) and `put_quant` stores x and decodes W into shared memory as f16; PREFETCH issues the
  next step's loads before the multiplications and decodes them after; the subgroups multiply their tiles out of
  shared memory with f32 accumulators; STAGES=2 (the default) fills the other shared buffer while this one is
  multiplied. The epilogue stages each accumulator tile through shared memory and writes it element by element;
  PARTIAL (K split over grid z) writes f32 partial sums for reduce_kernel instead. f32 and bf16 activations are
  `scaled_f16_kernel`'s first: each row as f16 times a power of two that puts its largest value near 2^14 (SCALED:
  the epilogue multiplies the row's results back), so that no row is too small or too large for f16.
- `rows_kernel(ODT)`: out[t] = W[ids[t]] dequantized (an embedding of a quantized table); an id outside 0 .. V - 1
  gives a zero row.

A weight larger than one binding may be (Vulkan guarantees 2^27 bytes of a storage buffer; lavapipe offers no more)
is bound in windows of rows: each launch gets its rows' blocks, `col_base` (the window's first output column) and
`ldd` (the output's row length), or for the gather `row_base` and `chunk_rows`.

The epilogue (`finish_value`): + bias[n] (in the output type), ReLU or GELU (tanh form, as the GEMM's), rounded once
into the output's storage: f32, f16, or bf16 as its 16 bits (u16 buffers, so devices without bf16 scalars run it).
This module imports only the language (and the GEMM's and nn's kernel helpers).
"""

import functools
from dataclasses import dataclass

from hydroplane.kernels.attention.source import V4F, combined_rows
from hydroplane.kernels.gemm.source import GELU_C, GELU_CUBIC, Blocks, KLoop, Staging, staged_k_loop
from hydroplane.kernels.nn.activation import act
from hydroplane.kernels.nn.common import STORAGE, V4, group_sum, load, log2_exact, narrow
from hydroplane.kernels.quant.decode import FORMATS, block_dot, decode8, lane_group, lane_runs, word_of
from hydroplane.kernels.quant.dot import block_dot_int
from hydroplane.lang import (
    Buffer,
    barrier,
    bitcast,
    cast,
    clamp,
    constexpr,
    coop,
    f16,
    f32,
    fma,
    func,
    global_id,
    kernel_source,
    lane_id,
    local_array,
    local_index,
    maximum,
    minimum,
    num_workgroups,
    readonly,
    rsqrt,
    s32,
    select,
    shared_array,
    static_range,
    subgroup_add,
    subgroup_id,
    subgroup_max,
    subgroup_shuffle_xor,
    tanh,
    u16,
    u32,
    vec,
    vector_type,
    workgroup_id,
)

REDUCE_THREADS = 256
V2 = vector_type(u32, 2)  # 8 bytes: the middle load width
ROWS_THREADS = 64


H2 = vector_type(f16, 2)


@func
def finish_value(v, bias, col, BIAS: constexpr, ACT: constexpr, ODT: constexpr):
    """f32 v (+ bias[col]), the activation, in the output storage ODT."""
    result = v
    if BIAS:
        result += load(bias, col, ODT)
    if ACT == "relu":  # NaN stays NaN, as np.maximum and torch.relu
        result = select(result < 0.0, 0.0, result)
    if ACT == "gelu":
        result = 0.5 * result * (1.0 + tanh(GELU_C * (result + GELU_CUBIC * result * result * result)))
    return narrow(result, ODT)


@func
def load_x8(xs, slot: constexpr, x4, at, XDT: constexpr):
    """The 8 activations at element `at` (a multiple of 8, not negative: shifts, not the signed division's selects) of x
    into xs[slot:slot + 8] as f32, in 16-byte loads."""
    if XDT == "f32":
        for c in static_range(2):
            chunk = x4[(at >> 2) + c]
            for j in static_range(4):
                xs[slot + 4 * c + j] = bitcast(chunk[j], f32)
    else:
        halves_f32(xs, slot, x4[at >> 3], 4, XDT)


@func
def halves_f32(xs, slot: constexpr, words, COUNT: constexpr, XDT: constexpr):
    """The 2 x COUNT f16 or bf16 values in words[0:COUNT] (low half first) into xs[slot:slot + 2 COUNT] as f32 (f16:
    each word converted as a pair, no extraction of its halves)."""
    for j in static_range(COUNT):
        if XDT == "bf16":
            xs[slot + 2 * j] = bitcast(words[j] << 16, f32)
            xs[slot + 2 * j + 1] = bitcast(words[j] & 0xFFFF0000, f32)
        else:
            pair = cast(bitcast(words[j], H2), f32)
            xs[slot + 2 * j] = pair[0]
            xs[slot + 2 * j + 1] = pair[1]


@func
def store_sums(acc, part, d, bias, n0, m0, split, M, N, ldd, col_base, MR: constexpr, ROWS: constexpr,
               PARTIAL: constexpr, BIAS: constexpr, ACT: constexpr, ODT: constexpr):
    """A GEMV's sums acc[m * ROWS + r] (rows m0 + m of x, n0 + r of W) stored where both are in range: as split
    `split`'s f32 partial sums (PARTIAL, for reduce_kernel), else through the epilogue into d."""
    for r in static_range(ROWS):
        n = n0 + r
        for m in static_range(MR):
            row = m0 + m
            if row < M and n < N:
                if PARTIAL:
                    part[(split * M + row) * N + n] = acc[m * ROWS + r]
                else:
                    d[row * ldd + col_base + n] = finish_value(acc[m * ROWS + r], bias, col_base + n, BIAS, ACT, ODT)


# The unit GEMV's prologue (PRO, one row of x: M = 1, K <= K_MAX_PROLOGUE): each workgroup computes the row it
# multiplies from its inputs into shared memory (f32), so that the kernel before it need not run:
#   "norm":              h = x * r(x) * pw                      r(v) = rsqrt(mean(v²) + eps), an RMS norm
#   "add_norm":          s = x + pd;  h = s * r(s) * pw           a residual add, then the next norm
#   "postnorm_add_norm": s = x + pd * r(pd) * pdw; h = s * r(s) * pw   (Gemma's post-norm, residual, next norm)
#   "gated":             h = act(x[0:K]) * x[K:2K]               a gated FFN's activation PACT (x: gate, then up)
#   "combine":           h = a one-token decode's attention output, its KV splits merged (x4: the main pass's split
#                        results, pd: their maxima and sums, pw[0]: the keys in use as s32 bits; CMB: (splits,
#                        split length, window or 0, key capacity, rows per KV head, head dim, the combining pass's
#                        lanes); HELD: chunks of four values an invocation): attention_combine's f16 output, its
#                        bits (the same merges in the same order; kernels/attention/source.py `combined_rows`)
# HELD > 0 (the norms, K <= HELD x the workgroup's invocations): every input loaded at once (`norm_row_held`).
# SUM_OUT: workgroup (0, 0, 0) also writes s to ps (the residual stream's next value). The arithmetic is the unfused
# kernels' (kernels/nn/norm.py, activation.py) in their order; the sums meet as theirs do (`group_sum`).
PROLOGUES = ("none", "norm", "add_norm", "postnorm_add_norm", "gated", "combine")
K_MAX_PROLOGUE = 3072  # f32 elements of shared memory for the row: 12 KiB (every Vulkan device offers 16)


@func
def prologue(sx, sums, x, x4, pw, pd, pdw, ps, K, eps, PRO: constexpr, PACT: constexpr, SUM_OUT: constexpr,
             THREADS: constexpr, NSG: constexpr, CMB: constexpr, HELD: constexpr):
    """The prologue PRO's row into sx[0:K] (the comment above; sums: NSG f32 of shared scratch), then a barrier.
    HELD > 0 (the norms, K <= HELD * THREADS): `norm_row_held`; "combine": each invocation's chunks of 4 values."""
    lid = local_index()
    if PRO == "gated":
        for i in range(lid, K, THREADS):
            sx[i] = act(x[i], PACT) * x[K + i]
    elif PRO == "combine":
        combined_rows(sx, x4, pd, pw, K, CMB[0], CMB[1], CMB[2], CMB[3], CMB[4], CMB[5], CMB[6], CMB[2] > 0, THREADS,
                      HELD)
    elif HELD > 0:
        norm_row_held(sx, sums, x, pw, pd, pdw, ps, K, eps, PRO, SUM_OUT, THREADS, NSG, HELD)
    else:
        delta_scale = f32(1.0)
        if PRO == "postnorm_add_norm":
            acc = f32(0.0)
            for i in range(lid, K, THREADS):
                v = pd[i]
                acc += v * v
            delta_scale = rsqrt(group_sum(acc, sums, NSG) / f32(K) + eps)
        total = f32(0.0)
        for i in range(lid, K, THREADS):
            s = x[i]
            if PRO == "add_norm":
                s = pd[i] + s
            if PRO == "postnorm_add_norm":
                s = pd[i] * delta_scale * pdw[i] + s
            sx[i] = s
            total += s * s
        scale = rsqrt(group_sum(total, sums, NSG) / f32(K) + eps)
        first = workgroup_id(0) == 0 and workgroup_id(1) == 0 and workgroup_id(2) == 0
        for i in range(lid, K, THREADS):
            s = sx[i]
            if SUM_OUT:
                if first:
                    ps[i] = s
            sx[i] = s * scale * pw[i]
    barrier()


@func
def norm_row_held(sx, sums, x, pw, pd, pdw, ps, K, eps, PRO: constexpr, SUM_OUT: constexpr, THREADS: constexpr,
                  NSG: constexpr, HELD: constexpr):
    """The norm prologues ("norm", "add_norm", "postnorm_add_norm") with every input an invocation needs (its HELD
    elements i = lid, lid + THREADS, ... of x, pw and pd, pdw) loaded at once into registers: one round of memory
    latency before the sums, where the loop form waits for three (pd; then x and pdw; then pw). The same arithmetic
    in the same order as the loop form."""
    lid = local_index()
    xv = local_array(f32, HELD)
    wv = local_array(f32, HELD)
    dv = local_array(f32, HELD)
    dwv = local_array(f32, HELD)
    for j in static_range(HELD):
        i = minimum(lid + j * THREADS, K - 1)  # past K: a repeated load, never used
        xv[j] = x[i]
        wv[j] = pw[i]
        if PRO != "norm":
            dv[j] = pd[i]
        if PRO == "postnorm_add_norm":
            dwv[j] = pdw[i]
    delta_scale = f32(1.0)
    if PRO == "postnorm_add_norm":
        acc = f32(0.0)
        for j in static_range(HELD):
            if lid + j * THREADS < K:
                acc += dv[j] * dv[j]
        delta_scale = rsqrt(group_sum(acc, sums, NSG) / f32(K) + eps)
    total = f32(0.0)
    for j in static_range(HELD):
        s = xv[j]
        if PRO == "add_norm":
            s = dv[j] + s
        if PRO == "postnorm_add_norm":
            s = dv[j] * delta_scale * dwv[j] + s
        xv[j] = s
        if lid + j * THREADS < K:
            total += s * s
    scale = rsqrt(group_sum(total, sums, NSG) / f32(K) + eps)
    first = workgroup_id(0) == 0 and workgroup_id(1) == 0 and workgroup_id(2) == 0
    for j in static_range(HELD):
        i = lid + j * THREADS
        if i < K:
            if SUM_OUT:
                if first:
                    ps[i] = xv[j]
            sx[i] = xv[j] * scale * wv[j]


@func
def load_x8_shared(xs, slot: constexpr, sx, at, XDT: constexpr):
    """The 8 values at element `at` of the prologue's row in shared memory into xs[slot:slot + 8]."""
    for j in static_range(8):
        xs[slot + j] = sx[at + j]


@func
def load_x8_staged(xs, slot: constexpr, sx4, at, XDT: constexpr):
    """The 8 values at element `at` (a multiple of 8) of XSH's chunk in shared memory (`x_slot`: every 256 values
    followed by 4 unused ones) into xs[slot:slot + 8], in two 16-byte loads."""
    q = x_slot(at >> 2)
    for c in static_range(2):
        v = sx4[q + c]
        for j in static_range(4):
            xs[slot + 4 * c + j] = v[j]


@func
def x_slot(q):
    """The vec4 of XSH's shared chunk that holds values 4q .. 4q + 3: after every 64 vec4s one is left unused, so
    that the lanes of a row, reading one offset of units 256 values apart (or a multiple), meet different banks."""
    return q + (q >> 6)


def gemv_threads(constexprs: dict) -> int:
    return constexprs["NSG"] * constexprs["SG"]


@functools.cache
def gemv_kernel(XDT: str, ODT: str):
    """The decode GEMV for activations XDT and output ODT ("f32", "f16", "bf16"): the module docstring."""
    XS, OS = STORAGE[XDT], STORAGE[ODT]

    @kernel_source(local_size=gemv_threads, name=f"quant_gemv_{XDT}_{ODT}")
    def quant_gemv(x: Buffer[XS, readonly], x4: Buffer[V4, readonly], w: Buffer[u32, readonly],
                   bias: Buffer[OS, readonly], d: Buffer[OS], part: Buffer[f32], M: s32, N: s32, K: s32,
                   row_bytes: s32, k_split: s32, ldd: s32, col_base: s32, FMT: constexpr, MR: constexpr,
                   ROWS: constexpr, NSG: constexpr, SG: constexpr, PARTIAL: constexpr, BIAS: constexpr,
                   ACT: constexpr):
        lane = lane_id()
        n0 = (workgroup_id(0) * NSG + subgroup_id()) * ROWS
        m0 = workgroup_id(1) * MR
        split = workgroup_id(2)
        k_begin = split * k_split
        k_end = minimum(K, k_begin + k_split)
        acc = local_array(f32, MR * ROWS)
        for i in static_range(MR * ROWS):
            acc[i] = 0.0
        xs = local_array(f32, MR * 8)
        vals = local_array(f32, 8)
        for e in range(k_begin + lane * 8, k_end, SG * 8):
            for m in static_range(MR):
                load_x8(xs, m * 8, x4, minimum(m0 + m, M - 1) * K + e, XDT)
            for r in static_range(ROWS):
                decode8(vals, w, minimum(n0 + r, N - 1) * row_bytes, e, FMT)
                for m in static_range(MR):
                    total = acc[m * ROWS + r]
                    for j in static_range(8):
                        total += xs[m * 8 + j] * vals[j]
                    acc[m * ROWS + r] = total
        for i in static_range(MR * ROWS):
            acc[i] = subgroup_add(acc[i])
        if lane == 0:
            store_sums(acc, part, d, bias, n0, m0, split, M, N, ldd, col_base, MR, ROWS, PARTIAL, BIAS, ACT, ODT)

    return quant_gemv


def units_threads(constexprs: dict) -> int:
    return constexprs["NSG"] * constexprs["SG"]


@func
def load_words(words, BASE: constexpr, w4, w2, w1, chunk0, FIRST: constexpr, COUNT: constexpr, LW: constexpr):
    """Chunks chunk0 + FIRST .. + COUNT - 1 of LW words (4: 16-byte loads through the V4 view, 2: 8-byte, 1: words)
    into words[BASE : BASE + COUNT * LW], in COUNT independent loads."""
    for c in static_range(COUNT):
        if LW == 4:
            v = w4[chunk0 + FIRST + c]
            for j in static_range(4):
                words[BASE + 4 * c + j] = v[j]
        elif LW == 2:
            v2 = w2[chunk0 + FIRST + c]
            for j in static_range(2):
                words[BASE + 2 * c + j] = v2[j]
        else:
            words[BASE + c] = w1[chunk0 + FIRST + c]


@func
def load_unit(words, w4, w2, w, rowc, u, BYTES: constexpr, UB: constexpr, LW: constexpr, ROWS: constexpr):
    """Unit u of the ROWS rows of W whose first units rowc[] holds, whole (SPAN), into words (row r at r x the
    unit's words), in independent loads."""
    UNIT_CHUNKS = UB * BYTES // (4 * LW)
    for r in static_range(ROWS):
        load_words(words, r * UNIT_CHUNKS * LW, w4, w2, w, (rowc[r] + u) * UNIT_CHUNKS, 0, UNIT_CHUNKS, LW)


@func
def unit_loop(acc, words, ahead, xs, wv, part_m, xsum, xsrc, xoff, w4, w2, w, rowc, u_begin, u_end, sub, stage4,
              stage2, stage1, region, FMT: constexpr, BLOCK: constexpr, BYTES: constexpr, UB: constexpr, LW: constexpr,
              SPAN: constexpr, MR: constexpr, ROWS: constexpr, LPR: constexpr, XDT: constexpr, load_x: constexpr,
              PRELOADED: constexpr, PIPE: constexpr, DOT: constexpr, COALESCE: constexpr, ABLATE: constexpr):
    """acc += the lane's units u_begin + sub, + LPR, ... < u_end of the ROWS rows of W (in FMT) whose first units
    rowc[] holds, against MR rows of x read by load_x from xsrc (the unit GEMV's main loop). PRELOADED (SPAN): the
    first unit's words are in `words` already (`load_unit` before the prologue). PIPE (SPAN): the lane's next unit
    is loaded into `ahead` before this one is multiplied, so that its loads are in flight during the arithmetic
    (twice the words in registers). DOT: the integer path (kernels/quant/dot.py; xsrc: x's levels, M = 1).
    COALESCE: `coalesced_unit_loop` (stage4/2/1 and region: its shared stage). ABLATE: `unit_dots`' (timings only)."""
    CB = 4 * LW  # bytes per load
    UNIT_CHUNKS = UB * BYTES // CB
    SPAN_CHUNKS = UNIT_CHUNKS if SPAN else (BYTES + 2 * CB - 2) // CB
    first = u_begin + sub
    if COALESCE:
        coalesced_unit_loop(acc, words, xs, wv, part_m, xsum, xsrc, xoff, w4, w2, w, rowc, u_begin, u_end, sub, stage4,
                            stage2, stage1, region, FMT, BLOCK, BYTES, UB, LW, MR, ROWS, LPR, XDT, load_x, DOT, ABLATE)
    elif SPAN and PIPE:
        if not PRELOADED:
            if first < u_end:
                load_unit(words, w4, w2, w, rowc, first, BYTES, UB, LW, ROWS)
        for u in range(first, u_end, LPR):
            if ABLATE != "alu" and u + LPR < u_end:
                load_unit(ahead, w4, w2, w, rowc, u + LPR, BYTES, UB, LW, ROWS)
            unit_dots(acc, words, 0, UB, SPAN_CHUNKS * CB, xs, wv, part_m, xsum, xsrc, xoff, u * UB * BLOCK, u, FMT,
                      BLOCK, BYTES, MR, ROWS, XDT, load_x, DOT, ABLATE, ROWS * UNIT_CHUNKS * LW)
            if ABLATE != "alu" and u + LPR < u_end:
                for i in static_range(ROWS * UNIT_CHUNKS * LW):
                    words[i] = ahead[i]
    else:
        for u in range(first, u_end, LPR):
            e0 = u * UB * BLOCK
            if SPAN:
                if PRELOADED:
                    if ABLATE != "alu" and u != first:
                        load_unit(words, w4, w2, w, rowc, u, BYTES, UB, LW, ROWS)
                elif ABLATE != "alu" or u == first:
                    load_unit(words, w4, w2, w, rowc, u, BYTES, UB, LW, ROWS)
                unit_dots(acc, words, 0, UB, SPAN_CHUNKS * CB, xs, wv, part_m, xsum, xsrc, xoff, e0, u, FMT, BLOCK,
                          BYTES, MR, ROWS, XDT, load_x, DOT, ABLATE, ROWS * UNIT_CHUNKS * LW)
            else:
                for b in static_range(UB):
                    FIRST = b * BYTES // CB
                    if ABLATE != "alu" or u == first:
                        for r in static_range(ROWS):
                            load_words(words, r * SPAN_CHUNKS * LW, w4, w2, w, (rowc[r] + u) * UNIT_CHUNKS, FIRST,
                                       (b * BYTES + BYTES - 1) // CB - FIRST + 1, LW)
                    unit_dots(acc, words, b * BYTES - FIRST * CB, 1, SPAN_CHUNKS * CB, xs, wv, part_m, xsum, xsrc,
                              xoff, e0 + b * BLOCK, u, FMT, BLOCK, BYTES, MR, ROWS, XDT, load_x, DOT, ABLATE,
                              ROWS * SPAN_CHUNKS * LW)


# The unit GEMV's ablations (ABLATE, measurement only: wrong results, timings only; benchmarks/quant_sweep.py
# --gemv-ablate): "loads" keeps every global load of W and XOR-folds the words into the accumulator's bits (no
# decoding, no x, no multiply-adds); "alu" loads each lane's first unit once and decodes it again for every unit
# (x read as usual, no further loads of W).
GEMV_ABLATIONS = ("", "loads", "alu")


@func
def unit_dots(acc, words, P0: constexpr, NB: constexpr, STRIDE: constexpr, xs, wv, part, xsum, xsrc, xoff, x_at, u,
              FMT: constexpr, BLOCK: constexpr, BYTES: constexpr, MR: constexpr, ROWS: constexpr, XDT: constexpr,
              load_x: constexpr, DOT: constexpr, ABLATE: constexpr, WORDS: constexpr):
    """acc += the NB blocks at bytes P0, P0 + BYTES, ... of words[] (rows STRIDE bytes apart) against x from x_at
    (`any_block_dot`); ABLATE "loads": words[0:WORDS] XOR-folded into acc[0]'s bits instead; "alu": the words first
    XORed with a value that is 0 (u >> 30) but unknown to the compiler, so that it cannot hoist the decoding of words
    loaded once out of the loop."""
    if ABLATE == "loads":
        folded = words[0]
        for i in static_range(1, WORDS):
            folded = folded ^ words[i]
        acc[0] = bitcast(bitcast(acc[0], u32) ^ folded, f32)
    else:
        if ABLATE == "alu":
            salt = u32(u) >> 30
            for i in static_range(WORDS):
                words[i] = words[i] ^ salt
        for b in static_range(NB):
            any_block_dot(acc, words, P0 + b * BYTES, STRIDE, xs, wv, part, xsum, xsrc, xoff, x_at + b * BLOCK, FMT,
                          MR, ROWS, XDT, load_x, DOT)


def stage_slots(fmt: str, ub: int, lw: int) -> int:
    """COALESCE: a unit's slots (loads of lw words) in the shared stage: its chunks, made odd (below)."""
    chunks = ub * FORMATS[fmt][1] // (4 * lw)
    return chunks + 1 - chunks % 2


def stage_bytes(fmt: str, ub: int, lw: int, rows: int, threads: int) -> int:
    """COALESCE: the shared stage's bytes for a workgroup of `threads` lanes, `rows` rows of W each."""
    return threads * rows * stage_slots(fmt, ub, lw) * 4 * lw


@func
def coalesced_unit_loop(acc, words, xs, wv, part_m, xsum, xsrc, xoff, w4, w2, w, rowc, u_begin, u_end, sub, stage4,
                        stage2, stage1, region, FMT: constexpr, BLOCK: constexpr, BYTES: constexpr, UB: constexpr,
                        LW: constexpr, MR: constexpr, ROWS: constexpr, LPR: constexpr, XDT: constexpr,
                        load_x: constexpr, DOT: constexpr, ABLATE: constexpr):
    """The unit loop with coalesced loads (COALESCE): each step the LPR lanes of a row group take units u0 .. u0 +
    LPR - 1 of their ROWS rows, a contiguous run of UC chunks (LW words) a unit in each row; lane `sub` loads chunks
    sub, sub + LPR, ... of each row's run (consecutive lanes, consecutive chunks: every sector a load instruction
    touches is used whole), stores them into the group's `region` of the shared stage (stage4, stage2 or stage1 by
    LW), and after a barrier reads its own unit back whole (the same words `load_unit` gives) and decodes it. A unit
    takes US slots (UC, made odd by one unused slot) so that the lanes, reading one offset of their units, meet
    different banks. Every step has two workgroup barriers, the same count in every subgroup (u_begin, u_end are
    the workgroup's)."""
    CB = 4 * LW
    UC = UB * BYTES // CB
    US = UC + 1 - UC % 2
    ROW_SLOTS = LPR * US
    WORDS = ROWS * UC * LW
    for u0 in range(u_begin, u_end, LPR):
        count = minimum(LPR, u_end - u0) * UC  # the chunks of each row this step
        if ABLATE != "alu" or u0 == u_begin:
            for r in static_range(ROWS):
                for c in static_range(UC):
                    q = c * LPR + sub
                    if q < count:
                        load_words(words, (r * UC + c) * LW, w4, w2, w, (rowc[r] + u0) * UC + q, 0, 1, LW)
        u = u0 + sub
        if ABLATE == "loads":
            unit_dots(acc, words, 0, UB, UC * CB, xs, wv, part_m, xsum, xsrc, xoff, u * UB * BLOCK, u, FMT, BLOCK,
                      BYTES, MR, ROWS, XDT, load_x, DOT, ABLATE, WORDS)
        else:
            barrier()  # the last step's reads of the stage are done
            for r in static_range(ROWS):
                for c in static_range(UC):
                    q = c * LPR + sub
                    if q < count:
                        slot = region + r * ROW_SLOTS + q
                        if US != UC:
                            slot += q // UC
                        store_chunk(stage4, stage2, stage1, slot, words, (r * UC + c) * LW, LW)
            barrier()
            if u < u_end:
                for r in static_range(ROWS):
                    load_words(words, r * UC * LW, stage4, stage2, stage1, region + r * ROW_SLOTS + sub * US, 0, UC,
                               LW)
                unit_dots(acc, words, 0, UB, UC * CB, xs, wv, part_m, xsum, xsrc, xoff, u * UB * BLOCK, u, FMT,
                          BLOCK, BYTES, MR, ROWS, XDT, load_x, DOT, ABLATE, WORDS)


@func
def store_chunk(stage4, stage2, stage1, slot, words, BASE: constexpr, LW: constexpr):
    """words[BASE : BASE + LW] into slot `slot` of the stage of LW-word chunks."""
    if LW == 4:
        stage4[slot] = vec(words[BASE], words[BASE + 1], words[BASE + 2], words[BASE + 3])
    elif LW == 2:
        stage2[slot] = vec(words[BASE], words[BASE + 1])
    else:
        stage1[slot] = words[BASE]


@func
def any_block_dot(acc, words, p0: constexpr, STRIDE: constexpr, xs, wv, part, xsum, xsrc, xoff, x_at, FMT: constexpr,
                  MR: constexpr, ROWS: constexpr, XDT: constexpr, load_x: constexpr, DOT: constexpr):
    """decode.py's block_dot, or with DOT the integer path's block_dot_int (xsrc: x's levels; M = 1)."""
    if DOT:
        block_dot_int(acc, words, p0, STRIDE, xsrc, x_at, FMT, ROWS)
    else:
        block_dot(acc, words, p0, STRIDE, xs, wv, part, xsum, xsrc, xoff, x_at, FMT, MR, ROWS, XDT, load_x)


@functools.cache
def gemv_units_kernel(XDT: str, ODT: str):
    """The decode GEMV over whole units of blocks (decode.py's `block_dot`): LPR neighbouring lanes share ROWS rows of
    W (a subgroup holds SG / LPR such groups, a workgroup NSG subgroups); lane j of a group takes units j, j + LPR,
    ... of its K range, each unit UB blocks starting on a multiple of the load width LW (words); a unit's words are
    loaded together for every row (SPAN: the whole unit, else block by block) and decoded at compile-time offsets
    against MR rows of x, each activation read once for the ROWS rows. The LPR lanes' sums meet in shuffles; with
    SPLIT K ranges (grid z) the partial sums go to `part` for reduce_kernel. FMT2: a second weight wb (its own
    format, BYTES2 and SPAN2; the same BLOCK, UB and LW) whose rows follow w's n_first rows in the output (one
    launch for two weights of different formats: n_first a multiple of ROWS). XCH > 0 (M = 1, no prologue, one
    weight): the workgroup converts x to f32 into shared memory once, XCH activations (whole units) at a time, and
    the lanes read it from there, not each converting it again for its rows. PIPE: `unit_loop`. DOT (M = 1, no
    prologue, one weight, not with XCH): x4 is bound to x's levels and the blocks meet them in integer dot products
    (kernels/quant/dot.py). COALESCE (one weight): W's loads coalesced through a shared stage, each unit loaded and
    decoded whole (`coalesced_unit_loop`). ABLATE (measurement only, wrong results): GEMV_ABLATIONS."""
    XS, OS = STORAGE[XDT], STORAGE[ODT]

    @kernel_source(local_size=units_threads, name=f"quant_gemv_units_{XDT}_{ODT}")
    def quant_gemv_units(x: Buffer[XS, readonly], x4: Buffer[V4, readonly], w: Buffer[u32, readonly],
                         w2: Buffer[V2, readonly], w4: Buffer[V4, readonly], bias: Buffer[OS, readonly], d: Buffer[OS],
                         part: Buffer[f32], pw: Buffer[f32, readonly], pd: Buffer[f32, readonly],
                         pdw: Buffer[f32, readonly], ps: Buffer[f32], wb: Buffer[u32, readonly],
                         wb2: Buffer[V2, readonly], wb4: Buffer[V4, readonly], M: s32, N: s32, K: s32,
                         row_units: s32, split_units: s32, ldd: s32, col_base: s32, eps: f32, n_first: s32,
                         FMT: constexpr, BLOCK: constexpr, BYTES: constexpr, UB: constexpr, LW: constexpr,
                         SPAN: constexpr, MR: constexpr, ROWS: constexpr, LPR: constexpr, NSG: constexpr,
                         SG: constexpr, PARTIAL: constexpr, BIAS: constexpr, ACT: constexpr, PRO: constexpr = "none",
                         PACT: constexpr = "none", SUM_OUT: constexpr = False, FMT2: constexpr = "",
                         BYTES2: constexpr = 0, SPAN2: constexpr = False, CMB: constexpr = (), HELD: constexpr = 0,
                         PRELOAD: constexpr = True, PIPE: constexpr = False, XCH: constexpr = 0,
                         DOT: constexpr = False, COALESCE: constexpr = False, ABLATE: constexpr = ""):
        sx = shared_array(f32, K_MAX_PROLOGUE if PRO != "none" else 1)
        sx4 = shared_array(V4F, XCH // 4 + XCH // 256 + 1 if XCH > 0 else 1)  # XSH's chunk of x (x_slot)
        sums = shared_array(f32, NSG)
        lane = lane_id()
        sub = lane % LPR
        n0 = ((workgroup_id(0) * NSG + subgroup_id()) * (SG // LPR) + lane // LPR) * ROWS
        m0 = workgroup_id(1) * MR
        split = workgroup_id(2)
        u_begin = split * split_units
        u_end = minimum(row_units, u_begin + split_units)
        acc = local_array(f32, MR * ROWS)
        for i in static_range(MR * ROWS):
            acc[i] = 0.0
        part_m = local_array(f32, MR * ROWS)
        xsum = local_array(f32, MR)
        xs = local_array(f32, MR * 8)
        wv = local_array(f32, 8)
        CB = 4 * LW  # bytes per load
        CHUNKS = UB * BYTES // CB if SPAN or COALESCE else (BYTES + 2 * CB - 2) // CB
        CHUNKS2 = (UB * BYTES2 // CB if SPAN2 else (BYTES2 + 2 * CB - 2) // CB) if FMT2 != "" else 1
        words = local_array(u32, ROWS * (CHUNKS if CHUNKS > CHUNKS2 else CHUNKS2) * LW)
        ahead = local_array(u32, ROWS * (CHUNKS if CHUNKS > CHUNKS2 else CHUNKS2) * LW if PIPE else 1)
        # COALESCE: the shared stage of W's chunks in the load width's type (the others: `sums`, never used), each
        # row group's region ROWS x LPR units of odd slot counts (coalesced_unit_loop)
        STAGE = NSG * SG * ROWS * (CHUNKS + 1 - CHUNKS % 2)
        stage4 = shared_array(V4, STAGE) if COALESCE and LW == 4 else sums
        stage2 = shared_array(V2, STAGE) if COALESCE and LW == 2 else sums
        stage1 = shared_array(u32, STAGE) if COALESCE and LW == 1 else sums
        region = (subgroup_id() * (SG // LPR) + lane // LPR) * (STAGE // (NSG * SG // LPR)) if COALESCE else 0
        xoff = local_array(s32, MR)
        for m in static_range(MR):
            xoff[m] = minimum(m0 + m, M - 1) * K
        rowc = local_array(s32, ROWS)
        for r in static_range(ROWS):
            if FMT2 == "":
                rowc[r] = minimum(n0 + r, N - 1) * row_units
            elif n0 < n_first:  # rows of w (FMT) ...
                rowc[r] = minimum(n0 + r, n_first - 1) * row_units
            else:  # ... or of wb (FMT2), the rows after them
                rowc[r] = minimum(n0 - n_first + r, N - n_first - 1) * row_units
        # with a prologue, the first unit's words (a unit loaded whole) are in flight while it runs (PRELOAD)
        PRE1 = PRELOAD and PRO != "none" and SPAN and not COALESCE
        PRE2 = PRELOAD and PRO != "none" and FMT2 != "" and SPAN2
        if PRO != "none":
            if u_begin + sub < u_end:
                if FMT2 == "" or n0 < n_first:
                    if PRE1:
                        load_unit(words, w4, w2, w, rowc, u_begin + sub, BYTES, UB, LW, ROWS)
                elif PRE2:
                    load_unit(words, wb4, wb2, wb, rowc, u_begin + sub, BYTES2, UB, LW, ROWS)
            prologue(sx, sums, x, x4, pw, pd, pdw, ps, K, eps, PRO, PACT, SUM_OUT, NSG * SG, NSG, CMB, HELD)
        if XCH > 0:  # x staged (M = 1, no prologue): chunks of XCH activations as f32 in shared memory, in turn
            CHUNK_UNITS = XCH // (UB * BLOCK)
            for c0 in range(u_begin, u_end, CHUNK_UNITS):
                c1 = minimum(u_end, c0 + CHUNK_UNITS)
                e0 = c0 * UB * BLOCK
                barrier()  # the last chunk's reads are done
                for q in range(local_index(), (c1 - c0) * UB * BLOCK // 4, NSG * SG):
                    at = e0 + 4 * q
                    sx4[x_slot(q)] = vec(load(x, at, XDT), load(x, at + 1, XDT), load(x, at + 2, XDT),
                                         load(x, at + 3, XDT))
                barrier()
                xoff[0] = -e0
                # the lane takes the units it takes without XSH (u_begin + sub, + LPR, ...) also where a chunk is
                # not a multiple of LPR units: the same sums in the same order, the same bits
                rot = (sub + LPR - ((c0 - u_begin) & (LPR - 1))) & (LPR - 1)
                unit_loop(acc, words, ahead, xs, wv, part_m, xsum, sx4, xoff, w4, w2, w, rowc, c0, c1, rot, stage4,
                          stage2, stage1, region, FMT, BLOCK, BYTES, UB, LW, SPAN, MR, ROWS, LPR, XDT, load_x8_staged,
                          False, PIPE, False, COALESCE, ABLATE)
        elif DOT:  # M = 1, no prologue, one weight: x4 is x's levels (kernels/quant/dot.py)
            unit_loop(acc, words, ahead, xs, wv, part_m, xsum, x4, xoff, w4, w2, w, rowc, u_begin, u_end, sub, stage4,
                      stage2, stage1, region, FMT, BLOCK, BYTES, UB, LW, SPAN, MR, ROWS, LPR, XDT, load_x8, False, PIPE,
                      True, COALESCE, ABLATE)
        elif FMT2 == "" or n0 < n_first:
            unit_loop(acc, words, ahead, xs, wv, part_m, xsum, sx if PRO != "none" else x4, xoff, w4, w2, w, rowc,
                      u_begin, u_end, sub, stage4, stage2, stage1, region, FMT, BLOCK, BYTES, UB, LW, SPAN, MR, ROWS,
                      LPR, XDT, load_x8_shared if PRO != "none" else load_x8, PRE1, PIPE, False, COALESCE, ABLATE)
        else:
            unit_loop(acc, words, ahead, xs, wv, part_m, xsum, sx if PRO != "none" else x4, xoff, wb4, wb2, wb,
                      rowc, u_begin, u_end, sub, stage4, stage2, stage1, region, FMT2, BLOCK, BYTES2, UB, LW, SPAN2,
                      MR, ROWS, LPR, XDT, load_x8_shared if PRO != "none" else load_x8, PRE2, PIPE, False, False,
                      ABLATE)
        for s in static_range(log2_exact(LPR)):
            for i in static_range(MR * ROWS):
                acc[i] += subgroup_shuffle_xor(acc[i], 1 << s)
        if sub == 0:
            store_sums(acc, part, d, bias, n0, m0, split, M, N, ldd, col_base, MR, ROWS, PARTIAL, BIAS, ACT, ODT)

    return quant_gemv_units


@func
def load_x4(xs, slot: constexpr, x2, x4, at, XDT: constexpr):
    """The 4 activations at element `at` (a multiple of 4) of x into xs[slot:slot + 4] as f32: one 8-byte load (f16,
    bf16: x2, the V2 view) or one 16-byte load (f32: x4)."""
    if XDT == "f32":
        chunk = x4[at >> 2]
        for j in static_range(4):
            xs[slot + j] = bitcast(chunk[j], f32)
    else:
        halves_f32(xs, slot, x2[at >> 2], 2, XDT)


@functools.cache
def gemv_lanes_kernel(XDT: str, ODT: str):
    """The lane-interleaved decode GEMV (q8_0, q4_0, q5_0; M <= 8 a workgroup row): a subgroup owns ROWS rows of W;
    lane l takes the row's 8-weight groups l, l + SG, ... (decode.py's lane groups: 4 lanes a 32-weight block, so a
    subgroup's loads of a step read 8 consecutive blocks of each row), U groups a step (all of a step's loads in one
    basic block, for the compiler to issue together); each group's weights meet the matching activations of MR rows
    of x (two runs of 4, read once for the ROWS rows) in f32 fused multiply-adds, each block's scale once. The lanes'
    sums meet in subgroup adds; with SPLIT ranges of groups (grid z) the partial sums go to `part` for
    reduce_kernel. w_last: the index of the weight's last word (no load goes past it)."""
    XS, OS = STORAGE[XDT], STORAGE[ODT]

    @kernel_source(local_size=gemv_threads, name=f"quant_gemv_lanes_{XDT}_{ODT}")
    def quant_gemv_lanes(x: Buffer[XS, readonly], x2: Buffer[V2, readonly], x4: Buffer[V4, readonly],
                         w: Buffer[u32, readonly], bias: Buffer[OS, readonly], d: Buffer[OS], part: Buffer[f32],
                         M: s32, N: s32, K: s32, row_bytes: s32, split_groups: s32, w_last: s32, ldd: s32,
                         col_base: s32, FMT: constexpr, MR: constexpr, ROWS: constexpr, NSG: constexpr,
                         SG: constexpr, U: constexpr, PARTIAL: constexpr, BIAS: constexpr, ACT: constexpr):
        lane = lane_id()
        n0 = (workgroup_id(0) * NSG + subgroup_id()) * ROWS
        m0 = workgroup_id(1) * MR
        split = workgroup_id(2)
        g_begin = split * split_groups
        g_end = minimum(K >> 3, g_begin + split_groups)
        acc = local_array(f32, MR * ROWS)
        for i in static_range(MR * ROWS):
            acc[i] = 0.0
        xoff = local_array(s32, MR)
        for m in static_range(MR):
            xoff[m] = minimum(m0 + m, M - 1) * K
        rowb = local_array(s32, ROWS)
        for r in static_range(ROWS):
            rowb[r] = minimum(n0 + r, N - 1) * row_bytes
        xs = local_array(f32, U * MR * 8)
        wv = local_array(f32, 8)
        BYTES = FORMATS[FMT][1]
        for g0 in range(g_begin + lane, g_end, SG * U):
            for t in static_range(U):
                g = minimum(g0 + t * SG, g_end - 1)  # past the range: a group loaded again, its sum dropped
                e1, e2 = lane_runs(g, FMT)
                for m in static_range(MR):
                    load_x4(xs, (t * MR + m) * 8, x2, x4, xoff[m] + e1, XDT)
                    load_x4(xs, (t * MR + m) * 8 + 4, x2, x4, xoff[m] + e2, XDT)
                live = g0 + t * SG < g_end
                for r in static_range(ROWS):
                    scale = lane_group(wv, w, rowb[r] + (g >> 2) * BYTES, g & 3, w_last, FMT)
                    for m in static_range(MR):
                        total = 0.0
                        for j in static_range(8):
                            total = fma(xs[(t * MR + m) * 8 + j], wv[j], total)
                        acc[m * ROWS + r] = select(live, fma(scale, total, acc[m * ROWS + r]), acc[m * ROWS + r])
        for i in static_range(MR * ROWS):
            acc[i] = subgroup_add(acc[i])
        if lane == 0:
            store_sums(acc, part, d, bias, n0, m0, split, M, N, ldd, col_base, MR, ROWS, PARTIAL, BIAS, ACT, ODT)

    return quant_gemv_lanes


STREAM_THREADS = 256


@functools.cache
def stream_kernel():
    """A read-only streaming ceiling for the unit GEMV (benchmarks/quant_sweep.py --gemv-ablate): `chunks` 16-byte
    chunks of w read once, invocation i taking chunks i, i + T, ... (T: the grid's invocations; UNROLL loads issued
    at once), consecutive invocations consecutive chunks, the words XOR-folded and written only where the fold is a
    value random bytes almost never give (so that the reads stay, and nearly nothing is written)."""

    @kernel_source(local_size=STREAM_THREADS, name="quant_stream")
    def quant_stream(w: Buffer[u32, readonly], w4: Buffer[V4, readonly], d: Buffer[u32], chunks: s32,
                     UNROLL: constexpr):
        first = global_id()
        total = num_workgroups() * STREAM_THREADS
        folded = u32(0)
        for base in range(first, chunks, total * UNROLL):
            for j in static_range(UNROLL):
                at = base + j * total
                if at < chunks:
                    v = w4[at]
                    folded = folded ^ v[0] ^ v[1] ^ v[2] ^ v[3]
        if folded == 0x9E3779B9:
            d[first] = folded

    return quant_stream


SCALE_THREADS = 256
SCALE_TOP = 14  # a row's largest |x| is scaled into [2^14, 2^15): f16 keeps 11 bits down to 2^-28 of it
SCALE_LIMIT = 126  # |exponent| at most: 2^e and 2^-e both normal f32


@functools.cache
def scaled_f16_kernel(XDT: str):
    """x's rows (f32, or bf16 as u16; K a multiple of 8) as f16 times a power of two per row, into h, and that
    power's exponent e into xe[row], for the prefill GEMM (which multiplies the f16 rows and scales each result row
    by 2^-e in its epilogue). e puts the row's largest |x| in [2^SCALE_TOP, 2^(SCALE_TOP + 1)) (clamped to
    +-SCALE_LIMIT): every value keeps f16's 11 significant bits down to 2^-28 of the row's largest, however small or
    large the row (where plain f16 keeps them only from 2^-14 to 65504). The largest is taken over the row's finite
    values, compared as bits (an infinity stays one, a NaN stays NaN); a row of zeros gets e = 0. One workgroup per
    row, a grid-stride loop over rows."""
    XS = STORAGE[XDT]

    @kernel_source(local_size=SCALE_THREADS, name=f"quant_scaled_f16_{XDT}")
    def quant_scaled_f16(x: Buffer[XS, readonly], x4: Buffer[V4, readonly], h: Buffer[f16], h4: Buffer[V4],
                         xe: Buffer[s32], M: s32, K: s32, SG: constexpr):
        first = local_index()
        chunks = K >> 3
        xs = local_array(f32, 8)
        tops = shared_array(u32, SCALE_THREADS // SG)
        for row in range(workgroup_id(0), M, num_workgroups()):
            top = u32(0)
            for c in range(first, chunks, SCALE_THREADS):
                load_x8(xs, 0, x4, (row * chunks + c) << 3, XDT)
                for j in static_range(8):
                    bits = bitcast(xs[j], u32) & 0x7FFFFFFF
                    top = maximum(top, select(bits < 0x7F800000, bits, u32(0)))  # finite values only
            top = subgroup_max(top)
            barrier()
            if lane_id() == 0:
                tops[subgroup_id()] = top
            barrier()
            top = tops[0]
            for j in range(1, SCALE_THREADS // SG):
                top = maximum(top, tops[j])
            e = s32(0)
            if top != 0:
                e = clamp(s32(127 + SCALE_TOP) - s32(top >> 23), -SCALE_LIMIT, SCALE_LIMIT)
            scale = bitcast(u32(127 + e) << 23, f32)
            for c in range(first, chunks, SCALE_THREADS):
                load_x8(xs, 0, x4, (row * chunks + c) << 3, XDT)
                for j in static_range(8):
                    xs[j] = xs[j] * scale
                h4[row * chunks + c] = pack8(xs)
            if first == 0:
                xe[row] = e

    return quant_scaled_f16


@functools.cache
def reduce_kernel(ODT: str):
    """The SPLIT K ranges' partial sums (part: SPLIT x M x N f32) added up, through the epilogue into d."""
    OS = STORAGE[ODT]

    @kernel_source(local_size=REDUCE_THREADS, name=f"quant_reduce_{ODT}")
    def quant_reduce(part: Buffer[f32, readonly], bias: Buffer[OS, readonly], d: Buffer[OS], M: s32, N: s32,
                     splits: s32, ldd: s32, col_base: s32, BIAS: constexpr, ACT: constexpr):
        i = global_id()
        if i < M * N:
            total = part[i]
            for s in range(1, splits):
                total += part[s * M * N + i]
            row = i // N
            col = col_base + i - row * N
            d[row * ldd + col] = finish_value(total, bias, col, BIAS, ACT, ODT)

    return quant_reduce


@functools.cache
def rows_kernel(ODT: str):
    """out[t, :] = W[ids[t], :] dequantized, times `scale` (f32), into storage ODT (zeros for an id outside
    0 .. vocab - 1). The rows row_base .. + chunk_rows - 1 are in w, the second_rows after them in wb (a table
    over one binding in two windows, one launch)."""
    OS = STORAGE[ODT]

    @kernel_source(local_size=ROWS_THREADS, name=f"quant_rows_{ODT}")
    def quant_rows(ids: Buffer[s32, readonly], w: Buffer[u32, readonly], wb: Buffer[u32, readonly], out: Buffer[OS],
                   n_ids: s32, vocab: s32, K: s32, row_bytes: s32, row_base: s32, chunk_rows: s32, second_rows: s32,
                   scale: f32, FMT: constexpr):
        groups = K // 8
        vals = local_array(f32, 8)
        for g in range(global_id(), n_ids * groups, num_workgroups() * ROWS_THREADS):
            t = g // groups
            e = (g - t * groups) * 8
            row = ids[t] - row_base
            inside = row >= 0 and row < chunk_rows + second_rows
            if inside or (row_base == 0 and (ids[t] < 0 or ids[t] >= vocab)):
                if inside:
                    if row < chunk_rows:
                        decode8(vals, w, row * row_bytes, e, FMT)
                    else:
                        decode8(vals, wb, (row - chunk_rows) * row_bytes, e, FMT)
                else:
                    for j in static_range(8):
                        vals[j] = 0.0
                for j in static_range(8):
                    out[t * K + e + j] = narrow(vals[j] * scale, ODT)

    return quant_rows


@func
def pack8(vals):
    """vals[0:8] (f32) rounded to f16, packed into one 16-byte chunk."""
    return vec(pack2(vals[0], vals[1]), pack2(vals[2], vals[3]), pack2(vals[4], vals[5]), pack2(vals[6], vals[7]))


@func
def pack2(lo, hi):
    """Two f32 rounded to f16, as one u32 (lo in the low half)."""
    return u32(bitcast(f16(lo), u16)) | (u32(bitcast(f16(hi), u16)) << 16)


# store_block32's f16 integers: 1024 + u has the bits 0x6400 | u (u < 1024), so (0x6400 | u) - (1024 + offset) is the
# weight's integer q, exactly: the offset of q4_0 (8), q5_0 (16) and q8_0 (128: its signed bytes read as u ^ 0x80)
F16_INT_BIAS = {"q4_0": 1032.0, "q5_0": 1040.0, "q8_0": 1152.0}


@func
def store_block32(sb, at, words, p0: constexpr, FMT: constexpr):
    """The 32 weights of the block at byte p0 of words[] (gguf's products d * q in f32, rounded to f16) into
    sb[at : at + 4]. The product of the f16 d and a small integer is exact in f32, so it is computed in f16 pairs
    instead (one rounding, the same bits): the integers made f16 by their bits (F16_INT_BIAS), two a word, then
    (v - bias) * (d, d) in 2 x f16 arithmetic, where the f32 products and the bit-exact rounding of each to f16 cost
    about ten times the instructions."""
    dbits = word_of(words, p0) & 0xFFFF
    d2 = bitcast(dbits | (dbits << 16), H2)
    bias = f16(F16_INT_BIAS[FMT])
    bias2 = vec(bias, bias)
    qh = u32(0)
    if FMT == "q5_0":
        qh = word_of(words, p0 + 2)
    for g in static_range(4):
        outs = local_array(u32, 4)
        for h in static_range(2):  # elements 8g + 4h .. + 3: four bytes of u, then two words of (1024 + u) pairs
            if FMT == "q8_0":
                m = word_of(words, p0 + 2 + 8 * g + 4 * h) ^ 0x80808080
            else:
                QS = 2 if FMT == "q4_0" else 6
                m = (word_of(words, p0 + QS + 8 * (g % 2) + 4 * h) >> (4 * (g // 2))) & 0x0F0F0F0F
                if FMT == "q5_0":  # bit 4 of element e is bit e of qh: four of them spread to bit 4 of each byte
                    t = (qh >> (8 * g + 4 * h)) & 0xF
                    m = m | (((t * 0x00204081) & 0x01010101) << 4)
            pairs = int_pairs(m)
            for c in static_range(2):
                v = bitcast(pairs[c], H2) - bias2
                outs[2 * h + c] = bitcast(v * d2, u32)
        sb[at + g] = vec(outs[0], outs[1], outs[2], outs[3])


@dataclass(frozen=True)
class QuantBlocks(Blocks):
    """The GEMM's K-step geometry (A: BM x BK of x, B: BN x BK rows of W, both f16 in shared memory in 16-byte chunks
    of 8: WIDE is 8, rows PAD chunks longer) with the weights' block format FMT; x is f16 (f32 and bf16 rows are
    scaled_f16_kernel's first).

    A K step's loads go into registers (V4s, `fetch_quant`) and are converted and decoded into shared memory later
    (`put_quant`): register 0 holds the step's k0 and the W items' alignment bits, then X_ITEMS items of x (8
    f16 activations: one register each), then W_ITEMS items of W (32 weights of one row: W_V4 registers each, the raw
    block words they need)."""

    FMT: str = "q8_0"

    @property
    def X_TOTAL(self) -> int:
        """x's items per step: chunks of 8 activations."""
        return self.BM * self.BK // 8

    @property
    def X_ITEMS(self) -> int:
        return -(-self.X_TOTAL // self.THREADS)

    @property
    def W_TOTAL(self) -> int:
        """W's items per step: runs of 32 weights of one row."""
        return self.BN * self.BK // 32

    @property
    def W_ITEMS(self) -> int:
        return -(-self.W_TOTAL // self.THREADS)

    @property
    def W_V4(self) -> int:
        """Registers per W item: the words of a 32-block (+ 2 bytes: its alignment), q4_k's header and 32 bytes of
        nibbles, q6_k's 2 x 9 words of low and high bits, a scale word and d's word."""
        return {"q8_0": 3, "q4_0": 2, "q5_0": 2, "q4_k": 3, "q6_k": 5}[self.FMT]

    @property
    def W_SLOT(self) -> int:
        return 1 + self.X_ITEMS

    @property
    def REGISTERS(self) -> int:
        return self.W_SLOT + self.W_ITEMS * self.W_V4


BLOCK_BYTES = {"q8_0": 34, "q4_0": 18, "q5_0": 22}


@func
def fetch_quant(regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, blocks: constexpr):
    """A K step's loads into registers (the GEMM's `fetch` parameters; blocks.REGISTERS V4s): x's items in 16-byte
    loads (a: x's V4 view), W's items as the raw words of their blocks (b: W's words, or its V4 view for q4_k, whose
    blocks are 16-byte aligned); zeros outside M, N and K where guarded. Nothing loaded is used here: the
    conversions and decoding wait for put_quant."""
    first = local_index()
    BK, THREADS, FMT = blocks.BK, blocks.THREADS, blocks.FMT
    WV, WS = blocks.W_V4, blocks.W_SLOT
    GROUPS = BK // 8
    PER_ROW = BK // 32
    zero = vec(u32(0), u32(0), u32(0), u32(0))
    for t in static_range(blocks.X_ITEMS):
        i = first + t * THREADS
        r = i // GROUPS
        g = i - r * GROUPS
        regs[1 + t] = zero
        if i < blocks.X_TOTAL and (not guard or (row0 + r < M and k0 + g * 8 < K)):
            regs[1 + t] = a[((row0 + r) * lda + k0 + g * 8) // 8]
    words = local_array(u32, 4 * WV)
    flags = u32(0)
    for t in static_range(blocks.W_ITEMS):
        i = first + t * THREADS
        r = i // PER_ROW
        e = k0 + (i - r * PER_ROW) * 32
        for j in static_range(4 * WV):
            words[j] = u32(0)
        if FMT == "q4_k":
            for c in static_range(WV):
                regs[WS + t * WV + c] = zero
        if i < blocks.W_TOTAL and (not guard or (col0 + r < N and e < K)):
            if FMT == "q4_k":  # b: the V4 view; a 144-byte block is 9 whole V4s
                v = ((col0 + r) * ldb + (e >> 8) * 144) >> 4
                q = v + 1 + ((e >> 6) & 3) * 2
                regs[WS + t * WV] = b[v]
                regs[WS + t * WV + 1] = b[q]
                regs[WS + t * WV + 2] = b[q + 1]
            elif FMT == "q6_k":
                off = (col0 + r) * ldb + (e >> 8) * 210
                i6 = e & 255
                h = i6 >> 7
                g6 = (i6 >> 5) & 3
                ql = (off + h * 64 + (g6 & 1) * 32) >> 2
                qh = (off + 128 + h * 32) >> 2
                for j in static_range(9):
                    words[j] = b[ql + j]
                    words[9 + j] = b[qh + j]
                words[18] = b[(off + 192 + 2 * (i6 >> 5)) >> 2]
                words[19] = b[(off + 208) >> 2]
                flags = flags | (u32(off & 2) << t)
            else:
                BYTES = BLOCK_BYTES[FMT]
                off = (col0 + r) * ldb + (e >> 5) * BYTES
                for j in static_range((BYTES + 5) // 4):
                    words[j] = b[(off >> 2) + j]
                flags = flags | (u32(off & 2) << t)
        if FMT != "q4_k":
            for c in static_range(WV):
                regs[WS + t * WV + c] = vec(words[4 * c], words[4 * c + 1], words[4 * c + 2], words[4 * c + 3])
    regs[0] = vec(u32(k0), flags, u32(0), u32(0))


@func
def put_quant(sa, sb, regs, a_base, b_base, blocks: constexpr):
    """fetch_quant's registers into the shared blocks at a_base and b_base (elements): x's items as loaded (f16), W's
    decoded (gguf's f32 products, rounded to f16), 16-byte chunks of 8 f16, rows PAD chunks longer."""
    first = local_index()
    BK, THREADS, PAD, FMT = blocks.BK, blocks.THREADS, blocks.PAD, blocks.FMT
    WV, WS = blocks.W_V4, blocks.W_SLOT
    GROUPS = BK // 8
    PER_ROW = BK // 32
    a0 = a_base // 8
    b0 = b_base // 8
    for t in static_range(blocks.X_ITEMS):
        i = first + t * THREADS
        if i < blocks.X_TOTAL:
            sa[a0 + i + i // GROUPS * PAD] = regs[1 + t]
    step = regs[0]
    k0 = s32(step[0])
    flags = step[1]
    words = local_array(u32, 4 * WV)
    for t in static_range(blocks.W_ITEMS):
        i = first + t * THREADS
        if i < blocks.W_TOTAL:
            r = i // PER_ROW
            e = k0 + (i - r * PER_ROW) * 32
            at = b0 + i * 4 + r * PAD
            for c in static_range(WV):
                chunk = regs[WS + t * WV + c]
                for j in static_range(4):
                    words[4 * c + j] = chunk[j]
            if FMT == "q4_k":
                store_k4(sb, at, words, (e >> 5) & 7)
            elif FMT == "q6_k":
                if (flags >> t) & 2 == 0:
                    store_k6(sb, at, words, 0, e & 255)
                else:
                    store_k6(sb, at, words, 2, e & 255)
            elif (flags >> t) & 2 == 0:
                store_block32(sb, at, words, 0, FMT)
            else:
                store_block32(sb, at, words, 2, FMT)


@func
def int_pairs(m):
    """The four bytes of m (each < 1024) as two words of f16 pairs 1024 + byte (bytes 0, 1, then 2, 3; F16_INT_BIAS)."""
    return ((m & 0xFF) | ((m << 8) & 0xFF0000)) | 0x64006400, (((m >> 16) & 0xFF) | ((m >> 8) & 0xFF0000)) | 0x64006400


@func
def store_k4(sb, at, words, s):
    """32 weights of q4_k's sub-block s (run-time, 0..7) into sb[at : at + 4]: words[0:4] the block's header (d, dmin,
    12 bytes of 6-bit scales and minimums), words[4:12] its 32 bytes of nibbles (low nibbles for even s). In 2 x f16
    arithmetic: d * (sc q) (sc q exact) less dmin * m taken as two f16 (its rounding, and the exact rest), the first
    in one fma: a rounding shared by the sub-block's weights (of dmin * m, or of d * (sc q) for one q) adds up over
    them in a sum of non-negative x (gguf's f32 values rounded to f16 once may differ from these in the last place;
    docs/quant.md)."""
    t = u32(s & 3) << 3
    lo_s = words[1] >> t
    lo_m = words[2] >> t
    sc = lo_s & 63
    mn = lo_m & 63
    if s >= 4:
        upper = words[3] >> t
        sc = (upper & 0xF) | ((lo_s >> 6 & 3) << 4)
        mn = (upper >> 4 & 0xF) | ((lo_m >> 6 & 3) << 4)
    k1024 = f16(1024.0)
    base = vec(k1024, k1024)
    dbits_min = words[0] >> 16
    dmin = bitcast(dbits_min, H2)[0]
    ints = bitcast((sc | (mn << 16)) | 0x64006400, H2) - base  # (sc, m), exact
    sc_low = ints * vec(f16(1.0), dmin)  # (sc, dmin m rounded once)
    sc2 = vec(sc_low[0], sc_low[0])
    low2 = vec(sc_low[1], sc_low[1])
    # dmin m - its rounding, exactly: dmin = hi (5 significant bits) + mid (3) + lo (3), each product with m (6 bits)
    # exact in f16, and each sum below exact (Sterbenz, then results of at most 11 bits); 0 for an infinite product
    m16 = ints[1]
    hi = bitcast(dbits_min & 0xFFC0, H2)[0]
    top8 = bitcast(dbits_min & 0xFFF8, H2)[0]
    rest = ((hi * m16 - sc_low[1]) + (top8 - hi) * m16) + (dmin - top8) * m16
    rest = select(rest - rest == f16(0.0), rest, f16(0.0))
    rest2 = vec(rest, rest)
    dbits = words[0] & 0xFFFF
    d2 = bitcast(dbits | (dbits << 16), H2)
    shift = u32(s & 1) << 2
    outs = local_array(u32, 4)
    for g in static_range(4):
        for h in static_range(2):
            pairs = int_pairs((words[4 + 2 * g + h] >> shift) & 0x0F0F0F0F)
            for c in static_range(2):  # sc q <= 945: exact in f16; d (sc q) - (dmin m's rounding) rounded once where
                # the device fuses fma (NVIDIA, the reference executor), else twice; then less the rest of dmin m
                outs[2 * h + c] = bitcast(fma((bitcast(pairs[c], H2) - base) * sc2, d2, -low2) - rest2, u32)
        sb[at + g] = vec(outs[0], outs[1], outs[2], outs[3])


@func
def store_k6(sb, at, words, p0: constexpr, i):
    """32 weights i .. i + 31 (i a multiple of 32, run-time) of a q6_k block into sb[at : at + 4]: words[0:9] hold its
    32 bytes of low bits from byte p0, words[9:18] the high bits from p0, words[18] the two scales (at byte p0 +
    2 * (i >> 5) & 2 of it), words[19] d (at byte p0). In 2 x f16 arithmetic: d * sc rounded once, then times q - 32
    (gguf's f32 values rounded to f16 once may differ from these in the last place; docs/quant.md)."""
    g = (i >> 5) & 3
    low_shift = u32(g >> 1) << 2
    high_shift = u32(g) << 1
    sshift = u32((p0 + 2 * (i >> 5)) & 2) << 3
    dbits = (words[19] >> (8 * p0)) & 0xFFFF
    d2 = bitcast(dbits | (dbits << 16), H2)
    k1152 = f16(1152.0)
    k1056 = f16(1056.0)
    outs = local_array(u32, 4)
    for half in static_range(2):
        scb = ((words[18] >> (sshift + 8 * half)) & 0xFF) ^ 0x80  # the signed scale as 128 + sc
        scale2 = (bitcast((scb | (scb << 16)) | 0x64006400, H2) - vec(k1152, k1152)) * d2
        for c in static_range(2):
            for h in static_range(2):
                lw = word_of(words, p0 + 16 * half + 8 * c + 4 * h)
                hw = word_of(words, 36 + p0 + 16 * half + 8 * c + 4 * h)
                pairs = int_pairs(((lw >> low_shift) & 0x0F0F0F0F) | (((hw >> high_shift) & 0x03030303) << 4))
                for cc in static_range(2):
                    outs[2 * h + cc] = bitcast((bitcast(pairs[cc], H2) - vec(k1056, k1056)) * scale2, u32)
            sb[at + 2 * half + c] = vec(outs[0], outs[1], outs[2], outs[3])


@func
def stage_quant(sa, sb, a, b, a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, blocks: constexpr):
    """A K step's blocks into shared memory at once (the GEMM's `stage` parameters): fetch_quant, then put_quant."""
    regs = local_array(V4, blocks.REGISTERS)
    fetch_quant(regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, blocks)
    put_quant(sa, sb, regs, a_base, b_base, blocks)


QUANT_STAGING = Staging(fetch_quant, put_quant, stage_quant)


def gemm_shared_bytes(TM: int, TN: int, TK: int, WM: int, WN: int, SM: int, SN: int, KT: int, PAD: int,
                      STAGES: int) -> int:
    """The prefill GEMM's shared memory for a block: STAGES buffers of x's and W's f16 blocks, and the epilogue's
    f32 tile per subgroup."""
    blocks = QuantBlocks(False, True, WM * SM * TM, WN * SN * TN, KT * TK, WM * WN, f16, WIDE=8, PAD=PAD)
    return 16 * (blocks.a_array(STAGES) + blocks.b_array(STAGES)) + 4 * WM * WN * TM * TN


def gemm_threads(constexprs: dict) -> int:
    return constexprs["WM"] * constexprs["WN"] * constexprs["SG"]


@functools.cache
def gemm_kernel(ODT: str):
    """The prefill GEMM for f16 activations (f32 and bf16 rows are scaled_f16_kernel's first) and output ODT: the
    module docstring. PREFETCH: the next K step's loads are issued into registers before the multiplications and
    decoded into shared memory after them. SPLIT: the workgroups of grid z take K ranges of k_split each and write
    f32 partial sums into `part` (reduce_kernel adds them up and applies the epilogue). SCALED: x's rows are
    scaled_f16_kernel's (f16 times 2^xe[row]); each result row is multiplied by 2^-xe[row] before the epilogue (or
    the partial sums). ABLATE (measurement only, wrong results): KLoop's, for benchmarks/quant_sweep.py --ablate."""
    OS = STORAGE[ODT]

    @kernel_source(local_size=gemm_threads, name=f"quant_gemm_{ODT}")
    def quant_gemm(x: Buffer[f16, readonly], x4: Buffer[V4, readonly], w: Buffer[u32, readonly],
                   w4: Buffer[V4, readonly], bias: Buffer[OS, readonly], d: Buffer[OS], part: Buffer[f32],
                   xe: Buffer[s32, readonly], M: s32, N: s32, K: s32, row_bytes: s32, ldd: s32, col_base: s32,
                   k_split: s32, FMT: constexpr,
                   TM: constexpr, TN: constexpr, TK: constexpr, WM: constexpr, WN: constexpr, SM: constexpr,
                   SN: constexpr, KT: constexpr, SG: constexpr, BIAS: constexpr, ACT: constexpr, STAGES: constexpr = 2,
                   PAD: constexpr = 0, PREFETCH: constexpr = False, PARTIAL: constexpr = False,
                   SCALED: constexpr = False, ABLATE: constexpr = ""):
        blocks = QuantBlocks(False, True, WM * SM * TM, WN * SN * TN, KT * TK, WM * WN * SG, f16, WIDE=8, PAD=PAD,
                             FMT=FMT)
        BM, BN = blocks.BM, blocks.BN
        TA = coop.Matrix[f16, TM, TK, coop.A]
        TB = coop.Matrix[f16, TK, TN, coop.B]
        TACC = coop.Matrix[f32, TM, TN, coop.Accumulator]
        sa = shared_array(V4, blocks.a_array(STAGES))
        sb = shared_array(V4, blocks.b_array(STAGES))
        sc = shared_array(f32, WM * WN * TM * TN)
        sg = subgroup_id()
        wm = sg // WN
        wn = sg % WN
        row0 = workgroup_id(1) * BM
        col0 = workgroup_id(0) * BN
        split = workgroup_id(2)
        k_begin = 0
        k_end = K
        if PARTIAL:
            k_begin = split * k_split
            k_end = minimum(K, k_begin + k_split)
        acc = local_array(TACC, SM * SN)
        for t in static_range(SM * SN):
            acc[t] = coop.fill(TACC, 0.0)
        full = row0 + BM <= M and col0 + BN <= N
        wsrc = w  # q4_k's blocks are 16-byte aligned: its V4 view
        if FMT == "q4_k":
            wsrc = w4
        staged_k_loop(acc, sa, sb, x4, wsrc, row0, col0, k_begin, k_end, M, N, K, row_bytes, wm, wn, full, blocks,
                      KLoop(TA, TB, SM, SN, KT, STAGES, PREFETCH, True, False, ABLATE), QUANT_STAGING)
        region = sg * TM * TN
        lane = lane_id()
        for i in static_range(SM):
            for j in static_range(SN):
                coop.store(acc[i * SN + j], sc, region, TN, coop.RowMajor)
                barrier()
                r0 = row0 + (wm * SM + i) * TM
                c0 = col0 + (wn * SN + j) * TN
                for e in range(lane, TM * TN, SG):
                    r = e // TN
                    c = e - r * TN
                    if r0 + r < M and c0 + c < N:
                        v = sc[region + e]
                        if SCALED:  # x's row was scaled by 2^xe (scaled_f16_kernel): exact, |xe| <= 126
                            v = v * bitcast(u32(127 - xe[r0 + r]) << 23, f32)
                        if PARTIAL:
                            part[(split * M + r0 + r) * N + c0 + c] = v
                        else:
                            col = col_base + c0 + c
                            d[(r0 + r) * ldd + col] = finish_value(v, bias, col, BIAS, ACT, ODT)
                barrier()

    return quant_gemm
