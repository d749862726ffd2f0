"""The EXT maintenance1 operations on a tile: per-element map with row and column, row reduction,
coordinates, and a transpose, in the EXT encoding (lowered to NV2 where the device lacks EXT).

    PYTHONPATH=src python3 examples/language/matrix_ext_ops.py [--device ref|0]
"""

from __future__ import annotations

import argparse

import numpy as np

import hydroplane
from hydroplane import coop
from hydroplane.lang import Buffer, constexpr, f16, f32, readonly


@hydroplane.func
def causal_mask(row, col, x):
    return x if col <= row else f32(0)


@hydroplane.func
def add(x, y):
    return x + y


@hydroplane.kernel(local_size=32)
def tile_ops(x: Buffer[f32, readonly], masked: Buffer[f32], row_sums: Buffer[f32], where: Buffer[f32],
             gram: Buffer[f32], M: constexpr = 8):
    T = coop.Matrix[f32, M, M, coop.Accumulator]
    m = coop.map(causal_mask, coop.load(T, x, 0, M))
    coop.store(m, masked, 0, M)
    coop.store(coop.reduce(m, coop.Row, add), row_sums, 0, M)
    for i in range(coop.length(m)):
        r, c = coop.coordinate(m, i)
        where[r * M + c] = f32(r * 100 + c)
    h = coop.convert(m, f16)
    product = coop.mul_add(coop.convert_use(h, coop.A), coop.transpose(h), coop.fill(T, 0.0))
    coop.store(product, gram, 0, M)


def main(device=None) -> str:
    x = (np.random.default_rng(3).integers(-8, 8, (8, 8)) / 4).astype(np.float32)
    outs = {name: np.zeros(64, np.float32) for name in ("masked", "row_sums", "where", "gram")}
    result = tile_ops[(1,)](x.ravel(), **outs, device=device)
    lower = np.tril(x)
    np.testing.assert_array_equal(outs["masked"].reshape(8, 8), lower)
    np.testing.assert_array_equal(outs["row_sums"].reshape(8, 8), np.repeat(lower.sum(1, keepdims=True), 8, 1))
    np.testing.assert_array_equal(outs["where"].reshape(8, 8), np.add.outer(np.arange(8) * 100, np.arange(8)))
    np.testing.assert_array_equal(outs["gram"].reshape(8, 8), lower @ lower.T)
    return result.device + (" (EXT lowered to NV2)" if result.lowered else "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    print(f"tile_ops: correct on {main(args.device if args.device in (None, 'ref') else int(args.device))}")
