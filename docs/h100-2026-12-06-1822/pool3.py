import sys, time, numpy as np, hydroplane
from hydroplane.vk.sync import Fence
from hydroplane.vk import stream as S
cnt = {"wait": 0, "flush": 0}
w0 = Fence.wait
def wait(f, *a, **k):
    cnt["wait"] += 1; return w0(f, *a, **k)
Fence.wait = wait
f0 = S.Stream.flush
def flush(s, *a, **k):
    cnt["flush"] += 1; return f0(s, *a, **k)
S.Stream.flush = flush
from hydroplane.ops import matmul as MM
from hydroplane.launch.runtime import DeviceRuntime
cnt["bind"] = 0; cnt["alloc"] = 0
b0 = MM.FastCall._bind_and_queue
def bind(self, *a, **k):
    cnt["bind"] += 1; return b0(self, *a, **k)
MM.FastCall._bind_and_queue = bind
ids = set()
a0 = DeviceRuntime.alloc
def alloc(self, n):
    cnt["alloc"] += 1; b = a0(self, n); ids.add(id(b)); return b
DeviceRuntime.alloc = alloc
rng = np.random.default_rng(0)
m, n, k = (1, 4096, 14336) if len(sys.argv) > 1 else (1, 256, 512)
x = hydroplane.device_array(rng.uniform(-1, 1, (m, k)).astype(np.float16))
ws = [hydroplane.device_array(rng.uniform(-1, 1, (n, k)).astype(np.float16)) for _ in range(8)]
out = hydroplane.device_array(np.zeros((m, n), np.float16))
t = [0]
def call_out():
    t[0] += 1; hydroplane.matmul(x, ws[t[0] % 8].T, out=out)
def call_new():
    t[0] += 1; hydroplane.matmul(x, ws[t[0] % 8].T)
def warm(call):
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        for _ in range(10): call()
        hydroplane.synchronize()
def loop(call, name):
    call(); hydroplane.synchronize()
    c = dict(cnt); ids.clear(); s = time.perf_counter()
    for _ in range(100): call()
    q = time.perf_counter()
    hydroplane.synchronize()
    e = time.perf_counter()
    print(f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {name}: {(e - s) * 1e4:.1f} us/call, queue {(q - s) * 1e4:.1f}, waits {cnt['wait'] - c['wait']}, flushes {cnt['flush'] - c['flush']}, binds {cnt['bind'] - c['bind']}, allocs {cnt['alloc'] - c['alloc']} of {len(ids)} buffers", flush=True)
print(time.strftime('%H:%M:%S'), "uploaded", flush=True)
warm(call_out)
loop(call_new, "new after out= warm-up")
loop(call_new, "again")
import cProfile, pstats, io
pr = cProfile.Profile(); pr.enable(); loop(call_new, "again, profiled"); pr.disable()
buf = io.StringIO(); pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(14); print(buf.getvalue()[-3500:])
loop(call_out, "out=")
warm(call_new)
loop(call_new, "new after new warm-up")
loop(call_out, "out=")
