"""`hydroplane.matmul(a, b)`: NumPy's matmul on the GEMM library, with the GEMM's epilogue.

    d = hydroplane.matmul(a, b)                                  # like a @ b
    d = hydroplane.matmul(x, w.T, bias=b, activation="gelu")    # w.T: a layout, not a copy
    d = hydroplane.matmul(a, b, c=c, alpha=2.0, beta=1.0, out_dtype="f32", device="ref")

Operands are NumPy arrays, `DeviceArray`s (hydroplane.device_array: the work runs on their device and the result
stays there) or CPU arrays that export DLPack (`np.from_dlpack`: torch CPU tensors, ...). Shapes follow
np.matmul: 1-D operands are a row (a) or a column (b) dropped from the result, leading dimensions broadcast.
A 2-D operand, or each matrix of a batch, whose transpose is C-contiguous (`x.T` of a C-contiguous x) is passed
as the transposed layout (docs/gemm.md: nt, tn, tt); other strides are copied. The result dtype is NumPy's
(f16 @ f16 -> f16, fp8 -> f32; the products are added in f32) with two exceptions, torch's convention: bf16 @ bf16
-> bf16 (NumPy with ml_dtypes gives f32) and 8-bit integers -> 32-bit integers, wrapping modulo 2**32 (NumPy keeps
int8 / uint8 and wraps at 8 bits). `acc_dtype` and `out_dtype` choose among the GEMM library's pairs (SUPPORTED);
the accumulator asked is the one every route adds in (the skinny kernels for M <= 64 too). Every bad request is a
MatmulError (a hydroplane.HydroplaneError) naming the sizes, dtypes or value: sizes are checked before anything is
copied or allocated (check_sizes), a masked array is refused (its mask would be dropped).

The GEMM itself (kernel choice by shape, padding of odd sizes, the skinny kernels, tuning) is
hydroplane.kernels.gemm.route and hydroplane.ops.gemm's runner; this module turns arrays into GEMM problems and
runs their routes. Layer: ops (above launch and kernels). A quantized weight goes to ops.quant_matmul, which loads
on the first such call (a process of plain matmuls does not import it; docs/runtime.md, "The first call").
"""

from __future__ import annotations

import functools
import importlib
import math
import os
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.gemm import ACTIVATIONS, GemmDtype, GemmError, GemmProblem, source
from hydroplane.kernels.gemm.plan import GEMM_ACCUMULATORS, GEMM_OUTPUTS
from hydroplane.kernels.gemm.route import gemm_route
from hydroplane.launch.prepared import (
    KEPT_PLANS,
    DeviceArray,
    is_masked,
    places_of,
    planned_of,
    real_storage,
    served_places,
    signature_of,
)
from hydroplane.launch.runtime import runtime, runtime_of
from hydroplane.ops.arrays import is_quantized
from hydroplane.ops.gemm import GemmRunner, PreparedGemm, lacks_type_message, missing_type
from hydroplane.spirv import types

# loaded on first use (the first quantized call): name -> its module
_LAZY = {"quantized_matmul": "hydroplane.ops.quant_matmul"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


def _quantized_matmul():
    """ops.quant_matmul's matmul (its module and the quantized kernels load on the first quantized call)."""
    return globals().get("quantized_matmul") or __getattr__("quantized_matmul")


class MatmulError(HydroplaneError):
    """A matmul request that cannot run as asked: shapes, dtypes, values, devices."""


# dtypes ---------------------------------------------------------------------------------------------------------
# input -> the accumulators it takes (the first is the default); accumulator -> the outputs it converts to
ACCUMULATORS, OUTPUTS = GEMM_ACCUMULATORS, GEMM_OUTPUTS  # the GEMM library's own tables (kernels.gemm.plan)
DEFAULT_OUT = {"f16": "f16", "bf16": "bf16", "e4m3": "f32", "e5m2": "f32", "s8": "s32", "u8": "u32"}
SUPPORTED = tuple(f"{a}:{acc}:{out}" for a, accs in ACCUMULATORS.items() for acc in accs for out in OUTPUTS[acc])


def scalar_type(value, what: str) -> types.Scalar:
    """A dtype given as a short name ('f32', 'bf16') or anything np.dtype takes (np.float32, ml_dtypes.bfloat16)."""
    if isinstance(value, str) and value in types.SCALARS:
        return types.SCALARS[value]
    try:
        return types.scalar_of_dtype(np.dtype(value))
    except (TypeError, types.TypeModelError):
        raise MatmulError(f"{what}: {value!r} is not a dtype hydroplane knows") from None


def matmul_dtype(a: types.Scalar, acc=None, out=None) -> GemmDtype:
    """The GEMM dtype of inputs `a` with the accumulator and output asked (defaults as NumPy's matmul for floats)."""
    name = str(a)
    if name not in ACCUMULATORS:
        raise MatmulError(f"no GEMM takes {name} inputs (it takes {', '.join(ACCUMULATORS)}): convert the operands, "
                          f"e.g. .astype(np.float16)")
    acc_type = scalar_type(acc, "acc_dtype") if acc is not None else types.SCALARS[ACCUMULATORS[name][0]]
    if str(acc_type) not in ACCUMULATORS[name]:
        raise MatmulError(f"{name} inputs accumulate in {' or '.join(ACCUMULATORS[name])}, not {acc_type}")
    if out is not None:
        out_type = scalar_type(out, "out_dtype")
    else:
        default = DEFAULT_OUT[name]
        out_type = types.SCALARS[default if default in OUTPUTS[str(acc_type)] else str(acc_type)]
    if str(out_type) not in OUTPUTS[str(acc_type)]:
        raise MatmulError(f"a {name}:{acc_type} GEMM writes {' or '.join(OUTPUTS[str(acc_type)])}, not {out_type} "
                          f"(the pairs: {', '.join(SUPPORTED)})")
    return GemmDtype(a, acc_type, out_type)


# operands ---------------------------------------------------------------------------------------------------------
@dataclass
class Operand:
    """One array argument: a NumPy array (possibly a view) or a DeviceArray, with its shape and dtype."""

    name: str
    array: np.ndarray | None = None
    device_array: DeviceArray | None = None

    @property
    def shape(self) -> tuple:
        return tuple(self.array.shape if self.array is not None else self.device_array.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.array.dtype if self.array is not None else self.device_array.dtype)

    @property
    def on_device(self) -> bool:
        return self.device_array is not None


def operand(value, name: str) -> Operand:
    """A NumPy array, DeviceArray, DLPack-exporting CPU array or array-like, as an Operand."""
    if isinstance(value, DeviceArray):
        return Operand(name, device_array=value)
    if is_masked(value):
        raise MatmulError(f"{name}: a masked array; hydroplane.matmul would drop its mask and multiply the hidden "
                          f"values: pass {name}.filled(0) (masked entries count as 0) or {name}.data")
    if isinstance(value, np.ndarray):
        return Operand(name, array=value)
    if hasattr(value, "__dlpack__"):
        try:
            return Operand(name, array=np.from_dlpack(value))
        except (BufferError, TypeError, RuntimeError, ValueError) as err:
            raise MatmulError(f"{name}: a {type(value).__name__} that NumPy cannot read through DLPack ({err}); "
                              "hydroplane.matmul takes CPU arrays (move it with .cpu(); NumPy has no bfloat16 for "
                              "DLPack: pass a NumPy array of ml_dtypes.bfloat16)") from None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise MatmulError(f"{name}: {type(value).__name__} is not an array ({err})") from None
    if array.dtype == object:
        raise MatmulError(f"{name}: {type(value).__name__} is not an array of numbers")
    return Operand(name, array=array)


def stored_layout(matrix: np.ndarray) -> tuple[str, np.ndarray]:
    """('n', the matrix) when it is C-contiguous, ('t', its transpose) when that is (a transposed view: the GEMM
    reads it as stored), else ('n', a C-contiguous copy)."""
    if matrix.flags.c_contiguous:
        return "n", matrix
    if matrix.T.flags.c_contiguous:
        return "t", matrix.T
    return "n", np.ascontiguousarray(matrix)


def finite_scalar(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise MatmulError(f"{name} is a real number, not {value!r}")
    if not math.isfinite(float(value)):
        raise MatmulError(f"{name} must be finite, not {value!r}")
    return float(value)


# the call, as GEMM problems -------------------------------------------------------------------------------------
@dataclass
class MatmulCall:
    """A matmul call checked and sized: the batch of GEMMs it is, and the result's shape and dtype."""

    a: Operand
    b: Operand
    c: Operand | None
    bias: Operand | None
    out: Operand | None
    dtype: GemmDtype
    batch: tuple  # the broadcast leading dimensions
    m: int
    n: int
    k: int
    result_shape: tuple  # as NumPy gives it (1-D operands' dimensions dropped)
    alpha: float
    beta: float
    activation: str
    device: object  # "ref", a Vulkan device number, or None (the best one)

    @property
    def result_dtype(self) -> np.dtype:
        return np.dtype(self.dtype.out.dtype)

    @property
    def on_device(self) -> bool:
        return any(op is not None and op.on_device for op in (self.a, self.b, self.c, self.bias, self.out))


def check_call(a, b, *, c=None, alpha=1.0, beta=0.0, bias=None, activation="none", out=None, out_dtype=None,
               acc_dtype=None, device=None) -> MatmulCall:
    """Check and size a matmul call (no device work): MatmulError for anything that cannot run."""
    a_op, b_op = operand(a, "a"), operand(b, "b")
    if a_op.dtype != b_op.dtype:
        raise MatmulError(f"a is {a_op.dtype} and b is {b_op.dtype}: the GEMM multiplies operands of one dtype")
    try:
        in_type = types.scalar_of_dtype(a_op.dtype)
    except types.TypeModelError:
        raise MatmulError(f"no GEMM takes {a_op.dtype} inputs (it takes {', '.join(ACCUMULATORS)})") from None
    dtype = matmul_dtype(in_type, acc_dtype, out_dtype)
    a_shape, b_shape = a_op.shape, b_op.shape
    if not a_shape or not b_shape:
        raise MatmulError(f"matmul takes arrays of 1 or more dimensions, not shapes {a_shape} and {b_shape} "
                          "(multiply by a scalar with alpha)")
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    m, k = a2[-2:]
    k2, n = b2[-2:]
    if k != k2:
        raise MatmulError(f"matmul of shapes {a_shape} and {b_shape}: a has {k} columns (K), b {k2} rows")
    try:
        batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        raise MatmulError(f"matmul of shapes {a_shape} and {b_shape}: the leading dimensions {a2[:-2]} and "
                          f"{b2[:-2]} do not broadcast") from None
    result_shape = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    alpha, beta = finite_scalar(alpha, "alpha"), finite_scalar(beta, "beta")
    if activation not in ACTIVATIONS:
        raise MatmulError(f"activation is one of {', '.join(ACTIVATIONS)}, not {activation!r}")
    if dtype.integer and not (alpha.is_integer() and beta.is_integer()):
        raise MatmulError(f"an integer GEMM ({dtype}) takes integer alpha and beta, not {alpha:g} and {beta:g}")
    if activation == "gelu" and dtype.integer:
        raise MatmulError(f"GELU needs a float accumulator, not {dtype.acc}")
    out_np = np.dtype(dtype.out.dtype)
    check_sizes(a_shape, b_shape, batch, m, n, k, out_np)
    c_op = None if c is None else operand(c, "c")
    if c_op is not None and beta == 0:
        raise MatmulError("c is given but beta is 0, so it would be ignored: pass beta (e.g. beta=1.0) to add it")
    if c_op is None and beta != 0:
        raise MatmulError(f"beta={beta:g} scales c: pass c (broadcastable to the result's shape {result_shape})")
    if c_op is not None:
        _check_broadcast(c_op, result_shape, out_np)
    bias_op = None if bias is None else operand(bias, "bias")
    if bias_op is not None:
        if bias_op.shape != (n,):
            raise MatmulError(f"bias has shape {bias_op.shape}; it is a row of N={n} values, added to every row")
        _check_dtype(bias_op, out_np)
    out_op = None if out is None else operand(out, "out")
    if out_op is not None:
        if out_op.shape != result_shape:
            raise MatmulError(f"out has shape {out_op.shape}; the result's is {result_shape}")
        if out_op.dtype != out_np:
            raise MatmulError(f"out is {out_op.dtype}; the result is {out_np} ({dtype}: choose with out_dtype)")
        if out_op.array is not None and not out_op.array.flags.writeable:
            raise MatmulError("out is a read-only array")
    for op in (a_op, b_op, c_op, bias_op, out_op):
        if op is not None and op.on_device:  # ReleasedError naming the operand, before anything is bound
            op.device_array._require_live(f"matmul: {op.name}")
    for name, op in (("a", a_op), ("b", b_op), ("bias", bias_op)):
        if op is not None and op.on_device and len(op.shape) == 1 and not op.device_array.contiguous:
            raise MatmulError(f"{name}: a strided 1-D DeviceArray view (strides {op.device_array.strides}); a vector "
                              "operand is read contiguous (copy it with hydroplane.device_array(x.numpy()))")
    pinned = {op.device_array.device for op in (a_op, b_op, c_op, bias_op, out_op) if op is not None and op.on_device}
    if len(pinned) > 1:
        raise MatmulError(f"the operands are DeviceArrays of different devices: {sorted(map(str, pinned))}")
    if pinned:
        held = pinned.pop()
        if device is not None and device != held:
            raise MatmulError(f"device={device!r}, but the DeviceArrays are on device {held!r}")
        device = held
    if device is not None and device != "ref" and not (isinstance(device, int | np.integer) and device >= 0):
        raise MatmulError(f"device is 'ref', a Vulkan device number or None, not {device!r}")
    return MatmulCall(a_op, b_op, c_op, bias_op, out_op, dtype, batch, m, n, k, result_shape, alpha, beta,
                      activation, device)


INDEX_LIMIT = 1 << 31  # elements of one matrix the GEMM indexes (32-bit indices: GemmProblem's own limit)


@functools.cache
def host_memory() -> int | None:
    """The machine's physical memory in bytes (None where the OS does not say); asked once per process."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_sizes(a_shape: tuple, b_shape: tuple, batch: tuple, m: int, n: int, k: int, out_np: np.dtype) -> None:
    """Refuse, before anything is copied or allocated, a call whose matrices the GEMM cannot index or whose result
    cannot fit in memory (MatmulError naming the sizes, not NumPy's ValueError or MemoryError halfway through)."""
    shapes = f"matmul of shapes {a_shape} and {b_shape}"
    count = math.prod(batch) * m * n
    if k and count:  # GEMMs run: each matrix within 32-bit indices
        for what, rows, cols in (("a", m, k), ("b", k, n), ("the result", m, n)):
            if rows * cols >= INDEX_LIMIT:
                raise MatmulError(f"{shapes}: {what} has {rows}x{cols} = {rows * cols} elements per matrix; the GEMM "
                                  f"indexes at most {INDEX_LIMIT - 1} (32-bit indices): split the call")
    nbytes = count * (out_np.itemsize if k else 8)  # K = 0 is computed on the host in 64 bits
    memory = host_memory()
    if memory is not None and nbytes > memory:
        raise MatmulError(f"{shapes}: the result, {'x'.join(map(str, (*batch, m, n)))} of {out_np}, takes "
                          f"{nbytes / 2 ** 30:.4g} GiB, more than this machine's {memory / 2 ** 30:.4g} GiB of memory")


def _check_dtype(op: Operand, out_np: np.dtype) -> None:
    """C and bias are read in the output type: a NumPy array of another dtype is converted where NumPy would do it
    without loss of kind (same_kind), a DeviceArray must be of it."""
    if op.dtype == out_np:
        return
    if op.on_device or not np.can_cast(op.dtype, out_np, "same_kind"):
        raise MatmulError(f"{op.name} is {op.dtype}; the GEMM reads it as {out_np}, the output type")


def _check_broadcast(op: Operand, shape: tuple, out_np: np.dtype) -> None:
    _check_dtype(op, out_np)
    if op.on_device:
        if op.shape != shape:
            raise MatmulError(f"c is a DeviceArray of shape {op.shape}; on the device it must have the result's "
                              f"shape {shape}")
        return
    try:
        np.broadcast_shapes(op.shape, shape)
        if np.broadcast_shapes(op.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise MatmulError(f"c has shape {op.shape}, which does not broadcast to the result's {shape}") from None


def problem_of(call: MatmulCall, layout: str, m: int | None = None) -> GemmProblem:
    try:
        return GemmProblem(call.m if m is None else m, call.n, call.k, call.dtype, layout, call.alpha, call.beta,
                           call.bias is not None, call.activation)
    except GemmError as err:
        raise MatmulError(str(err)) from None


# results without device work --------------------------------------------------------------------------------------
def host_result(call: MatmulCall, c_full: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    """The result of a call with K == 0 (alpha * 0 + beta * c + bias, the activation) or no elements at all."""
    shape = call.batch + (call.m, call.n)
    integer = call.dtype.integer
    work = np.zeros(shape, np.int64 if integer else np.float64)
    if c_full is not None:
        work = work + (np.int64(call.beta) if integer else call.beta) * c_full.astype(work.dtype)
    if bias is not None:
        work = work + bias.astype(work.dtype)
    if integer:  # the integer epilogue wraps in the accumulator before the activation, as the kernels do
        work = _wrapped(work, call.dtype.acc.width, call.dtype.acc.signed)
    if call.activation == "relu":
        work = np.maximum(work, 0)
    elif call.activation == "gelu":
        work = 0.5 * work * (1 + np.tanh(source.GELU_C * (work + source.GELU_CUBIC * work ** 3)))
    if integer:
        return _wrapped(work, call.dtype.out.width, call.dtype.out.signed).astype(call.result_dtype)
    return work.astype(call.result_dtype)


def _wrapped(work: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """int64 values wrapped to `bits` bits (two's complement where signed)."""
    wrapped = work & ((1 << bits) - 1)
    return np.where(wrapped >= 1 << (bits - 1), wrapped - (1 << bits), wrapped) if signed else wrapped


# running ----------------------------------------------------------------------------------------------------------
_runners: dict = {}


def runner_for(call: MatmulCall) -> GemmRunner:
    """The process's GemmRunner for the call's device (the device runtime's executor, launch.runtime): the
    DeviceArrays' device, else `device=`, else the default device (hydroplane.set_device, else the best one). A
    device that cannot run the dtype raises MatmulError naming it (never a silent move to another device)."""
    try:
        rt = runtime(call.device)
    except HydroplaneError as err:
        raise MatmulError(f"matmul: {err}") from None
    found = _runners.get(rt.key)
    if found is None or found.executor is not rt.executor:
        found = _runners[rt.key] = GemmRunner(rt.key, rt.executor, owns_executor=False)
    lacking = None if rt.is_reference else missing_type(call.dtype, rt.target)
    if lacking is not None:
        raise MatmulError("matmul: " + lacks_type_message(lacking, rt.name, 'device="ref"'))
    return found


# the calls' GEMMs ---------------------------------------------------------------------------------------------------
def matmul(a, b, *, c=None, alpha=1.0, beta=0.0, bias=None, activation="none", out=None, out_dtype=None,
           acc_dtype=None, device=None):
    """act(alpha * (a @ b) + beta * c + bias) with np.matmul's shapes and NumPy's result dtype, bf16 and the 8-bit
    integers excepted (the module docstring); a NumPy array, or a DeviceArray when an operand or `out` is one."""
    if c is None and type(a) is DeviceArray and type(b) is DeviceArray:  # a planned call of DeviceArrays
        if b.format is not None:  # ggml blocks (b = qw.T): ops/quant_matmul.py, whose calls have their own plans
            return _quantized_matmul()(a, b, c=c, alpha=alpha, beta=beta, bias=bias, activation=activation, out=out,
                                       out_dtype=out_dtype, acc_dtype=acc_dtype, device=device)
        try:
            fast = _fast.get((a.signature, b.signature, signature_of(bias), signature_of(out), type(alpha), alpha,
                              type(beta), beta, activation, out_dtype, acc_dtype, device))
        except TypeError:  # an unhashable argument: the checked path says what is wrong with it
            fast = None
        if fast is not None:
            result = fast.run(a, b, bias, out)
            if result is not None:
                return result
    if is_quantized(a) or is_quantized(b):  # qw.T of ggml blocks: ops/quant_matmul.py
        return _quantized_matmul()(a, b, c=c, alpha=alpha, beta=beta, bias=bias, activation=activation, out=out,
                                   out_dtype=out_dtype, acc_dtype=acc_dtype, device=device)
    call = check_call(a, b, c=c, alpha=alpha, beta=beta, bias=bias, activation=activation, out=out,
                      out_dtype=out_dtype, acc_dtype=acc_dtype, device=device)
    try:
        return run_call(call, (alpha, beta, activation, out_dtype, acc_dtype, device))
    except MemoryError:  # within the machine's memory (check_sizes), but not free now
        raise MatmulError(f"matmul of shapes {call.a.shape} and {call.b.shape}: out of memory for the result or the "
                          "operands' copies") from None


@dataclass
class Part:
    """One GEMM's share of an operand: a NumPy matrix, or a matrix of a DeviceArray (a view: its offset and, for a
    transposed view, the layout)."""

    array: np.ndarray | None = None
    device_array: DeviceArray | None = None


def _promoted(op: Operand, promote: str) -> tuple:
    """The operand's shape with a 1-D operand made a row (a, c) or a column (b)."""
    shape = op.shape
    if len(shape) == 1:
        return (1, *shape) if promote == "row" else (*shape, 1)
    return shape


def _part_of(op: Operand, promote: str, index: tuple) -> Part:
    """The operand's matrix for batch `index`, its size-1 leading dimensions broadcast."""
    shape = _promoted(op, promote)
    batch = shape[:-2]
    picked = tuple(0 if size == 1 else i for i, size in zip(index[len(index) - len(batch):], batch))
    if op.array is not None:
        return Part(array=op.array.reshape(shape)[picked])
    arr = op.device_array
    if len(arr.shape) == 1:
        arr = arr.reshape(shape)
    return Part(device_array=arr[picked] if picked else arr)


def _device_layout(arr: DeviceArray, name: str) -> tuple[str, DeviceArray]:
    """('n', the matrix) for a C-ordered matrix view, ('t', its transpose) for a transposed one (`w.T`, `x.mT`)."""
    if arr.contiguous:
        return "n", arr
    if arr.T.contiguous:
        return "t", arr.T
    raise MatmulError(f"{name}: a DeviceArray view of strides {arr.strides} ({arr.shape}) is neither C-ordered nor "
                      "a transpose of one; the GEMM reads matrices in one of those layouts (copy it with "
                      "hydroplane.device_array(x.numpy()))")


def _folded(op: Operand, rows: int, cols: int) -> Part:
    if op.array is not None:
        return Part(array=op.array.reshape(rows, cols))
    return Part(device_array=op.device_array.reshape(rows, cols))


def _foldable(op: Operand | None) -> bool:
    return op is None or (op.device_array.contiguous if op.on_device else op.array.flags.c_contiguous)


class MatmulPlan:
    """A call's GEMMs made once for its signature (device, dtypes, shapes, layouts, epilogue, which operands are
    NumPy and which DeviceArrays): the routes, configurations, pipelines, descriptor sets and scratch. A later call
    of the same signature binds its operands (NumPy ones copied into the plan's buffers, queued) and queues the
    launches; nothing proportional to M x N happens on the host but the copies of NumPy operands and results."""

    def __init__(self, runner: GemmRunner, gemms: list[PreparedGemm]):
        self.runner, self.gemms = runner, gemms

    def run(self, jobs: list[dict]) -> None:
        for prepared, job in zip(self.gemms, jobs):
            for name, value in job.items():
                if isinstance(value, DeviceArray):
                    prepared.rebind(name, value)
                elif value is not None:
                    prepared.buffers[name].write(value)
            prepared.dispatch()
            prepared.park()

    def close(self) -> None:
        for prepared in self.gemms:
            prepared.close()
        self.gemms = []


_plans: OrderedDict = OrderedDict()
PLAN_CACHE_SIZE = 64  # calls of this many signatures keep their plans (the least recently used go first)


def clear_plans() -> None:
    """Forget every planned call (the next call of each signature plans again)."""
    _fast.clear()
    while _plans:
        _plans.popitem()[1].close()


class FastCall:
    """A planned call of DeviceArrays (a, b, bias, out) looked up by their signatures and the keyword arguments,
    skipping the checks and the derivation of the GEMMs' operands: a signature fixes every check's outcome and
    every view the plan binds (each a view of one argument at a fixed byte distance from its offset). `run`
    returns None where it cannot serve the call (an argument released, out sharing a buffer with an input): the
    checked path then handles it."""

    __slots__ = ("plan", "runtime", "bindings", "result", "by_place")

    def __init__(self, plan: MatmulPlan, rt, bindings: list, result: tuple | None):
        self.plan, self.runtime, self.bindings, self.result = plan, rt, bindings, result
        self.by_place: dict = {}  # the arguments' places -> the planned launches that bound them (launch.prepared)

    def run(self, a: DeviceArray, b: DeviceArray, bias: DeviceArray | None, out: DeviceArray | None):
        plan, rt = self.plan, self.runtime
        if not plan.gemms or rt.closed:
            return None
        places = served_places((a, b, bias), out)
        if places is None:
            return None
        if out is None:
            dtype, shape, nbytes = self.result  # type: ignore[misc]
            out = DeviceArray.made(rt, nbytes, dtype, shape)
            places += ((id(out.storage.buffer), 0),)
        arrays = (a, b, bias, out)
        planned = self.by_place.get(places)
        if planned is not None:  # these buffers at these offsets were bound before: queue those launches again
            with rt.lock:
                if not plan.gemms:  # evicted meanwhile (by another thread): its scratch may be another's now
                    return None
                rt.launch_kept(self.by_place, places, planned)
            return out
        with rt.lock:  # the plan is shared by the calls of its signature: bound and queued by one thread at a time
            return self._bind_and_queue(arrays, places, out)

    def _bind_and_queue(self, arrays: tuple, places: tuple | None, out: DeviceArray) -> DeviceArray | None:
        plan = self.plan
        if not plan.gemms:  # evicted meanwhile (by another thread)
            return None
        for prepared, bindings in zip(plan.gemms, self.bindings):
            held = prepared.buffers
            for name, slot, delta, template in bindings:
                x = arrays[slot]
                at = x.layout.offset + delta
                bound = held[name]
                if real_storage(bound.storage) is not x.storage or bound.layout.offset != at:
                    prepared.rebind(name, x.like(template, at))
            prepared.dispatch()
            prepared.park()
        planned = planned_of(launch for prepared in plan.gemms for launch in prepared.launches)
        if planned is not None and places is not None:
            if len(self.by_place) >= KEPT_PLANS:
                self.by_place.clear()
            self.by_place[places] = planned
        return out


_fast: dict = {}  # (signatures, keyword arguments) -> FastCall


def _register_fast(call: MatmulCall, kwargs: tuple, plan: MatmulPlan, jobs: list, d_array: DeviceArray,
                   rt) -> None:
    """Keep a FastCall for a call whose operands are all DeviceArrays, each bound view traced to its argument."""
    slots = [call.a.device_array, call.b.device_array, call.bias.device_array if call.bias else None, d_array]
    storages = [x.storage for x in slots if x is not None]
    if len(set(map(id, storages))) != len(storages):  # two arguments share a buffer: which is which is ambiguous
        return
    bindings = []
    for job in jobs:
        traced = []
        for name, value in job.items():
            if value is None:
                continue
            slot = next((i for i, x in enumerate(slots) if x is not None and isinstance(value, DeviceArray) and
                         value.storage is x.storage), None)
            if slot is None:
                return
            traced.append((name, slot, value.layout.offset - slots[slot].layout.offset, value.parked()))
        bindings.append(traced)
    result = None if call.out is not None else (d_array.dtype, d_array.shape, d_array.nbytes)
    sig = (call.a.device_array.signature, call.b.device_array.signature, signature_of(slots[2]),
           signature_of(call.out.device_array if call.out is not None else None), type(kwargs[0]), kwargs[0],
           type(kwargs[1]), kwargs[1], *kwargs[2:])
    fast = FastCall(plan, rt, bindings, result)
    planned, places = planned_of(launch for prepared in plan.gemms for launch in prepared.launches), places_of(slots)
    if planned is not None and places is not None:  # this call's arrays: queued again without rebinding
        fast.by_place[places] = planned
    try:
        _fast[sig] = fast
    except TypeError:
        return
    while len(_fast) > 4 * PLAN_CACHE_SIZE:
        _fast.pop(next(iter(_fast)))


def _plan_for(key, make) -> MatmulPlan:
    plan = _plans.get(key)
    if plan is not None:
        _plans.move_to_end(key)
        return plan
    plan = _plans[key] = make()
    while len(_plans) > PLAN_CACHE_SIZE:
        _plans.popitem(last=False)[1].close()
    return plan


def run_call(call: MatmulCall, kwargs: tuple | None = None):
    """Run a checked call: the result as a NumPy array, or (an operand or out on a device) a DeviceArray.
    `kwargs` (alpha, beta, activation, out_dtype, acc_dtype, device as the caller gave them): keep a FastCall for
    the call's signature when it can have one."""
    out_np = call.result_dtype
    full_shape = call.batch + (call.m, call.n)
    c_op = call.c
    if c_op is not None and not c_op.on_device:  # broadcast to the batch of M x N results, in the output type
        c_op = Operand("c", array=np.ascontiguousarray(np.broadcast_to(
            _with_m_and_n(call, c_op.array.astype(out_np, copy=False)), full_shape)))
    bias_np = None if call.bias is None or call.bias.on_device else \
        np.ascontiguousarray(call.bias.array.astype(out_np, copy=False))
    if call.k == 0 or 0 in full_shape:
        c_full = None if c_op is None else (c_op.array if not c_op.on_device else
                                            c_op.device_array.numpy().reshape(full_shape))
        if call.bias is not None and call.bias.on_device:
            bias_np = call.bias.device_array.numpy()
        return _deliver(call, host_result(call, c_full, bias_np).reshape(call.result_shape))
    runner = runner_for(call)
    rt = runtime_of(runner.executor)
    inputs = [op.device_array for op in (call.a, call.b, c_op, call.bias) if op is not None and op.on_device]
    staged = None
    if call.out is not None and call.out.on_device:
        d_array = call.out.device_array
        if not d_array.contiguous:
            raise MatmulError("out: a strided DeviceArray view; the GEMM writes its result in C order")
        if any(d_array.overlaps(x) for x in inputs):  # computed into scratch, then copied: the same on every device
            staged = d_array
            d_array = _new_device_array(rt, out_np, full_shape)
        result = None
    elif call.on_device:
        d_array, result = _new_device_array(rt, out_np, call.result_shape), None
    else:
        d_array, result = None, np.empty(full_shape, out_np)
    bias_value = bias_np if call.bias is None or not call.bias.on_device else call.bias.device_array
    a_shape, b_shape = _promoted(call.a, "row"), _promoted(call.b, "column")
    rows = math.prod(call.batch) * call.m
    if len(b_shape) == 2 and len(a_shape) > 2 and _foldable(call.a) and _foldable(c_op) and \
            max(rows * call.k, rows * call.n) < 1 << 31:  # B without leading dimensions: one GEMM of batch * M rows
        parts = [(_folded(call.a, rows, call.k), _part_of(call.b, "column", ()),
                  None if c_op is None else _folded(c_op, rows, call.n),
                  Part(array=result.reshape(rows, call.n)) if result is not None else
                  Part(device_array=d_array.reshape(rows, call.n)))]
    else:
        parts = []
        d_full = None if d_array is None else d_array.reshape(full_shape)
        for index in np.ndindex(*call.batch):
            parts.append((_part_of(call.a, "row", index), _part_of(call.b, "column", index),
                          None if c_op is None else _part_of(c_op, "row", index),
                          Part(array=result[index]) if result is not None else
                          Part(device_array=d_full[index] if index else d_full)))
    jobs, signature = [], []
    for a_part, b_part, c_part, d_part in parts:
        job, layout = {"bias": bias_value}, ""
        for name, part in (("a", a_part), ("b", b_part), ("c", c_part)):
            if part is None:
                continue
            if part.array is not None:
                letter, job[name] = stored_layout(part.array) if name != "c" else \
                    ("n", np.ascontiguousarray(part.array))
            elif name == "c" and not part.device_array.contiguous:
                raise MatmulError(f"c: a DeviceArray view of strides {part.device_array.strides} "
                                  f"({part.device_array.shape}) is not C-ordered; the GEMM reads c C-ordered "
                                  "(copy it with hydroplane.device_array(c.numpy()))")
            else:
                letter, job[name] = _device_layout(part.device_array, name)
            layout += letter if name != "c" else ""
        if d_part.device_array is not None:
            job["d"] = d_part.device_array
        rows = a_part.array.shape[0] if a_part.array is not None else a_part.device_array.shape[0]
        jobs.append((job, d_part, rows))
        signature.append((layout, rows, tuple(_kind(job.get(n), rt) for n in ("a", "b", "c", "bias", "d"))))
    key = (rt.key, id(rt), str(call.dtype), call.n, call.k, call.alpha, call.beta, call.activation,
           call.bias is not None, tuple(signature))

    def make() -> MatmulPlan:
        gemms = []
        for (job, d_part, rows), (layout, _, _) in zip(jobs, signature):
            problem = problem_of(call, layout, m=rows)
            exact = d_part.array is None  # a result read back to the host may stay in padded scratch: one copy less
            route = gemm_route(problem, runner.tuned_config(problem), runner.target, exact_output=exact)
            gemms.append(PreparedGemm(runner, route, job, poison=False))
        return MatmulPlan(runner, gemms)

    with rt.lock:  # a plan is shared by the calls of its key: bound, queued and read back by one thread at a time
        plan = _plan_for(key, make)
        plan.run([job for job, _, _ in jobs])
        if result is not None:
            for prepared, (_, d_part, _) in zip(plan.gemms, jobs):
                d_part.array[...] = prepared.read()
            return _deliver(call, result.reshape(call.result_shape))
        if staged is not None:
            staged.copy_from(d_array)
            d_array.release()
            return staged
        if call.out is not None and not call.out.on_device:  # a NumPy out of a call on DeviceArrays: written
            value = d_array.numpy()
            d_array.release()
            return _deliver(call, value.reshape(call.result_shape))
        if kwargs is not None and call.a.on_device and call.b.on_device and c_op is None and \
                (call.bias is None or call.bias.on_device):
            _register_fast(call, kwargs, plan, [job for job, _, _ in jobs], d_array, rt)
        return d_array


def _kind(value, rt) -> object:
    """What a plan depends on in an operand: absent, a NumPy array (its shape), or a DeviceArray (whether its offset
    binds directly)."""
    if value is None:
        return None
    if isinstance(value, DeviceArray):
        return ("device", value.offset % rt.storage_alignment == 0)
    return ("host", value.shape)


def _new_device_array(rt, dtype: np.dtype, shape: tuple) -> DeviceArray:
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    return DeviceArray(rt.key, rt.executor, rt.alloc(nbytes), dtype, shape)


def _with_m_and_n(call: MatmulCall, c: np.ndarray) -> np.ndarray:
    """c broadcast to the result's shape, with the M and N dimensions a 1-D operand drops put back."""
    c = np.broadcast_to(c, call.result_shape)
    if len(call.a.shape) == 1:
        c = c[..., None, :] if len(call.b.shape) > 1 else c[..., None]
    if len(call.b.shape) == 1:
        c = c[..., None]
    return c


def _deliver(call: MatmulCall, result: np.ndarray):
    """A result computed on the host (or read back) into out, or as the value returned."""
    result = np.require(np.asarray(result, call.result_dtype), requirements="C")  # 0-d stays 0-d
    if call.out is not None:
        if call.out.on_device:
            call.out.device_array.write(result)
            return call.out.device_array
        np.copyto(call.out.array, result)
        return call.out.array
    if call.on_device:
        rt = runtime(call.device)
        arr = _new_device_array(rt, result.dtype, result.shape)
        arr.write(result)
        return arr
    return result[()] if result.ndim == 0 else result  # 1-D @ 1-D: a scalar, as NumPy gives
