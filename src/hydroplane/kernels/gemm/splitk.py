"""The cooperative-matrix GEMM split over K, in the kernel language: more workgroups for problems that leave the GPU
idle with whole-K blocks (few rows of A, small M and N).

`splitk_kernel(in, acc, out)` is the staged coop kernel's K loop (source.py's pieces: `Blocks`, `load_blocks`,
`fetch_blocks`, `put_blocks`, `load_tile_any`; 16-byte copies, padded rows, register prefetch, K-major 8-bit B)
over one of SPLIT K ranges (grid z: range z is [z * k_split, min(K, (z + 1) * k_split)), k_split a multiple of
the block's K step): each workgroup writes its block's partial sums, in the working type (f32 for float
accumulators, the accumulator for integers), into part[z] (M x N). gemv.py's reduction kernel then adds the ranges
up and applies the epilogue (alpha, beta * C, bias, activation, the output type) into D. Configurations and launch
plans: route.py's SplitConfig and splitk_route (docs/gemm.md).
"""

import functools

from hydroplane.kernels.gemm.gemv import work_type
from hydroplane.kernels.gemm.source import (
    V4,
    Blocks,
    copy_out,
    fetch_blocks,
    leading_dimensions,
    load_blocks,
    load_tile_any,
    put_blocks,
)
from hydroplane.lang import (
    Buffer,
    barrier,
    constexpr,
    coop,
    kernel_source,
    local_array,
    minimum,
    readonly,
    s32,
    shared_array,
    static_assert,
    static_range,
    subgroup_id,
    workgroup_id,
)


def splitk_threads(constexprs: dict) -> int:
    return constexprs["WM"] * constexprs["WN"] * constexprs["SG"]


@functools.cache
def splitk_kernel(IN, ACC, OUT):  # noqa: N803 -- dtypes read as the kernel's constants
    """The K-split cooperative-matrix GEMM's partial sums (see the module docstring); OUT names the kernel only (the
    reduction writes D)."""
    WORK = work_type(ACC)

    @kernel_source(local_size=splitk_threads, name=f"gemm_splitk_{IN}_{ACC}_{OUT}")
    def gemm_splitk(a: Buffer[IN, readonly], b: Buffer[IN, readonly], part: Buffer[WORK], a4: Buffer[V4, readonly],
                    b4: Buffer[V4, readonly], M: s32, N: s32, K: s32, k_split: s32,
                    AT: constexpr, BT: constexpr, TM: constexpr, TN: constexpr, TK: constexpr, WM: constexpr,
                    WN: constexpr, SM: constexpr, SN: constexpr, KT: constexpr, STAGES: constexpr, SG: constexpr,
                    SATURATE: constexpr, WIDE: constexpr = 0, PAD: constexpr = 0, PREFETCH: constexpr = False,
                    EDGES: constexpr = True, KMAJOR_B: constexpr = False, ALIGNED_PART: constexpr = True):
        static_assert(STAGES == 1 or STAGES == 2, "STAGES is 1 or 2")
        static_assert(not (PAD or PREFETCH) or WIDE, "PAD and PREFETCH come with 16-byte loads (WIDE)")
        blocks = Blocks(AT, BT, WM * SM * TM, WN * SN * TN, KT * TK, WM * WN * SG, IN, WIDE, PAD, KMAJOR_B)
        BM, BN, BK = blocks.BM, blocks.BN, blocks.BK
        TA = coop.Matrix[IN, TM, TK, coop.A]
        TB = coop.Matrix[IN, TK, TN, coop.B]
        TACC = coop.Matrix[ACC, TM, TN, coop.Accumulator]
        a_src = a
        b_src = b
        if WIDE:
            a_src = a4
            b_src = b4
        sa = shared_array(blocks.A_ELEMENT, blocks.a_array(STAGES))
        sb = shared_array(blocks.B_ELEMENT, blocks.b_array(STAGES))
        sc = shared_array(WORK, WM * WN * TM * TN)  # edge tiles of the partial sums, one region per subgroup
        sg = subgroup_id()
        wm = sg // WN
        wn = sg % WN
        row0 = workgroup_id(1) * BM
        col0 = workgroup_id(0) * BN
        split = workgroup_id(2)
        k_begin = split * k_split
        k_end = minimum(K, k_begin + k_split)
        lda, ldb = leading_dimensions(M, N, K, AT, BT)
        acc = local_array(TACC, SM * SN)
        for t in static_range(SM * SN):
            acc[t] = coop.fill(TACC, 0)
        btile = local_array(TB, SN)
        full = not EDGES or (ALIGNED_PART and row0 + BM <= M and col0 + BN <= N)
        steps = (k_end - k_begin + BK - 1) // BK
        regs = local_array(V4, blocks.REGISTERS if PREFETCH else 1)
        if steps > 0:
            # the blocks of this K range; k_end is the limit the copies' bounds checks hold them to
            load_blocks(sa, sb, regs, a_src, b_src, 0, 0, row0, col0, k_begin, M, N, k_end, lda, ldb,
                        EDGES and (not full or k_begin + BK > k_end), blocks, PREFETCH)
            barrier()
            for step in range(steps):
                k0 = k_begin + step * BK
                current = 0
                if STAGES == 2:
                    current = step % 2
                more = step + 1 < steps
                next_guard = EDGES and (not full or k0 + 2 * BK > k_end)
                if PREFETCH:
                    if more:
                        fetch_blocks(regs, a_src, b_src, row0, col0, k0 + BK, M, N, k_end, lda, ldb, next_guard,
                                     blocks)
                elif STAGES == 2:
                    if more:
                        load_blocks(sa, sb, regs, a_src, b_src, (1 - current) * blocks.A_SIZE,
                                    (1 - current) * blocks.B_SIZE, row0, col0, k0 + BK, M, N, k_end, lda, ldb,
                                    next_guard, blocks, False)
                a_base = current * blocks.A_SIZE
                b_base = current * blocks.B_SIZE
                for kt in static_range(KT):
                    for j in static_range(SN):
                        btile[j] = load_tile_any(TB, sb, b_base, kt * TK, (wn * SN + j) * TN, blocks.B_LD,
                                                 blocks.B_T, blocks.B_UNIT)
                    for i in static_range(SM):
                        ta = load_tile_any(TA, sa, a_base, (wm * SM + i) * TM, kt * TK, blocks.A_LD, AT, WIDE)
                        for j in static_range(SN):
                            acc[i * SN + j] = coop.mul_add(ta, btile[j], acc[i * SN + j], SATURATE)
                if PREFETCH and STAGES == 2:
                    if more:
                        put_blocks(sa, sb, regs, (1 - current) * blocks.A_SIZE, (1 - current) * blocks.B_SIZE,
                                   blocks)
                barrier()
                if STAGES == 1:  # one buffer: refilled once every subgroup is done with it
                    if more:
                        if PREFETCH:
                            put_blocks(sa, sb, regs, 0, 0, blocks)
                        else:
                            load_blocks(sa, sb, regs, a_src, b_src, 0, 0, row0, col0, k0 + BK, M, N, k_end, lda,
                                        ldb, next_guard, blocks, False)
                        barrier()

        region = sg * TM * TN
        base = split * M  # part[z] starts at row z * M of the partial sums
        for i in static_range(SM):
            for j in static_range(SN):
                r = row0 + (wm * SM + i) * TM
                col = col0 + (wn * SN + j) * TN
                result = coop.convert(acc[i * SN + j], WORK)
                if full:
                    coop.store(result, part, (base + r) * N + col, N, coop.RowMajor)
                else:  # an edge tile through shared memory, its part inside M x N written
                    coop.store(result, sc, region, TN, coop.RowMajor)
                    barrier()
                    copy_out(part, sc, region, base + r, col, base + r, col, base + M, N, TM, TN, SG)
                    barrier()

    return gemm_splitk
