"""The assembler: SPIR-V words from spirv-as syntax.

`assemble(text, preserve_numeric_ids=False)` numbers ids in order of first appearance like
spirv-as, or, with preserve_numeric_ids, `%N` keeps N and other names fill the gaps. With raw
ids and preserve_numeric_ids, binary -> text -> binary keeps every word (the header's generator
and bound are arguments of `assemble`). Bad text raises `AssemblyError` naming the line and
column.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from typing import NamedTuple

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import HEADER_WORDS, MAGIC, Instruction, Operand, SpirvError, encode_instruction
from hydroplane.spirv.text_literals import NO_INFINITY, encode_float, float_format, parse_integer, scalar_type
from hydroplane.spirv.types import U32, Scalar

Op = grammar.Op
SPIRV_AS_GENERATOR = 7 << 16  # "Khronos SPIR-V Tools Assembler", version 0: what spirv-as writes


class AssemblyError(SpirvError):
    """Bad SPIR-V assembly text: says what is wrong and at which line and column (1-based)."""

    def __init__(self, message: str, line: int, column: int):
        self.line = line
        self.column = column
        super().__init__(f"line {line}, column {column}: {message}")


# -- tokenizer

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


# -- instructions

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
        self.scalars: dict[int, Scalar] = {}
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
        if value >= 0xFFFFFFFF:  # the header's bound, one past the largest id, must fit in 32 bits too
            self.error(f"id %{value} leaves no room for the header's bound: ids must be below {0xFFFFFFFF}", token)
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
            t = U32
        nwords = 2 if t.width > 32 else 1
        if not 0 < t.width <= 64:
            self.error(f"no literal syntax for {t.width}-bit {'floats' if t.kind == 'float' else 'integers'}", token)
        if t.kind == "float":
            fmt = float_format(t)
            if fmt is None:
                encoding = t.encoding.name if t.encoding else None
                self.error(f"no literal syntax for {t.width}-bit floats with encoding {encoding}", token)
            bits = encode_float(text, *fmt, no_infinity=t.encoding in NO_INFINITY)
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
    elif bound > 0xFFFFFFFF:
        raise SpirvError(f"bound {bound} does not fit in the header's 32-bit word")
    major, minor = version
    words = array("I", [MAGIC, (major << 16) | (minor << 8), generator & 0xFFFFFFFF, bound, 0])
    assert len(words) == HEADER_WORDS
    words.extend(body)
    return words
