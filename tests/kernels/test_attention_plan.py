"""Attention as data (kernels.attention.plan): problems and their refusals, configurations on each shipped target,
launch plans (grids, push constants, the decode path's splits), and the float64 reference against a plain loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.attention import (
    AttentionConfig,
    AttentionError,
    AttentionProblem,
    attention_plan,
    auto_splits,
    candidate_configs,
    check_config,
    default_config,
    parse_dtype,
    reference,
    target_tiles,
    tolerance,
)
from hydroplane.kernels.attention.plan import direct_p
from hydroplane.spirv.target import Target

H200 = Target.profile("nvidia-h200")
LAVAPIPE = Target.profile("lavapipe")
REF = Target.reference()


def test_attention_error_is_a_hydroplane_error():
    assert issubclass(AttentionError, HydroplaneError)


@pytest.mark.parametrize("kwargs, message", [
    ({"heads": 6, "kv_heads": 4}, "the 4 KV heads must divide the 6 query heads"),
    ({"head_dim": 72}, "head_dim 72 is not supported: it must be a multiple of 16 up to 256"),
    ({"head_dim": 272}, "head_dim 272 is not supported"),
    ({"q_len": 0}, "q_len must be a positive integer"),
    ({"batch": True}, "batch must be a positive integer"),
    ({"kv_heads": 0}, "kv_heads must be a positive integer"),
    ({"dtype": "f32"}, "attention takes f16 or bf16 inputs, not f32"),
    ({"scale": float("nan")}, "scale must be a finite number"),
    ({"scale": 3.5e38}, "scale must be a finite number within float32's range"),
    ({"scale": -1e300}, "within float32's range"),
    ({"dtype": np.dtype(">f2")}, "native byte order, not >f2"),
    ({"dtype": np.dtype([("x", "<f2")])}, "not the structured dtype"),
    ({"dtype": np.dtype("<f4")}, "attention takes f16 or bf16 inputs, not float32"),
    ({"window": 0}, "window must be a positive integer"),
    ({"window": True}, "window must be a positive integer"),
    ({"window": 2.0}, "window must be a positive integer"),
    ({"batch": 2 ** 16, "heads": 2 ** 8, "q_len": 2 ** 8}, "s32 indices"),
])
def test_problems_refused_by_name(kwargs, message):
    fields = {"batch": 1, "heads": 4, "q_len": 8, "kv_len": 8, "head_dim": 64, **kwargs}
    with pytest.raises(AttentionError, match=message):
        AttentionProblem(**fields)


def test_problem_defaults_and_measures():
    p = AttentionProblem(4, 16, 4096, 4096, 128)
    assert p.kv_heads == 16 and p.group == 1 and str(p.dtype) == "f16"
    assert p.softmax_scale == pytest.approx(1 / math.sqrt(128))
    assert p.flops == 4 * 4 * 16 * 4096 * 4096 * 128
    assert AttentionProblem(4, 16, 4096, 4096, 128, causal=True).flops == p.flops / 2
    decode = AttentionProblem(16, 32, 1, 8192, 128, kv_heads=8)
    assert decode.kv_bytes == 2 * 16 * 8 * 8192 * 128 * 2 and decode.group == 4
    assert decode.shapes() == ((16, 32, 1, 128), (16, 8, 8192, 128))
    assert "8 KV heads" in decode.describe()


def test_dtype_names():
    assert str(parse_dtype("bf16")) == "bf16" and str(parse_dtype(np.float16)) == "f16"
    with pytest.raises(AttentionError, match="f16 or bf16"):
        parse_dtype(np.float32)


def test_tiles_come_from_the_target():
    f16, bf16 = parse_dtype("f16"), parse_dtype("bf16")
    assert target_tiles(f16, LAVAPIPE) == [(8, 8, 8)]
    assert target_tiles(bf16, LAVAPIPE) == []  # lavapipe offers no bf16 matrices
    assert target_tiles(f16, H200)[0] == (16, 16, 16)
    assert (16, 16, 16) in target_tiles(bf16, H200)  # through NV2's conversions: the H200 has no bf16 accumulator
    assert direct_p(bf16, (16, 16, 16), H200) and not direct_p(f16, (16, 16, 16), H200)
    assert not direct_p(bf16, (16, 16, 16), REF)
    assert target_tiles(f16, REF) == [(16, 16, 16)]


def test_candidates_run_on_their_target():
    for target in (H200, LAVAPIPE, REF):
        for problem in (AttentionProblem(2, 4, 100, 100, 64), AttentionProblem(16, 32, 1, 8192, 128)):
            configs = candidate_configs(problem, target)
            assert configs
            for config in configs:
                check_config(problem, config, target)
    lead = default_config(AttentionProblem(4, 16, 4096, 4096, 128), H200)
    assert (lead.tile, lead.subgroups, lead.key_tiles) == ((16, 16, 16), 8, 4)  # the H200's measured winner
    decode = default_config(AttentionProblem(16, 32, 1, 8192, 128), H200)
    assert decode.scalar and decode.splits == 0  # the scalar pass at head dim 128 (plan.SCALAR_LEADS_HEAD_DIMS), splits
    # from the problem; without it the matrix path's one subgroup
    matrix = default_config(AttentionProblem(16, 32, 1, 8192, 64), H200)
    assert not matrix.scalar and matrix.subgroups == 1 and matrix.splits == 0


def test_bf16_on_lavapipe_is_refused_by_name():
    with pytest.raises(AttentionError, match="lavapipe offers no cooperative matrices for attention in bf16"):
        candidate_configs(AttentionProblem(1, 1, 8, 8, 64, "bf16"), LAVAPIPE)


@pytest.mark.parametrize("config, message", [
    (AttentionConfig((16, 16, 16)), "does not run attention tiles 16x16x16"),
    (AttentionConfig((8, 8, 8), subgroups=200), "1600 invocations per workgroup"),
    (AttentionConfig((8, 8, 8), subgroups=8, key_tiles=64), "bytes of shared memory"),
])
def test_configs_refused_by_name(config, message):
    with pytest.raises(AttentionError, match=message):
        check_config(AttentionProblem(1, 2, 64, 64, 64), config, LAVAPIPE)


def test_head_dim_must_fit_the_tiles():
    with pytest.raises(AttentionError, match="head_dim 48 is no multiple of the tiles' 32"):
        check_config(AttentionProblem(1, 1, 8, 8, 48), AttentionConfig((16, 32, 16), key_tiles=1), REF)


def test_config_fields_checked():
    with pytest.raises(AttentionError, match="three positive ints"):
        AttentionConfig((16, 16))
    with pytest.raises(AttentionError, match="subgroups must be positive"):
        AttentionConfig(subgroups=0)
    with pytest.raises(AttentionError, match="q_rounds divides its subgroups"):
        AttentionConfig(subgroups=4, q_rounds=3)
    with pytest.raises(AttentionError, match="q_rounds divides its subgroups"):
        AttentionConfig(subgroups=4, q_rounds=2, key_split=True)
    with pytest.raises(AttentionError, match="malformed"):
        AttentionConfig.from_dict({"tiles": [1]})
    config = AttentionConfig((8, 8, 8), 2, 1, 2, pad=0, splits=3)
    assert AttentionConfig.from_dict(config.to_dict()) == config


def test_plan_grid_and_push_constants():
    problem = AttentionProblem(3, 8, 100, 70, 64, kv_heads=2, causal=True, scale=0.5)
    plan = attention_plan(problem, AttentionConfig((8, 8, 8), 2, 1, 2, splits=1), LAVAPIPE)
    assert plan.main.grid == (-(-100 // 16), 8, 3) and plan.combine is None
    s = plan.main.scalars
    assert (s["S_Q"], s["S_KV"], s["HEADS"], s["KV_HEADS"], s["SPLITS"]) == (100, 70, 8, 2, 1)
    assert s["scale"] == 0.5 and s["WINDOW"] == 0 and plan.main.constexprs["WINDOWED"] is False
    c = plan.main.constexprs
    assert (c["CAUSAL"], c["SPLIT"], c["GUARD_KV"], c["SG"], c["D"]) == (True, False, True, 8, 64)
    whole = attention_plan(AttentionProblem(1, 1, 32, 64, 64), AttentionConfig((8, 8, 8), 2, 1, 2), LAVAPIPE)
    assert whole.main.constexprs["GUARD_KV"] is False  # kv_len a multiple of the key block


def test_decode_plan_splits_the_keys():
    problem = AttentionProblem(2, 4, 1, 1000, 64)
    config = AttentionConfig((16, 16, 16), 1, 1, 2, splits=0)
    assert auto_splits(problem, config) > 1
    plan = attention_plan(problem, config, REF)
    splits, split_len = plan.main.scalars["SPLITS"], plan.main.scalars["SPLIT_LEN"]
    assert split_len % 32 == 0 and (splits - 1) * split_len < 1000 <= splits * split_len  # no empty split
    assert plan.combine is not None and plan.main.grid == (splits, 4, 2) and plan.combine.grid == (1, 4, 2)
    assert plan.partial_o == 2 * 4 * splits * 64 and plan.partial_stats == 2 * 4 * splits * 2
    assert plan.config.splits == splits
    assert attention_plan(AttentionProblem(2, 4, 1000, 1000, 64), config, REF).combine is None  # many query blocks


def _loop_reference(problem, q, k, v):
    """softmax(q kᵀ scale) v one row at a time with math.exp: the definition, no vectorised shortcuts."""
    out = np.zeros(problem.shapes()[0])
    for b in range(problem.batch):
        for h in range(problem.heads):
            hk = h // problem.group
            for i in range(problem.q_len):
                position = i + problem.kv_len - problem.q_len
                seen = [j for j in range(problem.kv_len) if (not problem.causal or j <= position)
                        and (problem.window is None or position - j < problem.window)]
                if not seen:
                    continue
                logits = [float(np.float32(np.dot(q[b, h, i].astype(float), k[b, hk, j].astype(float)))
                                * np.float32(problem.softmax_scale)) for j in seen]  # the f32 scores
                top = max(logits)
                weights = [math.exp(x - top) for x in logits]
                total = sum(weights)
                for w, j in zip(weights, seen):
                    out[b, h, i] += w / total * v[b, hk, j].astype(float)
    return out


@pytest.mark.parametrize("q_len, kv_len, causal, window", [(5, 7, False, None), (5, 7, True, None),
                                                            (7, 5, True, None), (1, 6, True, None), (5, 7, False, 2),
                                                            (7, 5, True, 3), (6, 6, True, 1)])
def test_reference_is_the_definition(q_len, kv_len, causal, window):
    problem = AttentionProblem(2, 4, q_len, kv_len, 16, kv_heads=2, causal=causal, window=window)
    rng = np.random.default_rng(5)
    q = rng.standard_normal(problem.shapes()[0]).astype(np.float16)
    k = rng.standard_normal(problem.shapes()[1]).astype(np.float16)
    v = rng.standard_normal(problem.shapes()[1]).astype(np.float16)
    np.testing.assert_allclose(reference(problem, q, k, v), _loop_reference(problem, q, k, v), rtol=1e-12,
                               atol=1e-12)
    if causal and q_len > kv_len:  # rows that see no key are zeros
        assert not reference(problem, q, k, v)[:, :, :q_len - kv_len].any()


def test_tolerances():
    assert tolerance(AttentionProblem(1, 1, 1, 1, 16)) == 3e-3
    assert tolerance(AttentionProblem(1, 1, 1, 1, 16, "bf16")) == 1.5e-2
