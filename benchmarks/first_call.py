"""The first call (issue 22 item 6): seconds from `import hydroplane` to the first results of a matmul and an
attention call, in a new process each time: cold (an empty cache folder), warm (the cache folder the cold
process left: the library kernels' specializations and the driver's pipeline cache, docs/runtime.md "The first
call"), and warm with the disk caches off (HYDROPLANE_DISK_CACHE=0: what the caches save). The drivers' own shader
caches are off in every run (__GL_SHADER_DISK_CACHE=0 for NVIDIA, MESA_SHADER_CACHE_DISABLE=true for Mesa).

    PYTHONPATH=src python3 benchmarks/first_call.py [--tiny] [--runs 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CHILD = """
import time
start = time.perf_counter()
import numpy as np
import hydroplane
m, n, k, s = {sizes}
rng = np.random.default_rng(0)
x = hydroplane.device_array(rng.uniform(-1, 1, (m, k)).astype(np.float16))
w = hydroplane.device_array(rng.uniform(-1, 1, (n, k)).astype(np.float16))
q = hydroplane.device_array(rng.uniform(-1, 1, (1, 8, s, 128)).astype(np.float16))
y = hydroplane.matmul(x, w.T).numpy()
o = hydroplane.attention(q, q, q, causal=True).numpy()
assert np.isfinite(y).all() and np.isfinite(o).all()
print(time.perf_counter() - start)
"""


def child_seconds(sizes: tuple, cache: str, disk_cache: bool) -> float:
    env = dict(os.environ, XDG_CACHE_HOME=cache, __GL_SHADER_DISK_CACHE="0", MESA_SHADER_CACHE_DISABLE="true",
               HYDROPLANE_DISK_CACHE="1" if disk_cache else "0")
    out = subprocess.run([sys.executable, "-c", CHILD.format(sizes=sizes)], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--runs", type=int, default=2, help="processes of each kind")
    args = parser.parse_args()
    sizes = (256, 256, 256, 64) if args.tiny else (4096, 4096, 4096, 1024)
    print(f"first call: matmul {sizes[0]}x{sizes[1]}x{sizes[2]} (x @ W.T) and causal attention 1x8x{sizes[3]}x128, "
          f"f16, each in a new process; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    rows = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            cold = child_seconds(sizes, cache, True)
            warm = child_seconds(sizes, cache, True)
            off = child_seconds(sizes, cache, False)
        rows.append((cold, warm, off))
        print(f"run {run}: cold {cold:.2f} s | warm {warm:.2f} s ({warm / cold:.0%} of cold) | warm, disk caches off "
              f"{off:.2f} s", flush=True)
    cold, warm, off = (sorted(r[i] for r in rows)[len(rows) // 2] for i in range(3))
    print(f"median: cold {cold:.2f} s, warm {warm:.2f} s ({warm / cold:.0%}; target at most 20%), caches off "
          f"{off:.2f} s", flush=True)


if __name__ == "__main__":
    main()
