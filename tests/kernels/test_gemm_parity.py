"""GEMM parity: the library's kernels on the reference executor and lavapipe against NumPy (float64).

Random integer-valued inputs (exact in every input type), outputs poisoned before each run (the runner
fills D with a value no correct GEMM writes), every dtype and layout, odd shapes (1, 7, 33, 255, 1000:
the large ones on lavapipe or in one dimension), tails in M, N and K, the epilogues, both kernels
(cooperative matrices and the scalar fallback) and several tile configurations.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hydroplane.kernels.gemm import (
    GemmConfig,
    GemmError,
    GemmProblem,
    candidate_configs,
    gemm_plan,
    parse_dtype,
    verification_problem,
)
from hydroplane.ops.gemm import GemmRunner
from hydroplane.spirv.target import Target

DTYPES = ("f16:f32", "f16:f16", "bf16:f32", "s8:s32", "u8:u32", "e4m3:f32", "e5m2:f32")  # fp8: ref only
LAVAPIPE_DTYPES = ("f16:f32", "f16:f16", "s8:s32", "u8:u32")  # lavapipe has no bf16
LAYOUTS = ("nn", "nt", "tn", "tt")
REF_SHAPES = ((1, 7, 33), (33, 1, 7), (7, 33, 1), (33, 7, 45), (70, 129, 33))
LAVAPIPE_SHAPES = ((1000, 7, 33), (33, 255, 70), (255, 33, 1000), (1, 130, 7))


@pytest.fixture(scope="module")
def ref():
    with GemmRunner.open("ref") as runner:
        yield runner


@pytest.fixture(scope="module")
def lavapipe():
    with GemmRunner.open(0) as runner:
        yield runner


def config_of(runner: GemmRunner, problem: GemmProblem, kind: str) -> GemmConfig:
    return next(c for c in candidate_configs(problem, runner.target) if c.kind == kind)


LAVAPIPE_TIMEOUT_S = 600  # a dispatch's wait on lavapipe (a CPU driver): the 60 s default failed on a loaded machine


def check(runner: GemmRunner, problem: GemmProblem, config: GemmConfig, seed: int = 0):
    if not runner.is_reference:
        runner.executor.device.set_timeout(LAVAPIPE_TIMEOUT_S)
    result = runner.run(problem, config, seed=seed)
    assert result.ok, f"{problem.describe()} with {config.describe()} on {runner.name}: error {result.error}"
    assert result.error == 0 or not problem.dtype.integer
    return result


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_coop_on_ref(ref, dtype, layout):
    index = (DTYPES.index(dtype) + LAYOUTS.index(layout)) % len(REF_SHAPES)
    m, n, k = REF_SHAPES[index]
    problem = GemmProblem(m, n, k, parse_dtype(dtype), layout, alpha=2.0, beta=1.0)
    check(ref, problem, config_of(ref, problem, "coop"), seed=index)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_on_ref(ref, dtype):
    index = DTYPES.index(dtype)
    problem = GemmProblem(*REF_SHAPES[index % len(REF_SHAPES)], parse_dtype(dtype), LAYOUTS[index % 4], alpha=-1.0,
                          beta=2.0)
    check(ref, problem, config_of(ref, problem, "scalar"), seed=index)


@pytest.mark.parametrize("config", [
    GemmConfig(tile=(16, 16, 16), subgroups=(2, 2), tiles=(2, 2), k_tiles=2, stages=2),  # staged, double-buffered
    GemmConfig(tile=(16, 16, 16), subgroups=(2, 1), tiles=(1, 2), k_tiles=1, stages=1),  # staged, one buffer
    GemmConfig(tile=(32, 32, 32), subgroups=(1, 1), tiles=(4, 4), stages=1, direct=True),  # direct + K tail
    GemmConfig(tile=(16, 8, 16), subgroups=(1, 2), tiles=(2, 1), stages=2, direct=True),  # direct, staged tail
], ids=["staged2", "staged1", "direct", "direct-rect"])
def test_configs_on_ref(ref, config):
    problem = GemmProblem(160, 136, 200, parse_dtype("f16:f32"), "tn", alpha=0.5, beta=1.0, bias=True)
    check(ref, problem, config)


WIDE_CONFIGS = {
    "staged2": GemmConfig(tile=(8, 8, 8), subgroups=(2, 2), tiles=(2, 1), k_tiles=2, stages=2),
    "staged1": GemmConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(2, 2), k_tiles=1, stages=1),
    "direct": GemmConfig(tile=(8, 8, 8), subgroups=(2, 2), tiles=(1, 2), stages=1, direct=True),
    "prefetch2": GemmConfig(tile=(8, 8, 8), subgroups=(1, 1), tiles=(4, 4), k_tiles=2, stages=2, pad=1, prefetch=True),
    "prefetch1": GemmConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(4, 2), k_tiles=2, stages=1, pad=1, prefetch=True),
    "padded": GemmConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(2, 2), k_tiles=1, stages=2, pad=2),
}


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", list(WIDE_CONFIGS))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_wide_loads(device, name, layout):
    """16-byte loads through the V4 views (sizes and tiles multiples of 8 f16 elements): edges in M and N, a K
    tail, every layout."""
    problem = GemmProblem(72, 40, 88, parse_dtype("f16:f32"), layout, beta=1.0)
    config = WIDE_CONFIGS[name]
    with GemmRunner.open(device) as runner:
        assert gemm_plan(problem, config, runner.target).constexprs["WIDE"] == 8
        check(runner, problem, config)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("name", ["prefetch2", "prefetch1", "staged2"])
@pytest.mark.parametrize("dtype", ["f16:f32", "s8:s32"])
def test_whole_blocks_compile_the_bounds_checks_out(device, name, dtype):
    """M, N, K multiples of the block: the staged kernel is built without bounds checks (EDGES False), and with
    alpha 1 without the scaling (SCALE False); both specializations still compute the whole epilogue right."""
    config = WIDE_CONFIGS[name]
    if dtype == "s8:s32":  # 16-byte loads of 8-bit elements need K tiles of 16
        config = GemmConfig(**{**config.to_dict(), "tile": (16, 16, 16)}) if device == "ref" else config
    bm, bn, bk = config.block
    with GemmRunner.open(device) as runner:
        for alpha in (1.0, 3.0):
            problem = GemmProblem(2 * bm, 3 * bn, 4 * bk, parse_dtype(dtype), "tn", alpha=alpha, beta=2.0, bias=True)
            constexprs = gemm_plan(problem, config, runner.target).constexprs
            assert constexprs["EDGES"] is False and constexprs["SCALE"] == (alpha != 1)
            check(runner, problem, config, seed=int(alpha))


KMAJOR = GemmConfig(tile=(16, 16, 32), subgroups=(1, 2), tiles=(2, 4), k_tiles=1, pad=1, prefetch=True, kmajor=True)


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("dtype", ["s8:s32", "u8:u32"])
@pytest.mark.parametrize("shape, layout", [((48, 160, 80), "nn"), ((64, 128, 64), "tn"), ((32, 256, 96), "nn"),
                                           ((96, 144, 48), "nt")], ids=["edges-tail", "whole-tn", "whole", "nt"])
def test_kmajor_b_on_ref(ref, stages, dtype, shape, layout):
    """8-bit B stored K x N transposed into shared memory in registers (4x4 byte transposes): edges in N, a K
    tail, whole blocks (bounds checks compiled out); with B stored N x K (nt) there is nothing to transpose."""
    config = GemmConfig(**{**KMAJOR.to_dict(), "stages": stages})
    problem = GemmProblem(*shape, parse_dtype(dtype), layout, beta=1.0, bias=True)
    constexprs = gemm_plan(problem, config, ref.target).constexprs
    assert constexprs["WIDE"] == 16 and constexprs["KMAJOR_B"] == (layout[1] == "n")
    check(ref, problem, config, seed=stages)


def test_kmajor_is_refused_where_it_cannot_run(ref):
    problem = GemmProblem(64, 128, 64, parse_dtype("s8:s32"), "nn")
    with pytest.raises(GemmError, match="comes with register prefetch"):
        GemmConfig(tile=(16, 16, 32), pad=1, kmajor=True)
    with pytest.raises(GemmError, match="is for 8-bit inputs, not f16"):
        gemm_plan(replace(problem, dtype=parse_dtype("f16:f32")), KMAJOR, ref.target)
    with pytest.raises(GemmError, match="items .* to split evenly among 64 invocations"):
        gemm_plan(problem, GemmConfig(**{**KMAJOR.to_dict(), "tiles": (4, 2)}), ref.target)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 64, 32), (96, 80, 48), (144, 208, 80)], ids=["whole", "edges", "tails"])
def test_workgroup_scope_on_ref(ref, dtype, shape):
    """The NV2 workgroup-scope kernel (lavapipe offers no workgroup scope; the H200 does)."""
    layout = LAYOUTS[(DTYPES.index(dtype) + shape[0]) % 4]
    problem = GemmProblem(*shape, parse_dtype(dtype), layout, alpha=2.0, beta=1.0, bias=True)
    check(ref, problem, GemmConfig(kind="workgroup", tile=(64, 64, 32), threads=(64, 1)))


@pytest.mark.parametrize("wide", [True, False])
def test_workgroup_scope_wide_loads(ref, wide):
    problem = GemmProblem(192, 128, 96, parse_dtype("s8:s32"), "tn")
    config = GemmConfig(kind="workgroup", tile=(64, 64, 32), threads=(64, 1), wide=wide)
    assert gemm_plan(problem, config, ref.target).constexprs["WIDE"] == (16 if wide else 0)
    check(ref, problem, config)


@pytest.mark.parametrize("kind", ["workgroup", "direct"])
def test_unaligned_sizes_keep_matrices_off_the_buffers(ref, kind):
    """Loads straight from the buffers need 16-byte aligned rows (Vulkan's rule for cooperative-matrix loads, which
    the H200 enforced by returning wrong values): odd sizes refuse those configurations by name, the candidates skip
    them, and the staged kernel runs odd sizes exactly (through shared memory, whole blocks included)."""
    problem = GemmProblem(100, 70, 45, parse_dtype("f16:f32"), alpha=2.0, beta=1.0, bias=True)
    config = GemmConfig(kind="workgroup", tile=(64, 64, 32), threads=(64, 1)) if kind == "workgroup" else \
        GemmConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), stages=1, direct=True)
    with pytest.raises(GemmError, match="multiples of 8 for f16"):
        gemm_plan(problem, config, ref.target)
    assert not any(c.direct or c.kind == "workgroup" for c in candidate_configs(problem, ref.target))
    staged = GemmProblem(96, 66, 48, parse_dtype("f16:f32"), beta=1.0)  # whole 64x64 blocks, N*4 bytes unaligned
    assert gemm_plan(staged, config_of(ref, staged, "coop"), ref.target).constexprs["ALIGNED_OUT"] is False
    check(ref, staged, GemmConfig(tile=(16, 16, 16), subgroups=(2, 2), tiles=(2, 2), k_tiles=2, stages=2))


def test_workgroup_scope_refuses_a_matrix_smaller_than_its_block(ref):
    problem = GemmProblem(63, 64, 32, parse_dtype("f16:f32"))
    with pytest.raises(GemmError, match="needs M >= 64"):
        ref.run(problem, GemmConfig(kind="workgroup", tile=(64, 64, 32), threads=(64, 1)))


@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", LAVAPIPE_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_coop_on_lavapipe(lavapipe, dtype, layout):
    index = (LAVAPIPE_DTYPES.index(dtype) + LAYOUTS.index(layout)) % len(LAVAPIPE_SHAPES)
    problem = GemmProblem(*LAVAPIPE_SHAPES[index], parse_dtype(dtype), layout, alpha=2.0, beta=1.0)
    result = check(lavapipe, problem, config_of(lavapipe, problem, "coop"), seed=index)
    assert result.timing == "GPU timestamps"


@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", LAVAPIPE_DTYPES)
def test_scalar_on_lavapipe(lavapipe, dtype):
    index = LAVAPIPE_DTYPES.index(dtype)
    problem = GemmProblem(*LAVAPIPE_SHAPES[index], parse_dtype(dtype), LAYOUTS[index], beta=1.0)
    check(lavapipe, problem, config_of(lavapipe, problem, "scalar"), seed=index)


@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", ["f16:f32", "s8:s32"])
def test_every_lavapipe_candidate_is_correct(lavapipe, dtype):
    problem = GemmProblem(45, 70, 37, parse_dtype(dtype), "nt", beta=1.0)
    for config in candidate_configs(problem, lavapipe.target):
        check(lavapipe, problem, config)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("epilogue", [
    dict(bias=True, activation="relu", alpha=1.5, beta=-1.0),
    dict(bias=True, activation="gelu"),
    dict(dtype="f16:f32:f16", beta=1.0, bias=True),  # accumulate f32, convert to f16 output
    dict(dtype="s8:s32", bias=True, activation="relu", alpha=3.0, beta=-2.0),
], ids=["bias-relu-scaled", "bias-gelu", "to-f16", "int-bias-relu"])
@pytest.mark.parametrize("kind", ["coop", "scalar"])
def test_epilogues(device, epilogue, kind):
    options = dict(epilogue)
    dtype = parse_dtype(options.pop("dtype", "f16:f32"))
    problem = GemmProblem(37, 41, 29, dtype, "nn", **options)
    with GemmRunner.open(device) as runner:
        check(runner, problem, config_of(runner, problem, kind), seed=5)


def test_poisoned_output_is_caught(monkeypatch):
    """A dispatch that writes nothing fails the check: the runner's poison stays in D and is compared."""
    problem = GemmProblem(8, 8, 8, parse_dtype("f16:f32"), "nn")
    with GemmRunner.open("ref") as runner:
        monkeypatch.setattr(runner.executor, "dispatch", lambda *args, **kwargs: None)
        result = runner.run(problem, config_of(runner, problem, "coop"))
    assert not result.ok and result.error > 1


def test_bf16_refused_by_name_on_the_lavapipe_profile():
    problem = GemmProblem(16, 16, 16, parse_dtype("bf16:f32"))
    with pytest.raises(GemmError, match="no bf16 arithmetic type"):
        gemm_plan(problem, GemmConfig(kind="scalar"), Target.profile("lavapipe"))


@pytest.mark.parametrize("profile", ["nvidia-h200", "lavapipe"])
def test_verification_problems_take_the_same_paths(profile):
    """An autotuner verifies each candidate on a smaller problem with the same WIDE, EDGE and TAIL choices."""
    target = Target.profile(profile)
    for size in ((4096, 4096, 4096), (4000, 4095, 1001)):
        problem = GemmProblem(*size, parse_dtype("f16:f32"), "tn")
        for config in candidate_configs(problem, target):
            small = verification_problem(problem, config)
            assert small.m * small.n * small.k < problem.m * problem.n * problem.k / 100
            full, reduced = gemm_plan(problem, config, target).constexprs, gemm_plan(small, config, target).constexprs
            assert full.get("WIDE") == reduced.get("WIDE")
            assert full.get("EDGE", False) <= reduced.get("EDGE", False)
            assert full.get("EDGES") == reduced.get("EDGES")  # the coop kernel's bounds checks: in or out in both
