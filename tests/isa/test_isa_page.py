"""Reference pages: seed 001's fields (our expected page; seed 001 itself when present), every page, the CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from isa_testdata import (  # noqa: F401 (pytest fixtures)
    CDNA5,
    HEADINGS,
    isa_files,
    library,
    library_of,
    llvm_mc,
    page_facts,
    private_cache,
)

from hydroplane.cli import main
from hydroplane.isa import GFX_TARGETS, IsaLibrary, SpecCache
from hydroplane.isa import commands as isa_commands
from hydroplane.isa.page import build_page, render_text
from hydroplane.isa.page_html import render_html

VOID = {"meta", "br"}


def section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


@pytest.fixture(scope="module")
def page_text(page_facts, llvm_mc, tmp_path_factory):
    """The text page of v_cvt_off_f32_i4 on CDNA 5 from the file set the facts belong to."""
    return render_text(build_page(library_of(page_facts.files, tmp_path_factory), "v_cvt_off_f32_i4", "cdna5"))


def lines_of(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_title_group_and_description(page_facts, page_text):
    page = lines_of(page_text)
    assert page[0] == page_facts.title == "v_cvt_off_f32_i4 GPU Native ISA AMD Vector"
    assert page_facts.group_title == "Vector Arithmetic" and page_facts.group_title in page[:4]
    assert page_facts.description.startswith(("Convert from a signed 4-bit integer", "Map the signed 4-bit"))
    assert page_facts.description in page


def test_bit_layout_cells(page_facts, page_text):
    cells = [x for x in lines_of(section(page_text, "Binary Layout (AMD CDNA 5)", "The ENC_VOP1")) if x]
    assert page_facts.cells == ["0111111", "31:25", "VDST", "24:17", "unassigned", "16", "0001110", "15:9", "SRC0",
                                "8:0"]
    assert cells == page_facts.cells


def test_layout_note_and_generations(page_facts, page_text):
    note = next(line for line in lines_of(page_text) if line.startswith("The ENC_VOP1 layout"))
    for sentence in re.split(r"(?<=\.) (?=[A-Z])", page_facts.note)[:3]:  # layout, opcode/identifier, unassigned
        assert sentence in note, sentence
    # which generations were compared, and the verdict for each the facts name
    assert "Compared across the loaded generations (AMD CDNA 5, AMD RDNA 3)." in note
    not_compared = note.split("Not compared (no file loaded): ", 1)[1]
    assert "AMD RDNA 3" in page_facts.generations_differing
    for arch in page_facts.generations_differing + page_facts.generations_same:
        if arch == "AMD RDNA 3":
            assert "Not the same in every generation: AMD RDNA 3 (field layout)." in note
        else:
            assert arch in not_compared, arch
    unloaded = [arch for arch in GFX_TARGETS if arch not in ("AMD CDNA 5", "AMD RDNA 3")]
    assert sorted(not_compared.rstrip(".").split(", ")) == sorted(unloaded)  # every generation without a file


def test_format_width_opcode_identifier(page_facts, page_text):
    assert len(page_facts.fields) == 4
    for field in page_facts.fields:
        assert field in lines_of(page_text)


def test_operands(page_facts, page_text):
    page_ops = lines_of(section(page_text, "\nOperands\n", "In AMD's order"))
    assert [bullet for bullet, _ in page_facts.operands] == ["• VDST", "• SRC0"]
    for bullet, description in page_facts.operands:
        at = page_ops.index(bullet)
        assert page_ops[at + 1] == description
    assert "Field VDST: bits 24:17 (8 bits); operand size 32 bits." in page_ops
    assert "Field SRC0: bits 8:0 (9 bits); operand size 32 bits." in page_ops
    assert page_facts.order in lines_of(page_text)


def test_targets_related_reference(page_facts, page_text):
    target, support = page_facts.target
    row = next(line for line in lines_of(page_text) if line.startswith(target))
    assert support in row and "AMD RDNA 3" in row
    assert any(line.startswith("gfx1250") and "✅ Supported" in line for line in lines_of(page_text))
    assert page_facts.headings == HEADINGS
    for heading in HEADINGS:
        assert heading in lines_of(page_text), heading
    related = lines_of(section(page_text, "More in Vector Arithmetic", "Reference"))
    assert "v_cvt_f32_ubyte0" in related and "v_cvt_off_f32_i4" not in related


def test_lookup_table_semantics_and_example(page_facts, page_text):
    assert page_facts.table_text and page_facts.table_text in page_text
    assert page_facts.semantics == section(page_text, "\nSemantics\n", "\nExample").strip()
    assert page_facts.example == "v_cvt_off_f32_i4 v5, v1"
    page_example = lines_of(section(page_text, "\nExample\n", "\nSources"))
    assert page_facts.example in page_example
    assert "Encoded from the XML layout: 01 1d 0a 7e" in page_example
    assert "Checked: llvm-mc-22 -mcpu=gfx1250 produces the same bytes." in page_example


class TagBalance(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.text, self.errors = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("arch", ["AMD RDNA 3", CDNA5])
def test_every_instruction_renders(library, llvm_mc, arch):
    spec = library.spec(arch)
    for name in spec.instruction_names():
        page = build_page(library, name, arch)
        text = render_text(page)
        assert text.startswith(f"{name.lower()} GPU Native ISA AMD Vector")
        assert f"Binary Layout ({arch})" in text and "Operands" in text and "Sources" in text
        if arch == "AMD CDNA 5" and name == "V_MOV_B16":
            assert "llvm-mc-22 -mcpu=gfx1250 rejects it" in page.example_check
        else:
            assert page.example_check.startswith("Checked:"), (name, page.example_check)
        html = render_html(page)
        parser = TagBalance()
        parser.feed(html)
        assert not parser.errors and parser.stack == [], (name, parser.errors, parser.stack)
        visible = "".join(parser.text)
        assert page.description in visible and f"0x{page.identifier:08X}" in visible


def test_cli_show_with_html(isa_files, tmp_path, capsys):
    out = tmp_path / "page.html"
    argv = ["isa", "show", "V_CVT_OFF_F32_I4", "--spec", str(isa_files.folder), "--html", str(out), "--no-llvm"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Identifier 0x7E001C00" in text and "Binary Layout (AMD CDNA 5)" in text
    # --no-llvm says so, not "llvm-mc was not found" where it is installed (2026-12-07)
    assert "Not checked with LLVM's assembler: the check was turned off (--no-llvm)." in text
    html = out.read_text(encoding="utf-8")
    assert "<td class='unassigned'>unassigned</td>" in html and "<td>31:25</td>" in html


def test_cli_search_decode_encode(isa_files, capsys, monkeypatch):
    monkeypatch.setenv("HYDROPLANE_AMD_ISA", str(isa_files.folder))
    assert main(["isa", "search", "rpi"]) == 0
    assert "v_cvt_nearest_i32_f32" in capsys.readouterr().out
    assert main(["isa", "encode", "v_cvt_off_f32_i4 v5, v1", "--arch", "rdna3"]) == 0
    assert "ENC_VOP1 [01 1d 0a 7e]" in capsys.readouterr().out
    assert main(["isa", "decode", "01 1d 0a 7e ff 1e 0a 7e 00 00 f8 3f", "--arch", "gfx1100"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("v_cvt_off_f32_i4 v5, v1") and "ENC_VOP1 [01 1d 0a 7e]" in out[0]
    assert out[1].startswith("v_cvt_f32_f64 v5, lit(0x3ff80000)") and "derived from ENC_VOP1" in out[1]
    assert main(["isa", "decode", "0x7E0A1D01", "--arch", "cdna5"]) == 0
    assert capsys.readouterr().out.startswith("v_cvt_off_f32_i4 v5, v1")
    assert main(["isa", "decode", "0x7E0B1D01", "--arch", "cdna5"]) == 0  # bit 16: no field in CDNA 5
    assert "(unused bit(s) 16 set)" in capsys.readouterr().out
    assert main(["isa", "list", "--group", "valu", "--encoding", "VOP1_VOP_DPP8", "--arch", "cdna5"]) == 0
    listed = capsys.readouterr().out.split()
    assert "v_cvt_off_f32_i4" in listed and len(listed) == 11  # 20 less 8 F64 ones, v_pipeflush
    assert not any("f64" in n for n in listed)
    assert main(["isa", "targets"]) == 0
    assert "gfx1250" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["isa", "show", "v_cvt_of_f32_i4"], "unknown instruction 'v_cvt_of_f32_i4' in any loaded architecture; "
                                         "did you mean V_CVT_OFF_F32_I4"),
    (["isa", "show", "v_cvt_off_f32_i4", "--arch", "rdna9"], "unknown architecture 'rdna9'"),
    (["isa", "decode", "ff ff ff ff", "--arch", "rdna3"], "at byte 0: word 0xFFFFFFFF matches no encoding"),
    (["isa", "decode", "01 1d 0a", "--arch", "rdna3"], "need at least 4 bytes"),
    (["isa", "decode", "zz", "--arch", "rdna3"], "is not a whole number of hex bytes"),
    (["isa", "encode", "v_cvt_off_f32_i4 v5", "--arch", "rdna3"], "takes 2 operand(s) (VDST, SRC0), got 1"),
    (["isa", "encode", "v_cvt_off_f32_i4 v5, q7", "--arch", "rdna3"], "operand SRC0 (OPR_SRC): 'q7' is neither"),
    (["isa", "encode", "v_cvt_off_f32_i4 v300, v1", "--arch", "rdna3"], "v300 is not allowed"),
    (["isa", "encode", "v_cvt_f32_f64 v5, s[3:4]", "--arch", "rdna3"], "must start at an even register"),
    (["isa", "encode", "v_cvt_f32_f64 v1, 0x12345678abcd", "--arch", "rdna3"], "needs VOP1_INST_LITERAL64"),
    (["isa", "search", "nothing like this"], "no instruction matches"),
    (["isa", "encode", "v_cvt_off_f32_i4 v5, 1e40", "--arch", "rdna3"], "1e40 does not fit a 32-bit float"),
    (["isa", "encode", "v_cvt_f32_f16 v5, 70000.0", "--arch", "cdna5"], "70000.0 does not fit a 16-bit float"),
    (["isa", "decode", "0x7E0A1D01", "0x123456789", "--arch", "rdna3"], "'0x123456789' is not a 32-bit hex dword"),
])
def test_cli_errors_are_one_line(isa_files, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("HYDROPLANE_AMD_ISA", str(isa_files.folder))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("hydroplane: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_cli_malformed_spec_no_traceback(tmp_path, monkeypatch):
    bad = tmp_path / "amd"
    bad.mkdir()
    (bad / "amdgpu_isa_broken.xml").write_text("<Spec><ISA><Architecture>")
    proc = subprocess.run([sys.executable, "-m", "hydroplane", "isa", "show", "v_nop", "--spec", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert re.fullmatch(r"hydroplane: error: .*amdgpu_isa_broken\.xml: malformed or truncated XML at line 1, "
                        r"column \d+: .*\n", proc.stderr), proc.stderr
    monkeypatch.delenv("HYDROPLANE_AMD_ISA", raising=False)
    proc = subprocess.run([sys.executable, "-m", "hydroplane", "isa", "search", "no such instruction"],
                          capture_output=True, text=True, timeout=60)  # a clone: its sample files, said so
    assert proc.returncode == 1 and proc.stderr.startswith("hydroplane: note: no AMD ISA specification given")
    assert "hydroplane: error: no instruction matches 'no such instruction'" in proc.stderr, proc.stderr


def test_readme_isa_show_on_a_fresh_clone(monkeypatch, tmp_path, capsys):
    """The README's `hydroplane isa show v_cvt_off_f32_i4` without AMD's XML: the clone's sample files, said on
    stderr; an installed package without them says where a specification comes from."""
    monkeypatch.delenv("HYDROPLANE_AMD_ISA", raising=False)
    env = dict(os.environ, HYDROPLANE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "hydroplane", "isa", "show", "v_cvt_off_f32_i4", "--no-llvm"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("v_cvt_off_f32_i4 ") and "offset table" in proc.stdout
    assert proc.stderr.count("tests/isa/fixture") == 1 and "Traceback" not in proc.stderr
    monkeypatch.setattr(isa_commands, "SAMPLE_SPEC", tmp_path / "not installed")
    assert main(["isa", "show", "v_cvt_off_f32_i4"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hydroplane: error: no AMD ISA specification: set HYDROPLANE_AMD_ISA") and \
        "tests/isa/fixture" in err, err


def test_page_without_any_layout(isa_files, tmp_path):
    """A file whose encodings section lacks the instruction's layouts still renders a page."""
    text = isa_files.read(CDNA5).decode("utf-8")
    text = re.sub(r"<Encoding Order=\"5\">.*?</Encoding>\s*", "", text, count=1, flags=re.S)
    folder = tmp_path / "amd"
    folder.mkdir()
    (folder / "cdna5.xml").write_text(text, encoding="utf-8")
    library = IsaLibrary.open(folder, SpecCache(tmp_path / "cache"))
    page = build_page(library, "v_cvt_off_f32_i4", check_with_llvm=False)
    assert page.cells == [] and page.identifier is None and page.example == ""
    rendered = render_text(page)
    assert "The layout of ENC_VOP1 is not in the loaded AMD CDNA 5 file." in rendered
    assert "ENC_VOP1: opcode 14, width unknown, layout not in the loaded file" in rendered
    assert "Width unknown" in rendered and "Width 0" not in rendered
