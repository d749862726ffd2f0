"""`hydroplane.nn`: the ops a transformer needs, each a kernel of hydroplane.kernels.nn (docs/nn.md).

    y = nn.rms_norm(x, x.shape[-1], weight, eps=1e-6)          # torch.nn.functional's signature
    q = nn.rotary_embedding(q, positions, theta=1e6, style="neox")
    h = nn.gated(gate, up, "gelu_tanh"); h = nn.add(h, residual)
    token = nn.sample(logits, temperature=0.8, top_k=40, top_p=0.95, seed=1)

Arrays are NumPy arrays (or what np.asarray reads, DLPack CPU arrays included) or DeviceArrays: a call with a
DeviceArray runs on its device and returns a DeviceArray there; one of NumPy arrays returns NumPy. `device`:
"ref", a Vulkan device number, or None (the DeviceArrays' device, else the first Vulkan device, else the reference
executor). Floats are f32, f16 or bf16 (bf16 is stored as its 16 bits, so devices without bf16 run it too); every
op computes in f32 and rounds once. Every bad request is an NNError (a HydroplaneError) that names the argument.

Each op is a row of OPS (its kernel factory and what it needs), its checks in its function here, its kernel in
kernels/nn/, and its tests; `_Call` is the one launch path they share (device and executor, outputs, views of
the buffers, scratch, the dispatch). A call of DeviceArrays is planned once for its key (`_Plan`: the op, the
arrays' signatures, the other arguments as given): a later call of that key skips the checks and queues the
planned launches again. NumPy float64 references of every op are at the end (`reference_*`).
Layer: ops (above launch and kernels).
"""

from __future__ import annotations

import math
import random
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.nn import activation as activation_kernels
from hydroplane.kernels.nn.common import stride_groups
from hydroplane.kernels.nn.elementwise import add_kernel
from hydroplane.kernels.nn.embedding import embedding_kernel
from hydroplane.kernels.nn.norm import ROWS_X, rms_norm_kernel
from hydroplane.kernels.nn.rotary import rotary_kernel
from hydroplane.kernels.nn.sampling import argmax_final_kernel, argmax_partial_kernel, sample_kernel
from hydroplane.kernels.nn.softcap import THREADS as SOFTCAP_THREADS
from hydroplane.kernels.nn.softcap import softcap_kernel
from hydroplane.launch.prepared import KEPT_PLANS, DeviceArray, ReleasedError, dispatch_kept, places_of
from hydroplane.launch.runtime import canonical_device, runtime
from hydroplane.ops.quant_matmul import quantized_rows
from hydroplane.quant import QuantizedArray


class NNError(HydroplaneError):
    """A hydroplane.nn request that cannot run as asked: arrays, dtypes, shapes, values, devices."""


class NNReleasedError(NNError, ReleasedError):
    """A released DeviceArray given to an nn op: an NNError and the runtime's ReleasedError both."""


# dtypes and the per-op table --------------------------------------------------------------------------------
FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16"}
STORAGE = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16)}  # bound as
RAW = {"f32": np.dtype(np.uint32), "f16": np.dtype(np.uint16), "bf16": np.dtype(np.uint16)}  # sampling's bits
WIDE = {"f32": 4, "f16": 8, "bf16": 8}  # elements per 16-byte chunk
ARGMAX_CHUNK = 4096  # logits per workgroup of the greedy argmax's first pass
MAX_THREADS = 256
POSITION_LIMIT = 1 << 24  # positions are exact in f32 below it


@dataclass(frozen=True)
class Op:
    """What an op needs from the launch path: its kernel factory (storage dtype, ...) -> lang Kernel, and the
    dtypes it takes."""

    kernel: Callable
    dtypes: tuple = ("f32", "f16", "bf16")
    doc: str = ""


OPS: dict[str, Op] = {
    "rms_norm": Op(rms_norm_kernel, doc="x / sqrt(mean(x²) + eps) * weight over the last dimensions"),
    "rotary_embedding": Op(rotary_kernel, doc="pairs of each head turned by position x frequency"),
    "gelu": Op(activation_kernels.activation_kernel, doc="GELU, exact (erf) or tanh form"),
    "silu": Op(activation_kernels.activation_kernel, doc="x * sigmoid(x)"),
    "gated": Op(activation_kernels.activation_kernel, doc="act(gate) * up in one kernel"),
    "add": Op(add_kernel, doc="a + b, b broadcast over a's leading dimensions"),
    "softcap": Op(softcap_kernel, doc="cap * tanh(x / cap): Gemma 2's logit softcapping"),
    "embedding": Op(embedding_kernel, doc="rows of a table by id"),
    "sample": Op(sample_kernel, doc="temperature / top-k / top-p draw per row"),
    "argmax": Op(argmax_partial_kernel, doc="greedy: the largest logit's lowest index per row"),
}


# arguments --------------------------------------------------------------------------------------------------
def as_array(value, op: str, name: str):
    """A DeviceArray as it is; anything else as a NumPy array (DLPack CPU arrays through np.from_dlpack)."""
    if isinstance(value, DeviceArray | np.ndarray):
        if isinstance(value, DeviceArray) and value.buffer is None:
            raise NNReleasedError(f"{op}: {name} is a released DeviceArray")
        if isinstance(value, DeviceArray) and not value.contiguous:
            raise NNError(f"{op}: {name} is a strided DeviceArray view ({value!r}); the kernels take contiguous "
                          "arrays (slices of leading dimensions are)")
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as err:
            raise NNError(f"{op}: {name} ({type(value).__name__}) cannot be read through DLPack: {err}") from None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise NNError(f"{op}: {name} ({type(value).__name__}) is not an array: {err}") from None
    if array.dtype == object or array.dtype.kind in "USMmV":
        raise NNError(f"{op}: {name} ({type(value).__name__}) is not an array of numbers")
    return array


def float_kind(x, op: str, name: str) -> str:
    dtype = np.dtype(x.dtype)
    if dtype not in FLOATS or FLOATS[dtype] not in OPS[op].dtypes:
        raise NNError(f"{op}: {name} is {dtype}; it takes {', '.join(OPS[op].dtypes)} (float32, float16, "
                      "ml_dtypes.bfloat16): convert it with .astype()")
    return FLOATS[dtype]


def same_kind(x, kind: str, op: str, name: str, first: str) -> None:
    dtype = np.dtype(x.dtype)
    if FLOATS.get(dtype) != kind:
        raise NNError(f"{op}: {name} is {dtype} and {first} {kind}: they must share one dtype")


def check_out(out, shape: tuple, dtype: np.dtype, op: str):
    if out is None:
        return None
    out = as_array(out, op, "out")
    if tuple(out.shape) != tuple(shape) or np.dtype(out.dtype) != dtype:
        raise NNError(f"{op}: out is {tuple(out.shape)} {np.dtype(out.dtype)}; it must be {tuple(shape)} {dtype}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise NNError(f"{op}: out is a read-only array")
    return out


def real(value, op: str, name: str, *, positive: bool = False, low: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise NNError(f"{op}: {name} is a real number, not {value!r}")
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0) or (low is not None and value < low):
        need = "finite and positive" if positive else (f"finite and at least {low:g}" if low is not None else "finite")
        raise NNError(f"{op}: {name} must be {need}, not {value!r}")
    if abs(value) >= F32_LIMIT:
        raise NNError(f"{op}: {name} must be within float32's range (the kernels take it as an f32), not {value!r}")
    return value


F32_LIMIT = float(np.finfo(np.float32).max) + 2.0 ** 103  # the numbers that round to a finite f32 lie below it


def integer(value, op: str, name: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise NNError(f"{op}: {name} is an integer of at least {low}, not {value!r}")
    return int(value)


def sample_options(temperature, top_k, top_p, op: str = "sample") -> tuple[float, int, float]:
    """`sample`'s options checked (a caller that samples later, such as a model's generate, checks them before its
    work): temperature finite and at least 0, top_k an integer of at least 0, top_p in (0, 1]."""
    temperature = real(temperature, op, "temperature", low=0.0)
    top_k = integer(top_k, op, "top_k")
    top_p = real(top_p, op, "top_p")
    if not 0.0 < top_p <= 1.0:
        raise NNError(f"{op}: top_p must lie in (0, 1], not {top_p!r}")
    return temperature, top_k, top_p


# the one launch path ----------------------------------------------------------------------------------------
_pipelines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {id(spec): (spec, kernel)}
_kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {signature: PreparedLaunch}
_tables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {rotary key: DeviceArray}


def view(x, dtype, op: str = "nn", name: str = "an argument") -> DeviceArray | np.ndarray:
    """x's bytes as a flat array of `dtype` (a NumPy view, or a DeviceArray view of the same storage)."""
    dtype = np.dtype(dtype)
    if isinstance(x, DeviceArray):
        if not x.contiguous:
            raise NNError(f"{op}: {name} is a strided DeviceArray view ({x!r}); the kernels take contiguous arrays")
        return x.flat(dtype)
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat.view(dtype) if flat.size else np.zeros(16 // dtype.itemsize, dtype)


# the inputs (their index in a call's arrays) that out= may be exactly, computed in place: every element read
# and written by one invocation; an out sharing bytes with any other input, or only part of one, is computed into
# scratch and then copied into out (as hydroplane.matmul's and attention's out=)
IN_PLACE = {"rms_norm": (0, 2), "rotary_embedding": (0,), "gelu": (0,), "silu": (0,), "gated": (0, 1),
            "add": (0, 1), "softcap": (0,)}


def staged_out(op: str, arrays: tuple, out) -> bool:
    """Whether `out` (a DeviceArray) shares bytes with an input other than as the in-place alias IN_PLACE allows."""
    if type(out) is not DeviceArray:
        return False
    storage = out.storage
    for i, arr in enumerate(arrays):
        if type(arr) is not DeviceArray or arr.storage is not storage:
            continue
        if (arr is out or (arr.layout.offset == out.layout.offset and
                           arr.size * arr.dtype.itemsize == out.size * out.dtype.itemsize)) and \
                i in IN_PLACE.get(op, ()):
            continue  # exactly the input out= may be (the arrays are contiguous: checked before, or planned)
        if out.overlaps(arr):
            return True
    return False


class _Call:
    """One op call on one device: the device chosen (the DeviceArrays', else `device`, else the runtime's default),
    the outputs (DeviceArrays there: the caller's or made here), scratch buffers, the launches. With a `key`
    (planned_call's), the call records its launches and its result keeps them as the key's plan (_Plan.keep)."""

    def __init__(self, op: str, arrays: tuple, out, device, key: tuple | None = None):
        self.op, self.arrays, self.key = op, arrays, key
        self.recorded: list | None = [] if key is not None else None  # the launches, for the key's _Plan
        pinned = {a.device for a in (*arrays, out) if isinstance(a, DeviceArray)}
        if device is not None and device != "ref" and (isinstance(device, bool) or not isinstance(
                device, int | np.integer) or device < 0):
            raise NNError(f"{op}: device is 'ref', a Vulkan device number or None, not {device!r}")
        if len(pinned) > 1 or (pinned and device is not None and device not in pinned):
            raise NNError(f"{op}: DeviceArrays of {sorted(map(str, pinned))} with device={device!r}")
        self.on_device = bool(pinned)
        self.device = pinned.pop() if pinned else canonical_device(device)
        try:
            self.runtime = runtime(self.device)
        except HydroplaneError as err:  # no Vulkan loader, no such device: the op's own class
            raise NNError(f"{op}: {err}") from None
        self.executor = self.runtime.executor
        self.target = self.executor.target
        self._scratch: list = []
        self.holds: dict = {}  # name -> the `held` buffers this call binds
        self.staged: DeviceArray | None = None  # out, where the result is computed into scratch first

    def array(self, contents: np.ndarray | None, dtype, shape) -> DeviceArray:
        """A DeviceArray of this device: of `contents`, or unset."""
        dtype = np.dtype(dtype)
        nbytes = max(4, math.prod(shape) * dtype.itemsize)
        made = DeviceArray(self.device, self.executor, self.runtime.alloc(nbytes), dtype, tuple(shape))
        if contents is not None:
            made.write(np.ascontiguousarray(contents, dtype))
        return made

    def output(self, out, shape, dtype) -> DeviceArray:
        """Where the result goes: the caller's DeviceArray out (or scratch, copied into it, where out shares bytes
        with an input: `staged_out`), else a new DeviceArray (read back for NumPy, a NumPy out's too)."""
        if isinstance(out, DeviceArray):
            if not staged_out(self.op, self.arrays, out):
                return out
            self.staged, self.recorded = out, None  # (such a call is not planned: planned_call stages it again)
        made = self.array(None, dtype, shape)
        if not self.on_device or out is not None:
            self._scratch.append(made)
        return made

    def scratch(self, count: int, dtype) -> DeviceArray:
        made = self.array(None, dtype, (count,))
        self._scratch.append(made)
        return made

    def held(self, name: str, count: int, dtype) -> DeviceArray:
        """A buffer the calls of this call's key share (greedy sampling's partial results, a drawn seed): the
        key's plan's when it has one, else made here and kept by the plan this call makes (`_Plan.keep`), so that
        every launch of the key binds the same one (the queue orders their uses). Without a key, scratch."""
        if self.key is None:
            return self.scratch(count, dtype)
        plan = _plans.get(self.key)
        made = plan.held.get(name) if plan is not None and plan.rt is self.runtime else None
        if made is None or made.released:
            made = self.array(None, dtype, (count,))
        self.holds[name] = made
        return made

    def launch(self, kernel, constexprs: dict, grid: tuple, arguments: dict, aliases: dict | None = None) -> None:
        """One dispatch of `kernel` (a lang Kernel) for these constexprs, queued on the call's device: its pipeline
        cached per executor, the arguments bound by `launch.prepare` (NumPy arrays copied in, DeviceArrays as they
        are; `aliases` binds a parameter to another's buffer: the 16-byte views, unused buffers), the prepared launch
        kept per signature when every argument is a device array or a scalar (launch.prepared.dispatch_kept)."""
        spec = kernel.compile(self.target, **constexprs)
        made = _pipelines.setdefault(self.executor, {})
        if id(spec) not in made:
            made[id(spec)] = (spec, self.executor.kernel(spec.words))
        grid3 = tuple(int(g) for g in (*grid, *(1,) * (3 - len(grid))))
        planned = dispatch_kept(_kept.setdefault(self.executor, {}), self.executor, made[id(spec)][1], spec, grid3,
                                arguments, aliases)
        if self.recorded is not None:
            self.recorded.append((made[id(spec)][1], spec, grid3, dict(arguments), aliases, planned))

    def result(self, made: DeviceArray, out, shape):
        """The call's value: the DeviceArray (device calls: out when given), else NumPy (out written when given: a
        NumPy out of a device call too, after waiting for the result). A call of a planned key keeps its plan here
        (every check passed)."""
        if self.staged is not None:
            self.staged.copy_from(made)
            return self.staged
        if self.on_device and not isinstance(out, np.ndarray):
            if self.recorded is not None:
                _Plan.keep(self, made, out is None)
            return made
        value = made.numpy().reshape(shape)
        if out is not None:
            np.copyto(out, value)
            return out
        return value

    def close(self) -> None:
        scratch, self._scratch = self._scratch, []
        for made in scratch:
            made.release()

    def __enter__(self) -> _Call:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Plan:
    """The launches of a checked call of DeviceArrays, for the later calls of its key (`planned_call`: the op, the
    arrays' signatures, out's, the other arguments and their types): those calls skip the checks (the key fixes
    their outcomes) and queue the planned launches of their arrays' places (`by_place`, as matmul's FastCall), or,
    at new places, the recorded launches bound to their arrays (each argument a view of one of the call's arrays,
    or a table of this module) through dispatch_kept, which plans them. `served`: the calls it served."""

    __slots__ = ("rt", "launches", "result", "by_place", "served", "held")

    def __init__(self, rt, launches: list | None, result: tuple | None):
        self.rt, self.launches, self.result = rt, launches, result
        self.by_place: dict = {}  # the arrays' places (out's last) -> the planned launches that bound them
        self.served = 0
        self.held: dict = {}  # name -> a buffer every launch of the key binds (_Call.held), written per call

    @staticmethod
    def keep(call: _Call, made: DeviceArray, new_result: bool) -> None:
        """Keep (or add to) the plan of `call`'s key: the places of its arrays (`made` the result), and its launches
        traced to them where each array argument is one of theirs, alone at its place, or a table."""
        slots = (*call.arrays, made)
        scratch = {id(arr.storage) for arr in call._scratch}
        launches: list | None = []
        planned = []
        for kernel, spec, grid, arguments, aliases, launch in call.recorded:
            planned.append(launch)
            args = {}
            for name, value in arguments.items():
                if type(value) is DeviceArray:
                    if id(value.storage) in scratch:  # made anew by each call: not planned
                        return
                    same = [i for i, arr in enumerate(slots) if arr is not None and arr.storage is value.storage]
                    at = [i for i in same if slots[i].layout.offset == value.layout.offset]
                    if len(at) == 1:
                        value = (at[0], value.parked())
                    elif same:  # two arrays at one place, or a view inside one: which one it is is ambiguous
                        launches = None
                args[name] = value  # a number, a slot's (index, template), or a table of this module (kept)
            if launches is not None:
                launches.append((kernel, spec, grid, args, aliases))
        places = places_of(slots)
        plan = _plans.get(call.key)
        if plan is None or plan.rt is not call.runtime:
            plan = _plans[call.key] = _Plan(call.runtime, launches, (made.dtype, made.shape, max(4, made.nbytes))
                                            if new_result else None)
            while len(_plans) > PLANNED_CALLS:
                _plans.pop(next(iter(_plans)))
        elif plan.launches is None:
            plan.launches = launches
        if any(plan.held.get(name) is not made for name, made in call.holds.items()):
            plan.launches, plan.by_place = launches, {}  # (a held buffer made anew: the old launches bind the old)
            plan.held = dict(call.holds)
        if places is not None and None not in planned:
            plan.remember(places, tuple(planned))

    def remember(self, places: tuple, planned: tuple) -> None:
        if len(self.by_place) >= KEPT_PLANS:
            self.by_place.clear()
        self.by_place[places] = planned

    def run(self, arrays: tuple, out: DeviceArray | None, writes: dict | None = None) -> DeviceArray | None:
        """The call's result with its launches queued, or None where the plan cannot serve it (an argument
        released, a new place and no launches traced): the checked path then runs. `writes`: {held name: NumPy
        values} written into the held buffers first (queued: the launches read them after)."""
        rt = self.rt
        places = places_of(arrays)
        if places is None or rt.closed:
            return None
        if writes:
            held = [self.held.get(name) for name in writes]
            if any(buf is None or buf.released for buf in held):
                return None
            with rt.lock:  # the writes and the launches that read them queued together (another thread's call
                # of the key writes the same held buffers)
                for buf, values in zip(held, writes.values(), strict=True):
                    buf.write(values)
                return self._queue(rt, places, arrays, out)
        return self._queue(rt, places, arrays, out)

    def _queue(self, rt, places: tuple, arrays: tuple, out: DeviceArray | None) -> DeviceArray | None:
        made = out is None
        if made:
            dtype, shape, nbytes = self.result  # type: ignore[misc]
            out = DeviceArray.made(rt, nbytes, dtype, shape)
            places += ((id(out.storage.buffer), 0),)
        else:
            buffer = out.storage.buffer
            if buffer is None:
                return None
            places += ((id(buffer), out.layout.offset),)
        planned = self.by_place.get(places)
        if planned is not None:  # these buffers at these offsets were bound before: queue those launches again
            if len(planned) == 1:
                rt.launch_planned(planned[0])
            else:
                with rt.lock:
                    for launch in planned:
                        rt.launch_planned(launch)
        elif self.launches is not None:
            self._bind_and_queue((*arrays, out), places)
        else:
            if made:
                out.release()
            return None
        self.served += 1
        return out

    def _bind_and_queue(self, slots: tuple, places: tuple) -> None:
        rt = self.rt
        kept = _kept.setdefault(rt.executor, {})
        queued = []
        with rt.lock:
            for kernel, spec, grid, args, aliases in self.launches:  # type: ignore[union-attr]
                arguments = {}
                for name, value in args.items():
                    if type(value) is tuple:
                        base = slots[value[0]]
                        value = base.like(value[1], base.layout.offset)
                    arguments[name] = value
                queued.append(dispatch_kept(kept, rt.executor, kernel, spec, grid, arguments, aliases))
        if None not in queued:
            self.remember(places, tuple(queued))


_plans: dict = {}  # planned_call's keys -> _Plan
_SEEDS = random.Random()  # sample's fresh seeds (seed=None), from the OS's entropy at import
PLANNED_CALLS = 256
_PLAIN = frozenset((type(None), bool, int, float, str))  # types whose == a planned call's key trusts


def _kind(value):
    """What a planned call's key holds of an argument's type: the type (a NumPy scalar's too), a tuple's elements'
    types (normalized_shape=(True,) is (1,) to ==), or None where its == is not to be trusted (the call then has
    no key)."""
    kind = type(value)
    if kind in _PLAIN or issubclass(kind, np.number | np.bool_):
        return kind
    if kind is tuple:
        kinds = tuple(map(_kind, value))
        return None if None in kinds else kinds
    return None


def planned_call(op: str, arrays: tuple, out, scalars: tuple, writes: dict | None = None) -> tuple:
    """(the result, the key) of a call that its key's plan served; else (None, the key under which the checked call
    plans itself), or (None, None) where the call has none (an array argument that is not a DeviceArray). The key:
    the op, each array's signature (None where absent), out's (None: a new result), and `scalars` (every other
    argument, as given) with their types, a tuple's elements' too: a call differing in anything checked misses.
    `writes` ({held name: values}): what a served call writes into its plan's held buffers (`_Plan.run`)."""
    signatures = []
    for arr in arrays:
        if arr is None:
            signatures.append(None)
        elif type(arr) is DeviceArray:
            signatures.append(arr.signature)
        else:
            return None, None
    if out is not None and (type(out) is not DeviceArray or staged_out(op, arrays, out)):
        return None, None
    kinds = tuple(map(type, scalars))
    if not _PLAIN.issuperset(kinds):
        kinds = tuple(map(_kind, scalars))
        if None in kinds:
            return None, None
    key = (op, tuple(signatures), None if out is None else out.signature, kinds, scalars)
    try:
        plan = _plans.get(key)
    except TypeError:  # an unhashable argument: the checked path says what is wrong with it
        return None, None
    if plan is not None:
        result = plan.run(arrays, out, writes)
        if result is not None:
            return result, key
    return None, key


def threads_for(call: _Call, work: int) -> int:
    """A workgroup for `work` elements of one row: whole subgroups, up to MAX_THREADS, about 8 elements each."""
    sg = call.target.subgroup_size
    groups = max(1, min(max(1, MAX_THREADS // sg), -(-work // (sg * 8))))
    return sg * groups


def storage(x, kind: str):
    """x as the kernel binds it: its storage elements (bf16 as u16)."""
    return view(x, STORAGE[kind])


# the ops ----------------------------------------------------------------------------------------------------
def rms_norm(x, normalized_shape, weight=None, eps=None, *, residual=None, out=None, device=None):
    """x / sqrt(mean(x², over the normalized_shape trailing dimensions) + eps) * weight (torch's rms_norm); the sum
    of squares in f32; eps None is float32's eps (torch's opmath eps). weight: normalized_shape, x's dtype.
    residual (x's shape and dtype): added to the result in the same kernel (a post-norm's residual add), the sum
    rounded once; out may be residual."""
    op = "rms_norm"
    result, key = planned_call(op, (x, weight, residual), out, (normalized_shape, eps, device))
    if result is not None:
        return result
    x = as_array(x, op, "x")
    kind = float_kind(x, op, "x")
    norm = (normalized_shape,) if isinstance(normalized_shape, int | np.integer) else normalized_shape
    try:
        norm = tuple(integer(d, op, "normalized_shape", 1) for d in norm)
    except TypeError:
        raise NNError(f"{op}: normalized_shape is an int or a tuple of ints, not {normalized_shape!r}") from None
    if not norm or len(norm) > len(x.shape) or tuple(x.shape[len(x.shape) - len(norm):]) != norm:
        raise NNError(f"{op}: normalized_shape {norm} is not the trailing dimensions of x's shape {tuple(x.shape)}")
    if weight is not None:
        weight = as_array(weight, op, "weight")
        same_kind(weight, kind, op, "weight", "x")
        if tuple(weight.shape) != norm:
            raise NNError(f"{op}: weight has shape {tuple(weight.shape)}; it must be normalized_shape {norm}")
    eps = float(np.finfo(np.float32).eps) if eps is None else real(eps, op, "eps", low=0.0)
    if residual is not None:
        residual = as_array(residual, op, "residual")
        same_kind(residual, kind, op, "residual", "x")
        if tuple(residual.shape) != tuple(x.shape):
            raise NNError(f"{op}: residual has shape {tuple(residual.shape)}; it must be x's {tuple(x.shape)}")
    out = check_out(out, x.shape, np.dtype(x.dtype), op)
    n = math.prod(norm)
    rows = math.prod(x.shape) // n
    with _Call(op, (x, weight, residual), out, device, key) as call:
        made = call.output(out, x.shape, x.dtype)
        if rows == 0:
            return call.result(made, out, x.shape)
        wide = WIDE[kind] if n % WIDE[kind] == 0 else 0
        aliases = {"x4": "x", "w4": "w", "res4": "res", "out4": "out"}
        args = {"x": storage(x, kind), "out": storage(made, kind), "rows": rows, "n": n, "eps": eps}
        if weight is None:
            aliases["w"] = "x"
        else:
            args["w"] = storage(weight, kind)
        if residual is None:
            aliases["res"] = "x"
        else:
            args["res"] = storage(residual, kind)
        grid = (min(rows, ROWS_X), -(-rows // ROWS_X))
        call.launch(OPS[op].kernel(kind), dict(THREADS=threads_for(call, n // max(wide, 1)),
                                               SG=call.target.subgroup_size, WEIGHT=weight is not None, WIDE=wide,
                                               RESIDUAL=residual is not None),
                    grid, args, aliases)
        return call.result(made, out, x.shape)


STYLES = ("neox", "interleaved")


def inverse_frequencies(theta: float, freq_scale: float, rotary_dim: int) -> np.ndarray:
    """freq_scale * theta^(-2i / rotary_dim) for i < rotary_dim / 2, in float64 rounded once to f32."""
    i = np.arange(rotary_dim // 2, dtype=np.float64)
    return (freq_scale * theta ** (-2.0 * i / rotary_dim)).astype(np.float32)


def rotary_embedding(x, positions, *, theta=10000.0, style="neox", rotary_dim=None, freq_scale=1.0, out=None,
                     device=None):
    """Rotary position embedding of x (T, H, D) at positions (T,) int32 (NumPy, values 0 .. 2^24 - 1, or a
    DeviceArray read on the device): pairs (i, i + R/2) ("neox", llama.cpp's NEOX) or (2i, 2i + 1)
    ("interleaved", llama.cpp's NORM) of the first R = rotary_dim elements of each head turned by
    position * freq_scale * theta^(-2i/R); the rest copied. out may be x."""
    op = "rotary_embedding"
    result, key = planned_call(op, (x, positions), out, (theta, style, rotary_dim, freq_scale, device))
    if result is not None:
        return result
    x = as_array(x, op, "x")
    kind = float_kind(x, op, "x")
    if len(x.shape) != 3:
        raise NNError(f"{op}: x has shape {tuple(x.shape)}; it must be (tokens, heads, head_dim)")
    tokens, heads, d = (int(s) for s in x.shape)
    if style not in STYLES:
        raise NNError(f"{op}: style is 'neox' or 'interleaved', not {style!r}")
    r = d if rotary_dim is None else integer(rotary_dim, op, "rotary_dim", 2)
    if r > d or r % 2:
        raise NNError(f"{op}: rotary_dim {r} must be even and at most head_dim {d}")
    theta = real(theta, op, "theta", positive=True)
    freq_scale = real(freq_scale, op, "freq_scale", positive=True)
    positions = as_array(positions, op, "positions")
    if tuple(positions.shape) != (tokens,):
        raise NNError(f"{op}: positions has shape {tuple(positions.shape)}; it must be (tokens,) = ({tokens},)")
    if isinstance(positions, DeviceArray):
        if positions.dtype != np.int32:
            raise NNError(f"{op}: positions is a DeviceArray of {positions.dtype}; it must be int32")
    else:
        if positions.dtype.kind not in "iu":
            raise NNError(f"{op}: positions is {positions.dtype}; it must be integers (int32)")
        if positions.size and (positions.min() < 0 or positions.max() >= POSITION_LIMIT):
            raise NNError(f"{op}: positions range over {positions.min()} .. {positions.max()}; they must lie in "
                          f"0 .. {POSITION_LIMIT - 1} (exact in f32)")
        positions = np.ascontiguousarray(positions, np.int32).reshape(positions.shape)
    out = check_out(out, x.shape, np.dtype(x.dtype), op)
    with _Call(op, (x, positions), out, device, key) as call:
        made = call.output(out, x.shape, x.dtype)
        if tokens * heads * d == 0:
            return call.result(made, out, x.shape)
        freq = inverse_frequencies(theta, freq_scale, r)
        tables = _tables.setdefault(call.executor, {})  # kept on the device (a captured step binds it)
        key = (theta, freq_scale, r)
        if key not in tables:
            if call.runtime.capture is not None:
                raise NNError(f"{op}: its frequency table (theta={theta:g}, freq_scale={freq_scale:g}, rotary_dim={r}) "
                              "is uploaded on first use, which a capture cannot replay: call rotary_embedding once "
                              "with these settings before capturing")
            tables[key] = call.array(freq, np.float32, freq.shape)
        per_head = r // 2 + (d - r)
        total = tokens * heads * per_head
        kernel = OPS[op].kernel(kind, style == "neox")
        call.launch(kernel, {}, (stride_groups(total, activation_kernels.THREADS),),
                    {"x": storage(x, kind), "positions": view(positions, np.int32, op, "positions"),
                     "freq": tables[key], "out": storage(made, kind),
                     "tokens": tokens, "heads": heads, "d": d, "r": r})
        return call.result(made, out, x.shape)


def _activation(op: str, act: str, x, up, out, device, halves: bool = False):
    result, key = planned_call(op, (x, up), out, (act, halves, device))
    if result is not None:
        return result
    x = as_array(x, op, "gate" if up is not None or halves else "x")
    kind = float_kind(x, op, "gate" if up is not None or halves else "x")
    shape = tuple(x.shape)
    if up is not None:
        up = as_array(up, op, "up")
        same_kind(up, kind, op, "up", "gate")
        if tuple(up.shape) != tuple(x.shape):
            raise NNError(f"{op}: gate {tuple(x.shape)} and up {tuple(up.shape)} must have one shape")
    if halves:
        if len(shape) < 1 or shape[-1] % 2:
            raise NNError(f"{op}: without up, gate's last dimension holds gate then up: an even length, not "
                          f"{shape}")
        shape = (*shape[:-1], shape[-1] // 2)
    out = check_out(out, shape, np.dtype(x.dtype), op)
    n = math.prod(shape)
    half = shape[-1] if halves else 1
    with _Call(op, (x, up), out, device, key) as call:
        made = call.output(out, shape, x.dtype)
        if n == 0:
            return call.result(made, out, shape)
        wide = WIDE[kind] if n % WIDE[kind] == 0 and half % WIDE[kind] == 0 else 0
        args = {"x": storage(x, kind), "out": storage(made, kind), "n": n, "half": max(half, 1)}
        aliases = {"x4": "x", "up4": "up", "out4": "out"}
        if up is None:
            aliases["up"] = "x"
        else:
            args["up"] = storage(up, kind)
        call.launch(OPS[op].kernel(kind, act, up is not None or halves), {"WIDE": wide, "HALVES": halves},
                    (stride_groups(n // max(wide, 1), activation_kernels.THREADS),), args, aliases)
        return call.result(made, out, shape)


GELU_FORMS = {"none": "gelu", "tanh": "gelu_tanh"}
GATED = ("gelu_tanh", "gelu", "silu")


def gelu(x, approximate="none", *, out=None, device=None):
    """GELU: x * Φ(x) (approximate="none", through erf) or its tanh form (approximate="tanh"), torch's names."""
    if approximate not in GELU_FORMS:
        raise NNError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")
    return _activation("gelu", GELU_FORMS[approximate], x, None, out, device)


def silu(x, *, out=None, device=None):
    """SiLU: x * sigmoid(x) = x / (1 + exp(-x))."""
    return _activation("silu", "silu", x, None, out, device)


def gated(gate, up=None, activation="gelu_tanh", *, out=None, device=None):
    """act(gate) * up in one kernel (a gated FFN: GeGLU with "gelu_tanh" or "gelu", SwiGLU with "silu"). up=None:
    gate's last dimension holds gate then up (one projection's output for both, torch.nn.functional.glu's split):
    the result has half its length."""
    if activation not in GATED:
        raise NNError(f"gated: activation is one of {', '.join(GATED)}, not {activation!r}")
    return _activation("gated", activation, gate, up, out, device, halves=up is None)


def add(a, b, *, out=None, device=None):
    """a + b: b of a's shape or of its trailing dimensions (repeated over a's leading ones); out may be a."""
    op = "add"
    result, key = planned_call(op, (a, b), out, (device,))
    if result is not None:
        return result
    a, b = as_array(a, op, "a"), as_array(b, op, "b")
    kind = float_kind(a, op, "a")
    same_kind(b, kind, op, "b", "a")
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    if len(b_shape) > len(a_shape) or a_shape[len(a_shape) - len(b_shape):] != b_shape:
        raise NNError(f"{op}: b's shape {b_shape} is neither a's {a_shape} nor its trailing dimensions")
    out = check_out(out, a_shape, np.dtype(a.dtype), op)
    n, nb = math.prod(a_shape), math.prod(b_shape)
    with _Call(op, (a, b), out, device, key) as call:
        made = call.output(out, a_shape, a.dtype)
        if n == 0:
            return call.result(made, out, a_shape)
        w = WIDE[kind]
        wide = w if n % w == 0 and nb % w == 0 else 0
        call.launch(OPS[op].kernel(kind), {"WIDE": wide}, (stride_groups(n // max(wide, 1), 128),),
                    {"a": storage(a, kind), "b": storage(b, kind), "out": storage(made, kind), "n": n, "nb": nb},
                    {"a4": "a", "b4": "b", "out4": "out"})
        return call.result(made, out, a_shape)


def softcap(x, cap, *, out=None, device=None):
    """cap * tanh(x / cap) element-wise (Gemma 2's final logit softcapping, llama.cpp's `final_logit_softcapping`);
    cap finite and positive; out may be x."""
    op = "softcap"
    result, key = planned_call(op, (x,), out, (cap, device))
    if result is not None:
        return result
    x = as_array(x, op, "x")
    kind = float_kind(x, op, "x")
    cap = real(cap, op, "cap", positive=True)
    out = check_out(out, x.shape, np.dtype(x.dtype), op)
    n = math.prod(x.shape)
    with _Call(op, (x,), out, device, key) as call:
        made = call.output(out, x.shape, x.dtype)
        if n:
            call.launch(OPS[op].kernel(kind), {}, (stride_groups(n, SOFTCAP_THREADS),),
                        {"x": storage(x, kind), "out": storage(made, kind), "n": n, "cap": cap})
        return call.result(made, out, x.shape)


def is_quantized(weight) -> bool:
    """A QuantizedArray (hydroplane.quant) or a DeviceArray holding ggml blocks (its `format` set)."""
    return isinstance(weight, QuantizedArray) or (isinstance(weight, DeviceArray) and weight.format is not None)


def embedding(ids, weight, *, out=None, dtype=None, device=None):
    """weight[ids] (torch's F.embedding(input, weight)): ids of any shape (NumPy integers checked to lie in
    0 .. V - 1; an int32 DeviceArray, whose ids outside give zero rows), weight (V, D) f32 / f16 / bf16 (the rows
    copied as stored), or a QuantizedArray / quantized DeviceArray (dequantized on the device by
    ops.quant_matmul.quantized_rows into `dtype`: f32 by default, or out's). The result: ids.shape + (D,)."""
    op = "embedding"
    result, key = planned_call(op, (ids, weight), out, (dtype, device))
    if result is not None:
        return result
    if is_quantized(weight):
        if dtype is None:
            dtype = np.float32 if out is None else out.dtype
        if np.dtype(dtype) not in FLOATS:
            raise NNError(f"{op}: dtype is float32, float16 or bfloat16, not {np.dtype(dtype)}")
        ids = as_array(ids, op, "ids")
        if isinstance(out, DeviceArray):
            out = as_array(out, op, "out")
            if device is not None and canonical_device(device) != out.device:
                raise NNError(f"{op}: out is on device {out.device!r}, device={device!r}")
            device = out.device
        rows = quantized_rows(weight, ids, np.dtype(dtype), device=device)
        if out is None:
            return rows
        out = check_out(out, rows.shape, np.dtype(dtype), op)
        if isinstance(out, DeviceArray):  # the rows made on out's device, then copied into it (queued)
            if isinstance(rows, DeviceArray):
                out.copy_from(rows)
                rows.release()
            else:
                out.write(rows)
            return out
        np.copyto(out, rows.numpy() if isinstance(rows, DeviceArray) else rows)
        return out
    if dtype is not None:
        raise NNError(f"{op}: dtype= is for quantized tables; a float table's rows keep its dtype")
    ids, weight = as_array(ids, op, "ids"), as_array(weight, op, "weight")
    kind = float_kind(weight, op, "weight")
    if len(weight.shape) != 2:
        raise NNError(f"{op}: weight has shape {tuple(weight.shape)}; it must be (num_embeddings, embedding_dim)")
    vocab, d = (int(s) for s in weight.shape)
    if vocab * d >= 1 << 31:
        raise NNError(f"{op}: weight has {vocab * d} elements; at most 2^31 - 1 are addressed")
    if isinstance(ids, DeviceArray):
        if ids.dtype != np.int32:
            raise NNError(f"{op}: ids is a DeviceArray of {ids.dtype}; it must be int32")
    else:
        if ids.dtype.kind not in "iu":
            raise NNError(f"{op}: ids is {ids.dtype}; it must be integers")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab):
            raise NNError(f"{op}: ids range over {ids.min()} .. {ids.max()}; the table has rows 0 .. {vocab - 1}")
        ids = np.ascontiguousarray(ids, np.int32).reshape(ids.shape)  # (a 0-D id stays 0-D: the result (D,))
    shape = (*tuple(ids.shape), d)
    out = check_out(out, shape, np.dtype(weight.dtype), op)
    n_ids = math.prod(ids.shape)
    with _Call(op, (ids, weight), out, device, key) as call:
        made = call.output(out, shape, weight.dtype)
        if n_ids * d == 0:
            return call.result(made, out, shape)
        wide = WIDE[kind] if d % WIDE[kind] == 0 else 0
        call.launch(OPS[op].kernel(kind), {"WIDE": wide}, (stride_groups(n_ids * d // max(wide, 1), 128),),
                    {"ids": view(ids, np.int32), "w": storage(weight, kind), "out": storage(made, kind),
                     "n_ids": n_ids, "vocab": vocab, "d": d}, {"w4": "w", "out4": "out"})
        return call.result(made, out, shape)


def sample(logits, *, temperature=0.0, top_k=0, top_p=1.0, seed=None, device=None):
    """The next token of each row of logits (V,) or (R, V), on the device: greedy (temperature 0: the largest
    logit's lowest index; NaN ranks below -inf) or a draw from softmax(logits / temperature) kept to the top_k
    largest (0: all; ties with the k-th kept) and then to the top_p nucleus (1.0: all), with a uniform number from
    a hash of seed and row (seed: an int, a uint32 DeviceArray of one element read on the device, or None: a fresh
    one). NumPy logits give an int (1-D) or an int32 array (R,); a
    DeviceArray an int32 DeviceArray of shape () or (R,)."""
    op = "sample"
    on_device = isinstance(seed, DeviceArray)
    if not on_device and seed is not None:
        seed = integer(seed, op, "seed")
    try:
        greedy = float(temperature) == 0.0
    except (TypeError, ValueError):
        greedy = False  # (the checked path says what is wrong with it)
    word = None  # a draw's seed as the kernel reads it, where it is a number (a fresh one for None)
    if not on_device and not greedy:
        word = np.array([(_SEEDS.getrandbits(32) if seed is None else seed) & 0xFFFFFFFF], np.uint32)
    # planned per key (logits' signature, the options, the seed's kind: its value is written per call)
    result, key = planned_call(op, (logits, seed if on_device else None), None,
                               (temperature, top_k, top_p, on_device, device),
                               None if word is None else {"seeds": word})
    if result is not None:
        return result
    logits = as_array(logits, op, "logits")
    kind = float_kind(logits, op, "logits")
    if len(logits.shape) not in (1, 2) or logits.shape[-1] < 1:
        raise NNError(f"{op}: logits has shape {tuple(logits.shape)}; it must be (vocab,) or (rows, vocab), vocab "
                      "at least 1")
    temperature, top_k, top_p = sample_options(temperature, top_k, top_p, op)
    if on_device:
        if seed.dtype != np.uint32 or seed.size != 1:
            raise NNError(f"{op}: a seed DeviceArray holds one uint32, not {seed.shape} {seed.dtype}")
        seeds = seed.reshape(1)
    rows, v = (1, int(logits.shape[0])) if len(logits.shape) == 1 else (int(s) for s in logits.shape)
    shape = tuple(logits.shape[:-1])
    with _Call(op, (logits, seeds if on_device else None), None, device, key) as call:
        made = call.output(None, shape, np.int32)
        if rows == 0:
            return call.result(made, None, shape)
        raw = view(logits, RAW[kind])
        sg = call.target.subgroup_size
        with call.runtime.lock:  # the held buffers' writes and the launches that use them queued together: another
            # thread's call of the key binds the same ones
            if temperature == 0.0:
                chunks = -(-v // ARGMAX_CHUNK)
                chunk = -(-v // chunks)
                threads = threads_for(call, chunk)
                part_key = call.held("part_key", rows * chunks, np.uint32)
                part_idx = call.held("part_idx", rows * chunks, np.int32)
                call.launch(OPS["argmax"].kernel(kind), dict(THREADS=threads, SG=sg, FINAL=chunks == 1), (chunks, rows),
                            {"logits": raw, "part_key": part_key, "part_idx": part_idx, "out": made, "v": v,
                             "chunk": chunk, "chunks": chunks})
                if chunks > 1:
                    call.launch(argmax_final_kernel(), dict(THREADS=threads_for(call, chunks), SG=sg), (rows,),
                                {"part_key": part_key, "part_idx": part_idx, "out": made, "chunks": chunks})
            else:
                if not on_device:
                    seeds = call.held("seeds", 1, np.uint32)
                    seeds.write(word)
                call.launch(OPS[op].kernel(kind), dict(THREADS=threads_for(call, v), SG=sg), (rows,),
                            {"logits": raw, "seeds": seeds, "out": made, "v": v,
                             "inv_temp": min(1.0 / temperature, float(np.finfo(np.float32).max)),
                             "top_k": top_k if top_k < v else 0, "top_p": top_p})
        result = call.result(made, None, shape)
        if isinstance(result, np.ndarray) and result.ndim == 0:
            return int(result)
        return result


# NumPy float64 references -----------------------------------------------------------------------------------
def reference_rms_norm(x, n_dims: int = 1, weight=None, eps=None) -> np.ndarray:
    x = np.asarray(x, np.float64)
    eps = float(np.finfo(np.float32).eps) if eps is None else eps
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if weight is None else y * np.asarray(weight, np.float64)


def reference_rotary(x, positions, *, theta=10000.0, style="neox", rotary_dim=None, freq_scale=1.0) -> np.ndarray:
    """The rotation in float64 of the angle the kernel uses: f32(position) * f32 inverse frequency, rounded to f32
    (docs/nn.md, "Precision")."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    r = d if rotary_dim is None else rotary_dim
    freq = inverse_frequencies(theta, freq_scale, r)
    angle = (np.asarray(positions, np.float32)[:, None] * freq[None, :]).astype(np.float64)[:, None, :]
    c, s = np.cos(angle), np.sin(angle)
    half = r // 2
    i0 = np.arange(half) if style == "neox" else 2 * np.arange(half)
    i1 = i0 + half if style == "neox" else i0 + 1
    y = x.copy()
    y[..., i0] = x[..., i0] * c - x[..., i1] * s
    y[..., i1] = x[..., i0] * s + x[..., i1] * c
    return y


_erf = np.frompyfunc(math.erf, 1, 1)


def reference_softcap(x, cap: float) -> np.ndarray:
    return cap * np.tanh(np.asarray(x, np.float64) / cap)


def reference_activation(x, act: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        if act == "silu":
            return x / (1.0 + np.exp(-x))
        if act == "gelu_tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def order_keys(logits) -> np.ndarray:
    """kernels.nn.common.key_of in NumPy: unsigned keys in the floats' order, -0 == +0, NaN 0 (below -inf)."""
    logits = np.asarray(logits)
    kind = FLOATS[np.dtype(logits.dtype)]
    bits = np.ascontiguousarray(logits).view(RAW[kind]).astype(np.int64)
    sign = 1 << (31 if kind == "f32" else 15)
    inf = {"f32": 0x7F800000, "f16": 0x7C00, "bf16": 0x7F80}[kind]
    mask = (sign << 1) - 1
    mag = bits & (sign - 1)
    keys = np.where(bits & sign, ~bits & mask, bits | sign)
    keys = np.where(mag == 0, sign, keys)
    return np.where(mag > inf, 0, keys)


def _mix32(x: int) -> int:
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def reference_uniform(seed: int, row: int) -> float:
    """kernels.nn.sampling.uniform: the row's number in [0, 1) under the seed."""
    return (_mix32((seed & 0xFFFFFFFF) ^ _mix32(row + 0x9E3779B9)) >> 8) / 16777216.0


def reference_sample(logits, *, temperature=0.0, top_k=0, top_p=1.0, seed=0) -> np.ndarray:
    """The token of each row of (R, V) logits by sample()'s rules, in float64."""
    logits = np.asarray(logits)
    rows = logits.reshape(-1, logits.shape[-1])
    keys = order_keys(rows)
    picks = []
    floor, ceiling = order_keys(np.array([-np.inf, np.inf], rows.dtype))
    for r, (row, key) in enumerate(zip(rows.astype(np.float64), keys)):
        best = int(np.argmax(key))
        if temperature == 0.0 or key[best] <= floor or key[best] >= ceiling:
            picks.append(best)
            continue
        kept = key >= 1
        if 0 < top_k < len(row):
            kept &= key >= np.sort(key)[::-1][top_k - 1]
        with np.errstate(invalid="ignore"):
            q = np.where(kept, np.exp((row - row[best]) / temperature), 0.0)
        if top_p < 1.0:
            order = np.argsort(-key, kind="stable")
            sorted_keys, sorted_q = key[order], q[order]
            csum = np.cumsum(sorted_q)
            # weight strictly above each key: the sum over the keys before its first occurrence
            first = np.searchsorted(-sorted_keys, -sorted_keys, side="left")
            above = np.where(first > 0, csum[np.maximum(first - 1, 0)], 0.0)
            above_of = np.empty_like(above)
            above_of[order] = above
            kept &= above_of < top_p * q.sum()
            q = np.where(kept, q, 0.0)
        target = reference_uniform(seed, r) * q.sum()
        picks.append(int(np.searchsorted(np.cumsum(q), target, side="right")))
    return np.array(picks, np.int32).reshape(logits.shape[:-1])


__all__ = ["NNError", "OPS", "add", "embedding", "gated", "gelu", "reference_activation", "reference_rms_norm",
           "reference_rotary", "reference_sample", "reference_softcap", "reference_uniform", "rms_norm",
           "rotary_embedding", "sample", "silu", "softcap"]
