"""Shared helpers of the language tests: compile + spirv-val every module, run on ref and lavapipe.

Every test compiles through `compiled()` (which runs spirv-val on the words, so every
emitted module is validated) and runs through `run_everywhere()`, which dispatches the same
words on the reference executor and on Vulkan device 0 (lavapipe in the test userland) and
returns both results for comparison with NumPy.
"""

from __future__ import annotations

import numpy as np

from hydroplane.launch import executors as launch
from hydroplane.spirv import validate

DEVICES = ("ref", 0)
POISON = {np.dtype(np.float32): np.float32(-7.25e4), np.dtype(np.float16): np.float16(-777.0)}


def compiled(kernel, **constexprs):
    """The kernel's specialization, its words validated by spirv-val (a failure fails the test)."""
    spec = kernel.compile(**constexprs)
    validate(spec.words, env="vulkan1.3")
    return spec


def poisoned(shape, dtype) -> np.ndarray:
    """An output array filled with a value no correct kernel writes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name in ("bfloat16",):
        return np.full(shape, POISON.get(dtype, -7.25e4), dtype)
    return np.full(shape, np.iinfo(dtype).max if dtype.kind == "u" else np.iinfo(dtype).min + 3, dtype)


def push_constants(spec, scalars: dict) -> bytes | None:
    if not spec.scalars:
        return None
    data = bytearray(spec.push_constant_size)
    for p in spec.scalars:
        raw = np.asarray(scalars[p.name], p.dtype.dtype).tobytes()
        data[p.offset:p.offset + len(raw)] = raw
    return bytes(data)


def run_on(device, spec, grid, arrays: dict, scalars: dict | None = None, words=None, subgroup_size=None) -> dict:
    """Run once on one device; returns every buffer by parameter name after the dispatch."""
    buffers = {p.binding: np.array(arrays[p.name], copy=True) for p in spec.buffers}
    out = launch.run(spec.words if words is None else words, grid, buffers,
                     push=push_constants(spec, scalars or {}), device=device, subgroup_size=subgroup_size)
    return {p.name: out[p.binding] for p in spec.buffers}


def run_everywhere(spec, grid, arrays: dict, scalars: dict | None = None, words_for=None, subgroup_size=None) -> dict:
    """{device: results} on the reference executor and Vulkan device 0; `words_for(device)` may
    give other words per device (e.g. lowered for the device's cooperative-matrix family)."""
    return {device: run_on(device, spec, grid, arrays, scalars, None if words_for is None else words_for(device),
                           subgroup_size=subgroup_size if device == "ref" else None)
            for device in DEVICES}


def lavapipe_shapes(a_type: str, c_type: str) -> list[tuple[int, int, int]]:
    """The subgroup (M, N, K) shapes Vulkan device 0 reports for a_type x a_type + c_type."""
    from hydroplane import vk

    info = vk.devices()[0]
    return sorted({(s.m, s.n, s.k) for s in info.coop_shapes(a_type, c_type)})


def device_saturates(a_type: str, c_type: str, shape: tuple[int, int, int]) -> bool:
    """Whether Vulkan device 0 offers saturating accumulation for this type pair and shape."""
    from hydroplane import vk

    return any(s.saturating and (s.m, s.n, s.k) == shape for s in vk.devices()[0].coop_shapes(a_type, c_type))


def validate_compiled(kernels) -> int:
    """spirv-val every specialization the given kernels (lang.Kernel or jit.JitKernel) have compiled.

    For tests that compile through launches rather than `compiled()`; returns how many were checked."""
    checked = 0
    for k in kernels:
        lang_kernel = getattr(k, "kernel", k)
        for spec in list(lang_kernel._cache.values()):
            validate(spec.words, env="vulkan1.3")
            checked += 1
    return checked
