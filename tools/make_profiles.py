#!/usr/bin/env python3
"""Write the shipped target profiles (src/hydroplane/spirv/profiles/*.json) from device records.

Usage: tools/make_profiles.py NAME DEVICES.json    a device record from `hydroplane devices --json`
                                                   (the first device) becomes profiles/NAME.json
       tools/make_profiles.py generic-khr          the generic KHR-only profile (defined below)

The nvidia-h200 profile comes from docs/vulkan_h200_devices.json (recorded on the lent H200); the
lavapipe profile from the test userland's `python3 -m hydroplane devices --json`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane.spirv.target import CoopShape, Target  # noqa: E402
from hydroplane.spirv.types import F16, F32  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "src/hydroplane/spirv/profiles"


def generic_khr() -> Target:
    """A device with only VK_KHR_cooperative_matrix at 16x16x16 f16 (f16 or f32 accumulate), the
    combination every current desktop driver offers, and Vulkan's minimum limits elsewhere."""
    shapes = tuple(CoopShape(16, 16, 16, F16, F16, c, c) for c in (F16, F32))
    return Target(name="generic-khr", description="any device with VK_KHR_cooperative_matrix 16x16x16 f16",
                  coop_khr=shapes, support=frozenset({"float16", "storage_buffer_16bit", "vulkan_memory_model"}),
                  subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32, shared_memory=16384,
                  max_workgroup_invocations=128, max_workgroup_size=(128, 128, 64), max_push_constants=128)


def main(argv: list[str]) -> int:
    if argv == ["generic-khr"]:
        target = generic_khr()
    elif len(argv) == 2:
        target = Target.load(argv[1]).with_name(argv[0])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    (OUT / f"{target.name}.json").write_text(target.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
