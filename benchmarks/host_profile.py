"""Where the host time of a queued call goes (issue 22): per-call queue time and a cProfile of a loop of calls on
DeviceArrays, for a large matmul (the GPU busy: calls batch), a decode GEMV (the GPU often idle: calls submit)
and a decode attention, with the time per call inside each Vulkan entry point the queue calls in the same kind
of loop (the rest is Python's); plus the cost of the Vulkan calls a queued call makes (fence status, a submit) and of
plain Python on this host, so that hosts can be compared.

    PYTHONPATH=src python3 benchmarks/host_profile.py [--tiny] [--top 18]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import hydroplane  # noqa: E402
from hydroplane.launch import runtime as runtime_module  # noqa: E402


def python_speed() -> float:
    """Nanoseconds per iteration of a small pure-Python loop (a host's single-thread speed)."""
    start = time.perf_counter()
    total = 0
    for i in range(200_000):
        total += i & 7
    return (time.perf_counter() - start) / 200_000 * 1e9


def queue_cost(call, calls: int) -> tuple[float, float]:
    """(us per call to queue, us per call including the final synchronize)."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    queued = time.perf_counter()
    hydroplane.synchronize()
    end = time.perf_counter()
    return (queued - start) / calls * 1e6, (end - start) / calls * 1e6


def profile(name: str, call, calls: int, top: int) -> None:
    for _ in range(3):
        call()
    hydroplane.synchronize()
    costs = [queue_cost(call, calls) for _ in range(3)]
    print(f"\n== {name}: queue per call (us) {', '.join(f'{q:.1f}' for q, _ in costs)}; with the synchronize "
          f"{', '.join(f'{t:.1f}' for _, t in costs)}", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    queue_cost(call, calls)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000], flush=True)
    split = driver_split(call, calls)
    if split:
        print("inside Vulkan, us per call: " + ", ".join(f"{k} {v:.2f}" for k, v in split.items()), flush=True)


def driver_split(call, calls: int) -> dict:
    """Microseconds per call inside each Vulkan entry point the queue calls (wrapped in perf_counter timers for one
    loop of `calls` calls after 5 warm-ups), and the whole call's wall time in the same loop."""
    from hydroplane.vk import stream as stream_module  # noqa: PLC0415

    stream = runtime_module.runtime(None).stream
    if stream is None:  # the reference executor
        return {}
    for _ in range(5):
        call()
    hydroplane.synchronize()
    spent: dict = {}
    clock = time.perf_counter

    def timed(name, fn):
        def wrapper(*args):
            start = clock()
            try:
                return fn(*args)
            finally:
                spent[name] = spent.get(name, 0.0) + clock() - start
        return wrapper

    entry = stream_module._ENTRY
    names = {"bind": "vkCmdBindPipeline", "bind_sets": "vkCmdBindDescriptorSets",
             "push_constants": "vkCmdPushConstants", "dispatch": "vkCmdDispatch"}
    saved_entry = {k: getattr(entry, k) for k in names}
    saved_stream = {k: getattr(stream, k) for k in ("_begin", "_end", "_submit", "_status", "_reset", "_barrier")}
    vk_names = {"_begin": "vkBeginCommandBuffer", "_end": "vkEndCommandBuffer", "_submit": "vkQueueSubmit",
                "_status": "vkGetFenceStatus", "_reset": "vkResetFences", "_barrier": "vkCmdPipelineBarrier"}
    try:
        for k, name in names.items():
            setattr(entry, k, timed(name, saved_entry[k]))
        for k, name in vk_names.items():
            setattr(stream, k, timed(name, saved_stream[k]))
        start = clock()
        for _ in range(calls):
            call()
        whole = clock() - start
    finally:
        for k, fn in saved_entry.items():
            setattr(entry, k, fn)
        for k, fn in saved_stream.items():
            setattr(stream, k, fn)
    hydroplane.synchronize()
    row = {name: t / calls * 1e6 for name, t in sorted(spent.items(), key=lambda kv: -kv[1])}
    row["inside Vulkan"] = sum(spent.values()) / calls * 1e6
    row["whole call (timers included)"] = whole / calls * 1e6
    return row


def vulkan_costs(rt) -> None:
    stream = rt.stream
    if stream is None:
        return
    hydroplane.synchronize()
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        stream.busy()
    fence_us = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for _ in range(200):
        stream.barrier()
        stream.flush()
    submit_us = (time.perf_counter() - start) / 200 * 1e6
    hydroplane.synchronize()
    print(f"\nVulkan: stream.busy() (fence status, nothing in flight) {fence_us:.2f} us; an empty batch "
          f"begun and submitted {submit_us:.1f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small shapes (lavapipe, ref)")
    parser.add_argument("--top", type=int, default=18)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rt = runtime_module.runtime(None)
    print(f"device: {rt.name}; host: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; a small Python loop: {python_speed():.1f} ns per iteration; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    rng = np.random.default_rng(0)

    def f16(*shape):
        return hydroplane.device_array(rng.uniform(-1, 1, shape).astype(np.float16))

    big, (n, k), copies = (256, (256, 256), 2) if args.tiny else (4096, (4096, 14336), 8)
    x, w, out = f16(big, big), f16(big, big), f16(big, big)
    profile(f"matmul {big}^3 x @ W.T, out=", lambda: hydroplane.matmul(x, w.T, out=out), args.calls, args.top)
    profile(f"matmul {big}^3 x @ W.T, new result", lambda: hydroplane.matmul(x, w.T), args.calls, args.top)
    xv, ws, ov = f16(1, k), [f16(n, k) for _ in range(copies)], f16(1, n)
    turn = [0]

    def gemv():
        turn[0] += 1
        hydroplane.matmul(xv, ws[turn[0] % copies].T, out=ov)
    profile(f"matmul 1x{n}x{k} (x @ W.T, {copies} W), out=", gemv, args.calls, args.top)
    s, h, d = (256, 4, 64) if args.tiny else (8192, 32, 128)
    q, kk, vv, o = f16(1, h, 1, d), f16(1, h, s, d), f16(1, h, s, d), f16(1, h, 1, d)
    profile(f"attention decode 1x{h}x1x{s}x{d}, out=", lambda: hydroplane.attention(q, kk, vv, out=o), args.calls,
            args.top)
    vulkan_costs(rt)


if __name__ == "__main__":
    main()
