"""One path from Python arguments to a dispatch: DeviceArrays and their views, bind, pack push constants, queue.

    prepared = prepare(executor, kernel, spec, grid, {"a": a, "b": b, "d": d, "n": 1000})
    with prepared:
        prepared.dispatch()                 # queued on the device (launch.runtime); returns at once
        d_now = prepared.read("d")          # waits for the work that writes d, then reads it
        seconds = prepared.time(repeat=20)  # GPU timestamps around each run, after a warm-up

Every caller goes through it: `kernel[grid](...)` (launch.jit), the GEMM runner and every op (hydroplane.ops).
The launch checks (bindings, buffer sizes, push constants, grid) run once, in `prepare`; `dispatch` and `time`
then queue the same checked launch. Arguments bind by the specialization's parameters
(`lang.Specialization.params`): a NumPy array is copied into a buffer the launch owns (queued at call time, so the
caller may reuse the array at once) and released with it; a `DeviceArray` binds its buffer as it is (a view at an
offset the device can bind through its descriptor's offset, else through a queued copy); numbers pack into the
push-constant block through `checks.pack_push_constants`, the one packer.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from hydroplane.lang.compiler import KernelParam, Specialization
from hydroplane.lang.core import Access
from hydroplane.launch.checks import LaunchError, check_bound, check_grid, check_push_constants, pack_push_constants
from hydroplane.launch.executors import BindingKey, CheckedKernel, Executor
from hydroplane.launch.limits import check_buffer_sizes
from hydroplane.launch.runtime import Bound, DeviceRuntime, PlannedLaunch, runtime, runtime_of

WARMUP_S = 0.3  # seconds of back-to-back runs before a GPU timing (a GPU idle for a moment runs at its idle clock)


class ArgumentError(LaunchError):
    """An argument that does not fit the kernel's parameter: wrong type, dtype, device or size."""


class ReleasedError(ArgumentError):
    """A DeviceArray used after `release()` (of it or of the array it views)."""


class Storage:
    """The bytes behind a DeviceArray and its views: one buffer of one device, freed when the last array that views
    it goes (or at `release()`), once the queued work that uses it has finished."""

    __slots__ = ("runtime", "buffer", "nbytes", "__weakref__")

    def __init__(self, rt: DeviceRuntime, buffer, nbytes: int):
        self.runtime, self.buffer, self.nbytes = rt, buffer, nbytes

    def release(self) -> None:
        buffer, self.buffer = self.buffer, None
        if buffer is not None and not self.runtime.closed:
            self.runtime.free(buffer)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the device goes with the process
            pass


class WeakStorage:
    """A planned call's hold on a caller's storage that does not keep it alive (`DeviceArray.parked`): `buffer` is
    the storage's while it lives, None once it was released or collected (a launch then refuses to run, and the
    ops rebind); `release` does nothing (the caller's storage frees itself)."""

    __slots__ = ("runtime", "_ref", "nbytes")

    def __init__(self, storage: Storage):
        self.runtime, self._ref, self.nbytes = storage.runtime, weakref.ref(storage), storage.nbytes

    @property
    def buffer(self):
        storage = self._ref()
        return None if storage is None else storage.buffer

    @property
    def real(self) -> Storage | None:
        return self._ref()

    def release(self) -> None:
        pass


def is_masked(value) -> bool:
    """Whether `value` is a NumPy masked array, asked without loading numpy.ma (NumPy imports it on the first use of
    `np.ma`, about 5 ms of a first call): no masked array exists before numpy.ma is loaded."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(value, ma.MaskedArray)


def real_storage(storage):
    """The storage itself, or the one a WeakStorage refers to (None once it is gone)."""
    return storage.real if type(storage) is WeakStorage else storage


class Layout(NamedTuple):
    """Where a DeviceArray's elements are: a byte offset into its storage and NumPy-style byte strides (a named
    tuple: a call's host path makes several, and a frozen dataclass costs three times as much to make)."""

    offset: int
    strides: tuple[int, ...]


def _contiguous_strides(shape: tuple, itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def _c_ordered(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """Whether elements of these strides lie in C order without gaps (dimensions of size 1 aside; an array of no
    element is C-ordered whatever its strides: the callers ask that first)."""
    step = itemsize
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != step:
            return False
        step *= n
    return True


def _rows_in_order(shape: tuple, strides: tuple) -> bool:
    """Whether a block-format array's rows lie whole and in order: (N, K) whose K axis is the blocks' own (stride
    1) and whose row stride is its row's bytes (its layout's strides are (row bytes, 1); its .T's (1, row bytes))."""
    return len(shape) == 2 and strides[1] == 1


class DeviceArray:
    """An array held in a device's buffer: it binds to launches on that device without copies, and views of it
    (`.T`, `reshape`, slices of leading dimensions, `view(dtype)`) share its bytes (docs/runtime.md's table).

    `DeviceArray(device, executor, buffer, dtype, shape)` wraps a buffer of that executor (the launch layer's
    own constructor); users make them with `hydroplane.device_array(x)`. `format` names a block format (a
    quantized array's "q4_0" ...) whose bytes are not `dtype` elements; None for plain arrays. A block-format
    array is (N, K) rows of blocks, its layout's strides (row bytes, 1): a row slice `d[a:b]` is a view at a*row
    bytes; its `.T` is the layout a matmul takes."""

    __slots__ = ("runtime", "storage", "dtype", "shape", "layout", "base", "format", "size", "contiguous", "_signature",
                 "__weakref__")

    def __init__(self, device, executor, buffer, dtype, shape, *, storage: Storage | None = None,
                 layout: Layout | None = None, base: DeviceArray | None = None, format: str | None = None):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if storage is None:
            rt = runtime_of(executor) if executor is not None else runtime(device)
            storage = Storage(rt, buffer, int(getattr(buffer, "nbytes", math.prod(shape) * dtype.itemsize)))
        self.runtime: DeviceRuntime = storage.runtime
        self.storage = storage
        self.dtype, self.shape = dtype, shape
        self.base, self.format = base, format
        self.size = math.prod(shape)  # the number of elements
        if layout is None:
            self.layout = Layout(0, _contiguous_strides(shape, dtype.itemsize))
            self.contiguous = True
        else:  # whether the elements lie in C order without gaps (what a kernel's buffer binding takes)
            self.layout = layout
            self.contiguous = _rows_in_order(shape, layout.strides) if format is not None else \
                self.size <= 1 or _c_ordered(shape, layout.strides, dtype.itemsize)
        self._signature: tuple | None = None

    @classmethod
    def made(cls, rt: DeviceRuntime, nbytes: int, dtype: np.dtype, shape: tuple) -> DeviceArray:
        """A new C-ordered array in a new buffer of `rt` (dtype an np.dtype, shape a tuple of ints, nbytes at least
        theirs): the ops' fast paths make their results so, without the constructor's conversions."""
        buffer = rt.alloc(nbytes)
        arr = cls.__new__(cls)
        arr.runtime, arr.dtype, arr.shape = rt, dtype, shape
        arr.storage = Storage(rt, buffer, int(getattr(buffer, "nbytes", nbytes)))
        arr.layout = Layout(0, _contiguous_strides(shape, dtype.itemsize))
        arr.base = arr.format = arr._signature = None
        arr.size, arr.contiguous = math.prod(shape), True
        return arr

    @property
    def signature(self) -> tuple:
        """What a planned call depends on in this array, as a dict key: its device runtime, dtype, block format,
        shape, strides and offset modulo the device's binding alignment (two arrays of one signature bind the
        same way; the ops' fast paths look their plans up by it)."""
        sig = self._signature
        if sig is None:
            rt = self.runtime
            sig = self._signature = (id(rt), self.dtype, self.format, self.shape, self.layout.strides,
                                     self.layout.offset % rt.storage_alignment)
        return sig

    def like(self, template: DeviceArray, offset: int) -> DeviceArray:
        """A view of this array's storage with `template`'s dtype, shape and strides at byte `offset` (the ops'
        fast paths: the view a planned call binds, made without re-deriving it)."""
        arr = DeviceArray.__new__(DeviceArray)
        arr.runtime, arr.storage, arr.dtype, arr.shape = self.runtime, self.storage, template.dtype, template.shape
        arr.layout = Layout(offset, template.layout.strides)
        arr.base, arr.format, arr.size, arr.contiguous = self if self.base is None else self.base, template.format, \
            template.size, template.contiguous
        arr._signature = None
        return arr

    def parked(self) -> DeviceArray:
        """This view over a WeakStorage of its storage: what a planned call keeps of a caller's array between calls,
        so that an array the caller drops is freed at once."""
        if type(self.storage) is WeakStorage:
            return self
        arr = self.like(self, self.layout.offset)
        arr.storage, arr.base = WeakStorage(self.storage), None  # type: ignore[assignment]
        return arr

    def same_place(self, other: DeviceArray) -> bool:
        """Whether both views start at one byte of one storage (a parked view counts as its storage's)."""
        return real_storage(self.storage) is real_storage(other.storage) and self.layout.offset == \
            other.layout.offset

    # what it is --------------------------------------------------------------------------------------------------
    @property
    def device(self):
        """"ref" or the Vulkan device number."""
        return self.runtime.key

    @property
    def executor(self) -> Executor:
        return self.runtime.executor

    @property
    def buffer(self):
        """The storage's buffer (None once released)."""
        return self.storage.buffer

    @property
    def offset(self) -> int:
        """Byte offset of the first element in the storage."""
        return self.layout.offset

    @property
    def strides(self) -> tuple[int, ...]:
        return self.layout.strides

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """The elements' bytes (a block format's: its rows' blocks)."""
        if self.format is not None:
            if self.ndim != 2:
                return self.storage.nbytes
            rows, row_bytes = (self.shape[0], self.strides[0]) if self.strides[1] == 1 else \
                (self.shape[1], self.strides[1])
            return rows * row_bytes
        return self.size * self.dtype.itemsize

    @property
    def released(self) -> bool:
        return self.storage.buffer is None

    def _require_live(self, what: str):
        if self.storage.buffer is None:
            raise ReleasedError(f"{what}: the device array was released ({self._describe()}; by release() of it "
                                "or of the array it is a view of)")
        return self.storage.buffer

    def extent(self) -> tuple[int, int]:
        """The byte range [start, end) of the storage that the elements span."""
        if self.size == 0:
            return self.offset, self.offset
        if self.format is not None:  # whole rows of blocks
            return self.offset, self.offset + self.nbytes
        low = self.offset + sum(st * (n - 1) for st, n in zip(self.layout.strides, self.shape) if st < 0)
        high = self.offset + sum(st * (n - 1) for st, n in zip(self.layout.strides, self.shape) if st > 0)
        return low, high + self.dtype.itemsize

    def overlaps(self, other: DeviceArray) -> bool:
        """Whether the two arrays' byte ranges in one storage overlap (disjoint views of one buffer do not)."""
        if self.storage is not other.storage:
            return False
        (a0, a1), (b0, b1) = self.extent(), other.extent()
        return a0 < b1 and b0 < a1

    # host access -------------------------------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A NumPy copy of the contents (waits for the queued work that writes them)."""
        buffer = self._require_live("numpy()")
        if self.format is not None:
            raise ArgumentError(f"a {self.format} DeviceArray holds blocks, not {self.dtype} elements: read it as "
                                "blocks with .view(np.uint8).numpy() or dequantize it")
        if self.size == 0:  # an empty view may start at its buffer's end: nothing to read
            return np.zeros(self.shape, self.dtype)
        start, end = self.extent()
        raw = self.runtime.download(buffer, start, end - start)
        if self.contiguous:  # download's array is new: no second copy
            return raw.view(self.dtype).reshape(self.shape) if raw.size else np.zeros(self.shape, self.dtype)
        flat = raw.view(self.dtype) if raw.nbytes % self.dtype.itemsize == 0 else raw[: raw.nbytes - raw.nbytes %
                                                                                      self.dtype.itemsize].view(
            self.dtype)
        strided = np.lib.stride_tricks.as_strided(flat[(self.offset - start) // self.dtype.itemsize:], self.shape,
                                                  self.layout.strides)
        return np.array(strided)

    def numpy_later(self) -> Callable[[], np.ndarray]:
        """A read of the contents queued now (a contiguous array): calling the result waits for the work queued
        before this call only, not for work queued after it, and returns the NumPy copy."""
        buffer = self._require_live("numpy_later()")
        if self.format is not None or not self.contiguous:
            raise ArgumentError(f"numpy_later() reads contiguous arrays of elements, not {self._describe()}: use "
                                "numpy()")
        dtype, shape = self.dtype, self.shape
        if self.size == 0:
            return lambda: np.zeros(shape, dtype)
        read = self.runtime.read_queued(buffer, self.offset, self.nbytes)
        return lambda: read().view(dtype).reshape(shape)

    def write(self, array) -> None:
        """Overwrite the contents with `array` of the same dtype: of this shape, of a shape that broadcasts to it
        (NumPy's assignment), or flat (1-D, the elements in C order). Copied now: the caller may reuse `array` at
        once. Queued after the work that uses the range."""
        buffer = self._require_live("write()")
        array = np.asarray(array)
        if is_masked(array):
            raise ArgumentError("write() takes a plain array, not a masked array (its mask would be dropped)")
        if array.dtype != self.dtype:
            raise ArgumentError(f"a device array of {self.dtype} cannot take {array.dtype} elements")
        if array.shape != self.shape and not (array.ndim == 1 and array.size == self.size):
            try:
                array = np.broadcast_to(array, self.shape)
            except ValueError:
                raise ArgumentError(f"write(): an array of shape {array.shape} does not fit a device array of shape "
                                    f"{self.shape} (give its shape, one that broadcasts to it, or its {self.size} "
                                    "elements flat)") from None
        if not self.contiguous:
            raise ArgumentError(f"write() into a strided view ({self._describe()}) is not supported: write the "
                                "array it views")
        if self.size == 0:
            return
        self.runtime.upload(buffer, self.offset, np.ascontiguousarray(array))

    def copy_from(self, src: DeviceArray) -> None:
        """A queued device-to-device copy of `src`'s bytes (a contiguous array of this device, this one's nbytes)
        into this contiguous array: the ops' result computed into scratch, then copied into out."""
        self.runtime.copy(src._require_live("copy_from()"), src.offset, self._require_live("copy_from()"),
                          self.offset, self.nbytes)

    def release(self) -> None:
        """Free the storage (safe twice): this array and every view of its storage are unusable afterwards. The
        free waits for the queued work that uses it."""
        self.storage.release()

    # views -------------------------------------------------------------------------------------------------------
    def _view(self, shape, strides, offset=None, dtype=None, contiguous: bool | None = None) -> DeviceArray:
        """A view of the storage (shape and strides are tuples of ints; made without DeviceArray's checks: a call's
        host path makes several). `contiguous`: True when the caller made C-order strides (not checked again)."""
        if self.storage.buffer is None:
            self._require_live("a view")
        arr = DeviceArray.__new__(DeviceArray)
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        arr.runtime, arr.storage, arr.dtype, arr.shape = self.runtime, self.storage, dtype, shape
        arr.layout = Layout(self.layout.offset if offset is None else offset, strides)
        base = self.base
        arr.base, arr.format, arr._signature = self if base is None else base, self.format, None
        arr.size = size = math.prod(shape)
        if self.format is not None and contiguous is None:
            arr.contiguous = _rows_in_order(shape, strides)
        else:
            arr.contiguous = contiguous or size <= 1 or _c_ordered(shape, strides, dtype.itemsize)
        return arr

    def flat(self, dtype=None) -> DeviceArray:
        """The elements' bytes as a 1-D contiguous view of `dtype` (default: this dtype): reshape(-1).view(dtype)
        in one step, for a contiguous array whose bytes are a whole number of `dtype` elements (the ops' launch
        path)."""
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        if not self.contiguous or self.format is not None or (self.size * self.dtype.itemsize) % dtype.itemsize:
            return self.reshape(-1).view(dtype)
        arr = self._view(((self.size * self.dtype.itemsize) // dtype.itemsize,), (dtype.itemsize,), dtype=dtype,
                         contiguous=True)
        return arr

    def swapaxes(self, axis1: int, axis2: int) -> DeviceArray:
        """The array with two axes swapped: a layout, no copy (as NumPy's)."""
        n = self.ndim
        a, b = axis1 % n if n else 0, axis2 % n if n else 0
        if not (-n <= axis1 < n and -n <= axis2 < n):
            raise ArgumentError(f"swapaxes({axis1}, {axis2}) of a {n}-D DeviceArray")
        shape, strides = list(self.shape), list(self.layout.strides)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return self._view(tuple(shape), tuple(strides))

    @property
    def T(self) -> DeviceArray:  # noqa: N802 - NumPy's name
        """The transpose (all axes reversed, as NumPy's `.T`): a layout, no copy."""
        return self._view(self.shape[::-1], self.layout.strides[::-1])

    @property
    def mT(self) -> DeviceArray:  # noqa: N802 - NumPy's name
        """The last two axes swapped (a batch of transposed matrices): a layout, no copy."""
        if self.ndim < 2:
            raise ArgumentError(f"mT needs 2 or more dimensions, not {self.ndim}")
        return self.swapaxes(-1, -2)

    def reshape(self, *shape) -> DeviceArray:
        """A contiguous array with another shape (one -1 allowed): a view; a strided array cannot be reshaped."""
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        if self.format is not None and shape != (-1,):  # rows of blocks (-1: their bytes, view(dtype)'s first step)
            if tuple(int(s) for s in shape) != self.shape:
                raise ArgumentError(f"reshape{tuple(shape)} of a {self.format} DeviceArray of shape {self.shape}: "
                                    "its rows are blocks of K weights; reshape the QuantizedArray's rows on the host")
            return self._view(self.shape, self.layout.strides)
        if shape == (-1,) and self.contiguous:  # the launch paths' flat view
            return self._view((self.size,), (self.dtype.itemsize,), contiguous=True)
        shape = tuple(int(s) for s in shape)
        if shape.count(-1) > 1 or any(s < -1 for s in shape):
            raise ArgumentError(f"reshape{shape}: at most one -1 and no other negative size")
        known = math.prod(s for s in shape if s != -1)
        if -1 in shape:
            if known == 0 or self.size % known:
                raise ArgumentError(f"cannot reshape {self.shape} into {shape}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ArgumentError(f"cannot reshape an array of {self.size} elements ({self.shape}) into {shape}")
        if not self.contiguous:
            raise ArgumentError(f"reshape of a strided view ({self._describe()}) would need a copy: DeviceArray "
                                "views never copy")
        return self._view(shape, _contiguous_strides(shape, self.dtype.itemsize), contiguous=True)

    def view(self, dtype) -> DeviceArray:
        """The same bytes seen as another dtype (the last dimension rescaled, as NumPy's `view`)."""
        dtype = np.dtype(dtype)
        if not self.contiguous:
            raise ArgumentError("view(dtype) of a strided view: only a contiguous DeviceArray can be reinterpreted")
        nbytes = self.nbytes
        if not self.shape and self.format is None:  # 0-d: NumPy's rule
            if dtype.itemsize != self.dtype.itemsize:
                raise ArgumentError(f"view({dtype}) of a 0-d DeviceArray of {self.dtype}: only a dtype of the same "
                                    "size (as NumPy's view)")
            return self._view((), (), dtype=dtype, contiguous=True)
        last = self.shape[-1] * self.dtype.itemsize if self.shape else nbytes
        if last % dtype.itemsize:
            raise ArgumentError(f"view({dtype}): the last dimension's {last} bytes are not a multiple of "
                                f"{dtype.itemsize}")
        shape = (*self.shape[:-1], last // dtype.itemsize) if self.shape else (nbytes // dtype.itemsize,)
        if self.format is not None and dtype == np.uint8:
            shape = (nbytes,)
        arr = self._view(shape, _contiguous_strides(shape, dtype.itemsize), dtype=dtype, contiguous=True)
        arr.format = None
        return arr

    def reinterpret(self, dtype) -> DeviceArray:
        """The elements' bytes as a flat array of `dtype`, the count rounded down (a kernel's vector binding of a
        buffer, 16-byte elements over f16 data); a contiguous array only."""
        dtype = np.dtype(dtype)
        if not self.contiguous:
            raise ArgumentError("reinterpret() of a strided view: only a contiguous DeviceArray can be")
        count = self.nbytes // dtype.itemsize
        arr = self._view((count,), (dtype.itemsize,), dtype=dtype, contiguous=True)
        arr.format = None  # a block format's bytes seen as plain words
        return arr

    def __getitem__(self, key) -> DeviceArray:
        """Basic indexing: ints and slices (step 1 or any positive step), `...`; a view, never a copy."""
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is None for k in key):
            raise ArgumentError("DeviceArray indexing does not take None (np.newaxis): add the axis with reshape, "
                                "a view of a contiguous array")
        if any(k is Ellipsis for k in key):
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (self.ndim - len(key) + 1) + key[at + 1:]
        if len(key) > self.ndim:
            raise ArgumentError(f"too many indices ({len(key)}) for a {self.ndim}-D DeviceArray")
        if self.format is not None:
            self._check_row_slice(key)
        offset = self.offset
        shape, strides = [], []
        for axis, k in enumerate(key):
            n, st = self.shape[axis], self.layout.strides[axis]
            if isinstance(k, bool) or not isinstance(k, int | np.integer | slice):
                raise ArgumentError(f"DeviceArray indexing takes ints and slices (basic indexing), not "
                                    f"{type(k).__name__}: copy to NumPy for fancy indexing")
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step < 1:
                    raise ArgumentError("DeviceArray slices take a positive step")
                count = max(0, -(-(stop - start) // step))
                offset += start * st if count else 0
                shape.append(count)
                strides.append(st * step)
            else:
                i = int(k)
                if not -n <= i < n:
                    raise ArgumentError(f"index {i} is out of range for axis {axis} of size {n}")
                offset += (i % n) * st
        shape += self.shape[len(key):]
        strides += self.layout.strides[len(key):]
        return self._view(tuple(shape), tuple(strides), offset=offset)

    def _check_row_slice(self, key: tuple) -> None:
        """A block-format array is sliced by whole rows only: d[a:b] (step 1) of its (N, K) layout."""
        whole = slice(None)
        rows = key[0] if key else whole
        if not (self.contiguous and isinstance(rows, slice) and rows.step in (None, 1) and
                all(k == whole for k in key[1:])):
            raise ArgumentError(f"a {self.format} DeviceArray {self.shape} is sliced by whole rows, d[a:b] of its "
                                f"(N, K) layout, not {key!r}: its K axis is blocks, not elements")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def _describe(self) -> str:
        what = f"{self.format} blocks" if self.format else str(self.dtype)
        view = "" if self.base is None else ", a view"
        return f"device={self.device!r}, {what}, shape={self.shape}{view}"

    def __repr__(self) -> str:
        return f"DeviceArray({self._describe()})"


def signature_of(value) -> tuple | None:
    """A DeviceArray's signature (DeviceArray.signature), None for None; anything else raises TypeError (the ops'
    fast paths then take the checked path)."""
    if value is None:
        return None
    if type(value) is not DeviceArray:
        raise TypeError(f"{type(value).__name__} is no DeviceArray")
    return value.signature


def numpy_dtype(t) -> np.dtype:
    """The NumPy dtype of a buffer's elements (a vector buffer takes a flat array of its component)."""
    return getattr(t, "component", t).dtype


class PreparedLaunch:
    """A kernel bound to its arguments on one device: `dispatch`, `read`, `write`, `time`, `close`.

    Arrays the launch copied in are released by `close` (also on `with` exit); device arrays are the caller's."""

    def __init__(self, rt: DeviceRuntime, kernel: CheckedKernel, spec: Specialization, grid: tuple[int, int, int],
                 bound: dict[str, Bound], push: bytes | None, owned: list, arrays: dict[str, tuple[Any, Any]],
                 staged: dict | None = None):
        self.runtime, self.kernel, self.spec, self.grid = rt, kernel, spec, grid
        self.bound, self.push = bound, push
        self._owned = owned
        self._arrays = arrays  # parameter name -> (the caller's value, the DeviceArray it is bound as)
        self._staged: dict[str, list] = staged or {}  # name -> [view, its copy, written]: an offset the device
        # cannot bind goes through a queued copy
        self._bound_list = list(bound.values())
        self.label = getattr(spec, "name", "") or "launch"
        self._planned: PlannedLaunch | None = None  # made on the first dispatch, dropped by rebind
        self._plans: dict = {}  # the PlannedLaunches of the bindings seen, by buffer and offset
        self._by_place: dict = {}  # dispatch_kept: the PlannedLaunch of each set of argument places seen
        self._live = [held for _, held in arrays.values() if isinstance(held, DeviceArray)]

    @property
    def executor(self) -> Executor:
        return self.runtime.executor

    @property
    def on_reference(self) -> bool:
        return self.runtime.is_reference

    @property
    def buffers(self) -> dict[BindingKey, Any]:
        return {(b.set, b.binding) if b.set else b.binding: b.buffer for b in self._bound_list}

    def dispatch(self) -> None:
        """Queue one run (checked in `prepare`)."""
        rt = self.runtime
        copies = _by_copy(self._staged) if self._staged else ()
        for view, copy, _, _ in copies:  # written-only views too: the elements a kernel leaves keep their values
            rt.copy(view.buffer, view.offset, copy.buffer, 0, min(view.nbytes, copy.nbytes))
        planned = self._planned
        if planned is None:
            for b in self._bound_list:
                if b.buffer.closed if hasattr(b.buffer, "closed") else b.buffer.released:
                    raise ReleasedError(f"{self.label}: a buffer of this launch was released")
            key = tuple((id(b.buffer), b.offset) for b in self._bound_list)  # a loop over a few weights: one each
            planned = self._plans.get(key)
            if planned is None:
                if len(self._plans) >= 64:
                    self._plans.clear()
                planned = self._plans[key] = rt.plan_launch(self.kernel, self.grid, self._bound_list, self.push,
                                                            self.label)
            self._planned = planned
        for arr in self._live:
            if arr.storage.buffer is None:
                raise ReleasedError(f"{self.label}: an argument (the device array {arr._describe()}) was released")
        rt.launch_planned(planned)
        for view, copy, _, writes in copies:
            if writes:
                rt.copy(copy.buffer, 0, view.buffer, view.offset, min(view.nbytes, copy.nbytes))

    def rebind(self, name: str, value: DeviceArray) -> None:
        """Bind parameter `name` to another DeviceArray of the same dtype and size (a planned call's next operands)."""
        old = self.bound[name]
        if value.nbytes < old.nbytes:
            raise ArgumentError(f"{name}: a device array of {value.nbytes} bytes cannot take the place of "
                                f"{old.nbytes}")
        if name in self._staged or not _bindable(self.runtime, value):
            if name not in self._staged:
                self._staged[name] = [value, None, old.reads, old.writes]
                self._share_copy(name, old.nbytes)
            self._staged[name][0] = value
        else:
            bound = _bound_array(self.runtime, name, value, old.nbytes, old.reads, old.writes)
            self.bound[name] = Bound(old.set, old.binding, bound.buffer, bound.offset, old.nbytes, old.reads,
                                     old.writes)
        self._bound_list = list(self.bound.values())
        self._arrays[name] = (value, value)
        self._planned = None
        self._live = [held for _, held in self._arrays.values() if isinstance(held, DeviceArray)]

    def _share_copy(self, name: str, nbytes: int) -> None:
        """Bind staged parameter `name` to the copy of its view that another parameter binds (one copy a view:
        see prepare), else to a new one; a copy too small for it is replaced for every parameter that binds it."""
        key = _view_key(self._staged[name][0])
        sharing = [n for n, entry in self._staged.items() if entry[1] is not None and _view_key(entry[0]) == key]
        copy = self._staged[sharing[0]][1] if sharing else None
        if copy is None or copy.nbytes < nbytes:
            size = max(nbytes, 0 if copy is None else copy.nbytes)
            copy = _owned_array(self.runtime, size, np.uint8, (size,), self._owned)
        for n in (*sharing, name):
            self._staged[n][1] = copy
            old = self.bound[n]
            bound = _bound_array(self.runtime, n, copy, old.nbytes, old.reads, old.writes)
            self.bound[n] = Bound(old.set, old.binding, bound.buffer, 0, old.nbytes, old.reads, old.writes)

    def rebind_moved(self, values, aliases: Mapping[str, str] | None = None) -> None:
        """Rebind each (parameter, DeviceArray) whose array is not where the launch's binding is (the same array
        again costs a comparison), with the parameters aliased to it (aliases of aliases too: w4 -> w -> x)."""
        for name, value in values:
            if not self._arrays[name][1].same_place(value):
                self.rebind(name, value)
                for alias in aliases or {}:
                    if _alias_root(aliases or {}, alias) == name:
                        self.rebind(alias, value)

    def keep_plan(self, places: tuple) -> None:
        """Remember the planned launch of the last dispatch under the arguments' places (dispatch_kept: a later
        launch of arrays at the same places queues it without rebinding; at most KEPT_PLANS kept)."""
        if self._planned is None or self._staged:
            return
        if len(self._by_place) >= KEPT_PLANS:
            self._by_place.clear()
        self._by_place[places] = self._planned

    def park(self) -> None:
        """Keep the caller's device arrays only weakly until the next call (an ops plan, a kernel's kept launch):
        a parked array the caller drops is freed at once; a dispatch before a rebind refuses a dead one. Arrays the
        launch made, and views staged through copies, stay as they are."""
        owned = {id(a) for a in self._owned}
        for name, (value, held) in self._arrays.items():
            if isinstance(held, DeviceArray) and id(held) not in owned and name not in self._staged:
                parked = held.parked()
                self._arrays[name] = (parked if value is held else value, parked)
        self._live = [held for _, held in self._arrays.values() if isinstance(held, DeviceArray)]

    def buffer(self, name: str):
        return self._arrays[name][1].buffer

    def array(self, name: str) -> DeviceArray:
        """The DeviceArray parameter `name` is bound to (the caller's, or the copy of its NumPy array)."""
        return self._arrays[name][1]

    def read(self, name: str, dtype=None, shape=None) -> np.ndarray:
        """The contents of parameter `name`'s buffer, as the caller's array's dtype and shape by default (waits for
        the queued work that writes it)."""
        value, held = self._arrays[name]
        dtype = np.dtype(value.dtype if dtype is None else dtype)
        shape = tuple(value.shape if shape is None else shape)
        nbytes = math.prod(shape) * dtype.itemsize
        raw = self.runtime.download(held.buffer, held.offset, nbytes)
        return raw.view(dtype).reshape(shape)

    def write(self, name: str, array: np.ndarray) -> None:
        held = self._arrays[name][1]
        self.runtime.upload(held.buffer, held.offset, np.ascontiguousarray(array))

    def outputs(self) -> dict[str, np.ndarray]:
        """{name: contents} of every NumPy array the kernel may write, read back."""
        params = {p.name: p for p in self.spec.buffers}
        return {name: self.read(name) for name, (value, _) in self._arrays.items()
                if isinstance(value, np.ndarray) and params[name].access != Access.readonly.value}

    def write_back(self) -> dict[str, np.ndarray]:
        """`outputs()`, each also copied into the caller's array it was bound from (what `kernel[grid](...)` does)."""
        back = self.outputs()
        for name, contents in back.items():
            np.copyto(self._arrays[name][0], contents)
        return back

    def timed_run(self) -> float:
        """One run, timed (GPU timestamps on Vulkan, the wall clock on the reference executor)."""
        return self.runtime.time(self.dispatch, 1, warmup=0, warmup_s=0.0)[0]

    def time(self, repeat: int = 20, warmup: int = 1, warmup_s: float | None = None) -> list[float]:
        """`repeat` timed runs (seconds each) after `warmup` runs and, on a GPU, at least `warmup_s` seconds of
        back-to-back runs (default WARMUP_S): a GPU that idled a moment runs at its idle clock (the H200: 345 MHz
        against 1980) until sustained work raises it, so a count of warm-up runs alone can measure the idle clock."""
        if repeat < 1 or warmup < 0:
            raise LaunchError(f"time() needs repeat >= 1 and warmup >= 0, not repeat={repeat}, warmup={warmup}")
        if warmup_s is None:
            warmup_s = 0.0 if self.on_reference else WARMUP_S
        return self.runtime.time(self.dispatch, repeat, warmup=warmup, warmup_s=warmup_s)

    def close(self) -> None:
        """Release the buffers the launch made (safe twice; the frees wait for the queued work using them)."""
        owned, self._owned = self._owned, []
        for arr in owned:
            arr.release()

    def __enter__(self) -> PreparedLaunch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare(executor: Executor | DeviceRuntime, kernel: CheckedKernel, spec: Specialization,
            grid: tuple[int, int, int], arguments: Mapping[str, Any], *,
            aliases: Mapping[str, str] | None = None) -> PreparedLaunch:
    """Bind `arguments` ({parameter name: value}) to `spec`'s parameters on `executor` (or a device runtime), and
    run the launch checks once.

    `aliases` ({parameter: other parameter}) binds a parameter to another's buffer (the GEMM's vector views of
    A and B bind A's and B's buffers)."""
    rt = executor if isinstance(executor, DeviceRuntime) else runtime_of(executor)
    aliases = dict(aliases or {})
    bound: dict[str, Bound] = {}
    owned: list[DeviceArray] = []
    staged: dict[str, list] = {}
    arrays: dict[str, tuple[Any, Any]] = {}
    try:
        helds = {p.name: _argument_array(rt, p, arguments.get(p.name), owned) for p in spec.buffers
                 if p.name not in aliases}
        needed: dict = {}  # a view the device cannot bind -> the bytes of its copy (the most any parameter binds)
        for held in helds.values():
            if not _bindable(rt, held):
                needed[_view_key(held)] = max(needed.get(_view_key(held), 0), held.nbytes)
        copies: dict = {}  # one copy a view, whichever parameters bind it (a GEMM's d and its unused part):
        # copies of their own would each be copied back, the last over the results of the first
        for p in spec.buffers:
            if p.name in aliases:
                continue
            value, held = arguments.get(p.name), helds[p.name]
            reads = p.access != Access.writeonly.value
            writes = p.access != Access.readonly.value
            bind = held
            if not _bindable(rt, held):  # a view at an offset the device cannot bind: through a queued copy
                key = _view_key(held)
                if key not in copies:
                    copies[key] = _owned_array(rt, needed[key], np.uint8, (needed[key],), owned)
                bind = copies[key]
                staged[p.name] = [held, bind, reads, writes]
            arrays[p.name] = (value, held)
            b = _bound_array(rt, p.name, bind, held.nbytes, reads, writes)
            bound[p.name] = Bound(0, _binding(p), b.buffer, b.offset, b.nbytes, reads, writes)
        for p in spec.buffers:
            if p.name in aliases:
                arrays[p.name] = arrays[aliases[p.name]]
                src = bound[aliases[p.name]]
                bound[p.name] = Bound(0, _binding(p), src.buffer, src.offset, src.nbytes, src.reads, src.writes)
        push = pack_push_constants(kernel.interface, [_scalar(p, arguments.get(p.name)) for p in spec.scalars],
                                   names=[p.name for p in spec.scalars]) if spec.scalars else None
        iface = kernel.interface
        check_bound(iface, [b.binding for b in bound.values()])
        check_buffer_sizes(iface, {b.binding: b.nbytes for b in bound.values()})
        check_push_constants(iface, push)
        dims = check_grid(grid, rt.executor.max_workgroup_count)
    except BaseException:
        for arr in owned:
            arr.release()
        raise
    return PreparedLaunch(rt, kernel, spec, dims, bound, push, owned, arrays, staged)


@dataclass(frozen=True)
class _Binding:
    buffer: Any
    offset: int
    nbytes: int


def _bound_array(rt: DeviceRuntime, name: str, arr: DeviceArray, nbytes: int, reads: bool, writes: bool) -> _Binding:
    if arr.runtime is not rt:
        raise ArgumentError(f"{name}: a device array on {arr.device!r} cannot bind to a launch on {rt.name}")
    return _Binding(arr._require_live(name), arr.offset, nbytes)


def _bindable(rt: DeviceRuntime, arr: DeviceArray) -> bool:
    return arr.offset % rt.storage_alignment == 0


def _view_key(arr: DeviceArray) -> tuple:
    """Where a view starts: its storage and byte offset (what parameters staged through one copy share)."""
    return id(arr.storage), arr.offset


def _by_copy(staged: dict) -> list:
    """The staged views once a copy: [view, copy, read by any, written by any], the view the largest of those
    that share the copy (they start at one offset)."""
    merged: dict = {}
    for view, copy, reads, writes in staged.values():
        entry = merged.get(id(copy))
        if entry is None:
            merged[id(copy)] = [view, copy, reads, writes]
        else:
            if view.nbytes > entry[0].nbytes:
                entry[0] = view
            entry[2] |= reads
            entry[3] |= writes
    return list(merged.values())


def _owned_array(rt: DeviceRuntime, nbytes: int, dtype, shape, owned: list) -> DeviceArray:
    arr = DeviceArray(rt.key, rt.executor, rt.alloc(nbytes), dtype, shape)
    owned.append(arr)
    return arr


def _binding(p: KernelParam) -> int:
    if p.binding is None:
        raise ArgumentError(f"{p.name}: a buffer parameter without a binding")
    return p.binding


def _argument_array(rt: DeviceRuntime, p: KernelParam, value, owned: list) -> DeviceArray:
    """The DeviceArray a buffer parameter binds: a DeviceArray as it is (checked), a NumPy array copied in."""
    want = numpy_dtype(p.dtype)
    if isinstance(value, DeviceArray):
        value._require_live(p.name)
        if value.runtime is not rt:
            raise ArgumentError(f"{p.name}: a device array on {value.device!r} cannot bind to a launch on "
                                f"{rt.name}")
        if value.format is None and value.dtype != want:
            raise ArgumentError(f"{p.name}: a device array of {value.dtype}, the kernel takes {p.dtype}")
        if not value.contiguous:
            raise ArgumentError(f"{p.name}: a strided view ({value._describe()}) cannot bind to a kernel buffer "
                                "(a kernel reads its buffer in order); the ops take transposes as layouts")
        return value
    if is_masked(value):
        raise ArgumentError(f"{p.name}: a masked array: its mask would be dropped; pass .filled(value) or .data")
    if not isinstance(value, np.ndarray):
        raise ArgumentError(f"{p.name}: expected a NumPy array (or DeviceArray) of {p.dtype}, "
                            f"got {type(value).__name__}")
    if value.dtype != want:
        raise ArgumentError(f"{p.name}: an array of {value.dtype}, the kernel takes {p.dtype} ({want}); "
                            "convert it with .astype()")
    if p.access != Access.readonly.value and not value.flags.writeable:
        raise ArgumentError(f"{p.name}: the kernel writes this buffer, but the array is read-only "
                            "(pass a writeable array, e.g. a copy)")
    data = np.ascontiguousarray(value)
    if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and not np.little_endian):
        raise ArgumentError(f"{p.name}: a big-endian array; convert it with .astype('<{data.dtype.str[1:]}')")
    arr = _owned_array(rt, data.nbytes, data.dtype, data.shape, owned)
    rt.upload(arr.buffer, 0, data)
    return arr


def _scalar(p: KernelParam, value):
    if isinstance(value, np.ndarray) or isinstance(value, bool | np.bool_) or \
            not isinstance(value, int | float | np.number):
        raise ArgumentError(f"{p.name}: expected a {p.dtype} number, got {type(value).__name__}")
    return value


KEPT_LAUNCHES = 256  # launches of device arrays an ops module keeps per executor, by signature
KEPT_PLANS = 256  # planned launches a kept launch keeps, by its arguments' places (a model's layers each have theirs)


def kept_key(spec: Specialization, grid: tuple, arguments: Mapping[str, Any], aliases: Mapping | None):
    """What a launch of device arrays and scalars depends on (None when an argument is anything else, a NumPy array
    say): the specialization, the grid, each array's signature, each scalar's type and value, the aliases."""
    parts: list = [id(spec), grid, tuple(aliases.items()) if aliases else ()]
    for name, value in arguments.items():  # in the caller's order: another order is another key, never a wrong one
        kind = type(value)
        if kind is DeviceArray:
            parts.append((name, value.signature))
        elif kind in _SCALARS or isinstance(value, np.bool_ | np.integer | np.floating):
            parts.append((name, kind, value))
        else:
            return None
    return tuple(parts)


_SCALARS = frozenset((bool, int, float))


def dispatch_kept(kept: dict, executor, kernel: CheckedKernel, spec: Specialization, grid: tuple[int, int, int],
                  arguments: Mapping[str, Any], aliases: Mapping[str, str] | None = None):
    """Queue one launch as `prepare(...).dispatch()` would, keeping the PreparedLaunch in `kept` (the caller's,
    by kept_key; at most KEPT_LAUNCHES) when its arguments are device arrays and scalars: a later launch of that
    signature rebinds its arrays (and the parameters aliased to them) and queues, without the checks `prepare`
    runs (the signature fixes their outcome). The caller's arrays are held weakly between launches (park).
    Returns the planned launch queued (`launch_planned` repeats it for arrays at the same places), or None where
    the launch is not kept (NumPy arguments, staged views)."""
    key = kept_key(spec, grid, arguments, aliases)
    found = kept.get(key) if key is not None else None
    if found is not None:
        places = _places(arguments)
        if places is not None:
            planned = found._by_place.get(places)
            if planned is not None and not found._staged:  # these buffers at these offsets: planned already
                found.runtime.launch_planned(planned)
                return planned
            with found.runtime.lock:  # kept launches are shared by the calls of a signature: one thread at a time
                found.rebind_moved(((n, v) for n, v in arguments.items() if type(v) is DeviceArray), aliases)
                found.dispatch()
                found.park()
                found.keep_plan(places)
                return None if found._staged else found._planned
    prepared = prepare(executor, kernel, spec, grid, arguments, aliases=aliases)
    if key is None or prepared._owned:  # NumPy arguments (copied in) or staged views: once
        with prepared:
            prepared.dispatch()
        return None
    with prepared.runtime.lock:  # kept from here on: another thread's call of the signature waits for this one
        old = kept.pop(key, None)
        if old is not None:
            old.close()
        kept[key] = prepared
        while len(kept) > KEPT_LAUNCHES:
            kept.pop(next(iter(kept))).close()
        prepared.dispatch()
        prepared.park()
        places = _places(arguments)
        if places is not None:
            prepared.keep_plan(places)
        return None if prepared._staged else prepared._planned


def places_of(arrays) -> tuple | None:
    """Where each DeviceArray of `arrays` (a sequence; None entries kept as None) lies: (buffer id, byte offset);
    None when one was released. The key of a planned call's launches at those places (`planned_of`): the plans
    hold the buffers they bind, so the ids stay unique while they live."""
    places: list[tuple[int, int] | None] = []
    for x in arrays:
        if x is None:
            places.append(None)
            continue
        buffer = x.storage.buffer
        if buffer is None:
            return None
        places.append((id(buffer), x.layout.offset))
    return tuple(places)


def served_places(inputs: tuple, out) -> tuple | None:
    """`places_of((*inputs, out))` when a planned call's fast path may take these DeviceArrays (`fast_path_serves`),
    else None; `out` None: the inputs' places alone (the caller adds its new result's)."""
    places = places_of(inputs)
    if places is None or out is None:
        return places
    storage = out.storage
    if storage.buffer is None or any(x is not None and x.storage is storage for x in inputs):
        return None
    return (*places, (id(storage.buffer), out.layout.offset))


def fast_path_serves(inputs: tuple, out) -> bool:
    """Whether a planned call's fast path may take these DeviceArrays (None entries absent): none released, and
    `out` sharing no buffer with an input (the checked path stages that case, or refuses a released one)."""
    for x in (*inputs, out):
        if x is not None and x.storage.buffer is None:
            return False
    return out is None or all(x is None or out.storage is not x.storage for x in inputs)


def planned_of(launches) -> tuple | None:
    """The planned launches of PreparedLaunches as their last dispatch queued them (None when one has none or
    stages a view through a copy): queued again with `launch_planned`, they repeat that dispatch."""
    found = []
    for launch in launches:
        if launch._planned is None or launch._staged:
            return None
        found.append(launch._planned)
    return tuple(found)


def _places(arguments: Mapping[str, Any]) -> tuple | None:
    """Where each device array argument lies, (buffer id, byte offset) by parameter name (None when one was
    released: the checked path raises). A kept plan binding these places holds their buffers, so the ids stay
    unique while it lives."""
    places = []
    for name, value in arguments.items():
        if type(value) is DeviceArray:
            buffer = value.storage.buffer
            if buffer is None:
                return None
            places.append((name, id(buffer), value.layout.offset))
    return tuple(places)


def _alias_root(aliases: Mapping[str, str], name: str) -> str:
    """The parameter whose buffer an aliased parameter binds, through chains of aliases."""
    seen = {name}
    while name in aliases and aliases[name] not in seen:
        name = aliases[name]
        seen.add(name)
    return name


def grid_of(grid, constexprs: Mapping | None = None) -> tuple[int, int, int]:
    """A launch grid from an int, a 1-3 tuple of ints, or a callable of the constexprs returning one of those."""
    if callable(grid):
        grid = grid(dict(constexprs or {}))
    dims: Sequence = (grid,) if isinstance(grid, int | np.integer) else grid
    if not isinstance(dims, tuple | list) or not 1 <= len(dims) <= 3 or any(
            isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1 for d in dims):
        raise ArgumentError(f"a grid is 1 to 3 positive ints (workgroups), not {grid!r}")
    return tuple(int(d) for d in (*dims, *(1,) * (3 - len(dims))))  # type: ignore[return-value]


__all__ = ["KEPT_PLANS", "WARMUP_S", "ArgumentError", "DeviceArray", "Layout", "PreparedLaunch", "ReleasedError",
           "Storage", "WeakStorage", "dispatch_kept", "fast_path_serves", "grid_of", "kept_key", "numpy_dtype",
           "places_of", "planned_of",
           "prepare", "real_storage", "served_places", "signature_of"]
