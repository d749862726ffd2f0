"""The checks a launch passes before any work, the same for every executor, and spec-constant packing.

Plain functions over `spirv.reflect`'s `ModuleInterface`, so that both executors (and later a
compiled-kernel object) run exactly the same checks and refuse with exactly the same one-line
message, each naming the binding, SpecId or file:

- `check_buffers(iface, arrays)`: every binding the module declares is given, none it lacks, and
  each array's dtype is the binding's declared element type. `RawBytes(array)` is the escape for
  data that is deliberately something else (bytes of a struct, bit patterns).
- `check_entry(iface, entry)`: the module has that GLCompute entry point.
- `check_bound(iface, keys)`: missing / extra bindings by key alone (for executors' own buffers).
- `check_push_constants(iface, data)`: the push-constant bytes are exactly the block's size.
- `check_grid(grid, limit)`: no zero dimension, none above the executor's maxComputeWorkGroupCount.
- `pack_spec_constants(iface, spec)`: {SpecId: bytes} by each constant's DECLARED type.
- `check_output_path(path)`: a file can be written there (checked before a run, not after).

Imports spirv (reflection) and errors only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.spirv.reflection import Binding, ModuleInterface
from hydroplane.spirv.types import Scalar, Struct

# The smallest maxComputeWorkGroupCount Vulkan allows a device; the reference executor's limit, so that
# a grid it accepts fits every Vulkan device too.
REFERENCE_MAX_WORKGROUP_COUNT = (65535, 65535, 65535)


class LaunchError(HydroplaneError):
    """A run request that cannot be carried out (unknown device, bad binding, ...)."""


class BindingError(LaunchError):
    """A buffer that is missing, extra, or of another element type than its binding declares."""


class PushConstantError(LaunchError):
    """Push-constant bytes that do not match the module's push-constant block."""


class GridError(LaunchError):
    """A grid with a zero dimension or beyond the executor's workgroup-count limit."""


class SpecConstantError(LaunchError):
    """A specialization constant the module lacks, or a value that does not fit its declared type."""


class OutputPathError(LaunchError):
    """A destination file that cannot be written."""


@dataclass(frozen=True)
class RawBytes:
    """A buffer's contents taken as bytes: no element-type check (struct data, bit patterns)."""

    array: np.ndarray

    def __init__(self, array):
        object.__setattr__(self, "array", np.asarray(array))


def scalar_dtype(t: Scalar) -> np.dtype:
    """The NumPy dtype of a declared scalar type in memory (bool: uint32, the 32-bit VkBool32 of constants)."""
    return np.dtype(np.uint32) if t.kind == "bool" else t.dtype


def binding_key(key) -> tuple[int, int]:
    """(set, binding) of a buffers-dict key: an int binding (set 0) or a (set, binding) pair."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return 0, int(key)
    try:
        dset, binding = key
        return int(dset), int(binding)
    except (TypeError, ValueError):
        raise BindingError(f"buffer key {key!r} is not a binding or a (set, binding) pair") from None


def binding_name(key: tuple[int, int]) -> str:
    return f"binding {key[1]}" if key[0] == 0 else f"set {key[0]} binding {key[1]}"


def _declared(iface: ModuleInterface) -> dict[tuple[int, int], Binding]:
    return {(b.set, b.binding): b for b in iface.bindings}


def check_entry(iface: ModuleInterface, entry: str) -> None:
    """The module has a GLCompute entry point of that name."""
    if not any(ep.name == entry and ep.execution_model == "GLCompute" for ep in iface.entry_points):
        have = ", ".join(ep.name for ep in iface.entry_points if ep.execution_model == "GLCompute") or "none"
        raise LaunchError(f"no GLCompute entry point {entry!r} (the module has: {have})")


def check_bound(iface: ModuleInterface, keys: Iterable) -> None:
    """Every binding of the module has a buffer and every buffer a binding."""
    given = {binding_key(k) for k in keys}
    declared = _declared(iface)
    extra = sorted(given - set(declared))
    if extra:
        have = ", ".join(binding_name(k) for k in sorted(declared)) or "none"
        raise BindingError(f"{binding_name(extra[0])}: the module has no such binding (it has: {have})")
    missing = sorted(set(declared) - given)
    if missing:
        b = declared[missing[0]]
        label = f" ({b.name})" if b.name else ""
        raise BindingError(f"{binding_name(missing[0])}{label}: no buffer given; the module declares it "
                           f"as {b.element} ({b.access})")


def _dtype_matches(dtype: np.dtype, t: Scalar) -> bool:
    want = scalar_dtype(t)
    if t.kind == "int" and dtype.kind in "iu":  # signedness is an interpretation; the bits are the same
        return dtype.itemsize == want.itemsize
    return dtype == want


def check_buffers(iface: ModuleInterface, arrays: Mapping) -> None:
    """Bindings complete and exact, and each array of the declared element type (RawBytes: any)."""
    check_bound(iface, arrays)
    declared = _declared(iface)
    for key, array in arrays.items():
        b = declared[binding_key(key)]
        if isinstance(array, RawBytes) or not b.element_types:
            continue
        dtype = np.asarray(array).dtype
        if any(_dtype_matches(dtype, t) for t in b.element_types):
            continue
        label = f" ({b.name})" if b.name else ""
        wanted = " or ".join(str(scalar_dtype(t)) for t in b.element_types)
        raise BindingError(f"{binding_name(binding_key(key))}{label}: a {dtype} array for a buffer of {b.element}; "
                           f"give {wanted} (or RawBytes / --raw for bytes of another layout)")


def check_push_constants(iface: ModuleInterface, data: bytes | None) -> None:
    """The push-constant bytes are exactly the size of the module's block (none when it has none)."""
    size, given = iface.push_constant_size, len(data or b"")
    if size == given:
        return
    if size == 0:
        raise PushConstantError(f"push constants: {given} bytes given, but the module has no push-constant block")
    if not data:
        raise PushConstantError(f"push constants: the module's block is {size} bytes; none were given")
    raise PushConstantError(f"push constants: {given} bytes given for the module's {size}-byte block")


def check_grid(grid, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    """The grid as three ints: each at least 1 and at most the executor's maxComputeWorkGroupCount."""
    try:
        given = tuple(int(g) for g in grid)
    except (TypeError, ValueError):
        raise GridError(f"grid {grid!r} is not up to three integers") from None
    if not 1 <= len(given) <= 3:
        raise GridError(f"grid {grid!r} is not up to three integers")
    x, y, z = given + (1,) * (3 - len(given))
    dims = (x, y, z)
    if any(d < 1 for d in dims):
        raise GridError(f"grid {dims} has a dimension below 1: no workgroup would run")
    over = [axis for axis, (d, m) in enumerate(zip(dims, limit)) if d > m]
    if over:
        axis = over[0]
        raise GridError(f"grid {dims}: {'xyz'[axis]} = {dims[axis]} is above the executor's "
                        f"maxComputeWorkGroupCount {tuple(limit)}")
    return dims


class _Unfit(Exception):
    """A value that does not fit its declared scalar type (the callers say which constant it was)."""


def scalar_bytes(t: Scalar, value) -> bytes:
    """The little-endian bytes of `value` as declared type t (bool: a 32-bit VkBool32); raises _Unfit(why)."""
    if isinstance(value, (bytes, bytearray)):
        want = 4 if t.kind == "bool" else t.width // 8
        if len(value) != want:
            raise _Unfit(f"is {len(value)} bytes; the type has {want}")
        return bytes(value)
    if isinstance(value, np.generic):
        value = value.item()
    if t.kind == "bool":
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise _Unfit("is not true/false")
        return int(bool(value)).to_bytes(4, "little")
    if t.kind == "int":
        if isinstance(value, float):
            if not value.is_integer():
                raise _Unfit("is not an integer")
            value = int(value)
        if not isinstance(value, int):
            raise _Unfit("is not an integer")
        low, high = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, (1 << t.width) - 1)
        if not low <= value <= high:
            raise _Unfit(f"does not fit {t.name} ({low} .. {high})")
        return value.to_bytes(t.width // 8, "little", signed=t.signed)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Unfit("is not a number")
    dtype = scalar_dtype(t)
    try:
        as_float = float(value)
    except OverflowError:
        raise _Unfit(f"is beyond the range of {t.name}") from None
    with np.errstate(over="ignore"):
        packed = np.array([as_float], np.float64).astype(dtype)
    if math.isfinite(as_float) and not np.isfinite(packed[0].astype(np.float64)):
        raise _Unfit(f"is beyond the range of {t.name}")
    return packed.tobytes()


def pack_spec_value(spec_id: int, t: Scalar, value) -> bytes:
    """The bytes of one specialization constant of declared type t (bool: a 32-bit VkBool32)."""
    try:
        return scalar_bytes(t, value)
    except _Unfit as why:
        shown = bytes(value) if isinstance(value, bytearray) else value
        raise SpecConstantError(f"specialization constant {spec_id} ({t.name}): {shown!r} {why}") from None


def pack_push_constants(iface: ModuleInterface, values: Sequence, names: Sequence[str] | None = None) -> bytes:
    """The push-constant block of the module, `values` in member order, each packed by its member's declared
    type at its Offset: the one packer of push constants (kernel[grid](...), the ops, the CLI's --push values).
    The block's bytes are exactly its size; `names` name the members in errors (default: member N)."""
    block = iface.push_constant_type
    if not isinstance(block, Struct) or not iface.push_constant_size:
        if values:
            raise PushConstantError(f"push constants: {len(values)} values given, but the module has no "
                                    "push-constant block")
        return b""
    members = block.members
    names = list(names) if names is not None else [m.name or f"member {i}" for i, m in enumerate(members)]
    if len(values) != len(members):
        raise PushConstantError(f"push constants: {len(values)} values given for the block's {len(members)} members "
                                f"({', '.join(names)})")
    data = bytearray(iface.push_constant_size)
    for name, member, value in zip(names, members, values):
        if not isinstance(member.type, Scalar) or member.offset is None:
            raise PushConstantError(f"push constants: {name} is a {member.type}; only scalar members are packed "
                                    "from values (pass the block's bytes instead)")
        try:
            raw = scalar_bytes(member.type, value)
        except _Unfit as why:
            raise PushConstantError(f"{name}: {value!r} {why}") from None
        data[member.offset:member.offset + len(raw)] = raw
    return bytes(data)


def pack_spec_constants(iface: ModuleInterface, spec: Mapping | None) -> dict[int, bytes]:
    """{SpecId: bytes} packed by each constant's declared type; an id the module lacks is an error."""
    declared = {s.spec_id: s for s in iface.spec_constants}
    packed = {}
    for spec_id, value in sorted((spec or {}).items()):
        s = declared.get(int(spec_id))
        if s is None:
            have = ", ".join(str(i) for i in sorted(declared)) or "none"
            raise SpecConstantError(f"specialization constant {spec_id}: the module has no such SpecId "
                                    f"(it has: {have})")
        packed[s.spec_id] = pack_spec_value(s.spec_id, s.type, value)
    return packed


def check_output_path(path: str | os.PathLike, what: str = "output") -> None:
    """A file can be created or replaced at path (its folder exists and is writable; it is no folder)."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise OutputPathError(f"{what}: {p} is a folder, not a file")
    if not folder.is_dir():
        raise OutputPathError(f"{what}: cannot write {p}: folder {folder} does not exist")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{what}: cannot write {p}: permission denied")
    if not p.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{what}: cannot write {p}: folder {folder} is not writable")
