"""Fused attention on a device: `attention(q, k, v)` for arrays, and the runner that times and verifies it.

    out = attention(q, k, v, causal=True)               # NumPy in, NumPy out (or DeviceArrays in, one out)
    with AttentionRunner.open(0) as runner:              # timing: GPU timestamps on Vulkan, wall time on ref
        result = runner.run(problem, repeat=20)
        print(result.text())

`attention` checks its arguments (AttentionError, a HydroplaneError, naming what is wrong), picks the device
(that of any DeviceArray argument, else the first Vulkan device with cooperative matrices for the dtype, else
the reference executor) and the configuration (kernels.attention.default_config for the device's tiles), and
launches the kernels through `hydroplane.launch.jit` (`kernel[grid](...)`): every buffer is bound as a view of
16-byte elements (the kernel's wide loads), the decode path's partial results stay on the device between its
two passes. `AttentionRunner.prepare` binds the buffers and records the dispatches for timing (vk.bench-style: a
warm-up of at least WARMUP_S, then GPU timestamps; the decode path's time is the sum of its two dispatches').
This layer sits above kernels, lang, launch and vk.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.kernels.attention import (
    AttentionConfig,
    AttentionError,
    AttentionPlan,
    AttentionProblem,
    Pass,
    attention_plan,
    default_config,
    parse_dtype,
    random_inputs,
    reference,
    relative_error,
    target_tiles,
    tolerance,
)
from hydroplane.launch.prepared import (
    KEPT_PLANS,
    WARMUP_S,
    DeviceArray,
    is_masked,
    places_of,
    planned_of,
    prepare,
    served_places,
    signature_of,
)
from hydroplane.launch.runtime import runtime, runtime_of
from hydroplane.ops.matmul import host_memory
from hydroplane.ops.runner import DeviceRunner, runner_executor

POISON = -777.0  # written over the outputs before a checked run: no attention of the test inputs gives it


# arguments ---------------------------------------------------------------------------------------------
def as_array(x, name: str):
    """A DeviceArray as it is, a NumPy array, or a DLPack CPU array (a torch CPU tensor) through np.from_dlpack. A
    masked array is refused (its mask would be dropped); a byte-swapped float array ('>f2' on a little-endian host)
    is converted to native order (the same values), as the device reads native bytes."""
    if is_masked(x):
        raise AttentionError(f"attention: {name} is a masked array; attention would ignore its mask (mask keys with "
                             "causal= or window=, or pass np.ma.getdata / .filled())")
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f" and not x.dtype.isnative:
            return x.astype(x.dtype.newbyteorder("="))
        return x
    if isinstance(x, DeviceArray):
        if not x.contiguous:
            raise AttentionError(f"attention: {name} is a strided DeviceArray view (shape {x.shape}, strides "
                                 f"{x.strides}); the kernels read and write C-ordered arrays (slices of leading "
                                 "dimensions are)")
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, ValueError, RuntimeError) as err:
            raise AttentionError(f"attention: {name} ({type(x).__name__}) cannot be read through DLPack: {err} "
                                 "(DLPack arrays must be on the CPU; NumPy reads no bf16 over DLPack: pass a "
                                 "NumPy array of ml_dtypes.bfloat16)") from None
    raise AttentionError(f"attention: {name} must be a NumPy array, a hydroplane DeviceArray or a DLPack CPU array, "
                         f"not {type(x).__name__}")


def problem_of(q, k, v, causal: bool = False, scale: float | None = None, window: int | None = None,
               device_kv_len: bool = False) -> AttentionProblem:
    """The problem the arrays describe (torch's layout: q (B, H, S_q, D), k and v (B, H_kv, S_kv, D))."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != 4:
            raise AttentionError(f"attention: {name} has shape {tuple(x.shape)}; it must be 4-D (batch, heads, "
                                 "sequence, head_dim)")
    dtypes = {name: np.dtype(x.dtype) for name, x in (("q", q), ("k", k), ("v", v))}
    if len(set(dtypes.values())) > 1:
        raise AttentionError("attention: q, k and v must share one dtype, not "
                             + ", ".join(f"{n} {d}" for n, d in dtypes.items()))
    dtype = parse_dtype(dtypes["q"])
    if tuple(k.shape) != tuple(v.shape):
        raise AttentionError(f"attention: k {tuple(k.shape)} and v {tuple(v.shape)} must have one shape")
    (b, h, s_q, d), (b_kv, h_kv, s_kv, d_kv) = tuple(q.shape), tuple(k.shape)
    if b_kv != b:
        raise AttentionError(f"attention: q has batch {b}, k and v {b_kv}")
    if d_kv != d:
        raise AttentionError(f"attention: q has head_dim {d}, k and v {d_kv}")
    for what, size in (("batch", b), ("q's heads", h), ("q's sequence", s_q), ("head_dim", d),
                       ("k's and v's sequence (the keys)", s_kv)):
        if size < 1:
            raise AttentionError(f"attention: {what} is empty (0); attention takes lengths of at least 1")
    if h_kv < 1 or h % h_kv:
        raise AttentionError(f"attention: k and v have {h_kv} heads, which must divide q's {h} "
                             "(grouped-query attention)")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int | float | np.integer | np.floating)):
        raise AttentionError(f"attention: scale must be a number or None, not {type(scale).__name__}")
    if window is not None and (isinstance(window, bool | np.bool_) or not isinstance(window, int | np.integer)):
        raise AttentionError(f"attention: window must be a positive integer or None, not {type(window).__name__}")
    return AttentionProblem(int(b), int(h), int(s_q), int(s_kv), int(d), dtype, int(h_kv), bool(causal),
                            None if scale is None else float(scale), None if window is None else int(window),
                            device_kv_len)


def kv_len_of(kv_len, s_kv: int):
    """attention's kv_len: a DeviceArray of one int32 (read by the kernels: not checked here), or an integer 0 ..
    S_kv (as a NumPy int32 array of one element)."""
    if isinstance(kv_len, DeviceArray):
        if np.dtype(kv_len.dtype) != np.int32 or kv_len.size != 1:
            raise AttentionError(f"attention: kv_len is a DeviceArray of {tuple(kv_len.shape)} {kv_len.dtype}; it "
                                 "must hold one int32")
        return kv_len.reshape(1)
    if isinstance(kv_len, bool | np.bool_) or not isinstance(kv_len, int | np.integer):
        raise AttentionError(f"attention: kv_len is an int32 DeviceArray of one element or an integer, not "
                             f"{type(kv_len).__name__}")
    if not 0 <= kv_len <= s_kv:
        raise AttentionError(f"attention: kv_len {kv_len} lies outside 0 .. {s_kv} (the keys k holds)")
    return np.array([kv_len], np.int32)


def _device_of(arrays, out, device):
    pinned = {a.device for a in (*arrays, out) if isinstance(a, DeviceArray)}
    if len(pinned) > 1 or (pinned and device is not None and device not in pinned):
        raise AttentionError(f"attention: device arrays of {sorted(map(str, pinned))} with device={device!r}")
    if pinned:
        return pinned.pop()
    return device


def choose_device(dtype, device=None):
    """`device` as given ("ref" or N), else the first Vulkan device offering attention tiles for the dtype, else
    "ref"."""
    if device is not None:
        if device != "ref" and (isinstance(device, bool) or not isinstance(device, int | np.integer)):
            raise AttentionError(f"attention: device is 'ref', a Vulkan device number or None, not {device!r}")
        return device if device == "ref" else int(device)
    try:
        count = len(vk.devices())
    except HydroplaneError:
        return "ref"
    for index in range(count):
        try:
            if target_tiles(dtype, runtime(index).target):
                return index
        except HydroplaneError:
            continue
    return "ref"


def attention(q, k, v, *, causal: bool = False, scale: float | None = None, window: int | None = None,
              kv_len=None, out=None, device=None, config: AttentionConfig | None = None):
    """softmax(q kᵀ * scale) v (docs/attention.md): q (B, H, S_q, D), k and v (B, H_kv, S_kv, D) of f16 or bf16;
    scale defaults to 1/sqrt(D) (|scale| at most float32's largest); causal masks keys j > p, window W keys j <= p - W,
    where p = i + S_kv - S_q is query i's position. kv_len (an int32 DeviceArray of one element, read by the kernels,
    so a captured call replays at every length; or an integer): only the first n = kv_len keys are in use (n clamped
    to 0 .. S_kv; keys j >= n masked; p = i + n - S_q). Returns O (B, H, S_q, D) in q's dtype: a
    DeviceArray when any argument is one (it stays on that device), else a NumPy array (`out`, when given, is
    written and returned). `device`: "ref", a Vulkan device number, or None (the default device,
    docs/runtime.md)."""
    if type(q) is DeviceArray and type(k) is DeviceArray and type(v) is DeviceArray:  # a planned call, again
        try:
            fast = _fast.get((q.signature, k.signature, v.signature, signature_of(kv_len), signature_of(out),
                              type(causal), causal, type(scale), scale, type(window), window, device, config))
        except TypeError:  # an argument of another kind (or unhashable): the checked path
            fast = None
        if fast is not None:
            result = fast.run(q, k, v, kv_len, out)
            if result is not None:
                return result
        fast_key = (causal, scale, window, device, config)
    else:
        fast_key = None
    q, k, v = as_array(q, "q"), as_array(k, "k"), as_array(v, "v")
    for name, x in (("q", q), ("k", k), ("v", v), ("kv_len", kv_len), ("out", out)):
        if isinstance(x, DeviceArray):  # ReleasedError naming the argument, before anything is bound
            x._require_live(f"attention: {name}")
    if config is not None and not isinstance(config, AttentionConfig):
        raise AttentionError(f"attention: config is an AttentionConfig (hydroplane.kernels.attention) or None, not "
                             f"{config!r}")
    if not isinstance(causal, bool | np.bool_):
        raise AttentionError(f"attention: causal must be a bool, not {type(causal).__name__}")
    problem = problem_of(q, k, v, causal, scale, window, kv_len is not None)
    if kv_len is not None:
        kv_len = kv_len_of(kv_len, problem.kv_len)
    result_bytes = math.prod(problem.shapes()[0]) * np.dtype(problem.dtype.dtype).itemsize
    memory = host_memory()
    if memory is not None and result_bytes > memory:  # before anything is allocated or copied
        raise AttentionError(f"attention: the result, {problem.shapes()[0]}, takes {result_bytes / 2 ** 30:.4g} GiB, "
                             f"more than this machine's {memory / 2 ** 30:.4g} GiB of memory")
    if out is not None:
        if isinstance(out, np.ndarray) and not out.dtype.isnative:  # written in place: never a converted copy
            raise AttentionError(f"attention: out is {tuple(out.shape)} {out.dtype.str}; it must be "
                                 f"{problem.shapes()[0]} {np.dtype(problem.dtype.dtype)} in native byte order")
        out = as_array(out, "out")
        shape, dtype = problem.shapes()[0], np.dtype(problem.dtype.dtype)
        if tuple(out.shape) != shape or np.dtype(out.dtype) != dtype:
            raise AttentionError(f"attention: out is {tuple(out.shape)} {np.dtype(out.dtype)}; it must be {shape} "
                                 f"{dtype}")
        if isinstance(out, np.ndarray) and not (out.flags.c_contiguous and out.flags.writeable):
            raise AttentionError("attention: out must be a writable C-contiguous NumPy array")
    device = choose_device(problem.dtype, _device_of((q, k, v, kv_len), out, device))
    on_device = any(isinstance(a, DeviceArray) for a in (q, k, v, out, kv_len))
    try:
        rt = runtime(device)
    except HydroplaneError as err:  # no Vulkan loader, no such device: the op's own class
        raise AttentionError(f"attention: {err}") from None
    executor = rt.executor
    staged, out_given = None, out is not None
    if isinstance(out, DeviceArray) and any(out.overlaps(x) for x in (q, k, v) if isinstance(x, DeviceArray)):
        staged, out = out, None  # out shares bytes with an input: computed into scratch, then copied
    if out is None and on_device:
        shape, dtype = problem.shapes()[0], np.dtype(problem.dtype.dtype)
        out = DeviceArray(rt.key, executor, rt.alloc(math.prod(shape) * dtype.itemsize), dtype, shape)
    inputs = {"q": q, "k": k, "v": v, "kv_len": kv_len}
    key = (id(rt), problem, config, tuple(_kind(x, rt) for x in (q, k, v, out, kv_len)))
    with rt.lock:  # a plan is shared by the calls of its key: bound, queued and read back by one thread at a time
        prepared = _plans.get(key)
        if prepared is None:
            plan = attention_plan(problem, config or default_config(problem, executor.target), executor.target)
            bound_out = out if isinstance(out, DeviceArray) else None  # a NumPy out gets the result copied in
            prepared = _plans[key] = PreparedAttention(executor, plan, inputs, bound_out)
            while len(_plans) > PLAN_CACHE_SIZE:
                _plans.pop(next(iter(_plans))).close()
        else:
            prepared.bind(inputs, out if isinstance(out, DeviceArray) else None)
        prepared.dispatch()
        prepared.park()  # the caller's arrays held weakly until the next call
        if staged is not None:
            staged.copy_from(out)
            out.release()
            return staged
        if isinstance(out, DeviceArray):
            if fast_key is not None and (kv_len is None or isinstance(kv_len, DeviceArray)):
                _register_fast(fast_key, q, k, v, kv_len, out, out_given, prepared, rt)
            return out
        result = prepared.read()
    if out is None:
        return result
    np.copyto(out, result)
    return out


PLAN_CACHE_SIZE = 32  # attention calls of this many signatures keep their prepared passes
_plans: dict = {}


class FastAttention:
    """A planned call of DeviceArrays looked up by the arguments' signatures and the keywords (as matmul's FastCall):
    its checks' outcomes are those of the first call of the signature; `run` returns None where it cannot serve
    (a released argument, out sharing a buffer with an input, the plan evicted), and the checked path runs."""

    __slots__ = ("prepared", "runtime", "result", "by_place")

    def __init__(self, prepared: PreparedAttention, rt, result: tuple | None):
        self.prepared, self.runtime, self.result = prepared, rt, result
        self.by_place: dict = {}  # the arguments' places -> the planned launches that bound them (launch.prepared)

    def run(self, q: DeviceArray, k: DeviceArray, v: DeviceArray, kv_len, out):
        prepared, rt = self.prepared, self.runtime
        if not prepared.passes or rt.closed:
            return None
        places = served_places((q, k, v, kv_len), out)
        if places is None:
            return None
        if out is None:
            dtype, shape, nbytes = self.result  # type: ignore[misc]
            out = DeviceArray.made(rt, nbytes, dtype, shape)
            places += ((id(out.storage.buffer), 0),)
        planned = self.by_place.get(places)
        with rt.lock:  # the plan is shared by the calls of its signature: bound and queued by one thread at a time
            if not prepared.passes:  # evicted meanwhile (by another thread): its scratch may be another's now
                return None
            if planned is not None:  # these buffers at these offsets were bound before: queue those launches again
                rt.launch_kept(self.by_place, places, planned)
                return out
            prepared.bind({"q": q, "k": k, "v": v, "kv_len": kv_len}, out)
            prepared.dispatch()
            prepared.park()
            planned = planned_of(prepared.passes)
            if planned is not None and places is not None:
                if len(self.by_place) >= KEPT_PLANS:
                    self.by_place.clear()
                self.by_place[places] = planned
        return out


_fast: dict = {}  # (signatures, keywords) -> FastAttention


def _register_fast(keywords: tuple, q, k, v, kv_len, out: DeviceArray, out_given: bool, prepared, rt) -> None:
    causal, scale, window, device, config = keywords
    try:
        key = (q.signature, k.signature, v.signature, signature_of(kv_len), out.signature if out_given else None,
               type(causal), causal, type(scale), scale, type(window), window, device, config)
        fast = FastAttention(prepared, rt, None if out_given else (out.dtype, out.shape, out.nbytes))
        planned, places = planned_of(prepared.passes), places_of((q, k, v, kv_len, out))
        if planned is not None and places is not None:  # this call's arrays: queued again without rebinding
            fast.by_place[places] = planned
        _fast[key] = fast
    except TypeError:
        return
    while len(_fast) > 4 * PLAN_CACHE_SIZE:
        _fast.pop(next(iter(_fast)))


def _kind(x, rt):
    """What a planned call depends on in an argument: absent, a NumPy array, or a DeviceArray (bindable offset)."""
    if x is None:
        return None
    if isinstance(x, DeviceArray):
        return ("device", x.offset % rt.storage_alignment == 0)
    return "host"


def clear_plans() -> None:
    """Forget every planned attention call."""
    _fast.clear()
    while _plans:
        _plans.popitem()[1].close()


# timing and verification ------------------------------------------------------------------------------------
@dataclass
class AttentionResult:
    """One verified (or failed) attention run."""

    problem: AttentionProblem
    config: AttentionConfig
    device: str
    seconds: float  # median time per call
    timing: str  # "GPU timestamps" or "wall time"
    runs: int
    error: float | None = None  # ||O - R|| / ||R|| against NumPy in float64 (None: not checked)
    ok: bool = True
    output: np.ndarray | None = field(default=None, repr=False)
    note: str = ""

    @property
    def tflops(self) -> float:
        return self.problem.flops / self.seconds / 1e12 if self.seconds > 0 else 0.0

    @property
    def kv_tbps(self) -> float:
        """TB/s of K and V read (the decode path's measure)."""
        return self.problem.kv_bytes / self.seconds / 1e12 if self.seconds > 0 else 0.0

    def text(self) -> str:
        lines = [f"attention {self.problem.describe()} on {self.device}",
                 f"  time    {self.seconds * 1e3:.3f} ms ({self.timing}, median of {self.runs})",
                 f"  speed   {self.tflops:.4g} TFLOP/s ({self.kv_tbps:.3g} TB/s of K and V read)",
                 f"  config  {self.config.describe()}"]
        if self.error is not None:
            verdict = "ok" if self.ok else "FAILED"
            lines.append(f"  check   {verdict}: ||O-R||/||R|| = {self.error:.3g} (bound {tolerance(self.problem):g}) "
                         "against NumPy (float64)")
        if self.note:
            lines.append(f"  note    {self.note}")
        return "\n".join(lines)


class AttentionRunner(DeviceRunner):
    """One executor (a Vulkan device or the reference executor) for timing and verifying attention."""

    @classmethod
    def open(cls, device=None, dtype="f16") -> AttentionRunner:
        """Device "ref", N, or None: the first Vulkan device with attention tiles for `dtype`, else ref."""
        chosen = choose_device(parse_dtype(dtype), device)
        note = "" if device is not None or chosen != "ref" else "no Vulkan device with cooperative matrices for " \
            f"{parse_dtype(dtype)}; ran on the reference executor"
        return cls(chosen, runner_executor(chosen), note)

    def plan(self, problem: AttentionProblem, config: AttentionConfig | None = None) -> AttentionPlan:
        return attention_plan(problem, config or default_config(problem, self.target), self.target)

    def prepare(self, problem: AttentionProblem, config: AttentionConfig | None, inputs: dict) -> PreparedAttention:
        """The inputs in buffers of this device, the output poisoned, the passes bound: dispatch, read, time."""
        return PreparedAttention(self.executor, self.plan(problem, config), inputs)

    def run(self, problem: AttentionProblem, config: AttentionConfig | None = None, *, inputs: dict | None = None,
            repeat: int = 1, check: bool = True, seed: int = 0, logit_scale: float = 1.0) -> AttentionResult:
        """Run once (checked dispatch, output poisoned first), time `repeat` runs, verify against NumPy."""
        data = inputs if inputs is not None else random_inputs(problem, np.random.default_rng(seed), logit_scale)
        with self.prepare(problem, config, data) as prepared:
            start = time.perf_counter()
            prepared.dispatch()
            first = time.perf_counter() - start
            out = prepared.read()
            times = [first] if self.is_reference and repeat <= 1 else prepared.time(repeat)
        import statistics  # only when timing (~2 ms of import)
        result = AttentionResult(problem, prepared.plan.config, self.name, statistics.median(times),
                                 "wall time" if self.is_reference else "GPU timestamps", len(times), output=out,
                                 note=self.note)
        if check:
            result.error = relative_error(out, reference(problem, data["q"], data["k"], data["v"]))
            result.ok = bool(np.isfinite(result.error)) and result.error <= tolerance(problem)
        return result


_pipelines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {id(spec): (spec, kernel)}


def pipeline(executor, p: Pass):
    """The pass's specialization for the executor's target and the executor's kernel of it (cached per executor,
    for as long as the executor lives)."""
    spec = p.kernel.compile(executor.target, **p.constexprs)
    made = _pipelines.setdefault(executor, {})
    if id(spec) not in made:
        made[id(spec)] = (spec, executor.kernel(spec.words))  # the spec kept: its id stays its own
    return spec, made[id(spec)][1]


def _view(x: DeviceArray, dtype) -> DeviceArray:
    """Another element type's flat view of a device array's bytes."""
    return x.reinterpret(dtype)


def _words(x):
    """A main-kernel argument: the array's bytes as 32-bit words (the kernel binds 16-byte elements)."""
    if isinstance(x, DeviceArray):
        return _view(x, np.uint32)
    return np.ascontiguousarray(x).reshape(-1).view(np.uint32)


class PreparedAttention:
    """One attention call bound on an executor (`launch.prepared.prepare` per pass): the inputs (NumPy arrays are
    copied in, DeviceArrays bound as they are), the output (poisoned when the call makes it), the decode path's
    partial results, and with the fused combine its arrival counters (made zeroed, left at zero by every call,
    zeroed again by the runtime after a dispatch that raised midway: docs/attention.md); `dispatch`, `read`,
    `time`, `close`."""

    def __init__(self, executor, plan: AttentionPlan, inputs: dict, out: DeviceArray | None = None):
        self.executor, self.plan = executor, plan
        problem = plan.problem
        self.out_shape, self.out_dtype = problem.shapes()[0], np.dtype(problem.dtype.dtype)
        self.poison = np.full(self.out_shape, POISON, self.out_dtype)
        self._made: list = []
        self.passes: list = []
        self.kv_len: DeviceArray | None = None
        try:
            if out is None:
                out = self._device_array(self.poison)
            self.out = out
            if not plan.partial_o:
                partial_o = stats = self._device_array(np.zeros(4, np.float32))
            else:
                partial_o = self._device_array(np.full(plan.partial_o, POISON, np.float32))
                stats = self._device_array(np.full(plan.partial_stats, POISON, np.float32))
            main = {"q4": _words(inputs["q"]), "k4": _words(inputs["k"]), "v4": _words(inputs["v"]),
                    "out4": _words(out if plan.combine is None else stats), "o_part4": _view(partial_o, np.uint32),
                    "ml_part": stats, **plan.main.scalars}
            aliases = {}
            if plan.counters:  # the fused combine's arrival counts: zeroed once here, left at zero by every call
                counters = self._device_array(np.zeros(plan.counters, np.int32))
                runtime_of(executor).zero_after_fault(counters.buffer)  # (a call that raises midway: docs)
                main["counters"] = counters
            else:
                aliases["counters"] = "ml_part"  # not read
            kv_len = inputs.get("kv_len")
            if kv_len is not None:  # the keys in use, read by both passes (a NumPy one copied in once, shared)
                if not isinstance(kv_len, DeviceArray):
                    kv_len = self._device_array(kv_len)
                self.kv_len = kv_len
                main["kv_valid"] = kv_len
            else:
                aliases["kv_valid"] = "ml_part"  # unread without device_kv_len
            self.passes.append(self._prepare(plan.main, main, aliases))
            if plan.combine is not None:
                combine = {"o_part": partial_o, "ml_part": stats, "out": _view(out, self.out_dtype),
                           **plan.combine.scalars}
                if kv_len is not None:
                    combine["kv_valid"] = kv_len
                self.passes.append(self._prepare(plan.combine, combine,
                                                 None if kv_len is not None else {"kv_valid": "ml_part"}))
        except BaseException:
            self.close()
            raise

    def _device_array(self, array: np.ndarray) -> DeviceArray:
        rt = runtime_of(self.executor)
        made = DeviceArray(rt.key, self.executor, rt.alloc(array.nbytes), array.dtype, array.shape)
        rt.upload(made.buffer, 0, array)
        self._made.append(made)
        return made

    def bind(self, inputs: dict, out: DeviceArray | None) -> None:
        """The next call's arguments: DeviceArrays rebound (the same ones again cost a comparison), NumPy arrays
        copied into the buffers made for them (queued)."""
        main = self.passes[0]
        for name in ("q", "k", "v"):
            value = inputs[name]
            if isinstance(value, DeviceArray):
                held = main.array(f"{name}4")
                if not held.same_place(value):
                    main.rebind(f"{name}4", _words(value))
            else:
                main.write(f"{name}4", _words(value))
        kv_len = inputs.get("kv_len")
        if isinstance(kv_len, DeviceArray):
            if not self.kv_len.same_place(kv_len):
                for launch in self.passes:
                    launch.rebind("kv_valid", kv_len)
                self.kv_len = kv_len
        elif kv_len is not None:
            self.kv_len.write(kv_len)
        if out is not None and not self.out.same_place(out):
            if self.plan.combine is None:
                main.rebind("out4", _words(out))
            else:
                self.passes[1].rebind("out", _view(out, self.out_dtype))
            self.out = out

    def _prepare(self, p: Pass, arguments: dict, aliases: dict | None = None):
        spec, kernel = pipeline(self.executor, p)
        return prepare(self.executor, kernel, spec, p.grid, arguments, aliases=aliases)

    def dispatch(self) -> None:
        """One run through the executor's checked dispatch (both passes on the decode path)."""
        for launch in self.passes:
            launch.dispatch()

    def park(self) -> None:
        """Hold the caller's DeviceArrays only weakly until the next call (PreparedLaunch.park)."""
        made = {id(a) for a in self._made}
        if self.kv_len is not None and id(self.kv_len) not in made:
            self.kv_len = self.kv_len.parked()
        if self.out is not None and id(self.out) not in made:
            self.out = self.out.parked()
        for launch in self.passes:
            launch.park()

    def read(self) -> np.ndarray:
        """The output (waits for the queued passes)."""
        return self.out.numpy().reshape(self.out_shape)

    def repoison(self) -> None:
        """The output back to the poison value (before a run whose output is checked)."""
        self.out.write(self.poison.reshape(self.out.shape))

    def timed_run(self) -> float:
        """One run; seconds by GPU timestamps on Vulkan (around both passes on the decode path), wall time on ref."""
        return self.time(1, warmup=0, warmup_s=0.0)[0]

    def time(self, repeat: int, warmup: int = 1, warmup_s: float | None = None) -> list[float]:
        """`repeat` timed runs after `warmup` runs and, on a GPU, at least `warmup_s` (default WARMUP_S) seconds of
        back-to-back runs: the device runtime's one timing path (GPU timestamps around each run)."""
        rt = runtime_of(self.executor)
        if warmup_s is None:
            warmup_s = 0.0 if rt.is_reference else WARMUP_S
        return rt.time(self.dispatch, max(repeat, 1), warmup=warmup, warmup_s=warmup_s)

    def close(self) -> None:
        """Release the passes' bindings and the buffers made here (safe twice)."""
        passes, self.passes = self.passes, []
        for launch in passes:
            launch.close()
        made, self._made = self._made, []
        for arr in made:
            arr.release()

    def __enter__(self) -> PreparedAttention:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
