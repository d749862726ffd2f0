"""The kernel language: GPU kernels as Python functions, compiled to SPIR-V through the ModuleBuilder.

Triton's split: the surface (core.py: dtypes, annotations, builtins; coop.py: cooperative
matrices), the semantics (semantic.py, coop_semantic.py: type rules and emission) and a
table-driven AST visitor (codegen.py); kernel.py ties them into `@kernel` / `@func` with
`spirv()`, `asm()` and `compile()` per constexpr specialization. This layer imports only
`spirv` (and errors); launching is `hydroplane.jit`, above it. See docs/language.md.
"""

from hydroplane.lang import coop
from hydroplane.lang.core import (
    abs_, Access, atan, atan2, atomic_add, atomic_and, atomic_compare_exchange, atomic_exchange, atomic_max,
    atomic_min, atomic_or, atomic_sub, atomic_xor, barrier, bf16, bitcast, boolean, Buffer, BufferType, builtin,
    cast, ceil, clamp, constexpr, cos, dot, e4m3, e5m2, exp, exp2, f16, f32, f64, floor, fma, fract, global_id, i16,
    i32, i64, i8, lane_id, local_array, local_id, local_index, log, log2, maximum, minimum, mix, num_subgroups,
    num_workgroups, pow_, readonly, readwrite, round_even, rsqrt, s16, s32, s64, s8, select, shared_array, sign,
    sin, sqrt, static_assert, static_print, static_range, subgroup_add, subgroup_all, subgroup_and, subgroup_any,
    subgroup_broadcast, subgroup_broadcast_first, subgroup_elect, subgroup_exclusive_add, subgroup_id,
    subgroup_inclusive_add, subgroup_max, subgroup_min, subgroup_mul, subgroup_or, subgroup_shuffle,
    subgroup_shuffle_down, subgroup_shuffle_up, subgroup_shuffle_xor, subgroup_size, subgroup_xor, tan, tanh,
    target_subgroup_size, trunc, u16, u32, u64, u8, vec, workgroup_id, writeonly,
)
from hydroplane.lang.errors import CompilationError
from hydroplane.lang.kernel import Func, Kernel, KernelParam, Specialization, func, kernel

__all__ = [name for name in dir() if not name.startswith("_")]
