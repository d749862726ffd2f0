"""The reference executor on hydroplane.spirv.types: recursive pointer types in either declaration
order, a type it refuses by name, and ref.layout's value shapes, dtypes and byte templates."""

from __future__ import annotations

import numpy as np
import pytest

from hydroplane.ref import Executor
from hydroplane.ref import layout
from hydroplane.ref.errors import InvalidModuleError
from hydroplane.spirv import types as T
from ref_helpers import glsl, spirv_text

LINKED_LIST = """#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 16) in;
layout(buffer_reference) buffer Node;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Node { Node next; int value; };
layout(set = 0, binding = 0) readonly buffer Heads { Node heads[]; };
layout(set = 0, binding = 1) writeonly buffer Out { int sums[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    int s = 0;
    Node n = heads[i];
    while (uint64_t(n) != 0ul) { s += n.value; n = n.next; }
    sums[i] = s;
}"""


def test_linked_lists_through_a_recursive_buffer_reference():
    """Node { Node next; int value; }: a pointer type that points back into its own pointee."""
    rng = np.random.default_rng(8)
    lists = 32
    lengths = rng.integers(0, 6, lists)
    values = rng.integers(-1000, 1000, int(lengths.sum())).astype(np.int32)
    order = rng.permutation(len(values))  # nodes scattered through the buffer
    ex = Executor()
    nodes = ex.buffer(16 * max(1, len(values)))
    raw = np.zeros((max(1, len(values)), 2), np.uint64)  # (next address, value) per 16-byte node
    heads = np.zeros(lists, np.uint64)
    start = 0
    for k, length in enumerate(lengths):
        slots = order[start:start + length]
        for j, slot in enumerate(slots):
            raw[slot, 0] = nodes.address + 16 * slots[j + 1] if j + 1 < length else 0
            raw[slot, 1] = np.uint64(np.array(values[start + j]).view(np.uint32))
        heads[k] = nodes.address + 16 * slots[0] if length else 0
        start += length
    ex.write(nodes, raw)
    head_buf = ex.buffer(heads)
    out = ex.buffer(np.full(lists, 0x5A5A5A5A, np.uint32))
    ex.dispatch(ex.kernel(glsl(LINKED_LIST)), (2, 1, 1), {0: head_buf, 1: out})
    want = np.add.reduceat(np.append(values, 0), np.cumsum(np.append(0, lengths[:-1])))
    want[lengths == 0] = 0
    np.testing.assert_array_equal(ex.read(out, np.int32), want)


# %T declares the forward-declared %pS before %S: reading %T reaches %S through %pS, and %S's own
# member %pS is then met while %pS is still being read (the type model gives a Forward there).
FORWARD_FIRST = """
               OpCapability Shader
               OpCapability PhysicalStorageBufferAddresses
               OpCapability Int64
               OpExtension "SPV_KHR_physical_storage_buffer"
               OpMemoryModel PhysicalStorageBuffer64 GLSL450
               OpEntryPoint GLCompute %main "main" %params
               OpExecutionMode %main LocalSize 1 1 1
               OpTypeForwardPointer %pS PhysicalStorageBuffer
               OpDecorate %T Block
               OpMemberDecorate %T 0 Offset 0
               OpMemberDecorate %T 1 Offset 8
               OpMemberDecorate %S 0 Offset 0
               OpMemberDecorate %S 1 Offset 8
               OpDecorate %params DescriptorSet 0
               OpDecorate %params Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
        %int = OpTypeInt 32 1
         %c0 = OpConstant %int 0
         %c1 = OpConstant %int 1
          %T = OpTypeStruct %pS %int
          %S = OpTypeStruct %pS %int
         %pS = OpTypePointer PhysicalStorageBuffer %S
         %pT = OpTypePointer StorageBuffer %T
    %p_sb_pS = OpTypePointer StorageBuffer %pS
   %p_sb_int = OpTypePointer StorageBuffer %int
   %p_psb_pS = OpTypePointer PhysicalStorageBuffer %pS
  %p_psb_int = OpTypePointer PhysicalStorageBuffer %int
     %params = OpVariable %pT StorageBuffer
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %hp = OpAccessChain %p_sb_pS %params %c0
       %head = OpLoad %pS %hp
         %vp = OpAccessChain %p_psb_int %head %c1
         %v0 = OpLoad %int %vp Aligned 4
         %np = OpAccessChain %p_psb_pS %head %c0
       %next = OpLoad %pS %np Aligned 8
        %vp1 = OpAccessChain %p_psb_int %next %c1
         %v1 = OpLoad %int %vp1 Aligned 4
        %sum = OpIAdd %int %v0 %v1
         %sp = OpAccessChain %p_sb_int %params %c1
               OpStore %sp %sum
               OpReturn
               OpFunctionEnd
"""


def test_a_forward_pointer_used_before_its_pointee_is_declared():
    ex = Executor()
    nodes = ex.buffer(np.zeros(4, np.uint64))
    ex.write(nodes, np.array([nodes.address + 16, 1234, 0, 4321 - 1234 + 7], np.uint64))
    params = ex.buffer(np.array([nodes.address, 0xFFFFFFFF], np.uint64))
    kernel = ex.kernel(spirv_text(FORWARD_FIRST))
    for t in kernel.program.types.values():  # a Forward is left only as a pointer's pointee
        if isinstance(t, T.Struct):
            assert not any(isinstance(m.type, T.Forward) for m in t.members), t
    ex.dispatch(kernel, (1, 1, 1), {0: params})
    assert ex.read(params, np.int32)[2] == 1234 + 4321 - 1234 + 7


def test_an_unsupported_type_is_refused_by_name():
    words = spirv_text("""
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
         %i7 = OpTypeInt 7 0
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
""")
    with pytest.raises(InvalidModuleError, match=r"type %4 \(OpTypeInt\): word 26: OpTypeInt of width 7 is not"):
        Executor().kernel(words)


def test_value_shapes_and_dtypes():
    vec3 = T.Vector(T.F16, 3)
    mat = T.Matrix(T.Vector(T.F32, 3), 4)
    assert layout.value_shape(T.S8) == () and layout.value_dtype(T.S8) == np.int8
    assert layout.value_shape(vec3) == (3,) and layout.value_dtype(vec3) == np.float16
    assert layout.value_shape(mat) == (4, 3) and layout.value_dtype(mat) == np.float32
    assert layout.value_shape(T.Array(mat, 2)) == (2, 4, 3)
    assert layout.value_shape(T.Array(T.U32, None)) is None  # a runtime array has no value
    struct = T.Struct((T.Member(T.U32), T.Member(vec3)))
    assert layout.value_shape(struct) is None and layout.value_dtype(struct) is None
    coop = T.CoopMatrix(T.BF16, 16, 8)
    assert layout.value_shape(coop) is None and layout.value_dtype(coop) == T.BF16.dtype
    assert not layout.has_layout(coop) and not layout.has_layout(T.Struct((T.Member(coop),)))


def test_undecorated_memory_uses_the_scalar_rule_and_a_byte_per_bool():
    flags = T.Array(T.BOOL, 5)
    assert layout.size_of(flags) == 5 and layout.array_stride(flags) == 1
    struct = T.Struct((T.Member(T.BOOL), T.Member(T.Vector(T.F32, 3)), T.Member(T.F64), T.Member(T.U16)))
    assert layout.member_offsets(struct) == (0, 4, 16, 24)
    assert layout.size_of(struct) == 26  # ends where its last member ends; arrays pad to the alignment
    array = T.Array(struct, 3)
    assert layout.array_stride(array) == 32 and layout.size_of(array) == 90  # scalar: the last element unpadded


def test_decorated_matrix_templates_follow_matrix_stride_and_row_major():
    mat = T.Matrix(T.Vector(T.F32, 3), 2)  # 2 columns of 3 rows
    col = layout.element_template(mat, 16, False)
    row = layout.element_template(mat, 16, True)
    c, r = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(col, c * 16 + r * 4)
    np.testing.assert_array_equal(row, r * 16 + c * 4)
    packed = layout.element_template(mat)
    np.testing.assert_array_equal(packed, c * 12 + r * 4)
    with pytest.raises(ValueError):
        col[0, 0] = 1  # shared between calls: read-only
