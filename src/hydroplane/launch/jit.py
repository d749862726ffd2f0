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

A user's kernel gets robust buffer access for its own pipeline (VK_EXT_pipeline_robustness: out-of-bounds reads
give zero and writes are dropped under robustBufferAccess2), while the library's kernels on the same device run
without; `result.robustness` says what the launch had (None: the device cannot, an out-of-bounds access is
undefined; "diagnosed": the reference executor, which raises on one). docs/runtime.md ("Devices").
`@hydroplane.kernel(robust=False)` opts a kernel that checks its own bounds out (a measured kernel: robust access
costs up to 2-3x on the H200).

This module sits above `lang` and `launch` (it imports both, and spirv).
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.lang import kernel_source
from hydroplane.lang.compiler import Func, Kernel, Specialization
from hydroplane.launch import runtime
from hydroplane.launch.checks import PushConstantError
from hydroplane.launch.prepared import (
    ArgumentError,
    DeviceArray,
    PreparedLaunch,
    grid_of,
    is_masked,
    places_of,
    prepare,
)
from hydroplane.spirv.compiled import CompiledKernel

_logger = None  # logging.getLogger("hydroplane.launch.jit"), made at the first launch (importing logging: ~5 ms)


def _log_run(name: str, grid, label: str, lowered: bool) -> None:
    """The device a launch runs on, at INFO on the logger "hydroplane.launch.jit" (docs/language.md)."""
    global _logger
    if _logger is None:
        import logging
        _logger = logging.getLogger("hydroplane.launch.jit")
    _logger.info("%s%s runs on %s%s", name, grid, label, " (EXT lowered to NV2)" if lowered else "")

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
    """The executor of a device's runtime (`launch.runtime`; None: the default device)."""
    return runtime.runtime(device).executor


def device_array(array, device=None) -> DeviceArray:
    """Copy an array into a buffer of `device` ("ref", a Vulkan device number, or None: the process's default
    device, `hydroplane.set_device`). The copy is queued: `array` may be reused at once."""
    if isinstance(array, DeviceArray):
        raise JitLaunchError("device_array() takes a NumPy array; this is already a DeviceArray (use .numpy())")
    if is_masked(array):
        raise JitLaunchError("device_array() takes a plain array, not a masked array (its mask would be dropped): "
                             "pass .filled(value) or .data")
    try:
        given = np.asarray(array)
        array = given if given.flags.c_contiguous else np.ascontiguousarray(given)  # (0-D stays 0-D)
    except (TypeError, ValueError) as err:
        raise JitLaunchError(f"device_array() takes a NumPy array (or what np.asarray accepts): {err}") from None
    except MemoryError as err:  # a contiguous copy of a broadcast or strided view too large for the host
        raise JitLaunchError(f"device_array(): out of host memory for a contiguous copy of the array: {err}") from None
    if array.dtype.kind in "OUSMm" or array.dtype.fields is not None or (array.dtype.kind == "V" and
                                                                          array.dtype.names is None and
                                                                          array.dtype.itemsize not in (1, 2)):
        raise JitLaunchError(f"device_array() takes an array of numbers, not {array.dtype} "
                             f"({array.reshape(-1)[:3].tolist()!r}...)")
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and not np.little_endian):
        array = array.astype(array.dtype.newbyteorder("<"))  # the device's byte order: the values kept
    rt = runtime.runtime(device)
    arr = DeviceArray(rt.key, rt.executor, rt.alloc(array.nbytes), array.dtype, array.shape)
    rt.upload(arr.buffer, 0, array)
    return arr


@dataclass
class LaunchResult:
    """What a launch did: where it ran and the arrays it wrote (also copied into the caller's arrays)."""

    device: str
    kernel: str
    grid: tuple[int, int, int]
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    lowered: bool = False  # EXT maintenance1 lowered to NV2 for this device
    # what an out-of-bounds buffer access of the kernel does: "robustBufferAccess2", "robustBufferAccess",
    # "diagnosed" (the reference executor), None (undefined: a device without VK_EXT_pipeline_robustness)
    robustness: str | None = None


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

    def __init__(self, kernel_: Kernel, *, robust: bool = True):
        self.kernel = kernel_
        self.robust = robust  # its pipelines ask for robust buffer access (`VulkanExecutor.user_kernel_robustness`)
        self.__name__ = kernel_.__name__
        self.__doc__ = kernel_.__doc__
        self._pipelines: dict = {}  # id(specialization) -> (the specialization, its words' cache key)
        self._launches: dict = {}  # a call's signature -> (PreparedLaunch, runtime, lowered, parameter names)

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
        arguments = {n: v for n, v in bound.arguments.items() if n not in compile_time}
        return constexprs, arguments

    def _device(self, device, arguments: dict):
        """The device runtime the launch runs on: that of its device arrays, else `device`'s, else the default
        device's (`hydroplane.set_device`, else the best one); a device that cannot run the kernel is an error,
        never a silent move to another device."""
        pinned = {id(a.runtime): a.runtime for a in arguments.values() if isinstance(a, DeviceArray)}
        if device is not None:
            device = runtime.canonical_device(device)
        if len(pinned) > 1 or (pinned and device is not None and device != next(iter(pinned.values())).key):
            names = sorted(str(rt.key) for rt in pinned.values())
            raise JitLaunchError(f"{self.kernel.name}: device arrays of {names} with device={device!r}")
        if pinned:
            return next(iter(pinned.values()))
        return runtime.runtime(device)

    def _prepared(self, grid, constexprs: dict, arguments: dict, rt) -> tuple[PreparedLaunch, bool]:
        executor = rt.executor
        spec = self.kernel.compile(executor.target, **constexprs)  # shapes checked against the device
        pipeline, lowered = self._pipeline(rt, executor, spec)
        dims = grid_of(grid, dict(spec.constexprs))
        try:
            return prepare(rt, pipeline, spec, dims, arguments), lowered
        except PushConstantError as err:
            raise JitLaunchError(str(err)) from None

    def prepare(self, grid, args, kwargs, device=None) -> PreparedLaunch:
        constexprs, arguments = self._bind(args, kwargs)
        return self._prepared(grid, constexprs, arguments, self._device(device, arguments))[0]

    def launch(self, grid, args, kwargs, device=None) -> LaunchResult:
        key = _launch_key(grid, args, kwargs, device)
        found = self._launches.get(key) if key is not None else None
        if found is not None:  # the same signature again: rebind the device arrays, queue
            prepared, rt, lowered, names = found
            values = (*args, *(kwargs[n] for n in sorted(kwargs))) if kwargs else args
            places = _places(names, values)
            if not rt.closed and places is not None:
                planned = prepared._by_place.get(places)
                if planned is not None and not prepared._staged:  # arrays at places seen before: queued as then
                    return self._run_planned(prepared, planned, rt, lowered)
                with rt.lock:  # one kept launch serves every thread's calls of its signature: one at a time
                    prepared.rebind_moved((name, value) for name, value in zip(names, values) if name is not None)
                    result = self._run(prepared, rt.key, lowered)
                    prepared.park()
                    prepared.keep_plan(places)
                return result
        constexprs, arguments = self._bind(args, kwargs)
        rt = self._device(device, arguments)
        prepared, lowered = self._prepared(grid, constexprs, arguments, rt)
        if key is None or prepared._owned:  # NumPy arguments (copied in and back) or staged views: once
            with prepared:
                return self._run(prepared, rt.key, lowered)
        positional = list(self.kernel.signature.parameters)[:len(args)]
        names = [name if name in arguments and type(value) is DeviceArray else None
                 for name, value in zip((*positional, *sorted(kwargs)), (*args, *(kwargs[n] for n in sorted(kwargs))))]
        with rt.lock:  # kept from here on: another thread's call of the signature waits for this one
            old = self._launches.pop(key, None)
            if old is not None:
                old[0].close()
            self._launches[key] = (prepared, rt, lowered, names)
            while len(self._launches) > LAUNCH_CACHE_SIZE:
                self._launches.pop(next(iter(self._launches)))[0].close()
            result = self._run(prepared, rt.key, lowered)
            prepared.park()  # the caller's arrays held weakly until the next call of this signature
            places = _places(names, (*args, *(kwargs[n] for n in sorted(kwargs))))
            if places is not None:
                prepared.keep_plan(places)
        return result

    def clear_launches(self) -> None:
        """Forget the launches kept for calls on device arrays (and the arrays they hold)."""
        while self._launches:
            self._launches.popitem()[1][0].close()

    def _run(self, prepared: PreparedLaunch, device, lowered: bool) -> LaunchResult:
        label = _device_label(device, prepared.executor)
        _log_run(self.kernel.name, prepared.grid, label, lowered)
        result = LaunchResult(label, self.kernel.name, prepared.grid, lowered=lowered,
                              robustness=prepared.kernel.robustness)
        try:
            prepared.dispatch()
        except HydroplaneError as err:
            raise _at_python_line(self.kernel.name, prepared.kernel.compiled, err) from err
        result.outputs.update(prepared.write_back())
        return result

    def _run_planned(self, prepared: PreparedLaunch, planned, rt, lowered: bool) -> LaunchResult:
        """`_run` of a kept launch whose arrays lie where an earlier call's did: its planned launch queued again
        (device arrays only: nothing to write back)."""
        label = _device_label(rt.key, rt.executor)
        _log_run(self.kernel.name, prepared.grid, label, lowered)
        result = LaunchResult(label, self.kernel.name, prepared.grid, lowered=lowered,
                              robustness=prepared.kernel.robustness)
        try:
            rt.launch_planned(planned)
        except HydroplaneError as err:
            raise _at_python_line(self.kernel.name, prepared.kernel.compiled, err) from err
        return result

    def _pipeline(self, rt, executor, spec: Specialization):
        """The device's kernel for this specialization (made once, in the device runtime's cache, keyed by the
        words and robustness: a library kernel of the same words keeps its own non-robust pipeline): it lowers the
        module for its own target (EXT maintenance1 -> NV2 where the device has only NV2), refuses what it lacks,
        and asks for robust buffer access unless the kernel opted out (`robust=False`: the library's plain pipeline of
        the same words, shared)."""
        found = self._pipelines.get(id(spec))
        if found is None:  # the spec is kept with its digest: its id stays its own
            key = runtime.words_key(spec.words)
            found = self._pipelines[id(spec)] = (spec, (*key, ROBUST_KEY) if self.robust else key)
        checked = rt.kernel(found[1], lambda: executor.kernel(spec.words, robust=self.robust))
        return checked, bool(checked.compiled.changes)


ROBUST_KEY = "robust"  # in a user's kernel's cache key: its pipeline differs from a library one of the same words
LAUNCH_CACHE_SIZE = 16  # calls on device arrays of this many signatures keep their PreparedLaunch, per kernel
_SCALARS = (int, float, bool, np.integer, np.floating, np.bool_)


def _launch_key(grid, args, kwargs, device):
    """What a `kernel[grid](...)` call of device arrays and scalars depends on: the grid, the device, each device
    array's signature (device, dtype, shape, strides, offset alignment) and each scalar's type and value; None when
    an argument is anything else (a NumPy array is copied in and back: no kept launch)."""
    parts: list = [grid, device]
    for value in (*args, *(kwargs[n] for n in sorted(kwargs))) if kwargs else args:
        kind = type(value)
        if kind is DeviceArray:
            parts.append(value.signature)
        elif kind in _SCALAR_TYPES or isinstance(value, _SCALARS):
            parts.append((kind, value))
        else:
            return None
    parts.append(tuple(sorted(kwargs)) if kwargs else ())
    key = tuple(parts)
    try:
        hash(key)
    except TypeError:
        return None
    return key


_SCALAR_TYPES = frozenset((int, float, bool))


def _places(names, values) -> tuple | None:
    """Where each device array argument lies ((buffer id, byte offset) for each named position; `names` as a kept
    launch has them), None when one was released (the checked path raises). A plan kept under these places holds
    their buffers, so the ids stay unique while it lives."""
    return places_of([value for name, value in zip(names, values) if name is not None])


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


def kernel(fn=None, *, local_size=64, name: str | None = None, robust: bool = True):
    """`@hydroplane.kernel` / `@hydroplane.kernel(local_size=...)`: a launchable language kernel. Its pipelines have
    robust buffer access where the device offers it per pipeline; `robust=False` for a kernel that checks its own
    bounds and is measured (an out-of-bounds access is then undefined on a GPU)."""
    if fn is None:
        return lambda f: JitKernel(kernel_source(f, local_size=local_size, name=name), robust=robust)
    return JitKernel(kernel_source(fn, local_size=local_size, name=name), robust=robust)


def func(fn) -> Func:
    """`@hydroplane.func`: a helper the kernels call (compiled into a SPIR-V function)."""
    return Func(fn)


__all__ = ["DeviceArray", "GridLaunch", "JitKernel", "JitLaunchError", "KernelError", "LaunchResult", "PreparedLaunch",
           "device_array", "func", "kernel"]
