"""The importer reads both architectures' files (schema 1.1.1 and 1.2.0) into the model, and rejects bad XML."""

from __future__ import annotations

import re
import zipfile

import pytest
from isa_testdata import CDNA5, RDNA3, isa_files, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import (
    IsaLibrary,
    SpecCache,
    SpecFormatError,
    SpecNotFoundError,
    import_xml,
    xml_sources,
)
from hydroplane.isa.conditions import describe, evaluate


@pytest.fixture(scope="module", params=[RDNA3, CDNA5])
def imported(request, isa_files):
    arch = request.param
    return arch, isa_files.facts[arch], import_xml(isa_files.read(arch), isa_files.files[arch])


def test_document_and_sections(imported):
    arch, want, spec = imported
    assert spec.document.architecture == arch
    assert spec.document.architecture_id == want.arch_id
    assert spec.document.schema_version == want.schema
    assert spec.document.release_date == want.release_date
    assert spec.document.license == "MIT"
    assert set(spec.encodings) == want.encodings
    assert set(spec.data_formats) == want.formats
    assert set(spec.operand_types) == {"OPR_SRC", "OPR_VGPR"}
    assert len(spec.instructions) == 20
    assert sum(len(i.encodings) for i in spec.instructions.values()) == want.forms
    assert {"SALU", "VALU", "SMEM", "VMEM", "TRAP"} <= set(spec.groups)
    assert "TRANSCENDENTAL" in spec.subgroups and len(spec.subgroups) == 14


def test_instruction_run_matches_the_readme(imported):
    _, _, spec = imported
    opcodes = {i.encoding("ENC_VOP1").opcode: name for name, i in spec.instructions.items()}
    assert sorted(opcodes) == [8] + list(range(10, 29))  # no opcode 9
    off = spec.instructions["V_CVT_OFF_F32_I4"]
    assert off.encoding("ENC_VOP1").opcode == 14 and off.encoding("ENC_VOP3").opcode == 398
    for ins in spec.instructions.values():  # VOP1 opcode N is VOP3 opcode 384 + N
        if ins.encoding("ENC_VOP3"):
            assert ins.encoding("ENC_VOP3").opcode == 384 + ins.encoding("ENC_VOP1").opcode
    assert spec.instructions["V_CVT_NEAREST_I32_F32"].aliases == ("V_CVT_RPI_I32_F32",)
    assert spec.instructions["V_CVT_FLOOR_I32_F32"].aliases == ("V_CVT_FLR_I32_F32",)
    assert spec.instructions["V_PIPEFLUSH"].encoding("ENC_VOP1").operands == ()  # <Operands/>
    assert off.group == "VALU" and off.subgroups == ("NOT_ASSIGNED",)
    assert off.flags == ()  # every flag FALSE


def test_operands_in_amd_order(imported):
    _, _, spec = imported
    form = spec.instructions["V_CVT_OFF_F32_I4"].encoding("ENC_VOP1")
    vdst, src0 = form.operands
    assert (vdst.field_name, vdst.is_output, vdst.is_input, vdst.operand_type, vdst.data_format, vdst.size) == \
        ("VDST", True, False, "OPR_VGPR", "FMT_NUM_F32", 32)
    assert (src0.field_name, src0.is_input, src0.operand_type, src0.data_format) == \
        ("SRC0", True, "OPR_SRC", "FMT_NUM_I32")


def test_vop1_layouts_differ_only_in_op(imported):
    arch, _, spec = imported
    vop1 = spec.encodings["ENC_VOP1"]
    widths = {f.name: (f.ranges[0].offset, f.width) for f in vop1.fields}
    op = (9, 7) if arch == "AMD CDNA 5" else (9, 8)
    assert widths == {"ENCODING": (25, 7), "OP": op, "SRC0": (0, 9), "VDST": (17, 8)}
    assert vop1.bit_count == 32
    # the identifier of opcode 14 (seed 001: 0x7E001C00), with the opcode in OP
    assert 0x7E001C00 in vop1.identifiers
    assert all(ident & ~vop1.identifier_mask == 0 for ident in vop1.identifiers)


def test_schema_versions_differ_in_condition_ids(imported):
    arch, _, spec = imported
    condition = spec.encodings["ENC_VOP1"].conditions[0]
    form = spec.instructions["V_CVT_I32_F32"].encoding("VOP1_INST_LITERAL")
    if arch == "AMD CDNA 5":
        assert condition.condition_id == 0 and form.condition_id == 5
    else:
        assert condition.condition_id is None and form.condition_id is None
    assert form.condition == "has_lit"
    text = describe(condition.expression)
    assert text.startswith("SRC0 not in [250, 233, 234, 255")
    assert evaluate(condition.expression, lambda name: 257) is True
    assert evaluate(condition.expression, lambda name: 255) is False


def test_operand_type_values(imported):
    _, _, spec = imported
    src = spec.operand_types["OPR_SRC"]
    names = src.names_by_value()
    assert names[0] == "s0" and names[106] == "VCC_LO" and names[128] == "0" and names[193] == "-1"
    assert names[240] == "0.5" and names[255] == "SRC_LITERAL" and names[256] == "v0" and names[511] == "v255"
    assert "OPR_SRC_VGPR" in src.subtypes
    assert len(spec.operand_types["OPR_VGPR"].values) == 256
    f32 = spec.data_formats["FMT_NUM_F32"]
    assert (f32.data_type, f32.bit_count) == ("float", 32)
    assert [f.name for f in f32.fields] == ["Mantissa", "Exponent", "Sign"]


@pytest.mark.parametrize("cut", [100, 5000, 200000])
def test_truncated_xml_is_a_clear_error(isa_files, cut):
    data = isa_files.read(RDNA3)[:cut]
    with pytest.raises(SpecFormatError, match=r"cut\.xml: malformed or truncated XML at line \d+, column \d+"):
        import_xml(data, "cut.xml")


def test_malformed_xml_names_line(isa_files):
    original = isa_files.read(RDNA3)
    line = original[:original.index(b"<BitCount>32</BitCount>")].count(b"\n") + 1
    assert line == 17  # the first encoding's BitCount, as in AMD's files
    data = original.replace(b"<BitCount>32</BitCount>", b"<BitCount>32</Bitcount>", 1)
    with pytest.raises(SpecFormatError, match=f"bad.xml: malformed or truncated XML at line {line},"):
        import_xml(data, "bad.xml")


def test_bad_number_names_the_element(isa_files):
    data = isa_files.read(RDNA3).replace(b'<Opcode Radix="10">14</Opcode>', b'<Opcode Radix="10">1x4</Opcode>', 1)
    with pytest.raises(SpecFormatError, match=r"V_CVT_OFF_F32_I4.*Opcode.*'1x4' is not a base-10 number"):
        import_xml(data, "n.xml")


def test_missing_elements(isa_files):
    with pytest.raises(SpecFormatError, match="root element is <Foo>"):
        import_xml(b"<Foo/>", "f.xml")
    with pytest.raises(SpecFormatError, match="missing <Architecture>"):
        import_xml(b"<Spec><ISA></ISA></Spec>", "f.xml")
    data = re.sub(rb"(<FieldName>SRC0</FieldName>\s*<Description>[^<]*</Description>)\s*<BitLayout.*?</BitLayout>",
                  rb"\1", isa_files.read(RDNA3), count=1, flags=re.S)
    with pytest.raises(SpecFormatError, match=r"ENC_VOP1\).*\(SRC0\): missing <BitLayout>"):
        import_xml(data, "f.xml")


def test_sources_folder_zip_and_file(isa_files, tmp_path):
    folder = xml_sources(isa_files.folder)
    assert sorted(s.path.name for s in folder) == sorted(isa_files.files.values())
    archive = tmp_path / "AMD_GPU_MR_ISA_XML.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for arch, name in isa_files.files.items():
            zf.write(isa_files.path(arch), f"isa/{name}")
        zf.writestr("isa/README.txt", "not xml")
    zipped = IsaLibrary.open(archive, SpecCache(tmp_path / "c1"))
    assert sorted(zipped.architectures) == sorted(isa_files.files)
    single = IsaLibrary.open(isa_files.path(CDNA5), SpecCache(tmp_path / "c2"))
    assert single.architectures == ["AMD CDNA 5"]


def test_no_spec_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("HYDROPLANE_AMD_ISA", raising=False)
    with pytest.raises(SpecNotFoundError, match="set HYDROPLANE_AMD_ISA or pass --spec"):
        xml_sources(None)
    with pytest.raises(SpecNotFoundError, match="does not exist"):
        xml_sources(tmp_path / "nope.zip")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecNotFoundError, match="holds no .xml file"):
        xml_sources(tmp_path / "empty")
    monkeypatch.setenv("HYDROPLANE_AMD_ISA", str(tmp_path / "empty"))
    with pytest.raises(SpecNotFoundError):
        IsaLibrary.open()


PARTITIONED = b"""<Spec><ISA><Architecture><ArchitectureName>AMD Test</ArchitectureName>
<ArchitectureId>99</ArchitectureId></Architecture>
<OperandTypes><OperandType IsPartitioned="TRUE"><OperandTypeName>OPR_PART</OperandTypeName>
<Description>Parts.</Description><MicrocodeFormat><BitMap>
<Field IsConditional="false"><FieldName>LO</FieldName><Description>low</Description>
<BitLayout RangeCount="1"><Range Order="0"><BitCount>4</BitCount><BitOffset>0</BitOffset>
<Padding><BitCount>2</BitCount><Value Radix="2">00</Value></Padding></Range></BitLayout></Field>
</BitMap></MicrocodeFormat></OperandType></OperandTypes></ISA></Spec>"""


def test_minimal_file_with_a_partitioned_operand_type():
    """Optional sections may be absent; a partitioned type keeps its sub-fields and padding."""
    spec = import_xml(PARTITIONED, "part.xml")
    assert spec.document.architecture == "AMD Test" and spec.document.schema_version == ""
    assert spec.instructions == {} and spec.encodings == {}
    part = spec.operand_types["OPR_PART"]
    assert part.partitioned and part.values == ()
    (lo,) = part.fields
    assert (lo.name, lo.ranges[0].width, lo.ranges[0].padding_width, lo.ranges[0].padding_value) == ("LO", 4, 2, 0)
