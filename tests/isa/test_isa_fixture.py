"""The project's ISA files (tests/isa/fixture/) are what amd_schema_fixture.py writes, and hold AMD's facts.

The second check runs only where the shared folder has AMD's excerpts: it is defined only then, so a clone
on its own collects nothing for it (nothing skipped). It compares every imported record of our files with
AMD's, descriptions and the document's own fields aside.
"""

from __future__ import annotations

import dataclasses

from amd_schema_fixture import FILES, FIXTURE_DIR, INSTRUCTIONS, render
from isa_testdata import AMD, PROJECT

from hydroplane.isa import import_xml


def test_committed_files_are_what_the_writer_writes():
    for arch, name in FILES.items():
        committed = (FIXTURE_DIR / name).read_text(encoding="utf-8")
        assert committed == render(arch), f"{name} differs: run python3 tests/isa/amd_schema_fixture.py"


def test_descriptions_are_ours_and_present():
    for arch in FILES:
        spec = import_xml(PROJECT.read(arch), FILES[arch])
        assert [i.description for i in spec.instructions.values()] == [i.description for i in INSTRUCTIONS]
        assert all(e.description for e in spec.encodings.values())
        assert all(f.description for e in spec.encodings.values() for f in e.fields)
        assert all(t.description for t in spec.operand_types.values())
        assert "AMD" not in spec.document.copyright.split(";")[0]  # ours, not AMD's


def _facts(record):
    """A record without its prose: what must agree with AMD's file."""
    if dataclasses.is_dataclass(record):
        return tuple((f.name, _facts(getattr(record, f.name))) for f in dataclasses.fields(record)
                     if f.name != "description")
    if isinstance(record, (tuple, list)):
        return tuple(_facts(x) for x in record)
    return record


if AMD is not None:
    def test_our_facts_agree_with_amds_excerpts():
        for arch in FILES:
            ours = import_xml(PROJECT.read(arch), PROJECT.files[arch])
            theirs = import_xml(AMD.read(arch), AMD.files[arch])
            assert ours.document.architecture == theirs.document.architecture
            assert ours.document.architecture_id == theirs.document.architecture_id
            assert ours.document.schema_version == theirs.document.schema_version
            assert ours.subgroups == theirs.subgroups
            for section in ("encodings", "instructions", "data_formats", "groups"):
                mine, amds = getattr(ours, section), getattr(theirs, section)
                missing = set(amds) - set(mine)
                assert not missing, (arch, section, missing)
                for name, record in amds.items():
                    assert _facts(mine[name]) == _facts(record), (arch, section, name)
            for name, record in theirs.operand_types.items():  # values in value order (AMD's order differs)
                mine = ours.operand_types[name]
                assert mine.subtypes == record.subtypes and mine.partitioned == record.partitioned
                assert sorted((v.name, v.value) for v in mine.values) == sorted((v.name, v.value)
                                                                                 for v in record.values)
            # where AMD's excerpt lacks a record (CDNA 5's FMT_NUM_B16), ours equals the other architecture's
            for name in set(ours.data_formats) - set(theirs.data_formats):
                other = import_xml(AMD.read("AMD RDNA 3"), AMD.files["AMD RDNA 3"]).data_formats[name]
                assert _facts(ours.data_formats[name]) == _facts(other), name
