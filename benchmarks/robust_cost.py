"""What robust buffer access costs: the same kernels timed (GPU timestamps) on a device created with and
without robustBufferAccess (+ robustBufferAccess2 where VK_EXT_robustness2 offers it).

Two kernels from hydroplane's own builder (no glslang or spirv-val needed): `vector_add` over 16 Mi f32
elements (memory bound: every load and store is bounds-checked under robust access) and the
cooperative-matrix tile D = A*B + C (f16 -> f32 at the device's first offered shape) over a grid of
65535 workgroups (matrix loads and stores). Prints the median device time of each, both ways, and the ratio.

    PYTHONPATH=src python3 benchmarks/robust_cost.py            # the first device with KHR cooperative matrices
    (H200: unpack the loader .debs first and set VK_DRIVER_FILES, see benchmarks/h200_check.py)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane.spirv import reflect  # noqa: E402
from hydroplane.spirv.samples import coop_matmul_tile, vector_add  # noqa: E402
from hydroplane.vk import Device, Instance, bench, devices, pick_device  # noqa: E402

VECTOR_ELEMENTS = 16 << 20
LOCAL_SIZE = 256
TILE_WORKGROUPS = 65535


def _pipeline(dev, words, push_size: int = 0):
    iface = reflect(words)
    return dev.pipeline(words, iface.bindings, push_constant_size=push_size, capabilities=iface.capabilities,
                        extensions=iface.extensions)


def time_vector_add(dev, info) -> tuple[float, bool]:
    n = min(VECTOR_ELEMENTS, info.max_workgroup_count[0] * LOCAL_SIZE)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    with _pipeline(dev, vector_add("f32", LOCAL_SIZE), 4) as pipe, dev.buffer(a) as A, dev.buffer(b) as B, \
            dev.buffer(np.full(n, np.nan, np.float32)) as C:
        rec = dev.record(pipe, -(-n // LOCAL_SIZE), {0: A, 1: B, 2: C}, np.array([n], np.uint32), timestamps=True)
        rec.run()
        ok = np.array_equal(C.read(np.float32, (n,)), a + b)
        result = bench(rec, warmup=5, reps=30, warmup_s=0.3)
        rec.close()
    return result.median_ns, ok


def time_tile(dev, info) -> tuple[float, bool, str]:
    shapes = info.coop_shapes(a="f16", c="f32")
    if not shapes:
        return float("nan"), True, "no f16 -> f32 shape"
    s = shapes[0]
    words = coop_matmul_tile(s.m, s.n, s.k, a_type="f16", c_type="f32", local_size=info.subgroup_size)
    rng = np.random.default_rng(2)
    a = rng.uniform(-2, 2, (s.m, s.k)).astype(np.float16)
    b = rng.uniform(-2, 2, (s.k, s.n)).astype(np.float16)
    c = rng.uniform(-2, 2, (s.m, s.n)).astype(np.float32)
    grid = min(TILE_WORKGROUPS, info.max_workgroup_count[0])
    with _pipeline(dev, words) as pipe, dev.buffer(a) as A, dev.buffer(b) as B, dev.buffer(c) as C, \
            dev.buffer(np.full(s.m * s.n, np.nan, np.float32)) as D:
        rec = dev.record(pipe, grid, {0: A, 1: B, 2: C, 3: D}, timestamps=True)
        rec.run()
        ok = np.allclose(D.read(np.float32, (s.m, s.n)), a.astype(np.float32) @ b.astype(np.float32) + c,
                         rtol=1e-3, atol=1e-2)
        result = bench(rec, warmup=5, reps=30, warmup_s=0.3)
        rec.close()
    return result.median_ns, ok, f"{s.m}x{s.n}x{s.k} x {grid} workgroups"


def main() -> int:
    print(f"hydroplane robust_cost, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"Python {sys.version.split()[0]}")
    failures = 0
    with Instance(validation=False) as inst:
        info = pick_device(devices(inst))
        print(f"device: {info.name}, driver {info.driver_version}; VK_EXT_robustness2: "
              f"{'yes' if 'VK_EXT_robustness2' in info.extensions else 'no'}")
        times: dict[str, dict[bool, float]] = {}
        for robust in (False, True, False, True):  # twice each, interleaved: the second pair is reported
            with Device(info, enable_all=True, robust=robust) as dev:
                ns, ok = time_vector_add(dev, info)
                times.setdefault(f"vector_add f32, {VECTOR_ELEMENTS >> 20} Mi elements", {})[robust] = ns
                tile_ns, tile_ok, label = time_tile(dev, info)
                times.setdefault(f"coop tile f16->f32 {label}", {})[robust] = tile_ns
                failures += (not ok) + (not tile_ok)
        for name, by_mode in times.items():
            off, on = by_mode[False], by_mode[True]
            print(f"{name}: robust off {off / 1e3:.1f} us, on {on / 1e3:.1f} us, on/off {on / off:.3f}")
    print("results: " + ("PASS" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
