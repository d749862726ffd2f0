"""Cooperative-matrix values through the executor's control flow: an OpPhi merging matrices of
subgroups that took different branches, and a loop-carried accumulator (builder kernel, checked
against NumPy and against lavapipe)."""

from __future__ import annotations

import numpy as np
import pytest

from hydroplane.launch import executors as launch
from hydroplane.ref import Executor
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.grammar import Op

T = 8  # lavapipe's subgroup tile: 8x8x8, subgroup size 8
SUBGROUPS = 2


def coop_flow_kernel():
    b = ModuleBuilder()
    f16, f32, u32, boolean = b.scalar("f16"), b.scalar("f32"), b.scalar("u32"), b.type_bool()
    (va, pa), (vb, pb), (vc, pc), (vd, pd) = (b.storage_buffer(e, i) for i, e in enumerate((f16, f16, f32, f32)))
    ta = b.type_coop_matrix_khr(f16, T, T, "MatrixAKHR", "Subgroup")
    tb = b.type_coop_matrix_khr(f16, T, T, "MatrixBKHR", "Subgroup")
    tc = b.type_coop_matrix_khr(f32, T, T, "MatrixAccumulatorKHR", "Subgroup")
    sgid_var = b.builtin("SubgroupId", u32)
    main, _ = b.function(b.type_void(), name="main")
    entry = b.label()
    row_major, stride, zero = b.u32(0), b.u32(T), b.u32(0)
    sgid = b.emit(Op.Load, u32, sgid_var)
    tile = b.emit(Op.IMul, u32, sgid, b.u32(T * T))
    a = b.emit(Op.CooperativeMatrixLoadKHR, ta, b.emit(Op.AccessChain, pa, va, zero, tile), row_major, stride)
    bm = b.emit(Op.CooperativeMatrixLoadKHR, tb, b.emit(Op.AccessChain, pb, vb, zero, zero), row_major, stride)
    c = b.emit(Op.CooperativeMatrixLoadKHR, tc, b.emit(Op.AccessChain, pc, vc, zero, zero), row_major, stride)
    first = b.emit(Op.IEqual, boolean, sgid, zero)
    then, other, merge = b.id(), b.id(), b.id()
    b.emit(Op.SelectionMerge, merge, "None")
    b.emit(Op.BranchConditional, first, then, other)
    b.label(then)
    r1 = b.emit(Op.CooperativeMatrixMulAddKHR, tc, a, bm, c)
    b.emit(Op.Branch, merge)
    b.label(other)
    r2 = b.emit(Op.CooperativeMatrixMulAddKHR, tc, a, bm, b.emit(Op.CooperativeMatrixMulAddKHR, tc, a, bm, c))
    b.emit(Op.Branch, merge)
    b.label(merge)
    r = b.emit(Op.Phi, tc, r1, then, r2, other)
    header, body, cont, done = b.id(), b.id(), b.id(), b.id()
    i_next, acc_next = b.id(), b.id()
    b.emit(Op.Branch, header)
    b.label(header)
    i = b.emit(Op.Phi, u32, zero, merge, i_next, cont)
    acc = b.emit(Op.Phi, tc, r, merge, acc_next, cont)
    more = b.emit(Op.ULessThan, boolean, i, b.u32(2))
    b.emit(Op.LoopMerge, done, cont, "None")
    b.emit(Op.BranchConditional, more, body, done)
    b.label(body)
    b.emit(Op.CooperativeMatrixMulAddKHR, tc, a, bm, acc, result_id=acc_next)
    b.emit(Op.Branch, cont)
    b.label(cont)
    b.emit(Op.IAdd, u32, i, b.u32(1), result_id=i_next)
    b.emit(Op.Branch, header)
    b.label(done)
    b.emit(Op.CooperativeMatrixStoreKHR, b.emit(Op.AccessChain, pd, vd, zero, tile), acc, row_major, stride)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(T * SUBGROUPS,))
    del entry
    return b.to_words()


def _inputs():
    rng = np.random.default_rng(21)
    a = rng.integers(-3, 4, (SUBGROUPS, T, T)).astype(np.float16)
    bm = rng.integers(-3, 4, (T, T)).astype(np.float16)
    c = rng.integers(-8, 9, (T, T)).astype(np.float32)
    return a, bm, c


def test_phi_and_loop_carried_matrices_on_the_reference_executor():
    a, bm, c = _inputs()
    buffers = {0: a, 1: bm, 2: c, 3: np.full((SUBGROUPS, T, T), np.nan, np.float32)}
    out = launch.run(coop_flow_kernel(), (1, 1, 1), buffers, executor=Executor(subgroup_size=T))[3]
    prod = [a[s].astype(np.float32) @ bm.astype(np.float32) for s in range(SUBGROUPS)]
    np.testing.assert_array_equal(out[0], c + 3 * prod[0])
    np.testing.assert_array_equal(out[1], c + 4 * prod[1])


@pytest.mark.vulkan
def test_phi_and_loop_carried_matrices_match_lavapipe():
    a, bm, c = _inputs()
    buffers = {0: a, 1: bm, 2: c, 3: np.full((SUBGROUPS, T, T), np.nan, np.float32)}
    words = coop_flow_kernel()
    ref = launch.run(words, (1, 1, 1), buffers, executor=Executor(subgroup_size=T))[3]
    dev = launch.run(words, (1, 1, 1), buffers, device=0)[3]
    np.testing.assert_array_equal(ref, dev)
