"""Embedding lookup: out[t, :] = weight[ids[t], :], the rows copied as stored (no rounding).

`embedding_kernel(DT)`: a grid-stride loop over the n_ids x d output elements, or (WIDE, d a multiple of the
16-byte chunk's elements) over its 16-byte chunks. An id outside 0 .. vocab - 1 (a DeviceArray of ids, which the
host does not read) gives a row of zeros: the kernel never reads outside the table. This module imports only the
language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, V4
from hydroplane.lang import (
    Buffer,
    constexpr,
    global_id,
    kernel_source,
    num_workgroups,
    readonly,
    s32,
    u32,
    vec,
)

THREADS = 128


@functools.cache
def embedding_kernel(DT: str):
    """The row gather for storage DT (the module docstring)."""
    ST = STORAGE[DT]

    @kernel_source(local_size=THREADS, name=f"embedding_{DT}")
    def embedding(ids: Buffer[s32, readonly], w: Buffer[ST, readonly], out: Buffer[ST], w4: Buffer[V4, readonly],
                  out4: Buffer[V4], n_ids: s32, vocab: s32, d: s32, WIDE: constexpr):
        VEC = WIDE if WIDE else 1
        dv = d // VEC  # elements (or chunks) per row
        for e in range(global_id(), n_ids * dv, num_workgroups() * THREADS):
            t = e // dv
            j = e - t * dv
            row = ids[t]
            ok = row >= 0 and row < vocab
            src = row * dv + j if ok else 0
            if WIDE:
                chunk = w4[src]
                if not ok:
                    chunk = vec(u32(0), u32(0), u32(0), u32(0))
                out4[e] = chunk
            else:
                v = w[src]
                if not ok:
                    v = ST(0)
                out[e] = v

    return embedding
