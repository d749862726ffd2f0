"""Time chosen GEMM configurations on a Vulkan device, with the driver's statistics (registers, spills).

For exploring configurations on the lent H200 in one short call, before they become tuner candidates: each
configuration is verified on a smaller problem with the same code paths (against NumPy, float64), then timed at
--size with GPU timestamps (median of --reps after warm-up, one input set) and reported with the pipeline's
executable statistics (VK_KHR_pipeline_executable_properties: register count, local memory, shared memory).

A configuration is written as space-separated key=value fields (GemmConfig's, sizes with 'x'):

    PYTHONPATH=src python3 benchmarks/gemm_configs.py --dtype f16:f32 --size 4096 \\
        "tile=16x16x16 subgroups=2x2 tiles=4x4 k_tiles=2 pad=1 prefetch=1"

Without configurations it runs --set (a named list below). Lines go to stdout and, when $OUT is set, to
$OUT/gemm_configs.txt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.gemm import (  # noqa: E402  # noqa: E402
    GemmConfig,
    GemmProblem,
    parse_dtype,
    random_inputs,
    verification_problem,
)
from hydroplane.ops.gemm import GemmRunner  # noqa: E402

SETS = {
    "f16": [
        "tile=16x16x16 subgroups=2x4 tiles=4x2 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=2x2 tiles=4x4 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=4x2 tiles=2x4 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=2x4 tiles=4x4 k_tiles=1 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=4x2 tiles=4x4 k_tiles=1 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=2x4 tiles=2x2 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=2x2 tiles=4x2 k_tiles=2 pad=1 prefetch=1",
        "tile=16x8x16 subgroups=2x4 tiles=4x4 k_tiles=2 pad=1 prefetch=1",
        "tile=16x8x16 subgroups=2x2 tiles=4x8 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x16 subgroups=2x4 tiles=4x2 k_tiles=2 pad=1",
        "tile=16x16x16 subgroups=2x4 tiles=4x2 k_tiles=2 prefetch=1",
        "tile=16x8x8 subgroups=2x2 tiles=2x2 k_tiles=2 stages=1",  # the first H200 run's f16:f32 winner
        "tile=16x16x16 subgroups=2x2 tiles=4x2 direct=1 stages=1",
        "kind=workgroup tile=128x128x32 threads=256x1",
    ],
    "int8": [
        "tile=16x16x32 subgroups=2x4 tiles=4x2 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x32 subgroups=2x4 tiles=4x2 k_tiles=1 pad=1 prefetch=1",
        "tile=16x16x32 subgroups=2x2 tiles=4x4 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x32 subgroups=2x4 tiles=4x4 k_tiles=1 pad=1 prefetch=1",
        "tile=16x8x32 subgroups=2x4 tiles=4x4 k_tiles=2 pad=1 prefetch=1",
        "tile=16x16x32 subgroups=4x2 tiles=2x4 k_tiles=2 pad=1 prefetch=1",
        "kind=workgroup tile=128x64x64 threads=128x1",  # the first H200 run's s8:s32 winner
    ],
}


def parse_config(text: str) -> GemmConfig:
    fields: dict = {}
    for item in text.split():
        key, _, value = item.partition("=")
        if "x" in value:
            fields[key] = tuple(int(v) for v in value.split("x"))
        elif key == "kind":
            fields[key] = value
        elif key in ("direct", "wide", "prefetch", "kmajor"):
            fields[key] = value not in ("0", "false", "False")
        else:
            fields[key] = int(value)
    return GemmConfig(**fields)


def statistics_text(kernel) -> str:
    try:
        found = vk.pipeline_statistics(kernel.native)
    except vk.VulkanError as err:
        return f"(no statistics: {err})"
    keep = ("Register Count", "Local Memory Size", "Shared Memory Size", "Stack Size")
    return "; ".join(", ".join(f"{k}={v}" for k, v in e.statistics.items() if k in keep) for e in found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", help="configurations (key=value fields); default: --set")
    parser.add_argument("--dtype", default="f16:f32")
    parser.add_argument("--layout", default="nn")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--set", default=None, help=f"a named list: {', '.join(SETS)}")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=300, help="stop starting configurations after this")
    args = parser.parse_args()
    texts = args.configs or SETS[args.set or ("int8" if "8" in args.dtype.split(":")[0] else "f16")]
    out_dir = os.environ.get("OUT")
    log = open(Path(out_dir) / "gemm_configs.txt", "a") if out_dir else None  # noqa: SIM115

    def say(line: str) -> None:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    started = time.perf_counter()
    runner = GemmRunner.open(args.device)
    runner.executor.capture_statistics = True
    problem = GemmProblem(args.size, args.size, args.size, parse_dtype(args.dtype), args.layout)
    say(f"# {runner.name}, {problem.describe()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    data = random_inputs(problem, np.random.default_rng(7))
    for text in texts:
        if time.perf_counter() - started > args.budget_s:
            say(f"  (budget spent: {text} not run)")
            continue
        start = time.perf_counter()
        try:
            config = parse_config(text)
            small = verification_problem(replace(problem, beta=1.0, bias=True), config)
            checked = runner.run(small, config, seed=1)
            verdict = "ok" if checked.ok else f"WRONG {checked.error:.3g}"
            with runner.prepare(problem, config, data) as prepared:
                seconds = statistics.median(prepared.time(args.reps, warmup=3))
                stats = statistics_text(prepared.kernel)
        except Exception as err:  # noqa: BLE001 -- a configuration the driver refuses is reported, the rest run
            say(f"  {text}: {type(err).__name__}: {str(err)[:300]}")
            if isinstance(err, vk.DeviceLost):
                runner.reopen()
            continue
        say(f"  {problem.flops / seconds / 1e12:8.4g} T/s  {verdict}  {config.describe()}  [{stats}] "
            f"({time.perf_counter() - start:.1f} s)")
    runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
