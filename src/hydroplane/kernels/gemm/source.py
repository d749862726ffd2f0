"""The GEMM kernels, written in the kernel language: D = act(alpha * op(A) @ op(B) + beta * C + bias).

Three kernels, each specialized by constexprs (gemm.py's GemmConfig and gemm_plan produce them; docs/gemm.md):

- `coop_kernel(a, acc, out)`: KHR cooperative matrices at subgroup scope. A workgroup of WM x WN
  subgroups computes a BM x BN block of D; each subgroup owns SM x SN accumulator tiles of TM x TN
  (the device's tile shape). Per K step of BK = KT * TK every invocation copies the A and B blocks
  into shared memory (bounds-checked where the block crosses M, N or K: zeros outside), then each
  subgroup multiplies its tiles out of shared memory; STAGES=2 double-buffers (the next block is
  copied while this one is multiplied, one barrier per step). DIRECT=True loads the tiles straight
  from the buffers instead (edge tiles moved inside the matrices, the K tail staged per subgroup).
  WIDE copies and loads 16 bytes at a time through V4 views of A and B; PREFETCH loads the next blocks into
  registers before the multiplications (PAD pads shared rows); KMAJOR_B (8-bit) transposes a B stored K x N
  into shared memory K-contiguous, as NVIDIA's 8-bit tensor-core loads want it. The epilogue runs on each
  accumulator tile through coop.map: alpha and beta scaling, + beta * C, + bias (a stride-0 tile),
  ReLU or GELU, conversion to the output type. Whole tiles store straight to D; edge tiles go
  through shared memory and are written element by element with bounds checks: no size needs padding.
- `workgroup_kernel(a, acc, out)`: NV2 workgroup scope, one BM x BN matrix per workgroup.
- `scalar_kernel(a, acc, out)`: no cooperative matrices (every Vulkan device, the fallback): each
  invocation accumulates an RM x RN register tile from shared-memory blocks.

A and B are row-major (`AT`/`BT` False: A is M x K, B is K x N) or transposed (`AT`: A is stored
K x M, `BT`: B is stored N x K): layouts nn, nt, tn, tt. Buffer element types cannot be
constexprs, so each (input, accumulator, output) dtype triple gets its own kernel object (cached).
This module imports only the language.
"""

import functools

from hydroplane.lang import (
    Buffer,
    barrier,
    cast,
    constexpr,
    coop,
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
    static_assert,
    static_range,
    subgroup_id,
    tanh,
    u32,
    vec,
    vector_type,
    workgroup_id,
)

V4 = vector_type(u32, 4)  # 16 bytes: the wide loads' element
GELU_C = 0.7978845608028654  # sqrt(2 / pi), GELU's tanh approximation
GELU_CUBIC = 0.044715


@func
def stage(shared, base, source, row0, col0, ld, row_limit, col_limit, guard, ROWS: constexpr, COLS: constexpr,
          THREADS: constexpr, first, ELEMENT: constexpr):
    """Copy the ROWS x COLS block at (row0, col0) of a row-major matrix (leading dimension ld) into
    shared[base:], elements first, first + THREADS, ...; with guard, elements outside (row_limit, col_limit) are 0."""
    for i in range(first, ROWS * COLS, THREADS):
        r = i // COLS
        c = i - r * COLS
        if guard:
            value = ELEMENT(0)
            if row0 + r < row_limit and col0 + c < col_limit:
                value = source[(row0 + r) * ld + col0 + c]
            shared[base + i] = value
        else:
            shared[base + i] = source[(row0 + r) * ld + col0 + c]


@func
def wide_chunk(source, i, row0, col0, ld, row_limit, col_limit, guard, CHUNKS: constexpr, WIDE: constexpr):
    """Chunk i (16 bytes, row-major, CHUNKS a row) of the block at (row0, col0) of a V4 view; with guard, zeros
    outside (row_limit, col_limit)."""
    r = i // CHUNKS
    c = (i - r * CHUNKS) * WIDE
    if guard:
        value = vec(u32(0), u32(0), u32(0), u32(0))
        if row0 + r < row_limit and col0 + c < col_limit:
            value = source[((row0 + r) * ld + col0 + c) // WIDE]
        return value
    return source[((row0 + r) * ld + col0 + c) // WIDE]


@func
def stage_wide(shared, base, source, row0, col0, ld, row_limit, col_limit, guard, ROWS: constexpr, COLS: constexpr,
               THREADS: constexpr, first, WIDE: constexpr, PAD: constexpr = 0):
    """As stage, 16 bytes (WIDE elements) per copy from and to arrays of V4 (base counts V4s); the launcher sets
    WIDE only where every leading dimension, limit and block edge is a multiple of WIDE. Shared rows are
    COLS // WIDE + PAD V4s apart (PAD: padding against bank conflicts)."""
    CHUNKS = COLS // WIDE
    for i in range(first, ROWS * CHUNKS, THREADS):
        shared[base + i + i // CHUNKS * PAD] = wide_chunk(source, i, row0, col0, ld, row_limit, col_limit, guard,
                                                          CHUNKS, WIDE)


@func
def fetch_wide(regs, slot0, source, row0, col0, ld, row_limit, col_limit, guard, ROWS: constexpr, COLS: constexpr,
               THREADS: constexpr, first, WIDE: constexpr):
    """This invocation's 16-byte chunks of the ROWS x COLS block into registers regs[slot0:] (the first half of
    stage_wide: the loads are issued now, the stores into shared memory wait for put_wide); ROWS * COLS / WIDE
    is a multiple of THREADS."""
    CHUNKS = COLS // WIDE
    for t in static_range(ROWS * CHUNKS // THREADS):
        regs[slot0 + t] = wide_chunk(source, first + t * THREADS, row0, col0, ld, row_limit, col_limit, guard,
                                     CHUNKS, WIDE)


@func
def put_wide(shared, base, regs, slot0, ROWS: constexpr, COLS: constexpr, THREADS: constexpr, first,
             WIDE: constexpr, PAD: constexpr):
    """The second half of stage_wide: the chunks fetch_wide loaded into shared[base:] (rows COLS // WIDE + PAD
    V4s apart)."""
    CHUNKS = COLS // WIDE
    for t in static_range(ROWS * CHUNKS // THREADS):
        i = first + t * THREADS
        shared[base + i + i // CHUNKS * PAD] = regs[slot0 + t]


@func
def fetch_kmajor(regs, slot0, source, k0, col0, ld, k_limit, col_limit, guard, BK: constexpr, COLS: constexpr,
                 THREADS: constexpr, first, WIDE: constexpr):
    """For put_kmajor: this invocation's items of the BK x COLS block at (k0, col0) of a row-major 8-bit matrix
    (a V4 view) into registers; an item is 4 rows by one 16-byte chunk, in 4 slots. Items run down K first, so
    that a half-warp's stores land in one shared row."""
    GROUPS = BK // 4
    CHUNKS = COLS // WIDE
    for t in static_range(GROUPS * CHUNKS // THREADS):
        item = first + t * THREADS
        chunk = item // GROUPS
        group = item - chunk * GROUPS
        for r in static_range(4):
            regs[slot0 + 4 * t + r] = wide_chunk(source, (group * 4 + r) * CHUNKS + chunk, k0, col0, ld, k_limit,
                                                 col_limit, guard, CHUNKS, WIDE)


@func
def put_kmajor(shared, base, regs, slot0, BK: constexpr, COLS: constexpr, THREADS: constexpr, first,
               WIDE: constexpr, LDW: constexpr):
    """fetch_kmajor's items transposed into shared (u32 words from word base): the block as COLS rows of BK bytes,
    LDW words apart, K contiguous. Each item's 4 rows of 16 bytes become 16 words of 4 bytes, one per column:
    4x4 byte transposes by masks and shifts."""
    GROUPS = BK // 4
    for t in static_range(GROUPS * (COLS // WIDE) // THREADS):
        item = first + t * THREADS
        chunk = item // GROUPS
        group = item - chunk * GROUPS
        word = base + chunk * WIDE * LDW + group  # column chunk * WIDE, bytes 4 * group ... 4 * group + 3
        for q in static_range(4):  # the chunk's columns 4q ... 4q + 3
            x = regs[slot0 + 4 * t][q]
            y = regs[slot0 + 4 * t + 1][q]
            z = regs[slot0 + 4 * t + 2][q]
            w = regs[slot0 + 4 * t + 3][q]
            even = (x & 0x00FF00FF) | ((y & 0x00FF00FF) << 8)  # columns 0 and 2 of rows 0 and 1
            odd = ((x >> 8) & 0x00FF00FF) | (y & 0xFF00FF00)  # columns 1 and 3
            even2 = (z & 0x00FF00FF) | ((w & 0x00FF00FF) << 8)  # rows 2 and 3
            odd2 = ((z >> 8) & 0x00FF00FF) | (w & 0xFF00FF00)
            shared[word + 4 * q * LDW] = (even & 0xFFFF) | (even2 << 16)
            shared[word + (4 * q + 1) * LDW] = (odd & 0xFFFF) | (odd2 << 16)
            shared[word + (4 * q + 2) * LDW] = (even >> 16) | (even2 & 0xFFFF0000)
            shared[word + (4 * q + 3) * LDW] = (odd >> 16) | (odd2 & 0xFFFF0000)


@func
def stage_blocks(sa, sb, a, b, a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, AT: constexpr,
                 BT: constexpr, BM: constexpr, BN: constexpr, BK: constexpr, THREADS: constexpr, IN: constexpr,
                 WIDE: constexpr = 0, PAD: constexpr = 0):
    """Both K-step blocks into shared memory, each in its stored layout (see the module docstring); with WIDE,
    a and b are the V4 views and sa, sb arrays of V4 (the bases still count elements; rows PAD V4s longer)."""
    first = local_index()
    if WIDE:
        if AT:
            stage_wide(sa, a_base // WIDE, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, WIDE, PAD)
        else:
            stage_wide(sa, a_base // WIDE, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, WIDE, PAD)
        if BT:
            stage_wide(sb, b_base // WIDE, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, WIDE, PAD)
        else:
            stage_wide(sb, b_base // WIDE, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE, PAD)
        return
    if AT:
        stage(sa, a_base, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, IN)
    else:
        stage(sa, a_base, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, IN)
    if BT:
        stage(sb, b_base, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, IN)
    else:
        stage(sb, b_base, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, IN)


@func
def fetch_blocks(regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, AT: constexpr, BT: constexpr,
                 BM: constexpr, BN: constexpr, BK: constexpr, THREADS: constexpr, WIDE: constexpr,
                 KMAJOR_B: constexpr = False):
    """stage_blocks' loads into registers (regs: A's chunks, then B's), for put_blocks to store later; KMAJOR_B: B's
    in items of 4 rows for put_kmajor."""
    first = local_index()
    B0 = BM * BK // WIDE // THREADS  # the first of B's slots
    if AT:
        fetch_wide(regs, 0, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, WIDE)
    else:
        fetch_wide(regs, 0, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, WIDE)
    if BT:
        fetch_wide(regs, B0, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, WIDE)
    elif KMAJOR_B:
        fetch_kmajor(regs, B0, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE)
    else:
        fetch_wide(regs, B0, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE)


@func
def put_blocks(sa, sb, regs, a_base, b_base, AT: constexpr, BT: constexpr, BM: constexpr, BN: constexpr,
               BK: constexpr, THREADS: constexpr, WIDE: constexpr, PAD: constexpr, KMAJOR_B: constexpr = False):
    """The registers fetch_blocks filled into the shared blocks at a_base and b_base (elements); KMAJOR_B: sb holds
    u32 words and B goes in transposed (BN rows of BK bytes)."""
    first = local_index()
    B0 = BM * BK // WIDE // THREADS
    if AT:
        put_wide(sa, a_base // WIDE, regs, 0, BK, BM, THREADS, first, WIDE, PAD)
    else:
        put_wide(sa, a_base // WIDE, regs, 0, BM, BK, THREADS, first, WIDE, PAD)
    if BT:
        put_wide(sb, b_base // WIDE, regs, B0, BN, BK, THREADS, first, WIDE, PAD)
    elif KMAJOR_B:
        put_kmajor(sb, b_base // 4, regs, B0, BK, BN, THREADS, first, WIDE, (BK + PAD * WIDE) // 4)
    else:
        put_wide(sb, b_base // WIDE, regs, B0, BK, BN, THREADS, first, WIDE, PAD)


@func
def leading_dimensions(M, N, K, AT: constexpr, BT: constexpr):
    """(lda, ldb): the row length of A and B as stored (A^T is stored M wide, B^T K wide)."""
    lda = K
    if AT:
        lda = M
    ldb = N
    if BT:
        ldb = K
    return lda, ldb


@func
def load_tile(T, memory, base, row, col, ld, TRANSPOSED: constexpr):
    """Tile (row, col) of op(X) where X is stored row-major with leading dimension ld (transposed: X^T is)."""
    if TRANSPOSED:
        return coop.load(T, memory, base + col * ld + row, ld, coop.ColumnMajor)
    return coop.load(T, memory, base + row * ld + col, ld, coop.RowMajor)


@func
def as_accumulator(x, ACC: constexpr):
    """An f32 push constant (alpha, beta) in the accumulator type; integers through s32, so that an unsigned
    accumulator scales modulo 2**32 as NumPy's wrapped reference does."""
    if ACC.kind == "int":
        return cast(s32(x), ACC)
    return cast(x, ACC)


@func
def load_tile_any(T, memory, base, row, col, ld, TRANSPOSED: constexpr, WIDE: constexpr):
    """load_tile from element memory (WIDE 0) or from a V4 view of it (offsets and stride in V4s)."""
    if WIDE:
        if TRANSPOSED:
            return coop.load(T, memory, (base + col * ld + row) // WIDE, ld // WIDE, coop.ColumnMajor)
        return coop.load(T, memory, (base + row * ld + col) // WIDE, ld // WIDE, coop.RowMajor)
    return load_tile(T, memory, base, row, col, ld, TRANSPOSED)


@func
def scale_by(row, col, x, factor):
    return x * factor


@func
def activation(row, col, x, ACT: constexpr):
    """The epilogue's per-element tail: none, relu or gelu (tanh form, computed in f32)."""
    if ACT == "relu":
        return maximum(x, 0)
    if ACT == "gelu":
        xf = f32(x)
        y = 0.5 * xf * (1.0 + tanh(GELU_C * (xf + GELU_CUBIC * xf * xf * xf)))
        return cast(y, x.type)
    return x


@func
def finish(result, tc, tbias, alpha, beta, USE_C: constexpr, BIAS: constexpr, ACT: constexpr, ACC: constexpr,
           OUT: constexpr, SCALE: constexpr = True):
    """alpha * result (+ beta * C) (+ bias), the activation, in the accumulator type; then the output type.
    SCALE False (alpha is 1) leaves the scaling out."""
    res = result
    if SCALE:
        res = coop.map(scale_by, result, as_accumulator(alpha, ACC))
    if USE_C:
        res = res + coop.map(scale_by, coop.convert(tc, ACC), as_accumulator(beta, ACC))
    if BIAS:
        res = res + coop.convert(tbias, ACC)
    if ACT != "none":
        res = coop.map(activation, res, ACT)
    return coop.convert(res, OUT)


@func
def copy_out(d, sc, base, row0, col0, row_first, col_first, M, N, ROWS: constexpr, COLS: constexpr, SG: constexpr):
    """This subgroup writes its staged ROWS x COLS tile (at row0, col0 of D) to D: the elements from row_first and
    col_first on (a moved tile's own part) and inside M x N."""
    for i in range(lane_id(), ROWS * COLS, SG):
        r = i // COLS
        c = i - r * COLS
        if row0 + r >= row_first and col0 + c >= col_first and row0 + r < M and col0 + c < N:
            d[(row0 + r) * N + col0 + c] = sc[base + i]


def byte_sized(dtype) -> bool:
    return dtype.width == 8


def shared_unit(kmajor: bool, wide: int) -> int:
    """Elements of an operand per element of its shared array: 4 bytes a u32 word (K-major), else WIDE (a V4)."""
    return 4 if kmajor else wide


def coop_threads(constexprs: dict) -> int:
    return constexprs["WM"] * constexprs["WN"] * constexprs["SG"]


@functools.cache
def coop_kernel(IN, ACC, OUT):  # noqa: N803 -- dtypes read as the kernel's constants
    """The cooperative-matrix GEMM for A/B elements IN, accumulator ACC and output (C, D, bias) OUT."""

    @kernel_source(local_size=coop_threads, name=f"gemm_coop_{IN}_{ACC}_{OUT}")
    def gemm_coop(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                  bias: Buffer[OUT, readonly], d: Buffer[OUT], a4: Buffer[V4, readonly], b4: Buffer[V4, readonly],
                  alpha: f32, beta: f32, M: s32, N: s32, K: s32,
                  AT: constexpr, BT: constexpr, TM: constexpr, TN: constexpr, TK: constexpr, WM: constexpr,
                  WN: constexpr, SM: constexpr, SN: constexpr, KT: constexpr, STAGES: constexpr,
                  DIRECT: constexpr, SG: constexpr, USE_C: constexpr, BIAS: constexpr, ACT: constexpr,
                  SATURATE: constexpr, WIDE: constexpr = 0, ALIGNED_OUT: constexpr = True, PAD: constexpr = 0,
                  PREFETCH: constexpr = False, EDGES: constexpr = True, SCALE: constexpr = True,
                  KMAJOR_B: constexpr = False):
        static_assert(STAGES == 1 or STAGES == 2, "STAGES is 1 or 2")
        static_assert(not KMAJOR_B or (PREFETCH and not BT and byte_sized(IN)),
                      "KMAJOR_B transposes an 8-bit B stored K x N while prefetching")
        static_assert(not (PAD or PREFETCH) or WIDE, "PAD and PREFETCH come with 16-byte loads (WIDE)")
        BM = WM * SM * TM
        BN = WN * SN * TN
        BK = KT * TK
        THREADS = WM * WN * SG
        # The shared blocks in their stored layouts, rows PAD 16-byte chunks longer (elements: PAD * WIDE).
        A_LD = (BM if AT else BK) + PAD * WIDE
        A_SIZE = (BK if AT else BM) * A_LD
        # KMAJOR_B: B (stored K x N) goes into shared memory transposed, as if stored N x K, in u32 words.
        SB_T = BT or KMAJOR_B
        B_UNIT = shared_unit(KMAJOR_B, WIDE)  # B's elements per shared-array element
        B_LD = (BK if SB_T else BN) + PAD * WIDE
        B_SIZE = (BN if SB_T else BK) * B_LD
        TA = coop.Matrix[IN, TM, TK, coop.A]
        TB = coop.Matrix[IN, TK, TN, coop.B]
        TACC = coop.Matrix[ACC, TM, TN, coop.Accumulator]
        TOUT = coop.Matrix[OUT, TM, TN, coop.Accumulator]
        a_src = a  # the tiles' and blocks' source: the element buffers, or their V4 views (WIDE)
        b_src = b
        if WIDE:
            a_src = a4
            b_src = b4
            sa = shared_array(V4, STAGES * A_SIZE // WIDE)
            if KMAJOR_B:
                sb = shared_array(u32, STAGES * B_SIZE // 4)
            else:
                sb = shared_array(V4, STAGES * B_SIZE // WIDE)
        else:
            sa = shared_array(IN, STAGES * BM * BK)
            sb = shared_array(IN, STAGES * BK * BN)
        sc = shared_array(OUT, WM * WN * TM * TN)  # edge tiles of C, bias and D, one region per subgroup
        st = shared_array(IN, WM * WN * (SM * TM + SN * TN) * TK if DIRECT else 1)  # direct mode's K tail
        sg = subgroup_id()
        wm = sg // WN
        wn = sg % WN
        row0 = workgroup_id(1) * BM
        col0 = workgroup_id(0) * BN
        lda, ldb = leading_dimensions(M, N, K, AT, BT)
        acc = local_array(TACC, SM * SN)
        for t in static_range(SM * SN):
            acc[t] = coop.fill(TACC, 0)
        btile = local_array(TB, SN)
        # Whole blocks load C and store D as matrices straight from and to the buffers; that needs rows of N
        # outputs 16-byte aligned (ALIGNED_OUT), else every block goes through shared memory.
        # EDGES False (the launcher's promise: M, N, K multiples of the block, rows of D 16-byte aligned, staged):
        # every block is whole, and the bounds checks compile out.
        full = not EDGES or (ALIGNED_OUT and row0 + BM <= M and col0 + BN <= N)  # the same in the whole workgroup

        # Tile origins. DIRECT with M >= TM and N >= TN: a tile crossing M (N) moves up (left) to end there, so
        # every direct load stays inside the matrices; the store writes only the rows and columns it owns.
        shifted = False
        if DIRECT:
            shifted = M >= TM and N >= TN
        rows = local_array(s32, SM)
        cols = local_array(s32, SN)
        for i in static_range(SM):
            rows[i] = row0 + (wm * SM + i) * TM
            if shifted:
                rows[i] = minimum(rows[i], M - TM)
        for j in static_range(SN):
            cols[j] = col0 + (wn * SN + j) * TN
            if shifted:
                cols[j] = minimum(cols[j], N - TN)

        k_split = 0  # [0, k_split): direct mode; [k_split, K): whole blocks staged in shared memory
        if shifted:
            k_direct = K // BK * BK
            for k in range(0, k_direct, BK):
                for kt in static_range(KT):
                    kk = k + kt * TK
                    for j in static_range(SN):
                        btile[j] = load_tile_any(TB, b_src, 0, kk, cols[j], ldb, BT, WIDE)
                    for i in static_range(SM):
                        ta = load_tile_any(TA, a_src, 0, rows[i], kk, lda, AT, WIDE)
                        for j in static_range(SN):
                            acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)
            tail_a = sg * (SM * TM + SN * TN) * TK  # this subgroup's tiles of the K tail, zero beyond K
            tail_b = tail_a + SM * TM * TK
            lane = lane_id()
            for k in range(k_direct, K, TK):
                for i in static_range(SM):
                    if AT:
                        stage(st, tail_a + i * TM * TK, a, k, rows[i], lda, K, M, True, TK, TM, SG, lane, IN)
                    else:
                        stage(st, tail_a + i * TM * TK, a, rows[i], k, lda, M, K, True, TM, TK, SG, lane, IN)
                for j in static_range(SN):
                    if BT:
                        stage(st, tail_b + j * TK * TN, b, cols[j], k, ldb, N, K, True, TN, TK, SG, lane, IN)
                    else:
                        stage(st, tail_b + j * TK * TN, b, k, cols[j], ldb, K, N, True, TK, TN, SG, lane, IN)
                barrier()
                for j in static_range(SN):
                    if BT:
                        btile[j] = load_tile(TB, st, tail_b + j * TK * TN, 0, 0, TK, True)
                    else:
                        btile[j] = load_tile(TB, st, tail_b + j * TK * TN, 0, 0, TN, False)
                for i in static_range(SM):
                    if AT:
                        ta = load_tile(TA, st, tail_a + i * TM * TK, 0, 0, TM, True)
                    else:
                        ta = load_tile(TA, st, tail_a + i * TM * TK, 0, 0, TK, False)
                    for j in static_range(SN):
                        acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)
                barrier()
            k_split = K

        steps = (K - k_split + BK - 1) // BK
        # PREFETCH: each step's loads of the next blocks go into registers before the multiplications and into
        # shared memory after them, so that the loads' latency hides behind the tensor cores.
        regs = local_array(V4, (BM + BN) * BK // WIDE // THREADS if PREFETCH else 1)
        if steps > 0:
            if PREFETCH:
                fetch_blocks(regs, a_src, b_src, row0, col0, k_split, M, N, K, lda, ldb,
                             EDGES and (not full or k_split + BK > K), AT, BT, BM, BN, BK, THREADS, WIDE, KMAJOR_B)
                put_blocks(sa, sb, regs, 0, 0, AT, BT, BM, BN, BK, THREADS, WIDE, PAD, KMAJOR_B)
            else:
                stage_blocks(sa, sb, a_src, b_src, 0, 0, row0, col0, k_split, M, N, K, lda, ldb,
                             EDGES and (not full or k_split + BK > K), AT, BT, BM, BN, BK, THREADS, IN, WIDE, PAD)
            barrier()
            for step in range(steps):
                k0 = k_split + step * BK
                current = 0
                if STAGES == 2:
                    current = step % 2
                more = step + 1 < steps
                next_guard = EDGES and (not full or k0 + 2 * BK > K)  # the next blocks cross M, N or K
                # The next blocks: into registers (PREFETCH: into shared memory after the multiplications) or, with
                # two stages, straight into the other buffer while this one is multiplied.
                if PREFETCH:
                    if more:
                        fetch_blocks(regs, a_src, b_src, row0, col0, k0 + BK, M, N, K, lda, ldb, next_guard, AT, BT,
                                     BM, BN, BK, THREADS, WIDE, KMAJOR_B)
                elif STAGES == 2:
                    if more:
                        stage_blocks(sa, sb, a_src, b_src, (1 - current) * A_SIZE, (1 - current) * B_SIZE, row0,
                                     col0, k0 + BK, M, N, K, lda, ldb, next_guard, AT, BT, BM, BN, BK, THREADS, IN,
                                     WIDE, PAD)
                a_base = current * A_SIZE
                b_base = current * B_SIZE
                for kt in static_range(KT):
                    for j in static_range(SN):
                        n_local = (wn * SN + j) * TN
                        btile[j] = load_tile_any(TB, sb, b_base, kt * TK, n_local, B_LD, SB_T, B_UNIT)
                    for i in static_range(SM):
                        m_local = (wm * SM + i) * TM
                        ta = load_tile_any(TA, sa, a_base, m_local, kt * TK, A_LD, AT, WIDE)
                        for j in static_range(SN):
                            acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)
                if PREFETCH and STAGES == 2:
                    if more:
                        put_blocks(sa, sb, regs, (1 - current) * A_SIZE, (1 - current) * B_SIZE, AT, BT, BM, BN, BK,
                                   THREADS, WIDE, PAD, KMAJOR_B)
                barrier()
                if STAGES == 1:  # one buffer: refilled once every subgroup is done with it
                    if more:
                        if PREFETCH:
                            put_blocks(sa, sb, regs, 0, 0, AT, BT, BM, BN, BK, THREADS, WIDE, PAD, KMAJOR_B)
                        else:
                            stage_blocks(sa, sb, a_src, b_src, 0, 0, row0, col0, k0 + BK, M, N, K, lda, ldb,
                                         next_guard, AT, BT, BM, BN, BK, THREADS, IN, WIDE, PAD)
                        barrier()

        region = sg * TM * TN
        for i in static_range(SM):
            for j in static_range(SN):
                r = row0 + (wm * SM + i) * TM  # the tile's own rows and columns
                col = col0 + (wn * SN + j) * TN
                result = acc[i * SN + j]
                if full or shifted:  # C and bias tiles lie inside the matrices
                    tc = coop.fill(TOUT, 0)
                    tbias = coop.fill(TOUT, 0)
                    if USE_C:
                        tc = coop.load(TOUT, c, rows[i] * N + cols[j], N, coop.RowMajor)
                    if BIAS:
                        tbias = coop.load(TOUT, bias, cols[j], 0, coop.RowMajor)  # stride 0: every row is bias[col:]
                    out = finish(result, tc, tbias, alpha, beta, USE_C, BIAS, ACT, ACC, OUT, SCALE)
                    if full:
                        coop.store(out, d, r * N + col, N, coop.RowMajor)
                    else:  # a moved tile writes only what it owns, through shared memory
                        coop.store(out, sc, region, TN, coop.RowMajor)
                        barrier()
                        copy_out(d, sc, region, rows[i], cols[j], r, col, M, N, TM, TN, SG)
                        barrier()
                else:
                    lane = lane_id()
                    tc = coop.fill(TOUT, 0)
                    tbias = coop.fill(TOUT, 0)
                    if USE_C:
                        stage(sc, region, c, r, col, N, M, N, True, TM, TN, SG, lane, OUT)
                        barrier()
                        tc = coop.load(TOUT, sc, region, TN, coop.RowMajor)
                        barrier()
                    if BIAS:
                        stage(sc, region, bias, 0, col, 0, TM, N, True, TM, TN, SG, lane, OUT)
                        barrier()
                        tbias = coop.load(TOUT, sc, region, TN, coop.RowMajor)
                        barrier()
                    out = finish(result, tc, tbias, alpha, beta, USE_C, BIAS, ACT, ACC, OUT, SCALE)
                    coop.store(out, sc, region, TN, coop.RowMajor)
                    barrier()
                    copy_out(d, sc, region, r, col, r, col, M, N, TM, TN, SG)
                    barrier()

    return gemm_coop


def scalar_threads(constexprs: dict) -> int:
    return constexprs["TX"] * constexprs["TY"]


@functools.cache
def scalar_kernel(IN, ACC, OUT):  # noqa: N803
    """The GEMM without cooperative matrices: TX x TY invocations, each an RM x RN register tile."""

    @kernel_source(local_size=scalar_threads, name=f"gemm_scalar_{IN}_{ACC}_{OUT}")
    def gemm_scalar(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                    bias: Buffer[OUT, readonly], d: Buffer[OUT], a4: Buffer[V4, readonly], b4: Buffer[V4, readonly],
                    alpha: f32, beta: f32, M: s32, N: s32, K: s32,
                    AT: constexpr, BT: constexpr, RM: constexpr, RN: constexpr, TX: constexpr, TY: constexpr,
                    BK: constexpr, USE_C: constexpr, BIAS: constexpr, ACT: constexpr):
        BM = TY * RM
        BN = TX * RN
        THREADS = TX * TY
        sa = shared_array(IN, BM * BK)
        sb = shared_array(IN, BK * BN)
        tx = local_index() % TX
        ty = local_index() // TX
        row0 = workgroup_id(1) * BM
        col0 = workgroup_id(0) * BN
        lda, ldb = leading_dimensions(M, N, K, AT, BT)
        full = row0 + BM <= M and col0 + BN <= N
        acc = local_array(ACC, RM * RN)
        for t in static_range(RM * RN):
            acc[t] = ACC(0)
        a_values = local_array(ACC, RM)
        b_values = local_array(ACC, RN)
        for k0 in range(0, K, BK):
            stage_blocks(sa, sb, a, b, 0, 0, row0, col0, k0, M, N, K, lda, ldb, not full or k0 + BK > K,
                         AT, BT, BM, BN, BK, THREADS, IN)
            barrier()
            for kk in range(BK):
                for i in static_range(RM):
                    m = ty + i * TY  # interleaved rows: neighbouring invocations read neighbouring elements
                    if AT:
                        a_values[i] = ACC(sa[kk * BM + m])
                    else:
                        a_values[i] = ACC(sa[m * BK + kk])
                for j in static_range(RN):
                    n = tx + j * TX
                    if BT:
                        b_values[j] = ACC(sb[n * BK + kk])
                    else:
                        b_values[j] = ACC(sb[kk * BN + n])
                for i in static_range(RM):
                    for j in static_range(RN):
                        acc[i * RN + j] += a_values[i] * b_values[j]
            barrier()

        alpha_acc = as_accumulator(alpha, ACC)
        beta_acc = as_accumulator(beta, ACC)
        for i in static_range(RM):
            for j in static_range(RN):
                r = row0 + ty + i * TY
                col = col0 + tx + j * TX
                if r < M and col < N:
                    value = acc[i * RN + j] * alpha_acc
                    if USE_C:
                        value += ACC(c[r * N + col]) * beta_acc
                    if BIAS:
                        value += ACC(bias[col])
                    if ACT == "relu":
                        value = maximum(value, 0)
                    if ACT == "gelu":
                        xf = f32(value)
                        value = cast(0.5 * xf * (1.0 + tanh(GELU_C * (xf + GELU_CUBIC * xf * xf * xf))), ACC)
                    d[r * N + col] = OUT(value)

    return gemm_scalar


@func
def copy_block_out(d, sc, row0, col0, row_first, col_first, M, N, ROWS: constexpr, COLS: constexpr,
                   THREADS: constexpr):
    """The whole workgroup writes its staged ROWS x COLS block (at row0, col0 of D): the owned part inside M x N."""
    for i in range(local_index(), ROWS * COLS, THREADS):
        r = i // COLS
        c = i - r * COLS
        if row0 + r >= row_first and col0 + c >= col_first and row0 + r < M and col0 + c < N:
            d[(row0 + r) * N + col0 + c] = sc[i]


def workgroup_threads(constexprs: dict) -> int:
    return constexprs["THREADS"]


@functools.cache
def workgroup_kernel(IN, ACC, OUT):  # noqa: N803
    """The NV2 workgroup-scope GEMM: one BM x BN accumulator matrix held by the whole workgroup of THREADS
    invocations, A and B blocks loaded straight from the buffers (a block crossing M or N moves inside; the
    launcher asks M >= BM and N >= BN), the K tail staged in shared memory with zeros beyond K. EDGE and TAIL
    (set by the launcher from the sizes) compile the edge store and the K tail, and their shared memory, only
    where the sizes need them."""

    @kernel_source(local_size=workgroup_threads, name=f"gemm_workgroup_{IN}_{ACC}_{OUT}")
    def gemm_workgroup(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                       bias: Buffer[OUT, readonly], d: Buffer[OUT], a4: Buffer[V4, readonly],
                       b4: Buffer[V4, readonly], alpha: f32, beta: f32, M: s32, N: s32, K: s32,
                       AT: constexpr, BT: constexpr, BM: constexpr, BN: constexpr, BK: constexpr,
                       THREADS: constexpr, USE_C: constexpr, BIAS: constexpr, ACT: constexpr, SATURATE: constexpr,
                       EDGE: constexpr = True, TAIL: constexpr = True, WIDE: constexpr = 0, SCALE: constexpr = True):
        TA = coop.Matrix[IN, BM, BK, coop.A, coop.Workgroup]
        TB = coop.Matrix[IN, BK, BN, coop.B, coop.Workgroup]
        TACC = coop.Matrix[ACC, BM, BN, coop.Accumulator, coop.Workgroup]
        TOUT = coop.Matrix[OUT, BM, BN, coop.Accumulator, coop.Workgroup]
        sa = shared_array(IN, BM * BK if TAIL else 1)  # the K tail (TAIL: K is no multiple of BK)
        sb = shared_array(IN, BK * BN if TAIL else 1)
        sc = shared_array(OUT, BM * BN if EDGE else 1)  # edge blocks' output (EDGE: M or N is no multiple)
        row0 = workgroup_id(1) * BM
        col0 = workgroup_id(0) * BN
        full = row0 + BM <= M and col0 + BN <= N
        row = minimum(row0, M - BM)  # the block moved inside the matrix
        col = minimum(col0, N - BN)
        lda, ldb = leading_dimensions(M, N, K, AT, BT)
        acc = coop.fill(TACC, 0)
        k_direct = K // BK * BK
        a_src = a
        b_src = b
        if WIDE:
            a_src = a4
            b_src = b4
        for k in range(0, k_direct, BK):
            acc = coop.mul_add(load_tile_any(TA, a_src, 0, row, k, lda, AT, WIDE),
                               load_tile_any(TB, b_src, 0, k, col, ldb, BT, WIDE), acc, SATURATE)
        if TAIL and k_direct < K:
            stage_blocks(sa, sb, a, b, 0, 0, row, col, k_direct, M, N, K, lda, ldb, True, AT, BT, BM, BN, BK,
                         THREADS, IN)
            barrier()
            if AT:
                ta = load_tile(TA, sa, 0, 0, 0, BM, True)
            else:
                ta = load_tile(TA, sa, 0, 0, 0, BK, False)
            if BT:
                tb = load_tile(TB, sb, 0, 0, 0, BK, True)
            else:
                tb = load_tile(TB, sb, 0, 0, 0, BN, False)
            acc = coop.mul_add(ta, tb, acc, SATURATE)
            barrier()
        tc = coop.fill(TOUT, 0)
        tbias = coop.fill(TOUT, 0)
        if USE_C:
            tc = coop.load(TOUT, c, row * N + col, N, coop.RowMajor)
        if BIAS:
            tbias = coop.load(TOUT, bias, col, 0, coop.RowMajor)
        out = finish(acc, tc, tbias, alpha, beta, USE_C, BIAS, ACT, ACC, OUT, SCALE)
        if full or not EDGE:
            coop.store(out, d, row0 * N + col0, N, coop.RowMajor)
        else:
            coop.store(out, sc, 0, BN, coop.RowMajor)
            barrier()
            copy_block_out(d, sc, row, col, row0, col0, M, N, BM, BN, THREADS)

    return gemm_workgroup
