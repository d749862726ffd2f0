"""Cooperative matrices as values: seed 002's two tile kernels, a K-loop GEMM with the accumulator
living across the loop and passing through helpers, element access and element-wise arithmetic.

Shapes come from what Vulkan device 0 reports (lavapipe: 8x8x8); the reference executor runs the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, device_saturates, lavapipe_shapes, poisoned, run_everywhere, run_on

from hydroplane.lang import (
    Buffer,
    CompilationError,
    constexpr,
    coop,
    f16,
    f32,
    func,
    kernel_source,
    local_array,
    readonly,
    s8,
    s32,
    static_range,
    u8,
    u32,
    workgroup_id,
)
from hydroplane.spirv.target import Target

pytestmark = pytest.mark.vulkan


@kernel_source(local_size=32)
def tile_f16_f32(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32, readonly], d: Buffer[f32],
                 M: constexpr, N: constexpr, K: constexpr):
    """Seed 002's fused tile: D = A * B + C, f16 inputs accumulated in f32, all row-major."""
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, 0, K, coop.RowMajor)
    tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, 0, N, coop.RowMajor)
    tc = coop.load(coop.Matrix[f32, M, N, coop.Accumulator], c, 0, N, coop.RowMajor)
    coop.store(coop.mul_add(ta, tb, tc), d, 0, N, coop.RowMajor)


@kernel_source(local_size=32)
def tile_int8(a: Buffer[s8, readonly], b: Buffer[s8, readonly], c: Buffer[s32, readonly], d: Buffer[s32],
              M: constexpr, N: constexpr, K: constexpr, SATURATE: constexpr = False):
    """Seed 002's integer tile: s8 x s8 + s32; signedness operands come from the component types."""
    ta = coop.load(coop.Matrix[s8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[s8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[s32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc, saturating=SATURATE), d, 0, N)


@kernel_source(local_size=32)
def tile_uint8(a: Buffer[u8, readonly], b: Buffer[u8, readonly], c: Buffer[u32, readonly], d: Buffer[u32],
               M: constexpr, N: constexpr, K: constexpr):
    ta = coop.load(coop.Matrix[u8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[u8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[u32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc), d, 0, N)


def _shape(a_type: str, c_type: str) -> tuple[int, int, int]:
    shapes = lavapipe_shapes(a_type, c_type)
    assert shapes, f"device 0 reports no {a_type} x {a_type} + {c_type} subgroup shape"
    return shapes[0]


def test_seed_002_f16_tile():
    m, n, k = _shape("f16", "f32")
    rng = np.random.default_rng(1)
    a = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (k, n)) / 4).astype(np.float16)
    c = (rng.integers(-8, 8, (m, n)) / 2).astype(np.float32)
    spec = compiled(tile_f16_f32, M=m, N=n, K=k)
    assert "OpCooperativeMatrixMulAddKHR" in spec.asm()
    results = run_everywhere(spec, (1, 1, 1), {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(),
                                               "d": poisoned(m * n, np.float32)})
    expected = a.astype(np.float32) @ b.astype(np.float32) + c
    for device, out in results.items():
        np.testing.assert_array_equal(out["d"].reshape(m, n), expected, err_msg=str(device))


@pytest.mark.parametrize("saturate", [False, True])
def test_seed_002_int8_tile(saturate):
    m, n, k = _shape("s8", "s32")
    rng = np.random.default_rng(2 + saturate)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
    if saturate:  # push some sums past the s32 range both ways
        c[0, :] = 2**31 - 50
        c[1, :] = -(2**31) + 50
        a[0, :], b[:, :] = 127, 127
        a[1, :] = -128
    spec = compiled(tile_int8, M=m, N=n, K=k, SATURATE=saturate)
    text = spec.asm()
    assert "MatrixASignedComponentsKHR|MatrixBSignedComponentsKHR|MatrixCSignedComponentsKHR|" \
           "MatrixResultSignedComponentsKHR" in text
    assert ("SaturatingAccumulationKHR" in text) == saturate
    arrays = {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(), "d": poisoned(m * n, np.int32)}
    if saturate and not device_saturates("s8", "s32", (m, n, k)):
        # lavapipe reports saturatingAccumulation = VK_FALSE for every shape: creating the pipeline
        # would be invalid (the validation layer says so), so the saturating variant runs on ref only
        results = {"ref": run_on("ref", spec, (1, 1, 1), arrays)}
    else:
        results = run_everywhere(spec, (1, 1, 1), arrays)
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    expected = np.clip(exact, -(2**31), 2**31 - 1) if saturate else exact.astype(np.int32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["d"].reshape(m, n), expected.astype(np.int32), err_msg=str(device))


def test_unsigned_int8_tile_has_no_signedness_operands():
    m, n, k = _shape("u8", "u32")
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 256, (m, k)).astype(np.uint8), rng.integers(0, 256, (k, n)).astype(np.uint8)
    c = rng.integers(0, 10000, (m, n)).astype(np.uint32)
    spec = compiled(tile_uint8, M=m, N=n, K=k)
    assert "Signed" not in spec.asm()
    results = run_everywhere(spec, (1, 1, 1), {"a": a.ravel(), "b": b.ravel(), "c": c.ravel(),
                                               "d": poisoned(m * n, np.uint32)})
    for device, out in results.items():
        np.testing.assert_array_equal(out["d"].reshape(m, n), (a.astype(np.uint32) @ b + c).astype(np.uint32),
                                      err_msg=str(device))


@func
def k_step(acc, a, b, row, col, kk, K_TOTAL: constexpr, N_TOTAL: constexpr, M: constexpr, N: constexpr,
           K: constexpr):
    """One K step of the GEMM: a matrix comes in and goes out of a helper."""
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, row * K_TOTAL + kk, K_TOTAL)
    tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, kk * N_TOTAL + col, N_TOTAL)
    return coop.mul_add(ta, tb, acc)


@kernel_source(local_size=32)
def tiled_matmul(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32], k_total: s32,
                 N_TOTAL: constexpr, K_TOTAL: constexpr, M: constexpr, N: constexpr, K: constexpr):
    """C = A * B, one M x N tile per workgroup; the accumulator lives across the K loop."""
    row = workgroup_id(1) * M
    col = workgroup_id(0) * N
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    for kk in range(0, k_total, K):
        acc = k_step(acc, a, b, row, col, kk, K_TOTAL, N_TOTAL, M, N, K)
    acc = acc * 0.5  # scalar multiply
    acc = acc + acc  # element-wise
    coop.store(acc, c, row * N_TOTAL + col, N_TOTAL, coop.RowMajor)


def test_k_loop_tiled_matmul():
    m, n, k = _shape("f16", "f32")
    tiles_m, tiles_n, tiles_k = 2, 3, 4
    mt, nt, kt = m * tiles_m, n * tiles_n, k * tiles_k
    rng = np.random.default_rng(12)
    a = (rng.integers(-8, 8, (mt, kt)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (kt, nt)) / 4).astype(np.float16)
    spec = compiled(tiled_matmul, N_TOTAL=nt, K_TOTAL=kt, M=m, N=n, K=k)
    assert "OpLoopMerge" in spec.asm() and spec.asm().count("OpFunctionCall") == 1
    results = run_everywhere(spec, (tiles_n, tiles_m, 1), {"a": a.ravel(), "b": b.ravel(),
                                                           "c": poisoned(mt * nt, np.float32)}, {"k_total": kt})
    expected = a.astype(np.float32) @ b.astype(np.float32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["c"].reshape(mt, nt), expected, err_msg=str(device))


@kernel_source(local_size=32)
def elements(x: Buffer[f32, readonly], out: Buffer[f32], counts: Buffer[s32], halves: Buffer[f16],
             M: constexpr, N: constexpr):
    T = coop.Matrix[f32, M, N, coop.Accumulator]
    m = coop.load(T, x, 0, N)
    for i in range(coop.length(m)):
        m[i] = m[i] * 3.0 - 1.0  # element access with a run-time index
    m = -m + coop.fill(T, 2.0)
    counts[0] = coop.length(m) * 0 + 1
    coop.store(m, out, 0, N)
    coop.store(coop.convert(m, f16), halves, 0, N)


def test_element_access_arithmetic_and_convert():
    m, n, _ = _shape("f16", "f32")
    rng = np.random.default_rng(13)
    x = (rng.integers(-16, 16, (m, n)) / 4).astype(np.float32)
    spec = compiled(elements, M=m, N=n)
    results = run_everywhere(spec, (1, 1, 1), {"x": x.ravel(), "out": poisoned(m * n, np.float32),
                                               "counts": poisoned(1, np.int32), "halves": poisoned(m * n, np.float16)})
    expected = -(x * 3 - 1) + 2
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(m, n), expected, err_msg=str(device))
        np.testing.assert_array_equal(out["halves"].reshape(m, n), expected.astype(np.float16), err_msg=str(device))
        assert out["counts"][0] == 1, device


@kernel_source(local_size=32)
def accumulators_in_an_array(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32],
                             TILES: constexpr, M: constexpr, N: constexpr, K: constexpr):
    """C (M x TILES*N) = A (M x K) * B (K x TILES*N): one accumulator per column tile, in a local array."""
    ACC = coop.Matrix[f32, M, N, coop.Accumulator]
    acc = local_array(ACC, TILES)
    for t in static_range(TILES):
        acc[t] = coop.fill(ACC, f32(t))  # start from t, to see the slots apart
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, 0, K)
    for t in static_range(TILES):
        acc[t] = coop.mul_add(ta, coop.load(coop.Matrix[f16, K, N, coop.B], b, t * N, TILES * N), acc[t])
    for t in static_range(TILES):
        coop.store(acc[t], c, t * N, TILES * N)


def test_matrices_in_a_function_array():
    m, n, k = _shape("f16", "f32")
    tiles = 3
    rng = np.random.default_rng(14)
    a = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (k, tiles * n)) / 4).astype(np.float16)
    spec = compiled(accumulators_in_an_array, TILES=tiles, M=m, N=n, K=k)
    arrays = {"a": a.ravel(), "b": b.ravel(), "c": poisoned(m * n * tiles, np.float32)}
    results = run_everywhere(spec, (1, 1, 1), arrays)
    expected = a.astype(np.float32) @ b.astype(np.float32) + np.repeat(np.arange(tiles, dtype=np.float32), n)
    for device, out in results.items():
        np.testing.assert_array_equal(out["c"].reshape(m, tiles * n), expected, err_msg=str(device))


@func
def scale_tiles(acc, factor, TILES: constexpr):
    """Updates the caller's accumulators in place (a nested helper call: the array passes on)."""
    for t in static_range(TILES):
        acc[t] = acc[t] * factor


@func
def k_loop(acc, a, b, K_TOTAL, M: constexpr, N: constexpr, K: constexpr, TILES: constexpr):
    """A K loop over an array of accumulators handed in by the caller: one A tile a step, TILES B tiles."""
    ta_type = coop.Matrix[f16, M, K, coop.A]
    tb_type = coop.Matrix[f16, K, N, coop.B]
    btile = local_array(tb_type, TILES)  # the helper's own array of matrices
    for k in range(0, K_TOTAL, K):
        for t in static_range(TILES):
            btile[t] = coop.load(tb_type, b, k * TILES * N + t * N, TILES * N)
        ta = coop.load(ta_type, a, k, K_TOTAL)
        for t in static_range(TILES):
            acc[t] = coop.mul_add(ta, btile[t], acc[t])
    scale_tiles(acc, f32(2), TILES)
    return acc[0], acc[TILES - 1]  # matrices returned by value, in a tuple


@kernel_source(local_size=32)
def accumulators_through_helpers(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32],
                                 ends: Buffer[f32], K_TOTAL: s32, TILES: constexpr, M: constexpr, N: constexpr,
                                 K: constexpr):
    """C (M x TILES*N) = 2 * (A (M x K_TOTAL) @ B (K_TOTAL x TILES*N) + t): the accumulators live in the kernel's
    local array, the K loop in a helper that updates them in place; `ends` gets the tiles the helper returned."""
    ACC = coop.Matrix[f32, M, N, coop.Accumulator]
    acc = local_array(ACC, TILES)
    for t in static_range(TILES):
        acc[t] = coop.fill(ACC, f32(t))
    first, last = k_loop(acc, a, b, K_TOTAL, M, N, K, TILES)
    acc[0] = acc[0] + coop.fill(ACC, 1.0)  # the caller's own write after the helper's
    for t in static_range(TILES):
        coop.store(acc[t], c, t * N, TILES * N)
    coop.store(first, ends, 0, 2 * N)
    coop.store(last, ends, N, 2 * N)


def test_matrix_array_passes_to_helpers_by_reference():
    """A local array of matrices handed to a @func (and on to another): the helpers update the caller's slots."""
    m, n, k = _shape("f16", "f32")
    tiles, steps = 3, 4
    rng = np.random.default_rng(15)
    a = (rng.integers(-8, 8, (m, steps * k)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (steps * k, tiles * n)) / 4).astype(np.float16)
    spec = compiled(accumulators_through_helpers, TILES=tiles, M=m, N=n, K=k)
    assert "OpFunctionParameter" in spec.asm()
    arrays = {"a": a.ravel(), "b": b.ravel(), "c": poisoned(m * n * tiles, np.float32),
              "ends": poisoned(m * 2 * n, np.float32)}
    results = run_everywhere(spec, (1, 1, 1), arrays, {"K_TOTAL": steps * k})
    product = 2 * (a.astype(np.float32) @ b.astype(np.float32) + np.repeat(np.arange(tiles, dtype=np.float32), n))
    expected = product.copy()
    expected[:, :n] += 1
    for device, out in results.items():
        np.testing.assert_array_equal(out["c"].reshape(m, tiles * n), expected, err_msg=str(device))
        ends = out["ends"].reshape(m, 2 * n)
        np.testing.assert_array_equal(ends[:, :n], product[:, :n], err_msg=str(device))
        np.testing.assert_array_equal(ends[:, n:], product[:, -n:], err_msg=str(device))


@kernel_source(local_size=64)
def workgroup_tile(a: Buffer[f16, readonly], b: Buffer[f16, readonly], d: Buffer[f32], T: constexpr = 16):
    """A workgroup-scope (NV2) tile: the 64 invocations of the workgroup hold the matrices together."""
    ta = coop.load(coop.Matrix[f16, T, T, coop.A, coop.Workgroup], a, 0, T)
    tb = coop.load(coop.Matrix[f16, T, T, coop.B, coop.Workgroup], b, 0, T)
    acc = coop.fill(coop.Matrix[f32, T, T, coop.Accumulator, coop.Workgroup], 1.0)
    coop.store(coop.mul_add(ta, tb, acc), d, 0, T)


def test_workgroup_scope_matrices_on_ref_and_refused_for_lavapipe():
    """lavapipe offers no workgroup-scope matrices (its profile and its device report agree): the kernel
    is a located compile error for that target, and runs on the reference executor."""
    spec = compiled(workgroup_tile)
    assert "SPV_NV_cooperative_matrix2" in spec.asm()
    with pytest.raises(CompilationError, match="lavapipe offers no coopmat<f16, Workgroup, 16x16, A>"):
        workgroup_tile.compile(Target.profile("lavapipe"))
    assert spec.compiled().interface.coop_matrix_types  # the spirv layer's CompiledKernel of the same words
    rng = np.random.default_rng(16)
    a = (rng.integers(-8, 8, (16, 16)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (16, 16)) / 4).astype(np.float16)
    out = run_on("ref", spec, (1, 1, 1), {"a": a.ravel(), "b": b.ravel(), "d": poisoned(256, np.float32)})
    np.testing.assert_array_equal(out["d"].reshape(16, 16), a.astype(np.float32) @ b.astype(np.float32) + 1)
