"""`fence`: workgroups handing buffer memory to each other through an atomic (the last of them to arrive reads what
every other wrote), on the reference executor and lavapipe; the reference executor's check of that hand-over
(ref.visibility): without the writer's release or the reader's acquire the read is a race there, in one batch of
workgroups or several; the fence's SPIR-V (OpMemoryBarrier at QueueFamily scope) through spirv-val."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, run_on

from hydroplane.lang import (
    Buffer,
    CompilationError,
    atomic_add,
    atomic_exchange,
    barrier,
    constexpr,
    f32,
    fence,
    kernel_source,
    local_index,
    readonly,
    s32,
    shared_array,
    workgroup_id,
)
from hydroplane.ref import Executor
from hydroplane.ref.errors import RaceError
from hydroplane.spirv import decode
from hydroplane.spirv.enums import MemorySemantics, Scope
from hydroplane.spirv.grammar import Op

THREADS = 64


@kernel_source(local_size=THREADS)
def last_sums(x: Buffer[f32, readonly], partial: Buffer[f32], count: Buffer[s32], out: Buffer[f32],
              GROUPS: constexpr, RELEASE: constexpr = True, ACQUIRE: constexpr = True):
    """Every workgroup writes its doubled values; the last to arrive at count[0] sums them per invocation index
    (out[i] = 2 * sum over workgroups of x[g, i]) and sets the count back to 0."""
    ticket = shared_array(s32, 1)
    lid = local_index()
    g = workgroup_id(0)
    partial[g * THREADS + lid] = x[g * THREADS + lid] * f32(2.0)
    barrier()
    if lid == 0:
        if RELEASE:
            fence("release")
        arrived = atomic_add(count, 0, 1)
        if ACQUIRE:
            fence("acquire")
        ticket[0] = arrived
    barrier()
    if ticket[0] == GROUPS - 1:
        total = f32(0.0)
        for other in range(GROUPS):
            total = total + partial[other * THREADS + lid]
        out[lid] = total
        if lid == 0:
            atomic_exchange(count, 0, 0)


def arrays(groups: int, rng) -> dict:
    return {"x": rng.integers(-50, 50, groups * THREADS).astype(np.float32),
            "partial": np.full(groups * THREADS, -1.0, np.float32), "count": np.zeros(1, np.int32),
            "out": np.full(THREADS, -7.0, np.float32)}


def run_ref(spec, groups: int, data: dict, max_lanes: int = 1 << 15) -> dict:
    ex = Executor(max_lanes=max_lanes)
    bufs = {p.binding: ex.buffer(data[p.name]) for p in spec.buffers}
    ex.dispatch(ex.kernel(spec.words), (groups, 1, 1), bufs)
    return {p.name: ex.read(bufs[p.binding], data[p.name].dtype) for p in spec.buffers}


@pytest.mark.parametrize("groups, max_lanes", [(1, 1 << 15), (7, 1 << 15), (9, 2 * THREADS), (5, THREADS)])
def test_the_last_workgroup_reads_every_partial_on_ref(groups, max_lanes):
    data = arrays(groups, np.random.default_rng(groups))
    got = run_ref(compiled(last_sums, GROUPS=groups), groups, data, max_lanes)
    np.testing.assert_array_equal(got["out"], 2 * data["x"].reshape(groups, THREADS).sum(axis=0))
    assert got["count"][0] == 0  # the last one set it back


@pytest.mark.parametrize("release, acquire", [(False, True), (True, False), (False, False)])
@pytest.mark.parametrize("max_lanes", [1 << 15, THREADS])
def test_a_missing_release_or_acquire_is_a_race_on_ref(release, acquire, max_lanes):
    spec = compiled(last_sums, GROUPS=4, RELEASE=release, ACQUIRE=acquire)
    with pytest.raises(RaceError, match="wrote in this dispatch, not ordered before the read"):
        run_ref(spec, 4, arrays(4, np.random.default_rng(0)), max_lanes)


def test_one_workgroup_reads_its_own_writes_without_fences_on_ref():
    data = arrays(1, np.random.default_rng(3))
    got = run_ref(compiled(last_sums, GROUPS=1, RELEASE=False, ACQUIRE=False), 1, data)
    np.testing.assert_array_equal(got["out"], 2 * data["x"])


@pytest.mark.vulkan
@pytest.mark.parametrize("groups", [1, 3, 64])
def test_the_last_workgroup_reads_every_partial_on_lavapipe(groups):
    data = arrays(groups, np.random.default_rng(groups))
    spec = compiled(last_sums, GROUPS=groups)
    for _ in range(3):  # the count is back at zero after each dispatch
        got = run_on(0, spec, (groups, 1, 1), data)
        np.testing.assert_array_equal(got["out"], 2 * data["x"].reshape(groups, THREADS).sum(axis=0))
        assert got["count"][0] == 0
        data = {**data, "count": got["count"]}


def test_the_fence_is_a_queue_family_memory_barrier_on_buffer_memory():
    words = compiled(last_sums, GROUPS=2).words
    module = decode(words)
    barriers = [i for i in module.instructions if i.opcode == Op.MemoryBarrier]
    constants = {i.result_id: i.operands[-1].value for i in module.instructions if i.opcode == Op.Constant}
    found = [(constants[i.operands[0].value], constants[i.operands[1].value]) for i in barriers]
    uniform = int(MemorySemantics.UniformMemory)
    assert found == [(int(Scope.QueueFamily), int(MemorySemantics.Release) | uniform
                      | int(MemorySemantics.MakeAvailable)),
                     (int(Scope.QueueFamily), int(MemorySemantics.Acquire) | uniform
                      | int(MemorySemantics.MakeVisible))]


def test_fence_takes_release_acquire_or_acq_rel():
    @kernel_source(local_size=1)
    def wrong(out: Buffer[f32]):
        fence("seq_cst")
        out[0] = f32(1.0)

    with pytest.raises(CompilationError, match="release"):
        wrong.compile()

    @kernel_source(local_size=1)
    def both(out: Buffer[f32]):
        fence("acq_rel")
        out[0] = f32(1.0)

    compiled(both)
