"""How anything is dispatched: executors, launch checks, device limits, `kernel[grid](...)`, `hydroplane run`.

- `executors` — the Executor protocol, `get_executor("ref" | N)`, `VulkanExecutor`, `run(words, ...)`;
- `reference` — `ReferenceExecutor` (loaded, with the `ref` layer, on first use);
- `checks` — the checks every launch passes before any work (bindings, element types, push constants,
  spec constants by declared type, grid);
- `limits` — a module against the device's limits and spirv-val before a driver sees it;
- `prepared` — the one path from Python arguments to a dispatch: `prepare()` binds NumPy arrays and DeviceArrays
  and packs push constants; a `PreparedLaunch` dispatches, times (GPU timestamps), reads back and releases;
- `jit` — language kernels launched as `kernel[grid](*args)` or bound once with `kernel[grid].prepare(*args)`,
  device arrays;
- `commands` — the `hydroplane run` command.

The layer sits above `spirv`, `ref`, `vk` and `lang`.
"""

import importlib

from hydroplane.launch.checks import LaunchError
from hydroplane.launch.executors import Executor, VulkanExecutor, get_executor, run
from hydroplane.launch.jit import DeviceArray, JitKernel, KernelError, LaunchResult, device_array, func, kernel
from hydroplane.launch.prepared import PreparedLaunch, prepare

# loaded on first use: the reference executor brings the `ref` layer (executors._LAZY)
_LAZY = {"ReferenceExecutor": "hydroplane.launch.reference"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


__all__ = ["DeviceArray", "Executor", "JitKernel", "KernelError", "LaunchError", "LaunchResult", "PreparedLaunch",
           "VulkanExecutor", "device_array", "func", "get_executor", "kernel", "prepare", "run", *_LAZY]
