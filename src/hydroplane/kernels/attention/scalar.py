"""The scalar decode main pass: split-KV attention for 1-4 query rows per head without cooperative matrices.

`attention_scalar` is the decode path's main pass for heads of at most 4 rows (a decode step's one query, or a KV
head's few grouped query heads), where a 16-row matrix tile would waste most of its rows. A key is read by LK lanes
(LK = min(D / 8, subgroup size)), each holding CPL = D / 8 / LK 16-byte chunks (8 f16 or bf16 values each) of the K
and V rows; the SG / LK key groups of a subgroup and the NSG subgroups of a workgroup each own a contiguous range of
SPLIT_LEN keys and are each their own split of the partial results, in exactly the layout `source.attention`'s SPLIT
path writes: `source.attention_combine` merges them unchanged. Per U keys (their K and V loads issued together) a
lane forms its part of the R rows' dot products in f32, a butterfly of subgroup_shuffle_xor sums them over the key
group's lanes, the scores are scaled and masked (`source.scaled_score`), and the online softmax keeps each row's
running maximum, sum and unnormalised O (f32; P is not rounded to the input type). A key group writes its rows'
O, maximum and sum only where its range holds a key one of its rows sees (the combine reads no other). Imports only
the language and source.py.
"""

from hydroplane.kernels.attention.source import (
    START,
    V4,
    V4F,
    WIDE,
    combine_slot,
    combined_by_last,
    exp_of,
    scaled_score,
)
from hydroplane.lang import (
    Buffer,
    bf16,
    bitcast,
    constexpr,
    f16,
    f32,
    fma,
    func,
    kernel_source,
    lane_id,
    local_array,
    maximum,
    minimum,
    readonly,
    s32,
    shared_array,
    static_assert,
    static_range,
    subgroup_id,
    subgroup_max,
    subgroup_shuffle_xor,
    u32,
    vec,
    vector_type,
    workgroup_id,
)

MAX_ROWS = 4  # query rows per head (a constexpr): each lane holds each row's q and O slice in registers
FUSED_SHARED = 1024  # V4s (16 KiB) of shared memory for the fused combine's rows (at least one row's slot)


def scalar_lanes(head_dim: int, subgroup_size: int) -> int:
    """Lanes reading one key: one 16-byte chunk of the row each where the subgroup is wide enough."""
    return min(head_dim // WIDE, subgroup_size)


def scalar_threads(constexprs: dict) -> int:
    return constexprs["NSG"] * constexprs["SG"]


def fused_shared(R, D, LANES) -> int:  # noqa: N803
    """V4s of the scalar pass's shared array for the fused combine: the slots of the rows that fit FUSED_SHARED
    (at least one row's, at most R)."""
    slot = combine_slot(D, LANES)
    return slot * max(1, min(R, FUSED_SHARED // slot))


@func
def halves(word, IN: constexpr):
    """The two 16-bit values of a u32 (the low half first) as f32: f16 converted, bf16 by its bits (exact)."""
    if IN == bf16:
        return bitcast(word << 16, f32), bitcast(word & u32(0xFFFF0000), f32)
    pair = f32(bitcast(word, vector_type(f16, 2)))
    return pair[0], pair[1]


@func
def unpacked(chunk, IN: constexpr):
    """A V4 of 8 16-bit values as two V4F of f32 (elements 0-3, 4-7)."""
    a0, a1 = halves(chunk[0], IN)
    b0, b1 = halves(chunk[1], IN)
    c0, c1 = halves(chunk[2], IN)
    d0, d1 = halves(chunk[3], IN)
    return vec(a0, a1, b0, b1), vec(c0, c1, d0, d1)


@func
def widened(kf, regs, at: constexpr, CPL: constexpr, IN: constexpr):
    """The CPL V4 chunks regs[at : at + CPL] (8 16-bit values each) as f32 V4Fs into kf[0 : 2 CPL]."""
    for c in static_range(CPL):
        low, high = unpacked(regs[at + c], IN)
        kf[2 * c] = low
        kf[2 * c + 1] = high


@func
def key_chunk(source, base, key, limit, chunk, CHUNKS: constexpr):
    """Chunk `chunk` of row `key` of a row-major array of V4s from V4 index base; zeros at or past `limit`."""
    value = vec(u32(0), u32(0), u32(0), u32(0))
    if key < limit:
        value = source[base + key * CHUNKS + chunk]
    return value


@kernel_source(local_size=scalar_threads, name="attention_scalar")
def attention_scalar(q4: Buffer[V4, readonly], k4: Buffer[V4, readonly], v4: Buffer[V4, readonly], out4: Buffer[V4],
                     o_part4: Buffer[V4], ml_part: Buffer[f32], kv_valid: Buffer[s32, readonly],
                     counters: Buffer[s32], S_Q: s32, S_KV: s32, HEADS: s32, KV_HEADS: s32, SPLITS: s32,
                     SPLIT_LEN: s32, scale: f32, WINDOW: s32, Q_LEN: s32, IN: constexpr, D: constexpr, R: constexpr,
                     LK: constexpr, NSG: constexpr, SG: constexpr, U: constexpr, CAUSAL: constexpr = False,
                     WINDOWED: constexpr = False, GROUPED: constexpr = False, KV_DEVICE: constexpr = False,
                     FUSED: constexpr = False, LANES: constexpr = 1):
    """Grid (workgroup splits, HEADS, batch); the parameters are `source.attention`'s (out4 and counters unused
    without FUSED: the decode path ends in the combining pass; FUSED: the last workgroup of a head to arrive at
    counters[batch, head] merges its splits into out4, `source.combined_by_last`). R = S_Q rows per head
    (GROUPED: HEADS = KV_HEADS are the KV heads and a head's rows its query heads' Q_LEN queries each, row r query
    r % Q_LEN); key group g of subgroup s of workgroup w is split (w * NSG + s) * (SG / LK) + g of SPLITS, keys
    [split * SPLIT_LEN, + SPLIT_LEN). KV_DEVICE: the keys in use are kv_valid[0] clamped to 0 .. S_KV (the causal
    diagonal aligned to it); WINDOWED: keys WINDOW or more before a query's position masked."""
    CHUNKS = D // WIDE  # V4s in a row
    CPL = CHUNKS // LK  # this lane's chunks of a row
    KG = SG // LK  # key groups per subgroup
    H = 2 * CPL  # this lane's V4Fs of a row (4 f32 each)
    static_assert(CHUNKS % LK == 0 and SG % LK == 0 and LK <= 32 and R >= 1 and U >= 1,
                  "whole chunks per lane and key groups per subgroup, at most 32 lanes a key")
    lane = lane_id()
    kg = lane // LK
    part = lane - kg * LK  # the lane's place in its key group
    batch = workgroup_id(2)
    head = workgroup_id(1)
    split = (workgroup_id(0) * NSG + subgroup_id()) * KG + kg
    kv_head = head // (HEADS // KV_HEADS)
    q_base = (batch * HEADS + head) * S_Q * CHUNKS
    kv_base = (batch * KV_HEADS + kv_head) * S_KV * CHUNKS
    kv_end = S_KV  # the keys in use
    if KV_DEVICE:
        kv_end = minimum(maximum(kv_valid[0], 0), S_KV)
    diagonal = kv_end - Q_LEN  # causal: query i sees keys j <= i + diagonal (the last query every key in use)
    lowest = 0  # the first key any row sees (WINDOWED: the first query's window)
    if WINDOWED:
        lowest = maximum(diagonal - WINDOW + 1, 0)
    group_keys = NSG * KG * SPLIT_LEN  # the workgroup's keys
    first_key = workgroup_id(0) * group_keys
    if FUSED:  # the rows' slots of the fused combine
        SH = fused_shared(R, D, LANES)
        sh = shared_array(V4, SH)
    if maximum(first_key, lowest) >= minimum(first_key + group_keys, kv_end):
        if FUSED:  # it arrives all the same (and, the last, merges the others' splits)
            combined_by_last(sh, SH, o_part4, ml_part, out4, counters, batch * HEADS + head, SPLITS // (NSG * KG),
                             (batch * HEADS + head) * SPLITS, 0, S_Q, q_base, kv_end, S_Q, SPLITS, SPLIT_LEN, WINDOW,
                             Q_LEN, IN, D, LANES, R, NSG * SG, CAUSAL, WINDOWED, GROUPED)
        return  # none of its splits holds a key its rows see: the combining pass reads none of them
    lo = maximum(split * SPLIT_LEN, lowest)
    hi = minimum(split * SPLIT_LEN + SPLIT_LEN, kv_end)
    count = maximum(hi - lo, 0)
    steps = (subgroup_max(count) + U - 1) // U  # the same in the whole subgroup: every lane at every shuffle

    qv = local_array(V4F, R * H)
    o = local_array(V4F, R * H)
    row_max = local_array(f32, R)
    row_sum = local_array(f32, R)
    for r in static_range(R):
        row_max[r] = f32(START)
        row_sum[r] = f32(0.0)
        for c in static_range(CPL):
            low, high = unpacked(q4[q_base + r * CHUNKS + part + c * LK], IN)
            qv[r * H + 2 * c] = low
            qv[r * H + 2 * c + 1] = high
        for j in static_range(H):
            o[r * H + j] = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
    kregs = local_array(V4, U * CPL)
    vregs = local_array(V4, U * CPL)
    kf = local_array(V4F, H)
    s = local_array(f32, R * U)
    for step in range(steps):
        k0 = lo + step * U
        for u in static_range(U):  # every load of the U keys issued before any is used
            for c in static_range(CPL):
                kregs[u * CPL + c] = key_chunk(k4, kv_base, k0 + u, hi, part + c * LK, CHUNKS)
                vregs[u * CPL + c] = key_chunk(v4, kv_base, k0 + u, hi, part + c * LK, CHUNKS)
        for u in static_range(U):
            widened(kf, kregs, u * CPL, CPL, IN)
            for r in static_range(R):
                acc = qv[r * H] * kf[0]
                for j in static_range(1, H):
                    acc = fma(qv[r * H + j], kf[j], acc)
                s[r * U + u] = (acc[0] + acc[1]) + (acc[2] + acc[3])
        for width in (16, 8, 4, 2, 1):  # the partial dot products summed over the key group's lanes (all get them)
            if width < LK:
                for i in static_range(R * U):
                    s[i] = s[i] + subgroup_shuffle_xor(s[i], u32(width))
        for r in static_range(R):
            top = row_max[r]
            for u in static_range(U):
                s[r * U + u] = scaled_score(r, 0, s[r * U + u], 0, k0 + u, hi, Q_LEN, diagonal, scale, WINDOW,
                                            CAUSAL, WINDOWED, GROUPED, True)
                top = maximum(top, s[r * U + u])
            rescale = exp_of(row_max[r], top)
            row_max[r] = top
            row_sum[r] = row_sum[r] * rescale
            for j in static_range(H):
                o[r * H + j] = o[r * H + j] * rescale
        for u in static_range(U):
            widened(kf, vregs, u * CPL, CPL, IN)
            for r in static_range(R):
                p = exp_of(s[r * U + u], row_max[r])
                row_sum[r] = row_sum[r] + p
                weight = vec(p, p, p, p)
                for j in static_range(H):
                    o[r * H + j] = fma(kf[j], weight, o[r * H + j])

    if count > 0:  # unnormalised O, f32 bits: o_part[batch, head, split, row, :]; the maximum and sum in ml_part
        for r in static_range(R):
            at = ((batch * HEADS + head) * SPLITS + split) * S_Q + r
            for c in static_range(CPL):
                chunk = part + c * LK
                o_part4[at * (D // 4) + 2 * chunk] = bitcast(o[r * H + 2 * c], V4)
                o_part4[at * (D // 4) + 2 * chunk + 1] = bitcast(o[r * H + 2 * c + 1], V4)
            if part == 0:
                ml_part[at * 2] = row_max[r]
                ml_part[at * 2 + 1] = row_sum[r]
    if FUSED:
        combined_by_last(sh, SH, o_part4, ml_part, out4, counters, batch * HEADS + head, SPLITS // (NSG * KG),
                         (batch * HEADS + head) * SPLITS, 0, S_Q, q_base, kv_end, S_Q, SPLITS, SPLIT_LEN, WINDOW,
                         Q_LEN, IN, D, LANES, R, NSG * SG, CAUSAL, WINDOWED, GROUPED)
