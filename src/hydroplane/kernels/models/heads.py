"""`heads_kernel(NORM, NEOX)`: the q, k and v heads of one projection's output made ready for attention in one
kernel. x is (tokens, ld) f32 with q's heads at columns 0 .., k's at k_col .., v's at v_col ..; each workgroup takes
one head of one token:

- q: the per-head RMS norm with its weight wq (NORM: Gemma's q/k norms), the rotary embedding at the token's
  position, rounded to f16 into dq (q heads, tokens, D) at row t;
- k: the same with wk, into the cache dk (kv heads, rows, D) at row positions[0] + t;
- v: rounded to f16 into the cache dv (kv heads, rows, DV) at row positions[0] + t.

A cache row outside 0 .. cache_rows - 1 is not written (a captured decode step replayed past the context, which
Model.decode refuses on the host, writes nothing past the cache).

    y = x[t, h, :] * rsqrt(mean(x[t, h, :]²) + eps) * w      (NORM; else y = x[t, h, :])
    pairs (i0, i1) of the first R elements turned by positions[t] * freq[i]: NEOX (i, i + R/2), else (2i, 2i + 1)

The arithmetic is that of the unfused ops (kernels/nn/norm.py, kernels/nn/rotary.py, kernels/models/relayout.py),
in f32, rounded once into f16: the sum of squares meets in a subgroup add and then over the subgroups
(`group_sum`), the angle is f32(position) * freq[i] rounded once. Grid x: tokens * (q heads + 2 kv heads), token
major.

`attention_heads_kernel(NORM, NEOX)` (below) folds this kernel into a decode step's attention. This module imports
the language and the kernels it builds on (attention's body, the group sum, the f16 packing).
"""

import functools

from hydroplane.kernels.attention.source import V4, QSource, attention_body, attention_threads
from hydroplane.kernels.nn.common import group_sum
from hydroplane.kernels.quant.source import pack8
from hydroplane.lang import (
    Buffer,
    constexpr,
    cos,
    f16,
    f32,
    func,
    kernel_source,
    local_array,
    local_index,
    readonly,
    rsqrt,
    s32,
    shared_array,
    sin,
    static_range,
    u32,
    vec,
    workgroup_id,
)


def heads_threads(constexprs: dict) -> int:
    return constexprs["THREADS"]


@func
def turned_pair(x, base, w, i0, i1, angle, scale, NORM: constexpr):
    """Elements i0 and i1 of the head at x[base:] (normed: NORM, times scale and w) turned by `angle`."""
    x0 = x[base + i0]
    x1 = x[base + i1]
    if NORM:
        x0 = x0 * scale * w[i0]
        x1 = x1 * scale * w[i1]
    c = cos(angle)
    s = sin(angle)
    return x0 * c - x1 * s, x0 * s + x1 * c


@func
def rotate_head(x, base, w, dst, out, angle_of, freq, d, r, scale, NORM: constexpr, NEOX: constexpr,
                THREADS: constexpr):
    """One head's d values at x[base:]: normed (NORM: times scale and w), its first r turned, into dst[out:] as f16."""
    half = r // 2
    for e in range(local_index(), half + (d - r), THREADS):
        if e < half:
            i0 = e
            i1 = e + half
            if not NEOX:
                i0 = 2 * e
                i1 = 2 * e + 1
            y0, y1 = turned_pair(x, base, w, i0, i1, angle_of * freq[e], scale, NORM)
            dst[out + i0] = f16(y0)
            dst[out + i1] = f16(y1)
        else:
            k = r + (e - half)
            y = x[base + k]
            if NORM:
                y = y * scale * w[k]
            dst[out + k] = f16(y)


@functools.cache
def heads_kernel(NORM: bool, NEOX: bool):
    """The fused head preparation (the module docstring)."""

    @kernel_source(local_size=heads_threads,
                   name=f"heads{'_norm' if NORM else ''}_{'neox' if NEOX else 'interleaved'}")
    def heads(x: Buffer[f32, readonly], wq: Buffer[f32, readonly], wk: Buffer[f32, readonly],
              positions: Buffer[s32, readonly], freq: Buffer[f32, readonly], dq: Buffer[f16], dk: Buffer[f16],
              dv: Buffer[f16], heads_q: s32, heads_kv: s32, ld: s32, k_col: s32, v_col: s32, d: s32, d_v: s32,
              r: s32, q_rows: s32, cache_rows: s32, eps: f32, THREADS: constexpr, SG: constexpr):
        NSG = THREADS // SG
        partial = shared_array(f32, NSG)
        per_token = heads_q + 2 * heads_kv
        t = workgroup_id(0) // per_token
        h = workgroup_id(0) - t * per_token
        lid = local_index()
        angle_of = f32(positions[t])
        cache_row = positions[0] + t
        if h < heads_q + heads_kv:  # q or k: norm and rotary
            is_q = h < heads_q
            base = t * ld + h * d
            if not is_q:
                base = t * ld + k_col + (h - heads_q) * d
            scale = f32(1.0)
            if NORM:
                acc = f32(0.0)
                for i in range(lid, d, THREADS):
                    v = x[base + i]
                    acc += v * v
                total = group_sum(acc, partial, NSG)
                scale = rsqrt(total / f32(d) + eps)
            if is_q:
                rotate_head(x, base, wq, dq, (h * q_rows + t) * d, angle_of, freq, d, r, scale, NORM, NEOX,
                            THREADS)
            elif 0 <= cache_row and cache_row < cache_rows:
                rotate_head(x, base, wk, dk, ((h - heads_q) * cache_rows + cache_row) * d, angle_of, freq, d, r,
                            scale, NORM, NEOX, THREADS)
        elif 0 <= cache_row and cache_row < cache_rows:  # v: rounded into the cache
            hv = h - heads_q - heads_kv
            base = t * ld + v_col + hv * d_v
            out = (hv * cache_rows + cache_row) * d_v
            for e in range(lid, d_v, THREADS):
                dv[out + e] = f16(x[base + e])

    return heads


# The heads folded into decode attention ---------------------------------------------------------------------------
# A decode step's heads kernel and its attention main pass as one dispatch: the attention kernel's body
# (kernels/attention/source.py, attention_body) with a QSource whose `fill` makes the Q block from the projection's
# f32 row (q's per-head norm and rotary embedding, rounded to f16, straight into the workgroup's shared Q block) and
# whose `enter` writes the step's new key and value row into the cache: in the workgroup whose split holds the
# position (every workgroup without splits), before that workgroup stages its keys (the Q block's barriers order the
# two). The other workgroups do not read that row. One token (T = 1): q heads at columns 0 .., k's at k_col .., v's
# at v_col .. of row 0; the position is positions[0]. The values are those of `heads` above: the same expressions.


@func
def head_value(x, base, w, angle_of, freq, i, scale, rot, NORM: constexpr, NEOX: constexpr):
    """Element i of the head at x[base:] as `rotate_head` writes it (f32, before the rounding)."""
    y = f32(0.0)
    if i < rot:
        half = rot // 2
        e = i
        first = True
        i0 = i
        i1 = i + half
        if NEOX:
            if i >= half:
                e = i - half
                first = False
                i0 = e
                i1 = i
        else:
            e = i // 2
            first = i - 2 * e == 0
            i0 = 2 * e
            i1 = 2 * e + 1
        y0, y1 = turned_pair(x, base, w, i0, i1, angle_of * freq[e], scale, NORM)
        y = y1
        if first:
            y = y0
    else:
        y = x[base + i]
        if NORM:
            y = y * scale * w[i]
    return y


@func
def head_chunk(x, base, w, angle_of, freq, c, scale, rot, NORM: constexpr, NEOX: constexpr):
    """Elements 8c .. 8c + 7 of the head at x[base:], made ready (head_value), as one 16-byte chunk of f16."""
    vals = local_array(f32, 8)
    for j in static_range(8):
        vals[j] = head_value(x, base, w, angle_of, freq, 8 * c + j, scale, rot, NORM, NEOX)
    return pack8(vals)


@func
def head_scale(x, base, d, eps, scratch, THREADS: constexpr, NSG: constexpr):
    """rsqrt(mean(x[base : base + d]²) + eps), in every invocation (the whole workgroup takes part)."""
    acc = f32(0.0)
    for i in range(local_index(), d, THREADS):
        v = x[base + i]
        acc += v * v
    return rsqrt(group_sum(acc, scratch, NSG) / f32(d) + eps)


@func
def heads_enter(extra, k4, v4, kv_head, kv_base, split_lo, S_KV, SPLIT_LEN, SPLIT: constexpr, D: constexpr,
                THREADS: constexpr, NSG: constexpr, QSRC: constexpr):
    """The step's key (normed, turned) and value rows into the cache at the position's row, in the workgroup whose
    split holds it (QSource.enter)."""
    x, wq, wk, positions, freq, scratch, k_col, v_col, rot, eps = extra
    CHUNKS = D // 8
    pos = positions[0]
    mine = 0 <= pos and pos < S_KV
    if SPLIT:
        mine = mine and split_lo <= pos and pos < split_lo + SPLIT_LEN
    if mine:  # the same in the whole workgroup
        base = k_col + kv_head * D
        scale = f32(1.0)
        if QSRC.NORM:
            scale = head_scale(x, base, D, eps, scratch, THREADS, NSG)
        angle_of = f32(pos)
        vbase = v_col + kv_head * D
        vals = local_array(f32, 8)
        for c in range(local_index(), CHUNKS, THREADS):
            k4[kv_base + pos * CHUNKS + c] = head_chunk(x, base, wk, angle_of, freq, c, scale, rot, QSRC.NORM,
                                                        QSRC.NEOX)
            for j in static_range(8):
                vals[j] = x[vbase + 8 * c + j]
            v4[kv_base + pos * CHUNKS + c] = pack8(vals)


@func
def heads_fill(smem, extra, q_row0, q0, S_Q, BM: constexpr, CHUNKS: constexpr, THREADS: constexpr, LDS: constexpr,
               NSG: constexpr, QSRC: constexpr):
    """The Q block from the q heads q_row0 + q0 + r (normed, turned, f16), rows at or past S_Q zero
    (QSource.fill)."""
    x, wq, wk, positions, freq, scratch, k_col, v_col, rot, eps = extra
    D = CHUNKS * 8
    scales = local_array(f32, BM)
    for r in static_range(BM):
        scales[r] = f32(1.0)
        if QSRC.NORM:
            if q0 + r < S_Q:  # the same in the whole workgroup
                scales[r] = head_scale(x, (q_row0 + q0 + r) * D, D, eps, scratch, THREADS, NSG)
    angle_of = f32(positions[0])
    for i in range(local_index(), BM * CHUNKS, THREADS):
        r = i // CHUNKS
        c = i - r * CHUNKS
        value = vec(u32(0), u32(0), u32(0), u32(0))
        if q0 + r < S_Q:
            value = head_chunk(x, (q_row0 + q0 + r) * D, wq, angle_of, freq, c, scales[r], rot, QSRC.NORM,
                               QSRC.NEOX)
        smem[r * LDS + c] = value


@functools.cache
def attention_heads_kernel(NORM: bool, NEOX: bool):
    """The decode step's heads and attention main pass in one kernel (the comment above): the attention kernel's
    arguments with q4 replaced by the projection's row `qkv` and the heads' own (`heads`), k4 and v4 writable."""
    qsrc = QSource(heads_enter, heads_fill, NORM, NEOX)

    @kernel_source(local_size=attention_threads,
                   name=f"attention_heads{'_norm' if NORM else ''}_{'neox' if NEOX else 'interleaved'}")
    def attention_heads(qkv: Buffer[f32, readonly], wq: Buffer[f32, readonly], wk: Buffer[f32, readonly],
                        positions: Buffer[s32, readonly], freq: Buffer[f32, readonly], k4: Buffer[V4], v4: Buffer[V4],
                        out4: Buffer[V4], o_part4: Buffer[V4], ml_part: Buffer[f32], kv_valid: Buffer[s32, readonly],
                        S_Q: s32, S_KV: s32, HEADS: s32, KV_HEADS: s32, SPLITS: s32, SPLIT_LEN: s32, scale: f32,
                        WINDOW: s32, Q_LEN: s32, k_col: s32, v_col: s32, rot: s32, eps: f32, IN: constexpr,
                        D: constexpr, QT: constexpr, SN: constexpr, QK: constexpr, WM: constexpr, SMQ: constexpr,
                        NS: constexpr, SG: constexpr, PAD: constexpr = 1, CAUSAL: constexpr = False,
                        WINDOWED: constexpr = False, GROUPED: constexpr = False, SPLIT: constexpr = False,
                        GUARD_KV: constexpr = True, DIRECT_P: constexpr = False, KSPLIT: constexpr = False,
                        QROUNDS: constexpr = 1, KV_DEVICE: constexpr = False, DSPLIT: constexpr = False):
        scratch = shared_array(f32, WM)
        attention_body(qkv, k4, v4, out4, o_part4, ml_part, kv_valid, S_Q, S_KV, HEADS, KV_HEADS, SPLITS, SPLIT_LEN,
                       scale, WINDOW, Q_LEN, IN, D, QT, SN, QK, WM, SMQ, NS, SG, PAD, CAUSAL, WINDOWED, GROUPED,
                       SPLIT, GUARD_KV, DIRECT_P, KSPLIT, QROUNDS, KV_DEVICE, DSPLIT, qsrc,
                       (qkv, wq, wk, positions, freq, scratch, k_col, v_col, rot, eps), ml_part, False, 1)

    return attention_heads
