"""The kernel language's errors: one `CompilationError` that points at the kernel's source.

The semantics raise `SemanticError` (a message, no location); the AST visitor catches every
exception at the innermost node it was visiting and turns it into a `CompilationError` with
the file, line, column, the source line and a caret under the column:

    kernel.py:12:16: f16 + f32: the operand types differ; convert one explicitly (f32(x))
        c[i] = a[i] + x
                   ^
"""

from __future__ import annotations

from hydroplane.errors import HydroplaneError


class SemanticError(HydroplaneError):
    """A rule of the language was broken; the visitor adds where (never reaches the user bare)."""


class CompilationError(HydroplaneError):
    """A kernel that cannot be compiled: what is wrong, at which file:line:col, with the line and a caret."""

    def __init__(self, message: str, file: str, line: int, col: int, source_line: str):
        self.message = message
        self.file = file
        self.line = line
        self.col = col  # 1-based
        self.source_line = source_line
        caret = " " * (col - 1) + "^"
        super().__init__(f"{file}:{line}:{col}: {message}\n    {source_line}\n    {caret}")
