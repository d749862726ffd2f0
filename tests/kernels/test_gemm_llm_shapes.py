"""The GEMM's LLM shapes (issue 25): the deep prefill shape class (512 x 14336 -> 4096: K deep against a short grid)
and the thin tensor-core K-split blocks for a few rows of activations (one 16-row tile high, so that the weight is
read once for every row), planned for the H200 and computed right on the reference executor."""

from __future__ import annotations

import pytest

from hydroplane.kernels.gemm import GemmConfig, GemmProblem, parse_dtype
from hydroplane.kernels.gemm.route import (
    WAVE,
    SplitConfig,
    gemm_route,
    route_candidates,
    route_default_config,
    shape_class,
    thin_configs,
)
from hydroplane.ops.gemm import GemmRunner
from hydroplane.spirv.target import Target

H200 = Target.profile("nvidia-h200")
F16_F32 = parse_dtype("f16:f32")


def test_deep_shape_class():
    assert shape_class(GemmProblem(512, 4096, 14336, F16_F32, "nt")) == "4096-deep"
    assert shape_class(GemmProblem(1024, 4096, 14336, F16_F32, "nt")) == "4096-deep"
    # the shapes of the shipped table keep their classes
    assert shape_class(GemmProblem(512, 12288, 4096, F16_F32)) == "4096-wide"
    assert shape_class(GemmProblem(2048, 2048, 2048, F16_F32)) == "2048"
    assert shape_class(GemmProblem(4096, 4096, 11008, F16_F32)) == "8192"
    assert shape_class(GemmProblem(8, 4096, 14336, F16_F32, "nt")) == "skinny-m8-16384"


@pytest.mark.parametrize("m", [1, 2, 8, 16])
def test_thin_blocks_read_the_weight_once_and_fill_the_gpu(m):
    problem = GemmProblem(m, 4096, 14336, F16_F32, "nt")
    configs = thin_configs(problem, H200)
    assert configs and all(c in route_candidates(problem, H200) for c in configs)
    for config in configs:
        route = gemm_route(problem, config, H200)
        main = route.main
        assert config.block[0] == 16 and main.grid[1] == 1  # one block row: every column of W loaded by one group
        assert main.grid[0] * main.grid[2] >= WAVE // 2
        assert [s.name for s in route.steps][-2:] in (["gemm", "reduce"], ["reduce", "extract d"])
    assert thin_configs(GemmProblem(17, 4096, 14336, F16_F32, "nt"), H200) == []
    assert thin_configs(problem, Target.profile("lavapipe")) == []  # no 16-row tiles there


@pytest.fixture(scope="module")
def ref():
    with GemmRunner.open("ref") as runner:
        yield runner


@pytest.mark.parametrize("m,dtype", [(1, "f16:f32"), (5, "f16:f32"), (8, "f16:f16"), (16, "bf16:f32")])
def test_thin_blocks_on_ref(ref, m, dtype):
    """A thin block as the H200 runs it (16 x 128 x 64, K split, 16-byte loads, prefetch): the rows past M, the K
    ranges and their sums right for every M up to the tile's 16 rows."""
    config = SplitConfig.of(GemmConfig(tile=(16, 16, 16), subgroups=(1, 4), tiles=(1, 2), k_tiles=4, stages=1, pad=1,
                                       prefetch=True), 4)
    problem = GemmProblem(m, 256, 1024, parse_dtype(dtype), "nt")
    result = ref.run(problem, config, seed=m)
    assert result.ok, f"{problem.describe()}: error {result.error}"


def test_a_deep_problem_defaults_to_the_k_split_of_one_wave():
    """Untuned (no table entry: bf16, s8, nn), a deep prefill on the H200 takes the first K-split block with the fewest
    ranges, as the H200's sweep chose for f16 nt (128x256 split 2; 256x256 split 4 for 16-bit accumulators); lavapipe
    (8-row tiles) keeps its default."""
    for name, layout, block, split in (("f16:f32", "nn", (128, 256, 32), 2), ("bf16:f32", "nt", (128, 256, 32), 2),
                                       ("f16:f16", "nt", (256, 256, 32), 4)):
        config = route_default_config(GemmProblem(512, 4096, 14336, parse_dtype(name), layout), H200)
        assert isinstance(config, SplitConfig) and config.block == block and config.split == split, config
    lavapipe = route_default_config(GemmProblem(512, 4096, 14336, F16_F32), Target.profile("lavapipe"))
    assert not isinstance(lavapipe, SplitConfig)


def test_nine_to_sixty_four_rows_default_to_tensor_core_blocks():
    """Untuned, 9 to 16 rows of A on the H200 take a thin tensor-core block (the weight read once, where the skinny
    kernels read it once per 8 rows), the middle of its K splits (about a wave); 1 to 8 rows keep the skinny
    kernels, and lavapipe (8-row tiles) keeps them for every skinny M."""
    from hydroplane.kernels.gemm.route import GemvConfig

    for m in (9, 12, 16):
        problem = GemmProblem(m, 4096, 4096, F16_F32, "nt")
        config = route_default_config(problem, H200)
        assert isinstance(config, SplitConfig) and config.block[0] == 16, config
        assert config in thin_configs(problem, H200)
        route = gemm_route(problem, config, H200)
        assert route.main.grid[0] * route.main.grid[2] >= WAVE // 2
        assert isinstance(route_default_config(problem, Target.profile("lavapipe")), GemvConfig)
    for m in (1, 8):
        assert isinstance(route_default_config(GemmProblem(m, 4096, 4096, F16_F32, "nt"), H200), GemvConfig)
    for m in (17, 64):  # past one tile row: a K-split tensor-core block; lavapipe keeps the skinny kernels
        problem = GemmProblem(m, 4096, 4096, F16_F32, "nt")
        config = route_default_config(problem, H200)
        assert isinstance(config, SplitConfig) and config.split > 1, config
        route = gemm_route(problem, config, H200)
        assert route.main.grid[0] * route.main.grid[2] >= 128  # about a workgroup a multiprocessor (132)
        assert isinstance(route_default_config(problem, Target.profile("lavapipe")), GemvConfig)
    for m in (12, 64):  # 8-bit inputs keep the skinny kernels (the H200's tuned s8 64 x 4096 x 4096 took them)
        problem = GemmProblem(m, 4096, 4096, parse_dtype("s8:s32"), "nt")
        assert isinstance(route_default_config(problem, H200), GemvConfig)
