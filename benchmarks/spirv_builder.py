"""Benchmark: build a large compute module with ModuleBuilder and turn it into words.

The kernel is an unrolled chain over a storage buffer: per step a load, an FMul by a
fresh f32 constant, an FAdd, a GLSL.std.450 Fma, a store (five instructions plus the
access chains), so the builder's operand encoding, constant/type de-duplication, section
layout, interface and capability derivation all run at scale. Reports instructions per
second for the build and for `to_words()` (derivation + encode) separately.
Run: `PYTHONPATH=src python3 benchmarks/spirv_builder.py [--steps 20000] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import platform
import time

from hydroplane.spirv import Op
from hydroplane.spirv.builder import ModuleBuilder


def build(steps: int) -> ModuleBuilder:
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    data, ptr = b.storage_buffer(f32, binding=0, name="data")
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    zero = b.u32(0)
    acc = b.constant(f32, 0.0)
    for step in range(steps):
        slot = b.emit(Op.AccessChain, ptr, data, zero, b.u32(step % 4096))
        value = b.emit(Op.Load, f32, slot)
        scaled = b.emit(Op.FMul, f32, value, b.constant(f32, 1.0 + (step % 1000) / 1000))
        acc = b.emit(Op.FAdd, f32, acc, scaled)
        acc = b.ext_inst("GLSL.std.450", "Fma", f32, acc, scaled, value)
        b.emit(Op.Store, slot, acc)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(64,))
    return b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    build_times, words_times = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        b = build(args.steps)
        t1 = time.perf_counter()
        words = b.to_words()
        t2 = time.perf_counter()
        build_times.append(t1 - t0)
        words_times.append(t2 - t1)
    count = len(b.module().instructions)
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}")
    print(f"module: {count} instructions, {len(words) * 4 / 1e6:.2f} MB")
    for label, times in (("build", build_times), ("to_words", words_times)):
        best = min(times)
        print(f"{label:9s} best {best * 1e3:8.1f} ms  ({count / best / 1e6:.2f} M instructions/s)")


if __name__ == "__main__":
    main()
