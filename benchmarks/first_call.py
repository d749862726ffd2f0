"""The first call (issue 22 item 6), in a new process each time: the seconds from `import hydroplane` to the results
of a few calls (the issue's metric), cold (an empty cache folder), warm (the cache folder the cold process left: the
library kernels' specializations, their lowered CompiledKernels, limits and spirv-val verdicts, and the driver's
pipeline cache; docs/runtime.md "The first call"), and warm with the disk caches off (HYDROPLANE_DISK_CACHE=0: what
they save). The drivers' own shader caches are off in every run (__GL_SHADER_DISK_CACHE=0 for NVIDIA,
MESA_SHADER_CACHE_DISABLE=true for Mesa); `--driver-cache` adds a warm run with them on (sharing the cache folder),
to show the driver's part.

Each process imports NumPy and draws its inputs with it first (a user's own data), then starts the clock and
imports hydroplane: what the metric counts is hydroplane's alone, the inputs' uploads (`hydroplane.device_array`,
`hydroplane.quant.quantize`) included, up to the last call's `.numpy()`. Beside it, the whole-process figure (what
this benchmark reported before 2026-12-06) runs from before `import numpy`: NumPy's import and the drawing of the
inputs are in it, the interpreter's start is not. Both are printed, cold against warm.

    PYTHONPATH=src python3 benchmarks/first_call.py [--tiny] [--runs 3] [--calls matmul,attention] [--breakdown]
        [--driver-cache] [--imports 25] [--import-costs 9] [--json out.json]

The calls (each f16, DeviceArrays in, `.numpy()` of the result): `matmul` M x N x K (`x @ W.T`), `gemv` 1 x 4096 x
4096, `attention` causal 1 x 8 x S x 128, `quant` 1 x 4096 x 4096 against a q4_0 weight (hydroplane.quant.quantize).
`--breakdown` prints where each process's time went (medians over the runs): the interpreter's start, importing
NumPy and drawing the inputs (outside the metric), importing hydroplane (the package, then the modules the calls load
on first use; and of those imports, the time spent compiling sources that have no fresh .pyc file, with their count
below the table), opening the device (VkInstance, VkDevice, the pipeline cache's file), the uploads, then per call:
the disk cache's key (the package's digest once, then the kernel's text) and its reads, the language compiler,
lowering and reflecting (spirv.compile_kernel), the launch limits, spirv-val, vkCreateComputePipelines, the waits
for the device (its work, and on lavapipe the LLVM compile of each new pipeline at its first dispatch), the
read-back, and the call's host path (the rest); and the exit (writing the pipeline cache). The breakdown's own
wrapping of those functions (after the imports; it imports a module the calls load only on a miss) is timed and
left out of both figures.
`--imports N` adds one more warm process run with `python -X importtime` (not timed with the others) and prints
what its imports cost by package (hydroplane's sub-packages, NumPy, the rest) and its N costliest modules, each by
its own time (the module's code, not the modules it imports).
`--import-costs N` adds N processes that only import (NumPy, then hydroplane and the calls' modules, no device) and
prints the medians of what that import is made of: reading and unmarshalling .pyc files (compiling the sources
that have no fresh one: a read-only or new checkout, PYTHONDONTWRITEBYTECODE), making dataclasses
(`dataclasses` generating and compiling their methods), making Enum classes (hydroplane.spirv.enums' grammar enums
above all), and the rest (the modules' own code, other classes, extension modules). `--runs 0` runs only these.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Both children's wrapper: a function whose exclusive time (its own, less that of the wrapped calls inside it) goes to
# charge(seconds).
TIMER = r"""
stack = []

def timed(original, charge):
    def wrapper(*args, **kwargs):
        stack.append(0.0)
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - t
            charge(elapsed - stack.pop())
            if stack:
                stack[-1] += elapsed
    return wrapper
"""

# The child process. The NumPy inputs are drawn first (a user's own data), then the metric runs from before
# `import hydroplane` to the calls' results (hydroplane.device_array's uploads and quant.quantize are hydroplane's, so
# they count); the whole-process figure runs from before `import numpy` and includes the drawing. With BREAKDOWN,
# functions of the path are wrapped (after the imports, which are timed on their own) to add their exclusive time to a
# bucket; the wrapping's own time (importing a module the calls have not loaded yet, so that its functions can be
# wrapped) is measured and left out of both figures.
CHILD = r"""
import time
wall0, start = time.time(), time.perf_counter()
import importlib._bootstrap_external as bootstrap, sys  # loaded with the interpreter already
compiled = [0, 0.0]  # modules compiled from source in this process (no fresh .pyc file), and the seconds it took
source_to_code = bootstrap.SourceFileLoader.source_to_code

def counted_source_to_code(*args, **kwargs):
    t = time.perf_counter()
    try:
        return source_to_code(*args, **kwargs)
    finally:
        compiled[0] += 1
        compiled[1] += time.perf_counter() - t
bootstrap.SourceFileLoader.source_to_code = counted_source_to_code
import numpy as np
t_numpy = time.perf_counter()
CALLS, SIZES, BREAKDOWN = {calls!r}, {sizes!r}, {breakdown!r}
rng = np.random.default_rng(0)
m, n, k, s = SIZES
host = {{}}
if "matmul" in CALLS:
    host["matmul"] = (rng.uniform(-1, 1, (m, k)).astype(np.float16), rng.uniform(-1, 1, (n, k)).astype(np.float16))
if "gemv" in CALLS or "quant" in CALLS:
    host["gemv"] = (rng.uniform(-1, 1, (1, 4096)).astype(np.float16),
                    rng.uniform(-1, 1, (4096, 4096)).astype(np.float16))
if "quant" in CALLS:
    host["quant"] = rng.uniform(-1, 1, (4096, 4096)).astype(np.float32)
if "attention" in CALLS:
    host["attention"] = rng.uniform(-1, 1, (1, 8, s, 128)).astype(np.float16)
t_drawn = time.perf_counter()
import hydroplane
t_package = time.perf_counter()
hydroplane.device_array, hydroplane.matmul, hydroplane.attention, hydroplane.quant
t_modules = time.perf_counter()
compiled_by_imports = list(compiled)
import importlib
buckets = {{}}
{timer}
def wrap(module, path, bucket):
    owner = importlib.import_module(module)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    original = getattr(owner, name, None)
    if original is None:  # not in this version of the package
        return

    def charge(seconds):
        buckets[bucket] = buckets.get(bucket, 0.0) + seconds
        if bucket == "language compiler":
            buckets["compiles"] = buckets.get("compiles", 0) + 1
    setattr(owner, name, timed(original, charge))

t = time.perf_counter()
if BREAKDOWN:
    for module, path, bucket in [
            ("hydroplane.lang.disk_cache", "package_digest", "cache key: package digest"),
            ("hydroplane.lang.disk_cache", "key_of", "cache key: kernel text"),
            ("hydroplane.lang.disk_cache", "load", "disk cache read"),
            ("hydroplane.lang.disk_cache", "store", "disk cache write"),
            ("hydroplane.lang.compiler", "Kernel.compile", "kernel lookup"),
            ("hydroplane.lang.compiler", "_compile_kernel", "language compiler"),
            ("hydroplane.launch.executors", "compile_kernel", "lower + reflect"),
            ("hydroplane.lang.disk_cache", "compile_kernel", "lower + reflect"),
            ("hydroplane.launch.limits", "validate", "spirv-val"),
            ("hydroplane.launch.executors", "check_target_limits", "launch limits"),
            ("hydroplane.vk.pipeline", "Pipeline._create_pipeline", "vkCreateComputePipelines"),
            ("hydroplane.vk.sync", "Fence.wait", "device wait"),
            ("hydroplane.launch.runtime", "DeviceRuntime.download", "read-back")]:
        try:
            wrap(module, path, bucket)
        except ImportError:  # not in this version of the package
            pass
instrumentation = time.perf_counter() - t
phases = {{"numpy import": t_numpy - start, "inputs drawn (NumPy, before import hydroplane)": t_drawn - t_numpy,
          "hydroplane import": t_package - t_drawn, "call modules import": t_modules - t_package,
          "  of the imports: sources compiled (no fresh .pyc)": compiled_by_imports[1]}}
t = time.perf_counter()
hydroplane.launch.runtime.runtime()  # the default device: VkInstance, VkDevice, the pipeline cache's file
phases["device open"] = time.perf_counter() - t
t = time.perf_counter()
data = {{}}
if "matmul" in CALLS:
    data["matmul"] = tuple(hydroplane.device_array(a) for a in host["matmul"])
if "gemv" in CALLS or "quant" in CALLS:
    data["gemv"] = tuple(hydroplane.device_array(a) for a in host["gemv"])
if "quant" in CALLS:
    data["quant"] = hydroplane.quant.quantize(host["quant"], "q4_0")
if "attention" in CALLS:
    data["attention"] = hydroplane.device_array(host["attention"])
hydroplane.synchronize()
phases["uploads (device_array; quant.quantize)"] = time.perf_counter() - t
calls = {{}}
for name in CALLS:
    before, t = dict(buckets), time.perf_counter()
    if name == "matmul":
        x, w = data["matmul"]
        y = hydroplane.matmul(x, w.T).numpy()
    elif name == "gemv":
        x, w = data["gemv"]
        y = hydroplane.matmul(x, w.T).numpy()
    elif name == "quant":
        y = hydroplane.matmul(data["gemv"][0], data["quant"].T).numpy()
    else:
        q = data["attention"]
        y = hydroplane.attention(q, q, q, causal=True).numpy()
    total = time.perf_counter() - t
    assert np.isfinite(y).all(), name
    parts = {{b: v - before.get(b, 0) for b, v in buckets.items() if v - before.get(b, 0)}}
    parts["host path (the rest)"] = total - sum(v for b, v in parts.items() if b != "compiles")
    calls[name] = {{"total": total, **parts}}
end = time.perf_counter()
result = {{"from_import": end - t_drawn - instrumentation, "whole": end - start - instrumentation}}
if BREAKDOWN:
    result.update({{"wall0": wall0, "wall1": wall0 + end - start, "phases": phases, "calls": calls,
                   "instrumentation": instrumentation, "modules compiled by the imports": compiled_by_imports[0],
                   "python": sys.version.split()[0], "dont_write_bytecode": sys.dont_write_bytecode}})
print(json.dumps(result))
"""


def child(calls: list[str], sizes: tuple, cache: str, disk_cache: bool, breakdown: bool,
          driver_cache: bool = False, importtime: bool = False) -> dict:
    """One new process: its seconds from `import hydroplane` to the last result ("from_import", the issue's metric)
    and from `import numpy` to it ("whole": the NumPy import and the drawing of the inputs included), and with
    `breakdown` its phases, the interpreter's start and its exit (from the wall clock around it); with `importtime`
    its imports' own times in microseconds by module ("imports")."""
    env = dict(os.environ, XDG_CACHE_HOME=cache, HYDROPLANE_DISK_CACHE="1" if disk_cache else "0")
    if not driver_cache:
        env.update(__GL_SHADER_DISK_CACHE="0", MESA_SHADER_CACHE_DISABLE="true")
    code = "import json\n" + CHILD.format(calls=calls, sizes=sizes, breakdown=breakdown, timer=TIMER)
    before = time.time()
    out = subprocess.run([sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the child process failed ({out.returncode}):\n{out.stderr[-4000:]}")
    after = time.time()
    if importtime:
        return {"imports": import_times(out.stderr)}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not breakdown:
        return result
    result["phases"] = {"interpreter start": result["wall0"] - before, **result["phases"],
                        "exit (pipeline cache written)": after - result["wall1"]}
    return result


# An import-only child for --import-costs: the exclusive time of .pyc reads (SourceFileLoader.get_code), compiles of
# sources without a fresh .pyc (source_to_code), dataclass creation (dataclasses._process_class) and Enum class
# creation (EnumType.__new__, and for the classes enum._simple_enum makes, as hydroplane.spirv.enums' are, the
# members it adds after it) within the call modules' import.
IMPORT_COSTS_CHILD = r"""
import dataclasses, enum, importlib._bootstrap_external as bootstrap, json, sys, time
import numpy
parts, counts = {}, {}
""" + TIMER + r"""
def charge_to(part, count=True):
    def charge(seconds):
        parts[part] = parts.get(part, 0.0) + seconds
        counts[part] = counts.get(part, 0) + count
    return charge

bootstrap.SourceFileLoader.get_code = timed(bootstrap.SourceFileLoader.get_code, charge_to("pyc"))
bootstrap.SourceFileLoader.source_to_code = timed(bootstrap.SourceFileLoader.source_to_code, charge_to("compile"))
dataclasses._process_class = timed(dataclasses._process_class, charge_to("dataclasses"))
enum.EnumType.__new__ = staticmethod(timed(enum.EnumType.__new__, charge_to("enums")))
if hasattr(enum, "_simple_enum"):  # its class is counted at EnumType.__new__, inside the conversion
    simple_enum = enum._simple_enum
    enum._simple_enum = lambda *args, **kwargs: timed(simple_enum(*args, **kwargs), charge_to("enums", count=False))
before = set(sys.modules)
t = time.perf_counter()
import hydroplane
hydroplane.device_array, hydroplane.matmul, hydroplane.attention
total = time.perf_counter() - t
print(json.dumps({"total": total, "parts": parts, "counts": counts,
                  "hydroplane modules": sum(1 for m in set(sys.modules) - before if m.startswith("hydroplane"))}))
"""


def import_costs(runs: int) -> list[dict]:
    """`runs` new processes that import the call modules (no device): each its import's parts (seconds)."""
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", IMPORT_COSTS_CHILD], capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"the import child failed ({out.returncode}):\n{out.stderr[-4000:]}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return results


def print_import_costs(results: list[dict]) -> None:
    labels = {"pyc": "modules' code read (.pyc files found and unmarshalled)",
              "compile": "modules compiled from source (no fresh .pyc file)",
              "dataclasses": "dataclasses made", "enums": "Enum classes made"}
    total = median(r["total"] for r in results)
    print(f"\nimporting hydroplane and the calls' modules ({results[0]['hydroplane modules']} hydroplane modules; "
          f"median of {len(results)} processes, ms): {total * 1e3:.1f}")
    rest = [r["total"] - sum(r["parts"].values()) for r in results]
    for part, label in labels.items():
        print(f"  {median(r['parts'].get(part, 0.0) for r in results) * 1e3:7.1f}  {label} "
              f"({results[0]['counts'].get(part, 0)})")
    print(f"  {median(rest) * 1e3:7.1f}  the rest (the modules' own code, other classes, extension modules)")


def import_times(stderr: str) -> dict[str, int]:
    """`-X importtime`'s lines ("import time: SELF | CUMULATIVE | NAME") as {module: its own microseconds}."""
    times = {}
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            own, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
            if own.isdigit():
                times[name] = times.get(name, 0) + int(own)
    return times


def print_imports(times: dict[str, int], top: int) -> None:
    """What a warm process's imports cost: by package (hydroplane's sub-packages apart), then the costliest
    modules, each by its own time."""
    groups: dict[str, int] = {}
    for name, own in times.items():
        parts = name.split(".")
        group = ".".join(parts[:2]) if parts[0] == "hydroplane" else parts[0] if parts[0] in ("numpy", "ml_dtypes") \
            else "(the standard library and the rest)"
        groups[group] = groups.get(group, 0) + own
    print(f"\nimports of a warm process (python -X importtime, own time of each module), ms: "
          f"{sum(times.values()) / 1e3:.0f} in all, hydroplane's "
          f"{sum(v for k, v in times.items() if k.split('.')[0] == 'hydroplane') / 1e3:.0f}")
    for group, own in sorted(groups.items(), key=lambda item: -item[1]):
        print(f"  {own / 1e3:7.1f}  {group}")
    print(f"the {top} costliest modules:")
    for name, own in sorted(times.items(), key=lambda item: -item[1])[:top]:
        print(f"  {own / 1e3:7.1f}  {name}")


def median(values) -> float:
    return statistics.median(values)


def print_breakdown(kinds: dict[str, list[dict]]) -> None:
    """One table: a row per phase (and per part of each call), a column per kind of process, medians in ms (a part
    under 0.5 ms in every column is left out)."""
    names = list(kinds)
    first = kinds[names[0]][0]
    rows: list[tuple[str, list[float]]] = [(p, [median(r["phases"][p] for r in kinds[n]) * 1e3 for n in names])
                                           for p in first["phases"]]
    for call in first["calls"]:
        parts = ["total"]
        for r in (r for n in names for r in kinds[n]):
            parts += [p for p in r["calls"][call] if p not in parts]
        for part in parts:
            scale = 1 if part == "compiles" else 1e3
            values = [median(r["calls"][call].get(part, 0) for r in kinds[n]) * scale for n in names]
            label = f"{call}: total" if part == "total" else \
                f"  {call}: {'kernels compiled (count)' if part == 'compiles' else part}"
            if part == "compiles" or max(values) >= 0.5:
                rows.append((label, values))
    rows.append(("import hydroplane -> last result (the metric)",
                 [median(r["from_import"] for r in kinds[n]) * 1e3 for n in names]))
    driver = ("device wait", "vkCreateComputePipelines")
    rows.append(("  less the calls' device waits and vkCreateComputePipelines",
                 [median(r["from_import"] - sum(c.get(p, 0) for c in r["calls"].values() for p in driver)
                         for r in kinds[n]) * 1e3 for n in names]))
    rows.append(("import numpy -> last result (whole process)",
                 [median(r["whole"] for r in kinds[n]) * 1e3 for n in names]))
    rows.append(("(not counted: the breakdown's own wrapping)",
                 [median(r["instrumentation"] for r in kinds[n]) * 1e3 for n in names]))
    width = max(len(r[0]) for r in rows)
    print(f"\nbreakdown, ms (median of {len(kinds[names[0]])} processes of each kind):")
    print(f"| {'phase':<{width}} | " + " | ".join(names) + " |")
    print(f"| {'-' * width} | " + " | ".join("-" * len(n) for n in names) + " |")
    for label, values in rows:
        print(f"| {label:<{width}} | " + " | ".join(f"{v:>{len(n)}.0f}" for v, n in zip(values, names)) + " |")
    # a module without a fresh .pyc file is compiled from source by every process that imports it (a new or read-only
    # checkout, PYTHONDONTWRITEBYTECODE, site-packages installed without .pyc files): the environment's cost
    key = "modules compiled by the imports"
    counts = ", ".join(f"{n} {median(r.get(key, 0) for r in kinds[n]):.0f}" for n in names)
    print(f"modules compiled from source by the imports (no fresh .pyc; median): {counts}; "
          f"Python {first.get('python')}, sys.dont_write_bytecode={first.get('dont_write_bytecode')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small shapes (lavapipe)")
    parser.add_argument("--runs", type=int, default=2, help="processes of each kind")
    parser.add_argument("--calls", default="matmul,attention",
                        help="comma-separated, in order: matmul, gemv, attention, quant")
    parser.add_argument("--breakdown", action="store_true", help="where each process's time went")
    parser.add_argument("--driver-cache", action="store_true",
                        help="also a warm process with the driver's own shader cache on")
    parser.add_argument("--imports", type=int, default=0, metavar="N",
                        help="also one warm process under -X importtime: its imports by package and N modules")
    parser.add_argument("--import-costs", type=int, default=0, metavar="N",
                        help="also N import-only processes: what importing the calls' modules is made of")
    parser.add_argument("--json", help="also write every process's measurements to this file")
    args = parser.parse_args()
    calls = args.calls.split(",")
    unknown = set(calls) - {"matmul", "gemv", "attention", "quant"}
    if unknown:
        parser.error(f"unknown calls: {', '.join(sorted(unknown))}")
    sizes = (256, 256, 256, 64) if args.tiny else (4096, 4096, 4096, 1024)
    print(f"first call: {', '.join(calls)} (matmul {sizes[0]}x{sizes[1]}x{sizes[2]} x @ W.T, gemv and quant "
          f"1x4096x4096, causal attention 1x8x{sizes[3]}x128), f16, each in a new process; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    kinds: dict[str, list[dict]] = {"cold": [], "warm": [], "caches off": []}
    if args.driver_cache:
        kinds["warm, driver cache on"] = []
    imports: dict[str, int] = {}
    if args.import_costs:
        print_import_costs(import_costs(args.import_costs))
    if not args.runs:
        return
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            kinds["cold"].append(child(calls, sizes, cache, True, args.breakdown))
            kinds["warm"].append(child(calls, sizes, cache, True, args.breakdown))
            kinds["caches off"].append(child(calls, sizes, cache, False, args.breakdown))
            if args.driver_cache:
                child(calls, sizes, cache, True, False, driver_cache=True)  # fills the driver's cache
                kinds["warm, driver cache on"].append(child(calls, sizes, cache, True, args.breakdown, True))
            if args.imports and run == args.runs - 1:
                imports = child(calls, sizes, cache, True, False, importtime=True)["imports"]
        last = {name: runs[-1] for name, runs in kinds.items()}
        extra = (f" | warm, driver cache on {last['warm, driver cache on']['from_import']:.2f} s"
                 if args.driver_cache else "")
        print(f"run {run}: import hydroplane -> results: cold {last['cold']['from_import']:.2f} s | warm "
              f"{last['warm']['from_import']:.2f} s ({last['warm']['from_import'] / last['cold']['from_import']:.0%} "
              f"of cold) | warm, disk caches off {last['caches off']['from_import']:.2f} s{extra}; whole process: "
              f"cold {last['cold']['whole']:.2f} s, warm {last['warm']['whole']:.2f} s", flush=True)
    for key, label in (("from_import", "import hydroplane -> results (the issue's metric: the NumPy inputs drawn "
                                       "before it; device_array's uploads counted)"),
                       ("whole", "whole process (from before `import numpy`: NumPy's import and the drawing of the "
                                 "inputs included; the interpreter's start not)")):
        cold, warm, off = (median(r[key] for r in kinds[n]) for n in ("cold", "warm", "caches off"))
        target = "; target at most 20%" if key == "from_import" else ""
        print(f"median, {label}: cold {cold:.2f} s, warm {warm:.2f} s ({warm / cold:.0%}{target}), disk caches off "
              f"{off:.2f} s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(kinds, f)
    if args.breakdown:
        print_breakdown(kinds)
    if args.imports:
        print_imports(imports, args.imports)


if __name__ == "__main__":
    main()
