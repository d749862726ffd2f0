"""A workgroup reduction: shared memory, barriers, a while loop, and a subgroup shortcut.

    PYTHONPATH=src python3 examples/language/block_sum.py [--device ref|0]
"""

from __future__ import annotations

import argparse

import numpy as np

import hydroplane
from hydroplane.lang import (
    Buffer, barrier, constexpr, f32, global_id, local_id, readonly, shared_array, subgroup_add, workgroup_id,
)


@hydroplane.kernel(local_size="BLOCK")
def block_sum(x: Buffer[f32, readonly], sums: Buffer[f32], check: Buffer[f32], BLOCK: constexpr = 64):
    partial = shared_array(f32, BLOCK)
    t = local_id()
    v = x[global_id()]
    partial[t] = v
    barrier()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        barrier()
        stride //= 2
    if t == 0:
        sums[workgroup_id()] = partial[0]
    check[global_id()] = subgroup_add(v)  # the same idea within one subgroup, in one instruction


def main(device=None) -> str:
    groups, block = 16, 64
    x = np.random.default_rng(1).integers(-64, 64, groups * block).astype(np.float32) / 4
    sums, check = np.zeros(groups, np.float32), np.zeros(groups * block, np.float32)
    result = block_sum[(groups,)](x, sums, check, BLOCK=block, device=device)
    np.testing.assert_array_equal(sums, x.reshape(groups, block).sum(axis=1))
    return result.device


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    print(f"block_sum: correct on {main(args.device if args.device in (None, 'ref') else int(args.device))}")
