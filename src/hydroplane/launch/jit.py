"""Launch language kernels: `hydroplane.kernel` / `hydroplane.func`, and `kernel[grid](*args, device=...)`.

    @hydroplane.kernel(local_size=64)
    def add(a: Buffer[f32, readonly], b: Buffer[f32, readonly], c: Buffer[f32], n: s32): ...

    result = add[(4,)](a, b, c, len(a))          # NumPy arrays in; c is written back in place
    result.device                                  # 'vk:0 (llvmpipe ...)' or 'ref'

Arguments bind to the kernel's parameters by position or name: NumPy arrays (or
`DeviceArray`s from `device_array()`, which stay on the device) for buffers, numbers for
push-constant scalars, compile-time values for constexprs. Arrays the kernel may write are
copied back into the caller's arrays. `device` is "ref" (the reference executor), a Vulkan
device number, or None: the first Vulkan device that can run the kernel, else the reference
executor (like Triton's interpreter mode); the choice is on the result and logged at INFO.
Each executor compiles the module for its own target (`spirv.compiled.compile_kernel`: EXT
maintenance1 is lowered to NV2 for a device that has NV2 but not EXT; shapes it lacks are
refused by name). Executors and pipelines are cached per device and specialization.

This module sits above `lang` and `launch` (it imports both, and spirv).
"""

from __future__ import annotations

import atexit
import linecache
import logging
from dataclasses import dataclass, field

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.lang import kernel_source
from hydroplane.lang.compiler import Func, Kernel, Specialization
from hydroplane.lang.core import Access
from hydroplane.launch import executors
from hydroplane.spirv.compiled import CompiledKernel

log = logging.getLogger("hydroplane.launch.jit")


class JitLaunchError(executors.LaunchError):
    """A launch whose arguments do not fit the kernel, or a device that cannot run it."""


class KernelError(HydroplaneError):
    """An executor's diagnostic (race, out-of-bounds access, non-uniform matrix operation ...) at the
    kernel's Python line: `location` (spirv.locations.SourceLocation), `diagnostic` (the executor's
    record, when it gave one); the executor's own exception is the __cause__."""

    def __init__(self, message: str, location=None, diagnostic=None):
        self.location = location
        self.diagnostic = diagnostic
        super().__init__(message)


# executors, one per device, kept for the process ----------------------------------------------------
_executors: dict = {}


def executor_for(device):
    """The shared executor of "ref" or Vulkan device N."""
    key = "ref" if device in (None, "ref") else int(device)
    if key not in _executors:
        _executors[key] = executors.get_executor(key)
    return _executors[key]


def _close_executors() -> None:
    for key in list(_executors):
        _executors.pop(key).close()


atexit.register(_close_executors)


@dataclass
class DeviceArray:
    """An array held in one executor's buffer: pass it to launches on that device without copies."""

    device: str | int
    buffer: object
    dtype: np.dtype
    shape: tuple

    def numpy(self) -> np.ndarray:
        return executor_for(self.device).read(self.buffer, self.dtype, self.shape)


def device_array(array, device="ref") -> DeviceArray:
    """Copy a NumPy array into a buffer of `device` ("ref" or a Vulkan device number)."""
    array = np.ascontiguousarray(array)
    return DeviceArray(device, executor_for(device).buffer(array), array.dtype, array.shape)


@dataclass
class LaunchResult:
    """What a launch did: where it ran and the arrays it wrote (also copied into the caller's arrays)."""

    device: str
    kernel: str
    grid: tuple[int, int, int]
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    lowered: bool = False  # EXT maintenance1 lowered to NV2 for this device


def _device_label(device, executor) -> str:
    return "ref" if device == "ref" else getattr(executor, "name", f"vk:{device}")


class JitKernel:
    """A language kernel you can launch: `kernel[grid](*args, device=None, **kwargs)`."""

    def __init__(self, kernel_: Kernel):
        self.kernel = kernel_
        self.__name__ = kernel_.__name__
        self.__doc__ = kernel_.__doc__
        self._pipelines: dict = {}  # (device, id(specialization)) -> (executor's kernel, lowered)
        self._default_device: dict = {}  # constexprs -> chosen device

    def compile(self, target=None, **constexprs) -> Specialization:
        return self.kernel.compile(target, **constexprs)

    def spirv(self, target=None, **constexprs):
        return self.kernel.spirv(target, **constexprs)

    def asm(self, target=None, **constexprs) -> str:
        return self.kernel.asm(target, **constexprs)

    def __getitem__(self, grid):
        return lambda *args, device=None, **kwargs: self.launch(grid, args, kwargs, device)

    def __repr__(self) -> str:
        return f"<hydroplane.kernel {self.kernel.name}>"

    # launching -----------------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            bound = self.kernel.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise JitLaunchError(f"{self.kernel.name}: {err}") from None
        bound.apply_defaults()
        compile_time = self.kernel.constexpr_names()
        constexprs = {n: v for n, v in bound.arguments.items() if n in compile_time}
        runtime = {n: v for n, v in bound.arguments.items() if n not in compile_time}
        return constexprs, runtime

    def launch(self, grid, args, kwargs, device=None) -> LaunchResult:
        constexprs, runtime = self._bind(args, kwargs)
        key = tuple(sorted(constexprs.items()))
        pinned = {a.device for a in runtime.values() if isinstance(a, DeviceArray)}
        if len(pinned) > 1 or (pinned and device is not None and device not in pinned):
            raise JitLaunchError(f"{self.kernel.name}: device arrays of {sorted(map(str, pinned))} "
                                 f"with device={device!r}")
        if device is None and pinned:
            device = pinned.pop()
        if device is None:
            device = self._default_device.get(key)
            if device is None:
                device = self._default_device[key] = self._choose_device(constexprs)
        # the reference executor keeps every buffer it made: a launch without device arrays on it
        # uses its own, closed afterwards (compiled kernels are shared)
        transient = device == "ref" and not any(isinstance(a, DeviceArray) for a in runtime.values())
        executor = executors.get_executor("ref") if transient else executor_for(device)
        try:
            spec = self.kernel.compile(executor.target, **constexprs)  # shapes checked against the device
            return self._run(spec, device, executor, _grid(grid, dict(spec.constexprs)), runtime)
        finally:
            if transient:
                executor.close()

    def _run(self, spec: Specialization, device, executor, grid, runtime: dict) -> LaunchResult:
        pipeline, lowered = self._pipeline(device, executor, spec)
        buffers, outputs, temporary = {}, {}, []
        for p in spec.buffers:
            value = runtime[p.name]
            if isinstance(value, DeviceArray):
                if value.dtype != _numpy_dtype(p.dtype):
                    raise JitLaunchError(f"{p.name}: a device array of {value.dtype}, the kernel takes {p.dtype}")
                buffers[p.binding] = value.buffer
                continue
            if not isinstance(value, np.ndarray):
                raise JitLaunchError(f"{p.name}: expected a NumPy array (or DeviceArray) of {p.dtype}, "
                                     f"got {type(value).__name__}")
            if value.dtype != _numpy_dtype(p.dtype):
                raise JitLaunchError(f"{p.name}: an array of {value.dtype}, the kernel takes {p.dtype} "
                                     f"({_numpy_dtype(p.dtype)}); convert it with .astype()")
            buffers[p.binding] = executor.buffer(np.ascontiguousarray(value))
            temporary.append(buffers[p.binding])
            if p.access != Access.readonly.value:
                outputs[p.name] = (value, buffers[p.binding])
        push = _push_constants(spec, runtime)
        label = _device_label(device, executor)
        log.info("%s%s runs on %s%s", self.kernel.name, grid, label, " (EXT lowered to NV2)" if lowered else "")
        result = LaunchResult(label, self.kernel.name, grid, lowered=lowered)
        try:
            try:
                executor.dispatch(pipeline, grid, buffers, push)
            except HydroplaneError as err:
                raise _at_python_line(self.kernel.name, pipeline.compiled, err) from err
            for name, (array, buf) in outputs.items():
                back = executor.read(buf, array.dtype, array.shape)
                if array.flags.writeable:
                    np.copyto(array, back)
                result.outputs[name] = back
        finally:
            for buf in temporary:
                (getattr(buf, "close", None) or buf.release)()
        return result

    def _pipeline(self, device, executor, spec: Specialization):
        """The executor's kernel for this specialization (cached): it lowers the module for its own
        target (EXT maintenance1 -> NV2 where the device has only NV2) and refuses what it lacks."""
        cache_key = (device, id(spec))  # specializations live in the kernel's cache
        if cache_key not in self._pipelines:
            checked = executor.kernel(spec.words)
            self._pipelines[cache_key] = (checked, bool(checked.compiled.changes))
        return self._pipelines[cache_key]

    def _choose_device(self, constexprs: dict):
        """The first Vulkan device the kernel compiles for and that creates the pipeline, else the reference
        executor."""
        reasons = []
        index = 0
        while True:
            try:
                executor = executor_for(index)
            except executors.LaunchError:
                break  # no more devices
            except (HydroplaneError, OSError) as err:
                reasons.append(f"Vulkan: {err}")
                break
            try:
                self._pipeline(index, executor, self.kernel.compile(executor.target, **constexprs))
                log.info("%s: default device %s", self.kernel.name, _device_label(index, executor))
                return index
            except HydroplaneError as err:
                reasons.append(f"vk:{index}: {err}")
            index += 1
        log.info("%s: default device ref (the reference executor)%s", self.kernel.name,
                 "; " + "; ".join(reasons) if reasons else "")
        return "ref"


def _at_python_line(name: str, compiled: CompiledKernel, err: HydroplaneError) -> HydroplaneError:
    """The executor's error with the kernel's Python line (source and caret), when it names an instruction."""
    diagnostic = getattr(err, "diagnostic", None)
    offset = getattr(diagnostic, "offset", None)
    if offset is None or offset < 0:
        offset = getattr(err, "offset", None)
    location = compiled.location_of(offset) if isinstance(offset, int) and offset >= 0 else None
    if location is None:
        return err
    text = linecache.getline(location.file, location.line).rstrip("\n")
    caret = " " * max(location.column - 1, 0) + "^"
    return KernelError(f"{location}: {name}: {err}\n    {text}\n    {caret}", location, diagnostic)


def _numpy_dtype(t) -> np.dtype:
    """The NumPy dtype of a buffer's elements (a vector buffer takes a flat array of its component)."""
    return getattr(t, "component", t).dtype


def _grid(grid, constexprs) -> tuple[int, int, int]:
    if callable(grid):
        grid = grid(dict(constexprs))
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int | np.integer) or d < 1 for d in dims):
        raise JitLaunchError(f"a grid is 1 to 3 positive ints (workgroups), not {grid!r}")
    return tuple(int(d) for d in (*dims, *(1,) * (3 - len(dims))))


def _push_constants(spec: Specialization, runtime: dict) -> bytes | None:
    if not spec.scalars:
        return None
    data = bytearray(spec.push_constant_size)
    for p in spec.scalars:
        value = runtime[p.name]
        if isinstance(value, np.ndarray) or not isinstance(value, int | float | np.number):
            raise JitLaunchError(f"{p.name}: expected a {p.dtype} number, got {type(value).__name__}")
        if p.dtype.kind == "int" and not float(value).is_integer():
            raise JitLaunchError(f"{p.name}: {value!r} is not an integer ({p.dtype})")
        info = np.iinfo(_numpy_dtype(p.dtype)) if p.dtype.kind == "int" else None
        if info is not None and not info.min <= int(value) <= info.max:
            raise JitLaunchError(f"{p.name}: {value} does not fit {p.dtype}")
        raw = np.asarray(value, _numpy_dtype(p.dtype)).tobytes()
        data[p.offset:p.offset + len(raw)] = raw
    return bytes(data)


def kernel(fn=None, *, local_size=64, name: str | None = None):
    """`@hydroplane.kernel` / `@hydroplane.kernel(local_size=...)`: a launchable language kernel."""
    if fn is None:
        return lambda f: JitKernel(kernel_source(f, local_size=local_size, name=name))
    return JitKernel(kernel_source(fn, local_size=local_size, name=name))


def func(fn) -> Func:
    """`@hydroplane.func`: a helper the kernels call (compiled into a SPIR-V function)."""
    return Func(fn)


__all__ = ["DeviceArray", "JitKernel", "JitLaunchError", "KernelError", "LaunchResult", "device_array", "func",
           "kernel"]
