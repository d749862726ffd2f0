"""The text form against spirv-dis / spirv-as: the glslang corpus word for word, hand-written
modules for what GLSL cannot reach (64-bit switches, unknown extended sets, fp8, escapes),
float literal formats exhaustively, and assembler errors with line and column."""

from __future__ import annotations

import random
import re
import struct
from array import array

import pytest
from conftest import run_tool
from spirv_corpus import CORPUS_NAMES, corpus_binaries  # noqa: F401  (fixture)

from hydroplane.spirv import binary, grammar, text, text_literals
from hydroplane.spirv.assembler import AssemblyError
from hydroplane.spirv.types import BF16, E4M3, E5M2, F16, F32, F64


def words_of(data: bytes) -> array:
    return binary.as_words(data)


def assemble_with(tool: str, source: str, *args: str) -> array:
    return words_of(run_tool([tool, *args, "-o", "-", "-"], input=source.encode()).stdout)


def disassemble_with(tool: str, data: bytes, *args: str) -> str:
    return run_tool([tool, *args, "-"], input=data).stdout.decode()


def body(listing: str) -> list[str]:
    """Instruction lines of a listing (the `; ...` header comments dropped)."""
    return [line for line in listing.splitlines() if not line.startswith(";")]


def same_but_generator(ours: array, reference: array) -> bool:
    """Equal words apart from header word 2 (each tool writes its own generator word)."""
    return len(ours) == len(reference) and ours[:2] == reference[:2] and ours[3:] == reference[3:]


# ---------------------------------------------------------------------------------------
# The corpus


def capabilities(data: bytes) -> set[str]:
    module = binary.decode(data)
    return {grammar.enumerant("Capability", i.operands[0].value).name
            for i in module.instructions if i.opcode == grammar.Op.Capability}


def test_corpus_covers_the_families(corpus_binaries):
    assert len(corpus_binaries) >= 25
    seen = set().union(*(capabilities(d) for d in corpus_binaries.values()))
    wanted = {
        "GroupNonUniformArithmetic", "GroupNonUniformShuffle", "GroupNonUniformBallot",  # subgroups
        "CooperativeMatrixKHR", "Float16", "Int8", "BFloat16TypeKHR", "BFloat16CooperativeMatrixKHR",
        "CooperativeMatrixConversionsNV", "TensorAddressingNV", "CooperativeMatrixTensorAddressingNV",
        "CooperativeMatrixBlockLoadsNV",  # NV2
        "CooperativeMatrixReductionsEXT", "CooperativeMatrixPerElementOperationsEXT",
        "CooperativeMatrixConversionsEXT", "CooperativeMatrixGetCoordinateEXT",  # EXT maintenance1
        "Int64", "Float64",
    }
    assert wanted <= seen, f"corpus lacks {sorted(wanted - seen)}"
    # NV2 and EXT maintenance1 share the reduce / per-element capabilities (grammar aliases):
    # the extension each shader declares tells the families apart.
    by_extension = {}
    for data in corpus_binaries.values():
        for i in binary.decode(data).instructions:
            if i.opcode == grammar.Op.Extension:
                by_extension.setdefault(i.operands[0].value, set()).update(capabilities(data))
    assert {"CooperativeMatrixReductionsEXT", "CooperativeMatrixPerElementOperationsEXT"} <= \
        by_extension["SPV_NV_cooperative_matrix2"] & by_extension["SPV_EXT_cooperative_matrix_maintenance1"]
    ops = {grammar.instruction(i.opcode).name for d in corpus_binaries.values() for i in binary.decode(d).instructions}
    for op in ("OpSwitch", "OpFunctionCall", "OpLoopMerge", "OpSpecConstantOp", "OpExtInst",
               "OpCooperativeMatrixMulAddKHR", "OpCooperativeMatrixTransposeNV", "OpCooperativeMatrixLoadTensorNV",
               "OpTypeTensorViewNV", "OpCooperativeMatrixGetCoordinateEXT"):
        assert op in ops, op


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_our_disassembly_is_spirv_dis_text(name, corpus_binaries, spirv_dis):
    data = corpus_binaries[name]
    for flags in ((), ("--raw-id",)):
        ours = text.disassemble(data, raw_id=bool(flags))
        assert body(ours) == body(disassemble_with(spirv_dis, data, *flags)), flags


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_our_disassembly_reassembles_with_spirv_as(name, corpus_binaries, spirv_as, spirv_val, tmp_path):
    data = corpus_binaries[name]
    original = words_of(data)
    raw = assemble_with(spirv_as, text.disassemble(data, raw_id=True), "--preserve-numeric-ids")
    assert same_but_generator(raw, original)
    friendly = assemble_with(spirv_as, text.disassemble(data))
    spv = tmp_path / "friendly.spv"
    spv.write_bytes(binary.to_bytes(friendly))
    run_tool([spirv_val, "--target-env", "vulkan1.3", str(spv)])
    # Renumbered in order of first appearance, but the same instructions otherwise.
    assert len(friendly) == len(original)
    assert [i.opcode for i in binary.decode(friendly).instructions] == \
           [i.opcode for i in binary.decode(original).instructions]


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_our_assembly_of_spirv_dis_matches_spirv_as(name, corpus_binaries, spirv_as, spirv_dis):
    data = corpus_binaries[name]
    for dis_flags, as_flags in (((), ()), (("--raw-id",), ()), (("--raw-id",), ("--preserve-numeric-ids",))):
        source = disassemble_with(spirv_dis, data, *dis_flags)
        ours = text.assemble(source, preserve_numeric_ids=bool(as_flags))
        assert ours == assemble_with(spirv_as, source, *as_flags), (dis_flags, as_flags)


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_binary_text_binary_keeps_every_word(name, corpus_binaries):
    data = corpus_binaries[name]
    module = binary.decode(data)
    listing = text.disassemble(module, raw_id=True)
    again = text.assemble(listing, preserve_numeric_ids=True, version=module.version,
                          generator=module.generator, bound=module.bound)
    assert again == words_of(data)
    # Friendly names renumber ids in order of first appearance; a second trip is a fixed point.
    friendly = text.assemble(text.disassemble(module))
    assert text.assemble(text.disassemble(friendly)) == friendly


# ---------------------------------------------------------------------------------------
# Hand-written modules: what glslang does not emit


HAND_WRITTEN = {
    "switch64": """
               OpCapability Shader
               OpCapability Int64
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %long = OpTypeInt 64 1
      %ulong = OpTypeInt 64 0
     %long_x = OpConstant %long -9223372036854775808
    %ulong_y = OpConstant %ulong 0xffffffffffffffff
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpSelectionMerge %done None
               OpSwitch %long_x %done -1 %a 4294967296 %b -9223372036854775808 %a
          %a = OpLabel
               OpBranch %done
          %b = OpLabel
               OpSwitch %ulong_y %done 18446744073709551615 %done
       %done = OpLabel
               OpReturn
               OpFunctionEnd
""",
    "specop_strings_masks": """
               OpCapability Shader
               OpCapability Float16
               OpCapability Int16
         %ns = OpExtInstImport "NonSemantic.Hydroplane.Test"
      %glsl = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 8 4 2
               OpSource GLSL 450 %file "line one\\nquote \\" and backslash \\\\ done"
       %file = OpString "dir\\\\name \\"x\\".comp"
               OpName %main "main with spaces & symbols!"
               OpName %u "u"
               OpName %dup "u"
               OpDecorate %sc SpecId 7
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %short = OpTypeInt 16 1
       %half = OpTypeFloat 16
      %float = OpTypeFloat 32
     %v2uint = OpTypeVector %uint 2
      %ptr_f = OpTypePointer Function %float
          %u = OpConstant %uint 4294967295
        %dup = OpConstant %uint 0x10
     %short1 = OpConstant %short -32768
         %h1 = OpConstant %half -0x1.ffcp+15
         %h2 = OpConstant %half 0x1p+16
         %h3 = OpConstant %half 0x1.8p+16
         %h4 = OpConstant %half 0.1
         %f1 = OpConstant %float 1e-45
         %f2 = OpConstant %float -0x1.fffffep+127
         %f3 = OpConstant %float 0x1.8p+128
         %sc = OpSpecConstant %uint 3
        %vec = OpSpecConstantComposite %v2uint %sc %u
         %sx = OpSpecConstantOp %uint CompositeExtract %vec 1
         %sy = OpSpecConstantOp %uint IAdd %sx %sc
       %main = OpFunction %void Inline|Pure %fn
      %entry = OpLabel
        %var = OpVariable %ptr_f Function
         %x1 = OpLoad %float %var Volatile|Aligned|Nontemporal 4
               OpStore %var %f1 Aligned 16
         %e1 = OpExtInst %void %ns 17 %u %sc
         %e2 = OpExtInst %float %glsl FMix %x1 %f2 %f1
         %e3 = OpExtInst %float %glsl Pow %x1 %e2
               OpLoopMerge %exit %entry2 DependencyLength|MaxIterations 4 100
               OpBranch %entry2
     %entry2 = OpLabel
               OpBranch %entry
       %exit = OpLabel
               OpReturn
               OpFunctionEnd
""",
    "fp8_bf16": """
               OpCapability Shader
               OpCapability Float8EXT
               OpCapability BFloat16TypeKHR
               OpExtension "SPV_EXT_float8"
               OpExtension "SPV_KHR_bfloat16"
               OpMemoryModel Logical GLSL450
         %e4 = OpTypeFloat 8 Float8E4M3EXT
         %e5 = OpTypeFloat 8 Float8E5M2EXT
       %bf16 = OpTypeFloat 16 BFloat16KHR
         %c1 = OpConstant %e4 0x1.cp+8
         %c2 = OpConstant %e4 -0x1p-9
         %c3 = OpConstant %e5 0x1.8p+15
         %c4 = OpConstant %e5 0x1p+16
         %c5 = OpConstant %bf16 -0x1.fcp+127
         %c6 = OpConstant %bf16 0x1p-133
         %c7 = OpConstant %bf16 3.0
""",
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_modules_match_the_khronos_tools(name, spirv_as, spirv_dis):
    source = HAND_WRITTEN[name]
    reference = assemble_with(spirv_as, source)
    assert text.assemble(source) == reference
    data = binary.to_bytes(reference)
    for flags in ((), ("--raw-id",)):
        assert body(text.disassemble(reference, raw_id=bool(flags))) == body(disassemble_with(spirv_dis, data, *flags))
    listing = text.disassemble(reference, raw_id=True)
    assert text.assemble(listing, preserve_numeric_ids=True) == reference
    assert assemble_with(spirv_as, listing, "--preserve-numeric-ids") == reference


def test_hand_written_decoding_details():
    module = binary.decode(text.assemble(HAND_WRITTEN["switch64"]))
    switches = [i for i in module.instructions if i.opcode == grammar.Op.Switch]
    cases = [o for o in switches[0].operands if o.kind == "LiteralContextDependentNumber"]
    assert [(o.value, o.nwords) for o in cases] == [((1 << 64) - 1, 2), (1 << 32, 2), (1 << 63, 2)]
    listing = text.disassemble(module, raw_id=True)
    assert re.search(r"OpSwitch %\d+ %\d+ -1 %(\d+) 4294967296 %\d+ -9223372036854775808 %\1\n", listing)
    assert re.search(r"OpSwitch %\d+ %\d+ 18446744073709551615 %\d+\n", listing)
    spec = text.disassemble(text.assemble(HAND_WRITTEN["specop_strings_masks"]))
    assert "OpSpecConstantOp %uint CompositeExtract %vec 1" not in spec  # %vec has no OpName
    assert "OpSpecConstantOp %uint CompositeExtract %" in spec and " 1\n" in spec
    assert "OpExtInst %void %1 17 %u %" in spec  # unknown set: numeric instruction
    assert "OpExtInst %float %2 FMix " in spec and "OpExtInst %float %2 Pow " in spec
    # Our assembler also takes an instruction number where spirv-as wants the name.
    numbered = HAND_WRITTEN["specop_strings_masks"].replace("%glsl Pow", "%glsl 26")
    assert text.assemble(numbered) == text.assemble(HAND_WRITTEN["specop_strings_masks"])
    assert 'OpName %main_with_spaces___symbols_ "main with spaces & symbols!"' in spec
    assert "%main_with_spaces___symbols_ = OpFunction %void Inline|Pure" in spec
    assert "%u_0 = OpConstant %uint 16" in spec  # second OpName "u" gets a suffix


# ---------------------------------------------------------------------------------------
# Float literals: every pattern of the narrow formats, random ones of the wide formats


NARROW = [F16, BF16, E4M3, E5M2]


@pytest.mark.parametrize("t", NARROW, ids=lambda t: t.name)
def test_every_narrow_float_pattern_round_trips(t):
    exp_bits, mant_bits = text_literals.float_format(t)
    for bits in range(1 << t.width):
        literal = text_literals.format_float(bits, t)
        no_infinity = t.encoding in text_literals.NO_INFINITY
        assert text_literals.encode_float(literal, exp_bits, mant_bits, no_infinity) == bits, (bits, literal)


def test_wide_float_patterns_round_trip():
    rng = random.Random(1234)
    f32, f64 = F32, F64
    samples = [0, 1, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00000001, 0x807FFFFF, 0x7F7FFFFF]
    samples += [rng.getrandbits(32) for _ in range(4000)]
    for bits in samples:
        literal = text_literals.format_float(bits, f32)
        assert text_literals.encode_float(literal, 8, 23) == bits, (hex(bits), literal)
    special = [0x7FF0000000000000, 0x0000000000000001, 0x8000000000000000]
    for bits in special + [rng.getrandbits(64) for _ in range(4000)]:
        literal = text_literals.format_float(bits, f64)
        assert text_literals.encode_float(literal, 11, 52) == bits, (hex(bits), literal)


def test_float_formats_follow_spirv_dis():
    f32 = F32
    assert text_literals.format_float(struct.unpack("<I", struct.pack("<f", 0.1))[0], f32) == "0.100000001"
    assert text_literals.format_float(0x80000000, f32) == "-0"
    assert text_literals.format_float(0x7F800000, f32) == "0x1p+128"
    assert text_literals.format_float(0x00000001, f32) == "0x1p-149"
    assert text_literals.format_float(0x2E66, F16) == "0x1.998p-4"
    assert text_literals.format_float(0x0001, F16) == "0x1p-24"
    assert text_literals.format_float(0x3FC0, BF16) == "0x1.8p+0"
    # Decimal input rounds to nearest even, exactly (not through a double).
    assert text_literals.encode_float("1.00000005960464477539062500000001", 8, 23) == 0x3F800001
    assert text_literals.encode_float("1.000000059604644775390625", 8, 23) == 0x3F800000
    assert text_literals.encode_float("65520", 5, 10) is None  # rounds past the largest half
    assert text_literals.encode_float("65519.99", 5, 10) == 0x7BFF
    assert text_literals.encode_float("1e-8", 5, 10) == 0  # below half the smallest subnormal
    assert text_literals.encode_float("nonsense", 8, 23) is None


# ---------------------------------------------------------------------------------------
# Assembler errors name line and column


ERRORS = [
    ("OpCapability Shader\n  OpBogus %x", 2, 3, "unknown instruction OpBogus"),
    ("OpCapability Shaderz", 1, 14, "'Shaderz' is not a Capability enumerant"),
    ("%t = OpTypeInt 32", 1, 18, "expected OpTypeInt operand Signedness"),
    ("OpName %x \"unterminated", 1, 11, "string has no closing quote"),
    ("%a = OpTypeVoid\n%a = OpTypeBool", 2, 1, "%a is defined twice"),
    ("%u = OpTypeInt 8 0\n%c = OpConstant %u 256", 2, 20, "out of range for a 8-bit unsigned integer"),
    ("%u = OpTypeInt 32 1\n%c = OpConstant %u -2147483649", 2, 20, "out of range"),
    ("%f = OpTypeFloat 16\n%c = OpConstant %f 1e6", 2, 20, "not a 16-bit float"),
    ("%f = OpTypeFloat 32\n%c = OpConstant %f zero", 2, 20, "not a 32-bit float"),
    ("OpCapability Shader\nOpMemoryModel Logical GLSL450\n%v = OpTypeVoid\nOpTypeBool", 4, 1, "has a result"),
    ("%x = OpCapability Shader", 1, 1, "has no result id"),
    ("OpDecorate %x Location", 1, 23, "expected OpDecorate operand Location of Location"),
    ("OpMemoryModel Logical GLSL450 extra", 1, 31, "expected an instruction name"),
    ("%f = OpTypeFunction Shader", 1, 21, "expected an id"),
    ("%s = OpSpecConstantOp %t NotAnOpcode %a", 1, 26, "unknown opcode 'NotAnOpcode'"),
    ("%i = OpExtInstImport \"GLSL.std.450\"\n%r = OpExtInst %t %i NoSuchThing %x", 2, 22, "unknown extended"),
    ("OpLoopMerge %a %b Unroll|Sideways", 1, 19, "'Sideways' is not a LoopControl flag"),
    ("OpDecorate %x@y Block", 1, 12, "bad id name"),
    ("OpSource GLSL 4294967296", 1, 15, "does not fit in 32 bits"),
    ("OpName %x", 1, 10, "(at the end of the text)"),
]


@pytest.mark.parametrize("source,line,column,message", ERRORS, ids=[e[3][:30] for e in ERRORS])
def test_assembler_errors_name_line_and_column(source, line, column, message):
    with pytest.raises(AssemblyError) as info:
        text.assemble(source)
    err = info.value
    assert isinstance(err, binary.SpirvError)
    assert message in str(err)
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"line {line}, column {column}: ")


def test_assembler_rejects_non_text():
    with pytest.raises(binary.SpirvError, match="must be str"):
        text.assemble(b"OpCapability Shader")


def test_preserve_numeric_ids_fills_gaps_like_spirv_as(spirv_as):
    source = "%3 = OpTypeVoid\n%x = OpTypeBool\n%1 = OpTypeInt 32 0\n%y = OpTypeFloat 32\n%7 = OpTypeInt 8 1\n"
    for flags in ((), ("--preserve-numeric-ids",)):
        assert text.assemble(source, preserve_numeric_ids=bool(flags)) == assemble_with(spirv_as, source, *flags)
    words = text.assemble(source, preserve_numeric_ids=True)
    ids = [i.result_id for i in binary.decode(words).instructions]
    assert ids == [3, 2, 1, 4, 7] and words[3] == 8


def test_disassembling_a_bad_hand_built_module_raises_spirv_error():
    Inst, Opnd = binary.Instruction, binary.Operand
    for inst in (Inst(0xFFFE), Inst(grammar.Op.Capability, operands=[Opnd("NoSuchKind", 1)]),
                 Inst(grammar.Op.Capability, operands=[Opnd("Capability", "Shader")]),
                 Inst(grammar.Op.Name, operands=[Opnd("IdRef", 1), Opnd("LiteralString", 5)])):
        module = binary.Module(instructions=[inst])
        for raw in (False, True):
            with pytest.raises(binary.SpirvError, match="cannot print instruction") as info:
                text.disassemble(module, raw_id=raw)
            assert info.value.offset is None


def test_builtin_names_match_spirv_dis(spirv_dis):
    """Ids without OpName but with a BuiltIn decoration: every BuiltIn enumerant."""
    values = sorted(grammar.enumerant_values("BuiltIn"))
    lines = ["OpCapability Shader", "OpMemoryModel Logical GLSL450"]
    lines += [f"OpDecorate %{n} BuiltIn {grammar.enumerant('BuiltIn', v).name}" for n, v in enumerate(values, 1)]
    words = text.assemble("\n".join(lines), preserve_numeric_ids=True)
    assert body(text.disassemble(words)) == body(disassemble_with(spirv_dis, binary.to_bytes(words)))


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_disassembly_without_debug_names_is_spirv_dis_text(name, corpus_binaries, spirv_dis):
    """The fallback names (built-ins, types, constants, numbers) when OpName is stripped."""
    module = binary.decode(corpus_binaries[name])
    module.instructions = [i for i in module.instructions if i.opcode not in (grammar.Op.Name, grammar.Op.MemberName)]
    data = binary.to_bytes(binary.encode(module))
    assert body(text.disassemble(module)) == body(disassemble_with(spirv_dis, data))


@pytest.mark.parametrize("literal,expected", [
    ("1e999999999", None), ("-1e999999999", None), ("1e-999999999", 0), ("-1e-999999999", 0x80000000),
    ("0x1p+999999999", None), ("0x1p-999999999", 0), ("1" * 2000, None), ("0." + "0" * 900 + "1e+901", 0x3F800000),
    ("0x" + "0" * 900 + "1p+0", 0x3F800000),
])
def test_extreme_float_literals_are_quick(literal, expected):
    import time

    start = time.process_time()
    assert text_literals.encode_float(literal, 8, 23) == expected
    assert time.process_time() - start < 0.5


def test_extreme_integer_literals_are_errors():
    for literal in ("9" * 5000, "-" + "9" * 5000, "0x" + "f" * 5000):
        with pytest.raises(AssemblyError, match="out of range|does not fit"):
            text.assemble(f"%u = OpTypeInt 32 0\n%c = OpConstant %u {literal}")
        with pytest.raises(AssemblyError, match="does not fit"):
            text.assemble(f"OpSource GLSL {literal}")
