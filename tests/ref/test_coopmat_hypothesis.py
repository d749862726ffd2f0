"""Hypothesis-generated straight-line cooperative-matrix kernels (ModuleBuilder) that agree bit for
bit between the reference executor and lavapipe: a pool of 8x8 accumulators (f16 and f32) fed by
element-wise arithmetic, negation, matrix-times-scalar, conversions between the two types,
element moves (OpCompositeExtract of one index, OpCompositeInsert at another: lavapipe's 8x8
layout is the reference's documented default, so these agree too), and MulAdd of f16 A/B views
taken from the pool through NV2 Use conversions. Every result is NoContraction (lavapipe would
fuse a multiply into a following add otherwise); the sign of a zero may differ (Vulkan lets
drivers drop it without SignedZeroInfNanPreserve)."""

import numpy as np
import pytest
from cts.device_types import missing_matrix_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydroplane.ref import Executor
from hydroplane.spirv import grammar
from hydroplane.spirv.builder import ModuleBuilder

Op = grammar.Op
N = 8
LENGTH = N * N // 8  # elements per invocation of an 8x8 tile on 8 lanes

STEP = st.one_of(
    st.tuples(st.sampled_from(["add", "sub", "mul"]), st.integers(0, 15), st.integers(0, 15)),
    st.tuples(st.just("negate"), st.integers(0, 15), st.just(0)),
    st.tuples(st.just("scale"), st.integers(0, 15), st.sampled_from([-2, -1, 2, 3])),
    st.tuples(st.just("convert"), st.integers(0, 15), st.just(0)),
    st.tuples(st.just("move"), st.integers(0, 15), st.integers(0, LENGTH * LENGTH - 1)),
    st.tuples(st.just("muladd"), st.integers(0, 15), st.integers(0, 15)),
)


def build(steps) -> bytes:
    """Inputs: x (f32) and y (f16) tiles at bindings 0 and 1; out: the last f32 and f16 values."""
    b = ModuleBuilder()
    b.extension("SPV_NV_cooperative_matrix2")
    b.capability("CooperativeMatrixConversionsNV")
    f32, f16 = b.scalar("f32"), b.scalar("f16")
    (x_var, x_ptr), (y_var, y_ptr) = b.storage_buffer(f32, 0, name="x"), b.storage_buffer(f16, 1, name="y")
    (o32_var, _), (o16_var, _) = b.storage_buffer(f32, 2, name="o32"), b.storage_buffer(f16, 3, name="o16")
    acc = {f32: b.type_coop_matrix_khr(f32, N, N, "MatrixAccumulatorKHR"),
           f16: b.type_coop_matrix_khr(f16, N, N, "MatrixAccumulatorKHR")}
    use_a = b.type_coop_matrix_khr(f16, N, N, "MatrixAKHR")
    use_b = b.type_coop_matrix_khr(f16, N, N, "MatrixBKHR")
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    zero, row_major, stride = b.u32(0), b.u32(0), b.u32(N)

    def exact(value):
        b.decorate(value, "NoContraction")
        return value

    pool = [(b.emit(Op.CooperativeMatrixLoadKHR, acc[f32], b.emit(Op.AccessChain, x_ptr, x_var, zero, zero),
                    row_major, stride), f32),
            (b.emit(Op.CooperativeMatrixLoadKHR, acc[f16], b.emit(Op.AccessChain, y_ptr, y_var, zero, zero),
                    row_major, stride), f16)]
    for kind, i, j in steps:
        src, elem = pool[i % len(pool)]
        if kind in ("add", "sub", "mul"):
            other = next((v for v, e in reversed(pool) if e == elem), src) if j % 2 else src
            op = {"add": Op.FAdd, "sub": Op.FSub, "mul": Op.FMul}[kind]
            value = exact(b.emit(op, acc[elem], src, other))
        elif kind == "negate":
            value = b.emit(Op.FNegate, acc[elem], src)
        elif kind == "scale":
            value = exact(b.emit(Op.MatrixTimesScalar, acc[elem], src, b.constant(elem, j)))
        elif kind == "convert":
            elem = f16 if elem == f32 else f32
            value = b.emit(Op.FConvert, acc[elem], src)
        elif kind == "move":
            picked = b.emit(Op.CompositeExtract, elem, src, j // LENGTH)
            value = b.emit(Op.CompositeInsert, acc[elem], picked, src, j % LENGTH)
        else:  # muladd: f16 A and B views of pool values, into the f32 accumulator
            halves = [v for v, e in pool if e == f16]
            a = b.emit(Op.CooperativeMatrixConvertNV, use_a, halves[i % len(halves)])
            bb = b.emit(Op.CooperativeMatrixConvertNV, use_b, halves[j % len(halves)])
            c = next(v for v, e in reversed(pool) if e == f32)
            value, elem = b.emit(Op.CooperativeMatrixMulAddKHR, acc[f32], a, bb, c), f32
        pool.append((value, elem))
    for var, elem in ((o32_var, f32), (o16_var, f16)):
        last = next(v for v, e in reversed(pool) if e == elem)
        ptr = b.type_pointer("StorageBuffer", elem)
        b.emit(Op.CooperativeMatrixStoreKHR, b.emit(Op.AccessChain, ptr, var, zero, zero), last, row_major, stride)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(8,))
    return b.to_words()


@pytest.fixture(scope="module")
def lavapipe():
    from hydroplane.vk import Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr and d.cooperative_matrix_nv2 and d.subgroup_size == 8]
    if not found:
        pytest.fail("no 8-lane device with KHR + NV2 cooperative matrices (lavapipe); run through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        yield dev


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-3, 4, N * N).astype(np.float32), rng.integers(-3, 4, N * N).astype(np.float16),
            np.full(N * N, np.nan, np.float32), np.full(N * N, np.nan, np.float16)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=12), seed=st.integers(0, 2**32 - 1))
def test_random_coop_kernels_agree_with_lavapipe(lavapipe, steps, seed):
    from hydroplane.vk import Binding

    words = build(steps)
    assert not missing_matrix_types(words, lavapipe.info)
    arrays = _inputs(seed)
    ex = Executor(subgroup_size=8)
    bufs = {i: ex.buffer(a) for i, a in enumerate(arrays)}
    ex.dispatch(ex.kernel(words), (1, 1, 1), bufs)
    ref = [ex.read(bufs[i], a.dtype) for i, a in enumerate(arrays)]
    dbufs = {i: lavapipe.buffer(a) for i, a in enumerate(arrays)}
    lavapipe.dispatch(lavapipe.pipeline(words, [Binding(0, i) for i in range(4)]), (1, 1, 1), dbufs)
    dev = [dbufs[i].read(a.dtype) for i, a in enumerate(arrays)]
    # Equal values, bit for bit except the sign of zero: without SignedZeroInfNanPreserve Vulkan
    # lets a driver drop it (lavapipe folds y + (-2y) to -y, giving -0 for y = 0).
    for r, d, name in ((ref[2], dev[2], "f32 result"), (ref[3], dev[3], "f16 result")):
        r64, d64 = r.astype(np.float64), d.astype(np.float64)
        same = (r64 == d64) | (np.isnan(r64) & np.isnan(d64))
        assert same.all(), f"{name}: {steps}\nref {r[~same][:6]}\ndev {d[~same][:6]}"
