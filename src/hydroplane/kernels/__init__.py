"""The kernel library: device-independent kernel source in the kernel language, one sub-package per family.

`kernels.gemm` (GEMM: problems, configurations, launch plans, the NumPy reference, and the kernels in
`kernels/gemm/source.py`). It imports only `lang` and `spirv` (DESIGN.md); running, timing and autotuning
the kernels is the ops layer's (`hydroplane.ops`).
"""
