"""Attention parity: the library kernel on the reference executor (diagnostics on: races, out-of-bounds and
uninitialised accesses, matrix operations reached by part of a subgroup all raise) and on lavapipe, against the
float64 NumPy softmax(q kᵀ scale) v.

Random normal inputs (negatives, values near zero, and with `logit_scale` logits up to about ±30 and ±300: the
online softmax must stay stable), outputs and the decode path's partial results poisoned before each run (the runner
fills them with a value no attention writes), odd lengths (1, 7, 33, 47, 100), causal masking with S_q < S_kv and
S_q > S_kv (rows that see no key are zeros), grouped-query and multi-query heads, S_q = 1, head dims 16 to 256,
f16 and bf16 (bf16 on ref, through both P conversions), every kernel configuration kind: one and several subgroups
and query tiles, one and several key tiles, padded and unpadded shared rows, wider (flexible-dimension) tiles, the
decode path's splits and its combining pass.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from hydroplane.kernels.attention import (
    AttentionConfig,
    AttentionProblem,
    attention_plan,
    random_inputs,
    reference,
    relative_error,
)
from hydroplane.kernels.attention import tolerance as bound
from hydroplane.ops.attention import POISON, AttentionRunner, PreparedAttention


@pytest.fixture(scope="module")
def ref():
    with AttentionRunner.open("ref") as runner:
        assert runner.executor.diagnostics == "raise" and runner.executor.checks  # every diagnostic raises
        yield runner


@pytest.fixture(scope="module")
def lavapipe():
    with AttentionRunner.open(0) as runner:
        assert runner.target.subgroup_size == 8  # the tests' small configurations are lavapipe's
        yield runner


def check(runner: AttentionRunner, problem: AttentionProblem, config: AttentionConfig, seed: int = 0,
          logit_scale: float = 1.0):
    result = runner.run(problem, config, seed=seed, logit_scale=logit_scale)
    assert result.ok, f"{problem.describe()} with {config.describe()} on {runner.name}: error {result.error}"
    assert result.error > 0 or problem.kv_len == 1  # a real comparison: rounding shows (one key: O is V exactly)
    return result


C = AttentionConfig
REF_CONFIGS = {
    "2 subgroups, 2 key tiles": C((16, 16, 16), 2, 1, 2),
    "1 subgroup, 2 query tiles, unpadded": C((16, 16, 16), 1, 2, 1, pad=0),
    "8 subgroups x 64 keys (the H200's)": C((16, 16, 16), 8, 1, 4),
    "wide 16x32x32 tiles": C((16, 32, 32), 2, 1, 1),
    "wide 16x32x16 tiles, 2 key tiles": C((16, 32, 16), 1, 1, 2, pad=2),
    "decode: 3 splits": C((16, 16, 16), 1, 1, 2, splits=3),
}
REF_CASES = [  # (batch, heads, kv_heads, q_len, kv_len, head_dim, causal, logit_scale)
    (1, 2, 2, 33, 40, 64, False, 1.0),
    (1, 2, 2, 40, 33, 64, True, 1.0),  # S_q > S_kv: the first 7 rows see no key
    (2, 4, 2, 7, 70, 64, True, 1.0),  # GQA, S_q < S_kv
    (1, 4, 1, 1, 100, 128, False, 1.0),  # MQA, one query
    (1, 2, 2, 33, 47, 128, True, 3.2),  # logits up to about ±30
]


@pytest.mark.parametrize("name", list(REF_CONFIGS))
@pytest.mark.parametrize("case", range(len(REF_CASES)))
def test_configs_on_ref(ref, name, case):
    b, h, hk, s_q, s_kv, d, causal, logit = REF_CASES[case]
    config = REF_CONFIGS[name]
    if d % config.tile[1]:
        d = 128
    check(ref, AttentionProblem(b, h, s_q, s_kv, d, "f16", hk, causal), config, seed=case, logit_scale=logit)


@pytest.mark.parametrize("q_len, kv_len", [(1, 1), (7, 7), (1, 7), (7, 1), (33, 33), (47, 100)])
@pytest.mark.parametrize("causal", [False, True])
def test_odd_lengths_on_ref(ref, q_len, kv_len, causal):
    check(ref, AttentionProblem(1, 2, q_len, kv_len, 64, causal=causal), C((16, 16, 16), 2, 1, 2), seed=q_len)


@pytest.mark.parametrize("head_dim", [16, 48, 80, 256])
def test_head_dims_on_ref(ref, head_dim):
    check(ref, AttentionProblem(1, 2, 20, 37, head_dim, causal=True), C((16, 16, 16), 1, 1, 2), seed=head_dim)


def test_very_large_logits_stay_stable(ref):
    """Logits of about ±300 (exp overflows f32 without the running maximum): still the float64 answer."""
    result = check(ref, AttentionProblem(1, 2, 33, 70, 64), C((16, 16, 16), 2, 1, 2), logit_scale=10.0)
    assert np.isfinite(result.output.astype(np.float32)).all()


def test_scale_given(ref):
    check(ref, AttentionProblem(1, 2, 17, 30, 64, scale=-0.3), C((16, 16, 16), 1, 1, 2))


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_bf16_on_ref_both_p_conversions(ref, direct, causal):
    """bf16 through coop.convert + coop.convert_use (ref offers a bf16 accumulator) and through the one-step NV2
    conversion the H200 gets (DIRECT_P: it has no bf16 accumulator)."""
    problem = AttentionProblem(1, 4, 33, 47, 64, "bf16", kv_heads=2, causal=causal)
    plan = attention_plan(problem, C((16, 16, 16), 2, 1, 2), ref.target)
    plan = replace(plan, main=replace(plan.main, constexprs={**plan.main.constexprs, "DIRECT_P": direct}))
    rng = np.random.default_rng(9)
    data = {name: rng.standard_normal(shape).astype(np.float32).astype(problem.dtype.dtype)
            for name, shape in zip("qkv", (problem.shapes()[0], *problem.shapes()[1:] * 2))}
    with PreparedAttention(ref.executor, plan, data) as prepared:
        assert (prepared.read() == prepared.poison).all() and prepared.poison.flat[0] != 0  # poisoned first
        prepared.dispatch()
        error = relative_error(prepared.read(), reference(problem, data["q"], data["k"], data["v"]))
    assert 0 < error <= bound(problem)


def test_decode_path_with_many_splits_and_causal(ref):
    check(ref, AttentionProblem(2, 4, 3, 300, 64, kv_heads=1, causal=True), C((16, 16, 16), 1, 1, 2, splits=5))


def test_decode_partial_results_are_poisoned_and_combined(ref):
    problem = AttentionProblem(1, 2, 1, 200, 64)
    plan = attention_plan(problem, C((16, 16, 16), 1, 1, 2, splits=4), ref.target)
    assert plan.combine is not None
    data = {name: np.random.default_rng(3).standard_normal(shape).astype(np.float16)
            for name, shape in zip("qkv", (problem.shapes()[0], *problem.shapes()[1:] * 2))}
    with PreparedAttention(ref.executor, plan, data) as prepared:
        main = prepared.passes[0]
        assert (main.read("ml_part") == np.float32(POISON)).all()  # poisoned first
        prepared.dispatch()
        stats = main.read("ml_part").reshape(2, 4, 1, 2)  # (head, split, row, max/sum)
        assert (stats[..., 1] > 0).all()  # every split saw keys
        error = relative_error(prepared.read(), reference(problem, data["q"], data["k"], data["v"]))
    assert 0 < error <= bound(problem)


WINDOW_CASES = [  # (q_len, kv_len, causal, window, config): windows narrower and wider than a key block
    (33, 100, True, 20, C((16, 16, 16), 2, 1, 2)),
    (33, 100, False, 7, C((16, 16, 16), 1, 1, 2)),
    (40, 33, True, 2, C((16, 16, 16), 2, 1, 2)),  # S_q > S_kv: rows that see no key; W = 2: two keys each
    (47, 90, True, 40, C((16, 16, 16), 1, 2, 1, pad=0)),
    (3, 300, True, 100, C((16, 16, 16), 1, 1, 2, splits=5)),  # the decode path: whole splits before the window
    (1, 200, False, 40, C((16, 16, 16), 1, 1, 2, splits=4)),
]


@pytest.mark.parametrize("case", range(len(WINDOW_CASES)))
def test_sliding_window_on_ref(ref, case):
    q_len, kv_len, causal, window, config = WINDOW_CASES[case]
    problem = AttentionProblem(1, 4, q_len, kv_len, 64, kv_heads=2, causal=causal, window=window)
    result = check(ref, problem, config, seed=case)
    data = random_inputs(problem, np.random.default_rng(case))
    unwindowed = reference(replace(problem, window=None), data["q"], data["k"], data["v"])
    assert relative_error(result.output, unwindowed) > 10 * bound(problem)  # the window changed the answer


GROUPED_CASES = [  # (heads, kv_heads, q_len, kv_len, causal, window, config): the grouped decode path
    (8, 2, 1, 300, False, None, C((16, 16, 16), 1, 1, 2, splits=3, grouped=True)),
    (8, 2, 3, 200, True, 50, C((16, 16, 16), 1, 1, 2, splits=4, grouped=True)),  # 12 rows, causal and a window
    (8, 1, 4, 100, True, None, C((16, 16, 16), 2, 1, 2, splits=2, grouped=True)),  # 32 rows: a subgroup per tile
    (16, 1, 2, 130, False, None, C((16, 16, 16), 1, 2, 1, splits=0, grouped=True)),  # one subgroup, two tiles
    (4, 2, 5, 70, True, None, C((16, 16, 16), 1, 1, 2, splits=1, grouped=True)),  # grouped in one pass
    (6, 3, 7, 5, True, None, C((16, 16, 16), 1, 1, 1, splits=1, grouped=True)),  # S_q > S_kv: rows without keys
]


@pytest.mark.parametrize("case", range(len(GROUPED_CASES)))
def test_grouped_decode_on_ref(ref, case):
    """A KV head's query heads packed into one workgroup's rows (K and V read once per group), with the splits'
    one-pass combine: batch 2, so heads and batches index the packed rows."""
    h, h_kv, q_len, kv_len, causal, window, config = GROUPED_CASES[case]
    problem = AttentionProblem(2, h, q_len, kv_len, 64, kv_heads=h_kv, causal=causal, window=window)
    plan = attention_plan(problem, config, ref.target)
    assert plan.main.grid[1] == h_kv and plan.main.scalars["S_Q"] == (h // h_kv) * q_len
    check(ref, problem, config, seed=case)


KEY_SPLIT_CASES = [  # (heads, kv_heads, q_len, kv_len, causal, window, config): subgroups splitting each key block
    (2, 2, 1, 300, False, None, C((16, 16, 16), 2, 1, 1, splits=3, key_split=True)),
    (8, 2, 3, 200, True, 50, C((16, 16, 16), 4, 1, 1, splits=2, grouped=True, key_split=True)),
    (2, 2, 20, 70, True, None, C((16, 16, 16), 2, 2, 1, splits=1, key_split=True)),  # two query tiles, one pass
    (2, 1, 5, 33, True, None, C((16, 16, 16), 4, 1, 1, splits=1, key_split=True)),  # keys past S_kv in a block
]


@pytest.mark.parametrize("case", range(len(KEY_SPLIT_CASES)))
def test_key_split_on_ref(ref, case):
    """The subgroups share the query tiles and split each key block, their maxima, sums and rows merged in shared
    memory (subgroup 0 writes: the executor's race checks would see duplicate writes)."""
    h, h_kv, q_len, kv_len, causal, window, config = KEY_SPLIT_CASES[case]
    problem = AttentionProblem(1, h, q_len, kv_len, 64, kv_heads=h_kv, causal=causal, window=window)
    assert config.block[1] == config.subgroups * config.key_tiles * 16
    check(ref, problem, config, seed=case)


@pytest.mark.parametrize("case", range(3))
def test_q_staged_in_rounds_on_ref(ref, case):
    """The Q block through shared memory in parts (for 8 subgroups at head dim 256 in 48 KiB): a tail block, causal
    rows without keys, the decode path."""
    problem, config = [(AttentionProblem(1, 2, 40, 70, 64, causal=True), C((16, 16, 16), 4, 1, 2, q_rounds=2)),
                       (AttentionProblem(1, 2, 70, 50, 256, causal=True), C((16, 16, 16), 4, 1, 1, q_rounds=4)),
                       (AttentionProblem(1, 4, 33, 300, 64, kv_heads=2, window=40),
                        C((16, 16, 16), 2, 1, 2, q_rounds=2, splits=2))][case]
    check(ref, problem, config, seed=case)


LAVAPIPE_CONFIGS = {
    "2 subgroups, 2 key tiles": C((8, 8, 8), 2, 1, 2),
    "1 subgroup, 2 query tiles, unpadded": C((8, 8, 8), 1, 2, 1, pad=0),
    "decode: 3 splits": C((8, 8, 8), 1, 1, 2, splits=3),
}
LAVAPIPE_CASES = [  # head dims 16 and 32: lavapipe compiles each specialization for seconds (64: about 8 s)
    (1, 2, 2, 17, 20, 16, True, 1.0),
    (1, 4, 2, 7, 33, 32, False, 3.2),
    (1, 2, 1, 1, 47, 32, False, 1.0),
    (1, 2, 2, 20, 9, 16, True, 1.0),
]


@pytest.mark.vulkan
@pytest.mark.parametrize("name", list(LAVAPIPE_CONFIGS))
@pytest.mark.parametrize("case", range(len(LAVAPIPE_CASES)))
def test_configs_on_lavapipe(lavapipe, name, case):
    b, h, hk, s_q, s_kv, d, causal, logit = LAVAPIPE_CASES[case]
    check(lavapipe, AttentionProblem(b, h, s_q, s_kv, d, "f16", hk, causal), LAVAPIPE_CONFIGS[name], seed=case,
          logit_scale=logit)


@pytest.mark.vulkan
def test_sliding_window_on_lavapipe(lavapipe):
    """One windowed specialization (the decode path's windows run on ref): head dim 16 compiles fastest."""
    check(lavapipe, AttentionProblem(1, 2, 20, 45, 16, causal=True, window=9), C((8, 8, 8), 2, 1, 2), seed=20)


@pytest.mark.vulkan
def test_grouped_decode_on_lavapipe(lavapipe):
    problem = AttentionProblem(1, 8, 2, 70, 16, kv_heads=2, causal=True)
    check(lavapipe, problem, C((8, 8, 8), 1, 1, 2, splits=3, grouped=True), seed=11)


@pytest.mark.vulkan
def test_key_split_on_lavapipe(lavapipe):
    problem = AttentionProblem(1, 4, 2, 70, 16, kv_heads=2, causal=True)
    check(lavapipe, problem, C((8, 8, 8), 2, 1, 1, splits=3, grouped=True, key_split=True), seed=12)


@pytest.mark.vulkan
def test_default_configs_on_lavapipe(lavapipe):
    """The configurations lavapipe gets by default, head dim 64 once (head dim 128 runs on ref and the H200:
    lavapipe takes about 30 s to compile its fully unrolled 8x8 tiles, 64 about 8 s)."""
    for problem in (AttentionProblem(1, 2, 33, 33, 64, causal=True), AttentionProblem(2, 2, 1, 70, 32, kv_heads=1)):
        result = check(lavapipe, problem, None)
        assert result.timing == "GPU timestamps"
