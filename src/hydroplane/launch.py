"""Pick an executor and run a kernel: the executor Protocol, `get_executor("ref" | N)`, `run(...)`.

Both executors (`hydroplane.ref.Executor` on the CPU, `VulkanExecutor` on the N-th Vulkan
device) offer the same small interface, so one call runs the same SPIR-V on either:

    out = run(words, grid=(4, 1, 1), buffers={0: a, 1: np.zeros(256, np.float32)}, device="ref")
    out[1]  # binding 1 after the dispatch, same dtype and shape as given

Both run the same launch checks before any work (`hydroplane.launch_checks`: bindings, element
types, push-constant size, spec constants packed by their declared types, grid limits): the
reference executor as `ReferenceExecutor` (a checking `hydroplane.ref.Executor`), a Vulkan device
as `VulkanExecutor`. Options are explicit keywords; a misspelled one is a TypeError.

This module sits above `ref` and `vk`; it imports spirv (reflection), ref, vk and launch_checks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO, Union, runtime_checkable

import numpy as np
import numpy.typing as npt

from hydroplane import vk
from hydroplane.launch_checks import (BindingError, GridError, LaunchError, OutputPathError, PushConstantError,
                                      RawBytes, SpecConstantError, check_bound, check_buffers, check_entry,
                                      check_grid,
                                      check_push_constants, pack_spec_constants)
from hydroplane.ref import Executor as _RefExecutor
from hydroplane.spirv.reflection import ModuleInterface, reflect

__all__ = [
    "BindingError", "CheckedKernel", "Executor", "GridError", "LaunchError", "OutputPathError", "PushConstantError",
    "RawBytes", "ReferenceExecutor", "SpecConstantError", "VulkanExecutor", "get_executor", "run",
    "terminal_progress", "unsupported_matrix_types",
]

Words = Union[bytes, Sequence[int], np.ndarray]
BindingKey = Union[int, tuple[int, int]]
SpecValue = Union[bool, int, float, bytes, np.generic]
PushData = Union[bytes, bytearray, np.ndarray, np.generic, None]


@runtime_checkable
class Executor(Protocol):
    """The executor interface of docs/architecture.md (both implementations run the launch checks)."""

    name: str
    max_workgroup_count: tuple[int, int, int]

    def buffer(self, array_or_nbytes: np.ndarray | int) -> Any: ...

    def read(self, buf: Any, dtype: npt.DTypeLike = np.uint8,
             shape: tuple[int, ...] | None = None) -> np.ndarray: ...

    def write(self, buf: Any, array: np.ndarray) -> None: ...

    def kernel(self, words: Words, entry: str = "main", spec: Mapping[int, SpecValue] | None = None,
               subgroup_size: int | None = None) -> Any: ...

    def dispatch(self, kernel: Any, grid: Sequence[int] = (1, 1, 1), buffers: Mapping[BindingKey, Any] | None = None,
                 push: PushData = None) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CheckedKernel:
    """An executor's own kernel object with the module's reflected interface, for the dispatch checks."""

    native: Any
    interface: ModuleInterface
    entry: str


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
    data = _push_bytes(push)
    check_push_constants(kernel.interface, data)
    return check_grid(grid, limit), data


class ReferenceExecutor(_RefExecutor):
    """`hydroplane.ref.Executor` with the launch checks (bindings, push constants, grid, typed spec constants)."""

    def kernel(self, words: Words, entry: str = "main", spec: Mapping[int, SpecValue] | None = None,
               subgroup_size: int | None = None) -> CheckedKernel:
        iface = reflect(words)
        packed = pack_spec_constants(iface, spec)
        return CheckedKernel(super().kernel(words, entry=entry, spec=packed, subgroup_size=subgroup_size), iface, entry)

    def dispatch(self, kernel: CheckedKernel, grid: Sequence[int] = (1, 1, 1),
                 buffers: Mapping[BindingKey, Any] | None = None, push: PushData = None) -> object:
        dims, data = _checked_dispatch(kernel, grid, buffers, push, self.max_workgroup_count)
        return super().dispatch(kernel.native, dims, buffers, data)


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


def _offers_type(shape, t) -> bool:
    """Whether a device shape (KHR properties, or NV2 flexible granularity) covers matrix type t."""
    if shape.scope != t.scope:
        return False
    if t.use == "A":
        comp, dims = shape.a, (shape.m, shape.k)
    elif t.use == "B":
        comp, dims = shape.b, (shape.k, shape.n)
    else:
        comp, dims = (t.component if t.component in (shape.c, shape.result) else None), (shape.m, shape.n)
    if comp != t.component:
        return False
    if shape.granularity:
        return t.rows % dims[0] == 0 and t.cols % dims[1] == 0
    return (t.rows, t.cols) == dims


def _offers_muladd(shape, m) -> bool:
    comps = (m.a.component, m.b.component, m.c.component, m.result.component)
    if (shape.a, shape.b, shape.c, shape.result) != comps or shape.scope != m.a.scope:
        return False
    dims, unit = (m.a.rows, m.result.cols, m.a.cols), (shape.m, shape.n, shape.k)
    if shape.granularity:
        return all(d % g == 0 for d, g in zip(dims, unit))
    return dims == unit


def _offers_nv(shape, t) -> bool:
    """A legacy NV type has no Use: any operand position of a reported NV shape will do."""
    return ((t.component, t.rows, t.cols) in ((shape.a, shape.m, shape.k), (shape.b, shape.k, shape.n))
            or (t.component in (shape.c, shape.result) and (t.rows, t.cols) == (shape.m, shape.n)))


def unsupported_matrix_types(iface, info) -> list[str]:
    """The module's cooperative-matrix types and MulAdd combinations the device does not report.

    Creating a pipeline with a matrix shape the driver does not list is undefined behaviour in
    Vulkan (Mesa lavapipe crashes the process on a 16x16 subgroup matrix), so the launch layer
    checks first. Empty: the device can run the module's matrices.
    """
    shapes = [*info.coop_khr, *info.coop_nv2_flexible, *getattr(info, "coop_ext_shapes", ())]
    missing = []
    for t in iface.coop_matrix_types:
        offered = any(_offers_nv(s, t) for s in info.coop_nv) if t.family == "nv" else \
            any(_offers_type(s, t) for s in shapes)
        if not offered:
            missing.append(t.text())
    missing += [m.text() for m in iface.coop_muladds if not any(_offers_muladd(s, m) for s in shapes)]
    return missing


class VulkanExecutor:
    """The executor interface on a Vulkan device (`hydroplane.vk`), bindings reflected from the module."""

    def __init__(self, index: int = 0):
        infos = vk.devices()
        if not 0 <= index < len(infos):
            raise LaunchError(f"no Vulkan device {index}: {len(infos)} device(s) found")
        self.info = infos[index]
        self.device = vk.Device(self.info, enable_all=True)
        self.name = f"vk:{index} ({self.info.name})"
        self.max_workgroup_count: tuple[int, int, int] = tuple(self.info.max_workgroup_count)

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

    def kernel(self, words: Words, entry: str = "main", spec: Mapping[int, SpecValue] | None = None,
               subgroup_size: int | None = None) -> CheckedKernel:
        iface = reflect(words)
        check_entry(iface, entry)
        packed = pack_spec_constants(iface, spec)
        missing = unsupported_matrix_types(iface, self.info)
        if missing:
            raise vk.UnsupportedFeature(
                f"{self.info.name} does not offer these cooperative-matrix types of the module: "
                + "; ".join(missing) + " (see `hydroplane devices` for the shapes it reports)", missing=tuple(missing))
        bindings = [vk.Binding(b.set, b.binding, "uniform" if b.descriptor_type == "uniform_buffer" else "storage")
                    for b in iface.bindings]
        pipeline = self.device.pipeline(words, bindings, push_constant_size=iface.push_constant_size, spec=packed,
                                        entry=entry, capabilities=iface.capabilities, extensions=iface.extensions,
                                        subgroup_size=subgroup_size)
        return CheckedKernel(pipeline, iface, entry)

    def dispatch(self, kernel: CheckedKernel, grid: Sequence[int] = (1, 1, 1),
                 buffers: Mapping[BindingKey, Any] | None = None, push: PushData = None) -> None:
        dims, data = _checked_dispatch(kernel, grid, buffers, push, self.max_workgroup_count)
        self.device.dispatch(kernel.native, dims, dict(buffers or {}), data)

    def close(self) -> None:
        self.device.close()

    def __enter__(self) -> VulkanExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get_executor(device: str | int | None = "ref", *, subgroup_size: int | None = None,
                 diagnostics: str | None = None, max_lanes: int | None = None, max_blocks: int | None = None,
                 coopmat_distribution: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> Executor:
    """"ref" (or None) for the reference executor, an int N (or "N") for the N-th Vulkan device.

    The keyword options are the reference executor's (a Vulkan device takes none): subgroup size, diagnostics
    ('raise' or 'collect'), lanes per batch, the control-flow block limit, the cooperative-matrix element
    distribution and a progress(done, total) callback.
    """
    ref_options = {"subgroup_size": subgroup_size, "diagnostics": diagnostics, "max_lanes": max_lanes,
                   "max_blocks": max_blocks, "coopmat_distribution": coopmat_distribution, "progress": progress}
    given = {k: v for k, v in ref_options.items() if v is not None}
    if device is None or device == "ref":
        return ReferenceExecutor(**given)
    try:
        index = int(device)
    except (TypeError, ValueError):
        raise LaunchError(f"device must be 'ref' or a Vulkan device number, not {device!r}") from None
    if given:
        raise LaunchError(f"options {sorted(given)} only apply to the reference executor")
    return VulkanExecutor(index)


def run(words: Words, grid: Sequence[int] = (1, 1, 1),
        buffers: Mapping[BindingKey, np.ndarray | RawBytes] | None = None, *, spec: Mapping[int, SpecValue] | None = None, push: PushData = None, device: str | int | None = "ref",
        subgroup_size: int | None = None, entry: str = "main", executor: Executor | None = None,
        diagnostics: str | None = None, progress: Callable[[int, int], None] | None = None) -> dict:
    """Run a kernel once: `buffers` {binding | (set, binding): ndarray | RawBytes(ndarray)} give every buffer's
    initial contents; returns {same key: ndarray} read back after the dispatch (same dtype and shape).

    Before any work the launch checks run (hydroplane.launch_checks): every binding given and none extra, each
    array of its binding's declared element type (RawBytes skips that), push constants of the block's size,
    spec constants that fit their declared types, a grid within the executor's limits.
    """
    iface = reflect(words)
    check_entry(iface, entry)
    check_buffers(iface, buffers or {})
    check_push_constants(iface, _push_bytes(push))
    packed = pack_spec_constants(iface, spec)
    own = executor is None
    if own:
        ref_only = {"diagnostics": diagnostics, "progress": progress}
        if device is None or device == "ref":
            ref_only["subgroup_size"] = subgroup_size
        executor = get_executor(device, **{k: v for k, v in ref_only.items() if v is not None})
    elif diagnostics is not None or progress is not None:
        raise LaunchError("diagnostics and progress are options of a new executor; set them on the one given")
    try:
        dims = check_grid(grid, executor.max_workgroup_count)
        arrays = {k: np.asarray(v.array if isinstance(v, RawBytes) else v) for k, v in (buffers or {}).items()}
        bound = {k: executor.buffer(a) for k, a in arrays.items()}
        kernel = executor.kernel(words, entry=entry, spec=packed, subgroup_size=subgroup_size)
        executor.dispatch(kernel, dims, bound, push)
        return {k: executor.read(bound[k], a.dtype, a.shape) for k, a in arrays.items()}
    finally:
        if own:
            executor.close()
