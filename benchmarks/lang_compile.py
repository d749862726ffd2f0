"""Benchmark: compile a tiled cooperative-matrix GEMM written in the kernel language, and glslang
compiling the equivalent GLSL (benchmarks/ref_gemm.comp), in the same run.

The language kernel (`gemm` below) is ref_gemm.comp line for line: each subgroup owns 2x2
accumulator tiles, a workgroup SUBGROUPS subgroups; sizes and the tile are constexprs where the
GLSL has specialization constants and defines. Times: the first compile (source parse + AST
walk + emission + to_words, cold caches), then re-compiles of new specializations (the source
already parsed), then glslangValidator -V (a process per compile, as a build would run it).
Run inside the test userland (glslang): `PYTHONPATH=src python3 benchmarks/lang_compile.py [--repeat 20]`.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import hydroplane
from hydroplane import coop
from hydroplane.lang import Buffer, constexpr, f16, f32, readonly, subgroup_id, workgroup_id, writeonly

HERE = Path(__file__).resolve().parent


@hydroplane.kernel(local_size="THREADS")
def gemm(a: Buffer[f16, readonly], b: Buffer[f16, readonly], d: Buffer[f32, writeonly],
         M: constexpr, N: constexpr, K: constexpr, T: constexpr, SUBGROUPS: constexpr, THREADS: constexpr):
    """D (MxN, f32) = A (MxK, f16) * B (KxN, f16); each subgroup owns 2x2 TxT tiles of D."""
    TA = coop.Matrix[f16, T, T, coop.A]
    TB = coop.Matrix[f16, T, T, coop.B]
    ACC = coop.Matrix[f32, T, T, coop.Accumulator]
    row0 = (workgroup_id(1) * SUBGROUPS + subgroup_id()) * 2 * T
    col0 = workgroup_id(0) * 2 * T
    acc00 = coop.fill(ACC, 0.0)
    acc01 = coop.fill(ACC, 0.0)
    acc10 = coop.fill(ACC, 0.0)
    acc11 = coop.fill(ACC, 0.0)
    for k in range(0, K, T):
        a0 = coop.load(TA, a, row0 * K + k, K, coop.RowMajor)
        a1 = coop.load(TA, a, (row0 + T) * K + k, K, coop.RowMajor)
        b0 = coop.load(TB, b, k * N + col0, N, coop.RowMajor)
        b1 = coop.load(TB, b, k * N + col0 + T, N, coop.RowMajor)
        acc00 = coop.mul_add(a0, b0, acc00)
        acc01 = coop.mul_add(a0, b1, acc01)
        acc10 = coop.mul_add(a1, b0, acc10)
        acc11 = coop.mul_add(a1, b1, acc11)
    coop.store(acc00, d, row0 * N + col0, N, coop.RowMajor)
    coop.store(acc01, d, row0 * N + col0 + T, N, coop.RowMajor)
    coop.store(acc10, d, (row0 + T) * N + col0, N, coop.RowMajor)
    coop.store(acc11, d, (row0 + T) * N + col0 + T, N, coop.RowMajor)


def constexprs(size: int, tile: int, subgroup: int, subgroups: int) -> dict:
    return dict(M=size, N=size, K=size, T=tile, SUBGROUPS=subgroups, THREADS=subgroup * subgroups)


def time_language(repeat: int) -> tuple[float, list[float]]:
    """(first compile in ms, re-compiles of fresh specializations in ms)."""
    start = time.perf_counter()
    gemm.compile(**constexprs(256, 16, 32, 4))
    first = (time.perf_counter() - start) * 1e3
    again = []
    for i in range(repeat):
        start = time.perf_counter()
        gemm.compile(**constexprs(512 + 32 * i, 16, 32, 4))  # a new specialization: no cache hit
        again.append((time.perf_counter() - start) * 1e3)
    return first, again


def time_glslang(repeat: int) -> list[float]:
    glslang = shutil.which("glslangValidator")
    if glslang is None:
        raise SystemExit("glslangValidator not found: run inside the test userland (scripts/userland)")
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([glslang, "-V", "--target-env", "vulkan1.3", "-DSG=32", "-DSUBGROUPS=4",
                            str(HERE / "ref_gemm.comp"), "-o", str(Path(tmp) / "gemm.spv")],
                           check=True, capture_output=True)
            times.append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    first, again = time_language(args.repeat)
    glsl = time_glslang(args.repeat)
    lines = len(gemm.kernel.source.lines)
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.machine()}, Python {platform.python_version()}")
    print(f"language GEMM ({lines} lines): first compile {first:.1f} ms; re-compile best {min(again):.1f} ms, "
          f"median {statistics.median(again):.1f} ms ({args.repeat} specializations)")
    print(f"glslangValidator -V ref_gemm.comp: best {min(glsl):.1f} ms, median {statistics.median(glsl):.1f} ms "
          f"({args.repeat} runs, process start included)")


if __name__ == "__main__":
    main()
