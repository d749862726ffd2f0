"""The committed example modules (examples/*.spv) equal what the builder makes now, and validate."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO

from hydroplane.spirv import decode, validate

_spec = importlib.util.spec_from_file_location("make_examples", REPO / "tools" / "make_examples.py")
make_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_examples)


@pytest.mark.tools
@pytest.mark.parametrize("name", sorted(make_examples.EXAMPLES))
def test_committed_example_is_current_and_valid(spirv_val, name):
    path = REPO / "examples" / name
    assert path.is_file(), f"{name} is missing; run python3 tools/make_examples.py"
    data = path.read_bytes()
    assert data == make_examples.expected()[name], f"{name} is stale; run python3 tools/make_examples.py"
    validate(data)
    assert decode(data).instructions


def test_every_example_file_is_made_by_the_script():
    committed = {p.name for p in (REPO / "examples").glob("*.spv")}
    assert committed == set(make_examples.EXAMPLES)


def test_check_mode_reports_a_stale_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(make_examples, "EXAMPLES_DIR", tmp_path)
    assert make_examples.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    monkeypatch.setattr(make_examples, "REPO", tmp_path)
    assert make_examples.main([]) == 0
    assert make_examples.main(["--check"]) == 0
    (tmp_path / "vector_add_f32.spv").write_bytes(b"\0" * 8)
    assert make_examples.main(["--check"]) == 1
