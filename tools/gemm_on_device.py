"""Check the GEMM library's configurations on Vulkan device 0 (for the lent H200, where pytest is absent): every
direct-mode and NV2 workgroup-scope candidate of a 4096^3 problem on its verification problem, and an odd-sized
problem through the default configuration, each against NumPy (float64). Prints one line per run.

    PYTHONPATH=src python3 tools/gemm_on_device.py
"""
import time

from hydroplane.kernels.gemm import GemmProblem, candidate_configs, parse_dtype, verification_problem
from hydroplane.ops.gemm import GemmRunner

start = time.time()
runner = GemmRunner.open(0)
for dtype in ("f16:f32", "s8:s32", "f16:f16"):
    problem = GemmProblem(4096, 4096, 4096, parse_dtype(dtype), beta=1.0, bias=True)
    for config in candidate_configs(problem, runner.target):
        if not (config.direct or config.kind == "workgroup") or "64x32" in config.describe():
            continue
        small = verification_problem(problem, config)
        try:
            r = runner.run(small, config, seed=1)
            verdict = "ok" if r.ok else "WRONG"
            print(f"{dtype} {small.m}x{small.n}x{small.k} {config.describe()}: {verdict} {r.error:.3g}")
        except Exception as err:  # noqa: BLE001 -- a configuration the driver refuses is reported and skipped
            print(f"{dtype} {config.describe()}: {type(err).__name__} {str(err)[:120]}")
        if time.time() - start > 60:  # fit a short device lease
            break
    odd = GemmProblem(515, 259, 301, parse_dtype(dtype), beta=1.0, bias=True)
    r = runner.run(odd)
    print(f"{dtype} odd 515x259x301 default {r.config.describe()}: {'ok' if r.ok else 'WRONG'} {r.error:.3g}")
runner.close()
