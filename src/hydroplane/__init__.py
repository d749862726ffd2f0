"""hydroplane: GPU compute kernels from Python through SPIR-V we emit ourselves.

Layers (see DESIGN.md in the shared folder and docs/architecture.md):
``spirv`` (SPIR-V as data), ``ref`` (CPU reference executor), ``vk`` (Vulkan runtime),
``lang`` (kernel language), ``kernels`` (library), ``isa`` (native GPU ISA reference).
"""


import importlib

__version__ = "0.1.0"
# The kernel language's entry points (hydroplane.kernel, .func, .coop ...) and the ops (hydroplane.matmul), loaded
# on first use so that `hydroplane.isa` and the command line do not pay for NumPy, ml_dtypes and the grammar tables.
_LAZY = {"kernel": "hydroplane.launch.jit", "func": "hydroplane.launch.jit", "device_array": "hydroplane.ops.arrays",
         "DeviceArray": "hydroplane.launch.jit", "LaunchResult": "hydroplane.launch.jit", "coop": "hydroplane.lang",
         "matmul": "hydroplane.ops.matmul", "attention": "hydroplane.ops.attention",
         # the device runtime (docs/runtime.md): the default device, waiting for queued work, capture and replay
         "set_device": "hydroplane.launch.runtime", "synchronize": "hydroplane.launch.runtime",
         "capture": "hydroplane.launch.runtime", "default_device": "hydroplane.launch.runtime",
         "DeviceError": "hydroplane.launch.runtime", "CaptureError": "hydroplane.launch.runtime",
         # One exception hierarchy (docs/robustness.md): every error hydroplane raises derives from HydroplaneError;
         # each op and layer has its class under it
         "HydroplaneError": "hydroplane.errors", "MatmulError": "hydroplane.ops.matmul",
         "AttentionError": "hydroplane.kernels.attention", "GemmError": "hydroplane.kernels.gemm",
         "KernelError": "hydroplane.launch.jit", "LaunchError": "hydroplane.launch.checks",
         "CompilationError": "hydroplane.lang.errors", "SpirvError": "hydroplane.spirv.binary",
         "VulkanError": "hydroplane.vk.errors", "RefError": "hydroplane.ref.errors", "NNError": "hydroplane.ops.nn",
         "QuantError": "hydroplane.quant", "QuantMatmulError": "hydroplane.ops.quant_matmul"}
# Modules of the layers re-exported under a short name (`hydroplane.gguf` is hydroplane.quant.gguf), also lazily.
_MODULES: dict[str, str] = {"gguf": "hydroplane.quant.gguf", "quant": "hydroplane.quant", "nn": "hydroplane.ops.nn",
                              "models": "hydroplane.models"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'hydroplane' has no attribute {name!r}")
    globals()[name] = value  # found once: later look-ups are plain attribute reads (a call's fast path)
    return value
