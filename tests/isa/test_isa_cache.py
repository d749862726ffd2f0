"""The on-disk cache: built once per XML content, keyed by its SHA-256, in the right folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from isa_testdata import CDNA5, RDNA3, isa_files, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import IsaLibrary, SpecCache, SpecFormatError, cache_dir, import_xml
from hydroplane.isa.sources import XmlSource
from hydroplane.isa.spec import Spec, build_image


def copy_file(isa_files, dest: Path, arch: str = RDNA3) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / isa_files.files[arch]
    path.write_bytes(isa_files.read(arch))
    return path


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HYDROPLANE_CACHE_DIR", str(tmp_path / "hp"))
    assert cache_dir() == tmp_path / "hp" / "isa"
    monkeypatch.delenv("HYDROPLANE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "hydroplane" / "isa"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "hydroplane" / "isa"


def test_built_once_and_keyed_by_content(isa_files, tmp_path):
    xml = copy_file(isa_files, tmp_path / "spec")
    first = SpecCache()  # HYDROPLANE_CACHE_DIR -> tmp (autouse fixture)
    spec = first.load(XmlSource(xml))
    assert first.imported == [str(xml)]
    sha = hashlib.sha256(xml.read_bytes()).hexdigest()
    assert spec.sha256 == sha and first.image_path(sha).is_file()
    assert first.image_path(sha).parent == cache_dir()
    assert first.image_path(sha).stat().st_size < xml.stat().st_size / 4  # compact

    again = SpecCache()
    assert again.load(XmlSource(xml)).instruction("v_cvt_off_f32_i4").encoding("ENC_VOP1").opcode == 14
    assert again.imported == []  # a hit: not re-imported

    # the same content under another name and time: still a hit (keyed by hash, not path)
    twin = copy_file(isa_files, tmp_path / "elsewhere")
    os.utime(twin, (1_000_000_000, 1_000_000_000))
    third = SpecCache()
    third.load(XmlSource(twin))
    assert third.imported == []

    # changed content: a new image
    xml.write_bytes(xml.read_bytes().replace(b"Opcode.</Description>", b"Opcode field.</Description>"))
    fourth = SpecCache()
    changed = fourth.load(XmlSource(xml))
    assert fourth.imported == [str(xml)] and changed.sha256 != sha
    assert changed.encoding("ENC_VOP1").field("OP").description == "Opcode field."


def test_damaged_image_is_rebuilt(isa_files, tmp_path):
    xml = copy_file(isa_files, tmp_path / "spec", CDNA5)
    cache = SpecCache()
    spec = cache.load(XmlSource(xml))
    image = cache.image_path(spec.sha256)
    image.write_bytes(image.read_bytes()[:100])
    fresh = SpecCache()
    assert fresh.load(XmlSource(xml)).architecture == "AMD CDNA 5"
    assert fresh.imported == [str(xml)]
    (cache.folder / "stat-index.json").write_text("{not json")
    assert SpecCache().load(XmlSource(xml)).architecture == "AMD CDNA 5"


def test_unwritable_cache_still_works(isa_files, tmp_path):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    lib = IsaLibrary.open(isa_files.folder, SpecCache(blocker / "isa"))
    assert sorted(lib.architectures) == ["AMD CDNA 5", "AMD RDNA 3"]


def test_image_round_trips_the_model(isa_files):
    """Every record read back from a cache image equals what the importer built."""
    for arch, name in isa_files.files.items():
        model = import_xml(isa_files.read(arch), name)
        spec = Spec(build_image(model, "0" * 64, name))
        assert spec.document == model.document and spec.groups == model.groups
        assert spec.subgroups == model.subgroups
        for table, read in ((model.instructions, spec.instruction), (model.encodings, spec.encoding),
                            (model.data_formats, spec.data_format), (model.operand_types, spec.operand_type)):
            for key, original in table.items():
                assert read(key) == original, key
        assert [e.name for e in spec.catalog()] == list(model.instructions)


def test_files_are_imported_when_first_needed(isa_files):
    cache = SpecCache()
    library = IsaLibrary.open(isa_files.folder, cache)
    assert library.architectures == ["AMD CDNA 5", "AMD RDNA 3"]  # from the files' heads
    assert cache.imported == []
    assert library.spec("gfx1100").architecture == "AMD RDNA 3"
    assert [Path(p).name for p in cache.imported] == [isa_files.files[RDNA3]]
    assert library.find("v_cvt_off_f32_i4")[0].architecture == "AMD CDNA 5"  # newest first
    assert len(cache.imported) == 2
    assert [s.architecture for s in library.specs] == library.architectures
    assert len(cache.imported) == 2  # each file once


def test_broken_file_without_a_name_fails_at_open(tmp_path):
    (tmp_path / "a.xml").write_text("<Spec><ISA><Architecture>")
    with pytest.raises(SpecFormatError, match="a.xml: malformed or truncated XML"):
        IsaLibrary.open(tmp_path, SpecCache(tmp_path / "cache"))
