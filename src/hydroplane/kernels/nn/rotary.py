"""Rotary position embedding: each pair of a head's first R (rotary_dim) elements turned by the angle
position x freq[i], the rest copied.

`rotary_kernel(DT, NEOX)`: x (T, H, D) row-major, positions (T,) s32 read from a buffer (a captured decode step
reads its position from the device), freq (R/2,) f32 the inverse frequencies (freq_scale * theta^(-2i/R), made on
the host in float64). Pair i of a head is (i, i + R/2) with NEOX (llama.cpp's NEOX mode, GPT-NeoX's layout) or
(2i, 2i + 1) (llama.cpp's NORM mode, the interleaved layout). The angle is f32(position) * freq[i] rounded once to
f32; (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos) in f32, rounded once into the storage. One invocation per pair
or per copied element (a grid-stride loop); out may be x itself. This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, load, store
from hydroplane.lang import (
    Buffer,
    cos,
    f32,
    global_id,
    kernel_source,
    num_workgroups,
    readonly,
    s32,
    sin,
)

THREADS = 128


@functools.cache
def rotary_kernel(DT: str, NEOX: bool):
    """The rotary embedding for storage DT, NeoX or interleaved pairs (the module docstring)."""
    ST = STORAGE[DT]

    @kernel_source(local_size=THREADS, name=f"rotary_{'neox' if NEOX else 'interleaved'}_{DT}")
    def rotary(x: Buffer[ST, readonly], positions: Buffer[s32, readonly], freq: Buffer[f32, readonly],
               out: Buffer[ST], tokens: s32, heads: s32, d: s32, r: s32):
        half = r // 2
        per_head = half + (d - r)  # pairs, then copied elements
        total = tokens * heads * per_head
        for e in range(global_id(), total, num_workgroups() * THREADS):
            th = e // per_head
            j = e - th * per_head
            base = th * d
            if j < half:
                i0 = j
                i1 = j + half
                if not NEOX:
                    i0 = 2 * j
                    i1 = 2 * j + 1
                angle = f32(positions[th // heads]) * freq[j]
                c = cos(angle)
                s = sin(angle)
                x0 = load(x, base + i0, DT)
                x1 = load(x, base + i1, DT)
                store(out, base + i0, x0 * c - x1 * s, DT)
                store(out, base + i1, x0 * s + x1 * c, DT)
            else:
                k = base + r + (j - half)
                out[k] = x[k]

    return rotary
