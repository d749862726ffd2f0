"""The AMD ISA reference's errors: each says what was wrong and where (file, element, word).

All derive from `IsaError`, itself a `HydroplaneError`, so the CLI prints one clean line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from hydroplane.errors import HydroplaneError


class IsaError(HydroplaneError):
    """Any error of the native-ISA reference."""


class SpecNotFoundError(IsaError):
    """No AMD ISA specification was given, or the path given holds no XML file."""


class SpecFormatError(IsaError):
    """An AMD ISA XML file is malformed, truncated, or lacks an element the importer needs."""


class UnknownNameError(IsaError):
    """A name (instruction, architecture, encoding, ...) that the loaded specification lacks."""

    def __init__(self, kind: str, name: str, known: Iterable[str], where: str = ""):
        self.kind, self.name = kind, name
        self.suggestions = close_matches(name, known)
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        place = f" in {where}" if where else ""
        super().__init__(f"unknown {kind} {name!r}{place}{hint}")


class EncodeError(IsaError):
    """An instruction cannot be encoded with the operands or encoding asked for."""


class DecodeError(IsaError):
    """Machine words that match no encoding or instruction of the specification."""


class AssemblyError(IsaError):
    """An assembly line the small assembler cannot parse or place (says which operand)."""


class SemanticsError(IsaError):
    """Executing an instruction the curated semantics do not cover, or with bad inputs."""


def close_matches(name: str, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to `count` names of `known` that look like `name` (case-insensitive)."""
    by_upper = {k.upper(): k for k in known}
    hits = difflib.get_close_matches(name.upper(), list(by_upper), n=count, cutoff=0.6)
    if not hits:
        hits = [u for u in by_upper if name.upper() in u][:count]
    return [by_upper[h] for h in hits]
