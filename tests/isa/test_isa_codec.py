"""Encode/decode every instruction form of the loaded files, and compare with LLVM's assembler.

For each (instruction, encoding) pair whose layout is available (AMD's own, or a literal form
derived from ENC_VOP1), random operand values are encoded, decoded back, disassembled and
re-assembled; then all lines of an architecture go through one llvm-mc process, which must
give the same bytes for every line it accepts. Pairs whose layout the files lack (VOP3,
DPP) must fail with an error naming the missing layout.
"""

from __future__ import annotations

import random

import pytest
from isa_testdata import isa_files, library, llvm_mc, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import DecodeError, EncodeError, decode, disassemble, encode
from hydroplane.isa.errors import AssemblyError
from hydroplane.isa.layouts import LITERAL_FIELD, layout_for
from hydroplane.isa.llvm import assemble_lines
from hydroplane.isa.model import BitRange, Field
from hydroplane.isa.syntax import assemble
from hydroplane.isa.targets import targets_of

SAMPLES_PER_FORM = 6
# The gfx target llvm-mc checks each architecture with (the first of the table).
ARCHES = ("AMD RDNA 3", "AMD CDNA 5")

# Where the XML and LLVM 22 disagree, by case. Each entry: (architecture, predicate on
# (instruction, form, field values), what LLVM does). The test fails if a listed case stops happening
# as well as when an unlisted one appears.
KNOWN_DISAGREEMENTS = {
    "mov_b16_gfx1250": ("AMD CDNA 5", lambda ins, form, values: ins.name == "V_MOV_B16",
                        "llvm-mc -mcpu=gfx1250 rejects v_mov_b16 ('instruction not supported on this GPU'); "
                        "the CDNA 5 XML lists it"),
    "lit64_for_32bit_source": ("AMD CDNA 5", lambda ins, form, values: form.encoding == "VOP1_INST_LITERAL64"
                               and _source_size(form) <= 32,
                               "the CDNA 5 XML gives 32-bit-source instructions a VOP1_INST_LITERAL64 form; "
                               "llvm-mc encodes lit64(x) on a 32-bit operand as a 32-bit literal (SRC0=255)"),
    "lit32_for_64bit_source": ("AMD CDNA 5", lambda ins, form, values: form.encoding == "VOP1_INST_LITERAL"
                               and _source_size(form) == 64,
                               "the CDNA 5 XML gives F64-source instructions a 32-bit VOP1_INST_LITERAL form; "
                               "llvm-mc -mcpu=gfx1250 always encodes their literal as a 64-bit literal (SRC0=254)"),
    "high_vgpr_16bit_gfx1250": ("AMD CDNA 5", lambda ins, form, values: ins.name != "V_MOV_B16"
                                and _high_16bit_vgpr(form, values),
                                "a 16-bit VGPR operand above v127 fits the 8-bit VDST / 9-bit SRC0 field of "
                                "ENC_VOP1 per the XML, but llvm-mc -mcpu=gfx1250 (16-bit registers as v0..v127 "
                                "only in VOP1) promotes such lines to VOP3"),
}


def _high_16bit_vgpr(form, values) -> bool:
    for o in form.operands:
        if o.size == 16 and o.field_name in values and not o.field_name.startswith(LITERAL_FIELD):
            value = values[o.field_name]
            if (o.operand_type == "OPR_VGPR" and value >= 128) or (o.operand_type == "OPR_SRC" and value >= 384):
                return True
    return False


def _source_size(form) -> int:
    return max((o.size for o in form.operands if o.is_input), default=0)


def _known_case(arch: str, instruction, form, values) -> str | None:
    for key, (where, predicate, _) in KNOWN_DISAGREEMENTS.items():
        if where == arch and predicate(instruction, form, values):
            return key
    return None


def _choices(spec, operand, rng: random.Random) -> int:
    """A random value the operand may take (never the literal markers, which select forms)."""
    if operand.field_name.startswith(LITERAL_FIELD):
        bits = 16 if operand.size == 16 else (64 if operand.field_name.endswith("64") else 32)
        return rng.getrandbits(bits) | 1 << (bits - 1)  # top bit set: never an inline constant
    values = [v for v in spec.operand_type(operand.operand_type).values
              if not v.name.upper().startswith("SRC_LITERAL")]
    if operand.size == 64:  # LLVM needs pairs: even registers, vcc/exec, or inline constants
        values = [v for v in values if _pair_ok(v.name)]
    return rng.choice(values).value


def _pair_ok(name: str) -> bool:
    lowered = name.lower()
    for prefix in ("s", "v", "ttmp"):
        rest = lowered[len(prefix):]
        if lowered.startswith(prefix) and rest.isdigit():
            return int(rest) % 2 == 0 and (prefix != "s" or int(rest) < 104)
    return lowered in ("vcc_lo", "exec_lo") or _is_number(lowered)


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _all_forms(spec):
    for name in spec.instruction_names():
        instruction = spec.instruction(name)
        for form in instruction.encodings:
            yield instruction, form


@pytest.fixture(scope="module", params=ARCHES)
def samples(request, library):
    """(spec, [(instruction, form, values, bytes, text)], forms without layout) of one architecture."""
    spec = library.spec(request.param)
    rng = random.Random(f"isa-codec-{request.param}")
    rows, missing = [], []
    for instruction, form in _all_forms(spec):
        if layout_for(spec, instruction, form) is None:
            missing.append((instruction, form))
            continue
        for _ in range(SAMPLES_PER_FORM):
            values = {o.field_name: _choices(spec, o, rng) for o in form.operands if o.field_name}
            data = encode(spec, instruction.name, form.encoding, values)
            rows.append((instruction, form, values, data, disassemble(spec, decode(spec, data))))
    return spec, rows, missing


def test_every_form_with_a_layout_round_trips(samples):
    spec, rows, missing = samples
    forms = {(i.name, f.encoding) for i, f, *_ in rows}
    expected_forms = 20 + 19 + (19 if spec.architecture == "AMD CDNA 5" else 0)  # VOP1, literal, literal64
    assert len(forms) == expected_forms
    for instruction, form, values, data, text in rows:
        decoded = decode(spec, data + b"\xff" * 8)  # trailing bytes are not part of it
        assert decoded.instruction.name == instruction.name
        assert decoded.form.encoding == form.encoding
        assert decoded.data == data and len(data) * 8 == decoded.layout.encoding.bit_count
        assert {k: decoded.values[k] for k in values} == values
        again, _, again_form = assemble(spec, text)
        assert (again, again_form.encoding) == (data, form.encoding), text


def test_forms_without_a_layout_say_so(samples):
    spec, _, missing = samples
    assert {f.encoding for _, f in missing} >= {"ENC_VOP3", "VOP3_INST_LITERAL", "VOP1_VOP_DPP16"}
    for instruction, form in missing:
        with pytest.raises(EncodeError, match=f"layout of encoding {form.encoding} is not in the loaded"):
            encode(spec, instruction.name, form.encoding, {})


def test_llvm_mc_agrees(samples, llvm_mc):
    spec, rows, _ = samples
    mcpu = targets_of(spec.architecture)[0]
    results = assemble_lines([text for *_, text in rows], mcpu, llvm_mc)
    agreed, seen_cases, unexpected = set(), set(), []
    for (instruction, form, values, data, text), result in zip(rows, results):
        case = _known_case(spec.architecture, instruction, form, values)
        if result == data:
            agreed.add((instruction.name, form.encoding))
            assert case is None, f"listed as a disagreement ({case}) but llvm-mc agrees: {text}"
            continue
        if case is None:
            shown = result.hex(" ") if isinstance(result, bytes) else result
            unexpected.append(f"{text}: ours {data.hex(' ')}, llvm-mc -mcpu={mcpu}: {shown}")
        seen_cases.add(case)
    assert not unexpected, "XML and LLVM disagree:\n" + "\n".join(unexpected)
    listed = {k for k, (arch, _, _) in KNOWN_DISAGREEMENTS.items() if arch == spec.architecture}
    assert seen_cases == listed, f"listed disagreements that did not occur: {listed - seen_cases}"
    vop1 = {(i.name, f.encoding) for i, f, *_ in rows if f.encoding == "ENC_VOP1"}
    never = vop1 - agreed - {("V_MOV_B16", "ENC_VOP1")}
    assert not never, f"no sample of these VOP1 forms matched llvm-mc: {sorted(never)}"


def test_llvm_mc_example_of_the_issue(library, llvm_mc):
    for arch, mcpu in (("rdna3", "gfx1100"), ("cdna5", "gfx1250")):
        data, _, form = assemble(library.spec(arch), "v_cvt_off_f32_i4 v5, v1")
        assert data == bytes([0x01, 0x1D, 0x0A, 0x7E]) and form.encoding == "ENC_VOP1"
        assert assemble_lines(["v_cvt_off_f32_i4 v5, v1"], mcpu, llvm_mc) == [data]
    # RDNA 4 (gfx12) shares the bytes, as seed 001 says ("The same in AMD RDNA 4")
    assert assemble_lines(["v_cvt_off_f32_i4 v5, v1"], "gfx1200", llvm_mc) == [data]


def test_decode_errors(library):
    rdna3 = library.spec("rdna3")
    with pytest.raises(DecodeError, match="need at least 4 bytes"):
        decode(rdna3, b"\x01\x1d")
    with pytest.raises(DecodeError, match="matches no encoding of AMD RDNA 3"):
        decode(rdna3, (0xFFFFFFFF).to_bytes(4, "little"))
    with pytest.raises(DecodeError, match="matches ENC_VOP2 .* no loaded instruction has opcode 9"):
        decode(rdna3, (0x12345678).to_bytes(4, "little"))
    with pytest.raises(DecodeError, match="matches ENC_VOP1 .* no loaded instruction has opcode 1\\b"):
        decode(rdna3, (0x7E000200).to_bytes(4, "little"))
    dpp = (0x7E0A1C00 | 250).to_bytes(4, "little")  # SRC0 = 250 selects the DPP16 form
    with pytest.raises(DecodeError, match=r"breaks its condition \(SRC0 not in .*VOP1_VOP_DPP16"):
        decode(rdna3, dpp)
    with pytest.raises(DecodeError,
                       match="is V_CVT_OFF_F32_I4 ENC_VOP1, but 209 is not a value of operand type OPR_SRC"):
        decode(rdna3, (0x7E0A1C00 | 209).to_bytes(4, "little"))  # a reserved source value
    literal = (0x7E0A1C00 | 255).to_bytes(4, "little")  # SRC0 = 255: a literal dword must follow
    with pytest.raises(DecodeError, match="VOP1_INST_LITERAL needs 8 bytes, got 4"):
        decode(rdna3, literal)
    assert decode(rdna3, literal + b"\x78\x56\x34\x12").values["LITERAL"] == 0x12345678


def test_encode_errors(library):
    spec = library.spec("cdna5")
    name = "v_cvt_off_f32_i4"
    with pytest.raises(EncodeError, match="does not fit the 8-bit field VDST"):
        encode(spec, name, "ENC_VOP1", {"VDST": 256, "SRC0": 257})
    with pytest.raises(EncodeError, match="209 is not a value of operand type OPR_SRC"):
        encode(spec, name, "ENC_VOP1", {"VDST": 5, "SRC0": 209})
    with pytest.raises(EncodeError, match="break condition 'default' \\(SRC0 not in"):
        encode(spec, name, "ENC_VOP1", {"VDST": 5, "SRC0": 255})  # SRC_LITERAL selects the literal form
    with pytest.raises(EncodeError, match="no field 'VSRC1'"):
        encode(spec, name, "ENC_VOP1", {"VSRC1": 1})
    with pytest.raises(EncodeError, match="field OP comes from the opcode"):
        encode(spec, name, "ENC_VOP1", {"OP": 3})
    with pytest.raises(EncodeError, match="fixed to 255"):
        encode(spec, name, "VOP1_INST_LITERAL", {"VDST": 1, "SRC0": 1, "LITERAL": 5})
    with pytest.raises(EncodeError, match="has no ENC_VOP2 form"):
        encode(spec, name, "ENC_VOP2", {})


def test_multi_range_field():
    """A field split over two ranges (least significant part first, as AMD orders them)."""
    field = Field("SIMM", "", (BitRange(4, 4), BitRange(40, 8)))
    assert field.width == 12 and field.bits_text() == "47:40, 7:4"
    rng = random.Random(7)
    for _ in range(200):
        value, word = rng.getrandbits(12), rng.getrandbits(64)
        placed = field.insert(word, value)
        assert field.extract(placed) == value
        assert placed & ~field.mask == word & ~field.mask  # other bits untouched
        assert (placed >> 4) & 0xF == value & 0xF and (placed >> 40) & 0xFF == value >> 4


def test_assembler_suffixes(library):
    spec = library.spec("rdna3")
    assert assemble(spec, "v_cvt_off_f32_i4_e32 v5, v1")[0] == bytes.fromhex("011d0a7e")
    with pytest.raises(AssemblyError, match="layout of encoding ENC_VOP3 is not in the loaded"):
        assemble(spec, "v_cvt_off_f32_i4_e64 v5, v1")
    with pytest.raises(AssemblyError, match=r"operand VDST \(OPR_VGPR\): '0x1234' is not a register"):
        assemble(spec, "v_cvt_f32_f64 0x1234, 0x5678")
    with pytest.raises(AssemblyError, match="v5.h needs a 16-bit VGPR operand"):
        assemble(spec, "v_cvt_off_f32_i4 v5.h, v1")
    assert assemble(spec, "v_cvt_f16_f32 v5.h, v1")[0] == bytes.fromhex("01150a7f")  # as llvm-mc -mcpu=gfx1100
    with pytest.raises(AssemblyError, match="empty operand"):
        assemble(spec, "v_cvt_off_f32_i4 v5,, v1")
    with pytest.raises(AssemblyError, match="unknown instruction 'v_cvt_offf32_i4'"):
        assemble(spec, "v_cvt_offf32_i4 v5, v1")
