"""A tiled matrix multiply with cooperative matrices: the accumulator lives across the K loop.

The tile shape is a constexpr the device answers (`coop.largest_shape`): lavapipe 8x8x8, the
H200 16x16x16, the reference executor the default 16x16x16; the grid follows from it.

    PYTHONPATH=src python3 examples/language/tiled_matmul.py [--device ref|0]   (default: the best device)
"""

from __future__ import annotations

import argparse

import numpy as np

import hydroplane
from hydroplane import coop
from hydroplane.lang import Buffer, constexpr, f16, f32, readonly, workgroup_id


@hydroplane.func
def k_step(acc, a, b, row, col, kk, K_TOTAL: constexpr, N_TOTAL: constexpr, M: constexpr, N: constexpr,
           K: constexpr):
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, row * K_TOTAL + kk, K_TOTAL, coop.RowMajor)
    tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, kk * N_TOTAL + col, N_TOTAL, coop.RowMajor)
    return coop.mul_add(ta, tb, acc)


@hydroplane.kernel(local_size=32)
def matmul(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32], N_TOTAL: constexpr,
           K_TOTAL: constexpr, SHAPE: constexpr = coop.largest_shape(f16, f32, default=(16, 16, 16))):
    M, N, K = SHAPE  # the largest f16 x f16 + f32 tile the device offers
    row = workgroup_id(1) * M
    col = workgroup_id(0) * N
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    for kk in range(0, K_TOTAL, K):
        acc = k_step(acc, a, b, row, col, kk, K_TOTAL, N_TOTAL, M, N, K)
    coop.store(acc, c, row * N_TOTAL + col, N_TOTAL, coop.RowMajor)


def main(device=None) -> str:
    mt, nt, kt = 64, 48, 128  # multiples of every tile size the devices offer (8, 16)
    rng = np.random.default_rng(2)
    a = (rng.integers(-8, 8, (mt, kt)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (kt, nt)) / 4).astype(np.float16)
    c = np.zeros(mt * nt, np.float32)
    grid = lambda meta: (nt // meta["SHAPE"][1], mt // meta["SHAPE"][0])  # noqa: E731 -- tiles per axis
    result = matmul[grid](a.ravel(), b.ravel(), c, N_TOTAL=nt, K_TOTAL=kt, device=device)
    np.testing.assert_array_equal(c.reshape(mt, nt), a.astype(np.float32) @ b.astype(np.float32))
    return f"{result.device} on a grid of {result.grid[0]}x{result.grid[1]} tiles"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="ref or a Vulkan device number (default: the best device)")
    args = parser.parse_args()
    print(f"matmul: correct on {main(args.device if args.device in (None, 'ref') else int(args.device))}")
