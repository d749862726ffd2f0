"""The language's device-differential suite: every conformance case on a Vulkan device and on the reference
executor, element for element, and the reference executor against NumPy.

    PYTHONPATH=src python3 tools/lang_on_device.py [--device 0] [--scale 16] [--seed 0] [--only TEXT] [--out DIR]

The cases are `hydroplane.lang.conformance.device_cases` (scalar, vector, control-flow, memory, atomic,
subgroup and cooperative-matrix kernels, every row of docs/language.md's "Defined semantics" at its edges:
negatives, zeros, INT_MIN, -1 divisors, NaN, inf, shift counts of the width and more, out-of-range
float -> int; seed 002's tiles at every shape the device reports; a K-loop GEMM). Each is compiled for
the device's own target (lowered as a launch lowers it) and for the reference executor, which runs with
the device's subgroup size. A case the device cannot run (a shape it does not report) is N/A.

Prints a header (UTC time, Python, device, driver), one line per case (PASS / FAIL / ERROR / N/A, the
elements that differ between device and ref and between ref and NumPy, the first difference), the
totals last; with --out DIR also writes DIR/lang_on_device.txt (the same) and DIR/lang_on_device.json.
Exit status 1 when any case FAILs or ERRORs. On the H200 it takes well under 3 minutes; on lavapipe
about a minute with --scale 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from hydroplane.lang import conformance
from hydroplane.launch import executors


def make_runner(device, ref):
    """run(where, kernel, trial) for conformance.run_case: compile for that executor's target, run, read back."""
    def run(where: str, kernel, trial: conformance.Trial) -> dict:
        executor = device if where == "device" else ref
        spec = kernel.compile(executor.target, **trial.constexprs)
        buffers = {p.binding: np.array(trial.arrays[p.name], copy=True) for p in spec.buffers}
        push = [trial.scalars[p.name] for p in spec.scalars] or None
        out = executors.run(spec.words, trial.grid, buffers, push=push, executor=executor, validate=False)
        return {p.name: out[p.binding] for p in spec.buffers}
    return run


def run_suite(device, ref, scale: int, seed: int, only: str | None = None, progress=None):
    """Every case of the device's list on `device` vs `ref` (executors); returns (setup, results)."""
    setup = conformance.Setup(device.target, scale)
    run = make_runner(device, ref)
    results = []
    for index, case in enumerate(conformance.device_cases(setup)):
        if only and only not in case.name:
            continue
        started = time.perf_counter()
        result = conformance.run_case(case, setup, run, seed + index)
        if progress is not None:
            progress(result, time.perf_counter() - started)
        results.append(result)
    return setup, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0, help="Vulkan device number (default 0)")
    parser.add_argument("--scale", type=int, default=16, help="workgroups of 64 per element-wise case (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="first random seed (case i uses seed + i)")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--out", type=Path, help="folder for lang_on_device.txt and lang_on_device.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    device = executors.get_executor(args.device)
    try:
        ref = executors.get_executor("ref", subgroup_size=device.target.subgroup_size)
        info = device.target
        header = (f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
                  f"device {args.device}: {info.description or info.name}; subgroup {info.subgroup_size}, "
                  f"scale {args.scale}, seed {args.seed}")
        print(header, flush=True)

        def progress(result, seconds):
            print(f"  {result.status:5} {seconds:6.2f} s  {result.name}", file=sys.stderr, flush=True)

        setup, results = run_suite(device, ref, args.scale, args.seed, args.only, progress)
    finally:
        device.close()
    table = conformance.summary(results)
    elapsed = time.perf_counter() - started
    text = f"{header}\n{table}\n({elapsed:.1f} s)"
    print(table)
    print(f"({elapsed:.1f} s)")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "lang_on_device.txt").write_text(text + "\n")
        record = {"header": header, "seconds": elapsed, "target": setup.target.to_dict(),
                  "results": [dataclasses.asdict(r) for r in results]}
        (args.out / "lang_on_device.json").write_text(json.dumps(record, indent=1) + "\n")
    return 1 if any(r.status in ("FAIL", "ERROR") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
