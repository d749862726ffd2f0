"""`coop.convert(m, dtype, use)`: an f32 accumulator converted to another float type's A or B in one step (NV2's
conversions: OpFConvert whose result has another Use, capability CooperativeMatrixConversionsNV derived from the
instruction, also after lowering). Attention needs it for bf16 on the H200, which offers no bf16 accumulator to pass
through. On the reference executor (f16, bf16) and lavapipe (f16) against NumPy; refusals by name."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_on

from hydroplane.lang import Buffer, CompilationError, bf16, constexpr, coop, f16, f32, func, kernel_source, readonly
from hydroplane.lang import s32 as s32_type
from hydroplane.spirv import decode, grammar, validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.grammar import Op
from hydroplane.spirv.target import Target


@func
def doubled(row, col, x):
    return x * 2.0


@kernel_source(local_size="SG")
def product(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], IN: constexpr, N: constexpr,
            SG: constexpr, MAPPED: constexpr = False):
    T = coop.Matrix[f32, N, N, coop.Accumulator]
    m = coop.load(T, x, 0, N)
    if MAPPED:  # an EXT maintenance1 operation too: the module is lowered to NV2 for lavapipe
        m = coop.map(doubled, m)
    a = coop.convert(m, IN, coop.A)
    b = coop.convert(coop.load(T, y, 0, N), IN, coop.B)
    coop.store(coop.mul_add(a, b, coop.fill(T, 0.0)), out, 0, N)


def _capabilities(words) -> set[str]:
    return {grammar.enumerant("Capability", i.operands[0].value).name for i in decode(words).instructions
            if i.opcode == Op.Capability}


def _expected(x, y, dtype, factor=1.0):
    return (x * factor).astype(dtype).astype(np.float64) @ y.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("device, dtype, n", [("ref", f16, 16), ("ref", bf16, 16),
                                              pytest.param(0, f16, 8, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("mapped", [False, True])
def test_convert_with_use_multiplies_like_numpy(device, dtype, n, mapped):
    rng = np.random.default_rng(7)
    x = (rng.integers(-16, 16, (n, n)) / 8).astype(np.float32)  # exact in f16 and bf16: exact products
    y = (rng.integers(-16, 16, (n, n)) / 8).astype(np.float32)
    sg = 32 if device == "ref" else 8
    spec = compiled(product, IN=dtype, N=n, SG=sg, MAPPED=mapped)
    assert "CooperativeMatrixConversionsNV" in _capabilities(spec.words)
    out = run_on(device, spec, (1, 1, 1), {"x": x.ravel(), "y": y.ravel(), "out": poisoned(n * n, np.float32)},
                 subgroup_size=sg if device == "ref" else None)
    np.testing.assert_allclose(out["out"].reshape(n, n), _expected(x, y, dtype.dtype, 2.0 if mapped else 1.0),
                               rtol=2e-3, atol=2e-3)


def test_the_capability_survives_lowering_to_nv2():
    """Lowering re-derives every capability: the use-changing FConvert keeps its own, beside the lowered map's."""
    spec = compiled(product, IN=f16, N=8, SG=8, MAPPED=True)
    lowered = compile_kernel(spec.words, Target.profile("lavapipe"))
    assert lowered.changes
    validate(lowered.words, env="vulkan1.3")
    assert "CooperativeMatrixConversionsNV" in _capabilities(lowered.words)


def test_same_use_is_the_plain_conversion():
    @kernel_source(local_size=32)
    def plain(x: Buffer[f32, readonly], out: Buffer[f32]):
        T = coop.Matrix[f32, 16, 16, coop.Accumulator]
        h = coop.convert(coop.load(T, x, 0, 16), f16, coop.Accumulator)
        coop.store(coop.convert(h, f32), out, 0, 16)

    spec = compiled(plain)
    assert "CooperativeMatrixConversionsNV" not in _capabilities(spec.words)


@pytest.mark.parametrize("case, message", [
    ("from_a", "changes the use from Accumulator to A or B only"),
    ("to_accumulator", "changes the use from Accumulator to A or B only"),
    ("integer", "converts float matrices"),
])
def test_refusals_name_the_rule(case, message):
    @kernel_source(local_size=32)
    def bad(x: Buffer[f32, readonly], xi: Buffer[s32_type, readonly], out: Buffer[f32], CASE: constexpr):
        if CASE == "from_a":
            a = coop.load(coop.Matrix[f16, 16, 16, coop.A], x, 0, 16)
            coop.convert(a, f32, coop.B)
        if CASE == "to_accumulator":
            a = coop.load(coop.Matrix[f16, 16, 16, coop.B], x, 0, 16)
            coop.convert(a, f32, coop.Accumulator)
        if CASE == "integer":
            m = coop.load(coop.Matrix[s32_type, 16, 16, coop.Accumulator], xi, 0, 16)
            coop.convert(m, f16, coop.A)

    with pytest.raises(CompilationError, match=message):
        bad.compile(CASE=case)
