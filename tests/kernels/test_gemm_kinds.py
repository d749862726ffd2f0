"""The GEMM's per-kind table (plan.KERNEL_KINDS) and the kernels' compile-time pieces (source.Blocks): every
constexpr rule names a constexpr of its kernel, every constexpr without a default has a rule, the plans of the
shipped H200 winners and of each kind are exactly the constexprs the kernels were tuned and measured with, and the
block geometry the copy helpers share matches the shared memory the plan counts."""

from __future__ import annotations

import inspect

import pytest

from hydroplane.kernels.gemm import GemmConfig, GemmProblem, candidate_configs, gemm_plan, parse_dtype, source
from hydroplane.kernels.gemm.plan import ABSENT, KERNEL_KINDS, kmajor_b, wide_elements
from hydroplane.spirv.target import Target

H200 = Target.profile("nvidia-h200")
LAVAPIPE = Target.profile("lavapipe")
F16_F32 = parse_dtype("f16:f32")


@pytest.mark.parametrize("kind", sorted(KERNEL_KINDS))
def test_every_rule_names_a_constexpr_of_its_kernel(kind):
    row = KERNEL_KINDS[kind]
    kernel = row.factory(F16_F32.a, F16_F32.acc, F16_F32.out)
    names = kernel.constexpr_names()
    assert set(row.constexprs) <= names, set(row.constexprs) - names
    required = {p.name for p in kernel.signature.parameters.values()
                if p.name in names and p.default is inspect.Parameter.empty}
    assert required <= set(row.constexprs), required - set(row.constexprs)


# The H200's shipped f16:f32 winner at 8192^3 (docs/perf.md: 264 TFLOP/s) and s8 nn with B K-major, as planned.
WINNER = GemmConfig(tile=(16, 16, 16), subgroups=(2, 4), tiles=(4, 4), k_tiles=2, stages=1, pad=1, prefetch=True)
COMMON = dict(AT=False, BT=False, USE_C=False, BIAS=False, ACT="none")


def test_the_shipped_winners_plan_as_they_were_measured():
    plan = gemm_plan(GemmProblem(8192, 8192, 8192, F16_F32), WINNER, H200)
    assert list(plan.constexprs.items()) == list(dict(
        COMMON, TM=16, TN=16, TK=16, WM=2, WN=4, SM=4, SN=4, KT=2, STAGES=1, DIRECT=False, SG=32, SATURATE=False,
        WIDE=8, ALIGNED_OUT=True, PAD=1, PREFETCH=True, KMAJOR_B=False, EDGES=False, SCALE=False).items())
    # A: 128 rows of 32 + 8 f16, B: 32 rows of 256 + 8, one stage; 8 subgroups' 16x16 f32 output tiles
    assert plan.grid == (32, 64, 1) and plan.shared_bytes == (128 * 40 + 32 * 264) * 2 + 8 * 16 * 16 * 4 == 35328
    assert plan.kernel is source.coop_kernel(F16_F32.a, F16_F32.acc, F16_F32.out)
    s8 = GemmConfig(**{**WINNER.to_dict(), "tile": (16, 16, 32), "kmajor": True})
    plan = gemm_plan(GemmProblem(8192, 8192, 8192, parse_dtype("s8:s32")), s8, H200)
    assert plan.constexprs["TK"] == 32 and plan.constexprs["WIDE"] == 16 and plan.constexprs["KMAJOR_B"] is True


def test_padding_and_prefetch_are_absent_without_wide_loads():
    """Odd sizes: no 16-byte loads, and the padding, prefetch and K-major constexprs stay the kernel's defaults."""
    problem = GemmProblem(100, 70, 45, F16_F32, "tn", alpha=2.0, beta=1.0, bias=True, activation="relu")
    config = GemmConfig(tile=(16, 16, 16), subgroups=(2, 2), tiles=(2, 2), k_tiles=2, stages=2)
    plan = gemm_plan(problem, config, H200)
    assert list(plan.constexprs.items()) == list(dict(
        AT=True, BT=False, USE_C=True, BIAS=True, ACT="relu", TM=16, TN=16, TK=16, WM=2, WN=2, SM=2, SN=2, KT=2,
        STAGES=2, DIRECT=False, SG=32, SATURATE=False, WIDE=0, ALIGNED_OUT=False, EDGES=True, SCALE=True).items())
    assert all(KERNEL_KINDS["coop"].constexprs[name](problem, config, H200) is ABSENT
               for name in ("PAD", "PREFETCH", "KMAJOR_B"))


def test_the_other_kinds_plan_their_own_constexprs():
    problem = GemmProblem(4096, 4096, 4080, parse_dtype("s8:s32"), "nt", beta=1.0)
    workgroup = next(c for c in candidate_configs(problem, H200) if c.kind == "workgroup")
    bm, bn, bk = workgroup.block
    assert list(gemm_plan(problem, workgroup, H200).constexprs.items()) == list(dict(
        COMMON, BT=True, USE_C=True, BM=bm, BN=bn, BK=bk, THREADS=workgroup.threads[0], SATURATE=False, EDGE=False,
        TAIL=True, WIDE=16, SCALE=False).items())
    scalar = GemmConfig(kind="scalar", threads=(16, 8), registers=(4, 2), bk=8)
    plan = gemm_plan(GemmProblem(33, 7, 45, F16_F32, "tt", alpha=-1.0), scalar, LAVAPIPE)
    assert list(plan.constexprs.items()) == list(dict(AT=True, BT=True, USE_C=False, BIAS=False, ACT="none", RM=4,
                                                      RN=2, TX=16, TY=8, BK=8).items())
    assert plan.grid == (1, 2, 1) and plan.shared_bytes == (32 + 32) * 8 * 2


@pytest.mark.parametrize("dtype, layout", [("f16:f32", "nn"), ("s8:s32", "nn"), ("f16:f16", "tt"), ("u8:u32", "nt")])
def test_the_blocks_hold_what_the_plan_counts(dtype, layout):
    """source.Blocks (the staged kernels' block geometry) and the plan's shared-memory count agree: the A and B
    arrays of every staged coop candidate take STAGES blocks of padded rows (B's K-major where it is transposed)."""
    problem = GemmProblem(4096, 4096, 4096, parse_dtype(dtype), layout)
    for config in candidate_configs(problem, H200):
        if config.kind != "coop" or config.direct:
            continue
        plan = gemm_plan(problem, config, H200)
        c = plan.constexprs
        wide = wide_elements(problem, config)
        bm, bn, bk = config.block
        blocks = source.Blocks(c["AT"], c["BT"], bm, bn, bk, c["WM"] * c["WN"] * c["SG"], problem.dtype.a, wide,
                               c.get("PAD", 0), kmajor_b(problem, config))
        element_bytes = {source.V4: 16, source.u32: 4}.get(blocks.A_ELEMENT, problem.dtype.a.width // 8)
        b_bytes = {source.V4: 16, source.u32: 4}.get(blocks.B_ELEMENT, problem.dtype.a.width // 8)
        arrays = blocks.a_array(config.stages) * element_bytes + blocks.b_array(config.stages) * b_bytes
        output_tiles = c["WM"] * c["WN"] * c["TM"] * c["TN"] * problem.dtype.out.width // 8
        assert arrays + output_tiles == plan.shared_bytes, config.describe()
        if c.get("PREFETCH"):
            assert blocks.REGISTERS * blocks.THREADS * wide == (bm + bn) * bk
