#!/usr/bin/env python3
"""Write the committed example modules in examples/ from the builder-made samples.

`python3 tools/make_examples.py` rewrites them; `--check` only compares and exits 1 when a
committed file differs from what the builder makes now (tests/spirv/test_examples.py does
the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from hydroplane.spirv import to_bytes  # noqa: E402
from hydroplane.spirv.samples import coop_matmul_tile, vector_add  # noqa: E402

EXAMPLES_DIR = REPO / "examples"
# file name -> (what it is, how it is made)
EXAMPLES = {
    "coop_matmul_tile.spv": ("seed 002's tile: D = A*B + C, 16x16x16, f16 inputs, f32 accumulator, KHR",
                             lambda: coop_matmul_tile(16, 16, 16, a_type="f16", c_type="f32")),
    "coop_matmul_tile_8x8x8.spv": ("the same tile at lavapipe's 8x8x8 shape",
                                   lambda: coop_matmul_tile(8, 8, 8, a_type="f16", c_type="f32")),
    "vector_add_f32.spv": ("c[i] = a[i] + b[i] for i < n (push constant), f32",
                           lambda: vector_add("f32")),
}


def expected() -> dict[str, bytes]:
    """Every example's bytes as the builder makes them now."""
    return {name: to_bytes(make()) for name, (_, make) in EXAMPLES.items()}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, data in expected().items():
        path = EXAMPLES_DIR / name
        if check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.write_bytes(data)
            print(f"wrote {path.relative_to(REPO)} ({len(data)} bytes)")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python3 tools/make_examples.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
