"""A user's loop of decode attention calls (issue 22: "a loop of decode attention calls runs within 10% of the
kernel's own GPU time"), with and without the overlap of consecutive calls: ops.attention.TWIN_SCRATCH (calls
alternate between two sets of partial-result scratch) and launch.runtime.OVERLAP_BUNDLE_HEADS (a bundled call whose
main pass waits for nothing pending is queued without a barrier before it). Per case and mode: 40 calls to plan and
bundle, then 100 calls `hydroplane.attention(q, k, v, out=o)` back to back, the wall clock to their completion
divided by 100 (`loop`) and the host's time to queue them (`record`), the median of 5 loops, the modes alternating;
the call's GPU time by timestamps (the runtime's timing path: its timestamps between calls keep them apart);
the last call's result compared bit for bit across the modes.

    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/attention_loop.py [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import hydroplane  # noqa: E402
from hydroplane.launch import runtime as runtime_module  # noqa: E402
from hydroplane.ops import attention as attention_module  # noqa: E402

# (name, batch, query heads, queries, KV length, head dim, KV heads)
CASES = [("1x32x1x8192x128 on 8 KV heads", 1, 32, 1, 8192, 128, 8),
         ("ggml d128 h8 kv4096", 1, 8, 1, 4096, 128, 8),
         ("ggml d128 h32/8 kv4096", 1, 32, 1, 4096, 128, 8),
         ("ggml d128 h8 kv16384", 1, 8, 1, 16384, 128, 8),
         ("ggml d256 h32/2 kv10000", 1, 32, 1, 10000, 256, 2)]
TINY = [("tiny 1x8x1x1024x64 on 2 KV heads", 1, 8, 1, 1024, 64, 2)]


def set_mode(overlap: bool) -> None:
    runtime_module.OVERLAP_BUNDLE_HEADS = overlap
    attention_module.TWIN_SCRATCH = overlap
    attention_module._fast.clear()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a small case (lavapipe)")
    parser.add_argument("--warm", type=float, default=4.0, help="seconds of calls first (a fresh GPU's slow start)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rt = runtime_module.runtime(None)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {rt.name}", flush=True)
    for name, b, h, sq, skv, d, hkv in TINY if args.tiny else CASES:
        def arr(*shape):
            return hydroplane.device_array(rng.uniform(-1, 1, shape).astype(np.float16))
        q, k, v, o = arr(b, h, sq, d), arr(b, hkv, skv, d), arr(b, hkv, skv, d), arr(b, h, sq, d)

        def call(q=q, k=k, v=v, o=o):
            hydroplane.attention(q, k, v, out=o)

        set_mode(True)
        end = time.perf_counter() + (0.1 if args.tiny else args.warm)
        while time.perf_counter() < end:
            for _ in range(10):
                call()
            hydroplane.synchronize()
        loops: dict = {True: [], False: []}
        got, kernel = {}, {}
        for _ in range(2 if args.tiny else 5):
            for mode in loops:
                set_mode(mode)
                for _ in range(40):
                    call()
                hydroplane.synchronize()
                t0 = time.perf_counter()
                for _ in range(100):
                    call()
                tq = time.perf_counter()
                hydroplane.synchronize()
                loops[mode].append(((time.perf_counter() - t0) / 100 * 1e6, (tq - t0) / 100 * 1e6))
                got[mode] = o.numpy().copy()
        for mode in loops:
            set_mode(mode)
            for _ in range(5):
                call()
            kernel[mode] = statistics.median(rt.time(call, 20, warmup=2, warmup_s=0.2)) * 1e6
        for mode, found in loops.items():
            loop, record = statistics.median(x[0] for x in found), statistics.median(x[1] for x in found)
            print(f"{name}, overlap {mode}: loop {loop:.1f} us a call (record {record:.1f}), kernel "
                  f"{kernel[mode]:.1f} us: {kernel[mode] / loop:.0%} of the kernel's rate; loops "
                  f"{[round(x[0], 1) for x in found]}", flush=True)
        print(f"  the last results equal across the modes: {np.array_equal(got[True], got[False])}", flush=True)
    set_mode(True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
