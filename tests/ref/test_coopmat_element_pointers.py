"""Element pointers into cooperative-matrix variables: glslang's `m[i]` on a local coopmat is
OpAccessChain %ptr_Function_<component> %m %i, then OpLoad/OpStore through it. Per-lane dynamic
indices, divergent stores that keep the other lanes' elements, the distribution option, an
uninitialised matrix written element by element, and an out-of-range index reported by name."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl

from hydroplane.ref import Executor, OutOfBoundsError
from hydroplane.ref.coopmat import matrix as cm

SG, R, C = 8, 8, 8
LENGTH = R * C // SG

SOURCE = """#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Src { float src[]; };
layout(set = 0, binding = 1) buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) buffer Dst { float dst[]; };
layout(set = 0, binding = 3) buffer Got { float got[]; };
layout(set = 0, binding = 4) buffer Fresh { float fresh[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m, built;
  coopMatLoad(m, src, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  uint lane = gl_SubgroupInvocationID;
  uint i = idx[lane];
  got[lane] = m[i];
  if ((lane & 1u) == 0u) m[i] = m[i] * 2.0 + float(lane);
  coopMatStore(m, dst, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  for (uint k = 0; k < built.length(); ++k) built[k] = float(lane * 100u + k);
  coopMatStore(built, fresh, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
"""

RULES = {"strided": lambda lane, i: lane + i * SG, "blocked": lambda lane, i: lane * LENGTH + i}


def _run(indices, src, dist=cm.STRIDED):
    ex = Executor(subgroup_size=SG, coopmat_distribution=dist)
    arrays = {0: src, 1: indices.astype(np.uint32), 2: np.full(R * C, np.nan, np.float32),
              3: np.full(SG, np.nan, np.float32), 4: np.full(R * C, np.nan, np.float32)}
    bufs = {b: ex.buffer(a) for b, a in arrays.items()}
    ex.dispatch(ex.kernel(glsl(SOURCE)), (1, 1, 1), bufs)
    return [ex.read(bufs[b], np.float32 if b != 1 else np.uint32) for b in (2, 3, 4)]


@pytest.mark.parametrize("dist", [cm.STRIDED, cm.BLOCKED], ids=["strided", "blocked"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dynamic_element_loads_and_divergent_stores(dist, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(-50, 50, R * C).astype(np.float32)
    indices = rng.integers(0, LENGTH, SG)
    dst, got, fresh = _run(indices, src, dist)
    flat_of = RULES[dist.name]
    want_dst = src.copy()
    for lane in range(0, SG, 2):
        flat = flat_of(lane, indices[lane])
        want_dst[flat] = src[flat] * 2 + lane
    want_got = np.array([src[flat_of(lane, indices[lane])] for lane in range(SG)], np.float32)
    want_fresh = np.empty(R * C, np.float32)
    for lane in range(SG):
        for k in range(LENGTH):
            want_fresh[flat_of(lane, k)] = lane * 100 + k
    np.testing.assert_array_equal(got, want_got)
    np.testing.assert_array_equal(dst, want_dst)
    np.testing.assert_array_equal(fresh, want_fresh)


def test_index_past_length_is_reported_with_the_variable():
    rng = np.random.default_rng(7)
    indices = rng.integers(0, LENGTH, SG)
    indices[5] = LENGTH + 3
    with pytest.raises(OutOfBoundsError) as info:
        _run(indices, rng.integers(-9, 9, R * C).astype(np.float32))
    d = info.value.diagnostic
    assert "element pointer" in d.message and f"index [{LENGTH + 3}]" in d.message
    assert "OpLoad" in d.disassembly


TWO_INDICES = """
OpCapability Shader
OpCapability CooperativeMatrixKHR
OpCapability VulkanMemoryModel
OpExtension "SPV_KHR_cooperative_matrix"
OpExtension "SPV_KHR_vulkan_memory_model"
OpMemoryModel Logical Vulkan
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 8 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%uint_0 = OpConstant %uint 0
%uint_1 = OpConstant %uint 1
%uint_2 = OpConstant %uint 2
%uint_3 = OpConstant %uint 3
%uint_8 = OpConstant %uint 8
%mat = OpTypeCooperativeMatrixKHR %float %uint_3 %uint_8 %uint_8 %uint_2
%ptr_mat = OpTypePointer Function %mat
%ptr_float = OpTypePointer Function %float
%main = OpFunction %void None %fn
%entry = OpLabel
%m = OpVariable %ptr_mat Function
%p = OpAccessChain %ptr_float %m %uint_1 %uint_0
OpReturn
OpFunctionEnd
"""


def test_two_indices_into_a_matrix_are_refused_by_name():
    from ref_helpers import spirv_text

    from hydroplane.ref import InvalidModuleError

    ex = Executor(subgroup_size=SG)
    with pytest.raises(InvalidModuleError, match="takes one index, not 2"):
        ex.dispatch(ex.kernel(spirv_text(TWO_INDICES)), (1, 1, 1), {})
