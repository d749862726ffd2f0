"""The host's own cost of a queued call (issue 22), measured where no GPU is: the CPU time of the calling thread
(`time.thread_time`) per call, so that a CPU driver (lavapipe) running the kernels on other threads, or a GPU that
is busy, does not count. Each case: 5 warm-up calls, then the best of 3 loops of N calls (each loop closed by a
synchronize outside the timing). Cases: hydroplane.matmul on DeviceArrays (with out= and a new result each call, a
decode GEMV rotating over 4 weights), a decode attention, nn ops (rms_norm, add, gated, rotary_embedding,
embedding, sample greedy and drawn), a quantized GEMV and GEMM, a user's kernel[grid], and a prefill step of a
Gemma-3-shaped model of 18 small blocks (tests/models/tiny.py; without the gguf package,
tools/make_benchmark_gguf.py's Gemma 3 270M): as calls (`step(ids, last_only=False)`: every launch queued by the
host) and as the replay of its bucket's captured graph.

    PYTHONPATH=src python3 benchmarks/host_cost.py [--device 0|ref] [--calls 200] [--json OUT]

On a GPU host this is the floor of what a call adds; benchmarks/user_path.py measures the loop against the GPU.

`--wall` reports beside it what a user's loop sees: the wall clock of each call (time.perf_counter around it, the
loop closed by hydroplane.synchronize outside the timing; same warm-ups and best of 3 loops), its mean, median and
largest, the submits per call (the stream's batches flushed inside the loop), the garbage collections inside the
loops, and the thread CPU time of the same loop, so wall - CPU is the time the host spent off this thread's CPU
(the driver's threads, the kernel scheduler) or waiting in a driver call; plus user_path's protocol (`record`): a loop
of 100 calls after ONE warm-up call, over 8 weights the out= call has not seen (each weight's first call binds its
arrays and makes its descriptor sets inside the loop).

    PYTHONPATH=src python3 benchmarks/host_cost.py --device 0 --calls 200 --wall
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "models"))

import hydroplane  # noqa: E402
from hydroplane import nn  # noqa: E402
from hydroplane.lang import Buffer, f32, global_id, readonly, s32  # noqa: E402
from hydroplane.quant import quantize  # noqa: E402


@hydroplane.kernel(local_size=64)
def scaled_add(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


def cost(call, calls: int) -> float:
    """Microseconds of this thread's CPU time per call (best of 3 loops)."""
    for _ in range(5):
        call()
    hydroplane.synchronize()
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for _ in range(calls):
            call()
        best = min(best, (time.thread_time() - start) / calls * 1e6)
        hydroplane.synchronize()
    return best


_gc_time = [0.0, 0, 0.0]  # seconds in collections, collections, the start of the one running


def _gc_callback(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_time[2] = time.perf_counter()
    else:
        _gc_time[0] += time.perf_counter() - _gc_time[2]
        _gc_time[1] += 1


def _submitted() -> int:
    """Batches the default device's stream has flushed so far (0 on the reference executor)."""
    from hydroplane.launch.runtime import runtime  # noqa: PLC0415 - the benchmark's own import, after set_device

    stream = runtime(None).stream
    return 0 if stream is None else stream.seq - 1  # seq: the batch being recorded, else the next


def wall(call, calls: int, warmups: int = 5, rounds: int = 3) -> dict:
    """A user's loop of `calls` calls timed call by call with the wall clock (the loop closed by a synchronize
    outside the timing), after `warmups` calls: the round of the least wall time per call, with the thread CPU time,
    submits and garbage collections of that round."""
    for _ in range(warmups):
        call()
    hydroplane.synchronize()
    best: dict | None = None
    clock = time.perf_counter
    for _ in range(rounds):
        times = [0.0] * calls
        submits, collected, collections = _submitted(), _gc_time[0], _gc_time[1]
        cpu = time.thread_time()
        for i in range(calls):
            start = clock()
            call()
            times[i] = clock() - start
        cpu = time.thread_time() - cpu
        row = {"wall_us": sum(times) / calls * 1e6, "median_us": statistics.median(times) * 1e6,
               "max_us": max(times) * 1e6, "cpu_us": cpu / calls * 1e6,
               "submits_per_call": (_submitted() - submits) / calls, "gc_collections": _gc_time[1] - collections,
               "gc_us_per_call": (_gc_time[0] - collected) / calls * 1e6}
        hydroplane.synchronize()
        if best is None or row["wall_us"] < best["wall_us"]:
            best = row
    assert best is not None
    return best


def first_places_loop(make, calls: int = 100, rounds: int = 3) -> dict:
    """user_path's protocol: `call = make()` (new arrays each round), one warm-up call and a synchronize, then
    `calls` calls timed by the wall clock around the whole loop (its `record`) and by this thread's CPU time."""
    best: dict | None = None
    for _ in range(rounds):
        call = make()
        call()
        hydroplane.synchronize()
        submits, cpu, start = _submitted(), time.thread_time(), time.perf_counter()
        for _ in range(calls):
            call()
        row = {"wall_us": (time.perf_counter() - start) / calls * 1e6,
               "cpu_us": (time.thread_time() - cpu) / calls * 1e6, "submits_per_call": (_submitted() - submits) / calls}
        hydroplane.synchronize()
        if best is None or row["wall_us"] < best["wall_us"]:
            best = row
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="0 (a Vulkan device number) or ref; default: the default")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--wall", action="store_true", help="also the wall clock per call of each loop (module doc)")
    args = parser.parse_args()
    if args.wall:
        gc.callbacks.append(_gc_callback)
    if args.device is not None:
        hydroplane.set_device("ref" if args.device == "ref" else int(args.device))
    rng = np.random.default_rng(0)

    def arr(dtype, *shape):
        return hydroplane.device_array(rng.uniform(-1, 1, shape).astype(dtype))

    results: dict = {}

    def case(name: str, call, calls: int | None = None) -> None:
        results[name] = cost(call, calls or args.calls)
        if not args.wall:
            print(f"{name:48s} {results[name]:9.1f} us", flush=True)
            return
        w = results[f"{name}, wall"] = wall(call, calls or args.calls)
        print(f"{name:48s} {results[name]:9.1f} us | wall {w['wall_us']:7.1f} (median {w['median_us']:6.1f}, max "
              f"{w['max_us']:8.1f}), CPU {w['cpu_us']:6.1f} us, {w['submits_per_call']:.3f} submits and "
              f"{w['gc_collections']} collections ({w['gc_us_per_call']:.2f} us) per call", flush=True)

    print(f"device {hydroplane.default_device()}; host {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; thread CPU per call",
          flush=True)
    x, w, o = arr(np.float16, 64, 64), arr(np.float16, 64, 64), arr(np.float16, 64, 64)
    case("matmul 64^3 x @ W.T, out=", lambda: hydroplane.matmul(x, w.T, out=o))
    case("matmul 64^3 x @ W.T, new result", lambda: hydroplane.matmul(x, w.T))
    xv, ws, ov = arr(np.float16, 1, 256), [arr(np.float16, 256, 256) for _ in range(4)], arr(np.float16, 1, 256)
    turn = [0]

    def gemv():
        turn[0] += 1
        hydroplane.matmul(xv, ws[turn[0] % 4].T, out=ov)
    case("matmul 1x256x256 over 4 rotating W, out=", gemv)
    if args.wall:
        def rotating_new():
            weights, out_new, turns = [arr(np.float16, 256, 256) for _ in range(8)], arr(np.float16, 1, 256), [0]

            def call():
                turns[0] += 1
                hydroplane.matmul(xv, weights[turns[0] % 8].T, out=out_new)
            return call
        name = "matmul 1x256x256 over 8 new W, out=, 1 warm-up (user_path's record)"
        w = results[name] = first_places_loop(rotating_new)
        print(f"{name:48s} wall {w['wall_us']:7.1f} us, CPU {w['cpu_us']:6.1f} us, {w['submits_per_call']:.3f} "
              "submits per call", flush=True)
    q, k, v, oo = arr(np.float16, 1, 4, 1, 64), arr(np.float16, 1, 4, 256, 64), arr(np.float16, 1, 4, 256, 64), \
        arr(np.float16, 1, 4, 1, 64)
    case("attention decode (1,4,1|256,64), out=", lambda: hydroplane.attention(q, k, v, out=oo))
    xr, wr = arr(np.float32, 4, 640), arr(np.float32, 640)
    case("nn.rms_norm (4, 640), new result", lambda: nn.rms_norm(xr, 640, wr))
    hr, gu = arr(np.float32, 4, 640), arr(np.float32, 4, 1280)
    case("nn.add (4, 640), out=a (in place)", lambda: nn.add(hr, xr, out=hr))
    case("nn.gated (4, 2x640) halves, new result", lambda: nn.gated(gu, None, "gelu_tanh"))
    qr, pos = arr(np.float32, 4, 4, 64), hydroplane.device_array(np.arange(4, dtype=np.int32))
    case("nn.rotary_embedding (4, 4, 64), out=x", lambda: nn.rotary_embedding(qr, pos, theta=1e6, out=qr))
    ids, table = hydroplane.device_array(np.arange(4, dtype=np.int32)), arr(np.float32, 64, 640)
    case("nn.embedding 4 of (64, 640), new result", lambda: nn.embedding(ids, table))
    logits = arr(np.float32, 1, 32000)
    case("nn.sample greedy (1, 32000)", lambda: nn.sample(logits))
    draws = iter(range(1 << 30))
    case("nn.sample t=0.8 top-k 40 top-p 0.95, a new seed a call",
         lambda: nn.sample(logits, temperature=0.8, top_k=40, top_p=0.95, seed=next(draws)))
    qw = hydroplane.device_array(quantize(rng.uniform(-1, 1, (256, 640)).astype(np.float32), "q8_0"))
    x1, x32 = arr(np.float32, 1, 640), arr(np.float32, 32, 640)
    case("matmul q8_0 1x640 -> 256, new result", lambda: hydroplane.matmul(x1, qw.T))
    case("matmul q8_0 32x640 -> 256, new result", lambda: hydroplane.matmul(x32, qw.T))
    a, b, c = arr(np.float32, 4096), arr(np.float32, 4096), arr(np.float32, 4096)
    case("kernel[grid] scaled add, 4096", lambda: scaled_add[(64,)](a, b, c, 0.5, 4096))

    from hydroplane.launch.runtime import runtime  # noqa: PLC0415
    from hydroplane.models import load  # noqa: PLC0415

    try:
        import tiny  # noqa: PLC0415 - the tests' checkpoint writer (needs the gguf package)
        path = tiny.write(Path("/tmp/hydroplane_host_cost.gguf"), "gemma3", n_layer=18)
    except ModuleNotFoundError:  # no gguf package (the H200 machine): Gemma 3 270M's own layout, generated weights
        path = Path("/tmp/gemma3_270m_benchmark.gguf")
        if not path.exists():
            import subprocess  # noqa: PLC0415
            subprocess.run([sys.executable, str(ROOT / "tools" / "make_benchmark_gguf.py"), str(path)], check=True)
        print(f"(no gguf package: the model cases run on {path.name}, Gemma 3 270M's layout and vocabulary)")
    model = load(str(path), context=256)
    ids = rng.integers(0, model.config.n_vocab, 32)
    rt = runtime(model.device)
    counted = [0]
    launch = rt.launch_planned

    def counting(planned):
        counted[0] += 1
        launch(planned)

    for name, last_only in (("as calls (every row's logits)", False), ("replayed (a captured bucket)", True)):
        def prefill(last_only=last_only):
            model.reset()
            model.step(ids, last_only=last_only)
        prefill()
        prefill()  # a bucket's second prefill is captured
        counted[0] = 0
        rt.launch_planned = counting  # type: ignore[method-assign]
        prefill()
        rt.launch_planned = launch  # type: ignore[method-assign]
        per_step = cost(prefill, 5)
        results[f"model prefill T=32, 18 blocks, {name}, per step"] = per_step
        results[f"model prefill T=32, 18 blocks, {name}, launches queued one by one"] = counted[0]
        print(f"model prefill T=32, 18 blocks, {name}: {per_step:9.1f} us per step; {counted[0]} launches queued "
              f"one by one", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
