"""The fused combine (`AttentionConfig.fused`, `plan.FUSED_COMBINE`): the decode path without its combining pass,
the last split workgroup of each block to arrive at a counter merging the splits. Against the two-launch path of
the same configuration, bit for bit, on ref and lavapipe: head dims 64, 128 and 256, grouped KV heads (32 and 64
query heads on 8), one to three query rows, causal or not, a window, every kind of decode configuration (one
subgroup, grouped, column split, key split, the scalar pass), split counts of 1 (one pass: nothing to fuse), 2 and
more than the keys need, the keys in use read from the device (most splits empty: their workgroups arrive without
writing), fresh inputs with negatives and extremes at each of three calls (the counters back at zero after each),
outputs poisoned first; a captured call replayed; a call that raises midway (the counters zeroed again); a merge
in another order is caught by the bit comparison; the plan and the candidate list; the kernels through spirv-val
for the H200 and lavapipe."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import hydroplane
from hydroplane.kernels.attention import (
    AttentionConfig,
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
from hydroplane.ops import attention as attention_op
from hydroplane.ops.attention import PreparedAttention, attention
from hydroplane.spirv import validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

POISON = -777.0


def hostile(rng, shape, dtype, factor, extreme):
    """Normal values times `factor`, a few 8 times larger, negatives included, and a few at +-`extreme`."""
    x = rng.standard_normal(shape) * factor
    x[rng.random(shape) < 0.02] *= 8
    x[rng.random(shape) < 0.002] = extreme * np.sign(rng.standard_normal())
    return x.astype(np.float32).astype(np.dtype(dtype))


def fresh(rng, problem: AttentionProblem, cancelling: bool = False):
    """Q and K with logits up to a few hundred; V up to f16's largest. `cancelling`: the second half of the keys a
    copy of the first, their values negated and large: a row that sees both halves sums to zero but for the
    rounding of the sums, whose residue (the row's output) depends on the order the splits are merged in."""
    q_shape, kv_shape = problem.shapes()
    dtype = problem.dtype.dtype
    q, k = hostile(rng, q_shape, dtype, 2.0, 12.0), hostile(rng, kv_shape, dtype, 2.0, 12.0)
    v = hostile(rng, kv_shape, dtype, 30.0, 65504.0)
    if cancelling:
        half = problem.kv_len // 2
        v = np.clip(rng.standard_normal(kv_shape) * 20000, -65504, 65504).astype(dtype)
        k[:, :, half:2 * half] = k[:, :, :half]
        v[:, :, half:2 * half] = -v[:, :, :half]
    return q, k, v


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


def splitting_configs(problem: AttentionProblem, target) -> list[AttentionConfig]:
    """One configuration of each kind the candidates hold that splits the keys (one subgroup or more, grouped,
    column split, key split, scalar grouped or not)."""
    kinds: dict = {}
    for c in candidate_configs(problem, target):
        if plan.splitting(problem, c):
            kinds.setdefault((c.grouped, c.column_split, c.key_split, c.scalar, c.subgroups > 1), c)
    return list(kinds.values())


def compare(device, problem: AttentionProblem, config: AttentionConfig, seed: int, calls: int = 3,
            lengths=None) -> None:
    """The unfused and the fused configuration on the same fresh inputs at each call (or each device length;
    every other one cancelling: see `fresh`), their outputs poisoned first: the same bits, and (but for the
    cancelling inputs, whose outputs are rounding residue) within the bound of the float64 softmax."""
    rng = np.random.default_rng(seed)
    target = runtime(device).target
    fused = replace(config, fused=True)
    made = attention_plan(problem, fused, target)
    split = attention_plan(problem, replace(config, fused=False), target)
    assert made.config.splits == split.config.splits
    assert (made.counters > 0) == (split.combine is not None) and made.combine is None
    dq, dk, dv = (device_array(x, device) for x in fresh(rng, problem))
    n = device_array(np.array([problem.kv_len], np.int32), device) if lengths else None
    outs = [device_array(np.full(problem.shapes()[0], POISON, problem.dtype.dtype), device) for _ in range(2)]
    for call, length in enumerate(lengths or [None] * calls):
        q, k, v = fresh(rng, problem, cancelling=call % 2 == 1)
        for x, d in ((q, dq), (k, dk), (v, dv)):
            d.write(x)
        if n is not None:
            n.write(np.array([length], np.int32))
        got = []
        for out, c in zip(outs, (replace(config, fused=False), fused)):
            out.write(np.full(problem.shapes()[0], POISON, problem.dtype.dtype))
            attention(dq, dk, dv, causal=problem.causal, window=problem.window, kv_len=n, out=out, config=c)
            got.append(out.numpy())
        assert np.array_equal(bits(got[0]), bits(got[1])), (config.describe(), length)
        if call % 2:
            continue
        want = reference(problem, q, k, v, length)
        if np.abs(want).any():
            assert relative_error(got[1], want) <= tolerance(problem)
        else:  # no row sees a key
            assert not np.abs(got[1].astype(np.float64)).any()


CASES = [  # (heads, kv_heads, q_len, kv_len, head_dim, causal, window)
    (2, 2, 1, 200, 64, False, None),
    (32, 8, 1, 136, 128, True, None),
    (64, 8, 1, 260, 64, True, 20),
    (4, 2, 3, 150, 256, True, None),
    (8, 8, 2, 130, 128, False, 33),
]


def problem_of(case, dtype="f16", device_kv_len=False) -> AttentionProblem:
    h, h_kv, s_q, s_kv, d, causal, window = case
    return AttentionProblem(1, h, s_q, s_kv, d, dtype, h_kv, causal, None, window, device_kv_len)


def configs_of(problem, target, splits=(1, 2, 64), kinds=None):
    """The splitting configurations (`kinds` matrix ones at most, and one scalar one, where given), then the
    first with each split count of `splits` (64: more than the keys need; the plan keeps the splits that hold
    keys)."""
    found = splitting_configs(problem, target)
    if kinds is not None:
        found = [c for c in found if not c.scalar][:kinds] + [c for c in found if c.scalar][:1]
    assert found
    return found + [replace(found[0], splits=s) for s in splits]


@pytest.mark.parametrize("case", CASES)
def test_the_fused_combine_gives_the_two_launch_bits_on_ref(case):
    problem = problem_of(case)
    for i, config in enumerate(configs_of(problem, runtime("ref").target)):
        compare("ref", problem, config, seed=i + case[3])


@pytest.mark.vulkan
@pytest.mark.parametrize("case", CASES)
def test_the_fused_combine_gives_the_two_launch_bits_on_lavapipe(case):
    """Fewer configurations than on ref: lavapipe takes about 35 s to compile a pipeline at head dim 256 (its 8x8
    tiles unrolled), a few at 128."""
    problem = problem_of(case)
    wide = problem.head_dim > 128
    configs = configs_of(problem, runtime(0).target, (2, 64) if wide else (1, 2, 64), 1 if wide else 2)
    for i, config in enumerate(configs):
        compare(0, problem, config, seed=i + case[3])


def test_the_fused_combine_in_bf16_on_ref():
    problem = problem_of((32, 8, 1, 100, 128, True, None), "bf16")
    for i, config in enumerate(splitting_configs(problem, runtime("ref").target)[:3]):
        compare("ref", problem, config, seed=i)


LENGTHS = (300, 1, 0, 77, 150, 299, 2)  # most splits empty at the short ones; none at all at 0


@pytest.mark.parametrize("case", [(8, 2, 1, 300, 128, True, None), (4, 4, 2, 300, 64, True, 40),
                                  (16, 8, 1, 300, 256, False, None)])
def test_the_keys_in_use_on_the_device_on_ref(case):
    problem = problem_of(case, device_kv_len=True)
    for i, config in enumerate(splitting_configs(problem, runtime("ref").target)[:3]):
        compare("ref", problem, replace(config, splits=config.splits or 16), seed=i, lengths=LENGTHS)


@pytest.mark.vulkan
@pytest.mark.parametrize("case", [(8, 2, 1, 300, 128, True, None), (4, 4, 2, 300, 64, True, 40)])
def test_the_keys_in_use_on_the_device_on_lavapipe(case):
    problem = problem_of(case, device_kv_len=True)
    for i, config in enumerate(splitting_configs(problem, runtime(0).target)[:3]):
        compare(0, problem, replace(config, splits=config.splits or 16), seed=i, lengths=LENGTHS)


def captured(device):
    """A planned fused call captured, replayed at several lengths with fresh inputs: the eager unfused call's bits
    at each."""
    problem = problem_of((8, 2, 1, 200, 64, True, None), device_kv_len=True)
    config = replace(splitting_configs(problem, runtime(device).target)[0], splits=8)
    rng = np.random.default_rng(5)
    dq, dk, dv = (device_array(x, device) for x in fresh(rng, problem))
    n = device_array(np.array([200], np.int32), device)
    out, want = (device_array(np.full(problem.shapes()[0], POISON, np.float16), device) for _ in range(2))
    fused = replace(config, fused=True)
    attention(dq, dk, dv, causal=True, kv_len=n, out=out, config=fused)  # planned before the capture
    with hydroplane.capture(device) as graph:
        attention(dq, dk, dv, causal=True, kv_len=n, out=out, config=fused)
    for length in (200, 3, 0, 120, 199):
        for x, d in zip(fresh(rng, problem), (dq, dk, dv)):
            d.write(x)
        n.write(np.array([length], np.int32))
        out.write(np.full(problem.shapes()[0], POISON, np.float16))
        graph.replay()
        attention(dq, dk, dv, causal=True, kv_len=n, out=want, config=config)
        assert np.array_equal(bits(out.numpy()), bits(want.numpy())), length
    graph.close()


def test_a_captured_fused_call_replays_on_ref():
    captured("ref")


@pytest.mark.vulkan
def test_a_captured_fused_call_replays_on_lavapipe():
    captured(0)


class Stop(Exception):
    pass


def counters_of(config) -> list[np.ndarray]:
    return [p.passes[0].array("counters").numpy() for p in attention_op._plans.values()
            if p.plan.counters and p.plan.config.fused and p.passes]


def test_a_call_that_stops_midway_leaves_the_counters_at_zero(monkeypatch):
    """On the reference executor a dispatch can raise midway (a diagnostic, the time limit, Ctrl-C): the
    workgroups that arrived would be counted in the next call; the runtime zeroes the counters it raised on."""
    attention_op.clear_plans()
    problem = problem_of((4, 2, 1, 256, 64, True, None))
    config = replace(splitting_configs(problem, runtime("ref").target)[0], splits=8, fused=True)
    rng = np.random.default_rng(9)
    q, k, v = (device_array(x, "ref") for x in fresh(rng, problem))
    out = device_array(np.full(problem.shapes()[0], POISON, np.float16), "ref")
    attention(q, k, v, causal=True, out=out, config=config)
    executor = runtime("ref").executor
    batches = []

    def stop(done, total):
        batches.append(done)
        if len(batches) == 3:
            raise Stop

    monkeypatch.setattr(executor, "max_lanes", 32)  # one workgroup a batch: the third stops the dispatch
    monkeypatch.setattr(executor, "progress", stop)
    with pytest.raises(Stop):
        attention(q, k, v, causal=True, out=out, config=config)
    assert all(not c.any() for c in counters_of(config)) and counters_of(config)
    with hydroplane.capture("ref") as graph:
        attention(q, k, v, causal=True, out=out, config=config)
    batches.clear()
    with pytest.raises(Stop):
        graph.replay()
    assert all(not c.any() for c in counters_of(config))
    monkeypatch.setattr(executor, "progress", None)
    xs = fresh(rng, problem)
    for x, d in zip(xs, (q, k, v)):
        d.write(x)
    graph.replay()
    want = attention(q, k, v, causal=True, config=replace(config, fused=False)).numpy()
    assert np.array_equal(bits(out.numpy()), bits(want))
    graph.close()


def test_another_merge_order_changes_the_bits():
    """The comparison above has teeth: the same fused kernel merging the splits with other split lanes (another
    order of the same merges) gives other bits, on most outputs of the cancelling inputs (on ordinary ones, a few
    in a thousand: an f32 rounding rarely moves an f16 result)."""
    problem = problem_of((4, 4, 1, 400, 128, False, None))
    target = runtime("ref").target
    config = AttentionConfig((16, 16, 16), 1, 1, 1, splits=24)
    q, k, v = fresh(np.random.default_rng(11), problem, cancelling=True)
    two = attention(q, k, v, config=config, device="ref")
    fused = attention_plan(problem, replace(config, fused=True), target)
    assert fused.main.constexprs["LANES"] == 8 and fused.config.splits > 8
    for lanes in (8, 1, 2, 3):
        main = replace(fused.main, constexprs={**fused.main.constexprs, "LANES": lanes})
        with PreparedAttention(runtime("ref").executor, replace(fused, main=main), {"q": q, "k": k, "v": v}) as p:
            p.dispatch()
            differ = np.count_nonzero(bits(p.read()) != bits(two))
        assert differ == 0 if lanes == 8 else differ > two.size // 2, (lanes, differ)


def test_the_plan_of_the_fused_combine():
    target = Target.profile("nvidia-h200")
    for problem in (AttentionProblem(1, 8, 1, 4096, 128), AttentionProblem(1, 32, 1, 4096, 128, "f16", 8),
                    AttentionProblem(2, 64, 4, 7680, 64, "f16", 8, True), AttentionProblem(1, 8, 1, 16384, 128)):
        for config in splitting_configs(problem, target):
            split, fused = (attention_plan(problem, replace(config, fused=f), target) for f in (False, True))
            assert fused.combine is None and split.combine is not None and fused.config.fused
            assert (fused.main.grid, fused.main.scalars) == (split.main.grid, split.main.scalars)
            assert (fused.partial_o, fused.partial_stats) == (split.partial_o, split.partial_stats)
            assert fused.main.constexprs == {**split.main.constexprs, "FUSED": True,
                                             "LANES": split.combine.constexprs["LANES"]}
            blocks = 1 if config.scalar else fused.main.grid[0] // fused.config.splits
            assert fused.counters == problem.batch * fused.main.grid[1] * blocks
            assert "combined by the last workgroup (fused)" in fused.config.describe()
            assert AttentionConfig.from_dict(fused.config.to_dict()) == fused.config
    one = attention_plan(AttentionProblem(1, 8, 1, 4096, 128), AttentionConfig(splits=1, fused=True), target)
    assert one.counters == 0 and one.combine is None and not one.config.fused and "FUSED" not in one.main.constexprs


def test_the_switch_gives_the_decode_candidates_the_fused_combine(monkeypatch):
    target = Target.profile("nvidia-h200")
    decode = AttentionProblem(1, 32, 1, 4096, 128, "f16", 8)
    prefill = AttentionProblem(1, 16, 4096, 4096, 128)
    assert not any(c.fused for p in (decode, prefill) for c in candidate_configs(p, target))
    monkeypatch.setattr(plan, "FUSED_COMBINE", True)
    assert default_config(decode, target).fused and not default_config(prefill, target).fused
    for c in candidate_configs(decode, target):
        assert c.fused == plan.splitting(decode, c)
    monkeypatch.setattr(plan, "FUSED_COMBINE", False)
    assert default_config(decode, target) == replace(default_config(decode, target), fused=False)


@pytest.mark.parametrize("profile, dtype", [("nvidia-h200", "f16"), ("nvidia-h200", "bf16"), ("lavapipe", "f16")])
def test_the_fused_kernels_compile_for_the_targets(profile, dtype):
    target = Target.profile(profile)
    problems = (AttentionProblem(1, 32, 1, 4096, 128, dtype, 8, True, None, 512, device_kv_len=True),
                AttentionProblem(1, 8, 2, 1000, 64, dtype, 4, False), AttentionProblem(1, 4, 1, 3000, 256, dtype))
    for problem in problems:
        for config in splitting_configs(problem, target):
            p = attention_plan(problem, replace(config, fused=True), target)
            spec = p.main.kernel.compile(target, **p.main.constexprs)
            validate(spec.words, env="vulkan1.3")
            validate(compile_kernel(spec.words, target).words, env="vulkan1.3")
