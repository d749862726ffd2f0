"""Test data and fixtures of the ISA tests: AMD's XML excerpts (shared folder), a library, llvm-mc.

Test modules import the fixtures they use from here. (Not a conftest.py: the suite's other
tests do `from conftest import ...`, which a second conftest module would shadow.)

The excerpts live outside the repository (../shared/isa/amd, or $HYDROPLANE_SHARED/isa/amd);
without them the tests that need them skip with the reason. Every cache goes to a temporary
folder, never the user's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import require_tool, shared_dir

from hydroplane.isa import IsaLibrary, SpecCache

EXCERPTS = {"AMD RDNA 3": "amdgpu_isa_rdna3.excerpt.xml", "AMD CDNA 5": "amdgpu_isa_cdna5.excerpt.xml"}
SEED_PAGE = "seeds/001_e1e3c3462c1f67fc.txt"


def amd_folder() -> Path | None:
    shared = shared_dir()
    folder = shared / "isa" / "amd" if shared else None
    return folder if folder and all((folder / f).is_file() for f in EXCERPTS.values()) else None


@pytest.fixture(scope="session")
def amd_dir() -> Path:
    folder = amd_folder()
    if folder is None:
        pytest.skip("AMD ISA XML excerpts not found (../shared/isa/amd or $HYDROPLANE_SHARED/isa/amd)")
    return folder


@pytest.fixture(scope="session")
def seed_page() -> str:
    shared = shared_dir()
    path = shared / SEED_PAGE if shared else None
    if path is None or not path.is_file():
        pytest.skip(f"seed page {SEED_PAGE} not found in the shared folder")
    return path.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """No test touches the user's cache: HYDROPLANE_CACHE_DIR points into tmp_path."""
    monkeypatch.setenv("HYDROPLANE_CACHE_DIR", str(tmp_path / "hydroplane-cache"))
    monkeypatch.delenv("HYDROPLANE_AMD_ISA", raising=False)


@pytest.fixture(scope="session")
def library(amd_dir, tmp_path_factory) -> IsaLibrary:
    return IsaLibrary.open(amd_dir, SpecCache(tmp_path_factory.mktemp("isa-cache")))


@pytest.fixture(scope="session")
def llvm_mc() -> str:
    return require_tool("llvm-mc-22")
