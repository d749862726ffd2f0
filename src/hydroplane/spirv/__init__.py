"""SPIR-V as data: grammar tables, binary read/write, builder, text form, reflection, validation.

This layer imports nothing of hydroplane's but `hydroplane.errors`.
"""

from hydroplane.spirv.binary import Instruction, Module, Operand, SpirvError, decode, encode, to_bytes
from hydroplane.spirv.grammar import Op, GrammarError

__all__ = [
    "GrammarError", "Instruction", "Module", "Op", "Operand", "SpirvError", "decode", "encode", "to_bytes",
]
