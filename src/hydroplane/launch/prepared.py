"""One path from Python arguments to a dispatch: bind, pack push constants, dispatch, time, read back, release.

    prepared = prepare(executor, kernel, spec, grid, {"a": a, "b": b, "d": d, "n": 1000})
    with prepared:
        prepared.dispatch()                 # through the executor's checked dispatch
        d_now = prepared.read("d")          # a fresh ndarray of the binding's contents
        seconds = prepared.time(repeat=20)  # GPU timestamps after a warm-up (wall time on the reference executor)

Every caller goes through it: `kernel[grid](...)` (launch.jit), the GEMM runner and every op (hydroplane.ops).
Arguments bind by the specialization's parameters (`lang.Specialization.params`): a NumPy array is copied
into a buffer the launch owns and releases; a `DeviceArray` (an array already in one executor's buffer)
binds its buffer as it is; numbers pack into the push-constant block through `checks.pack_push_constants`,
the one packer (the offsets and types come from the compiled module's push-constant block type).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hydroplane import vk
from hydroplane.lang.compiler import KernelParam, Specialization
from hydroplane.lang.core import Access
from hydroplane.launch.checks import LaunchError, pack_push_constants
from hydroplane.launch.executors import BindingKey, CheckedKernel, Executor, VulkanExecutor

WARMUP_S = 0.3  # seconds of back-to-back runs before a GPU timing (a GPU idle for a moment runs at its idle clock)


class ArgumentError(LaunchError):
    """An argument that does not fit the kernel's parameter: wrong type, dtype, device or size."""


@dataclass
class DeviceArray:
    """An array held in one executor's buffer: it binds to launches on that executor without copies.

    `executor` is the executor holding `buffer`; `device` its name for users ("ref" or a Vulkan device number)."""

    device: str | int
    executor: Any
    buffer: Any
    dtype: np.dtype
    shape: tuple

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the contents."""
        return self.executor.read(self.buffer, self.dtype, self.shape)

    def write(self, array) -> None:
        """Overwrite the contents with `array` (same dtype and number of elements)."""
        array = np.ascontiguousarray(array)
        if array.dtype != self.dtype or array.size != self.size:
            raise ArgumentError(f"a device array of {self.size} {self.dtype} cannot take {array.size} {array.dtype}")
        self.executor.write(self.buffer, array)

    def release(self) -> None:
        """Free the buffer now (safe twice); the array is unusable afterwards."""
        if self.buffer is not None:
            self.executor.release(self.buffer)
            self.buffer = None

    def __repr__(self) -> str:
        return f"DeviceArray(device={self.device!r}, dtype={self.dtype}, shape={self.shape})"


def numpy_dtype(t) -> np.dtype:
    """The NumPy dtype of a buffer's elements (a vector buffer takes a flat array of its component)."""
    return getattr(t, "component", t).dtype


class PreparedLaunch:
    """A kernel bound to its arguments on one executor: `dispatch`, `read`, `write`, `time`, `close`.

    Arrays the launch copied in are released by `close` (also on `with` exit); device arrays are the caller's."""

    def __init__(self, executor: Executor, kernel: CheckedKernel, spec: Specialization, grid: tuple[int, int, int],
                 buffers: dict[BindingKey, Any], push: bytes | None, owned: list, arrays: dict[str, tuple[Any, Any]]):
        self.executor, self.kernel, self.spec, self.grid = executor, kernel, spec, grid
        self.buffers, self.push = buffers, push
        self._owned = owned
        self._arrays = arrays  # parameter name -> (the caller's value, its buffer)
        self._recording: Any = None

    @property
    def on_reference(self) -> bool:
        return not isinstance(self.executor, VulkanExecutor)

    def dispatch(self) -> None:
        """One run through the executor's checked dispatch."""
        self.executor.dispatch(self.kernel, self.grid, self.buffers, self.push)

    def buffer(self, name: str):
        return self._arrays[name][1]

    def read(self, name: str, dtype=None, shape=None) -> np.ndarray:
        """The contents of parameter `name`'s buffer, as the caller's array's dtype and shape by default."""
        value, buf = self._arrays[name]
        dtype = value.dtype if dtype is None else dtype
        shape = value.shape if shape is None else shape
        return self.executor.read(buf, dtype, shape)

    def write(self, name: str, array: np.ndarray) -> None:
        self.executor.write(self._arrays[name][1], np.ascontiguousarray(array))

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
        """One run; seconds by GPU timestamps on Vulkan, by the wall clock on the reference executor."""
        if self.on_reference:
            start = time.perf_counter()
            self.dispatch()
            return time.perf_counter() - start
        if self._recording is None:
            assert isinstance(self.executor, VulkanExecutor)
            self._recording = self.executor.device.record(self.kernel.native, self.grid, dict(self.buffers),
                                                          _padded(self.push), timestamps=True)
        self._recording.run()
        return self._recording.device_time_ns() / 1e9

    def time(self, repeat: int = 20, warmup: int = 1, warmup_s: float | None = None) -> list[float]:
        """`repeat` timed runs (seconds each) after `warmup` runs and, on a GPU, at least `warmup_s` seconds of
        back-to-back runs (default WARMUP_S): a GPU that idled a moment runs at its idle clock (the H200: 345 MHz
        against 1980) until sustained work raises it, so a count of warm-up runs alone can measure the idle clock."""
        if repeat < 1 or warmup < 0:
            raise LaunchError(f"time() needs repeat >= 1 and warmup >= 0, not repeat={repeat}, warmup={warmup}")
        if warmup_s is None:
            warmup_s = 0.0 if self.on_reference else WARMUP_S
        vk.warm_up(self.timed_run, warmup, warmup_s)
        return [self.timed_run() for _ in range(repeat)]

    def close(self) -> None:
        """Release the recording and the buffers the launch made (safe twice)."""
        if self._recording is not None:
            self._recording.close()
            self._recording = None
        owned, self._owned = self._owned, []
        for buf in owned:
            self.executor.release(buf)

    def __enter__(self) -> PreparedLaunch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _padded(push: bytes | None) -> bytes | None:
    return None if push is None else push + bytes(-len(push) % 4)


def prepare(executor: Executor, kernel: CheckedKernel, spec: Specialization, grid: tuple[int, int, int],
            arguments: Mapping[str, Any], *, aliases: Mapping[str, str] | None = None) -> PreparedLaunch:
    """Bind `arguments` ({parameter name: value}) to `spec`'s parameters on `executor`.

    `aliases` ({parameter: other parameter}) binds a parameter to another's buffer (the GEMM's vector views of
    A and B bind A's and B's buffers)."""
    aliases = dict(aliases or {})
    buffers: dict[BindingKey, Any] = {}
    owned: list = []
    arrays: dict[str, tuple[Any, Any]] = {}
    try:
        for p in spec.buffers:
            if p.name in aliases:
                continue
            value = arguments.get(p.name)
            buf = _bind_buffer(executor, p, value)
            if not isinstance(value, DeviceArray):
                owned.append(buf)
            arrays[p.name] = (value, buf)
            buffers[_binding(p)] = buf
        for p in spec.buffers:
            if p.name in aliases:
                arrays[p.name] = arrays[aliases[p.name]]
                buffers[_binding(p)] = arrays[p.name][1]
        push = pack_push_constants(kernel.interface, [_scalar(p, arguments.get(p.name)) for p in spec.scalars],
                                   names=[p.name for p in spec.scalars]) if spec.scalars else None
    except BaseException:
        for buf in owned:
            executor.release(buf)
        raise
    return PreparedLaunch(executor, kernel, spec, grid, buffers, push, owned, arrays)


def _binding(p: KernelParam) -> int:
    if p.binding is None:
        raise ArgumentError(f"{p.name}: a buffer parameter without a binding")
    return p.binding


def _bind_buffer(executor: Executor, p: KernelParam, value):
    want = numpy_dtype(p.dtype)
    if isinstance(value, DeviceArray):
        if value.buffer is None:
            raise ArgumentError(f"{p.name}: the device array was released")
        if value.executor is not executor:
            raise ArgumentError(f"{p.name}: a device array on {value.device!r} cannot bind to a launch on "
                                f"{getattr(executor, 'name', 'ref')}")
        if value.dtype != want:
            raise ArgumentError(f"{p.name}: a device array of {value.dtype}, the kernel takes {p.dtype}")
        return value.buffer
    if not isinstance(value, np.ndarray):
        raise ArgumentError(f"{p.name}: expected a NumPy array (or DeviceArray) of {p.dtype}, "
                            f"got {type(value).__name__}")
    if value.dtype != want:
        raise ArgumentError(f"{p.name}: an array of {value.dtype}, the kernel takes {p.dtype} ({want}); "
                            "convert it with .astype()")
    if p.access != Access.readonly.value and not value.flags.writeable:
        raise ArgumentError(f"{p.name}: the kernel writes this buffer, but the array is read-only "
                            "(pass a writeable array, e.g. a copy)")
    return executor.buffer(np.ascontiguousarray(value))


def _scalar(p: KernelParam, value):
    if isinstance(value, np.ndarray) or isinstance(value, bool | np.bool_) or \
            not isinstance(value, int | float | np.number):
        raise ArgumentError(f"{p.name}: expected a {p.dtype} number, got {type(value).__name__}")
    return value


def grid_of(grid, constexprs: Mapping | None = None) -> tuple[int, int, int]:
    """A launch grid from an int, a 1-3 tuple of ints, or a callable of the constexprs returning one of those."""
    if callable(grid):
        grid = grid(dict(constexprs or {}))
    dims: Sequence = (grid,) if isinstance(grid, int | np.integer) else grid
    if not isinstance(dims, tuple | list) or not 1 <= len(dims) <= 3 or any(
            isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1 for d in dims):
        raise ArgumentError(f"a grid is 1 to 3 positive ints (workgroups), not {grid!r}")
    return tuple(int(d) for d in (*dims, *(1,) * (3 - len(dims))))  # type: ignore[return-value]


__all__ = ["WARMUP_S", "ArgumentError", "DeviceArray", "PreparedLaunch", "grid_of", "numpy_dtype", "prepare"]
