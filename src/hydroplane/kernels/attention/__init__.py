"""Fused attention: problems, configurations, launch plans and the NumPy reference (plan.py), the kernels (source.py).

Device-independent: it imports `lang` and `spirv` only; `hydroplane.ops.attention` runs, times and checks it.
"""

from hydroplane.kernels.attention import source
from hydroplane.kernels.attention.plan import (
    DTYPE_NAMES,
    MAX_HEAD_DIM,
    AttentionConfig,
    AttentionError,
    AttentionPlan,
    AttentionProblem,
    Pass,
    attention_plan,
    auto_splits,
    candidate_configs,
    check_config,
    default_config,
    offers_tile,
    parse_dtype,
    random_inputs,
    reference,
    relative_error,
    target_tiles,
    tolerance,
)

__all__ = [
    "source",
    "DTYPE_NAMES",
    "MAX_HEAD_DIM",
    "AttentionConfig",
    "AttentionError",
    "AttentionPlan",
    "AttentionProblem",
    "Pass",
    "attention_plan",
    "auto_splits",
    "candidate_configs",
    "check_config",
    "default_config",
    "offers_tile",
    "parse_dtype",
    "random_inputs",
    "reference",
    "relative_error",
    "target_tiles",
    "tolerance",
]
