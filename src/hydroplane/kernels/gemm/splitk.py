"""The cooperative-matrix GEMM split over K, in the kernel language: more workgroups for problems that leave the GPU
idle with whole-K blocks (few rows of A, small M and N).

`splitk_kernel(in, acc, out)` is the staged coop kernel's K loop (source.py's `staged_k_loop` with its `Blocks`:
16-byte copies, padded rows, register prefetch, K-major 8-bit B) over one of SPLIT K ranges (grid z: range z is
[z * k_split, min(K, (z + 1) * k_split)), k_split a multiple of the block's K step): each workgroup writes its
block's partial sums, in the working type (the accumulator), into part[z] (M x N). gemv.py's reduction kernel then
adds the ranges up and applies the epilogue (alpha, beta * C, bias, activation, the output type) into D.
Configurations and launch plans: route.py's SplitConfig and splitk_route (docs/gemm.md).
"""

import functools

from hydroplane.kernels.gemm.gemv import work_type
from hydroplane.kernels.gemm.source import V4, Blocks, KLoop, copy_out, leading_dimensions, staged_k_loop
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
        BM, BN = blocks.BM, blocks.BN
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
        full = not EDGES or (ALIGNED_PART and row0 + BM <= M and col0 + BN <= N)
        # the blocks of this K range; k_end is the limit the copies' bounds checks hold them to
        staged_k_loop(acc, sa, sb, a_src, b_src, row0, col0, k_begin, k_end, M, N, lda, ldb, wm, wn, full, blocks,
                      KLoop(TA, TB, SM, SN, KT, STAGES, PREFETCH, EDGES, SATURATE))

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
