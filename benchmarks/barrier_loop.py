"""A user's loop of decode GEMVs with each kind of in-batch barrier (docs/runtime.md, "Queued execution"): 200 calls
of hydroplane.matmul(x, W.T, out=o) over COPIES weights, into one output (a barrier before every call: write after
write) and into two in turn (a barrier every second call), five rounds switching vk.stream.NARROW_BARRIERS, medians of
the loop's wall clock per call (closed by a synchronize) and of the host's queueing alone; then each call's GPU time
by the runtime's timestamps.

    PYTHONPATH=src python3 benchmarks/barrier_loop.py [M N K COPIES]    (default 1 4096 14336 8)

On the H100 of 2026-12-06 07:58 UTC (docs/perf.md): one output 42.7 us a call narrowed against 44.0 full.
"""

import statistics
import sys
import time

import numpy as np
from user_path import _loop  # benchmarks/ (this script's folder) is on sys.path

import hydroplane
from hydroplane.launch import runtime as R
from hydroplane.vk import stream as sm

rng = np.random.default_rng(0)
m, n, k, copies = (1, 4096, 14336, 8) if len(sys.argv) < 2 else tuple(map(int, sys.argv[1:5]))
x = hydroplane.device_array(rng.uniform(-1, 1, (m, k)).astype(np.float16))
ws = [hydroplane.device_array(rng.uniform(-1, 1, (n, k)).astype(np.float16)) for _ in range(copies)]
outs = [hydroplane.device_array(np.zeros((m, n), np.float16)) for _ in range(2)]
turn = [0]



def call_same():
    w = ws[turn[0] % copies]
    turn[0] += 1
    hydroplane.matmul(x, w.T, out=outs[0])


def call_pingpong():
    w = ws[turn[0] % copies]
    turn[0] += 1
    hydroplane.matmul(x, w.T, out=outs[turn[0] % 2])


def loop(call, calls=200):
    """(microseconds a call of the loop closed by a synchronize, of the queueing alone): user_path.py's loop."""
    whole, queued = _loop(call, hydroplane.synchronize, calls)
    return whole * 1e6, queued * 1e6


modes = {"narrow": True, "full": False}
for name, call in (("same out", call_same), ("ping-pong outs", call_pingpong)):
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        for _ in range(10):
            call()
        hydroplane.synchronize()
    res = {k: [] for k in modes}
    for _ in range(5):
        for mode, on in modes.items():
            sm.NARROW_BARRIERS = on
            res[mode].append(loop(call))
    for mode in modes:
        print(f"{m}x{n}x{k} {copies} W, {name}, {mode}: per call {statistics.median(r[0] for r in res[mode]):.1f} us "
              f"(queue {statistics.median(r[1] for r in res[mode]):.1f}); all {[round(r[0], 1) for r in res[mode]]}",
              flush=True)
    rt = R.runtime(None)
    for mode, on in modes.items():
        sm.NARROW_BARRIERS = on
        us = statistics.median(rt.time(call, 20, warmup=2, warmup_s=0.2)) * 1e6
        print(f"  kernel timing ({mode}): {us:.1f} us", flush=True)
sm.NARROW_BARRIERS = True
