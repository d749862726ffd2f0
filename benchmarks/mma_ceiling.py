"""The device's cooperative-matrix ceiling per type, measured by a kernel of the language that does nothing but MMAs.

Each subgroup loads SA A tiles and SB B tiles once (from a small buffer), then runs ITERS rounds of SA x SB
independent `coop.mul_add`s into its SA * SB accumulators (each accumulator's chain one MulAdd per round, SA * SB
chains in flight), and stores the accumulators at the end (so nothing is dead code). No global memory, no shared
memory, no barriers inside the loop: the time is the tensor cores' (and the MulAdd issue's) alone.
Throughput = 2 * TM * TN * TK * SA * SB * ITERS * subgroups / time, by GPU timestamps (median of --reps after 0.3 s of
back-to-back runs). For each type the best of a few (SA, SB, subgroups per workgroup) shapes is the ceiling; the
result is checked against NumPy on small integer inputs (exact in every type), so that a compiler that dropped
MulAdds would be seen.

    PYTHONPATH=src python3 benchmarks/mma_ceiling.py [--device 0] [--types f16:f16,f16:f32,bf16:f32,s8:s32]

On the lent H200 the Vulkan loader must be unpacked first (docs/vulkan.md). Lines go to stdout and, when $OUT is
set, to $OUT/mma_ceiling.txt.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import hydroplane  # noqa: E402
from hydroplane.kernels.gemm import parse_dtype  # noqa: E402
from hydroplane.lang import (  # noqa: E402
    Buffer,
    constexpr,
    coop,
    local_array,
    readonly,
    s32,
    static_range,
    subgroup_id,
    target_subgroup_size,
    workgroup_id,
)

SHAPES = {"f16:f16": (16, 16, 16), "f16:f32": (16, 16, 16), "bf16:f32": (16, 16, 16), "s8:s32": (16, 16, 32),
          "u8:u32": (16, 16, 32)}
LAYOUTS = ((4, 4, 4), (2, 4, 4), (4, 4, 8), (2, 2, 8))  # (SA, SB, subgroups per workgroup)
WORKGROUPS = 132 * 8  # several waves of the H200's 132 multiprocessors


def ceiling_kernel(IN, ACC):  # noqa: N803 -- the dtypes read as the kernel's constants

    @hydroplane.kernel(local_size=lambda c: c["SUBGROUPS"] * c["SG"], name=f"mma_ceiling_{IN}_{ACC}",
                       robust=False)  # measured: the plain pipeline, as the library GEMM runs (its accesses in bounds)
    def mma_ceiling(a: Buffer[IN, readonly], b: Buffer[IN, readonly], d: Buffer[ACC], iters: s32,
                    TM: constexpr, TN: constexpr, TK: constexpr, SA: constexpr, SB: constexpr, SUBGROUPS: constexpr,
                    SG: constexpr = target_subgroup_size()):
        TA = coop.Matrix[IN, TM, TK, coop.A]
        TB = coop.Matrix[IN, TK, TN, coop.B]
        TACC = coop.Matrix[ACC, TM, TN, coop.Accumulator]
        at = local_array(TA, SA)
        bt = local_array(TB, SB)
        acc = local_array(TACC, SA * SB)
        for i in static_range(SA):
            at[i] = coop.load(TA, a, i * TM * TK, TK, coop.RowMajor)
        for j in static_range(SB):
            bt[j] = coop.load(TB, b, j * TK * TN, TN, coop.RowMajor)
        for t in static_range(SA * SB):
            acc[t] = coop.fill(TACC, 0)
        for _ in range(iters):
            for i in static_range(SA):
                for j in static_range(SB):
                    acc[i * SB + j] = coop.mul_add(at[i], bt[j], acc[i * SB + j])
        base = (workgroup_id(0) * SUBGROUPS + subgroup_id()) * SA * SB * TM * TN
        for t in static_range(SA * SB):
            coop.store(acc[t], d, base + t * TM * TN, TN, coop.RowMajor)

    return mma_ceiling


def measure(name: str, layout: tuple[int, int, int], args, say) -> float | None:
    dtype = parse_dtype(name)
    tm, tn, tk = args.tile or SHAPES[name]
    sa, sb, subgroups = layout
    kernel = ceiling_kernel(dtype.a, dtype.acc)
    rng = np.random.default_rng(3)
    # A's rows one-hot (+-1), B in {-1, 0, 1}: every product and partial sum (at most ITERS) is exact in every type,
    # f16 accumulators included, so the check is exact
    low = 0 if name.startswith("u") else -1
    a = np.zeros((sa * tm, tk))
    a[np.arange(sa * tm), rng.integers(0, tk, sa * tm)] = rng.choice([1, -1] if low else [1], sa * tm)
    a = a.astype(dtype.a.dtype)
    b = rng.integers(low, 2, (sb * tk, tn)).astype(dtype.a.dtype)
    groups = max(1, args.workgroups * 4 // subgroups)
    d = np.full(groups * subgroups * sa * sb * tm * tn, -7, dtype.acc.dtype)
    iters = args.iters
    constexprs = dict(TM=tm, TN=tn, TK=tk, SA=sa, SB=sb, SUBGROUPS=subgroups)  # SG: the device's
    with kernel[(groups, 1, 1)].prepare(a.ravel(), b.ravel(), d, iters, device=args.device, **constexprs) as launch:
        launch.dispatch()
        got = launch.read("d").reshape(groups * subgroups, sa, sb, tm, tn)
        expected = np.stack([np.stack([a[i * tm:(i + 1) * tm].astype(np.float64) @
                                       b[j * tk:(j + 1) * tk].astype(np.float64) for j in range(sb)])
                             for i in range(sa)]) * iters
        exact = bool(np.array_equal(got.astype(np.float64), np.broadcast_to(expected, got.shape)))
        times = launch.time(args.reps, warmup=1, warmup_s=0.3)
    seconds = statistics.median(times)
    flops = 2 * tm * tn * tk * sa * sb * iters * groups * subgroups
    rate = flops / seconds / 1e12
    say(f"  {name:8s} SA={sa} SB={sb} subgroups={subgroups}: {rate:8.1f} T/s  ({seconds * 1e6:.0f} us, "
        f"{'exact' if exact else 'WRONG'})")
    return rate if exact else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default="f16:f16,f16:f32,bf16:f32,s8:s32")
    parser.add_argument("--device", type=lambda v: v if v == "ref" else int(v), default=0)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--iters", type=int, default=512, help="rounds of SA x SB MulAdds per subgroup")
    parser.add_argument("--workgroups", type=int, default=WORKGROUPS, help="subgroups in all / 4")
    parser.add_argument("--tile", default=None, help="TMxTNxTK instead of the H200's (lavapipe: 8x8x8)")
    args = parser.parse_args()
    args.tile = tuple(int(v) for v in args.tile.split("x")) if args.tile else None
    out_dir = os.environ.get("OUT")
    log = open(Path(out_dir) / "mma_ceiling.txt", "a") if out_dir else None  # noqa: SIM115

    def say(line: str) -> None:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    say(f"# MMA-only ceiling, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, device {args.device}")
    best = {}
    for name in args.types.split(","):
        rates = []
        for layout in LAYOUTS:
            try:
                rate = measure(name, layout, args, say)
            except Exception as err:  # noqa: BLE001 -- a shape the driver refuses is reported, the rest run
                say(f"  {name} {layout}: {type(err).__name__}: {str(err)[:200]}")
                continue
            if rate:
                rates.append(rate)
        best[name] = max(rates) if rates else None
    say("ceiling: " + ", ".join(f"{k} {v:.1f}" if v else f"{k} -" for k, v in best.items()) + " T/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
