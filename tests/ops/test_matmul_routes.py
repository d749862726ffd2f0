"""The GEMM routes on the reference executor and lavapipe against NumPy (float64): the skinny kernels (B stored K x N
and N x K, 16-byte and element loads, K split with the reduction pass, several row blocks, every dtype the devices
have, the epilogues), odd sizes padded into aligned scratch (A, B, C, bias copied in, D copied out), the device copy
kernel, the shape classes and the tuner's candidates. Inputs are random small integers with negatives (exact in
every input type), D is poisoned before each run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hydroplane.kernels.gemm import GemmConfig, GemmProblem, parse_dtype, random_inputs, reference, relative_error
from hydroplane.kernels.gemm import copy as copy_kernels
from hydroplane.kernels.gemm.gemv import dot_threads as gemv_dot_threads
from hydroplane.kernels.gemm.plan import GemmError
from hydroplane.kernels.gemm.route import (
    GemvConfig,
    SplitConfig,
    check_gemv,
    config_from_dict,
    gemm_route,
    gemv_configs,
    padded_sizes,
    route_candidates,
    route_default_config,
    shape_class,
)
from hydroplane.launch.prepared import prepare
from hydroplane.ops.gemm import GemmRunner, tolerance
from hydroplane.spirv.target import Target

REF_DTYPES = ("f16:f32", "f16:f16", "bf16:f32", "bf16:f32:bf16", "f16:f32:f16", "s8:s32", "u8:u32", "e4m3:f32")
LAVAPIPE_DTYPES = ("f16:f32", "f16:f16", "f16:f32:f16", "s8:s32", "u8:u32")


@pytest.fixture(scope="module")
def ref():
    with GemmRunner.open("ref") as runner:
        yield runner


@pytest.fixture(scope="module")
def lavapipe():
    with GemmRunner.open(0) as runner:
        yield runner


def run_route(runner: GemmRunner, problem: GemmProblem, config, *, pad=None, seed=0):
    """One run of the route (D poisoned first), D and its relative error against NumPy."""
    data = random_inputs(problem, np.random.default_rng(seed))
    with runner.prepare(problem, config, data, pad=pad) as prepared:
        prepared.repoison()
        prepared.dispatch()
        d = prepared.read()
        steps = [step.name for step in prepared.route.steps]
    exact = reference(problem, data["a"], data["b"], data.get("c"), data.get("bias"))
    error = relative_error(d, exact)
    assert np.isfinite(error) and error <= tolerance(problem), (
        f"{problem.describe()} {config.describe()} on {runner.name}: error {error}")
    if problem.dtype.integer:
        assert error == 0
    return steps


GEMV_CASES = [  # (M, N, K, layout, config)
    (1, 64, 96, "nn", GemvConfig(rows=1, columns=4, lanes=16, unroll=2)),
    (3, 72, 40, "tn", GemvConfig(rows=2, columns=8, lanes=8, unroll=3)),
    (7, 33, 45, "nn", GemvConfig(rows=4, columns=8, lanes=8, unroll=2)),  # N odd: element loads
    (5, 48, 200, "nn", GemvConfig(rows=8, columns=2, lanes=32, unroll=2, split=3)),  # K split: the reduction
    (1, 40, 64, "nt", GemvConfig(rows=1, columns=4, per_lane=2, lanes=8, unroll=2)),
    (6, 37, 80, "tt", GemvConfig(rows=4, columns=2, per_lane=3, lanes=16, unroll=1)),
    (9, 20, 33, "nt", GemvConfig(rows=8, columns=8, per_lane=1, lanes=4, unroll=2)),  # K odd: element loads
    (2, 24, 160, "nt", GemvConfig(rows=2, columns=2, per_lane=2, lanes=16, unroll=2, split=4)),
    # groups of K lanes summed in shared memory: K a whole number of steps and N of column groups (EVEN_K, EVEN_N),
    # then neither (a step past K, columns past N), then element loads with A stored K x M and a K split
    (2, 48, 512, "nt", GemvConfig(rows=2, columns=2, per_lane=2, lanes=8, unroll=2, k_groups=2)),
    (3, 42, 256, "nt", GemvConfig(rows=3, columns=1, per_lane=4, lanes=8, unroll=2, k_groups=4)),
    (5, 30, 99, "tt", GemvConfig(rows=4, columns=2, per_lane=3, lanes=4, unroll=2, k_groups=4, split=2)),
]


@pytest.mark.parametrize("dtype", REF_DTYPES)
@pytest.mark.parametrize("case", range(len(GEMV_CASES)))
def test_skinny_kernels_on_ref(ref, dtype, case):
    m, n, k, layout, config = GEMV_CASES[case]
    problem = GemmProblem(m, n, k, parse_dtype(dtype), layout, alpha=2.0 if case % 2 else 1.0,
                          beta=1.0 if case % 3 != 1 else 0.0, bias=case % 2 == 0,
                          activation=("relu", "none")[case % 2] if parse_dtype(dtype).integer
                          else ("relu", "none", "gelu")[case % 3])
    steps = run_route(ref, problem, config, seed=case)
    assert steps == (["gemv", "reduce"] if config.split > 1 else ["gemv"])


@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", LAVAPIPE_DTYPES)
@pytest.mark.parametrize("case", [0, 2, 3, 4, 7, 8, 9, 10])
def test_skinny_kernels_on_lavapipe(lavapipe, dtype, case):
    m, n, k, layout, config = GEMV_CASES[case]
    sg = lavapipe.target.subgroup_size
    config = GemvConfig(**{**config.to_dict(), "lanes": min(config.lanes, sg) if layout[1] == "t" else config.lanes,
                           "columns": min(config.columns, sg)})
    problem = GemmProblem(m, n, k, parse_dtype(dtype), layout, alpha=3.0, beta=1.0, bias=True, activation="relu")
    run_route(lavapipe, problem, config, seed=case)


def test_skinny_wide_loads_follow_the_stored_rows(ref):
    """16-byte loads where the rows B is read along are whole chunks (N for B stored K x N, K for N x K)."""
    dtype = parse_dtype("f16:f32")
    for (n, k, layout), wide in (((64, 45, "nn"), 8), ((65, 48, "nn"), 0), ((65, 48, "nt"), 8), ((64, 45, "nt"), 0)):
        route = gemm_route(GemmProblem(4, n, k, dtype, layout), GemvConfig(rows=4), ref.target)
        assert route.main.constexprs["WIDE"] == wide, (n, k, layout)
    s8 = gemm_route(GemmProblem(4, 32, 64, parse_dtype("s8:s32"), "nt"), GemvConfig(rows=4), ref.target)
    assert s8.main.constexprs["WIDE"] == 16


def test_dot_kernel_compiles_its_bounds_out_on_whole_steps(ref):
    """EVEN_K where every K lane runs the same whole number of steps, EVEN_N where the column groups tile N; groups
    of K lanes are the dot kernel's alone and count in the workgroup's invocations."""
    dtype = parse_dtype("f16:f32")
    grouped = GemvConfig(rows=1, columns=1, per_lane=2, lanes=32, unroll=2, k_groups=4)
    for (n, k, split), even in (((64, 2048, 1), (True, True)), ((64, 4096, 2), (True, True)),
                                ((64, 2048, 2), (False, True)), ((64, 1536, 1), (False, True)),
                                ((63, 2048, 1), (True, False))):
        route = gemm_route(GemmProblem(1, n, k, dtype, "nt"), replace(grouped, split=split), ref.target)
        assert (route.main.constexprs["EVEN_K"], route.main.constexprs["EVEN_N"]) == even, (n, k, split)
        assert route.main.constexprs["KG"] == 4
    assert gemv_dot_threads(route.main.constexprs) == 128
    with pytest.raises(Exception, match="groups of K lanes are the dot kernel's"):
        check_gemv(GemmProblem(1, 64, 64, dtype, "nn"), GemvConfig(columns=8, lanes=8, k_groups=2), ref.target)
    grouped_first = gemv_configs(GemmProblem(4, 4096, 14336, dtype, "nt"), Target.profile("nvidia-h200"))[0]
    assert grouped_first.k_groups > 1 and gemm_route(GemmProblem(4, 4096, 14336, dtype, "nt"), grouped_first,
                                                     Target.profile("nvidia-h200")).main.constexprs["EVEN_K"]


def test_skinny_configurations_are_checked(ref, lavapipe):
    problem = GemmProblem(4, 64, 64, parse_dtype("f16:f32"), "nt")
    with pytest.raises(Exception, match="K lanes lie in one subgroup"):
        check_gemv(problem, GemvConfig(lanes=12, columns=8), ref.target)
    with pytest.raises(Exception, match="multiple of the subgroup size 8"):
        check_gemv(problem, GemvConfig(lanes=4, columns=1), lavapipe.target)
    with pytest.raises(Exception, match="column chunks divide the subgroup size"):
        check_gemv(GemmProblem(4, 64, 64, parse_dtype("f16:f32"), "nn"), GemvConfig(columns=12, lanes=8), ref.target)
    with pytest.raises(Exception, match="positive int"):
        GemvConfig(split=0)
    assert config_from_dict(GemvConfig(split=2).to_dict()) == GemvConfig(split=2)
    assert config_from_dict(GemmConfig().to_dict()) == GemmConfig()


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_every_skinny_candidate_runs(device):
    """The tuner's skinny candidates (as each device gets them) verify on a decode-like problem with a K split."""
    with GemmRunner.open(device) as runner:
        for layout in ("nn", "nt"):
            problem = GemmProblem(2, 48, 1040, parse_dtype("f16:f32"), layout, beta=1.0)
            configs = gemv_configs(problem, runner.target)
            assert configs and any(c.split > 1 for c in configs)
            for index, config in enumerate(configs[:4] if device == "ref" else configs[:2]):
                run_route(runner, problem, config, seed=index)


SPLIT_CONFIGS = {
    "staged": SplitConfig(tile=(16, 16, 16), subgroups=(1, 2), tiles=(2, 1), k_tiles=1, stages=1, split=3),
    "prefetch2": SplitConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), k_tiles=2, stages=2, pad=1,
                             prefetch=True, split=2),
    "prefetch1": SplitConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), k_tiles=2, stages=1, pad=1,
                             prefetch=True, split=4),
    # the loads two K steps ahead: two stages, and one (split 3 of 200: ranges of 5, 5 and 3 steps of 16)
    "ahead2": SplitConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), k_tiles=1, stages=2, pad=1,
                          prefetch=2, split=2),
    "ahead1": SplitConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), k_tiles=1, stages=1, pad=1,
                          prefetch=2, split=3),
}


@pytest.mark.parametrize("name", list(SPLIT_CONFIGS))
@pytest.mark.parametrize("dtype", ["f16:f32", "f16:f16", "s8:s32", "bf16:f32:bf16"])
@pytest.mark.parametrize("shape, layout", [((48, 40, 200), "nn"), ((64, 64, 256), "tn"), ((32, 64, 128), "tt")],
                         ids=["edges-tail", "whole", "whole-tt"])
def test_split_k_on_ref(ref, name, dtype, shape, layout):
    """The cooperative-matrix GEMM over K ranges (edges, a K tail in the last range, whole blocks with the bounds
    checks compiled out), partial sums added up with the epilogue by the reduction."""
    problem = GemmProblem(*shape, parse_dtype(dtype), layout, alpha=2.0, beta=1.0, bias=True, activation="relu")
    config = SPLIT_CONFIGS[name]
    route = gemm_route(problem, config, ref.target)
    assert [s.name for s in route.steps] == ["gemm", "reduce"] and route.main.grid[2] == config.split
    assert route.main.constexprs["EDGES"] == (shape[0] == 48)
    run_route(ref, problem, config)


@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", ["f16:f32", "s8:s32"])
@pytest.mark.parametrize("prefetch", [True, 2])
def test_split_k_on_lavapipe(lavapipe, dtype, prefetch):
    config = SplitConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(2, 2), k_tiles=2, stages=1, pad=1,
                         prefetch=prefetch, split=3)
    for shape, layout in (((24, 40, 104), "nn"), ((32, 64, 96), "nt")):
        problem = GemmProblem(*shape, parse_dtype(dtype), layout, beta=1.0, bias=True)
        run_route(lavapipe, problem, config)
    if prefetch == 2:  # and two stages, one range
        plain = GemmConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(2, 2), k_tiles=2, stages=2, pad=1, prefetch=2)
        run_route(lavapipe, GemmProblem(40, 48, 136, parse_dtype(dtype), "nt", beta=1.0, bias=True), plain)


def test_prefetch_is_one_or_two_steps():
    with pytest.raises(GemmError, match="prefetch is False, True"):
        GemmConfig(prefetch=3)
    assert "two steps ahead" in GemmConfig(pad=1, prefetch=2).describe()


def test_split_k_padded_and_offered_where_the_gpu_is_short_of_workgroups(ref):
    odd = GemmProblem(70, 33, 100, parse_dtype("f16:f32"), "nt", beta=1.0)
    assert [s.name for s in gemm_route(odd, SPLIT_CONFIGS["prefetch1"], ref.target, pad=True).steps] == \
        ["pad a", "pad b", "pad c", "gemm", "reduce", "extract d"]
    run_route(ref, odd, SPLIT_CONFIGS["prefetch1"], pad=True)
    h200 = Target.profile("nvidia-h200")
    small = route_candidates(GemmProblem(1024, 1024, 1024, parse_dtype("f16:f32")), h200)
    assert isinstance(small[1], SplitConfig) and isinstance(small[0], GemmConfig) and small[1].split in (2, 4, 8)
    large = route_candidates(GemmProblem(4096, 4096, 4096, parse_dtype("f16:f32")), h200)
    assert not any(isinstance(c, SplitConfig) for c in large)
    with pytest.raises(Exception, match="2 or more ranges"):
        SplitConfig(split=1)
    assert config_from_dict(SPLIT_CONFIGS["staged"].to_dict()) == SPLIT_CONFIGS["staged"]


PAD_CONFIG_REF = GemmConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), k_tiles=2, stages=1, pad=1,
                            prefetch=True)
PAD_CONFIG_LAVAPIPE = GemmConfig(tile=(8, 8, 8), subgroups=(1, 2), tiles=(2, 2), k_tiles=2, stages=2, pad=1,
                                 prefetch=True)


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("dtype", ["f16:f32", "bf16:f32:bf16", "s8:s32", "f16:f16"])
def test_odd_sizes_padded_on_ref(ref, layout, dtype):
    """Odd sizes copied into zeroed scratch of 16-byte rows: the GEMM runs with 16-byte loads and prefetch, C and
    bias padded too, D copied back out; the result is the unpadded problem's."""
    problem = GemmProblem(70, 33, 45, parse_dtype(dtype), layout, alpha=2.0, beta=1.0, bias=True)
    route = gemm_route(problem, PAD_CONFIG_REF, ref.target, pad=True)
    assert route.padded is not None and route.main.constexprs["WIDE"] == 16 // (problem.dtype.a.width // 8)
    steps = run_route(ref, problem, PAD_CONFIG_REF, pad=True)
    assert steps == ["pad a", "pad b", "pad c", "pad bias", "gemm", "extract d"]


@pytest.mark.vulkan
@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("dtype", ["f16:f32", "f16:f16"])  # 8-bit: 16-byte loads need tiles of 16, lavapipe has 8
def test_odd_sizes_padded_on_lavapipe(lavapipe, layout, dtype):
    problem = GemmProblem(37, 21, 19, parse_dtype(dtype), layout, beta=1.0, bias=True)
    steps = run_route(lavapipe, problem, PAD_CONFIG_LAVAPIPE, pad=True)
    assert steps[-2:] == ["gemm", "extract d"]


def test_padding_only_where_it_helps(ref):
    dtype = parse_dtype("f16:f32")
    aligned = GemmProblem(64, 32, 48, dtype)
    assert [s.name for s in gemm_route(aligned, PAD_CONFIG_REF, ref.target, pad=True).steps] == ["gemm"]
    odd = GemmProblem(70, 33, 45, dtype)
    assert [s.name for s in gemm_route(odd, PAD_CONFIG_REF, ref.target).steps] == ["gemm"]  # ref: no padding
    assert [s.name for s in gemm_route(odd, GemmConfig(kind="scalar"), ref.target, pad=True).steps] == ["gemm"]
    only_k = GemmProblem(64, 32, 45, dtype)  # A and B copied, C, bias and D not
    assert [s.name for s in gemm_route(only_k, PAD_CONFIG_REF, ref.target, pad=True).steps] == \
        ["pad a", "pad b", "gemm"]
    # to whole blocks where that adds at most 1/16 of work (the bounds checks compile out), else to 16 bytes
    big = GemmConfig(tile=(16, 16, 16), subgroups=(2, 4), tiles=(4, 4), k_tiles=2, stages=1, pad=1, prefetch=True)
    assert padded_sizes(GemmProblem(4097, 4095, 4093, dtype), big) == (4224, 4096, 4096)
    assert padded_sizes(GemmProblem(200, 300, 100, dtype), big) == (200, 304, 104)


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_copy_kernel_pads_and_extracts(device, bits):
    """The copy kernel: a block of a batch of row-major matrices (offsets, leading dimensions) into a larger zeroed
    destination and back out."""
    rng = np.random.default_rng(bits)
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    src = rng.integers(0, 200, (2, 11, 13)).astype(dtype)
    with GemmRunner.open(device) as runner:
        spec = copy_kernels.copy_kernel(bits).compile(runner.target, TX=copy_kernels.COPY_TX,
                                                      TY=copy_kernels.COPY_TY, ROWS=copy_kernels.COPY_ROWS)
        dst = np.full((3, 20, 24), 0xAB, dtype)
        args = dict(src=src, dst=dst, src_offset=13, src_ld=13, src_batch=11 * 13, rows=9, cols=12, dst_offset=24,
                    dst_ld=24, dst_batch=20 * 24, dst_rows=18, dst_cols=17)
        with prepare(runner.executor, runner._kernel(spec), spec, copy_kernels.copy_grid(18, 17, 2), args) as launch:
            launch.dispatch()
            got = launch.read("dst")
    want = np.full((3, 20, 24), 0xAB, dtype)
    block = np.zeros((2, 18, 17), dtype)
    block[:, :9, :12] = src[:, 1:10, :12]
    want[:2, 1:19, :17] = block
    np.testing.assert_array_equal(got, want)


def test_shape_classes():
    f16 = parse_dtype("f16:f32")
    assert shape_class(GemmProblem(1, 4096, 4096, f16)) == "skinny-m1-4096"
    assert shape_class(GemmProblem(8, 4096, 11008, f16)) == "skinny-m8-16384"
    assert shape_class(GemmProblem(64, 4096, 4096, f16)) == "skinny-m64-4096"
    assert shape_class(GemmProblem(4096, 4096, 4096, f16)) == "4096"
    assert shape_class(GemmProblem(4097, 4095, 4093, f16)) == "odd-4096"
    assert shape_class(GemmProblem(512, 12288, 4096, f16)) == "4096-wide"
    assert shape_class(GemmProblem(4096, 1024, 4096, f16)) == "4096-tall"
    assert shape_class(GemmProblem(1024, 1024, 1024, f16)) == "1024"


def test_the_tuner_tries_the_skinny_kernels_first(ref):
    skinny = GemmProblem(8, 512, 512, parse_dtype("f16:f32"), "nt")
    candidates = route_candidates(skinny, ref.target)
    assert isinstance(candidates[0], GemvConfig) and any(isinstance(c, GemmConfig) for c in candidates)
    assert route_default_config(skinny, ref.target) == candidates[0]
    square = GemmProblem(512, 512, 512, parse_dtype("f16:f32"))
    assert not any(isinstance(c, GemvConfig) for c in route_candidates(square, ref.target))


def test_tuning_a_skinny_problem_stores_its_shape_class(ref, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    problem = GemmProblem(3, 40, 96, parse_dtype("s8:s32"), "nt")
    best = ref.tune(problem, repeat=1, limit=3)
    assert best.ok and ref.cache_key(problem) == "s8:s32 nt skinny-m4-128"
    assert ref.tuned_config(problem) == best.config
