"""The reference executor: runs SPIR-V compute modules on the CPU with NumPy, exactly, with diagnostics.

`Executor` implements the executor interface (docs/architecture.md); `Program` is a module made
ready to run; `ops.register` extends the op table (docs/ref.md, "Extending the interpreter").
Imports `hydroplane.spirv` and `hydroplane.errors` only.
"""

from hydroplane.ref.errors import (
                                   Diagnostic,
                                   ExecutionLimitError,
                                   InvalidModuleError,
                                   NonUniformError,
                                   OutOfBoundsError,
                                   RaceError,
                                   RefError,
                                   UninitializedReadError,
                                   UnreachableError,
                                   UnsupportedInstructionError,
)
from hydroplane.ref.executor import Buffer, Executor, Kernel
from hydroplane.ref.program import Program

__all__ = [
    "Buffer", "Diagnostic", "ExecutionLimitError", "Executor", "InvalidModuleError", "Kernel", "NonUniformError",
    "OutOfBoundsError", "Program", "RaceError", "RefError", "UninitializedReadError", "UnreachableError",
    "UnsupportedInstructionError",
]
