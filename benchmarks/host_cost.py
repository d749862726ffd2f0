"""The host's own cost of a queued call (issue 22), measured where no GPU is: the CPU time of the calling thread
(`time.thread_time`) per call, so that a CPU driver (lavapipe) running the kernels on other threads, or a GPU
that is busy, does not count. Each case: 5 warm-up calls, then the best of 3 loops of N calls (each loop closed by
a synchronize outside the timing). Cases: hydroplane.matmul on DeviceArrays (with out= and a new result each
call, a decode GEMV rotating over 4 weights), a decode attention, nn.rms_norm, a quantized GEMV and GEMM, a user's
kernel[grid], and a prefill step of a Gemma-3-shaped model of 18 small blocks (tests/models/tiny.py): as calls
(`step(ids, last_only=False)`: every launch queued by the host) and as the replay of its bucket's captured graph.

    PYTHONPATH=src python3 benchmarks/host_cost.py [--device 0|ref] [--calls 200] [--json OUT]

On a GPU host this is the floor of what a call adds; benchmarks/user_path.py measures the loop against the GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="0 (a Vulkan device number) or ref; default: the default")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.device is not None:
        hydroplane.set_device("ref" if args.device == "ref" else int(args.device))
    rng = np.random.default_rng(0)

    def arr(dtype, *shape):
        return hydroplane.device_array(rng.uniform(-1, 1, shape).astype(dtype))

    results: dict[str, float] = {}

    def case(name: str, call, calls: int | None = None) -> None:
        results[name] = cost(call, calls or args.calls)
        print(f"{name:48s} {results[name]:9.1f} us", flush=True)

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
    q, k, v, oo = arr(np.float16, 1, 4, 1, 64), arr(np.float16, 1, 4, 256, 64), arr(np.float16, 1, 4, 256, 64), \
        arr(np.float16, 1, 4, 1, 64)
    case("attention decode (1,4,1|256,64), out=", lambda: hydroplane.attention(q, k, v, out=oo))
    xr, wr = arr(np.float32, 4, 640), arr(np.float32, 640)
    case("nn.rms_norm (4, 640), new result", lambda: nn.rms_norm(xr, 640, wr))
    qw = hydroplane.device_array(quantize(rng.uniform(-1, 1, (256, 640)).astype(np.float32), "q8_0"))
    x1, x32 = arr(np.float32, 1, 640), arr(np.float32, 32, 640)
    case("matmul q8_0 1x640 -> 256, new result", lambda: hydroplane.matmul(x1, qw.T))
    case("matmul q8_0 32x640 -> 256, new result", lambda: hydroplane.matmul(x32, qw.T))
    a, b, c = arr(np.float32, 4096), arr(np.float32, 4096), arr(np.float32, 4096)
    case("kernel[grid] scaled add, 4096", lambda: scaled_add[(64,)](a, b, c, 0.5, 4096))

    import tiny  # noqa: PLC0415 - the tests' checkpoint writer (needs the gguf package)

    from hydroplane.launch.runtime import runtime  # noqa: PLC0415
    from hydroplane.models import load  # noqa: PLC0415

    path = tiny.write(Path("/tmp/hydroplane_host_cost.gguf"), "gemma3", n_layer=18)
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
