"""Host <-> device-local buffer copies by the staging memory they go through: where reading results back is slow.

A device-local buffer (where a discrete GPU keeps a GEMM's operands) is written and read through a temporary
host-visible staging buffer. A discrete GPU offers several host-visible memory types: uncached, write-combined
device-local memory behind the PCIe BAR, and host memory that is cached or not. The CPU writes the BAR at speed
but reads it very slowly, so `Buffer.read` stages through host-cached memory (`readback=True`). This prints the
device's memory types and times, per size: a write, a read as `Buffer.read` does it, and a read staged through the
memory type a plain mapped buffer gets (the BAR on the H200; what read-back used before), median of --reps.

    PYTHONPATH=src python3 benchmarks/vk_readback.py [--sizes-mib 16,256] [--reps 3] [--device I]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane import vk  # noqa: E402
from hydroplane.vk import enums as E  # noqa: E402
from hydroplane.vk.transfer import copy_buffer  # noqa: E402

FLAGS = {"device-local": E.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "host-visible": E.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
         "coherent": E.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "cached": E.VK_MEMORY_PROPERTY_HOST_CACHED_BIT}


def seconds(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="16,256")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    with vk.Device(vk.devices()[args.device]) as device:
        props = device._memory_properties
        print(f"{device.info.name}, driver {device.info.driver_version}; memory types:")
        for i in range(props.memoryTypeCount):
            flags = props.memoryTypes[i].propertyFlags
            names = [name for name, bit in FLAGS.items() if flags & bit] or ["(none)"]
            print(f"  {i}: heap {props.memoryTypes[i].heapIndex}, {' '.join(names)}")
        for mib in (int(s) for s in args.sizes_mib.split(",")):
            data = np.random.default_rng(mib).integers(0, 255, mib << 20, dtype=np.uint8)
            with device.buffer(data.nbytes, host_visible=False) as buf:
                write = seconds(lambda: buf.write(data), args.reps)  # noqa: B023
                read = seconds(lambda: buf.read(np.uint8, data.shape), args.reps)  # noqa: B023
                assert np.array_equal(buf.read(np.uint8, data.shape), data), "read back differs"

                def read_plain(buf=buf, data=data):
                    with vk.Buffer(device, data.nbytes, host_visible=True) as staging:
                        copy_buffer(device, buf, staging, 0, 0, data.nbytes)
                        return staging.read(np.uint8, data.shape)

                plain = seconds(read_plain, 1 if mib > 64 else args.reps)
                with vk.Buffer(device, 16, host_visible=True) as a, vk.Buffer(device, 16, readback=True,
                                                                                host_visible=True) as b:
                    where = f"staging types: plain mapped {a.memory_type}, read-back {b.memory_type}"
            print(f"  {mib:5d} MiB: write {mib / 1024 / write:7.3f} GiB/s, read {mib / 1024 / read:7.3f} GiB/s, "
                  f"read through plain mapped staging {mib / 1024 / plain:7.3f} GiB/s ({where})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
