"""GL_NV_cooperative_matrix `length()`: glslang writes it as OpSpecConstantOp CooperativeMatrixLengthNV.
The reference executor defers such constants (and those computed from them) to each kernel launch,
where the subgroup size and the executor's element distribution are known; Length = ceil(R*C/S)
under the default distribution. Each lane also sums its elements through m[i] (an element pointer)
for i < length(), which must agree with the distribution's table."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl

from hydroplane.ref import Executor
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.spirv.grammar import Op

SOURCE = """#version 450 core
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = {wg}) in;
layout(set = 0, binding = 0) buffer Src {{ float src[]; }};
layout(set = 0, binding = 1) buffer Out {{ uint o[]; }};
void main() {{
  fcoopmatNV<32, gl_ScopeSubgroup, {r}, {c}> m;
  coopMatLoadNV(m, src, {r} * {c} * (gl_LocalInvocationID.x / {sg}), {c}, false);
  uint lane = gl_LocalInvocationID.x;
  o[lane * 3 + 0] = m.length();
  o[lane * 3 + 1] = m.length() * 3u + 1u;
  float sum = 0.0;
  for (int i = 0; i < m.length(); ++i) sum += m[i];
  o[lane * 3 + 2] = uint(sum);
}}
"""


def _run(rows, cols, sg, subgroups, dist, rng):
    words = glsl(SOURCE.format(r=rows, c=cols, sg=sg, wg=sg * subgroups))
    lanes = sg * subgroups
    src = rng.integers(0, 1000, subgroups * rows * cols).astype(np.float32)
    ex = Executor(subgroup_size=sg, coopmat_distribution=dist)
    bufs = {0: ex.buffer(src), 1: ex.buffer(np.full(3 * lanes, 0xDEADBEEF, np.uint32))}
    kernel = ex.kernel(words)
    deferred = {raw.operands[0].value for raw in kernel.program.dispatch_constants}
    assert int(Op.CooperativeMatrixLengthNV) in deferred and len(deferred) >= 2  # length, and 3*length+1
    ex.dispatch(kernel, (1, 1, 1), bufs)
    return src.reshape(subgroups, rows * cols), ex.read(bufs[1], np.uint32).reshape(lanes, 3)


def _check(out, src, sg, table):
    length = table.shape[1]
    assert (out[:, 0] == length).all(), out[:, 0]
    assert (out[:, 1] == 3 * length + 1).all()
    for lane in range(out.shape[0]):
        flat = table[lane % sg]
        want = src[lane // sg][flat[flat >= 0]].sum()
        assert out[lane, 2] == want, (lane, out[lane, 2], want)


@pytest.mark.parametrize("rows,cols,sg,subgroups", [(8, 8, 8, 1), (8, 8, 32, 2), (16, 16, 32, 1), (2, 2, 8, 2),
                                                    (4, 8, 16, 1), (16, 8, 4, 1)])
def test_length_follows_ceil_rows_cols_over_subgroup(rows, cols, sg, subgroups):
    rng = np.random.default_rng(rows * 1000 + cols * 10 + sg)
    src, out = _run(rows, cols, sg, subgroups, cm.STRIDED, rng)
    length = -(-rows * cols // sg)
    table = np.array([[lane + i * sg if lane + i * sg < rows * cols else -1 for i in range(length)]
                      for lane in range(sg)])
    _check(out, src, sg, table)


def test_length_follows_the_executor_distribution():
    """A device-like table with padding: its Length (here R*C/S + 2), not the formula's."""
    rows, cols, sg = 8, 8, 8
    rng = np.random.default_rng(11)
    flat = rng.permutation(rows * cols).reshape(sg, rows * cols // sg)
    table = np.concatenate([flat, np.full((sg, 2), -1)], axis=1)
    src, out = _run(rows, cols, sg, 1, cm.ElementDistribution.from_table("padded", table), rng)
    _check(out, src, sg, table)


def test_one_module_two_launches_two_subgroup_sizes():
    words = glsl(SOURCE.format(r=8, c=8, sg=8, wg=8))
    ex = Executor(subgroup_size=8)
    for sg in (8, 4):
        buf = ex.buffer(np.full(24, 7, np.uint32))
        src = ex.buffer(np.arange(64, dtype=np.float32))
        ex.dispatch(ex.kernel(words, subgroup_size=sg), (1, 1, 1), {0: src, 1: buf})
        assert (ex.read(buf, np.uint32).reshape(8, 3)[:, 0] == 64 // sg).all()


ARRAY_SIZED_BY_LENGTH = """
OpCapability Shader
OpCapability CooperativeMatrixNV
OpExtension "SPV_NV_cooperative_matrix"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 8 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%uint_3 = OpConstant %uint 3
%uint_8 = OpConstant %uint 8
%mat = OpTypeCooperativeMatrixNV %float %uint_3 %uint_8 %uint_8
%len = OpSpecConstantOp %uint CooperativeMatrixLengthNV %mat
%arr = OpTypeArray %float %len
%ptr = OpTypePointer Function %arr
%main = OpFunction %void None %fn
%entry = OpLabel
%v = OpVariable %ptr Function
OpReturn
OpFunctionEnd
"""


def test_a_type_sized_by_a_per_launch_length_is_refused_by_name():
    from ref_helpers import spirv_text

    from hydroplane.ref import InvalidModuleError

    with pytest.raises(InvalidModuleError, match="depends on the dispatch"):
        Executor(subgroup_size=8).kernel(spirv_text(ARRAY_SIZED_BY_LENGTH))
