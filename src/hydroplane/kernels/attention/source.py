"""The fused attention kernels, written in the kernel language: O = softmax(Q Kᵀ * scale) V, FlashAttention-2 style.

- `attention`: one workgroup per (query block, head, batch) (and per KV split in the decode path). WM subgroups each
  own SMQ query tiles of QT rows; per block of BN keys, K and V are staged through shared memory (16-byte chunks,
  the next block's loads issued into registers before the multiplications that hide them), each subgroup computes
  its scores S = Q Kᵀ with `coop.mul_add` into f32 accumulators of QT x SN, scales and masks them with `coop.map`
  (the element's row and column against the causal diagonal and the KV length), keeps the running row maximum and
  sum with `coop.reduce`, rescales its output accumulators, converts P to the A use (`coop.convert` to the input
  type, then `coop.convert_use`) and accumulates O += P V. At the end O is divided by the row sum. SPLIT (the
  decode path, flash-decoding) instead writes each split's unnormalised O and its row maximum and sum (f32).
- `attention_combine(IN)`: the second pass of the decode path: per output row the splits' partial results merged.
  FUSED (the main pass's constexpr, `plan.FUSED_COMBINE`): no second pass; every split's workgroup arrives at a
  counter after writing its partial results and the last to arrive merges them (`combined_by_last`), with the
  combining pass's own code (`merge_splits`, `lane_to_shared`, `lanes_merged`): the same bits.

Every buffer of the main kernel is a view of 16-byte elements (`vector_type(u32, 4)`): Q, K and V rows (D elements
of 16 bits, D a multiple of 16) are read as chunks, the output tiles stored through the view (its alignment known to
the driver); only the row statistics are f32 scalars. The input type IN (f16 or bf16) is a constexpr. The arithmetic is
the float64 softmax's of the f32 scores (docs/attention.md): a score is the f32 product sum times the f32 scale, in
natural units; the exponentials are exp2((s - m) * log2(e)), the difference taken first so that no scale within
f32's range overflows where the softmax does not. A masked score is -inf and the running maximum starts at -inf; a
maximum of -inf is read as 0 in the exponentials (exp2(-inf) = 0, never -inf - -inf = NaN), so a row that sees no
key keeps a zero sum and writes zeros, while a NaN or +inf score reaches the row as NaN, as in the softmax.
`maximum` leaves NaNs out; the exponentials put them back. This module imports only the language.
"""

import functools
import math
from dataclasses import dataclass

from hydroplane.lang import (
    Buffer,
    atomic_add,
    atomic_exchange,
    barrier,
    bitcast,
    constexpr,
    coop,
    exp2,
    f16,
    f32,
    fence,
    func,
    kernel_source,
    lane_id,
    local_array,
    local_index,
    maximum,
    minimum,
    readonly,
    s32,
    select,
    shared_array,
    static_assert,
    static_range,
    subgroup_id,
    u32,
    vec,
    vector_type,
    workgroup_id,
)

V4 = vector_type(u32, 4)  # 16 bytes: every staged copy and the output stores move these
WIDE = 8  # 16-bit elements per V4
MASKED = -math.inf  # a masked score: exp(-inf - m) is 0 for every m
START = -math.inf  # the running maximum before any key (every finite score is above it, however large the scale)
LOG2E = math.log2(math.e)


@func
def larger(x, y):
    return maximum(x, y)


@func
def add(x, y):
    return x + y


@func
def larger_of(row, col, x, y):
    return maximum(x, y)


@func
def exp_of(x, m):
    """exp(x - m) as exp2((x - m) * log2 e), a maximum m of -inf read as 0: exp(-inf) = 0 for a masked or -inf x
    (never -inf - -inf = NaN), a NaN x or m stays NaN, x = m = +inf gives NaN (the softmax's inf - inf)."""
    base = m
    if m == f32(START):
        base = f32(0.0)
    return exp2((x - base) * f32(LOG2E))


@func
def exp_minus(row, col, x, m):
    """exp(x - m) per element: the probabilities from scores and the row maximum, and the rescale factor of old
    rows (x the old maximum, m the new)."""
    return exp_of(x, m)


@func
def position_of(row, q_len, diagonal, GROUPED: constexpr):
    """The position among the keys of the query in row `row` of a head's rows: row + diagonal (diagonal = S_kv - S_q,
    aligned bottom-right); GROUPED (a KV head's query heads packed one after another, q_len rows each): the row's
    query is row % q_len."""
    q = row
    if GROUPED:
        q = row % q_len
    return q + diagonal


@func
def seen_any(row, q_len, kv_end, CAUSAL: constexpr, GROUPED: constexpr):
    """Whether the query in row `row` sees a key at all (kv_end keys in use): every query does when there are keys,
    except (CAUSAL) those before the diagonal (position < 0); a window never empties a row (the query's own position,
    or without causal masking the last key, is always inside it)."""
    seen = kv_end > 0
    if CAUSAL:
        seen = position_of(row, q_len, kv_end - q_len, GROUPED) >= 0
    return seen


@func
def divided_by(row, col, x, total, q_first, q_len, kv_end, CAUSAL: constexpr, GROUPED: constexpr):
    """x / total for a row that sees keys (0 / 0 = NaN where every score it saw was -inf, as in the softmax), 0 for a
    row that sees none."""
    y = x / total
    if not seen_any(q_first + row, q_len, kv_end, CAUSAL, GROUPED):
        y = f32(0.0)
    return y


@func
def scaled_score(row, col, x, q_first, k_first, k_limit, q_len, diagonal, scale, window, CAUSAL: constexpr,
                 WINDOWED: constexpr, GROUPED: constexpr, MASK: constexpr):
    """A score x * scale; with MASK, MASKED where the key lies at or past k_limit, (CAUSAL) past the query's
    position or (WINDOWED) `window` or more before it (row q_first + row's position: position_of)."""
    y = x * scale
    if MASK:
        key = k_first + col
        position = position_of(q_first + row, q_len, diagonal, GROUPED)
        if key >= k_limit:
            y = f32(MASKED)
        if CAUSAL:
            if key > position:
                y = f32(MASKED)
        if WINDOWED:
            if position - key >= window:
                y = f32(MASKED)
    return y


@func
def chunk_of(source, base, i, row0, row_limit, CHUNKS: constexpr, GUARD: constexpr):
    """Chunk i (CHUNKS V4s a row) of the rows from row0 of a row-major array of V4s starting at V4 index base;
    with GUARD, rows at or past row_limit read zeros."""
    r = i // CHUNKS
    c = i - r * CHUNKS
    if GUARD:
        value = vec(u32(0), u32(0), u32(0), u32(0))
        if row0 + r < row_limit:
            value = source[base + (row0 + r) * CHUNKS + c]
        return value
    return source[base + (row0 + r) * CHUNKS + c]


@func
def fetch_rows(regs, source, base, row0, row_limit, ROWS: constexpr, CHUNKS: constexpr, THREADS: constexpr,
               GUARD: constexpr):
    """This invocation's chunks of ROWS rows into regs (chunks local_index(), + THREADS, ...): the loads are issued
    now, put_rows stores them into shared memory later."""
    TOTAL = ROWS * CHUNKS
    first = local_index()
    for t in static_range((TOTAL + THREADS - 1) // THREADS):
        i = first + t * THREADS
        if TOTAL % THREADS == 0:
            regs[t] = chunk_of(source, base, i, row0, row_limit, CHUNKS, GUARD)
        elif i < TOTAL:
            regs[t] = chunk_of(source, base, i, row0, row_limit, CHUNKS, GUARD)


@func
def put_rows(shared, base, regs, ROWS: constexpr, CHUNKS: constexpr, THREADS: constexpr, LDS: constexpr):
    """The chunks fetch_rows loaded into shared[base:], rows LDS V4s apart (LDS - CHUNKS: padding against bank
    conflicts)."""
    TOTAL = ROWS * CHUNKS
    first = local_index()
    for t in static_range((TOTAL + THREADS - 1) // THREADS):
        i = first + t * THREADS
        r = i // CHUNKS
        if TOTAL % THREADS == 0:
            shared[base + i + r * (LDS - CHUNKS)] = regs[t]
        elif i < TOTAL:
            shared[base + i + r * (LDS - CHUNKS)] = regs[t]


@func
def copy_tile_out(dest, shared, region, dest_base, row0, row_limit, ROWS: constexpr, CHUNKS: constexpr,
                  LDD: constexpr, SG: constexpr):
    """A subgroup writes the ROWS x CHUNKS V4s it staged at shared[region:] (rows CHUNKS apart) to dest rows from
    row0 (LDD V4s apart, from V4 index dest_base), the rows before row_limit only."""
    for i in range(lane_id(), ROWS * CHUNKS, SG):
        r = i // CHUNKS
        if row0 + r < row_limit:
            dest[dest_base + (row0 + r) * LDD + i - r * CHUNKS] = shared[region + i]


def attention_threads(constexprs: dict) -> int:
    return constexprs["WM"] * constexprs["SG"]


def block_rows(WM, SMQ, QT, SN, NS, KSPLIT=False, QROUNDS=1, DSPLIT=False) -> tuple[int, int]:  # noqa: N803
    """(Q rows staged at a time, keys of a block): KSPLIT and DSPLIT share one group of query tiles among the
    subgroups (KSPLIT: each takes its own key tiles of a WM times longer block; DSPLIT: every subgroup every key
    and its own columns of O); otherwise each subgroup has its own query tiles (QROUNDS: staged a part at a time)."""
    if KSPLIT:
        return SMQ * QT, WM * NS * SN
    if DSPLIT:
        return SMQ * QT, NS * SN
    return WM * SMQ * QT // QROUNDS, NS * SN


def shared_chunks(D, PAD, WM, SMQ, QT, SN, NS, KSPLIT=False, QROUNDS=1, DSPLIT=False,  # noqa: N803
                  FUSED_LANES=0) -> int:  # noqa: N803
    """V4s of the one shared array: the Q block (QROUNDS: a part of it at a time), or the K and V blocks, or the
    edge tiles' regions (KSPLIT: the subgroups share the query tiles and split each key block; their results meet
    in D / SN + 1 tile regions), or (FUSED_LANES: the fused combine's split lanes) one row's slot of the combine
    in the last workgroup (`combine_slot`)."""
    lds = D // WIDE + PAD
    region = QT * SN // 4  # an f32 tile (the largest staged tile), per subgroup
    q_rows, keys = block_rows(WM, SMQ, QT, SN, NS, KSPLIT, QROUNDS, DSPLIT)
    return max(q_rows * lds, 2 * keys * lds, WM * region, (D // SN + 1) * region if KSPLIT else 0,
               combine_slot(D, FUSED_LANES) if FUSED_LANES else 0)


def combine_slot(D, LANES) -> int:  # noqa: N803
    """V4s of shared memory a row takes while its split lanes are merged (`lane_to_shared`): LANES x D / 4 values
    and LANES (maximum, sum) pairs."""
    return LANES * (D // 4 + 1)


FUSED_CHAINS = 8  # the fused combine's merges an invocation advances together (their loads in flight at once)


def fused_chains(ITEMS, THREADS) -> int:  # noqa: N803
    """Merges an invocation of the last workgroup advances together: FUSED_CHAINS, or fewer where the round has
    fewer items per invocation."""
    return max(1, min(FUSED_CHAINS, -(-ITEMS // THREADS)))


def fused_rows(SH, ROWS, D, LANES) -> int:  # noqa: N803
    """Rows the last workgroup merges at a time: as many as SH shared V4s hold (at least one), at most ROWS."""
    return max(1, min(ROWS, SH // combine_slot(D, LANES)))


def register_chunks(D, WM, SMQ, QT, SN, NS, SG, KSPLIT=False, QROUNDS=1, DSPLIT=False) -> int:  # noqa: N803
    """V4 registers an invocation holds between a fetch and its put: its chunks of the Q block (or of a round of it)
    or of a K/V block."""
    threads = WM * SG
    q_rows, keys = block_rows(WM, SMQ, QT, SN, NS, KSPLIT, QROUNDS, DSPLIT)
    return max(-(-q_rows * D // WIDE // threads), -(-keys * D // WIDE // threads))


@kernel_source(local_size=attention_threads, name="attention")
def attention(q4: Buffer[V4, readonly], k4: Buffer[V4, readonly], v4: Buffer[V4, readonly], out4: Buffer[V4],
              o_part4: Buffer[V4], ml_part: Buffer[f32], kv_valid: Buffer[s32, readonly], counters: Buffer[s32],
              S_Q: s32, S_KV: s32, HEADS: s32, KV_HEADS: s32, SPLITS: s32, SPLIT_LEN: s32, scale: f32, WINDOW: s32,
              Q_LEN: s32, IN: constexpr, D: constexpr, QT: constexpr, SN: constexpr, QK: constexpr, WM: constexpr,
              SMQ: constexpr, NS: constexpr, SG: constexpr, PAD: constexpr = 1, CAUSAL: constexpr = False,
              WINDOWED: constexpr = False, GROUPED: constexpr = False, SPLIT: constexpr = False,
              GUARD_KV: constexpr = True, DIRECT_P: constexpr = False, KSPLIT: constexpr = False,
              QROUNDS: constexpr = 1, KV_DEVICE: constexpr = False, DSPLIT: constexpr = False,
              FUSED: constexpr = False, LANES: constexpr = 1):
    """The main pass (attention_body) with Q read from q4. FUSED (with SPLIT): the splits combined by the last
    workgroup of each query block to arrive (combined_by_last: `counters` holds one arrival count per (query block,
    head, batch), zero between calls; LANES the combining pass's split lanes, for its merge order) into out4;
    otherwise counters is not read."""
    attention_body(q4, k4, v4, out4, o_part4, ml_part, kv_valid, S_Q, S_KV, HEADS, KV_HEADS, SPLITS, SPLIT_LEN,
                   scale, WINDOW, Q_LEN, IN, D, QT, SN, QK, WM, SMQ, NS, SG, PAD, CAUSAL, WINDOWED, GROUPED, SPLIT,
                   GUARD_KV, DIRECT_P, KSPLIT, QROUNDS, KV_DEVICE, DSPLIT, Q_FROM_BUFFER, (), counters, FUSED, LANES)


@dataclass(frozen=True)
class QSource:
    """Where the main pass's Q comes from when it is not q4 (a kernel of another module passes one to
    attention_body, with `extra`, a tuple of its own arguments): `enter(extra, k4, v4, kv_head, kv_base, split_lo,
    S_KV, SPLIT_LEN, SPLIT, D, THREADS, NSG, QSRC)` runs first in every workgroup (before a split without keys
    returns: a decode step's new key and value row written into the cache, read after the Q block's barriers by the
    workgroup whose split holds it); `fill(smem, extra, q_row0, q0, S_Q, BM, CHUNKS, THREADS, LDS, NSG, QSRC)`
    writes the Q block, BM rows of CHUNKS V4s LDS apart from smem[0] (row r is the query row q0 + r of the q head
    q_row0 + q0 + r, rows at or past S_Q zero)."""

    enter: object
    fill: object
    NORM: bool = False
    NEOX: bool = False
    ON: bool = True


Q_FROM_BUFFER = QSource(None, None, ON=False)  # the plain main pass: Q read from q4


@func
def attention_body(q4, k4, v4, out4, o_part4, ml_part, kv_valid, S_Q, S_KV, HEADS, KV_HEADS, SPLITS, SPLIT_LEN, scale,
                   WINDOW, Q_LEN, IN: constexpr, D: constexpr, QT: constexpr, SN: constexpr, QK: constexpr,
                   WM: constexpr, SMQ: constexpr, NS: constexpr, SG: constexpr, PAD: constexpr, CAUSAL: constexpr,
                   WINDOWED: constexpr, GROUPED: constexpr, SPLIT: constexpr, GUARD_KV: constexpr,
                   DIRECT_P: constexpr, KSPLIT: constexpr, QROUNDS: constexpr, KV_DEVICE: constexpr,
                   DSPLIT: constexpr, QSRC: constexpr, extra, counters, FUSED: constexpr, LANES: constexpr):
    """One block of BM = WM * SMQ * QT queries of one head against the keys of its split (all keys without SPLIT).
    GUARD_KV False (the launcher's promise: S_KV and SPLIT_LEN multiples of BN) compiles the KV bounds out.
    WINDOWED masks the keys WINDOW or more before a query's position and skips the key blocks every query of the
    block has left behind. GROUPED (grouped-query decoding): HEADS = KV_HEADS are the KV heads and a head's S_Q rows
    are its query heads' Q_LEN queries each, packed (they are consecutive rows of Q and O): one workgroup reads K and
    V once for the whole group; row r is query r % Q_LEN. Otherwise Q_LEN = S_Q. KSPLIT: the WM subgroups share
    the block's SMQ query tiles (BM = SMQ * QT) and split each key block (BN = WM * NS * SN, subgroup g taking key
    tiles g * NS ...), their maxima, sums and rows merged through shared memory at the end (more loads in flight for
    the few rows of a decode step); subgroup 0 writes. QROUNDS > 1 stages the Q block through shared memory in that
    many parts (WM / QROUNDS subgroups' rows each): a block whose Q rows exceed the shared memory its K and V need
    (8 subgroups at head dim 256 in 48 KiB). KV_DEVICE: the keys in use are the first kv_valid[0] (clamped to
    0 .. S_KV) of the S_KV rows (a preallocated KV cache whose length a captured decode step reads from the device):
    the keys past it are masked and the causal diagonal is aligned to it; S_KV stays the rows' stride.
    DSPLIT: the WM subgroups share the block's SMQ query tiles (BM = SMQ * QT) and every key (BN = NS * SN); each
    computes the same scores and statistics and P V for its own D / WM columns of O (a head dim of 256 in a decode
    step: a quarter of the output accumulators and of the staged loads per invocation, four subgroups' loads in
    flight). With SPLIT, a workgroup whose split holds no key for its rows returns at once (the combining pass reads
    only the splits a row sees).
    DIRECT_P converts P from the f32 scores to the input type's A use in one step (NV2's conversions), for a target
    that offers no accumulator of the input type; otherwise coop.convert, then coop.convert_use.
    QSRC (a QSource, with its `extra` arguments; Q_FROM_BUFFER: Q read from q4): Q made by another kernel's code,
    one query per head (a decode step: Q_LEN 1, QROUNDS 1). FUSED (with SPLIT): after its partial results (or, a
    split without keys for its rows, instead of them) every workgroup arrives at counters[(batch, head, block)];
    the last merges the block's rows into out4 (combined_by_last, LANES split lanes as the combining pass's)."""
    static_assert(D % QK == 0 and D % SN == 0 and QK % WIDE == 0 and SN % WIDE == 0,
                  "D is a multiple of the tiles QK and SN, which are multiples of 8")
    static_assert(not (KSPLIT and DSPLIT) and (not DSPLIT or (D // SN) % WM == 0),
                  "DSPLIT: whole output tiles per subgroup, without KSPLIT")
    QG = 1 if KSPLIT or DSPLIT else WM  # query groups (of SMQ tiles) and key groups (of NS tiles) per block
    KG = WM if KSPLIT else 1
    BM = QG * SMQ * QT
    BN = KG * NS * SN
    THREADS = WM * SG
    CHUNKS = D // WIDE  # V4s in a row of Q, K, V or O
    LDS = CHUNKS + PAD  # shared rows, padded
    KD = D // QK  # Q's A tiles per query tile
    DT = D // SN  # output tiles per query tile
    DTS = DT // WM if DSPLIT else DT  # those this subgroup holds
    REGION = QT * SN // 4  # V4s of one subgroup's edge-tile region (an f32 tile)
    TA = coop.Matrix[IN, QT, QK, coop.A]
    TK = coop.Matrix[IN, QK, SN, coop.B]
    TV = coop.Matrix[IN, SN, SN, coop.B]
    TP = coop.Matrix[IN, QT, SN, coop.A]
    TS = coop.Matrix[f32, QT, SN, coop.Accumulator]
    static_assert(not QSRC.ON or QROUNDS == 1, "Q from a QSource: in one round")
    static_assert(QROUNDS == 1 or (not KSPLIT and not DSPLIT and WM % QROUNDS == 0),
                  "Q rounds of whole subgroups' rows")
    static_assert(not FUSED or SPLIT, "FUSED combines the splits of the decode path")
    SH = shared_chunks(D, PAD, WM, SMQ, QT, SN, NS, KSPLIT, QROUNDS, DSPLIT, LANES if FUSED else 0)
    smem = shared_array(V4, SH)
    regs = local_array(V4, register_chunks(D, WM, SMQ, QT, SN, NS, SG, KSPLIT, QROUNDS, DSPLIT))

    sg = subgroup_id()
    qg = 0 if KSPLIT or DSPLIT else sg  # this subgroup's query tiles (qg * SMQ ...) and key tiles (kg * NS ...)
    kg = sg if KSPLIT else 0
    dn0 = sg * DTS if DSPLIT else 0  # and its first output tile
    batch = workgroup_id(2)
    head = workgroup_id(1)
    block = workgroup_id(0) // SPLITS
    split = workgroup_id(0) - block * SPLITS
    if CAUSAL:  # the blocks with the most keys first: the GPU's last wave is the short blocks
        block = (S_Q + BM - 1) // BM - 1 - block
    kv_head = head // (HEADS // KV_HEADS)
    q0 = block * BM
    q_base = (batch * HEADS + head) * S_Q * CHUNKS  # V4 index of this head's Q (and O) rows
    kv_base = (batch * KV_HEADS + kv_head) * S_KV * CHUNKS
    kv_end = S_KV  # the keys in use
    if KV_DEVICE:
        kv_end = minimum(maximum(kv_valid[0], 0), S_KV)
    diagonal = kv_end - Q_LEN  # causal: query i sees keys j <= i + diagonal (aligned bottom-right)
    first_q = q0  # the block's first and last query (GROUPED: any of a head's queries)
    last_q = minimum(q0 + BM, S_Q) - 1
    if GROUPED:
        first_q = 0
        last_q = Q_LEN - 1
    kv_lo = split * SPLIT_LEN
    kv_hi = minimum(kv_end, kv_lo + SPLIT_LEN)
    unmasked_hi = kv_hi  # keys below it are seen by every query of the block
    if CAUSAL:
        kv_hi = minimum(kv_hi, last_q + diagonal + 1)
        unmasked_hi = minimum(kv_hi, first_q + diagonal + 1)
    unmasked_lo = kv_lo  # keys from it on are inside every query's window
    if WINDOWED:  # the first query's window starts at q0 + diagonal - WINDOW + 1: whole blocks before it skipped
        kv_lo = kv_lo + maximum(first_q + diagonal - WINDOW + 1 - kv_lo, 0) // BN * BN
        unmasked_lo = last_q + diagonal - WINDOW + 1
    blocks = maximum((kv_hi - kv_lo + BN - 1) // BN, 0)
    if QSRC.ON:
        QSRC.enter(extra, k4, v4, kv_head, kv_base, split * SPLIT_LEN, S_KV, SPLIT_LEN, SPLIT, D, THREADS, WM, QSRC)
    if SPLIT and blocks == 0:  # no key of this split for these rows: the combining pass does not read it
        if FUSED:  # but it arrives (and, the last, merges the others)
            combined_by_last(smem, SH, o_part4, ml_part, out4, counters,
                             (batch * HEADS + head) * ((S_Q + BM - 1) // BM) + block, SPLITS,
                             (batch * HEADS + head) * SPLITS, q0, minimum(q0 + BM, S_Q), q_base, kv_end, S_Q,
                             SPLITS, SPLIT_LEN, WINDOW, Q_LEN, IN, D, LANES, BM, THREADS, CAUSAL, WINDOWED, GROUPED)
        return

    # The Q block (rows past S_Q zero) through shared memory into each subgroup's A tiles, kept for the whole loop.
    qa = local_array(TA, SMQ * KD)
    if QROUNDS == 1:
        if not QSRC.ON:
            fetch_rows(regs, q4, q_base, q0, S_Q, BM, CHUNKS, THREADS, True)
            put_rows(smem, 0, regs, BM, CHUNKS, THREADS, LDS)
        else:
            QSRC.fill(smem, extra, head * S_Q, q0, S_Q, BM, CHUNKS, THREADS, LDS, WM, QSRC)
        barrier()
        for i in static_range(SMQ):
            for kd in static_range(KD):
                qa[i * KD + kd] = coop.load(TA, smem, ((qg * SMQ + i) * QT) * LDS + kd * QK // WIDE, LDS,
                                            coop.RowMajor)
        barrier()
    else:
        RB = BM // QROUNDS  # rows per round: those of WM / QROUNDS subgroups
        for rnd in static_range(QROUNDS):
            fetch_rows(regs, q4, q_base, q0 + rnd * RB, S_Q, RB, CHUNKS, THREADS, True)
            put_rows(smem, 0, regs, RB, CHUNKS, THREADS, LDS)
            barrier()
            if sg // (WM // QROUNDS) == rnd:
                for i in static_range(SMQ):
                    for kd in static_range(KD):
                        qa[i * KD + kd] = coop.load(TA, smem, ((qg * SMQ + i) * QT - rnd * RB) * LDS + kd * QK // WIDE,
                                                    LDS, coop.RowMajor)
            barrier()

    o = local_array(TS, SMQ * DTS)
    row_max = local_array(TS, SMQ)
    row_sum = local_array(TS, SMQ)
    for i in static_range(SMQ):
        row_max[i] = coop.fill(TS, START)
        row_sum[i] = coop.fill(TS, 0.0)
        for dn in static_range(DTS):
            o[i * DTS + dn] = coop.fill(TS, 0.0)
    s = local_array(TS, SMQ * NS)
    p = local_array(TP, SMQ * NS)
    V_BASE = BN * LDS  # the V block follows the K block

    if blocks > 0:
        fetch_rows(regs, k4, kv_base, kv_lo, kv_hi, BN, CHUNKS, THREADS, GUARD_KV)
        put_rows(smem, 0, regs, BN, CHUNKS, THREADS, LDS)
        barrier()
    for j in range(blocks):
        k0 = kv_lo + j * BN
        more = j + 1 < blocks
        fetch_rows(regs, v4, kv_base, k0, kv_hi, BN, CHUNKS, THREADS, GUARD_KV)  # V_j, stored after the scores
        for t in static_range(NS):
            for i in static_range(SMQ):
                s[i * NS + t] = coop.fill(TS, 0.0)
            for kd in static_range(KD):
                kb = coop.load(TK, smem, ((kg * NS + t) * SN) * LDS + kd * QK // WIDE, LDS, coop.ColumnMajor)  # Kᵀ
                for i in static_range(SMQ):
                    s[i * NS + t] = coop.mul_add(qa[i * KD + kd], kb, s[i * NS + t])
        masked = k0 + BN > unmasked_hi
        if WINDOWED:
            masked = masked or k0 < unmasked_lo
        for i in static_range(SMQ):
            q_first = q0 + (qg * SMQ + i) * QT
            for t in static_range(NS):
                if masked:
                    s[i * NS + t] = coop.map(scaled_score, s[i * NS + t], q_first, k0 + (kg * NS + t) * SN, kv_hi,
                                             Q_LEN, diagonal, scale, WINDOW, CAUSAL, WINDOWED, GROUPED, True)
                else:
                    s[i * NS + t] = coop.map(scaled_score, s[i * NS + t], q_first, k0 + (kg * NS + t) * SN, kv_hi,
                                             Q_LEN,
                                             diagonal, scale, WINDOW, CAUSAL, WINDOWED, GROUPED, False)
            # the block's row maximum: the score matrices combined element by element, then one reduction
            widest = s[i * NS]
            for t in static_range(1, NS):
                widest = coop.map(larger_of, widest, s[i * NS + t])
            new_max = coop.map(larger_of, row_max[i], coop.reduce(widest, coop.Row, larger))
            rescale = coop.map(exp_minus, row_max[i], new_max)
            row_max[i] = new_max
            probs = coop.fill(TS, 0.0)  # the probabilities summed element by element, then one reduction
            for t in static_range(NS):
                prob = coop.map(exp_minus, s[i * NS + t], new_max)
                probs = probs + prob
                if DIRECT_P:  # no accumulator of the input type on the target (bf16 on the H200): one NV2 step
                    p[i * NS + t] = coop.convert(prob, IN, coop.A)
                else:
                    p[i * NS + t] = coop.convert_use(coop.convert(prob, IN), coop.A)
            row_sum[i] = row_sum[i] * rescale + coop.reduce(probs, coop.Row, add)
            for dn in static_range(DTS):
                o[i * DTS + dn] = o[i * DTS + dn] * rescale
        put_rows(smem, V_BASE, regs, BN, CHUNKS, THREADS, LDS)
        if more:
            fetch_rows(regs, k4, kv_base, k0 + BN, kv_hi, BN, CHUNKS, THREADS, GUARD_KV)  # K_j+1, stored after P V
        barrier()
        for dn in static_range(DTS):
            for t in static_range(NS):
                vb = coop.load(TV, smem, V_BASE + ((kg * NS + t) * SN) * LDS + (dn0 + dn) * SN // WIDE, LDS,
                               coop.RowMajor)
                for i in static_range(SMQ):
                    o[i * DTS + dn] = coop.mul_add(p[i * NS + t], vb, o[i * DTS + dn])
        if more:
            put_rows(smem, 0, regs, BN, CHUNKS, THREADS, LDS)
        barrier()

    if KSPLIT:  # the subgroups' partial results of the same rows merged: maxima, then sums and rows in turn
        for i in static_range(SMQ):
            coop.store(row_max[i], smem, sg * REGION, SN // 4, coop.RowMajor)
            barrier()
            top = row_max[i]
            for r in static_range(WM):
                top = coop.map(larger_of, top, coop.load(TS, smem, r * REGION, SN // 4, coop.RowMajor))
            factor = coop.map(exp_minus, row_max[i], top)
            row_max[i] = top
            row_sum[i] = row_sum[i] * factor
            for dn in static_range(DT):
                o[i * DT + dn] = o[i * DT + dn] * factor
            barrier()
            for r in static_range(WM):
                if sg == r:
                    if r > 0:
                        for dn in static_range(DT):
                            o[i * DT + dn] = o[i * DT + dn] + coop.load(TS, smem, dn * REGION, SN // 4,
                                                                        coop.RowMajor)
                        row_sum[i] = row_sum[i] + coop.load(TS, smem, DT * REGION, SN // 4, coop.RowMajor)
                    for dn in static_range(DT):
                        coop.store(o[i * DT + dn], smem, dn * REGION, SN // 4, coop.RowMajor)
                    coop.store(row_sum[i], smem, DT * REGION, SN // 4, coop.RowMajor)
                barrier()
            for dn in static_range(DT):
                o[i * DT + dn] = coop.load(TS, smem, dn * REGION, SN // 4, coop.RowMajor)
            row_sum[i] = coop.load(TS, smem, DT * REGION, SN // 4, coop.RowMajor)
            barrier()

    writer = sg == 0 if KSPLIT else True  # KSPLIT: every subgroup holds the merged rows; subgroup 0 writes them
    stats_writer = sg == 0 if KSPLIT or DSPLIT else True  # DSPLIT: every subgroup holds the same statistics
    whole = q0 + BM <= S_Q  # the same in the whole workgroup: tiles store straight to the buffers
    region = sg * REGION
    for i in static_range(SMQ):
        row0 = q0 + (qg * SMQ + i) * QT
        for dn in static_range(DTS):
            column = (dn0 + dn) * SN  # of O
            if SPLIT:  # unnormalised O of this split, f32: o_part[batch, head, split, row, :]
                part_base = ((batch * HEADS + head) * SPLITS + split) * S_Q * (D // 4)
                if whole:
                    if writer:
                        coop.store(o[i * DTS + dn], o_part4, part_base + row0 * (D // 4) + column // 4, D // 4,
                                   coop.RowMajor)
                else:
                    coop.store(o[i * DTS + dn], smem, region, SN // 4, coop.RowMajor)
                    barrier()
                    if writer:
                        copy_tile_out(o_part4, smem, region, part_base + column // 4, row0, S_Q, QT, SN // 4,
                                      D // 4, SG)
                    barrier()
            else:
                normalised = coop.map(divided_by, o[i * DTS + dn], row_sum[i], row0, Q_LEN, kv_end, CAUSAL,
                                      GROUPED)
                if DIRECT_P:  # no accumulator of the input type: the output tile is stored as an A matrix of it
                    result = coop.convert(normalised, IN, coop.A)
                else:
                    result = coop.convert(normalised, IN)
                if whole:
                    if writer:
                        coop.store(result, out4, q_base + row0 * CHUNKS + column // WIDE, CHUNKS, coop.RowMajor)
                else:
                    coop.store(result, smem, region, SN // WIDE, coop.RowMajor)
                    barrier()
                    if writer:
                        copy_tile_out(out4, smem, region, q_base + column // WIDE, row0, S_Q, QT, SN // WIDE,
                                      CHUNKS, SG)
                    barrier()
        if SPLIT:  # the row maximum and sum: ml_part[batch, head, split, row, 0 and 1]
            stats_base = ((batch * HEADS + head) * SPLITS + split) * S_Q * 2
            coop.store(row_max[i], smem, region, SN // 4, coop.RowMajor)
            barrier()
            lane = lane_id()
            if stats_writer and lane < QT and row0 + lane < S_Q:
                ml_part[stats_base + (row0 + lane) * 2] = bitcast(smem[region + lane * (SN // 4)][0], f32)
            barrier()
            coop.store(row_sum[i], smem, region, SN // 4, coop.RowMajor)
            barrier()
            if stats_writer and lane < QT and row0 + lane < S_Q:
                ml_part[stats_base + (row0 + lane) * 2 + 1] = bitcast(smem[region + lane * (SN // 4)][0], f32)
            barrier()
    if FUSED:
        combined_by_last(smem, SH, o_part4, ml_part, out4, counters,
                         (batch * HEADS + head) * ((S_Q + BM - 1) // BM) + block, SPLITS,
                         (batch * HEADS + head) * SPLITS, q0, minimum(q0 + BM, S_Q), q_base, kv_end, S_Q, SPLITS,
                         SPLIT_LEN, WINDOW, Q_LEN, IN, D, LANES, BM, THREADS, CAUSAL, WINDOWED, GROUPED)


V4F = vector_type(f32, 4)


def combine_threads(constexprs: dict) -> int:
    return constexprs["D"] // 4 * constexprs["LANES"]


def combine_lanes(d: int) -> int:
    """Split lanes of the combining pass: about 256 invocations of D / 4 (each holds four of a row's D values)."""
    return max(1, min(8, 1024 // d))


@func
def splits_seen(row, q_len, kv_end, split_len, splits, window, CAUSAL: constexpr, WINDOWED: constexpr,
                GROUPED: constexpr):
    """(first, end) of the splits holding a key the query in row `row` sees (kv_end keys in use; causal: keys up
    to its position; WINDOWED: from `window` - 1 before it): the main pass writes every one of them (its
    workgroups whose split holds no key for their rows write nothing)."""
    position = position_of(row, q_len, kv_end - q_len, GROUPED)
    hi = kv_end
    if CAUSAL:
        hi = minimum(hi, position + 1)
    lo = 0
    if WINDOWED:
        lo = maximum(position - window + 1, 0)
    return lo // split_len, minimum((maximum(hi, 0) + split_len - 1) // split_len, splits)


@func
def merged(m, x, y):
    """The weights of two partial results of maxima x (running) and y (new) against their maximum m."""
    return exp_of(x, m), exp_of(y, m)


@func
def merge_pair(top, total, value, m, s, o):
    """A running (maximum, rescaled sum, rescaled values) with a partial result (maximum m, sum s, values o)."""
    new = maximum(top, m)
    old_w, new_w = merged(new, top, m)
    return new, total * old_w + s * new_w, value * old_w + o * new_w


@func
def merge_splits(o_part, ml_part, first, row, c, lo, hi, S_Q, CH: constexpr, STEP: constexpr, BITS: constexpr):
    """Splits lo, lo + STEP, ... below hi of one head's partial results (its split 0 at `first`) merged online for
    four values (chunk c) of row `row`: (running maximum, rescaled sum, rescaled values). A split that saw no key
    (maximum -inf, sum 0) weighs 0. BITS: o_part is a view of u32 V4s (the main pass's o_part4), read as f32."""
    top = f32(START)
    total = f32(0.0)
    value = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
    for split in range(lo, hi, STEP):
        m, s, o = split_part(o_part, ml_part, first, row, c, split, S_Q, CH, BITS)
        top, total, value = merge_pair(top, total, value, m, s, o)
    return top, total, value


@func
def split_part(o_part, ml_part, first, row, c, split, S_Q, CH: constexpr, BITS: constexpr):
    """Split `split`'s partial result for row `row` of one head (its split 0 at `first`): (maximum, sum, the four
    values of chunk c). BITS: o_part is a view of u32 V4s, read as f32."""
    at = (first + split) * S_Q + row
    if BITS:
        part = bitcast(o_part[at * CH + c], f32)
    else:
        part = o_part[at * CH + c]
    return ml_part[at * 2], ml_part[at * 2 + 1], part


@func
def merge_chains(o_part4, ml_part, sh, first, r0, row_end, base, kv_end, S_Q, SPLITS, SPLIT_LEN, WINDOW, Q_LEN,
                 D: constexpr, LANES: constexpr, ITEMS: constexpr, K: constexpr, THREADS: constexpr,
                 CAUSAL: constexpr, WINDOWED: constexpr, GROUPED: constexpr):
    """The split lanes' merges (merge_splits's, in its order) of K items of rows r0 ...: items base + t * THREADS +
    local_index() (t < K; item i is row r0 + i // (LANES * D / 4), lane i // (D / 4) % LANES, chunk i % (D / 4)),
    advancing together one split a step so that their loads are in flight at once, into the rows' slots of sh
    (lane_to_shared). A step past an item's splits loads a split in range and keeps nothing of it."""
    CH = D // 4
    SLOT = combine_slot(D, LANES)
    lid = local_index()
    tops = local_array(f32, K)
    totals = local_array(f32, K)
    values = local_array(V4F, K)
    rows = local_array(s32, K)
    nexts = local_array(s32, K)  # each item's next split, and the end of its splits
    ends = local_array(s32, K)
    steps = 0
    for t in static_range(K):
        i = base + t * THREADS + lid
        r = i // (LANES * CH)
        row = minimum(r0 + r, row_end - 1)  # (an item past the rows loads the last row's splits, keeps nothing)
        lo, hi = splits_seen(row, Q_LEN, kv_end, SPLIT_LEN, SPLITS, WINDOW, CAUSAL, WINDOWED, GROUPED)
        if i >= ITEMS or r0 + r >= row_end:
            hi = lo
        rows[t] = row
        nexts[t] = lo + (i // CH) % LANES
        ends[t] = hi
        steps = maximum(steps, (hi - nexts[t] + LANES - 1) // LANES)
        tops[t] = f32(START)
        totals[t] = f32(0.0)
        values[t] = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
    for _ in range(steps):
        for t in static_range(K):
            split = nexts[t]
            valid = split < ends[t]
            m, s, o = split_part(o_part4, ml_part, first, rows[t], (base + t * THREADS + lid) % CH,
                                 minimum(split, maximum(ends[t] - 1, 0)), S_Q, CH, True)
            top, total, value = merge_pair(tops[t], totals[t], values[t], m, s, o)
            tops[t] = select(valid, top, tops[t])
            totals[t] = select(valid, total, totals[t])
            values[t] = select(valid, value, values[t])
            nexts[t] = split + LANES
    for t in static_range(K):
        i = base + t * THREADS + lid
        r = i // (LANES * CH)
        if i < ITEMS and r0 + r < row_end:
            lane_to_shared(sh, r * SLOT, tops[t], totals[t], values[t], i % CH, (i // CH) % LANES, CH, LANES)


@func
def lane_to_shared(sh, slot, top, total, value, c, lane, CH: constexpr, LANES: constexpr):
    """A split lane's running (maximum, sum, values) of chunk c into a row's slot of shared V4s (`combine_slot`,
    from sh[slot]): the values at slot + lane * CH + c, the maximum and sum (chunk 0's: every chunk of a lane has
    the same) at slot + LANES * CH + lane."""
    sh[slot + lane * CH + c] = bitcast(value, u32)
    if c == 0:
        sh[slot + LANES * CH + lane] = vec(bitcast(top, u32), bitcast(total, u32), u32(0), u32(0))


@func
def lanes_merged(top, total, value, sh, slot, c, seen, CH: constexpr, LANES: constexpr):
    """Lane 0's running (maximum, sum, values) of chunk c merged with lanes 1 ... LANES - 1 in turn from the row's
    slot (lane_to_shared), then O = values / sum; zeros for a row that sees no key (`seen` false)."""
    for other in static_range(1, LANES):
        stats = sh[slot + LANES * CH + other]
        top, total, value = merge_pair(top, total, value, bitcast(stats[0], f32), bitcast(stats[1], f32),
                                       bitcast(sh[slot + other * CH + c], f32))
    result = value / total
    if not seen:
        result = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
    return result


@func
def combined_by_last(sh, SH: constexpr, o_part4, ml_part, out4, counters, slot, arrivals, first, row0, row_end,
                     out_base, kv_end, S_Q, SPLITS, SPLIT_LEN, WINDOW, Q_LEN, IN: constexpr, D: constexpr,
                     LANES: constexpr, ROWS: constexpr, THREADS: constexpr, CAUSAL: constexpr, WINDOWED: constexpr,
                     GROUPED: constexpr):
    """The fused combine, run by every workgroup of a split block (THREADS invocations, all of them) once its
    partial results are written to o_part4 and ml_part (or instead of them where its split holds no key for its
    rows): it arrives at counters[slot], and the last of the `arrivals` workgroups merges rows row0 .. row_end of
    the head whose split 0 is `first` (partial rows S_Q apart) into out4 (V4 index out_base: row 0 of the head,
    D / 8 V4s a row, IN values), as `attention_combine` merges them (each split lane's chain of merge_pair over
    split_part in merge_splits's order, FUSED_CHAINS chains an invocation at once: merge_chains; the lanes into
    shared memory by lane_to_shared, then merged in turn by lanes_merged: the same bits), then sets the counter
    back to 0 for the next call.

    Memory order (Vulkan memory model): the workgroup barrier makes every invocation's partial writes available to
    invocation 0 and ordered before its release fence, which makes them available at device (QueueFamily) scope
    and orders them before its atomic increment; the increments form one chain, so the last one reads every other
    split's, and invocation 0's acquire fence after it makes their writes visible; the barrier hands that to the
    workgroup, whose every invocation fences again before reading. sh: SH shared V4s, free to use (the ticket goes
    through sh[0]); ROWS rows at most (the block), fused_rows at a time."""
    CH = D // 4
    RR = fused_rows(SH, ROWS, D, LANES)
    SLOT = combine_slot(D, LANES)
    lid = local_index()
    barrier()  # this workgroup's partial results written before invocation 0's release
    if lid == 0:
        fence("release")
        ticket = atomic_add(counters, slot, 1)
        fence("acquire")
        sh[0] = vec(u32(ticket), u32(0), u32(0), u32(0))
    barrier()
    if s32(sh[0][0]) == arrivals - 1:  # the last to arrive (the same in the whole workgroup)
        barrier()  # every invocation has read the ticket before the slots are written
        fence("acquire")
        ITEMS = RR * LANES * CH  # (row, lane, chunk) of a round: the lanes' merges into the slots,
        K = fused_chains(ITEMS, THREADS)  # K of them an invocation at a time
        for r0 in range(row0, row_end, RR):
            for base in range(0, ITEMS, K * THREADS):
                merge_chains(o_part4, ml_part, sh, first, r0, row_end, base, kv_end, S_Q, SPLITS, SPLIT_LEN, WINDOW,
                             Q_LEN, D, LANES, ITEMS, K, THREADS, CAUSAL, WINDOWED, GROUPED)
            barrier()
            for i in range(lid, RR * (CH // 2), THREADS):  # (row, chunk pair): the lanes merged, 8 values written
                r = i // (CH // 2)
                pair = i - r * (CH // 2)
                row = r0 + r
                if row < row_end:
                    seen = seen_any(row, Q_LEN, kv_end, CAUSAL, GROUPED)
                    words = local_array(u32, 4)
                    for h in static_range(2):
                        c = 2 * pair + h
                        stats = sh[r * SLOT + LANES * CH]  # lane 0's
                        result = lanes_merged(bitcast(stats[0], f32), bitcast(stats[1], f32),
                                              bitcast(sh[r * SLOT + c], f32), sh, r * SLOT, c, seen, CH, LANES)
                        words[2 * h] = bitcast(vec(IN(result[0]), IN(result[1])), u32)
                        words[2 * h + 1] = bitcast(vec(IN(result[2]), IN(result[3])), u32)
                    out4[out_base + row * (CH // 2) + pair] = vec(words[0], words[1], words[2], words[3])
            barrier()
        if lid == 0:
            atomic_exchange(counters, slot, 0)  # every split has arrived: the next call starts from zero


@func
def combined_rows(sx, o_part, ml_part, kv_valid, K, SPLITS, SPLIT_LEN, WINDOW, S_KV, ROWS: constexpr, D: constexpr,
                  LANES: constexpr, WINDOWED: constexpr, THREADS: constexpr, CPT: constexpr):
    """A one-token decode's output (K = KV heads x ROWS x D values, query head after query head: the causal main
    pass of attention_plan with the keys in use on the device; with GROUPED a KV head's ROWS rows are its query
    heads) merged from the main pass's split results by a workgroup of THREADS invocations, CPT chunks of four values
    each, into sx[0:K] as f16-rounded f32: the bits `attention_combine(f16)` writes, for the merges run in its order
    (lane l of LANES: splits l, l + LANES, ...; then the lanes in turn). The CPT x LANES merges advance together, so
    their loads are in flight at once. o_part: V4 of u32 bits; kv_valid[0]: an s32 read from a 32-bit buffer of
    another type. A consumer's prologue (kernels/quant/source.py's "combine")."""
    CH = D // 4
    lid = local_index()
    kv_end = minimum(maximum(bitcast(kv_valid[0], s32), 0), S_KV)
    lo, hi = splits_seen(0, 1, kv_end, SPLIT_LEN, SPLITS, WINDOW, True, WINDOWED, True)  # every row: one query
    tops = local_array(f32, CPT * LANES)
    totals = local_array(f32, CPT * LANES)
    values = local_array(V4F, CPT * LANES)
    firsts = local_array(s32, CPT)  # (split 0 of the chunk's KV head) x ROWS + its row
    columns = local_array(s32, CPT)
    for i in static_range(CPT * LANES):
        tops[i] = f32(START)
        totals[i] = f32(0.0)
        values[i] = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
    for t in static_range(CPT):
        chunk = minimum(lid + t * THREADS, K // 4 - 1)
        query = chunk // CH
        firsts[t] = query // ROWS * SPLITS * ROWS + query % ROWS
        columns[t] = chunk % CH
    for group in range(lo, hi, LANES):
        for lane in static_range(LANES):
            split = minimum(group + lane, hi - 1)
            valid = group + lane < hi
            for t in static_range(CPT):
                at = firsts[t] + split * ROWS
                i = t * LANES + lane
                top, total, value = merge_pair(tops[i], totals[i], values[i], ml_part[at * 2], ml_part[at * 2 + 1],
                                               bitcast(o_part[at * CH + columns[t]], f32))
                tops[i] = select(valid, top, tops[i])
                totals[i] = select(valid, total, totals[i])
                values[i] = select(valid, value, values[i])
    seen = seen_any(0, 1, kv_end, True, True)
    for t in static_range(CPT):
        top = tops[t * LANES]
        total = totals[t * LANES]
        value = values[t * LANES]
        for lane in static_range(1, LANES):
            top, total, value = merge_pair(top, total, value, tops[t * LANES + lane], totals[t * LANES + lane],
                                           values[t * LANES + lane])
        result = value / total
        if not seen:
            result = vec(f32(0.0), f32(0.0), f32(0.0), f32(0.0))
        chunk = lid + t * THREADS
        if chunk < K // 4:
            for j in static_range(4):
                sx[chunk * 4 + j] = f32(f16(result[j]))


@functools.cache
def attention_combine(IN):  # noqa: N803 -- the output's element type, read as the kernel's constant
    """The decode path's second pass, in one pass over the splits: one workgroup per (row, head, batch), LANES lanes
    of D / 4 invocations, lane l merging splits l, l + LANES, ... online (running maximum, rescaled sum and row,
    each four values a 16-byte load), then the lanes merged through shared memory into the output row (IN).
    GROUPED: the rows are a KV head's packed query rows (row % Q_LEN is the query). KV_DEVICE: the keys in use
    are kv_valid[0] (as the main pass reads them: a row that sees none writes zeros). Only the splits holding a key
    the row sees are read (`splits_seen`: the others weigh 0; their workgroups wrote nothing), so the pass's cost
    follows the keys in use and the window."""

    @kernel_source(local_size=combine_threads, name=f"attention_combine_{IN}")
    def combine(o_part: Buffer[V4F, readonly], ml_part: Buffer[f32, readonly], out: Buffer[IN],
                kv_valid: Buffer[s32, readonly], S_Q: s32, S_KV: s32, HEADS: s32, SPLITS: s32, Q_LEN: s32,
                SPLIT_LEN: s32, WINDOW: s32, D: constexpr, LANES: constexpr, CAUSAL: constexpr = False,
                GROUPED: constexpr = False, KV_DEVICE: constexpr = False, WINDOWED: constexpr = False):
        CH = D // 4
        sh = shared_array(V4, combine_slot(D, LANES))
        row = workgroup_id(0)
        head = workgroup_id(1)
        batch = workgroup_id(2)
        c = local_index() % CH
        lane = local_index() // CH
        first = (batch * HEADS + head) * SPLITS  # split 0 of this head
        kv_end = S_KV
        if KV_DEVICE:
            kv_end = minimum(maximum(kv_valid[0], 0), S_KV)
        lo, hi = splits_seen(row, Q_LEN, kv_end, SPLIT_LEN, SPLITS, WINDOW, CAUSAL, WINDOWED, GROUPED)
        top, total, value = merge_splits(o_part, ml_part, first, row, c, lo + lane, hi, S_Q, CH, LANES, False)
        lane_to_shared(sh, 0, top, total, value, c, lane, CH, LANES)
        barrier()
        if lane == 0:
            result = lanes_merged(top, total, value, sh, 0, c, seen_any(row, Q_LEN, kv_end, CAUSAL, GROUPED), CH,
                                  LANES)
            base = ((batch * HEADS + head) * S_Q + row) * D + c * 4
            for j in static_range(4):
                out[base + j] = IN(result[j])

    return combine
