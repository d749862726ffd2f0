"""`hydroplane.matmul(x, qw.T)` for block-quantized weights, and `quantized_rows(qw, ids, dtype)` (docs/quant.md).

    qw = hydroplane.quant.quantize(w, "q4_k")          # or hydroplane.gguf.load(path).tensors[name]
    y = hydroplane.matmul(x, qw.T, bias=b, activation="gelu")

x is f16, bf16 or f32 of any leading shape (..., K), a NumPy array or a DeviceArray; the weight is a host
QuantizedArray's `.T` (its blocks uploaded once per device and kept there while the QuantizedArray lives) or the `.T`
of a quantized DeviceArray (`format` set, its buffer the blocks). The result is x's dtype, shape (..., N), f32
accumulation, the dequantization in the kernels' loads (kernels/quant): M <= 16 rows take the decode GEMV (split
over K when N is small), more take the cooperative-matrix GEMM (f16 activations; f32 and bf16 rows scaled by a
power of two each into f16's range first, undone in the epilogue; a host array with a value beyond f16's range is
refused all the same), or the GEMV where the device has no f16 tiles.
Epilogue: bias (N values, in the result dtype), activation "relu" / "gelu" (tanh form), `out=`.

`run_quantized(x, weight, fmt, (N, K), ...)` is the one core both weight kinds reach. Layer: ops.
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.quant.decode import FORMATS as KERNEL_FORMATS
from hydroplane.kernels.quant.decode import LANE_FORMATS, unit_blocks
from hydroplane.kernels.quant.dot import DOT_FORMATS, LEVELS_THREADS, levels_kernel, levels_words
from hydroplane.kernels.quant.source import (
    K_MAX_PROLOGUE,
    PROLOGUES,
    REDUCE_THREADS,
    ROWS_THREADS,
    gemm_kernel,
    gemm_shared_bytes,
    gemv_kernel,
    gemv_lanes_kernel,
    gemv_units_kernel,
    reduce_kernel,
    rows_kernel,
    scaled_f16_kernel,
    stage_bytes,
)
from hydroplane.launch.prepared import KEPT_PLANS, DeviceArray, Layout, dispatch_kept, served_places, signature_of
from hydroplane.launch.runtime import canonical_device, runtime
from hydroplane.ops.arrays import is_quantized
from hydroplane.quant import QuantizedArray, QuantizedTranspose, block_format
from hydroplane.quant.formats import QuantError
from hydroplane.spirv import types


class QuantMatmulError(HydroplaneError):
    """A quantized matmul (or row gather) that cannot run as asked: shapes, dtypes, values, devices."""


FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16"}
STORAGE = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16)}
ACTIVATIONS = ("none", "relu", "gelu")
DECODE_ROWS = 16  # M at most this: the GEMV
F16_MAX = 65504.0
GEMV_SUBGROUPS = 4  # subgroups per GEMV workgroup
SPLIT_BELOW = 1024  # a GEMV grid of fewer workgroups than this is split over K ...
SPLIT_TARGET = 2048  # ... into about this many (the H200: 132 SMs x 16 workgroups of 128 invocations resident)
REF_SPLIT_BELOW, REF_SPLIT_TARGET = 4, 4  # the reference executor: the split exercised, kept small
MAX_GROUPS = 4096
BIND_LIMIT = 1 << 27  # bytes of one storage-buffer binding every Vulkan device offers (lavapipe: no more)
WINDOW_ALIGN = 256  # rows per window a multiple of this: the windows' byte offsets stay bindable

_pipelines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {id(spec): (spec, kernel)}
_uploads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # QuantizedArray -> {device: DeviceArray}


# the operands ------------------------------------------------------------------------------------------------
@dataclass
class Weight:
    """A quantized weight as the kernels bind it: its block format, (N, K), the host array (if any) or the
    DeviceArray of its blocks."""

    fmt: str
    n: int
    k: int
    host: QuantizedArray | None = None
    device_array: DeviceArray | None = None

    @property
    def row_bytes(self) -> int:
        return block_format(self.fmt).row_bytes(self.k)

    def on(self, device) -> DeviceArray:
        """The blocks on `device`: the DeviceArray, or the host array's upload (made once, kept while it lives)."""
        if self.device_array is not None:
            if self.device_array.device != device:
                raise QuantMatmulError(f"the quantized weight is on device {self.device_array.device!r}, the call "
                                       f"on {device!r}")
            return self.device_array
        assert self.host is not None
        return upload(self.host, device)


@dataclass(frozen=True)
class Prologue:
    """What the decode GEMV computes from its inputs, each workgroup for itself, before its dot products (one row of
    x, K <= K_MAX_PROLOGUE; kernels/quant/source.py's PROLOGUES): `kind` "norm" (x's RMS norm times `weight`),
    "add_norm" (s = x + delta, then s's), "postnorm_add_norm" (s = x + rms_norm(delta) * delta_weight, then s's),
    "gated" (act(x[:K]) * x[K:], x (1, 2K): gate then up; `activation` "gelu_tanh", "gelu" or "silu"), "combine"
    (a one-token decode attention's output row from its KV splits, f16-rounded as the combining pass writes it: x
    (1, splits * K) the main pass's split results, `delta` their maxima and sums, `weight` the keys in use (an s32
    DeviceArray, read as its bits), `combine` (splits, split length, window or 0, key capacity, rows per KV head,
    head dim, lanes) from the attention plan's combining pass). `sum_out`: where s goes (the residual stream's next
    value), or None. Every other array an f32 DeviceArray of the GEMV's device."""

    kind: str
    weight: DeviceArray | None = None
    eps: float = 1e-6
    delta: DeviceArray | None = None
    delta_weight: DeviceArray | None = None
    sum_out: DeviceArray | None = None
    activation: str = "gelu_tanh"
    combine: tuple[int, ...] = ()

    def x_length(self, k: int) -> int:
        """The length of the x row this prologue reads for a weight of K = k."""
        return k * {"gated": 2, "combine": self.combine[0] if self.combine else 0}.get(self.kind, 1)

    def arguments(self) -> tuple[dict, dict, dict]:
        """(buffers, their aliases for the ones not read, constexprs) of the GEMV launch."""
        buffers, aliases = {}, {}
        for name, array in (("pw", self.weight), ("pd", self.delta), ("pdw", self.delta_weight),
                            ("ps", self.sum_out)):
            if array is None:
                aliases[name] = "x"
            else:
                buffers[name] = array.reshape(-1)
        if self.kind == "combine":
            buffers["pw"] = self.weight.reshape(-1).reinterpret(np.float32)
        constexprs = {"PRO": self.kind, "PACT": self.activation if self.kind == "gated" else "none",
                      "SUM_OUT": self.sum_out is not None}
        if self.kind == "combine":
            constexprs["CMB"] = tuple(self.combine)
        return buffers, aliases, constexprs

    def check(self, k: int) -> None:
        """A clear error where a "combine" prologue's geometry and arrays do not fit a weight of K = k."""
        if self.kind != "combine":
            return
        if len(self.combine) != 7 or min(self.combine[:2]) < 1 or min(self.combine[3:]) < 1 or self.combine[5] % 4 \
                or k % self.combine[5] or (k // self.combine[5]) % self.combine[4]:
            raise QuantMatmulError(f"a combine prologue takes (splits, split length, window, capacity, rows, head dim, "
                                   f"lanes) with a head dim that divides K={k}; got {self.combine}")
        if not isinstance(self.weight, DeviceArray) or np.dtype(self.weight.dtype) != np.int32 or \
                self.weight.size < 1:
            raise QuantMatmulError("a combine prologue reads the keys in use from an int32 DeviceArray (weight=)")
        stats = 2 * self.combine[0] * (k // self.combine[5])
        if not isinstance(self.delta, DeviceArray) or np.dtype(self.delta.dtype) != np.float32 or \
                self.delta.size < stats:
            raise QuantMatmulError(f"a combine prologue reads {stats} f32 maxima and sums (delta=)")


NORM_PROLOGUES = ("norm", "add_norm", "postnorm_add_norm")
# A norm prologue loads all its inputs at once into registers where each invocation holds at most this many of a row
# (kernels/quant/source.py's HELD; Gemma 3 270M's K = 640 is 5 with 128 invocations); else it loops in three rounds.
PROLOGUE_HELD = 8
# With a prologue, the unit GEMV loads its lanes' first unit of W (where a unit is loaded whole) before the prologue,
# so the weights' memory latency runs beside the prologue's (kernels/quant/source.py's PRELOAD). Off: on an H100
# (2026-12-06 05:37 UTC, benchmarks/model_profile.py --folds) the model's decode step took 1846.9 us with it and
# 1810.7 without
PROLOGUE_PRELOAD = False


def prologue_fits(weight_fmt: str, k: int) -> bool:
    """Whether the decode GEMV of a (N, k) weight of this format takes a prologue (its unit GEMV runs it)."""
    return k <= K_MAX_PROLOGUE and units_plan(weight_fmt, 1, 1, k, 32, False) is not None


def upload(qw: QuantizedArray, device=None) -> DeviceArray:
    """qw's blocks in a buffer of `device`: a quantized DeviceArray (`format` set, shape (N, K), its storage the
    blocks padded to whole 16 bytes), made once per device and kept while qw lives."""
    device = canonical_device(device)
    per_device = _uploads.setdefault(qw, {})
    held = per_device.get(device)
    if held is not None and not held.released:
        return held
    rt = runtime(device)
    raw = np.ascontiguousarray(qw.blocks).reshape(-1)
    padded = np.zeros(-(-max(raw.size, 4) // 16) * 16, np.uint8)  # whole 16-byte words for the u32 binding
    padded[: raw.size] = raw
    plain = DeviceArray(rt.key, rt.executor, rt.alloc(padded.size), np.uint8, (padded.size,))
    plain.write(padded)
    plain.storage.nbytes = raw.size  # the blocks' bytes (the buffer holds them padded to whole 16 bytes)
    wide = qw.beyond_f16()
    if wide is not None:  # the quantized matmul refuses these bytes wherever they are multiplied (weight_of)
        _beyond_f16[plain.storage] = wide
    made = DeviceArray(None, None, None, np.uint8, qw.shape, storage=plain.storage, format=qw.format,
                       layout=Layout(0, (block_format(qw.format).row_bytes(qw.shape[1]), 1)))
    per_device[device] = made
    return made


def weight_of(b, what: str = "b") -> Weight:
    """The Weight a matmul's second operand names: qw.T of a QuantizedArray, or the .T of a quantized DeviceArray."""
    if isinstance(b, QuantizedArray):
        raise QuantMatmulError(f"{what} is a quantized array of shape {b.shape} (N, K): multiply by its transpose, "
                               f"hydroplane.matmul(x, qw.T)")
    if isinstance(b, QuantizedTranspose):
        n, k = b.base.shape
        _check_weight_range(b.base.beyond_f16(), what)
        return Weight(b.format, n, k, host=b.base)
    if isinstance(b, DeviceArray) and b.format is not None:
        if b.ndim != 2:
            raise QuantMatmulError(f"{what}: a {b.format} DeviceArray of shape {b.shape}; matmul takes a 2-D weight")
        if not (b.strides[0] < b.strides[1]):
            raise QuantMatmulError(f"{what}: a {b.format} DeviceArray of shape {b.shape} (N, K): multiply by its "
                                   "transpose, hydroplane.matmul(x, qw.T)")
        k, n = b.shape
        try:
            block_format(b.format).row_bytes(k)
        except QuantError as err:
            raise QuantMatmulError(str(err)) from None
        _check_word_offset(b, what)
        _check_weight_range(_beyond_f16.get(b.storage), what)
        return Weight(block_format(b.format).name, n, k, device_array=b.T)  # its rows, at the view's offset
    raise QuantMatmulError(f"{what} is not a quantized weight ({type(b).__name__})")


# the storages of quantized DeviceArrays uploaded from weights beyond f16's range -> their largest |weight|
_beyond_f16: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _check_weight_range(largest: float | None, what: str) -> None:
    """Refuse weights beyond f16's finite range: the prefill GEMM stages weights as f16 (such a weight becomes inf
    there) while the decode GEMV multiplies them in f32, so the result would depend on M."""
    if largest is not None:
        raise QuantMatmulError(f"{what}: weights up to {largest:g}, beyond f16's range (65504): the prefill GEMM "
                               "stages weights as f16, so the quantized matmul refuses them on every path (a result "
                               "never depends on M); multiply by the dequantized weights, or scale them down")


def _check_word_offset(blocks: DeviceArray, what: str) -> None:
    """A row slice of a quantized DeviceArray binds as 32-bit words: its first row must start on a word."""
    if blocks.offset % 4:
        raise QuantMatmulError(f"{what}: a {blocks.format} DeviceArray view whose rows start at byte {blocks.offset} "
                               "of its buffer, not a multiple of 4: the kernels bind 32-bit words; slice the "
                               "QuantizedArray on the host and upload that, hydroplane.device_array(qw[a:b])")


def _float_kind(x, name: str) -> str:
    kind = FLOATS.get(np.dtype(x.dtype))
    if kind is None:
        raise QuantMatmulError(f"{name} is {np.dtype(x.dtype)}; a quantized matmul takes f16, bf16 or f32 "
                               "activations")
    return kind


def _bits(x, kind: str):
    """x as the kernels bind it: its storage elements (bf16 as u16), contiguous."""
    if isinstance(x, DeviceArray):
        return x.view(STORAGE[kind]) if kind == "bf16" else x
    return np.ascontiguousarray(x).view(STORAGE[kind]) if kind == "bf16" else np.ascontiguousarray(x)


def _check_f16_range(x: np.ndarray, kind: str) -> None:
    """Refuse a host activation beyond f16's finite range (the issue's contract: activations enter the tensor cores
    as f16; the prefill GEMM scales f32 and bf16 rows into f16's range, the GEMV reads them as they are), an
    infinite one included: the decode GEMV of q4_0, q5_0 and q4_k subtracts each block's sum of activations, so an
    inf makes its row NaN where the prefill gives +-inf."""
    if x.size == 0:
        return
    big = np.isinf(x) if kind == "f16" else np.abs(x.astype(np.float32)) > F16_MAX
    if big.any():
        at = np.unravel_index(int(np.flatnonzero(big)[0]), x.shape)
        where = f"x[{', '.join(map(str, at))}] = {float(x[at])!r}"
        if np.isinf(float(x[at])):
            raise QuantMatmulError(f"{where}: an infinite activation gives a result that depends on the path (the "
                                   "decode GEMV's q4_0, q5_0 and q4_k rows NaN, the prefill GEMM's +-inf)")
        raise QuantMatmulError(f"{where} is beyond f16's range (65504): a quantized matmul takes {kind} "
                               "activations within f16's range (its tensor cores multiply f16); scale them down")


# the call -----------------------------------------------------------------------------------------------------
def matmul(a, b, *, c=None, alpha=1.0, beta=0.0, bias=None, activation="none", out=None, out_dtype=None,
           acc_dtype=None, device=None):
    """hydroplane.matmul's entry for a quantized b (ops.matmul hands it here): the module docstring."""
    if c is None and alpha == 1.0 and beta == 0.0 and out_dtype is None and acc_dtype is None and \
            type(a) is DeviceArray and type(b) is DeviceArray and a.format is None:  # a call's recording, if kept
        try:
            fast = _fast.get((a.signature, b.signature, signature_of(bias), signature_of(out), activation, device))
        except TypeError:  # an unhashable argument: the checked path says what is wrong with it
            fast = None
        if fast is not None:
            result = fast.run(a, b, bias, out)
            if result is not None:
                return result
    if is_quantized(a):
        raise QuantMatmulError("a is quantized: the quantized weight is the second operand, "
                               "hydroplane.matmul(x, qw.T)")
    asked = {"c": c is not None, "alpha": alpha != 1.0, "beta": beta != 0.0, "out_dtype": out_dtype is not None,
             "acc_dtype": acc_dtype is not None}
    refused = [name for name, given in asked.items() if given]
    if refused:
        raise QuantMatmulError(f"a quantized matmul takes bias, activation and out; not {', '.join(refused)} "
                               "(the result is x's dtype, accumulated in f32)")
    fast_key = None
    if type(a) is DeviceArray and type(b) is DeviceArray and (bias is None or type(bias) is DeviceArray) and \
            (out is None or type(out) is DeviceArray):  # a call of DeviceArrays: its signature's recording
        try:  # (looked up above; the key, to keep this call's recording)
            fast_key = (a.signature, b.signature, signature_of(bias), signature_of(out), activation, device)
            hash(fast_key)
        except TypeError:  # an unhashable argument: the checked path says what is wrong with it
            fast_key = None
    weight = weight_of(b)
    if fast_key is None:
        return run_quantized(a, weight, bias=bias, activation=activation, out=out, device=device)
    launches: list = []
    made: list = []
    _recording.launches, _recording.made = launches, made
    try:
        result = run_quantized(a, weight, bias=bias, activation=activation, out=out, device=device)
    finally:
        _recording.launches = _recording.made = None
    _Recorded.keep(fast_key, launches, made, (a, b, bias, out if out is not None else result), out is None)
    return result


# hydroplane.matmul's name for it: ops.matmul loads it on the first quantized call (its `_LAZY`)
quantized_matmul = matmul


class _Recorded:
    """The launches a checked call of DeviceArrays queued (`_launch` records them), each DeviceArray argument traced to
    the call's arrays (x, the weight's blocks, bias, the result) or to a scratch array the call made, at a byte
    distance from its offset: a later call of the same signature (the same checks' outcomes, the same plan) makes
    its views at those distances, binds scratch of those sizes (made by its first run and kept), and queues the
    launches (dispatch_kept, which finds their plans by the arrays' places) without running the checks and the
    planning again."""

    __slots__ = ("rt", "launches", "scratch", "result", "by_place", "made")

    def __init__(self, rt, launches: list, scratch: list, result: tuple | None):
        self.rt, self.launches, self.scratch, self.result = rt, launches, scratch, result
        self.by_place: dict = {}  # the arrays' places -> the planned launches that bound them (as matmul's FastCall)
        self.made: list | None = None  # the scratch arrays, made by the first run and kept (as matmul's plans keep
        # theirs): every call binds the same ones, so its launches are found by place; the runtime's barriers order
        # one call's use of them after the last's, and each call queues all its launches under the runtime's lock

    @staticmethod
    def keep(key: tuple, launches: list, made: list, slots: tuple, new_result: bool) -> None:
        """Keep the recording of a checked call (`made`: the storages `_alloc` made during it) for its signature,
        when every array argument traces to the call's arrays or to what it made."""
        if not launches or not isinstance(slots[3], DeviceArray):
            return
        storages = [x.storage for x in slots if x is not None]
        if len(set(map(id, storages))) != len(storages):  # two arguments share a buffer: which is which is ambiguous
            return
        scratch: list = []  # the storages of the arrays the call made, in order of first use
        traced = []
        for kernel, spec, grid, arguments, aliases in launches:
            args = {}
            for name, value in arguments.items():
                if type(value) is not DeviceArray:
                    args[name] = value
                    continue
                slot = next((i for i, x in enumerate(slots) if x is not None and value.storage is x.storage), None)
                if slot is None:
                    if not any(value.storage is st for st in made):  # neither the call's nor made by it
                        return
                    at = next((i for i, st in enumerate(scratch) if st is value.storage), None)
                    if at is None:
                        at = len(scratch)
                        scratch.append(value.storage)
                    args[name] = (len(slots) + at, value.layout.offset, value.parked())
                else:
                    args[name] = (slot, value.layout.offset - slots[slot].layout.offset, value.parked())
            traced.append((kernel, spec, grid, args, aliases))
        result = slots[3]
        try:
            _fast[key] = _Recorded(result.runtime, traced, [st.nbytes for st in scratch],
                                   (result.dtype, result.shape, result.storage.nbytes) if new_result else None)
        except TypeError:
            return
        while len(_fast) > FAST_CALLS:
            _fast.pop(next(iter(_fast)))

    def run(self, x: DeviceArray, b: DeviceArray, bias: DeviceArray | None, out: DeviceArray | None):
        rt = self.rt
        if rt.closed or (_beyond_f16 and b.storage in _beyond_f16):  # the checked path refuses such weights
            return None
        places = served_places((x, b, bias), out)
        if places is None:
            return None
        if out is None:
            dtype, shape, nbytes = self.result  # type: ignore[misc]
            out = DeviceArray.made(rt, nbytes, dtype, shape)
            places += ((id(out.storage.buffer), 0),)
        with rt.lock:  # the scratch is this signature's: one call's launches queued at a time
            made = self.made
            if made is None or any(arr.storage.buffer is None for arr in made):
                made = self.made = [DeviceArray(rt.key, rt.executor, rt.alloc(nbytes), np.uint8, (nbytes,))
                                    for nbytes in self.scratch]
            if made:
                places += tuple(id(arr.storage.buffer) for arr in made)
            planned = self.by_place.get(places)
            if planned is not None:  # these buffers at these offsets were bound before: queue those launches again
                rt.launch_kept(self.by_place, places, planned)
                return out
            arrays = (x, b, bias, out, *made)
            queued: list | None = []
            kept = _kept.setdefault(rt.executor, {})
            for kernel, spec, grid, args, aliases in self.launches:
                arguments = {}
                for name, value in args.items():
                    if type(value) is tuple:
                        slot, at, template = value
                        base = arrays[slot]
                        assert base is not None  # a slot the first call had
                        arguments[name] = base.like(template, (base.layout.offset if slot < 4 else 0) + at)
                    else:
                        arguments[name] = value
                launch = dispatch_kept(kept, rt.executor, kernel, spec, grid, arguments, aliases)
                if launch is None:
                    queued = None
                elif queued is not None:
                    queued.append(launch)
            if queued is not None:
                if len(self.by_place) >= KEPT_PLANS:
                    self.by_place.clear()
                self.by_place[places] = tuple(queued)
        return out


_fast: dict = {}  # (the arguments' signatures, activation, device) -> _Recorded
FAST_CALLS = 256
_recording = threading.local()  # .launches / .made: a checked call's `_launch`es and `_alloc`ed storages (or None)


def run_quantized(x, weight: Weight, *, bias=None, activation="none", out=None, device=None, out_dtype=None,
                  col0: int | None = None, prologue: Prologue | None = None, second: Weight | None = None):
    """act(x @ W.T + bias) for a Weight (host or device blocks): the one core. `out_dtype`: the result's dtype (f32,
    f16, bf16; x's by default). `col0`: out (a DeviceArray (..., N') with N' >= col0 + N) gets the result in its
    columns col0 .. col0 + N - 1 (several weights' results side by side in one array). `prologue`: the row the
    GEMV multiplies computed from its inputs (Prologue; x one row of f32 DeviceArray on the device, K of it, 2K
    for "gated"). `second`: a weight of the same K whose results follow W's (N = W's rows + its rows): one launch
    of the unit GEMV for both where `pair_plan` finds one, else a launch each."""
    if not isinstance(x, DeviceArray):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise QuantMatmulError(f"x is not an array ({err})") from None
    kind = _float_kind(x, "x")
    x_k = weight.k if prologue is None else prologue.x_length(weight.k)
    if prologue is not None:
        if prologue.kind not in PROLOGUES[1:] or not isinstance(x, DeviceArray) or kind != "f32" or \
                math.prod(x.shape[:-1]) != 1 or not prologue_fits(weight.fmt, weight.k):
            raise QuantMatmulError(f"a {prologue.kind!r} prologue takes one row of f32 activations on the device and a "
                                   f"weight whose decode GEMV runs it (K <= {K_MAX_PROLOGUE}); got {kind} "
                                   f"{tuple(x.shape)}, a {weight.fmt} weight of K={weight.k}")
        prologue.check(weight.k)
    if len(x.shape) < 1 or x.shape[-1] != x_k:
        raise QuantMatmulError(f"matmul of x {tuple(x.shape)} and a {weight.fmt} weight.T of shape "
                               f"({weight.k}, {weight.n}): x's last dimension must be "
                               f"{'K=' if x_k == weight.k else f'{x_k} (a {prologue.kind} prologue), K='}{weight.k}")
    if activation not in ACTIVATIONS:
        raise QuantMatmulError(f"activation is one of {', '.join(ACTIVATIONS)}, not {activation!r}")
    lead = tuple(x.shape[:-1])
    m, n, k = math.prod(lead), weight.n, weight.k
    if second is not None:
        if second.k != k or bias is not None:
            raise QuantMatmulError(f"a second weight takes the first's K={k} (not {second.k}) and no bias")
        n += second.n
    shape = (*lead, n)
    result_dtype = np.dtype(x.dtype) if out_dtype is None else np.dtype(out_dtype)
    out_kind = _float_kind(np.empty(0, result_dtype), "out_dtype")
    pinned = {a.device for a in (x, bias, out, weight.device_array) if isinstance(a, DeviceArray)}
    if device is not None:
        device = canonical_device(device)
    if len(pinned) > 1 or (pinned and device is not None and device not in pinned):
        raise QuantMatmulError(f"the operands are on devices {sorted(map(str, pinned))}, device={device!r}")
    on_device = any(isinstance(a, DeviceArray) for a in (x, bias, out, weight.device_array))
    device = pinned.pop() if pinned else canonical_device(device)
    if isinstance(x, np.ndarray):
        _check_f16_range(x, kind)
    if bias is not None and col0 is not None:
        raise QuantMatmulError("bias and col0 together are not supported")
    if bias is not None:
        if isinstance(bias, DeviceArray):
            if bias.shape != (n,) or bias.dtype != result_dtype:
                raise QuantMatmulError(f"bias is a DeviceArray {bias.dtype} {bias.shape}; it must be ({n},) "
                                       f"{result_dtype}")
        else:
            bias = np.asarray(bias)
            if bias.shape != (n,):
                raise QuantMatmulError(f"bias has shape {bias.shape}; it is a row of N={n} values")
            if not np.can_cast(bias.dtype, result_dtype, "same_kind"):
                raise QuantMatmulError(f"bias is {bias.dtype}; it is read as {result_dtype}, the result's dtype")
            bias = bias.astype(result_dtype)
    if col0 is not None:
        if not isinstance(out, DeviceArray) or col0 < 0 or tuple(out.shape[:-1]) != lead or \
                out.shape[-1] < col0 + n or np.dtype(out.dtype) != result_dtype:
            raise QuantMatmulError(f"col0={col0} writes columns of a DeviceArray out of shape {(*lead, 'N')} with N >= "
                                   f"{col0 + n} in {result_dtype}; got {type(out).__name__} "
                                   f"{tuple(getattr(out, 'shape', ()))}")
    elif out is not None:
        if tuple(out.shape) != shape or np.dtype(out.dtype) != result_dtype:
            raise QuantMatmulError(f"out is {np.dtype(out.dtype)} {tuple(out.shape)}; the result is {result_dtype} "
                                   f"{shape}")
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            raise QuantMatmulError("out is a read-only array")
    for name, arr in (("x", x), ("bias", bias), ("out", out)):
        if isinstance(arr, DeviceArray) and not arr.contiguous:
            raise QuantMatmulError(f"{name}: a strided DeviceArray view ({arr.shape}, strides {arr.strides}); the "
                                   "quantized kernels read and write C-ordered rows")
    rt = runtime(device)
    if m == 0 or n == 0:
        empty = np.zeros(shape, result_dtype)
        if isinstance(out, DeviceArray):
            return out
        if out is not None:
            return out
        return _device_copy(rt, empty) if on_device else empty
    blocks = weight.on(device)
    blocks_b = second.on(device) if second is not None else None
    scratch: list[DeviceArray] = []
    staged = None
    try:
        if isinstance(out, DeviceArray):
            d = out
            inputs = (x, bias, weight.device_array, None if second is None else second.device_array)
            if any(isinstance(a, DeviceArray) and out.overlaps(a) for a in inputs):
                if col0 is not None:
                    raise QuantMatmulError("out shares bytes with an input: a result written into columns (col0) "
                                           "must not overlap x, bias or the weight")
                staged, d = out, _alloc(rt, result_dtype, shape)  # computed into scratch, then copied into out
                scratch.append(d)
        else:
            d = _alloc(rt, result_dtype, shape)
            if not on_device:
                scratch.append(d)
        xb = _bits(x, kind)
        xarg = xb if isinstance(xb, DeviceArray) else xb.reshape(m, k)
        barg = d if bias is None else _bits(bias, out_kind)
        target = rt.executor.target
        tiles = gemm_tiles(target)
        kinds = (kind, out_kind)
        ldd, first = (n, 0) if col0 is None else (d.shape[-1], col0)
        pair = None
        if second is not None:
            pair = pair_plan(weight, second, m, target.subgroup_size, rt.is_reference)
        if pair is not None:
            assert second is not None and blocks_b is not None
            _gemv_units(rt, scratch, _flat(xarg), _words(blocks), None, _flat(d, STORAGE[out_kind]), weight, pair,
                        m, n, first, kinds, False, activation, ldd, prologue, (second, _words(blocks_b)))
        else:
            for w, b, c in ((weight, blocks, first), (second, blocks_b, first + weight.n)):
                if w is None:
                    continue
                # a measured entry sends a decode through the GEMM (f32 and bf16 rows scaled into f16's range)
                by_gemm = (w.fmt, m, w.n, w.k) in GEMM_TUNING
                if (m <= DECODE_ROWS and not by_gemm) or tiles is None or prologue is not None:
                    _gemv(rt, scratch, xarg, b, barg, d, w, m, kinds, bias is not None, activation, ldd, c, prologue)
                else:
                    _gemm(rt, scratch, xarg, b, barg, d, w, m, kinds, bias is not None, activation, tiles, ldd, c)
                if prologue is not None:
                    prologue = replace(prologue, sum_out=None)  # the running sum written once
        if on_device:
            if staged is not None:
                staged.copy_from(d)
                return staged
            return d
        value = _from_bits(d.numpy() if out_kind != "bf16" else d.view(np.uint16).numpy(), out_kind).reshape(shape)
        if out is not None:
            np.copyto(out, value)
            return out
        return value
    finally:
        for made in scratch:
            made.release()


def _from_bits(raw: np.ndarray, kind: str) -> np.ndarray:
    return raw.view(ml_dtypes.bfloat16) if kind == "bf16" else raw


def _alloc(rt, dtype, shape) -> DeviceArray:
    nbytes = max(16, -(-math.prod(shape) * np.dtype(dtype).itemsize // 16) * 16)
    made = DeviceArray(rt.key, rt.executor, rt.alloc(nbytes), dtype, shape)
    recorded = getattr(_recording, "made", None)
    if recorded is not None:  # matmul's checked call being recorded (_Recorded): scratch it may make again
        recorded.append(made.storage)
    return made


def _device_copy(rt, array: np.ndarray) -> DeviceArray:
    made = _alloc(rt, array.dtype, array.shape)
    if array.size:
        made.write(array)
    return made


def _launch(rt, kernel, constexprs: dict, grid: tuple, arguments: dict, aliases: dict | None = None) -> None:
    """One dispatch, queued: the pipeline cached per executor, the arguments bound by launch.prepare."""
    executor = rt.executor
    spec = kernel.compile(executor.target, **constexprs)
    made = _pipelines.setdefault(executor, {})
    if id(spec) not in made:
        made[id(spec)] = (spec, executor.kernel(spec.words))
    grid3: tuple[int, int, int] = tuple(int(g) for g in (*grid, *(1,) * (3 - len(grid))))  # type: ignore[assignment]
    launches = getattr(_recording, "launches", None)
    if launches is not None:  # matmul's checked call of DeviceArrays, kept for its signature (_Recorded)
        launches.append((made[id(spec)][1], spec, grid3, dict(arguments), dict(aliases) if aliases else None))
    dispatch_kept(_kept.setdefault(executor, {}), executor, made[id(spec)][1], spec, grid3, arguments, aliases)


_kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {signature: PreparedLaunch}


def _words(arr: DeviceArray) -> DeviceArray:
    """A DeviceArray of block bytes as the u32 words the kernels bind."""
    raw = arr.view(np.uint8) if arr.format is not None else arr
    if raw.nbytes % 4:  # the blocks end inside a word: bind it whole where the buffer holds it (upload pads to 16)
        words = -(-raw.nbytes // 4)
        offset = raw.layout.offset
        held = getattr(raw.storage.buffer, "nbytes", raw.storage.nbytes)
        if not raw.contiguous or offset % 4 or offset + 4 * words > held:
            raise QuantMatmulError(f"a quantized DeviceArray of {raw.nbytes} bytes: the kernels bind whole 32-bit "
                                   "words (pad its buffer to a multiple of 4 bytes)")
        return DeviceArray(None, None, None, np.uint32, (words,), storage=raw.storage, layout=Layout(offset, (4,)),
                           base=raw if raw.base is None else raw.base)
    return raw.reshape(-1).view(np.uint32)


def windows(weight: Weight, blocks: DeviceArray) -> list[tuple[int, int, DeviceArray]]:
    """(first row, end row, the u32 words of those rows' blocks): the whole weight, or windows of rows each within
    BIND_LIMIT bytes (a larger weight than one binding may hold)."""
    words = _words(blocks)
    row_bytes = weight.row_bytes
    if weight.n * row_bytes <= BIND_LIMIT:
        return [(0, weight.n, words)]
    rows = max(WINDOW_ALIGN, BIND_LIMIT // row_bytes // WINDOW_ALIGN * WINDOW_ALIGN)
    if rows * row_bytes > BIND_LIMIT:
        raise QuantMatmulError(f"a {weight.fmt} row of K={weight.k} is {row_bytes} bytes: {WINDOW_ALIGN} rows exceed "
                               f"one binding's {BIND_LIMIT} bytes")
    found = []
    for n0 in range(0, weight.n, rows):
        n1 = min(weight.n, n0 + rows)
        end = words.shape[0] if n1 == weight.n else n1 * row_bytes // 4
        found.append((n0, n1, words[n0 * row_bytes // 4: end]))
    return found


def _flat(arr, dtype=None):
    """A DeviceArray (or NumPy array) seen as a flat contiguous run of its storage elements."""
    if isinstance(arr, DeviceArray):
        v = arr.view(dtype) if dtype is not None else arr
        return v.reshape(-1) if v.ndim != 1 else v
    return np.ascontiguousarray(arr).reshape(-1)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class GemvPlan:
    """The decode GEMV's launch: MR rows of x and ROWS rows of W per subgroup, SPLIT K ranges of k_split."""

    mr: int
    rows: int
    split: int
    k_split: int
    grid: tuple


def gemv_plan(m: int, n: int, k: int, sg: int, reference: bool) -> GemvPlan:
    mr = min(m, 8)
    rows = 2 if mr <= 4 else 1
    groups = -(-n // (GEMV_SUBGROUPS * rows)) * -(-m // mr)
    step = sg * 8
    below, target = (REF_SPLIT_BELOW, REF_SPLIT_TARGET) if reference else (SPLIT_BELOW, SPLIT_TARGET)
    split = 1
    if groups < below:
        split = max(1, min(k // step, ceil_div(target, groups), 64))
    k_split = ceil_div(ceil_div(k, split), step) * step
    split = ceil_div(k, k_split)
    return GemvPlan(mr, rows, split, k_split, (-(-n // (GEMV_SUBGROUPS * rows)), -(-m // mr), split))


@dataclass(frozen=True)
class LanesPlan:
    """The lane-interleaved GEMV's launch (kernels/quant/source.py gemv_lanes_kernel): MR rows of x a workgroup row,
    ROWS rows of W a subgroup, NSG subgroups, U groups of 8 weights a lane a step, SPLIT ranges of split_groups."""

    mr: int
    rows: int
    nsg: int
    unroll: int
    split: int
    split_groups: int
    grid: tuple


LANES_ROWS = 2  # rows of W a subgroup
LANES_UNROLL = 4  # groups a lane a step


def lanes_plan(fmt: str, m: int, n: int, k: int, tuned: dict) -> LanesPlan | None:
    """The lane GEMV's plan where a tuning entry asks for it ("lanes": True; "rows", "nsg", "unroll", "split": K
    split into that many ranges, default 1), else None: a format other than q8_0, q4_0, q5_0, or M over 8."""
    if not tuned.get("lanes") or fmt not in LANE_FORMATS or m > 8:
        return None
    rows, nsg = tuned.get("rows", LANES_ROWS), tuned.get("nsg", UNITS_SUBGROUPS)
    groups = k // 8
    split_groups = ceil_div(groups, max(1, tuned.get("split", 1)))
    split = ceil_div(groups, split_groups)
    return LanesPlan(m, rows, nsg, tuned.get("unroll", LANES_UNROLL), split, split_groups,
                     (ceil_div(n, nsg * rows), 1, split))


@dataclass(frozen=True)
class UnitsPlan:
    """The unit GEMV's launch (kernels/quant/source.py: gemv_units_kernel): loads of LW words, UB blocks a unit
    (SPAN: loaded whole, else block by block), ROWS rows of W a lane, LPR lanes a row group, NSG subgroups a
    workgroup, MR rows of x, SPLIT K ranges of split_units units; PIPE: each lane's next unit loaded while this one
    is multiplied (SPAN only); XSH: x converted to f32 into shared memory once per workgroup (M = 1: units_x_chunk);
    DOT: the integer path (M = 1: x's levels made by one launch first, the blocks met in packed 8-bit dot products,
    kernels/quant/dot.py), where the device has the integer dot product; it takes the place of XSH. COALESCE
    (`coalesce`, one weight, not with DOT): W's loads by consecutive lanes in consecutive chunks through a shared
    stage, each unit then decoded whole (kernels/quant/source.py: coalesced_unit_loop). `ablate`: measurement only
    (wrong results; the kernel's GEMV_ABLATIONS), from a UNITS_TUNING entry."""

    lw: int
    ub: int
    span: bool
    mr: int
    rows: int
    lpr: int
    nsg: int
    split: int
    split_units: int
    row_units: int
    grid: tuple
    pipe: bool = False
    xsh: bool = False
    dot: bool = False
    coalesce: bool = False
    ablate: str = ""


UNITS_LOAD_WORDS = (4, 2, 1)  # the widest load whose unit of whole blocks divides a row
UNITS_MAX_LOAD_WORDS = {"q6_k": 1}  # q6_k: 4-byte loads (units of 2 blocks) were the fastest on the H200
UNITS_SPAN_BYTES = 288  # a unit of at most this many bytes (all ROWS rows) is loaded at once; else block by block
UNITS_SUBGROUPS = 4
UNITS_PIPE = False  # the next unit's loads issued before this one is multiplied (where a unit is loaded whole)
UNITS_X_SHARED = False  # M = 1: x converted to f32 once per workgroup into shared memory (XSH; tuned plans say)
UNITS_X_SHARED_BYTES = 32768  # XSH's chunk: at most this many bytes (units_x_chunk)
UNITS_DOT = False  # M = 1: the integer path (DOT) where tuned plans do not say; slower on an H100 (docs/quant.md)
UNITS_COALESCE = False  # W's loads coalesced through shared memory (COALESCE) where tuned plans do not say
UNITS_ROWS = 2  # rows of W per lane: each activation read once for them
UNITS_LANES_TARGET = 1 << 17  # fewer lanes than this (N / ROWS x LPR x row tiles): split K (the H200: 132 x 2048)
REF_UNITS_LANES_TARGET = 4  # the reference executor: kept small
# (fmt, m, n, k) -> dict(lw=, rows=, lpr=, nsg=, split=, xsh=, pipe=; lanes=, unroll=: the lane GEMV): the fastest
# plans of benchmarks/quant_sweep.py on the H200 (2026-12-04; docs/perf.md "Quantized weights"), where marked on an H100
# (no H200 came since); other shapes take units_plan's rule
UNITS_TUNING: dict = {
    ("q4_k", 1, 4096, 14336): {"rows": 4, "lpr": 32},
    # XSH (x staged in shared memory): the fastest on an H100 (2026-12-05 15:27, quant_sweep.py --pipe; docs/perf.md)
    # for q6_k both ways (46.7 and 45.9 us against 55.4 and 58.5) and q4_k at 4096 -> 14336 (29.0 against 40.4)
    ("q6_k", 1, 4096, 14336): {"rows": 1, "lw": 1, "lpr": 8, "split": 1, "xsh": True},
    ("q4_k", 1, 14336, 4096): {"rows": 2, "lpr": 8, "nsg": 4, "split": 1, "xsh": True},
    ("q6_k", 1, 14336, 4096): {"rows": 1, "lw": 1, "lpr": 8, "split": 1, "xsh": True},
    # 4-byte loads (units of 2 blocks), the next unit's loads issued before this one is multiplied (PIPE), K not
    # split: an H100, 2026-12-06 11:05 and 11:11 UTC (quant_sweep.py --variants; docs/perf.md), us against the plans
    # before: q4_0 23.6 (4 rows, in both sweeps that tried it; 2 rows 24.5) / 27.4, q5_0 29.5 / 35.1, q8_0 34.7 / 38.5
    # at 14336 -> 4096; q4_0 23.9 (4 rows) / 26.5, q5_0 28.8 / 34.8 at 4096 -> 14336
    ("q4_0", 1, 4096, 14336): {"lw": 1, "rows": 4, "lpr": 32, "pipe": True, "split": 1},
    ("q5_0", 1, 4096, 14336): {"lw": 1, "rows": 2, "lpr": 32, "pipe": True, "split": 1},
    ("q8_0", 1, 4096, 14336): {"lw": 1, "rows": 2, "lpr": 32, "pipe": True, "split": 1},
    ("q4_0", 1, 14336, 4096): {"lw": 1, "rows": 4, "lpr": 32, "pipe": True, "split": 1},
    # q5_0 at 4096 -> 14336: 4 rows, 26.4 us against 28.4 with 2 (an H100, 2026-12-06 18:24 UTC, quant_sweep.py
    # --variants on the mantissa form; docs/perf.md)
    ("q5_0", 1, 14336, 4096): {"lw": 1, "rows": 4, "lpr": 32, "pipe": True, "split": 1},
    # the lane GEMV (gemv_lanes_kernel): 31.2 us against 35.5 (the XSH plan) and 35.0 (PIPE), the same H100 at 11:11
    ("q8_0", 1, 14336, 4096): {"lanes": True},
    # Gemma 3 270M's output projection (640 -> 262144, the decode step's largest GEMV): 2 rows, 4 lanes a row, PIPE,
    # 95.6 us against the rule's 155.1 (f32 x; an H100, 2026-12-07 08:38 UTC, quant_sweep.py --only gemma_decode,
    # 114 plans; docs/perf.md)
    ("q8_0", 1, 262144, 640): {"lw": 1, "rows": 2, "lpr": 4, "nsg": 4, "pipe": True},
}
UNITS_FORMAT_RULES = {"q6_k": {"rows": 1, "lpr": 8}}  # q6_k's many scales: one row a lane, 8 lanes a row


def units_plan(fmt: str, m: int, n: int, k: int, sg: int, reference: bool, tuned: dict | None = None,
               shared_memory: int | None = None) -> UnitsPlan | None:
    """The unit GEMV's plan, or None where no unit of whole blocks divides a row (an odd count of 32-blocks).
    COALESCE only where its stage leaves XSH's smallest chunk and a prologue's row room in `shared_memory` (the
    target's bytes a workgroup; None: not checked)."""
    block, nbytes = KERNEL_FORMATS[fmt]
    tuned = {**UNITS_FORMAT_RULES.get(fmt, {}), **(tuned or {})}
    blocks_per_row = k // block
    lw = None
    for width in UNITS_LOAD_WORDS:
        if width > UNITS_MAX_LOAD_WORDS.get(fmt, 4) and "lw" not in tuned:
            continue
        if tuned.get("lw", width) == width and blocks_per_row % unit_blocks(fmt, 4 * width) == 0:
            lw = width
            break
    if lw is None:
        return None
    ub = unit_blocks(fmt, 4 * lw)
    row_units = blocks_per_row // ub
    mr = min(m, 8)
    rows = tuned.get("rows", UNITS_ROWS if mr <= 4 else 1)
    lpr = min(tuned.get("lpr") or 1 << (row_units.bit_length() - 1), sg)
    nsg = tuned.get("nsg", UNITS_SUBGROUPS)
    rows_per_group = nsg * sg // lpr * rows
    tiles = ceil_div(m, mr)
    groups = ceil_div(n, rows_per_group)
    split = tuned.get("split", 0)
    if not split:
        lanes = ceil_div(n, rows) * lpr * tiles
        target = REF_UNITS_LANES_TARGET if reference else UNITS_LANES_TARGET
        split = max(1, min(ceil_div(target, lanes), row_units // lpr, 64)) if lanes < target else 1
    split_units = ceil_div(row_units, split)
    split = ceil_div(row_units, split_units)
    span = ub * nbytes * rows <= UNITS_SPAN_BYTES
    dot = m == 1 and fmt in DOT_FORMATS and bool(tuned.get("dot", UNITS_DOT))
    coalesce = not dot and bool(tuned.get("coalesce", UNITS_COALESCE))
    if coalesce and shared_memory is not None:
        spare = 4 * max(K_MAX_PROLOGUE, ub * block) + 1024  # a prologue's row or XSH's one unit, and the sums
        coalesce = stage_bytes(fmt, ub, lw, rows, nsg * sg) + spare <= shared_memory
    return UnitsPlan(lw, ub, span, mr, rows, lpr, nsg, split, split_units, row_units, (groups, tiles, split),
                     span and not coalesce and tuned.get("pipe", UNITS_PIPE),
                     m == 1 and not dot and tuned.get("xsh", UNITS_X_SHARED), dot, coalesce, tuned.get("ablate", ""))


def units_x_chunk(plan: UnitsPlan, block: int, shared_memory: int, stage: int = 0) -> int:
    """XSH's chunk: the activations (whole units; a multiple of LPR units where that fits) staged in shared memory
    as f32 at a time, in at most UNITS_X_SHARED_BYTES and the target's shared memory less 1 KiB and `stage` (the
    bytes of COALESCE's stage)."""
    unit = plan.ub * block
    shared_memory -= stage
    units = max(1, min(UNITS_X_SHARED_BYTES, shared_memory - 1024) * 64 // 65 // (4 * unit))  # 1 vec4 in 65 unused
    if units >= plan.lpr:
        units -= units % plan.lpr
    return min(units, plan.split_units) * unit


def pair_plan(a: Weight, b: Weight, m: int, sg: int, reference: bool) -> UnitsPlan | None:
    """The unit GEMV's plan for a's rows and then b's in one launch (each in its own format), or None where one
    launch cannot take both: a different K or block size, unit geometries (load width, blocks per unit, units per
    row) that differ, a weight over one binding, M beyond the GEMV's, a's rows not a multiple of the plan's ROWS."""
    if a.k != b.k or m > DECODE_ROWS or KERNEL_FORMATS[a.fmt][0] != KERNEL_FORMATS[b.fmt][0] or \
            any(w.n * w.row_bytes > BIND_LIMIT for w in (a, b)):
        return None
    n = a.n + b.n
    tuned = {**UNITS_TUNING.get((a.fmt, m, n, a.k), {}), "coalesce": False}  # COALESCE: one weight a launch
    plan = units_plan(a.fmt, m, n, a.k, sg, reference, tuned)
    other = units_plan(b.fmt, m, n, b.k, sg, reference, {"lw": plan.lw} if plan is not None else None)
    if plan is None or other is None or (plan.lw, plan.ub, plan.row_units) != (other.lw, other.ub, other.row_units) \
            or a.n % plan.rows:
        return None
    return plan


def _gemv(rt, scratch, x, blocks, bias, d, weight: Weight, m: int, kinds: tuple[str, str], has_bias: bool, act: str,
          ldd: int, col0: int, prologue: Prologue | None) -> None:
    target = rt.executor.target
    sg = target.subgroup_size
    k = weight.k
    kind, out_kind = kinds
    dflat = _flat(d, STORAGE[out_kind])
    xflat = _flat(x)
    bflat = None if not has_bias else _flat(bias)
    found = windows(weight, blocks)
    if len(found) == 2 and not has_bias:  # a weight over one binding in two windows: one launch binding both
        (a0, a1, words_a), (b0, b1, words_b) = found
        first, rest = Weight(weight.fmt, a1 - a0, k), Weight(weight.fmt, b1 - b0, k)
        pair = pair_plan(first, rest, m, sg, rt.is_reference)
        if pair is not None:
            _gemv_units(rt, scratch, xflat, words_a, None, dflat, first, pair, m, weight.n, col0, kinds, False, act,
                        ldd, prologue, (rest, words_b))
            return
    for n0, n1, words in found:
        n = n1 - n0
        lanes = lanes_plan(weight.fmt, m, n, k, UNITS_TUNING.get((weight.fmt, m, n, k), {})) \
            if prologue is None else None
        if lanes is not None:
            _gemv_lanes(rt, scratch, xflat, words, bflat, dflat, Weight(weight.fmt, n, k), lanes, m, col0 + n0,
                        kinds, has_bias, act, ldd)
            continue
        units = units_plan(weight.fmt, m, n, k, sg, rt.is_reference, UNITS_TUNING.get((weight.fmt, m, n, k)),
                           target.shared_memory)
        if units is not None:
            _gemv_units(rt, scratch, xflat, words, bflat, dflat, weight, units, m, n, col0 + n0, kinds, has_bias, act,
                        ldd, prologue)
            continue
        assert prologue is None  # prologue_fits: only where the unit GEMV runs
        plan = gemv_plan(m, n, k, sg, rt.is_reference)
        partial = plan.split > 1
        part = None
        if partial:
            part = _alloc(rt, np.float32, (plan.split * m * n,))
            scratch.append(part)
        args = {"x": xflat, "w": words, "d": dflat, "M": m, "N": n, "K": k, "row_bytes": weight.row_bytes,
                "k_split": plan.k_split, "ldd": ldd, "col_base": col0 + n0}
        aliases = {"x4": "x"}
        if part is not None:
            args["part"] = part
        else:
            aliases["part"] = "d"
        if has_bias:
            args["bias"] = bflat
        else:
            aliases["bias"] = "d"
        _launch(rt, gemv_kernel(kind, out_kind), dict(FMT=weight.fmt, MR=plan.mr, ROWS=plan.rows,
                                                      NSG=GEMV_SUBGROUPS, SG=sg, PARTIAL=partial,
                                                      BIAS=has_bias and not partial,
                                                      ACT=act if not partial else "none"), plan.grid, args, aliases)
        if partial:
            _reduce_split(rt, part, dflat, bflat, m, n, plan.split, ldd, col0 + n0, out_kind, has_bias, act)


def _gemv_lanes(rt, scratch, xflat, words, bflat, dflat, weight: Weight, plan: LanesPlan, m: int, col_base: int,
                kinds: tuple[str, str], has_bias: bool, act: str, ldd: int) -> None:
    """One window of W (weight: its rows) through the lane GEMV (and the reduction where K is split)."""
    kind, out_kind = kinds
    partial = plan.split > 1
    args = {"x": xflat, "w": words, "d": dflat, "M": m, "N": weight.n, "K": weight.k, "row_bytes": weight.row_bytes,
            "split_groups": plan.split_groups, "w_last": ceil_div(weight.n * weight.row_bytes, 4) - 1, "ldd": ldd,
            "col_base": col_base}
    aliases = {"x2": "x", "x4": "x"}
    part = _partial_and_bias(rt, scratch, args, aliases, plan.split, m, weight.n, has_bias, bflat)
    _launch(rt, gemv_lanes_kernel(kind, out_kind),
            dict(FMT=weight.fmt, MR=plan.mr, ROWS=plan.rows, NSG=plan.nsg, SG=rt.executor.target.subgroup_size,
                 U=plan.unroll, PARTIAL=partial, BIAS=has_bias and not partial, ACT=act if not partial else "none"),
            plan.grid, args, aliases)
    if partial:
        _reduce_split(rt, part, dflat, bflat, m, weight.n, plan.split, ldd, col_base, out_kind, has_bias, act)


def _gemv_units(rt, scratch, xflat, words, bflat, dflat, weight: Weight, plan: UnitsPlan, m: int, n: int,
                col_base: int, kinds: tuple[str, str], has_bias: bool, act: str, ldd: int,
                prologue: Prologue | None, second: tuple[Weight, DeviceArray] | None = None) -> None:
    """One window of W through the unit GEMV (and the reduction where K is split); `second`: (a weight, its words)
    whose rows follow W's in the same launch (pair_plan)."""
    kind, out_kind = kinds
    block, nbytes = KERNEL_FORMATS[weight.fmt]
    partial = plan.split > 1
    args = {"x": xflat, "w": words, "d": dflat, "M": m, "N": n, "K": weight.k, "row_units": plan.row_units,
            "split_units": plan.split_units, "ldd": ldd, "col_base": col_base, "eps": 0.0, "n_first": n}
    aliases = {"x4": "x", "w2": "w", "w4": "w"}
    constexprs: dict = {}
    if second is None:
        aliases.update({"wb": "w", "wb2": "w", "wb4": "w"})
    else:
        weight_b, words_b = second
        nbytes_b = KERNEL_FORMATS[weight_b.fmt][1]
        args.update(wb=words_b, n_first=weight.n)
        aliases.update({"wb2": "wb", "wb4": "wb"})
        constexprs.update(FMT2=weight_b.fmt, BYTES2=nbytes_b, SPAN2=plan.ub * nbytes_b * plan.rows <= UNITS_SPAN_BYTES)
    if prologue is None:
        aliases.update({"pw": "x", "pd": "x", "pdw": "x", "ps": "x"})
    else:
        buffers, unread, pro_constexprs = prologue.arguments()
        args.update(buffers, eps=float(prologue.eps))
        aliases.update(unread)
        constexprs.update(pro_constexprs)
        threads = plan.nsg * rt.executor.target.subgroup_size
        held = ceil_div(weight.k, threads)
        if prologue.kind in NORM_PROLOGUES and held <= PROLOGUE_HELD:
            constexprs["HELD"] = held
        elif prologue.kind == "combine":  # each invocation's chunks of four values
            constexprs["HELD"] = ceil_div(weight.k // 4, threads)
        if not PROLOGUE_PRELOAD:
            constexprs["PRELOAD"] = False
    if plan.pipe:
        constexprs["PIPE"] = True
    stage = 0
    if plan.coalesce:
        assert second is None
        constexprs["COALESCE"] = True
        stage = stage_bytes(weight.fmt, plan.ub, plan.lw, plan.rows, plan.nsg * rt.executor.target.subgroup_size)
    if plan.ablate:
        constexprs["ABLATE"] = plan.ablate
    target = rt.executor.target
    if plan.dot and prologue is None and second is None and (target.is_reference or
                                                             "integer_dot_product" in target.support):
        levels = _alloc(rt, np.uint32, (levels_words(weight.k),))
        scratch.append(levels)
        blocks32 = weight.k // 32
        _launch(rt, levels_kernel(kind), {}, (ceil_div(blocks32, LEVELS_THREADS),),
                {"x": xflat, "lv": levels, "blocks": blocks32}, {})
        args["x4"] = levels
        del aliases["x4"]
        constexprs["DOT"] = True
    elif plan.xsh and prologue is None and second is None:
        constexprs["XCH"] = units_x_chunk(plan, block, target.shared_memory, stage)
    part = _partial_and_bias(rt, scratch, args, aliases, plan.split, m, n, has_bias, bflat)
    _launch(rt, gemv_units_kernel(kind, out_kind),
            dict(FMT=weight.fmt, BLOCK=block, BYTES=nbytes, UB=plan.ub, LW=plan.lw, SPAN=plan.span, MR=plan.mr,
                 ROWS=plan.rows, LPR=plan.lpr, NSG=plan.nsg, SG=rt.executor.target.subgroup_size, PARTIAL=partial,
                 BIAS=has_bias and not partial, ACT=act if not partial else "none", **constexprs), plan.grid, args,
            aliases)
    if partial:
        _reduce_split(rt, part, dflat, bflat, m, n, plan.split, ldd, col_base, out_kind, has_bias, act)


def _partial_and_bias(rt, scratch: list, args: dict, aliases: dict, split: int, m: int, n: int, has_bias: bool,
                      bflat):
    """A kernel's `part` and `bias` arguments: with K split (split > 1) the partial sums' scratch (kept in `scratch`,
    returned) and the bias left to the reduction; else both aliased to `d` where unused. None without a split."""
    part = None
    if split > 1:
        part = _alloc(rt, np.float32, (split * m * n,))
        scratch.append(part)
        args["part"] = part
    else:
        aliases["part"] = "d"
    if has_bias and split <= 1:
        args["bias"] = bflat
    else:
        aliases["bias"] = "d"
    return part


def _reduce_split(rt, part, dflat, bflat, m: int, n: int, splits: int, ldd: int, n0: int, kind: str, has_bias: bool,
                  act: str) -> None:
    """The K split's partial sums added into D's window (with the bias and activation)."""
    args = {"part": part, "d": dflat, "M": m, "N": n, "splits": splits, "ldd": ldd, "col_base": n0}
    aliases = {}
    if has_bias:
        args["bias"] = bflat
    else:
        aliases["bias"] = "d"
    _launch(rt, reduce_kernel(kind), dict(BIAS=has_bias, ACT=act), (ceil_div(m * n, REDUCE_THREADS),), args, aliases)


# The prefill GEMM's blocks: WM x WN subgroups, SM x SN tiles each, KT tiles per K step, shared rows PAD chunks
# longer, PREFETCH (the next step's loads in registers across the multiplications), STAGES (shared buffers: 2,
# the default, decodes the next step into the other while this one is multiplied), SPLIT K ranges (grid z; 0: the
# rule's choice). GEMM_BLOCKS are the tile-16 devices' (the H200's) blocks, largest first: a problem takes the first
# whose grid has at least GEMM_WORKGROUPS workgroups, else the last, split over K where that one's grid is short of
# GEMM_WORKGROUPS too (into about GEMM_SPLIT_TARGET workgroups, at most GEMM_SPLIT_MAX ranges).
# Measured on the H200 (2026-12-05 03:11 UTC, benchmarks/quant_sweep.py; docs/quant.md): a K step costs about the same
# time whatever the block (4.6-5.1 us with one workgroup per multiprocessor, 64 x 64 or 128 x 128), so a grid that
# fills the GPU takes the large block, and a short one the small block split over K: 512 x 640 -> 256 (q8_0) 101.7 ->
# 26.9 us, 512 x 1024 -> 640 (q4_k) 169 -> 113.6, 512 x 2048 -> 640 (q6_k) 319 -> 131, 512 x 640 -> 1280/1536
# (q5_0) 111 -> 94.7 (those from 128 x 128 blocks of 20-40 workgroups); but 64 x 64 where 128 x 128 already gave
# 128 workgroups was slower: 512 x 640 -> 4096 112.6 -> 179.5 us, 512 x 14336 -> 4096 1451-1700 -> 2648-4085 us.
# Then on an H100 (2026-12-05 21:42 UTC, quant_sweep.py --only prefill, after the staging's decoding moved to 2 x f16
# arithmetic; docs/perf.md): 128 x 128 as 8 subgroups of 4 x 2 tiles with prefetch, 512 x 14336 -> 4096: q4_0 718 ->
# 505.9 us (118.9 TFLOP/s), q4_k 697 -> 594.8, q6_k 1082 -> 568.0 (the 4-subgroup block before: 1345, 2377, 1331).
# Then (an H100, 2026-12-07 16:26 UTC, docs/gpu-2026-12-07-1600/runC.sh) the same block with K steps of 64 (kt 4)
# in one stage (45 KiB of shared memory): 512 x 14336 -> 4096 q4_0 512.1 -> 430.6 us, q5_0 552.2 -> 471.8, q8_0
# 624.0 -> 523.1 (its tuned entry), q4_k 595.0 -> 467.9, q6_k 566.4 -> 462.8; 512 x 4096 -> 14336 q8_0 724.5 -> 623.2
# (its tuned entry); PREFETCH 2 in it 3-11% slower, without the rows' padding 2.2-2.7x slower.
GEMM_BLOCKS = (
    {"wm": 2, "wn": 4, "sm": 4, "sn": 2, "kt": 4, "pad": 1, "prefetch": True, "stages": 1},  # 128 x 128, 8 subgroups
    {"wm": 2, "wn": 2, "sm": 2, "sn": 2, "kt": 2, "pad": 1, "prefetch": True},  # 64 x 64
)
GEMM_WORKGROUPS = 128  # the H200 has 132 multiprocessors
GEMM_SPLIT_TARGET = 264
GEMM_SPLIT_MAX = 4
# (M, N, K), or (format, M, N, K) for one format, -> a block (the keys above, "split" and "stages" too): measured,
# over the rule. Two of the sweep's Gemma 3
# 270M prefill shapes (512 tokens, f32 activations), fastest on the H100 sweep above: q, k and v in one weight
# (640 -> 1536; the Q4_K_M file's model launches q+k as 640 -> 1280 and v apart, which take the rule) and the down
# projection (2048 -> 640)
GEMM_TUNING: dict = {
    (512, 1536, 640): {"wm": 2, "wn": 4, "sm": 4, "sn": 2, "kt": 2, "pad": 1, "prefetch": True},  # 52.4 -> 43.9 us
    (512, 640, 2048): {"wm": 2, "wn": 2, "sm": 4, "sn": 4, "kt": 2, "pad": 1, "prefetch": True},  # 99.1 -> 64.5 us
    # (q8_0's two entries at the benchmark's 512-row shapes, 2026-12-06, went on 2026-12-07: the rule's first block
    # is faster there now, above)
}
SMALL_GEMM_SHAPE = {"wm": 2, "wn": 2, "sm": 1, "sn": 1, "pad": 0}  # smaller tiles (lavapipe), the reference executor


def gemm_tiles(target) -> tuple[int, int, int] | None:
    """The f16 x f16 + f32 tile the prefill GEMM uses on the target (its largest; the reference executor: 16x16x16),
    None where it has none."""
    if target.is_reference:
        return (16, 16, 16)
    shapes = [(s.m, s.n, s.k) for s in target.shapes(types.F16, types.F32)]
    return max(shapes, key=lambda t: (t[0] * t[1], t[2])) if shapes else None


@dataclass(frozen=True)
class GemmPlan:
    """The prefill GEMM's launch: its block (WM x WN subgroups of SM x SN tiles of TM x TN, KT tiles of TK a K step),
    PAD, PREFETCH (0, 1: the next K step's loads in registers, 2: two steps ahead), and SPLIT K ranges of k_split
    each."""

    wm: int
    wn: int
    sm: int
    sn: int
    kt: int
    pad: int
    prefetch: int
    stages: int
    split: int
    k_split: int
    bm: int
    bn: int
    ablate: str = ""  # measurement only (wrong results): the K loop's ABLATE, from a GEMM_TUNING entry


def gemm_plan(m: int, n: int, k: int, tiles: tuple[int, int, int], small: bool,
              shared_memory: int | None = None, fmt: str | None = None) -> GemmPlan:
    """The prefill GEMM's plan for (M, N, K) (`small`: SMALL_GEMM_SHAPE, for small tiles and the reference
    executor): GEMM_TUNING's entry for (fmt, M, N, K), else for (M, N, K), else the rule above GEMM_BLOCKS; with
    `shared_memory` (the device's bytes a workgroup), only blocks that fit it (the smallest of GEMM_BLOCKS where none
    does)."""
    tm, tn, tk = tiles

    def fits(block: dict) -> bool:
        kt = max(block.get("kt", 1), 32 // tk)
        return shared_memory is None or gemm_shared_bytes(
            tm, tn, tk, block.get("wm", 2), block.get("wn", 2), block.get("sm", 1), block.get("sn", 1), kt,
            block.get("pad", 0), block.get("stages", 2)) <= shared_memory

    shape: dict = SMALL_GEMM_SHAPE if small else GEMM_TUNING.get((fmt, m, n, k)) or GEMM_TUNING.get((m, n, k), {})
    if not small and not (shape and fits(shape)):
        for shape in GEMM_BLOCKS:
            if fits(shape) and ceil_div(m, shape["wm"] * shape["sm"] * tm) * \
                    ceil_div(n, shape["wn"] * shape["sn"] * tn) >= GEMM_WORKGROUPS:
                break
    wm, wn, sm, sn = shape.get("wm", 2), shape.get("wn", 2), shape.get("sm", 1), shape.get("sn", 1)
    kt = max(shape.get("kt", 1), 32 // tk)  # a K step holds whole 32-blocks
    bm, bn, bk = wm * sm * tm, wn * sn * tn, kt * tk
    steps = ceil_div(k, bk)
    split = shape.get("split", 0)
    if not split:
        groups = ceil_div(m, bm) * ceil_div(n, bn)
        split = 1 if small or groups >= GEMM_WORKGROUPS else min(GEMM_SPLIT_MAX, ceil_div(GEMM_SPLIT_TARGET, groups))
    split = max(1, min(split, steps))
    k_split = ceil_div(steps, split) * bk
    return GemmPlan(wm, wn, sm, sn, kt, shape.get("pad", 0), int(shape.get("prefetch", 0)),
                    shape.get("stages", 2), ceil_div(k, k_split), k_split, bm, bn, shape.get("ablate", ""))


def _gemm(rt, scratch, x, blocks, bias, d, weight: Weight, m: int, kinds: tuple[str, str], has_bias: bool, act: str,
          tiles, ldd: int, col0: int) -> None:
    target = rt.executor.target
    kind, out_kind = kinds
    tm, tn, tk = tiles
    k = weight.k
    scaled = kind != "f16"
    if scaled:  # f32 and bf16 rows as f16 times a power of two each (undone in the GEMM's epilogue), once
        h = _alloc(rt, np.float16, (m * k,))
        xe = _alloc(rt, np.int32, (m,))
        scratch += [h, xe]
        _launch(rt, scaled_f16_kernel(kind), dict(SG=target.subgroup_size), (min(m, MAX_GROUPS),),
                {"x": _flat(x), "h": h, "xe": xe, "M": m, "K": k}, {"x4": "x", "h4": "h"})
        x = h
    for n0, n1, words in windows(weight, blocks):
        n = n1 - n0
        plan = gemm_plan(m, n, k, tiles, tm < 16 or target.is_reference, target.shared_memory, weight.fmt)
        partial = plan.split > 1
        dflat = _flat(d, STORAGE[out_kind])
        bflat = _flat(bias) if has_bias else None
        args = {"x": _flat(x), "w": words, "d": dflat, "M": m, "N": n, "K": k, "row_bytes": weight.row_bytes,
                "ldd": ldd, "col_base": col0 + n0, "k_split": plan.k_split}
        aliases = {"x4": "x", "w4": "w"}
        if scaled:
            args["xe"] = xe
        else:
            aliases["xe"] = "x"
        part = _partial_and_bias(rt, scratch, args, aliases, plan.split, m, n, has_bias, bflat)
        _launch(rt, gemm_kernel(out_kind),
                dict(FMT=weight.fmt, TM=tm, TN=tn, TK=tk, WM=plan.wm, WN=plan.wn, SM=plan.sm, SN=plan.sn, KT=plan.kt,
                     SG=target.subgroup_size, BIAS=has_bias and not partial, ACT=act if not partial else "none",
                     PAD=plan.pad, PREFETCH=plan.prefetch, STAGES=plan.stages, PARTIAL=partial, SCALED=scaled,
                     **({"ABLATE": plan.ablate} if plan.ablate else {})),
                (ceil_div(n, plan.bn), ceil_div(m, plan.bm), plan.split), args, aliases)
        if partial:
            _reduce_split(rt, part, dflat, bflat, m, n, plan.split, ldd, col0 + n0, out_kind, has_bias, act)


# rows of a quantized table --------------------------------------------------------------------------------------
def quantized_rows(qw, ids, dtype=np.float32, *, device=None, scale: float = 1.0):
    """qw[ids] dequantized on the device (an embedding of a quantized table), times `scale` (in f32, before the
    rounding into dtype: Gemma's embedding scale): ids of any shape (NumPy integers checked to lie in 0 .. V - 1, or
    an int32 DeviceArray whose ids outside give zero rows), qw a (V, D) QuantizedArray or quantized DeviceArray;
    the result ids.shape + (D,) in `dtype` (f32, f16 or bf16), NumPy unless ids or qw is a DeviceArray."""
    if isinstance(qw, QuantizedArray):
        if qw.ndim != 2:
            raise QuantMatmulError(f"quantized_rows takes a (V, D) table, not shape {qw.shape}")
        weight = Weight(qw.format, qw.shape[0], qw.shape[1], host=qw)
    elif isinstance(qw, DeviceArray) and qw.format is not None and qw.ndim == 2 and qw.contiguous:
        _check_word_offset(qw, "the table")
        weight = Weight(block_format(qw.format).name, qw.shape[0], qw.shape[1], device_array=qw)
    else:
        raise QuantMatmulError(f"quantized_rows takes a (V, D) QuantizedArray or quantized DeviceArray, not "
                               f"{type(qw).__name__}")
    kind = FLOATS.get(np.dtype(dtype))
    if kind is None:
        raise QuantMatmulError(f"quantized_rows gives f32, f16 or bf16 rows, not {np.dtype(dtype)}")
    vocab, dim = weight.n, weight.k
    pinned = {a.device for a in (ids, weight.device_array) if isinstance(a, DeviceArray)}
    if len(pinned) > 1:
        raise QuantMatmulError(f"ids and the table are on devices {sorted(map(str, pinned))}")
    on_device = isinstance(ids, DeviceArray) or weight.device_array is not None
    device = pinned.pop() if pinned else canonical_device(device)
    if isinstance(ids, DeviceArray):
        if ids.dtype != np.int32:
            raise QuantMatmulError(f"ids is a DeviceArray of {ids.dtype}; it must be int32")
    else:
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise QuantMatmulError(f"ids is {ids.dtype}; it must be integers")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab):
            raise QuantMatmulError(f"ids range over {ids.min()} .. {ids.max()}; the table has rows 0 .. {vocab - 1}")
        ids = np.ascontiguousarray(ids, np.int32).reshape(ids.shape)  # (0-D stays 0-D)
    shape = (*tuple(ids.shape), dim)
    count = math.prod(ids.shape)
    rt = runtime(device)
    out_dtype = np.dtype(dtype)
    made = _alloc(rt, out_dtype, shape)
    try:
        if count:
            total = count * dim // 8
            found = windows(weight, weight.on(device))
            if len(found) == 2:  # both windows bound in one launch
                (_, a1, words_a), (_, b1, words_b) = found
                bound = [(0, a1, words_a, words_b, b1 - a1)]
            else:
                bound = [(n0, n1, words, words, 0) for n0, n1, words in found]
            for n0, n1, words, words_b, second_rows in bound:
                _launch(rt, rows_kernel(kind), dict(FMT=weight.fmt),
                        (max(1, min(MAX_GROUPS, ceil_div(total, ROWS_THREADS))),),
                        {"ids": _flat(ids), "w": words, "wb": words_b, "out": _flat(made, STORAGE[kind]),
                         "n_ids": count, "vocab": vocab, "K": dim, "row_bytes": weight.row_bytes, "row_base": n0,
                         "chunk_rows": n1 - n0, "second_rows": second_rows, "scale": float(scale)})
        if on_device:
            return made
        raw = made.view(STORAGE[kind]).numpy() if kind == "bf16" else made.numpy()
        return _from_bits(raw, kind).reshape(shape)
    finally:
        if not on_device:
            made.release()


__all__ = ["KERNEL_FORMATS", "Prologue", "QuantMatmulError", "Weight", "is_quantized", "matmul", "pair_plan",
           "prologue_fits", "quantized_rows", "run_quantized", "upload", "weight_of"]
