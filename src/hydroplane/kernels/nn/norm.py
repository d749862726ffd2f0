"""RMS norm with its weight multiply (and optionally a residual add), one kernel:
out = x / sqrt(mean(x²) + eps) * weight (+ residual), row by row.

`rms_norm_kernel(DT)`: one workgroup of THREADS invocations per row of n elements (rows beyond 65535 on grid y).
Each invocation sums the squares of its elements in f32 (strided: neighbours read neighbours), the sums meet in a
subgroup add and then over the subgroups in shared memory; the scale is rsqrt(sum / n + eps) in f32; each element
is scaled, multiplied by its weight (WEIGHT), added to the residual's element (RESIDUAL: a post-norm's residual add
fused in) and rounded once into the storage type. WIDE (f32: 4, 16-bit: 8)
reads and writes the row in 16-byte chunks (`V4` views of the same buffers, n a multiple of WIDE).
This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, V4, group_sum, load, narrow
from hydroplane.lang import (
    Buffer,
    bitcast,
    constexpr,
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
    static_range,
    u16,
    u32,
    vec,
    workgroup_id,
)

ROWS_X = 65535  # rows per grid row (grid x), the rest on grid y


def norm_threads(constexprs: dict) -> int:
    return constexprs["THREADS"]


@func
def unpack(vals, chunk, DT: constexpr, WIDE: constexpr):
    """The WIDE elements of a 16-byte chunk into vals[0:WIDE] as f32."""
    for w in static_range(4):
        if WIDE == 4:
            vals[w] = bitcast(chunk[w], f32)
        else:
            for j in static_range(2):
                half = chunk[w] >> (16 * j) & 0xFFFF
                if DT == "bf16":
                    vals[2 * w + j] = bitcast(half << 16, f32)
                else:
                    vals[2 * w + j] = f32(bitcast(u16(half), f16))


@func
def bits16(v, DT: constexpr):
    """The storage bits of f32 v in a 16-bit type, as u32."""
    if DT == "bf16":
        return u32(narrow(v, DT))
    return u32(bitcast(f16(v), u16))


@func
def pack(vals, DT: constexpr, WIDE: constexpr):
    """vals[0:WIDE] (f32) as one 16-byte chunk of storage DT."""
    chunk = vec(u32(0), u32(0), u32(0), u32(0))
    for w in static_range(4):
        if WIDE == 4:
            chunk[w] = bitcast(vals[w], u32)
        else:
            chunk[w] = bits16(vals[2 * w], DT) | bits16(vals[2 * w + 1], DT) << 16
    return chunk


@functools.cache
def rms_norm_kernel(DT: str):
    """The fused RMS norm for storage DT ("f32", "f16", "bf16"): the module docstring."""
    ST = STORAGE[DT]

    @kernel_source(local_size=norm_threads, name=f"rms_norm_{DT}")
    def rms_norm(x: Buffer[ST, readonly], w: Buffer[ST, readonly], res: Buffer[ST, readonly], out: Buffer[ST],
                 x4: Buffer[V4, readonly], w4: Buffer[V4, readonly], res4: Buffer[V4, readonly], out4: Buffer[V4],
                 rows: s32, n: s32, eps: f32, THREADS: constexpr, SG: constexpr, WEIGHT: constexpr, WIDE: constexpr,
                 RESIDUAL: constexpr = False):
        NSG = THREADS // SG
        partial = shared_array(f32, NSG)
        row = workgroup_id(1) * ROWS_X + workgroup_id(0)
        t = local_index()
        if row < rows:
            base = row * n
            acc = 0.0
            if WIDE:
                vals = local_array(f32, WIDE)
                for c in range(t, n // WIDE, THREADS):
                    unpack(vals, x4[base // WIDE + c], DT, WIDE)
                    for j in static_range(WIDE):
                        acc += vals[j] * vals[j]
            else:
                for i in range(t, n, THREADS):
                    v = load(x, base + i, DT)
                    acc += v * v
            total = group_sum(acc, partial, NSG)
            scale = rsqrt(total / f32(n) + eps)
            if WIDE:
                vals = local_array(f32, WIDE)
                wv = local_array(f32, WIDE)
                rv = local_array(f32, WIDE)
                for c in range(t, n // WIDE, THREADS):
                    unpack(vals, x4[base // WIDE + c], DT, WIDE)
                    if WEIGHT:
                        unpack(wv, w4[c], DT, WIDE)
                    if RESIDUAL:
                        unpack(rv, res4[base // WIDE + c], DT, WIDE)
                    for j in static_range(WIDE):
                        if WEIGHT:
                            vals[j] = vals[j] * scale * wv[j]
                        else:
                            vals[j] = vals[j] * scale
                        if RESIDUAL:
                            vals[j] = vals[j] + rv[j]
                    out4[base // WIDE + c] = pack(vals, DT, WIDE)
            else:
                for i in range(t, n, THREADS):
                    v = load(x, base + i, DT) * scale
                    if WEIGHT:
                        v = v * load(w, i, DT)
                    if RESIDUAL:
                        v = v + load(res, base + i, DT)
                    out[i + base] = narrow(v, DT)

    return rms_norm
