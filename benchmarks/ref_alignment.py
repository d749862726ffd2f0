"""Benchmark: `hydroplane.matmul(..., device="ref")` at aligned sizes beside odd ones (issue 23).

Each row pairs an aligned shape with its odd neighbour (K = 776 against 777, 1000^3 against 1001^3, the README's
(3, 1000, 777) @ (512, 777).T against the same with K = 776) and times the whole call: the operands' copies
into the executor, every step of the route (the pad copies an odd size adds), the read back. The ratio column is
odd / aligned; the issue asks that it stay under 2. Each call runs once untimed first (the kernels' compilation
is cached per process), then --repeat times; the table shows the median CPU time of the process (the executor is
single-threaded Python and NumPy: CPU time does not grow with the load of a shared machine, as wall time does), the
median wall time beside it, and the route's steps.
Run inside the test userland: `PYTHONPATH=src python3 benchmarks/ref_alignment.py [--repeat 3] [--quick]`
(--quick: the 256 x 256 rows only).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

import numpy as np

import hydroplane
from hydroplane.ops import matmul as matmul_op

# (label, A's shape, B's shape, B given as the transpose of an N x K array)
PAIRS = [
    ("256x256, K = 776 / 777", ((256, 776), (776, 256), False), ((256, 777), (777, 256), False)),
    ("256x256, K = 1000 / 1001", ((256, 1000), (1000, 256), False), ((256, 1001), (1001, 256), False)),
    ("1000^3 / 1001^3", ((1000, 1000), (1000, 1000), False), ((1001, 1001), (1001, 1001), False)),
    ("README: (3, 1000, K) @ (512, K).T, K = 776 / 777", ((3, 1000, 776), (512, 776), True),
     ((3, 1000, 777), (512, 777), True)),
]
QUICK = 2  # the first rows: small enough for a loaded 2-core machine in seconds


def operands(case, rng):
    a_shape, b_shape, transposed = case
    a = rng.standard_normal(a_shape).astype(np.float16)
    b = rng.standard_normal(b_shape).astype(np.float16)
    return a, (b.T if transposed else b)


def route_steps(a, b) -> str:
    """The steps of the GEMM the call runs (its first batch's), as hydroplane.matmul plans them."""
    call = matmul_op.check_call(a, b, device="ref")
    runner = matmul_op.runner_for(call)
    layout = ("n" if a.flags.c_contiguous else "t") + ("n" if b.flags.c_contiguous else "t")
    rows = call.m * (a.size // (call.m * call.k)) if a.ndim > 2 and b.ndim == 2 else call.m
    problem = matmul_op.problem_of(call, layout, m=rows)
    route = matmul_op.gemm_route(problem, runner.tuned_config(problem), runner.target, exact_output=False)
    return " + ".join(step.name for step in route.steps)


def timed(a, b, repeat: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of the call."""
    hydroplane.matmul(a, b, device="ref")  # compiles the route's kernels
    cpu, wall = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        d = hydroplane.matmul(a, b, device="ref")
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    error = np.linalg.norm(d.astype(np.float64) - exact) / np.linalg.norm(exact)
    if not error < 1e-2:
        raise SystemExit(f"wrong result for {a.shape} @ {b.shape}: relative error {error:.3g}")
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the 256 x 256 rows only")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{platform.node()} ({platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}), "
          f"{now}, median of {args.repeat}")
    print("| shapes | aligned: CPU (wall) | odd: CPU (wall) | odd / aligned (CPU) | odd's route |")
    print("| --- | --- | --- | --- | --- |")
    for label, aligned, odd in PAIRS[:QUICK] if args.quick else PAIRS:
        a0, b0 = operands(aligned, rng)
        a1, b1 = operands(odd, rng)
        (c0, w0), (c1, w1) = timed(a0, b0, args.repeat), timed(a1, b1, args.repeat)
        print(f"| {label} | {c0:.3f} s ({w0:.3f} s) | {c1:.3f} s ({w1:.3f} s) | {c1 / c0:.2f} | "
              f"{route_steps(a1, b1)} |", flush=True)


if __name__ == "__main__":
    main()
