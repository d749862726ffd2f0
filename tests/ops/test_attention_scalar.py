"""The scalar decode main pass (`AttentionConfig.scalar`, kernels/attention/scalar.py) with the unchanged combining
pass: head dims 64, 128 and 256 (16 and 32 on lavapipe too), one query per head and grouped query heads (Q_LEN 1 and
2), causal or not, a window, the keys in use read from the device (one planned call replayed at lengths going up and
down: a split read stale would be wrong), KV lengths that are multiples of nothing, f16 and bf16 (ref; lavapipe has
no bf16 scalars), inputs with negatives and large magnitudes, outputs poisoned first, against the float64 softmax
within `tolerance`; the plan's refusals and the candidate list (first where SCALAR_LEADS_HEAD_DIMS says, else last); the
kernel through spirv-val for the H200 and lavapipe profiles."""

from __future__ import annotations

import numpy as np
import pytest

from hydroplane.kernels.attention import (
    AttentionConfig,
    AttentionError,
    AttentionProblem,
    attention_plan,
    candidate_configs,
    default_config,
    plan,
    reference,
    relative_error,
    tolerance,
)
from hydroplane.launch.jit import device_array
from hydroplane.launch.runtime import runtime
from hydroplane.ops.attention import attention
from hydroplane.spirv import validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

POISON = -777.0


def hostile(rng, shape, dtype, factor):
    """Normal values times `factor` with a few up to 8 times larger, negatives included."""
    x = rng.standard_normal(shape) * factor
    x[rng.random(shape) < 0.02] *= 8
    return x.astype(np.float32).astype(np.dtype(dtype))


def check(got, problem, q, k, v, valid=None):
    want = reference(problem, q, k, v, valid)
    got = np.asarray(got).astype(np.float64)
    assert np.isfinite(got).all()
    if not np.abs(want).any():  # no row sees a key: zeros
        assert not np.abs(got).any()
        return
    assert relative_error(got, want) <= tolerance(problem)


def run(device, h, h_kv, s_q, s_kv, d, causal, window, config, dtype="f16", lengths=None, batch=1):
    """One planned call (lengths: the keys in use read from the device, written between calls) against the
    reference, the output poisoned before each call."""
    np_dtype = AttentionProblem(1, 1, 1, 1, 16, dtype).dtype.dtype
    rng = np.random.default_rng(s_kv * 7 + d + h + s_q)
    q = hostile(rng, (batch, h, s_q, d), np_dtype, 2.0)
    k = hostile(rng, (batch, h_kv, s_kv, d), np_dtype, 2.0)
    v = hostile(rng, (batch, h_kv, s_kv, d), np_dtype, 30.0)
    problem = AttentionProblem(batch, h, s_q, s_kv, d, dtype, h_kv, causal, None, window)
    dq, dk, dv = (device_array(x, device) for x in (q, k, v))
    out = device_array(np.full(q.shape, POISON, np_dtype), device)
    if lengths is None:
        attention(dq, dk, dv, causal=causal, window=window, out=out, config=config)
        check(out.numpy(), problem, q, k, v)
        return
    n = device_array(np.array([lengths[0]], np.int32), device)
    for length in lengths:
        n.write(np.array([length], np.int32))
        out.write(np.full(q.shape, POISON, np_dtype))
        attention(dq, dk, dv, causal=causal, window=window, kv_len=n, out=out, config=config)
        check(out.numpy(), problem, q, k, v, length)


def scalar(subgroups=2, keys=4, splits=0, grouped=False):
    return AttentionConfig(subgroups=subgroups, key_tiles=keys, splits=splits, grouped=grouped, scalar=True)


CASES = [  # (h, h_kv, s_q, s_kv, causal, window, config)
    (2, 2, 1, 77, False, None, scalar()),  # one query per head
    (8, 2, 1, 131, True, None, scalar(grouped=True)),  # 4 query heads on a KV head: 4 rows
    (4, 2, 2, 90, True, None, scalar(keys=3, grouped=True)),  # Q_LEN 2 grouped: rows 0 2 query 0, rows 1 3 query 1
    (2, 1, 3, 61, True, 17, scalar(subgroups=1, keys=2)),  # 3 queries per head, a window, GQA without grouping
    (4, 4, 1, 100, False, 9, scalar(splits=3)),  # a window without causal masking; few splits
]


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("h, h_kv, s_q, s_kv, causal, window, config", CASES)
def test_scalar_decode_on_ref(h, h_kv, s_q, s_kv, causal, window, config, d):
    run("ref", h, h_kv, s_q, s_kv, d, causal, window, config)


@pytest.mark.parametrize("d, config", [(64, scalar(grouped=True)), (128, scalar(keys=5)),
                                       (256, scalar(subgroups=1, keys=2, grouped=True))])
def test_scalar_decode_bf16_on_ref(d, config):
    run("ref", 8, 2, 1, 83, d, True, None, config, dtype="bf16")


def test_scalar_decode_batches_and_one_split_on_ref():
    run("ref", 4, 2, 1, 50, 64, False, None, scalar(splits=1, grouped=True), batch=2)
    run("ref", 2, 2, 1, 40, 64, True, None, scalar(subgroups=4, keys=16), batch=3)


@pytest.mark.parametrize("window, config", [(None, scalar(grouped=True)), (33, scalar(keys=3)),
                                            (20, scalar(subgroups=1, grouped=True))])
def test_scalar_decode_kv_len_on_ref(window, config):
    run("ref", 8, 2, 1, 300, 128, True, window, config, lengths=(300, 1, 150, 33, 0, 299, 64))


def test_scalar_decode_kv_len_two_queries_on_ref():
    run("ref", 4, 2, 2, 120, 64, True, 11, scalar(grouped=True), lengths=(120, 1, 2, 3, 70, 119))


@pytest.mark.vulkan
@pytest.mark.parametrize("d", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("h, h_kv, s_q, s_kv, causal, window, config", CASES[:4])
def test_scalar_decode_on_lavapipe(h, h_kv, s_q, s_kv, causal, window, config, d):
    run(0, h, h_kv, s_q, s_kv, d, causal, window, config)


@pytest.mark.vulkan
def test_scalar_decode_kv_len_on_lavapipe():
    run(0, 8, 2, 1, 200, 64, True, 40, scalar(grouped=True), lengths=(200, 1, 100, 41, 0, 199))
    run(0, 4, 4, 2, 150, 128, True, None, scalar(keys=3), lengths=(150, 2, 77))


def test_the_plan_refuses_what_the_scalar_pass_cannot_run():
    target = runtime("ref").target
    with pytest.raises(AttentionError, match="at most 4 rows per head"):
        attention_plan(AttentionProblem(1, 16, 1, 64, 64, "f16", 2), scalar(grouped=True), target)
    with pytest.raises(AttentionError, match="at most 4 rows per head"):
        attention_plan(AttentionProblem(1, 2, 5, 64, 64), scalar(), target)
    with pytest.raises(AttentionError, match="head dims of 16, 32, 64, 128 or 256"):
        attention_plan(AttentionProblem(1, 2, 1, 64, 96), scalar(), target)
    with pytest.raises(AttentionError, match="at most 16 keys at a time"):
        attention_plan(AttentionProblem(1, 2, 1, 64, 64), scalar(keys=17), target)
    with pytest.raises(AttentionError, match="invocations per workgroup"):
        attention_plan(AttentionProblem(1, 2, 1, 64, 64), scalar(subgroups=64), Target.profile("nvidia-h200"))
    with pytest.raises(AttentionError, match="without key_split"):
        AttentionConfig(scalar=True, key_split=True)


def test_the_plan_writes_the_layout_the_combine_reads():
    """Every key in a split of SPLIT_LEN keys (a multiple of the keys loaded at a time), whole workgroups of key
    groups, the combining pass given the same splits and rows."""
    target = Target.profile("nvidia-h200")
    for problem, config in ((AttentionProblem(1, 8, 1, 4096, 128), scalar(4, 4)),
                            (AttentionProblem(1, 32, 1, 4096, 128, "f16", 8), scalar(4, 8, grouped=True)),
                            (AttentionProblem(1, 8, 1, 16384, 128), scalar(2, 8)),
                            (AttentionProblem(2, 4, 1, 1000, 256, "f16", 2), scalar(4, 4, splits=7, grouped=True))):
        p = attention_plan(problem, config, target)
        main, combine = p.main.scalars, p.combine.scalars
        rows = problem.group * problem.q_len if config.grouped else problem.q_len
        per_workgroup = config.subgroups * 32 // min(problem.head_dim // 8, 32)
        assert main["SPLITS"] == combine["SPLITS"] == p.main.grid[0] * per_workgroup == p.config.splits
        assert main["SPLIT_LEN"] == combine["SPLIT_LEN"] and main["SPLIT_LEN"] % config.key_tiles == 0
        assert main["SPLITS"] * main["SPLIT_LEN"] >= problem.kv_len > (main["SPLITS"] - per_workgroup) * \
            main["SPLIT_LEN"]
        assert main["S_Q"] == combine["S_Q"] == rows == p.main.constexprs["R"] and p.combine.grid[0] == rows
        assert p.partial_o == problem.batch * p.main.grid[1] * main["SPLITS"] * rows * problem.head_dim
        assert p.partial_stats * problem.head_dim == 2 * p.partial_o
        lanes = p.combine.constexprs["LANES"]  # more split lanes where a lane would merge more than 8 splits
        assert main["SPLITS"] <= 8 * lanes or 2 * lanes * problem.head_dim // 4 > 1024
    many = attention_plan(AttentionProblem(1, 8, 1, 4096, 128), scalar(4, 4), target)
    assert many.main.scalars["SPLIT_LEN"] >= plan.SCALAR_SHORTEST_SPLIT


def test_the_scalar_pass_leads_only_where_measured_faster(monkeypatch):
    target = Target.profile("nvidia-h200")
    for problem in (AttentionProblem(1, 8, 1, 4096, 128), AttentionProblem(1, 32, 1, 4096, 128, "f16", 8),
                    AttentionProblem(1, 64, 4, 7680, 64, "f16", 8), AttentionProblem(1, 8, 1, 4096, 64),
                    AttentionProblem(1, 32, 1, 10000, 256, "f16", 2), AttentionProblem(1, 8, 2, 4096, 128)):
        found = candidate_configs(problem, target)
        assert any(c.scalar for c in found)
        leads = problem.q_len == 1 and problem.head_dim == 128  # SCALAR_LEADS_HEAD_DIMS: one query row, d128
        assert default_config(problem, target).scalar == leads, problem
        scalar_configs = [i for i, c in enumerate(found) if c.scalar]
        assert scalar_configs == list(range(len(scalar_configs))) if leads else \
            scalar_configs == list(range(len(found) - len(scalar_configs), len(found)))  # all first, or all last
        grouped = [c.grouped for c in found if c.scalar]
        assert grouped == sorted(grouped, reverse=True)  # grouped ones first where they fit
        monkeypatch.setattr(plan, "SCALAR_DECODE", True)
        assert default_config(problem, target).scalar
        monkeypatch.setattr(plan, "SCALAR_DECODE", False)
        monkeypatch.setattr(plan, "SCALAR_LEADS_HEAD_DIMS", frozenset())
        assert not default_config(problem, target).scalar
        monkeypatch.undo()
    assert not any(c.scalar for c in candidate_configs(AttentionProblem(1, 8, 5, 4096, 128), target))
    config = scalar(4, 8, grouped=True)
    assert AttentionConfig.from_dict(config.to_dict()) == config
    assert "scalar decode pass" in config.describe() and "grouped" in config.describe()


@pytest.mark.parametrize("profile, dtype", [("nvidia-h200", "f16"), ("nvidia-h200", "bf16"), ("lavapipe", "f16")])
def test_the_scalar_pass_compiles_for_the_targets(profile, dtype):
    target = Target.profile(profile)
    problems = (AttentionProblem(1, 32, 1, 4096, 128, dtype, 8, True, None, 512, device_kv_len=True),
                AttentionProblem(1, 8, 2, 1000, 64, dtype, 4, False), AttentionProblem(1, 4, 1, 3000, 256, dtype))
    for problem in problems:
        configs = [c for c in candidate_configs(problem, target) if c.scalar]
        assert configs
        for config in configs:
            p = attention_plan(problem, config, target)
            spec = p.main.kernel.compile(target, **p.main.constexprs)
            validate(spec.words, env="vulkan1.3")
            validate(compile_kernel(spec.words, target).words, env="vulkan1.3")
