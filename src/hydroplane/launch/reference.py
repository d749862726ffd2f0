"""The reference executor behind the launch checks: `ReferenceExecutor`, a checking `hydroplane.ref.Executor`.

`executors.get_executor("ref")` and the "ref" device of `launch.runtime` make one. It lives apart from
`executors` so that the `ref` layer (the CPU interpreter, some thirty modules) loads only when a process first
asks for the reference executor: `launch.executors.ReferenceExecutor` is a lazy attribute (executors._LAZY), and a
process that runs on a Vulkan device never imports `hydroplane.ref` (docs/perf.md, "The warm first call's
imports"). It imports ref, spirv's Target, lang.disk_cache and the launch checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hydroplane.lang import disk_cache
from hydroplane.launch.checks import pack_spec_constants
from hydroplane.launch.executors import (
    BindingKey,
    CheckedKernel,
    PushData,
    SpecValue,
    Words,
    _checked_dispatch,
)
from hydroplane.launch.limits import check_target_limits, effective_local_size
from hydroplane.ref import Executor as _RefExecutor
from hydroplane.spirv.target import Target

__all__ = ["ReferenceExecutor"]


class ReferenceExecutor(_RefExecutor):
    """`hydroplane.ref.Executor` with the launch checks (bindings, push constants, grid, typed spec constants),
    taking CompiledKernels (or words, compiled for `Target.reference()`)."""

    @property
    def target(self) -> Target:
        """The reference executor at its subgroup size (what `target_subgroup_size()` constexprs answer)."""
        return Target.reference(self.subgroup_size)

    def release(self, buf: Any) -> None:
        """Free a buffer now: it leaves the executor's list (device addresses included) and its bytes go."""
        buf.release()
        if buf in self.buffers:
            self.buffers.remove(buf)
        buf.data = buf.data[:0]

    # every out-of-bounds buffer access is a diagnostic (raised, or collected: the read gives zero, the write is
    # dropped), for library and users' kernels alike
    user_kernel_robustness = "diagnosed"

    # The overrides take and return CheckedKernel where hydroplane.ref.Executor has its own Kernel: a
    # ReferenceExecutor is a ref Executor (its options and reports) whose kernels carry their CompiledKernel.
    def kernel(self, words: Words, entry: str = "main",  # type: ignore[override]
               spec: Mapping[int, SpecValue] | None = None, subgroup_size: int | None = None, *,
               validate: bool = True, robust: bool = False) -> CheckedKernel:
        """`validate` and `robust` are the Vulkan executor's (spirv-val before the driver; robust buffer access for
        the pipeline); the reference executor runs any module and diagnoses it itself, out-of-bounds accesses
        included: it takes the keywords, so one call fits both, and ignores them."""
        compiled = disk_cache.compiled_kernel(words, self.target, entry)
        packed = pack_spec_constants(compiled.interface, spec)
        check_target_limits(compiled, self.target, packed)
        native = super().kernel(compiled.words, entry=entry, spec=packed, subgroup_size=subgroup_size,
                                local_size=effective_local_size(compiled, packed))
        return CheckedKernel(native, compiled, self.user_kernel_robustness)

    def dispatch(self, kernel: CheckedKernel, grid: Sequence[int] = (1, 1, 1),  # type: ignore[override]
                 buffers: Mapping[BindingKey, Any] | None = None, push: PushData = None) -> object:
        dims, data = _checked_dispatch(kernel, grid, buffers, push, self.max_workgroup_count)
        return super().dispatch(kernel.native, dims, dict(buffers or {}), data)
