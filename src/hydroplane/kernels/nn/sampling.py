"""Choosing the next token on the device: greedy argmax in two passes, and temperature / top-k / top-p sampling
with a seeded counter-based generator.

Logits are read as their raw bits (`common.RAW`) and ranked by `common.key_of`: the floats' order, -0 and +0 equal,
every NaN below -inf (so a NaN is chosen only from a row of NaNs, greedy's lowest index then).

- `argmax_partial_kernel(DT)`: grid (chunks, rows); a workgroup's largest key over its chunk of a row, the lowest
  index among equal keys, into part_key / part_idx (FINAL: one chunk per row, the index straight into out).
- `argmax_final_kernel()`: one workgroup per row merges the chunks' results in chunk order (lowest index on ties).
- `sample_kernel(DT)`: one workgroup per row. Weights q_i = exp((l_i - max) / T) in f32. top-k keeps every logit at
  or above the k-th largest (ties with it kept), found by a radix select on the keys (eight passes of 4-bit digit
  histograms: per-invocation counts, subgroup adds); top-p then keeps logit i
  when the weight of the kept logits strictly above it is below top_p of the kept total, found by bisection (sums);
  the token is where the running sum of the kept weights in index order first exceeds u * total, u from
  `uniform(seed, row)`, the seed read from a buffer (a captured step's next seed is written there). A row whose
  largest logit is -inf, +inf or NaN is answered greedily.
This module imports only the language.
"""

import functools

from hydroplane.kernels.nn.common import RAW, group_best, group_sum, key_of, value_of_bits
from hydroplane.lang import (
    Buffer,
    barrier,
    bitcast,
    constexpr,
    exp,
    f32,
    func,
    kernel_source,
    lane_id,
    local_array,
    local_index,
    maximum,
    minimum,
    readonly,
    s32,
    shared_array,
    static_range,
    subgroup_add,
    subgroup_id,
    u32,
    workgroup_id,
)

NO_INDEX = 0x7FFFFFFF
CAP = 512  # top-k survivors compacted into shared memory (12 bytes each) for top-p and the draw
NEG_INF_KEY = {"f32": 0x007FFFFF, "f16": 0x03FF, "bf16": 0x007F}  # key_of(-inf): at or below it, greedy
POS_INF_KEY = {"f32": 0xFF800000, "f16": 0xFC00, "bf16": 0xFF80}  # key_of(+inf): a row holding +inf is greedy


def threads_of(constexprs: dict) -> int:
    return constexprs["THREADS"]


@func
def mix32(x):
    """A 32-bit integer hash (lowbias32: xor-shifts and two multiplications, wrapping)."""
    h = x ^ (x >> 16)
    h = h * 0x7FEB352D
    h = h ^ (h >> 15)
    h = h * 0x846CA68B
    return h ^ (h >> 16)


@func
def uniform(seed, row):
    """A uniform number in [0, 1) (24 bits) for the row under the seed: mix32(seed ^ mix32(row + golden))."""
    h = mix32(seed ^ mix32(u32(row) + 0x9E3779B9))
    return f32(h >> 8) * (1.0 / 16777216.0)


@functools.cache
def argmax_partial_kernel(DT: str):
    RT = RAW[DT]

    @kernel_source(local_size=threads_of, name=f"argmax_partial_{DT}")
    def argmax_partial(logits: Buffer[RT, readonly], part_key: Buffer[u32], part_idx: Buffer[s32], out: Buffer[s32],
                       v: s32, chunk: s32, chunks: s32, THREADS: constexpr, SG: constexpr, FINAL: constexpr):
        NSG = THREADS // SG
        skey = shared_array(u32, NSG)
        sidx = shared_array(s32, NSG)
        c = workgroup_id(0)
        r = workgroup_id(1)
        begin = c * chunk
        end = minimum(v, begin + chunk)
        bk = u32(0)
        bi = s32(NO_INDEX)
        for i in range(begin + local_index(), end, THREADS):
            k = key_of(u32(logits[r * v + i]), DT)
            if k > bk or (k == bk and i < bi):
                bk = k
                bi = i
        best_key, best_index = group_best(bk, bi, skey, sidx, SG, NSG)
        if local_index() == 0:
            if FINAL:
                out[r] = best_index
            else:
                part_key[r * chunks + c] = best_key
                part_idx[r * chunks + c] = best_index

    return argmax_partial


@functools.cache
def argmax_final_kernel():
    @kernel_source(local_size=threads_of, name="argmax_final")
    def argmax_final(part_key: Buffer[u32, readonly], part_idx: Buffer[s32, readonly], out: Buffer[s32],
                     chunks: s32, THREADS: constexpr, SG: constexpr):
        NSG = THREADS // SG
        skey = shared_array(u32, NSG)
        sidx = shared_array(s32, NSG)
        r = workgroup_id(0)
        bk = u32(0)
        bi = s32(NO_INDEX)
        for c in range(local_index(), chunks, THREADS):
            k = part_key[r * chunks + c]
            i = part_idx[r * chunks + c]
            if k > bk or (k == bk and i < bi):
                bk = k
                bi = i
        best_key, best_index = group_best(bk, bi, skey, sidx, SG, NSG)
        if local_index() == 0:
            out[r] = best_index

    return argmax_final


@func
def element(j, compact, logits, base, ckey, cidx, cw, m, inv_temp, DT: constexpr):
    """Candidate j's key, weight and index: from the compacted shared arrays, or logit j of the row."""
    if compact:
        return ckey[j], cw[j], cidx[j]
    raw = u32(logits[base + j])
    return key_of(raw, DT), exp((value_of_bits(raw, DT) - m) * inv_temp), j


@functools.cache
def sample_kernel(DT: str):
    RT = RAW[DT]
    FLOOR = NEG_INF_KEY[DT]
    CEILING = POS_INF_KEY[DT]

    @kernel_source(local_size=threads_of, name=f"sample_{DT}")
    def sample(logits: Buffer[RT, readonly], seeds: Buffer[u32, readonly], out: Buffer[s32], v: s32, inv_temp: f32,
               top_k: s32, top_p: f32, THREADS: constexpr, SG: constexpr):
        NSG = THREADS // SG
        skey = shared_array(u32, NSG)
        sidx = shared_array(s32, NSG)
        sfloat = shared_array(f32, NSG)
        prefix = shared_array(f32, THREADS + 1)
        hist = shared_array(s32, NSG * 16)
        counts = local_array(s32, 16)
        pick = shared_array(s32, 2)
        offsets = shared_array(s32, THREADS + 1)
        ckey = shared_array(u32, CAP)
        cidx = shared_array(s32, CAP)
        cw = shared_array(f32, CAP)
        r = workgroup_id(0)
        base = r * v
        t = local_index()
        bk = u32(0)
        bi = s32(NO_INDEX)
        for i in range(t, v, THREADS):
            k = key_of(u32(logits[base + i]), DT)
            if k > bk:
                bk = k
                bi = i
        top_key, top_index = group_best(bk, bi, skey, sidx, SG, NSG)
        if top_key <= FLOOR or top_key >= CEILING:  # nothing to draw: greedy's answer (a row of NaNs: 0)
            if t == 0:
                out[r] = top_index if top_index != NO_INDEX else 0
            return
        m = value_of_bits(u32(logits[base + top_index]), DT)
        # top-k: the k-th largest key, by a radix select from the top, 4 bits a pass (counts, then subgroup adds)
        k_floor = u32(1)
        if top_k > 0 and top_k < v:
            found = u32(0)
            need = top_k
            for level in range(8):
                shift = u32(28 - 4 * level)
                high = u32(0xFFFFFFFF) << (shift + 4)  # 0 at the top level (a shift by 32 gives 0)
                for j in static_range(16):
                    counts[j] = 0
                for i in range(t, v, THREADS):
                    k = key_of(u32(logits[base + i]), DT)
                    if k & high == found:
                        counts[s32(k >> shift & 0xF)] += 1
                barrier()
                for j in static_range(16):
                    c = subgroup_add(counts[j])
                    if lane_id() == 0:
                        hist[subgroup_id() * 16 + j] = c
                barrier()
                if t == 0:
                    higher = 0
                    digit = 15
                    while digit >= 0:
                        here = 0
                        for g in range(NSG):
                            here += hist[g * 16 + digit]
                        if higher + here >= need or digit == 0:
                            break
                        higher += here
                        digit -= 1
                    pick[0] = digit
                    pick[1] = higher
                barrier()
                found = found | u32(pick[0]) << shift
                need -= pick[1]
            k_floor = maximum(found, u32(1))
        # compaction: when top-k keeps at most CAP logits, they move to shared memory in index order (contiguous
        # chunks, offsets scanned in order by one invocation), and top-p and the draw read those instead of the row
        span = (v + THREADS - 1) // THREADS
        b0 = minimum(t * span, v)
        b1 = minimum(b0 + span, v)
        compact = False
        count = v
        if top_k > 0 and top_k < v:
            mine_kept = 0
            for i in range(b0, b1):
                if key_of(u32(logits[base + i]), DT) >= k_floor:
                    mine_kept += 1
            barrier()
            offsets[t + 1] = mine_kept
            barrier()
            if t == 0:
                offsets[0] = 0
                for j in range(THREADS):
                    offsets[j + 1] = offsets[j] + offsets[j + 1]
            barrier()
            if offsets[THREADS] <= CAP:
                compact = True
                count = offsets[THREADS]
                o = offsets[t]
                for i in range(b0, b1):
                    raw = u32(logits[base + i])
                    k = key_of(raw, DT)
                    if k >= k_floor:
                        ckey[o] = k
                        cidx[o] = i
                        cw[o] = exp((value_of_bits(raw, DT) - m) * inv_temp)
                        o += 1
            barrier()
        # top-p: the smallest key whose kept weight strictly above it is below top_p of the kept total
        p_floor = k_floor
        if top_p < 1.0:
            z = 0.0
            for j in range(t, count, THREADS):
                k, w, i = element(j, compact, logits, base, ckey, cidx, cw, m, inv_temp, DT)
                if k >= k_floor:
                    z += w
            goal = top_p * group_sum(z, sfloat, NSG)
            lo = k_floor
            hi = top_key
            while lo < hi:
                mid = lo + ((hi - lo) >> 1)
                above = 0.0
                for j in range(t, count, THREADS):
                    k, w, i = element(j, compact, logits, base, ckey, cidx, cw, m, inv_temp, DT)
                    if k > mid and k >= k_floor:
                        above += w
                if group_sum(above, sfloat, NSG) < goal:
                    hi = mid
                else:
                    lo = mid + 1
            p_floor = lo
        # the draw: each invocation sums a contiguous chunk; one invocation scans the chunks' sums in order
        span = (count + THREADS - 1) // THREADS
        c0 = minimum(t * span, count)
        c1 = minimum(c0 + span, count)
        mine = 0.0
        for j in range(c0, c1):
            k, w, i = element(j, compact, logits, base, ckey, cidx, cw, m, inv_temp, DT)
            if k >= p_floor:
                mine += w
        barrier()
        prefix[t + 1] = mine
        barrier()
        if t == 0:
            prefix[0] = 0.0
            for j in range(THREADS):
                prefix[j + 1] = prefix[j] + prefix[j + 1]
        barrier()
        total = prefix[THREADS]
        target = uniform(seeds[0], r) * total
        if target >= total:
            target = bitcast(bitcast(total, u32) - 1, f32)
        if prefix[t] <= target and target < prefix[t + 1]:
            running = prefix[t]
            chosen = -1
            last = -1
            for j in range(c0, c1):
                k, w, i = element(j, compact, logits, base, ckey, cidx, cw, m, inv_temp, DT)
                if k >= p_floor:
                    if w > 0.0:
                        last = i
                    running += w
                    if chosen < 0 and running > target:
                        chosen = i
            out[r] = chosen if chosen >= 0 else last

    return sample
