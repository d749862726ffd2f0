"""The loaded architectures and the queries across them.

`IsaLibrary.open(location)` finds every XML file at a location and reads only its head (the
architecture name and release date); a file is imported (through the cache) when a query
first needs it. Then
`find(name, arch)`, `forms(name, arch)`, `by_group`, `by_encoding`, `architectures_with`,
`compare(name, encoding, arch)` (the page's "not the same in every generation") and
`search(text)`. Architectures are named by AMD's name ('AMD RDNA 3'), its key ('rdna3') or
a gfx target ('gfx1100').
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

from hydroplane.isa.errors import UnknownNameError
from hydroplane.isa.layouts import Layout, identifier_for, layout_for
from hydroplane.isa.model import Instruction, InstructionEncoding
from hydroplane.isa.sources import SpecCache, sniff_document, xml_sources
from hydroplane.isa.spec import CatalogEntry, Spec
from hydroplane.isa.targets import GFX_TARGETS, arch_key, architecture_of_target


@dataclass(frozen=True)
class Comparison:
    """How one instruction form compares across the loaded architectures."""

    architecture: str
    encoding: str
    same: tuple[str, ...]
    different: tuple[tuple[str, tuple[str, ...]], ...]  # (architecture, aspects that differ)
    not_loaded: tuple[str, ...]  # generations in the target table without a loaded file


@dataclass
class _Entry:
    """One architecture's file: named from its head, imported on first use."""

    architecture: str
    release_date: str
    load: Callable[[], Spec]
    loaded: Spec | None = None

    def spec(self) -> Spec:
        if self.loaded is None:
            self.loaded = self.load()
            self.architecture = self.loaded.architecture
        return self.loaded


class IsaLibrary:
    """Specs of one or more architectures, newest release first."""

    def __init__(self, specs: list[Spec] = (), entries: list[_Entry] = ()):
        given = [_Entry(s.architecture, s.document.release_date, lambda s=s: s, s) for s in specs]
        self._entries = sorted(given + list(entries), key=lambda e: (e.release_date, e.architecture), reverse=True)

    @classmethod
    def open(cls, location: str | os.PathLike | None = None, cache: SpecCache | None = None) -> IsaLibrary:
        cache = cache or SpecCache()
        entries = []
        for source in xml_sources(location):
            head = sniff_document(source)
            if head is None:  # no name in the head: import now (and report a broken file now)
                spec = cache.load(source)
                entries.append(_Entry(spec.architecture, spec.document.release_date, lambda s=spec: s, spec))
            else:
                entries.append(_Entry(head[0], head[1], functools.partial(cache.load, source)))
        return cls(entries=entries)

    @property
    def specs(self) -> list[Spec]:
        """Every architecture's spec (imports the files not yet imported)."""
        return [e.spec() for e in self._entries]

    @property
    def architectures(self) -> list[str]:
        return [e.architecture for e in self._entries]

    def spec(self, arch: str | None = None) -> Spec:
        """The spec of `arch` (name, key or gfx target); the newest when None."""
        if arch is None:
            return self._entries[0].spec()
        by_target = architecture_of_target(arch)
        key = arch_key(by_target or arch)
        for e in self._entries:
            if arch_key(e.architecture) == key:
                return e.spec()
        known = self.architectures + [arch_key(a) for a in self.architectures]
        where = "the loaded files" + (f" ({arch} is {by_target}, whose file is not loaded)" if by_target else "")
        raise UnknownNameError("architecture", arch, known, where)

    def find(self, name: str, arch: str | None = None) -> tuple[Spec, Instruction]:
        """The instruction `name` (any case or an alias) in `arch`, else the newest that has it."""
        if arch is not None:
            spec = self.spec(arch)
            return spec, spec.instruction(name)
        for entry in self._entries:  # newest first, importing only as far as needed
            if entry.spec().has_instruction(name):
                return entry.spec(), entry.spec().instruction(name)
        known = sorted({n for s in self.specs for n in s.instruction_names()})
        raise UnknownNameError("instruction", name, known, "any loaded architecture")

    def forms(self, name: str, arch: str | None = None) -> list[tuple[InstructionEncoding, Layout | None]]:
        """Every encoding of an instruction with its layout (None when the file lacks it)."""
        spec, instruction = self.find(name, arch)
        return [(form, layout_for(spec, instruction, form)) for form in instruction.encodings]

    def architectures_with(self, name: str) -> list[str]:
        return [s.architecture for s in self.specs if s.has_instruction(name)]

    def by_group(self, group: str, subgroup: str | None = None, arch: str | None = None) -> list[str]:
        """Names of the instructions in a functional group (and subgroup)."""
        spec = self.spec(arch)
        if group.upper() not in {g.upper() for g in spec.groups} | {e.group.upper() for e in spec.catalog()}:
            raise UnknownNameError("functional group", group, list(spec.groups), spec.architecture)
        return [e.name for e in spec.catalog() if e.group.upper() == group.upper()
                and (subgroup is None or subgroup.upper() in (s.upper() for s in e.subgroups))]

    def by_encoding(self, encoding: str, arch: str | None = None) -> list[str]:
        """Names of the instructions with a form in `encoding` ('ENC_VOP1' or 'VOP1')."""
        spec = self.spec(arch)
        wanted = {encoding.upper(), "ENC_" + encoding.upper()}
        names = [e.name for e in spec.catalog() if any(enc in wanted for enc, _ in e.encodings)]
        if not names and not any(n in wanted for n in spec.encoding_names()):
            used = {enc for e in spec.catalog() for enc, _ in e.encodings}
            raise UnknownNameError("encoding", encoding, sorted(used | set(spec.encoding_names())),
                                   spec.architecture)
        return names

    def search(self, text: str, arch: str | None = None) -> list[tuple[str, CatalogEntry]]:
        """(architecture, entry) whose name, alias or description contains `text` (any case)."""
        needle = text.strip().upper()
        specs = [self.spec(arch)] if arch else self.specs
        hits = []
        for spec in specs:
            for e in spec.catalog():
                names = (e.name,) + e.aliases
                if any(needle in n.upper() for n in names) or needle in e.description.upper():
                    hits.append((spec.architecture, e))
        hits.sort(key=lambda h: (not any(needle in n.upper() for n in (h[1].name,) + h[1].aliases), h[1].name))
        return hits

    def compare(self, name: str, encoding: str, arch: str | None = None) -> Comparison:
        """Compare the form in `encoding` with every other loaded architecture."""
        spec, instruction = self.find(name, arch)
        form = instruction.encoding(encoding)
        mine = _form_facts(spec, instruction, form)
        same, different = [], []
        for other in self.specs:
            if other is spec:
                continue
            if not other.has_instruction(name):
                different.append((other.architecture, ("instruction absent",)))
                continue
            theirs_ins = other.instruction(name)
            theirs_form = theirs_ins.encoding(encoding)
            if theirs_form is None:
                different.append((other.architecture, (f"no {encoding} form",)))
                continue
            theirs = _form_facts(other, theirs_ins, theirs_form)
            aspects = tuple(k for k in mine if mine[k] != theirs[k])
            (different.append((other.architecture, aspects)) if aspects else same.append(other.architecture))
        loaded = {arch_key(a) for a in self.architectures}
        not_loaded = tuple(a for a in GFX_TARGETS if arch_key(a) not in loaded)
        return Comparison(spec.architecture, encoding, tuple(same), tuple(different), not_loaded)


def _form_facts(spec: Spec, instruction: Instruction, form: InstructionEncoding | None) -> dict[str, object]:
    """The aspects compared across generations, each a comparable value."""
    layout = layout_for(spec, instruction, form) if form else None
    enc = layout.encoding if layout else None
    fields = tuple(sorted((f.name, f.ranges) for f in enc.fields)) if enc else None
    return {
        "field layout": fields,
        "opcode": form.opcode if form else None,
        "identifier": identifier_for(enc, form.opcode) if enc and form else None,
        "operands": tuple((o.field_name, o.data_format, o.operand_type, o.size, o.is_input, o.is_output)
                          for o in form.operands) if form else None,
    }
