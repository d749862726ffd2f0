"""What the timing path's settling (`vk.timing.settled`, docs/runtime.md "Timing") changes and costs on a GPU.

Each round lets the GPU idle for --idle seconds (its clock falls), then times one GEMM with the device runtime's one
timing path (`PreparedGemm.time(reps, warmup=1)`, the default 0.3 s warm-up), once with settling off
(`vk.timing.SETTLE_MAX_S = 0`) and once on (the shipped 2 s), the order alternating between rounds. Printed per
run: the median of the timed runs, the spread (first third's median against the last third's), and the wall clock
the `time()` call took. A settled median that is lower than the unsettled one after the same idle gap is what the
settling is for; its wall clock is what it costs a sweep.

    VK_DRIVER_FILES=... PYTHONPATH=src python3 benchmarks/settle_check.py [--size 4096] [--rounds 3] [--idle 3]

Here (lavapipe, a CPU device: settling is off there by rule) `--device 0 --size 128 --idle 0` runs the same code.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from matmul_h200 import on_device  # noqa: E402

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.gemm import GemmProblem, parse_dtype  # noqa: E402
from hydroplane.ops.gemm import GemmRunner  # noqa: E402


def one(runner, problem, data, reps: int, settle_s: float) -> tuple[float, float, float, int]:
    """(median us, first-third median / last-third median, wall seconds of the time() call, runs returned)."""
    vk.timing.SETTLE_MAX_S = settle_s
    config = runner.tuned_config(problem)
    with runner.prepare(problem, config, data) as prepared:
        start = time.perf_counter()
        times = prepared.time(reps, warmup=1)
        wall = time.perf_counter() - start
    third = max(len(times) // 3, 1)
    spread = statistics.median(times[:third]) / statistics.median(times[-third:])
    return statistics.median(times) * 1e6, spread, wall, len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="0")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", default="f16:f32")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds the GPU idles before each timing")
    args = parser.parse_args()
    shipped = vk.timing.SETTLE_MAX_S
    runner = GemmRunner.open(int(args.device) if args.device.isdigit() else args.device)
    n = args.size
    problem = GemmProblem(n, n, n, parse_dtype(args.dtype))
    rng = np.random.default_rng(0)
    dt = problem.dtype.a.dtype
    data = {"a": on_device(runner, rng.uniform(-1, 1, (n, n)).astype(dt)),
            "b": on_device(runner, rng.uniform(-1, 1, (n, n)).astype(dt))}
    print(f"settle check: {runner.device_key()}, {n}^3 {args.dtype}, {args.reps} reps, idle {args.idle} s before "
          f"each timing, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    one(runner, problem, data, 3, 0.0)  # the pipeline made and the first run done outside the rounds
    for r in range(args.rounds):
        for settle_s in ((0.0, shipped) if r % 2 == 0 else (shipped, 0.0)):
            time.sleep(args.idle)
            us, spread, wall, count = one(runner, problem, data, args.reps, settle_s)
            tflops = 2 * n ** 3 / us / 1e6
            print(f"  round {r} settle {settle_s:.1f} s: {us:9.1f} us ({tflops:6.1f} TFLOP/s), first/last third "
                  f"{spread:5.3f}, time() took {wall:5.2f} s, {count} runs", flush=True)
    vk.timing.SETTLE_MAX_S = shipped
    runner.close()


if __name__ == "__main__":
    main()
