"""`hydroplane isa show|search|list|decode|encode|targets`: the ISA reference on the command line.

The specification comes from --spec or $HYDROPLANE_AMD_ISA (AMD's zip, a folder of its XML
files, or one file). Without either, a clone of hydroplane uses its own sample files (tests/isa/fixture: AMD's
schema, 20 VOP1 instructions of RDNA 3 and CDNA 5, descriptions written here), saying so on stderr, so that the
README's `hydroplane isa show v_cvt_off_f32_i4` works on a fresh clone. Errors are IsaError subclasses, printed by
the CLI as one line.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from hydroplane.isa.codec import decode
from hydroplane.isa.errors import DecodeError, IsaError, SpecNotFoundError
from hydroplane.isa.library import IsaLibrary
from hydroplane.isa.page import build_page, render_text
from hydroplane.isa.page_html import render_html
from hydroplane.isa.sources import SPEC_VARIABLE
from hydroplane.isa.syntax import assemble, disassemble
from hydroplane.isa.targets import GFX_TARGETS


def register(subparsers) -> None:
    isa = subparsers.add_parser("isa", help="AMD native ISA reference: look up, encode, decode instructions")
    sub = isa.add_subparsers(dest="isa_command", metavar="ACTION", required=True)

    def command(name: str, help_text: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--spec", help="AMD's ISA zip, a folder of its XML files, or one XML file "
                                      "(default: $HYDROPLANE_AMD_ISA)")
        p.set_defaults(func=func)
        return p

    show = command("show", "render an instruction's reference page", run_show)
    show.add_argument("name", help="instruction name or alias, any case")
    show.add_argument("--arch", help="architecture: 'rdna3', 'AMD CDNA 5' or a gfx target (default: newest)")
    show.add_argument("--html", metavar="OUT.html", help="also write the page as HTML")
    show.add_argument("--no-llvm", action="store_true", help="do not check the example with llvm-mc")

    search = command("search", "find instructions by name, alias or description text", run_search)
    search.add_argument("text")
    search.add_argument("--arch")

    dec = command("decode", "decode machine code: bytes '01 1d 0a 7e' or dwords '0x7E0A1D01'", run_decode)
    dec.add_argument("hex", nargs="+")
    dec.add_argument("--arch", required=True)

    enc = command("encode", "encode assembly lines, e.g. 'v_cvt_off_f32_i4 v5, v1'", run_encode)
    enc.add_argument("lines", nargs="+")
    enc.add_argument("--arch", required=True)

    listing = command("list", "list instructions by functional group and/or encoding", run_list)
    listing.add_argument("--group", help="functional group, e.g. VALU")
    listing.add_argument("--subgroup", help="functional subgroup, e.g. NOT_ASSIGNED (needs --group)")
    listing.add_argument("--encoding", help="encoding, e.g. VOP1 or VOP1_VOP_DPP8")
    listing.add_argument("--arch")

    targets = command("targets", "list the loaded architectures and their gfx targets", run_targets)
    targets.add_argument("--all", action="store_true", help="also the generations without a loaded file")


# The clone's sample specification (tests/isa/fixture, beside src/): absent from an installed package
SAMPLE_SPEC = Path(__file__).resolve().parents[3] / "tests" / "isa" / "fixture"
SAMPLE_NOTE = (f"hydroplane: note: no AMD ISA specification given (--spec or {SPEC_VARIABLE}: AMD's machine-readable "
               "ISA zip); using this clone's sample files, tests/isa/fixture (20 VOP1 instructions of RDNA 3 and "
               "CDNA 5 in AMD's schema, descriptions written by hydroplane, not AMD's)")


def open_library(spec) -> IsaLibrary:
    """The library of --spec or $HYDROPLANE_AMD_ISA; without either, the clone's sample files (said on stderr)."""
    if spec is None and not os.environ.get(SPEC_VARIABLE):
        if SAMPLE_SPEC.is_dir():
            print(SAMPLE_NOTE, file=sys.stderr, flush=True)
            return IsaLibrary.open(SAMPLE_SPEC)
        raise SpecNotFoundError(f"no AMD ISA specification: set {SPEC_VARIABLE} or pass --spec PATH (AMD's "
                                "machine-readable ISA zip, a folder of its XML files, or one XML file; a clone of "
                                "hydroplane has sample files in tests/isa/fixture)")
    return IsaLibrary.open(spec)


def run_show(args) -> int:
    library = open_library(args.spec)
    page = build_page(library, args.name, args.arch, check_with_llvm=not args.no_llvm)
    sys.stdout.write(render_text(page))
    if args.html:
        try:
            Path(args.html).write_text(render_html(page), encoding="utf-8")
        except OSError as exc:
            raise IsaError(f"cannot write {args.html}: {exc}") from None
    return 0


def run_search(args) -> int:
    library = open_library(args.spec)
    hits = library.search(args.text, args.arch)
    if not hits:
        raise IsaError(f"no instruction matches {args.text!r} in {', '.join(library.architectures)}")
    for arch, entry in hits:
        aliases = f" (alias {', '.join(a.lower() for a in entry.aliases)})" if entry.aliases else ""
        forms = ", ".join(sorted({e for e, _ in entry.encodings}))
        print(f"{entry.name.lower():<28} {arch:<14} {entry.group:<8} {forms}{aliases}")
    return 0


def parse_hex(parts: list[str]) -> bytes:
    """'01 1d 0a 7e' / '011d0a7e' as bytes; '0x7E0A1D01 0x...' as little-endian dwords."""
    text = " ".join(parts).replace(",", " ").strip()
    if not text:
        raise DecodeError("no machine code given")
    if text.lower().startswith("0x"):
        words = text.split()
        out = b""
        for w in words:
            if not re.fullmatch(r"0[xX][0-9a-fA-F]{1,8}", w):
                raise DecodeError(f"{w!r} is not a 32-bit hex dword like 0x7E0A1D01")
            out += int(w, 16).to_bytes(4, "little")
        return out
    digits = text.replace(" ", "")
    if not re.fullmatch(r"[0-9a-fA-F]*", digits) or len(digits) % 2:
        raise DecodeError(f"{text!r} is not a whole number of hex bytes")
    return bytes.fromhex(digits)


def run_decode(args) -> int:
    library = open_library(args.spec)
    spec = library.spec(args.arch)
    data = parse_hex(args.hex)
    offset = 0
    while offset < len(data):
        try:
            decoded = decode(spec, data[offset:])
        except DecodeError as exc:
            raise DecodeError(f"at byte {offset}: {exc}") from None
        notes = []
        if decoded.layout.derived:
            notes.append(f"layout derived from {decoded.layout.encoding.derived_from}")
        if decoded.unused_bits:
            bits = [str(b) for b in range(decoded.length * 8) if decoded.unused_bits >> b & 1]
            notes.append(f"unused bit(s) {', '.join(bits)} set")
        print(f"{disassemble(spec, decoded):<40} ; {decoded.form.encoding} [{decoded.data.hex(' ')}]"
              + "".join(f" ({n})" for n in notes))
        offset += decoded.length
    return 0


def run_encode(args) -> int:
    library = open_library(args.spec)
    spec = library.spec(args.arch)
    for line in args.lines:
        data, instruction, form = assemble(spec, line)
        print(f"{line.strip():<40} ; {form.encoding} [{data.hex(' ')}] ({spec.architecture})")
    return 0


def run_list(args) -> int:
    library = open_library(args.spec)
    if args.subgroup and not args.group:
        raise IsaError("--subgroup needs --group")
    names = library.spec(args.arch).instruction_names()
    if args.group:
        names = [n for n in names if n in set(library.by_group(args.group, args.subgroup, args.arch))]
    if args.encoding:
        names = [n for n in names if n in set(library.by_encoding(args.encoding, args.arch))]
    for name in names:
        print(name.lower())
    return 0


def run_targets(args) -> int:
    library = open_library(args.spec)
    loaded = set(library.architectures)
    for arch, targets in GFX_TARGETS.items():
        if arch in loaded or args.all:
            state = "loaded" if arch in loaded else "no file loaded"
            print(f"{arch:<14} {state:<15} {' '.join(targets)}")
    for arch in sorted(loaded - set(GFX_TARGETS)):
        print(f"{arch:<14} {'loaded':<15} (no gfx target in hydroplane's table)")
    return 0
