"""Is a GEMM's speed on the device stable over a session? The same kernels timed again and again, with the GPU's
clocks, power and throttle reasons (nvidia-smi) beside each measurement.

Written when the same pipeline measured 144 TFLOP/s first and 31 a few seconds later on the H200 (2026-12-01):
it tells a kernel's speed from the device's state.

    PYTHONPATH=src python3 benchmarks/gemm_stability.py --size 4096 --rounds 8
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane.kernels.gemm import (  # noqa: E402
    GemmConfig,
    GemmProblem,
    parse_dtype,
    random_inputs,  # noqa: E402
)
from hydroplane.ops.gemm import GemmRunner  # noqa: E402

QUERY = "clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active"


def smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        return f"(nvidia-smi: {err})"


def ramp(p, n: int) -> None:
    """How the clock climbs under back-to-back runs after idling, and how long an idle gap it survives."""
    time.sleep(5)
    print(f"after 5 s idle [{smi()}]", flush=True)
    start = time.perf_counter()
    while time.perf_counter() - start < 1.0:
        seconds = p.timed_run()
        elapsed_ms = 1e3 * (time.perf_counter() - start)
        print(f"  {elapsed_ms:7.1f} ms  {2 * n ** 3 / seconds / 1e12:7.4g} TFLOP/s", flush=True)
    for gap in (0.05, 0.1, 0.2, 0.5, 1.0, 2.0):
        p.time(1, warmup_s=0.5)
        time.sleep(gap)
        seconds = p.timed_run()
        print(f"  one run after {gap} s idle (warm before): {2 * n ** 3 / seconds / 1e12:7.4g} TFLOP/s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--pause-s", type=float, default=0.0, help="idle time between rounds")
    parser.add_argument("--ramp", action="store_true", help="instead: after 5 s idle, every run of 1 s of back-to-back "
                        "runs, then single runs after idle gaps of 0.05 to 2 s")
    args = parser.parse_args()
    runner = GemmRunner.open(0)
    n = args.size
    configs = {"f16:f16": GemmConfig(tile=(16, 16, 16), subgroups=(2, 4), tiles=(4, 2), k_tiles=2, pad=1,
                                     prefetch=True),
               "f16:f32": GemmConfig(tile=(16, 16, 16), subgroups=(2, 4), tiles=(4, 2), k_tiles=2, pad=1,
                                     prefetch=True)}
    prepared = {}
    for dtype, config in configs.items():
        problem = GemmProblem(n, n, n, parse_dtype(dtype))
        prepared[dtype] = runner.prepare(problem, config, random_inputs(problem, np.random.default_rng(1)))
    print(f"# {runner.name}, {n}^3, nvidia-smi: {QUERY}", flush=True)
    if args.ramp:
        ramp(prepared["f16:f32"], n)
        rounds = 0
    else:
        rounds = args.rounds
    start = time.perf_counter()
    for round_ in range(rounds):
        for dtype, p in prepared.items():
            times = p.time(args.reps, warmup=2)
            tflops = 2 * n ** 3 / statistics.median(times) / 1e12
            print(f"{time.perf_counter() - start:6.1f} s  round {round_}  {dtype}  {tflops:7.4g} TFLOP/s "
                  f"(min {2 * n ** 3 / min(times) / 1e12:.4g}, max {2 * n ** 3 / max(times) / 1e12:.4g})  "
                  f"[{smi()}]", flush=True)
        time.sleep(args.pause_s)
    for p in prepared.values():
        p.close()
    runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
