"""Fuzz: mutated whole modules of the glslang corpus fed to reflect() and compile_kernel(); only SpirvError
comes out, with a word offset inside the module when it has one (no wall clock is asserted).

Whole modules (not windows, as in test_fuzz.py) keep the types, decorations and variables that
reflection reads, so the mutants reach it: a pointer type that is gone, a struct that holds itself, a
constant that is no integer. Planted cases check that the error names the instruction's offset.
"""

from __future__ import annotations

import random
import traceback
from array import array

from spirv_corpus import corpus_binaries  # noqa: F401  (fixture)
from test_fuzz import mutate

from hydroplane.spirv import binary, grammar, reflect, text
from hydroplane.spirv.binary import SpirvError
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

MUTANTS = 12_000
SEED = 90210

PLANTED = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %buf
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
BLOCK
      %ptr_b = OpTypePointer StorageBuffer %blk
        %buf = OpVariable POINTER StorageBuffer
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
"""


def test_mutated_modules_reflect_or_raise_spirv_error(corpus_binaries):
    rng = random.Random(SEED)
    pool = [binary.as_words(data) for _, data in sorted(corpus_binaries.items())]
    targets = (Target.profile("lavapipe"), Target.profile("nvidia-h200"), Target.reference())
    reflected = rejected = 0
    failures = []
    for n in range(MUTANTS):
        mutant = mutate(rng.choice(pool), rng)
        try:
            module = binary.decode(mutant)
        except SpirvError:
            continue
        size = len(binary.as_words(mutant)) if isinstance(mutant, array) else len(mutant) // 4
        for step, argument in ((reflect, None), (compile_kernel, targets[n % 3])):
            try:
                step(module) if argument is None else step(module, argument)
                reflected += 1
            except SpirvError as exc:
                assert exc.offset is None or 0 <= exc.offset <= size, (exc.offset, size)
                rejected += 1
            except Exception:  # anything else is a bug: keep the input to reproduce it
                failures.append((n, list(mutant) if isinstance(mutant, array) else mutant, traceback.format_exc()))
    assert not failures, f"{len(failures)} inputs raised other errors; first: {failures[0]}"
    assert reflected > 1000 and rejected > 200, (reflected, rejected)  # both paths exercised


def _planted(block: str, pointer: str = "%ptr_b") -> array:
    return text.assemble(PLANTED.replace("BLOCK", block).replace("POINTER", pointer))


def _offset_of_variable(words: array) -> int:
    return next(i.offset for i in binary.decode(words).instructions if i.opcode == grammar.Op.Variable)


def test_reflect_names_the_variable_whose_type_is_undefined():
    words = _planted("        %blk = OpTypeStruct %uint", pointer="%missing")
    try:
        reflect(words)
    except SpirvError as exc:
        assert exc.offset == _offset_of_variable(words)
        assert "never defined" in str(exc) and "OpVariable" in str(exc)
    else:
        raise AssertionError("reflect accepted a variable of an undefined type")


def test_reflect_refuses_a_struct_that_contains_itself():
    cycles = ("        %blk = OpTypeStruct %blk", "        %blk = OpTypeStruct %two\n        %two = OpTypeStruct %blk")
    for block in cycles:
        words = _planted(block)
        try:
            reflect(words)
        except SpirvError as exc:
            assert exc.offset == _offset_of_variable(words), str(exc)
            assert "\n" not in str(exc)
        else:
            raise AssertionError(f"reflect accepted {block.strip()!r}")


def test_a_module_cut_at_an_instruction_boundary_is_refused(corpus_binaries):
    """`hydroplane spirv reflect` printed an entry point whose function and interface were never defined, and a
    header alone as a module (2026-12-07): every cut of a real module at an instruction boundary now reflects as the
    whole does (a cut before the entry point reflects none: a module may have none), or raises SpirvError."""
    words = binary.as_words(sorted(corpus_binaries.items())[0][1])
    whole = reflect(words)
    module = binary.decode(words)
    cuts = [inst.offset for inst in module.instructions] + [len(words)]
    refused = 0
    for cut in cuts:
        try:
            got = reflect(words[:cut])
        except SpirvError:
            refused += 1
            continue
        assert got.entry_points in ((), whole.entry_points), cut
        assert not got.entry_points or got.bindings == whole.bindings, cut
    assert refused >= len(cuts) // 2  # every cut past the entry point and before the module's end
