"""SPIR-V binary form: decode words into instructions and encode them back, word for word.

An `Instruction` keeps its operands as a flat list of `Operand(kind, value, nwords)` in
binary order: an enumerant's parameters follow it, a bit mask's parameters follow in
ascending bit order, pair kinds are split into their two halves. Literal numbers whose
width depends on a type (OpConstant, OpSwitch cases) carry that width in `nwords`.
Malformed input raises `SpirvError` naming the word offset; decoding is linear and
never loops on its input.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import grammar

MAGIC = grammar.MAGIC
HEADER_WORDS = 5


class SpirvError(HydroplaneError):
    """Malformed SPIR-V: says what is wrong and at which word offset."""

    def __init__(self, message: str, offset: int | None = None):
        self.message = message
        self.offset = offset
        super().__init__(message if offset is None else f"word {offset}: {message}")


class Operand(NamedTuple):
    kind: str  # grammar operand kind ('IdRef', 'LiteralString', 'Decoration', ...)
    value: int | str  # id, literal integer (unsigned), enumerant value / mask, or string
    nwords: int = 1  # words a literal number occupies (2 for 64-bit constants)

    @property
    def number(self) -> int:
        """The value of an id, literal number or enumerant operand; a string here is malformed SPIR-V."""
        if isinstance(self.value, str):
            raise SpirvError(f"a {self.kind} operand holds the string {self.value!r} where a number belongs")
        return self.value

    @property
    def text(self) -> str:
        """The value of a literal-string operand; a number here is malformed SPIR-V."""
        if not isinstance(self.value, str):
            raise SpirvError(f"a {self.kind} operand holds the number {self.value} where a string belongs")
        return self.value


@dataclass(slots=True)
class Instruction:
    """One decoded (or built) instruction: opcode, result type and id, operands, word offset."""

    opcode: int
    result_type: int | None = None
    result_id: int | None = None
    operands: list[Operand] = field(default_factory=list)
    offset: int = -1  # word offset in the module it was decoded from, -1 when built

    @property
    def info(self) -> grammar.InstructionInfo:
        return grammar.instruction(self.opcode)

    @property
    def name(self) -> str:
        return grammar.instruction(self.opcode).name

    @property
    def checked_result_id(self) -> int:
        """The result id of an instruction that must have one (SpirvError when it has none)."""
        if self.result_id is None:
            raise SpirvError(f"{self.name} has no result id", self.offset)
        return self.result_id

    @property
    def checked_result_type(self) -> int:
        """The result type id of an instruction that must have one (SpirvError when it has none)."""
        if self.result_type is None:
            raise SpirvError(f"{self.name} has no result type", self.offset)
        return self.result_type

    def ids(self) -> list[int]:
        """The ids this instruction refers to (not its result), in operand order."""
        return [o.value for o in self.operands if o.kind in grammar.ID_KINDS]


@dataclass(slots=True)
class Module:
    """A SPIR-V module as data: the header's fields and its instructions in order."""

    version: tuple[int, int] = (1, 6)
    generator: int = 0
    bound: int = 1
    schema: int = 0
    instructions: list[Instruction] = field(default_factory=list)

    def words(self) -> array:
        return encode(self)


def as_words(data) -> array:
    """Words from bytes (either endianness, by the magic number), an array or a list."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) % 4:
            raise SpirvError(f"binary is {len(raw)} bytes, not a whole number of words", len(raw) // 4)
        words = array("I")
        words.frombytes(raw)
        if words and words[0] != MAGIC:
            swapped = array("I", words)
            swapped.byteswap()
            if swapped[0] == MAGIC:
                return swapped
        return words
    if isinstance(data, array) and data.typecode == "I":
        return data
    if hasattr(data, "dtype") and hasattr(data, "tobytes"):  # a NumPy array: no per-word loop
        if data.dtype.kind not in "ui" or data.dtype.itemsize != 4:
            raise SpirvError(f"expected 32-bit words, got an array of {data.dtype}")
        words = array("I")
        words.frombytes(data.astype("=u4", copy=False).tobytes())
        return words
    try:
        return array("I", data)
    except OverflowError:
        raise SpirvError("a word does not fit in 32 bits (0 .. 2**32-1)") from None
    except TypeError:
        try:
            return array("I", [int(w) for w in data])
        except OverflowError:
            raise SpirvError("a word does not fit in 32 bits (0 .. 2**32-1)") from None
        except (TypeError, ValueError):
            raise SpirvError(f"cannot read SPIR-V words from {type(data).__name__}") from None


class _Decoder:
    """Decodes one instruction stream; tracks the types that literal widths depend on."""

    def __init__(self, words: array):
        self.words = words
        self.scalar_width: dict[int, int] = {}  # type id -> bit width of OpTypeInt/OpTypeFloat
        self.type_of: dict[int, int] = {}  # value id -> its type id
        self.extinst_sets: dict[int, str] = {}

    def literal_words(self, type_id: int | None) -> int:
        if type_id is None or type_id not in self.scalar_width:
            # Unknown or non-scalar type: spirv-val rejects it; decode one word.
            return 1
        return 2 if self.scalar_width[type_id] > 32 else 1

    def string(self, pos: int, end: int, offset: int) -> tuple[str, int]:
        words = self.words
        raw = bytearray()
        while pos < end:
            w = words[pos]
            pos += 1
            chunk = w.to_bytes(4, "little")
            nul = chunk.find(0)
            if nul >= 0:
                raw += chunk[:nul]
                try:
                    return raw.decode("utf-8"), pos
                except UnicodeDecodeError:
                    raise SpirvError("literal string is not valid UTF-8", offset) from None
            raw += chunk
        raise SpirvError("literal string has no terminating NUL within its instruction", offset)

    def operand(self, kind: str, pos: int, end: int, out: list, inst: Instruction, offset: int) -> int:
        """Decode one operand of `kind` at pos (< end); append to out; return the new pos."""
        words = self.words
        if kind in grammar.ONE_WORD_KINDS:
            out.append(Operand(kind, words[pos]))
            return pos + 1
        if kind == "LiteralString":
            text, pos = self.string(pos, end, offset)
            out.append(Operand(kind, text))
            return pos
        if kind == "LiteralContextDependentNumber":
            if inst.opcode == grammar.Op.Switch:
                type_id = self.type_of.get(inst.operands[0].value)
            else:
                type_id = inst.result_type
            n = self.literal_words(type_id)
            if pos + n > end:
                raise SpirvError(f"{inst.name}: literal needs {n} words, instruction ends first", offset)
            value = words[pos] if n == 1 else words[pos] | (words[pos + 1] << 32)
            out.append(Operand(kind, value, n))
            return pos + n
        pair = grammar.COMPOSITE_KINDS.get(kind)
        if pair is not None:
            for part in pair:
                if pos >= end:
                    raise SpirvError(f"{inst.name}: {kind} is cut short", offset)
                pos = self.operand(part, pos, end, out, inst, offset)
            return pos
        info = grammar.KINDS.get(kind)
        if info is None or not info.is_enum:
            raise SpirvError(f"{inst.name}: operand kind {kind} cannot be decoded", offset)
        value = words[pos]
        out.append(Operand(kind, value))
        pos += 1
        values = grammar.enumerant_values(kind)
        if info.category == "ValueEnum":
            e = values.get(value)
            if e is None:
                raise SpirvError(f"{inst.name}: {value} is not a {kind} enumerant", offset)
            params = e.parameters
        else:
            params = []
            rest = value
            for e in sorted((e for v, e in values.items() if v and value & v == v), key=lambda e: e.value):
                params.extend(e.parameters)
                rest &= ~e.value
            if rest:
                raise SpirvError(f"{inst.name}: {kind} mask {value:#x} has unknown bits {rest:#x}", offset)
        for p in params:
            if pos >= end:
                raise SpirvError(f"{inst.name}: {kind} parameter {p.kind} missing", offset)
            pos = self.operand(p.kind, pos, end, out, inst, offset)
        return pos

    def instruction(self, offset: int) -> Instruction:
        words = self.words
        head = words[offset]
        count, opcode = head >> 16, head & 0xFFFF
        if count == 0:
            raise SpirvError(f"instruction with opcode {opcode} has word count 0", offset)
        end = offset + count
        if end > len(words):
            raise SpirvError(f"instruction with opcode {opcode} runs past the end ({count} words, "
                             f"{len(words) - offset} left)", offset)
        info = grammar.INSTRUCTIONS.get(opcode)
        if info is None:
            raise SpirvError(f"unknown opcode {opcode}", offset)
        inst = Instruction(opcode, offset=offset)
        pos = offset + 1
        out = inst.operands
        for o in info.operands:
            if o.kind == "IdResultType":
                if pos >= end:
                    raise SpirvError(f"{info.name}: missing result type", offset)
                inst.result_type = words[pos]
                pos += 1
                continue
            if o.kind == "IdResult":
                if pos >= end:
                    raise SpirvError(f"{info.name}: missing result id", offset)
                inst.result_id = words[pos]
                pos += 1
                continue
            pos = self.quantified(o, pos, end, inst, offset, info.name)
        if opcode == grammar.Op.SpecConstantOp and out:
            pos = self.spec_constant_op_operands(out[0].value, pos, end, inst, offset)
        if pos != end:
            raise SpirvError(f"{info.name}: word count {count} leaves {end - pos} words undecoded", offset)
        self.track(inst)
        return inst

    def quantified(self, o, pos: int, end: int, inst: Instruction, offset: int, where: str) -> int:
        """Decode operand `o` by its quantifier: exactly one, optional ('?'), or the rest ('*')."""
        if o.quantifier == "":
            if pos >= end:
                raise SpirvError(f"{where}: missing operand {o.name or o.kind}", offset)
            return self.operand(o.kind, pos, end, inst.operands, inst, offset)
        if o.quantifier == "?":
            return self.operand(o.kind, pos, end, inst.operands, inst, offset) if pos < end else pos
        while pos < end:
            pos = self.operand(o.kind, pos, end, inst.operands, inst, offset)
        return pos

    def spec_constant_op_operands(self, inner: int, pos: int, end: int, inst: Instruction, offset: int) -> int:
        """OpSpecConstantOp's operands are those of the opcode it names, less result type and id."""
        info = grammar.INSTRUCTIONS.get(inner)
        if info is None:
            raise SpirvError(f"OpSpecConstantOp names unknown opcode {inner}", offset)
        for o in info.operands:
            if o.kind not in ("IdResultType", "IdResult"):
                pos = self.quantified(o, pos, end, inst, offset, f"OpSpecConstantOp {info.name}")
        return pos

    def track(self, inst: Instruction) -> None:
        op = inst.opcode
        if op in (grammar.Op.TypeInt, grammar.Op.TypeFloat) and inst.result_id is not None:
            self.scalar_width[inst.result_id] = inst.operands[0].value
        elif op == grammar.Op.ExtInstImport:
            self.extinst_sets[inst.result_id] = inst.operands[0].value
        if inst.result_type is not None and inst.result_id is not None:
            self.type_of[inst.result_id] = inst.result_type


def decode(data) -> Module:
    """Decode a SPIR-V module (bytes, array('I'), NumPy uint32 array or list of ints)."""
    words = as_words(data)
    if len(words) < HEADER_WORDS:
        raise SpirvError(f"module has {len(words)} words, fewer than the {HEADER_WORDS}-word header",
                         len(words))
    if words[0] != MAGIC:
        raise SpirvError(f"bad magic number {words[0]:#010x} (expected {MAGIC:#010x})", 0)
    version = words[1]
    if version & 0xFF0000FF:
        raise SpirvError(f"bad version word {version:#010x}", 1)
    module = Module(((version >> 16) & 0xFF, (version >> 8) & 0xFF), words[2], words[3], words[4])
    if words[4] != 0:
        raise SpirvError(f"schema word is {words[4]}, must be 0", 4)
    decoder = _Decoder(words)
    offset = HEADER_WORDS
    n = len(words)
    append = module.instructions.append
    while offset < n:
        inst = decoder.instruction(offset)
        append(inst)
        offset += words[offset] >> 16
    return module


def _encode_operand(op: Operand, out: list[int]) -> None:
    value = op.value
    if isinstance(value, str):
        raw = value.encode("utf-8") + b"\0"
        raw += b"\0" * (-len(raw) % 4)
        out.extend(int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4))
    elif op.nwords == 1:
        out.append(value & 0xFFFFFFFF)
    else:
        for i in range(op.nwords):
            out.append((value >> (32 * i)) & 0xFFFFFFFF)


def encode_instruction(inst: Instruction) -> list[int]:
    out = [0]
    if inst.result_type is not None:
        out.append(inst.result_type)
    if inst.result_id is not None:
        out.append(inst.result_id)
    for op in inst.operands:
        if op.nwords == 1 and not isinstance(op.value, str):
            out.append(op.value & 0xFFFFFFFF)
        else:
            _encode_operand(op, out)
    if len(out) > 0xFFFF:
        raise SpirvError(f"{inst.name} needs {len(out)} words, more than 65535")
    out[0] = (len(out) << 16) | inst.opcode
    return out


def encode(module: Module) -> array:
    """The module's words: header then every instruction."""
    major, minor = module.version
    words = array("I", [MAGIC, (major << 16) | (minor << 8), module.generator, module.bound, module.schema])
    for inst in module.instructions:
        words.extend(encode_instruction(inst))
    return words


def to_bytes(words: Iterable[int]) -> bytes:
    """Little-endian bytes of a word sequence (the file form of a module)."""
    arr = words if isinstance(words, array) else array("I", words)
    if sys.byteorder != "little":
        arr = array("I", arr)
        arr.byteswap()
    return arr.tobytes()
