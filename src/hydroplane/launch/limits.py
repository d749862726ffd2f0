"""What a module asks of a device, checked against the device's limits before any driver sees it.

A driver trusts the module it is given: lavapipe crashes (SIGSEGV, SIGFPE, the OOM killer) on
modules that spirv-val accepts but that ask for more than the device reports, and on modules that
spirv-val rejects. So every launch checks first, the same on every executor:

- `check_target_limits(compiled, target, spec)`: the entry point and its workgroup size (LocalSize,
  LocalSizeId or a WorkgroupSize constant, with the given spec constants applied) per axis and in
  total invocations, descriptor sets below maxBoundDescriptorSets, the push-constant block within
  maxPushConstantsSize, the shared (Workgroup) memory of all its variables within
  maxComputeSharedMemorySize, cooperative-matrix dimensions within what the device reports (NV2
  flexible dimensions up to cooperativeMatrixFlexibleDimensionsMaxDimension; positive everywhere; on the
  reference executor up to REFERENCE_MAX_MATRIX_DIMENSION), an entry point that names a function, and
  Input variables that are built-ins (a compute shader has no other inputs).
- `check_buffer_sizes(iface, sizes)`: every buffer holds at least its block's fixed part (a member Offset
  or ArrayStride far beyond the buffer is refused here, not left to the driver).
- `check_with_validator(words, env)`: spirv-val on a module from outside hydroplane's own builder,
  cached per module; when spirv-val is missing it says so once on stderr and lets the module pass.

Each refusal is a `LimitError` (a LaunchError) whose one-line message names the limit and its value.
Imports launch.checks, spirv and lang.disk_cache (what earlier processes read from the same words, and what
spirv-val accepted) only.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping

from hydroplane.lang import disk_cache
from hydroplane.launch.checks import BindingError, LaunchError, binding_key, binding_name, check_entry
from hydroplane.spirv import grammar, types
from hydroplane.spirv.binary import SpirvError, as_words, decode, to_bytes
from hydroplane.spirv.compiled import CompiledKernel
from hydroplane.spirv.enums import Decoration, StorageClass
from hydroplane.spirv.target import Target
from hydroplane.spirv.validation import ValidationError, ValidatorNotFound, ValidatorTooOld, find_validator, validate

Op = grammar.Op


# No device offers a larger cooperative matrix; the reference executor refuses one rather than
# spending gigabytes (a 32784 x 32784 matrix per subgroup) on a module that no GPU would run.
REFERENCE_MAX_MATRIX_DIMENSION = 4096
# Vulkan puts no bound on a binding number, but drivers size a set's tables by the largest one (lavapipe
# crashes on binding 4294967295): hydroplane's Vulkan executor takes binding numbers up to this.
MAX_BINDING_NUMBER = 65535
BUFFER_DESCRIPTORS = ("storage_buffer", "uniform_buffer")
# spirv-val's block-layout options, by the Vulkan feature (struct key, bit) that allows the layout
VALIDATOR_LAYOUT_OPTIONS = {("scalar_block_layout", "scalarBlockLayout"): "--scalar-block-layout"}


class LimitError(LaunchError):
    """A module that asks for more than the device offers (workgroup size, shared memory, sets ...)."""


def effective_local_size(compiled: CompiledKernel, spec: Mapping[int, bytes] | None = None) -> tuple[int, int, int]:
    """The entry point's workgroup size with the packed spec constants `spec` ({SpecId: bytes}) applied."""
    ep = compiled.interface.entry_point(compiled.entry)
    if ep.local_size is None:
        raise LimitError(f"entry point {compiled.entry!r} has no LocalSize, LocalSizeId or WorkgroupSize: "
                         "its workgroup size is unknown")
    size = list(ep.local_size)
    for axis, spec_id in enumerate(ep.local_size_spec_ids):
        if spec_id is not None and spec and spec_id in spec:
            size[axis] = int.from_bytes(spec[spec_id][:4], "little")
    return size[0], size[1], size[2]


def _check_workgroup(size: tuple[int, int, int], target: Target, entry: str) -> None:
    for axis, (n, limit) in enumerate(zip(size, target.max_workgroup_size)):
        if n < 1:
            raise LimitError(f"entry point {entry!r}: workgroup size {size} has {'xyz'[axis]} = {n}; each axis "
                             "needs at least 1")
        if n > limit:
            raise LimitError(f"entry point {entry!r}: workgroup size {'xyz'[axis]} = {n} is above {target.name}'s "
                             f"maxComputeWorkGroupSize {tuple(target.max_workgroup_size)}")
    total = size[0] * size[1] * size[2]
    if total > target.max_workgroup_invocations:
        raise LimitError(f"entry point {entry!r}: workgroup size {size} is {total} invocations; {target.name}'s "
                         f"maxComputeWorkGroupInvocations is {target.max_workgroup_invocations}")


def _check_sets_and_push(compiled: CompiledKernel, target: Target) -> None:
    iface = compiled.interface
    for b in iface.bindings:
        if not target.is_reference and b.descriptor_type not in BUFFER_DESCRIPTORS:
            raise LimitError(f"set {b.set} binding {b.binding}{f' ({b.name})' if b.name else ''} is a "
                             f"{b.descriptor_type.replace('_', ' ')}: hydroplane's Vulkan executor binds buffers only")
        if not target.is_reference and b.binding > MAX_BINDING_NUMBER:
            raise LimitError(f"set {b.set} binding {b.binding}: binding numbers above {MAX_BINDING_NUMBER} are "
                             "refused (drivers size descriptor tables by the largest one)")
        if b.set >= target.max_bound_descriptor_sets:
            raise LimitError(f"set {b.set} binding {b.binding}: descriptor set {b.set} is beyond {target.name}'s "
                             f"maxBoundDescriptorSets {target.max_bound_descriptor_sets} (sets 0 .. "
                             f"{target.max_bound_descriptor_sets - 1})")
    if iface.push_constant_size > target.max_push_constants:
        raise LimitError(f"the push-constant block is {iface.push_constant_size} bytes; {target.name}'s "
                         f"maxPushConstantsSize is {target.max_push_constants}")


def check_buffer_sizes(iface, sizes: Mapping) -> None:
    """Each buffer ({key: bytes}) holds at least the fixed part of its binding's block."""
    declared = {(b.set, b.binding): b for b in iface.bindings}
    for key, nbytes in sizes.items():
        b = declared.get(binding_key(key))
        if b is None or b.descriptor_type not in ("storage_buffer", "uniform_buffer") or nbytes is None:
            continue
        if nbytes < b.size:
            label = f" ({b.name})" if b.name else ""
            raise BindingError(f"{binding_name(binding_key(key))}{label}: the buffer has {nbytes} bytes; the block "
                               f"{b.element} needs at least {b.size} (its fixed part, by its Offsets and strides)")


def _abstract_size(t: types.Type) -> int:
    """Bytes of a Workgroup variable's type without an explicit layout (bools take 4 bytes, as a VkBool32)."""
    if isinstance(t, types.Scalar):
        return 4 if t.kind == "bool" else t.width // 8
    if isinstance(t, types.Vector):
        return t.count * _abstract_size(t.component)
    if isinstance(t, types.Matrix):
        return t.columns * _abstract_size(t.column)
    if isinstance(t, types.Array) and t.length is not None:
        return t.length * _abstract_size(t.element)
    if isinstance(t, types.Struct):
        return sum(_abstract_size(m.type) for m in t.members)
    raise LimitError(f"a Workgroup variable of type {t} has no size")


def shared_memory_bytes(module) -> int:
    """Bytes of all Workgroup-storage variables of a module (the driver's shared-memory demand)."""
    table = types.read_types(module)
    total = 0
    for inst in module.instructions:
        if inst.opcode == Op.Variable and inst.operands and inst.operands[0].value == StorageClass.Workgroup:
            pointer = table[inst.result_type]
            if not isinstance(pointer, types.Pointer):
                raise LimitError(f"Workgroup variable %{inst.result_id} has the non-pointer type {pointer}")
            try:
                total += types.size(pointer.pointee)
            except (types.TypeModelError, SpirvError):  # no explicit layout (a bool, say): the abstract size
                total += _abstract_size(pointer.pointee)
    return total


def _check_entry_function(module, entry: str) -> None:
    """The entry point names an OpFunction of the module."""
    functions = {i.result_id for i in module.instructions if i.opcode == Op.Function}
    for inst in module.instructions:
        if inst.opcode == Op.EntryPoint and inst.operands[2].value == entry and inst.operands[1].value not in functions:
            raise LimitError(f"entry point {entry!r} names %{inst.operands[1].value}, which is no OpFunction "
                             "of the module")


def _check_matrix_dimensions(module) -> None:
    """Every cooperative-matrix type whose dimensions are constants has positive ones."""
    table = types.read_types(module)
    for inst in module.instructions:
        if inst.opcode in (Op.TypeCooperativeMatrixKHR, Op.TypeCooperativeMatrixNV):
            for operand in inst.operands[2:4]:
                const = table.defs.get(operand.value)
                if const is not None and const.opcode == Op.Constant and table.constant_int(operand.value) <= 0:
                    raise LimitError(f"cooperative-matrix type %{inst.result_id}: a cooperative matrix needs positive "
                                     f"dimensions, not {table.constant_int(operand.value)}")


def _check_inputs(module, entry: str) -> None:
    """Every Input variable is a built-in: compute shaders have no user inputs (lavapipe crashes on one)."""
    table = types.read_types(module)
    for inst in module.instructions:
        if inst.opcode == Op.Variable and inst.operands and inst.operands[0].value == StorageClass.Input:
            if table.decoration(inst.result_id, Decoration.BuiltIn) is None:
                name = table.names.get(inst.result_id) or f"%{inst.result_id}"
                raise LimitError(f"entry point {entry!r}: Input variable {name} has no BuiltIn decoration "
                                 "(a compute shader's only inputs are built-ins)")


def _check_matrices(compiled: CompiledKernel, target: Target) -> None:
    """Cooperative-matrix dimensions: a fixed shape the device lists, or NV2 flexible within its maximum."""
    if target.is_reference:
        for t in compiled.matrix_types:
            if max(t.rows, t.cols) > REFERENCE_MAX_MATRIX_DIMENSION:
                raise LimitError(f"{t}: {max(t.rows, t.cols)} is above the reference executor's largest matrix "
                                 f"dimension {REFERENCE_MAX_MATRIX_DIMENSION} (no device offers more)")
        return
    limit = target.nv2_max_dimension
    for t in compiled.matrix_types:
        fixed = any(s.covers(t) for s in (*target.coop_khr, *target.coop_nv) if not s.granularity)
        if fixed or not limit:
            continue
        if max(t.rows, t.cols) > limit:
            raise LimitError(f"{t}: {max(t.rows, t.cols)} is above {target.name}'s "
                             f"cooperativeMatrixFlexibleDimensionsMaxDimension {limit}")


def _checked_words(compiled: CompiledKernel) -> int:
    """What check_target_limits reads from the words alone (an entry function, positive matrix dimensions, inputs
    that are built-ins: raised when not), and the shared memory they declare; kept on disk by the words' hash."""
    module = decode(compiled.words)
    try:
        _check_entry_function(module, compiled.entry)
        _check_matrix_dimensions(module)
        _check_inputs(module, compiled.entry)
        return shared_memory_bytes(module)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, RecursionError) as err:
        raise LimitError(f"cannot read the module's variables: {type(err).__name__}: {err}") from None


def check_target_limits(compiled: CompiledKernel, target: Target | None = None,
                        spec: Mapping[int, bytes] | None = None) -> tuple[int, int, int]:
    """Refuse a module that asks more than `target` (default: the kernel's own) offers; return its local size."""
    target = target or compiled.target
    check_entry(compiled.interface, compiled.entry)
    size = effective_local_size(compiled, spec)
    _check_workgroup(size, target, compiled.entry)
    _check_sets_and_push(compiled, target)
    key = disk_cache.digest_of(hashlib.sha256(to_bytes(as_words(compiled.words))).digest(), compiled.entry) \
        if disk_cache.enabled() else None
    shared = disk_cache.cached("limits", key, lambda: _checked_words(compiled))
    if shared > target.shared_memory:
        raise LimitError(f"the module's Workgroup variables need {shared} bytes of shared memory; {target.name}'s "
                         f"maxComputeSharedMemorySize is {target.shared_memory}")
    _check_matrices(compiled, target)
    return size


_validated: dict[tuple[str, ...], None] = {}  # (module hash, env, layout options) of modules spirv-val accepted
_said_missing: list[str] = []


def check_with_validator(words, env: str = "vulkan1.3", layouts: tuple[str, ...] = ()) -> bool:
    """spirv-val on a module before a driver sees it (cached per module, in memory and on disk: lang.disk_cache's
    `validated`, keyed by the words, the options and the validator file); False when no validator ran.

    `layouts` are the block-layout options the device's features allow ('--scalar-block-layout', ...).
    A missing (or too old) spirv-val is said once on stderr; the module then reaches the driver unchecked."""
    data = to_bytes(as_words(words))
    key = (hashlib.sha256(data).hexdigest(), env, *layouts)
    if key in _validated:
        return True
    try:
        on_disk = _validation_key(key)
        if on_disk is not None and disk_cache.remembered("validated", on_disk):
            _validated[key] = None
            return True
        validate(data, env, tuple(layouts))
    except (ValidatorNotFound, ValidatorTooOld) as err:
        if not _said_missing:
            _said_missing.append(str(err))
            print(f"hydroplane: warning: modules reach the Vulkan driver unvalidated: {err}", file=sys.stderr)
        return False
    except ValidationError as err:
        first = err.message.strip().splitlines()[0] if err.message.strip() else "rejected"
        raise LimitError(f"spirv-val ({env}) rejects the module, so it is not given to the driver: {first}") from None
    _validated[key] = None
    if on_disk is not None:
        disk_cache.remember("validated", on_disk)
    return True


def _validation_key(key: tuple[str, ...]) -> str | None:
    """The disk cache's name for spirv-val's acceptance of a module (`key`) by the validator file that would run
    (its real path, size and time of change: another spirv-val is asked again); None when the disk cache is off or
    no validator is found."""
    if not disk_cache.enabled():
        return None
    try:
        validator = find_validator()
        found = os.stat(validator)
    except (OSError, ValidatorNotFound):
        return None
    return disk_cache.digest_of(os.path.realpath(validator), found.st_size, found.st_mtime_ns, key)
