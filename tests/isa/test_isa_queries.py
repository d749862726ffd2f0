"""Queries across the loaded architectures, the gfx target table, and unknown-name errors."""

from __future__ import annotations

import pytest
from isa_testdata import isa_files, library, llvm_mc, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import GFX_TARGETS, UnknownNameError, arch_key, architecture_of_target, targets_of
from hydroplane.isa.llvm import assemble_lines


def test_architectures_newest_first(library):
    assert library.architectures == ["AMD CDNA 5", "AMD RDNA 3"]
    assert library.spec().architecture == "AMD CDNA 5"
    for name in ("rdna3", "RDNA 3", "AMD RDNA 3", "amd rdna 3", "gfx1100", "GFX1103"):
        assert library.spec(name).architecture == "AMD RDNA 3"
    assert library.spec("gfx1250").architecture == "AMD CDNA 5"


def test_unknown_architecture_suggests(library):
    with pytest.raises(UnknownNameError, match=r"unknown architecture 'rdna33'.*did you mean.*rdna3"):
        library.spec("rdna33")
    with pytest.raises(UnknownNameError, match="gfx1200 is AMD RDNA 4, whose file is not loaded"):
        library.spec("gfx1200")


@pytest.mark.parametrize("name", ["v_cvt_off_f32_i4", "V_CVT_OFF_F32_I4", "V_Cvt_Off_F32_I4 "])
def test_find_any_case(library, name):
    spec, instruction = library.find(name, "rdna3")
    assert instruction.name == "V_CVT_OFF_F32_I4" and spec.architecture == "AMD RDNA 3"


def test_find_by_alias(library):
    _, instruction = library.find("v_cvt_rpi_i32_f32")
    assert instruction.name == "V_CVT_NEAREST_I32_F32"
    assert library.find("V_CVT_FLR_I32_F32", "cdna5")[1].name == "V_CVT_FLOOR_I32_F32"


def test_unknown_instruction_suggests(library):
    with pytest.raises(UnknownNameError) as info:
        library.find("v_cvt_of_f32_i4")
    assert "V_CVT_OFF_F32_I4" in info.value.suggestions
    assert "did you mean" in str(info.value)
    with pytest.raises(UnknownNameError, match="unknown instruction 'v_add_f32' in AMD RDNA 3"):
        library.find("v_add_f32", "rdna3")


def test_all_encodings_of_an_instruction(library):
    forms = {form.encoding: layout for form, layout in library.forms("v_cvt_off_f32_i4", "cdna5")}
    assert list(forms) == ["ENC_VOP1", "VOP1_INST_LITERAL", "VOP1_INST_LITERAL64", "VOP1_VOP_DPP8",
                           "VOP1_VOP_DPP16", "ENC_VOP3", "VOP3_INST_LITERAL", "VOP3_VOP_DPP8", "VOP3_VOP_DPP16"]
    assert not forms["ENC_VOP1"].derived
    assert forms["VOP1_INST_LITERAL"].encoding.derived_from == "ENC_VOP1"
    assert forms["VOP1_INST_LITERAL64"].encoding.bit_count == 96
    assert forms["ENC_VOP3"] is None  # not in the file
    rdna3 = [form.encoding for form, _ in library.forms("v_cvt_f32_f64", "rdna3")]
    assert rdna3 == ["ENC_VOP1", "VOP1_INST_LITERAL", "ENC_VOP3", "VOP3_INST_LITERAL"]  # F64: no DPP


def test_by_group_and_encoding(library):
    valu = library.by_group("VALU", arch="rdna3")
    assert len(valu) == 20 and "V_CVT_OFF_F32_I4" in valu
    assert library.by_group("valu", "NOT_ASSIGNED", arch="rdna3") == valu
    assert library.by_group("SALU", arch="rdna3") == []
    with pytest.raises(UnknownNameError, match="functional group 'VALUE'"):
        library.by_group("VALUE", arch="rdna3")
    dpp8 = library.by_encoding("VOP1_VOP_DPP8", "cdna5")
    assert "V_CVT_OFF_F32_I4" in dpp8 and "V_CVT_F32_F64" not in dpp8  # CDNA 5 F64: DPP16, no DPP8
    assert "V_CVT_F32_F64" in library.by_encoding("VOP1_VOP_DPP16", "cdna5")
    assert library.by_encoding("vop1", "rdna3") == library.by_encoding("ENC_VOP1", "rdna3")
    assert library.by_encoding("ENC_SOP1", "rdna3") == []  # in the file, no kept instruction uses it
    with pytest.raises(UnknownNameError, match="encoding 'VOP9'"):
        library.by_encoding("VOP9", "rdna3")


def test_architectures_with_and_comparison(library):
    assert library.architectures_with("v_cvt_off_f32_i4") == ["AMD CDNA 5", "AMD RDNA 3"]
    c = library.compare("v_cvt_off_f32_i4", "ENC_VOP1", "cdna5")
    assert c.different == (("AMD RDNA 3", ("field layout",)),)  # OP is 7 bits in CDNA 5, 8 in RDNA 3
    assert c.same == ()
    assert "AMD RDNA 4" in c.not_loaded and "AMD CDNA 5" not in c.not_loaded
    # the literal forms exist in both; VOP1_INST_LITERAL64 only in CDNA 5
    c64 = library.compare("v_cvt_f32_f64", "VOP1_INST_LITERAL64", "cdna5")
    assert c64.different == (("AMD RDNA 3", ("no VOP1_INST_LITERAL64 form",)),)


def test_search(library):
    hits = library.search("offset table")
    assert [(a, e.name) for a, e in hits] == [("AMD CDNA 5", "V_CVT_OFF_F32_I4"), ("AMD RDNA 3", "V_CVT_OFF_F32_I4")]
    names = [e.name for _, e in library.search("flr", arch="rdna3")]
    assert names == ["V_CVT_FLOOR_I32_F32"]  # by alias
    assert library.search("no such words anywhere") == []


def test_target_table():
    assert targets_of("AMD RDNA 3")[0] == "gfx1100" and targets_of("rdna3") == targets_of("AMD RDNA 3")
    assert architecture_of_target("gfx1201") == "AMD RDNA 4"
    assert architecture_of_target("gfx9999") is None
    assert arch_key("AMD RDNA 3.5") == "rdna3.5" and arch_key("AMD CDNA 5") == "cdna5"
    every = [t for targets in GFX_TARGETS.values() for t in targets]
    assert len(every) == len(set(every)), "a target is listed under two architectures"
    assert len(GFX_TARGETS) == 10  # RDNA 1, 2, 3, 3.5, 4 and CDNA 1 to 5


def test_llvm_knows_every_target(llvm_mc):
    """Every listed target is an LLVM processor; only CDNA 5's take CDNA 5's 64-bit literal."""
    lit64 = "v_cvt_f32_f64 v1, 0x12345678abcd"  # SRC0 = SRC_LITERAL64 (254), CDNA 5's OPR_SRC
    for arch, targets in GFX_TARGETS.items():
        for target in targets:
            nop, wide = assemble_lines(["s_nop 0", lit64], target, llvm_mc)
            assert nop == b"\x00\x00\x80\xbf", f"{arch} {target}: {nop!r}"
            if arch == "AMD CDNA 5":
                assert wide == bytes.fromhex("fe1e027e cdab7856 34120000"), (target, wide)
            else:
                assert isinstance(wide, str), f"{target} ({arch}) accepts a 64-bit literal"
