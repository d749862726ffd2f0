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
major. This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import group_sum
from hydroplane.lang import (
    Buffer,
    constexpr,
    cos,
    f16,
    f32,
    func,
    kernel_source,
    local_index,
    readonly,
    rsqrt,
    s32,
    shared_array,
    sin,
    workgroup_id,
)


def heads_threads(constexprs: dict) -> int:
    return constexprs["THREADS"]


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
            x0 = x[base + i0]
            x1 = x[base + i1]
            if NORM:
                x0 = x0 * scale * w[i0]
                x1 = x1 * scale * w[i1]
            angle = angle_of * freq[e]
            c = cos(angle)
            s = sin(angle)
            dst[out + i0] = f16(x0 * c - x1 * s)
            dst[out + i1] = f16(x0 * s + x1 * c)
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
