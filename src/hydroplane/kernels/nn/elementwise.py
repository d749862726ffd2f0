"""The residual add: out = a + b, b of a's shape or of its trailing dimensions (repeated over the leading ones).

`add_kernel(DT)`: a grid-stride loop over a's n elements, b[i % nb]; the sum in f32 rounded once into the storage
(for f16 and bf16 that is the correctly rounded sum). WIDE moves 16-byte chunks (n and nb multiples of WIDE).
out may be a itself (an in-place residual). This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, V4, load, store
from hydroplane.kernels.nn.norm import pack, unpack
from hydroplane.lang import (
    Buffer,
    constexpr,
    f32,
    global_id,
    kernel_source,
    local_array,
    num_workgroups,
    readonly,
    s32,
    static_range,
)

THREADS = 128


@functools.cache
def add_kernel(DT: str):
    """a + b for storage DT (the module docstring)."""
    ST = STORAGE[DT]

    @kernel_source(local_size=THREADS, name=f"add_{DT}")
    def add(a: Buffer[ST, readonly], b: Buffer[ST, readonly], out: Buffer[ST], a4: Buffer[V4, readonly],
            b4: Buffer[V4, readonly], out4: Buffer[V4], n: s32, nb: s32, WIDE: constexpr):
        stride = num_workgroups() * THREADS
        if WIDE:
            av = local_array(f32, WIDE)
            bv = local_array(f32, WIDE)
            for c in range(global_id(), n // WIDE, stride):
                unpack(av, a4[c], DT, WIDE)
                unpack(bv, b4[c % (nb // WIDE)], DT, WIDE)
                for j in static_range(WIDE):
                    av[j] = av[j] + bv[j]
                out4[c] = pack(av, DT, WIDE)
        else:
            for i in range(global_id(), n, stride):
                store(out, i, load(a, i, DT) + load(b, i % nb, DT), DT)

    return add
