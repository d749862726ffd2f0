"""Where the large GEMM's time goes: the shipped 8192^3 kernel timed whole and with parts of its K loop left out,
beside the driver's pipeline statistics (VK_KHR_pipeline_executable_properties: registers, local memory, shared
memory).

Variants of the staged kernel (source.py KLoop.ABLATE; every one but "full" computes a wrong answer, so only "full"
is checked against NumPy): "full" as shipped; "no_global" without the global loads after the first K step (the
shared stores keep storing the first step's registers); "no_stage" without any copy into shared memory after the
first step (the MMAs and their shared-memory tile loads, and the barriers); "no_barrier" without the barriers
between steps; "no_stage+no_barrier" neither; and configuration variants: two stages at BK 16 (what 48 KiB of shared
memory allows for the 128x256 block), the same block without register prefetch. Each is timed on the prepared GEMM's
own buffers and push constants (GPU timestamps, median of --reps after 0.3 s of back-to-back runs), and its
throughput counted as the full GEMM's 2 * M * N * K over its time, so that differences of time read directly.

    PYTHONPATH=src python3 benchmarks/gemm_ablation.py [--dtype f16:f32] [--size 8192]

Lines go to stdout and, when $OUT is set, to $OUT/gemm_ablation.txt.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_configs import statistics_text  # noqa: E402

from hydroplane.kernels.gemm import GemmProblem, gemm_plan, parse_dtype, random_inputs, relative_error  # noqa: E402
from hydroplane.launch.prepared import WARMUP_S  # noqa: E402
from hydroplane.ops.gemm import GemmRunner  # noqa: E402
from hydroplane.vk.timing import bench  # noqa: E402

ABLATIONS = ("", "no_global", "no_stage", "no_barrier", "no_stage+no_barrier")


def time_kernel(runner: GemmRunner, kernel, main, reps: int) -> float:
    recording = runner.executor.device.record(kernel.native, main.grid, dict(main.buffers), main.push,
                                              timestamps=True)
    try:
        return bench(recording, warmup=0, reps=reps, warmup_s=WARMUP_S).median_ns / 1e9
    finally:
        recording.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="f16:f32")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    out_dir = os.environ.get("OUT")
    log = open(Path(out_dir) / "gemm_ablation.txt", "a") if out_dir else None  # noqa: SIM115

    def say(line: str) -> None:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    runner = GemmRunner.open(args.device)
    ex = runner.executor
    ex.capture_statistics = True
    n = args.size
    problem = GemmProblem(n, n, n, parse_dtype(args.dtype), "nn")
    config = runner.tuned_config(problem)
    say(f"# {runner.name}, {problem.describe()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"shipped: {config.describe()}")
    data = random_inputs(problem, np.random.default_rng(5))
    exact = data["a"].astype(np.float64) @ data["b"].astype(np.float64)
    variants = [(f"ablate {a or 'full'}", config, a) for a in ABLATIONS]
    block = config.block
    variants.append(("two stages, BK 16", replace(config, stages=2, k_tiles=1), ""))
    variants.append(("no register prefetch (two stages, BK 16)", replace(config, stages=2, k_tiles=1, prefetch=False),
                     ""))
    with runner.prepare(problem, config, data) as prepared:
        main_launch = prepared.main
        for label, variant, ablate in variants:
            try:
                plan = gemm_plan(problem, variant, runner.target)
                overrides = {"ABLATE": ablate} if ablate else {}
                words = plan.kernel.compile(runner.target, **{**plan.constexprs, **overrides}).words
                kernel = ex.kernel(words, validate=False)
                grid = plan.grid
                main = replace_grid(main_launch, grid)
                prepared.repoison()
                ex.dispatch(kernel, main.grid, main.buffers, main.push)
                error = relative_error(prepared.read(), exact) if not ablate else float("nan")
                seconds = time_kernel(runner, kernel, main, args.reps)
            except Exception as err:  # noqa: BLE001 -- a variant the driver refuses is reported, the rest run
                say(f"  {label}: {type(err).__name__}: {str(err)[:300]}")
                continue
            described = variant.describe() if variant is not config else ""
            say(f"  {label:42s} {problem.flops / seconds / 1e12:7.1f} T/s  {seconds * 1e6:9.1f} us  "
                f"error {error:.2g}  {described}  [{statistics_text(kernel)}]")
    say(f"  (block {block[0]}x{block[1]}x{block[2]})")
    runner.close()
    return 0


class _Main:
    def __init__(self, grid, buffers, push):
        self.grid, self.buffers, self.push = grid, buffers, push


def replace_grid(main, grid):
    return _Main(tuple(grid), main.buffers, main.push)


if __name__ == "__main__":
    raise SystemExit(main())
