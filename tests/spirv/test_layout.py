"""types.py's layouts (std140, std430, scalar) against glslang's: every Offset, ArrayStride and MatrixStride.

glslang compiles GLSL blocks (storage buffers, uniform blocks, push constants); the block type is read
back with `read_types`, its layout decorations stripped, and `laid_out(stripped, rule)` must give the
decorated type back exactly, with the same `size`. Named cases cover scalars of every width, vectors,
mat2/mat3/mat4 and non-square matrices row- and column-major, arrays of scalars, vectors, matrices and
structs, nested structs and a struct after a vec3; seeded random blocks (tests/spirv/layout_blocks.py)
cover the rest, each rule in uniform, buffer and push-constant blocks.
"""

from __future__ import annotations

import re

import pytest

from conftest import run_tool
from hydroplane.spirv import ModuleBuilder, reflect, types, validate
from hydroplane.spirv.binary import decode
from hydroplane.spirv.enums import StorageClass
from hydroplane.spirv.grammar import Op
from hydroplane.spirv.types import F32, LAYOUT_RULES
from layout_blocks import (HEADER, BlockMaker, block_type, block_types_by_instance, compile_glsl, every_shape_block,
                           first_difference, render_block, render_shader, strip_layout, structs_used)

STRUCTS = """
struct Inner { vec3 v; };
struct Pair { double d; float f; };
struct Halves { float16_t h; f16vec3 v; int8_t b; };
struct Mats { mat3 m; mat2x3 n; mat4x2 o; };
struct Deep { Inner i; float f; Pair p[2]; Halves h; };
"""

# name -> block body; each is compiled as a buffer, a uniform block and a push-constant block, per rule
CASES = {
    "scalars of every width": "float a; int b; uint c; float16_t h; double d; int8_t i8; uint8_t u8; "
                              "int16_t i16; uint16_t u16; int64_t i64; uint64_t u64; float16_t h2;",
    "vectors": "float a; vec2 b; vec3 c; vec4 d; f16vec3 e; dvec3 f; i8vec3 g; u16vec2 h; i64vec2 k; vec3 l; "
               "float m; f16vec2 n; dvec2 o; u8vec4 p;",
    "square matrices, column-major": "float x; layout(column_major) mat2 a; mat3 b; mat4 c; float d; mat3 e;",
    "square matrices, row-major": "float x; layout(row_major) mat2 a; layout(row_major) mat3 b; "
                                  "layout(row_major) mat4 c; float d;",
    "non-square matrices": "float x; mat2x3 a; layout(row_major) mat2x3 b; mat3x2 c; layout(row_major) mat3x2 d; "
                           "mat4x3 e; layout(row_major) mat3x4 f; mat2x4 g; layout(row_major) mat4x2 h; float i;",
    "double and half matrices": "float x; dmat3 a; layout(row_major) dmat2x3 b; f16mat3 c; "
                                "layout(row_major) f16mat2x3 d; float16_t e; f16mat4x3 f; dmat4x2 g;",
    "arrays of scalars": "float a[3]; float16_t b[5]; double c[2]; int8_t d[7]; float e; uint64_t f[2]; int16_t g;",
    "arrays of vectors": "vec2 a[3]; vec3 b[2]; f16vec3 c[3]; dvec3 d[2]; float e; i8vec2 f[3]; vec4 g[2];",
    "arrays of matrices": "float x; mat3 a[2]; layout(row_major) mat2x3 b[2]; mat3x2 c[2][2]; float e; "
                          "layout(row_major) f16mat3x2 f[3]; dmat2 g[2];",
    "arrays of structs": "Pair a[3]; Inner b[2]; float c; Halves d[3]; float e;",
    "struct after a vec3": "vec3 a; Inner b; float c; Pair d; float e; vec3 f; Halves g; float16_t h;",
    "nested structs": "Deep a; float b; Deep c[2]; layout(row_major) Mats d; Mats e; float f; Halves g; int8_t h;",
    "multi-dimensional arrays": "float a[2][3]; vec3 b[2][2]; Pair c[2][1]; float d; layout(row_major) mat2x3 e[2][2];",
    "a mat3 after a float (issue 8, found 2)": "float s; mat3 m;",
}
STORAGES = {"std430": ("buffer", "push_constant"), "std140": ("buffer", "uniform", "push_constant"),
            "scalar": ("buffer", "uniform", "push_constant")}


def _block_text(storage: str, rule: str, name: str, body: str, binding: int) -> str:
    if storage == "push_constant":
        return f"layout({rule}, push_constant) uniform {name} {{ {body} }} {name.lower()};"
    return f"layout({rule}, set = 0, binding = {binding}) {storage} {name} {{ {body} }} {name.lower()};"


def _check_against_glslang(glslang_type: types.Type, rule: types.LayoutRule, what: str,
                           model: types.Type | None = None) -> None:
    """laid_out(stripped glslang type) is glslang's type exactly; sizes and offsets agree."""
    stripped = strip_layout(glslang_type)
    if model is not None:
        assert stripped == model, f"{what}: read back as {stripped}, rendered from {model}: " \
                                  f"{first_difference(stripped, model)}"
    ours = types.laid_out(stripped, rule)
    assert ours == glslang_type, f"{what} under {rule}: ours vs glslang: {first_difference(ours, glslang_type)}"
    glslang_size = types.size(glslang_type, rule)
    assert types.size(ours, rule) == glslang_size, what
    assert types.size(stripped, rule) == glslang_size, what
    assert types.member_offsets(stripped, rule) == [m.offset for m in glslang_type.members], what


@pytest.mark.parametrize("rule", LAYOUT_RULES)
def test_named_cases_match_glslang(rule, tmp_path):
    blocks, names = [], {}
    for i, (case, body) in enumerate(CASES.items()):
        for storage in STORAGES[rule]:
            if storage == "push_constant":
                continue
            name = f"B{len(blocks)}"
            blocks.append(_block_text(storage, rule, name, body, len(blocks)))
            names[name.lower()] = f"{case!r} in a {rule} {storage} block"
    module = decode(compile_glsl(HEADER + STRUCTS + "\n".join(blocks) + "\nvoid main() {}\n", tmp_path))
    found = block_types_by_instance(module)
    assert set(found) == set(names)
    for instance, what in names.items():
        _check_against_glslang(found[instance], rule, what)


@pytest.mark.parametrize("rule", LAYOUT_RULES)
@pytest.mark.parametrize("case", list(CASES))
def test_named_cases_as_push_constants_match_glslang(rule, case, tmp_path):
    source = HEADER + STRUCTS + _block_text("push_constant", rule, "P", CASES[case], 0) + "\nvoid main() {}\n"
    found = block_types_by_instance(decode(compile_glsl(source, tmp_path)))
    _check_against_glslang(found["p"], rule, f"{case!r} in a {rule} push-constant block")


@pytest.mark.parametrize("rule", LAYOUT_RULES)
@pytest.mark.parametrize("seed", range(16))
def test_random_blocks_match_glslang(rule, seed, tmp_path):
    maker = BlockMaker(seed * 31 + LAYOUT_RULES.index(rule))
    blocks = [maker.block(storage, rule, binding=i) for i, storage in
              enumerate([s for s in STORAGES[rule] if s != "push_constant"] * 3)]
    blocks += [maker.block("push_constant", rule), every_shape_block(rule, binding=len(blocks))]
    source = render_shader(blocks)
    found = block_types_by_instance(decode(compile_glsl(source, tmp_path)))
    for b in blocks:
        what = "\n".join(["", *(s.name for s in structs_used([b])), render_block(b)])
        _check_against_glslang(found[b.instance], rule, f"seed {seed}: {what}\n", model=block_type(b))


# ------------------------------------------------------------------------------------------------
# Known numbers, written out


def _laid(rule: str, *members: types.Type) -> types.Struct:
    return types.laid_out(types.Struct(tuple(types.Member(t, name=f"m{i}") for i, t in enumerate(members))), rule)


VEC3 = types.Vector(F32, 3)
MAT3 = types.Matrix(VEC3, 3)


def test_mat3_after_a_float_is_64_bytes_with_matrix_stride_16():
    for rule in ("std140", "std430"):
        t = _laid(rule, F32, MAT3)
        assert [m.offset for m in t.members] == [0, 16] and t.members[1].matrix_stride == 16
        assert types.size(t, rule) == 64
    t = _laid("scalar", F32, MAT3)
    assert [m.offset for m in t.members] == [0, 4] and t.members[1].matrix_stride == 12
    assert types.size(t, "scalar") == 40


def test_std140_rounds_array_strides_to_16_and_scalar_packs():
    pair = types.Struct((types.Member(types.F64, name="d"), types.Member(F32, name="f")))
    assert types.array_stride(types.Array(F32, 3), "std140") == 16
    assert types.array_stride(types.Array(F32, 3), "std430") == 4
    assert types.array_stride(types.Array(VEC3, 3), "scalar") == 12
    assert types.array_stride(types.Array(pair, 3), "scalar") == 16  # 12 bytes, aligned to the double
    t = _laid("scalar", types.Array(pair, 3), F32, VEC3, F32)
    assert [m.offset for m in t.members] == [0, 44, 48, 60]  # the last element is not padded
    t = _laid("std430", types.Struct((types.Member(VEC3, name="v"),)), F32)
    assert [m.offset for m in t.members] == [0, 16]  # the member after a struct starts at its alignment


def test_row_major_arrays_of_matrices_take_the_row_stride():
    mat2x3 = types.Matrix(VEC3, 2)
    member = types.Member(types.Array(mat2x3, 2), row_major=True, name="m")
    t = types.laid_out(types.Struct((member,)), "std430")
    assert t.members[0].matrix_stride == 8 and t.members[0].type.stride == 24


# ------------------------------------------------------------------------------------------------
# Reflection: the push-constant size of { float s; mat3 m; } (issue 8, found 2)

PUSH_MAT3 = HEADER + "layout(push_constant) uniform P { float s; mat3 m; } p;\n" \
    "layout(set = 0, binding = 0) buffer O { float o; };\nvoid main() { o = p.s + p.m[2][2]; }\n"


def test_glslang_reflection_sizes_the_mat3_push_constant_block_64(glslang, tmp_path):
    src = tmp_path / "push.comp"
    src.write_text(PUSH_MAT3)
    out = run_tool([glslang, "-q", "--target-env", "vulkan1.3", str(src)], cwd=tmp_path).stdout.decode()
    assert re.search(r"^P: offset -1, type ffffffff, size 64,", out, re.M), out
    block = block_types_by_instance(decode(compile_glsl(PUSH_MAT3, tmp_path)))["p"]
    assert types.size(block) == 64


def test_reflect_sizes_the_mat3_push_constant_block_64(tmp_path):
    assert reflect(compile_glsl(PUSH_MAT3, tmp_path)).push_constant_size == 64


# ------------------------------------------------------------------------------------------------
# The builder declares laid-out blocks with every decoration: spirv-val accepts them, they read back equal

@pytest.mark.parametrize("rule", LAYOUT_RULES)
def test_builder_declares_laid_out_blocks_that_validate_and_read_back(rule):
    maker = BlockMaker(77 + LAYOUT_RULES.index(rule))
    blocks = [every_shape_block(rule)] + [maker.block("buffer", rule, binding=i) for i in range(1, 8)]
    b = ModuleBuilder()
    variables = {}
    for block in blocks:
        laid = types.laid_out(block_type(block), rule)
        pointer = b.declare(types.Pointer(StorageClass.StorageBuffer, laid))
        var = b.variable(pointer, "StorageBuffer", name=block.instance)
        b.decorate(var, "DescriptorSet", 0)
        b.decorate(var, "Binding", block.binding)
        variables[block.instance] = laid
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    words = b.to_words()
    validate(words, extra_args=("--scalar-block-layout",) if rule == "scalar" else ())
    found = block_types_by_instance(decode(words))
    for instance, laid in variables.items():
        assert found[instance] == laid, first_difference(found[instance], laid)
