"""Execution-model and memory details: 3-D grids and built-ins, Private and Function arrays in memory,
ArrayLength, swizzles, OpSpecConstantOp, LocalSizeId, FPRoundingMode, OpSwitch on negative literals."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl, run, spirv_text

from hydroplane.ref import Executor, InvalidModuleError


def test_three_dimensional_grid_builtins():
    words = glsl("""#version 450
layout(local_size_x = 4, local_size_y = 2, local_size_z = 3) in;
layout(set = 0, binding = 0) buffer B { uvec4 b[]; };
void main() {
    uint flat_wg = gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
    uint i = flat_wg * 24u + gl_LocalInvocationIndex;
    b[i] = uvec4(gl_GlobalInvocationID,
                 gl_LocalInvocationID.x + 10u * gl_LocalInvocationID.y + 100u * gl_LocalInvocationID.z);
}""")
    grid = (2, 3, 2)
    out = run(words, {}, {0: ((12 * 24, 4), np.uint32)}, grid=grid)[0]
    want = np.zeros((12 * 24, 4), np.uint32)
    for wz in range(2):
        for wy in range(3):
            for wx in range(2):
                for lz in range(3):
                    for ly in range(2):
                        for lx in range(4):
                            i = (wx + 2 * (wy + 3 * wz)) * 24 + lx + 4 * (ly + 2 * lz)
                            want[i] = (wx * 4 + lx, wy * 2 + ly, wz * 3 + lz, lx + 10 * ly + 100 * lz)
    np.testing.assert_array_equal(out, want)


def test_private_and_function_arrays_with_dynamic_indices_and_array_length():
    words = glsl("""#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer B { uint b[]; };
uint history[8];          // Private
void remember(uint slot, uint v) { history[slot & 7u] = v; }
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint local_table[5];  // Function, indexed dynamically: lives in memory
    for (uint k = 0u; k < 5u; k++) local_table[k] = a[i] * (k + 1u);
    for (uint k = 0u; k < 8u; k++) remember(k, local_table[(a[i] + k) % 5u]);
    uint s = 0u;
    for (uint k = 0u; k < 8u; k++) s = s * 3u + history[(k * 5u) & 7u];
    b[i] = s + uint(b.length()) * 1000000u;
}""")
    rng = np.random.default_rng(12)
    a = rng.integers(0, 100, 64).astype(np.uint32)
    out = run(words, {0: a}, {1: ((64,), np.uint32)}, grid=(2, 1, 1))[1]
    want = []
    for v in a.tolist():
        table = [v * (k + 1) for k in range(5)]
        hist = [table[(v + k) % 5] for k in range(8)]
        s = 0
        for k in range(8):
            s = (s * 3 + hist[(k * 5) & 7]) & 0xFFFFFFFF
        want.append((s + 64 * 1000000) & 0xFFFFFFFF)
    np.testing.assert_array_equal(out, np.array(want, np.uint32))


def test_vector_swizzles_and_component_writes():
    words = glsl("""#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 1) buffer B { vec4 b[]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    vec4 v = a[i];
    v.yw = v.xz * 2.0;
    v[i % 4u] = -1.0;
    b[i] = v.wzyx + vec4(v.xy, 0.0, 1.0);
}""")
    rng = np.random.default_rng(13)
    a = rng.standard_normal((16, 4)).astype(np.float32)
    out = run(words, {0: a}, {1: ((16, 4), np.float32)})[1]
    v = a.copy()
    v[:, [1, 3]] = v[:, [0, 2]] * 2
    v[np.arange(16), np.arange(16) % 4] = -1
    want = v[:, ::-1] + np.stack([v[:, 0], v[:, 1], np.zeros(16), np.ones(16)], 1).astype(np.float32)
    np.testing.assert_array_equal(out, want)


ASM_HEAD = """
               OpCapability Shader
               OpCapability Float16
               OpCapability StorageBuffer16BitAccess
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid %buf_in %buf_out
               OpExecutionModeId %main LocalSizeId %wgx %c1 %c1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %wgx_base SpecId 0
               OpDecorate %rt_f32 ArrayStride 4
               OpDecorate %rt_f16 ArrayStride 2
               OpDecorate %in_block Block
               OpMemberDecorate %in_block 0 Offset 0
               OpDecorate %out_block Block
               OpMemberDecorate %out_block 0 Offset 0
               OpDecorate %buf_in DescriptorSet 0
               OpDecorate %buf_in Binding 0
               OpDecorate %buf_out DescriptorSet 0
               OpDecorate %buf_out Binding 1
               OpDecorate %rtz FPRoundingMode RTZ
               OpDecorate %rtp FPRoundingMode RTP
               OpDecorate %rtn FPRoundingMode RTN
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %int = OpTypeInt 32 1
      %float = OpTypeFloat 32
       %half = OpTypeFloat 16
      %v3uint = OpTypeVector %uint 3
         %c0 = OpConstant %uint 0
         %c1 = OpConstant %uint 1
         %c2 = OpConstant %uint 2
         %c3 = OpConstant %uint 3
         %c4 = OpConstant %uint 4
   %wgx_base = OpSpecConstant %uint 4
        %wgx = OpSpecConstantOp %uint IMul %wgx_base %c2
     %rt_f32 = OpTypeRuntimeArray %float
     %rt_f16 = OpTypeRuntimeArray %half
   %in_block = OpTypeStruct %rt_f32
  %out_block = OpTypeStruct %rt_f16
   %p_in_blk = OpTypePointer StorageBuffer %in_block
  %p_out_blk = OpTypePointer StorageBuffer %out_block
     %p_f32 = OpTypePointer StorageBuffer %float
     %p_f16 = OpTypePointer StorageBuffer %half
    %p_gid = OpTypePointer Input %v3uint
       %gid = OpVariable %p_gid Input
    %buf_in = OpVariable %p_in_blk StorageBuffer
   %buf_out = OpVariable %p_out_blk StorageBuffer
"""

ROUNDING = ASM_HEAD + """
       %main = OpFunction %void None %fn
      %entry = OpLabel
        %g3 = OpLoad %v3uint %gid
         %i = OpCompositeExtract %uint %g3 0
        %pi = OpAccessChain %p_f32 %buf_in %c0 %i
         %x = OpLoad %float %pi
       %rte = OpFConvert %half %x
       %rtz = OpFConvert %half %x
       %rtp = OpFConvert %half %x
       %rtn = OpFConvert %half %x
        %i4 = OpIMul %uint %i %c4
        %o0 = OpAccessChain %p_f16 %buf_out %c0 %i4
              OpStore %o0 %rte
       %i41 = OpIAdd %uint %i4 %c1
        %o1 = OpAccessChain %p_f16 %buf_out %c0 %i41
              OpStore %o1 %rtz
       %i42 = OpIAdd %uint %i4 %c2
        %o2 = OpAccessChain %p_f16 %buf_out %c0 %i42
              OpStore %o2 %rtp
       %i43 = OpIAdd %uint %i4 %c3
        %o3 = OpAccessChain %p_f16 %buf_out %c0 %i43
              OpStore %o3 %rtn
              OpReturn
              OpFunctionEnd
"""


def _f16_neighbours(x):
    """(round-toward-zero, up, down) f16 values of f32 x, from the f16 grid directly."""
    grid = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)  # finite non-negative
    ax = abs(float(x))
    below = grid[np.searchsorted(grid, ax, side="right") - 1]
    above = grid[min(np.searchsorted(grid, ax, side="left"), len(grid) - 1)]
    if x >= 0:
        return below, above, below
    return -below, -below, -above


def test_fp_rounding_modes_and_spec_constant_op_local_size_id():
    words = spirv_text(ROUNDING)
    rng = np.random.default_rng(14)
    x = (rng.standard_normal(24) * 100).astype(np.float32)
    ex = Executor()
    bi, bo = ex.buffer(x), ex.buffer(np.full(96, np.nan, np.float16))
    kernel = ex.kernel(words, spec={0: 6})  # LocalSizeId x = SpecConstantOp IMul(6, 2) = 12
    assert kernel.local_size == (12, 1, 1)
    ex.dispatch(kernel, (2, 1, 1), {0: bi, 1: bo})
    out = ex.read(bo, np.float16).reshape(24, 4).astype(np.float64)
    np.testing.assert_array_equal(out[:, 0], x.astype(np.float16).astype(np.float64))
    for k in range(24):
        rtz, up, down = _f16_neighbours(x[k])
        assert out[k, 1] == rtz and out[k, 2] == up and out[k, 3] == down, (x[k], out[k])


def test_bad_requests_are_specific_errors():
    words = spirv_text(ROUNDING)
    ex = Executor()
    with pytest.raises(InvalidModuleError, match=r"specialization constant ids \[3\]"):
        ex.kernel(words, spec={3: 1})
    with pytest.raises(InvalidModuleError, match="subgroup size 12"):
        Executor(subgroup_size=12)
    with pytest.raises(InvalidModuleError, match="not a buffer of this executor"):
        ex.dispatch(ex.kernel(words), (1, 1, 1), {0: np.zeros(4)})
    with pytest.raises(InvalidModuleError, match="not a binding"):
        ex.dispatch(ex.kernel(words), (1, 1, 1), {"x": ex.buffer(4)})
    with pytest.raises(InvalidModuleError, match=r"reading \(3, 3\) of float32 \(36 bytes\) from a buffer of 32"):
        ex.read(ex.buffer(32), np.float32, (3, 3))


UBO_KERNEL = """#version 450
layout(local_size_x = 16) in;
layout(std140, set = 0, binding = 0) uniform Params { vec3 scale; float bias; mat3 rot; ivec2 range; float table[4]; };
layout(set = 0, binding = 1) writeonly buffer B { vec4 b[]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    vec3 p = vec3(float(i), float(i) * 0.5, 1.0);
    vec3 r = rot * (p * scale) + bias;
    b[i] = vec4(r, table[i % 4u] + float(range.x * int(i) + range.y));
}"""


@pytest.mark.parametrize("flags", [(), ("-g",), ("-gVS",)], ids=["plain", "debug-lines", "nonsemantic-debuginfo"])
def test_uniform_buffer_std140_and_debug_info_variants(flags):
    words = glsl(UBO_KERNEL, flags=flags)
    rng = np.random.default_rng(17)
    scale, bias = rng.standard_normal(3).astype(np.float32), np.float32(0.25)
    rot = rng.standard_normal((3, 3)).astype(np.float32)  # rot[column]
    table = rng.standard_normal(4).astype(np.float32)
    ubo = np.zeros(32 + 48 + 16 + 64, np.uint8)  # std140: vec3+float, mat3 (3 x vec4), ivec2, float[4] (stride 16)
    ubo[0:12] = scale.view(np.uint8)
    ubo[12:16] = np.array([bias]).view(np.uint8)
    for c in range(3):
        ubo[16 + 16 * c:16 + 16 * c + 12] = rot[c].view(np.uint8)
    ubo[64:72] = np.array([3, -7], np.int32).view(np.uint8)
    for k in range(4):
        ubo[80 + 16 * k:84 + 16 * k] = table[k:k + 1].view(np.uint8)
    out = run(words, {0: ubo}, {1: ((16, 4), np.float32)})[1]
    i = np.arange(16, dtype=np.float32)
    p = np.stack([i, i * np.float32(0.5), np.ones(16, np.float32)], 1) * scale
    r = sum(rot[c][None, :] * p[:, c:c + 1] for c in range(3)) + bias
    np.testing.assert_allclose(out[:, :3], r, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[:, 3], table[np.arange(16) % 4] + (3 * np.arange(16) - 7).astype(np.float32))


def test_many_batches_give_the_same_answer_as_one():
    words = glsl("""#version 450
layout(local_size_x = 24) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { uint count; float b[]; };
shared float s[24];
void main() {
    uint l = gl_LocalInvocationID.x;
    uint g = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 24u + l;
    s[l] = a[g];
    barrier();
    b[g] = s[23u - l] + float(gl_WorkGroupID.x + 100u * gl_WorkGroupID.y);
    if (l == 0u) atomicAdd(count, 1u);
}""")
    rng = np.random.default_rng(19)
    a = rng.standard_normal(24 * 15).astype(np.float32)
    results = []
    for max_lanes in (1 << 15, 32, 100):  # one batch; one workgroup (padded to 32 lanes) per batch; three
        ex = Executor(max_lanes=max_lanes)
        ba, bb = ex.buffer(a), ex.buffer(np.full(24 * 15 + 1, 0, np.float32))
        ex.dispatch(ex.kernel(words), (5, 3, 1), {0: ba, 1: bb})
        results.append(ex.read(bb, np.float32))
        assert ex.last_stats["batches"] == {1 << 15: 1, 32: 15, 100: 5}[max_lanes]
    wg = np.repeat(np.arange(15), 24)
    want = a.reshape(15, 24)[:, ::-1].reshape(-1) + (wg % 5 + 100 * (wg // 5)).astype(np.float32)
    for r in results:
        np.testing.assert_array_equal(r[1:], want)
        assert r[:1].view(np.uint32)[0] == 15


def test_float_atomics_and_pointer_arithmetic_on_device_addresses():
    words = glsl("""#version 450
#extension GL_EXT_shader_atomic_float : require
#extension GL_EXT_shader_atomic_float2 : require
#extension GL_EXT_buffer_reference2 : require
layout(local_size_x = 32) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer FloatRef { float v; };
layout(set = 0, binding = 0) buffer P { FloatRef base; float total; float biggest; };
void main() {
    uint i = gl_LocalInvocationIndex;
    FloatRef p = base + i;  // glslang: OpConvertPtrToU, integer add, OpConvertUToPtr
    float x = p.v;
    atomicAdd(total, x);
    atomicMax(biggest, x);
    p.v = x * 2.0;
}""")
    rng = np.random.default_rng(20)
    x = rng.integers(-100, 100, 32).astype(np.float32)  # integers: the atomic sum is exact in any order
    ex = Executor()
    data = ex.buffer(x)
    params = ex.buffer(np.array([data.address, np.array([0.0, -1e30], np.float32).view(np.uint64)[0]], np.uint64))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: params})
    np.testing.assert_array_equal(ex.read(data, np.float32), x * 2)
    total, biggest = ex.read(params, np.float32)[2:4]
    assert total == x.sum() and biggest == x.max()


PTR_ACCESS_CHAIN = """
               OpCapability Shader
               OpCapability PhysicalStorageBufferAddresses
               OpCapability Int64
               OpExtension "SPV_KHR_physical_storage_buffer"
               OpMemoryModel PhysicalStorageBuffer64 GLSL450
               OpEntryPoint GLCompute %main "main" %gid %params
               OpExecutionMode %main LocalSize 16 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %p_float ArrayStride 4
               OpDecorate %p_vec2 ArrayStride 8
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpMemberDecorate %blk 1 Offset 8
               OpDecorate %params DescriptorSet 0
               OpDecorate %params Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
      %float = OpTypeFloat 32
       %vec2 = OpTypeVector %float 2
     %v3uint = OpTypeVector %uint 3
         %c0 = OpConstant %uint 0
         %c1 = OpConstant %uint 1
    %p_float = OpTypePointer PhysicalStorageBuffer %float
     %p_vec2 = OpTypePointer PhysicalStorageBuffer %vec2
        %blk = OpTypeStruct %ulong %ulong
      %p_blk = OpTypePointer StorageBuffer %blk
    %p_ulong = OpTypePointer StorageBuffer %ulong
     %params = OpVariable %p_blk StorageBuffer
      %p_gid = OpTypePointer Input %v3uint
        %gid = OpVariable %p_gid Input
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %g3 = OpLoad %v3uint %gid
          %i = OpCompositeExtract %uint %g3 0
      %src_p = OpAccessChain %p_ulong %params %c0
      %src_a = OpLoad %ulong %src_p
      %dst_p = OpAccessChain %p_ulong %params %c1
      %dst_a = OpLoad %ulong %dst_p
        %src = OpConvertUToPtr %p_vec2 %src_a
       %elem = OpPtrAccessChain %p_float %src %i %c1
          %x = OpLoad %float %elem Aligned 4
        %dst = OpConvertUToPtr %p_float %dst_a
        %out = OpPtrAccessChain %p_float %dst %i
               OpStore %out %x Aligned 4
               OpReturn
               OpFunctionEnd
"""


def test_ptr_access_chain_on_device_addresses():
    # %src is a vec2 array: element i, component 1 (OpPtrAccessChain with the pointer's ArrayStride 8)
    words = spirv_text(PTR_ACCESS_CHAIN)
    rng = np.random.default_rng(23)
    pairs = rng.standard_normal((16, 2)).astype(np.float32)
    ex = Executor()
    src, dst = ex.buffer(pairs), ex.buffer(np.full(16, np.nan, np.float32))
    params = ex.buffer(np.array([src.address, dst.address], np.uint64))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: params})
    np.testing.assert_array_equal(ex.read(dst, np.float32), pairs[:, 1])


def test_row_major_matrices_in_a_buffer():
    words = glsl("""#version 450
layout(local_size_x = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer A { layout(row_major) mat2x3 m[8]; vec2 v[8]; };
layout(std430, set = 0, binding = 1) writeonly buffer B { vec4 b[]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    vec3 r = m[i] * v[i];         // mat2x3: 2 columns of 3 rows, stored row by row
    b[i] = vec4(r, m[i][1][2]);   // column 1, row 2
}""")
    rng = np.random.default_rng(24)
    m = rng.integers(-4, 5, (8, 3, 2)).astype(np.float32)  # m[i][row][col]: std430 rows are vec2, MatrixStride 8
    v = rng.integers(-4, 5, (8, 2)).astype(np.float32)
    data = np.concatenate([m.reshape(-1), v.reshape(-1)])
    out = run(words, {0: data}, {1: ((8, 4), np.float32)})[1]
    np.testing.assert_array_equal(out[:, :3], np.einsum("irc,ic->ir", m, v))
    np.testing.assert_array_equal(out[:, 3], m[:, 2, 1])
