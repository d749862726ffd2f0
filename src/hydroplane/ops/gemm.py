"""Run the GEMM library on a device: pick the device, launch, time, verify, autotune with an on-disk cache.

    runner = GemmRunner.open(None)            # the best device: coop-matrix Vulkan, any Vulkan, else ref
    result = runner.run(problem, config=None)  # the tuned (or default) configuration, verified against NumPy
    print(result.text())

Time is GPU timestamps on Vulkan (vk.bench over a recorded dispatch, warm-up first) and wall time on
the reference executor. The autotuner tries `kernels.candidate_configs` for (device, driver, dtype,
layout, size class), verifies each candidate before timing it, and keeps the winner in
$XDG_CACHE_HOME/hydroplane/gemm.json (~/.cache when unset); the package ships a small table of
winners for known devices (ops/gemm_table.json). This layer sits above kernels, lang, launch and vk.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.kernels.gemm import (
    GemmConfig,
    GemmError,
    GemmProblem,
    coop_shapes,
    random_inputs,
    reference,
    relative_error,
    tolerance,
)
from hydroplane.kernels.gemm.route import (
    GemvConfig,
    Route,
    Step,
    config_from_dict,
    gemm_route,
    route_candidates,
    route_default_config,
    route_verification_problem,
    shape_class,
)
from hydroplane.lang.compiler import Specialization
from hydroplane.launch.prepared import WARMUP_S, DeviceArray, numpy_dtype, prepare
from hydroplane.launch.runtime import runtime_of, words_key
from hydroplane.ops.runner import DeviceRunner, runner_executor

POISON = {"f": -7.25e4, "h": -777.0, "i": -77, "u": 0xFF}  # "h": floats narrower than 32 bits


def cache_path() -> Path:
    """$XDG_CACHE_HOME/hydroplane/gemm.json, or ~/.cache/hydroplane/gemm.json (GemmError when neither is known)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME and no password entry
            raise GemmError("the autotune cache has no folder: set XDG_CACHE_HOME or HOME") from None
    return Path(base) / "hydroplane" / "gemm.json"


class GemmCacheWarning(UserWarning):
    """The autotune cache could not be read or written as it is; the run goes on without (that part of) it."""


_WARNED: set[str] = set()


def _cache_warning(text: str) -> None:
    """warnings.warn once per process for each distinct trouble: a broken cache never costs the run, nor floods."""
    if text not in _WARNED:
        _WARNED.add(text)
        warnings.warn(text, GemmCacheWarning, stacklevel=3)


def poisoned(shape, dtype) -> np.ndarray:
    """An output array holding a value no correct GEMM of the test inputs writes."""
    dtype = np.dtype(dtype)
    kind = dtype.kind if dtype.kind in "iu" else ("f" if dtype.itemsize >= 4 else "h")
    return np.full(shape, POISON[kind], dtype)


@dataclass
class GemmResult:
    """One verified (or failed) GEMM run."""

    problem: GemmProblem
    config: GemmConfig
    device: str
    seconds: float  # median time per GEMM
    timing: str  # "GPU timestamps" or "wall time"
    runs: int
    error: float | None = None  # relative error against NumPy (None: not checked)
    ok: bool = True
    output: np.ndarray | None = field(default=None, repr=False)
    note: str = ""

    @property
    def tflops(self) -> float:
        return self.problem.flops / self.seconds / 1e12 if self.seconds > 0 else 0.0

    def text(self) -> str:
        unit = "TOP/s" if self.problem.dtype.integer else "TFLOP/s"
        lines = [f"gemm {self.problem.describe()} on {self.device}",
                 f"  time    {self.seconds * 1e3:.3f} ms ({self.timing}, median of {self.runs})",
                 f"  speed   {self.tflops:.4g} {unit}",
                 f"  config  {self.config.describe()}"]
        if self.error is not None:
            bound = tolerance(self.problem)
            verdict = "ok" if self.ok else "FAILED"
            what = "exact" if bound == 0 else f"||D-R||/||R|| = {self.error:.3g} (bound {bound:g})"
            if bound == 0 and self.error:
                what = f"not exact: ||D-R||/||R|| = {self.error:.3g}"
            lines.append(f"  check   {verdict}: {what} against NumPy (float64)")
        if self.note:
            lines.append(f"  note    {self.note}")
        return "\n".join(lines)


_TYPE_FEATURES = {"bf16": "bfloat16", "e4m3": "float8", "e5m2": "float8"}  # the types a device may lack


def missing_type(dtype, target) -> str | None:
    """The first of the GEMM's types (input, accumulator, output) the target lacks, else None: bf16 and fp8 are
    device features (an f16 GEMM with a bf16 output needs bf16 too); the rest every device has."""
    for t in (dtype.a, dtype.acc, dtype.out):
        needed = _TYPE_FEATURES.get(str(t))
        if needed is not None and needed not in target.support:
            return str(t)
    return None


def lacks_type_message(dtype, name: str, choose_ref: str) -> str:
    """The refusal of a GEMM on a device without one of its types (`choose_ref`: how the caller picks ref)."""
    return f"{name} has no {dtype} arithmetic; pass {choose_ref} (the reference executor) or use another dtype"


class GemmRunner(DeviceRunner):
    """One executor (Vulkan device or reference) and the GEMM pipelines made on it."""

    def __init__(self, device, executor, note: str = "", *, owns_executor: bool = True):
        super().__init__(device, executor, note, owns_executor=owns_executor)
        self._kernels: dict = {}

    @classmethod
    def open(cls, device=None, dtype=None) -> GemmRunner:
        """Device "ref", N, or None: the first Vulkan device with cooperative matrices for `dtype` and its types,
        else the first Vulkan device that has its types (input, accumulator and output: bf16 and fp8 need a device
        feature), else the reference executor (with a note saying why)."""
        if device is not None:
            return cls(device, runner_executor(device))
        try:
            infos = vk.devices()
        except HydroplaneError as err:
            reason = str(err).split(":")[0]
            return cls("ref", runner_executor("ref"), f"no Vulkan device ({reason}); ran on the reference executor")
        if not infos:
            return cls("ref", runner_executor("ref"), "no Vulkan device; ran on the reference executor")
        chosen = None
        for index in range(len(infos)):
            executor = runner_executor(index)
            if dtype is None or (coop_shapes(dtype, executor.target) and missing_type(dtype, executor.target) is None):
                return cls(index, executor)
            if chosen is None and missing_type(dtype, executor.target) is None:
                chosen = index
        if chosen is None:
            lacking = " and ".join(sorted({str(missing_type(dtype, runner_executor(i).target))
                                           for i in range(len(infos))}))
            return cls("ref", runner_executor("ref"), f"no Vulkan device has {lacking} arithmetic; ran on the "
                                                      "reference executor")
        return cls(chosen, runner_executor(chosen))

    def reopen(self) -> None:
        """A new executor on the same device, after the old one's device was lost (its objects are left alone)."""
        try:
            self.executor.close()
        except HydroplaneError:
            pass  # a lost device may refuse an orderly close; nothing of it is used again
        rt = runtime_of(self.executor)
        rt.close()  # its objects are left alone on a lost device
        self.executor = runner_executor(self.device)
        self._kernels.clear()

    def device_key(self) -> str:
        """The autotune cache's device key: name and driver."""
        if self.is_reference:
            return "ref"
        info = self.executor.info
        return f"{info.name} | {info.driver_version}"

    def _kernel(self, spec: Specialization):
        """The device's kernel of a specialization: made once per device (the runtime's cache, keyed by the words)."""
        key = id(spec)
        if key not in self._kernels:
            made = runtime_of(self.executor).kernel(words_key(spec.words), lambda: self.executor.kernel(spec.words))
            self._kernels[key] = (spec, made)  # the spec kept: its id stays its own
        return self._kernels[key][1]

    def prepare(self, problem: GemmProblem, config: GemmConfig | GemvConfig, inputs: dict, *,
                pad: bool | None = None, exact_output: bool = True) -> PreparedGemm:
        """The route's kernels made for this device (kernels.gemm.route: the skinny kernels, odd sizes padded, or
        the one GEMM) and the inputs in its buffers, D poisoned unless given: dispatch, time, read. exact_output
        False lets a padded route leave D in its padded scratch (read() still gives M x N)."""
        return PreparedGemm(self, gemm_route(problem, config, self.target, pad=pad, exact_output=exact_output),
                            inputs)

    def run(self, problem: GemmProblem, config: GemmConfig | None = None, *, inputs: dict | None = None,
            repeat: int = 1, warmup: int = 1, check: bool = True, seed: int = 0) -> GemmResult:
        """Run `problem` (config: the cached/shipped/default one), time `repeat` runs, verify against NumPy."""
        config = config or self.tuned_config(problem)
        data = inputs if inputs is not None else random_inputs(problem, np.random.default_rng(seed))
        with self.prepare(problem, config, data) as prepared:
            start = time.perf_counter()
            prepared.dispatch()  # the checked run (also the warm-up)
            first = time.perf_counter() - start
            d = prepared.read()
            times = [first] if self.is_reference and repeat <= 1 else prepared.time(repeat, max(warmup - 1, 0))
        import statistics  # only when timing (~2 ms of import)
        result = GemmResult(problem, config, self.name, statistics.median(times),
                            "wall time" if self.is_reference else "GPU timestamps", len(times), output=d,
                            note=self.note)
        if check:
            exact = reference(problem, data["a"], data["b"], data.get("c"), data.get("bias"))
            result.error = relative_error(d, exact)
            result.ok = bool(np.isfinite(result.error)) and result.error <= tolerance(problem)
        return result

    # autotuning --------------------------------------------------------------------------------
    def cache_key(self, problem: GemmProblem) -> str:
        """The autotune cache's problem key: dtype, layout and shape class (route.shape_class: skinny, odd, wide or
        tall, by size)."""
        return f"{problem.dtype} {problem.layout} {shape_class(problem)}"

    def tuned_config(self, problem: GemmProblem) -> GemmConfig | GemvConfig:
        """The cached winner for this device and problem class, else the shipped table's, else the default (the
        skinny kernels for few rows of A). A problem whose output type is not its accumulator's (f16:f32:f16) with
        no entry of its own takes its accumulator type's winner (f16:f32: the same kernels and loads, only the
        epilogue rounds differently)."""
        keys = [self.cache_key(problem)]
        if problem.dtype.out != problem.dtype.acc:
            keys.append(self.cache_key(replace(problem, dtype=replace(problem.dtype, out=problem.dtype.acc))))
        for key in keys:
            for table in (load_cache(), shipped_table()):
                found = table.get(self.device_key(), {}).get(key)
                if found:
                    try:
                        config = config_from_dict(found["config"])
                        gemm_route(problem, config, self.target)  # still valid here
                        return config
                    except HydroplaneError:
                        continue
        return route_default_config(problem, self.target)

    def tune(self, problem: GemmProblem, *, repeat: int = 5, progress=None, limit: int | None = None) -> GemmResult:
        """Try every candidate configuration (verified first, then timed); store the fastest in the cache."""
        candidates = route_candidates(problem, self.target)[:limit]
        data = random_inputs(problem, np.random.default_rng(1))
        best: GemmResult | None = None
        for index, config in enumerate(candidates):
            if progress:
                progress(index, len(candidates), config, best)  # about to measure this one
            timed = None
            try:
                small = route_verification_problem(problem, config)  # the same code paths, checked quickly
                checked = self.run(small, config, inputs=data if small == problem else None, repeat=1, warmup=0,
                                   check=True, seed=index)
                if not checked.ok:
                    continue  # a wrong answer never wins
                timed = self.run(problem, config, inputs=data, repeat=repeat, warmup=1, check=False) \
                    if repeat > 1 or small != problem else checked
                timed.error, timed.ok = checked.error, checked.ok
                if best is None or timed.seconds < best.seconds:
                    best = timed
            except vk.DeviceLost:
                self.reopen()  # this candidate lost the device (seen on the H200): skip it on a new one
                continue
            except HydroplaneError:
                continue
            finally:
                if progress:  # this one's own result (None: failed or refused), and the best so far
                    progress(index + 1, len(candidates), config, best, timed)
        if progress:
            progress(len(candidates), len(candidates), None, best)
        if best is None:
            raise GemmError(f"no configuration verified for {problem.describe()} on {self.name}")
        store_winner(self.device_key(), self.cache_key(problem), best)
        return best


class PreparedGemm:
    """One GEMM ready on a device: its route's steps (kernels.gemm.route: copies, the GEMM or the skinny kernel, a
    reduction) each a prepared launch (launch.prepared) bound to the route's buffers: the inputs (NumPy arrays copied
    in, or DeviceArrays of this executor bound as they are), the route's scratch, and D (given, or made here and
    poisoned)."""

    def __init__(self, runner: GemmRunner, route: Route, inputs: dict, *, poison: bool = True):
        self.runner, self.route = runner, route
        problem = route.problem
        out_dtype = np.dtype(problem.dtype.out.dtype)
        self.poison = poisoned((problem.m, problem.n) if poison else (1, 1), out_dtype)
        used = {name for step in route.steps for name in step.bindings.values()} | {route.result.buffer}
        scratch = {s.name for s in route.scratch}
        needed = {"a", "b"} | ({"c"} if problem.beta != 0 else set()) | ({"bias"} if problem.bias else set())
        given_names = {n for n, v in inputs.items() if v is not None}
        missing = sorted((used | needed) - scratch - {"d"} - given_names - ({"c", "bias"} - needed))
        if missing:
            raise GemmError(f"{problem.describe()}: no input {', '.join(missing)} given")
        self._owned: list = []
        self.buffers: dict = {}  # buffer name -> DeviceArray on this executor
        try:
            filler = self.poison[0, :1].copy()
            given = {"c": filler, "bias": filler, "d": self.poison if poison else None,
                     **{name: value for name, value in inputs.items() if value is not None}}
            for name, value in given.items():
                if name in used:
                    self.buffers[name] = value if isinstance(value, DeviceArray) else self._made(value) \
                        if value is not None else self._made(problem.m * problem.n * out_dtype.itemsize, out_dtype,
                                                             (problem.m, problem.n))
            for scratch in route.scratch:
                dtype = np.dtype(scratch.dtype.dtype)
                self.buffers[scratch.name] = self._made(max(scratch.count, 1) * dtype.itemsize, dtype,
                                                        (scratch.count,))
            self._uses: dict[str, list] = {}  # route buffer -> [(launch index, parameter, element dtype)]
            self.launches = [self._launch(index, step) for index, step in enumerate(route.steps)]
        except BaseException:
            self.close()
            raise

    def _made(self, value, dtype=None, shape=None) -> DeviceArray:
        """A buffer this GEMM owns: an array copied in (queued), or a number of bytes."""
        rt = runtime_of(self.runner.executor)
        data = None
        if isinstance(value, np.ndarray):
            data = np.ascontiguousarray(value)
            dtype, shape, value = data.dtype, data.shape, data.nbytes
        made = DeviceArray(rt.key, rt.executor, rt.alloc(value), np.dtype(dtype), tuple(shape))
        if data is not None:
            rt.upload(made.buffer, 0, data)
        self._owned.append(made)
        return made

    def _launch(self, index: int, step: Step):
        """A step's prepared launch: each buffer parameter bound to its route buffer, seen as the parameter's type."""
        runner = self.runner
        spec = step.kernel.compile(runner.target, **step.constexprs)
        arguments = dict(step.scalars)
        for p in spec.buffers:
            name = step.bindings[p.name]
            held = self.buffers[name]
            want = numpy_dtype(p.dtype)
            arguments[p.name] = held if held.dtype == want else held.reinterpret(want)
            self._uses.setdefault(name, []).append((index, p.name, want))
        return prepare(runner.executor, runner._kernel(spec), spec, step.grid, arguments)

    def rebind(self, name: str, value: DeviceArray) -> None:
        """Bind route buffer `name` ("a", "b", "c", "bias", "d") to another DeviceArray of its size (a planned
        call's next operands); the same array again costs a comparison."""
        held = self.buffers.get(name)
        if held is None:
            raise GemmError(f"this GEMM has no buffer {name!r}")
        if held is value or held.same_place(value):
            return
        if value.nbytes != held.nbytes or value.dtype != held.dtype:
            raise GemmError(f"{name}: a DeviceArray of {value.nbytes} bytes of {value.dtype} cannot take the place of "
                            f"{held.nbytes} bytes of {held.dtype}")
        self.buffers[name] = value
        for index, param, want in self._uses.get(name, ()):
            self.launches[index].rebind(param, value if value.dtype == want else value.reinterpret(want))

    @property
    def main(self):
        """The launch that multiplies (the GEMM or the skinny kernel)."""
        return self.launches[self.route.steps.index(self.route.main)]

    @property
    def kernel(self):
        """The multiplying step's kernel (its pipeline statistics are the GEMM's)."""
        return self.main.kernel

    def dispatch(self) -> None:
        """One run of every step through the executor's checked dispatch."""
        for launch in self.launches:
            launch.dispatch()

    def park(self) -> None:
        """Hold the caller's DeviceArrays only weakly until the next call (PreparedLaunch.park); the buffers this
        GEMM made stay."""
        owned = {id(a) for a in self._owned}
        for name, held in self.buffers.items():
            if id(held) not in owned:
                self.buffers[name] = held.parked()
        for launch in self.launches:
            launch.park()

    def read(self) -> np.ndarray:
        """D (M x N) as the route leaves it."""
        view = self.route.result
        held = self.buffers[view.buffer]
        dtype = self.poison.dtype
        raw = runtime_of(self.runner.executor).download(held.buffer, held.offset, view.rows * view.ld * dtype.itemsize)
        raw = raw.view(dtype).reshape(view.rows, view.ld)
        return raw[:, :view.cols] if view.cols != view.ld else raw

    def repoison(self) -> None:
        """D back to the poison value (before a run whose output is checked)."""
        d = self.buffers[self.route.result.buffer]
        if d.size != self.poison.size:
            raise GemmError(f"D holds {d.size} elements, the poison {self.poison.size}")
        d.reshape(-1).write(self.poison.reshape(-1).view(d.dtype) if d.dtype != self.poison.dtype else
                            self.poison.reshape(-1))

    def timed_run(self) -> float:
        """One run of every step, timed: GPU timestamps around the steps on Vulkan, the wall clock on ref."""
        return self.time(1, 0, 0.0)[0]

    def time(self, repeat: int, warmup: int = 0, warmup_s: float | None = None) -> list[float]:
        """`repeat` timed runs after `warmup` runs and, on a GPU, after at least `warmup_s` seconds of back-to-back
        runs (default WARMUP_S): the device runtime's one timing path (GPU timestamps around each run of the
        steps, queued back to back)."""
        if repeat < 1 or warmup < 0:
            raise GemmError(f"time() needs repeat >= 1 and warmup >= 0, not repeat={repeat}, warmup={warmup}")
        if warmup_s is None:
            warmup_s = 0.0 if self.runner.is_reference else WARMUP_S
        return runtime_of(self.runner.executor).time(self.dispatch, repeat, warmup=warmup, warmup_s=warmup_s)

    def close(self) -> None:
        """Release the launches and the buffers this GEMM made (safe twice); DeviceArrays given stay."""
        for launch in getattr(self, "launches", ()):
            launch.close()
        self.launches = []
        owned, self._owned = self._owned, []
        for made in owned:
            made.release()

    def __enter__(self) -> PreparedGemm:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def load_cache() -> dict:
    """The autotune cache, {device key: {problem key: entry with a "config"}}; {} when there is none yet.

    A cache that cannot be read (a folder, no permission, a cache home that is a file), is not JSON, or holds
    JSON of another shape (a list, a string per device, an entry without a config or with a config that is not
    one) warns once (GemmCacheWarning) and its bad parts are ignored; the next stored winner rewrites the file."""
    path = None
    try:
        path = cache_path()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeError, GemmError) as err:
        where = f" {path}" if path else ""
        _cache_warning(f"cannot read the autotune cache{where} ({_reason(err)}); tuning results are not reused")
        return {}
    try:
        data = json.loads(text)
    except ValueError as err:
        _cache_warning(f"the autotune cache {path} is not JSON ({err}); ignored, the next tuning result rewrites it")
        return {}
    except RecursionError:  # JSON nested deeper than the parser's stack
        _cache_warning(f"the autotune cache {path} is nested far deeper than a cache ({CACHE_DEPTH} levels); "
                       "ignored, the next tuning result rewrites it")
        return {}
    return _valid_table(data, f"the autotune cache {path}")


@functools.cache
def shipped_table() -> dict:
    """The winners shipped with the package (ops/gemm_table.json): {device key: {problem key: entry}}. Read and
    checked once per process (the package's own file: about 1 ms a read, twice a first matmul of f16 into f16); the
    table returned is shared, to be read, not changed."""
    try:
        # through the package's loader (a folder or a zip: pkgutil.get_data's rule); importlib.resources would
        # import tempfile and shutil on every process's path (about 4 ms)
        loader: Any = __spec__.loader
        text = loader.get_data(os.path.join(os.path.dirname(__file__), "gemm_table.json")).decode("utf-8")
        data = json.loads(text)
    except (OSError, ValueError) as err:
        _cache_warning(f"cannot read the shipped GEMM table ops/gemm_table.json ({_reason(err)}); ignored")
        return {}
    return _valid_table(data.get("devices", {}) if isinstance(data, dict) else data, "the shipped GEMM table")


def _reason(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if isinstance(err, (OSError, UnicodeError)) else str(err)


def _valid_table(data, where: str) -> dict:
    """The entries of a {device: {problem key: {"config": {...}, ...}}} table that hold a config; the rest warned."""
    if not isinstance(data, dict):
        _cache_warning(f"{where} holds a {type(data).__name__}, not a table of devices; ignored")
        return {}
    table, dropped = {}, []
    for device, entries in data.items():
        if not isinstance(entries, dict):
            dropped.append(f"device {device!r} holds a {type(entries).__name__}, not a table of problems")
            continue
        for key, entry in entries.items():
            problem = _entry_problem(entry)
            if problem:
                dropped.append(f"{device!r} {key!r}: {problem}")
            else:
                table.setdefault(device, {})[key] = entry
    if dropped:
        more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
        _cache_warning(f"{where}: ignored {len(dropped)} malformed entr{'y' if len(dropped) == 1 else 'ies'}: "
                       f"{dropped[0]}{more}")
    return table


# {device: {problem key: {"config": {field: [ints]}}}}: the levels of lists and objects a cache file has
CACHE_DEPTH = 5


def _depth(value) -> int:
    """How many levels of JSON lists and objects `value` nests (counted without recursion: a hostile file may nest
    deeper than Python's stack)."""
    deepest, level = 0, [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > CACHE_DEPTH:
            break
        level.extend((child, depth + 1) for child in children)
    return deepest


def _entry_problem(entry) -> str | None:
    """Why a stored entry cannot give a configuration (None when it can)."""
    if not isinstance(entry, dict):
        return f"a {type(entry).__name__}, not an entry"
    if "config" not in entry:
        return "no config"
    if _depth(entry) > CACHE_DEPTH - 2:  # the entry sits two levels down (device, problem key)
        return f"nested deeper than an entry ({CACHE_DEPTH - 2} levels: entry, config, list)"
    stored = entry["config"]
    try:
        config = config_from_dict(stored)
    except (HydroplaneError, TypeError, ValueError) as err:  # TypeError, ValueError: a shape no check foresaw
        return str(err)
    defaults = {f.name: f.default for f in fields(config)}
    for name, value in stored.items():
        if not _shaped_like(value, defaults[name]):
            return f"config {name}={value!r} is not like {defaults[name]!r}"
    return None


def _shaped_like(value, default) -> bool:
    """A stored config value has its field's shape: a str, a bool, an int >= 0, or a list of ints >= 1."""
    if isinstance(default, bool) or isinstance(default, str):
        return type(value) is type(default)
    if isinstance(default, int):
        return type(value) is int and value >= 0
    if isinstance(default, tuple):
        return (isinstance(value, (list, tuple)) and len(value) == len(default)
                and all(type(v) is int and v >= 1 for v in value))
    return value == default


def store_winner(device_key: str, problem_key: str, result: GemmResult) -> None:
    """Keep a tuning winner in the cache (the valid entries there, and this one). A cache that cannot be written
    warns once (GemmCacheWarning): the result is still returned and used, only not kept for the next run."""
    cache = load_cache()
    cache.setdefault(device_key, {})[problem_key] = {
        "config": result.config.to_dict(), "seconds": result.seconds, "tflops": result.tflops,
        "size": [result.problem.m, result.problem.n, result.problem.k],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    tmp = path = None
    try:
        path = cache_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only where the cache is written (its import loads shutil and random: ~3 ms)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(cache, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
        tmp = None
    except (OSError, GemmError) as err:
        where = f" {path}" if path else ""
        _cache_warning(f"cannot write the autotune cache{where} ({_reason(err)}); this tuning result is used now "
                       "but not kept")
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def terminal_progress(stream=None):
    """A tune() progress callback: per candidate "i/n: its own time (its T/s) | best so far: ... | its config".

    tune() calls it before a candidate with (done, total, config, best) and after it with its own result as a
    fifth argument (None: it failed verification or was refused), then once with config None. On a terminal one
    line is redrawn ("measuring" while a candidate runs); elsewhere each measured candidate gets a line."""
    out = stream or sys.stderr
    interactive = out.isatty()

    def progress(done: int, total: int, config, best, *finished) -> None:
        best_text = f"best so far {_timing(best)}" if best else "none verified yet"
        if config is None:
            line = f"tuning: {total}/{total} done, best {_timing(best)}" if best else \
                f"tuning: {total}/{total} done, none verified"
        elif not finished:
            if not interactive:
                return
            line = f"tuning {done + 1}/{total}: measuring | {best_text} | {config.describe()}"
        else:
            own = _timing(finished[0]) if finished[0] is not None else "failed (wrong result or refused)"
            line = f"tuning {done}/{total}: {own} | {best_text} | {config.describe()}"
        if interactive:
            out.write("\r\x1b[K" + line[:150] + ("\n" if config is None else ""))
        else:
            out.write(line + "\n")
        out.flush()

    return progress


def _timing(result: GemmResult) -> str:
    return f"{result.seconds * 1e3:.4g} ms ({result.tflops:.3g} T/s)"
