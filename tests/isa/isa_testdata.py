"""Test data and fixtures of the ISA tests: the XML file sets they run on, a library over each, llvm-mc.

Every ISA test runs on the project's own files (tests/isa/fixture/: AMD's schema, the facts of the 20
VOP1 conversions, our descriptions; written by amd_schema_fixture.py), so a clone on its own runs them
all. When the shared folder holds AMD's two excerpts (../shared/isa/amd, or $HYDROPLANE_SHARED/isa/amd),
the `isa_files` fixture is parametrized with them as a second set: every test then also runs on AMD's own
text. Without them that parameter does not exist: nothing is collected for it, so nothing is skipped. The
same holds for seed 001's page (`page_case`): the project's expected page facts always, the seed's only
when the shared folder has both the seed and the excerpts.

Test modules import the fixtures they use from here. (Not a conftest.py: the suite's other tests do
`from conftest import ...`, which a second conftest module would shadow.) Every cache goes to a
temporary folder, never the user's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from amd_schema_fixture import FILES, FIXTURE_DIR, INSTRUCTIONS
from conftest import require_tool, shared_dir

from hydroplane.isa import IsaLibrary, SpecCache

RDNA3, CDNA5 = "AMD RDNA 3", "AMD CDNA 5"
AMD_EXCERPTS = {RDNA3: "amdgpu_isa_rdna3.excerpt.xml", CDNA5: "amdgpu_isa_cdna5.excerpt.xml"}
SEED_PAGE = "seeds/001_e1e3c3462c1f67fc.txt"
ENCODINGS = {RDNA3: {"ENC_SOP1", "ENC_VOP1", "ENC_VOP2"}, CDNA5: {"ENC_SOP1", "ENC_VOP1"}}
ALL_FORMATS = {"FMT_NUM_B16", "FMT_NUM_F16", "FMT_NUM_F32", "FMT_NUM_F64", "FMT_NUM_I32", "FMT_NUM_U32"}


@dataclass(frozen=True)
class ArchFacts:
    """What a file set's README states about one architecture's file."""

    schema: str
    arch_id: int
    encodings: set[str]
    forms: int  # InstructionEncoding elements of the 20 instructions
    formats: set[str]
    release_date: str


@dataclass(frozen=True)
class IsaFiles:
    """One folder of XML files (one per architecture) and the facts its README states."""

    name: str
    folder: Path
    files: dict[str, str]
    facts: dict[str, ArchFacts]

    def path(self, arch: str = RDNA3) -> Path:
        return self.folder / self.files[arch]

    def read(self, arch: str = RDNA3) -> bytes:
        return self.path(arch).read_bytes()


PROJECT = IsaFiles("project", FIXTURE_DIR, FILES, {
    RDNA3: ArchFacts("1.1.1", 8, ENCODINGS[RDNA3], 122, ALL_FORMATS, "2026-11-30"),
    CDNA5: ArchFacts("1.2.0", 4, ENCODINGS[CDNA5], 157, ALL_FORMATS, "2026-12-01"),
})


def amd_excerpts() -> IsaFiles | None:
    """AMD's excerpts in the shared folder, with what their README (shared/isa/amd/README.md) states."""
    shared = shared_dir()
    folder = shared / "isa" / "amd" if shared else None
    if folder is None or not all((folder / f).is_file() for f in AMD_EXCERPTS.values()):
        return None
    return IsaFiles("amd-excerpts", folder, AMD_EXCERPTS, {
        RDNA3: ArchFacts("1.1.1", 8, ENCODINGS[RDNA3], 122, ALL_FORMATS, "2026-02-20"),
        CDNA5: ArchFacts("1.2.0", 4, ENCODINGS[CDNA5], 157, ALL_FORMATS - {"FMT_NUM_B16"}, "2026-08-03"),
    })


AMD = amd_excerpts()
FILE_SETS = [PROJECT] + ([AMD] if AMD else [])


@dataclass(frozen=True)
class PageFacts:
    """What the reference page of v_cvt_off_f32_i4 on AMD CDNA 5 must show (seed 001's fields)."""

    name: str
    files: IsaFiles
    title: str
    group_title: str
    description: str
    cells: list[str]
    note: str  # the layout note: the layout, identifier and unassigned sentences, then the generations
    fields: list[str]  # "Format VOP1", ...
    operands: list[tuple[str, str]]  # (bullet, description) in AMD's order
    order: str  # the sentence under the operands
    target: tuple[str, str]  # a gfx target and its support text
    headings: tuple[str, ...]
    table: dict[int, float]  # S0[3:0] -> result
    table_text: str  # the lookup table as the page writes it
    semantics: str
    example: str
    generations_differing: list[str] = field(default_factory=list)
    generations_same: list[str] = field(default_factory=list)


HEADINGS = ("GFX Target Compatibility", "Related", "More in Vector Arithmetic", "Reference", "AMDGPU / GFX ISA",
            "Description", "Semantics", "Example", "Sources")
# V_CVT_OFF_F32_I4's table: S0[3:0] as a signed 4-bit integer, divided by 16 (AMD's ISA guide lists it so).
OFFSET_TABLE = {0b1000: -0.5, 0b1001: -0.4375, 0b1010: -0.375, 0b1011: -0.3125, 0b1100: -0.25,
                0b1101: -0.1875, 0b1110: -0.125, 0b1111: -0.0625, 0b0000: 0.0, 0b0001: 0.0625,
                0b0010: 0.125, 0b0011: 0.1875, 0b0100: 0.25, 0b0101: 0.3125, 0b0110: 0.375, 0b0111: 0.4375}
LAYOUT_NOTE = ("The ENC_VOP1 layout from AMD's machine-readable ISA specification (AMD CDNA 5). Opcode 14 in OP "
               "rebuilds 0x7E001C00, an identifier AMD lists for this encoding. Bits marked unassigned have no field "
               "in the specification.")


def _table_text(table: dict[int, float]) -> str:
    order = sorted(table, key=lambda bits: (bits ^ 8))  # 1000 (-8) first, 0111 (+7) last
    return "Lookup table on S0[3:0]: S0 binary Result " + " ".join(
        f"{bits:04b} {table[bits]:+.4f}f" for bits in order)


def project_page_facts() -> PageFacts:
    """The page our files must give: the layout and numbers are the ISA's, the prose is our files' own."""
    description = next(i.description for i in INSTRUCTIONS if i.name == "V_CVT_OFF_F32_I4")
    return PageFacts(
        name="project", files=PROJECT,
        title="v_cvt_off_f32_i4 GPU Native ISA AMD Vector", group_title="Vector Arithmetic",
        description=description,
        cells=["0111111", "31:25", "VDST", "24:17", "unassigned", "16", "0001110", "15:9", "SRC0", "8:0"],
        note=LAYOUT_NOTE + " Not the same in every generation: AMD RDNA 3 (field layout).",
        fields=["Format VOP1", "Width 32 bits", "Opcode 14", "Identifier 0x7E001C00"],
        operands=[("• VDST", "Written. A vector register, v0 to v255, in an 8-bit field. Data format: IEEE 754 "
                             "binary32 (single precision). (OPR_VGPR, FMT_NUM_F32)"),
                  ("• SRC0", "Read. Any source an encoding takes: a scalar or vector register, an inline "
                             "constant, a special register, or a literal marker. Data format: A two's-complement "
                             "signed 32-bit integer. (OPR_SRC, FMT_NUM_I32)")],
        order="In AMD's order, as its machine-readable ISA specification lists them for the ENC_VOP1 encoding "
              "(AMD CDNA 5).",
        target=("gfx1100", "✅ Supported"), headings=HEADINGS, table=OFFSET_TABLE,
        table_text=_table_text(OFFSET_TABLE),
        semantics="declare CVT_OFF_TABLE : 32'F[16]; D0.f32 = CVT_OFF_TABLE[S0.u32[3 : 0]]",
        example="v_cvt_off_f32_i4 v5, v1", generations_differing=["AMD RDNA 3"])


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def seed_page_facts(seed: str, files: IsaFiles) -> PageFacts:
    """The same fields read off seed 001's page (which was made from AMD's own files)."""
    lines = _lines(seed)
    note = next(line for line in lines if line.startswith("The ENC_VOP1 layout"))
    table_text = re.search(r"Lookup table on S0\[3:0\]: S0 binary Result( [01]{4} [+-]\d\.\d{4}f){16}", seed)
    pairs = re.findall(r"([01]{4}) ([+-]\d+\.\d+)f", _section(seed, "Lookup table on S0[3:0]:", "Semantics"))
    ops = [x for x in _lines(_section(seed, "Operands", "In AMD's order")) if x]
    target, support = re.match(r"(gfx\d+)(.*)", _section(seed, "TargetSupport", "Related").strip()).groups()
    return PageFacts(
        name="seed-001", files=files, title=lines[0], group_title=lines[2], description=lines[6],
        cells=[x for x in _lines(_section(seed, "Binary Layout (AMD CDNA 5)", "The ENC_VOP1")) if x],
        note=note, fields=[x for x in lines if re.fullmatch(r"(Format|Width|Opcode|Identifier) \S.*", x)],
        operands=[(ops[0], ops[1]), (ops[2], ops[3])],
        order=next(line for line in lines if line.startswith("In AMD's order")),
        target=(target, support.strip()), headings=tuple(h for h in HEADINGS if h in lines),
        table={int(b, 2): float(v) for b, v in pairs}, table_text=table_text.group(0) if table_text else "",
        semantics=_section(seed, "\nSemantics\n", "\nExample").strip(),
        example=_section(seed, "\nExample\n", "A real instruction").strip(),
        generations_differing=re.findall(r"(AMD [A-Z]+ [\d.]+) \(field layout\)", note),
        generations_same=re.findall(r"The same in (AMD [A-Z]+ \d+(?:\.\d+)?)", note))


def _seed_page_facts() -> PageFacts | None:
    shared = shared_dir()
    path = shared / SEED_PAGE if shared else None
    if AMD is None or path is None or not path.is_file():
        return None
    return seed_page_facts(path.read_text(encoding="utf-8"), AMD)


SEED = _seed_page_facts()
PAGE_FACTS = [project_page_facts()] + ([SEED] if SEED else [])


@pytest.fixture(scope="session", params=FILE_SETS, ids=[s.name for s in FILE_SETS])
def isa_files(request) -> IsaFiles:
    return request.param


_LIBRARIES: dict[str, IsaLibrary] = {}


def library_of(files: IsaFiles, tmp_path_factory) -> IsaLibrary:
    """One library per file set for the session, its cache in a temporary folder."""
    if files.name not in _LIBRARIES:
        _LIBRARIES[files.name] = IsaLibrary.open(files.folder, SpecCache(tmp_path_factory.mktemp("isa-cache")))
    return _LIBRARIES[files.name]


@pytest.fixture(scope="session")
def library(isa_files, tmp_path_factory) -> IsaLibrary:
    return library_of(isa_files, tmp_path_factory)


@pytest.fixture(scope="session", params=PAGE_FACTS, ids=[f.name for f in PAGE_FACTS])
def page_facts(request) -> PageFacts:
    return request.param


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """No test touches the user's cache: HYDROPLANE_CACHE_DIR points into tmp_path."""
    monkeypatch.setenv("HYDROPLANE_CACHE_DIR", str(tmp_path / "hydroplane-cache"))
    monkeypatch.delenv("HYDROPLANE_AMD_ISA", raising=False)


@pytest.fixture(scope="session")
def llvm_mc() -> str:
    return require_tool("llvm-mc-22")
