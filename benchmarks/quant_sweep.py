"""The quantized kernels' tuning sweep on the H200 (issue 24): the decode GEMV's unit plans (load width LW, lanes per
row LPR, subgroups per workgroup NSG, K split) and the prefill GEMM's block shapes (SM x SN tiles per subgroup, KT
tiles per K step, PAD), each timed by GPU timestamps over weights rotated past the L2 (benchmarks/quant_h200.py's
helpers), each checked against float64 NumPy on its first columns. One JSON line per variant to stdout and --out.

    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/quant_sweep.py --out $OUT/quant_sweep.jsonl
        python3 benchmarks/quant_sweep.py --only prefill --seconds 200 --out $OUT/prefill.jsonl
        python3 benchmarks/quant_sweep.py --only decode --pipe --decode-seconds 240 --best $OUT/best.json
        python3 benchmarks/quant_sweep.py --only decode --gemv-ablate --stats --decode-seconds 205 --out $OUT/ab.jsonl

`--pipe` tries the shipped plan as it is, with XSH and PIPE (kernels/quant/source.py: x converted to f32 into
shared memory once per workgroup; each lane's next unit of blocks loaded while this one is multiplied) each and
both, then the grid with XSH (one row a lane too), then the grid as it is. `--dot` tries the shipped plan without
and with DOT (the integer path, kernels/quant/dot.py: x made into 8-bit levels by one launch, the blocks met in
packed dot products), then the grid with DOT.

The prefill sweep times PREFILL_BLOCKS (the first, {}, is the shipped plan: ops.quant_matmul.gemm_plan) at
PREFILL_SHAPES (Gemma 3 270M's prefill GEMMs with f32 activations, then 512 x 14336 -> 4096); `--prefill-cases
5,6,7` picks and orders them; `--ablate '{"wm": 2, "wn": 4, "sm": 4, "sn": 2, "kt": 2, "pad": 1, "prefetch": true}'`
times that one block whole and with each of the K loop's ablations instead (wrong results, timings only: where the
time goes; docs/perf.md, "2026-12-05, 21:11 UTC"). `--stats` adds each new pipeline's driver statistics.

`--gemv-ablate` times, per decode case, a streaming read of the same bytes (kernels/quant/source.py stream_kernel:
coalesced 16-byte loads, consecutive lanes consecutive chunks: the ceiling), the shipped plan whole and with each of
the unit GEMV's ablations (GEMV_ABLATIONS: "loads" keeps W's loads and folds the words, no decoding; "alu" loads a
lane's first unit once and decodes it for every unit: wrong results, timings only), then COALESCE plans (W's loads
coalesced through shared memory; GEMV_COALESCED, the first also with each ablation), each case its share of
--decode-seconds.

`--variants '[{"lw": 1, "rows": 2, "lpr": 32, "pipe": true}, ...]'` times, per decode case (`--formats q4_0,q8_0`
picks the formats), the shipped plan and then exactly these UNITS_TUNING entries, instead of the grid.

`--blocks '[{"wm": 2, "wn": 4, "sm": 4, "sn": 2, "kt": 2, "pad": 1, "prefetch": 2}, ...]'` times, per prefill case, the
shipped plan and then exactly these blocks, instead of PREFILL_BLOCKS ("prefetch": 2 loads two K steps ahead).

`--tiny` runs a few variants at small shapes (lavapipe). The chosen plans go into ops/quant_matmul.py's tables.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import quant_h200 as bench  # noqa: E402
from gemm_configs import statistics_text  # noqa: E402

import hydroplane  # noqa: E402
from hydroplane.kernels.quant.source import GEMV_ABLATIONS, STREAM_THREADS, stream_kernel  # noqa: E402
from hydroplane.launch.jit import device_array  # noqa: E402
from hydroplane.launch.runtime import runtime  # noqa: E402
from hydroplane.ops import quant_matmul  # noqa: E402
from hydroplane.quant import QuantizedArray  # noqa: E402

DECODE_SHAPES = [(14336, 4096), (4096, 14336)]
# The prefill GEMM's cases (format, M, K, N, x dtype): Gemma 3 270M's prefill of 512 tokens (f32 activations: qkv,
# v, gate_up, o, down), then the benchmark's 512 x 14336 -> 4096
PREFILL_SHAPES = [("q5_0", 512, 640, 4096, "float32"), ("q5_0", 512, 640, 1536, "float32"),
                  ("q4_k", 512, 1024, 640, "float32"), ("q6_k", 512, 2048, 640, "float32"),
                  ("q8_0", 512, 640, 256, "float32"), ("q4_0", 512, 14336, 4096, "float16"),
                  ("q4_k", 512, 14336, 4096, "float16"), ("q6_k", 512, 14336, 4096, "float16"),
                  ("q8_0", 512, 14336, 4096, "float16"), ("q5_0", 512, 14336, 4096, "float16"),
                  ("q8_0", 512, 4096, 14336, "float16")]
GEMMA_DECODE = [("q8_0", 640, 262144), ("q5_0", 640, 4096), ("q6_k", 2048, 640)]  # (format, K, N)
PF = {"kt": 2, "pad": 1, "prefetch": True}
# the GEMM's blocks tried ({}: the shipped rule, gemm_plan): WM x WN subgroups of SM x SN 16x16 tiles
PREFILL_BLOCKS = [{}, dict(wm=2, wn=2, sm=4, sn=4, kt=2, pad=1), dict(wm=2, wn=2, sm=4, sn=4, **PF),
                  dict(wm=2, wn=2, sm=2, sn=4, **PF), dict(wm=2, wn=2, sm=4, sn=2, **PF),
                  dict(wm=2, wn=2, sm=2, sn=2, **PF), dict(wm=2, wn=2, sm=2, sn=2, kt=2, pad=1),
                  dict(wm=2, wn=2, sm=2, sn=2, split=2, **PF), dict(wm=2, wn=2, sm=1, sn=2, **PF),
                  dict(wm=2, wn=2, sm=2, sn=2, kt=4, pad=1, prefetch=True), dict(wm=2, wn=4, sm=4, sn=2, **PF),
                  dict(wm=2, wn=4, sm=2, sn=2, **PF), dict(wm=2, wn=2, sm=4, sn=4, split=2, **PF),
                  dict(wm=2, wn=2, sm=4, sn=4, kt=4, pad=1, prefetch=True, stages=1),
                  # more workgroups a multiprocessor (a K split) and longer K steps at 128 x 128, so that the loads of
                  # one step overlap the multiplications of another (the shipped 128 x 128 block ran 3.1 us a K step
                  # on the H200 at 512 x 14336 -> 4096, one workgroup of 4 subgroups a multiprocessor)
                  dict(wm=2, wn=2, sm=4, sn=4, split=4, **PF), dict(wm=2, wn=2, sm=4, sn=4, kt=4, pad=1, prefetch=True),
                  dict(wm=2, wn=2, sm=4, sn=4, kt=4, pad=1, prefetch=True, split=2),
                  dict(wm=2, wn=4, sm=4, sn=2, split=2, **PF), dict(wm=4, wn=2, sm=2, sn=4, split=2, **PF),
                  dict(wm=2, wn=2, sm=4, sn=4, kt=2, pad=1, split=2)]
ABLATIONS = ("", "no_global", "no_stage", "no_barrier", "no_stage+no_barrier")  # --ablate (KLoop.ABLATE)
LPRS = (8, 16, 32)
# --gemv-ablate's COALESCE plans, in order (q6_k: 4-byte loads, units of 2 blocks; its stage takes 2 subgroups)
GEMV_COALESCED = [dict(rows=2, lpr=32, nsg=4, split=0), dict(rows=1, lpr=32, nsg=4, split=0),
                  dict(rows=2, lpr=8, nsg=4, split=0), dict(rows=2, lpr=32, nsg=2, split=0),
                  dict(rows=1, lpr=32, nsg=2, split=0), dict(rows=1, lpr=32, nsg=4, split=1, xsh=True),
                  dict(rows=2, lpr=16, nsg=4, split=1, xsh=True), dict(rows=1, lpr=8, nsg=2, split=0)]
STREAM_SHAPES = ((1, 0), (4, 0), (4, 1056))  # --gemv-ablate's streaming reads: (UNROLL, workgroups; 0: one pass)
ROWS = (2, 4)


def timed(rt, device, fmt, m, k, n, rotate, reps, rng, apply, variants, out, dtype=np.float16, deadline=None):
    """Each variant (a dict) applied by apply(variant), timed and checked on one weight rotated over copies (x and
    the result in `dtype`); variants after `deadline` (time.monotonic()) are skipped."""
    qw = bench.random_weight(fmt, n, k, rng)
    copies = max(1, -(-rotate // qw.nbytes))
    dws = [quant_matmul.upload(QuantizedArray(qw.blocks, fmt, qw.shape), device) for _ in range(copies)]
    x = rng.uniform(-1, 1, (m, k)).astype(dtype)
    dx = device_array(x, device)
    dout = device_array(np.full((m, n), -777.0, dtype), device)
    turn = [0]

    def call():
        turn[0] += 1
        hydroplane.matmul(dx, dws[turn[0] % copies].T, out=dout)

    found = []
    tiles = quant_matmul.gemm_tiles(rt.executor.target)
    for variant in variants:
        if deadline is not None and time.monotonic() > deadline:
            break
        record = dict(format=fmt, m=m, k=k, n=n, x=np.dtype(dtype).name, **variant)
        found.append(record)
        try:
            apply(variant)
            seen = set(quant_matmul._pipelines.get(rt.executor, {}))
            # a call of DeviceArrays replays the launches its signature's first call recorded (ops.quant_matmul's
            # fast path): without this every variant after the first would time the first one's plan again
            quant_matmul._fast.clear()
            started = time.perf_counter()
            hydroplane.matmul(dx, dws[0].T, out=dout)
            error = bench.check(dout.numpy(), x, qw)
            record["compile_s"] = time.perf_counter() - started
            if getattr(rt.executor, "capture_statistics", False):  # --stats: the new pipelines' registers, spills
                made = quant_matmul._pipelines.get(rt.executor, {})
                record["stats"] = [f"{made[key][0].name}: {statistics_text(made[key][1])}"
                                   for key in made if key not in seen]
            # 0.3 s of back-to-back runs first: a case's first variant follows seconds of weight making, uploads and
            # compiling, after which the H200 idles at 345 MHz (docs/perf.md); 0.05 s did not bring it back for sure
            seconds = np.median(rt.time(call, reps, warmup=1, warmup_s=0.0 if rt.is_reference else 0.3))
            plan = quant_matmul.gemm_plan(m, n, k, tiles, tiles[0] < 16 or rt.is_reference, None, fmt) \
                if m > 16 else None
            record.update(error=error, us=seconds * 1e6, plan=None if plan is None else str(plan),
                          tbs=qw.nbytes / seconds / 1e12, tflops=2 * m * n * k / seconds / 1e12)
        except Exception as err:  # noqa: BLE001 - a variant that fails is recorded, the sweep goes on
            record["failed"] = f"{type(err).__name__}: {err}"
        print(json.dumps(record), flush=True)
        out.write(json.dumps(record) + "\n")
        out.flush()
    for d in dws:
        d.release()
    dx.release()
    dout.release()
    return found


def stream_ceiling(rt, device, fmt, k, n, nbytes, rotate, reps, out, deadline=None):
    """The streaming read of nbytes (stream_kernel), over copies past the L2, at STREAM_SHAPES: one JSON line each."""
    chunks = nbytes // 16
    copies = max(2, -(-rotate // nbytes))
    words = device_array(np.random.default_rng(1).integers(0, 1 << 32, copies * chunks * 4, dtype=np.uint32), device)
    sink = device_array(np.zeros(max(chunks, max(g for _, g in STREAM_SHAPES) * STREAM_THREADS), np.uint32), device)
    for unroll, groups in STREAM_SHAPES:
        if deadline is not None and time.monotonic() > deadline:
            break
        grid = groups or -(-chunks // (STREAM_THREADS * unroll))
        record = dict(format=fmt, m=1, k=k, n=n, variant="stream", unroll=unroll, groups=grid)
        def call(unroll=unroll, grid=grid, turn=[0]):  # noqa: B006 - the call's own counter
            turn[0] += 1
            at = turn[0] % copies * chunks * 4
            quant_matmul._launch(rt, stream_kernel(), {"UNROLL": unroll}, (grid,),
                                 {"w": words[at: at + chunks * 4], "d": sink, "chunks": chunks}, {"w4": "w"})

        try:
            seconds = np.median(rt.time(call, reps, warmup=1, warmup_s=0.0 if rt.is_reference else 0.3))
            record.update(us=seconds * 1e6, tbs=nbytes / seconds / 1e12)
        except Exception as err:  # noqa: BLE001 - recorded, the sweep goes on
            record["failed"] = f"{type(err).__name__}: {err}"
        print(json.dumps(record), flush=True)
        out.write(json.dumps(record) + "\n")
        out.flush()
    words.release()
    sink.release()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--device", default="0")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--only", default="decode,prefill")
    parser.add_argument("--seconds", type=float, default=None, help="stop the prefill sweep after this long")
    parser.add_argument("--prefill-cases", default=None, help="the prefill sweep's cases, as indices into "
                        "PREFILL_SHAPES in the order given (e.g. 5,6,7: the 512 x 14336 -> 4096 cases first)")
    parser.add_argument("--decode-seconds", type=float, default=60.0, help="stop the gemma_decode sweep after this "
                        "(with --pipe: the decode sweep's cases, each an equal share)")
    parser.add_argument("--pipe", action="store_true", help="decode: also each plan with PIPE and XSH (the next "
                        "unit's loads issued before this one is multiplied; x staged in shared memory), one row a "
                        "lane, and the shipped plans first")
    parser.add_argument("--ablate", default=None, help="prefill: instead of PREFILL_BLOCKS, this block (JSON) whole "
                        "and with each of the K loop's ablations (no_global, no_stage, no_barrier, no_stage+no_barrier:"
                        " wrong results, timings only; kernels/gemm/source.py KLoop)")
    parser.add_argument("--dot", action="store_true", help="decode: the shipped plan with and without DOT (the "
                        "integer path: x as 8-bit levels, packed dot products; kernels/quant/dot.py), then the grid "
                        "with DOT")
    parser.add_argument("--gemv-ablate", action="store_true", help="decode: a streaming read of the same bytes, "
                        "the shipped plan whole and with each of the unit GEMV's ablations, then COALESCE plans "
                        "(the module docstring)")
    parser.add_argument("--variants", default=None, help="decode: after the shipped plan, exactly these unit plans "
                        "(a JSON list of UNITS_TUNING entries, e.g. '[{\"lw\": 1, \"rows\": 2, \"lpr\": 32, "
                        "\"pipe\": true}]'), instead of the grid")
    parser.add_argument("--prefill-m", type=int, default=None, help="prefill: the cases' M instead of 512 (M <= 16: "
                        "the blocks' entries route the decode through the GEMM; {} stays the shipped GEMV)")
    parser.add_argument("--blocks", default=None, help="prefill: after the shipped plan, exactly these blocks "
                        "(a JSON list of GEMM_TUNING entries) instead of PREFILL_BLOCKS")
    parser.add_argument("--x-dtype", default=None, choices=["float16", "float32"],
                        help="prefill: the cases' activations in this dtype instead of each case's own")
    parser.add_argument("--formats", default=None, help="decode: only these formats (comma-separated)")
    parser.add_argument("--best", default=None, help="write the fastest decode plan of each case here (JSON), for "
                        "quant_h200.py --tuning")
    parser.add_argument("--stats", action="store_true", help="record each variant's new pipelines' driver "
                        "statistics (registers, local and shared memory: VK_KHR_pipeline_executable_properties)")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))  # the sweeps asked for, by name ("decode" is not "gemma_decode")
    device = args.device if args.device == "ref" else int(args.device)
    reps = args.reps or (2 if args.tiny else 10)
    rt = runtime(device)
    if args.stats and not rt.is_reference:
        rt.executor.capture_statistics = True
    rng = np.random.default_rng(0)
    path = Path(args.out or Path(os.environ.get("OUT", ".")) / "quant_sweep.jsonl")
    torch = None if args.tiny or "decode" not in only else bench.torch_or_none()
    bandwidth = bench.copy_bandwidth(torch)
    best: list = []
    rotate = bench.TINY_ROTATE_BYTES if args.tiny else bench.ROTATE_BYTES // 2  # 2 x the L2
    with path.open("w") as out:
        out.write(json.dumps(dict(device=rt.name, copy_bandwidth=bandwidth,
                                  date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))) + "\n")
        print(rt.name, "copy bandwidth", bandwidth, flush=True)
        if "decode" in only:
            shapes = [(512, 64)] if args.tiny else DECODE_SHAPES
            shipped = dict(quant_matmul.UNITS_TUNING)
            pipes = (False, True) if args.pipe else (False,)
            sweep_seconds = args.decode_seconds if args.pipe or args.dot or args.gemv_ablate or args.variants \
                else None
            shared = rt.executor.target.shared_memory
            for k, n in shapes:
                for fmt in bench.FORMAT_ORDER:
                    if args.formats and fmt not in args.formats.split(","):
                        continue
                    # --pipe: each case gets its share of --decode-seconds
                    deadline = time.monotonic() + sweep_seconds / len(shapes) / len(bench.FORMAT_ORDER) \
                        if sweep_seconds else None
                    variants, plans = [], set()
                    # --pipe: the shipped plan first, as it is and with XSH (x in shared memory) and PIPE each and
                    # both, then the grid with XSH (more rows a lane first; one row too), then without
                    candidates = [dict(shipped.get((fmt, 1, n, k), {}), pipe=p, xsh=x)
                                  for p, x in ((False, False), (False, True), (True, False), (True, True))] \
                        if args.pipe else []
                    if args.gemv_ablate:  # the shipped plan whole and ablated, then COALESCE plans
                        here = dict(shipped.get((fmt, 1, n, k), {}))
                        coalesced = [dict(v, coalesce=True, **({"lw": 1} if fmt == "q6_k" else {}))
                                     for v in GEMV_COALESCED[:2 if args.tiny else None]]
                        candidates = [here, *(dict(here, ablate=a) for a in GEMV_ABLATIONS[1:])]
                        fits = [v for v in coalesced if quant_matmul.units_plan(
                            fmt, 1, n, k, rt.executor.target.subgroup_size, rt.is_reference, v, shared).coalesce]
                        candidates += fits[:1] + [dict(fits[0], ablate=a) for a in GEMV_ABLATIONS[1:] if fits]
                        candidates += fits[1:] + [dict(here, coalesce=True)]
                        pipes = ()
                        qw_bytes = n * k // quant_matmul.KERNEL_FORMATS[fmt][0] * quant_matmul.KERNEL_FORMATS[fmt][1]
                        stream_ceiling(rt, device, fmt, k, n, qw_bytes, rotate, reps, out, deadline)
                    if args.dot:  # the shipped plan as it is and with DOT, then the grid with DOT
                        candidates = [dict(shipped.get((fmt, 1, n, k), {}), dot=False),
                                      dict(shipped.get((fmt, 1, n, k), {}), dot=True, xsh=False)]
                        candidates += [dict(rows=rows, lpr=lpr, nsg=4, split=split, dot=True)
                                       for rows in (2, 4, 1) for lpr in ((4, 8) if args.tiny else LPRS)
                                       for split in (1, 0)]
                        pipes = ()
                    if args.variants:  # the shipped plan, then exactly the plans given
                        candidates = [dict(shipped.get((fmt, 1, n, k), {})), *json.loads(args.variants)]
                        pipes = ()
                    for staged in pipes[::-1]:
                        for rows in ((4, 2, 1) if args.pipe else ROWS):
                            for lpr in ((4, 8) if args.tiny else LPRS):
                                for split in (1, 0):
                                    v = dict(rows=rows, lpr=lpr, nsg=4, split=split)
                                    candidates.append(dict(v, xsh=True) if staged else v)
                    for v in candidates:  # each plan once (the lane GEMV's plan where an entry asks for it)
                        sg = rt.executor.target.subgroup_size
                        plan = quant_matmul.lanes_plan(fmt, 1, n, k, v) or \
                            quant_matmul.units_plan(fmt, 1, n, k, sg, rt.is_reference, v, shared)
                        if plan is not None and plan not in plans:
                            plans.add(plan)
                            variants.append(v)

                    def apply(v, fmt=fmt, k=k, n=n):
                        quant_matmul.UNITS_TUNING.clear()
                        quant_matmul.UNITS_TUNING[(fmt, 1, n, k)] = v

                    found = timed(rt, device, fmt, 1, k, n, rotate, reps, rng, apply, variants, out,
                                  deadline=deadline)
                    done = [i for i, r in enumerate(found) if "us" in r and r["error"] <= bench.BOUND]
                    if done:
                        fastest = min(done, key=lambda i: found[i]["us"])
                        best.append([fmt, 1, n, k, variants[fastest]])
                        if args.best:  # after every case: a run cut off by its time limit keeps what it found
                            Path(args.best).write_text(json.dumps(best))
            quant_matmul.UNITS_TUNING.clear()
        if "prefill" in only:
            deadline = time.monotonic() + args.seconds if args.seconds else None
            shapes = PREFILL_SHAPES[:2] if args.tiny else PREFILL_SHAPES
            if args.prefill_cases:
                shapes = [shapes[int(i)] for i in args.prefill_cases.split(",")]
            blocks = PREFILL_BLOCKS[1:4] if args.tiny else PREFILL_BLOCKS
            if args.blocks:
                blocks = [{}, *json.loads(args.blocks)]
            if args.ablate:
                chosen = json.loads(args.ablate)
                blocks = [dict(chosen, ablate=a) if a else chosen for a in ABLATIONS]
            table = quant_matmul.GEMM_TUNING
            shipped_blocks = dict(table)

            for fmt, m, k, n, dtype in shapes:
                if args.tiny:
                    m, k, n = 40, 512, 64
                if args.prefill_m:
                    m = args.prefill_m
                if args.x_dtype:
                    dtype = args.x_dtype

                def apply_gemm(v, m=m, n=n, k=k, fmt=fmt):
                    table.clear()
                    table.update(shipped_blocks)
                    if v:  # {}: the shipped plan (GEMM_TUNING's entry, else the rule)
                        table[(fmt, m, n, k)] = v

                timed(rt, device, fmt, m, k, n, rotate, max(3, reps // 3), rng, apply_gemm, blocks, out,
                      np.dtype(dtype), deadline)
            table.clear()
            table.update(shipped_blocks)
        if "gemma_decode" in only:  # the model's decode GEMVs (f32 activations), plans by rows, lanes, load width
            deadline = time.monotonic() + args.decode_seconds
            for fmt, k, n in GEMMA_DECODE:
                if args.formats and fmt not in args.formats.split(","):
                    continue
                variants = []
                plans = set()
                # the lane GEMV first (q8_0, q4_0, q5_0: 4 lanes a block, a subgroup's load reading 8 consecutive
                # blocks of a row), then the unit GEMV's plans, with PIPE where a unit is loaded whole
                if fmt in quant_matmul.LANE_FORMATS:
                    for rows in (1, 2, 4):
                        for unroll in (1, 2, 4):
                            for nsg in (2, 4):
                                v = dict(lanes=True, rows=rows, unroll=unroll, nsg=nsg)
                                plan = quant_matmul.lanes_plan(fmt, 1, n, k, v)
                                if plan is not None and plan not in plans:
                                    plans.add(plan)
                                    variants.append(v)
                for lw in (1, 2, 4):
                    for rows in (1, 2, 4):
                        for lpr in (1, 2, 4, 8):
                            for nsg in (2, 4):
                                for pipe in (False, True):
                                    v = dict(lw=lw, rows=rows, lpr=lpr, nsg=nsg, pipe=pipe)
                                    plan = quant_matmul.units_plan(fmt, 1, n, k, rt.executor.target.subgroup_size,
                                                                   rt.is_reference, v)
                                    if plan is not None and plan.lw == lw and plan not in plans:
                                        plans.add(plan)
                                        variants.append(v)

                def apply_units(v, fmt=fmt, k=k, n=n):
                    quant_matmul.UNITS_TUNING.clear()
                    quant_matmul.UNITS_TUNING[(fmt, 1, n, k)] = v

                timed(rt, device, fmt, 1, k, n, rotate, reps, rng, apply_units, [{}, *variants], out,
                      np.dtype(np.float32), deadline)
            quant_matmul.UNITS_TUNING.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
