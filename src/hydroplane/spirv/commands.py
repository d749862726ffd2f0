"""`hydroplane spirv dis|as|val|reflect`: the SPIR-V text form, the validator and reflection on the command line.

`dis FILE [--raw-id] [-o OUT]` prints spirv-dis syntax; `as FILE -o OUT
[--preserve-numeric-ids]` writes a binary; `val FILE [--target-env ENV]` runs spirv-val;
`reflect FILE [--json]` prints the module's interface (entry points and local size, bindings
with element type, access and size, push-constant size, spec constants with type and default,
cooperative-matrix types, capabilities). FILE may be `-` for standard input. Errors (malformed
binaries, a file of the wrong kind, assembly errors with line and column, validator messages)
are HydroplaneErrors, printed by the CLI as one line that names the file.
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from pathlib import Path

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import binary
from hydroplane.spirv.assembler import assemble
from hydroplane.spirv.disassembler import disassemble
from hydroplane.spirv.reflection import ModuleInterface, reflect
from hydroplane.spirv.validation import validate


class CommandError(HydroplaneError):
    """A file the command cannot read or write."""


def register(subparsers) -> None:
    spirv = subparsers.add_parser("spirv", help="SPIR-V tools: disassemble, assemble, validate, reflect")
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

    ref = sub.add_parser("reflect", help="print a module's interface: entry points, bindings, push and spec constants")
    ref.add_argument("file", help="the .spv binary ('-' for standard input)")
    ref.add_argument("--json", action="store_true", help="print JSON instead of text")
    ref.set_defaults(func=run_reflect)


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


_ASSEMBLY_LINE = re.compile(r"^\s*(%[\w.-]+\s*=\s*)?Op[A-Z]\w*", re.MULTILINE)
_GLSL_LINE = re.compile(r"^\s*#version\s+\d+", re.MULTILINE)


def file_kind(data: bytes) -> str:
    """'binary' (SPIR-V magic), 'assembly' (spirv-as text), 'glsl', 'npy' or 'other'."""
    if len(data) >= 4 and binary.MAGIC in (int.from_bytes(data[:4], "little"), int.from_bytes(data[:4], "big")):
        return "binary"
    if data.startswith(b"\x93NUMPY"):
        return "npy"
    try:
        head = data[:65536].decode("utf-8")
    except UnicodeDecodeError:
        return "other"
    if _GLSL_LINE.search(head):
        return "glsl"
    if _ASSEMBLY_LINE.search(head):
        return "assembly"
    return "other"


def read_module(path: str) -> array:
    """The words of a SPIR-V binary file; a file of another kind is an error naming it and the command to use."""
    data = _read(path)
    kind = file_kind(data)
    if kind == "assembly":
        raise CommandError(f"{path}: this is SPIR-V assembly text; use `hydroplane spirv as {path} -o OUT.spv` "
                           "to assemble it first")
    if kind == "glsl":
        raise CommandError(f"{path}: this is GLSL source, not SPIR-V; compile it first "
                           f"(glslangValidator -V {path} -o OUT.spv)")
    if kind == "npy":
        raise CommandError(f"{path}: this is a NumPy .npy array, not a SPIR-V module")
    try:
        return binary.as_words(data)
    except binary.SpirvError as exc:
        raise CommandError(f"{path}: not a SPIR-V binary ({exc})") from None


def run_dis(args) -> int:
    words = read_module(args.file)
    _write(args.output, disassemble(words, raw_id=args.raw_id).encode("utf-8"))
    return 0


def run_as(args) -> int:
    version = ENV_VERSIONS.get(args.target_env)
    if version is None:
        raise CommandError(f"unknown --target-env {args.target_env!r}; one of {', '.join(ENV_VERSIONS)}")
    source = _read(args.file)
    if file_kind(source) == "binary":
        raise CommandError(f"{args.file}: this is a SPIR-V binary, not assembly text; use "
                           f"`hydroplane spirv dis {args.file}` to read it")
    try:
        source_text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{args.file} is not UTF-8 text (byte {exc.start})") from None
    words = assemble(source_text, preserve_numeric_ids=args.preserve_numeric_ids, version=version)
    _write(args.output, binary.to_bytes(words))
    return 0


def run_val(args) -> int:
    words = read_module(args.file)
    validate(words, env=args.target_env)
    print(f"{args.file}: valid ({args.target_env})", file=sys.stderr)
    return 0


def interface_json(iface: ModuleInterface) -> dict:
    """The reflected interface as plain JSON data (types by their short names: f32, u64, vec4<f32>[] ...)."""
    return {
        "version": f"{iface.version[0]}.{iface.version[1]}",
        "addressing_model": iface.addressing_model,
        "memory_model": iface.memory_model,
        "entry_points": [{"name": ep.name, "execution_model": ep.execution_model,
                          "local_size": list(ep.local_size) if ep.local_size else None,
                          "local_size_spec_ids": list(ep.local_size_spec_ids)} for ep in iface.entry_points],
        "bindings": [{"set": b.set, "binding": b.binding, "name": b.name, "descriptor_type": b.descriptor_type,
                      "element": b.element, "element_types": [t.name for t in b.element_types],
                      "access": b.access, "size": b.size, "runtime_array_stride": b.runtime_array_stride,
                      "array_count": b.array_count} for b in iface.bindings],
        "push_constant_size": iface.push_constant_size,
        "spec_constants": [{"spec_id": s.spec_id, "name": s.name, "type": s.type.name, "default": s.default}
                           for s in iface.spec_constants],
        "matrix_types": [str(t) for t in iface.coop_matrix_types],
        "matrix_muladds": [str(m) for m in iface.coop_muladds],
        "capabilities": list(iface.capabilities),
        "extensions": list(iface.extensions),
    }


def _size_text(size: int, stride: int | None) -> str:
    if stride is None:
        return f"{size} bytes"
    return f"{size} bytes + {stride} per element" if size else f"{stride} bytes per element"


def interface_text(path: str, iface: ModuleInterface) -> str:
    """The reflected interface as aligned text, one section per line group."""
    lines = [f"{path}: SPIR-V {iface.version[0]}.{iface.version[1]}, {iface.addressing_model} {iface.memory_model}"]
    for ep in iface.entry_points:
        size = " x ".join(str(v) for v in ep.local_size) if ep.local_size else "from spec constants"
        specs = [f"{'xyz'[i]}: SpecId {sid}" for i, sid in enumerate(ep.local_size_spec_ids) if sid is not None]
        lines.append(f"entry point {ep.name} ({ep.execution_model}): local size {size}"
                     + (f" ({', '.join(specs)})" if specs else ""))
    lines.append("bindings:" if iface.bindings else "bindings: none")
    for b in iface.bindings:
        lines.append(f"  set {b.set} binding {b.binding}  {b.name or '-'}  {b.descriptor_type}  {b.element}  "
                     f"{b.access}  {_size_text(b.size, b.runtime_array_stride)}")
    lines.append(f"push constants: {iface.push_constant_size} bytes" if iface.push_constant_size
                 else "push constants: none")
    lines.append("spec constants:" if iface.spec_constants else "spec constants: none")
    for s in iface.spec_constants:
        lines.append(f"  SpecId {s.spec_id}  {s.name or '-'}  {s.type.name}  default {json.dumps(s.default)}")
    if iface.coop_matrix_types:
        lines.append("matrix types: " + "; ".join(map(str, iface.coop_matrix_types)))
    if iface.coop_muladds:
        lines.append("matrix mul-adds: " + "; ".join(map(str, iface.coop_muladds)))
    lines.append("capabilities: " + (", ".join(iface.capabilities) or "none"))
    lines.append("extensions: " + (", ".join(iface.extensions) or "none"))
    return "\n".join(lines) + "\n"


def run_reflect(args) -> int:
    iface = reflect(read_module(args.file))
    if args.json:
        print(json.dumps(interface_json(iface), indent=2))
    else:
        sys.stdout.write(interface_text(args.file, iface))
    return 0
