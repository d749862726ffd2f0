"""Logit softcapping (Gemma 2's final logits): out = cap * tanh(x / cap), element-wise, in f32 rounded once into the
storage (kernels/nn/common.py).

`softcap_kernel(DT)`: a grid-stride loop. tanh(u) is computed as sign(u) (1 - e) / (1 + e), e = exp(-2|u|) (no
overflow for any u: e lies in (0, 1]), and below |u| = 1/16, where 1 - e cancels, by its Taylor series u - u³/3 +
2u⁵/15 - 17u⁷/315 (the next term is below 2^-30 of u there). There cap * tanh(x / cap) is taken as x (1 - u²/3 + ...):
x itself times the series' factor, not cap times the rounded (and, for |x| below cap x 2^-126, subnormal or flushed)
quotient x / cap, so a tiny normal x comes back as x, not as 0 on a device that flushes subnormals. This module imports
only the language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, load, store
from hydroplane.lang import Buffer, abs_, exp, f32, func, global_id, kernel_source, num_workgroups, readonly, s32

THREADS = 128
SMALL = 0.0625  # |u| below it: the Taylor series


@func
def softcap_value(x, cap):
    """cap * tanh(x / cap) of f32 x, without overflow or cancellation (the module docstring)."""
    u = x / cap
    a = abs_(u)
    y = f32(0.0)
    if a < SMALL:
        u2 = u * u
        y = x * (1.0 + u2 * (-1.0 / 3.0 + u2 * (2.0 / 15.0 + u2 * (-17.0 / 315.0))))
    else:
        e = exp(-2.0 * a)
        t = (1.0 - e) / (1.0 + e)
        y = cap * t
        if u < 0.0:
            y = -y
    return y


@functools.cache
def softcap_kernel(DT: str):
    """cap * tanh(x / cap) for storage DT."""
    ST = STORAGE[DT]

    @kernel_source(local_size=THREADS, name=f"softcap_{DT}")
    def softcap(x: Buffer[ST, readonly], out: Buffer[ST], n: s32, cap: f32):
        for i in range(global_id(), n, num_workgroups() * THREADS):
            store(out, i, softcap_value(load(x, i, DT), cap), DT)

    return softcap
