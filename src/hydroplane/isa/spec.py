"""One architecture's specification, read lazily from its compact cache image.

The cache image of an XML file is: a magic line, a 4-byte header length, a zlib-compressed
JSON header (document, functional groups, name indexes with record offsets), then one
zlib-compressed JSON record per instruction, encoding, data format and operand type, plus a
catalog record for searches. A lookup decodes the header and the one record it needs, so it
stays fast for AMD's full-size files. `build_image` writes the image; `Spec` reads it.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass

from hydroplane.isa.errors import SpecFormatError, UnknownNameError
from hydroplane.isa.model import (
    ArchitectureSpec,
    DataFormat,
    Document,
    Encoding,
    FunctionalGroup,
    Instruction,
    OperandType,
    pack,
    unpack,
)

MAGIC = b"HYDROPLANE-ISA-CACHE 2\n"  # bump when the model or the image layout changes
RECORD_KINDS = {"instruction": Instruction, "encoding": Encoding, "data_format": DataFormat,
                "operand_type": OperandType}


@dataclass(frozen=True)
class CatalogEntry:
    """What searches need of one instruction, without decoding its record."""

    name: str
    aliases: tuple[str, ...]
    group: str
    subgroups: tuple[str, ...]
    encodings: tuple[tuple[str, int], ...]
    description: str


def build_image(spec: ArchitectureSpec, sha256: str, source: str) -> bytes:
    """The cache image of an imported file."""
    body = bytearray()
    index: dict[str, dict[str, list[int]]] = {kind: {} for kind in RECORD_KINDS}

    def add(payload) -> list[int]:
        blob = zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 6)
        start = len(body)
        body.extend(blob)
        return [start, len(blob)]

    tables = {"instruction": spec.instructions, "encoding": spec.encodings,
              "data_format": spec.data_formats, "operand_type": spec.operand_types}
    for kind, table in tables.items():
        for name, obj in table.items():
            index[kind][name] = add(pack(obj))
    catalog = [[i.name, list(i.aliases), i.group, list(i.subgroups),
                [[e.encoding, e.opcode] for e in i.encodings], i.description]
               for i in spec.instructions.values()]
    header = {
        "sha256": sha256, "source": source, "document": pack(spec.document),
        "groups": [pack(g) for g in spec.groups.values()], "subgroups": list(spec.subgroups),
        "aliases": {a.upper(): i.name for i in spec.instructions.values() for a in i.aliases},
        "index": index, "catalog": add(catalog),
    }
    head = zlib.compress(json.dumps(header, separators=(",", ":")).encode(), 6)
    return MAGIC + struct.pack("<I", len(head)) + head + bytes(body)


class Spec:
    """Queries on one architecture; records are decoded on first use and kept."""

    def __init__(self, image: bytes, origin: str = "cache image"):
        self.origin = origin
        try:
            if not image.startswith(MAGIC):
                raise ValueError("bad magic")
            (head_len,) = struct.unpack_from("<I", image, len(MAGIC))
            start = len(MAGIC) + 4
            header = json.loads(zlib.decompress(image[start:start + head_len]))
        except (ValueError, struct.error, zlib.error) as exc:
            raise SpecFormatError(f"{origin}: not a hydroplane ISA cache image ({exc})") from None
        self._image = image
        self._body = start + head_len
        self._index = header["index"]
        self._catalog_at = header["catalog"]
        self._aliases: dict[str, str] = header["aliases"]
        self._upper = {name.upper(): name for name in self._index["instruction"]}
        self._records: dict[tuple[str, str], object] = {}
        self._catalog: list[CatalogEntry] | None = None
        self.memo: dict[str, object] = {}  # tables other modules derive once (decode tables)
        self.sha256: str = header["sha256"]
        self.source: str = header["source"]
        self.document: Document = unpack(Document, header["document"])
        self.groups = {g[0]: unpack(FunctionalGroup, g) for g in header["groups"]}
        self.subgroups: tuple[str, ...] = tuple(header["subgroups"])

    @property
    def architecture(self) -> str:
        return self.document.architecture

    @property
    def decoded_records(self) -> tuple[tuple[str, str], ...]:
        """(kind, name) of every record decoded so far, ("catalog", "") for the search catalog: what a query cost."""
        return tuple(self._records) + ((("catalog", ""),) if self._catalog is not None else ())

    def _record(self, kind: str, name: str):
        key = (kind, name)
        if key not in self._records:
            start, length = self._index[kind][name]
            at = self._body + start
            try:
                data = json.loads(zlib.decompress(self._image[at:at + length]))
            except (ValueError, zlib.error) as exc:
                raise SpecFormatError(f"{self.origin}: damaged {kind} record {name!r} ({exc})") from None
            self._records[key] = unpack(RECORD_KINDS[kind], data)
        return self._records[key]

    # -- names -------------------------------------------------------------------------------
    def instruction_names(self) -> list[str]:
        return list(self._index["instruction"])

    def resolve(self, name: str) -> str | None:
        """The instruction's own name for `name` (any case, or an alias), or None."""
        upper = name.strip().upper()
        return self._upper.get(upper) or self._aliases.get(upper)

    def has_instruction(self, name: str) -> bool:
        return self.resolve(name) is not None

    def instruction(self, name: str) -> Instruction:
        canonical = self.resolve(name)
        if canonical is None:
            raise UnknownNameError("instruction", name, list(self._upper.values()) + list(self._aliases),
                                   self.architecture)
        return self._record("instruction", canonical)

    def encoding_names(self) -> list[str]:
        return list(self._index["encoding"])

    def encoding(self, name: str) -> Encoding | None:
        """AMD's layout of encoding `name`, or None when the file does not carry it."""
        return self._record("encoding", name) if name in self._index["encoding"] else None

    def data_format(self, name: str) -> DataFormat | None:
        return self._record("data_format", name) if name in self._index["data_format"] else None

    def operand_type(self, name: str) -> OperandType | None:
        return self._record("operand_type", name) if name in self._index["operand_type"] else None

    def catalog(self) -> list[CatalogEntry]:
        """Every instruction's name, aliases, group, encodings and description."""
        if self._catalog is None:
            start, length = self._catalog_at
            at = self._body + start
            rows = json.loads(zlib.decompress(self._image[at:at + length]))
            self._catalog = [CatalogEntry(r[0], tuple(r[1]), r[2], tuple(r[3]),
                                          tuple((e, o) for e, o in r[4]), r[5]) for r in rows]
        return self._catalog
