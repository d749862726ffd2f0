"""Leak check at the issue's scale: N create/dispatch/destroy cycles, process RSS and driver memory.

Each cycle creates a buffer from a NumPy array, a pipeline (the builder's vector_add kernel),
records and runs one dispatch, reads the result back, checks it, and closes everything. RSS comes
from /proc/self/statm, the driver's memory from VK_EXT_memory_budget (heapUsage) when offered.

    PYTHONPATH=src python3 benchmarks/vk_leak_cycles.py [--cycles 10000] [--device I] [--validation]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--validation", action="store_true", help="with VK_LAYER_KHRONOS_validation (slow)")
    args = parser.parse_args(argv)

    from hydroplane.spirv.samples import vector_add
    from hydroplane.vk import Device, Instance, devices

    words = vector_add("f32", local_size=64)
    n = 256
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    samples = []
    with Instance(validation=args.validation) as inst:
        info = devices(inst)[args.device]
        with Device(info) as dev:
            def cycle():
                with dev.buffer(a) as A, dev.buffer(b) as B, dev.buffer(np.full(n, np.nan, np.float32)) as C, \
                        dev.pipeline(words, [(0, 0), (0, 1), (0, 2)], push_constant_size=4) as pipe:
                    dev.record(pipe, n // 64, {0: A, 1: B, 2: C}, np.uint32(n)).run()
                    if not np.array_equal(C.read(np.float32), a + b):
                        raise SystemExit("wrong result in a leak cycle")

            start = time.perf_counter()
            for i in range(args.cycles + 1):
                if i % max(1, args.cycles // 10) == 0:
                    gc.collect()
                    samples.append({"cycle": i, "rss": rss_bytes(), "driver": dev.memory_usage()})
                cycle()
            elapsed = time.perf_counter() - start
            open_children = sum(1 for c in dev._children if not c.closed)
    first, warm, last = samples[0], samples[1], samples[-1]
    result = {
        "device": info.name, "cycles": args.cycles, "seconds": round(elapsed, 2),
        "rss_start": first["rss"], "rss_after_first_tenth": warm["rss"], "rss_end": last["rss"],
        "rss_growth_after_first_tenth": last["rss"] - warm["rss"],
        "driver_heap_usage_start": first["driver"], "driver_heap_usage_end": last["driver"],
        "objects_left_open": open_children,
        "samples": [[x["cycle"], x["rss"], x["driver"]] for x in samples],  # cycle, RSS, driver heapUsage
        "validation": args.validation,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(json.dumps(result, indent=2))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "vk_leak_cycles.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
