"""The kernel language's surface: what a kernel author imports (dtypes, annotations, builtins).

Everything here is thin. Dtypes are the type model's scalars (`hydroplane.spirv.types`); a
dtype called in a kernel converts (`f32(x)`). `Buffer[f16]` and `Buffer[f16, readonly]`
annotate storage-buffer parameters, a dtype annotates a push-constant scalar, `constexpr` a
compile-time parameter. Builtins are plain functions marked `@builtin`: inside a kernel the
visitor calls them with `_semantic=` (the semantics, semantic.py, do the work); called from
ordinary Python they raise.
"""

from __future__ import annotations

import abc
import enum
import functools
from dataclasses import dataclass

from hydroplane.lang.errors import SemanticError
from hydroplane.spirv import types

# dtypes -----------------------------------------------------------------------------------------
boolean = types.BOOL
s8, u8, s16, u16, s32, u32, s64, u64 = types.S8, types.U8, types.S16, types.U16, types.S32, types.U32, \
    types.S64, types.U64
i8, i16, i32, i64 = s8, s16, s32, s64
f16, bf16, f32, f64, e4m3, e5m2 = types.F16, types.BF16, types.F32, types.F64, types.E4M3, types.E5M2
DTYPES = {name: t for name, t in types.SCALARS.items()}


class Access(enum.Enum):
    """How a kernel may touch a buffer (NonWritable / NonReadable decorations)."""

    readonly = "readonly"
    writeonly = "writeonly"
    readwrite = "readwrite"


readonly, writeonly, readwrite = Access.readonly, Access.writeonly, Access.readwrite


def vector_type(dtype: types.Scalar, count: int) -> types.Vector:
    """The type of a 2- to 4-component vector (`vector_type(u32, 4)`: 16 bytes), for buffers and shared arrays."""
    if not isinstance(dtype, types.Scalar) or dtype == types.BOOL or count not in (2, 3, 4):
        raise SemanticError(f"vector_type takes a numeric dtype and 2, 3 or 4 components, not {dtype!r}, {count!r}")
    return types.Vector(dtype, count)


@dataclass(frozen=True, slots=True)
class BufferType:
    """The annotation of a storage-buffer parameter: element dtype (a scalar or vector type) and access."""

    element: types.Scalar | types.Vector
    access: Access = Access.readwrite

    def __str__(self) -> str:
        return f"Buffer[{self.element}, {self.access.value}]"


class Buffer:
    """`Buffer[f32]` (read-write), `Buffer[f16, readonly]`, `Buffer[u32, writeonly]`: a storage buffer;
    `Buffer[vector_type(u32, 4)]` one of vectors (16-byte elements: wide loads)."""

    def __class_getitem__(cls, item) -> BufferType:
        element, access = item if isinstance(item, tuple) else (item, Access.readwrite)
        numeric_vector = isinstance(element, types.Vector) and element.component != types.BOOL
        if not numeric_vector and (not isinstance(element, types.Scalar) or element == types.BOOL):
            raise SemanticError(f"Buffer[...] takes a numeric dtype (f32, u8, ...) or vector_type(dtype, n), "
                                f"not {element!r}")
        if not isinstance(access, Access):
            raise SemanticError(f"Buffer[{element}, ...]: access must be readonly, writeonly or readwrite, "
                                f"not {access!r}")
        return BufferType(element, access)


class constexpr:
    """Annotation of a compile-time parameter (`BLOCK: constexpr`); `constexpr(v)` in a body keeps v compile-time."""

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


class TargetQuery(abc.ABC):
    """A constexpr value the compilation target answers (`resolve(target)`); see target_subgroup_size and
    coop.largest_shape. Compiling without a target makes it an error."""

    @abc.abstractmethod
    def resolve(self, target):
        """The value for this target (a Target, or None when compiling without one)."""


@dataclass(frozen=True)
class SubgroupSizeQuery(TargetQuery):
    """`target_subgroup_size()`'s marker: the constexpr the target answers with its subgroup size."""

    def resolve(self, target) -> int:
        if target is None:
            raise SemanticError("target_subgroup_size() asks the target: compile with target=...")
        return target.subgroup_size


def target_subgroup_size() -> SubgroupSizeQuery:
    """`SG: constexpr = target_subgroup_size()`: the subgroup size of the device the kernel is compiled for."""
    return SubgroupSizeQuery()


class static_range:
    """`for i in static_range(n)`: unrolled at compile time, `i` a Python int (constexpr bounds only)."""

    def __init__(self, *args):
        self.range = range(*args)


# builtins ---------------------------------------------------------------------------------------
def builtin(fn):
    """Mark a surface function as a builtin: only callable inside a kernel, where it gets `_semantic`."""

    @functools.wraps(fn)
    def wrapper(*args, _semantic=None, **kwargs):
        if _semantic is None:
            raise SemanticError(f"{fn.__name__}() can only be called inside a @kernel or @func")
        return fn(*args, _semantic=_semantic, **kwargs)

    wrapper.__hydroplane_builtin__ = True
    return wrapper


@builtin
def global_id(axis: int = 0, *, _semantic):
    """The invocation's global id along axis 0, 1 or 2 (u32)."""
    return _semantic.builtin_id("GlobalInvocationId", axis)


@builtin
def local_id(axis: int = 0, *, _semantic):
    """The invocation's id in its workgroup along an axis (u32)."""
    return _semantic.builtin_id("LocalInvocationId", axis)


@builtin
def workgroup_id(axis: int = 0, *, _semantic):
    """The workgroup's id along an axis (u32)."""
    return _semantic.builtin_id("WorkgroupId", axis)


@builtin
def num_workgroups(axis: int = 0, *, _semantic):
    """The grid's size in workgroups along an axis (u32)."""
    return _semantic.builtin_id("NumWorkgroups", axis)


@builtin
def local_index(*, _semantic):
    """The invocation's flat index in its workgroup (u32)."""
    return _semantic.builtin_id("LocalInvocationIndex")


@builtin
def lane_id(*, _semantic):
    """The invocation's index in its subgroup (u32)."""
    return _semantic.builtin_id("SubgroupLocalInvocationId")


@builtin
def subgroup_size(*, _semantic):
    """Invocations per subgroup (u32)."""
    return _semantic.builtin_id("SubgroupSize")


@builtin
def subgroup_id(*, _semantic):
    """The subgroup's index in its workgroup (u32)."""
    return _semantic.builtin_id("SubgroupId")


@builtin
def num_subgroups(*, _semantic):
    """Subgroups per workgroup (u32)."""
    return _semantic.builtin_id("NumSubgroups")


@builtin
def barrier(*, _semantic):
    """Workgroup execution and memory barrier (shared and buffer memory)."""
    _semantic.barrier()


@builtin
def fence(order, *, _semantic):
    """A memory fence over buffer memory at device scope (QueueFamily, the scope of buffer atomics), for workgroups
    that hand data to each other through an atomic: "release" (this invocation's earlier buffer writes, and those
    a barrier() ordered before it, made available to the device and ordered before its later atomics), "acquire"
    (its later buffer reads see what the workgroups whose releases its earlier atomics observed wrote before
    them) or "acq_rel" (both). The writer: stores, barrier(), fence("release"), atomic; the reader: atomic,
    fence("acquire"), loads (docs/language.md)."""
    _semantic.fence(order)


@builtin
def shared_array(dtype, length, *, _semantic):
    """A workgroup-shared array of `length` (constexpr) elements of `dtype`; index it like a buffer."""
    return _semantic.shared_array(dtype, length)


@builtin
def local_array(element_type, length, *, _semantic):
    """A per-invocation array (Function storage) of `length` (constexpr) scalars, vectors or matrices
    (an array of matrices is indexed by constexpr ints: each slot is its own variable)."""
    return _semantic.local_array(element_type, length)


@builtin
def cast(x, dtype, *, _semantic):
    """Value conversion (same as `dtype(x)`), component-wise for vectors and matrices."""
    return _semantic.convert(x, dtype)


@builtin
def bitcast(x, dtype, *, _semantic):
    """Reinterpret the bits of x as `dtype` (same width; a scalar and a vector of the same bits too, e.g. a u32 as
    `vector_type(f16, 2)`, the low half its first component)."""
    return _semantic.bitcast(x, dtype)


@builtin
def dot4x8(a, b, signs="ss", *, _semantic):
    """The dot product of the four 8-bit integers packed in each of the 32-bit words a and b (byte 0 first), exact,
    as s32 (u32 for signs "uu"). `signs` (compile-time) reads a's and b's bytes: "ss" both signed, "su" a signed and
    b unsigned, "uu" both unsigned. SPIR-V's SDot, SUDot, UDot on PackedVectorFormat4x8Bit: the device's integer
    dot product (shaderIntegerDotProduct, core in Vulkan 1.3); a target without it refuses the kernel."""
    return _semantic.dot4x8(a, b, signs)


@builtin
def select(condition, a, b, *, _semantic):
    """`a` where condition else `b` (both evaluated)."""
    return _semantic.select(condition, a, b)


@builtin
def vec(*components, _semantic):
    """A 2- to 4-component vector of scalars of one type."""
    return _semantic.vector(components)


@builtin
def dot(a, b, *, _semantic):
    """Dot product of two float vectors."""
    return _semantic.dot(a, b)


def _math(name: str, doc: str):
    def fn(*args, _semantic):
        return _semantic.math(name, *args)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


abs_ = _math("abs", "|x| (FAbs/SAbs; an unsigned value is its own)")
minimum = _math("minimum", "the smaller of two values (FMin/SMin/UMin); Python's min() maps here")
maximum = _math("maximum", "the larger of two values; Python's max() maps here")
clamp = _math("clamp", "clamp(x, lo, hi)")
sign = _math("sign", "-1, 0 or 1 in x's type")
sqrt = _math("sqrt", "square root (floats)")
rsqrt = _math("rsqrt", "1 / sqrt(x)")
exp = _math("exp", "e ** x")
exp2 = _math("exp2", "2 ** x")
log = _math("log", "natural logarithm")
log2 = _math("log2", "base-2 logarithm")
sin = _math("sin", "sine")
cos = _math("cos", "cosine")
tan = _math("tan", "tangent")
tanh = _math("tanh", "hyperbolic tangent")
atan = _math("atan", "arc tangent")
atan2 = _math("atan2", "atan2(y, x)")
floor = _math("floor", "round down")
ceil = _math("ceil", "round up")
trunc = _math("trunc", "round toward zero")
round_even = _math("round", "round to nearest, ties to even")
fract = _math("fract", "x - floor(x)")
pow_ = _math("pow", "x ** y (floats)")
fma = _math("fma", "a * b + c, fused")
mix = _math("mix", "mix(x, y, a) = x * (1 - a) + y * a")


def _atomic(op: str, doc: str, comparator: bool = False):
    if comparator:
        def fn(memory, index, value, comparator, *, _semantic):
            return _semantic.atomic(op, memory, index, value, comparator)
    else:
        def fn(memory, index, value, *, _semantic):
            return _semantic.atomic(op, memory, index, value)

    fn.__name__ = fn.__qualname__ = f"atomic_{op}"
    fn.__doc__ = f"{doc} memory[index] (a buffer or shared array of 32-bit ints) atomically; returns the old value."
    return builtin(fn)


atomic_add = _atomic("add", "Add `value` to")
atomic_sub = _atomic("sub", "Subtract `value` from")
atomic_min = _atomic("min", "Store the smaller of `value` and")
atomic_max = _atomic("max", "Store the larger of `value` and")
atomic_and = _atomic("and", "Bitwise-and `value` into")
atomic_or = _atomic("or", "Bitwise-or `value` into")
atomic_xor = _atomic("xor", "Bitwise-xor `value` into")
atomic_exchange = _atomic("exchange", "Store `value` into")
atomic_compare_exchange = _atomic("compare_exchange", "Store `value` where `comparator` equals", comparator=True)


def _subgroup_arith(op: str, group_operation: str, name: str):
    def fn(x, *, _semantic):
        return _semantic.subgroup_arith(op, group_operation, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{group_operation} of x over the subgroup's active invocations ({op})"
    return builtin(fn)


subgroup_add = _subgroup_arith("add", "Reduce", "subgroup_add")
subgroup_mul = _subgroup_arith("mul", "Reduce", "subgroup_mul")
subgroup_min = _subgroup_arith("min", "Reduce", "subgroup_min")
subgroup_max = _subgroup_arith("max", "Reduce", "subgroup_max")
subgroup_and = _subgroup_arith("and", "Reduce", "subgroup_and")
subgroup_or = _subgroup_arith("or", "Reduce", "subgroup_or")
subgroup_xor = _subgroup_arith("xor", "Reduce", "subgroup_xor")
subgroup_inclusive_add = _subgroup_arith("add", "InclusiveScan", "subgroup_inclusive_add")
subgroup_exclusive_add = _subgroup_arith("add", "ExclusiveScan", "subgroup_exclusive_add")


@builtin
def subgroup_broadcast(x, lane, *, _semantic):
    """x of the subgroup's invocation `lane` (a uniform u32)."""
    return _semantic.subgroup_lane("broadcast", x, lane)


@builtin
def subgroup_shuffle(x, lane, *, _semantic):
    """x of invocation `lane` (any u32 per invocation)."""
    return _semantic.subgroup_lane("shuffle", x, lane)


@builtin
def subgroup_shuffle_xor(x, mask, *, _semantic):
    """x of invocation lane_id() ^ mask."""
    return _semantic.subgroup_lane("shuffle_xor", x, mask)


@builtin
def subgroup_shuffle_up(x, delta, *, _semantic):
    """x of invocation lane_id() - delta."""
    return _semantic.subgroup_lane("shuffle_up", x, delta)


@builtin
def subgroup_shuffle_down(x, delta, *, _semantic):
    """x of invocation lane_id() + delta."""
    return _semantic.subgroup_lane("shuffle_down", x, delta)


@builtin
def subgroup_broadcast_first(x, *, _semantic):
    """x of the lowest active invocation."""
    return _semantic.subgroup_broadcast_first(x)


@builtin
def subgroup_all(predicate, *, _semantic):
    return _semantic.subgroup_vote("all", predicate)


@builtin
def subgroup_any(predicate, *, _semantic):
    return _semantic.subgroup_vote("any", predicate)


@builtin
def subgroup_elect(*, _semantic):
    """True in exactly one active invocation of the subgroup."""
    return _semantic.subgroup_elect()


# compile-time helpers (the visitor runs them; see codegen.COMPILE_TIME) ------------------------
def static_assert(condition, message: str = "") -> None:
    """Fail the compilation (at this line) when the compile-time condition is false."""
    raise SemanticError("static_assert() can only be used inside a @kernel or @func")


def static_print(*values) -> None:
    """Print compile-time values (and the types of run-time ones) while compiling."""
    raise SemanticError("static_print() can only be used inside a @kernel or @func")
