"""Random GLSL interface blocks and their type-model twins, for the layout tests.

A block is a small tree (`Block` of `Field`s whose bases are scalars, vectors, matrices or
`StructDecl`s, with array dimensions and row_major / column_major on block members). From one tree
come the GLSL text that glslang compiles (`render_shader`) and the undecorated type-model value
(`block_type`) that `types.laid_out(t, rule)` must decorate exactly as glslang does. `leaves` walks a
laid-out type to every scalar in memory with its byte offset and its GLSL access path, so a shader
can write each one and a test can place the same values at the offsets types.py computes.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from conftest import require_tool

from hydroplane.spirv import types
from hydroplane.spirv.binary import Module
from hydroplane.spirv.enums import StorageClass
from hydroplane.spirv.grammar import Op
from hydroplane.spirv.types import F16, F32, F64, S8, S16, S32, S64, U8, U16, U32, U64

# scalar type -> (GLSL scalar name, vector prefix, matrix prefix or None)
GLSL_NAMES: dict[types.Scalar, tuple[str, str, str | None]] = {
    F32: ("float", "vec", "mat"), F64: ("double", "dvec", "dmat"), F16: ("float16_t", "f16vec", "f16mat"),
    S32: ("int", "ivec", None), U32: ("uint", "uvec", None), S8: ("int8_t", "i8vec", None),
    U8: ("uint8_t", "u8vec", None), S16: ("int16_t", "i16vec", None), U16: ("uint16_t", "u16vec", None),
    S64: ("int64_t", "i64vec", None), U64: ("uint64_t", "u64vec", None),
}
FLOATS = (F32, F64, F16)
HEADER = """#version 460
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_scalar_block_layout : require
layout(local_size_x = 1) in;
"""
RUNTIME_ELEMENTS = 2  # elements of a trailing runtime array that the write test fills


@dataclass(frozen=True)
class StructDecl:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Field:
    """A member: base type, array dimensions as written (`T x[2][3]` is dims (2, 3); None is `[]`)."""

    name: str
    base: types.Scalar | types.Vector | types.Matrix | StructDecl
    dims: tuple[int | None, ...] = ()
    major: str | None = None  # 'row_major' / 'column_major' on a block member; None inherits


@dataclass(frozen=True)
class Block:
    """An interface block: storage 'buffer', 'uniform' or 'push_constant', under a layout rule."""

    name: str
    instance: str
    storage: str
    rule: types.LayoutRule
    fields: tuple[Field, ...]
    binding: int = 0
    major: str | None = None


# ------------------------------------------------------------------------------------------------
# GLSL text


def glsl_type_name(base) -> str:
    if isinstance(base, StructDecl):
        return base.name
    if isinstance(base, types.Scalar):
        return GLSL_NAMES[base][0]
    if isinstance(base, types.Vector):
        return f"{GLSL_NAMES[base.component][1]}{base.count}"
    return f"{GLSL_NAMES[base.column.component][2]}{base.columns}x{base.rows}"


def render_field(f: Field) -> str:
    dims = "".join(f"[{'' if d is None else d}]" for d in f.dims)
    major = f"layout({f.major}) " if f.major else ""
    return f"{major}{glsl_type_name(f.base)} {f.name}{dims};"


def render_struct(s: StructDecl) -> str:
    return f"struct {s.name} {{ " + " ".join(render_field(f) for f in s.fields) + " };"


def render_block(b: Block) -> str:
    qualifiers = [b.rule] + ([b.major] if b.major else [])
    if b.storage == "push_constant":
        qualifiers.append("push_constant")
        keyword = "uniform"
    else:
        qualifiers.append(f"set = 0, binding = {b.binding}")
        keyword = b.storage
    body = " ".join(render_field(f) for f in b.fields)
    return f"layout({', '.join(qualifiers)}) {keyword} {b.name} {{ {body} }} {b.instance};"


def structs_used(blocks) -> list[StructDecl]:
    """Every struct the blocks use, each once, a struct after the structs it uses."""
    found: dict[str, StructDecl] = {}

    def visit(fields):
        for f in fields:
            if isinstance(f.base, StructDecl) and f.base.name not in found:
                visit(f.base.fields)
                found[f.base.name] = f.base

    for b in blocks:
        visit(b.fields)
    return list(found.values())


def render_shader(blocks, body: str = "") -> str:
    lines = [HEADER] + [render_struct(s) for s in structs_used(blocks)] + [render_block(b) for b in blocks]
    return "\n".join(lines) + f"\nvoid main() {{\n{body}}}\n"


# ------------------------------------------------------------------------------------------------
# The type-model twin of a block, undecorated (what `strip_layout` makes of glslang's type)


def _field_type(f: Field, row_major: bool) -> types.Type:
    t: types.Type
    if isinstance(f.base, StructDecl):
        t = struct_type(f.base, row_major)
    else:
        t = f.base
    for d in reversed(f.dims):
        t = types.Array(t, d)
    return t


def _members(fields, row_major: bool) -> tuple[types.Member, ...]:
    members = []
    for f in fields:
        rm = row_major if f.major is None else f.major == "row_major"
        t = _field_type(f, rm)
        members.append(types.Member(t, row_major=rm and types.component_matrix(t) is not None, name=f.name))
    return tuple(members)


def struct_type(s: StructDecl, row_major: bool = False) -> types.Struct:
    return types.Struct(_members(s.fields, row_major), name=s.name)


def block_type(b: Block) -> types.Struct:
    return types.Struct(_members(b.fields, b.major == "row_major"), block=True, name=b.name)


def strip_layout(t: types.Type) -> types.Type:
    """`t` without Offset, ArrayStride and MatrixStride (RowMajor, names and Block kept)."""
    if isinstance(t, types.Array):
        return replace(t, element=strip_layout(t.element), stride=None)
    if isinstance(t, types.Struct):
        return replace(t, members=tuple(replace(m, type=strip_layout(m.type), offset=None, matrix_stride=None)
                                        for m in t.members))
    return t


def first_difference(a, b, path: str = "block") -> str | None:
    """Where two types differ first, said in words (None when equal)."""
    if type(a) is not type(b):
        return f"{path}: {a} vs {b}"
    if isinstance(a, types.Array):
        if (a.length, a.stride) != (b.length, b.stride):
            return f"{path}: length/ArrayStride {a.length}/{a.stride} vs {b.length}/{b.stride}"
        return first_difference(a.element, b.element, path + "[]")
    if isinstance(a, types.Struct):
        if len(a.members) != len(b.members) or (a.name, a.block) != (b.name, b.block):
            return f"{path}: {a} vs {b}"
        for i, (ma, mb) in enumerate(zip(a.members, b.members)):
            where = f"{path}.{ma.name or i}"
            for attr in ("offset", "matrix_stride", "row_major", "name"):
                if getattr(ma, attr) != getattr(mb, attr):
                    return f"{where}: {attr} {getattr(ma, attr)} vs {getattr(mb, attr)}"
            found = first_difference(ma.type, mb.type, where)
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a} vs {b}"


def block_types_by_instance(module: Module) -> dict[str, types.Type]:
    """{variable name: the pointee type} of every Uniform, StorageBuffer and PushConstant variable."""
    table = types.read_types(module)
    found = {}
    for inst in module.instructions:
        if inst.opcode == Op.Variable:
            pointer = table[inst.result_type]
            if pointer.storage in (StorageClass.Uniform, StorageClass.StorageBuffer, StorageClass.PushConstant):
                found[table.names[inst.result_id]] = pointer.pointee
    return found


# ------------------------------------------------------------------------------------------------
# Random blocks


class BlockMaker:
    """Random blocks from a seeded generator; structs it declares are reused across the blocks it makes."""

    def __init__(self, seed: int, *, scalars=tuple(GLSL_NAMES), max_depth: int = 2, max_fields: int = 5):
        self.rng = random.Random(seed)
        self.scalars = scalars
        self.max_depth = max_depth
        self.max_fields = max_fields
        self.structs: list[StructDecl] = []
        self.count = 0

    def _name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def base(self, depth: int):
        rng = self.rng
        kind = rng.choice(["scalar", "scalar", "vector", "vector", "matrix", "struct", "struct"])
        if kind == "struct" and depth < self.max_depth:
            if self.structs and rng.random() < 0.3:
                return rng.choice(self.structs)
            decl = StructDecl(self._name("S"), self.fields(depth + 1, in_block=False))
            self.structs.append(decl)
            return decl
        component = rng.choice(self.scalars)
        if kind == "matrix" and component not in FLOATS:
            component = rng.choice([s for s in self.scalars if s in FLOATS] or [F32])
        if kind == "vector":
            return types.Vector(component, rng.randint(2, 4))
        if kind == "matrix":
            return types.Matrix(types.Vector(component, rng.randint(2, 4)), rng.randint(2, 4))
        return component

    def field(self, depth: int, in_block: bool) -> Field:
        rng = self.rng
        dims = rng.choice([(), (), (), (rng.randint(1, 3),), (rng.randint(1, 3), rng.randint(1, 2))])
        major = rng.choice([None, None, "row_major", "column_major"]) if in_block else None
        return Field(self._name("f"), self.base(depth), dims, major)

    def fields(self, depth: int, in_block: bool) -> tuple[Field, ...]:
        return tuple(self.field(depth, in_block) for _ in range(self.rng.randint(1, self.max_fields)))

    def block(self, storage: str, rule: types.LayoutRule, binding: int = 0, runtime_tail: bool | None = None) -> Block:
        fields = self.fields(0, in_block=True)
        if runtime_tail is None:
            runtime_tail = storage == "buffer" and self.rng.random() < 0.3
        if runtime_tail:
            tail = self.field(0, in_block=True)
            fields += (replace(tail, dims=(None,) + tail.dims[:1]),)
        name = self._name("B")
        major = self.rng.choice([None, None, "row_major", "column_major"])
        return Block(name, name.lower(), storage, rule, fields, binding, major)


# ------------------------------------------------------------------------------------------------
# Every scalar of a laid-out block in memory, for the write test


@dataclass(frozen=True)
class Leaf:
    offset: int
    scalar: types.Scalar
    access: str


def leaves(t: types.Type, access: str, offset: int = 0, row_major: bool = False,
           matrix_stride: int | None = None):
    """Each scalar of a laid-out type: its byte offset (types.py's layout) and its GLSL access path."""
    if isinstance(t, types.Scalar):
        yield Leaf(offset, t, access)
    elif isinstance(t, types.Vector):
        for i in range(t.count):
            yield Leaf(offset + i * t.component.nbytes, t.component, f"{access}[{i}]")
    elif isinstance(t, types.Matrix):
        width = t.column.component.nbytes
        for c in range(t.columns):
            for r in range(t.rows):
                at = r * matrix_stride + c * width if row_major else c * matrix_stride + r * width
                yield Leaf(offset + at, t.column.component, f"{access}[{c}][{r}]")
    elif isinstance(t, types.Array):
        for i in range(RUNTIME_ELEMENTS if t.length is None else t.length):
            yield from leaves(t.element, f"{access}[{i}]", offset + i * t.stride, row_major, matrix_stride)
    elif isinstance(t, types.Struct):
        for m in t.members:
            yield from leaves(m.type, f"{access}.{m.name}", offset + m.offset, m.row_major, m.matrix_stride)
    else:
        raise AssertionError(f"no leaves for {t}")


def random_value(rng: random.Random, t: types.Scalar) -> tuple[str, bytes]:
    """A random value of scalar type `t` as a GLSL expression, and its bytes in memory."""
    if t in FLOATS:
        limit = {16: 1000.0, 32: 1.0e6, 64: 1.0e12}[t.width]
        value = np.array(rng.uniform(0.01, limit) * rng.choice([-1, 1]), t.dtype)
        text = repr(float(value))
        literal = {16: f"float16_t({text})", 32: text, 64: f"{text}lf"}[t.width]
        return literal, value.tobytes()
    bits = rng.getrandbits(t.width)
    value = bits - (1 << t.width) if t.signed and bits >> (t.width - 1) else bits
    if t.width in (32, 64):
        suffix = ("" if t.signed else "u") + ("l" if t.width == 64 else "")
        # the most negative value has no literal: a negated literal of it overflows
        literal = f"{value}{suffix}" if value > -(1 << (t.width - 1)) else f"({value + 1}{suffix} - 1{suffix})"
    else:
        literal = f"{GLSL_NAMES[t][0]}({value})"
    return literal, np.array(value, t.dtype).tobytes()


# ------------------------------------------------------------------------------------------------
# Compiling


def compile_glsl(source: str, tmp_path: Path, name: str = "layout") -> bytes:
    """SPIR-V (bytes) of a GLSL compute shader, compiled by glslang for Vulkan 1.3; the test fails on an error."""
    tool = require_tool("glslangValidator")
    src, out = tmp_path / f"{name}.comp", tmp_path / f"{name}.spv"
    src.write_text(source)
    proc = subprocess.run([tool, "-V", "--target-env", "vulkan1.3", str(src), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode:
        pytest.fail(f"glslangValidator failed:\n{proc.stdout}\n{proc.stderr}\n{source}")
    return out.read_bytes()


def every_shape_block(rule: types.LayoutRule, binding: int = 0) -> Block:
    """A block that holds every shape the layout tests promise, whatever the random ones hold: mat2/mat3/mat4
    row- and column-major, arrays of vectors and of structs, nested structs, a runtime-array tail."""
    vec3 = types.Vector(F32, 3)
    inner = StructDecl(f"Inner{rule}", (Field("v", vec3), Field("h", F16), Field("m", types.Matrix(vec3, 2))))
    outer = StructDecl(f"Outer{rule}", (Field("x", F32), Field("inner", inner, (2,)), Field("d", F64),
                                        Field("u", types.Vector(U8, 3))))
    fields = [Field("s", F32)]
    for n in (2, 3, 4):
        square = types.Matrix(types.Vector(F32, n), n)
        fields += [Field(f"col{n}", square, major="column_major"), Field(f"row{n}", square, major="row_major"),
                   Field(f"after{n}", F16)]
    fields += [Field("vectors", vec3, (3,)), Field("halves", types.Vector(F16, 3), (2,)),
               Field("rows", types.Matrix(vec3, 2), (2,), "row_major"), Field("nested", outer),
               Field("structs", outer, (2,), "row_major"), Field("tail", inner, (None,))]
    return Block(f"Every{rule}", f"every{rule}", "buffer", rule, tuple(fields), binding)
