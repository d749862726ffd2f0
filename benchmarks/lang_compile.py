"""Benchmark: compile cooperative-matrix GEMMs written in the kernel language, and glslang compiling
the equivalent GLSL, in the same run.

Two pairs: the small tiled GEMM (`gemm` below, benchmarks/ref_gemm.comp line for line), and
examples/language/gemm.py (shared-memory staging, a fused epilogue, helpers; 132 lines with its
host code) against benchmarks/lang_gemm.comp. Both language kernels are compiled for the
nvidia-h200 profile (16x16x16 tiles, subgroups of 32). Times: the first compile (source parse +
AST walk + emission + to_words, cold caches), then re-compiles of new specializations (the
source already parsed), then glslangValidator -V (a process per compile, as a build would run it).
Run inside the test userland (glslang): `PYTHONPATH=src python3 benchmarks/lang_compile.py [--repeat 20]`.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import hydroplane
from hydroplane import coop
from hydroplane.kernels.gemm import GemmProblem, candidate_configs, gemm_plan, parse_dtype
from hydroplane.kernels.gemm import source as gemm_kernels
from hydroplane.lang import Buffer, constexpr, f16, f32, readonly, subgroup_id, workgroup_id, writeonly
from hydroplane.lang.compiler import Func
from hydroplane.spirv.target import Target

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("example_gemm", HERE.parent / "examples" / "language" / "gemm.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)
H200 = Target.profile("nvidia-h200")
_PROBLEM = GemmProblem(4096, 4096, 4096, parse_dtype("f16:f32"), bias=True, activation="relu")
LIBRARY = gemm_plan(_PROBLEM, candidate_configs(_PROBLEM, H200)[3], H200)  # a staged two-stage-capable config


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


def time_compiles(compile_one, repeat: int) -> tuple[float, list[float]]:
    """(first compile in ms, re-compiles of `repeat` fresh specializations in ms); compile_one(i) compiles."""
    start = time.perf_counter()
    compile_one(0)
    first = (time.perf_counter() - start) * 1e3
    again = []
    for i in range(1, repeat + 1):
        start = time.perf_counter()
        compile_one(i)
        again.append((time.perf_counter() - start) * 1e3)
    return first, again


def small_gemm(i: int) -> None:
    gemm.compile(H200, **constexprs(256 + 32 * i, 16, 32, 4))  # a new size each time: no cache hit


def example_gemm(i: int) -> None:
    example.gemm.compile(H200, M_TOTAL=128 * (i + 1), N_TOTAL=128, K_TOTAL=128)


def library_gemm(i: int) -> None:
    """The GEMM library's cooperative-matrix kernel (src/hydroplane/kernels/gemm/source.py), its cache cleared."""
    LIBRARY.kernel._cache.clear()
    LIBRARY.kernel.compile(H200, **LIBRARY.constexprs)


def library_lines() -> int:
    """Source lines of the library kernel and of the module's @func helpers it can call."""
    helpers = [v for v in vars(gemm_kernels).values() if isinstance(v, Func)]
    return len(LIBRARY.kernel.source.lines) + sum(len(h.source.lines) for h in helpers)


def time_glslang(source: str, defines: list[str], repeat: int) -> list[float]:
    glslang = shutil.which("glslangValidator")
    if glslang is None:
        raise SystemExit("glslangValidator not found: run inside the test userland (scripts/userland)")
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([glslang, "-V", "--target-env", "vulkan1.3", *defines, str(HERE / source),
                            "-o", str(Path(tmp) / "out.spv")], check=True, capture_output=True)
            times.append((time.perf_counter() - start) * 1e3)
    return times


def _line(what: str, first: float, again: list[float]) -> str:
    return (f"{what}: first compile {first:.1f} ms; re-compile best {min(again):.1f} ms, "
            f"median {statistics.median(again):.1f} ms ({len(again)} specializations)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.machine()}, Python {platform.python_version()}")
    small = time_compiles(small_gemm, args.repeat)
    big = time_compiles(example_gemm, args.repeat)
    library = time_compiles(library_gemm, args.repeat)
    glsl_small = time_glslang("ref_gemm.comp", ["-DSG=32", "-DSUBGROUPS=4"], args.repeat)
    glsl_big = time_glslang("lang_gemm.comp", ["-DTILE=16", "-DSG=32", "-DWM=2", "-DWN=2", "-DRELU=1",
                                               "-DM_TOTAL=256", "-DN_TOTAL=256", "-DK_TOTAL=256"], args.repeat)
    print(_line(f"language, small GEMM ({len(gemm.kernel.source.lines)} lines)", *small))
    lines = sum(len(k.source.lines) for k in (example.gemm.kernel, example.stage, example.relu, example.tile_product))
    print(_line(f"language, examples/language/gemm.py (kernel + 3 helpers, {lines} lines)", *big))
    print(_line(f"language, the GEMM library's coop kernel (kernel + helpers, {library_lines()} lines)", *library))
    for name, times in (("ref_gemm.comp", glsl_small), ("lang_gemm.comp", glsl_big)):
        print(f"glslangValidator -V {name}: best {min(times):.1f} ms, median {statistics.median(times):.1f} ms "
              f"({len(times)} runs, process start included)")


if __name__ == "__main__":
    main()
