"""A small assembler and disassembler for the operand syntax of the curated VOP1 family.

Operands follow LLVM's AMDGPU syntax: registers `v5`, `s3`, `v[2:3]`, `s[2:3]`, `ttmp4`,
`vcc`, `exec`, `m0`, `null`; register halves `v5.l`/`v5.h` on generations with 16-bit
register halves; inline constants by AMD's predefined names (`-16`..`64`, `0.5`, `1.0`,
`0.15915494`, `src_scc`, ...); other numbers are literals (`0x1234`, `1.5`, `lit(0x..)`,
`lit64(0x..)`). Names come from the XML's operand types (OPR_SRC, OPR_VGPR), not a table
of ours; only the spelling rules (pairs, halves, lit()) are written here.
"""

from __future__ import annotations

import re
import struct

from hydroplane.isa.codec import Decoded, encode, find_form
from hydroplane.isa.errors import AssemblyError, IsaError
from hydroplane.isa.layouts import LITERAL_FIELD, layout_for
from hydroplane.isa.model import Instruction, InstructionEncoding, Operand, OperandType
from hydroplane.isa.spec import Spec
from hydroplane.isa.targets import HALF_REGISTER_ARCHITECTURES

# 64-bit spellings of the low register of a pair (AMD lists the low half by name).
PAIR_NAMES = {"VCC_LO": "vcc", "EXEC_LO": "exec"}
REGISTER = re.compile(r"^(s|v|ttmp)(\d+)(?:\.([lh]))?$")
REGISTER_RANGE = re.compile(r"^(s|v|ttmp)\[(\d+):(\d+)\]$")
FORCED_LITERAL = re.compile(r"^(lit|lit64)\((.+)\)$")
FLOAT_PACKERS = {16: ("<e", "<H"), 32: ("<f", "<I"), 64: ("<d", "<Q")}
HALF = 128  # the high half of a 16-bit register adds 128 to an 8-bit VGPR number


class Literal(int):
    """A literal operand value; `wide` asks for the 64-bit literal form."""

    wide: bool = False


def _register_base(operand_type: OperandType, prefix: str, number: int) -> int | None:
    name = f"{prefix.upper()}{number}" if prefix == "ttmp" else f"{prefix}{number}"
    value = operand_type.value_named(name)
    return value.value if value else None


def parse_operand(spec: Spec, operand: Operand, text: str) -> int:
    """The field value of `text` for `operand`, or a `Literal` for a literal source."""
    operand_type = spec.operand_type(operand.operand_type)
    where = f"operand {operand.field_name} ({operand.operand_type})"
    if operand_type is None:
        raise AssemblyError(f"{where}: operand type not in the {spec.architecture} file")
    raw = text.strip()
    lowered = raw.lower()
    registers = max(1, operand.size // 32)
    halves = spec.architecture in HALF_REGISTER_ARCHITECTURES and operand.size == 16
    m = REGISTER.match(lowered)
    if m:
        prefix, number, half = m.group(1), int(m.group(2)), m.group(3)
        base = _register_base(operand_type, prefix, number)
        if base is None:
            raise AssemblyError(f"{where}: {raw} is not allowed (not among {operand.operand_type}'s values)")
        if registers > 1:
            raise AssemblyError(f"{where}: a {operand.size}-bit operand needs a register pair, "
                                f"e.g. {prefix}[{number}:{number + 1}]")
        if half:
            if not halves or prefix != "v":
                raise AssemblyError(f"{where}: register half {raw} needs a 16-bit VGPR operand on a "
                                    f"generation with register halves")
            if number >= HALF:
                raise AssemblyError(f"{where}: {raw}: register halves reach v0..v127 only")
            return base + (HALF if half == "h" else 0)
        return base
    m = REGISTER_RANGE.match(lowered)
    if m:
        prefix, first, last = m.group(1), int(m.group(2)), int(m.group(3))
        if last - first + 1 != registers:
            raise AssemblyError(f"{where}: {raw} names {last - first + 1} registers, "
                                f"the {operand.size}-bit operand needs {registers}")
        if prefix in ("s", "ttmp") and first % 2:
            raise AssemblyError(f"{where}: {raw}: 64-bit scalar register pairs must start at an even register")
        base = _register_base(operand_type, prefix, first)
        if base is None or _register_base(operand_type, prefix, last) is None:
            raise AssemblyError(f"{where}: {raw} is not allowed (not among {operand.operand_type}'s values)")
        return base
    for name, spelling in PAIR_NAMES.items():
        if lowered == spelling and registers == 2 and operand_type.value_named(name):
            return operand_type.value_named(name).value
    named = operand_type.value_named(raw)
    if named is not None and not named.name.upper().startswith("SRC_LITERAL"):
        if registers > 1 and re.match(r"^(s|v|ttmp)\d+$", named.name.lower()):
            raise AssemblyError(f"{where}: a {operand.size}-bit operand needs a register pair")
        return named.value
    return _parse_literal(spec, operand, operand_type, raw, where)


def _parse_literal(spec: Spec, operand: Operand, operand_type: OperandType, raw: str, where: str) -> int:
    if not operand_type.value_named("SRC_LITERAL"):
        raise AssemblyError(f"{where}: {raw!r} is not a register or value this operand allows")
    forced = FORCED_LITERAL.match(raw.lower())
    text = forced.group(2) if forced else raw
    try:
        number = int(text, 0)
    except ValueError:
        number = _float_bits(spec, operand, text, where)
    if forced is None and operand_type.value_named(str(number)) is not None:
        return operand_type.value_named(str(number)).value  # -16..64 are inline constants
    if number < 0:
        number &= (1 << max(32, operand.size)) - 1  # two's complement at the operand's width
    if number >= 1 << 64:
        raise AssemblyError(f"{where}: literal {raw} does not fit 64 bits")
    literal = Literal(number)
    literal.wide = bool(forced and forced.group(1) == "lit64") or number >= 1 << 32
    return literal


def _float_bits(spec: Spec, operand: Operand, text: str, where: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise AssemblyError(f"{where}: {text!r} is neither a register, a predefined value nor a number") from None
    fmt = spec.data_format(operand.data_format)
    width = fmt.bit_count if fmt and fmt.data_type == "float" else operand.size
    if width not in FLOAT_PACKERS:
        raise AssemblyError(f"{where}: a float literal needs a 16/32/64-bit float operand")
    pack_as, read_as = FLOAT_PACKERS[width]
    try:
        bits = struct.unpack(read_as, struct.pack(pack_as, value))[0]
    except (OverflowError, struct.error):
        raise AssemblyError(f"{where}: {text} does not fit a {width}-bit float") from None
    if width == 64 and bits & 0xFFFFFFFF == 0:
        return bits >> 32  # a 32-bit literal of a 64-bit float is its high dword
    return bits


def format_operand(spec: Spec, operand: Operand, value: int, literal_field: bool = False) -> str:
    """LLVM-style text of a field value (register, pair, half, predefined name or literal)."""
    if literal_field:
        return f"lit64(0x{value:x})" if operand.field_name.endswith("64") else f"lit(0x{value:x})"
    operand_type = spec.operand_type(operand.operand_type)
    name = operand_type.names_by_value().get(value) if operand_type else None
    if name is None:
        return f"0x{value:x}"
    halves = spec.architecture in HALF_REGISTER_ARCHITECTURES and operand.size == 16
    m = REGISTER.match(name.lower())
    if m and halves and m.group(1) == "v":
        number = int(m.group(2))
        return f"v{number % HALF}.{'h' if number >= HALF else 'l'}"
    if operand.size > 32:
        if name in PAIR_NAMES:
            return PAIR_NAMES[name]
        if m:
            first = int(m.group(2))
            return f"{m.group(1)}[{first}:{first + operand.size // 32 - 1}]"
    return name.lower() if not re.match(r"^-?[\d.]+$", name) else name


def operand_list(form: InstructionEncoding) -> list[Operand]:
    """The operands written in assembly: those with a field, in AMD's order."""
    return [o for o in form.operands if o.field_name and not o.implicit]


def disassemble(spec: Spec, decoded: Decoded) -> str:
    """`v_cvt_off_f32_i4 v5, v1` from a decoded instruction."""
    parts = [format_operand(spec, o, decoded.values[o.field_name], o.field_name.startswith(LITERAL_FIELD))
             for o in operand_list(decoded.form)]
    return decoded.instruction.name.lower() + (" " + ", ".join(parts) if parts else "")


def split_line(line: str) -> tuple[str, list[str]]:
    text = line.split(";", 1)[0].strip()
    if not text:
        raise AssemblyError("empty assembly line")
    mnemonic, _, rest = text.partition(" ")
    operands = [o.strip() for o in _split_commas(rest)] if rest.strip() else []
    if any(not o for o in operands):
        raise AssemblyError(f"{line!r}: empty operand")
    return mnemonic, operands


def _split_commas(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (-1 if ch in "])" else 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def assemble(spec: Spec, line: str) -> tuple[bytes, Instruction, InstructionEncoding]:
    """Bytes of one assembly line, choosing the base or literal form the operands need."""
    mnemonic, texts = split_line(line)
    name, suffix = re.match(r"^(.*?)(_e32|_e64)?$", mnemonic.lower()).groups()
    try:
        instruction = spec.instruction(name)
    except IsaError as exc:
        raise AssemblyError(str(exc)) from None
    if suffix == "_e64":  # LLVM's spelling of the VOP3 form
        try:
            find_form(spec, instruction.name, "ENC_VOP3")
        except IsaError as exc:
            raise AssemblyError(f"{line.strip()!r}: {exc}") from None
        raise AssemblyError(f"{line.strip()!r}: the assembler writes VOP1 forms only (curated family)")
    base = next((f for f in instruction.encodings if f.encoding.startswith("ENC_")
                 and layout_for(spec, instruction, f) is not None), None)
    if base is None:
        raise AssemblyError(f"{instruction.name}: no encoding of it has a layout in the {spec.architecture} file")
    operands = operand_list(base)
    if len(texts) != len(operands):
        wanted = ", ".join(o.field_name for o in operands) or "no operands"
        raise AssemblyError(f"{instruction.name} takes {len(operands)} operand(s) ({wanted}), got {len(texts)}")
    values, literal_at = {}, None
    for operand, text in zip(operands, texts):
        value = parse_operand(spec, operand, text)
        if isinstance(value, Literal):
            if literal_at is not None:
                raise AssemblyError(f"{instruction.name}: only one literal operand fits the encoding")
            literal_at = (operand, value)
        else:
            values[operand.field_name] = value
    form = base
    if literal_at is not None:
        form = _literal_form(spec, instruction, base, *literal_at)
        lit_operand = next(o for o in form.operands if o.field_name.startswith(LITERAL_FIELD))
        values[lit_operand.field_name] = int(literal_at[1])
    try:
        data = encode(spec, instruction.name, form.encoding, values)
    except IsaError as exc:
        raise AssemblyError(f"{line.strip()!r}: {exc}") from None
    return data, instruction, form


def _literal_form(spec: Spec, instruction: Instruction, base: InstructionEncoding, operand: Operand,
                  literal: Literal) -> InstructionEncoding:
    prefix = base.encoding[4:]
    wanted = [f"{prefix}_INST_LITERAL64"] if literal.wide else [f"{prefix}_INST_LITERAL", f"{prefix}_INST_LITERAL64"]
    for name in wanted:
        form = instruction.encoding(name)
        if form is not None:
            find_form(spec, instruction.name, name)  # raises when its layout is unavailable
            return form
    raise AssemblyError(f"{instruction.name} operand {operand.field_name}: literal 0x{int(literal):x} needs "
                        f"{' or '.join(wanted)}, which {spec.architecture} lacks for this instruction")
