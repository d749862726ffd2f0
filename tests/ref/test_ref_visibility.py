"""The reference executor's check of buffer memory handed between workgroups (ref/visibility.py) with GLSL's forms:
a release-acquire atomic (the Vulkan memory model's semantics on the atomic itself) and the GLSL 450 idiom of
memoryBarrierBuffer() around a relaxed atomic; the same kernels without them are races. A kernel whose workgroups
read only what they wrote themselves (or inputs) is not touched by the check."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl

from hydroplane.ref import Executor
from hydroplane.ref.errors import RaceError

MEMORY_MODEL = """#version 450
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer P { float partial[]; };
layout(set = 0, binding = 2) buffer C { uint count; };
layout(set = 0, binding = 3) buffer O { float o[]; };
shared uint ticket;
void main() {
    uint g = gl_WorkGroupID.x, i = gl_LocalInvocationIndex, n = gl_NumWorkGroups.x;
    partial[g * 32u + i] = x[g * 32u + i] + 1.0;
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsBuffer | gl_StorageSemanticsShared,
                   gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
    if (i == 0u) ticket = atomicAdd(count, 1u, gl_ScopeQueueFamily, SEMANTICS);
    barrier();
    if (ticket == n - 1u) {
        float total = 0.0;
        for (uint k = 0u; k < n; ++k) total += partial[k * 32u + i];
        o[i] = total;
    }
}
"""

GLSL450 = """#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer P { float partial[]; };
layout(set = 0, binding = 2) buffer C { uint count; };
layout(set = 0, binding = 3) buffer O { float o[]; };
shared uint ticket;
void main() {
    uint g = gl_WorkGroupID.x, i = gl_LocalInvocationIndex, n = gl_NumWorkGroups.x;
    partial[g * 32u + i] = x[g * 32u + i] + 1.0;
    FENCE
    barrier();
    if (i == 0u) ticket = atomicAdd(count, 1u);
    barrier();
    if (ticket == n - 1u) {
        FENCE
        float total = 0.0;
        for (uint k = 0u; k < n; ++k) total += partial[k * 32u + i];
        o[i] = total;
    }
}
"""


def run(words, groups: int, max_lanes: int = 1 << 15):
    rng = np.random.default_rng(groups)
    x = rng.integers(-9, 9, groups * 32).astype(np.float32)
    ex = Executor(max_lanes=max_lanes)
    bufs = {0: ex.buffer(x), 1: ex.buffer(np.zeros(groups * 32, np.float32)), 2: ex.buffer(np.zeros(1, np.uint32)),
            3: ex.buffer(np.zeros(32, np.float32))}
    ex.dispatch(ex.kernel(words), (groups, 1, 1), bufs)
    np.testing.assert_array_equal(ex.read(bufs[3], np.float32), (x + 1).reshape(groups, 32).sum(axis=0))


@pytest.mark.parametrize("max_lanes", [1 << 15, 64])
def test_a_release_acquire_atomic_hands_the_partials_over(max_lanes):
    run(glsl(MEMORY_MODEL.replace("SEMANTICS", "gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease | "
                                               "gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible")), 6, max_lanes)


@pytest.mark.parametrize("semantics", ["gl_StorageSemanticsBuffer, gl_SemanticsRelease | gl_SemanticsMakeAvailable",
                                       "gl_StorageSemanticsBuffer, gl_SemanticsAcquire | gl_SemanticsMakeVisible",
                                       "0, 0"])
def test_a_release_or_an_acquire_alone_is_a_race(semantics):
    with pytest.raises(RaceError, match="not ordered before the read"):
        run(glsl(MEMORY_MODEL.replace("SEMANTICS", semantics)), 6)


def test_memory_barrier_buffer_around_a_relaxed_atomic_hands_the_partials_over():
    run(glsl(GLSL450.replace("FENCE", "memoryBarrierBuffer();")), 5)
    run(glsl(GLSL450.replace("FENCE", "memoryBarrierBuffer();")), 5, max_lanes=32)
    with pytest.raises(RaceError, match="not ordered before the read"):
        run(glsl(GLSL450.replace("FENCE", "")), 5)


def test_one_workgroup_needs_no_hand_over():
    run(glsl(GLSL450.replace("FENCE", "")), 1)
