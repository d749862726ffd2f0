"""Benchmark: a tiled f16 -> f32 cooperative-matrix GEMM (M = N = K = --size, default 256), compiled
by glslangValidator, on the reference executor; the result is checked against NumPy.

--kernel registers (benchmarks/ref_gemm.comp): each subgroup (32 lanes) loads its tiles from the
buffers and owns 2x2 tiles of 16x16; a workgroup holds 4 subgroups; the grid is (N/32, M/128).
--kernel shared (benchmarks/ref_gemm_shared.comp): a workgroup of 4 subgroups stages 128x32 of A
and 32x64 of B through shared memory with 16-byte loads and barriers, each subgroup owning 2x4
tiles; the grid is (N/64, M/128) (the shape of the kernel-language GEMMs).
--kernel lang: examples/language/gemm.py (the kernel language: 2x2 subgroups of 2x2 tiles, f16
elements staged one at a time through shared memory, alpha/beta/bias/ReLU epilogue) launched
through the JIT on "ref"; its time is the whole launch (specialization cached, buffers in and out).
Reports the best and median wall time of the dispatch over --repeat runs (the compile and the
kernel preparation are timed apart); --profile prints cProfile's top functions of one more
dispatch. Run inside the test userland (it needs glslangValidator):
`PYTHONPATH=src python3 benchmarks/ref_gemm.py [--size 256] [--kernel registers|shared|lang] [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import importlib.util
import os
import platform
import pstats
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from hydroplane.ref import Executor

HERE = Path(__file__).resolve().parent
SG, SUBGROUPS, TILE = 32, 4, 16
KERNELS = {  # name: (source, D columns per workgroup, D rows per workgroup)
    "registers": ("ref_gemm.comp", 2 * TILE, 2 * TILE * SUBGROUPS),
    "shared": ("ref_gemm_shared.comp", 64, 2 * TILE * SUBGROUPS),
}


def compile_gemm(source: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gemm.spv"
        subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.3", f"-DSG={SG}",
                        f"-DSUBGROUPS={SUBGROUPS}", str(HERE / source), "-o", str(out)],
                       check=True, capture_output=True)
        return out.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="M = N = K (a multiple of 128)")
    parser.add_argument("--kernel", choices=sorted(KERNELS) + ["lang"], default="registers")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="profile one more dispatch with cProfile")
    parser.add_argument("--no-checks", action="store_true",
                        help="Executor(checks=False): no Workgroup race/uninitialised tracking (not for --kernel lang)")
    args = parser.parse_args()
    size = args.size
    if args.kernel == "lang":
        run_language(size, args.repeat, args.profile)
        return
    source, wg_cols, wg_rows = KERNELS[args.kernel]
    t0 = time.perf_counter()
    words = compile_gemm(source)
    t_compile = time.perf_counter() - t0
    rng = np.random.default_rng(2026)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    ex = Executor(subgroup_size=SG, checks=not args.no_checks)
    t0 = time.perf_counter()
    kernel = ex.kernel(words, spec={0: size, 1: size, 2: size})
    t_kernel = time.perf_counter() - t0
    bufs = [ex.buffer(a), ex.buffer(b), ex.buffer(np.full((size, size), np.nan, np.float32))]
    grid = (size // wg_cols, size // wg_rows, 1)
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
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(ex.dispatch, kernel, grid, {0: bufs[0], 1: bufs[1], 2: bufs[2]})
        pstats.Stats(profile).sort_stats("tottime").print_stats(45)
    print(f"ref_gemm {args.kernel} {size}x{size}x{size} f16->f32, subgroup {SG}, grid {grid}"
          f"{', checks off' if args.no_checks else ''}: "
          f"best {min(times):.3f} s, median {statistics.median(times):.3f} s over {args.repeat} dispatches "
          f"(glslang {t_compile:.2f} s, kernel {t_kernel:.3f} s, max error {err:.2e})")
    print_machine()


def print_machine() -> None:
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"NumPy {np.__version__}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC{load}")


def run_language(size: int, repeat: int, profile: bool) -> None:
    """examples/language/gemm.py's kernel through the JIT on the reference executor."""
    spec = importlib.util.spec_from_file_location("language_gemm", HERE.parent / "examples" / "language" / "gemm.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(2026)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    c = rng.standard_normal((size, size)).astype(np.float32)
    bias = rng.standard_normal(size).astype(np.float32)
    alpha, beta = 0.5, 2.0
    want = np.maximum(alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c + bias, 0)

    def grid(meta):
        t = meta["SHAPE"][0]
        return size // (meta["WN"] * 2 * t), size // (meta["WM"] * 2 * t)

    def launch(d):
        return example.gemm[grid](a.ravel(), b.ravel(), c.ravel(), bias, d, alpha, beta, M_TOTAL=size,
                                  N_TOTAL=size, K_TOTAL=size, device="ref")

    times = []
    for _ in range(repeat):
        d = np.full(size * size, np.nan, np.float32)
        t0 = time.perf_counter()
        launch(d)
        times.append(time.perf_counter() - t0)
        err = np.abs(d.reshape(size, size) - want).max()
        if not err <= 1e-3 * np.abs(want).max():
            raise SystemExit(f"wrong result: max error {err}")
    if profile:
        runner = cProfile.Profile()
        runner.runcall(launch, np.full(size * size, np.nan, np.float32))
        pstats.Stats(runner).sort_stats("tottime").print_stats(45)
    print(f"ref_gemm lang {size}x{size}x{size} f16->f32 (examples/language/gemm.py, JIT launch on ref): "
          f"best {min(times):.3f} s, median {statistics.median(times):.3f} s over {repeat} launches "
          f"(the first includes its compile; max error {err:.2e})")
    print_machine()


if __name__ == "__main__":
    main()
