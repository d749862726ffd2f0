"""The stream's submission rule in a user's loop (issue 22): `vk.stream.SUBMIT_BEHIND` on and off, alternating.

With the rule on, a short batch is queued at once behind a running submit; off, it is held (as when the GPU has run
dry) until it holds `IDLE_BATCH` commands or the last submit is `IDLE_GAP_S` old, so the GPU idles after a loop's
first call until eight calls are recorded. Per case and mode: 40 calls to plan, then 100 calls back to back after a
`synchronize()`, the wall clock to their completion divided by 100 (`loop`), the host's time to queue them
(`record`) and the submits they made, the median of 5 loops, the modes alternating; the call's GPU time by the
runtime's timestamps (`kernel`); the last call's result compared bit for bit across the modes.

    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 docs/h100-2026-12-06-1546/submit_rule.py [--tiny]   (as run: on the tree of commit f5c80fe)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import hydroplane  # noqa: E402
from hydroplane.launch import runtime as runtime_module  # noqa: E402
from hydroplane.vk import stream as stream_module  # noqa: E402
from quant_h200 import random_weight  # noqa: E402


def cases(rng, tiny: bool) -> dict:
    """name -> (call, its result): loops over weight copies where the weights would fit the L2."""
    def arr(*shape):
        return hydroplane.device_array(rng.uniform(-1, 1, shape).astype(np.float16))

    turn = [0]

    def rotating(x, weights, out):
        def call():
            turn[0] += 1
            hydroplane.matmul(x, weights[turn[0] % len(weights)].T, out=out)
        return call

    def attention(b, h, sq, skv, d, hkv):
        q, k, v, o = arr(b, h, sq, d), arr(b, hkv, skv, d), arr(b, hkv, skv, d), arr(b, h, sq, d)
        return (lambda: hydroplane.attention(q, k, v, out=o)), o

    if tiny:
        x, y = arr(1, 256), arr(1, 128)
        ws = [arr(128, 256) for _ in range(2)]
        qw = [hydroplane.device_array(random_weight("q4_0", 128, 256, rng)) for _ in range(2)]
        yq = arr(1, 128)
        return {"attention decode tiny 1x8x1x1024x64 on 2 KV heads": attention(1, 8, 1, 1024, 64, 2),
                "matmul 1 x 256 -> 128 f16": (rotating(x, ws, y), y),
                "matmul 1 x 256 -> 128 q4_0": (rotating(x, qw, yq), yq)}
    x1, y1 = arr(1, 14336), arr(1, 4096)
    w1 = [arr(4096, 14336) for _ in range(8)]
    x16, y16 = arr(16, 4096), arr(16, 4096)
    w16 = [arr(4096, 4096) for _ in range(16)]
    xq, yq = arr(1, 14336), arr(1, 4096)
    wq = [hydroplane.device_array(random_weight("q4_0", 4096, 14336, rng)) for _ in range(8)]
    return {"attention decode 1x32x1x8192x128 on 8 KV heads": attention(1, 32, 1, 8192, 128, 8),
            "attention ggml d128 h8 kv4096": attention(1, 8, 1, 4096, 128, 8),
            "attention ggml d128 h32/8 kv4096": attention(1, 32, 1, 4096, 128, 8),
            "matmul 1 x 14336 -> 4096 f16, 8 weights": (rotating(x1, w1, y1), y1),
            "matmul 16 x 4096 -> 4096 f16, 16 weights": (rotating(x16, w16, y16), y16),
            "matmul 1 x 14336 -> 4096 q4_0, 8 weights": (rotating(xq, wq, yq), yq)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small cases (lavapipe)")
    parser.add_argument("--warm", type=float, default=4.0, help="seconds of calls first (a fresh GPU's slow start)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rt = runtime_module.runtime(None)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {rt.name}", flush=True)
    table = cases(rng, args.tiny)
    first = next(iter(table.values()))[0]
    end = time.perf_counter() + args.warm
    while time.perf_counter() < end:
        for _ in range(10):
            first()
        hydroplane.synchronize()
    stream = rt.stream
    for name, (call, out) in table.items():
        res, got = {True: [], False: []}, {}
        for _ in range(args.rounds):
            for mode in res:
                stream_module.SUBMIT_BEHIND = mode
                for _ in range(40):
                    call()
                hydroplane.synchronize()
                seq0 = stream.seq
                t0 = time.perf_counter()
                for _ in range(100):
                    call()
                tq = time.perf_counter()
                hydroplane.synchronize()
                t1 = time.perf_counter()
                res[mode].append(((t1 - t0) / 100 * 1e6, (tq - t0) / 100 * 1e6, stream.seq - seq0))
                got[mode] = out.numpy().copy()
        stream_module.SUBMIT_BEHIND = True
        kernel = statistics.median(rt.time(call, 20, warmup=2, warmup_s=0.2)) * 1e6
        for mode, r in res.items():
            loop = statistics.median(x[0] for x in r)
            print(f"{name}, SUBMIT_BEHIND {mode}: loop {loop:.1f} us a call ({kernel / loop:.0%} of the kernel's "
                  f"rate), record {statistics.median(x[1] for x in r):.1f}, submits "
                  f"{statistics.median(x[2] for x in r):.0f}; loops {[round(x[0], 1) for x in r]}", flush=True)
        print(f"  kernel {kernel:.1f} us; results equal across modes: "
              f"{np.array_equal(got[True], got[False], equal_nan=True)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
