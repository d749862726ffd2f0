"""The one type model of hydroplane: every SPIR-V type as an immutable value, with its memory layout.

Every layer speaks these classes: the builder declares them (`ModuleBuilder.declare(t)`),
`read_types(module)` reads them back from a decoded module, reflection, the reference
executor, lowering and launch use them; nothing else re-derives a type, a layout or an enum.

    Scalar(kind, width, signed, encoding)     bool, s8..u64, f16, bf16, f32, f64, e4m3, e5m2
    Vector(component, count)                  OpTypeVector
    Matrix(column, columns)                   OpTypeMatrix (column is a Vector)
    Array(element, length, stride)            OpTypeArray; length None is OpTypeRuntimeArray
    Struct(members, block)                    members are Member(type, offset, matrix_stride, row_major, name)
    Pointer(storage, pointee, stride)         OpTypePointer (and OpTypeForwardPointer targets, as Forward)
    Function(result, params)                  OpTypeFunction
    CoopMatrix(family, component, scope, rows, cols, use)   OpTypeCooperativeMatrixKHR / NV
    Void(), Opaque(opcode, operands)          everything else a module may declare (images, tensor layouts ...)

Layouts: `size`, `alignment`, `array_stride` and `member_offsets` under "std140", "std430" or
"scalar" rules, honouring explicit decorations where a type carries them (ArrayStride, Offset,
MatrixStride, RowMajor); `laid_out(t, rule)` returns the type with every stride and offset filled in.
Enumerant values come from the generated `hydroplane.spirv.enums`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import ml_dtypes
import numpy as np

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction, Module, SpirvError
from hydroplane.spirv.enums import CooperativeMatrixUse, Decoration, FPEncoding, Scope, StorageClass

Op = grammar.Op
LayoutRule = Literal["std140", "std430", "scalar"]
LAYOUT_RULES: tuple[LayoutRule, ...] = ("std140", "std430", "scalar")


class TypeModelError(SpirvError):
    """A type that cannot be built, read or laid out as asked (the message says which and why)."""


class Type:
    """Base of every type. Instances are immutable and compare by value."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Void(Type):
    """The void type (OpTypeVoid)."""

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class Scalar(Type):
    """A scalar: kind 'int' (signed or not), 'float' (IEEE, or an FPEncoding such as BFloat16KHR) or 'bool'."""

    kind: Literal["int", "float", "bool"]
    width: int = 32
    signed: bool = False
    encoding: FPEncoding | None = None

    @property
    def name(self) -> str:
        """The short name: 'bool', 's8' .. 'u64', 'f16', 'bf16', 'f32', 'f64', 'e4m3', 'e5m2'."""
        return _SCALAR_NAMES[self]

    @property
    def nbytes(self) -> int:
        """Bytes of one value in memory (a bool has no memory size; 4 is what it takes in a constant)."""
        return 4 if self.kind == "bool" else self.width // 8

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of its values (ml_dtypes for bf16 and fp8)."""
        return _DTYPES[self]

    def __str__(self) -> str:
        return self.name


def _scalar_table() -> dict[str, Scalar]:
    table: dict[str, Scalar] = {"bool": Scalar("bool", 32)}
    for width in (8, 16, 32, 64):
        table[f"s{width}"] = Scalar("int", width, True)
        table[f"u{width}"] = Scalar("int", width, False)
    table.update(f16=Scalar("float", 16), bf16=Scalar("float", 16, encoding=FPEncoding.BFloat16KHR),
                 f32=Scalar("float", 32), f64=Scalar("float", 64),
                 e4m3=Scalar("float", 8, encoding=FPEncoding.Float8E4M3EXT),
                 e5m2=Scalar("float", 8, encoding=FPEncoding.Float8E5M2EXT))
    return table


SCALARS: dict[str, Scalar] = _scalar_table()
"""Every scalar type by its short name."""
_SCALAR_NAMES = {t: n for n, t in SCALARS.items()}
_DTYPES: dict[Scalar, np.dtype] = {
    **{SCALARS[f"{k}{w}"]: np.dtype(f"{'i' if k == 's' else 'u'}{w // 8}") for k in "su" for w in (8, 16, 32, 64)},
    SCALARS["bool"]: np.dtype(np.bool_), SCALARS["f16"]: np.dtype(np.float16),
    SCALARS["f32"]: np.dtype(np.float32), SCALARS["f64"]: np.dtype(np.float64),
    SCALARS["bf16"]: np.dtype(ml_dtypes.bfloat16), SCALARS["e4m3"]: np.dtype(ml_dtypes.float8_e4m3fn),
    SCALARS["e5m2"]: np.dtype(ml_dtypes.float8_e5m2),
}
_BY_DTYPE = {d: s for s, d in _DTYPES.items()}

BOOL, S8, U8, S16, U16, S32, U32, S64, U64 = (SCALARS[n] for n in ("bool", "s8", "u8", "s16", "u16", "s32", "u32",
                                                                    "s64", "u64"))
F16, BF16, F32, F64, E4M3, E5M2 = (SCALARS[n] for n in ("f16", "bf16", "f32", "f64", "e4m3", "e5m2"))


def scalar(name: str) -> Scalar:
    """The scalar type of a short name ('f16', 's8', ...); the error names the known ones."""
    try:
        return SCALARS[name]
    except KeyError:
        raise TypeModelError(f"unknown scalar type {name!r}; known: {', '.join(SCALARS)}") from None


def scalar_of_dtype(dtype) -> Scalar:
    """The scalar type whose values have this NumPy dtype."""
    found = _BY_DTYPE.get(np.dtype(dtype))
    if found is None:
        raise TypeModelError(f"no SPIR-V scalar type has NumPy dtype {np.dtype(dtype)}")
    return found


@dataclass(frozen=True, slots=True)
class Vector(Type):
    """A vector of `count` scalars (OpTypeVector)."""

    component: Scalar
    count: int

    def __str__(self) -> str:
        return f"vec{self.count}<{self.component}>"


@dataclass(frozen=True, slots=True)
class Matrix(Type):
    """OpTypeMatrix: `columns` column vectors of type `column`."""

    column: Vector
    columns: int

    @property
    def rows(self) -> int:
        return self.column.count

    def __str__(self) -> str:
        return f"mat{self.columns}x{self.rows}<{self.column.component}>"


@dataclass(frozen=True, slots=True)
class Array(Type):
    """OpTypeArray (length an int) or OpTypeRuntimeArray (length None); stride is ArrayStride when decorated."""

    element: Type
    length: int | None
    stride: int | None = None

    def __str__(self) -> str:
        return f"{self.element}[{'' if self.length is None else self.length}]"


@dataclass(frozen=True, slots=True)
class Member:
    """A struct member: its type and its layout decorations (None where undecorated)."""

    type: Type
    offset: int | None = None
    matrix_stride: int | None = None
    row_major: bool = False
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Struct(Type):
    """A structure of members (OpTypeStruct); `block` marks an interface block, `name` its debug name."""

    members: tuple[Member, ...]
    block: bool = False
    name: str | None = None

    @property
    def member_types(self) -> tuple[Type, ...]:
        return tuple(m.type for m in self.members)

    def __str__(self) -> str:
        return (self.name or "struct") + "{" + ", ".join(map(str, self.member_types)) + "}"


@dataclass(frozen=True, slots=True)
class Forward(Type):
    """A reference to a type by id, where a pointer leads back into a type being read (recursive structs)."""

    type_id: int

    def __str__(self) -> str:
        return f"%{self.type_id}"


@dataclass(frozen=True, slots=True)
class Pointer(Type):
    """A pointer into a storage class (OpTypePointer), with the ArrayStride it carries if any."""

    storage: StorageClass
    pointee: Type
    stride: int | None = None  # ArrayStride on the pointer type (for OpPtrAccessChain)

    def __str__(self) -> str:
        return f"ptr<{self.storage.name}, {self.pointee}>"


@dataclass(frozen=True, slots=True)
class Function(Type):
    """A function type (OpTypeFunction): result and parameter types."""

    result: Type
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        return f"fn({', '.join(map(str, self.params))}) -> {self.result}"


CoopFamily = Literal["KHR", "NV"]


@dataclass(frozen=True, slots=True)
class CoopMatrix(Type):
    """A cooperative matrix: OpTypeCooperativeMatrixKHR (family 'KHR', with a Use) or the legacy
    OpTypeCooperativeMatrixNV (family 'NV', use None). NV2 and EXT maintenance1 use the KHR type."""

    component: Scalar
    rows: int
    cols: int
    use: CooperativeMatrixUse | None = CooperativeMatrixUse.MatrixAccumulatorKHR
    scope: Scope = Scope.Subgroup
    family: CoopFamily = "KHR"

    def __post_init__(self):
        if self.family not in ("KHR", "NV"):
            raise TypeModelError(f"cooperative-matrix family must be 'KHR' or 'NV', not {self.family!r}")
        if (self.use is None) != (self.family == "NV"):
            needs = "has no" if self.family == "NV" else "needs a"
            raise TypeModelError(f"a {self.family} cooperative matrix {needs} Use")
        if self.rows <= 0 or self.cols <= 0:
            raise TypeModelError(f"a cooperative matrix needs positive dimensions, not {self.rows}x{self.cols}")
        object.__setattr__(self, "scope", Scope(self.scope))
        if self.use is not None:
            object.__setattr__(self, "use", CooperativeMatrixUse(self.use))

    @property
    def use_name(self) -> str | None:
        """'A', 'B' or 'Accumulator' (None for the legacy NV family)."""
        return None if self.use is None else use_name(self.use)

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    def __str__(self) -> str:
        use = "" if self.use is None else f", {self.use_name}"
        nv = ", NV" if self.family == "NV" else ""
        return f"coopmat<{self.component}, {self.scope.name}, {self.rows}x{self.cols}{use}{nv}>"


def use_name(use: CooperativeMatrixUse) -> str:
    """MatrixAKHR -> 'A', MatrixBKHR -> 'B', MatrixAccumulatorKHR -> 'Accumulator'."""
    return CooperativeMatrixUse(use).name.removeprefix("Matrix").removesuffix("KHR")


def coop_use(name: str | int | CooperativeMatrixUse) -> CooperativeMatrixUse:
    """A Use from 'A' / 'B' / 'Accumulator', a grammar name or a value."""
    if isinstance(name, str):
        for use in CooperativeMatrixUse:
            if name in (use.name, use_name(use)):
                return use
        raise TypeModelError(f"unknown cooperative-matrix use {name!r}; known: A, B, Accumulator")
    return CooperativeMatrixUse(name)


@dataclass(frozen=True, slots=True)
class Opaque(Type):
    """A declared type the model carries by its instruction (images, samplers, NV2 tensor layouts ...)."""

    opcode: int
    operands: tuple = ()

    def __str__(self) -> str:
        return f"{grammar.instruction(self.opcode).name}{self.operands}"


def component_of(t: Type) -> Type:
    """The scalar at the bottom of a vector, matrix, array or cooperative matrix (t itself otherwise)."""
    while True:
        if isinstance(t, Vector | CoopMatrix):
            return t.component
        if isinstance(t, Matrix):
            t = t.column
        elif isinstance(t, Array):
            t = t.element
        else:
            return t


# ------------------------------------------------------------------------------------------------
# Layout: std140, std430 and scalar block layout (Vulkan spec, "Offset and Stride Assignment").


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _check_rule(rule: str) -> None:
    if rule not in LAYOUT_RULES:
        raise TypeModelError(f"unknown layout rule {rule!r}; known: {', '.join(LAYOUT_RULES)}")


def alignment(t: Type, rule: LayoutRule = "std430", *, row_major: bool = False) -> int:
    """Base alignment of `t` under a layout rule (a matrix's depends on its majorness); std140's is the
    extended alignment (arrays, structs and matrices rounded up to 16), scalar's the largest scalar's."""
    _check_rule(rule)
    if isinstance(t, Scalar):
        if t.kind == "bool":
            raise TypeModelError("a bool has no layout in memory (use u32)")
        return t.nbytes
    if isinstance(t, Pointer):
        return 8
    if isinstance(t, Struct):
        inner = max((alignment(m.type, rule, row_major=m.row_major) for m in t.members), default=1)
    elif isinstance(t, Array):
        inner = alignment(t.element, rule, row_major=row_major)
    elif rule == "scalar" and isinstance(t, Vector | Matrix):
        return alignment(component_of(t), rule)
    elif isinstance(t, Vector):
        return t.component.nbytes * (2 if t.count == 2 else 4)
    elif isinstance(t, Matrix):
        inner = alignment(Vector(t.column.component, t.columns) if row_major else t.column, rule)
    else:
        raise TypeModelError(f"{t} has no layout in memory")
    return _round_up(inner, 16) if rule == "std140" else inner


def matrix_stride(t: Matrix, rule: LayoutRule = "std430", *, row_major: bool = False) -> int:
    """Bytes between the columns (or, row-major, the rows) of a matrix under a layout rule."""
    vector = Vector(t.column.component, t.columns) if row_major else t.column
    return _round_up(size(vector, rule), alignment(t, rule, row_major=row_major))


def size(t: Type, rule: LayoutRule = "std430", *, matrix_stride_: int | None = None,
         row_major: bool = False) -> int:
    """Bytes `t` occupies: explicit decorations where it carries them, the rule elsewhere.

    A struct ends where its last member ends (the padding a rule puts after a struct belongs to
    whatever follows it: the next member's offset, an array's stride); an array is `length` strides,
    but under scalar layout its last element is not padded (glslang's rule). A runtime array counts 0.
    `matrix_stride_` and `row_major` are a struct member's decorations, which apply to the matrices
    inside it."""
    _check_rule(rule)
    if isinstance(t, Scalar):
        return alignment(t, rule)
    if isinstance(t, Vector):
        return t.component.nbytes * t.count
    if isinstance(t, Pointer):
        return 8
    if isinstance(t, Matrix):
        stride = matrix_stride_ if matrix_stride_ is not None else matrix_stride(t, rule, row_major=row_major)
        return stride * (t.rows if row_major else t.columns)
    if isinstance(t, Array):
        if t.length is None:
            return 0
        stride = array_stride(t, rule, matrix_stride_=matrix_stride_, row_major=row_major)
        if rule == "scalar":
            return stride * (t.length - 1) + size(t.element, rule, matrix_stride_=matrix_stride_, row_major=row_major)
        return t.length * stride
    if isinstance(t, Struct):
        offsets = member_offsets(t, rule)
        return max((off + size(m.type, rule, matrix_stride_=m.matrix_stride, row_major=m.row_major)
                    for off, m in zip(offsets, t.members)), default=0)
    raise TypeModelError(f"{t} has no size in memory")


def array_stride(t: Array, rule: LayoutRule = "std430", *, matrix_stride_: int | None = None,
                 row_major: bool = False) -> int:
    """The ArrayStride of `t`: its decoration, else the element's size rounded up to the array's alignment."""
    if t.stride is not None:
        return t.stride
    element = size(t.element, rule, matrix_stride_=matrix_stride_, row_major=row_major)
    return _round_up(element, alignment(t, rule, row_major=row_major))


def member_offsets(t: Struct, rule: LayoutRule = "std430") -> list[int]:
    """The Offset of each member: its decoration where every member has one, else the rule's.

    Under std140 and std430 the member after a struct, an array or a matrix starts at a multiple of
    that member's alignment (GLSL's rules 4 and 9: the padding at the end of a struct)."""
    if t.members and all(m.offset is not None for m in t.members):
        return [m.offset for m in t.members]  # type: ignore[misc]
    offsets, at = [], 0
    for m in t.members:
        aligned = alignment(m.type, rule, row_major=m.row_major)
        at = _round_up(at, aligned)
        offsets.append(at)
        if isinstance(m.type, Array) and m.type.length is None:
            continue
        at += size(m.type, rule, matrix_stride_=m.matrix_stride, row_major=m.row_major)
        if rule != "scalar" and isinstance(m.type, Struct | Array | Matrix):
            at = _round_up(at, aligned)
    return offsets


def laid_out(t: Type, rule: LayoutRule = "std430") -> Type:
    """`t` with every ArrayStride, Offset and MatrixStride filled in under `rule` (kept where present)."""
    _check_rule(rule)
    return _laid_out(t, rule, None, False)


def _laid_out(t: Type, rule: LayoutRule, matrix_stride_: int | None, row_major: bool) -> Type:
    """laid_out inside a struct member whose MatrixStride and majorness apply to the matrices in `t`."""
    if isinstance(t, Array):
        inner = replace(t, element=_laid_out(t.element, rule, matrix_stride_, row_major))
        return replace(inner, stride=array_stride(inner, rule, matrix_stride_=matrix_stride_, row_major=row_major))
    if isinstance(t, Struct):
        members = []
        for m in t.members:
            matrix = component_matrix(m.type)
            stride = m.matrix_stride
            if stride is None and matrix is not None:
                stride = matrix_stride(matrix, rule, row_major=m.row_major)
            members.append(replace(m, type=_laid_out(m.type, rule, stride, m.row_major), matrix_stride=stride))
        struct = replace(t, members=tuple(members))
        offsets = member_offsets(struct, rule)
        return replace(struct, members=tuple(replace(m, offset=o) for m, o in zip(members, offsets)))
    return t


def component_matrix(t: Type) -> Matrix | None:
    """The matrix type inside (arrays of) a matrix, the one a member's MatrixStride applies to."""
    while isinstance(t, Array):
        t = t.element
    return t if isinstance(t, Matrix) else None


# ------------------------------------------------------------------------------------------------
# Reading types back from a decoded module.

_LAYOUT_DECORATIONS = {Decoration.ArrayStride, Decoration.Offset, Decoration.MatrixStride, Decoration.RowMajor,
                       Decoration.ColMajor, Decoration.Block, Decoration.BufferBlock}


@dataclass
class TypeTable:
    """The types, constants' values and names a module declares, read once: `table[type_id] -> Type`.

    Built from a module's instructions (`read_types(module)`) or any list of them (the builder's)."""

    instructions: list[Instruction]
    defs: dict[int, Instruction] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    member_names: dict[tuple[int, int], str] = field(default_factory=dict)
    decorations: dict[int, dict[int, tuple]] = field(default_factory=dict)
    member_decorations: dict[tuple[int, int], dict[int, tuple]] = field(default_factory=dict)
    _types: dict[int, Type] = field(default_factory=dict)
    _reading: set[int] = field(default_factory=set)

    def __post_init__(self):
        for inst in self.instructions:
            if inst.result_id is not None:
                self.defs[inst.result_id] = inst
            ops = inst.operands
            try:
                if inst.opcode == Op.Decorate:
                    self.decorations.setdefault(ops[0].number, {})[ops[1].number] = tuple(o.value for o in ops[2:])
                elif inst.opcode == Op.MemberDecorate:
                    key = (ops[0].number, ops[1].number)
                    self.member_decorations.setdefault(key, {})[ops[2].number] = tuple(o.value for o in ops[3:])
                elif inst.opcode == Op.Name:
                    self.names[ops[0].number] = ops[1].text
                elif inst.opcode == Op.MemberName:
                    self.member_names[(ops[0].number, ops[1].number)] = ops[2].text
            except IndexError:
                raise SpirvError(f"{inst.name} has too few operands", inst.offset) from None

    def decoration(self, target: int, decoration: Decoration, member: int | None = None) -> tuple | None:
        """The operands of a decoration on an id (or a struct member), None when absent."""
        table = self.decorations.get(target) if member is None else self.member_decorations.get((target, member))
        return None if table is None else table.get(decoration)

    def __getitem__(self, type_id: int) -> Type:
        found = self._types.get(type_id)
        if found is not None:
            return found
        if type_id in self._reading:
            return Forward(type_id)
        inst = self.defs.get(type_id)
        if inst is None:
            raise SpirvError(f"%{type_id} is used as a type but never defined")
        reader = _READERS.get(inst.opcode)
        self._reading.add(type_id)
        try:
            t = reader(self, inst) if reader is not None else self._opaque(inst)
        except (IndexError, KeyError, ValueError, AttributeError) as err:
            raise SpirvError(f"malformed {inst.name} %{type_id}: {err}", inst.offset) from None
        finally:
            self._reading.discard(type_id)
        self._types[type_id] = t
        return t

    def _opaque(self, inst: Instruction) -> Type:
        if grammar.instruction(inst.opcode).opclass != "Type-Declaration" and not inst.name.startswith("OpType"):
            raise SpirvError(f"%{inst.result_id} ({inst.name}) is not a type", inst.offset)
        return Opaque(inst.opcode, tuple(o.value for o in inst.operands))

    def constant_value(self, const_id: int) -> int | float | bool:
        """The value of a scalar OpConstant, OpConstantTrue/False, or a spec constant's default."""
        inst = self.defs.get(const_id)
        if inst is None:
            raise SpirvError(f"%{const_id} is used as a constant but never defined")
        if inst.opcode in (Op.ConstantTrue, Op.SpecConstantTrue):
            return True
        if inst.opcode in (Op.ConstantFalse, Op.SpecConstantFalse):
            return False
        if inst.opcode in (Op.Constant, Op.SpecConstant):
            t = self[inst.checked_result_type]
            if not isinstance(t, Scalar):
                raise SpirvError(f"%{const_id}: a constant of non-scalar type {t}", inst.offset)
            return decode_literal(t, inst.operands[0].number)
        if inst.opcode == Op.ConstantNull:
            return 0
        raise SpirvError(f"%{const_id} ({inst.name}) is not a scalar constant", inst.offset)

    def constant_int(self, const_id: int) -> int:
        value = self.constant_value(const_id)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpirvError(f"%{const_id} is not an integer constant")
        return value


def decode_literal(t: Scalar, bits: int) -> int | float | bool:
    """The value a literal's words (as one int, low word first) hold for scalar type `t`."""
    if t.kind == "bool":
        return bool(bits)
    bits &= (1 << t.width) - 1
    if t.kind == "int":
        return bits - (1 << t.width) if t.signed and bits >> (t.width - 1) else bits
    return float(np.array(bits, dtype=f"u{t.width // 8}").view(t.dtype).astype(np.float64))


def _read_int(table: TypeTable, inst: Instruction) -> Type:
    width, signed = inst.operands[0].number, inst.operands[1].number
    if width not in (8, 16, 32, 64):
        raise SpirvError(f"OpTypeInt of width {width} is not supported", inst.offset)
    return Scalar("int", width, bool(signed))


def _read_float(table: TypeTable, inst: Instruction) -> Type:
    width = inst.operands[0].number
    encoding = FPEncoding(inst.operands[1].number) if len(inst.operands) > 1 else None
    t = Scalar("float", width, False, encoding)
    if t not in _SCALAR_NAMES:
        raise SpirvError(f"OpTypeFloat {width} {encoding.name if encoding else ''} is not supported", inst.offset)
    return t


def _read_vector(table: TypeTable, inst: Instruction) -> Type:
    component = table[inst.operands[0].number]
    if not isinstance(component, Scalar):
        raise SpirvError(f"a vector of {component}", inst.offset)
    return Vector(component, inst.operands[1].number)


def _read_matrix(table: TypeTable, inst: Instruction) -> Type:
    column = table[inst.operands[0].number]
    if not isinstance(column, Vector):
        raise SpirvError(f"a matrix of {column} columns", inst.offset)
    return Matrix(column, inst.operands[1].number)


def _stride(table: TypeTable, type_id: int) -> int | None:
    found = table.decoration(type_id, Decoration.ArrayStride)
    return found[0] if found else None


def _read_array(table: TypeTable, inst: Instruction) -> Type:
    return Array(table[inst.operands[0].number], table.constant_int(inst.operands[1].number),
                 _stride(table, inst.checked_result_id))


def _read_runtime_array(table: TypeTable, inst: Instruction) -> Type:
    return Array(table[inst.operands[0].number], None, _stride(table, inst.checked_result_id))


def _read_struct(table: TypeTable, inst: Instruction) -> Type:
    sid = inst.checked_result_id
    members = []
    for i, operand in enumerate(inst.operands):
        deco = table.member_decorations.get((sid, i), {})
        members.append(Member(table[operand.number],
                              offset=deco[Decoration.Offset][0] if Decoration.Offset in deco else None,
                              matrix_stride=deco[Decoration.MatrixStride][0] if Decoration.MatrixStride in deco
                              else None,
                              row_major=Decoration.RowMajor in deco, name=table.member_names.get((sid, i))))
    own = table.decorations.get(sid, {})
    return Struct(tuple(members), Decoration.Block in own or Decoration.BufferBlock in own, table.names.get(sid))


def _read_pointer(table: TypeTable, inst: Instruction) -> Type:
    return Pointer(StorageClass(inst.operands[0].number), table[inst.operands[1].number],
                   _stride(table, inst.checked_result_id))


def _read_function(table: TypeTable, inst: Instruction) -> Type:
    return Function(table[inst.operands[0].number], tuple(table[o.number] for o in inst.operands[1:]))


def _read_coop(table: TypeTable, inst: Instruction) -> Type:
    ops = [o.number for o in inst.operands]
    component = table[ops[0]]
    if not isinstance(component, Scalar):
        raise SpirvError(f"a cooperative matrix of {component}", inst.offset)
    scope, rows, cols = (table.constant_int(v) for v in ops[1:4])
    nv = inst.opcode == Op.TypeCooperativeMatrixNV
    try:
        return CoopMatrix(component, rows, cols, None if nv else CooperativeMatrixUse(table.constant_int(ops[4])),
                          Scope(scope), "NV" if nv else "KHR")
    except TypeModelError as err:
        raise SpirvError(str(err), inst.offset) from None


_READERS: dict[int, Callable[[TypeTable, Instruction], Type]] = {
    Op.TypeVoid: lambda table, inst: Void(), Op.TypeBool: lambda table, inst: BOOL,
    Op.TypeInt: _read_int, Op.TypeFloat: _read_float, Op.TypeVector: _read_vector, Op.TypeMatrix: _read_matrix,
    Op.TypeArray: _read_array, Op.TypeRuntimeArray: _read_runtime_array, Op.TypeStruct: _read_struct,
    Op.TypePointer: _read_pointer, Op.TypeFunction: _read_function,
    Op.TypeCooperativeMatrixKHR: _read_coop, Op.TypeCooperativeMatrixNV: _read_coop,
}


def read_types(module: Module) -> TypeTable:
    """A TypeTable over a decoded module: `read_types(m)[type_id]` is that id's Type."""
    return TypeTable(module.instructions)
