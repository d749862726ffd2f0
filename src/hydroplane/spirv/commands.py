"""`hydroplane spirv dis|as|val`: the SPIR-V text form and the validator on the command line.

`dis FILE [--raw-id] [-o OUT]` prints spirv-dis syntax; `as FILE -o OUT
[--preserve-numeric-ids]` writes a binary; `val FILE [--target-env ENV]` runs spirv-val.
FILE may be `-` for standard input. Errors (malformed binaries, assembly errors with line
and column, validator messages) are HydroplaneErrors, printed by the CLI as one line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import binary
from hydroplane.spirv.assembler import assemble
from hydroplane.spirv.disassembler import disassemble
from hydroplane.spirv.validation import validate


class CommandError(HydroplaneError):
    """A file the command cannot read or write."""


def register(subparsers) -> None:
    spirv = subparsers.add_parser("spirv", help="SPIR-V tools: disassemble, assemble, validate")
    sub = spirv.add_subparsers(dest="spirv_command", metavar="ACTION", required=True)

    dis = sub.add_parser("dis", help="disassemble a SPIR-V binary to spirv-dis syntax")
    dis.add_argument("file", help="the .spv binary ('-' for standard input)")
    dis.add_argument("--raw-id", action="store_true", help="print ids as %%N instead of friendly names")
    dis.add_argument("-o", dest="output", metavar="OUT", help="write the text here instead of standard output")
    dis.set_defaults(func=run_dis)

    asm = sub.add_parser("as", help="assemble spirv-as syntax into a SPIR-V binary")
    asm.add_argument("file", help="the assembly text ('-' for standard input)")
    asm.add_argument("-o", dest="output", metavar="OUT", required=True, help="the binary to write ('-': stdout)")
    asm.add_argument("--preserve-numeric-ids", action="store_true",
                     help="%%N keeps the id N; other names fill the gaps from 1")
    asm.add_argument("--target-env", default="spv1.6", metavar="ENV",
                     help="SPIR-V version of the header: spv1.0 .. spv1.6, vulkan1.0 .. vulkan1.4 (default spv1.6)")
    asm.set_defaults(func=run_as)

    val = sub.add_parser("val", help="validate a SPIR-V binary with spirv-val")
    val.add_argument("file", help="the .spv binary ('-' for standard input)")
    val.add_argument("--target-env", default="vulkan1.3", metavar="ENV", help="spirv-val target (default vulkan1.3)")
    val.set_defaults(func=run_val)


# SPIR-V version each target environment's modules carry (what spirv-as writes for it).
ENV_VERSIONS = {
    **{f"spv1.{minor}": (1, minor) for minor in range(7)},
    "vulkan1.0": (1, 0), "vulkan1.1": (1, 3), "vulkan1.1spv1.4": (1, 4), "vulkan1.2": (1, 5),
    "vulkan1.3": (1, 6), "vulkan1.4": (1, 6),
}


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None


def _write(path: str | None, data: bytes) -> None:
    if path is None or path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}") from None


def run_dis(args) -> int:
    words = binary.as_words(_read(args.file))
    _write(args.output, disassemble(words, raw_id=args.raw_id).encode("utf-8"))
    return 0


def run_as(args) -> int:
    version = ENV_VERSIONS.get(args.target_env)
    if version is None:
        raise CommandError(f"unknown --target-env {args.target_env!r}; one of {', '.join(ENV_VERSIONS)}")
    source = _read(args.file)
    try:
        source_text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{args.file} is not UTF-8 text (byte {exc.start})") from None
    words = assemble(source_text, preserve_numeric_ids=args.preserve_numeric_ids, version=version)
    _write(args.output, binary.to_bytes(words))
    return 0


def run_val(args) -> int:
    words = binary.as_words(_read(args.file))
    validate(words, env=args.target_env)
    print(f"{args.file}: valid ({args.target_env})", file=sys.stderr)
    return 0
