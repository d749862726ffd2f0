"""What a user calls with arrays: each operation with its runner, autotuning and cache, and its command.

- `gemm` — the GEMM library on a device: `GemmRunner` (pick the device, launch, time, verify, autotune
  with an on-disk cache and the shipped table `gemm_table.json`);
- `commands` — `hydroplane gemm`.

The layer sits above `launch` and `kernels`.
"""
