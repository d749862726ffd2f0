"""Every candidate configuration the autotuner would try on the shipped device profiles compiles for that
target, lowers (EXT -> NV2 where needed) and passes spirv-val: the H200's kernels are checked here before the
lead runs them on the device."""

from __future__ import annotations

import pytest

from hydroplane.kernels.gemm import GemmProblem, candidate_configs, gemm_plan, parse_dtype
from hydroplane.spirv import validate
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target

pytestmark = pytest.mark.tools


@pytest.mark.parametrize("profile, dtype, layout", [
    ("nvidia-h200", "f16:f32", "nt"), ("nvidia-h200", "f16:f16", "nt"), ("nvidia-h200", "bf16:f32", "nt"),
    ("nvidia-h200", "s8:s32", "nt"), ("nvidia-h200", "s8:s32", "nn"),  # nn: B transposed into shared memory
    ("nvidia-h200", "u8:u32", "nt"), ("lavapipe", "f16:f32", "nt"), ("lavapipe", "s8:s32", "nt")])
def test_every_candidate_compiles_and_validates(profile, dtype, layout):
    target = Target.profile(profile)
    # K = 4080: a K tail for every block depth, and still 16-byte rows (which direct and workgroup kernels need)
    problem = GemmProblem(4096, 4096, 4080, parse_dtype(dtype), layout, beta=1.0, bias=True, activation="relu")
    kinds, kmajor = set(), False
    for config in candidate_configs(problem, target):
        plan = gemm_plan(problem, config, target)
        spec = plan.kernel.compile(target, **plan.constexprs)
        validate(compile_kernel(spec.words, target).words, env="vulkan1.3")
        kinds.add(config.kind)
        kmajor = kmajor or plan.constexprs.get("KMAJOR_B", False)
    expected = {"coop", "scalar", "workgroup"} if profile == "nvidia-h200" else {"coop", "scalar"}
    assert kinds == expected
    assert kmajor == (profile == "nvidia-h200" and dtype == "s8:s32" and layout == "nn")
