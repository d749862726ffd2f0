"""The H200 GEMM benchmark in ONE run: tune hydroplane's GEMM per dtype, then time it against cuBLAS (torch).

For each dtype (f16:f16, f16:f32, bf16:f32, s8:s32, u8:u32), layout (--layouts, default nn; --layouts-8bit for s8
and u8, default nn and nt: nt stores B as N x K, so that both operands are K-contiguous, the layout cuBLAS's int8
GEMM takes) and size (4096^3 and 8192^3, two size classes of the autotune cache):
  1. tune: the first --max-candidates configurations the device offers (kernels.candidate_configs, best first:
     KHR subgroup-scope tiles, staged or direct, NV2 workgroup scope) are each verified on a smaller problem with
     the same code paths against NumPy (float64), then timed at the size with GPU timestamps after warm-up; the
     fastest verified one wins;
  2. measure the winner: random inputs (uniform in [-1, 1) for floats, small integers for
     s8/u8), --rotate input sets so caches do not flatter, D poisoned before every run and checked after it
     (||D - R|| / ||R|| against a float64 reference computed with torch on the GPU; exact for integers),
     warm-up (0.3 s of back-to-back runs, then a 50 ms burst before each timed run: the H200 drops to its
     345 MHz idle clock after about a second without work), then the median of --reps runs by GPU timestamps;
  3. torch.matmul (cuBLAS) on the same sizes and rotated inputs, timed with CUDA events (f16 for f16:f16 and
     f16:f32, bf16, torch._int_mm for s8; u8 has no cuBLAS path).
It prints a table (TFLOP/s, ratios, the issue's targets, NVIDIA's vk_cooperative_matrix_perf at 4096^3) and writes
to $OUT (when set): gemm_h200.txt (everything printed), gemm_h200.md (the docs/perf.md section) and
gemm_table_h200.json (the tuned winners, for src/hydroplane/ops/gemm_table.json).

On the lent H200 (Vulkan needs the loader and the GLVND libraries unpacked first, docs/vulkan.md):

    for d in build/gldebs/*.deb; do dpkg -x "$d" /; done; ldconfig; \\
    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/gemm_h200.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from h200_check import Tee  # noqa: E402 -- this folder's standalone H200 check: writes to several streams

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.gemm import (  # noqa: E402  # noqa: E402
    GemmConfig,
    GemmProblem,
    candidate_configs,
    parse_dtype,
    random_inputs,
    reference,
    relative_error,
    verification_problem,
)
from hydroplane.ops.gemm import GemmRunner  # noqa: E402

ICD = "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"
DTYPES = ("f16:f16", "f16:f32", "bf16:f32", "s8:s32", "u8:u32")
TARGETS_8192 = {"f16:f32": 250, "f16:f16": 320, "bf16:f32": 250, "s8:s32": 450}  # the issue's, TFLOP/s / TOP/s
NVIDIA_SAMPLE_4096 = {"f16:f16": 260, "f16:f32": 186, "bf16:f32": 165, "s8:s32": 117}  # GLSL, KHR, best tiles


def torch_or_none():
    try:
        import torch  # noqa: PLC0415 -- optional: the baseline and the GPU reference
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def make_inputs(problem: GemmProblem, rng, torch):
    """A, B as NumPy arrays (stored as the layout says) and the float64 reference on the GPU (torch) or None."""
    dtype = str(problem.dtype.a)
    m, n, k = problem.m, problem.n, problem.k
    a_shape = (k, m) if problem.a_transposed else (m, k)
    b_shape = (n, k) if problem.b_transposed else (k, n)
    if torch is None:  # NumPy inputs and reference (slow at 8192: for trying the script without a GPU)
        data = random_inputs(problem, rng)
        return data, reference(problem, data["a"], data["b"], data["c"], data["bias"])
    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 31)))

    def one(shape):
        if dtype in ("s8", "u8"):
            low, high = (-8, 8) if dtype == "s8" else (0, 16)
            t = torch.randint(low, high, shape, generator=gen, device="cuda",
                              dtype=torch.int8 if dtype == "s8" else torch.uint8)
            return t, t.cpu().numpy()
        t = torch.rand(shape, generator=gen, device="cuda") * 2 - 1
        if dtype == "bf16":
            t = t.to(torch.bfloat16)
            return t, t.view(torch.int16).cpu().numpy().view(problem.dtype.a.dtype)
        t = t.to(torch.float16)
        return t, t.cpu().numpy()

    (ta, a), (tb, b) = one(a_shape), one(b_shape)
    op_a = ta.double().T if problem.a_transposed else ta.double()
    op_b = tb.double().T if problem.b_transposed else tb.double()
    exact = (op_a @ op_b) * problem.alpha
    filler = np.zeros((1, 1), problem.dtype.out.dtype)
    return {"a": a, "b": b, "c": filler, "bias": filler[0], "torch": (ta, tb)}, exact


def relative_error_gpu(d: np.ndarray, exact, torch) -> float:
    if isinstance(exact, np.ndarray):
        return relative_error(d, exact)
    got = torch.from_numpy(np.ascontiguousarray(d).astype(np.float64)).cuda()
    norm = float(torch.linalg.norm(exact))
    return float(torch.linalg.norm(got - exact)) / norm if norm else float(torch.linalg.norm(got - exact))


def tune(runner: GemmRunner, dtype, layout: str, size: int, out, limit: int) -> tuple[GemmConfig, float, list]:
    problem = GemmProblem(size, size, size, dtype, layout)
    candidates = [c for c in candidate_configs(problem, runner.target) if c.kind != "scalar"][:limit]  # best first
    data = random_inputs(problem, np.random.default_rng(3))
    tried, best = [], None
    for index, config in enumerate(candidates):
        start = time.perf_counter()
        try:
            small = verification_problem(replace(problem, beta=1.0, bias=True), config)  # the same code paths
            checked = runner.run(small, config, seed=index)
            if not checked.ok:
                print(f"  tune {dtype} {layout} {size} {index + 1}/{len(candidates)} {config.describe()}: WRONG (error "
                      f"{checked.error:.3g}), skipped", file=out)
                continue
            with runner.prepare(problem, config, data) as prepared:
                seconds = statistics.median(prepared.time(5, warmup=2))
        except Exception as err:  # noqa: BLE001 -- a candidate the driver refuses is skipped, and said so
            print(f"  tune {dtype} {layout} {size} {index + 1}/{len(candidates)} {config.describe()}: "
                  f"{type(err).__name__}: {str(err)[:200]}", file=out)
            if isinstance(err, vk.DeviceLost):
                runner.reopen()  # the candidate lost the device: the others run on a new one
            continue
        tflops = problem.flops / seconds / 1e12
        tried.append((config, tflops))
        print(f"  tune {dtype} {layout} {size} {index + 1}/{len(candidates)} {tflops:8.4g} T/s  {config.describe()} "
              f"({time.perf_counter() - start:.1f} s)", file=out, flush=True)
        if best is None or tflops > best[1]:
            best = (config, tflops)
    if best is None:
        raise RuntimeError(f"no configuration verified for {dtype}")
    return best[0], best[1], tried


def measure(runner: GemmRunner, problem: GemmProblem, config: GemmConfig, rotate: int, reps: int, torch,
            rng) -> dict:
    phases: dict[str, float] = {}  # where the benchmark's own time goes (wall seconds), printed with the result
    clock = [time.perf_counter()]

    def mark(name: str) -> None:
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + now - clock[0]
        clock[0] = now

    sets = [make_inputs(problem, rng, torch) for _ in range(rotate)]
    mark("inputs")
    prepared = [runner.prepare(problem, config, data) for data, _ in sets]
    mark("prepare")
    errors, times = [], []
    try:
        for p, (_, exact) in zip(prepared, sets):  # warm-up, each output checked
            p.dispatch()
            if exact is not None:
                errors.append(relative_error_gpu(p.read(), exact, torch))
        prepared[0].time(1)  # sustained runs: the GPU back at its working clock (PreparedGemm.time)
        mark("warm-up")
        for rep in range(reps):
            index = rep % rotate
            prepared[index].time(1, warmup_s=0.05)  # a burst: the checks between runs leave the GPU idle a moment
            mark("bursts")
            prepared[index].repoison()
            mark("poison")
            times.append(prepared[index].timed_run())
            mark("timed runs")
            if sets[index][1] is not None:
                d = prepared[index].read()
                mark("read")
                errors.append(relative_error_gpu(d, sets[index][1], torch))
                mark("check")
    finally:
        for p in prepared:
            p.close()
    seconds = statistics.median(times)
    result = {"seconds": seconds, "tflops": problem.flops / seconds / 1e12,
              "max_error": max(errors) if errors else None,
              "runs": len(times), "min_s": min(times), "max_s": max(times)}
    mark("close")
    result["torch_tflops"] = time_torch(problem, [s[0] for s in sets], reps, torch) if torch else None
    mark("cuBLAS")
    result["phases"] = ", ".join(f"{name} {value:.1f} s" for name, value in phases.items())
    return result


def time_torch(problem: GemmProblem, sets, reps: int, torch) -> float | None:
    dtype = str(problem.dtype.a)
    if dtype == "u8":
        return None

    def call(ta, tb):
        a = ta.T if problem.a_transposed else ta
        b = tb.T if problem.b_transposed else tb
        if dtype != "s8":
            return torch.matmul(a, b)
        return torch._int_mm(a, b)

    pairs = [s["torch"] for s in sets]
    try:
        call(*pairs[0])
    except RuntimeError:  # cuBLASLt's int8 path may want B column-major: give it that (outside the timing)
        pairs = [(ta, tb.t().contiguous().t()) for ta, tb in pairs]
    for ta, tb in pairs:
        call(ta, tb)
    torch.cuda.synchronize()
    times = []
    for rep in range(reps):
        ta, tb = pairs[rep % len(pairs)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(ta, tb)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return problem.flops / statistics.median(times) / 1e12


def measure_one(runner: GemmRunner, dtype, layout: str, size: int, args, out, torch, rng, began: float):
    """Tune and measure one (dtype, layout, size): the table's row, or None (said why)."""
    label = f"{dtype} {layout} {size}"
    if time.perf_counter() - began > args.budget_s:
        print(f"{label}: skipped (time budget)", file=out)
        return None
    try:
        config, tuned, _ = tune(runner, dtype, layout, size, out, args.max_candidates)
    except Exception as err:  # noqa: BLE001
        print(f"{label}: tuning failed: {err}", file=out)
        return None
    print(f"{label}: winner {config.describe()} ({tuned:.4g} T/s)", file=out, flush=True)
    problem = GemmProblem(size, size, size, dtype, layout)
    try:
        result = measure(runner, problem, config, args.rotate, args.reps, torch, rng)
    except Exception as err:  # noqa: BLE001
        print(f"{label}: failed: {type(err).__name__}: {err}", file=out)
        return None
    print(f"{label}: {result['tflops']:.4g} T/s (median of {result['runs']}, {result['min_s'] * 1e3:.3f}-"
          f"{result['max_s'] * 1e3:.3f} ms), max error {result['max_error']}, cuBLAS {result['torch_tflops']} "
          f"[benchmark time: {result['phases']}]", file=out, flush=True)
    return str(dtype), layout, size, problem, config, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--layouts", default="nn", help="layouts measured for 16-bit inputs")
    parser.add_argument("--layouts-8bit", default="nn,nt",
                        help="layouts measured for 8-bit inputs (nt: both operands K-contiguous, cuBLAS's int8 layout)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rotate", type=int, default=3, help="input sets used in turn")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--max-candidates", type=int, default=6, help="configurations tried per dtype and size")
    parser.add_argument("--budget-s", type=float, default=540, help="stop starting new work after this many seconds")
    args = parser.parse_args()
    if "VK_DRIVER_FILES" not in os.environ and Path(ICD).exists():
        os.environ["VK_DRIVER_FILES"] = ICD
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    log = open(out_dir / "gemm_h200.txt", "w") if out_dir else None  # noqa: SIM115
    out = Tee(sys.stdout, log) if log else sys.stdout
    began = time.perf_counter()
    torch = torch_or_none()
    runner = GemmRunner.open(args.device)
    info = runner.executor.info
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = "PYTHONPATH=src python3 benchmarks/gemm_h200.py " + " ".join(sys.argv[1:])
    header = (f"{stamp}; device {info.name}, driver {info.driver_version}; {platform.node()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}; torch {getattr(torch, '__version__', 'absent')}"
              f"{' CUDA ' + torch.version.cuda if torch else ''}\ncommand: {command}")
    print(header, file=out)
    rng = np.random.default_rng(2026)
    rows, table = [], {}
    for name in args.dtypes.split(","):
        dtype = parse_dtype(name)
        for layout in (args.layouts_8bit if dtype.a.width == 8 else args.layouts).split(","):
            for size in (int(s) for s in args.sizes.split(",")):
                row = measure_one(runner, dtype, layout, size, args, out, torch, rng, began)
                if row:
                    rows.append(row)
                    table.setdefault(runner.device_key(), {})[runner.cache_key(row[3])] = {
                        "config": row[4].to_dict(), "seconds": row[5]["seconds"], "tflops": row[5]["tflops"],
                        "size": [size, size, size], "date": stamp}
    runner.close()

    lines = ["| dtype | layout | size | hydroplane (T/s) | check: max rel. error | cuBLAS via torch (T/s) | "
             "hydroplane / cuBLAS | target at 8192 | NVIDIA sample at 4096 | configuration |", "|" + " --- |" * 10]
    for name, layout, size, _, config, r in rows:
        cublas = r["torch_tflops"]
        ratio = f"{r['tflops'] / cublas:.2f}" if cublas else "n/a"
        error = "exact" if r["max_error"] == 0 else (f"{r['max_error']:.2e}" if r["max_error"] is not None else "-")
        target = TARGETS_8192.get(name, "-")
        met = "" if size != 8192 or target == "-" else (" (met)" if r["tflops"] >= target else
                                                        f" (missed by {target - r['tflops']:.0f})")
        lines.append(f"| {name} | {layout} | {size}^3 | {r['tflops']:.4g} | {error} | "
                     f"{f'{cublas:.4g}' if cublas else 'n/a'} | {ratio} | {target}{met} | "
                     f"{NVIDIA_SAMPLE_4096.get(name, '-')} | {config.describe()} |")
    markdown = "\n".join([f"### {info.name}, driver {info.driver_version} ({stamp})", "", f"`{command}`", "",
                          header.splitlines()[0], "", *lines, ""])
    print("\n" + markdown, file=out)
    print(f"total {time.perf_counter() - began:.0f} s", file=out)
    if out_dir:
        (out_dir / "gemm_h200.md").write_text(markdown)
        (out_dir / "gemm_table_h200.json").write_text(json.dumps({"devices": table}, indent=1, sort_keys=True) + "\n")
        log.close()
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
