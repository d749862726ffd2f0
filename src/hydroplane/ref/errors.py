"""Diagnostics of the reference executor: what went wrong, in which invocations, at which instruction.

Every diagnostic is a `Diagnostic` record (kind, message, invocations, word offset and the
instruction's disassembly). In the default mode the executor raises it as the matching
`RefError` subclass; with `diagnostics="collect"` it appends it to the run's report and goes on
(an out-of-bounds read gives zeros, an out-of-bounds write is dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydroplane.errors import HydroplaneError


@dataclass
class Diagnostic:
    """One problem the reference executor found: its kind, message, where, and which invocations."""

    kind: str  # one of DIAGNOSTIC_KINDS
    message: str
    invocations: list[str] = field(default_factory=list)  # 'wg (x,y,z) local (x,y,z)', first few
    offset: int | None = None  # word offset of the instruction in the module
    disassembly: str = ""  # the instruction, spirv-dis style
    count: int = 0  # how many invocations were involved in total
    location: str = ""  # 'file:line:column' of the instruction, when the module carries OpLine

    def __str__(self) -> str:
        where = f" at word {self.offset}" if self.offset is not None and self.offset >= 0 else ""
        if self.location:
            where = f" at {self.location} (word {self.offset})"
        inst = f" `{self.disassembly}`" if self.disassembly else ""
        who = ""
        if self.invocations:
            more = f" and {self.count - len(self.invocations)} more" if self.count > len(self.invocations) else ""
            who = f" (invocations: {'; '.join(self.invocations)}{more})"
        return f"{self.kind}: {self.message}{where}{inst}{who}"


class RefError(HydroplaneError):
    """An error of the reference executor; `diagnostic` holds the structured record when there is one."""

    def __init__(self, message: str | Diagnostic):
        self.diagnostic = message if isinstance(message, Diagnostic) else None
        super().__init__(str(message))


class InvalidModuleError(RefError):
    """The module cannot be run: no such entry point, a malformed type or constant, a bad argument."""


class OutOfBoundsError(RefError):
    """A load, store or atomic outside its buffer, shared variable or local variable."""


class UninitializedReadError(RefError):
    """A read of Workgroup memory that no invocation has written."""


class RaceError(RefError):
    """Two invocations touch the same Workgroup bytes between two barriers, at least one writing."""


class NonUniformError(RefError):
    """A barrier or a scope-wide instruction reached by part of its workgroup or subgroup only."""


class MisalignedAccessError(RefError):
    """A cooperative-matrix load or store whose pointer or stride breaks Vulkan's alignment rule (the lesser of
    16 bytes and a row's or column's natural size): undefined on a driver (the H200 returns shifted data)."""


class UnsupportedInstructionError(RefError):
    """An instruction (or an operand form) the reference executor does not implement."""


class UnreachableError(RefError):
    """OpUnreachable was executed."""


class ExecutionLimitError(RefError):
    """A dispatch ran more blocks than the executor's `max_blocks` (an endless loop, usually)."""


ERROR_OF_KIND: dict[str, type[RefError]] = {
    "out-of-bounds": OutOfBoundsError,
    "uninitialized-read": UninitializedReadError,
    "race": RaceError,
    "non-uniform": NonUniformError,
    "unsupported": UnsupportedInstructionError,
    "unreachable": UnreachableError,
    "limit": ExecutionLimitError,
    "invalid": InvalidModuleError,
    "misaligned": MisalignedAccessError,
}
DIAGNOSTIC_KINDS = tuple(ERROR_OF_KIND)
