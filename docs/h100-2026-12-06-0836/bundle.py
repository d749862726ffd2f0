import time, statistics, numpy as np, hydroplane
from hydroplane.launch import runtime as R
from hydroplane.ops import attention as A, matmul as M
rng = np.random.default_rng(0)
def arr(dt, *s): return hydroplane.device_array(rng.uniform(-1, 1, s).astype(dt))
q, k, v, o = arr(np.float16, 1, 32, 1, 128), arr(np.float16, 1, 8, 8192, 128), arr(np.float16, 1, 8, 8192, 128), arr(np.float16, 1, 32, 1, 128)
x16, ws, y16 = arr(np.float16, 16, 4096), [arr(np.float16, 4096, 4096) for _ in range(16)], arr(np.float16, 16, 4096)
x64, y64 = arr(np.float16, 64, 4096), arr(np.float16, 64, 4096)
t = [0]
def gemv16():
    t[0] += 1
    hydroplane.matmul(x16, ws[t[0] % 16].T, out=y16)
def gemm64():
    t[0] += 1
    hydroplane.matmul(x64, ws[t[0] % 16].T, out=y64)
cases = {"attention decode 1x32x1x8192x128 kv8": (lambda: hydroplane.attention(q, k, v, out=o), o),
         "matmul 16x4096x4096 16 W": (gemv16, y16), "matmul 64x4096x4096 16 W": (gemm64, y64)}
end = time.perf_counter() + (4.0 if __import__("sys").argv[-1] != "quick" else 0.1)  # a fresh machine's slow first seconds
while time.perf_counter() < end:
    for _ in range(10): gemv16()
    hydroplane.synchronize()
for name, (call, out) in cases.items():
    res, got = {True: [], False: []}, {}
    for _ in range(5):
        for mode in res:
            R.BUNDLE_LAUNCHES = mode
            A._fast.clear(); M._fast.clear()
            for _ in range(40): call()   # plans made in this mode
            hydroplane.synchronize()
            t0 = time.perf_counter()
            for _ in range(100): call()
            tq = time.perf_counter()
            hydroplane.synchronize()
            t1 = time.perf_counter()
            res[mode].append(((t1 - t0) / 100 * 1e6, (tq - t0) / 100 * 1e6))
            t[0] = 0; call(); got[mode] = out.numpy().copy()
    fast = (A._fast or M._fast)
    for mode, r in res.items():
        print(f"{name}, bundled {mode}: loop {statistics.median(x[0] for x in r):.1f} us a call, record "
              f"{statistics.median(x[1] for x in r):.1f}; loops {[round(x[0], 1) for x in r]}", flush=True)
    print(f"  results equal across modes: {np.array_equal(got[True], got[False], equal_nan=True)}", flush=True)
    rt = R.runtime(None)
    for mode in (True, False):
        R.BUNDLE_LAUNCHES = mode
        A._fast.clear(); M._fast.clear()
        for _ in range(5): call()
        print(f"  kernel timing (bundled {mode}): {statistics.median(rt.time(call, 20, warmup=2, warmup_s=0.2)) * 1e6:.1f} us", flush=True)
R.BUNDLE_LAUNCHES = True
