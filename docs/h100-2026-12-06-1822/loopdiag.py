"""Why a user's loop of q4_k 1 x 4096 -> 14336 calls took 70-76 us against 27 of GPU time (18:22 run): the case
again, 3 times each, with its shipped plan (XSH) and without XSH, and q4_0 beside it."""
import sys
sys.path.insert(0, "benchmarks")
import gc
import time
import numpy as np
import quant_h200 as Q
from hydroplane.launch.runtime import runtime
from hydroplane.ops import quant_matmul

gcs = {}
start = [0.0]


def watch(phase, info):
    if phase == "start":
        start[0] = time.perf_counter()
    else:
        n, t = gcs.get(info["generation"], (0, 0.0))
        gcs[info["generation"]] = (n + 1, t + time.perf_counter() - start[0])


gc.callbacks.append(watch)
rt = runtime(0)
rng = np.random.default_rng(0)
shipped = dict(quant_matmul.UNITS_TUNING)
key = ("q4_k", 1, 14336, 4096)
for i in range(3):
    for name, fmt, plan in (("q4_k shipped", "q4_k", shipped[key]), ("q4_k no xsh", "q4_k", dict(shipped[key], xsh=False)),
                            ("q4_k rows4 lpr8 xsh", "q4_k", {"rows": 4, "lpr": 8, "split": 1, "xsh": True}),
                            ("q4_0 shipped", "q4_0", None)):
        if plan is not None:
            quant_matmul.UNITS_TUNING[key] = plan
        gcs.clear()
        r = Q.run_case(rt, 0, None, fmt, 1, 4096, 14336, Q.ROTATE_BYTES, 20, rng, {})
        print(f"{i} {name:22} gpu {r['gpu_us']:6.1f} us  loop {r['loop_us']:6.1f} us  gc {({g: (n, round(t * 1e3, 1)) for g, (n, t) in gcs.items()})} (count, ms)", flush=True)
        quant_matmul.UNITS_TUNING[key] = shipped[key]
