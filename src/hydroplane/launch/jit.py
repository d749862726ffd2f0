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

import linecache
import logging
from dataclasses import dataclass, field

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.lang import kernel_source
from hydroplane.lang.compiler import Func, Kernel, Specialization
from hydroplane.launch import executors
from hydroplane.launch.checks import PushConstantError
from hydroplane.launch.prepared import ArgumentError, DeviceArray, PreparedLaunch, grid_of, prepare
from hydroplane.spirv.compiled import CompiledKernel

log = logging.getLogger("hydroplane.launch.jit")

JitLaunchError = ArgumentError  # a launch whose arguments do not fit the kernel, or a device that cannot run it


class KernelError(HydroplaneError):
    """An executor's diagnostic (race, out-of-bounds access, non-uniform matrix operation ...) at the
    kernel's Python line: `location` (spirv.locations.SourceLocation), `diagnostic` (the executor's
    record, when it gave one); the executor's own exception is the __cause__."""

    def __init__(self, message: str, location=None, diagnostic=None):
        self.location = location
        self.diagnostic = diagnostic
        super().__init__(message)


def executor_for(device):
    """The shared executor of "ref" or Vulkan device N (`executors.shared_executor`)."""
    return executors.shared_executor(device)


def device_array(array, device="ref") -> DeviceArray:
    """Copy a NumPy array into a buffer of `device` ("ref" or a Vulkan device number)."""
    if isinstance(array, DeviceArray):
        raise JitLaunchError("device_array() takes a NumPy array; this is already a DeviceArray (use .numpy())")
    try:
        array = np.ascontiguousarray(array)
    except (TypeError, ValueError) as err:
        raise JitLaunchError(f"device_array() takes a NumPy array (or what np.asarray accepts): {err}") from None
    if array.dtype.kind in "OUSMm":
        raise JitLaunchError(f"device_array() takes an array of numbers, not {array.dtype} "
                             f"({array.reshape(-1)[:3].tolist()!r}...)")
    executor = executor_for(device)
    key = "ref" if device in (None, "ref") else int(device)
    return DeviceArray(key, executor, executor.buffer(array), array.dtype, array.shape)


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


class GridLaunch:
    """`kernel[grid]`: call it to launch once; `.prepare(...)` to bind once and dispatch or time many times."""

    def __init__(self, kernel_: JitKernel, grid):
        self._kernel, self._grid = kernel_, grid

    def __call__(self, *args, device=None, **kwargs) -> LaunchResult:
        return self._kernel.launch(self._grid, args, kwargs, device)

    def prepare(self, *args, device=None, **kwargs) -> PreparedLaunch:
        """The launch bound to its arguments on its device (the shared executor), not yet dispatched:
        `dispatch()`, `read(name)`, `time(repeat=20)` (seconds per run: GPU timestamps after a warm-up on
        Vulkan, wall time on the reference executor), `close()` (or use it in a `with`)."""
        return self._kernel.prepare(self._grid, args, kwargs, device)


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

    def __getitem__(self, grid) -> GridLaunch:
        return GridLaunch(self, grid)

    def __call__(self, *args, **kwargs):
        raise JitLaunchError(f"{self.kernel.name} is a kernel: launch it with a grid of workgroups, "
                             f"{self.kernel.name}[grid](...), e.g. {self.kernel.name}[(n + 63) // 64](...)")

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

    def _device(self, device, constexprs: dict, runtime: dict):
        """The device the launch runs on: the one its device arrays are on, else `device`, else the default."""
        pinned = {a.device for a in runtime.values() if isinstance(a, DeviceArray)}
        if device is not None and device != "ref":
            device = executors.device_index(device)
        if len(pinned) > 1 or (pinned and device is not None and device not in pinned):
            raise JitLaunchError(f"{self.kernel.name}: device arrays of {sorted(map(str, pinned))} "
                                 f"with device={device!r}")
        if device is None and pinned:
            device = pinned.pop()
        if device is None:
            key = tuple(sorted(constexprs.items()))
            device = self._default_device.get(key)
            if device is None:
                device = self._default_device[key] = self._choose_device(constexprs)
        return device

    def _prepared(self, grid, constexprs: dict, runtime: dict, device, executor) -> tuple[PreparedLaunch, bool]:
        spec = self.kernel.compile(executor.target, **constexprs)  # shapes checked against the device
        pipeline, lowered = self._pipeline(device, executor, spec)
        dims = grid_of(grid, dict(spec.constexprs))
        try:
            return prepare(executor, pipeline, spec, dims, runtime), lowered
        except PushConstantError as err:
            raise JitLaunchError(str(err)) from None

    def prepare(self, grid, args, kwargs, device=None) -> PreparedLaunch:
        constexprs, runtime = self._bind(args, kwargs)
        device = self._device(device, constexprs, runtime)
        return self._prepared(grid, constexprs, runtime, device, executor_for(device))[0]

    def launch(self, grid, args, kwargs, device=None) -> LaunchResult:
        constexprs, runtime = self._bind(args, kwargs)
        device = self._device(device, constexprs, runtime)
        # the reference executor keeps every buffer it made: a launch without device arrays on it
        # uses its own, closed afterwards (compiled kernels are shared)
        transient = device == "ref" and not any(isinstance(a, DeviceArray) for a in runtime.values())
        executor = executors.get_executor("ref") if transient else executor_for(device)
        try:
            prepared, lowered = self._prepared(grid, constexprs, runtime, device, executor)
            with prepared:
                return self._run(prepared, device, lowered)
        finally:
            if transient:
                executor.close()

    def _run(self, prepared: PreparedLaunch, device, lowered: bool) -> LaunchResult:
        label = _device_label(device, prepared.executor)
        log.info("%s%s runs on %s%s", self.kernel.name, prepared.grid, label,
                 " (EXT lowered to NV2)" if lowered else "")
        result = LaunchResult(label, self.kernel.name, prepared.grid, lowered=lowered)
        try:
            prepared.dispatch()
        except HydroplaneError as err:
            raise _at_python_line(self.kernel.name, prepared.kernel.compiled, err) from err
        result.outputs.update(prepared.write_back())
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


def kernel(fn=None, *, local_size=64, name: str | None = None):
    """`@hydroplane.kernel` / `@hydroplane.kernel(local_size=...)`: a launchable language kernel."""
    if fn is None:
        return lambda f: JitKernel(kernel_source(f, local_size=local_size, name=name))
    return JitKernel(kernel_source(fn, local_size=local_size, name=name))


def func(fn) -> Func:
    """`@hydroplane.func`: a helper the kernels call (compiled into a SPIR-V function)."""
    return Func(fn)


__all__ = ["DeviceArray", "GridLaunch", "JitKernel", "JitLaunchError", "KernelError", "LaunchResult", "PreparedLaunch",
           "device_array", "func", "kernel"]
