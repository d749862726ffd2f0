"""The H200 shape benchmark in ONE run: hydroplane's GEMM at the shapes users run, beside cuBLAS (torch.matmul).

Shapes (issue 18): squares 4096^3 and 8192^3; odd sizes 4097x4095x4093 and 3000x1000x777 (padded into aligned
scratch: the pad, GEMM and extract steps are all timed); small 1000^3, 1024^3, 2048^3; decode steps 1, 8 and 64 x
4096 x 4096 (the skinny kernels; B stored K x N (nn) and N x K (nt, PyTorch's Linear weight)); LLM projections
512x12288x4096, 4096x11008x4096, 4096x4096x11008. For f16:f32, f16:f16 and bf16:f32 (layout nn, decode also nt),
and s8:s32 at the decode and LLM shapes (nn and nt, cuBLAS's int8 layout).

For each (dtype, layout, shape class) it first tunes (bf16:f32 takes f16:f32's winners: --tune-like): the current
choice (cache, shipped table or default) and the first --skinny-candidates skinny-kernel and --candidates GEMM
configurations of kernels.gemm.route.route_candidates (the GEMM ones for more than 16 rows of A only), each verified
on a smaller problem with the same code paths against NumPy, then timed at the size (GPU timestamps, median of 5
after a --burst-s burst); the fastest verified one wins. The winner is then measured:
random inputs uniform in [-1, 1) (small integers for s8), D poisoned, one checked run (||D - R|| / ||R|| against a
float64 reference computed by torch on the GPU; exact for integers), at least 0.3 s of back-to-back runs, the median
of --reps runs by GPU timestamps (the sum of a route's steps), D poisoned again and a last run checked. cuBLAS runs
torch.matmul (torch._int_mm for s8) on the same tensors in the same layout, timed by CUDA events (median of
--reps after warm-up). The device's copy bandwidth is torch's device-to-device copy of 1 GiB (bytes read + written
per second), beside hydroplane's copy kernel padding a 4096^2 f16 matrix.

Printed last: the short table (TFLOP/s or TOP/s, hydroplane / cuBLAS, for decode steps also B's bytes per second
against the copy bandwidth). Written into OUT_DIR (the argument, else $OUT, else ./matmul_h200_out):
matmul_h200.txt (everything printed), matmul_h200.md (the docs/perf.md section), matmul_table_h200.json (the
winners by device and problem key, for src/hydroplane/ops/gemm_table.json).

On the lent H200 (Vulkan needs the loader and the GLVND libraries unpacked first, docs/vulkan.md):

    for d in build/gldebs/*.deb; do dpkg -x "$d" /; done; ldconfig; \\
    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/matmul_h200.py "$OUT"

Here (lavapipe, no torch): `PYTHONPATH=src python3 benchmarks/matmul_h200.py --tiny OUT_DIR` runs the same code on
shapes a CPU driver finishes in a minute, with the NumPy reference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from h200_check import Tee  # noqa: E402 -- this folder's standalone H200 check: writes to several streams

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.gemm import GemmProblem, parse_dtype, reference, relative_error  # noqa: E402
from hydroplane.kernels.gemm import copy as copy_kernels  # noqa: E402
from hydroplane.kernels.gemm.route import (  # noqa: E402
    GemvConfig,
    route_candidates,
    route_verification_problem,
    shape_class,
)
from hydroplane.launch.prepared import DeviceArray, prepare  # noqa: E402
from hydroplane.ops.gemm import GemmRunner, tolerance  # noqa: E402

ICD = "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"
SHAPES = [("square", 4096, 4096, 4096), ("square", 8192, 8192, 8192), ("odd", 4097, 4095, 4093),
          ("odd", 3000, 1000, 777), ("small", 1000, 1000, 1000), ("small", 1024, 1024, 1024),
          ("small", 2048, 2048, 2048), ("decode", 1, 4096, 4096), ("decode", 8, 4096, 4096),
          ("decode", 64, 4096, 4096), ("llm", 512, 12288, 4096), ("llm", 4096, 11008, 4096),
          ("llm", 4096, 4096, 11008)]
TINY_SHAPES = [("square", 128, 128, 128), ("odd", 67, 45, 37), ("small", 96, 96, 96), ("decode", 1, 256, 256),
               ("decode", 8, 256, 192), ("decode", 64, 128, 128), ("llm", 32, 192, 128)]
FLOAT_DTYPES = ("f16:f32", "f16:f16", "bf16:f32")
INT8_KINDS = ("decode", "llm")  # the shapes s8:s32 is measured at
TARGETS = {"odd": "0.8 x the aligned neighbour", "small": "0.7 x cuBLAS", "decode": ">= 70% of the copy bandwidth "
           "and >= cuBLAS (M = 1, 8)"}


def torch_or_none():
    try:
        import torch  # noqa: PLC0415 -- optional: the baseline and the GPU reference
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@dataclass
class Row:
    kind: str
    problem: GemmProblem
    config: object = None
    tflops: float = 0.0
    seconds: float = 0.0
    runs: int = 0
    spread: str = ""
    errors: list = field(default_factory=list)
    ok: bool = False
    cublas: float | None = None
    steps: str = ""
    tuned: list = field(default_factory=list)
    note: str = ""

    @property
    def b_bytes_per_s(self) -> float:
        return self.problem.n * self.problem.k * (self.problem.dtype.a.width // 8) / self.seconds if self.seconds \
            else 0.0


def make_inputs(problem: GemmProblem, rng, torch):
    """A, B as NumPy arrays stored as the layout says, their torch twins on the GPU (or None), and the float64
    reference (a torch tensor on the GPU, or a NumPy array)."""
    m, n, k = problem.m, problem.n, problem.k
    a_shape = (k, m) if problem.a_transposed else (m, k)
    b_shape = (n, k) if problem.b_transposed else (k, n)
    name = str(problem.dtype.a)
    if torch is None:
        def one(shape):
            if name in ("s8", "u8"):
                return rng.integers(-8 if name == "s8" else 0, 8, shape).astype(problem.dtype.a.dtype)
            return rng.uniform(-1, 1, shape).astype(np.float32).astype(problem.dtype.a.dtype)
        a, b = one(a_shape), one(b_shape)
        return {"a": a, "b": b}, None, reference(problem, a, b, None, None)
    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(1 << 31)))

    def one(shape):
        if name == "s8":
            t = torch.randint(-8, 8, shape, generator=gen, device="cuda", dtype=torch.int8)
            return t, t.cpu().numpy()
        t = torch.rand(shape, generator=gen, device="cuda") * 2 - 1
        if name == "bf16":
            t = t.to(torch.bfloat16)
            return t, t.view(torch.int16).cpu().numpy().view(problem.dtype.a.dtype)
        t = t.to(torch.float16)
        return t, t.cpu().numpy()

    (ta, a), (tb, b) = one(a_shape), one(b_shape)
    op_a = ta.double().T if problem.a_transposed else ta.double()
    op_b = tb.double().T if problem.b_transposed else tb.double()
    return {"a": a, "b": b}, (ta, tb), op_a @ op_b


def on_device(runner: GemmRunner, array: np.ndarray) -> DeviceArray:
    """The array in a buffer of the runner's executor (bound by every candidate's launches without a copy)."""
    return DeviceArray(runner.device, runner.executor, runner.executor.buffer(array), array.dtype, array.shape)


def error_of(d: np.ndarray, exact, torch) -> float:
    if isinstance(exact, np.ndarray):
        return relative_error(d, exact)
    got = torch.from_numpy(np.ascontiguousarray(d).astype(np.float64)).cuda()
    norm = float(torch.linalg.norm(exact))
    diff = float(torch.linalg.norm(got - exact))
    return diff / norm if norm else diff


def tune(runner: GemmRunner, problem: GemmProblem, data: dict, args, out, deadline: float) -> tuple[object, list]:
    """The fastest verified of the first candidates (the runner's current choice first); [(config, T/s)]."""
    current = runner.tuned_config(problem)
    candidates = [c for c in route_candidates(problem, runner.target) if getattr(c, "kind", "") != "scalar"]
    skinny = [c for c in candidates if isinstance(c, GemvConfig)][:args.skinny_candidates]
    # the tensor cores are tried for skinny problems of more than 16 rows only (a tile is 16 rows)
    others = [c for c in candidates if not isinstance(c, GemvConfig)][:args.candidates if problem.m > 16 else 0]
    tried, best = [], None
    for config in dict.fromkeys([current, *skinny, *others]):
        if time.perf_counter() > deadline and tried:
            print(f"    tune: budget spent, {len(tried)} tried", file=out)
            break
        start = time.perf_counter()
        try:
            small = route_verification_problem(replace(problem, beta=1.0, bias=True), config)
            checked = runner.run(small, config, seed=len(tried))
            if not checked.ok:
                print(f"    tune {config.describe()}: WRONG (error {checked.error:.3g}), skipped", file=out)
                continue
            with runner.prepare(problem, config, data) as prepared:
                seconds = statistics.median(prepared.time(5, warmup=1, warmup_s=args.burst_s))
        except Exception as err:  # noqa: BLE001 -- a candidate the driver refuses is skipped, and said so
            print(f"    tune {config.describe()}: {type(err).__name__}: {str(err)[:200]}", file=out)
            if isinstance(err, vk.DeviceLost):
                raise  # the row's inputs were on the lost device: the row fails, the next ones get a new one
            continue
        tflops = problem.flops / seconds / 1e12
        tried.append((config, tflops))
        print(f"    tune {tflops:9.4g} T/s  {seconds * 1e6:9.1f} us  {config.describe()} "
              f"({time.perf_counter() - start:.1f} s)", file=out, flush=True)
        if best is None or tflops > best[1]:
            best = (config, tflops)
    if best is None:
        raise RuntimeError(f"no configuration verified for {problem.describe()}")
    return best[0], tried


def measure(runner: GemmRunner, row: Row, data: dict, exact, twins, args, torch) -> None:
    """The winner: checked run, warm-up, median of reps by GPU timestamps, a last checked run; then cuBLAS."""
    problem = row.problem
    with runner.prepare(problem, row.config, data) as prepared:
        prepared.repoison()
        prepared.dispatch()
        row.errors.append(error_of(prepared.read(), exact, torch))
        times = prepared.time(args.reps, warmup=1, warmup_s=args.warmup_s)
        if len(prepared.launches) > 1:  # where a route's time goes: each step once more
            row.steps = ", ".join(f"{step.name} {launch.timed_run() * 1e6:.1f} us"
                                  for step, launch in zip(prepared.route.steps, prepared.launches))
        prepared.repoison()
        times.append(prepared.timed_run())
        row.errors.append(error_of(prepared.read(), exact, torch))
    row.seconds = statistics.median(times)
    row.runs = len(times)
    row.tflops = problem.flops / row.seconds / 1e12
    row.spread = f"{min(times) * 1e6:.1f}-{max(times) * 1e6:.1f} us"
    row.ok = all(np.isfinite(e) and e <= tolerance(problem) for e in row.errors) and \
        (not problem.dtype.integer or max(row.errors) == 0)
    if twins is not None:
        row.cublas = time_torch(problem, twins, args.reps, torch)


def time_torch(problem: GemmProblem, twins, reps: int, torch) -> float | None:
    ta, tb = twins
    a = ta.T if problem.a_transposed else ta
    b = tb.T if problem.b_transposed else tb
    integer = str(problem.dtype.a) == "s8"
    if integer and problem.m < 17:
        return None  # torch._int_mm takes M > 16

    def call():  # torch.matmul of f16 or bf16 tensors: cuBLAS with f32 accumulation and a 16-bit result
        return torch._int_mm(a, b) if integer else torch.matmul(a, b)

    try:
        call()
    except RuntimeError:  # cuBLASLt's int8 path may want B column-major: give it that (outside the timing)
        b = b.t().contiguous().t()
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start_warm = time.perf_counter()
    while time.perf_counter() - start_warm < 0.1:
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return problem.flops / statistics.median(times) / 1e12


def copy_bandwidth(torch, runner: GemmRunner, out) -> tuple[float | None, float]:
    """(torch's device-to-device copy, hydroplane's copy kernel padding a matrix) in bytes (read + written) per s."""
    torch_rate = None
    if torch is not None:
        x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        y = torch.empty_like(x)
        for _ in range(5):
            y.copy_(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            y.copy_(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        torch_rate = 2 * x.numel() / statistics.median(times)
        del x, y
    rows, cols = (4097, 4093) if torch is not None else (130, 120)
    padded = (-(-rows // 8) * 8, -(-cols // 8) * 8)
    spec = copy_kernels.copy_kernel(16).compile(runner.target, TX=copy_kernels.COPY_TX, TY=copy_kernels.COPY_TY,
                                                ROWS=copy_kernels.COPY_ROWS)
    src = np.arange(rows * cols, dtype=np.uint16)
    dst = np.zeros(padded[0] * padded[1], np.uint16)
    args = dict(src=src, dst=dst, src_offset=0, src_ld=cols, src_batch=0, rows=rows, cols=cols, dst_offset=0,
                dst_ld=padded[1], dst_batch=0, dst_rows=padded[0], dst_cols=padded[1])
    with prepare(runner.executor, runner._kernel(spec), spec, copy_kernels.copy_grid(*padded), args) as launch:
        seconds = statistics.median(launch.time(20, warmup=2))
        got = launch.read("dst").reshape(padded)
    assert (got[:rows, :cols] == src.reshape(rows, cols)).all() and not got[rows:].any() and not got[:, cols:].any()
    ours = 2 * (rows * cols + padded[0] * padded[1]) / 2 / seconds  # 2 bytes each, read and written
    print(f"copy bandwidth: torch {torch_rate / 1e9 if torch_rate else float('nan'):.0f} GB/s (1 GiB "
          f"device-to-device); hydroplane's copy kernel padding {rows}x{cols} f16: {ours / 1e9:.1f} GB/s "
          f"({seconds * 1e6:.1f} us)", file=out, flush=True)
    return torch_rate, ours


def plan_rows(args) -> list[tuple[str, GemmProblem]]:
    shapes = TINY_SHAPES if args.tiny else SHAPES
    wanted = args.dtypes.split(",")
    found = []
    for name in wanted:
        dtype = parse_dtype(name)
        for kind, m, n, k in shapes:
            if dtype.a.width == 8 and kind not in INT8_KINDS:
                continue
            layouts = ("nn", "nt") if kind == "decode" or dtype.a.width == 8 else ("nn",)
            for layout in layouts:
                found.append((kind, GemmProblem(m, n, k, dtype, layout)))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=None, help="the folder for the full output (else $OUT)")
    parser.add_argument("--tiny", action="store_true", help="small shapes for a CPU driver (lavapipe), no torch")
    parser.add_argument("--dtypes", default=None, help="comma-separated (default f16:f32,f16:f16,bf16:f32,s8:s32; "
                                                       "--tiny: f16:f32,f16:f16,s8:s32)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=3, help="GEMM configurations tuned per shape class (besides "
                                                                  "the current choice)")
    parser.add_argument("--skinny-candidates", type=int, default=5, help="skinny-kernel configurations tuned")
    parser.add_argument("--warmup-s", type=float, default=0.3, help="back-to-back runs before the timed ones")
    parser.add_argument("--burst-s", type=float, default=0.05, help="warm-up before each tuning candidate")
    parser.add_argument("--budget-s", type=float, default=250, help="stop tuning (then measuring) after this")
    parser.add_argument("--tune-like", default="bf16:f32=f16:f32",
                        help="DTYPE=OTHER,...: DTYPE takes OTHER's tuned winners (same kernels; saves device time)")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    args.tune_like = dict(pair.split("=") for pair in args.tune_like.split(",") if pair)
    if args.dtypes is None:
        args.dtypes = "f16:f32,f16:f16,s8:s32" if args.tiny else "f16:f32,f16:f16,bf16:f32,s8:s32"
    if args.tiny:
        args.reps, args.warmup_s, args.burst_s = min(args.reps, 5), 0.0, 0.0
    if "VK_DRIVER_FILES" not in os.environ and Path(ICD).exists():
        os.environ["VK_DRIVER_FILES"] = ICD
    out_dir = Path(args.out_dir or os.environ.get("OUT") or "matmul_h200_out")
    out_dir.mkdir(parents=True, exist_ok=True)
    log = open(out_dir / "matmul_h200.txt", "w")  # noqa: SIM115
    out = Tee(sys.stdout, log)
    began = time.perf_counter()
    torch = None if args.tiny else torch_or_none()
    runner = GemmRunner.open(args.device)
    info = runner.executor.info
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = "PYTHONPATH=src python3 benchmarks/matmul_h200.py " + " ".join(sys.argv[1:])
    header = (f"{stamp}; device {info.name}, driver {info.driver_version}; {platform.node()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}; torch {getattr(torch, '__version__', 'absent')}"
              f"{' CUDA ' + torch.version.cuda if torch else ''}\ncommand: {command}")
    print(header, file=out, flush=True)
    rng = np.random.default_rng(2026)
    if torch is not None:  # the GPU at its working clock before anything is timed
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        start = time.perf_counter()
        while time.perf_counter() - start < 1.0:
            x @ x
        torch.cuda.synchronize()
        del x
    torch_copy, our_copy = copy_bandwidth(torch, runner, out)
    rows: list[Row] = []
    winners: dict = {}  # (dtype, layout, class) -> config: each shape class tuned once
    table: dict = {}
    deadline = began + args.budget_s
    for kind, problem in plan_rows(args):
        row = Row(kind, problem)
        label = f"{problem.describe()} [{kind}, {shape_class(problem)}]"
        print(f"{label}:", file=out, flush=True)
        if time.perf_counter() - began > args.budget_s + 60:
            row.note = "skipped: time budget"
            rows.append(row)
            print(f"  {row.note}", file=out)
            continue
        data = {}
        try:
            arrays, twins, exact = make_inputs(problem, rng, torch)
            data = {name: on_device(runner, array) for name, array in arrays.items()}  # uploaded once per row
            key = (args.tune_like.get(str(problem.dtype), str(problem.dtype)), problem.layout, shape_class(problem))
            if key not in winners:
                winners[key], row.tuned = tune(runner, problem, data, args, out, deadline)
            row.config = winners[key]
            measure(runner, row, data, exact, twins, args, torch)
        except Exception as err:  # noqa: BLE001 -- one row's failure is reported; the others run
            row.note = f"failed: {type(err).__name__}: {str(err)[:300]}"
            print(f"  {row.note}", file=out, flush=True)
            if isinstance(err, vk.DeviceLost):
                runner.reopen()
            rows.append(row)
            continue
        finally:
            for array in data.values():
                try:
                    array.release()
                except Exception:  # noqa: BLE001 -- an array of a lost device is gone with it
                    pass
        rows.append(row)
        table.setdefault(runner.device_key(), {})[runner.cache_key(problem)] = {
            "config": row.config.to_dict(), "seconds": row.seconds, "tflops": row.tflops,
            "size": [problem.m, problem.n, problem.k], "date": stamp}
        cublas = f"{row.cublas:.4g}" if row.cublas else "n/a"
        print(f"  {row.tflops:.4g} T/s (median of {row.runs}, {row.spread}), errors {row.errors}, "
              f"{'ok' if row.ok else 'FAILED'}, cuBLAS {cublas}; {row.config.describe()}"
              + (f"; steps: {row.steps}" if row.steps else "") + (f"; B {row.b_bytes_per_s / 1e9:.1f} GB/s"
                                                                 if kind == "decode" else ""), file=out, flush=True)
    runner.close()
    markdown = report(rows, header, command, torch_copy, our_copy, info)
    print("\n" + markdown, file=out)
    print(f"total {time.perf_counter() - began:.0f} s", file=out)
    (out_dir / "matmul_h200.md").write_text(markdown)
    (out_dir / "matmul_table_h200.json").write_text(json.dumps({"devices": table}, indent=1, sort_keys=True) + "\n")
    log.close()
    return 0 if rows and all(r.ok for r in rows if not r.note) else 1


def report(rows: list[Row], header: str, command: str, torch_copy, our_copy, info) -> str:
    """The short table: every row, its ratio to cuBLAS, for decode rows B's bytes per second."""
    aligned = {(str(r.problem.dtype), r.problem.layout): r.tflops for r in rows
               if r.kind == "square" and r.problem.m == 4096 and r.ok}
    copy_rate = torch_copy or our_copy
    lines = [f"### {info.name}, driver {info.driver_version}", "", f"`{command}`", "", header.splitlines()[0], "",
             f"Copy bandwidth (read + write): torch {torch_copy / 1e9 if torch_copy else float('nan'):.0f} GB/s, "
             f"hydroplane's pad kernel {our_copy / 1e9:.1f} GB/s.", "",
             "| shape | kind | dtype | layout | hydroplane T/s | cuBLAS T/s | ratio | note | check | configuration |",
             "|" + " --- |" * 10]
    for r in rows:
        p = r.problem
        shape = f"{p.m}x{p.n}x{p.k}"
        if r.note:
            lines.append(f"| {shape} | {r.kind} | {p.dtype} | {p.layout} | - | - | - | {r.note} | - | - |")
            continue
        ratio = f"{r.tflops / r.cublas:.2f}" if r.cublas else "n/a"
        note = ""
        if r.kind == "decode":
            note = f"B {r.b_bytes_per_s / 1e9:.0f} GB/s = {r.b_bytes_per_s / copy_rate:.0%} of copy"
        elif r.kind == "odd" and (str(p.dtype), p.layout) in aligned:
            note = f"{r.tflops / aligned[(str(p.dtype), p.layout)]:.0%} of 4096^3"
        if r.steps:
            note += ("; " if note else "") + r.steps
        error = "exact" if max(r.errors) == 0 else f"{max(r.errors):.1e}"
        lines.append(f"| {shape} | {r.kind} | {p.dtype} | {p.layout} | {r.tflops:.4g} | "
                     f"{f'{r.cublas:.4g}' if r.cublas else 'n/a'} | {ratio} | {note} | "
                     f"{error if r.ok else 'FAILED ' + error} | {r.config.describe()} |")
    lines += ["", "Targets (issue 18): " + "; ".join(f"{k}: {v}" for k, v in TARGETS.items()) + ".", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
