"""Reflect what a module needs from whoever runs it: entry points, bindings, constants.

`reflect(words) -> ModuleInterface` reads the decoded module (no execution) and reports
entry points with their workgroup size, descriptor bindings with their byte sizes,
the push-constant block size, specialization constants (SpecId, type, default) and the
declared capabilities and extensions. The Vulkan runtime gets these as plain data from
the launch layer; the reference executor uses them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydroplane.spirv import grammar, types
from hydroplane.spirv.binary import Instruction, Module, SpirvError, decode
from hydroplane.spirv.enums import BuiltIn, Decoration, Dim

Op = grammar.Op


@dataclass(frozen=True)
class EntryPoint:
    """One entry point: name, execution model, function, interface, local size and execution modes."""

    name: str
    execution_model: str
    function_id: int
    interface: tuple[int, ...]
    local_size: tuple[int, int, int] | None  # None when it depends on spec constants only
    local_size_spec_ids: tuple[int | None, int | None, int | None] = (None, None, None)
    modes: dict = field(default_factory=dict)  # ExecutionMode name -> tuple of literal/id operands


@dataclass(frozen=True)
class Binding:
    """One descriptor binding: set, binding, descriptor type, the block's size, elements and access."""

    set: int
    binding: int
    descriptor_type: str  # 'storage_buffer', 'uniform_buffer', 'storage_image', 'sampled_image', ...
    storage_class: str
    variable_id: int
    name: str
    size: int  # bytes of the fixed part of the block
    runtime_array_stride: int | None  # element stride of a trailing runtime array, if any
    array_count: int = 1  # descriptor array length (1 when not an array of blocks)
    element_types: tuple[types.Scalar, ...] = ()  # the distinct scalar types of the block's members, in order
    element: str = ""  # the block's contents in short: 'f32[]', 'vec4<f32>[]', '{u32, f32[]}'
    access: str = "read-write"  # 'read-only' (NonWritable, uniform buffers), 'write-only' (NonReadable)
    type: types.Type | None = None  # the block (or resource) type, with its layout decorations


@dataclass(frozen=True)
class SpecConstant:
    """One specialization constant: SpecId, result id, name, scalar type and default value."""

    spec_id: int
    result_id: int
    name: str
    type: types.Scalar
    default: int | float | bool


@dataclass(frozen=True)
class CoopMulAdd:
    """The types of one OpCooperativeMatrixMulAdd: A (M x K) * B (K x N) + C -> result (M x N)."""

    a: types.CoopMatrix
    b: types.CoopMatrix
    c: types.CoopMatrix
    result: types.CoopMatrix

    def __str__(self) -> str:
        return (f"MulAdd {self.a.component}*{self.b.component}+{self.c.component}->{self.result.component} "
                f"{self.a.rows}x{self.result.cols}x{self.a.cols} ({self.a.scope.name})")


@dataclass(frozen=True)
class ModuleInterface:
    """What a module offers and needs: version, capabilities, extensions, models, entry points, bindings, ..."""

    version: tuple[int, int]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    addressing_model: str
    memory_model: str
    entry_points: tuple[EntryPoint, ...]
    bindings: tuple[Binding, ...]
    push_constant_size: int
    spec_constants: tuple[SpecConstant, ...]
    coop_matrix_types: tuple[types.CoopMatrix, ...] = ()
    coop_muladds: tuple[CoopMulAdd, ...] = ()
    push_constant_type: types.Type | None = None  # the push-constant block, with its Offsets

    def entry_point(self, name: str | None = None) -> EntryPoint:
        for ep in self.entry_points:
            if name is None or ep.name == name:
                return ep
        names = ", ".join(ep.name for ep in self.entry_points) or "none"
        raise SpirvError(f"no entry point {name!r} (the module has: {names})")


def _enum_name(kind: str, value: int) -> str:
    try:
        return grammar.enumerant(kind, value).name
    except grammar.GrammarError:
        return str(value)


def _decoration(table: types.TypeTable, target: int, name: str, member: int | None = None):
    return table.decoration(target, Decoration[name], member)


def _scalar_leaves(t: types.Type) -> list[types.Scalar]:
    """The scalar types a block holds (vector, matrix and array elements, struct members), in order."""
    if isinstance(t, types.Scalar):
        return [t]
    if isinstance(t, types.Struct):
        return [s for m in t.members for s in _scalar_leaves(m.type)]
    if isinstance(t, (types.Vector, types.Matrix, types.Array)):
        return _scalar_leaves(types.component_of(t))
    return []  # pointers (PhysicalStorageBuffer addresses), opaque types


def describe_block(t: types.Type) -> str:
    """A short display of a block's contents: 'f32[]', 'vec4<f32>[]', '{u32, f32[]}' (one member: itself)."""
    if isinstance(t, types.Struct):
        inner = [str(m.type) for m in t.members]
        return inner[0] if len(inner) == 1 else "{" + ", ".join(inner) + "}"
    return str(t)


def _access(table: types.TypeTable, variable_id: int, block_id: int, block: types.Type, descriptor: str) -> str:
    """'read-only', 'write-only' or 'read-write', from NonWritable / NonReadable on the variable or every member."""
    if descriptor == "uniform_buffer":
        return "read-only"
    members = range(len(block.members)) if isinstance(block, types.Struct) else ()

    def marked(name: str) -> bool:
        return _decoration(table, variable_id, name) is not None or (
            bool(members) and all(_decoration(table, block_id, name, m) is not None for m in members))

    if marked("NonWritable"):
        return "read-only"
    if marked("NonReadable"):
        return "write-only"
    return "read-write"


def _runtime_array_stride(t: types.Type) -> int | None:
    if isinstance(t, types.Struct) and t.members:
        last = t.members[-1]
        if isinstance(last.type, types.Array) and last.type.length is None:
            return types.array_stride(last.type, matrix_stride_=last.matrix_stride, row_major=last.row_major)
    if isinstance(t, types.Array) and t.length is None:
        return types.array_stride(t)
    return None


def _defined(table: types.TypeTable, type_id: int) -> Instruction:
    """The instruction that defines a type id; SpirvError when the module never defines it."""
    inst = table.defs.get(type_id)
    if inst is None:
        raise SpirvError(f"%{type_id} is used as a type but never defined")
    return inst


_IMAGE_DESCRIPTORS = {1: "sampled_image", 2: "storage_image"}  # OpTypeImage Sampled operand


def _descriptor(table: types.TypeTable, pointee: int, storage_class: str) -> tuple[str, int, int]:
    """(descriptor type, block type id, array count) of a resource variable's pointee."""
    inst = _defined(table, pointee)
    count = 1
    if inst.opcode in (Op.TypeArray, Op.TypeRuntimeArray):
        count = table.constant_int(inst.operands[1].value) if inst.opcode == Op.TypeArray else 0
        pointee = inst.operands[0].value
        inst = _defined(table, pointee)
    if storage_class == "StorageBuffer":
        return "storage_buffer", pointee, count
    if storage_class == "Uniform":
        if _decoration(table, pointee, "BufferBlock") is not None:
            return "storage_buffer", pointee, count
        return "uniform_buffer", pointee, count
    if inst.opcode == Op.TypeImage:
        sampled = inst.operands[5].value
        if inst.operands[1].value == Dim.Buffer:
            return ("uniform_texel_buffer" if sampled == 1 else "storage_texel_buffer"), pointee, count
        return _IMAGE_DESCRIPTORS.get(sampled, "storage_image"), pointee, count
    if inst.opcode == Op.TypeSampledImage:
        return "combined_image_sampler", pointee, count
    if inst.opcode == Op.TypeSampler:
        return "sampler", pointee, count
    if inst.opcode == Op.TypeAccelerationStructureKHR:
        return "acceleration_structure", pointee, count
    return "unknown", pointee, count


def _coop_matrix_types(module: Module, table: types.TypeTable) -> dict[int, types.CoopMatrix]:
    """Matrix type id -> its type (dimensions from constants or spec-constant defaults)."""
    out = {}
    for inst in module.instructions:
        if inst.opcode in (Op.TypeCooperativeMatrixKHR, Op.TypeCooperativeMatrixNV):
            try:
                t = table[inst.result_id]
            except SpirvError:
                continue  # dimensions computed by OpSpecConstantOp: known only when specialised
            if isinstance(t, types.CoopMatrix):
                out[inst.result_id] = t
    return out


def _coop_muladds(module: Module, matrices: dict[int, types.CoopMatrix]) -> tuple[CoopMulAdd, ...]:
    type_of = {i.result_id: i.result_type for i in module.instructions if i.result_type is not None}
    found = []
    for inst in module.instructions:
        if inst.opcode == Op.CooperativeMatrixMulAddKHR:
            ids = [type_of.get(o.value) for o in inst.operands[:3]] + [inst.result_type]
            if not all(i in matrices for i in ids):
                continue
            entry = CoopMulAdd(*(matrices[i] for i in ids))
            if entry not in found:
                found.append(entry)
    return tuple(found)


class _Reading:
    """The instruction reflection is reading, so that an error can say where."""

    inst: Instruction | None = None


def reflect(words_or_module) -> ModuleInterface:
    """Everything a runner must know about a module before it can dispatch it.

    A malformed module raises SpirvError naming the instruction (and its word offset) being read."""
    module = words_or_module if isinstance(words_or_module, Module) else decode(words_or_module)
    reading = _Reading()
    try:
        return _reflect(module, types.read_types(module), reading)
    except SpirvError as err:
        if err.offset is not None or reading.inst is None:
            raise
        raise SpirvError(f"{err.message} (reflecting {reading.inst.name})", reading.inst.offset) from None
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, RecursionError, OverflowError) as err:
        at = reading.inst
        where = f" (reflecting {at.name})" if at is not None else ""
        raise SpirvError(f"cannot reflect the module: {type(err).__name__}: {err}{where}",
                         at.offset if at is not None else None) from None


def _reflect(module: Module, table: types.TypeTable, reading: _Reading) -> ModuleInterface:
    caps, exts = [], []
    addressing = memory = ""
    entry_raw: list[Instruction] = []
    modes: dict[int, dict] = {}
    bindings: list[Binding] = []
    push_size = 0
    push_type: types.Type | None = None
    specs: list[SpecConstant] = []
    workgroup_size_const = None
    for inst in module.instructions:
        reading.inst = inst
        op = inst.opcode
        if op == Op.Capability:
            caps.append(_enum_name("Capability", inst.operands[0].value))
        elif op == Op.Extension:
            exts.append(inst.operands[0].value)
        elif op == Op.MemoryModel:
            addressing = _enum_name("AddressingModel", inst.operands[0].value)
            memory = _enum_name("MemoryModel", inst.operands[1].value)
        elif op == Op.EntryPoint:
            entry_raw.append(inst)
        elif op in (Op.ExecutionMode, Op.ExecutionModeId):
            target, mode, *rest = inst.operands
            modes.setdefault(target.value, {})[_enum_name("ExecutionMode", mode.value)] = \
                tuple(o.value for o in rest)
        elif op == Op.Variable:
            storage = _enum_name("StorageClass", inst.operands[0].value)
            pointer = _defined(table, inst.result_type)
            if pointer.opcode != Op.TypePointer:
                raise SpirvError(f"variable %{inst.result_id} has the type %{inst.result_type}, which is no pointer",
                                 inst.offset)
            pointee = pointer.operands[1].value
            if storage == "PushConstant":
                push_type = table[pointee]
                push_size = max(push_size, types.size(push_type))
            elif storage in ("StorageBuffer", "Uniform", "UniformConstant"):
                binding = _decoration(table, inst.result_id, "Binding")
                dset = _decoration(table, inst.result_id, "DescriptorSet")
                if binding is None:
                    continue
                kind, block, count = _descriptor(table, pointee, storage)
                buffer_like = kind in ("storage_buffer", "uniform_buffer")
                block_type = table[block]
                bindings.append(Binding(
                    set=dset[0] if dset else 0,
                    binding=binding[0],
                    descriptor_type=kind,
                    storage_class=storage,
                    variable_id=inst.result_id,
                    name=table.names.get(inst.result_id, "") or table.names.get(block, ""),
                    size=types.size(block_type) if buffer_like else 0,
                    runtime_array_stride=_runtime_array_stride(block_type) if buffer_like else None,
                    array_count=count,
                    element_types=tuple(dict.fromkeys(_scalar_leaves(block_type))) if buffer_like else (),
                    element=describe_block(block_type) if buffer_like else kind,
                    access=_access(table, inst.result_id, block, block_type, kind) if buffer_like else "read-write",
                    type=block_type,
                ))
        elif op in (Op.SpecConstant, Op.SpecConstantTrue, Op.SpecConstantFalse):
            spec_id = _decoration(table, inst.result_id, "SpecId")
            if spec_id is not None:
                scalar = table[inst.result_type]
                if not isinstance(scalar, types.Scalar):
                    raise SpirvError(f"spec constant %{inst.result_id} of non-scalar type {scalar}", inst.offset)
                specs.append(SpecConstant(spec_id[0], inst.result_id, table.names.get(inst.result_id, ""),
                                          scalar, _spec_default(table, inst, scalar)))
        if inst.result_id is not None and op in (Op.ConstantComposite, Op.SpecConstantComposite):
            builtin = _decoration(table, inst.result_id, "BuiltIn")
            if builtin and builtin[0] == BuiltIn.WorkgroupSize:
                workgroup_size_const = inst
    reading.inst = None
    matrices = _coop_matrix_types(module, table)
    spec_by_result = {s.result_id: s for s in specs}
    entry_points = []
    if not memory:  # SPIR-V requires one; a module cut at an instruction boundary can lack it (and much more)
        raise SpirvError("the module has no OpMemoryModel (a truncated module?)")
    defined = {i.result_id: i.opcode for i in module.instructions if i.result_id is not None}
    for inst in entry_raw:
        reading.inst = inst
        model = _enum_name("ExecutionModel", inst.operands[0].value)
        func, name = inst.operands[1].value, inst.operands[2].value
        interface = tuple(o.value for o in inst.operands[3:])
        missing = [f"%{i}" for i in (func, *interface) if i not in defined]
        if missing or defined[func] != Op.Function:
            what = f"{', '.join(missing)} never defined" if missing else f"%{func} is no OpFunction"
            raise SpirvError(f"entry point {name!r}: {what} (a truncated module?)", inst.offset)
        emodes = modes.get(func, {})
        local_size = emodes.get("LocalSize")
        spec_ids: list[int | None] = [None, None, None]
        size_ids = emodes.get("LocalSizeId")
        if workgroup_size_const is not None:
            size_ids = tuple(o.value for o in workgroup_size_const.operands)
        if size_ids is not None:
            values = []
            for axis, cid in enumerate(size_ids):
                values.append(table.constant_int(cid))
                if cid in spec_by_result:
                    spec_ids[axis] = spec_by_result[cid].spec_id
            local_size = tuple(values)
        entry_points.append(EntryPoint(name, model, func, interface,
                                       tuple(local_size) if local_size else None,
                                       tuple(spec_ids), emodes))
    return ModuleInterface(
        version=module.version,
        capabilities=tuple(caps),
        extensions=tuple(exts),
        addressing_model=addressing,
        memory_model=memory,
        entry_points=tuple(entry_points),
        bindings=tuple(sorted(bindings, key=lambda b: (b.set, b.binding))),
        push_constant_size=push_size,
        spec_constants=tuple(sorted(specs, key=lambda s: s.spec_id)),
        coop_matrix_types=tuple(dict.fromkeys(matrices.values())),
        coop_muladds=_coop_muladds(module, matrices),
        push_constant_type=push_type,
    )


def _spec_default(table: types.TypeTable, inst: Instruction, scalar: types.Scalar) -> int | float | bool:
    """A spec constant's default: its value; the bit pattern for bf16 and fp8 (as pack_spec_value takes it)."""
    if scalar.kind == "float" and scalar.encoding is not None:
        return inst.operands[0].value & ((1 << scalar.width) - 1)
    return table.constant_value(inst.result_id)
