"""Quantized matmul on the H200 in ONE run: hydroplane.matmul(x, qw.T) for ggml's block formats, decode and prefill,
beside torch's f16 matmul on the same weights dequantized and hydroplane's own f16 matmul (issue 24).

Cases: decode 1 x K x N and prefill 512 x K x N for (K, N) in (4096, 4096), (4096, 14336), (14336, 4096) (ggml's
MUL_MAT perf shape m=4096 k=14336) in q4_0, q5_0, q8_0, q4_k and q6_k, and Gemma 3's output projection
(640, 262144) in q8_0. Weights are random block bytes with random finite f16 scales (every quant value occurs;
the speed does not depend on the values), uploaded as COPIES quantized DeviceArrays so that a rotation over them
reads at least ROTATE_BYTES (the H200's L2 is 60 MB: each timed run reads weights no earlier run left in L2).

Per case: one checked run (x uniform in [-1, 1) f16; the first CHECK_COLUMNS outputs against float64 NumPy on the
dequantized rows: relative Frobenius error, bound 2e-3), then
- `gpu_us`: GPU timestamps around each run (the device runtime's timing path, after its 0.3 s warm-up), median of
  --reps, the weight copy rotated every run;
- `loop_us`: a user's loop of queued calls: max(--reps, 100) `hydroplane.matmul(dx, dw.T, out=dout)` back to back
  (the copies rotated), the wall clock to the last one's completion divided by the calls, the median of 3 loops
  after 0.3 s of such calls (before 2026-12-06 12:00 UTC: one loop of --reps calls after one call, which counted
  each copy's first calls and the submission's latency); `loop_gc` (JSON only): the garbage collections that ran
  during those loops, {generation: [count, ms]};
- decode: the quantized bytes read per second (`weight_tbs`, TB/s) against the copy bandwidth (torch's
  device-to-device copy of 1 GiB, bytes read + written per second), and `same_us`: GPU timestamps as `gpu_us` but on
  the same weights every run, as the peer's `test-backend-ops perf` measures (weights that fit stay in the L2);
- prefill: TFLOP/s (2 M N K / time), beside hydroplane's f16 matmul at the same shape;
- torch: torch.matmul(x, W.T) in f16 on the weights dequantized by hydroplane's row-gather kernel
  (ops.quant_matmul.quantized_rows, checked against NumPy's dequantizer on its first rows), CUDA events, median of
  --reps, rotated over as many f16 copies as fit ROTATE_BYTES (at least 2).

`--only decode` (or `prefill`) runs only those cases. The table goes to stdout, the records as JSON to --out
(default $OUT/quant_h200.json, else ./quant_h200.json).
On the lent H200 (after unpacking the Vulkan loader .debs, docs/vulkan.md):

    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/quant_h200.py --out $OUT/quant_h200.json

Here (lavapipe, no torch): `PYTHONPATH=src python3 benchmarks/quant_h200.py --tiny --out /tmp/q.json` runs the same
code at shapes a CPU driver finishes in seconds. Budget on the H200: under 3 minutes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import hydroplane  # noqa: E402
from hydroplane.launch.jit import device_array  # noqa: E402
from hydroplane.launch.runtime import runtime  # noqa: E402
from hydroplane.ops import quant_matmul  # noqa: E402
from hydroplane.ops.quant_matmul import quantized_rows, upload  # noqa: E402
from hydroplane.quant import FORMATS, QuantizedArray, from_bytes  # noqa: E402

FORMAT_ORDER = ("q4_0", "q5_0", "q8_0", "q4_k", "q6_k")
SHAPES = [(4096, 4096), (4096, 14336), (14336, 4096)]
GEMMA_OUTPUT = (640, 262144)  # q8_0 only
TINY_SHAPES = [(256, 128), (512, 64)]
TINY_GEMMA = (256, 512)
DECODE_M, PREFILL_M, TINY_PREFILL_M = 1, 512, 40
ROTATE_BYTES = 240 << 20  # 4 x the H200's 60 MB L2
TINY_ROTATE_BYTES = 1 << 20
CHECK_COLUMNS = 128
BOUND = 2e-3


def random_weight(fmt: str, n: int, k: int, rng) -> QuantizedArray:
    """Random ggml blocks with finite f16 scales (uniform in +-0.02, as a trained layer's are small)."""
    f = FORMATS[fmt]
    raw = rng.integers(0, 256, (n * k // f.block, f.bytes), dtype=np.uint8)
    scales = rng.uniform(-0.02, 0.02, (raw.shape[0], 2)).astype(np.float16).view(np.uint8).reshape(-1, 4)
    if fmt == "q6_k":
        raw[:, 208:210] = scales[:, :2]
    elif fmt == "q4_k":
        raw[:, 0:4] = scales
    else:
        raw[:, 0:2] = scales[:, :2]
    return from_bytes(raw, fmt, (n, k))


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def copy_bandwidth(torch) -> float | None:
    """torch's device-to-device copy of 1 GiB: bytes read + written per second (median of 10)."""
    if torch is None:
        return None
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(10):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    del src, dst
    return 2 * (1 << 30) / statistics.median(times)


def gpu_time(rt, run, reps: int) -> float:
    """Median seconds per run by the device runtime's timing path (GPU timestamps on Vulkan)."""
    return statistics.median(rt.time(run, reps, warmup=1, warmup_s=0.0 if rt.is_reference else 0.3))


LOOP_CALLS = 100  # calls a timed loop (at least --reps)
LOOP_WARM_S = 0.3  # seconds of back-to-back calls before the loops (an idle GPU runs at its idle clock)


def loop_time(rt, run, reps: int) -> tuple[float, dict]:
    """A user's loop: max(reps, LOOP_CALLS) queued calls back to back, the wall clock to their completion divided by
    the calls; the median of 3 such loops, after LOOP_WARM_S seconds of calls (every weight copy's first calls, which
    plan its launches, happen there). Also the garbage collections that ran during the 3 loops, by generation:
    {generation: [count, milliseconds]} (a full collection soon after a kernel's compilation, whose objects it walks,
    can take milliseconds of a loop)."""
    end = time.perf_counter() + LOOP_WARM_S
    while time.perf_counter() < end:
        for _ in range(10):
            run()
        rt.synchronize()
    calls = max(reps, LOOP_CALLS)
    loops, collections, began = [], {}, [0.0]

    def watch(phase, info):
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            count, ms = collections.get(info["generation"], (0, 0.0))
            collections[info["generation"]] = [count + 1, ms + (time.perf_counter() - began[0]) * 1e3]

    gc.callbacks.append(watch)
    try:
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                run()
            rt.synchronize()
            loops.append((time.perf_counter() - start) / calls)
    finally:
        gc.callbacks.remove(watch)
    return statistics.median(loops), collections


def torch_time(torch, x, weights, reps: int) -> float:
    """torch.matmul(x, W.T) in f16, CUDA events, the f16 weights rotated, median of reps."""
    for w in weights:
        torch.matmul(x, w.T)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.matmul(x, weights[i % len(weights)].T)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def check(y: np.ndarray, x: np.ndarray, qw: QuantizedArray) -> float:
    """Relative Frobenius error of the first CHECK_COLUMNS outputs against float64 NumPy."""
    cols = min(CHECK_COLUMNS, qw.shape[0])
    want = x.astype(np.float64) @ qw[:cols].dequantize().astype(np.float64).T
    got = y[:, :cols].astype(np.float64)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def run_case(rt, device, torch, fmt: str, m: int, k: int, n: int, rotate: int, reps: int, rng, f16_cache: dict):
    qw = random_weight(fmt, n, k, rng)
    copies = max(1, -(-rotate // qw.nbytes))
    held = [QuantizedArray(qw.blocks, fmt, qw.shape) for _ in range(copies)]  # same bytes, one upload each
    dws = [upload(h, device) for h in held]
    x = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    dx = device_array(x, device)
    dout = device_array(np.full((m, n), -777.0, np.float16), device)
    hydroplane.matmul(dx, dws[0].T, out=dout)
    error = check(dout.numpy(), x, qw)
    turn = [0]

    def call():
        turn[0] += 1
        hydroplane.matmul(dx, dws[turn[0] % copies].T, out=dout)

    gpu = gpu_time(rt, call, reps)
    loop, collections = loop_time(rt, call, reps)
    record = dict(format=fmt, m=m, k=k, n=n, copies=copies, weight_bytes=qw.nbytes, error=error, ok=error <= BOUND,
                  gpu_us=gpu * 1e6, loop_us=loop * 1e6, loop_gc=collections, weight_tbs=qw.nbytes / gpu / 1e12,
                  tflops=2 * m * n * k / gpu / 1e12)
    if m <= 16:  # the peer's method: the same weights every run (those that fit stay in the L2)
        same = gpu_time(rt, lambda: hydroplane.matmul(dx, dws[0].T, out=dout), reps)
        record.update(same_us=same * 1e6, same_tbs=qw.nbytes / same / 1e12)
    if m > 16:  # hydroplane's own f16 matmul at the shape (prefill)
        key = (k, n)
        if key not in f16_cache:
            f16_cache.clear()
            w16 = rng.uniform(-0.05, 0.05, (k, n)).astype(np.float16)  # K x N (the f16 GEMM's nn layout)
            f16_cache[key] = [device_array(w16, device) for _ in range(max(2, -(-rotate // w16.nbytes)))]
        w16s = f16_cache[key]
        turn16 = [0]

        def call16():
            turn16[0] += 1
            hydroplane.matmul(dx, w16s[turn16[0] % len(w16s)], out=dout)

        try:
            t16 = gpu_time(rt, call16, reps)
            record.update(f16_us=t16 * 1e6, f16_tflops=2 * m * n * k / t16 / 1e12)
        except Exception as err:  # noqa: BLE001 - the comparison's failure is recorded, the quantized rows stand
            record.update(f16_error=f"{type(err).__name__}: {err}")
            print(f"  hydroplane's f16 matmul at {m}x{k}x{n} failed: {record['f16_error']}", flush=True)
    if torch is not None:
        w_deq = quantized_rows(qw, np.arange(n), np.float16, device=device)  # dequantized by hydroplane's kernel
        rows = min(8, n)
        assert np.array_equal(w_deq[:rows].astype(np.float32), qw[:rows].dequantize().astype(np.float16).astype(
            np.float32)), "quantized_rows differs from the NumPy dequantizer"
        wt = torch.from_numpy(w_deq).cuda()
        del w_deq
        tw = [wt] + [wt.clone() for _ in range(max(1, min(3, -(-rotate // (n * k * 2))) - 1))]
        tx = torch.from_numpy(x).cuda()
        tt = torch_time(torch, tx, tw, reps)
        record.update(torch_us=tt * 1e6, torch_tflops=2 * m * n * k / tt / 1e12,
                      torch_weight_tbs=n * k * 2 / tt / 1e12)
        del tw, wt
    for d in dws:
        d.release()
    dx.release()
    dout.release()
    return record


def table(records: list, bandwidth: float | None) -> str:
    lines = []
    head = (f"{'format':6} {'M':>4} {'K':>6} {'N':>7} {'copies':>6} {'error':>8} {'gpu us':>9} {'loop us':>9} "
            f"{'TB/s':>6} {'%copy':>6} {'same us':>8} {'TFLOP/s':>8} {'f16 TF':>7} {'torch us':>9} {'torch TF':>8}")
    lines.append(head)
    for r in records:
        pct = f"{100 * r['weight_tbs'] * 1e12 / bandwidth:6.1f}" if bandwidth else f"{'-':>6}"
        f16 = f"{r['f16_tflops']:7.1f}" if "f16_tflops" in r else f"{'-':>7}"
        tus = f"{r['torch_us']:9.1f}" if "torch_us" in r else f"{'-':>9}"
        ttf = f"{r['torch_tflops']:8.1f}" if "torch_tflops" in r else f"{'-':>8}"
        same = f"{r['same_us']:8.1f}" if "same_us" in r else f"{'-':>8}"
        flag = "" if r["ok"] else "  ERROR ABOVE BOUND"
        lines.append(f"{r['format']:6} {r['m']:4} {r['k']:6} {r['n']:7} {r['copies']:6} {r['error']:8.1e} "
                     f"{r['gpu_us']:9.1f} {r['loop_us']:9.1f} {r['weight_tbs']:6.2f} {pct} {same} {r['tflops']:8.2f} "
                     f"{f16} {tus} {ttf}{flag}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="the JSON file (default $OUT/quant_h200.json)")
    parser.add_argument("--tiny", action="store_true", help="small shapes for a CPU driver (lavapipe)")
    parser.add_argument("--device", default="0", help="a Vulkan device number or 'ref'")
    parser.add_argument("--reps", type=int, default=None, help="timed runs per case (default 20; tiny 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tuning", default=None, help="decode plans chosen by benchmarks/quant_sweep.py --best (JSON "
                        "[format, m, n, k, plan] rows) loaded into ops.quant_matmul.UNITS_TUNING first")
    parser.add_argument("--only", default="decode,prefill", help="the cases: decode (M = 1), prefill, or both")
    args = parser.parse_args(argv)
    device = args.device if args.device == "ref" else int(args.device)
    reps = args.reps or (3 if args.tiny else 20)
    out = Path(args.out or Path(os.environ.get("OUT", ".")) / "quant_h200.json")
    rng = np.random.default_rng(args.seed)
    if args.tuning:
        for fmt, m, n, k, plan in json.loads(Path(args.tuning).read_text()):
            quant_matmul.UNITS_TUNING[(fmt, m, n, k)] = plan
    rt = runtime(device)
    torch = None if args.tiny else torch_or_none()
    started = time.perf_counter()
    bandwidth = copy_bandwidth(torch)
    shapes = TINY_SHAPES if args.tiny else SHAPES
    prefill = TINY_PREFILL_M if args.tiny else PREFILL_M
    rotate = TINY_ROTATE_BYTES if args.tiny else ROTATE_BYTES
    rows = [m for m, kind in ((DECODE_M, "decode"), (prefill, "prefill")) if kind in args.only.split(",")]
    cases = [(fmt, m, k, n) for m in rows for k, n in shapes for fmt in FORMAT_ORDER]
    gk, gn = TINY_GEMMA if args.tiny else GEMMA_OUTPUT
    cases += [("q8_0", m, gk, gn) for m in rows]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {rt.name}, Python {platform.python_version()}, "
          f"torch {'-' if torch is None else torch.__version__}; copy bandwidth "
          f"{'-' if bandwidth is None else f'{bandwidth / 1e12:.2f} TB/s'}; reps {reps}", flush=True)
    records, f16_cache = [], {}
    for fmt, m, k, n in cases:
        record = run_case(rt, device, torch, fmt, m, k, n, rotate, reps, rng, f16_cache)
        records.append(record)
        print(f"  {fmt} {m}x{k}x{n}: {record['gpu_us']:.1f} us, error {record['error']:.1e}", flush=True)
    f16_cache.clear()
    text = table(records, bandwidth)
    print(text)
    elapsed = time.perf_counter() - started
    print(f"({elapsed:.1f} s)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(device=rt.name, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                   copy_bandwidth=bandwidth, reps=reps, seconds=elapsed, records=records,
                                   tuning=[[*key, plan] for key, plan in quant_matmul.UNITS_TUNING.items()],
                                   command=" ".join(sys.argv)), indent=1))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
