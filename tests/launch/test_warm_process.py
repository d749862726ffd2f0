"""What a warm process (issue 22 item 6: a later process at shapes an earlier one saw) still does before its first
results, kept small: the disk caches' package digest is read from the cache folder by the sources' paths, sizes
and change times instead of hashing every source again (lang/disk_cache.py)."""

from __future__ import annotations

import hashlib
import os

import pytest

from hydroplane.lang import disk_cache


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package of three sources (one in a sub-package, one bytecode folder to pass over) as the digest's
    package, a cache folder of its own, and the per-process digest forgotten before and after."""
    root = tmp_path / "pkg"
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "__init__.py").write_text("A = 1\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "mod.py").write_text("B = 2\n")
    (root / "sub" / "__pycache__" / "mod.cpython-314.py").write_text("not a source\n")
    monkeypatch.setattr(disk_cache, "PACKAGE", root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")
    disk_cache.package_digest.cache_clear()
    yield root
    disk_cache.package_digest.cache_clear()


def _content_digest(root) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_a_later_process_reads_the_package_digest_instead_of_hashing_the_sources(package, tmp_path):
    first = disk_cache.package_digest()
    assert first == _content_digest(package)
    kept = list((tmp_path / "cache" / "hydroplane" / "package").iterdir())
    assert [p.read_text() for p in kept] == [first]
    kept[0].write_text("f" * 64)  # what a later process finds: it must not hash the sources again
    disk_cache.package_digest.cache_clear()
    assert disk_cache.package_digest() == "f" * 64


def test_a_changed_source_changes_the_digest(package):
    first = disk_cache.package_digest()
    mod = package / "sub" / "mod.py"
    stat = mod.stat()
    mod.write_text("B = 3\n")  # the same size: its change time tells
    os.utime(mod, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    disk_cache.package_digest.cache_clear()
    second = disk_cache.package_digest()
    assert second != first and second == _content_digest(package)


def test_the_digest_without_a_cache_folder(package, monkeypatch):
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "0")
    assert disk_cache.package_digest() == _content_digest(package)
