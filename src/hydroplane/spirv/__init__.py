"""SPIR-V as data: grammar tables, binary read/write, builder, text form, reflection, validation.

This layer imports nothing of hydroplane's but `hydroplane.errors`. The functions
`validate` and `reflect` live in the modules `validation` and `reflection`.
"""

import importlib

from hydroplane.spirv.binary import Instruction, Module, Operand, SpirvError, decode, encode, to_bytes
from hydroplane.spirv.build_error import BuildError
from hydroplane.spirv.grammar import GrammarError, Op
from hydroplane.spirv.reflection import Binding, EntryPoint, ModuleInterface, SpecConstant, reflect
from hydroplane.spirv.validation import ValidationError, ValidatorNotFound, validate

# Loaded on first use, name -> its module: the text form (five modules a launch never needs; docs/perf.md) and the
# builder (what compiles or lowers a module; a process whose kernels come from the disk cache needs neither).
_LAZY = {"AssemblyError": "hydroplane.spirv.assembler", "assemble": "hydroplane.spirv.assembler",
         "disassemble": "hydroplane.spirv.disassembler", "ModuleBuilder": "hydroplane.spirv.builder"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


__all__ = [
    "AssemblyError", "assemble", "disassemble",
    "Binding", "BuildError", "EntryPoint", "GrammarError", "Instruction", "Module", "ModuleBuilder", "ModuleInterface",
    "Op", "Operand",
    "SpecConstant", "SpirvError", "ValidationError", "ValidatorNotFound", "decode", "encode", "reflect",
    "to_bytes", "validate",
]
