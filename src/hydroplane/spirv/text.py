"""SPIR-V text form: a disassembler and an assembler for the spirv-dis / spirv-as syntax.

`disassemble(words_or_module, raw_id=False)` prints `%name = OpX operands...` lines with
enumerant names, `|` masks, quoted strings, literals in the format of their type (hex
floats where spirv-dis prints them) and ids named as spirv-dis names them by default
(OpName, type shapes, constant values) or, with raw_id, as `%N`.
`assemble(text, preserve_numeric_ids=False)` reads that syntax back; ids are numbered in
order of first appearance like spirv-as, or, with preserve_numeric_ids, `%N` keeps N and
other names fill the gaps. With raw ids and preserve_numeric_ids, binary -> text -> binary
keeps every word (the header's generator and bound are arguments of `assemble`).
Errors: `SpirvError` naming the word offset (disassembly), `AssemblyError` naming the line
and column (assembly).
"""

from __future__ import annotations

import re
import struct
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import (
    HEADER_WORDS,
    MAGIC,
    Instruction,
    Module,
    Operand,
    SpirvError,
    decode,
    encode_instruction,
)

Op = grammar.Op
SPIRV_AS_GENERATOR = 7 << 16  # "Khronos SPIR-V Tools Assembler", version 0: what spirv-as writes
INDENT = 15  # spirv-dis: instruction names start in this column; result names end 3 before it



class AssemblyError(SpirvError):
    """Bad SPIR-V assembly text: says what is wrong and at which line and column (1-based)."""

    def __init__(self, message: str, line: int, column: int):
        self.line = line
        self.column = column
        super().__init__(f"line {line}, column {column}: {message}")


# ----------------------------------------------------------------------------------------
# Scalar types and their literals

# (exponent bits, mantissa bits) of each float format, by (width, FPEncoding name or None).
FLOAT_FORMATS = {
    (16, None): (5, 10),
    (32, None): (8, 23),
    (64, None): (11, 52),
    (16, "BFloat16KHR"): (8, 7),
    (8, "Float8E4M3EXT"): (4, 3),
    (8, "Float8E5M2EXT"): (5, 2),
}
_NO_INFINITY = {"Float8E4M3EXT"}  # formats whose all-ones exponent still holds finite values
_FRIENDLY_FLOAT = {(16, None): "half", (32, None): "float", (64, None): "double",
                   (16, "BFloat16KHR"): "bfloat16", (8, "Float8E4M3EXT"): "fp8e4m3",
                   (8, "Float8E5M2EXT"): "fp8e5m2"}
_FRIENDLY_INT = {8: "char", 16: "short", 32: "int", 64: "long"}


@dataclass(frozen=True, slots=True)
class ScalarType:
    """An OpTypeInt or OpTypeFloat: what a context-dependent literal of it looks like."""

    is_float: bool
    width: int
    signed: bool = False  # integers
    encoding: str | None = None  # floats: FPEncoding enumerant name, None for IEEE binary

    @property
    def float_format(self) -> tuple[int, int] | None:
        return FLOAT_FORMATS.get((self.width, self.encoding))


def scalar_type(inst: Instruction) -> ScalarType | None:
    """The scalar type an OpTypeInt / OpTypeFloat declares (None for other instructions)."""
    ops = inst.operands
    if inst.opcode == Op.TypeInt and len(ops) >= 2:
        return ScalarType(False, ops[0].value, bool(ops[1].value))
    if inst.opcode == Op.TypeFloat and ops:
        encoding = None
        if len(ops) > 1:
            e = grammar.enumerant_values("FPEncoding").get(ops[1].value)
            encoding = e.name if e else str(ops[1].value)
        return ScalarType(True, ops[0].value, encoding=encoding)
    return None


def hex_float(bits: int, exp_bits: int, mant_bits: int) -> str:
    """`bits` of a binary float format as a C hex float, exactly as spirv-dis prints it."""
    sign = "-" if (bits >> (exp_bits + mant_bits)) & 1 else ""
    field = (bits >> mant_bits) & ((1 << exp_bits) - 1)
    frac = bits & ((1 << mant_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    if field == 0 and frac == 0:
        return sign + "0x0p+0"
    if field == 0:  # subnormal: normalise so that the leading one is implicit
        top = frac.bit_length() - 1
        exponent = top + 1 - bias - mant_bits
        frac = (frac << (mant_bits - top)) & ((1 << mant_bits) - 1)
    else:
        exponent = field - bias
    nibbles = (mant_bits + 3) // 4
    frac <<= 4 * nibbles - mant_bits
    while nibbles and not frac & 0xF:
        frac >>= 4
        nibbles -= 1
    digits = f".{frac:0{nibbles}x}" if nibbles else ""
    return f"{sign}0x1{digits}p{'+' if exponent >= 0 else ''}{exponent}"


def format_float(bits: int, t: ScalarType) -> str:
    """A float literal as spirv-dis prints it: shortest exact decimal for 32/64-bit zero and
    normal numbers (9 / 17 significant digits), a hex float for everything else."""
    fmt = t.float_format
    if fmt is None:
        return str(bits)
    exp_bits, mant_bits = fmt
    if t.encoding is None and t.width in (32, 64):
        field = (bits >> mant_bits) & ((1 << exp_bits) - 1)
        subnormal = field == 0 and bits & ((1 << mant_bits) - 1)
        if field != (1 << exp_bits) - 1 and not subnormal:
            if t.width == 32:
                return "%.9g" % struct.unpack("<f", struct.pack("<I", bits))[0]
            return "%.17g" % struct.unpack("<d", struct.pack("<Q", bits))[0]
    return hex_float(bits, exp_bits, mant_bits)


def format_literal(value: int, t: ScalarType | None, nwords: int) -> str:
    """A context-dependent literal (OpConstant value, OpSwitch case) in its type's form."""
    if t is None:
        return str(value)
    if t.is_float:
        return format_float(value, t)
    width = min(t.width, 32 * nwords)
    if width <= 0:  # OpTypeInt 0: invalid, print the raw value
        return str(value)
    value &= (1 << width) - 1
    if t.signed and value >> (width - 1):
        value -= 1 << width
    return str(value)


_DECIMAL_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_HEX_FLOAT = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)(?:[pP]([+-]?\d+))?\Z")
_LONGEST_FLOAT = 1000  # characters; longer literals are rejected rather than computed
# Exponents beyond these over- or underflow every format whatever 1000 digits say: 1000 digits
# span 10**±1000 (decimal) or 2**±4000 (hex); the formats span 10**±330, 2**±1100.
_EXTREME_SCALE = {False: 1500, True: 6000}
_INTEGER = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|\d+)\Z")


def parse_integer(token: str) -> int | None:
    m = _INTEGER.match(token)
    if not m:
        return None
    digits = m.group(2)
    if len(digits.lstrip("0")) > 40:  # far out of every range; int() of huge decimals is slow
        value = 1 << 200
    else:
        value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits)
    return -value if m.group(1) == "-" else value


def encode_float(token: str, exp_bits: int, mant_bits: int, no_infinity: bool = False) -> int | None:
    """The bits of a decimal or hex float literal in a binary format (round to nearest even).

    None when the token is not a float or does not fit. A hex float may name the all-ones
    exponent (spirv-dis prints infinities and NaNs that way); a decimal one may not."""
    if len(token) > _LONGEST_FLOAT:
        return None
    m = _HEX_FLOAT.match(token)
    if m and (m.group(2) or m.group(3)):
        negative = m.group(1) == "-"
        value = Fraction(int(m.group(2) + m.group(3) or "0", 16), 16 ** len(m.group(3)))
        scale = int(m.group(4) or 0)
        is_hex = True
    elif (d := _DECIMAL_FLOAT.match(token)):
        negative = token.startswith("-")
        value = abs(Fraction(token[:d.start(2)] if d.group(2) else token))
        scale = int(d.group(2)[1:]) if d.group(2) else 0
        is_hex = False
    else:
        return None
    sign = int(negative) << (exp_bits + mant_bits)
    if value == 0 or scale < -_EXTREME_SCALE[is_hex]:
        return sign  # zero, or far below every format's smallest subnormal
    if scale > _EXTREME_SCALE[is_hex]:
        return None  # far above every format's range
    value *= Fraction(2 if is_hex else 10) ** scale
    bias = (1 << (exp_bits - 1)) - 1
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** exponent > value:
        exponent -= 1
    subnormal = exponent < 1 - bias
    quantum = (1 - bias if subnormal else exponent) - mant_bits
    n = round(value / Fraction(2) ** quantum)
    if subnormal:
        return sign | n  # n == 2**mant_bits lands exactly on the smallest normal encoding
    if n >> (mant_bits + 1):
        n >>= 1
        exponent += 1
    field = exponent + bias
    max_field = (1 << exp_bits) - 1
    if field > max_field or (field == max_field and not is_hex and not no_infinity):
        return None
    bits = sign | (field << mant_bits) | (n - (1 << mant_bits))
    if no_infinity and not is_hex and field == max_field and n == (1 << (mant_bits + 1)) - 1:
        return None  # E4M3's only NaN pattern
    return bits


# ----------------------------------------------------------------------------------------
# Friendly names (spirv-dis's default naming)

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_BUILTIN_DECORATION = grammar.enumerant("Decoration", "BuiltIn").value

# What spirv-dis calls a BuiltIn-decorated id that has no OpName: GLSL's gl_* spelling for
# the GLSL built-ins, the bare name for OpenCL / subgroup ones; other built-ins stay numbered.
# (Observed from spirv-dis 2026.4; tests/spirv/test_text.py compares every BuiltIn.)
_BUILTIN_NAMES = {
    **{name: "gl_" + name for name in (
        "Position PointSize ClipDistance CullDistance FragCoord FragDepth FrontFacing HelperInvocation "
        "InstanceIndex BaseInstance Layer LocalInvocationIndex PatchVertices PointCoord SampleMask "
        "SamplePosition TessCoord TessLevelInner TessLevelOuter VertexIndex ViewportIndex").split()},
    "VertexId": "gl_VertexID", "InstanceId": "gl_InstanceID", "PrimitiveId": "gl_PrimitiveID",
    "InvocationId": "gl_InvocationID", "SampleId": "gl_SampleID", "NumWorkgroups": "gl_NumWorkGroups",
    "WorkgroupSize": "gl_WorkGroupSize", "WorkgroupId": "gl_WorkGroupID",
    "LocalInvocationId": "gl_LocalInvocationID", "GlobalInvocationId": "gl_GlobalInvocationID",
    **{name: name for name in (
        "WorkDim GlobalSize EnqueuedWorkgroupSize GlobalOffset GlobalLinearId SubgroupSize SubgroupMaxSize "
        "NumSubgroups NumEnqueuedSubgroups SubgroupId SubgroupLocalInvocationId").split()},
    **{f"Subgroup{m}Mask": f"Subgroup{m}MaskKHR" for m in ("Eq", "Ge", "Gt", "Le", "Lt")},
}


def _sanitize(name: str) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", name) if name else "_"


class FriendlyNames:
    """Names ids like spirv-dis does by default: OpName first, BuiltIn decorations as
    gl_*, types by shape (uint, v4float, _ptr_StorageBuffer_float, _arr_float_uint_4),
    constants by type and value (uint_0, float_n1_5), the number for everything else;
    clashes get `_0`, `_1`, ... suffixes."""

    def __init__(self, module: Module):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.scalars: dict[int, ScalarType] = {}
        for inst in module.instructions:
            self.visit(inst)

    def __getitem__(self, id_: int) -> str:
        return self.names.get(id_) or str(id_)

    def save(self, id_: int | None, suggestion: str) -> None:
        if id_ is None or id_ in self.names:
            return
        base = name = _sanitize(suggestion)
        if name in self.used:
            # The first free base_N; N resumes where the last search for this base stopped
            # (names only get taken, never freed), so many clashes stay linear.
            index = self.next_suffix.get(base, 0)
            while (name := f"{base}_{index}") in self.used:
                index += 1
            self.next_suffix[base] = index + 1
        self.used.add(name)
        self.names[id_] = name

    def visit(self, inst: Instruction) -> None:
        op, ops, rid = inst.opcode, inst.operands, inst.result_id
        try:
            if op == Op.Name:
                self.save(ops[0].value, ops[1].value)
            elif op == Op.Decorate and ops[1].value == _BUILTIN_DECORATION:
                builtin = grammar.enumerant_values("BuiltIn").get(ops[2].value)
                if builtin is not None and builtin.name in _BUILTIN_NAMES:
                    self.save(ops[0].value, _BUILTIN_NAMES[builtin.name])
            elif op in (Op.TypeInt, Op.TypeFloat):
                t = scalar_type(inst)
                self.scalars[rid] = t
                if t.is_float:
                    self.save(rid, _FRIENDLY_FLOAT.get((t.width, t.encoding), f"fp{t.width}"))
                else:
                    root = _FRIENDLY_INT.get(t.width)
                    prefix = ("" if root else "i") if t.signed else "u"
                    self.save(rid, prefix + (root or str(t.width)))
            else:
                self.save(rid, self.shape_name(inst) or str(rid))
        except (IndexError, TypeError, AttributeError, ValueError):  # malformed: name it by number
            self.save(rid, str(rid))

    def shape_name(self, inst: Instruction) -> str | None:
        op, ops, name = inst.opcode, inst.operands, self.__getitem__
        if op == Op.TypeVoid:
            return "void"
        if op == Op.TypeBool:
            return "bool"
        if op == Op.TypeVector:
            return f"v{ops[1].value}{name(ops[0].value)}"
        if op == Op.TypeMatrix:
            return f"mat{ops[1].value}{name(ops[0].value)}"
        if op == Op.TypeArray:
            return f"_arr_{name(ops[0].value)}_{name(ops[1].value)}"
        if op == Op.TypeRuntimeArray:
            return f"_runtimearr_{name(ops[0].value)}"
        if op == Op.TypePointer:
            return f"_ptr_{_enum_name('StorageClass', ops[0].value)}_{name(ops[1].value)}"
        if op == Op.TypeUntypedPointerKHR:
            return f"_ptr_{_enum_name('StorageClass', ops[0].value)}"
        if op == Op.TypeStruct:
            return f"_struct_{inst.result_id}"
        if op == Op.TypeOpaque:
            return "Opaque_" + _sanitize(ops[0].value)
        if op == Op.ConstantTrue:
            return "true"
        if op == Op.ConstantFalse:
            return "false"
        if op == Op.Constant:
            t = self.scalars.get(inst.result_type)
            text = format_literal(ops[0].value, t, ops[0].nwords).replace("-", "n")
            return f"{name(inst.result_type)}_{text}"
        return None


def _enum_name(kind: str, value: int) -> str:
    e = grammar.enumerant_values(kind).get(value)
    return e.name if e else f"{kind}{value}"


# ----------------------------------------------------------------------------------------
# Disassembler

_GENERATOR_NAMES: dict[int, str] = getattr(grammar, "GENERATORS", {})


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mask_text(kind: str, value: int) -> str:
    values = grammar.enumerant_values(kind)
    if value == 0:
        zero = values.get(0)
        return zero.name if zero else "0"
    names, rest = [], value
    for bit in range(value.bit_length()):
        flag = 1 << bit
        if value & flag and flag in values:
            names.append(values[flag].name)
            rest &= ~flag
    if rest:
        names.append(f"{rest:#x}")
    return "|".join(names)


def disassemble(words_or_module, raw_id: bool = False, header: bool = True, indent: bool = True) -> str:
    """The module in spirv-dis syntax (friendly names, or `%N` ids with raw_id=True)."""
    module = words_or_module if isinstance(words_or_module, Module) else decode(words_or_module)
    printer = _Printer(None if raw_id else FriendlyNames(module), indent)
    lines: list[str] = []
    if header:
        vendor, tool_version = module.generator >> 16, module.generator & 0xFFFF
        tool = _GENERATOR_NAMES.get(vendor, f"Unknown({vendor})")
        lines += ["; SPIR-V", f"; Version: {module.version[0]}.{module.version[1]}",
                  f"; Generator: {tool}; {tool_version}", f"; Bound: {module.bound}",
                  f"; Schema: {module.schema}"]
    for inst in module.instructions:
        try:
            lines.append(printer.line(inst))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # Only a Module built by hand gets here (decode checks all of this).
            raise SpirvError(f"cannot print instruction {inst.opcode} with operands {inst.operands!r}: "
                             f"{type(exc).__name__}: {exc}", None if inst.offset < 0 else inst.offset) from None
    return "\n".join(lines) + "\n"


class _Printer:
    """Prints instructions one by one, tracking the types that literals and ExtInst names need."""

    def __init__(self, names: FriendlyNames | None, indent: bool):
        self.names = names
        self.indent = indent
        self.scalars: dict[int, ScalarType] = {}
        self.type_of: dict[int, int] = {}
        self.extinst_sets: dict[int, str] = {}

    def id_text(self, id_: int) -> str:
        return f"%{id_}" if self.names is None else f"%{self.names[id_]}"

    def line(self, inst: Instruction) -> str:
        info = grammar.INSTRUCTIONS[inst.opcode]
        parts = [info.name]
        if inst.result_type is not None:
            parts.append(self.id_text(inst.result_type))
        parts += self.operand_texts(inst)
        body = " ".join(parts)
        self.track(inst)
        if inst.result_id is None:
            return f"{' ' * INDENT if self.indent else ''}{body}"
        rid = self.id_text(inst.result_id)
        pad = max(0, INDENT - 3 - len(rid)) if self.indent else 0
        return f"{' ' * pad}{rid} = {body}"

    def operand_texts(self, inst: Instruction) -> list[str]:
        parts = []
        literal_type = self.scalars.get(inst.result_type)
        if inst.opcode == Op.Switch and inst.operands:
            literal_type = self.scalars.get(self.type_of.get(inst.operands[0].value))
        last_id = None
        for o in inst.operands:
            kind, value = o.kind, o.value
            if kind in grammar.ID_KINDS:
                parts.append(self.id_text(value))
                last_id = value
            elif kind == "LiteralString":
                parts.append(_quote(value))
            elif kind == "LiteralContextDependentNumber":
                parts.append(format_literal(value, literal_type, o.nwords))
            elif kind == "LiteralExtInstInteger":
                table = grammar.extinst_set(self.extinst_sets.get(last_id, "")) or {}
                parts.append(table[value].name if value in table else str(value))
            elif kind == "LiteralSpecConstantOpInteger":
                info = grammar.INSTRUCTIONS.get(value)
                parts.append(info.name[2:] if info else str(value))
            elif kind == "LiteralFloat":
                parts.append(format_float(value, ScalarType(True, 32)))
            elif kind == "LiteralInteger":
                parts.append(str(int(value)))
            elif grammar.KINDS[kind].category == "BitEnum":
                parts.append(_mask_text(kind, value))
            else:
                e = grammar.enumerant_values(kind).get(value)
                parts.append(e.name if e else str(int(value)))
        return parts

    def track(self, inst: Instruction) -> None:
        t = scalar_type(inst)
        if t is not None and inst.result_id is not None:
            self.scalars[inst.result_id] = t
        elif inst.opcode == Op.ExtInstImport and inst.operands:
            self.extinst_sets[inst.result_id] = inst.operands[0].value
        if inst.result_type is not None and inst.result_id is not None:
            self.type_of[inst.result_id] = inst.result_type


# ----------------------------------------------------------------------------------------
# Assembler: tokenizer

_TOKEN = re.compile(  # white space, then: comment | string | unclosed quote | = | %id | word
    r"""[ \t\r\n\f\v]*(?:(;[^\n]*)|("(?:[^"\\]|\\.)*")|(")|(=)|(%[^\s;"=]*)|([^\s;"=%]+))""",
    re.DOTALL,
)
_TOKEN_KINDS = (None, "comment", "string", "badstring", "equals", "id", "word")
_OPCODE_WORD = re.compile(r"Op[A-Z]")
_ID_NAME = re.compile(r"[A-Za-z0-9_.\-]+\Z")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


class Token(NamedTuple):
    kind: str  # 'string' | 'equals' | 'id' | 'word'
    text: str
    start: int  # character offset in the source; `Locator` turns it into line and column


class Locator:
    """Line and column (1-based) of a character offset, for error messages."""

    def __init__(self, source: str):
        self.source = source
        self.newlines: list[int] | None = None

    def __call__(self, offset: int) -> tuple[int, int]:
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer("\n", self.source)]
        line = bisect_left(self.newlines, offset)  # newlines before the offset
        line_start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - line_start + 1


def tokenize(text: str) -> list[Token]:
    """Tokens with their offsets; comments and white space dropped."""
    tokens: list[Token] = []
    append = tokens.append
    for m in _TOKEN.finditer(text):
        index = m.lastindex
        if index == 1:
            continue
        start = m.start(index)
        value = m.group(index)
        if index == 3:
            raise AssemblyError("string has no closing quote", *Locator(text)(start))
        if index == 5 and not _ID_NAME.match(value, 1):
            raise AssemblyError(f"bad id name {value!r}: use letters, digits and _ after %", *Locator(text)(start))
        append(Token(_TOKEN_KINDS[index], value, start))
    return tokens


def _starts_instruction(tokens: list[Token], i: int) -> bool:
    t = tokens[i]
    if t.kind == "word":
        return bool(_OPCODE_WORD.match(t.text))
    return t.kind == "id" and i + 1 < len(tokens) and tokens[i + 1].kind == "equals"


# ----------------------------------------------------------------------------------------
# Assembler: instructions


class _Assembler:
    """Turns tokens into instructions, one statement `[%id =] OpName operands...` at a time."""

    def __init__(self, tokens: list[Token], preserve_numeric_ids: bool, locate: Locator):
        self.tokens = tokens
        self.locate = locate
        self.pos = 0
        self.ids: dict[str, int] = {}
        self.defined: set[int] = set()
        self.preserved: set[int] = set()
        if preserve_numeric_ids:
            self.preserved = {int(t.text[1:]) for t in tokens if t.kind == "id" and t.text[1:].isdigit()
                              and 0 < int(t.text[1:]) < 1 << 32}
        self.next_id = 1
        self.bound = 1
        self.scalars: dict[int, ScalarType] = {}
        self.type_of: dict[int, int] = {}
        self.extinst_sets: dict[int, str] = {}

    # -- ids and tokens

    def error(self, message: str, token: Token | None = None):
        token = token or (self.tokens[self.pos] if self.pos < len(self.tokens) else None)
        if token is None:
            last = self.tokens[-1] if self.tokens else Token("", "", 0)
            raise AssemblyError(message + " (at the end of the text)", *self.locate(last.start + len(last.text)))
        raise AssemblyError(message, *self.locate(token.start))

    def id_for(self, token: Token) -> int:
        name = token.text[1:]
        if name.isdigit() and int(name) in self.preserved:
            value = int(name)
        else:
            value = self.ids.get(name)
            if value is None:
                while self.next_id in self.preserved:
                    self.next_id += 1
                value = self.ids[name] = self.next_id
                self.next_id += 1
                if value >= 1 << 32:
                    self.error("more ids than fit in 32 bits", token)
        self.bound = max(self.bound, value + 1)
        return value

    def more_operands(self) -> bool:
        return self.pos < len(self.tokens) and not _starts_instruction(self.tokens, self.pos)

    def take(self, what: str) -> Token:
        if not self.more_operands():
            self.error(f"expected {what}")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    # -- statements

    def instruction(self) -> Instruction:
        tokens = self.tokens
        result_token = None
        if tokens[self.pos].kind == "id":
            result_token = tokens[self.pos]
            self.pos += 2  # the id and '='
            if self.pos >= len(tokens):
                self.error(f"{result_token.text} = needs an instruction", result_token)
        op_token = tokens[self.pos]
        if op_token.kind != "word" or not op_token.text.startswith("Op"):
            self.error(f"expected an instruction name (OpX), found {op_token.text!r}", op_token)
        info = grammar.INSTRUCTIONS_BY_NAME.get(op_token.text)
        if info is None:
            self.error(f"unknown instruction {op_token.text}", op_token)
        self.pos += 1
        inst = Instruction(info.opcode)
        if info.has_result and result_token is None:
            self.error(f"{info.name} has a result: write %name = {info.name} ...", op_token)
        if not info.has_result and result_token is not None:
            self.error(f"{info.name} has no result id; drop {result_token.text} =", result_token)
        if result_token is not None:
            inst.result_id = self.id_for(result_token)
            if inst.result_id in self.defined:
                self.error(f"{result_token.text} is defined twice", result_token)
            self.defined.add(inst.result_id)
        self.operands(inst, info.operands, op_token)
        self.track(inst)
        return inst

    def operands(self, inst: Instruction, operands, op_token: Token) -> None:
        for o in operands:
            if o.kind == "IdResult":
                continue
            if o.kind == "IdResultType":
                inst.result_type = self.id_for(self.expect_id(f"{op_token.text}'s result type"))
                continue
            if o.quantifier == "":
                self.operand(inst, o.kind, o.name or o.kind, op_token)
            elif o.quantifier == "?":
                if self.more_operands():
                    self.operand(inst, o.kind, o.name or o.kind, op_token)
            else:
                while self.more_operands():
                    self.operand(inst, o.kind, o.name or o.kind, op_token)
            if inst.opcode == Op.SpecConstantOp and o.kind == "LiteralSpecConstantOpInteger":
                inner = grammar.INSTRUCTIONS[inst.operands[-1].value]
                rest = [p for p in inner.operands if p.kind not in ("IdResultType", "IdResult")]
                self.operands(inst, rest, op_token)
                return

    def expect_id(self, what: str) -> Token:
        token = self.take(what)
        if token.kind != "id":
            self.error(f"expected an id (%name) for {what}, found {token.text!r}", token)
        return token

    def operand(self, inst: Instruction, kind: str, what: str, op_token: Token) -> None:
        out = inst.operands
        if kind in grammar.ID_KINDS:
            out.append(Operand(kind, self.id_for(self.expect_id(f"{op_token.text} {what}"))))
            return
        if kind in grammar.COMPOSITE_KINDS:
            for part in grammar.COMPOSITE_KINDS[kind]:
                self.operand(inst, part, what, op_token)
            return
        token = self.take(f"{op_token.text} operand {what}")
        if kind == "LiteralString":
            if token.kind != "string":
                self.error(f"expected a quoted string for {what}, found {token.text!r}", token)
            out.append(Operand(kind, _ESCAPE.sub(r"\1", token.text[1:-1])))
            return
        if token.kind != "word":
            self.error(f"expected {what} ({kind}), found {token.text!r}", token)
        text = token.text
        if kind in ("LiteralInteger", "LiteralExtInstInteger", "LiteralSpecConstantOpInteger"):
            value = self.literal_word(kind, text, inst, token)
            out.append(Operand(kind, value))
        elif kind == "LiteralFloat":
            bits = encode_float(text, 8, 23)
            if bits is None:
                self.error(f"{text!r} is not a 32-bit float", token)
            out.append(Operand(kind, bits))
        elif kind == "LiteralContextDependentNumber":
            out.append(self.context_literal(inst, text, token))
        else:
            self.enumerant(inst, kind, text, token, op_token)

    def literal_word(self, kind: str, text: str, inst: Instruction, token: Token) -> int:
        if kind == "LiteralExtInstInteger":
            set_name = self.extinst_sets.get(inst.operands[-1].value if inst.operands else -1, "")
            found = (grammar.extinst_set_by_name(set_name) or {}).get(text)
            if found is not None:
                return found.opcode
        if kind == "LiteralSpecConstantOpInteger":
            info = grammar.INSTRUCTIONS_BY_NAME.get("Op" + text)
            if info is not None:
                return info.opcode
            value = parse_integer(text)
            if value is None or value not in grammar.INSTRUCTIONS:
                self.error(f"OpSpecConstantOp: unknown opcode {text!r}", token)
            return value
        value = parse_integer(text)
        if value is None:
            if kind == "LiteralExtInstInteger":
                self.error(f"unknown extended instruction {text!r} (give its number for this set)", token)
            self.error(f"expected an integer, found {text!r}", token)
        if not -(1 << 31) <= value < 1 << 32:
            self.error(f"{text} does not fit in 32 bits", token)
        return value & 0xFFFFFFFF

    def context_literal(self, inst: Instruction, text: str, token: Token) -> Operand:
        kind = "LiteralContextDependentNumber"
        if inst.opcode == Op.Switch:
            t = self.scalars.get(self.type_of.get(inst.operands[0].value)) if inst.operands else None
        else:
            t = self.scalars.get(inst.result_type)
        if t is None:  # unknown or non-scalar type: one word, as the decoder assumes
            t = ScalarType(False, 32, False)
        nwords = 2 if t.width > 32 else 1
        if not 0 < t.width <= 64:
            self.error(f"no literal syntax for {t.width}-bit {'floats' if t.is_float else 'integers'}", token)
        if t.is_float:
            fmt = t.float_format
            if fmt is None:
                self.error(f"no literal syntax for {t.width}-bit floats with encoding {t.encoding}", token)
            bits = encode_float(text, *fmt, no_infinity=t.encoding in _NO_INFINITY)
            if bits is None:
                self.error(f"{text!r} is not a {t.width}-bit float literal (or is out of range)", token)
            return Operand(kind, bits, nwords)
        value = parse_integer(text)
        if value is None:
            self.error(f"expected a {t.width}-bit integer, found {text!r}", token)
        low = -(1 << (t.width - 1)) if t.signed else 0
        if not low <= value < 1 << t.width or (not t.signed and value < 0):
            self.error(f"{text} is out of range for a {t.width}-bit "
                       f"{'signed' if t.signed else 'unsigned'} integer", token)
        if value < 0:
            value += 1 << t.width  # the two's complement bit pattern in `width` bits
        if t.signed and t.width < 32 * nwords and value >> (t.width - 1):
            value |= ((1 << (32 * nwords)) - 1) ^ ((1 << t.width) - 1)  # sign-extend to whole words
        return Operand(kind, value, nwords)

    def enumerant(self, inst: Instruction, kind: str, text: str, token: Token, op_token: Token) -> None:
        info = grammar.KINDS.get(kind)
        if info is None or not info.is_enum:
            self.error(f"operand kind {kind} has no text form", token)
        by_name = grammar.enumerant_names(kind)
        by_value = grammar.enumerant_values(kind)
        params = []
        if info.category == "BitEnum":
            value = 0
            for part in text.split("|"):
                e = by_name.get(part)
                bits = e.value if e is not None else parse_integer(part)
                if bits is None or bits < 0 or bits >= 1 << 32:
                    self.error(f"{part!r} is not a {kind} flag", token)
                value |= bits
            for bit in range(value.bit_length()):
                e = by_value.get(1 << bit)
                if value >> bit & 1 and e is not None:
                    params.extend(e.parameters)
        else:
            e = by_name.get(text)
            if e is None:
                number = parse_integer(text)
                e = by_value.get(number) if number is not None else None
                if e is None:
                    self.error(f"{text!r} is not a {kind} enumerant", token)
            value = e.value
            params = e.parameters
        inst.operands.append(Operand(kind, value))
        for p in params:
            self.operand(inst, p.kind, f"{p.name or p.kind} of {text}", op_token)

    def track(self, inst: Instruction) -> None:
        t = scalar_type(inst)
        if t is not None:
            self.scalars[inst.result_id] = t
        elif inst.opcode == Op.ExtInstImport:
            self.extinst_sets[inst.result_id] = inst.operands[0].value
        if inst.result_type is not None and inst.result_id is not None:
            self.type_of[inst.result_id] = inst.result_type


def assemble(text: str, preserve_numeric_ids: bool = False, version: tuple[int, int] = (1, 6),
             generator: int = SPIRV_AS_GENERATOR, bound: int | None = None) -> array:
    """Words of the module written in spirv-as syntax.

    The header is spirv-as's: version 1.6 unless given, the SPIR-V Tools assembler as
    generator, and a bound one past the largest id unless `bound` is given (it must be
    larger than every id)."""
    if not isinstance(text, str):
        raise SpirvError(f"assembly text must be str, not {type(text).__name__}")
    tokens = tokenize(text)
    locate = Locator(text)
    asm = _Assembler(tokens, preserve_numeric_ids, locate)
    body = array("I")
    while asm.pos < len(tokens):
        start = tokens[asm.pos]
        inst = asm.instruction()
        try:
            body.extend(encode_instruction(inst))
        except SpirvError as exc:
            raise AssemblyError(exc.message, *locate(start.start)) from None
    if bound is None:
        bound = asm.bound
    elif bound < asm.bound:
        raise SpirvError(f"bound {bound} is not above the largest id {asm.bound - 1}")
    major, minor = version
    words = array("I", [MAGIC, (major << 16) | (minor << 8), generator & 0xFFFFFFFF, bound, 0])
    assert len(words) == HEADER_WORDS
    words.extend(body)
    return words
