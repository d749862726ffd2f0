"""ModuleBuilder: build modules, disassemble them with spirv-dis, compare text; validate with spirv-val.

Covers de-duplication of types and constants, literal encodings (64-bit, f16/bf16 bit
patterns, sign extension), the logical layout order, entry-point interfaces per SPIR-V
version, capability/extension/memory-model derivation from the grammar and the type rules,
and the errors bad requests raise.
"""

from __future__ import annotations

import random

import ml_dtypes
import numpy as np
import pytest
from conftest import run_tool

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import Op, decode, encode, grammar, to_bytes, types, validate
from hydroplane.spirv.builder import BuildError, ModuleBuilder
from hydroplane.spirv.requirements import RequirementError, derive


def disassemble(spirv_dis, words, tmp_path, name="m.spv") -> str:
    path = tmp_path / name
    path.write_bytes(to_bytes(words))
    proc = run_tool([spirv_dis, "--raw-id", "--no-header", "--no-indent", str(path)], text=True)
    return proc.stdout


def capabilities(words) -> list[str]:
    return [grammar.enumerant("Capability", i.operands[0].value).name
            for i in decode(words).instructions if i.opcode == Op.Capability]


def extensions(words) -> list[str]:
    return [i.operands[0].value for i in decode(words).instructions if i.opcode == Op.Extension]


def memory_model(words) -> str:
    (inst,) = [i for i in decode(words).instructions if i.opcode == Op.MemoryModel]
    return grammar.enumerant("MemoryModel", inst.operands[1].value).name


def compute_shell(b: ModuleBuilder, body, local_size=(1,)):
    """Wrap body(b) in `void main()` with an entry point; return the words."""
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    body(b)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=local_size)
    return b.to_words()


# -- text ------------------------------------------------------------------------------------

GOLDEN = """\
OpCapability Shader
%15 = OpExtInstImport "GLSL.std.450"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %10 "main" %6
OpExecutionMode %10 LocalSize 8 4 1
OpName %6 "out"
OpName %10 "main"
OpDecorate %3 ArrayStride 4
OpDecorate %4 Block
OpMemberDecorate %4 0 Offset 0
OpDecorate %6 DescriptorSet 0
OpDecorate %6 Binding 0
%1 = OpTypeFloat 32
%2 = OpTypeInt 32 0
%3 = OpTypeRuntimeArray %1
%4 = OpTypeStruct %3
%5 = OpTypePointer StorageBuffer %4
%6 = OpVariable %5 StorageBuffer
%7 = OpTypePointer StorageBuffer %1
%8 = OpTypeVoid
%9 = OpTypeFunction %8
%12 = OpConstant %1 1.5
%13 = OpConstant %1 2
%14 = OpConstant %1 -0.25
%17 = OpConstant %2 0
%10 = OpFunction %8 None %9
%11 = OpLabel
%16 = OpExtInst %1 %15 Fma %12 %13 %14
%18 = OpAccessChain %7 %6 %17 %17
OpStore %18 %16 Aligned 4
OpReturn
OpFunctionEnd
"""


def test_build_disassemble_compare_text(spirv_dis, spirv_val, tmp_path):
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    b.scalar("u32")
    out, f32_ptr = b.storage_buffer(f32, binding=0, name="out")

    def body(b):
        value = b.ext_inst("GLSL.std.450", "Fma", f32, b.constant(f32, 1.5), b.constant(f32, 2.0),
                           b.constant(f32, -0.25))
        b.emit(Op.Store, b.emit(Op.AccessChain, f32_ptr, out, b.u32(0), b.u32(0)), value, "Aligned", 4)

    words = compute_shell(b, body, local_size=(8, 4))
    assert disassemble(spirv_dis, words, tmp_path) == GOLDEN
    validate(words)
    module = b.module()
    assert encode(module) == words
    assert encode(decode(words)) == words
    assert module.bound == 19 and words[3] == 19


def test_constants_text(spirv_dis, spirv_val, tmp_path):
    b = ModuleBuilder()
    names = ["u64", "s64", "f64", "f16", "bf16", "s8", "u8", "s16"]
    types = {n: b.scalar(n) for n in names}
    made = [
        b.constant(types["u64"], 0x123456789ABCDEF0),
        b.constant(types["s64"], -2),
        b.constant(types["f64"], 0.1),
        b.constant(types["f16"], 1.0),
        b.constant(types["bf16"], -3.0),
        b.constant(types["s8"], -1),
        b.constant(types["u8"], 255),
        b.constant(types["s16"], -300),
    ]
    words = compute_shell(b, lambda b: None)
    text = disassemble(spirv_dis, words, tmp_path)
    lines = [line for line in text.splitlines() if "OpConstant" in line]
    assert lines == [
        f"%{made[0]} = OpConstant %{types['u64']} 1311768467463790320",
        f"%{made[1]} = OpConstant %{types['s64']} -2",
        f"%{made[2]} = OpConstant %{types['f64']} 0.10000000000000001",
        f"%{made[3]} = OpConstant %{types['f16']} 0x1p+0",
        f"%{made[4]} = OpConstant %{types['bf16']} -0x1.8p+1",
        f"%{made[5]} = OpConstant %{types['s8']} -1",
        f"%{made[6]} = OpConstant %{types['u8']} 255",
        f"%{made[7]} = OpConstant %{types['s16']} -300",
    ]
    assert set(capabilities(words)) == {"Shader", "Int8", "Int16", "Int64", "Float16", "Float64",
                                        "BFloat16TypeKHR"}
    assert extensions(words) == ["SPV_KHR_bfloat16"]
    validate(words)


def test_literal_words_match_numpy(spirv_val):
    rng = random.Random(2026)
    b = ModuleBuilder()
    f16, bf16, f32, f64 = (b.scalar(n) for n in ("f16", "bf16", "f32", "f64"))
    s8, s16, s64 = (b.scalar(n) for n in ("s8", "s16", "s64"))
    cases = []
    for _ in range(40):
        x = rng.uniform(-1000.0, 1000.0) * rng.choice([1e-6, 1e-2, 1.0])
        cases.append((f16, x, int(np.float16(x).view(np.uint16))))
        cases.append((bf16, x, int(np.array(x, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))))
        cases.append((f32, x, int(np.float32(x).view(np.uint32))))
        cases.append((f64, x, int(np.float64(x).view(np.uint64))))
        i = rng.randrange(-128, 128)
        cases.append((s8, i, i & 0xFFFFFFFF))  # sign-extended to 32 bits
        i = rng.randrange(-32768, 32768)
        cases.append((s16, i, i & 0xFFFFFFFF))
        i = rng.randrange(-(1 << 63), 1 << 63)
        cases.append((s64, i, i & (1 << 64) - 1))
    ids = [b.constant(t, value) for t, value, _ in cases]
    words = compute_shell(b, lambda b: None)
    defs = {i.result_id: i for i in decode(words).instructions if i.opcode == Op.Constant}
    for const, (t, value, bits) in zip(ids, cases):
        operand = defs[const].operands[0]
        assert (operand.value, defs[const].result_type) == (bits, t), value
        assert operand.nwords == (2 if t in (f64, s64) else 1)
    validate(words)


def test_bit_patterns_and_bfloat16_rounding():
    b = ModuleBuilder()
    f16, bf16 = b.scalar("f16"), b.scalar("bf16")
    assert b.constant_bits(f16, 0x3C00) == b.constant(f16, 1.0)
    assert b.constant_bits(bf16, 0x3F80) == b.constant(bf16, 1.0)
    # 1 + 2^-8 lies halfway between two bf16 values: ties go to the even one (1.0)
    assert b.constant(bf16, 1.0 + 2.0 ** -8) == b.constant_bits(bf16, 0x3F80)
    assert b.constant(bf16, 1.0 + 3 * 2.0 ** -8) == b.constant_bits(bf16, 0x3F82)
    assert b.constant(bf16, float("nan")) == b.constant_bits(bf16, 0x7FC0)
    assert b.constant(f16, float("-inf")) == b.constant_bits(f16, 0xFC00)
    with pytest.raises(BuildError, match="does not fit 16 bits"):
        b.constant_bits(f16, 0x10000)


# -- de-duplication -----------------------------------------------------------------------------

def test_types_and_constants_are_deduplicated(spirv_val):
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    assert b.scalar("f32") == f32 == b.type_float(32) == b.emit("OpTypeFloat", 32)
    assert b.scalar("s32") != b.scalar("u32")
    assert b.scalar("bf16") != b.scalar("f16")
    vec4 = b.type_vector(f32, 4)
    assert b.type_vector(f32, 4) == vec4 != b.type_vector(f32, 3)
    assert b.type_pointer("StorageBuffer", vec4) == b.type_pointer(12, vec4)
    assert b.type_pointer("Workgroup", vec4) != b.type_pointer("StorageBuffer", vec4)
    assert b.type_array(f32, 4) == b.type_array(f32, 4) != b.type_array(f32, 5)
    assert b.type_runtime_array(f32, stride=4) == b.type_runtime_array(f32, stride=4)
    assert b.type_runtime_array(f32, stride=4) != b.type_runtime_array(f32)
    s1 = b.type_struct(f32, vec4, offsets="std430", block=True)
    assert b.type_struct(f32, vec4, offsets=[0, 16], block=True) == s1
    assert b.type_struct(f32, vec4, offsets=[0, 16]) != s1
    assert b.type_function(b.type_void(), f32) == b.type_function(b.type_void(), f32)
    assert b.constant(f32, 2.0) == b.constant(f32, 2) == b.constant_bits(f32, 0x40000000)
    assert b.constant(b.scalar("u32"), 2) != b.constant(b.scalar("s32"), 2)
    assert b.constant_bool(True) == b.constant_bool(True) != b.constant_bool(False)
    assert b.constant_null(vec4) == b.constant_null(vec4)
    c = b.constant(f32, 1.0)
    assert b.constant_composite(vec4, c, c, c, c) == b.constant_composite(vec4, c, c, c, c)
    assert b.spec_constant(f32, 1.0, 0) != b.spec_constant(f32, 1.0, 1)
    khr = b.type_coop_matrix_khr(b.scalar("f16"), 16, 16, "MatrixAKHR")
    assert b.type_coop_matrix_khr(b.scalar("f16"), 16, 16, 0) == khr
    assert b.type_coop_matrix_khr(b.scalar("f16"), 16, 16, "MatrixBKHR") != khr
    assert b.type_coop_matrix_nv(b.scalar("f16"), 16, 16) == b.type_coop_matrix_nv(b.scalar("f16"), 16, 16)
    module = b.module()
    # one instruction per distinct declaration; no id is defined twice
    results = [i.result_id for i in module.instructions if i.result_id is not None]
    assert len(results) == len(set(results))
    arrays = [i for i in module.instructions if i.opcode == Op.TypeRuntimeArray]
    assert len(arrays) == 2
    strides = [i for i in module.instructions if i.opcode == Op.Decorate
               and i.operands[1].value == grammar.enumerant("Decoration", "ArrayStride").value]
    assert [s.operands[0].value for s in strides] == [b.type_runtime_array(f32, stride=4)]
    validate(compute_shell(b, lambda b: None))


def test_std430_offsets_and_strides(spirv_val):
    b = ModuleBuilder()
    f32, f16, u8 = b.scalar("f32"), b.scalar("f16"), b.scalar("u8")
    vec3, vec2h = b.type_vector(f32, 3), b.type_vector(f16, 2)
    assert types.array_stride(types.Array(b.type_at(vec3), None)) == 16 and types.size(b.type_at(vec3)) == 12
    inner = b.type_struct(u8, vec2h, offsets="std430")
    assert types.member_offsets(b.type_at(inner)) == [0, 4] and types.size(b.type_at(inner)) == 8
    members = [u8, vec3, f32, b.type_array(f16, 3, stride=2), inner, b.type_runtime_array(vec3, stride=16)]
    block = types.Struct(tuple(types.Member(b.type_at(m)) for m in members))
    assert types.member_offsets(block) == [0, 16, 28, 32, 40, 48]
    block = b.type_struct(*members, offsets="std430", block=True)
    var = b.variable(b.type_pointer("StorageBuffer", block), "StorageBuffer")
    b.decorate(var, "DescriptorSet", 0)
    b.decorate(var, "Binding", 0)
    words = compute_shell(b, lambda b: b.emit(Op.ArrayLength, b.scalar("u32"), var, 5))
    validate(words)


# -- layout order, interfaces, functions ----------------------------------------------------

def _sections(instructions) -> list[int]:
    out, in_functions = [], False
    for inst in instructions:
        in_functions = in_functions or inst.opcode == Op.Function
        out.append(9 if in_functions else _section_of(inst))
    return out


def _section_of(inst) -> int:
    order = [Op.Capability, Op.Extension, Op.ExtInstImport, Op.MemoryModel, Op.EntryPoint,
             Op.ExecutionMode, Op.Name, Op.Decorate]
    if inst.opcode in order:
        return order.index(inst.opcode)
    if inst.opcode in (Op.MemberName,):
        return order.index(Op.Name)
    if inst.opcode in (Op.MemberDecorate,):
        return order.index(Op.Decorate)
    return 8


def test_sections_follow_the_logical_layout_whatever_the_call_order(spirv_val):
    b = ModuleBuilder()
    main = b.id()
    b.entry_point("GLCompute", main, "main", local_size=(4, 1, 1))  # before the function exists
    b.name(main, "main")
    f32 = b.scalar("f32")
    shared = b.variable(b.type_pointer("Workgroup", b.type_array(f32, 4)), "Workgroup", name="tile")
    b.function(b.type_void(), result_id=main)
    b.label()
    ptr = b.emit(Op.AccessChain, b.type_pointer("Workgroup", f32), shared, b.u32(1))
    b.emit(Op.Store, ptr, b.ext_inst("GLSL.std.450", "Sqrt", f32, b.constant(f32, 2.0)))
    b.emit(Op.ControlBarrier, b.scope("Workgroup"), b.scope("Workgroup"),
           b.u32(grammar.enumerant("MemorySemantics", "WorkgroupMemory").value
                 | grammar.enumerant("MemorySemantics", "AcquireRelease").value))
    b.emit(Op.Return)
    b.end_function()
    b.capability("Shader")
    words = b.to_words()
    validate(words)
    sections = _sections(decode(words).instructions)
    assert sections == sorted(sections)


def _interface_module(version):
    b = ModuleBuilder(version)
    u32 = b.scalar("u32")
    uvec3 = b.type_vector(u32, 3)
    gid = b.builtin("GlobalInvocationId", uvec3)
    b.builtin("LocalInvocationId", uvec3)  # declared, never used: not in the interface
    data, ptr = b.storage_buffer(u32, binding=0)
    unused, _ = b.storage_buffer(u32, binding=1)
    private = b.variable(b.type_pointer("Private", u32), "Private")
    helper, _ = b.function(b.type_void(), name="helper")
    b.label()
    b.emit(Op.Store, private, b.u32(7))
    b.emit(Op.Store, b.emit(Op.AccessChain, ptr, data, b.u32(0), b.u32(0)),
           b.emit(Op.CompositeExtract, u32, b.emit(Op.Load, uvec3, gid), 0))
    b.emit(Op.Return)
    b.end_function()

    def body(b):
        local = b.variable(b.type_pointer("Function", u32), "Function")
        b.emit(Op.Store, local, b.u32(1))
        b.emit(Op.FunctionCall, b.type_void(), helper)

    words = compute_shell(b, body)
    return words, gid, data, private, unused


@pytest.mark.parametrize("version,env", [((1, 6), "vulkan1.3"), ((1, 5), "vulkan1.2"), ((1, 3), "vulkan1.1"),
                                         ((1, 0), "vulkan1.0")])
def test_interface_lists_every_used_global_from_spirv_1_4(spirv_val, version, env):
    words, gid, data, private, _ = _interface_module(version)
    validate(words, env)
    (entry,) = [i for i in decode(words).instructions if i.opcode == Op.EntryPoint]
    interface = [o.value for o in entry.operands[3:]]
    assert interface == ([gid, data, private] if version >= (1, 4) else [gid])
    assert words[1] == (version[0] << 16) | (version[1] << 8)


def test_function_variables_are_hoisted_into_the_entry_block(spirv_val):
    b = ModuleBuilder()
    s32 = b.scalar("s32")
    ptr = b.type_pointer("Function", s32)
    square, (x,) = b.function(s32, [s32], name="square")
    b.label()
    b.emit(Op.ReturnValue, b.emit(Op.IMul, s32, x, x))
    b.end_function()

    def body(b):
        first = b.variable(ptr, "Function", name="first")
        later = b.id()
        b.emit(Op.Branch, later)
        b.label(later)
        second = b.variable(ptr, "Function", initializer=b.constant(s32, 3), name="second")
        b.emit(Op.Store, first, b.emit(Op.FunctionCall, s32, square, b.emit(Op.Load, s32, second)))

    words = compute_shell(b, body)
    validate(words)
    insts = decode(words).instructions
    labels = [n for n, i in enumerate(insts) if i.opcode == Op.Label]
    variables = [n for n, i in enumerate(insts) if i.opcode == Op.Variable]
    assert [v - labels[1] for v in variables] == [1, 2]  # right after main's first label


def test_switch_with_64_bit_literals(spirv_val, spirv_dis, tmp_path):
    b = ModuleBuilder()
    s64 = b.scalar("s64")

    def body(b):
        selector = b.spec_constant(s64, 5, spec_id=3)
        merge, big, small = b.id(), b.id(), b.id()
        b.emit(Op.SelectionMerge, merge, "None")
        b.emit(Op.Switch, selector, merge, 1 << 40, big, -7, small)
        for label in (big, small):
            b.label(label)
            b.emit(Op.Branch, merge)
        b.label(merge)

    words = compute_shell(b, body)
    validate(words)
    (switch,) = [i for i in decode(words).instructions if i.opcode == Op.Switch]
    assert [(o.value, o.nwords) for o in switch.operands[2::2]] == [(1 << 40, 2), ((1 << 64) - 7, 2)]
    assert "1099511627776" in disassemble(spirv_dis, words, tmp_path)


# -- requirements ------------------------------------------------------------------------------

def _coop_module(version, a_type="f16", c_type="f32"):
    """A KHR MulAdd that loads A/B/C from storage buffers, at a chosen SPIR-V version."""
    b = ModuleBuilder(version)
    a, c = b.scalar(a_type), b.scalar(c_type)
    (va, pa), (vc, pc) = b.storage_buffer(a, 0), b.storage_buffer(c, 1)

    def body(b):
        zero, row_major, stride = b.u32(0), b.u32(0), b.u32(16)
        ta, tb = (b.type_coop_matrix_khr(a, 16, 16, use) for use in ("MatrixAKHR", "MatrixBKHR"))
        tc = b.type_coop_matrix_khr(c, 16, 16, "MatrixAccumulatorKHR")
        ptr_a = b.emit(Op.AccessChain, pa, va, zero, zero)
        ptr_c = b.emit(Op.AccessChain, pc, vc, zero, zero)
        ma, mb = (b.emit(Op.CooperativeMatrixLoadKHR, t, ptr_a, row_major, stride) for t in (ta, tb))
        mc = b.emit(Op.CooperativeMatrixLoadKHR, tc, ptr_c, row_major, stride)
        b.emit(Op.CooperativeMatrixStoreKHR, ptr_c, b.emit(Op.CooperativeMatrixMulAddKHR, tc, ma, mb, mc),
               row_major, stride)

    return compute_shell(b, body, local_size=(32,))


def test_coop_matrix_f16_gets_everything_without_listing_it(spirv_val):
    words = _coop_module((1, 6))
    validate(words)
    assert capabilities(words) == ["Shader", "Float16", "StorageBuffer16BitAccess", "VulkanMemoryModel",
                                   "CooperativeMatrixKHR"]
    assert extensions(words) == ["SPV_KHR_cooperative_matrix"]
    assert memory_model(words) == "Vulkan"


@pytest.mark.parametrize("version,env,expected", [
    ((1, 6), "vulkan1.3", ["SPV_KHR_cooperative_matrix"]),
    ((1, 5), "vulkan1.2", ["SPV_KHR_cooperative_matrix"]),
    ((1, 4), "spv1.4", ["SPV_KHR_8bit_storage", "SPV_KHR_cooperative_matrix", "SPV_KHR_vulkan_memory_model"]),
    ((1, 3), "vulkan1.1", ["SPV_KHR_8bit_storage", "SPV_KHR_cooperative_matrix", "SPV_KHR_vulkan_memory_model"]),
])
def test_extensions_follow_the_target_version(spirv_val, version, env, expected):
    words = _coop_module(version, "s8", "s32")
    validate(words, env)
    assert extensions(words) == expected
    assert {"Int8", "StorageBuffer8BitAccess", "VulkanMemoryModel"} <= set(capabilities(words))


def test_16bit_storage_extension_below_spirv_1_3(spirv_val):
    b = ModuleBuilder((1, 2))
    var, ptr = b.storage_buffer(b.scalar("f16"), 0)
    words = compute_shell(b, lambda b: b.emit(Op.Store, b.emit(Op.AccessChain, ptr, var, b.u32(0), b.u32(0)),
                                              b.constant(b.scalar("f16"), 0.5)))
    validate(words, "spv1.2")
    assert extensions(words) == ["SPV_KHR_16bit_storage", "SPV_KHR_storage_buffer_storage_class"]
    assert capabilities(words) == ["Shader", "Float16", "StorageBuffer16BitAccess"]


@pytest.mark.parametrize("storage,scalar,expected", [
    ("PushConstant", "f16", "StoragePushConstant16"),
    ("PushConstant", "u8", "StoragePushConstant8"),
    ("Uniform", "s16", "UniformAndStorageBuffer16BitAccess"),
    ("Uniform", "s8", "UniformAndStorageBuffer8BitAccess"),
    ("StorageBuffer", "u16", "StorageBuffer16BitAccess"),
])
def test_narrow_types_in_interface_storage(spirv_val, storage, scalar, expected):
    b = ModuleBuilder()
    elem = b.scalar(scalar)
    block = b.type_struct(elem, b.type_vector(elem, 4), offsets="std430", block=True)
    var = b.variable(b.type_pointer(storage, block), storage)
    if storage != "PushConstant":
        b.decorate(var, "DescriptorSet", 0)
        b.decorate(var, "Binding", 0)
    words = compute_shell(b, lambda b: b.emit(Op.Load, elem, b.emit(Op.AccessChain, b.type_pointer(storage, elem),
                                                                      var, b.u32(0))))
    validate(words)
    caps = capabilities(words)
    assert expected in caps
    # UniformAndStorageBuffer*BitAccess implies StorageBuffer*BitAccess: only the first is listed
    assert not (expected.startswith("UniformAnd") and expected.replace("UniformAnd", "") in caps)


def test_alternatives_prefer_shader_capabilities_and_enumerant_parameters_count(spirv_val):
    b = ModuleBuilder()
    u32, f32 = b.scalar("u32"), b.scalar("f32")
    size = b.builtin("SubgroupSize", u32)  # Kernel | GroupNonUniform | SubgroupBallotKHR

    def body(b):
        n = b.emit(Op.Load, u32, size)
        b.emit(Op.GroupNonUniformFAdd, f32, b.scope("Subgroup"), "Reduce", b.emit(Op.ConvertUToF, f32, n))

    words = compute_shell(b, body)
    validate(words)
    # SubgroupSize picks GroupNonUniform (not Kernel); GroupNonUniformArithmetic implies it
    assert capabilities(words) == ["Shader", "GroupNonUniformArithmetic"]


def test_vulkan_memory_model_operands_and_device_scope(spirv_val):
    b = ModuleBuilder(memory_model="Vulkan")
    u32 = b.scalar("u32")
    var, ptr = b.storage_buffer(u32, 0)

    def body(b):
        p = b.emit(Op.AccessChain, ptr, var, b.u32(0), b.u32(0))
        value = b.emit(Op.Load, u32, p, "MakePointerVisible|NonPrivatePointer", b.scope("Device"))
        b.emit(Op.Store, p, value, ["MakePointerAvailable", "NonPrivatePointer"], b.scope("Device"))

    words = compute_shell(b, body)
    validate(words)
    assert capabilities(words) == ["Shader", "VulkanMemoryModel", "VulkanMemoryModelDeviceScope"]
    assert memory_model(words) == "Vulkan"


@pytest.mark.parametrize("version,expected", [((1, 3), ["SPV_KHR_float_controls"]), ((1, 6), [])])
def test_execution_mode_enumerant_requirements(spirv_val, version, expected):
    b = ModuleBuilder(version)
    b.scalar("f32")
    main, _ = b.function(b.type_void())
    b.label()
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    b.execution_mode(main, "DenormPreserve", 32)
    words = b.to_words()
    validate(words, "vulkan1.3" if version == (1, 6) else "vulkan1.1")
    assert "DenormPreserve" in capabilities(words)
    assert extensions(words) == expected


def test_implied_capabilities_are_dropped_unless_declared_on_purpose(spirv_val):
    words = _nv_module(explicit=())
    assert capabilities(words) == ["Float16", "StorageBuffer16BitAccess", "CooperativeMatrixNV"]
    validate(words)
    words = _nv_module(explicit=("Shader", "StorageUniform16"))
    # Shader stays (asked for); the alias names UniformAndStorageBuffer16BitAccess, which
    # implies the derived StorageBuffer16BitAccess
    assert capabilities(words) == ["Shader", "Float16", "UniformAndStorageBuffer16BitAccess", "CooperativeMatrixNV"]
    validate(words)


def _nv_module(explicit):
    b = ModuleBuilder()
    for cap in explicit:
        b.capability(cap)
    f16 = b.scalar("f16")
    var, ptr = b.storage_buffer(f16, 0)

    def body(b):
        t = b.type_coop_matrix_nv(f16, 8, 8)
        p = b.emit(Op.AccessChain, ptr, var, b.u32(0), b.u32(0))
        m = b.emit(Op.CooperativeMatrixLoadNV, t, p, b.u32(8), b.constant_bool(False))
        b.emit(Op.CooperativeMatrixStoreNV, p, m, b.u32(8), b.constant_bool(False))

    return compute_shell(b, body, local_size=(32,))


def test_derive_works_on_decoded_modules_and_checks_versions():
    words = _coop_module((1, 6))
    module = decode(words)
    needed = derive(module.instructions, (1, 6))
    assert list(needed.capabilities) == capabilities(words)
    assert list(needed.extensions) == extensions(words)
    b = ModuleBuilder((1, 0))
    f32 = b.scalar("f32")

    def body(b):
        b.emit(Op.GroupNonUniformFAdd, f32, b.scope("Subgroup"), "Reduce", b.constant(f32, 1.0))

    with pytest.raises(RequirementError, match="needs SPIR-V 1.3; the target is 1.0"):
        compute_shell(b, body)


# -- errors -------------------------------------------------------------------------------------

def _open_block() -> ModuleBuilder:
    b = ModuleBuilder()
    b.function(b.type_void())
    b.label()
    return b


@pytest.mark.parametrize("call,fragment", [
    (lambda b: b.emit("OpNoSuchThing"), "unknown instruction 'OpNoSuchThing'"),
    (lambda b: b.emit(1.5), "an instruction is an Op, an opcode number or a name, not 1.5"),
    (lambda b: b.emit(65000), "unknown opcode 65000"),
    (lambda b: b.emit(Op.IAdd, b.scalar("u32"), b.u32(1)), "OpIAdd: missing operand 2 (Operand 2: IdRef)"),
    (lambda b: b.emit(Op.IAdd, b.scalar("u32"), b.u32(1), b.u32(1), b.u32(1)), "OpIAdd: 1 operand(s) too many"),
    (lambda b: b.emit(Op.IAdd, b.scalar("u32"), "x", b.u32(1)), "must be an id allocated by this builder"),
    (lambda b: b.emit(Op.IAdd, b.scalar("u32"), 999, b.u32(1)), "(1.."),
    (lambda b: b.emit(Op.Load, b.scalar("u32"), b.u32(1), "Sideways"), "MemoryAccess has no enumerant 'Sideways'"),
    (lambda b: b.emit(Op.Load, b.scalar("u32"), b.u32(1), "Aligned"), "MemoryAccess Aligned needs its parameter"),
    (lambda b: b.emit(Op.Load, b.scalar("u32"), b.u32(1), 0x4000_0000), "unknown bits"),
    (lambda b: b.decorate(b.scalar("u32"), "NoSuchDecoration"), "Decoration has no enumerant"),
    (lambda b: b.constant(b.scalar("u8"), 256), "256 does not fit a 8-bit unsigned integer"),
    (lambda b: b.constant(b.scalar("s8"), -129), "-129 does not fit a 8-bit signed integer"),
    (lambda b: b.constant(b.scalar("s32"), 1.5), "1.5 is not an integer"),
    (lambda b: b.constant(b.scalar("f16"), 1e6), "out of range of a 16-bit float"),
    (lambda b: b.constant(b.scalar("e4m3"), 1.0), "need a bit pattern"),
    (lambda b: b.constant(b.type_bool(), 1), "is not an integer or float type"),
    (lambda b: b.constant(b.scalar("f32"), "1.0"), "must be an int or float"),
    (lambda b: b.emit(Op.Name, b.u32(1), 5), "Name must be a string"),
    (lambda b: b.emit(Op.MemberName, b.u32(1), -1, "x"), "unsigned 32-bit integer"),
    (lambda b: b.emit(Op.Label), "the block before"),
    (lambda b: b.end_function(), "has no terminator"),
    (lambda b: b.function(b.type_void()), "is still open"),
    (lambda b: b.module(), "is still open"),
    (lambda b: b.emit(Op.Return, result_id=5), "OpReturn has no result id"),
    (lambda b: b.emit(Op.FAdd), "missing the result type"),
    (lambda b: b.capability("Telepathy"), "Capability has no enumerant 'Telepathy'"),
    (lambda b: b.scalar("f12"), "unknown scalar type 'f12'"),
    (lambda b: b.type_struct(b.scalar("u32"), offsets=[0, 4]), "2 offsets for 1 members"),
    (lambda b: b.storage_buffer(b.type_bool(), 0), "a bool has no layout in memory"),
    (lambda b: b.entry_point("GLCompute", 1, local_size=(0, 1)), "local_size must be 1 to 3 positive ints"),
    (lambda b: b.ext_inst("GLSL.std.450", "Frobnicate", b.scalar("f32")), "GLSL.std.450 has no instruction"),
])
def test_bad_requests_raise_specific_errors(call, fragment):
    b = _open_block()
    with pytest.raises(HydroplaneError) as info:
        call(b)
    assert fragment in str(info.value)
    assert isinstance(info.value, BuildError)


def test_structural_errors():
    b = ModuleBuilder()
    with pytest.raises(BuildError, match="belongs in a block"):
        b.emit(Op.Return)
    b.function(b.type_void())
    b.label()
    b.emit(Op.Return)
    with pytest.raises(BuildError, match="already terminated"):
        b.emit(Op.IAdd, b.scalar("u32"), b.u32(1), b.u32(2))
    b.end_function()
    with pytest.raises(BuildError, match="no function is open"):
        b.emit(Op.FunctionParameter, b.scalar("u32"))
    with pytest.raises(BuildError, match="no function is open"):
        b.variable(b.type_pointer("Function", b.scalar("u32")), "Function")
    with pytest.raises(BuildError, match="SPIR-V version"):
        ModuleBuilder((1, 7))


def test_an_id_is_defined_once():
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    main, _ = b.function(b.type_void())
    label = b.label()
    with pytest.raises(BuildError, match=f"id {label} is already defined by OpLabel"):
        b.emit(Op.FNegate, f32, b.constant(f32, 1.0), result_id=label)
    b.emit(Op.Return)  # the builder is still usable: the rejected instruction left no trace
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    assert sum(i.opcode == Op.FNegate for i in b.module().instructions) == 0


def test_undefined_ids_are_reported_when_the_module_is_made():
    b = ModuleBuilder()
    missing = b.id()
    b.name(missing, "ghost")
    main, _ = b.function(b.type_void())
    b.label()
    b.emit(Op.Branch, missing)  # the label is never placed
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    with pytest.raises(BuildError, match=r"OpName uses %1 \(ghost\), which is never defined"):
        b.to_words()


def test_emit_takes_binary_operands_and_numeric_enumerants(spirv_val):
    from hydroplane.spirv import Operand
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    raw = b.emit(Op.Constant, f32, Operand("LiteralContextDependentNumber", 0x3F800000))
    assert raw == b.constant(f32, 1.0)  # a raw operand with the same words is the same constant
    # Decoration 0 = RelaxedPrecision, by value; emitted inside a block, filed with the annotations
    words = compute_shell(b, lambda b: b.emit(Op.Decorate, b.emit(Op.FNegate, f32, raw), 0))
    validate(words)
    kinds = [i.opcode for i in decode(words).instructions]
    assert kinds.index(Op.Decorate) < kinds.index(Op.TypeFloat)
    (first,) = [i for i in decode(words).instructions if i.result_id == raw]
    assert first.operands[0].value == 0x3F800000


def test_spec_constant_op_by_inner_opcode_name(spirv_val):
    b = ModuleBuilder()
    s32 = b.scalar("s32")
    size = b.spec_constant(s32, 16, spec_id=0, name="size")
    doubled = b.emit(Op.SpecConstantOp, s32, "OpIAdd", size, size)
    arr = b.type_array(s32, 4)
    words = compute_shell(b, lambda b: b.emit(Op.CompositeExtract, s32, b.constant_composite(
        arr, *(b.constant(s32, i) for i in range(4))), 1))
    validate(words)
    (inst,) = [i for i in decode(words).instructions if i.result_id == doubled]
    assert [o.value for o in inst.operands] == [Op.IAdd, size, size]
    with pytest.raises(BuildError, match="unknown instruction 'OpFrob'"):
        b.emit(Op.SpecConstantOp, s32, "OpFrob", size)
    with pytest.raises(BuildError, match="missing operand 2"):
        b.emit(Op.SpecConstantOp, s32, Op.IAdd, size)


def test_extended_instruction_requirements_come_from_their_grammar(spirv_val):
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    var = b.variable(b.type_pointer("Input", f32), "Input")
    b.decorate(var, "Location", 0)
    main, _ = b.function(b.type_void())
    b.label()
    b.ext_inst("GLSL.std.450", "InterpolateAtCentroid", f32, var)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("Fragment", main)
    b.execution_mode(main, "OriginUpperLeft")
    words = b.to_words()
    validate(words)
    assert capabilities(words) == ["InterpolationFunction"]  # it implies Shader
    assert len([i for i in decode(words).instructions if i.opcode == Op.ExtInstImport]) == 1


def test_words_are_deterministic_and_type_of_reports_result_types(spirv_val):
    def make():
        b = ModuleBuilder()
        f16 = b.scalar("f16")
        state = {}

        def body(b):
            state["sum"] = b.emit(Op.FAdd, f16, b.constant(f16, 0.5), b.constant(f16, 0.25))

        words = compute_shell(b, body)
        assert b.type_of(state["sum"]) == f16
        with pytest.raises(BuildError, match="is not a value"):
            b.type_of(f16)
        assert b.to_words() == words  # making the words again changes nothing
        return words

    words = make()
    assert make() == words
    validate(words)


def test_function_variables_need_a_block():
    b = ModuleBuilder()
    b.function(b.type_void())
    b.variable(b.type_pointer("Function", b.scalar("u32")), "Function")
    b.end_function()
    with pytest.raises(BuildError, match="has variables but no block"):
        b.to_words()


def test_vulkan_memory_model_only_for_shader_modules():
    def make(model):
        b = ModuleBuilder(addressing="Physical64" if model == "Kernel" else "Logical")
        b.type_coop_matrix_khr(b.scalar("f32"), 8, 8, "MatrixAccumulatorKHR")
        main, _ = b.function(b.type_void())
        b.label()
        b.emit(Op.Return)
        b.end_function()
        b.entry_point(model, main)
        return b.to_words()

    assert memory_model(make("GLCompute")) == "Vulkan"
    kernel = make("Kernel")
    assert memory_model(kernel) == "OpenCL"
    assert "Kernel" in capabilities(kernel) and "Shader" not in capabilities(kernel)
