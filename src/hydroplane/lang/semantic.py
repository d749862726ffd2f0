"""The kernel language's semantics: type rules, conversions and emission through the ModuleBuilder.

The visitor (codegen.py) hands this module values and asks for operations; this module
checks the types and emits the instructions. The rules:

- Values are typed with the one type model (`hydroplane.spirv.types`): Scalar, Vector,
  CoopMatrix; a Python number in an expression is a literal without a type of its own.
- Promotion is explicit: both operands of a binary operator have the same type (a scalar
  meets a vector of its own component type by being splatted); anything else is an error
  that says which conversion to write. A Python int literal takes the other operand's type,
  a Python float literal the other operand's float type, else f32 (never f64 by itself).
- bf16 and fp8 values only convert (SPIR-V gives their scalars no arithmetic).
- Integer `//` and `%` truncate toward zero (C, like Triton); float `%` is C's fmod, float
  `//` is floor(a / b).
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.lang import portable
from hydroplane.lang.errors import SemanticError
from hydroplane.lang.typed import GLSL, Value, component, describe, is_literal, scalar_kind, with_component
from hydroplane.spirv import grammar, types
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.enums import MemorySemantics, PackedVectorFormat, StorageClass

Op = grammar.Op


@dataclass(frozen=True, slots=True)
class BufferRef:
    """A kernel's storage buffer (`Buffer[dtype]` parameter): a global variable, indexed by element."""

    name: str
    element: types.Scalar
    access: str  # "readonly", "writeonly" or "readwrite"
    binding: int
    variable: int
    element_pointer: int  # type id of a StorageBuffer pointer to one element

    @property
    def storage(self) -> StorageClass:
        return StorageClass.StorageBuffer


@dataclass(frozen=True, slots=True)
class SharedArray:
    """A workgroup-shared array made by `shared_array(dtype, n)`: a Workgroup global variable."""

    element: types.Type
    length: int
    variable: int
    element_pointer: int
    access: str = "readwrite"

    @property
    def storage(self) -> StorageClass:
        return StorageClass.Workgroup


@dataclass(frozen=True, slots=True)
class LocalArray:
    """A Function-storage array made by `local_array(type, n)`: scalars, vectors or matrices, per invocation."""

    element: types.Type
    length: int
    variable: int  # matrices: 0, each slot is its own variable (slots)
    element_pointer: int
    access: str = "readwrite"
    name: str = "local_array"
    slots: tuple = ()

    @property
    def storage(self) -> StorageClass:
        return StorageClass.Function


@dataclass(frozen=True, slots=True)
class Local:
    """A run-time Python local: a Function-storage variable of one fixed type."""

    name: str
    type: types.Type
    pointer: int


_ARITH = ("float", "signed", "unsigned")
BINARY = {
    "add": {"float": Op.FAdd, "signed": Op.IAdd, "unsigned": Op.IAdd},
    "sub": {"float": Op.FSub, "signed": Op.ISub, "unsigned": Op.ISub},
    "mul": {"float": Op.FMul, "signed": Op.IMul, "unsigned": Op.IMul},
    "truediv": {"float": Op.FDiv},
    # the entries named by a string are portable sequences (portable.py), not one instruction
    "floordiv": {"float": "floor_div", "signed": "int_divide", "unsigned": "int_divide"},
    "mod": {"float": "float_remainder", "signed": "int_remainder", "unsigned": "int_remainder"},
    "and": {"signed": Op.BitwiseAnd, "unsigned": Op.BitwiseAnd, "bool": Op.LogicalAnd},
    "or": {"signed": Op.BitwiseOr, "unsigned": Op.BitwiseOr, "bool": Op.LogicalOr},
    "xor": {"signed": Op.BitwiseXor, "unsigned": Op.BitwiseXor, "bool": Op.LogicalNotEqual},
    "lshift": {"signed": "shift", "unsigned": "shift"},
    "rshift": {"signed": "shift", "unsigned": "shift"},
    "pow": {"float": "pow"},
}
# Float arithmetic is decorated NoContraction: `a * b + c` rounds twice on every device (a driver may not fuse
# it into one fma, as lavapipe otherwise does), exactly as the reference executor computes it.
# An FConvert is decorated too: a narrowing conversion then rounds even where it is converted straight back
# (lavapipe otherwise folds f32(f16(x)) to x).
NO_CONTRACTION = frozenset({Op.FAdd, Op.FSub, Op.FMul, Op.FDiv, Op.MatrixTimesScalar, Op.VectorTimesScalar,
                            Op.FConvert})
# x ** n for these literal ints is repeated multiplication (each product rounded once), not pow.
SMALL_POWERS = range(0, 5)
COMPARE = {
    "eq": {"float": Op.FOrdEqual, "signed": Op.IEqual, "unsigned": Op.IEqual, "bool": Op.LogicalEqual},
    "ne": {"float": Op.FUnordNotEqual, "signed": Op.INotEqual, "unsigned": Op.INotEqual,
           "bool": Op.LogicalNotEqual},
    "lt": {"float": Op.FOrdLessThan, "signed": Op.SLessThan, "unsigned": Op.ULessThan},
    "le": {"float": Op.FOrdLessThanEqual, "signed": Op.SLessThanEqual, "unsigned": Op.ULessThanEqual},
    "gt": {"float": Op.FOrdGreaterThan, "signed": Op.SGreaterThan, "unsigned": Op.UGreaterThan},
    "ge": {"float": Op.FOrdGreaterThanEqual, "signed": Op.SGreaterThanEqual, "unsigned": Op.UGreaterThanEqual},
}
UNARY = {
    "neg": {"float": Op.FNegate, "signed": Op.SNegate, "unsigned": Op.SNegate},
    "invert": {"signed": Op.Not, "unsigned": Op.Not, "bool": Op.LogicalNot},
    "not": {"bool": Op.LogicalNot},
}
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "and": "&",
           "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "pow": "**", "eq": "==", "ne": "!=",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "neg": "-", "invert": "~", "not": "not"}
# Element-wise operators that SPIR-V defines on cooperative matrices (KHR).
MATRIX_BINARY = frozenset({"add", "sub", "mul", "truediv"})
# Math builtins: name -> {kind: GLSL.std.450 instruction}; unsigned abs is the value itself.
MATH = {
    "abs": {"float": "FAbs", "signed": "SAbs", "unsigned": None},
    "minimum": {"float": "FMin", "signed": "SMin", "unsigned": "UMin"},
    "maximum": {"float": "FMax", "signed": "SMax", "unsigned": "UMax"},
    "clamp": {"float": "FClamp", "signed": "SClamp", "unsigned": "UClamp"},
    "sign": {"float": "FSign", "signed": "SSign"},
    **{name: {"float": glsl} for name, glsl in (
        ("sqrt", "Sqrt"), ("rsqrt", "InverseSqrt"), ("exp", "Exp"), ("exp2", "Exp2"), ("log", "Log"),
        ("log2", "Log2"), ("sin", "Sin"), ("cos", "Cos"), ("tan", "Tan"), ("tanh", "Tanh"), ("atan", "Atan"),
        ("atan2", "Atan2"), ("floor", "Floor"), ("ceil", "Ceil"), ("trunc", "Trunc"), ("round", "RoundEven"),
        ("fract", "Fract"), ("pow", "Pow"), ("fma", "Fma"), ("mix", "FMix"))},
}
# Subgroup arithmetic: name -> {kind: opcode}
SUBGROUP_ARITH = {
    "add": {"float": Op.GroupNonUniformFAdd, "signed": Op.GroupNonUniformIAdd, "unsigned": Op.GroupNonUniformIAdd},
    "mul": {"float": Op.GroupNonUniformFMul, "signed": Op.GroupNonUniformIMul, "unsigned": Op.GroupNonUniformIMul},
    "min": {"float": Op.GroupNonUniformFMin, "signed": Op.GroupNonUniformSMin, "unsigned": Op.GroupNonUniformUMin},
    "max": {"float": Op.GroupNonUniformFMax, "signed": Op.GroupNonUniformSMax, "unsigned": Op.GroupNonUniformUMax},
    "and": {"signed": Op.GroupNonUniformBitwiseAnd, "unsigned": Op.GroupNonUniformBitwiseAnd,
            "bool": Op.GroupNonUniformLogicalAnd},
    "or": {"signed": Op.GroupNonUniformBitwiseOr, "unsigned": Op.GroupNonUniformBitwiseOr,
           "bool": Op.GroupNonUniformLogicalOr},
    "xor": {"signed": Op.GroupNonUniformBitwiseXor, "unsigned": Op.GroupNonUniformBitwiseXor,
            "bool": Op.GroupNonUniformLogicalXor},
}
DOT_OPS = {"ss": Op.SDot, "su": Op.SUDot, "uu": Op.UDot}  # dot4x8's signs -> opcode
SUBGROUP_LANE_OPS = {"broadcast": Op.GroupNonUniformBroadcast, "shuffle": Op.GroupNonUniformShuffle,
                     "shuffle_xor": Op.GroupNonUniformShuffleXor, "shuffle_up": Op.GroupNonUniformShuffleUp,
                     "shuffle_down": Op.GroupNonUniformShuffleDown}
ATOMICS = {
    "add": {"signed": Op.AtomicIAdd, "unsigned": Op.AtomicIAdd},
    "sub": {"signed": Op.AtomicISub, "unsigned": Op.AtomicISub},
    "min": {"signed": Op.AtomicSMin, "unsigned": Op.AtomicUMin},
    "max": {"signed": Op.AtomicSMax, "unsigned": Op.AtomicUMax},
    "and": {"signed": Op.AtomicAnd, "unsigned": Op.AtomicAnd},
    "or": {"signed": Op.AtomicOr, "unsigned": Op.AtomicOr},
    "xor": {"signed": Op.AtomicXor, "unsigned": Op.AtomicXor},
    "exchange": {"signed": Op.AtomicExchange, "unsigned": Op.AtomicExchange, "float": Op.AtomicExchange},
}
BUILTIN_VECTORS = ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId", "NumWorkgroups")
BUILTIN_SCALARS = ("LocalInvocationIndex", "SubgroupLocalInvocationId", "SubgroupSize", "SubgroupId",
                   "NumSubgroups")
SHARED_ALIGNMENT = 16  # bytes: every shared array's size is a multiple, so each one starts 16-byte aligned
FENCE_ORDERS = {  # fence(order): the semantics of its OpMemoryBarrier (buffer memory, QueueFamily scope)
    "release": MemorySemantics.Release | MemorySemantics.UniformMemory | MemorySemantics.MakeAvailable,
    "acquire": MemorySemantics.Acquire | MemorySemantics.UniformMemory | MemorySemantics.MakeVisible,
    "acq_rel": (MemorySemantics.AcquireRelease | MemorySemantics.UniformMemory | MemorySemantics.MakeAvailable
                | MemorySemantics.MakeVisible),
}
NON_PRIVATE = "NonPrivatePointer"  # Vulkan memory model: the access takes part in barriers' ordering


class Semantic:
    """Type rules and emission for one module under construction."""

    def __init__(self, builder: ModuleBuilder):
        self.b = builder
        self._builtin_variables: dict[str, int] = {}
        self._type_ids: dict[types.Type, int] = {}

    # types and constants ------------------------------------------------------------------------
    def type_id(self, t: types.Type) -> int:
        """The builder's id of a type (types are immutable: each is declared once, then looked up)."""
        found = self._type_ids.get(t)
        if found is None:
            found = self._type_ids[t] = self.b.declare(t)
        return found

    def constant(self, value, t: types.Type) -> Value:
        """A constant of a scalar or vector type (a vector's value is splatted), from a Python literal."""
        if isinstance(t, types.Vector):
            scalar = self.constant(value, t.component)
            return Value(t, self.b.constant_composite(self.type_id(t), *[scalar.id] * t.count))
        if isinstance(t, types.CoopMatrix):
            scalar = self.constant(value, t.component)
            return Value(t, self.b.constant_composite(self.type_id(t), scalar.id))
        kind = scalar_kind(t)
        if kind == "bool":
            if not isinstance(value, bool):
                raise SemanticError(f"{describe(value)} {value!r} is not a bool")
            return Value(t, self.b.constant_bool(value))
        if isinstance(value, bool):
            raise SemanticError(f"a bool literal cannot be a {t}; write {t}(1) or {t}(0)")
        if kind in ("signed", "unsigned") and isinstance(value, float):
            raise SemanticError(f"the float literal {value!r} cannot be a {t}; convert explicitly")
        if kind == "encoded":
            return self.convert(self.constant(value, types.F32), t)
        return Value(t, self.b.constant(self.type_id(t), value))

    def materialize(self, x) -> Value:
        """A Value for a value or a bare literal (int -> s32, float -> f32, bool -> bool)."""
        if isinstance(x, Value):
            return x
        if isinstance(x, bool):
            return self.constant(x, types.BOOL)
        if isinstance(x, int):
            if not -(1 << 31) <= x < (1 << 31):
                raise SemanticError(f"the int literal {x} does not fit s32; give it a type, e.g. u32({x}) or s64({x})")
            return self.constant(x, types.S32)
        if isinstance(x, float):
            return self.constant(x, types.F32)
        raise SemanticError(f"{describe(x)} is not a run-time value")

    def coerce(self, x, t: types.Type, what: str) -> Value:
        """`x` as a value of type `t`: a literal is made one; a value must already have that type."""
        if is_literal(x):
            return self.constant(x, t)
        if not isinstance(x, Value):
            raise SemanticError(f"{what}: expected a {t}, got {describe(x)}")
        if x.type != t:
            raise SemanticError(f"{what}: expected a {t}, got a {x.type}; convert explicitly ({component(t)}(x))")
        return x

    # operators ---------------------------------------------------------------------------------
    def _unify(self, op: str, lhs, rhs) -> tuple[Value, Value]:
        symbol = SYMBOLS[op]
        if is_literal(lhs) and is_literal(rhs):
            raise SemanticError(f"{symbol} of two literals has no run-time type")
        if is_literal(lhs):
            return self.constant(lhs, self._literal_type(lhs, rhs.type, symbol)), rhs
        if is_literal(rhs):
            return lhs, self.constant(rhs, self._literal_type(rhs, lhs.type, symbol))
        if not isinstance(lhs, Value) or not isinstance(rhs, Value):
            bad = lhs if not isinstance(lhs, Value) else rhs
            raise SemanticError(f"{symbol} is not defined for {describe(bad)}")
        if lhs.type == rhs.type:
            return lhs, rhs
        if isinstance(lhs.type, types.Scalar) and isinstance(rhs.type, types.Vector) \
                and rhs.type.component == lhs.type:
            return self.splat(lhs, rhs.type), rhs
        if isinstance(rhs.type, types.Scalar) and isinstance(lhs.type, types.Vector) \
                and lhs.type.component == rhs.type:
            return lhs, self.splat(rhs, lhs.type)
        raise SemanticError(f"{lhs.type} {symbol} {rhs.type}: the operand types differ; convert one explicitly "
                            f"({component(rhs.type)}(the {lhs.type} side) or {component(lhs.type)}(the {rhs.type} "
                            "side))")

    @staticmethod
    def _literal_type(literal, other: types.Type, symbol: str) -> types.Type:
        comp = component(other)
        if isinstance(literal, float) and not isinstance(literal, bool) and comp.kind != "float":
            raise SemanticError(f"a float literal {symbol} {other}: the operand types differ; "
                                f"convert the {other} explicitly (f32(x))")
        return other

    def splat(self, scalar: Value, t: types.Vector) -> Value:
        return Value(t, self.b.emit(Op.CompositeConstruct, self.type_id(t), *[scalar.id] * t.count))

    def _opcode(self, table: dict, op: str, t: types.Type):
        kind = scalar_kind(component(t))
        if kind == "encoded":
            raise SemanticError(f"{component(t)} values have no arithmetic in SPIR-V; convert to f32 first")
        opcode = table[op].get(kind)
        if opcode is None:
            raise SemanticError(f"{SYMBOLS.get(op, op)} is not defined for {t}"
                                + (" (integers divide with //)" if op == "truediv" else ""))
        return opcode

    def binary(self, op: str, lhs, rhs) -> Value:
        matrix = next((x for x in (lhs, rhs) if isinstance(x, Value) and isinstance(x.type, types.CoopMatrix)), None)
        if matrix is not None:
            return self._matrix_binary(op, lhs, rhs)
        literal_rhs = rhs if isinstance(rhs, int) and not isinstance(rhs, bool) else None
        if op in ("lshift", "rshift"):
            base, count = self._shift_operands(lhs, rhs)
            self._opcode(BINARY, op, base.type)
            return portable.shift(self, op, base, count, literal_rhs)
        if op == "pow" and literal_rhs in SMALL_POWERS and isinstance(lhs, Value) \
                and scalar_kind(component(lhs.type)) == "float":
            return self._small_power(lhs, literal_rhs)
        lhs, rhs = self._unify(op, lhs, rhs)
        opcode = self._opcode(BINARY, op, lhs.type)
        t = lhs.type
        if opcode in ("int_divide", "int_remainder"):
            return portable.int_divide(self, lhs, rhs, opcode == "int_remainder", literal_rhs)
        if opcode == "float_remainder":
            return portable.float_remainder(self, lhs, rhs)
        if opcode == "floor_div":
            quotient = self.arithmetic(Op.FDiv, t, lhs, rhs)
            return Value(t, self.b.ext_inst(GLSL, "Floor", self.type_id(t), quotient.id))
        if opcode == "pow":
            return portable.math_with_domain(self, "Pow", t, [lhs, rhs])
        return self.arithmetic(opcode, t, lhs, rhs)

    def arithmetic(self, opcode, t: types.Type, *operands: Value) -> Value:
        """One instruction of result type t; float arithmetic decorated NoContraction (see NO_CONTRACTION)."""
        rid = self.b.emit(opcode, self.type_id(t), *(o.id for o in operands))
        if opcode in NO_CONTRACTION and scalar_kind(component(t)) == "float":
            self.b.decorate(rid, "NoContraction")
        return Value(t, rid)

    def _small_power(self, x: Value, n: int) -> Value:
        if n == 0:
            return self.constant(1.0, x.type)
        result = x
        for _ in range(n - 1):
            result = self.arithmetic(Op.FMul, x.type, result, x)
        return result

    def _shift_operands(self, lhs, rhs) -> tuple[Value, Value | None]:
        """(base, count) as values; a literal count outside 0 .. width-1 stays unmaterialised (None)."""
        if is_literal(lhs):
            lhs = self.materialize(lhs) if not isinstance(rhs, Value) else self.constant(lhs, rhs.type)
        if scalar_kind(component(lhs.type)) not in ("signed", "unsigned"):
            raise SemanticError(f"shifts need integers, not {lhs.type}")
        if is_literal(rhs):
            if isinstance(rhs, bool) or not isinstance(rhs, int):
                raise SemanticError(f"a shift count is an integer, not {describe(rhs)}")
            return lhs, (self.constant(rhs, lhs.type) if 0 <= rhs < component(lhs.type).width else None)
        if not isinstance(rhs, Value) or scalar_kind(component(rhs.type)) not in ("signed", "unsigned"):
            raise SemanticError(f"shifts need integers, not {describe(rhs)}")
        if isinstance(rhs.type, types.Vector) and rhs.type.count != getattr(lhs.type, "count", None):
            raise SemanticError(f"{lhs.type} shifted by {rhs.type}: a vector count needs a vector of as many "
                                "components")
        return lhs, rhs

    def _matrix_binary(self, op: str, lhs, rhs) -> Value:
        symbol = SYMBOLS[op]
        left_matrix = isinstance(lhs, Value) and isinstance(lhs.type, types.CoopMatrix)
        right_matrix = isinstance(rhs, Value) and isinstance(rhs.type, types.CoopMatrix)
        if left_matrix and right_matrix:
            if op not in MATRIX_BINARY:
                raise SemanticError(f"{symbol} is not an element-wise operation SPIR-V defines on cooperative matrices")
            if lhs.type != rhs.type:
                raise SemanticError(f"{lhs.type} {symbol} {rhs.type}: element-wise operations need matrices of "
                                    "one type (coop.convert / coop.convert_use first)")
            return self.arithmetic(self._opcode(BINARY, op, lhs.type), lhs.type, lhs, rhs)
        matrix, scalar = (lhs, rhs) if left_matrix else (rhs, lhs)
        if op == "mul" or (op == "truediv" and left_matrix and is_literal(scalar)):
            if op == "truediv":
                if scalar == 0:
                    raise SemanticError("division of a matrix by the literal 0")
                scalar = 1.0 / scalar
            scalar = self.coerce(scalar, matrix.type.component, f"matrix {symbol} scalar")
            return self.arithmetic(Op.MatrixTimesScalar, matrix.type, matrix, scalar)
        raise SemanticError(f"{describe(lhs)} {symbol} {describe(rhs)}: a matrix combines with a scalar only by * "
                            "(and / by a literal); use coop.fill for a constant matrix")

    def compare(self, op: str, lhs, rhs) -> Value:
        lhs, rhs = self._unify(op, lhs, rhs)
        opcode = self._opcode(COMPARE, op, lhs.type)
        t = with_component(lhs.type, types.BOOL)
        return Value(t, self.b.emit(opcode, self.type_id(t), lhs.id, rhs.id))

    def unary(self, op: str, x) -> Value:
        if op == "pos":
            return self.materialize(x)
        x = self.materialize(x)
        opcode = self._opcode(UNARY, op, x.type)
        return Value(x.type, self.b.emit(opcode, self.type_id(x.type), x.id))

    def condition(self, x, what: str) -> Value:
        """A bool value for an if/while/and/or; other types must be compared explicitly."""
        if isinstance(x, Value) and x.type == types.BOOL:
            return x
        raise SemanticError(f"{what} must be a bool, not {describe(x)}; compare explicitly (x != 0)")

    def select(self, cond, a, b) -> Value:
        cond = self.condition(cond, "the condition of select") if not isinstance(cond, Value) \
            or not isinstance(cond.type, types.Vector) else cond
        if is_literal(a) and is_literal(b):
            a = self.materialize(a)
        a, b = self._unify("eq", a, b)
        if isinstance(a.type, types.CoopMatrix):
            raise SemanticError("select (or `x if c else y`) between matrices does not exist in SPIR-V; "
                                "branch with if/else and assign instead")
        if isinstance(cond.type, types.Vector) and cond.type != with_component(a.type, types.BOOL):
            raise SemanticError(f"select: a {cond.type} condition with {a.type} values")
        return Value(a.type, self.b.emit(Op.Select, self.type_id(a.type), cond.id, a.id, b.id))

    # conversions -------------------------------------------------------------------------------
    def convert(self, x, target: types.Scalar) -> Value:
        """Value conversion to `target` (component-wise for vectors and matrices)."""
        if is_literal(x):
            if isinstance(x, bool) and target.kind != "bool":
                x = int(x)
            if isinstance(x, float) and target.kind == "int":
                raise SemanticError(f"the float literal {x!r} cannot be a {target}; write an int")
            if target.kind == "bool":
                return self.constant(bool(x), target)
            return self.constant(x, target)
        if not isinstance(x, Value):
            raise SemanticError(f"cannot convert {describe(x)} to {target}")
        source = component(x.type)
        if source == target:
            return x
        result = with_component(x.type, target)
        rid = self.type_id(result)
        sk, tk = scalar_kind(source), scalar_kind(target)
        is_matrix = isinstance(x.type, types.CoopMatrix)
        if tk == "bool":
            zero = self.constant(0, x.type) if not is_matrix else None
            if zero is None:
                raise SemanticError("a matrix of bools does not exist")
            opcode = Op.FUnordNotEqual if sk in ("float", "encoded") else Op.INotEqual
            return Value(result, self.b.emit(opcode, rid, x.id, zero.id))
        if sk == "bool":
            one, zero = self.constant(1, result), self.constant(0, result)
            return Value(result, self.b.emit(Op.Select, rid, x.id, one.id, zero.id))
        if sk in ("float", "encoded") and tk in ("float", "encoded"):
            if not is_matrix and source == types.F32 and target in (types.F16, types.BF16):
                return portable.narrow_float(self, x, target)  # rounded on the bits: the same on every driver
            return self.arithmetic(Op.FConvert, result, x)
        if sk in ("float", "encoded"):
            if is_matrix:
                return self.coop_float_to_int(x, target)
            return portable.float_to_int(self, x, target)
        if tk in ("float", "encoded"):
            return Value(result, self.b.emit(Op.ConvertSToF if sk == "signed" else Op.ConvertUToF, rid, x.id))
        # integer -> integer
        if source.width == target.width:
            if is_matrix:
                raise SemanticError(f"{x.type} -> {target}: signedness changes of matrices need coop.bitcast")
            return Value(result, self.b.emit(Op.Bitcast, rid, x.id))
        if sk == "signed" or tk == "unsigned":
            opcode = Op.SConvert if sk == "signed" else Op.UConvert
            return Value(result, self.b.emit(opcode, rid, x.id))
        # unsigned -> signed of another width: zero-extend/truncate unsigned, then reinterpret
        unsigned = with_component(x.type, types.Scalar("int", target.width, False))
        if is_matrix:
            raise SemanticError(f"{x.type} -> {target}: convert to u{target.width} first")
        widened = self.b.emit(Op.UConvert, self.type_id(unsigned), x.id)
        return Value(result, self.b.emit(Op.Bitcast, rid, widened))

    def bitcast(self, x, target: types.Scalar | types.Vector) -> Value:
        x = self.materialize(x)
        if isinstance(target, types.Vector) or (isinstance(x.type, types.Vector) and target.width != component(
                x.type).width):
            # a scalar or vector as a vector or scalar of other components, the same bits in all (u32 <-> 2 x f16)
            def bits(t):
                return (t.component.width * t.count, t.component.kind) if isinstance(t, types.Vector) \
                    else (getattr(t, "width", 0), getattr(t, "kind", ""))
            (have, kind), (want, target_kind) = bits(x.type), bits(target)
            if have != want or "bool" in (kind, target_kind) or not isinstance(x.type, (types.Scalar, types.Vector)):
                raise SemanticError(f"bitcast needs types of one width, not {x.type} -> {target}")
            return Value(target, self.b.emit(Op.Bitcast, self.type_id(target), x.id))
        source = component(x.type)
        if source.width != target.width or source.kind == "bool" or target.kind == "bool":
            raise SemanticError(f"bitcast needs types of one width, not {source} -> {target}")
        result = with_component(x.type, target)
        return Value(result, self.b.emit(Op.Bitcast, self.type_id(result), x.id))

    def dot4x8(self, a, b, signs) -> Value:
        if signs not in DOT_OPS:
            raise SemanticError(f"dot4x8: signs must be one of {sorted(DOT_OPS)} (compile-time), not {signs!r}")
        target = getattr(self, "target", None)
        if target is not None and not target.is_reference and "integer_dot_product" not in target.support:
            raise SemanticError(f"dot4x8 needs the device's integer dot product (shaderIntegerDotProduct, Vulkan "
                                f"1.3); target {target.name} does not offer it")
        words = []
        for name, x in (("a", a), ("b", b)):
            x = self.coerce(x, types.U32, f"dot4x8's {name}") if not isinstance(x, Value) else x
            if x.type == types.S32:
                x = self.bitcast(x, types.U32)
            if x.type != types.U32:
                raise SemanticError(f"dot4x8: {name} must be a 32-bit word (u32 or s32), not {x.type}")
            words.append(x)
        result = types.U32 if signs == "uu" else types.S32
        self.b.capability("DotProductInput4x8BitPacked")  # the operand's format needs it (not derived from it)
        return Value(result, self.b.emit(DOT_OPS[signs], self.type_id(result), words[0].id, words[1].id,
                                         PackedVectorFormat.PackedVectorFormat4x8Bit))

    # math and vectors --------------------------------------------------------------------------
    def math(self, name: str, *args) -> Value:
        if name in ("minimum", "maximum") and len(args) > 2:  # min(a, b, c) as Python means it
            return self.math(name, self.math(name, *args[:2]), *args[2:])
        values = [a for a in args if isinstance(a, Value)]
        if not values:
            raise SemanticError(f"{name}: at least one argument must be a run-time value")
        t = values[0].type
        operands = []
        for a in args:
            if isinstance(a, Value) and isinstance(t, types.Vector) and a.type == t.component:
                a = self.splat(a, t)
            operands.append(self.coerce(a, t, name) if not (isinstance(a, Value) and a.type == t) else a)
        table = MATH[name]
        kind = scalar_kind(component(t))
        if kind not in table:
            raise SemanticError(f"{name} is not defined for {t}")
        glsl = table[kind]
        arity = len(grammar.extinst(GLSL, glsl).operands) if glsl is not None else 1
        if len(operands) != arity:
            raise SemanticError(f"{name} takes {arity} argument{'s' * (arity != 1)}, not {len(operands)}")
        if glsl is None:
            return operands[0]
        if name in ("minimum", "maximum"):
            return portable.extreme(self, name, *operands)
        if name == "clamp":
            return portable.clamp(self, *operands)
        if name == "abs" and kind == "signed":
            return portable.int_abs(self, operands[0])
        defined = portable.math_with_domain(self, glsl, t, operands)
        if defined is not None:
            return defined
        return Value(t, self.b.ext_inst(GLSL, glsl, self.type_id(t), *(o.id for o in operands)))

    def vector(self, parts) -> Value:
        parts = list(parts)
        values = [p for p in parts if isinstance(p, Value)]
        if not values:
            raise SemanticError("vec(): give at least one typed value (e.g. vec(f32(1), 2, 3))")
        comp = values[0].type
        if not isinstance(comp, types.Scalar):
            raise SemanticError(f"vec() takes scalars, not {comp}")
        if not 2 <= len(parts) <= 4:
            raise SemanticError(f"a vector has 2 to 4 components, not {len(parts)}")
        ids = [self.coerce(p, comp, "vec() component").id for p in parts]
        t = types.Vector(comp, len(parts))
        return Value(t, self.b.emit(Op.CompositeConstruct, self.type_id(t), *ids))

    def dot(self, a: Value, b: Value) -> Value:
        a, b = self._unify("mul", a, b)
        if not isinstance(a.type, types.Vector) or scalar_kind(a.type.component) != "float":
            raise SemanticError(f"dot needs float vectors, not {a.type}")
        return Value(a.type.component, self.b.emit(Op.Dot, self.type_id(a.type.component), a.id, b.id))

    def extract(self, x: Value, index) -> Value:
        """Element `index` of a vector or matrix value (index a literal or an integer value)."""
        t = x.type
        if isinstance(t, types.Vector | types.CoopMatrix):
            comp = t.component
            if isinstance(index, int) and not isinstance(index, bool):
                if isinstance(t, types.Vector) and not 0 <= index < t.count:
                    raise SemanticError(f"index {index} is out of range of a {t}")
                return Value(comp, self.b.emit(Op.CompositeExtract, self.type_id(comp), x.id, index))
            index = self.index(index)
            if isinstance(t, types.Vector):
                return Value(comp, self.b.emit(Op.VectorExtractDynamic, self.type_id(comp), x.id, index.id))
            raise SemanticError("a run-time index into a matrix value needs a local variable (assign it first)")
        raise SemanticError(f"{t} cannot be indexed")

    def insert(self, x: Value, index: int, element) -> Value:
        t = x.type
        element = self.coerce(element, t.component, "element store")
        return Value(t, self.b.emit(Op.CompositeInsert, self.type_id(t), element.id, x.id, index))

    def index(self, i) -> Value:
        """An integer index value (a literal becomes a u32)."""
        if isinstance(i, int) and not isinstance(i, bool):
            if i < 0:
                raise SemanticError(f"negative index {i}")
            return self.constant(i, types.U32)
        if isinstance(i, Value) and isinstance(i.type, types.Scalar) and i.type.kind == "int":
            return i
        raise SemanticError(f"an index must be an integer, not {describe(i)}")

    # memory ------------------------------------------------------------------------------------
    def local(self, name: str, t: types.Type) -> Local:
        pointer = self.type_id(types.Pointer(StorageClass.Function, t))
        variable = self.b.variable(pointer, "Function", name=name)
        return Local(name, t, variable)

    def load_local(self, local: Local) -> Value:
        return Value(local.type, self.b.emit(Op.Load, self.type_id(local.type), local.pointer))

    def store_local(self, local: Local, value) -> None:
        value = self.coerce(value, local.type, f"assignment to {local.name}")
        self.b.emit(Op.Store, local.pointer, value.id)

    def element_pointer(self, memory: BufferRef | SharedArray | LocalArray, index) -> int:
        if isinstance(index, int) and isinstance(memory, SharedArray | LocalArray) and index >= memory.length:
            raise SemanticError(f"index {index} is out of range of an array of {memory.length}")
        index = self.index(index)
        if isinstance(memory, BufferRef):
            return self.b.emit(Op.AccessChain, memory.element_pointer, memory.variable, self.b.u32(0), index.id)
        return self.b.emit(Op.AccessChain, memory.element_pointer, memory.variable, index.id)

    def _slot(self, memory: LocalArray, index) -> Local:
        if not isinstance(index, int) or isinstance(index, bool):
            raise SemanticError("an array of matrices is indexed by constexpr ints (static_range): each slot is its "
                                "own variable (the reference executor addresses no arrays of matrices)")
        if not 0 <= index < memory.length:
            raise SemanticError(f"index {index} is out of range of an array of {memory.length}")
        return memory.slots[index]

    def load(self, memory: BufferRef | SharedArray | LocalArray, index) -> Value:
        if isinstance(memory, LocalArray) and memory.slots:
            return self.load_local(self._slot(memory, index))
        if memory.access == "writeonly":
            raise SemanticError(f"buffer {getattr(memory, 'name', '')} is write-only")
        pointer = self.element_pointer(memory, index)
        access = () if isinstance(memory, LocalArray) else (NON_PRIVATE,)
        return Value(memory.element, self.b.emit(Op.Load, self.type_id(memory.element), pointer, *access))

    def store(self, memory: BufferRef | SharedArray, index, value) -> None:
        if memory.access == "readonly":
            raise SemanticError(f"buffer {memory.name} is read-only (Buffer[{memory.element}, readonly]); "
                                "declare it Buffer[dtype] to write it")
        if isinstance(memory, LocalArray) and memory.slots:
            self.store_local(self._slot(memory, index), value)
            return
        value = self.coerce(value, memory.element, "store")
        access = () if isinstance(memory, LocalArray) else (NON_PRIVATE,)
        self.b.emit(Op.Store, self.element_pointer(memory, index), value.id, *access)

    def array_length(self, memory: BufferRef) -> Value:
        return Value(types.U32, self.b.emit(Op.ArrayLength, self.type_id(types.U32), memory.variable, 0))

    def shared_array(self, element: types.Type, length: int) -> SharedArray:
        if not isinstance(element, types.Scalar | types.Vector) or element == types.BOOL:
            raise SemanticError(f"a shared array holds numbers or vectors, not {element}")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise SemanticError(f"a shared array's length must be a positive constexpr int, not {length!r}")
        item = types.size(element, "scalar")
        padded = -(-length * item // SHARED_ALIGNMENT) * SHARED_ALIGNMENT // item if SHARED_ALIGNMENT % item == 0 \
            else length
        array = self.type_id(types.Array(element, padded))
        variable = self.b.variable(self.b.type_pointer("Workgroup", array), "Workgroup")
        pointer = self.type_id(types.Pointer(StorageClass.Workgroup, element))
        return SharedArray(element, length, variable, pointer)

    def local_array(self, element: types.Type, length: int) -> LocalArray:
        if not isinstance(element, types.Scalar | types.Vector | types.CoopMatrix):
            raise SemanticError(f"a local array holds scalars, vectors or matrices, not {element!r}")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise SemanticError(f"a local array's length must be a positive constexpr int, not {length!r}")
        if isinstance(element, types.CoopMatrix):
            slots = tuple(self.local(f"local_array_{i}", element) for i in range(length))
            return LocalArray(element, length, 0, 0, slots=slots)
        array = self.type_id(types.Array(element, length))
        variable = self.b.variable(self.b.type_pointer("Function", array), "Function", name="local_array")
        pointer = self.type_id(types.Pointer(StorageClass.Function, element))
        return LocalArray(element, length, variable, pointer)

    # built-in ids, barriers, atomics, subgroups ------------------------------------------------
    def builtin_id(self, name: str, axis: int | None = None) -> Value:
        variable = self._builtin_variables.get(name)
        if name in BUILTIN_VECTORS:
            if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < 3:
                raise SemanticError(f"the axis must be a constexpr 0, 1 or 2, not {axis!r}")
            t = types.Vector(types.U32, 3)
        else:
            t = types.U32
        if variable is None:
            variable = self.b.builtin(name, self.type_id(t))
            self._builtin_variables[name] = variable
        loaded = self.b.emit(Op.Load, self.type_id(t), variable)
        if axis is not None:
            loaded = self.b.emit(Op.CompositeExtract, self.type_id(types.U32), loaded, axis)
        return Value(types.S32, self.b.emit(Op.Bitcast, self.type_id(types.S32), loaded))  # ids are s32

    def barrier(self) -> None:
        """Workgroup execution and memory barrier. Under the Vulkan memory model the barrier itself makes the
        workgroup's earlier non-private writes (shared arrays, buffers, matrices stored there) available and
        visible to the accesses after it (MakeAvailable | MakeVisible); without those bits a driver may keep
        shared-memory values in registers across the barrier (seen on the H200: staged GEMMs read stale
        tiles), while the reference executor and lavapipe synchronise regardless."""
        semantics = (MemorySemantics.AcquireRelease | MemorySemantics.WorkgroupMemory | MemorySemantics.UniformMemory
                     | MemorySemantics.MakeAvailable | MemorySemantics.MakeVisible)
        workgroup = self.b.scope("Workgroup")
        self.b.emit(Op.ControlBarrier, workgroup, workgroup, self.b.u32(int(semantics)))

    def fence(self, order) -> None:
        """OpMemoryBarrier at QueueFamily scope on buffer (Uniform) memory: a release makes the invocation's earlier
        non-private buffer writes (and those made available to it by a workgroup barrier) available at that scope,
        an acquire makes what is available there visible to its later reads (Vulkan memory model)."""
        if not isinstance(order, str) or order not in FENCE_ORDERS:
            raise SemanticError(f"fence takes \"release\", \"acquire\" or \"acq_rel\", not {order!r}")
        self.b.emit(Op.MemoryBarrier, self.b.scope("QueueFamily"), self.b.u32(int(FENCE_ORDERS[order])))

    def atomic(self, op: str, memory, index, value, comparator=None) -> Value:
        if not isinstance(memory, BufferRef | SharedArray):
            raise SemanticError(f"atomics work on a buffer or a shared array, not {describe(memory)}")
        if memory.access == "readonly":
            raise SemanticError(f"atomic on the read-only buffer {memory.name}")
        elem = memory.element
        if not isinstance(elem, types.Scalar) or elem.width != 32:
            raise SemanticError(f"atomics need 32-bit elements, not {elem}")
        kind = scalar_kind(elem)
        scope = self.b.scope("Workgroup" if isinstance(memory, SharedArray) else "QueueFamily")
        semantics = self.b.u32(int(MemorySemantics.Relaxed))
        pointer = self.element_pointer(memory, index)
        value = self.coerce(value, elem, f"atomic_{op} value")
        rid = self.type_id(elem)
        if op == "compare_exchange":
            if kind not in ("signed", "unsigned"):
                raise SemanticError(f"atomic_compare_exchange needs integers, not {elem}")
            comparator = self.coerce(comparator, elem, "atomic_compare_exchange comparator")
            return Value(elem, self.b.emit(Op.AtomicCompareExchange, rid, pointer, scope, semantics, semantics,
                                           value.id, comparator.id))
        opcode = ATOMICS[op].get(kind)
        if opcode is None:
            raise SemanticError(f"atomic_{op} is not defined for {elem}")
        return Value(elem, self.b.emit(opcode, rid, pointer, scope, semantics, value.id))

    def subgroup_arith(self, op: str, group_operation: str, x) -> Value:
        x = self.materialize(x)
        opcode = self._opcode(SUBGROUP_ARITH, op, x.type)
        if opcode in (Op.GroupNonUniformFMin, Op.GroupNonUniformFMax):
            return portable.subgroup_float_extreme(self, opcode, group_operation, x)
        return Value(x.type, self.b.emit(opcode, self.type_id(x.type), self.b.scope("Subgroup"),
                                         group_operation, x.id))

    def subgroup_lane(self, op: str, x, lane) -> Value:
        x = self.materialize(x)
        lane = self.coerce(lane, types.U32, f"subgroup_{op} lane") if not isinstance(lane, Value) else lane
        if lane.type == types.S32:
            lane = self.bitcast(lane, types.U32)
        if lane.type != types.U32:
            raise SemanticError(f"subgroup_{op}: the lane must be an s32 or u32, not {lane.type}")
        return Value(x.type, self.b.emit(SUBGROUP_LANE_OPS[op], self.type_id(x.type), self.b.scope("Subgroup"),
                                         x.id, lane.id))

    def subgroup_broadcast_first(self, x) -> Value:
        x = self.materialize(x)
        return Value(x.type, self.b.emit(Op.GroupNonUniformBroadcastFirst, self.type_id(x.type),
                                         self.b.scope("Subgroup"), x.id))

    def subgroup_vote(self, op: str, predicate) -> Value:
        predicate = self.condition(predicate, f"subgroup_{op}'s argument")
        opcode = {"all": Op.GroupNonUniformAll, "any": Op.GroupNonUniformAny}[op]
        return Value(types.BOOL, self.b.emit(opcode, self.type_id(types.BOOL), self.b.scope("Subgroup"),
                                             predicate.id))

    def subgroup_elect(self) -> Value:
        return Value(types.BOOL, self.b.emit(Op.GroupNonUniformElect, self.type_id(types.BOOL),
                                             self.b.scope("Subgroup")))

