"""The GEMM kernels, written in the kernel language: D = act(alpha * op(A) @ op(B) + beta * C + bias).

Three kernels, each specialized by constexprs (plan.py's GemmConfig and gemm_plan produce them, one row of
plan.KERNEL_KINDS per kernel; docs/gemm.md), each a composition of the `@func` pieces below:

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

The pieces: the shared blocks of a K step (`Blocks`, compile-time geometry) and their copies: `stage_blocks`
(element or 16-byte copies, `stage` / `stage_wide`), the register prefetch in two halves (`fetch_blocks`,
`put_blocks`; `load_blocks` both at once), the K-major transposition of an 8-bit B in registers (`fetch_kmajor`,
`put_kmajor`), the direct kernel's tile origins and K tail (`tile_origins`, `stage_tail`), tile loads
(`load_tile_any`), the staged K loop over the caller's accumulators (`staged_k_loop`, shaped by a `KLoop`, its
copies a `Staging`: the plain and the K-split kernels share it, and a kernel with other staging, a dequantizing
one, gives its own three copy helpers), and the epilogue (`Epilogue` choices, `finish` on a tile, `store_tile` for
one subgroup tile with its C, bias and edge handling, `copy_out`). The accumulators, a local array of matrices, pass
to the K loop by reference. The helpers are SPIR-V functions that drivers inline; tools/gemm_spirv_digest.py
compares the kernels' code before and after a change.

A and B are row-major (`AT`/`BT` False: A is M x K, B is K x N) or transposed (`AT`: A is stored
K x M, `BT`: B is stored N x K): layouts nn, nt, tn, tt. Buffer element types cannot be
constexprs, so each (input, accumulator, output) dtype triple gets its own kernel object (cached).
This module imports only the language.
"""

import functools
from dataclasses import dataclass

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
    minimum,
    readonly,
    s32,
    select,
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


@dataclass(frozen=True)
class Blocks:
    """One K step's A and B blocks in shared memory, as compile-time facts that the copy helpers and the kernels read
    (a helper given one is specialized by it, as by any constexpr).

    A's block is BM x BK and B's BK x BN, each copied in its stored layout (AT: A stored K x M, BT: B stored N x K)
    by THREADS invocations: WIDE elements (16 bytes) at a time through V4 views (0: element by element, of type IN),
    into shared rows PAD 16-byte chunks longer than the block's (against bank conflicts). KMAJOR_B (8-bit inputs,
    B stored K x N): B goes in transposed, as if stored N x K, in u32 words (put_kmajor)."""

    AT: bool
    BT: bool
    BM: int
    BN: int
    BK: int
    THREADS: int
    IN: object  # the input element type
    WIDE: int = 0
    PAD: int = 0
    KMAJOR_B: bool = False

    @property
    def A_LD(self) -> int:
        """Elements from one shared row of A to the next."""
        return (self.BM if self.AT else self.BK) + self.PAD * self.WIDE

    @property
    def A_SIZE(self) -> int:
        """Elements of one stage's A block."""
        return (self.BK if self.AT else self.BM) * self.A_LD

    @property
    def B_T(self) -> bool:
        """Whether B's shared block holds N rows of K (stored so, or transposed into it: KMAJOR_B)."""
        return self.BT or self.KMAJOR_B

    @property
    def B_UNIT(self) -> int:
        """B's elements per element of its shared array: 4 (bytes of a u32 word, K-major), else WIDE (a V4; 0: 1)."""
        return 4 if self.KMAJOR_B else self.WIDE

    @property
    def B_LD(self) -> int:
        return (self.BK if self.B_T else self.BN) + self.PAD * self.WIDE

    @property
    def B_SIZE(self) -> int:
        return (self.BN if self.B_T else self.BK) * self.B_LD

    @property
    def A_ELEMENT(self):
        """The element type of A's shared array: V4 with 16-byte copies, else IN."""
        return V4 if self.WIDE else self.IN

    @property
    def B_ELEMENT(self):
        return u32 if self.KMAJOR_B else self.A_ELEMENT

    def a_array(self, stages: int) -> int:
        """The length of A's shared array for `stages` buffers (in A_ELEMENTs)."""
        return stages * self.A_SIZE // (self.WIDE or 1)

    def b_array(self, stages: int) -> int:
        return stages * self.B_SIZE // (self.B_UNIT or 1)

    @property
    def B_SLOT(self) -> int:
        """The first of B's prefetch registers (A's come first)."""
        return self.BM * self.BK // self.WIDE // self.THREADS

    @property
    def REGISTERS(self) -> int:
        """V4 registers per invocation that hold a prefetched K step (A's chunks, then B's)."""
        return (self.BM + self.BN) * self.BK // self.WIDE // self.THREADS


@dataclass(frozen=True)
class Epilogue:
    """The epilogue's compile-time choices: + beta * C (USE_C), + bias, the activation (ACT), the accumulator and
    output types, and SCALE (False when alpha is 1: no scaling)."""

    USE_C: bool
    BIAS: bool
    ACT: str
    ACC: object
    OUT: object
    SCALE: bool = True


@func
def stage_blocks(sa, sb, a, b, a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, blocks: constexpr):
    """Both K-step blocks into shared memory at a_base and b_base (elements), each in its stored layout; with
    blocks.WIDE, a and b are the V4 views and sa, sb arrays of V4 (rows PAD V4s longer)."""
    first = local_index()
    BM, BN, BK, THREADS, IN = blocks.BM, blocks.BN, blocks.BK, blocks.THREADS, blocks.IN
    WIDE, PAD = blocks.WIDE, blocks.PAD
    if WIDE:
        if blocks.AT:
            stage_wide(sa, a_base // WIDE, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, WIDE, PAD)
        else:
            stage_wide(sa, a_base // WIDE, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, WIDE, PAD)
        if blocks.BT:
            stage_wide(sb, b_base // WIDE, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, WIDE, PAD)
        else:
            stage_wide(sb, b_base // WIDE, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE, PAD)
        return
    if blocks.AT:
        stage(sa, a_base, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, IN)
    else:
        stage(sa, a_base, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, IN)
    if blocks.BT:
        stage(sb, b_base, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, IN)
    else:
        stage(sb, b_base, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, IN)


@func
def fetch_blocks(regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, blocks: constexpr):
    """stage_blocks' loads into registers (regs: A's chunks, then B's from blocks.B_SLOT), for put_blocks to store
    later; KMAJOR_B: B's in items of 4 rows for put_kmajor."""
    first = local_index()
    WIDE, B0 = blocks.WIDE, blocks.B_SLOT
    BM, BN, BK, THREADS = blocks.BM, blocks.BN, blocks.BK, blocks.THREADS
    if blocks.AT:
        fetch_wide(regs, 0, a, k0, row0, lda, K, M, guard, BK, BM, THREADS, first, WIDE)
    else:
        fetch_wide(regs, 0, a, row0, k0, lda, M, K, guard, BM, BK, THREADS, first, WIDE)
    if blocks.BT:
        fetch_wide(regs, B0, b, col0, k0, ldb, N, K, guard, BN, BK, THREADS, first, WIDE)
    elif blocks.KMAJOR_B:
        fetch_kmajor(regs, B0, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE)
    else:
        fetch_wide(regs, B0, b, k0, col0, ldb, K, N, guard, BK, BN, THREADS, first, WIDE)


@func
def put_blocks(sa, sb, regs, a_base, b_base, blocks: constexpr):
    """The registers fetch_blocks filled into the shared blocks at a_base and b_base (elements); KMAJOR_B: sb holds
    u32 words and B goes in transposed (BN rows of BK bytes)."""
    first = local_index()
    WIDE, B0, PAD = blocks.WIDE, blocks.B_SLOT, blocks.PAD
    BM, BN, BK, THREADS = blocks.BM, blocks.BN, blocks.BK, blocks.THREADS
    if blocks.AT:
        put_wide(sa, a_base // WIDE, regs, 0, BK, BM, THREADS, first, WIDE, PAD)
    else:
        put_wide(sa, a_base // WIDE, regs, 0, BM, BK, THREADS, first, WIDE, PAD)
    if blocks.BT:
        put_wide(sb, b_base // WIDE, regs, B0, BN, BK, THREADS, first, WIDE, PAD)
    elif blocks.KMAJOR_B:
        put_kmajor(sb, b_base // 4, regs, B0, BK, BN, THREADS, first, WIDE, (BK + PAD * WIDE) // 4)
    else:
        put_wide(sb, b_base // WIDE, regs, B0, BK, BN, THREADS, first, WIDE, PAD)


@func
def load_blocks(sa, sb, regs, a, b, a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, blocks: constexpr,
                PREFETCH: constexpr):
    """A K step's blocks into the shared buffers at a_base and b_base: through this invocation's registers
    (PREFETCH: fetch_blocks, then put_blocks) or copied (stage_blocks)."""
    if PREFETCH:
        fetch_blocks(regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, blocks)
        put_blocks(sa, sb, regs, a_base, b_base, blocks)
    else:
        stage_blocks(sa, sb, a, b, a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, blocks)


@dataclass(frozen=True)
class Staging:
    """How a K step's blocks reach shared memory, as three @func helpers with the parameters of the GEMM's own
    (GEMM_STAGING): `fetch` (regs, a, b, row0, col0, k0, M, N, K, lda, ldb, guard, blocks) issues the loads into
    registers, `put` (sa, sb, regs, a_base, b_base, blocks) stores them into the shared blocks, `stage` (sa, sb, a, b,
    a_base, b_base, row0, col0, k0, M, N, K, lda, ldb, guard, blocks) copies without registers. A kernel that
    converts or dequantizes on the way gives its own three (and its own `blocks` geometry)."""

    fetch: object
    put: object
    stage: object


GEMM_STAGING = Staging(fetch_blocks, put_blocks, stage_blocks)


@dataclass(frozen=True)
class KLoop:
    """The staged K loop's compile-time shape: the A and B tile types (TA: TM x TK, TB: TK x TN), SM x SN accumulator
    tiles per subgroup, KT tiles per K step, STAGES (1 or 2 shared buffers), PREFETCH (True or 1: the next step's
    loads in registers across the multiplications; 2: two steps ahead in two register sets, so that a load has a
    whole step, its decoding and barrier included, to arrive), EDGES (False: every block whole, bounds checks
    compiled out), SATURATE. ABLATE (measurement only, wrong results: benchmarks/gemm_ablation.py) leaves a part of
    the steps out: "no_global" the global loads after the first step (the shared stores keep storing the first
    registers), "no_stage" every copy into shared memory after the first step, "no_barrier" the barriers between
    steps, joined by "+"; "" (the default) compiles nothing of it."""

    TA: object
    TB: object
    SM: int
    SN: int
    KT: int
    STAGES: int
    PREFETCH: bool | int
    EDGES: bool
    SATURATE: bool
    ABLATE: str = ""  # "+"-separated

    @property
    def LOAD(self) -> bool:  # noqa: N802 -- read in the kernels as their constants
        """Whether the steps after the first load their blocks from global memory."""
        return not {"no_global", "no_stage"} & set(self.ABLATE.split("+"))

    @property
    def STORE(self) -> bool:  # noqa: N802
        """Whether the steps after the first store blocks into shared memory."""
        return "no_stage" not in self.ABLATE.split("+")

    @property
    def SYNC(self) -> bool:  # noqa: N802
        """Whether barriers separate the steps."""
        return "no_barrier" not in self.ABLATE.split("+")


@func
def multiply_step(acc, btile, sa, sb, a_base, b_base, wm, wn, blocks: constexpr, loop: constexpr):
    """Subgroup (wm, wn)'s SM x SN tiles += its rows of the A block at a_base times its columns of the B block at
    b_base (one K step: KT tiles)."""
    TA, TB, SM, SN, KT, SATURATE = loop.TA, loop.TB, loop.SM, loop.SN, loop.KT, loop.SATURATE
    TM, TK, TN = TA.rows, TA.cols, TB.cols
    for kt in static_range(KT):
        for j in static_range(SN):
            btile[j] = load_tile_any(TB, sb, b_base, kt * TK, (wn * SN + j) * TN, blocks.B_LD, blocks.B_T,
                                     blocks.B_UNIT)
        for i in static_range(SM):
            ta = load_tile_any(TA, sa, a_base, (wm * SM + i) * TM, kt * TK, blocks.A_LD, blocks.AT, blocks.WIDE)
            for j in static_range(SN):
                acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)


@func
def ahead_step(acc, btile, sa, sb, held, fill, a, b, row0, col0, k_begin, step, steps, k_end, M, N, lda, ldb, wm, wn,
               full, blocks: constexpr, loop: constexpr, staging: constexpr):
    """K step `step` of the two-ahead loop (PREFETCH 2): `held` holds step + 1's loads (issued a step ago), `fill`
    receives step + 2's; this step's block is multiplied out of its buffer, then step + 1's is decoded into the other
    (STAGES 2) or, after every subgroup is done, into the same (STAGES 1)."""
    BK = blocks.BK
    k0 = k_begin + step * BK
    current = 0
    if loop.STAGES == 2:
        current = step % 2
    more = step + 1 < steps
    if loop.LOAD:
        if step + 2 < steps:
            staging.fetch(fill, a, b, row0, col0, k0 + 2 * BK, M, N, k_end, lda, ldb,
                          loop.EDGES and (not full or k0 + 3 * BK > k_end), blocks)
    multiply_step(acc, btile, sa, sb, current * blocks.A_SIZE, current * blocks.B_SIZE, wm, wn, blocks, loop)
    if loop.STAGES == 2:
        if loop.STORE:
            if more:
                staging.put(sa, sb, held, (1 - current) * blocks.A_SIZE, (1 - current) * blocks.B_SIZE, blocks)
        if loop.SYNC:
            barrier()
    else:
        if loop.SYNC:
            barrier()
        if loop.STORE:
            if more:
                staging.put(sa, sb, held, 0, 0, blocks)
                if loop.SYNC:
                    barrier()


@func
def staged_k_loop(acc, sa, sb, a, b, row0, col0, k_begin, k_end, M, N, lda, ldb, wm, wn, full, blocks: constexpr,
                  loop: constexpr, staging: constexpr = GEMM_STAGING):
    """The staged K steps of [k_begin, k_end) into the caller's accumulators acc (a local array of SM * SN tiles, by
    reference): per step of BK the A and B blocks at (row0, k) and (k, col0) go into shared memory (bounds-checked
    against M, N and k_end unless the block is whole: full), then subgroup (wm, wn) multiplies its tiles out of them.
    STAGES=2 fills the other buffer while this one is multiplied (one barrier a step); PREFETCH issues the next step's
    loads into registers before the multiplications and stores them after (PREFETCH 2: the step after next's, into
    a second register set, `ahead_step`). The plain and the K-split GEMM run it, and kernels with other staging
    (`staging`) too."""
    TB, SN = loop.TB, loop.SN
    STAGES, PREFETCH, EDGES = loop.STAGES, loop.PREFETCH, loop.EDGES
    LOAD, STORE, SYNC = loop.LOAD, loop.STORE, loop.SYNC  # all True but for the ablation benchmark
    BK = blocks.BK
    btile = local_array(TB, SN)
    regs = local_array(V4, blocks.REGISTERS if PREFETCH else 1)
    steps = (k_end - k_begin + BK - 1) // BK
    if steps > 0:
        first_guard = EDGES and (not full or k_begin + BK > k_end)
        if PREFETCH:
            staging.fetch(regs, a, b, row0, col0, k_begin, M, N, k_end, lda, ldb, first_guard, blocks)
            staging.put(sa, sb, regs, 0, 0, blocks)
        else:
            staging.stage(sa, sb, a, b, 0, 0, row0, col0, k_begin, M, N, k_end, lda, ldb, first_guard, blocks)
        if PREFETCH == 2:  # the second step's loads too, before the loop
            if steps > 1:
                staging.fetch(regs, a, b, row0, col0, k_begin + BK, M, N, k_end, lda, ldb,
                              EDGES and (not full or k_begin + 2 * BK > k_end), blocks)
        barrier()
        if PREFETCH == 2:  # two steps ahead: two register sets, the loop unrolled by two to swap them
            ahead = local_array(V4, blocks.REGISTERS)
            for pair in range((steps + 1) // 2):
                step = 2 * pair
                ahead_step(acc, btile, sa, sb, regs, ahead, a, b, row0, col0, k_begin, step, steps, k_end, M, N,
                           lda, ldb, wm, wn, full, blocks, loop, staging)
                if step + 1 < steps:
                    ahead_step(acc, btile, sa, sb, ahead, regs, a, b, row0, col0, k_begin, step + 1, steps, k_end, M,
                               N, lda, ldb, wm, wn, full, blocks, loop, staging)
        else:
            for step in range(steps):
                k0 = k_begin + step * BK
                current = 0
                if STAGES == 2:
                    current = step % 2
                more = step + 1 < steps
                next_guard = EDGES and (not full or k0 + 2 * BK > k_end)  # the next blocks cross M, N or k_end
                # The next blocks: into registers (PREFETCH: into shared memory after the multiplications) or, with
                # two stages, straight into the other buffer while this one is multiplied.
                if PREFETCH and LOAD:
                    if more:
                        staging.fetch(regs, a, b, row0, col0, k0 + BK, M, N, k_end, lda, ldb, next_guard, blocks)
                elif STAGES == 2 and LOAD and not PREFETCH:
                    if more:
                        staging.stage(sa, sb, a, b, (1 - current) * blocks.A_SIZE, (1 - current) * blocks.B_SIZE,
                                      row0, col0, k0 + BK, M, N, k_end, lda, ldb, next_guard, blocks)
                multiply_step(acc, btile, sa, sb, current * blocks.A_SIZE, current * blocks.B_SIZE, wm, wn, blocks,
                              loop)
                if PREFETCH and STAGES == 2 and STORE:
                    if more:
                        staging.put(sa, sb, regs, (1 - current) * blocks.A_SIZE, (1 - current) * blocks.B_SIZE, blocks)
                if SYNC:
                    barrier()
                if STAGES == 1 and STORE and (PREFETCH or LOAD):  # one buffer: refilled once every subgroup is done
                    if more:
                        if PREFETCH:
                            staging.put(sa, sb, regs, 0, 0, blocks)
                        else:
                            staging.stage(sa, sb, a, b, 0, 0, row0, col0, k0 + BK, M, N, k_end, lda, ldb, next_guard,
                                          blocks)
                        if SYNC:
                            barrier()


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
def tile_origins(rows, cols, row0, col0, wm, wn, M, N, shifted, SM: constexpr, SN: constexpr, TM: constexpr,
                 TN: constexpr):
    """The first row (column) of this subgroup's SM (SN) tile rows (columns) of the block at (row0, col0), into rows
    and cols; shifted: a tile that crosses M (N) moves up (left) to end there, so that direct loads stay inside."""
    for i in static_range(SM):
        rows[i] = row0 + (wm * SM + i) * TM
        if shifted:
            rows[i] = minimum(rows[i], M - TM)
    for j in static_range(SN):
        cols[j] = col0 + (wn * SN + j) * TN
        if shifted:
            cols[j] = minimum(cols[j], N - TN)


@func
def stage_tail(st, tail_a, tail_b, a, b, k, rows, cols, lda, ldb, M, N, K, lane, AT: constexpr, BT: constexpr,
               SM: constexpr, SN: constexpr, TM: constexpr, TN: constexpr, TK: constexpr, SG: constexpr,
               IN: constexpr):
    """The direct kernel's K tail: this subgroup's A tiles (rows[i], k) and B tiles (k, cols[j]), TK deep, into st
    from tail_a and tail_b, zeros beyond K (and outside the matrices)."""
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
    if ACT == "relu":  # NaN stays NaN, as np.maximum and torch.relu (an FMax may return the other operand)
        return select(x < 0, cast(0, x.type), x)
    if ACT == "gelu":
        xf = f32(x)
        y = 0.5 * xf * (1.0 + tanh(GELU_C * (xf + GELU_CUBIC * xf * xf * xf)))
        return cast(y, x.type)
    return x


@func
def finish(result, tc, tbias, alpha, beta, epilogue: constexpr):
    """alpha * result (+ beta * C) (+ bias), the activation, in the accumulator type; then the output type.
    SCALE False (alpha is 1) leaves the scaling out."""
    ACC = epilogue.ACC
    res = result
    if epilogue.SCALE:
        res = coop.map(scale_by, result, as_accumulator(alpha, ACC))
    if epilogue.USE_C:
        res = res + coop.map(scale_by, coop.convert(tc, ACC), as_accumulator(beta, ACC))
    if epilogue.BIAS:
        res = res + coop.convert(tbias, ACC)
    if epilogue.ACT != "none":
        res = coop.map(activation, res, epilogue.ACT)
    return coop.convert(res, epilogue.OUT)


@func
def copy_out(d, sc, base, row0, col0, row_first, col_first, M, N, ROWS: constexpr, COLS: constexpr, SG: constexpr):
    """This subgroup writes its staged ROWS x COLS tile (at row0, col0 of D) to D: the elements from row_first and
    col_first on (a moved tile's own part) and inside M x N."""
    for i in range(lane_id(), ROWS * COLS, SG):
        r = i // COLS
        c = i - r * COLS
        if row0 + r >= row_first and col0 + c >= col_first and row0 + r < M and col0 + c < N:
            d[(row0 + r) * N + col0 + c] = sc[base + i]


@func
def store_tile(result, d, c, bias, sc, region, row, col, r, column, M, N, alpha, beta, full, shifted,
               TOUT: constexpr, epilogue: constexpr, SG: constexpr):
    """The epilogue of one accumulator tile, whose own rows and columns start at (r, column) and which reads C and
    bias at (row, col) (moved inside the matrices when shifted): finish, then D. A whole tile (full) loads C and
    bias and stores D as matrices; a moved one (shifted) stores D through this subgroup's region of sc, writing only
    its own part; an edge tile also stages C and bias through sc, with bounds checks."""
    TM, TN = TOUT.rows, TOUT.cols
    if full or shifted:  # C and bias tiles lie inside the matrices
        tc = coop.fill(TOUT, 0)
        tbias = coop.fill(TOUT, 0)
        if epilogue.USE_C:
            tc = coop.load(TOUT, c, row * N + col, N, coop.RowMajor)
        if epilogue.BIAS:
            tbias = coop.load(TOUT, bias, col, 0, coop.RowMajor)  # stride 0: every row is bias[col:]
        out = finish(result, tc, tbias, alpha, beta, epilogue)
        if full:
            coop.store(out, d, r * N + column, N, coop.RowMajor)
        else:  # a moved tile writes only what it owns, through shared memory
            coop.store(out, sc, region, TN, coop.RowMajor)
            barrier()
            copy_out(d, sc, region, row, col, r, column, M, N, TM, TN, SG)
            barrier()
    else:
        lane = lane_id()
        tc = coop.fill(TOUT, 0)
        tbias = coop.fill(TOUT, 0)
        if epilogue.USE_C:
            stage(sc, region, c, r, column, N, M, N, True, TM, TN, SG, lane, epilogue.OUT)
            barrier()
            tc = coop.load(TOUT, sc, region, TN, coop.RowMajor)
            barrier()
        if epilogue.BIAS:
            stage(sc, region, bias, 0, column, 0, TM, N, True, TM, TN, SG, lane, epilogue.OUT)
            barrier()
            tbias = coop.load(TOUT, sc, region, TN, coop.RowMajor)
            barrier()
        out = finish(result, tc, tbias, alpha, beta, epilogue)
        coop.store(out, sc, region, TN, coop.RowMajor)
        barrier()
        copy_out(d, sc, region, r, column, r, column, M, N, TM, TN, SG)
        barrier()


def byte_sized(dtype) -> bool:
    return dtype.width == 8


def coop_threads(constexprs: dict) -> int:
    return constexprs["WM"] * constexprs["WN"] * constexprs["SG"]


@functools.cache
def coop_kernel(IN, ACC, OUT):  # noqa: N803 -- dtypes read as the kernel's constants
    """The cooperative-matrix GEMM for A/B elements IN, accumulator ACC and output (C, D, bias) OUT: a composition
    of the helpers above: the direct K loop and its tail (DIRECT), then the staged steps (staged_k_loop, on the
    kernel's accumulators), then the epilogue."""

    @kernel_source(local_size=coop_threads, name=f"gemm_coop_{IN}_{ACC}_{OUT}")
    def gemm_coop(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                  bias: Buffer[OUT, readonly], d: Buffer[OUT], a4: Buffer[V4, readonly], b4: Buffer[V4, readonly],
                  alpha: f32, beta: f32, M: s32, N: s32, K: s32,
                  AT: constexpr, BT: constexpr, TM: constexpr, TN: constexpr, TK: constexpr, WM: constexpr,
                  WN: constexpr, SM: constexpr, SN: constexpr, KT: constexpr, STAGES: constexpr,
                  DIRECT: constexpr, SG: constexpr, USE_C: constexpr, BIAS: constexpr, ACT: constexpr,
                  SATURATE: constexpr, WIDE: constexpr = 0, ALIGNED_OUT: constexpr = True, PAD: constexpr = 0,
                  PREFETCH: constexpr = False, EDGES: constexpr = True, SCALE: constexpr = True,
                  KMAJOR_B: constexpr = False, ABLATE: constexpr = ""):
        static_assert(STAGES == 1 or STAGES == 2, "STAGES is 1 or 2")
        static_assert(not KMAJOR_B or (PREFETCH and not BT and byte_sized(IN)),
                      "KMAJOR_B transposes an 8-bit B stored K x N while prefetching")
        static_assert(not (PAD or PREFETCH) or WIDE, "PAD and PREFETCH come with 16-byte loads (WIDE)")
        blocks = Blocks(AT, BT, WM * SM * TM, WN * SN * TN, KT * TK, WM * WN * SG, IN, WIDE, PAD, KMAJOR_B)
        BM, BN, BK = blocks.BM, blocks.BN, blocks.BK
        epilogue = Epilogue(USE_C, BIAS, ACT, ACC, OUT, SCALE)
        TA = coop.Matrix[IN, TM, TK, coop.A]
        TB = coop.Matrix[IN, TK, TN, coop.B]
        TACC = coop.Matrix[ACC, TM, TN, coop.Accumulator]
        TOUT = coop.Matrix[OUT, TM, TN, coop.Accumulator]
        a_src = a  # the tiles' and blocks' source: the element buffers, or their V4 views (WIDE)
        b_src = b
        if WIDE:
            a_src = a4
            b_src = b4
        sa = shared_array(blocks.A_ELEMENT, blocks.a_array(STAGES))  # the blocks, in their stored layouts
        sb = shared_array(blocks.B_ELEMENT, blocks.b_array(STAGES))
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
        shifted = False  # DIRECT with M >= TM and N >= TN: tiles moved inside, loaded straight from the buffers
        if DIRECT:
            shifted = M >= TM and N >= TN
        rows = local_array(s32, SM)
        cols = local_array(s32, SN)
        tile_origins(rows, cols, row0, col0, wm, wn, M, N, shifted, SM, SN, TM, TN)

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
                stage_tail(st, tail_a, tail_b, a, b, k, rows, cols, lda, ldb, M, N, K, lane, AT, BT, SM, SN, TM, TN,
                           TK, SG, IN)
                barrier()
                for j in static_range(SN):
                    btile[j] = load_tile(TB, st, tail_b + j * TK * TN, 0, 0, TK if BT else TN, BT)
                for i in static_range(SM):
                    ta = load_tile(TA, st, tail_a + i * TM * TK, 0, 0, TM if AT else TK, AT)
                    for j in static_range(SN):
                        acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)
                barrier()
            k_split = K

        staged_k_loop(acc, sa, sb, a_src, b_src, row0, col0, k_split, K, M, N, lda, ldb, wm, wn, full, blocks,
                      KLoop(TA, TB, SM, SN, KT, STAGES, PREFETCH, EDGES, SATURATE, ABLATE))

        region = sg * TM * TN
        for i in static_range(SM):
            for j in static_range(SN):
                store_tile(acc[i * SN + j], d, c, bias, sc, region, rows[i], cols[j], row0 + (wm * SM + i) * TM,
                           col0 + (wn * SN + j) * TN, M, N, alpha, beta, full, shifted, TOUT, epilogue, SG)

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
        blocks = Blocks(AT, BT, BM, BN, BK, TX * TY, IN)
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
            stage_blocks(sa, sb, a, b, 0, 0, row0, col0, k0, M, N, K, lda, ldb, not full or k0 + BK > K, blocks)
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
                    if ACT == "relu":  # NaN stays NaN
                        value = select(value < 0, ACC(0), value)
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
        blocks = Blocks(AT, BT, BM, BN, BK, THREADS, IN)  # the K tail's, copied element by element
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
            stage_blocks(sa, sb, a, b, 0, 0, row, col, k_direct, M, N, K, lda, ldb, True, blocks)
            barrier()
            ta = load_tile(TA, sa, 0, 0, 0, BM if AT else BK, AT)
            tb = load_tile(TB, sb, 0, 0, 0, BK if BT else BN, BT)
            acc = coop.mul_add(ta, tb, acc, SATURATE)
            barrier()
        tc = coop.fill(TOUT, 0)
        tbias = coop.fill(TOUT, 0)
        if USE_C:
            tc = coop.load(TOUT, c, row * N + col, N, coop.RowMajor)
        if BIAS:
            tbias = coop.load(TOUT, bias, col, 0, coop.RowMajor)
        out = finish(acc, tc, tbias, alpha, beta, Epilogue(USE_C, BIAS, ACT, ACC, OUT, SCALE))
        if full or not EDGE:
            coop.store(out, d, row0 * N + col0, N, coop.RowMajor)
        else:
            coop.store(out, sc, 0, BN, coop.RowMajor)
            barrier()
            copy_block_out(d, sc, row, col, row0, col0, M, N, BM, BN, THREADS)

    return gemm_workgroup
