"""Damaged AMD XML (the cases issue 9 found) ends in one SpecFormatError naming file:line and the element,
never a ValueError, KeyError, MemoryError, RecursionError or zlib.error; the CLI prints it on one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO
from isa_testdata import RDNA3, isa_files, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import IsaLibrary, SpecCache, SpecFormatError
from hydroplane.isa.sources import XmlSource

DEEP = '<op type="~">' * 5000 + '<lit val="1"/>' + "</op>" * 5000

# (name, pattern, replacement, what the message says); every match of the pattern is replaced
CASES = [
    ("condition id", r"<EncodingCondition>default</EncodingCondition>",
     '<EncodingCondition Id="--1">default</EncodingCondition>', "EncodingCondition Id '--1' is not a decimal"),
    ("range order", r'<Range Order="0">', '<Range Order="x">', "Range Order 'x' is not a decimal"),
    ("non-ASCII order", r'<Range Order="0">', '<Range Order="\u00b2">', "is not a decimal"),
    ("non-ASCII digit", r"<BitCount>32</BitCount>", "<BitCount>3\u0663</BitCount>", "is not a base-10 number"),
    ("operand field", r"<FieldName>VDST</FieldName>(\s*)<DataFormatName>",
     r"<FieldName>NOPE</FieldName>\1<DataFormatName>", "operand field 'NOPE' is not a field of"),
    ("huge bit count", r"<BitCount>32</BitCount>", "<BitCount>999999999999</BitCount>",
     "BitCount 999999999999 is outside"),
    ("huge range", r"<BitCount>9</BitCount>", "<BitCount>999999999999</BitCount>", "BitCount 999999999999 is outside"),
    ("deep expression", r'<lit val="1"/>', DEEP, "nested deeper than"),
]


def _damaged(isa_files, tmp_path, pattern: str, replacement: str):
    text = isa_files.read(RDNA3).decode("utf-8")
    damaged, count = re.subn(pattern, replacement, text)
    assert count, pattern
    folder = tmp_path / "spec"
    folder.mkdir()
    path = folder / "amdgpu_isa_rdna3.xml"
    path.write_text(damaged, encoding="utf-8")
    return folder, path, damaged


def _line_of_first(damaged: str, replacement: str) -> int:
    first = replacement.split("\\1")[0][:20]
    return damaged[:damaged.index(first)].count("\n") + 1


@pytest.mark.parametrize("name,pattern,replacement,says", CASES, ids=[c[0] for c in CASES])
def test_damaged_xml_raises_spec_format_error_with_file_and_line(isa_files, tmp_path, name, pattern, replacement, says):
    folder, path, damaged = _damaged(isa_files, tmp_path, pattern, replacement)
    with pytest.raises(SpecFormatError) as caught:
        SpecCache(tmp_path / "cache").load(XmlSource(path))
    message = str(caught.value)
    assert says in message, message
    located = re.match(rf"{re.escape(str(path))}:(\d+): Spec/ISA/", message)
    assert located, message
    opening_tag_above = 1 if name == "operand field" else 0  # the <Operand> holding the <FieldName>
    assert int(located.group(1)) == _line_of_first(damaged, replacement) - opening_tag_above, message
    assert "\n" not in message


@pytest.mark.parametrize("name,pattern,replacement,says", CASES[:1] + CASES[4:6],
                         ids=["condition id", "operand field", "huge bit count"])
def test_isa_decode_on_damaged_xml_prints_one_line(isa_files, tmp_path, name, pattern, replacement, says):
    folder, _, _ = _damaged(isa_files, tmp_path, pattern, replacement)
    env = dict(os.environ, HYDROPLANE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "hydroplane", "isa", "decode", "--spec", str(folder), "--arch",
                           "AMD RDNA 3", "0x7E0A1D01"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hydroplane: error: ") and says in lines[0], proc.stderr


def test_zip_with_a_damaged_member_is_a_spec_format_error(isa_files, tmp_path):
    archive = tmp_path / "amd.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("amdgpu_isa_rdna3.xml", isa_files.read(RDNA3))
    raw = bytearray(archive.read_bytes())
    start = 30 + len("amdgpu_isa_rdna3.xml")  # the local header, then the deflate stream
    raw[start:start + 8] = b"\xff" * 8
    archive.write_bytes(bytes(raw))
    with pytest.raises(SpecFormatError, match=r"amd\.zip!amdgpu_isa_rdna3\.xml: cannot read"):
        library = IsaLibrary.open(archive, SpecCache(tmp_path / "cache"))
        for arch in library.architectures:
            library.spec(arch)
