"""What a user calls with arrays: each operation with its runner, autotuning and cache, and its command.

- `gemm` — the GEMM library on a device: `GemmRunner` (pick the device, launch, time, verify, autotune
  with an on-disk cache and the shipped table `gemm_table.json`);
- `matmul` — `hydroplane.matmul(a, b, ...)`: NumPy's matmul on the GEMM library (NumPy arrays, DeviceArrays,
  DLPack), each GEMM through the runner's routes;
- `commands` — `hydroplane gemm`.

The layer sits above `launch` and `kernels`.
"""
