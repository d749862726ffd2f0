"""Whole kernels through the reference executor's cooperative-matrix handlers, beyond the CTS
matrix: the legacy NV family, NV2 workgroup scope with tensor layouts/views, the element
distribution as an executor option, EXT ConvertUse, and planted bugs (non-uniform MulAdd,
out-of-bounds load) that must be reported with the invocations and the instruction."""

import numpy as np
import pytest
from cts import extras
from cts.compile import compile_glsl, glsl_source

from hydroplane.ref import Executor, NonUniformError, OutOfBoundsError, RaceError, UninitializedReadError
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.errors import MisalignedAccessError
from hydroplane.spirv import Op
from hydroplane.spirv.builder import ModuleBuilder


def _run(words, buffers, sg=8, grid=(1, 1, 1), push=None, **options):
    ex = Executor(subgroup_size=sg, **options)
    bufs = {b: ex.buffer(arr) for b, arr in buffers.items()}
    ex.dispatch(ex.kernel(words), grid, bufs, push=push)
    return {b: ex.read(bufs[b], arr.dtype) for b, arr in buffers.items()}


def _small(rng, shape, dtype):
    return rng.integers(-4, 5, shape).astype(dtype)


@pytest.mark.parametrize("tile,sg", [(8, 8), (8, 32), (16, 32)])
def test_nv_legacy_family(glslang, tile, sg):
    _run_extra(glslang, extras.nv_legacy(tile, sg))


@pytest.mark.parametrize("tile,sg", [(8, 8), (8, 32), (16, 32)])
def test_nv_legacy_length_as_a_spec_constant_is_evaluated_per_launch(glslang, tile, sg):
    # glslang writes an NV matrix's length() as OpSpecConstantOp CooperativeMatrixLengthNV; the
    # executor evaluates it at dispatch, when the subgroup size is known: ceil(T*T / sg).
    extra = extras.nv_legacy(tile, sg)
    words = compile_glsl(glslang, glsl_source("nv_legacy.comp"), {**extra.defines, "WITH_LENGTH": 1})
    out = _run(words, dict(enumerate(extra.buffers)), sg=sg)
    assert (out[3][tile * tile:] == -(-tile * tile // sg)).all(), out[3][tile * tile:]


def _run_extra(glslang, extra):
    words = compile_glsl(glslang, glsl_source(extra.source), extra.defines)
    out = _run(words, dict(enumerate(extra.buffers)), sg=extra.sg, grid=extra.grid, push=extra.push or None)
    extra.check([out[i] for i in range(len(extra.buffers))])


def test_nv2_workgroup_scope_with_tensor_layouts_and_views(glslang):
    _run_extra(glslang, extras.workgroup_tile(64, 32))


@pytest.mark.parametrize("dist,rule", [(cm.STRIDED, lambda lane, i, s, n: lane + i * s),
                                       (cm.BLOCKED, lambda lane, i, s, n: lane * n + i)])
def test_distribution_option_drives_length_and_get_coordinate(glslang, dist, rule):
    sg, rows, cols = 8, 8, 16
    words = compile_glsl(glslang, glsl_source("coordinates.comp"), {"SG": sg, "R": rows, "C": cols})
    length = rows * cols // sg
    out = _run(words, {0: np.full(2 * sg * length, 0xFFFFFFFF, np.uint32), 1: np.zeros(sg, np.uint32)},
               sg=sg, coopmat_distribution=dist)
    assert (out[1] == length).all()
    coords = out[0].reshape(sg, length, 2)
    for lane in range(sg):
        for i in range(length):
            flat = rule(lane, i, sg, length)
            assert tuple(coords[lane, i]) == (flat // cols, flat % cols)


def test_ext_convert_use_a_to_accumulator(glslang):
    words = compile_glsl(glslang, glsl_source("ext_convert_a_to_acc.comp"))
    rng = np.random.default_rng(3)
    a = rng.standard_normal(64).astype(np.float32)
    buf = np.concatenate([a, np.full(64, np.nan, np.float32)])
    out = _run(words, {0: buf}, sg=32)
    np.testing.assert_array_equal(out[0][64:], a)


def test_ext_convert_use_transposed_to_a(glslang):
    words = compile_glsl(glslang, glsl_source("ext_transpose_acc_to_a.comp"))
    rng = np.random.default_rng(4)
    c = rng.standard_normal((8, 8)).astype(np.float32)
    out = _run(words, {0: np.concatenate([c.reshape(-1), np.full(64, np.nan, np.float32)])}, sg=8)
    np.testing.assert_array_equal(out[0][64:].reshape(8, 8), c.T)


def test_nonuniform_muladd_is_reported_with_invocations(glslang):
    words = compile_glsl(glslang, glsl_source("nonuniform_muladd.comp"))
    with pytest.raises(NonUniformError) as info:
        _run(words, {0: np.ones(64, np.float16), 1: np.zeros(64, np.float32)}, sg=8)
    d = info.value.diagnostic
    assert d.kind == "non-uniform" and "OpCooperativeMatrixMulAddKHR" in d.message
    assert "OpCooperativeMatrixMulAddKHR" in d.disassembly and d.offset is not None
    assert d.count == 4 and d.invocations[0] == "wg (0,0,0) local (4,0,0)"


def test_out_of_bounds_cooperative_load_is_reported(glslang):
    words = compile_glsl(glslang, glsl_source("oob_load.comp"))
    with pytest.raises(OutOfBoundsError) as info:
        _run(words, {0: np.ones(64, np.float32), 1: np.zeros(64, np.float32)}, sg=8,
             check_alignment=False)  # its stride of 9 is about bounds, not the alignment rule
    d = info.value.diagnostic
    assert "OpCooperativeMatrixLoadKHR" in d.disassembly and "read of 4 bytes" in d.message
    assert d.invocations and d.invocations[0].startswith("wg (0,0,0) local (")


@pytest.mark.parametrize("bug,error,kind", [(1, RaceError, "race"), (2, UninitializedReadError, "uninitialized-read")])
def test_workgroup_memory_bugs_through_cooperative_matrices(glslang, bug, error, kind):
    c = np.random.default_rng(bug).standard_normal(64).astype(np.float32)
    good = compile_glsl(glslang, glsl_source("shared_race.comp"), {"BUG": 0})
    out = _run(good, {0: c, 1: np.full(64, np.nan, np.float32)}, sg=8)
    np.testing.assert_array_equal(out[1], c)  # with the barrier, subgroup 1 sees subgroup 0's tile
    words = compile_glsl(glslang, glsl_source("shared_race.comp"), {"BUG": bug})
    with pytest.raises(error) as info:
        _run(words, {0: c, 1: np.full(64, np.nan, np.float32)}, sg=8)
    d = info.value.diagnostic
    assert d.kind == kind and "OpCooperativeMatrixLoadKHR" in d.disassembly
    assert all(who.startswith("wg (0,0,0) local (") for who in d.invocations)
    # the loading invocations are subgroup 1's (local ids 8..15)
    assert all(int(who.split("local (")[1].split(",")[0]) >= 8 for who in d.invocations)


def test_workgroup_scope_muladd_reached_by_one_subgroup_is_reported(glslang):
    a = np.random.default_rng(8).integers(-3, 4, 256).astype(np.float16)
    good = compile_glsl(glslang, glsl_source("nonuniform_workgroup.comp"), {"BUG": 0})
    out = _run(good, {0: a, 1: np.full(256, np.nan, np.float32)}, sg=32)
    m = a.reshape(16, 16).astype(np.float64)
    np.testing.assert_array_equal(out[1].reshape(16, 16), (m @ m).astype(np.float32))
    bad = compile_glsl(glslang, glsl_source("nonuniform_workgroup.comp"), {"BUG": 1})
    with pytest.raises(NonUniformError) as info:
        _run(bad, {0: a, 1: np.zeros(256, np.float32)}, sg=32)
    d = info.value.diagnostic
    assert "workgroup" in d.message and d.count == 32 and d.invocations[0] == "wg (0,0,0) local (32,0,0)"


def test_collect_mode_reports_a_coop_out_of_bounds_load_and_goes_on(glslang):
    words = compile_glsl(glslang, glsl_source("oob_load.comp"))
    ex = Executor(subgroup_size=8, diagnostics="collect", check_alignment=False)  # an odd stride, on purpose
    c = np.arange(64, dtype=np.float32)
    bufs = {0: ex.buffer(c), 1: ex.buffer(np.full(64, np.nan, np.float32))}
    report = ex.dispatch(ex.kernel(words), (1, 1, 1), bufs)
    assert [d.kind for d in report] == ["out-of-bounds"]
    got = ex.read(bufs[1], np.float32).reshape(8, 8)
    want = np.zeros(72, np.float32)
    want[:64] = c
    expect = np.stack([want[r * 9:r * 9 + 8] for r in range(8)])  # out-of-bounds elements read as 0
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("clamp", sorted(extras.CLAMP_MODES))
@pytest.mark.parametrize("tile,sg", [(8, 8), (16, 32)])
def test_tensor_load_clamp_modes_and_clipped_store(glslang, clamp, tile, sg):
    _run_extra(glslang, extras.tensor_clamp(clamp, tile, sg))


def test_structs_of_matrices_go_to_the_plain_composite_handlers(glslang):
    words = compile_glsl(glslang, glsl_source("struct_of_matrices.comp"))
    c = np.random.default_rng(13).integers(-8, 8, 64).astype(np.float32)
    out = _run(words, {0: c, 1: np.full(64, np.nan, np.float32)}, sg=8)
    np.testing.assert_array_equal(out[1], c + c - c * 0.5)


def test_physical_storage_buffer_pointers(glslang):
    words = compile_glsl(glslang, glsl_source("psb_load_store.comp"))
    rng = np.random.default_rng(14)
    src = rng.standard_normal(4 + 11 * 8).astype(np.float32)
    ex = Executor(subgroup_size=8, check_alignment=False)  # its strides of 11 are about addressing
    a, d = ex.buffer(src), ex.buffer(np.full(64, np.nan, np.float32))
    unused = ex.buffer(np.zeros(4, np.float32))
    push = np.array([a.address, d.address], np.uint64)
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: unused}, push=push)
    got = ex.read(d, np.float32).reshape(8, 8)
    columns = np.stack([src[4 + j * 11:4 + j * 11 + 8] for j in range(8)], axis=1)  # column-major, stride 11
    np.testing.assert_array_equal(got, columns * 2)
    from hydroplane.vk import Binding, Device, devices

    found = [info for info in devices() if info.cooperative_matrix_khr]
    if not found:
        pytest.fail("no device with cooperative matrices (lavapipe); run through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        va, vd, vu = dev.buffer(src), dev.buffer(np.full(64, np.nan, np.float32)), dev.buffer(np.zeros(4, np.float32))
        pipeline = dev.pipeline(words, [Binding(0, 0)], push_constant_size=16)
        dev.dispatch(pipeline, (1, 1, 1), {0: vu}, push=np.array([va.address, vd.address], np.uint64))
        np.testing.assert_array_equal(vd.read(np.float32).reshape(8, 8), got)


def test_load_through_a_vector_pointee_counts_stride_in_vectors(glslang):
    words = compile_glsl(glslang, glsl_source("vector_pointee.comp"))
    raw = np.random.default_rng(15).integers(-9, 9, 16 * 8 + 8).astype(np.float16)  # 17 uvec4s
    out = _run(words, {0: raw, 1: np.full(64, np.nan, np.float16)}, sg=8)
    want = np.stack([raw[8 + r * 16:8 + r * 16 + 8] for r in range(8)])  # byte 16 = f16 #8; row = 16 f16
    np.testing.assert_array_equal(out[1].reshape(8, 8), want)
    from hydroplane.vk import Binding, Device, devices

    found = [info for info in devices() if info.cooperative_matrix_khr]
    if not found:
        pytest.fail("no device with cooperative matrices (lavapipe); run through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        bufs = {0: dev.buffer(raw), 1: dev.buffer(np.full(64, np.nan, np.float16))}
        dev.dispatch(dev.pipeline(words, [Binding(0, 0), Binding(0, 1)]), (1, 1, 1), bufs)
        np.testing.assert_array_equal(bufs[1].read(np.float16).reshape(8, 8), want)


def test_a_stride_that_differs_within_the_subgroup_is_reported(glslang):
    words = compile_glsl(glslang, glsl_source("nonuniform_stride.comp"))
    with pytest.raises(NonUniformError) as info:
        _run(words, {0: np.ones(128, np.float32), 1: np.zeros(64, np.float32)}, sg=8)
    d = info.value.diagnostic
    assert "stride must be the same in every invocation" in d.message and "has 8 and 9" in d.message
    assert "OpCooperativeMatrixLoadKHR" in d.disassembly
    assert d.count == 4 and d.invocations[0] == "wg (0,0,0) local (1,0,0)"


@pytest.mark.parametrize("stride, offset, ok", [(8, 0, True), (9, 0, False), (8, 2, False), (16, 8, True)])
def test_cooperative_loads_follow_vulkans_alignment_rule(stride, offset, ok):
    """An f16 8x8 row-major load needs its pointer and stride aligned to min(16, 16) bytes (VUID-RuntimeSpirv-
    OpCooperativeMatrixLoadKHR-08986); the H200's driver returned shifted data for such loads where lavapipe
    and a lenient executor do not mind, so the reference executor reports them ('misaligned')."""
    b = ModuleBuilder()
    f16 = b.scalar("f16")
    src, ptr = b.storage_buffer(f16, 0, name="src", readonly=True)
    dst, _ = b.storage_buffer(f16, 1, name="dst")
    acc = b.type_coop_matrix_khr(f16, 8, 8, "MatrixAccumulatorKHR")
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    zero = b.u32(0)
    m = b.emit(Op.CooperativeMatrixLoadKHR, acc, b.emit(Op.AccessChain, ptr, src, zero, b.u32(offset)),
               b.u32(0), b.u32(stride))
    b.emit(Op.CooperativeMatrixStoreKHR, b.emit(Op.AccessChain, ptr, dst, zero, zero), m, b.u32(0), b.u32(8))
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(8,))
    words = b.to_words()
    x = np.arange(256, dtype=np.float16)
    if ok:
        out = _run(words, {0: x, 1: np.full(64, np.nan, np.float16)})[1]
        np.testing.assert_array_equal(out.reshape(8, 8), x[offset:offset + 8 * stride].reshape(8, stride)[:, :8])
    else:
        with pytest.raises(MisalignedAccessError, match="multiples of 16 bytes"):
            _run(words, {0: x, 1: np.full(64, np.nan, np.float16)})
        _run(words, {0: x, 1: np.full(64, np.nan, np.float16)}, check_alignment=False)  # the opt-out runs it
