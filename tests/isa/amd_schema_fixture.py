"""The project's own ISA test files: facts about AMD's VOP1 conversions, written out in AMD's XML schema.

`tests/isa/fixture/` holds two XML files in the element structure of AMD's machine-readable ISA
specification (schema 1.1.1 for RDNA 3, 1.2.0 for CDNA 5: condition ids), so that the ISA tests run in
a clone on its own. They are not AMD's files: the facts (encodings and their bit fields, identifier
opcodes, the 20 VOP1 instructions from V_CVT_I32_F32 to V_MOV_B16 with their forms, opcodes and operand
formats, the OPR_SRC / OPR_VGPR values, the data formats) are the ISA's, as LLVM's assembler also knows
them (the codec tests check every encodable form against llvm-mc); every description is ours. This
module is their source: `python3 tests/isa/amd_schema_fixture.py` rewrites them, and
test_isa_fixture.py checks that the committed files are what it writes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

FIXTURE_DIR = Path(__file__).resolve().parent / "fixture"
FILES = {"AMD RDNA 3": "hydroplane_rdna3.xml", "AMD CDNA 5": "hydroplane_cdna5.xml"}
RDNA3, CDNA5 = "AMD RDNA 3", "AMD CDNA 5"
DOCUMENT = {  # architecture -> (architecture id, schema version the file follows, release date of this file)
    RDNA3: (8, "1.1.1", "2026-11-30"),
    CDNA5: (4, "1.2.0", "2026-12-01"),
}
VOP3_BASE = 384  # VOP1 opcode N is VOP3 opcode 384 + N


@dataclass(frozen=True)
class Conversion:
    """One VOP1 instruction: its opcode, destination and source (data format, bits), our description."""

    name: str
    opcode: int
    dest: tuple[str, int] | None
    source: tuple[str, int] | None
    description: str
    aliases: tuple[str, ...] = ()

    @property
    def wide(self) -> bool:
        """An operand of 64 bits: no DPP8 form (and on RDNA 3 no DPP form at all)."""
        return any(part and part[1] == 64 for part in (self.dest, self.source))


F16, F32, F64, I32, U32, B16 = (("FMT_NUM_F16", 16), ("FMT_NUM_F32", 32), ("FMT_NUM_F64", 64),
                                ("FMT_NUM_I32", 32), ("FMT_NUM_U32", 32), ("FMT_NUM_B16", 16))


def _ubyte(n: int) -> Conversion:
    return Conversion(f"V_CVT_F32_UBYTE{n}", 17 + n, F32, U32,
                      f"Read byte {n} of the source (bits {8 * n + 7}:{8 * n}) as an unsigned integer and write it "
                      "as a single-precision float to a vector register.")


INSTRUCTIONS = (
    Conversion("V_CVT_I32_F32", 8, I32, F32,
               "Turn a single-precision float into a signed 32-bit integer, rounding toward zero; values out of "
               "range saturate and NaN gives 0."),
    Conversion("V_CVT_F16_F32", 10, F16, F32,
               "Narrow a single-precision float to half precision, rounding to nearest even."),
    Conversion("V_CVT_F32_F16", 11, F32, F16, "Widen a half-precision float to single precision (exact)."),
    Conversion("V_CVT_NEAREST_I32_F32", 12, I32, F32,
               "Turn a single-precision float into a signed 32-bit integer, rounding to the nearest integer "
               "with halves going up, whatever the rounding mode.", ("V_CVT_RPI_I32_F32",)),
    Conversion("V_CVT_FLOOR_I32_F32", 13, I32, F32,
               "Turn a single-precision float into a signed 32-bit integer, rounding toward negative infinity.",
               ("V_CVT_FLR_I32_F32",)),
    Conversion("V_CVT_OFF_F32_I4", 14, F32, I32,
               "Map the signed 4-bit integer in bits 3:0 of the source through an offset table to a "
               "single-precision float (the value divided by 16, -0.5 to 0.4375) in a vector register."),
    Conversion("V_CVT_F32_F64", 15, F32, F64, "Narrow a double-precision float to single precision, rounding to "
               "nearest even."),
    Conversion("V_CVT_F64_F32", 16, F64, F32, "Widen a single-precision float to double precision (exact)."),
    *(_ubyte(n) for n in range(4)),
    Conversion("V_CVT_U32_F64", 21, U32, F64,
               "Turn a double-precision float into an unsigned 32-bit integer, rounding toward zero; values out "
               "of range saturate and NaN gives 0."),
    Conversion("V_CVT_F64_U32", 22, F64, U32, "Turn an unsigned 32-bit integer into a double-precision float "
               "(exact)."),
    Conversion("V_TRUNC_F64", 23, F64, F64, "Round a double-precision float to an integral value toward zero."),
    Conversion("V_CEIL_F64", 24, F64, F64, "Round a double-precision float to an integral value toward positive "
               "infinity."),
    Conversion("V_RNDNE_F64", 25, F64, F64, "Round a double-precision float to the nearest integral value, ties "
               "to even."),
    Conversion("V_FLOOR_F64", 26, F64, F64, "Round a double-precision float to an integral value toward negative "
               "infinity."),
    Conversion("V_PIPEFLUSH", 27, None, None, "Drain the vector ALU pipeline; the instruction has no operands."),
    Conversion("V_MOV_B16", 28, B16, B16, "Copy a 16-bit value into the low or high half of a vector register."),
)

# Opcodes with an identifier in each encoding: every instruction of the encoding on that architecture, as
# LLVM's AMDGPU tables have them (the file lists instructions for some of them only).
IDENTIFIER_OPCODES = {
    (RDNA3, "ENC_SOP1"): (*range(0, 6), *range(8, 56), *range(64, 69), *range(71, 75), 76, 77),
    (CDNA5, "ENC_SOP1"): (*range(0, 7), *range(8, 56), *range(64, 69), *range(71, 84), 87, 88, *range(96, 111)),
    (RDNA3, "ENC_VOP1"): (*range(0, 9), *range(10, 29), *range(32, 38), 39, 42, 43, 46, 47, 49, *range(51, 65),
                          66, 67, 68, 72, *range(80, 108)),
    (CDNA5, "ENC_VOP1"): (*range(0, 9), *range(10, 38), 39, 42, 43, 46, 47, 49, *range(51, 65), 66, 67, 68,
                          *range(72, 76), *range(80, 103), *range(104, 112), *range(114, 128)),
    (RDNA3, "ENC_VOP2"): (*range(1, 13), *range(15, 21), *range(24, 31), 32, 33, 34, 37, 38, 39, 43, 47,
                          *range(50, 55), *range(57, 61)),
}


@dataclass(frozen=True)
class FieldFact:
    name: str
    offset: int
    width: int
    description: str


@dataclass(frozen=True)
class EncodingFact:
    name: str
    order: int
    base: int  # the identifier bits outside OP
    mask: int
    fields: tuple[FieldFact, ...]
    description: str
    source_field: str  # the field whose literal / DPP markers the default condition excludes
    conditions: tuple[str, ...]  # condition kinds, in file order: "no_literal64", "default"


ENCODING = FieldFact("ENCODING", 0, 0, "The fixed bits that identify this encoding.")
OPCODE_TEXT = "Opcode."


def _encodings(arch: str) -> tuple[EncodingFact, ...]:
    op_width = 7 if arch == CDNA5 else 8  # CDNA 5 leaves bit 16 of ENC_VOP1 unassigned
    sop1 = EncodingFact(
        "ENC_SOP1", -1, 0xBE800000, 0xFF80FF00,
        (FieldFact("ENCODING", 23, 9, ENCODING.description), FieldFact("OP", 8, 8, OPCODE_TEXT),
         FieldFact("SDST", 16, 7, "The scalar destination."), FieldFact("SSRC0", 0, 8, "The scalar source.")),
        "Scalar ALU: one source, one destination.", "SSRC0",
        ("no_literal64", "default") if arch == CDNA5 else ("default",))
    vop1 = EncodingFact(
        "ENC_VOP1", 5, 0x7E000000, 0xFE000000 | (((1 << op_width) - 1) << 9),
        (FieldFact("ENCODING", 25, 7, ENCODING.description), FieldFact("OP", 9, op_width, OPCODE_TEXT),
         FieldFact("SRC0", 0, 9, "The source: a register, an inline constant, or a marker that a literal or a "
                                 "DPP word follows."),
         FieldFact("VDST", 17, 8, "The destination vector register.")),
        "Vector ALU: one source, one destination. VOP3 can express the same instructions with modifiers; DPP "
        "forms move data between lanes first.", "SRC0", ("default",))
    vop2 = EncodingFact(
        "ENC_VOP2", 7, 0x00000000, 0xFE000000,
        (FieldFact("ENCODING", 31, 1, ENCODING.description), FieldFact("OP", 25, 6, OPCODE_TEXT),
         FieldFact("SRC0", 0, 9, "The first source: a register, an inline constant, or a literal or DPP marker."),
         FieldFact("VDST", 17, 8, "The destination vector register."),
         FieldFact("VSRC1", 9, 8, "The second source, a vector register.")),
        "Vector ALU: two sources, one destination.", "SRC0", ("default",))
    return (sop1, vop1, vop2) if arch == RDNA3 else (sop1, vop1)


# The source values that select another form: DPP8 (233, 234), DPP16 (250), a literal (255), CDNA 5's 64-bit
# literal (254).
MARKERS = {RDNA3: (250, 233, 234, 255), CDNA5: (250, 233, 234, 255, 254)}
CONDITION_IDS = {"default": 0, "has_lit": 5, "has_lit64": 22, "has_dpp8": 15, "has_dpp16": 14, "has_lit_0": 1,
                 "no_literal64": 18}
NO_LITERAL64 = "!has_lit64_0&!has_lit64_1&!has_lit_0&!has_lit_1"

DATA_FORMATS = {  # name -> (data type, bits, our description, [(field, signedness, bits, offset)])
    "FMT_NUM_B16": ("bits", 16, "Sixteen raw bits, no numeric meaning.", [("Bits", "Unsigned", 16, 0)]),
    "FMT_NUM_F16": ("float", 16, "IEEE 754 binary16 (half precision).",
                    [("Mantissa", "DoesNotApply", 10, 0), ("Exponent", "DoesNotApply", 5, 10),
                     ("Sign", "DoesNotApply", 1, 15)]),
    "FMT_NUM_F32": ("float", 32, "IEEE 754 binary32 (single precision).",
                    [("Mantissa", "DoesNotApply", 23, 0), ("Exponent", "DoesNotApply", 8, 23),
                     ("Sign", "DoesNotApply", 1, 31)]),
    "FMT_NUM_F64": ("float", 64, "IEEE 754 binary64 (double precision).",
                    [("Mantissa", "DoesNotApply", 52, 0), ("Exponent", "DoesNotApply", 11, 52),
                     ("Sign", "DoesNotApply", 1, 63)]),
    "FMT_NUM_I32": ("integer", 32, "A two's-complement signed 32-bit integer.", [("Integer", "Signed", 32, 0)]),
    "FMT_NUM_U32": ("integer", 32, "An unsigned 32-bit integer.", [("Integer", "Unsigned", 32, 0)]),
}

SRC_SUBTYPES = {
    RDNA3: ("OPR_SDST", "OPR_SDST_EXEC", "OPR_SDST_M0", "OPR_SDST_NULL", "OPR_SRC_VGPR", "OPR_SREG",
            "OPR_SSRC_SPECIAL_SCC"),
    CDNA5: ("OPR_SDST", "OPR_SDST_EXEC", "OPR_SDST_M0", "OPR_SGPR", "OPR_SRC_SIMPLE", "OPR_SRC_VGPR", "OPR_SREG",
            "OPR_SSRC_SPECIAL_SCC"),
}
FLOAT_CONSTANTS = ("0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0", "0.15915494")


def source_values(arch: str) -> list[tuple[str, int, str]]:
    """OPR_SRC's predefined values (name, value, description), by value."""
    values = [(f"s{n}", n, "Scalar register 0; s1 and up follow." if n == 0 else "") for n in range(106)]
    values += [("VCC_LO", 106, "The low half of the vector condition code."),
               ("VCC_HI", 107, "The high half of the vector condition code.")]
    values += [(f"TTMP{n}", 108 + n, "Trap handler temporary 0; TTMP1 and up follow." if n == 0 else "")
               for n in range(16)]
    values += [("NULL", 124, "No register: reads 0, writes are dropped."), ("M0", 125, "The M0 register."),
               ("EXEC_LO", 126, "The low half of the EXEC mask."), ("EXEC_HI", 127, "The high half of the EXEC mask.")]
    values += [(str(n), 128 + n, "An inline integer constant.") for n in range(65)]
    values += [(str(-n), 192 + n, "An inline integer constant.") for n in range(1, 17)]
    if arch == CDNA5:
        values += [("SRC_FLAT_SCRATCH_BASE_LO", 230, "Low half of the flat scratch base address."),
                   ("SRC_FLAT_SCRATCH_BASE_HI", 231, "High half of the flat scratch base address.")]
    values += [("SRC_SHARED_BASE", 235, "The shared (LDS) aperture base."),
               ("SRC_SHARED_LIMIT", 236, "The shared (LDS) aperture limit.")]
    if arch == RDNA3:
        values += [("SRC_PRIVATE_BASE", 237, "The private (scratch) aperture base."),
                   ("SRC_PRIVATE_LIMIT", 238, "The private (scratch) aperture limit.")]
    values += [(name, 240 + i, "An inline float constant (1/(2*pi) for 0.15915494).")
               for i, name in enumerate(FLOAT_CONSTANTS)]
    values += [("SRC_SCC", 253, "The scalar condition code, as 0 or 1.")]
    if arch == CDNA5:
        values += [("SRC_LITERAL64", 254, "A 64-bit literal follows the instruction.")]
    values += [("SRC_LITERAL", 255, "A 32-bit literal follows the instruction.")]
    values += [(f"v{n}", 256 + n, "Vector register 0; v1 and up follow." if n == 0 else "") for n in range(256)]
    return sorted(values, key=lambda v: v[1])


GROUPS = (
    ("SALU", "Scalar ALU: one value for the whole wave, results in scalar registers."),
    ("SMEM", "Scalar memory: loads into scalar registers."),
    ("VALU", "Vector ALU: one value per lane, results in vector registers, scalar registers or EXEC."),
    ("VMEM", "Vector memory: loads and stores per lane."),
    ("EXPORT", "Exports from vector registers to the fixed-function export targets."),
    ("BRANCH", "Jumps, direct or indirect, conditional or not."),
    ("MESSAGE", "Messages to fixed-function hardware or the host."),
    ("WAVE_CONTROL", "Waits, delays, priorities and the end of a wave."),
    ("TRAP", "Entering and leaving the trap handler."),
)
SUBGROUPS = ("FLOATING_POINT", "BUFFER", "TEXTURE", "LOAD", "STORE", "SAMPLE", "BVH", "ATOMIC", "FLAT",
             "DATA_SHARE", "STATIC", "MFMA", "WMMA", "TRANSCENDENTAL")
FLAGS = ("IsBranch", "IsConditionalBranch", "IsIndirectBranch", "IsProgramTerminator", "IsImmediatelyExecuted")


def forms(arch: str, ins: Conversion) -> list[tuple[str, str, int, str]]:
    """(encoding, condition, opcode, source field) of each form, in file order."""
    if ins.source is None:
        return [("ENC_VOP1", "default", ins.opcode, ""), ("ENC_VOP3", "default", VOP3_BASE + ins.opcode, "")]
    dpp8 = not ins.wide
    dpp16 = not ins.wide or arch == CDNA5
    rows = []
    for prefix, base, opcode in (("VOP1", "ENC_VOP1", ins.opcode), ("VOP3", "ENC_VOP3", VOP3_BASE + ins.opcode)):
        rows.append((base, "default", opcode, "SRC0"))
        rows.append((f"{prefix}_INST_LITERAL", "has_lit" if prefix == "VOP1" else "has_lit_0", opcode, "LITERAL"))
        if prefix == "VOP1" and arch == CDNA5:
            rows.append(("VOP1_INST_LITERAL64", "has_lit64", opcode, "LITERAL64"))
        if dpp8:
            rows.append((f"{prefix}_VOP_DPP8", "has_dpp8", opcode, "VSRC0"))
        if dpp16:
            rows.append((f"{prefix}_VOP_DPP16", "has_dpp16", opcode, "VSRC0"))
    return rows


class _Writer:
    def __init__(self, arch: str):
        self.arch = arch
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def leaf(self, tag: str, text: str | int, attrs: str = "") -> None:
        value = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        self.line(f"<{tag}{attrs}>{value}</{tag}>")

    def open(self, tag: str, attrs: str = "") -> None:
        self.line(f"<{tag}{attrs}>")
        self.depth += 1

    def close(self, tag: str) -> None:
        self.depth -= 1
        self.line(f"</{tag}>")

    def condition_id(self, kind: str) -> str:
        return f' Id="{CONDITION_IDS[kind]}"' if self.arch == CDNA5 else ""

    # -- expressions: RDNA 3 writes bare literals, CDNA 5 types each literal ------------------------------
    def literal(self, value: int, base: str = "I", size: int = 32) -> None:
        if self.arch == CDNA5:
            self.open("lit", f' val="{value}"')
            self.type_of(base, size)
            self.close("lit")
        else:
            self.line(f'<lit val="{value}"/>')

    def type_of(self, base: str, size: int) -> None:
        self.open("ty")
        self.line(f'<t base="{base}" size="{size}"/>')
        self.close("ty")

    def not_within(self, encoding: str, field: str, values: tuple[int, ...]) -> None:
        self.open("op", ' type=".notwithin"')
        self.open("op", ' type=".fieldderef"')
        self.open("op", ' type=".fieldderef"')
        self.line('<id val="INST"/>')
        self.line(f'<id val="{encoding[len("ENC_"):]}"/>')
        self.close("op")
        self.line(f'<id val="{field}"/>')
        self.type_of("I", 32)
        self.close("op")
        self.open("op", ' type=".cons_array"')
        for value in values:
            self.literal(value)
        self.close("op")
        self.type_of("U", 1)
        self.close("op")

    def condition(self, enc: EncodingFact, kind: str) -> None:
        self.open("EncodingCondition")
        self.leaf("ConditionName", NO_LITERAL64 if kind == "no_literal64" else "default")
        if self.arch == CDNA5:
            self.leaf("ConditionId", CONDITION_IDS[kind])
        self.open("CondtionExpression")  # AMD's spelling
        if kind == "no_literal64":
            self.not_within(enc.name, enc.source_field, (254, 255))
        elif enc.name == "ENC_SOP1":
            self.literal(1, "U", 1)
        else:
            self.not_within(enc.name, enc.source_field, MARKERS[self.arch])
        self.close("CondtionExpression")
        self.close("EncodingCondition")

    # -- sections ----------------------------------------------------------------------------------------
    def field(self, field: FieldFact) -> None:
        self.open("Field", ' IsConditional="false"')
        self.leaf("FieldName", field.name)
        self.leaf("Description", field.description)
        self.open("BitLayout", ' RangeCount="1"')
        self.open("Range", ' Order="0"')
        self.leaf("BitCount", field.width)
        self.leaf("BitOffset", field.offset)
        self.close("Range")
        self.close("BitLayout")
        self.close("Field")

    def encoding(self, enc: EncodingFact) -> None:
        op = next(f for f in enc.fields if f.name == "OP")
        self.open("Encoding", f' Order="{enc.order}"')
        self.leaf("EncodingName", enc.name)
        self.leaf("BitCount", 32)
        self.leaf("EncodingIdentifierMask", format(enc.mask, "032b"), ' Radix="2"')
        self.open("EncodingIdentifiers")
        for opcode in IDENTIFIER_OPCODES[(self.arch, enc.name)]:
            self.leaf("EncodingIdentifier", format(enc.base | opcode << op.offset, "032b"), ' Radix="2"')
        self.close("EncodingIdentifiers")
        self.open("EncodingConditions")
        for kind in enc.conditions:
            self.condition(enc, kind)
        self.close("EncodingConditions")
        self.leaf("Description", enc.description)
        self.open("MicrocodeFormat")
        self.open("BitMap")
        for field in enc.fields:
            self.field(field)
        self.close("BitMap")
        self.close("MicrocodeFormat")
        self.close("Encoding")

    def operand(self, order: int, field: str, fmt: tuple[str, int], operand_type: str, output: bool) -> None:
        flags = f'Input="{str(not output).lower()}" Output="{str(output).lower()}"'
        self.open("Operand", f' {flags} IsImplicit="false" IsBinaryMicrocodeRequired="true" Order="{order}"')
        self.leaf("FieldName", field)
        self.leaf("DataFormatName", fmt[0])
        self.leaf("OperandType", operand_type)
        self.leaf("OperandSize", fmt[1])
        self.close("Operand")

    def instruction(self, ins: Conversion) -> None:
        self.open("Instruction")
        self.open("InstructionFlags")
        for flag in FLAGS:
            self.leaf(flag, "FALSE")
        self.close("InstructionFlags")
        self.leaf("InstructionName", ins.name)
        if ins.aliases:
            self.open("AliasedInstructionNames")
            for alias in ins.aliases:
                self.leaf("InstructionName", alias)
            self.close("AliasedInstructionNames")
        self.leaf("Description", ins.description)
        self.open("InstructionEncodings")
        for encoding, condition, opcode, source_field in forms(self.arch, ins):
            self.open("InstructionEncoding")
            self.leaf("EncodingName", encoding)
            self.leaf("EncodingCondition", condition, self.condition_id(condition))
            self.leaf("Opcode", opcode, ' Radix="10"')
            if ins.source is None or ins.dest is None:
                self.line("<Operands/>")
            else:
                self.open("Operands")
                self.operand(1, "VDST", ins.dest, "OPR_VGPR", True)
                self.operand(2, source_field, ins.source, "OPR_VGPR" if source_field == "VSRC0" else "OPR_SRC",
                             False)
                self.close("Operands")
            self.close("InstructionEncoding")
        self.close("InstructionEncodings")
        self.open("FunctionalGroup")
        self.leaf("Name", "VALU")
        self.open("FunctionalSubgroups")
        self.leaf("Subgroup", "NOT_ASSIGNED")
        self.close("FunctionalSubgroups")
        self.close("FunctionalGroup")
        self.close("Instruction")

    def data_format(self, name: str) -> None:
        data_type, bits, description, fields = DATA_FORMATS[name]
        self.open("DataFormat")
        self.leaf("DataFormatName", name)
        self.leaf("Description", description)
        self.leaf("DataType", data_type)
        self.leaf("BitCount", bits)
        self.leaf("ComponentCount", 1)
        self.open("DataAttributes")
        self.open("BitMap", ' Order="0"')
        for field, signedness, width, offset in fields:
            self.open("Field", f' Signedness="{signedness}"')
            self.leaf("FieldName", field)
            self.open("BitLayout", ' RangeCount="1"')
            self.open("Range", ' Order="1"')
            self.leaf("BitCount", width)
            self.leaf("BitOffset", offset)
            self.close("Range")
            self.close("BitLayout")
            self.close("Field")
        self.close("BitMap")
        self.close("DataAttributes")
        self.close("DataFormat")

    def operand_type(self, name: str, description: str, subtypes: tuple[str, ...],
                     values: list[tuple[str, int, str]]) -> None:
        self.open("OperandType", ' IsPartitioned="false"')
        self.leaf("OperandTypeName", name)
        self.leaf("Description", description)
        if subtypes:
            self.open("Subtypes")
            for subtype in subtypes:
                self.leaf("Subtype", subtype)
            self.close("Subtypes")
        self.open("OperandPredefinedValues")
        for value_name, value, value_description in values:
            self.open("PredefinedValue")
            self.leaf("Name", value_name)
            if value_description:
                self.leaf("Description", value_description)
            self.leaf("Value", value)
            self.close("PredefinedValue")
        self.close("OperandPredefinedValues")
        self.close("OperandType")

    def document(self) -> str:
        arch_id, schema, date = DOCUMENT[self.arch]
        self.open("Spec")
        self.open("Document")
        self.leaf("Copyright", "Written for hydroplane's tests; the facts are AMD's ISA, the text is ours.")
        self.leaf("Sensitivity", "Public test data.")
        self.leaf("License", "MIT")
        self.leaf("ReleaseDate", date)
        self.leaf("SchemaVersion", schema)
        self.close("Document")
        self.open("ISA")
        self.open("Architecture")
        self.leaf("ArchitectureName", self.arch)
        self.leaf("ArchitectureId", arch_id)
        self.close("Architecture")
        self.open("Encodings")
        for enc in _encodings(self.arch):
            self.encoding(enc)
        self.close("Encodings")
        self.open("Instructions")
        for ins in INSTRUCTIONS:
            self.instruction(ins)
        self.close("Instructions")
        self.open("DataFormats")
        for name in DATA_FORMATS:
            self.data_format(name)
        self.close("DataFormats")
        self.open("OperandTypes")
        self.operand_type("OPR_SRC", "Any source an encoding takes: a scalar or vector register, an inline constant, "
                          "a special register, or a literal marker.", SRC_SUBTYPES[self.arch],
                          source_values(self.arch))
        self.operand_type("OPR_VGPR", "A vector register, v0 to v255, in an 8-bit field.", (),
                          [(f"v{n}", n, "Vector register 0; v1 and up follow." if n == 0 else "")
                           for n in range(256)])
        self.close("OperandTypes")
        self.open("FunctionalGroups")
        for name, description in GROUPS:
            self.open("FunctionalGroup")
            self.leaf("Name", name)
            self.leaf("Description", description)
            self.close("FunctionalGroup")
        self.close("FunctionalGroups")
        self.open("FunctionalSubgroups")
        for name in SUBGROUPS:
            self.open("FunctionalSubgroup")
            self.leaf("Name", name)
            self.close("FunctionalSubgroup")
        self.close("FunctionalSubgroups")
        self.close("ISA")
        self.close("Spec")
        return "\n".join(self.lines) + "\n"


def render(arch: str) -> str:
    """The XML text of one architecture's file."""
    return _Writer(arch).document()


def write(folder: Path = FIXTURE_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for arch, name in FILES.items():
        path = folder / name
        path.write_text(render(arch), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE_DIR):
        print(path)
