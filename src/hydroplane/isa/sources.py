"""Where AMD's XML files come from, and the on-disk cache of their imported form.

A location is AMD's zip, a folder of its XML files, or one XML file; it comes from the
caller (`--spec`) or the HYDROPLANE_AMD_ISA variable. Each XML file is imported once per
content (SHA-256) into ${HYDROPLANE_CACHE_DIR or XDG_CACHE_HOME/hydroplane or
~/.cache/hydroplane}/isa/<sha256>.img. A small stat index maps (path, size, mtime) to the
hash so that a warm lookup does not re-read a 12 MB file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from hydroplane.isa.errors import SpecFormatError, SpecNotFoundError
from hydroplane.isa.spec import Spec, build_image
from hydroplane.isa.xml_import import import_xml

SPEC_VARIABLE = "HYDROPLANE_AMD_ISA"
HEAD_BYTES = 8192  # the <Document> and <Architecture> elements open every AMD file
HEAD_FIELDS = (re.compile(rb"<ArchitectureName>([^<]{1,200})</ArchitectureName>"),
               re.compile(rb"<ReleaseDate>([^<]{0,60})</ReleaseDate>"))
STAT_INDEX = "stat-index.json"


@dataclass(frozen=True)
class XmlSource:
    """One XML file: a plain file, or a member of a zip."""

    path: Path
    member: str = ""

    @property
    def label(self) -> str:
        return f"{self.path}!{self.member}" if self.member else str(self.path)

    def stat_key(self) -> str:
        st = self.path.stat()
        return f"{self.path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{self.member}"

    def read(self) -> bytes:
        try:
            if not self.member:
                return self.path.read_bytes()
            with zipfile.ZipFile(self.path) as zf:
                return zf.read(self.member)
        except (OSError, zipfile.BadZipFile, KeyError, zlib.error, EOFError, NotImplementedError,
                RuntimeError) as exc:  # a damaged, truncated, encrypted or oddly compressed member
            raise SpecFormatError(f"{self.label}: cannot read ({type(exc).__name__}: {exc})") from None


def sniff_document(source: XmlSource) -> tuple[str, str] | None:
    """(architecture name, release date) from the head of a file, without importing it."""
    try:
        if source.member:
            with zipfile.ZipFile(source.path) as zf, zf.open(source.member) as f:
                head = f.read(HEAD_BYTES)
        else:
            with open(source.path, "rb") as f:
                head = f.read(HEAD_BYTES)
    except (OSError, zipfile.BadZipFile, KeyError, zlib.error, EOFError, NotImplementedError,
            RuntimeError):
        return None
    name, date = (pattern.search(head) for pattern in HEAD_FIELDS)
    if name is None:
        return None
    when = date.group(1).decode("utf-8", "replace").strip() if date else ""
    return name.group(1).decode("utf-8", "replace").strip(), when


def spec_location(location: str | os.PathLike | None = None) -> Path:
    """The location given, else $HYDROPLANE_AMD_ISA; a clear error when neither is set."""
    chosen = location if location is not None else os.environ.get(SPEC_VARIABLE)
    if not chosen:
        raise SpecNotFoundError(f"no AMD ISA specification: set {SPEC_VARIABLE} or pass --spec PATH "
                                "(AMD's machine-readable ISA zip, a folder of its XML files, or one XML file)")
    path = Path(chosen).expanduser()
    if not path.exists():
        raise SpecNotFoundError(f"AMD ISA specification {str(path)!r} does not exist")
    return path


def xml_sources(location: str | os.PathLike | None = None) -> list[XmlSource]:
    """The XML files at a location (sorted by name)."""
    path = spec_location(location)
    if path.is_dir():
        found = [XmlSource(p) for p in sorted(path.iterdir()) if p.suffix.lower() == ".xml" and p.is_file()]
    elif zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = sorted(n for n in zf.namelist() if n.lower().endswith(".xml") and not n.endswith("/"))
        except zipfile.BadZipFile as exc:
            raise SpecFormatError(f"{path}: damaged zip ({exc})") from None
        found = [XmlSource(path, n) for n in names]
    else:
        found = [XmlSource(path)]
    if not found:
        raise SpecNotFoundError(f"{path} holds no .xml file")
    return found


def cache_dir() -> Path:
    """The folder of ISA cache images."""
    override = os.environ.get("HYDROPLANE_CACHE_DIR")
    if override:
        return Path(override).expanduser() / "isa"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "hydroplane" / "isa"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class SpecCache:
    """Loads each XML source through the cache folder, importing it on a miss."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or cache_dir()
        self._stat_index: dict[str, str] | None = None
        self.imported: list[str] = []  # labels imported (cache misses) by this object

    def _stats(self) -> dict[str, str]:
        if self._stat_index is None:
            try:
                self._stat_index = json.loads((self.folder / STAT_INDEX).read_text())
                if not isinstance(self._stat_index, dict):
                    self._stat_index = {}
            except (OSError, ValueError):
                self._stat_index = {}
        return self._stat_index

    def image_path(self, sha256: str) -> Path:
        return self.folder / f"{sha256}.img"

    def _try_image(self, sha256: str, label: str) -> Spec | None:
        try:
            image = self.image_path(sha256).read_bytes()
            spec = Spec(image, origin=str(self.image_path(sha256)))
        except (OSError, SpecFormatError):
            return None
        return spec if spec.sha256 == sha256 else None

    def load(self, source: XmlSource) -> Spec:
        key = source.stat_key()
        known = self._stats().get(key)
        if known:
            spec = self._try_image(known, source.label)
            if spec is not None:
                return spec
        data = source.read()
        sha = hashlib.sha256(data).hexdigest()
        spec = self._try_image(sha, source.label)
        if spec is None:
            image = build_image(import_xml(data, source.label), sha, source.label)
            self.imported.append(source.label)
            try:
                _write_atomic(self.image_path(sha), image)
            except OSError:
                pass  # an unwritable cache only costs speed
            spec = Spec(image, origin=source.label)
        self._remember(key, sha)
        return spec

    def _remember(self, key: str, sha: str) -> None:
        stats = self._stats()
        if stats.get(key) == sha:
            return
        stats[key] = sha
        try:
            _write_atomic(self.folder / STAT_INDEX, json.dumps(stats, indent=0).encode())
        except OSError:
            pass
