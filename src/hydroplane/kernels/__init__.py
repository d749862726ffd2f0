"""The kernel library, written in the kernel language: GEMM (gemm.py, gemm_kernels.py) and its tuned table.

Imports only `lang` and `spirv` (DESIGN.md); launching, timing and autotuning are in hydroplane.kernels_run.
"""

from hydroplane.kernels.gemm import (
    DTYPE_NAMES,
    LAYOUTS,
    GemmConfig,
    GemmDtype,
    GemmError,
    GemmPlan,
    GemmProblem,
    candidate_configs,
    default_config,
    gemm_plan,
    parse_dtype,
    reference,
    relative_error,
    tolerance,
)

__all__ = ["DTYPE_NAMES", "LAYOUTS", "GemmConfig", "GemmDtype", "GemmError", "GemmPlan", "GemmProblem",
           "candidate_configs", "default_config", "gemm_plan", "parse_dtype", "reference", "relative_error",
           "tolerance"]
