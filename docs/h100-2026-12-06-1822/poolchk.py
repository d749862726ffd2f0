import time, numpy as np, hydroplane
from hydroplane.vk import memory
count = [0]
orig = memory.Buffer._allocate
def counted(self):
    count[0] += 1
    return orig(self)
memory.Buffer._allocate = counted
rng = np.random.default_rng(0)
import sys
m, n, k = (1, 4096, 14336) if len(sys.argv) > 1 else (1, 1024, 2048)
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
def loop(call):
    call(); hydroplane.synchronize()
    c0 = count[0]; s = time.perf_counter()
    for _ in range(100): call()
    hydroplane.synchronize()
    return count[0] - c0, (time.perf_counter() - s) * 1e4
warm(call_out)
print("after out= warm-up: allocations in the new-result loop, us/call", loop(call_new))
print("again", loop(call_new))
print("again", loop(call_new))
warm(call_new)
print("after new warm-up", loop(call_new))
