"""The builder-made sample kernels: each validates with spirv-val and carries what it promises.

What it promises: the derived capabilities/extensions/memory model per component type and
family, the matrix shapes, strides and layouts the loads and stores use, the signedness
and saturation operands of integer MulAdds, and clear errors for impossible requests.
"""

from __future__ import annotations

import pytest

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import decode, grammar, reflect, validate
from hydroplane.spirv.samples import (
    COOP_A_TYPES,
    COOP_C_TYPES,
    REDUCE_MODES,
    VECTOR_ADD_TYPES,
    SampleError,
    coop_matmul_tile,
    coop_reduce_tile,
    vector_add,
)

Op = grammar.Op
pytestmark = pytest.mark.tools

KHR_COMBINATIONS = [("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("f32", "f32"),
                    ("s8", "s32"), ("u8", "u32"), ("s8", "u32"), ("u8", "s32")]

# a_type -> capabilities beyond Shader/VulkanMemoryModel/CooperativeMatrixKHR the A/B data needs.
A_TYPE_CAPABILITIES = {
    "f16": {"Float16", "StorageBuffer16BitAccess"},
    "bf16": {"BFloat16CooperativeMatrixKHR", "StorageBuffer16BitAccess"},
    "f32": set(),
    "s8": {"Int8", "StorageBuffer8BitAccess"},
    "u8": {"Int8", "StorageBuffer8BitAccess"},
}


def _declared(module, opcode):
    return [i for i in module.instructions if i.opcode == opcode]


def _capabilities(module) -> set[str]:
    return {grammar.enumerant("Capability", i.operands[0].value).name for i in _declared(module, Op.Capability)}


def _extensions(module) -> set[str]:
    return {i.operands[0].value for i in _declared(module, Op.Extension)}


def _constant_values(module) -> dict[int, int]:
    return {i.result_id: i.operands[0].value for i in _declared(module, Op.Constant)}


@pytest.mark.parametrize("layout", ["row", "column"])
@pytest.mark.parametrize("a_type,c_type", KHR_COMBINATIONS)
def test_khr_tile_validates_and_derives_requirements(spirv_val, a_type, c_type, layout):
    words = coop_matmul_tile(8, 8, 8, a_type, c_type, layout=layout)
    validate(words, "vulkan1.3")
    module = decode(words)
    expected = {"Shader", "VulkanMemoryModel"} | A_TYPE_CAPABILITIES[a_type]
    if a_type != "bf16":  # BFloat16CooperativeMatrixKHR implies CooperativeMatrixKHR
        expected.add("CooperativeMatrixKHR")
    if c_type == "f16" and a_type != "f16":
        expected |= {"Float16", "StorageBuffer16BitAccess"}
    assert _capabilities(module) == expected
    expected_ext = {"SPV_KHR_cooperative_matrix"} | ({"SPV_KHR_bfloat16"} if a_type == "bf16" else set())
    assert _extensions(module) == expected_ext
    (memory_model,) = _declared(module, Op.MemoryModel)
    assert grammar.enumerant("MemoryModel", memory_model.operands[1].value).name == "Vulkan"


@pytest.mark.parametrize("m,n,k,layout", [(8, 8, 8, "row"), (16, 8, 32, "row"), (16, 8, 32, "column"),
                                          (32, 16, 8, "column")])
def test_khr_tile_shapes_strides_and_layout(spirv_val, m, n, k, layout):
    words = coop_matmul_tile(m, n, k, "f16", "f32", layout=layout, local_size=64)
    validate(words)
    module = decode(words)
    value = _constant_values(module)
    types = {i.result_id: i for i in _declared(module, Op.TypeCooperativeMatrixKHR)}
    loads = _declared(module, Op.CooperativeMatrixLoadKHR)
    assert len(loads) == 3
    shapes = [(value[types[i.result_type].operands[2].value], value[types[i.result_type].operands[3].value],
               grammar.enumerant("CooperativeMatrixUse", value[types[i.result_type].operands[4].value]).name)
              for i in loads]
    assert shapes == [(m, k, "MatrixAKHR"), (k, n, "MatrixBKHR"), (m, n, "MatrixAccumulatorKHR")]
    (store,) = _declared(module, Op.CooperativeMatrixStoreKHR)
    layout_name = {"row": "RowMajorKHR", "column": "ColumnMajorKHR"}[layout]
    strides = (k, n, n, n) if layout == "row" else (m, k, m, m)
    for inst, stride in zip([*loads, store], strides):
        layout_id, stride_id = inst.operands[-2].value, inst.operands[-1].value
        assert grammar.enumerant("CooperativeMatrixLayout", value[layout_id]).name == layout_name
        assert value[stride_id] == stride
    for inst in types.values():
        assert grammar.enumerant("Scope", value[inst.operands[1].value]).name == "Subgroup"
    interface = reflect(words)
    assert interface.entry_points[0].local_size == (64, 1, 1)
    assert [(b.set, b.binding, b.name) for b in sorted(interface.bindings, key=lambda b: b.binding)] == [
        (0, 0, "a"), (0, 1, "b"), (0, 2, "c"), (0, 3, "d")]


@pytest.mark.parametrize("a_type,c_type,saturating,expected", [
    ("s8", "s32", False, {"MatrixASignedComponentsKHR", "MatrixBSignedComponentsKHR",
                          "MatrixCSignedComponentsKHR", "MatrixResultSignedComponentsKHR"}),
    ("u8", "u32", False, set()),
    ("u8", "u32", True, {"SaturatingAccumulationKHR"}),
    ("s8", "u32", True, {"MatrixASignedComponentsKHR", "MatrixBSignedComponentsKHR",
                         "SaturatingAccumulationKHR"}),
    ("u8", "s32", False, {"MatrixCSignedComponentsKHR", "MatrixResultSignedComponentsKHR"}),
    ("f16", "f32", False, set()),
])
def test_mul_add_operands(spirv_val, a_type, c_type, saturating, expected):
    words = coop_matmul_tile(8, 8, 8, a_type, c_type, saturating=saturating)
    validate(words)
    (mul_add,) = _declared(decode(words), Op.CooperativeMatrixMulAddKHR)
    operands = mul_add.operands[3:]
    mask = operands[0].value if operands else 0
    names = {e.name for e in grammar.operand_kind("CooperativeMatrixOperands").enumerants
             if e.value and mask & e.value == e.value}
    assert names == expected
    assert (not operands) == (not expected)  # no mask operand at all when nothing is set


@pytest.mark.parametrize("a_type,c_type", [("f16", "f32"), ("f16", "f16"), ("f32", "f32"), ("s8", "s32"),
                                           ("u8", "u32")])
@pytest.mark.parametrize("layout", ["row", "column"])
def test_nv_tile(spirv_val, a_type, c_type, layout):
    words = coop_matmul_tile(16, 8, 16, a_type, c_type, family="nv", layout=layout)
    validate(words)
    module = decode(words)
    assert "CooperativeMatrixNV" in _capabilities(module)
    assert "CooperativeMatrixKHR" not in _capabilities(module)
    assert _extensions(module) == {"SPV_NV_cooperative_matrix"}
    assert not _declared(module, Op.TypeCooperativeMatrixKHR)
    assert len(_declared(module, Op.TypeCooperativeMatrixNV)) == (2 if a_type == c_type else 3)
    (column_major,) = _declared(module, Op.ConstantTrue if layout == "column" else Op.ConstantFalse)
    value = _constant_values(module)
    for inst in _declared(module, Op.CooperativeMatrixLoadNV) + _declared(module, Op.CooperativeMatrixStoreNV):
        assert inst.operands[-1].value == column_major.result_id
    strides = [value[i.operands[-2].value] for i in _declared(module, Op.CooperativeMatrixLoadNV)]
    assert strides == ([16, 8, 8] if layout == "row" else [16, 16, 16])
    (mul_add,) = _declared(module, Op.CooperativeMatrixMulAddNV)
    assert len(mul_add.operands) == 3


def test_workgroup_scope_tile_is_nv2(spirv_val):
    words = coop_matmul_tile(32, 32, 16, "f16", "f32", scope="Workgroup", local_size=128)
    validate(words)
    module = decode(words)
    assert "SPV_NV_cooperative_matrix2" in _extensions(module)
    value = _constant_values(module)
    scopes = {grammar.enumerant("Scope", value[t.operands[1].value]).name
              for t in _declared(module, Op.TypeCooperativeMatrixKHR)}
    assert scopes == {"Workgroup"}


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(m=0, n=8, k=8), "m must be a positive int"),
    (dict(m=8, n=8.0, k=8), "n must be a positive int"),
    (dict(m=8, n=8, k=8, a_type="f64"), "a_type='f64'"),
    (dict(m=8, n=8, k=8, c_type="bf16"), "c_type='bf16'"),
    (dict(m=8, n=8, k=8, a_type="s8", c_type="f32"), "not a cooperative-matrix combination"),
    (dict(m=8, n=8, k=8, saturating=True), "integer matrices only"),
    (dict(m=8, n=8, k=8, family="amd"), "family='amd'"),
    (dict(m=8, n=8, k=8, layout="diagonal"), "layout='diagonal'"),
    (dict(m=8, n=8, k=8, a_type="bf16", family="nv"), "legacy NV family"),
    (dict(m=8, n=8, k=8, scope="Device"), "scope='Device'"),
    (dict(m=8, n=8, k=8, local_size=-1), "local_size must be a positive int"),
])
def test_coop_tile_rejects_bad_arguments(kwargs, fragment):
    with pytest.raises(SampleError, match=None) as info:
        coop_matmul_tile(**kwargs)
    assert isinstance(info.value, HydroplaneError)
    assert fragment in str(info.value)


def test_every_listed_type_is_covered():
    assert set(COOP_A_TYPES) == {a for a, _ in KHR_COMBINATIONS}
    assert set(COOP_C_TYPES) == {c for _, c in KHR_COMBINATIONS} | {"f16"}


@pytest.mark.parametrize("dtype", VECTOR_ADD_TYPES)
def test_vector_add_validates(spirv_val, dtype):
    words = vector_add(dtype, local_size=32)
    validate(words)
    module = decode(words)
    add = Op.FAdd if dtype.startswith("f") else Op.IAdd
    assert len(_declared(module, add)) == 1
    interface = reflect(words)
    assert interface.push_constant_size == 4
    assert interface.entry_points[0].local_size == (32, 1, 1)
    assert sorted(b.binding for b in interface.bindings) == [0, 1, 2]
    width = int(dtype[1:])
    caps = _capabilities(module)
    storage = {8: "StorageBuffer8BitAccess", 16: "StorageBuffer16BitAccess"}.get(width)
    assert (storage in caps) if storage else not any("BitAccess" in c for c in caps)


@pytest.mark.parametrize("dtype", ["bf16", "bool", "f8", ""])
def test_vector_add_rejects_types_without_addition(dtype):
    with pytest.raises(SampleError, match="dtype="):
        vector_add(dtype)


@pytest.mark.parametrize("family,extension", [("nv2", "SPV_NV_cooperative_matrix2"),
                                              ("ext", "SPV_EXT_cooperative_matrix_maintenance1")])
@pytest.mark.parametrize("reduce", REDUCE_MODES)
@pytest.mark.parametrize("combine,dtype", [("add", "f32"), ("max", "f16"), ("min", "s32"), ("max", "u32")])
def test_reduce_tile_validates(spirv_val, family, extension, reduce, combine, dtype):
    words = coop_reduce_tile(16, 8, reduce, combine, dtype, family=family)
    validate(words)
    module = decode(words)
    assert extension in _extensions(module)
    assert {"CooperativeMatrixReductionsEXT", "CooperativeMatrixKHR"} <= _capabilities(module)
    (op,) = _declared(module, Op.CooperativeMatrixReduceNV)
    mask = op.operands[1].value  # operands: Matrix, Reduce, CombineFunc
    assert mask == sum(grammar.enumerant("CooperativeMatrixReduce", part).value for part in reduce.split("|"))
    value = _constant_values(module)
    result_type = {t.result_id: t for t in _declared(module, Op.TypeCooperativeMatrixKHR)}[op.result_type]
    shape = (value[result_type.operands[2].value], value[result_type.operands[3].value])
    assert shape == ((8, 4) if reduce == "2x2" else (16, 8))


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(m=7, n=8, reduce="2x2"), "needs even m and n"),
    (dict(m=8, n=8, reduce="Diagonal"), "reduce='Diagonal'"),
    (dict(m=8, n=8, combine="mul"), "combine='mul'"),
    (dict(m=8, n=8, dtype="s8"), "dtype='s8'"),
    (dict(m=8, n=8, family="khr"), "family='khr'"),
])
def test_reduce_tile_rejects_bad_arguments(kwargs, fragment):
    with pytest.raises(SampleError) as info:
        coop_reduce_tile(**kwargs)
    assert fragment in str(info.value)
