"""Standalone check of hydroplane.vk on a real GPU (written for the NVIDIA H200): no pytest, no glslang,
no spirv-val needed; Python 3.12 with numpy and ml_dtypes, PYTHONPATH=src.

It prints `hydroplane devices`, runs the module builder's cooperative-matrix tile kernel (seed 002:
D = A*B + C) at 16x16x16 for f16 -> f32 and for s8 -> s32 / u8 -> u32 with signedness operands
(falling back to a shape the device reports, and saying so, when 16x16x16 is not offered), compares
each with NumPy, times them with GPU timestamps, prints the driver's pipeline statistics, and runs
the dispatch-overhead benchmark (its C loop too when gcc is there). Where NV2 offers workgroup
scope, the builder's workgroup-scope tile runs too, at the largest flexible shape reported.
Everything goes to stdout and, when $OUT is set, to $OUT/h200_check.txt (plus the benchmark's own files).

    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \\
        PYTHONPATH=src python3 benchmarks/h200_check.py
"""

from __future__ import annotations

import io
import os
import sys
import time
import traceback
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TYPES = {"f16": np.float16, "f32": np.float32, "s8": np.int8, "u8": np.uint8, "s32": np.int32, "u32": np.uint32}
WANTED = (16, 16, 16)


class Tee(io.TextIOBase):
    """Writes to several streams at once."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)
            s.flush()
        return len(text)


def pick_shape(info, a_type, c_type):
    shapes = info.coop_shapes(a=a_type, c=c_type)
    exact = [s for s in shapes if (s.m, s.n, s.k) == WANTED]
    if exact:
        return exact[0], "16x16x16 as asked"
    if shapes:
        return shapes[0], f"16x16x16 is not offered for {a_type}->{c_type}; using the device's {shapes[0].text()}"
    return None, f"no subgroup {a_type}->{c_type} shape offered"


def random_matrix(rng, type_name, shape):
    dtype = TYPES[type_name]
    if np.issubdtype(dtype, np.integer):
        lo, hi = (-100, 100) if np.iinfo(dtype).min < 0 else (0, 200)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def workgroup_shape(info, a_type, c_type):
    """The largest NV2 workgroup-scope flexible shape for these types, or None."""
    shapes = [s for s in info.coop_nv2_flexible if s.scope == "workgroup" and s.a == a_type and s.c == c_type]
    return max(shapes, key=lambda s: (s.workgroup_invocations, s.m * s.n)) if shapes else None


def tile_check(dev, info, a_type, c_type, scope: str = "Subgroup") -> bool:
    from hydroplane.spirv import reflect
    from hydroplane.spirv.samples import coop_matmul_tile
    from hydroplane.vk import UnsupportedFeature, bench

    if scope == "Workgroup":
        shape = workgroup_shape(info, a_type, c_type)
        note = (f"NV2 workgroup scope, {shape.text()}" if shape else "no NV2 workgroup-scope shape offered")
        local_size = shape.workgroup_invocations if shape else 0
    else:
        shape, note = pick_shape(info, a_type, c_type)
        local_size = info.subgroup_size
    print(f"\n== tile kernel {a_type} -> {c_type}: {note}")
    if shape is None:
        return False
    m, n, k = shape.m, shape.n, shape.k
    words = coop_matmul_tile(m, n, k, a_type=a_type, c_type=c_type, local_size=local_size, scope=scope)
    iface = reflect(words)
    print(f"capabilities {', '.join(iface.capabilities)}; extensions {', '.join(iface.extensions)}")
    rng = np.random.default_rng(2026)
    a, b, c = random_matrix(rng, a_type, (m, k)), random_matrix(rng, a_type, (k, n)), random_matrix(rng, c_type, (m, n))
    with dev.pipeline(words, iface.bindings, capabilities=iface.capabilities, extensions=iface.extensions,
                      capture_statistics=True) as pipe, \
            dev.buffer(a) as A, dev.buffer(b) as B, dev.buffer(c) as C, \
            dev.buffer(np.full(m * n, 0x7FC00000, np.uint32)) as D:
        print(f"buffers: {'mapped' if A.mapped else 'device-local with staging copies'}")
        rec = dev.record(pipe, 1, {0: A, 1: B, 2: C, 3: D}, timestamps=True)
        rec.run()
        got = D.read(TYPES[c_type], (m, n))
        if c_type == "f32":
            expected = a.astype(np.float32) @ b.astype(np.float32) + c
            ok = np.allclose(got, expected, rtol=1e-3, atol=1e-2)
            print(f"max |error| vs NumPy: {np.abs(got - expected).max():.3g}")
        else:
            expected = (a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)).astype(TYPES[c_type])
            ok = np.array_equal(got, expected)
            print(f"mismatches vs NumPy: {int((got != expected).sum())} of {m * n}")
        print(f"result: {'PASS' if ok else 'FAIL'}")
        print("GPU time: " + bench(rec, warmup=5, reps=50, warmup_s=0.3).text())
        try:
            for exe in pipe.statistics():
                stats = ", ".join(f"{k}={v}" for k, v in exe.statistics.items())
                print(f"pipeline statistics [{exe.name}, subgroup {exe.subgroup_size}]: {stats}")
        except UnsupportedFeature as exc:
            print(f"pipeline statistics: {exc}")
        rec.close()
    return ok


def run_checks() -> int:
    from hydroplane.cli import main as cli
    from hydroplane.vk import Device, Instance, devices, pick_device

    print(f"hydroplane h200_check, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"Python {sys.version.split()[0]}")
    print("\n== hydroplane devices")
    cli(["devices"])
    failures = 0
    with Instance(validation=False) as inst:
        info = pick_device(devices(inst))
        print(f"\n== running on #{info.index} {info.name}")
        with Device(info, enable_all=True) as dev:
            for a_type, c_type in (("f16", "f32"), ("s8", "s32"), ("u8", "u32")):
                try:
                    failures += not tile_check(dev, info, a_type, c_type)
                except Exception:  # noqa: BLE001 - report and go on with the other checks
                    failures += 1
                    traceback.print_exc(file=sys.stdout)
            if info.has_feature("cooperative_matrix2_nv", "cooperativeMatrixWorkgroupScope"):
                try:  # beyond the list: the builder's NV2 workgroup-scope tile
                    failures += not tile_check(dev, info, "f16", "f32", scope="Workgroup")
                except Exception:  # noqa: BLE001
                    failures += 1
                    traceback.print_exc(file=sys.stdout)
    print("\n== dispatch overhead (empty kernel, cached pipeline)")
    import vk_dispatch_overhead

    vk_dispatch_overhead.main(["--device", str(info.index), "--iterations", "5000"])
    print(f"\n== {'ALL PASSED' if failures == 0 else f'{failures} CHECK(S) FAILED'}")
    return 1 if failures else 0


def main() -> int:
    out_dir = os.environ.get("OUT")
    if not out_dir:
        return run_checks()
    with open(Path(out_dir) / "h200_check.txt", "w") as log, redirect_stdout(Tee(sys.stdout, log)):
        return run_checks()


if __name__ == "__main__":
    sys.exit(main())
