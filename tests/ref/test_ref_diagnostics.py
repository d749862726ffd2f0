"""Each diagnostic of the reference executor, with a kernel that plants the bug and a check of the report."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl, spirv_text

from hydroplane.errors import HydroplaneError
from hydroplane.ref import (
    Executor,
    NonUniformError,
    OutOfBoundsError,
    RaceError,
    UninitializedReadError,
    UnsupportedInstructionError,
)
from hydroplane.spirv import binary, disassemble

HEADER = "#version 450\nlayout(local_size_x = 64) in;\n"
BUFFERS = """
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
"""


def _dispatch(source_words, n_in=64, n_out=64, grid=(1, 1, 1), **options):
    ex = Executor(**options)
    rng = np.random.default_rng(11)
    a = ex.buffer(rng.standard_normal(n_in).astype(np.float32))
    b = ex.buffer(np.full(n_out, np.nan, np.float32))
    report = ex.dispatch(ex.kernel(source_words), grid, {0: a, 1: b})
    return ex, b, report


def test_out_of_bounds_buffer_read_names_invocations_and_instruction():
    words = glsl(HEADER + BUFFERS + """
void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i + 60u]; }""")
    with pytest.raises(OutOfBoundsError) as err:
        _dispatch(words)
    d = err.value.diagnostic
    assert d.kind == "out-of-bounds"
    assert d.count == 60  # invocations 4..63 read past the 64 floats
    assert d.invocations[0] == "wg (0,0,0) local (4,0,0)"
    assert "= OpLoad %float %" in d.disassembly and d.offset > 0
    assert "of A (set 0 binding 0) (StorageBuffer, 256 bytes)" in d.message
    assert isinstance(err.value, HydroplaneError)
    # the disassembler's own line for the instruction at that offset (one printer for both)
    module = binary.decode(words)
    index = next(i for i, inst in enumerate(module.instructions) if inst.offset == d.offset)
    listing = disassemble(module, header=False).splitlines()
    assert listing[index].strip() == d.disassembly


def test_out_of_bounds_write_is_reported_before_it_lands():
    words = glsl(HEADER + BUFFERS + """
void main() { uint i = gl_GlobalInvocationID.x; b[i * 2u] = a[i]; }""")
    with pytest.raises(OutOfBoundsError) as err:
        _dispatch(words)
    assert "write" in err.value.diagnostic.message
    assert "OpStore" in err.value.diagnostic.disassembly
    assert err.value.diagnostic.invocations[0] == "wg (0,0,0) local (32,0,0)"


def test_out_of_bounds_shared_memory():
    words = glsl(HEADER + BUFFERS + """
shared float s[64];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    barrier();
    b[l] = s[l + 1u];
}""")
    with pytest.raises(OutOfBoundsError) as err:
        _dispatch(words)
    d = err.value.diagnostic
    assert "s (Workgroup" in d.message and d.count == 1
    assert d.invocations == ["wg (0,0,0) local (63,0,0)"]


def test_read_of_never_written_shared_memory():
    words = glsl(HEADER + BUFFERS + """
shared float s[128];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    barrier();
    b[l] = s[l + 64u];
}""")
    with pytest.raises(UninitializedReadError) as err:
        _dispatch(words)
    d = err.value.diagnostic
    assert d.kind == "uninitialized-read" and d.count == 64
    assert "never written" in d.message


def test_race_between_barriers():
    words = glsl(HEADER + BUFFERS + """
shared float s[64];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    b[l] = s[(l + 1u) % 64u];   // no barrier between the write and the neighbour's read
}""")
    with pytest.raises(RaceError) as err:
        _dispatch(words)
    d = err.value.diagnostic
    assert d.kind == "race" and "since the last barrier" in d.message


def test_no_race_when_a_barrier_separates_the_accesses():
    words = glsl(HEADER + BUFFERS + """
shared float s[64];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    barrier();
    b[l] = s[(l + 1u) % 64u];
}""")
    ex, b, _ = _dispatch(words, grid=(1, 1, 1))
    a = np.random.default_rng(11).standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(ex.read(b, np.float32), np.roll(a, -1))


def test_write_write_race_of_two_invocations():
    words = glsl(HEADER + BUFFERS + """
shared float s[32];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l / 2u] = a[l];
    barrier();
    b[l] = s[l / 2u];
}""")
    with pytest.raises(RaceError) as err:
        _dispatch(words)
    assert "write" in err.value.diagnostic.message


def test_barrier_in_non_uniform_control_flow():
    words = glsl(HEADER + BUFFERS + """
void main() {
    uint l = gl_LocalInvocationID.x;
    if (l < 40u) { barrier(); }
    b[l] = a[l];
}""")
    with pytest.raises(NonUniformError) as err:
        _dispatch(words)
    d = err.value.diagnostic
    assert d.kind == "non-uniform" and d.count == 24
    assert d.invocations[0] == "wg (0,0,0) local (40,0,0)"
    assert "OpControlBarrier" in d.disassembly


def test_barrier_after_early_return_is_non_uniform():
    words = glsl(HEADER + BUFFERS + """
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= 100u) return;
    barrier();
    b[i] = a[i];
}""")
    with pytest.raises(NonUniformError):
        _dispatch(words, n_in=128, n_out=128, grid=(2, 1, 1))


def test_uniform_barrier_with_a_partial_subgroup_is_fine():
    words = glsl("#version 450\nlayout(local_size_x = 40) in;\n" + BUFFERS + """
shared float s[40];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[39u - l] = a[gl_GlobalInvocationID.x];
    barrier();
    b[gl_GlobalInvocationID.x] = s[l];
}""")
    ex, b, _ = _dispatch(words, n_in=80, n_out=80, grid=(2, 1, 1), subgroup_size=16)
    a = np.random.default_rng(11).standard_normal(80).astype(np.float32)
    np.testing.assert_array_equal(ex.read(b, np.float32), a.reshape(2, 40)[:, ::-1].reshape(-1))


UNSUPPORTED = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 8 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
    %float_1 = OpConstant %float 1
       %main = OpFunction %void None %fn
      %entry = OpLabel
     %weird = OpDPdx %float %float_1
               OpReturn
               OpFunctionEnd
"""


def test_unsupported_instruction_is_named():
    words = spirv_text(UNSUPPORTED)
    ex = Executor()
    with pytest.raises(UnsupportedInstructionError) as err:
        ex.dispatch(ex.kernel(words), (1, 1, 1), {})
    assert "OpDPdx" in str(err.value)
    assert "= OpDPdx %" in err.value.diagnostic.disassembly
    off = err.value.diagnostic.offset
    assert np.frombuffer(words, np.uint32)[off] & 0xFFFF == 207  # the word there opens OpDPdx (opcode 207)


def test_collect_mode_reports_every_problem_and_keeps_going():
    words = glsl(HEADER + BUFFERS + """
shared float s[64];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l + 32u];        // out of bounds for l >= 32
    b[l] = s[(l + 1u) % 64u]; // race
}""")
    ex, b, report = _dispatch(words, diagnostics="collect")
    kinds = [d.kind for d in report]
    assert kinds[0] == "out-of-bounds" and "race" in kinds
    out = ex.read(b, np.float32)
    a = np.random.default_rng(11).standard_normal(64).astype(np.float32)
    want = np.concatenate([a[32:], np.zeros(32, np.float32)])  # out-of-bounds reads give zero
    np.testing.assert_array_equal(out, np.roll(want, -1))


def test_unbound_binding_is_reported():
    words = glsl(HEADER + BUFFERS + "void main() { b[gl_LocalInvocationID.x] = a[0]; }")
    ex = Executor()
    b = ex.buffer(256)
    with pytest.raises(OutOfBoundsError, match="no buffer bound at set 0 binding 0"):
        ex.dispatch(ex.kernel(words), (1, 1, 1), {1: b})


ZERO_INIT_SHARED = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %lid %shared %out
               OpExecutionMode %main LocalSize 8 1 1
               OpDecorate %lid BuiltIn LocalInvocationId
               OpDecorate %rt ArrayStride 4
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpDecorate %out DescriptorSet 0
               OpDecorate %out Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
     %v3uint = OpTypeVector %uint 3
         %c0 = OpConstant %uint 0
         %c8 = OpConstant %uint 8
        %arr = OpTypeArray %uint %c8
       %null = OpConstantNull %arr
      %p_arr = OpTypePointer Workgroup %arr
     %p_wu32 = OpTypePointer Workgroup %uint
     %shared = OpVariable %p_arr Workgroup %null
         %rt = OpTypeRuntimeArray %uint
        %blk = OpTypeStruct %rt
      %p_blk = OpTypePointer StorageBuffer %blk
      %p_u32 = OpTypePointer StorageBuffer %uint
        %out = OpVariable %p_blk StorageBuffer
      %p_lid = OpTypePointer Input %v3uint
        %lid = OpVariable %p_lid Input
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %l3 = OpLoad %v3uint %lid
          %l = OpCompositeExtract %uint %l3 0
         %pz = OpAccessChain %p_wu32 %shared %c0
          %z = OpLoad %uint %pz
         %po = OpAccessChain %p_u32 %out %c0 %l
               OpStore %po %z
               OpReturn
               OpFunctionEnd
"""


def test_zero_initialised_workgroup_memory_is_written_and_race_free():
    words = spirv_text(ZERO_INIT_SHARED)
    ex = Executor()
    out = ex.buffer(np.full(8, 7, np.uint32))
    ex.dispatch(ex.kernel(words), (2, 1, 1), {0: out})
    np.testing.assert_array_equal(ex.read(out, np.uint32), np.zeros(8, np.uint32))


SUBGROUP_BARRIER = """#version 450
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
shared float s[32];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    b[l] = s[NEIGHBOUR];
}"""


def test_subgroup_barrier_orders_accesses_within_the_subgroup_only():
    rng = np.random.default_rng(22)
    a = rng.standard_normal(32).astype(np.float32)
    ex = Executor(subgroup_size=8)
    words = glsl(SUBGROUP_BARRIER.replace("NEIGHBOUR", "l ^ 1u"))  # same subgroup of 8: ordered
    ba, bb = ex.buffer(a), ex.buffer(np.full(32, np.nan, np.float32))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ba, 1: bb})
    np.testing.assert_array_equal(ex.read(bb, np.float32), a[np.arange(32) ^ 1])
    words = glsl(SUBGROUP_BARRIER.replace("NEIGHBOUR", "(l + 8u) % 32u"))  # the next subgroup: a race
    with pytest.raises(RaceError):
        ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ba, 1: bb})
