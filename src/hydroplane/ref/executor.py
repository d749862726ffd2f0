"""`hydroplane.ref.Executor`: the executor interface (buffers, kernels, dispatch) on the CPU.

    ex = Executor(subgroup_size=32)
    a = ex.buffer(np.arange(64, dtype=np.float32)); out = ex.buffer(256)
    k = ex.kernel(words, entry="main", spec={0: 64})
    ex.dispatch(k, grid=(1, 1, 1), buffers={0: a, 1: out})
    ex.read(out, np.float32)

Workgroups run in batches (at most `max_lanes` lanes at once); every batch is one lane vector.
With diagnostics="collect", `dispatch` returns the list of `Diagnostic`s instead of raising.

Two limits stop a run that would not end: `max_blocks` (the step budget: basic-block executions of
one batch, DEFAULT_MAX_BLOCKS unless given) and `time_limit` (seconds of wall clock per dispatch, none
unless given); either raises ExecutionLimitError naming the limit and how to raise it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.ref.access import store_value
from hydroplane.ref.constants import for_dispatch
from hydroplane.ref.context import ExecContext
from hydroplane.ref.control import run_function
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.errors import Diagnostic, ExecutionLimitError, InvalidModuleError
from hydroplane.ref.lanes import Lanes
from hydroplane.ref.layout import size_of, value_dtype, value_shape
from hydroplane.ref.memory import Region, buffer_address
from hydroplane.ref.program import Program
from hydroplane.ref.values import Cell, Pointer
from hydroplane.ref.visibility import Visibility
from hydroplane.spirv import types as T
from hydroplane.spirv.enums import BuiltIn, StorageClass

SUBGROUP_SIZES = (8, 16, 32, 64)  # also 1, 2, 4 for tests that want tiny subgroups
MAX_WORKGROUP_INVOCATIONS = 1 << 16
DEFAULT_MAX_BLOCKS = 1 << 18  # an endless loop stops within 10 s on a busy 2-core machine; longer kernels raise it
BATCH_MEMORY_BYTES = 1 << 30  # the variables of one batch of workgroups: more workgroups, smaller batches


class Buffer:
    """Bytes of a buffer the executor owns; `address` is its PhysicalStorageBuffer device address."""

    def __init__(self, nbytes: int, number: int):
        self.nbytes = nbytes
        self.data = np.zeros(max(8, -(-nbytes // 8) * 8), np.uint8)
        self.address = buffer_address(number)
        self.released = False

    def release(self) -> None:
        self.released = True

    def __repr__(self) -> str:
        return f"ref.Buffer({self.nbytes} bytes)"


@dataclass(eq=False)
class Kernel:
    """A loaded program's entry point with its local size and subgroup size (None: the executor's)."""

    program: Program
    entry: str
    function: int
    local_size: tuple[int, int, int]
    subgroup_size: int | None


class Executor:
    """The reference executor: same interface as the Vulkan executor, plus diagnostics."""

    name = "ref"

    # The smallest maxComputeWorkGroupCount Vulkan allows: a grid the reference executor takes fits any device.
    max_workgroup_count = (65535, 65535, 65535)

    def __init__(self, subgroup_size: int = 32, diagnostics: str = "raise", checks: bool = True,
                 max_lanes: int = 1 << 15, *, coopmat_distribution: str | cm.ElementDistribution | None = None,
                 max_blocks: int | None = None,
                 progress: Callable[[int, int], None] | None = None, time_limit: float | None = None,
                 check_alignment: bool = True):
        if subgroup_size not in (1, 2, 4, *SUBGROUP_SIZES):
            raise InvalidModuleError(f"subgroup size {subgroup_size} is not one of {SUBGROUP_SIZES}")
        if diagnostics not in ("raise", "collect"):
            raise InvalidModuleError(f"diagnostics must be 'raise' or 'collect', not {diagnostics!r}")
        self.subgroup_size = subgroup_size
        self.diagnostics = diagnostics
        self.checks = checks
        self.max_lanes = max_lanes
        self.progress = progress  # called as progress(workgroups done, workgroups in all) after each batch
        self.options: dict = {}  # read by the op handlers (ref.coopmat_ops, ExecContext)
        # cooperative-matrix loads/stores against Vulkan's alignment rule ('misaligned' diagnostics)
        self.options["check_alignment"] = check_alignment
        if coopmat_distribution is not None:  # a name ('strided', 'blocked') or a distribution, e.g. from_table
            if isinstance(coopmat_distribution, str):
                named = {d.name: d for d in (cm.STRIDED, cm.BLOCKED)}
                if coopmat_distribution not in named:
                    raise InvalidModuleError(f"coopmat_distribution must be one of {', '.join(named)} or an "
                                             f"ElementDistribution, not {coopmat_distribution!r}")
                coopmat_distribution = named[coopmat_distribution]
            self.options["coopmat_distribution"] = coopmat_distribution
        if max_blocks is not None and (isinstance(max_blocks, bool) or not isinstance(max_blocks, int)
                                       or max_blocks < 1):
            raise InvalidModuleError(f"max_blocks must be a positive integer, not {max_blocks!r}")
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise InvalidModuleError(f"time_limit must be a positive number of seconds, not {time_limit!r}")
        self.options["max_blocks"] = DEFAULT_MAX_BLOCKS if max_blocks is None else max_blocks
        self.time_limit = time_limit
        self.buffers: list[Buffer] = []
        self._numbered = 0
        self.last_report: list[Diagnostic] = []
        self.last_stats: dict = {}

    # -- buffers ------------------------------------------------------------------------------------
    def buffer(self, array_or_nbytes) -> Buffer:
        """A buffer: zero-filled of n bytes, or a copy of an array's bytes."""
        if isinstance(array_or_nbytes, (int, np.integer)):
            if array_or_nbytes < 0:
                raise InvalidModuleError(f"buffer size {array_or_nbytes} is negative")
            buf = Buffer(int(array_or_nbytes), self._numbered)
        else:
            arr = np.ascontiguousarray(array_or_nbytes)
            buf = Buffer(arr.nbytes, self._numbered)
            buf.data[:arr.nbytes] = arr.reshape(-1).view(np.uint8)
        self.buffers.append(buf)
        self._numbered += 1  # device addresses stay unique when buffers are released
        return buf

    def read(self, buf: Buffer, dtype=np.uint8, shape=None) -> np.ndarray:
        dtype = np.dtype(dtype)
        if shape is None:
            count = buf.nbytes // dtype.itemsize
        else:
            count = int(np.prod(shape, dtype=np.int64))
            if count * dtype.itemsize > buf.nbytes:
                raise InvalidModuleError(f"reading {shape} of {dtype} ({count * dtype.itemsize} bytes) from a "
                                         f"buffer of {buf.nbytes} bytes")
        out = buf.data[:count * dtype.itemsize].view(dtype).copy()
        return out.reshape(shape) if shape is not None else out

    def write(self, buf: Buffer, array) -> None:
        arr = np.ascontiguousarray(array)
        if arr.nbytes > buf.nbytes:
            raise InvalidModuleError(f"writing {arr.nbytes} bytes into a buffer of {buf.nbytes}")
        buf.data[:arr.nbytes] = arr.reshape(-1).view(np.uint8)

    # -- kernels -------------------------------------------------------------------------------------
    def kernel(self, words, entry: str = "main", spec: dict | None = None, subgroup_size: int | None = None, *,
               local_size: tuple[int, int, int] | None = None) -> Kernel:
        """`local_size`: the workgroup size the caller already knows (the launch layer's, from its CompiledKernel's
        interface); None reads it from the module (LocalSize, LocalSizeId or a WorkgroupSize constant)."""
        program = Program(words, spec)
        ep = program.entry_points.get(entry)
        if ep is None:
            have = ", ".join(sorted(program.entry_points)) or "none"
            raise InvalidModuleError(f"no GLCompute entry point {entry!r} (entry points: {have})")
        unknown = set(program.spec) - program.used_spec_ids
        if unknown:
            raise InvalidModuleError(f"specialization constant ids {sorted(unknown)} are not in the module "
                                     f"(it has {sorted(program.used_spec_ids) or 'none'})")
        if subgroup_size is not None and subgroup_size not in (1, 2, 4, *SUBGROUP_SIZES):
            raise InvalidModuleError(f"subgroup size {subgroup_size} is not one of {SUBGROUP_SIZES}")
        try:
            if local_size is None:
                local_size = _local_size(program, ep)
        except HydroplaneError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, AttributeError, OverflowError, MemoryError) as exc:
            raise InvalidModuleError(f"malformed module: {type(exc).__name__}: {exc} (workgroup size)") from exc
        return Kernel(program, entry, ep.function, local_size, subgroup_size)

    # -- dispatch ------------------------------------------------------------------------------------
    @np.errstate(all="ignore")  # IEEE results are the semantics: NaN, inf and overflow are values, not warnings
    def dispatch(self, kernel: Kernel, grid=(1, 1, 1), buffers: dict | None = None, push=None):
        grid = tuple(int(g) for g in (tuple(grid) + (1, 1, 1))[:3])
        if any(g < 0 for g in grid):
            raise InvalidModuleError(f"grid {grid} has a negative size")
        bound = _bindings(buffers or {})
        push_bytes = _push_bytes(push)
        sg = kernel.subgroup_size or self.subgroup_size
        total = grid[0] * grid[1] * grid[2]
        invocations = int(np.prod(kernel.local_size))
        wg_lanes = -(-invocations // sg) * sg
        per_batch = max(1, self.max_lanes // wg_lanes)
        per_workgroup, largest = _memory_per_workgroup(kernel.program, invocations)
        if per_workgroup > BATCH_MEMORY_BYTES:
            raise InvalidModuleError(f"{largest}: one workgroup's variables need {per_workgroup} bytes (with race "
                                     f"tracking), more than the executor's {BATCH_MEMORY_BYTES} bytes")
        if per_workgroup:  # batches whose Function, Private and Workgroup variables fit the budget
            per_batch = max(1, min(per_batch, BATCH_MEMORY_BYTES // per_workgroup))
        report: list[Diagnostic] | None = [] if self.diagnostics == "collect" else None
        stats = {"instructions": 0, "batches": 0}
        if self.time_limit is not None:
            self.options["deadline"] = (time.monotonic() + self.time_limit, self.time_limit)
        constants = kernel.program.constants
        visibility = Visibility(grid, total) if self.checks and kernel.program.device_sync else None
        if kernel.program.dispatch_constants:
            one_workgroup = Lanes(sg, kernel.local_size, np.zeros((1, 3), np.uint32), grid)
            constants = for_dispatch(kernel.program, one_workgroup, self.options)
        for start in range(0, total, per_batch):
            lanes = Lanes(sg, kernel.local_size, _workgroup_ids(grid, start, min(total, start + per_batch)), grid)
            ctx = ExecContext(kernel.program, lanes, options=self.options, globals=dict(constants),
                              report=report)
            ctx.memory.local_index = lanes.local_index
            ctx.memory.subgroup_size = lanes.subgroup_size
            ctx.memory.checks = self.checks
            if visibility is not None:  # buffer memory handed between workgroups: ordered by release and acquire
                visibility.batch(start, lanes.workgroup)
                ctx.memory.visibility = visibility
            ctx.memory.psb_regions = [Region(f"buffer @{b.address:#x}", "PhysicalStorageBuffer", b.nbytes,
                                             data=b.data.reshape(1, -1)) for b in self.buffers]
            try:
                _bind_globals(ctx, kernel, bound, push_bytes)
                entry = kernel.program.functions[kernel.function]
            except HydroplaneError:
                raise
            except (KeyError, IndexError, ValueError, TypeError, AttributeError, OverflowError, MemoryError) as exc:
                raise InvalidModuleError(f"malformed module: {type(exc).__name__}: {exc} "
                                         "(while binding its variables)") from exc
            run_function(ctx, entry, [])
            stats["instructions"] += ctx.stats["instructions"]
            stats["batches"] += 1
            if self.progress is not None:
                self.progress(min(total, start + per_batch), total)
            deadline = self.options.get("deadline") if self.time_limit is not None else None
            if deadline is not None and start + per_batch < total and time.monotonic() > deadline[0]:
                raise ExecutionLimitError(Diagnostic("limit", f"time limit: the dispatch ran longer than "
                                                     f"{deadline[1]:g} s ({min(total, start + per_batch)} of {total} "
                                                     "workgroups done); raise it with Executor(time_limit=...) or "
                                                     "`hydroplane run --timeout S`"))
        self.last_report = report or []
        self.last_stats = stats
        return report if report is not None else None

    def close(self) -> None:
        for b in self.buffers:
            b.release()
        self.buffers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _memory_per_workgroup(program: Program, invocations: int) -> tuple[int, str]:
    """Bytes that the memory-backed variables of one workgroup take (a per-invocation copy of each Function
    and Private variable, one of each Workgroup variable with its race-tracking arrays), and the largest."""
    per_lane = per_group = 0
    largest = (0, "")
    variables = list(program.global_variables) + [v for fn in program.functions.values() for v in fn.variables]
    for var in variables:
        if var.result_id in program.register_variables:
            continue
        try:
            nbytes = T.size_of(var.type.pointee)
        except (HydroplaneError, AttributeError, TypeError, ValueError):
            continue  # the dispatch reports what is wrong with it
        storage = var.type.storage
        name = program.names.get(var.result_id) or f"%{var.result_id}"
        if storage in ("Function", "Private"):
            per_lane += nbytes
            largest = max(largest, (nbytes * invocations,
                                    f"{storage} variable {name} needs {nbytes} bytes x {invocations} invocations"))
        elif storage == "Workgroup":
            per_group += nbytes * 10  # the bytes, written flags, writer and reader ids
            largest = max(largest, (nbytes * 10, f"Workgroup variable {name} needs {nbytes} bytes"))
    return per_lane * invocations + per_group, largest[1]


def _workgroup_ids(grid: tuple[int, int, int], start: int, stop: int) -> np.ndarray:
    """Workgroup ids start .. stop-1 in x-fastest order, as (n, 3) uint32."""
    flat = np.arange(start, stop, dtype=np.int64)
    x, rest = flat % grid[0], flat // grid[0]
    return np.stack([x, rest % grid[1], rest // grid[1]], axis=-1).astype(np.uint32)


def _local_size(program: Program, ep) -> tuple[int, int, int]:
    size = None
    if "LocalSize" in ep.modes:
        size = tuple(int(v) for v in ep.modes["LocalSize"])
    elif "LocalSizeId" in ep.modes:
        size = tuple(program.const_int(i) for i in ep.modes["LocalSizeId"])
    if program.workgroup_size_constant is not None:
        wgs = program.constants.get(program.workgroup_size_constant)
        if wgs is not None:
            size = tuple(int(v) for v in np.asarray(wgs).reshape(-1)[:3])
    if size is None:
        raise InvalidModuleError(f"entry point {ep.name!r} has no LocalSize, LocalSizeId or WorkgroupSize")
    if any(s < 1 for s in size) or int(np.prod(size)) > MAX_WORKGROUP_INVOCATIONS:
        raise InvalidModuleError(f"entry point {ep.name!r} has workgroup size {size} (1 to "
                                 f"{MAX_WORKGROUP_INVOCATIONS} invocations)")
    return size


def _bindings(buffers: dict) -> dict[tuple[int, int], Buffer]:
    out = {}
    for key, buf in buffers.items():
        try:
            k = (0, int(key)) if isinstance(key, (int, np.integer)) else (int(key[0]), int(key[1]))
        except (TypeError, ValueError, IndexError):
            raise InvalidModuleError(f"buffer key {key!r} is not a binding or a (set, binding) pair") from None
        if k[0] < 0 or k[1] < 0:
            raise InvalidModuleError(f"binding {k} is negative")
        if not isinstance(buf, Buffer):
            raise InvalidModuleError(f"binding {k}: {type(buf).__name__} is not a buffer of this executor")
        if buf.released:
            raise InvalidModuleError(f"binding {k}: the buffer was released")
        out[k] = buf
    return out


def _push_bytes(push) -> bytes:
    if push is None:
        return b""
    if isinstance(push, (bytes, bytearray, memoryview)):
        return bytes(push)
    return np.ascontiguousarray(push).tobytes()


BUILTIN_VALUES = {
    "GlobalInvocationId": lambda lanes: lanes.global_id(),
    "LocalInvocationId": lambda lanes: lanes.local_id(),
    "WorkgroupId": lambda lanes: lanes.workgroup_ids[lanes.workgroup],
    "NumWorkgroups": lambda lanes: np.broadcast_to(np.array(lanes.num_workgroups, np.uint32), (lanes.count, 3)),
    "WorkgroupSize": lambda lanes: np.broadcast_to(np.array(lanes.local_size, np.uint32), (lanes.count, 3)),
    "LocalInvocationIndex": lambda lanes: lanes.local_index.astype(np.uint32),
    "SubgroupId": lambda lanes: (lanes.local_index // lanes.subgroup_size).astype(np.uint32),
    "SubgroupLocalInvocationId": lambda lanes: (lanes.local_index % lanes.subgroup_size).astype(np.uint32),
    "NumSubgroups": lambda lanes: np.full(lanes.count, lanes.subgroups_per_workgroup, np.uint32),
    "SubgroupSize": lambda lanes: np.full(lanes.count, lanes.subgroup_size, np.uint32),
    "SubgroupEqMask": lambda lanes: _subgroup_mask(lanes, lambda i, j: j == i),
    "SubgroupGeMask": lambda lanes: _subgroup_mask(lanes, lambda i, j: j >= i),
    "SubgroupGtMask": lambda lanes: _subgroup_mask(lanes, lambda i, j: j > i),
    "SubgroupLeMask": lambda lanes: _subgroup_mask(lanes, lambda i, j: j <= i),
    "SubgroupLtMask": lambda lanes: _subgroup_mask(lanes, lambda i, j: j < i),
}


def _subgroup_mask(lanes: Lanes, rule) -> np.ndarray:
    i = (lanes.local_index % lanes.subgroup_size)[:, None]
    j = np.arange(128)[None, :]
    bits = rule(i, j) & (j < lanes.subgroup_size)
    packed = np.packbits(bits.astype(np.uint8), axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view(np.uint32)


def _builtin_value(lanes: Lanes, name: str, t: T.Type) -> np.ndarray:
    fn = BUILTIN_VALUES.get(name)
    if fn is None:
        raise InvalidModuleError(f"built-in {name} is not available to compute shaders")
    value = np.asarray(fn(lanes))
    shape = value_shape(t)
    if shape is not None and value.shape[1:] != shape:
        value = value[(slice(None),) + tuple(slice(0, n) for n in shape)]
    return value.astype(value_dtype(t))


def _bind_globals(ctx: ExecContext, kernel: Kernel, bound: dict, push: bytes) -> None:
    program = kernel.program
    lanes = ctx.lanes
    for var in program.global_variables:
        rid = var.result_id
        t = program.pointee(var.type)
        storage = var.type.storage
        name = program.names.get(rid) or (t.name if isinstance(t, T.Struct) else None) or f"%{rid}"
        init = var.args[0] if var.args else None
        if storage in (StorageClass.StorageBuffer, StorageClass.Uniform, StorageClass.ShaderRecordBufferKHR):
            if isinstance(t, T.Array) and isinstance(t.element, T.Struct) and t.element.block:
                raise InvalidModuleError(f"{name} is an array of descriptors; the reference executor binds "
                                         "one buffer per binding")
            ds = program.decoration(rid, "DescriptorSet")
            bn = program.decoration(rid, "Binding")
            key = (ds[0] if ds else 0, bn[0] if bn else 0)
            buf = bound.get(key)
            if buf is None:
                ctx.globals[rid] = _Unbound(key, name, t)
                continue
            region = Region(f"{name} (set {key[0]} binding {key[1]})", storage.name, buf.nbytes,
                            data=buf.data.reshape(1, -1))
            ctx.globals[rid] = Pointer(region, np.zeros(1, np.int64), t)
        elif storage == StorageClass.PushConstant:
            need = size_of(t)
            data = np.zeros((1, max(8, -(-max(need, len(push)) // 8) * 8)), np.uint8)
            data[0, :len(push)] = np.frombuffer(push, np.uint8)
            region = Region(f"{name} (push constants)", storage.name, len(push), data=data)
            ctx.globals[rid] = Pointer(region, np.zeros(1, np.int64), t)
        elif storage == StorageClass.Workgroup:
            region = Region(name, storage.name, size_of(t), rows=lanes.workgroups, row_of_lane=lanes.workgroup,
                            track=True)
            ctx.memory.tracked_regions.append(region)
            ctx.globals[rid] = Pointer(region, np.zeros(1, np.int64), t)
            if init is not None:  # initialised before any invocation runs: written, owned by none
                checks, ctx.memory.checks = ctx.memory.checks, False
                store_value(ctx, ctx.globals[rid], t, ctx.get(init))
                ctx.memory.checks = checks
                region.written[:] = True
        elif storage == StorageClass.Private:
            if rid in program.register_variables:
                cell = Cell(int(np.count_nonzero(lanes.valid)), name, ctx.get(init) if init is not None else None)
                ctx.globals[rid] = Pointer(None, np.zeros(1, np.int64), t, var=cell)
            else:
                region = Region(name, storage.name, size_of(t), rows=lanes.count, row_of_lane=np.arange(lanes.count))
                ctx.globals[rid] = Pointer(region, np.zeros(1, np.int64), t)
                if init is not None:
                    store_value(ctx, ctx.globals[rid], t, ctx.get(init))
        elif storage == StorageClass.Input:
            builtin = program.decoration(rid, "BuiltIn")
            if builtin is None:
                raise InvalidModuleError(f"input variable {name} is not a built-in")
            bname = BuiltIn(builtin[0]).name
            value = _builtin_value(lanes, bname, t)
            region = Region(bname, storage.name, size_of(t), rows=lanes.count, row_of_lane=np.arange(lanes.count))
            region.data[:, :value.itemsize * int(np.prod(value.shape[1:], dtype=np.int64))] = \
                np.ascontiguousarray(value).view(np.uint8).reshape(lanes.count, -1)
            ctx.globals[rid] = Pointer(region, np.zeros(1, np.int64), t)
        else:
            ctx.globals[rid] = _Unbound(None, f"{name} ({storage.name})", t)


class _Unbound(Pointer):
    """A variable with nothing behind it; using it is a diagnostic naming it."""

    def __init__(self, key, name, pointee):
        super().__init__(_UnboundRegion(key, name), np.zeros(1, np.int64), pointee)


class _UnboundRegion:
    storage = "unbound"
    row_of_lane = None
    track = False
    nbytes = 0
    data = np.zeros((1, 8), np.uint8)

    def __init__(self, key, name):
        self.key = key
        self.unsupported = key is None
        self.name = f"{name}: no buffer bound at set {key[0]} binding {key[1]}" if key else name

    def rows(self, lanes):
        return 0
