"""SPIR-V text form (spirv-dis / spirv-as syntax): `disassemble`, `assemble`, `AssemblyError`.

The work is split by job: text_literals (literal words), names (spirv-dis's friendly names),
disassembler and assembler. This module only gathers the two entry points under the name that
tests, benchmarks and users import (`from hydroplane.spirv import text`; `text.assemble(...)`).
"""

from hydroplane.spirv.assembler import SPIRV_AS_GENERATOR, AssemblyError, assemble
from hydroplane.spirv.disassembler import disassemble

__all__ = ["SPIRV_AS_GENERATOR", "AssemblyError", "assemble", "disassemble"]
