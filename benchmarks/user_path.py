"""The user's path (issue 22), in ONE run: a loop of 100 calls of hydroplane.matmul / hydroplane.attention on
DeviceArrays closed by one synchronize, beside the kernels' own GPU time and beside torch's same loop.

For each case it prints, per call:
- `user`: host wall clock of the loop (100 calls, then hydroplane.synchronize()), with out= and without;
- `record`: host time to queue one call (the loop's calls before the synchronize, timed alone: what the host
  adds per call when the GPU is busy);
- `kernel`: the call's GPU time by timestamps (the device runtime's timing path around the call's launches,
  median of 10 after a warm-up);
- `torch`: torch's loop of 100 calls and one torch.cuda.synchronize() (skipped without CUDA).
Each case's loops (ours and torch's) follow 0.3 s of back-to-back calls, so that the GPU runs them at its clock;
that warm-up also makes every weight copy's first call (its descriptor sets and planned launch, about 60 µs on
this VM's lavapipe), so `record` is the steady state of a loop over weights already seen (before 2026-12-05 15:40
the loops counted 7-15 such first calls in their 100). The loop without out= has its own warm-up of such calls
(and plans its own first calls there). Before 2026-12-06 18:45 UTC it followed the out= warm-up alone, and on an
H100 ran the 1 x 4096 -> 14336 GEMV at 48-106 µs a call against 43-80 for the out= loop after it; an out= loop at
the same point ran as slowly, so that was the GPU's clock early in the process, not the new results (docs/perf.md,
"2026-12-06, 17:50-20:50 UTC").
Decode GEMVs rotate over enough weight copies that the 60 MB L2 cannot hold them, and report the weights' bytes
read per second. Last: a captured graph of 200 small dependent calls replayed, against its GPU time.

On the H200 (docs/perf.md has the command with the Vulkan loader set-up); here `--tiny` runs small shapes on
lavapipe to check the script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import hydroplane  # noqa: E402
from hydroplane.lang import Buffer, f32, global_id, readonly, s32  # noqa: E402
from hydroplane.launch import runtime as runtime_module  # noqa: E402

try:
    import torch  # noqa: E402
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # lavapipe runs: no torch
    torch, HAVE_CUDA = None, False

CALLS = 100
WARM_S = 0.3  # seconds of back-to-back calls before each case's loops (_warm)


def _loop(call, sync, calls=CALLS) -> tuple[float, float]:
    """(seconds per call of the whole loop with its synchronize, seconds per call to queue)."""
    call()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    queued = time.perf_counter()
    sync()
    end = time.perf_counter()
    return (end - start) / calls, (queued - start) / calls


def _warm(call, sync, seconds: float = WARM_S) -> None:
    """Back-to-back calls for `seconds`, then a sync: the GPU at its clock before a timed loop (an idle GPU drops to
    its idle clock within a second: the H100 of 2026-12-05 15:34 ran a 1-row GEMV loop at 96.8 µs a call as the
    first case of a process and at 56.8 after other cases, its kernel at 43 µs either way once warmed)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            call()
        sync()


def _kernel_seconds(call) -> float:
    rt = runtime_module.runtime(None)
    return statistics.median(rt.time(call, 10, warmup=2, warmup_s=0.3))


def _torch_loop(call) -> float | None:
    if not HAVE_CUDA:
        return None
    _warm(call, torch.cuda.synchronize)
    return _loop(call, torch.cuda.synchronize)[0]


def _row(name, work, unit, user, user_out, record, kernel, torch_s) -> dict:
    def rate(seconds):
        return work / seconds / 1e12 if seconds else 0.0

    row = {"case": name, "user_us": user * 1e6, "user_out_us": user_out * 1e6, "record_us": record * 1e6,
           "kernel_us": kernel * 1e6, "torch_us": None if torch_s is None else torch_s * 1e6,
           "user_rate": rate(user_out), "kernel_rate": rate(kernel), "unit": unit,
           "user_of_kernel": kernel / user_out if user_out else 0.0}
    t = "-" if torch_s is None else f"{torch_s * 1e6:9.1f}"
    print(f"{name:44} user {user * 1e6:9.1f} | out= {user_out * 1e6:9.1f} | record {record * 1e6:7.1f} | kernel "
          f"{kernel * 1e6:9.1f} us | torch {t} | {rate(user_out):7.3f} vs {rate(kernel):7.3f} {unit} "
          f"({row['user_of_kernel']:.0%} of the kernel's rate)", flush=True)
    return row


def matmul_case(m, n, k, copies=1, label=None) -> dict:
    rng = np.random.default_rng(0)
    x = hydroplane.device_array(rng.uniform(-1, 1, (m, k)).astype(np.float16))
    ws = [hydroplane.device_array(rng.uniform(-1, 1, (n, k)).astype(np.float16)) for _ in range(copies)]
    out = hydroplane.device_array(np.zeros((m, n), np.float16))
    turn = [0]

    def call_out():
        w = ws[turn[0] % copies]
        turn[0] += 1
        hydroplane.matmul(x, w.T, out=out)

    def call_new():
        w = ws[turn[0] % copies]
        turn[0] += 1
        hydroplane.matmul(x, w.T)

    got = hydroplane.matmul(x, ws[0].T).numpy().astype(np.float32)  # checked once
    want = x.numpy().astype(np.float32) @ ws[0].numpy().astype(np.float32).T
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert err < 2e-2, f"matmul {m}x{n}x{k}: relative error {err}"
    _warm(call_new, hydroplane.synchronize)  # this loop's own warm-up (the module docstring)
    user, _ = _loop(call_new, hydroplane.synchronize)
    _warm(call_out, hydroplane.synchronize)
    user_out, record = _loop(call_out, hydroplane.synchronize)
    kernel = _kernel_seconds(call_out)
    torch_s = None
    if HAVE_CUDA:
        tx = torch.from_numpy(x.numpy()).cuda()
        tws = [torch.from_numpy(w.numpy()).cuda() for w in ws]
        tout = torch.empty((m, n), dtype=torch.float16, device="cuda")
        tturn = [0]

        def tcall():
            torch.matmul(tx, tws[tturn[0] % copies].T, out=tout)
            tturn[0] += 1
        torch_s = _torch_loop(tcall)
    if m <= 64:  # decode: bytes of weights read per second
        return _row(label or f"matmul {m}x{n}x{k} (x @ W.T, {copies} W)", n * k * 2, "TB/s", user, user_out, record,
                    kernel, torch_s)
    return _row(label or f"matmul {m}x{n}x{k} (x @ W.T)", 2 * m * n * k, "TFLOP/s", user, user_out, record, kernel,
                torch_s)


def attention_case(b, h, s_q, s_kv, d, kv_heads=None, causal=False) -> dict:
    rng = np.random.default_rng(1)
    kv_heads = kv_heads or h
    q = hydroplane.device_array(rng.uniform(-1, 1, (b, h, s_q, d)).astype(np.float16))
    k = hydroplane.device_array(rng.uniform(-1, 1, (b, kv_heads, s_kv, d)).astype(np.float16))
    v = hydroplane.device_array(rng.uniform(-1, 1, (b, kv_heads, s_kv, d)).astype(np.float16))
    out = hydroplane.device_array(np.zeros((b, h, s_q, d), np.float16))

    def call_out():
        hydroplane.attention(q, k, v, causal=causal, out=out)

    def call_new():
        hydroplane.attention(q, k, v, causal=causal)

    _warm(call_new, hydroplane.synchronize)  # this loop's own warm-up (the module docstring)
    user, _ = _loop(call_new, hydroplane.synchronize)
    _warm(call_out, hydroplane.synchronize)
    user_out, record = _loop(call_out, hydroplane.synchronize)
    kernel = _kernel_seconds(call_out)
    torch_s = None
    if HAVE_CUDA:
        tq, tk, tv = (torch.from_numpy(a.numpy()).cuda() for a in (q, k, v))
        gqa = kv_heads != h
        sdpa = torch.nn.functional.scaled_dot_product_attention
        torch_s = _torch_loop(lambda: sdpa(tq, tk, tv, is_causal=causal, enable_gqa=gqa))
    flops = 4 * b * h * s_q * s_kv * d * (0.5 if causal else 1.0)
    name = f"attention {b}x{h}x{s_q}x{s_kv}x{d}" + (f" kv {kv_heads}" if kv_heads != h else "") + \
        (" causal" if causal else "")
    if s_q == 1:
        return _row(name + " (decode)", 2 * b * kv_heads * s_kv * d * 2, "TB/s", user, user_out, record, kernel,
                    torch_s)
    return _row(name, flops, "TFLOP/s", user, user_out, record, kernel, torch_s)


@hydroplane.kernel(local_size=256)
def _scaled_add(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


def kernel_case(n: int) -> dict:
    """A user's own kernel: kernel[grid](...) on device arrays (its PreparedLaunch kept per signature)."""
    rng = np.random.default_rng(3)
    x = hydroplane.device_array(rng.uniform(-1, 1, n).astype(np.float32))
    y = hydroplane.device_array(rng.uniform(-1, 1, n).astype(np.float32))
    out = hydroplane.device_array(np.zeros(n, np.float32))
    grid = (-(-n // 256),)

    def call():
        _scaled_add[grid](x, y, out, 0.5, n)

    call()
    np.testing.assert_allclose(out.numpy(), 0.5 * x.numpy() + y.numpy(), rtol=1e-6)
    _warm(call, hydroplane.synchronize)
    user, record = _loop(call, hydroplane.synchronize)
    kernel = _kernel_seconds(call)
    torch_s = None
    if HAVE_CUDA:
        tx, ty = torch.from_numpy(x.numpy()).cuda(), torch.from_numpy(y.numpy()).cuda()
        tout = torch.empty_like(tx)
        torch_s = _torch_loop(lambda: torch.add(ty, tx, alpha=0.5, out=tout))
    return _row(f"kernel[grid] scaled add, {n} f32", 12 * n, "TB/s", user, user, record, kernel, torch_s)


def replay_case(n=256, count=200) -> dict:
    """A captured chain of `count` small dependent matmuls (each reads the last one's result), replayed."""
    rng = np.random.default_rng(2)
    w = hydroplane.device_array((rng.uniform(-1, 1, (n, n)) / n).astype(np.float16))
    a = hydroplane.device_array(rng.uniform(-1, 1, (n, n)).astype(np.float16))
    b = hydroplane.device_array(np.zeros((n, n), np.float16))

    def chain():
        for _ in range(count // 2):
            hydroplane.matmul(a, w, out=b)
            hydroplane.matmul(b, w, out=a)

    chain()
    hydroplane.synchronize()
    with hydroplane.capture() as graph:
        chain()
    replay, _ = _loop(graph.replay, hydroplane.synchronize, calls=20)
    kernel = _kernel_seconds(graph.replay)
    eager = _loop(chain, hydroplane.synchronize, 5)[0]
    print(f"replay of {count} dependent {n}^3 matmuls: {replay * 1e6:.1f} us per replay, GPU {kernel * 1e6:.1f} us "
          f"({replay / kernel - 1:+.1%} over the GPU time); eager loop {eager * 1e6:.1f} us", flush=True)
    return {"case": f"replay {count} x {n}^3", "replay_us": replay * 1e6, "kernel_us": kernel * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--only", help="run only the cases whose kind and size start with one of these "
                        "(comma-separated, e.g. 'matmul 1x,attention 1x'; matmul M means an M x ... case)")
    args = parser.parse_args()
    rt = runtime_module.runtime(None)
    print(f"device: {rt.name}; driver {getattr(rt.executor, 'info', None) and rt.executor.info.driver_version}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {'CUDA' if HAVE_CUDA else 'absent'}",
          flush=True)
    if args.tiny:
        cases = [("matmul 64x", lambda: matmul_case(64, 64, 64)),
                 ("matmul 1x", lambda: matmul_case(1, 256, 256, copies=2)),
                 ("attention 1x2x64", lambda: attention_case(1, 2, 64, 64, 64, causal=True)),
                 ("attention 1x4x1", lambda: attention_case(1, 4, 1, 128, 64, kv_heads=2)),
                 ("kernel", lambda: kernel_case(4096)),
                 ("replay", lambda: replay_case(64, 20))]
    else:
        cases = [(f"matmul {m}x", lambda m=m, n=n, k=k: matmul_case(m, n, k))
                 for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096), (512, 4096, 14336))]
        cases.append(("matmul 1x", lambda: matmul_case(1, 4096, 14336, copies=8)))
        cases += [(f"matmul {m}x", lambda m=m: matmul_case(m, 4096, 4096, copies=16)) for m in (8, 16, 64)]
        cases += [("attention 4x16x4096", lambda: attention_case(4, 16, 4096, 4096, 128)),
                  ("attention 4x16x4096", lambda: attention_case(4, 16, 4096, 4096, 128, causal=True)),
                  ("attention 4x32x4096", lambda: attention_case(4, 32, 4096, 4096, 128, kv_heads=8, causal=True)),
                  ("attention 16x32x1", lambda: attention_case(16, 32, 1, 8192, 128)),
                  ("attention 1x32x1", lambda: attention_case(1, 32, 1, 8192, 128, kv_heads=8)),
                  ("kernel", lambda: kernel_case(1 << 24)),
                  ("replay", replay_case)]
    only = [o.strip() for o in args.only.split(",")] if args.only else None
    rows = [run() for tag, run in cases if only is None or any(tag.startswith(o) for o in only)]
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
