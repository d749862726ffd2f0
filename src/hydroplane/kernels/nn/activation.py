"""Activations in one element-wise kernel: GELU (exact, through erf; and the tanh form), SiLU, and the gated
activation act(gate) * up of a transformer's FFN fused into it.

`activation_kernel(DT, ACT, GATED)`: out[i] = act(x[i]) (* up[i] with GATED), a grid-stride loop, everything in f32
and rounded once into the storage; HALVES (with GATED): x's rows hold gate then up, `half` elements each, out[t, c] =
act(x[t, c]) * x[t, half + c] (torch.nn.functional.glu's split, one projection's output for both).
The forms (docs/nn.md, "Precision"):
- "silu": x / (1 + exp(-x));
- "gelu_tanh": x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x³): 0.5 x (1 + tanh u) without its cancellation
  for negative x;
- "gelu": 0.5 x (1 + erf(x / sqrt(2))), erf through erfc's Chebyshev fit (Numerical Recipes' erfcc, fractional
  error below 1.2e-7 everywhere): 1 + erf(z) is 2 - erfc(z) for z >= 0 and erfc(-z) below, so the negative
  tail keeps its relative precision.
WIDE (4 for f32, 8 for 16-bit storage) moves 16-byte chunks through `V4` views (n a multiple of WIDE).
This module imports only the language.
"""

import functools
import math

from hydroplane.kernels.nn.common import STORAGE, V4, load, store
from hydroplane.kernels.nn.norm import pack, unpack
from hydroplane.lang import (
    Buffer,
    abs_,
    constexpr,
    exp,
    f32,
    func,
    global_id,
    kernel_source,
    local_array,
    num_workgroups,
    readonly,
    s32,
    static_range,
)

THREADS = 128
ACTIVATIONS = ("gelu", "gelu_tanh", "silu")
GELU_C = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715
SQRT_HALF = math.sqrt(0.5)
# erfc(z) = t exp(-z² + P(t)), t = 1 / (1 + z/2): P's coefficients from the lowest power (Numerical Recipes' erfcc)
ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
        -0.82215223, 0.17087277)


@func
def erfc_abs(z):
    """erfc(|z|) in f32."""
    a = abs_(z)
    t = 1.0 / (1.0 + 0.5 * a)
    p = f32(ERFC[9])
    for k in static_range(8, -1, -1):
        p = p * t + ERFC[k]
    return t * exp(p - a * a)


@func
def act(v, ACT: constexpr):
    """The activation ACT of f32 v."""
    if ACT == "silu":
        return v / (1.0 + exp(-v))
    if ACT == "gelu_tanh":
        u = GELU_C * (v + GELU_CUBIC * v * v * v)
        return v / (1.0 + exp(-2.0 * u))
    e = erfc_abs(v * SQRT_HALF)
    one_plus_erf = 2.0 - e if v >= 0.0 else e
    return 0.5 * v * one_plus_erf



@functools.cache
def activation_kernel(DT: str, ACT: str, GATED: bool):
    """act(x) (* up) for storage DT (the module docstring)."""
    ST = STORAGE[DT]

    @kernel_source(local_size=THREADS, name=f"{ACT}{'_gated' if GATED else ''}_{DT}")
    def activation(x: Buffer[ST, readonly], up: Buffer[ST, readonly], out: Buffer[ST], x4: Buffer[V4, readonly],
                   up4: Buffer[V4, readonly], out4: Buffer[V4], n: s32, half: s32, WIDE: constexpr,
                   HALVES: constexpr = False):
        stride = num_workgroups() * THREADS
        if WIDE:
            xv = local_array(f32, WIDE)
            uv = local_array(f32, WIDE)
            for c in range(global_id(), n // WIDE, stride):
                at = c
                if HALVES:  # row t of x: gate then up, half elements each
                    row = c // (half // WIDE)
                    at = c + row * (half // WIDE)
                unpack(xv, x4[at], DT, WIDE)
                if GATED:
                    if HALVES:
                        unpack(uv, x4[at + half // WIDE], DT, WIDE)
                    else:
                        unpack(uv, up4[c], DT, WIDE)
                for j in static_range(WIDE):
                    xv[j] = act(xv[j], ACT)
                    if GATED:
                        xv[j] = xv[j] * uv[j]
                out4[c] = pack(xv, DT, WIDE)
        else:
            for i in range(global_id(), n, stride):
                at = i
                if HALVES:
                    at = i + (i // half) * half
                v = act(load(x, at, DT), ACT)
                if GATED:
                    if HALVES:
                        v = v * load(x, at + half, DT)
                    else:
                        v = v * load(up, i, DT)
                store(out, i, v, DT)

    return activation
