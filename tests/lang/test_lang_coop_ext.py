"""The four EXT maintenance1 operations in one kernel: on the reference executor in the EXT encoding,
on lavapipe lowered to NV2 (`lower(module, target)`: lavapipe has NV2, not EXT); both against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, lavapipe_shapes, poisoned, run_everywhere, run_on

from hydroplane.lang import Buffer, constexpr, coop, f16, f32, func, kernel_source, maximum, readonly
from hydroplane.spirv import Op, decode, validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

pytestmark = pytest.mark.vulkan


@func
def scale_by_position(row, col, x, bias):
    return x * f32(row + 1) + f32(col) * bias


@func
def add(x, y):
    return x + y


@func
def larger(x, y):
    return maximum(x, y)


@kernel_source(local_size=32)
def ext_ops(x: Buffer[f32, readonly], mapped: Buffer[f32], rows: Buffer[f32], cols: Buffer[f32],
            total: Buffer[f32], gathered: Buffer[f32], product: Buffer[f32], M: constexpr, N: constexpr):
    T = coop.Matrix[f32, M, N, coop.Accumulator]
    m = coop.load(T, x, 0, N)
    coop.store(coop.map(scale_by_position, m, 0.5), mapped, 0, N)  # PerElementOp with an extra operand
    coop.store(coop.reduce(m, coop.Row, add), rows, 0, N)
    coop.store(coop.reduce(m, coop.Column, larger), cols, 0, N)
    coop.store(coop.reduce(m, coop.Row | coop.Column, add), total, 0, N)
    for i in range(coop.length(m)):  # GetCoordinate: where each element this invocation holds lives
        r, c = coop.coordinate(m, i)
        gathered[r * N + c] = m[i]
    h = coop.convert(m, f16)
    a = coop.convert_use(h, coop.A)
    b = coop.transpose(h)  # Accumulator -> B, transposed
    p = coop.mul_add(a, b, coop.fill(coop.Matrix[f32, M, M, coop.Accumulator], 0.0))
    coop.store(p, product, 0, M)


def test_all_four_ext_operations_on_ref_and_through_nv2_on_lavapipe():
    m, n, k = lavapipe_shapes("f16", "f32")[0]
    assert m == n == k, "the kernel multiplies a tile by its own transpose"
    rng = np.random.default_rng(31)
    x = (rng.integers(-16, 16, (m, n)) / 4).astype(np.float32)
    spec = compiled(ext_ops, M=m, N=n)
    text = spec.asm()
    for name in ("OpCooperativeMatrixPerElementOpEXT", "OpCooperativeMatrixReduceEXT",
                 "OpCooperativeMatrixGetCoordinateEXT", "OpCooperativeMatrixConvertUseEXT",
                 "CooperativeMatrixTransposeEXT", "SPV_EXT_cooperative_matrix_maintenance1"):
        assert name in text, name
    lowered = compile_kernel(spec.words, Target.profile("lavapipe"))
    assert lowered.changes
    validate(lowered.words, env="vulkan1.3")
    lowered_ops = {i.opcode for i in decode(lowered.words).instructions}
    assert Op.CooperativeMatrixGetCoordinateEXT not in lowered_ops  # emulated through PerElementOp
    assert Op.CooperativeMatrixTransposeNV in lowered_ops

    arrays = {"x": x.ravel(), **{name: poisoned(m * n, np.float32)
                                 for name in ("mapped", "rows", "cols", "total", "gathered", "product")}}
    results = run_everywhere(spec, (1, 1, 1), arrays)  # the launch lowers for device 0's own target
    rows_, cols_ = np.indices((m, n))
    h = x.astype(np.float16).astype(np.float32)
    expected = {
        "mapped": x * (rows_ + 1) + cols_ * np.float32(0.5),
        "rows": np.repeat(x.sum(axis=1, keepdims=True), n, axis=1),
        "cols": np.repeat(x.max(axis=0, keepdims=True), m, axis=0),
        "total": np.full((m, n), x.sum()),
        "gathered": x,
        "product": h @ h.T,
    }
    for device, out in results.items():
        for name, want in expected.items():
            np.testing.assert_array_equal(out[name].reshape(want.shape), want.astype(np.float32),
                                          err_msg=f"{device}: {name}")


@kernel_source(local_size=32)
def quad_reduce(x: Buffer[f32, readonly], out: Buffer[f32], M: constexpr, N: constexpr):
    m = coop.load(coop.Matrix[f32, M, N, coop.Accumulator], x, 0, N)
    coop.store(coop.reduce(m, coop.Quad2x2, add), out, 0, N // 2)


def test_quad_reduction_on_ref():
    """2x2 needs a 16x16 source for lavapipe's 8x8 result, and lavapipe (Mesa 26.2) crashes creating
    any pipeline with a 16x16 subgroup matrix (docs/builder.md): the reference executor runs it."""
    rng = np.random.default_rng(32)
    x = (rng.integers(-16, 16, (16, 16)) / 4).astype(np.float32)
    spec = compiled(quad_reduce, M=16, N=16)
    validate(compile_kernel(spec.words, Target.profile("lavapipe")).words, env="vulkan1.3")
    out = run_on("ref", spec, (1, 1, 1), {"x": x.ravel(), "out": poisoned(64, np.float32)})
    expected = x.reshape(8, 2, 8, 2).sum(axis=(1, 3))
    np.testing.assert_array_equal(out["out"].reshape(8, 8), expected)
