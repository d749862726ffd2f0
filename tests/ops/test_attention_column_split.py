"""The decode path at the model's shape and its newer pieces: the subgroups splitting O's columns
(`AttentionConfig.column_split`), workgroups of splits that hold no key for their rows returning at once, and the
combining pass reading only the splits a row sees (`source.splits_seen`). A planned call replayed at lengths going
up and down (the partial results of a longer length stay in the scratch buffers: a pass that read a stale split
would be wrong), with and without a window, on ref and lavapipe against the float64 reference, outputs poisoned
first."""

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
    reference,
    relative_error,
)
from hydroplane.launch.jit import device_array
from hydroplane.launch.runtime import runtime
from hydroplane.ops.attention import attention
from hydroplane.spirv.target import Target

POISON = np.float16(-777.0)


def normal(rng, shape):
    return rng.standard_normal(shape).astype(np.float32).astype(np.float16)


def run_lengths(device, h, h_kv, s_q, s_kv, d, causal, window, lengths, config):
    rng = np.random.default_rng(s_kv + d + s_q)
    q, k, v = normal(rng, (1, h, s_q, d)), normal(rng, (1, h_kv, s_kv, d)), normal(rng, (1, h_kv, s_kv, d))
    dq, dk, dv = (device_array(x, device) for x in (q, k, v))
    n = device_array(np.array([lengths[0]], np.int32), device)
    out = device_array(np.full(q.shape, POISON), device)
    problem = AttentionProblem(1, h, s_q, s_kv, d, np.float16, h_kv, causal, None, window)
    for length in lengths:
        n.write(np.array([length], np.int32))
        out.write(np.full(q.shape, POISON))
        attention(dq, dk, dv, causal=causal, window=window, kv_len=n, out=out, config=config)
        got = out.numpy().astype(np.float64)
        want = reference(problem, q, k, v, length)
        assert np.isfinite(got).all(), length
        if not np.abs(want).any():
            assert not np.abs(got).any(), length
        else:
            assert relative_error(got, want) <= 3e-3, length


CASES = [  # (h, h_kv, s_q, s_kv, d, causal, window, lengths, config)
    (4, 1, 1, 300, 64, True, None, (300, 1, 150, 16, 17, 64, 299),  # the model's: 4 query heads on 1 KV head
     AttentionConfig((16, 16, 16), 4, 1, 1, splits=0, grouped=True, column_split=True)),
    (4, 1, 1, 300, 64, True, 20, (300, 1, 33, 48, 49, 231),
     AttentionConfig((16, 16, 16), 2, 1, 1, splits=0, grouped=True, column_split=True)),
    (4, 1, 1, 300, 64, True, 20, (299, 2, 100),  # one subgroup, the splits past the length returning at once
     AttentionConfig((16, 16, 16), 1, 1, 1, splits=0, grouped=True)),
    (2, 2, 3, 200, 64, False, 7, (200, 3, 50),  # no causal mask: keys after the position stay in the window
     AttentionConfig((16, 16, 16), 2, 1, 2, splits=6, column_split=True)),
    (2, 1, 20, 70, 64, True, None, (70, 20, 45),  # one pass (no splits), two query tiles, an edge block
     AttentionConfig((16, 16, 16), 4, 2, 1, splits=1, column_split=True)),
]


@pytest.mark.parametrize("h, h_kv, s_q, s_kv, d, causal, window, lengths, config", CASES)
def test_column_split_and_live_splits_on_ref(h, h_kv, s_q, s_kv, d, causal, window, lengths, config):
    run_lengths("ref", h, h_kv, s_q, s_kv, d, causal, window, lengths, config)


def test_head_dim_256_on_ref():
    config = AttentionConfig((16, 16, 16), 4, 1, 1, splits=0, grouped=True, column_split=True)
    run_lengths("ref", 4, 1, 1, 96, 256, True, 40, (96, 1, 32, 33), config)


@pytest.mark.vulkan
@pytest.mark.parametrize("window, config", [
    (None, AttentionConfig((8, 8, 8), 2, 1, 2, splits=5, grouped=True, column_split=True)),
    (9, AttentionConfig((8, 8, 8), 4, 1, 2, splits=5, column_split=True)),
    (9, AttentionConfig((8, 8, 8), 1, 1, 2, splits=0, grouped=True)),
])
def test_column_split_and_live_splits_on_lavapipe(window, config):
    run_lengths(0, 4, 2, 1, 120, 32, True, window, (120, 1, 24, 25, 71), config)


def test_the_plan_refuses_columns_that_do_not_split():
    problem = AttentionProblem(1, 4, 1, 64, 48, "f16", 1, True)
    with pytest.raises(AttentionError, match="do not split among 2 subgroups"):
        attention_plan(problem, AttentionConfig((16, 16, 16), 2, 1, 1, splits=0, column_split=True),
                       runtime("ref").target)
    with pytest.raises(AttentionError, match="without key_split"):
        AttentionConfig((16, 16, 16), 2, 1, 1, key_split=True, column_split=True)


def test_column_split_is_offered_for_the_models_decode():
    problem = AttentionProblem(1, 4, 1, 4288, 256, "f16", 1, True, window=512, device_kv_len=True)
    found = candidate_configs(problem, runtime("ref").target)
    assert any(c.column_split and c.grouped for c in found)


def test_the_h200_defaults_follow_its_measurements():
    """On the H200 profile (docs/attention.md, 2026-12-05): the model's decode attention takes 4 subgroups splitting
    O's columns on 16x16x16 tiles with splits of two 16-key blocks; the one query tile limit keeps a 16-token
    prefill on one subgroup a tile; Q in rounds leads head dim 256 prefill of many workgroups only."""
    h200 = Target.profile("nvidia-h200")
    decode = AttentionProblem(1, 4, 1, 4288, 256, "f16", 1, True, window=512, device_kv_len=True)
    plan = attention_plan(decode, default_config(decode, h200), h200)
    assert plan.config.column_split and plan.config.subgroups == 4 and plan.config.tile == (16, 16, 16)
    assert plan.config.block == (16, 16) and plan.splits == 134
    short = AttentionProblem(1, 4, 16, 4288, 256, "f16", 1, True, device_kv_len=True)
    assert not default_config(short, h200).column_split
    assert default_config(AttentionProblem(1, 32, 512, 10000, 256, "f16", 2), h200).q_rounds == 2
    assert default_config(AttentionProblem(1, 4, 512, 512, 256, "f16", 1, True), h200).q_rounds == 1
