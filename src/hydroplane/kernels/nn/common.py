"""What the transformer ops' kernels share: element storage by dtype, f32 loads and stores, order keys of floats,
workgroup reductions, the grid-stride loop's sizes.

Every kernel of kernels/nn computes in f32 whatever the storage: "f32" is stored as f32, "f16" as f16, "bf16" as
its 16 bits in a u16 buffer (so that a device without bf16 scalars, lavapipe, runs it too): `load` widens exactly,
`store` rounds to nearest even once (bf16 on the bits: a NaN stores the quiet NaN 0x7FC0, as ml_dtypes gives).
The sampling kernels read logits as raw bits (`RAW`: u32 for f32, u16 for the 16-bit types) and rank them by
`key_of`, an unsigned key whose order is the floats' (-0 and +0 one key) with every NaN below -inf (key 0).
This module imports only the language.
"""

from hydroplane.lang import (
    barrier,
    bitcast,
    constexpr,
    f16,
    f32,
    func,
    lane_id,
    static_range,
    subgroup_add,
    subgroup_id,
    subgroup_shuffle_xor,
    u16,
    u32,
    vector_type,
)

DTYPES = ("f32", "f16", "bf16")  # the storage the ops take (docs/nn.md)
STORAGE = {"f32": f32, "f16": f16, "bf16": u16}  # the buffer element type of each
RAW = {"f32": u32, "f16": u16, "bf16": u16}  # the same bits as unsigned integers (the sampling kernels)
V4 = vector_type(u32, 4)  # 16 bytes: the wide loads and stores
MAX_GROUPS = 4096  # workgroups of a grid-stride loop (each invocation then walks the rest)


def log2_exact(value: int) -> int:
    """log2 of a power of two (compile-time: a butterfly's steps)."""
    if value < 1 or value & (value - 1):
        raise ValueError(f"{value} is not a power of two")
    return value.bit_length() - 1


def stride_groups(n: int, threads: int) -> int:
    """Workgroups of a grid-stride loop over n elements (at least 1, at most MAX_GROUPS)."""
    return max(1, min(MAX_GROUPS, -(-n // threads)))


@func
def load(buf, i, DT: constexpr):
    """Element i of a buffer of storage DT, as f32 (exact)."""
    if DT == "bf16":
        return bitcast(u32(buf[i]) << 16, f32)
    return f32(buf[i])


@func
def narrow(v, DT: constexpr):
    """f32 v in storage DT (rounded to nearest even; bf16 as its bits)."""
    if DT == "bf16":
        bits = bitcast(v, u32)
        if bits & 0x7FFFFFFF > 0x7F800000:
            return u16(0x7FC0)
        return u16((bits + 0x7FFF + (bits >> 16 & 1)) >> 16)
    if DT == "f16":
        return f16(v)
    return v


@func
def store(buf, i, v, DT: constexpr):
    """buf[i] = v (an f32) in storage DT."""
    buf[i] = narrow(v, DT)


@func
def value_of_bits(raw, DT: constexpr):
    """The f32 value of a logit's raw bits (u32 for f32, the 16 low bits for f16 and bf16)."""
    if DT == "f32":
        return bitcast(raw, f32)
    if DT == "bf16":
        return bitcast(raw << 16, f32)
    return f32(bitcast(u16(raw), f16))


@func
def key_of(raw, DT: constexpr):
    """An unsigned key whose order is the value's: NaN 0 (below -inf), -0 and +0 one key."""
    SIGN = 0x80000000 if DT == "f32" else 0x8000
    INF = 0x7F800000 if DT == "f32" else (0x7C00 if DT == "f16" else 0x7F80)
    MASK = 0xFFFFFFFF if DT == "f32" else 0xFFFF
    mag = raw & (SIGN - 1)
    if mag > INF:
        return u32(0)
    if mag == 0:
        return u32(SIGN)
    if raw & SIGN != 0:
        return ~raw & MASK
    return raw | SIGN


@func
def group_sum(v, scratch, NSG: constexpr):
    """The sum of v over the workgroup (subgroup sums, then the subgroups' in order), in every invocation.
    `scratch` is a shared array of NSG elements of v's type; it may be reused at once."""
    s = subgroup_add(v)
    barrier()
    if lane_id() == 0:
        scratch[subgroup_id()] = s
    barrier()
    total = scratch[0]
    for j in range(1, NSG):
        total += scratch[j]
    return total


@func
def group_best(key, index, skey, sidx, SG: constexpr, NSG: constexpr):
    """The workgroup's largest key and, among equal keys, the lowest index, in every invocation (a butterfly in each
    subgroup, then the subgroups' results in order). skey (u32) and sidx (s32) are shared arrays of NSG elements."""
    bk = key
    bi = index
    for s in static_range(log2_exact(SG)):
        ok = subgroup_shuffle_xor(bk, 1 << s)
        oi = subgroup_shuffle_xor(bi, 1 << s)
        if ok > bk or (ok == bk and oi < bi):
            bk = ok
            bi = oi
    barrier()
    if lane_id() == 0:
        skey[subgroup_id()] = bk
        sidx[subgroup_id()] = bi
    barrier()
    bk = skey[0]
    bi = sidx[0]
    for j in range(1, NSG):
        ok = skey[j]
        oi = sidx[j]
        if ok > bk or (ok == bk and oi < bi):
            bk = ok
            bi = oi
    return bk, bi
