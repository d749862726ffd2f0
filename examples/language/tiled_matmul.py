"""A tiled matrix multiply with cooperative matrices: the accumulator lives across the K loop.

The tile shape is a constexpr: the example asks the Vulkan device for its f16 x f16 + f32
subgroup shapes (lavapipe: 8x8x8, the H200: 16x16x16 ...) and falls back to 8x8x8 on ref.

    PYTHONPATH=src python3 examples/language/tiled_matmul.py [--device ref|0]
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
def matmul(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32],
           N_TOTAL: constexpr, K_TOTAL: constexpr, M: constexpr, N: constexpr, K: constexpr):
    row = workgroup_id(1) * M
    col = workgroup_id(0) * N
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    for kk in range(0, K_TOTAL, K):
        acc = k_step(acc, a, b, row, col, kk, K_TOTAL, N_TOTAL, M, N, K)
    coop.store(acc, c, row * N_TOTAL + col, N_TOTAL, coop.RowMajor)


def device_tile(device) -> tuple[int, int, int]:
    """The smallest f16 x f16 + f32 subgroup shape device N reports (8x8x8 for ref)."""
    if device == "ref":
        return 8, 8, 8
    from hydroplane import vk  # the example asks the device; the language itself never does

    shapes = sorted((s.m, s.n, s.k) for s in vk.devices()[device].coop_shapes("f16", "f32"))
    return shapes[0]


def main(device=0) -> str:
    m, n, k = device_tile(device)
    mt, nt, kt = 4 * m, 3 * n, 5 * k
    rng = np.random.default_rng(2)
    a = (rng.integers(-8, 8, (mt, kt)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (kt, nt)) / 4).astype(np.float16)
    c = np.zeros(mt * nt, np.float32)
    result = matmul[(nt // n, mt // m)](a.ravel(), b.ravel(), c, N_TOTAL=nt, K_TOTAL=kt, M=m, N=n, K=k,
                                         device=device)
    np.testing.assert_array_equal(c.reshape(mt, nt), a.astype(np.float32) @ b.astype(np.float32))
    return f"{result.device} at {m}x{n}x{k}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="0")
    args = parser.parse_args()
    print(f"matmul: correct on {main(args.device if args.device == 'ref' else int(args.device))}")
