"""How anything is dispatched: executors, launch checks, device limits, `kernel[grid](...)`, `hydroplane run`.

- `executors` — the Executor protocol, `get_executor("ref" | N)`, `ReferenceExecutor`, `VulkanExecutor`,
  `run(words, ...)`;
- `checks` — the checks every launch passes before any work (bindings, element types, push constants,
  spec constants by declared type, grid);
- `limits` — a module against the device's limits and spirv-val before a driver sees it;
- `jit` — language kernels launched as `kernel[grid](*args)`, device arrays;
- `commands` — the `hydroplane run` command.

The layer sits above `spirv`, `ref`, `vk` and `lang`.
"""

from hydroplane.launch.checks import LaunchError
from hydroplane.launch.executors import Executor, ReferenceExecutor, VulkanExecutor, get_executor, run
from hydroplane.launch.jit import DeviceArray, JitKernel, KernelError, LaunchResult, device_array, func, kernel

__all__ = ["DeviceArray", "Executor", "JitKernel", "KernelError", "LaunchError", "LaunchResult", "ReferenceExecutor",
           "VulkanExecutor", "device_array", "func", "get_executor", "kernel", "run"]
