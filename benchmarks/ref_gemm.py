"""Benchmark: a 256x256x256 f16 -> f32 tiled cooperative-matrix GEMM (benchmarks/ref_gemm.comp,
compiled by glslangValidator) on the reference executor; the result is checked against NumPy.

Each subgroup (32 lanes) owns 2x2 tiles of 16x16; a workgroup holds 4 subgroups; the grid is
(N/32, M/128). Reports the best and median wall time of the dispatch over --repeat runs (the
compile and the kernel preparation are timed apart). Run inside the test userland (it needs
glslangValidator): `PYTHONPATH=src python3 benchmarks/ref_gemm.py [--size 256] [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from hydroplane.ref import Executor

HERE = Path(__file__).resolve().parent
SG, SUBGROUPS, TILE = 32, 4, 16


def compile_gemm() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gemm.spv"
        subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.3", f"-DSG={SG}",
                        f"-DSUBGROUPS={SUBGROUPS}", str(HERE / "ref_gemm.comp"), "-o", str(out)],
                       check=True, capture_output=True)
        return out.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="M = N = K (a multiple of 128)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = args.size
    t0 = time.perf_counter()
    words = compile_gemm()
    t_compile = time.perf_counter() - t0
    rng = np.random.default_rng(2026)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    ex = Executor(subgroup_size=SG)
    t0 = time.perf_counter()
    kernel = ex.kernel(words, spec={0: size, 1: size, 2: size})
    t_kernel = time.perf_counter() - t0
    bufs = [ex.buffer(a), ex.buffer(b), ex.buffer(np.full((size, size), np.nan, np.float32))]
    grid = (size // (2 * TILE), size // (2 * TILE * SUBGROUPS), 1)
    times = []
    for _ in range(args.repeat):
        ex.write(bufs[2], np.full((size, size), np.nan, np.float32))
        t0 = time.perf_counter()
        ex.dispatch(kernel, grid, {0: bufs[0], 1: bufs[1], 2: bufs[2]})
        times.append(time.perf_counter() - t0)
        got = ex.read(bufs[2], np.float32, (size, size))
        err = np.abs(got - want).max()
        if not err <= 1e-3 * np.abs(want).max():
            raise SystemExit(f"wrong result: max error {err}")
    print(f"ref_gemm {size}x{size}x{size} f16->f32, subgroup {SG}, grid {grid}: "
          f"best {min(times):.3f} s, median {statistics.median(times):.3f} s over {args.repeat} dispatches "
          f"(glslang {t_compile:.2f} s, kernel {t_kernel:.3f} s, max error {err:.2e})")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"NumPy {np.__version__}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
