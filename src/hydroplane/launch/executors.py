"""Pick an executor and run a kernel: the executor Protocol, `get_executor("ref" | N)`, `run(...)`.

Both executors (`hydroplane.ref.Executor` on the CPU, `VulkanExecutor` on the N-th Vulkan
device) offer the same small interface, so one call runs the same SPIR-V on either:

    out = run(words, grid=(4, 1, 1), buffers={0: a, 1: np.zeros(256, np.float32)}, device="ref")
    out[1]  # binding 1 after the dispatch, same dtype and shape as given

Both run the same launch checks before any work (`hydroplane.launch.checks`: bindings, element
types, push-constant size, spec constants packed by their declared types, grid limits): the
reference executor as `ReferenceExecutor` (a checking `hydroplane.ref.Executor`, in launch/reference.py,
loaded on first use), a Vulkan device as `VulkanExecutor`. Options are explicit keywords; a misspelled one is a
TypeError.

This module sits above `ref` and `vk`; it imports spirv (reflection), vk, launch.checks/limits and
lang.disk_cache (what earlier processes lowered), and `ref` only through `ReferenceExecutor` when first asked for.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # in annotations only: numpy.typing is not imported at run time (about 0.5 ms)
    import numpy.typing as npt

from hydroplane import vk
from hydroplane.lang import disk_cache
from hydroplane.launch.checks import (
    BindingError,
    GridError,
    LaunchError,
    OutputPathError,
    PushConstantError,
    RawBytes,
    SpecConstantError,
    check_bound,
    check_buffers,
    check_entry,
    check_grid,
    check_push_constants,
    pack_push_constants,
    pack_spec_constants,
)
from hydroplane.launch.limits import (
    VALIDATOR_LAYOUT_OPTIONS,
    LimitError,
    check_buffer_sizes,
    check_target_limits,
    check_with_validator,
)
from hydroplane.spirv.compiled import CompiledKernel, compile_kernel
from hydroplane.spirv.reflection import ModuleInterface
from hydroplane.spirv.target import Target, UnsupportedOnTarget

# Names loaded on first use, by the module that holds them: the reference executor's class (launch/reference.py)
# brings the `ref` layer, which a process that runs on a Vulkan device never needs (docs/perf.md).
_LAZY = {"ReferenceExecutor": "hydroplane.launch.reference"}

__all__ = [
    "BindingError", "CheckedKernel", "Executor", "GridError", "LaunchError", "LimitError", "OutputPathError",
    "PushConstantError",
    "RawBytes", "SpecConstantError", "UnsupportedOnTarget", "VulkanExecutor", "get_executor",
    "device_index", "run", "terminal_progress", *_LAZY,
]

Words = bytes | Sequence[int] | np.ndarray | CompiledKernel
BindingKey = int | tuple[int, int]
SpecValue = bool | int | float | bytes | np.generic
PushData = bytes | bytearray | np.ndarray | np.generic | Sequence[int | float] | None


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


@runtime_checkable
class Executor(Protocol):
    """The executor interface of docs/architecture.md (both implementations run the launch checks)."""

    name: str

    @property
    def target(self) -> Target: ...  # what the executor offers: compile_kernel lowers for it

    max_workgroup_count: tuple[int, int, int]

    def buffer(self, array_or_nbytes: np.ndarray | int) -> Any: ...

    def read(self, buf: Any, dtype: npt.DTypeLike = np.uint8,
             shape: tuple[int, ...] | None = None) -> np.ndarray: ...

    def write(self, buf: Any, array: np.ndarray) -> None: ...

    def release(self, buf: Any) -> None: ...  # free one buffer now (safe twice)

    def kernel(self, words: Words, entry: str = "main", spec: Mapping[int, SpecValue] | None = None,
               subgroup_size: int | None = None, *, validate: bool = True, robust: bool = False) -> Any: ...

    def dispatch(self, kernel: Any, grid: Sequence[int] = (1, 1, 1), buffers: Mapping[BindingKey, Any] | None = None,
                 push: PushData = None) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CheckedKernel:
    """An executor's own kernel object with the CompiledKernel it runs, for the dispatch checks, and what its
    out-of-bounds buffer accesses do (`robustness`: "robustBufferAccess2" / "robustBufferAccess" for a robust
    Vulkan pipeline, "diagnosed" on the reference executor, None for a Vulkan pipeline without robust access)."""

    native: Any
    compiled: CompiledKernel
    robustness: str | None = None

    @property
    def interface(self) -> ModuleInterface:
        return self.compiled.interface

    @property
    def entry(self) -> str:
        return self.compiled.entry


def _push_bytes(push: PushData) -> bytes | None:
    if push is None:
        return None
    if isinstance(push, (bytes, bytearray, memoryview)):
        return bytes(push)
    return np.ascontiguousarray(push).tobytes()


def _checked_dispatch(kernel: CheckedKernel, grid, buffers: Mapping | None, push: PushData,
                      limit: tuple[int, int, int]) -> tuple[tuple[int, int, int], bytes | None]:
    """The checks every dispatch passes, the same on both executors: bindings, push constants, grid."""
    check_bound(kernel.interface, buffers or {})
    check_buffer_sizes(kernel.interface, {k: getattr(b, "nbytes", None) for k, b in (buffers or {}).items()})
    data = _push_bytes(push)
    check_push_constants(kernel.interface, data)
    return check_grid(grid, limit), data


def terminal_progress(stream: TextIO | None = None, every_s: float = 0.2) -> Callable[[int, int], None] | None:
    """A progress(done, total) that draws 'workgroups done/total' on stream (stderr) when it is a terminal."""
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        return None
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total:
            out.write("\r\x1b[K")  # the run is over: clear the line
        elif now - last[0] >= every_s:
            last[0] = now
            out.write(f"\rhydroplane: workgroups {done}/{total} ({100 * done // total}%)")
        else:
            return
        out.flush()

    return progress


def _source_words(words: Words):
    """The words a user gave (before lowering): what spirv-val checks."""
    if isinstance(words, CompiledKernel):
        return words.source_words if words.source_words is not None else words.words
    return words


class VulkanExecutor:
    """The executor interface on a Vulkan device (`hydroplane.vk`), bindings reflected from the module.

    `robust` (default True) creates the device with robustBufferAccess (and robustBufferAccess2 where
    VK_EXT_robustness2 offers it), so an out-of-bounds access reads zero and drops writes instead of
    crashing; `robust=False` is for measured kernels that check their own bounds, and then
    `kernel(..., robust=True)` still makes one kernel's pipeline robust where the device offers
    VK_EXT_pipeline_robustness (`user_kernel_robustness` says what such a kernel gets). `timeout` (seconds)
    bounds each dispatch's wait; past it the device is marked lost and its objects are left alone (a
    shader may still be running them) and `vk.DeviceTimeout` is raised. Every kernel is checked against
    the device's limits (`launch.limits`) and, unless `kernel(..., validate=False)` says the words are
    trusted (hydroplane's own builder or language), validated with spirv-val before the driver sees it.
    """

    def __init__(self, index: int = 0, *, robust: bool = True, timeout: float | None = None,
                 pipeline_cache: Callable[[vk.DeviceInfo], bytes | None] | None = None):
        """`pipeline_cache(info)`: the driver's pipeline-cache bytes of an earlier run for this device, or None."""
        infos = vk.devices()
        if not 0 <= index < len(infos):
            raise LaunchError(f"no Vulkan device {index}: {len(infos)} device(s) found")
        self.info = infos[index]
        seed = pipeline_cache(self.info) if pipeline_cache is not None else None
        self.device = vk.Device(self.info, enable_all=True, robust=robust, pipeline_cache=seed)
        if timeout is not None:
            self.device.set_timeout(timeout)
        # the block layouts the device takes, which spirv-val must take too (scalar layout, ...)
        self.validator_layouts = tuple(option for (key, bit), option in VALIDATOR_LAYOUT_OPTIONS.items()
                                       if self.device.has_bit(key, bit))
        self.name = f"vk:{index} ({self.info.name})"
        self.capture_statistics = False  # True: kernels made from now on keep the driver's statistics (registers)
        self.target = Target.from_device_record(self.info.to_dict())
        x, y, z = self.info.max_workgroup_count
        self.max_workgroup_count: tuple[int, int, int] = (x, y, z)

    def buffer(self, array_or_nbytes: np.ndarray | int) -> Any:
        if isinstance(array_or_nbytes, (int, np.integer)):
            return self.device.buffer(max(4, int(array_or_nbytes)))
        arr = np.ascontiguousarray(array_or_nbytes)
        if arr.nbytes == 0:
            return self.device.buffer(4)
        return self.device.buffer(arr)

    def read(self, buf: Any, dtype: npt.DTypeLike = np.uint8, shape: tuple[int, ...] | None = None) -> np.ndarray:
        return buf.read(dtype, shape)

    def write(self, buf: Any, array: np.ndarray) -> None:
        buf.write(array)

    def release(self, buf: Any) -> None:
        buf.close()

    @property
    def user_kernel_robustness(self) -> str | None:
        """What `kernel(..., robust=True)` (a user's `kernel[grid]` code) gets: "robustBufferAccess2" (out-of-bounds
        reads give zero, writes are dropped), "robustBufferAccess" (reads give zero or a value from inside the bound
        range, writes are dropped or land inside it), or None: the device lacks VK_EXT_pipeline_robustness and was
        opened without robust access, so an out-of-bounds access is undefined (`device="ref"` diagnoses it)."""
        return self.device.pipeline_robustness

    def kernel(self, words: Words, entry: str = "main", spec: Mapping[int, SpecValue] | None = None,
               subgroup_size: int | None = None, *, validate: bool = True, robust: bool = False) -> CheckedKernel:
        """A checked kernel; `robust=True` gives its pipeline robust buffer access where the device can
        (`user_kernel_robustness`; None: it runs as every other pipeline, without)."""
        if validate:
            check_with_validator(_source_words(words), self.target.env, self.validator_layouts)
        # lowered for the device (unreported shapes refused), or what an earlier process lowered from these words
        compiled = disk_cache.compiled_kernel(words, self.target, entry)
        iface = compiled.interface
        check_entry(iface, entry)
        packed = pack_spec_constants(iface, spec)
        check_target_limits(compiled, self.target, packed)
        bindings = [vk.Binding(b.set, b.binding, "uniform" if b.descriptor_type == "uniform_buffer" else "storage")
                    for b in iface.bindings]
        push_range = -(-iface.push_constant_size // 4) * 4  # Vulkan ranges are multiples of 4 bytes
        pipeline = self.device.pipeline(compiled.words, bindings, push_constant_size=push_range,
                                        spec=packed, entry=entry, capabilities=iface.capabilities,
                                        extensions=iface.extensions, subgroup_size=subgroup_size,
                                        capture_statistics=self.capture_statistics,
                                        robust=robust and self.user_kernel_robustness is not None)
        return CheckedKernel(pipeline, compiled, pipeline.robustness)

    def dispatch(self, kernel: CheckedKernel, grid: Sequence[int] = (1, 1, 1),
                 buffers: Mapping[BindingKey, Any] | None = None, push: PushData = None) -> None:
        dims, data = _checked_dispatch(kernel, grid, buffers, push, self.max_workgroup_count)
        padded = None if data is None else data + bytes(-len(data) % 4)  # to the 4-byte range
        self.device.dispatch(kernel.native, dims, dict(buffers or {}), padded)

    def close(self) -> None:
        self.device.close()

    def __enter__(self) -> VulkanExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get_executor(device: str | int | None = "ref", *, subgroup_size: int | None = None,
                 diagnostics: str | None = None, max_lanes: int | None = None, max_blocks: int | None = None,
                 coopmat_distribution: str | None = None, progress: Callable[[int, int], None] | None = None,
                 timeout: float | None = None, robust: bool = True) -> Executor:
    """"ref" (or None) for the reference executor, an int N (or "N") for the N-th Vulkan device.

    `timeout` (seconds) applies to both: the reference executor's wall-clock limit per dispatch, a Vulkan
    device's wait for a dispatch. `robust=False` turns off a Vulkan device's robust buffer access. The
    other keyword options are the reference executor's: subgroup size, diagnostics ('raise' or 'collect'),
    lanes per batch, the control-flow block budget, the cooperative-matrix element distribution and a
    progress(done, total) callback.
    """
    if timeout is not None and not timeout > 0:
        raise LaunchError(f"timeout must be a positive number of seconds, not {timeout!r}")
    ref_options: dict[str, Any] = {"subgroup_size": subgroup_size, "diagnostics": diagnostics,
                                   "max_lanes": max_lanes, "max_blocks": max_blocks,
                                   "coopmat_distribution": coopmat_distribution, "progress": progress}
    given = {k: v for k, v in ref_options.items() if v is not None}
    if device is None or device == "ref":
        return __getattr__("ReferenceExecutor")(**given, time_limit=timeout)
    index = device_index(device)
    if given:
        raise LaunchError(f"options {sorted(given)} only apply to the reference executor")
    return VulkanExecutor(index, robust=robust, timeout=timeout)


def device_index(device) -> int:
    """A Vulkan device number from an int or its text; LaunchError for anything else (a bool, "cuda", -1)."""
    if isinstance(device, bool) or not isinstance(device, int | np.integer | str):
        raise LaunchError(f"device must be 'ref' or a Vulkan device number, not {device!r}")
    try:
        index = int(device)
    except ValueError:
        raise LaunchError(f"device must be 'ref' or a Vulkan device number (0, 1, ...), not {device!r}") from None
    if index < 0:
        raise LaunchError(f"device must be 'ref' or a Vulkan device number (0, 1, ...), not {device!r}")
    return index


def run(words: Words, grid: Sequence[int] = (1, 1, 1),
        buffers: Mapping[BindingKey, np.ndarray | RawBytes] | None = None, *,
        spec: Mapping[int, SpecValue] | None = None, push: PushData = None, device: str | int | None = "ref",
        subgroup_size: int | None = None, entry: str = "main", executor: Executor | None = None,
        diagnostics: str | None = None, progress: Callable[[int, int], None] | None = None,
        validate: bool = True) -> dict:
    """Run a kernel once: `buffers` {binding | (set, binding): ndarray | RawBytes(ndarray)} give every buffer's
    initial contents; returns {same key: ndarray} read back after the dispatch (same dtype and shape).

    `words` may be a CompiledKernel; either way the module is lowered for the executor's target first
    (`compile_kernel`: EXT maintenance1 becomes NV2 on a device that has only NV2, shapes it lacks are
    refused by name). Before any work the launch checks run (hydroplane.launch.checks): every binding
    given and none extra, each array of its binding's declared element type (RawBytes skips that),
    push constants of the block's size, spec constants that fit their declared types, a grid within
    the executor's limits; on a Vulkan device also the device's limits (`launch.limits`) and, unless
    `validate=False` (words from hydroplane's own builder), spirv-val.
    """
    own = executor is None
    if executor is None:
        ref_only: dict[str, Any] = {"diagnostics": diagnostics, "progress": progress}
        if device is None or device == "ref":
            ref_only["subgroup_size"] = subgroup_size
        executor = get_executor(device, **{k: v for k, v in ref_only.items() if v is not None})
    elif diagnostics is not None or progress is not None:
        raise LaunchError("diagnostics and progress are options of a new executor; set them on the one given")
    try:
        if validate and isinstance(executor, VulkanExecutor):
            check_with_validator(_source_words(words), executor.target.env, executor.validator_layouts)
        compiled = compile_kernel(words, getattr(executor, "target", None) or Target.reference(), entry)
        iface = compiled.interface
        check_entry(iface, entry)
        check_buffers(iface, buffers or {})
        arrays = {k: np.asarray(v.array if isinstance(v, RawBytes) else v) for k, v in (buffers or {}).items()}
        check_buffer_sizes(iface, {k: a.nbytes for k, a in arrays.items()})
        if isinstance(push, list | tuple):
            push = pack_push_constants(iface, push)  # values in member order, by their declared types
        check_push_constants(iface, _push_bytes(push))
        packed = pack_spec_constants(iface, spec)
        check_target_limits(compiled, compiled.target, packed)
        dims = check_grid(grid, executor.max_workgroup_count)
        bound = {k: executor.buffer(a) for k, a in arrays.items()}
        if isinstance(executor, VulkanExecutor):
            kernel = executor.kernel(compiled, entry=entry, spec=packed, subgroup_size=subgroup_size, validate=False)
        else:
            kernel = executor.kernel(compiled if hasattr(executor, "target") else compiled.words, entry=entry,
                                     spec=packed, subgroup_size=subgroup_size)
        executor.dispatch(kernel, dims, bound, push)
        return {k: executor.read(bound[k], a.dtype, a.shape) for k, a in arrays.items()}
    finally:
        if own:
            executor.close()
