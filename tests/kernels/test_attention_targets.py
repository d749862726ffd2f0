"""Every attention configuration the H200 and lavapipe profiles offer compiles for them without a device: lowered
to NV2 (neither has EXT maintenance1), every matrix type and MulAdd one the target reports (bf16 on the H200 has
no accumulator of its own: P and the output go to A in one NV2 conversion), within the target's limits (shared
memory, invocations, matrix dimensions), and spirv-val accepts the original and the lowered module."""

from __future__ import annotations

import pytest

from hydroplane.kernels.attention import AttentionProblem, attention_plan, candidate_configs
from hydroplane.launch.limits import check_target_limits
from hydroplane.spirv import Op, decode, validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

PROBLEMS = {  # partial blocks, causal, the decode path, whole blocks (no KV guard)
    "tails": AttentionProblem(1, 2, 47, 100, 128, causal=True),
    "decode": AttentionProblem(2, 8, 1, 3000, 128, kv_heads=2),
    "whole": AttentionProblem(1, 2, 256, 256, 64),
}


def compiled_for(target: Target, problem: AttentionProblem, limit: int):
    seen = set()
    for config in candidate_configs(problem, target)[:limit]:
        plan = attention_plan(problem, config, target)
        for p in (plan.main, plan.combine):
            if p is None:
                continue
            spec = p.kernel.compile(target, **p.constexprs)
            if id(spec) in seen:
                continue
            seen.add(id(spec))
            yield plan, spec


@pytest.mark.parametrize("profile, dtype", [("nvidia-h200", "f16"), ("nvidia-h200", "bf16"), ("lavapipe", "f16")])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_configurations_compile_for_the_target(profile, dtype, name):
    target = Target.profile(profile)
    base = PROBLEMS[name]
    problem = AttentionProblem(base.batch, base.heads, base.q_len, base.kv_len,
                               base.head_dim if profile != "lavapipe" else 32, dtype, base.kv_heads, base.causal)
    count = 0
    for _plan, spec in compiled_for(target, problem, 8):
        validate(spec.words, env="vulkan1.3")
        lowered = compile_kernel(spec.words, target)  # lowered, matrix types and MulAdds checked against the target
        check_target_limits(lowered, target)
        validate(lowered.words, env="vulkan1.3")
        ops = {i.opcode for i in decode(lowered.words).instructions}
        assert Op.CooperativeMatrixConvertUseEXT not in ops or dtype == "f16"  # NV2's ConvertNV shares the opcode
        if spec.name == "attention":
            assert Op.CooperativeMatrixReduceEXT in ops and Op.CooperativeMatrixPerElementOpEXT in ops
        count += 1
    assert count >= 2


def test_the_library_kernel_uses_the_ext_operations():
    spec = attention_plan(PROBLEMS["tails"], candidate_configs(PROBLEMS["tails"], Target.reference())[0],
                          Target.reference()).main
    text = spec.kernel.compile(Target.reference(), **spec.constexprs).asm()
    for name in ("OpCooperativeMatrixReduceEXT", "OpCooperativeMatrixPerElementOpEXT",
                 "OpCooperativeMatrixConvertUseEXT", "OpCooperativeMatrixMulAddKHR"):
        assert name in text, name


KINDS = {  # a kind of configuration: (whether a config is one, the problems, how many at least)
    "key_split": (lambda c: c.key_split, [AttentionProblem(1, 32, 1, 3000, 128, kv_heads=8),
                                          AttentionProblem(1, 32, 1, 3000, 256, kv_heads=2)], 3),
    "q_rounds": (lambda c: c.q_rounds > 1, [AttentionProblem(1, 32, 512, 1000, 256, kv_heads=2),
                                            AttentionProblem(1, 4, 512, 512, 256, kv_heads=1, causal=True)], 2),
    "column_split": (lambda c: c.column_split, [  # the model's decode step (kv_len read on the device), ggml's
        AttentionProblem(1, 4, 1, 4288, 256, kv_heads=1, causal=True, window=512, device_kv_len=True),
        AttentionProblem(1, 8, 1, 4096, 128), AttentionProblem(1, 32, 1, 20000, 256, kv_heads=2)], 6),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_other_configurations_compile_for_the_h200(kind):
    """The candidates of each kind (subgroups splitting each key block or O's columns for decode, the Q block in
    rounds for head dim 256 prefill), both passes, pass the same lowering, limits and spirv-val for the H200
    profile."""
    target = Target.profile("nvidia-h200")
    chosen, problems, least = KINDS[kind]
    count = 0
    for problem in problems:
        for config in candidate_configs(problem, target):
            if not chosen(config):
                continue
            plan = attention_plan(problem, config, target)
            for p in (plan.main, plan.combine):
                if p is None:
                    continue
                spec = p.kernel.compile(target, **p.constexprs)
                validate(spec.words, env="vulkan1.3")
                lowered = compile_kernel(spec.words, target)
                check_target_limits(lowered, target)
                validate(lowered.words, env="vulkan1.3")
            count += 1
    assert count >= least
