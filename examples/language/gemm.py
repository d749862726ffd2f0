"""A GEMM with shared-memory staging and a fused epilogue, in the kernel language:

    D = relu?(alpha * A @ B + beta * C + bias)      A: M x K f16, B: K x N f16, C, D: M x N f32

Each workgroup computes a BM x BN block of D with WM x WN subgroups; each subgroup owns 2 x 2
tiles of T x T (T: the largest square f16 x f16 + f32 tile the device offers). Per K step every
invocation helps copy the A and B blocks into shared memory, a barrier, then each subgroup
multiplies its tiles out of shared memory. The epilogue scales by alpha, adds beta * C and the
bias (loaded with stride 0, so every row of the tile is the same bias row), and a per-element
map applies the ReLU.
benchmarks/lang_compile.py times its compilation against glslang on the same kernel in GLSL
(benchmarks/lang_gemm.comp).

    PYTHONPATH=src python3 examples/language/gemm.py [--device ref|0]
"""

from __future__ import annotations

import argparse

import numpy as np

import hydroplane
from hydroplane import coop
from hydroplane.lang import (
    Buffer, barrier, constexpr, f16, f32, local_index, maximum, readonly, shared_array, static_assert, static_range,
    subgroup_id, target_subgroup_size, workgroup_id,
)


@hydroplane.func
def stage(shared, source, row0, col0, ROWS: constexpr, COLS: constexpr, LD: constexpr, THREADS: constexpr):
    """Copy the ROWS x COLS block at (row0, col0) of a row-major matrix (leading dimension LD) to shared."""
    for i in range(local_index(), ROWS * COLS, THREADS):
        r = i // COLS
        c = i - r * COLS
        shared[i] = source[(row0 + r) * LD + col0 + c]


@hydroplane.func
def relu(row, col, x, RELU: constexpr):
    """The per-element tail of the epilogue: max(x, 0) when RELU."""
    if RELU:
        return maximum(x, 0.0)
    return x


@hydroplane.func
def tile_product(acc, sa, sb, wm, wn, T: constexpr, BK: constexpr, BN: constexpr):
    """This subgroup's 2 x 2 accumulators (a tuple in, a tuple out) plus its A tiles @ B tiles from shared."""
    TA = coop.Matrix[f16, T, T, coop.A]
    TB = coop.Matrix[f16, T, T, coop.B]
    a0 = coop.load(TA, sa, (wm * 2) * T * BK, BK, coop.RowMajor)
    a1 = coop.load(TA, sa, (wm * 2 + 1) * T * BK, BK, coop.RowMajor)
    b0 = coop.load(TB, sb, (wn * 2) * T, BN, coop.RowMajor)
    b1 = coop.load(TB, sb, (wn * 2 + 1) * T, BN, coop.RowMajor)
    return (coop.mul_add(a0, b0, acc[0]), coop.mul_add(a0, b1, acc[1]),
            coop.mul_add(a1, b0, acc[2]), coop.mul_add(a1, b1, acc[3]))


def _threads(c: dict) -> int:
    return c["WM"] * c["WN"] * c["SG"]


@hydroplane.kernel(local_size=_threads)
def gemm(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32, readonly],
         bias: Buffer[f32, readonly], d: Buffer[f32], alpha: f32, beta: f32,
         M_TOTAL: constexpr, N_TOTAL: constexpr, K_TOTAL: constexpr,
         SHAPE: constexpr = coop.largest_shape(f16, f32, default=(16, 16, 16)),
         SG: constexpr = target_subgroup_size(), WM: constexpr = 2, WN: constexpr = 2, RELU: constexpr = True):
    T, TN, TK = SHAPE
    static_assert(T == TN and T == TK, "the tiles are square")
    BM = WM * 2 * T  # rows of D per workgroup
    BN = WN * 2 * T  # columns of D per workgroup
    BK = T
    static_assert(M_TOTAL % BM == 0 and N_TOTAL % BN == 0 and K_TOTAL % BK == 0, "sizes are whole blocks")
    THREADS = WM * WN * SG
    ACC = coop.Matrix[f32, T, T, coop.Accumulator]

    sa = shared_array(f16, BM * BK)  # the A block of this K step
    sb = shared_array(f16, BK * BN)  # the B block
    sg = subgroup_id()
    wm = sg // WN
    wn = sg % WN
    row_block = workgroup_id(1) * BM
    col_block = workgroup_id(0) * BN

    zero = coop.fill(ACC, 0.0)
    acc = (zero, zero, zero, zero)  # four matrices living across the K loop
    for k in range(0, K_TOTAL, BK):
        stage(sa, a, row_block, k, BM, BK, K_TOTAL, THREADS)
        stage(sb, b, k, col_block, BK, BN, N_TOTAL, THREADS)
        barrier()
        acc = tile_product(acc, sa, sb, wm, wn, T, BK, BN)
        barrier()

    for i in static_range(2):
        for j in static_range(2):
            row0 = row_block + (wm * 2 + i) * T
            col0 = col_block + (wn * 2 + j) * T
            tc = coop.load(ACC, c, row0 * N_TOTAL + col0, N_TOTAL, coop.RowMajor)
            bias_rows = coop.load(ACC, bias, col0, 0, coop.RowMajor)  # stride 0: every row is bias[col0:]
            out = coop.map(relu, acc[2 * i + j] * alpha + tc * beta + bias_rows, RELU)
            coop.store(out, d, row0 * N_TOTAL + col0, N_TOTAL, coop.RowMajor)


def main(device=None, size: int = 128) -> str:
    rng = np.random.default_rng(7)
    a = (rng.integers(-8, 8, (size, size)) / 8).astype(np.float16)
    b = (rng.integers(-8, 8, (size, size)) / 8).astype(np.float16)
    c = (rng.integers(-8, 8, (size, size)) / 4).astype(np.float32)
    bias = (rng.integers(-8, 8, size) / 4).astype(np.float32)
    d = np.zeros(size * size, np.float32)
    alpha, beta = 0.5, 2.0

    def grid(meta):
        t = meta["SHAPE"][0]
        return size // (meta["WN"] * 2 * t), size // (meta["WM"] * 2 * t)

    result = gemm[grid](a.ravel(), b.ravel(), c.ravel(), bias, d, alpha, beta, M_TOTAL=size, N_TOTAL=size,
                        K_TOTAL=size, device=device)
    exact = alpha * (a.astype(np.float32) @ b.astype(np.float32)) + beta * c + bias
    np.testing.assert_array_equal(d.reshape(size, size), np.maximum(exact, 0).astype(np.float32))
    return f"{result.device}, {size}x{size}x{size}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    print(f"gemm: correct on {main(args.device if args.device in (None, 'ref') else int(args.device), args.size)}")
