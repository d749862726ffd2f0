"""The gfx target names (LLVM processor names) of each AMD architecture, and arch naming.

A small hand-written table; a test checks that LLVM's assembler knows every target listed.
Architecture keys are short forms of AMD's names: 'AMD RDNA 3' -> 'rdna3',
'AMD RDNA 3.5' -> 'rdna3.5', 'AMD CDNA 5' -> 'cdna5'.
"""

from __future__ import annotations

# AMD's ArchitectureName -> the gfx targets of that generation, oldest first.
GFX_TARGETS: dict[str, tuple[str, ...]] = {
    "AMD RDNA 1": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "AMD RDNA 2": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "AMD RDNA 3": ("gfx1100", "gfx1101", "gfx1102", "gfx1103"),
    "AMD RDNA 3.5": ("gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    "AMD RDNA 4": ("gfx1200", "gfx1201"),
    "AMD CDNA 1": ("gfx908",),
    "AMD CDNA 2": ("gfx90a",),
    "AMD CDNA 3": ("gfx942",),
    "AMD CDNA 4": ("gfx950",),
    "AMD CDNA 5": ("gfx1250", "gfx1251"),
}

# Generations whose 16-bit VGPR operands name register halves (LLVM's "true16" syntax:
# v5.l / v5.h, the high half adding 128 to an 8-bit VGPR field).
HALF_REGISTER_ARCHITECTURES = frozenset({"AMD RDNA 3", "AMD RDNA 3.5"})


def arch_key(name: str) -> str:
    """'AMD RDNA 3' -> 'rdna3'; also accepts keys and names without 'AMD'."""
    text = name.strip().lower()
    if text.startswith("amd"):
        text = text[3:]
    return "".join(text.split()).replace("_", "").replace("-", "")


def targets_of(architecture: str) -> tuple[str, ...]:
    """The gfx targets of an architecture name or key (empty when unknown)."""
    key = arch_key(architecture)
    for name, targets in GFX_TARGETS.items():
        if arch_key(name) == key:
            return targets
    return ()


def architecture_of_target(target: str) -> str | None:
    """'gfx1100' -> 'AMD RDNA 3'; None when the target is not in the table."""
    target = target.strip().lower()
    for name, targets in GFX_TARGETS.items():
        if target in targets:
            return name
    return None
