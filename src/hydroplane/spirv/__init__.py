"""SPIR-V as data: grammar tables, binary read/write, builder, text form, reflection, validation.

This layer imports nothing of hydroplane's but `hydroplane.errors`. The functions
`validate` and `reflect` live in the modules `validation` and `reflection`.
"""

from hydroplane.spirv.assembler import AssemblyError, assemble
from hydroplane.spirv.binary import Instruction, Module, Operand, SpirvError, decode, encode, to_bytes
from hydroplane.spirv.build_error import BuildError
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.disassembler import disassemble
from hydroplane.spirv.grammar import GrammarError, Op
from hydroplane.spirv.reflection import Binding, EntryPoint, ModuleInterface, SpecConstant, reflect
from hydroplane.spirv.validation import ValidationError, ValidatorNotFound, validate

__all__ = [
    "AssemblyError", "assemble", "disassemble",
    "Binding", "BuildError", "EntryPoint", "GrammarError", "Instruction", "Module", "ModuleBuilder", "ModuleInterface",
    "Op", "Operand",
    "SpecConstant", "SpirvError", "ValidationError", "ValidatorNotFound", "decode", "encode", "reflect",
    "to_bytes", "validate",
]
