"""Vector add in the kernel language: one invocation per element, bounds-checked by a push constant.

    PYTHONPATH=src python3 examples/language/vector_add.py [--device ref|0]
"""

from __future__ import annotations

import argparse

import numpy as np

import hydroplane
from hydroplane.lang import Buffer, f32, global_id, readonly, s32


@hydroplane.kernel(local_size=64)
def vector_add(a: Buffer[f32, readonly], b: Buffer[f32, readonly], c: Buffer[f32], n: s32):
    i = global_id()
    if i < n:
        c[i] = a[i] + b[i]


def main(device=None) -> str:
    n = 1000
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    result = vector_add[(-(-n // 64),)](a, b, c, n, device=device)
    np.testing.assert_array_equal(c, a + b)
    return result.device


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None,
                        help="'ref' or a Vulkan device number (default: the first that runs it)")
    args = parser.parse_args()
    device = args.device if args.device in (None, "ref") else int(args.device)
    print(f"vector_add: correct on {main(device)}")
