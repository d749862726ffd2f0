"""`relayout_kernel(SRC, DST)`: dst[((b * dst_rows) + row0 + a) * ld + col + c] = src[(a * B + b) * C + c] * scale
for a source of shape (A, B, C), computed in f32 and rounded once from SRC's storage to DST's (f32, f16, bf16 as in
kernels/nn). ld = C and col = 0 but where the rows go into columns col .. col + C - 1 of wider rows of ld.

With (A, B, C) = (tokens, heads, dim), dst_rows = the cache's length and row0 = the first new position, it writes
new keys or values into a (heads, context, dim) cache; with dst_rows = tokens and row0 = 0 it turns queries into
attention's (heads, tokens, dim); with (A, B, C) = (heads, tokens, dim) and dst_rows = heads it turns attention's
output back into (tokens, heads, dim); with B = 1 it is a scaled copy (Gemma's embeddings times sqrt(n_embd)).
ROW0_DEVICE adds row0_at[0] to row0: the first new position read from a device buffer (a captured decode step writes
its keys and values at the position the device holds). This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, load, store
from hydroplane.lang import Buffer, constexpr, f32, global_id, kernel_source, num_workgroups, readonly, s32

THREADS = 128


@functools.cache
def relayout_kernel(SRC: str, DST: str):
    """The relayout from SRC storage to DST storage (the module docstring)."""

    @kernel_source(local_size=THREADS, name=f"relayout_{SRC}_{DST}")
    def relayout(src: Buffer[STORAGE[SRC], readonly], dst: Buffer[STORAGE[DST]], row0_at: Buffer[s32, readonly],
                 a_n: s32, b_n: s32, c_n: s32, dst_rows: s32, row0: s32, scale: f32, ld: s32, col: s32,
                 ROW0_DEVICE: constexpr = False):
        stride = num_workgroups() * THREADS
        first = row0
        if ROW0_DEVICE:
            first = row0 + row0_at[0]
        for i in range(global_id(), a_n * b_n * c_n, stride):
            c = i % c_n
            ab = i // c_n
            b = ab % b_n
            a = ab // b_n
            store(dst, ((b * dst_rows) + first + a) * ld + col + c, load(src, i, SRC) * scale, DST)

    return relayout
