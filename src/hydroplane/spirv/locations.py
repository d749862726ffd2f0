"""Source locations a module carries: OpLine (and OpNoLine) read back as a table.

`source_locations(module)` maps the word offset of each instruction inside a function to the
OpLine in force for it (the kernel language emits one per statement; glslang -g does too). The
reference executor's diagnostics and CompiledKernel use it to point at the kernel's own source.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.spirv.binary import Module
from hydroplane.spirv.grammar import Op


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A place in a source file: file, line and column (0: the whole line)."""

    file: str
    line: int
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")


def source_locations(module: Module) -> dict[int, SourceLocation]:
    """Word offset of each instruction inside a function -> the OpLine in force for it (none after
    OpNoLine, a block's end or a function's end)."""
    strings = {i.checked_result_id: i.operands[0].text for i in module.instructions if i.opcode == Op.String}
    out: dict[int, SourceLocation] = {}
    current: SourceLocation | None = None
    for inst in module.instructions:
        op = inst.opcode
        if op == Op.Line:
            file_id, line, column = (o.number for o in inst.operands[:3])
            current = SourceLocation(strings.get(file_id, f"%{file_id}"), line, column)
            continue
        if op in (Op.NoLine, Op.Label, Op.FunctionEnd):
            current = None
            continue
        if current is not None and inst.offset is not None:
            out[inst.offset] = current
    return out
