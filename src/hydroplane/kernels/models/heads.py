"""`heads_kernel(NORM, NEOX, ROW0_DEVICE)`: a projection's heads made ready for attention in one kernel: the per-head
RMS norm with its weight (NORM: Gemma's q/k norms), the rotary embedding at the tokens' positions, the f32 -> f16
rounding and the relayout from the projection's (tokens, heads, dim) into attention's (heads, rows, dim) at row
row0 + token (ROW0_DEVICE: row0 + positions[0], the keys' row of a KV cache, read on the device).

    y = x[t, h, :] * rsqrt(mean(x[t, h, :]²) + eps) * w      (NORM; else y = x[t, h, :])
    pairs (i0, i1) of the first R elements turned by positions[t] * freq[i]: NEOX (i, i + R/2), else (2i, 2i + 1)
    dst[(h * dst_rows + row) * D + d] = f16(y')                row = row0 (+ positions[0]) + t

The arithmetic is that of the unfused ops (kernels/nn/norm.py, kernels/nn/rotary.py, kernels/models/relayout.py),
in f32, rounded once into f16: the sum of squares meets in a subgroup add and then over the subgroups
(`group_sum`), the angle is f32(position) * freq[i] rounded once. One workgroup per (token, head) row (grid x).
This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import group_sum
from hydroplane.lang import (
    Buffer,
    constexpr,
    cos,
    f16,
    f32,
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


@functools.cache
def heads_kernel(NORM: bool, NEOX: bool, ROW0_DEVICE: bool):
    """The fused head preparation (the module docstring)."""

    @kernel_source(local_size=heads_threads,
                   name=f"heads{'_norm' if NORM else ''}_{'neox' if NEOX else 'interleaved'}"
                        f"{'_cache' if ROW0_DEVICE else ''}")
    def heads(x: Buffer[f32, readonly], w: Buffer[f32, readonly], positions: Buffer[s32, readonly],
              freq: Buffer[f32, readonly], dst: Buffer[f16], heads_n: s32, d: s32, r: s32, dst_rows: s32, row0: s32,
              eps: f32, THREADS: constexpr, SG: constexpr):
        NSG = THREADS // SG
        partial = shared_array(f32, NSG)
        th = workgroup_id(0)
        t = th // heads_n
        h = th - t * heads_n
        lid = local_index()
        base = th * d
        scale = f32(1.0)
        if NORM:
            acc = f32(0.0)
            for i in range(lid, d, THREADS):
                v = x[base + i]
                acc += v * v
            total = group_sum(acc, partial, NSG)
            scale = rsqrt(total / f32(d) + eps)
        row = row0 + t
        if ROW0_DEVICE:
            row = row + positions[0]
        out = (h * dst_rows + row) * d
        half = r // 2
        angle_of = f32(positions[t])
        for e in range(lid, half + (d - r), THREADS):
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

    return heads
