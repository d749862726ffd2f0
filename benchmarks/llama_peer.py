"""hydroplane beside llama.cpp's ggml Vulkan backend at ggml's own MUL_MAT perf shapes, with torch in the same run.

ggml's `test-backend-ops perf` case MUL_MAT type_a=f16 m=4096 k=14336 n (n in 1, 2, 4, 8, 512) is, in hydroplane's
terms, D (n x 4096) = X (n x 14336) @ W.T with the weight W stored 4096 x 14336 (N x K: layout nt): the decode
steps of a few tokens (n <= 8, W's 117 MB streamed once) and a 512-token prefill. ggml feeds f32 activations
(type_b=f32) and writes f32; hydroplane's rows take f16 activations with f32 accumulation and an f32 result
(f16:f32) and, beside them, an f16 result (f16:f16); torch runs torch.matmul(x, W.T) on the same f16 tensors (cuBLAS,
f32 accumulation, f16 result). The peer's numbers (PEER) are issue 25's: one run of llama.cpp's Vulkan backend built
from its sources with cooperative matrix 2 enabled, on the lent H200 (driver 580.159.04), 2026-12-01;
`test-backend-ops perf` repeats the op in one graph on the same weights and divides the graph's time.

Two modes (the tuning sweep in its own device call, the measuring run in another):

- `--sweep`: every shape tuned over many candidates (the skinny kernels, the thin tensor-core K-split blocks for
  n <= 16, and for n = 512 the GEMM's whole-K and K-split ones), each verified on a smaller problem with the same
  code paths, then timed at the size (GPU timestamps, median of 5 after a burst); the winners written as
  llama_peer_table.json (the shipped table's format) under OUT_DIR.
- default: each shape measured with the configuration the library picks (cache, then the shipped table,
  ops/gemm_table.json): inputs uniform in [-1, 1), D poisoned, a checked run against a float64 reference computed by
  torch on the GPU, 0.3 s of back-to-back runs, the median of --reps by GPU timestamps (the sum of the route's
  steps), a last checked run; torch by CUDA events; plus the 8192^3 squares (f16:f32, f16:f16 nn) as docs/perf.md
  has them, to see that nothing regressed.

    PYTHONPATH=src python3 benchmarks/llama_peer.py [--sweep] OUT_DIR

Written into OUT_DIR: llama_peer.txt (everything printed), llama_peer.md (the docs/perf.md table).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from h200_check import Tee  # noqa: E402
from matmul_h200 import ICD, Row, copy_bandwidth, make_inputs, measure, on_device, torch_or_none  # noqa: E402

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.gemm import GemmProblem, parse_dtype  # noqa: E402
from hydroplane.kernels.gemm.plan import GemmConfig  # noqa: E402
from hydroplane.kernels.gemm.route import (  # noqa: E402
    GemvConfig,
    SplitConfig,
    route_candidates,
    route_verification_problem,
    shape_class,
)
from hydroplane.ops.gemm import GemmRunner  # noqa: E402

NS = (1, 2, 4, 8, 512)
M_W, K_W = 4096, 14336  # ggml's m (rows of the weight: our N) and k
PEER = {1: 31.2, 8: 77.0, 512: 261.0}  # llama.cpp Vulkan (coopmat2), us, issue 25 (n = 2, 4 were not recorded)
PEER_TORCH = {1: 45.0, 8: 48.0, 512: 98.0}  # torch in the peer's run (issue 25), for reference
SQUARES = (("f16:f32", 8192), ("f16:f16", 8192))
DOCS_8192 = {"f16:f32": 268.0, "f16:f16": 325.0}  # docs/perf.md's figures, the regression bar


# K-split blocks the library's candidates do not offer for the deep prefill, tried first by --sweep: 128x128 blocks
# (2x2 subgroups of 4x4 tiles: half the invocations of 128x256 with the same work per subgroup, so that two
# workgroups can share a multiprocessor and overlap their barriers), one and two stages, and 256x128
PREFILL_EXTRA = tuple(SplitConfig(tile=(16, 16, 16), subgroups=sg, tiles=(4, 4), k_tiles=kt, stages=st, pad=1,
                                  prefetch=True, split=split)
                      for sg, kt, st, split in (((2, 2), 2, 1, 2), ((2, 2), 2, 1, 4), ((2, 2), 2, 2, 2),
                                                ((2, 2), 2, 2, 4), ((4, 2), 2, 1, 2))) + \
    tuple(SplitConfig(tile=(16, 16, 16), subgroups=sg, tiles=tiles, k_tiles=4, stages=1, pad=1, prefetch=pf,
                      split=split)  # K steps of 64 in one stage: the quantized GEMM's win of 2026-12-07 (docs/quant.md)
          for sg, tiles, pf, split in (((2, 2), (4, 4), True, 2), ((2, 2), (4, 4), True, 4), ((2, 4), (4, 2), True, 2),
                                       ((2, 4), (4, 2), True, 4), ((2, 2), (4, 4), 2, 2)))

# --sweep --squares: the 8192^3 squares' K steps of 64 in one stage (the 128 x 256 block's would exceed 48 KiB)
SQUARE_EXTRA = tuple(GemmConfig(kind="coop", tile=(16, 16, 16), subgroups=sg, tiles=tiles, k_tiles=4, stages=1,
                                pad=1, prefetch=True)
                     for sg, tiles in (((2, 2), (4, 4)), ((2, 4), (4, 2)), ((4, 2), (2, 4))))


def candidates_of(problem: GemmProblem, runner, args) -> list:
    found = [c for c in route_candidates(problem, runner.target) if getattr(c, "kind", "") != "scalar"]
    skinny = [c for c in found if isinstance(c, GemvConfig)][:args.skinny_candidates]
    thin = [c for c in found if isinstance(c, SplitConfig) and c.block[0] <= 16][:args.thin_candidates]
    others = [c for c in found if not isinstance(c, GemvConfig) and c not in thin]
    others = sorted(others, key=lambda c: not isinstance(c, SplitConfig))[:args.candidates] if problem.m > 16 else []
    extra = list(PREFILL_EXTRA) if problem.m > 16 and problem.k >= 8192 else []
    if problem.m == problem.n == problem.k:
        extra = list(SQUARE_EXTRA)
    return list(dict.fromkeys([runner.tuned_config(problem), *skinny, *thin, *extra, *others]))


def sweep(runner, problem, data, args, out, deadline) -> tuple[object, list]:
    tried, best = [], None
    for config in candidates_of(problem, runner, args):
        if time.perf_counter() > deadline and tried:
            print(f"    sweep: budget spent after {len(tried)}", file=out)
            break
        try:
            small = route_verification_problem(replace(problem, beta=1.0, bias=True), config)
            checked = runner.run(small, config, seed=len(tried))
            if not checked.ok:
                print(f"    {config.describe()}: WRONG (error {checked.error:.3g})", file=out)
                continue
            with runner.prepare(problem, config, data) as prepared:
                seconds = statistics.median(prepared.time(5, warmup=1, warmup_s=args.burst_s))
        except Exception as err:  # noqa: BLE001 -- a candidate the driver refuses is skipped, and said so
            print(f"    {config.describe()}: {type(err).__name__}: {str(err)[:200]}", file=out)
            if isinstance(err, vk.DeviceLost):
                raise
            continue
        tried.append((config, seconds))
        print(f"    {seconds * 1e6:9.1f} us {problem.flops / seconds / 1e12:8.2f} T/s  {config.describe()}",
              file=out, flush=True)
        if best is None or seconds < best[1]:
            best = (config, seconds)
    if best is None:
        raise RuntimeError(f"no configuration verified for {problem.describe()}")
    return best[0], tried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=None)
    parser.add_argument("--sweep", action="store_true", help="tune every shape; write the winners")
    parser.add_argument("--dtypes", default="f16:f32,f16:f16")
    parser.add_argument("--ns", default=",".join(map(str, NS)))
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--skinny-candidates", type=int, default=8)
    parser.add_argument("--thin-candidates", type=int, default=8)
    parser.add_argument("--burst-s", type=float, default=0.05)
    parser.add_argument("--warmup-s", type=float, default=0.3)
    parser.add_argument("--budget-s", type=float, default=200)
    parser.add_argument("--no-squares", action="store_true")
    parser.add_argument("--squares", action="store_true", help="--sweep: the 8192^3 squares too")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--tiny", action="store_true", help="256 x 512 weights, no torch, no squares (lavapipe)")
    args = parser.parse_args()
    global M_W, K_W
    if args.tiny:
        M_W, K_W, args.no_squares, args.reps, args.warmup_s, args.burst_s = 256, 512, True, 3, 0.0, 0.0
    if "VK_DRIVER_FILES" not in os.environ and Path(ICD).exists():
        os.environ["VK_DRIVER_FILES"] = ICD
    out_dir = Path(args.out_dir or os.environ.get("OUT") or "llama_peer_out")
    out_dir.mkdir(parents=True, exist_ok=True)
    log = open(out_dir / ("llama_peer_sweep.txt" if args.sweep else "llama_peer.txt"), "w")  # noqa: SIM115
    out = Tee(sys.stdout, log)
    began = time.perf_counter()
    torch = None if args.tiny else torch_or_none()
    runner = GemmRunner.open(args.device)
    info = runner.executor.info
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = "PYTHONPATH=src python3 benchmarks/llama_peer.py " + " ".join(sys.argv[1:])
    header = (f"{stamp}; device {info.name}, driver {info.driver_version}; {platform.node()}, Python "
              f"{platform.python_version()}; torch {getattr(torch, '__version__', 'absent')}\ncommand: {command}")
    print(header, file=out, flush=True)
    rng = np.random.default_rng(2512)
    if torch is not None:
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        start = time.perf_counter()
        while time.perf_counter() - start < 1.0:
            x @ x
        torch.cuda.synchronize()
        del x
    torch_copy, _ = copy_bandwidth(torch, runner, out) if not args.sweep else (None, None)
    problems = [(f"n={n}", GemmProblem(n, M_W, K_W, parse_dtype(d), "nt")) for d in args.dtypes.split(",")
                for n in map(int, filter(None, args.ns.split(",")))]  # --ns "": the squares alone
    if (not args.sweep and not args.no_squares) or (args.sweep and args.squares and not args.tiny):
        problems += [(f"{s}^3", GemmProblem(s, s, s, parse_dtype(d), "nn")) for d, s in SQUARES]
    rows, table = [], {}
    deadline_per = args.budget_s / max(1, len(problems))
    for label, problem in problems:
        print(f"{problem.describe()} [{label}, {shape_class(problem)}]:", file=out, flush=True)
        row = Row(label, problem)
        data = {}
        try:
            arrays, twins, exact = make_inputs(problem, rng, torch)
            data = {name: on_device(runner, array) for name, array in arrays.items()}
            if args.sweep:
                row.config, row.tuned = sweep(runner, problem, data, args, out, time.perf_counter() + deadline_per)
            else:
                row.config = runner.tuned_config(problem)
            measure(runner, row, data, exact, twins, args, torch)
        except Exception as err:  # noqa: BLE001 -- one row's failure is reported; the others run
            row.note = f"failed: {type(err).__name__}: {str(err)[:300]}"
            print(f"  {row.note}", file=out, flush=True)
            if isinstance(err, vk.DeviceLost):
                runner.reopen()
        finally:
            for array in data.values():
                try:
                    array.release()
                except Exception:  # noqa: BLE001
                    pass
        rows.append(row)
        if row.note:
            continue
        table.setdefault(runner.device_key(), {})[runner.cache_key(problem)] = {
            "config": row.config.to_dict(), "seconds": row.seconds, "tflops": row.tflops,
            "size": [problem.m, problem.n, problem.k], "date": stamp}
        torch_us = f"{problem.flops / row.cublas / 1e12 * 1e6:.1f} us" if row.cublas else "n/a"
        print(f"  {row.seconds * 1e6:.1f} us, {row.tflops:.4g} T/s, W {row.b_bytes_per_s / 1e12:.2f} TB/s "
              f"(median of {row.runs}, {row.spread}), errors {row.errors}, {'ok' if row.ok else 'FAILED'}; torch "
              f"{torch_us}; {row.config.describe()}" + (f"; steps: {row.steps}" if row.steps else ""),
              file=out, flush=True)
    runner.close()
    markdown = report(rows, header, command, torch_copy)
    print("\n" + markdown, file=out)
    print(f"total {time.perf_counter() - began:.0f} s", file=out)
    (out_dir / ("llama_peer_sweep.md" if args.sweep else "llama_peer.md")).write_text(markdown)
    if args.sweep:
        (out_dir / "llama_peer_table.json").write_text(json.dumps({"devices": table}, indent=1, sort_keys=True))
    log.close()
    return 0 if rows and all(r.ok for r in rows if not r.note) else 1


def report(rows, header: str, command: str, torch_copy) -> str:
    lines = [f"{header}", "", "| case | dtype | llama.cpp Vulkan (issue 25) | hydroplane | TFLOP/s | weights TB/s | "
             "torch (same run) | hydroplane / peer | max error | configuration |", "| --- " * 10 + "|"]
    for row in rows:
        p = row.problem
        if row.note:
            lines.append(f"| {row.kind} | {p.dtype} | | {row.note} | | | | | | |")
            continue
        peer = PEER.get(p.m) if p.k == 14336 else None
        torch_us = p.flops / row.cublas / 1e12 * 1e6 if row.cublas else None
        ratio = f"{peer / (row.seconds * 1e6):.2f}x faster" if peer and peer > row.seconds * 1e6 else \
            (f"{row.seconds * 1e6 / peer:.2f}x slower" if peer else "")
        bar = f" (docs/perf.md {DOCS_8192[str(p.dtype)]})" if p.k == p.m == 8192 else ""
        lines.append(f"| {row.kind} {p.describe()} | {p.dtype} | {f'{peer} us' if peer else '-'} | "
                     f"{row.seconds * 1e6:.1f} us | {row.tflops:.1f}{bar} | {row.b_bytes_per_s / 1e12:.2f} | "
                     f"{f'{torch_us:.1f} us' if torch_us else 'n/a'} | {ratio} | {max(row.errors):.2g} | "
                     f"{row.config.describe()} |")
    if torch_copy:
        lines.append(f"\ncopy bandwidth (torch, 1 GiB device to device, read + written): {torch_copy / 1e12:.2f} TB/s")
    lines.append(f"\n`{command}`")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
