"""Host overhead per dispatch of a cached pipeline: hydroplane.vk against the same loop written in C.

Times submit + wait of an empty kernel (one workgroup of one invocation, built with our module
builder) through `Recording.run()` and through the cached `Device.dispatch()`, then builds
benchmarks/vk_dispatch_loop.c with gcc (when gcc is there) and times the same reset/submit/wait
loop in C on the same device. The issue's target: Python within 25 us of C.

    PYTHONPATH=src python3 benchmarks/vk_dispatch_overhead.py [--iterations N] [--device I] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_US = 25.0


def empty_kernel_words():
    """An empty GLCompute kernel (local size 1), made with hydroplane's module builder."""
    from hydroplane.spirv.builder import ModuleBuilder
    from hydroplane.spirv.grammar import Op

    b = ModuleBuilder()
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(1,))
    return b.to_words()


def time_loop(fn, iterations: int) -> float:
    """Nanoseconds per call of fn over `iterations` calls."""
    start = time.perf_counter_ns()
    for _ in range(iterations):
        fn()
    return (time.perf_counter_ns() - start) / iterations


class CLoop:
    """benchmarks/vk_dispatch_loop.c built with gcc into a temporary folder (None-valued without gcc)."""

    def __init__(self, words, tmp: Path):
        self.note, self.exe, self.spv = None, tmp / "vk_dispatch_loop", tmp / "empty.spv"
        self.spv.write_bytes(bytes(words))
        gcc = shutil.which("gcc") or shutil.which("cc")
        if not gcc:
            self.note = "no C compiler here"
            return
        build = subprocess.run([gcc, "-std=c11", "-O2", "-o", str(self.exe), str(HERE / "vk_dispatch_loop.c"), "-ldl"],
                               capture_output=True, text=True)
        if build.returncode != 0:
            self.note = f"build failed: {build.stderr[-500:]}"

    def ns_per_dispatch(self, iterations: int, device_index: int) -> float | None:
        if self.note:
            return None
        run = subprocess.run([str(self.exe), str(self.spv), str(iterations), str(device_index)], capture_output=True,
                             text=True, timeout=600)
        if run.returncode != 0:
            self.note = f"run failed: {run.stderr[-500:]}"
            return None
        return float(run.stdout.split()[-1])


def measure(words, iterations: int, device_index: int, rounds: int) -> dict:
    """Alternate C and Python loops for `rounds` rounds (a busy machine shifts all of them alike);
    each method's best round counts."""
    from hydroplane.vk import Device, Instance, devices

    best = {"python_recording_run_ns": float("inf"), "python_device_dispatch_ns": float("inf"), "c_loop_ns": None}
    with tempfile.TemporaryDirectory() as tmp, Instance(validation=False) as inst:
        c_loop = CLoop(words, Path(tmp))
        info = devices(inst)[device_index]
        with Device(info) as dev:
            pipe = dev.pipeline(words)
            rec = dev.record(pipe, 1, {})
            time_loop(rec.run, 50)  # warm up

            def dispatch():
                dev.dispatch(pipe, 1, {})

            for _ in range(rounds):
                c = c_loop.ns_per_dispatch(iterations, device_index)
                if c is not None:
                    best["c_loop_ns"] = c if best["c_loop_ns"] is None else min(best["c_loop_ns"], c)
                for key, fn in (("python_recording_run_ns", rec.run), ("python_device_dispatch_ns", dispatch)):
                    best[key] = min(best[key], time_loop(fn, iterations))
    best.update(device=info.name, driver=f"{info.driver_name} {info.driver_version}", rounds=rounds)
    if c_loop.note:
        best["c_note"] = c_loop.note
    return best


def report(numbers: dict) -> str:
    lines = [f"device: {numbers['device']} ({numbers['driver']}), {numbers['iterations']} iterations, "
             f"best of {numbers['rounds']} alternating rounds",
             f"  Recording.run()      {numbers['python_recording_run_ns'] / 1e3:9.2f} us per dispatch",
             f"  Device.dispatch()    {numbers['python_device_dispatch_ns'] / 1e3:9.2f} us per dispatch"]
    if numbers.get("c_loop_ns") is not None:
        c = numbers["c_loop_ns"]
        lines.append(f"  C loop               {c / 1e3:9.2f} us per dispatch")
        for key, label in (("python_recording_run_ns", "Recording.run()"), ("python_device_dispatch_ns",
                                                                             "Device.dispatch()")):
            extra = (numbers[key] - c) / 1e3
            verdict = "within" if extra <= TARGET_US else "OVER"
            lines.append(f"  {label} - C = {extra:+.2f} us ({verdict} the {TARGET_US:g} us target)")
    else:
        lines.append(f"  C loop: {numbers.get('c_note')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--device", type=int, default=0, help="physical device index (vkEnumeratePhysicalDevices)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating C/Python rounds; the best counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.pop("HYDROPLANE_VALIDATION", None)
    words = empty_kernel_words()
    numbers = {"iterations": args.iterations, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    numbers.update(measure(words, args.iterations, args.device, args.rounds))
    text = json.dumps(numbers, indent=2) if args.json else report(numbers)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "vk_dispatch_overhead.txt").write_text(report(numbers) + "\n")
        Path(os.environ["OUT"], "vk_dispatch_overhead.json").write_text(json.dumps(numbers, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
