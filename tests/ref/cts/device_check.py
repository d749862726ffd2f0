"""The CTS-style cooperative-matrix matrix outside pytest, for a real GPU (written for the lent
NVIDIA H200, which has Python with numpy and ml_dtypes but no glslang).

    # in the test userland (glslangValidator): every case, scaled to the GPU's tiles, to SPIR-V
    cd tests/ref && PYTHONPATH=../../src:. python3 cts/device_check.py --compile DIR [--scale h200]
    # on the GPU machine: reference executor and device, each against NumPy, and against each other
    cd tests/ref && PYTHONPATH=../../src:. python3 cts/device_check.py --run DIR [--out FILE]

`--scale h200` turns the matrix's 8x8x8 / subgroup-8 cases into the H200's shapes: 16x16x16
subgroup-32 tiles (K = 32 for 8-bit inputs, the only K its driver offers for them; 2x2
reductions from 32x32). A case runs on the device when the device reports its type pair and shape
(the same rule as the pytest matrix); every case runs on the reference executor.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
import traceback
import zlib
from pathlib import Path

import numpy as np

from cts import extras
from cts.cases import INT_PAIRS, Case, build_cases
from cts.device_types import missing_matrix_types
from cts.expect import expected, make_inputs
from cts.runner import check, device_runs, run_device, run_ref, same_values, tolerance

SCALES = {"lavapipe": None, "h200": {"mn": 16, "k": 16, "k8": 32, "sg": 32}}
EXTRAS = {"lavapipe": dict(tile=8, sg=8, invocations=64), "h200": dict(tile=16, sg=32, invocations=256)}


def scaled_cases(scale: str) -> list[Case]:
    cases = build_cases()
    shape = SCALES[scale]
    if shape is None:
        return cases
    out, seen = [], set()
    for case in cases:
        mn = shape["mn"] * (2 if case.reduce == "2x2" else 1)
        k = shape["k8"] if case.pair in INT_PAIRS or case.pair.startswith("e") else shape["k"]
        new = dataclasses.replace(case, m=mn, n=mn, k=k if case.op.startswith("muladd") else mn, sg=shape["sg"])
        if new.id not in seen:
            seen.add(new.id)
            out.append(new)
    return out


def compile_all(folder: Path, scale: str) -> None:
    import shutil

    from cts.compile import compile_glsl, glsl_source
    from hydroplane.spirv.lower import lower
    from hydroplane.spirv.target import Target

    glslang = shutil.which("glslangValidator")
    if glslang is None:
        raise SystemExit("glslangValidator is not on PATH: compile inside the test userland")
    source = glsl_source("coopmat_case.comp")
    folder.mkdir(parents=True, exist_ok=True)
    for case in scaled_cases(scale):
        words = compile_glsl(glslang, source, case.defines())
        (folder / f"{case.id}.spv").write_bytes(words)
        if case.ext:
            (folder / f"{case.id}.nv2.spv").write_bytes(lower(words, Target.profile("nvidia-h200")).words().tobytes())
    for extra in extras.device_extras(**EXTRAS[scale]):
        (folder / f"{extra.name}.spv").write_bytes(compile_glsl(glslang, glsl_source(extra.source), extra.defines))
    (folder / "scale.txt").write_text(scale)
    print(f"compiled {len(scaled_cases(scale))} cases into {folder}")


def run_all(folder: Path, out) -> int:
    from hydroplane.vk import Device, devices

    scale = (folder / "scale.txt").read_text().strip()
    found = [d for d in devices() if d.cooperative_matrix_khr]
    info = found[0] if found else None
    stamp = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    print(f"# cts/device_check.py --run ({scale} scale), {stamp}, Python {sys.version.split()[0]}", file=out)
    print(f"# device: {info.name if info else 'none'} ({info.driver_name if info else ''} "
          f"{info.driver_version if info else ''}), subgroup size {info.subgroup_size if info else '-'}", file=out)
    counts = {"ref ok": 0, "ref FAIL": 0, "device ok": 0, "device FAIL": 0, "ref-only": 0}
    dev = Device(info, enable_all=True) if info else None
    try:
        for case in scaled_cases(scale):
            words = (folder / f"{case.id}.spv").read_bytes()
            rng = np.random.default_rng(zlib.crc32(case.id.encode()))
            inputs = make_inputs(case, rng)
            want = expected(case, inputs)
            try:
                ref = check(case, run_ref(case, words, inputs), want, "reference executor")
                counts["ref ok"] += 1
            except Exception as exc:  # report every failing case, keep going
                counts["ref FAIL"] += 1
                print(f"FAIL ref     {case.id}: {_short(exc)}", file=out)
                ref = None
            device_words = (folder / f"{case.id}.nv2.spv").read_bytes() if case.ext else words
            why_not = device_runs(case, info, device_words) if info else "no device"
            if why_not is not None:
                counts["ref-only"] += 1
                continue
            try:
                got = check(case, run_device(dev, case, device_words, inputs), want, "device", device=True)
                if ref is not None and case.op not in ("length", "composite_extract"):
                    same_values(ref["o"], got["o"], tolerance(case), "reference executor vs device")
                counts["device ok"] += 1
                print(f"ok   device  {case.id}", file=out)
            except Exception as exc:
                counts["device FAIL"] += 1
                print(f"FAIL device  {case.id}: {_short(exc)}", file=out)
        for extra in extras.device_extras(**EXTRAS[scale]):
            run_extra(folder, extra, info, dev, counts, out)
    finally:
        if dev is not None:
            dev.close()
    print("# " + ", ".join(f"{k}: {v}" for k, v in counts.items()), file=out)
    return counts["ref FAIL"] + counts["device FAIL"]


def extra_runs(extra, info, words) -> str | None:
    """Why the device cannot run an extra kernel (None when it can)."""
    if info is None:
        return "no device"
    if extra.sg != info.subgroup_size:
        return f"subgroup size {extra.sg}"
    missing = missing_matrix_types(words, info)
    if missing:
        return "matrix types not offered: " + ", ".join(missing)
    nv2 = info.features.get("cooperative_matrix2_nv", {})
    if extra.needs.get("tensor_addressing") and not nv2.get("cooperativeMatrixTensorAddressing"):
        return "no NV2 tensor addressing"
    invocations = extra.needs.get("workgroup_scope")
    if invocations and not (nv2.get("cooperativeMatrixWorkgroupScope") and invocations <= info.coop_nv2_properties.get(
            "cooperativeMatrixWorkgroupScopeMaxWorkgroupSize", 0)):
        return "no NV2 workgroup scope for this size"
    return None


def run_extra(folder: Path, extra, info, dev, counts: dict, out) -> None:
    from hydroplane.ref import Executor
    from hydroplane.vk import Binding

    words = (folder / f"{extra.name}.spv").read_bytes()
    ex = Executor(subgroup_size=extra.sg)
    bufs = {i: ex.buffer(b) for i, b in enumerate(extra.buffers)}
    try:
        ex.dispatch(ex.kernel(words), extra.grid, bufs, push=extra.push or None)
        extra.check([ex.read(bufs[i], b.dtype) for i, b in enumerate(extra.buffers)])
        counts["ref ok"] += 1
    except Exception as exc:
        counts["ref FAIL"] += 1
        print(f"FAIL ref     {extra.name}: {_short(exc)}", file=out)
    why_not = extra_runs(extra, info, words)
    if why_not is not None:
        counts["ref-only"] += 1
        print(f"ref-only     {extra.name}: {why_not}", file=out)
        return
    try:
        dbufs = {i: dev.buffer(b) for i, b in enumerate(extra.buffers)}
        pipeline = dev.pipeline(words, [Binding(0, i) for i in range(len(extra.buffers))],
                                push_constant_size=len(extra.push))
        dev.dispatch(pipeline, extra.grid, dbufs, push=np.frombuffer(extra.push, np.uint8) if extra.push else None)
        extra.check([dbufs[i].read(b.dtype) for i, b in enumerate(extra.buffers)])
        counts["device ok"] += 1
        print(f"ok   device  {extra.name}", file=out)
    except Exception as exc:
        counts["device FAIL"] += 1
        print(f"FAIL device  {extra.name}: {_short(exc)}", file=out)


def _short(exc: Exception) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " | ")
    return text[:600]


class _Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)
            s.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", type=Path, help="write every case's SPIR-V into this folder")
    parser.add_argument("--run", type=Path, help="run the cases compiled into this folder")
    parser.add_argument("--scale", choices=sorted(SCALES), default="h200")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    if args.compile:
        compile_all(args.compile, args.scale)
        return 0
    if args.run:
        files = [sys.stdout] + ([args.out.open("w")] if args.out else [])
        return 1 if run_all(args.run, _Tee(*files)) else 0
    parser.error("give --compile DIR or --run DIR")
    return 2


if __name__ == "__main__":
    sys.exit(main())
