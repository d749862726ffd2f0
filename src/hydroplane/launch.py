"""Pick an executor and run a kernel: the executor Protocol, `get_executor("ref" | N)`, `run(...)`.

Both executors (`hydroplane.ref.Executor` on the CPU, `VulkanExecutor` on the N-th Vulkan
device) offer the same small interface, so one call runs the same SPIR-V on either:

    out = run(words, grid=(4, 1, 1), buffers={0: a, 1: np.zeros(256, np.float32)}, device="ref")
    out[1]  # binding 1 after the dispatch, same dtype and shape as given

This module sits above `ref` and `vk`; it imports spirv (reflection), ref and vk.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.ref import Executor as RefExecutor
from hydroplane.spirv.reflection import reflect


class LaunchError(HydroplaneError):
    """A run request that cannot be carried out (unknown device, bad binding, ...)."""


@runtime_checkable
class Executor(Protocol):
    """The executor interface of docs/architecture.md."""

    def buffer(self, array_or_nbytes): ...

    def read(self, buf, dtype, shape=None) -> np.ndarray: ...

    def write(self, buf, array) -> None: ...

    def kernel(self, words, entry: str = "main", spec: dict | None = None, subgroup_size: int | None = None): ...

    def dispatch(self, kernel, grid=(1, 1, 1), buffers: dict | None = None, push=None): ...

    def close(self) -> None: ...


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
        self.name = f"vk:{index} ({self.info.name if hasattr(self.info, 'name') else 'device'})"

    def buffer(self, array_or_nbytes):
        if isinstance(array_or_nbytes, (int, np.integer)):
            return self.device.buffer(max(4, int(array_or_nbytes)))
        arr = np.ascontiguousarray(array_or_nbytes)
        if arr.nbytes == 0:
            return self.device.buffer(4)
        return self.device.buffer(arr)

    def read(self, buf, dtype=np.uint8, shape=None) -> np.ndarray:
        return buf.read(dtype, shape)

    def write(self, buf, array) -> None:
        buf.write(array)

    def kernel(self, words, entry: str = "main", spec: dict | None = None, subgroup_size: int | None = None):
        iface = reflect(words)
        missing = unsupported_matrix_types(iface, self.info)
        if missing:
            raise vk.UnsupportedFeature(
                f"{self.info.name} does not offer these cooperative-matrix types of the module: "
                + "; ".join(missing) + " (see `hydroplane devices` for the shapes it reports)", missing=tuple(missing))
        bindings = [vk.Binding(b.set, b.binding, "uniform" if b.descriptor_type == "uniform_buffer" else "storage")
                    for b in iface.bindings]
        return self.device.pipeline(words, bindings, push_constant_size=iface.push_constant_size, spec=spec or {},
                                    entry=entry, capabilities=iface.capabilities, extensions=iface.extensions,
                                    subgroup_size=subgroup_size)

    def dispatch(self, kernel, grid=(1, 1, 1), buffers: dict | None = None, push=None):
        self.device.dispatch(kernel, tuple(grid), buffers or {}, push)

    def close(self) -> None:
        self.device.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def get_executor(device: str | int = "ref", **options) -> Executor:
    """"ref" (or None) for the reference executor, an int N (or "N") for the N-th Vulkan device."""
    if device is None or device == "ref":
        return RefExecutor(**options)
    try:
        index = int(device)
    except (TypeError, ValueError):
        raise LaunchError(f"device must be 'ref' or a Vulkan device number, not {device!r}") from None
    if options:
        raise LaunchError(f"options {sorted(options)} only apply to the reference executor")
    return VulkanExecutor(index)


def run(words, grid=(1, 1, 1), buffers: dict | None = None, *, spec: dict | None = None, push=None,
        device: str | int = "ref", subgroup_size: int | None = None, entry: str = "main",
        executor: Executor | None = None, **options) -> dict:
    """Run a kernel once: `buffers` {binding | (set, binding): ndarray} give every buffer's initial
    contents; returns {same key: ndarray} read back after the dispatch (same dtype and shape)."""
    own = executor is None
    if own:
        ref_options = dict(options)
        if subgroup_size is not None and (device is None or device == "ref"):
            ref_options["subgroup_size"] = subgroup_size
        executor = get_executor(device, **ref_options)
    try:
        arrays = {k: np.asarray(v) for k, v in (buffers or {}).items()}
        bound = {k: executor.buffer(a) for k, a in arrays.items()}
        kernel = executor.kernel(words, entry=entry, spec=spec, subgroup_size=subgroup_size)
        executor.dispatch(kernel, grid, bound, push)
        return {k: executor.read(bound[k], a.dtype, a.shape) for k, a in arrays.items()}
    finally:
        if own:
            executor.close()
