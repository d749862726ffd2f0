"""Reflect what a module needs from whoever runs it: entry points, bindings, constants.

`reflect(words) -> ModuleInterface` reads the decoded module (no execution) and reports
entry points with their workgroup size, descriptor bindings with their byte sizes,
the push-constant block size, specialization constants (SpecId, type, default) and the
declared capabilities and extensions. The Vulkan runtime gets these as plain data from
the launch layer; the reference executor uses them directly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction, Module, SpirvError, decode

Op = grammar.Op


@dataclass(frozen=True)
class ScalarType:
    kind: str  # 'int', 'float' or 'bool'
    width: int  # bits (bool: 32, the size it has in a push constant or spec constant)
    signed: bool = False
    encoding: str | None = None  # FPEncoding name for non-IEEE floats (BFloat16KHR, Float8E4M3EXT, ...)

    @property
    def name(self) -> str:
        """Short name: bool, i8 .. i64, u8 .. u64, f16, f32, f64, bf16, e4m3, e5m2."""
        if self.kind == "bool":
            return "bool"
        if self.kind == "float":
            return _FP_ENCODING_NAMES.get(self.encoding, self.encoding) if self.encoding else f"f{self.width}"
        return f"{'i' if self.signed else 'u'}{self.width}"


@dataclass(frozen=True)
class EntryPoint:
    name: str
    execution_model: str
    function_id: int
    interface: tuple[int, ...]
    local_size: tuple[int, int, int] | None  # None when it depends on spec constants only
    local_size_spec_ids: tuple[int | None, int | None, int | None] = (None, None, None)
    modes: dict = field(default_factory=dict)  # ExecutionMode name -> tuple of literal/id operands


@dataclass(frozen=True)
class Binding:
    set: int
    binding: int
    descriptor_type: str  # 'storage_buffer', 'uniform_buffer', 'storage_image', 'sampled_image', ...
    storage_class: str
    variable_id: int
    name: str
    size: int  # bytes of the fixed part of the block
    runtime_array_stride: int | None  # element stride of a trailing runtime array, if any
    array_count: int = 1  # descriptor array length (1 when not an array of blocks)
    element_types: tuple[ScalarType, ...] = ()  # the distinct scalar types of the block's members, in order
    element: str = ""  # the block's contents in short: 'f32[]', 'vec4<f32>[]', '{u32, f32[]}'
    access: str = "read-write"  # 'read-only' (NonWritable, uniform buffers), 'write-only' (NonReadable)


@dataclass(frozen=True)
class SpecConstant:
    spec_id: int
    result_id: int
    name: str
    type: ScalarType
    default: int | float | bool


@dataclass(frozen=True)
class CoopMatrixType:
    """One cooperative-matrix type the module declares (KHR, or legacy NV without a Use)."""

    family: str  # 'khr' (OpTypeCooperativeMatrixKHR) or 'nv' (OpTypeCooperativeMatrixNV)
    component: str  # f16 f32 f64 bf16 e4m3 e5m2 s8 u8 s16 u16 s32 u32 s64 u64
    scope: str  # 'subgroup', 'workgroup', ... (the Scope enumerant, lower case)
    rows: int
    cols: int
    use: str | None  # 'A', 'B', 'Accumulator'; None for the legacy NV family

    def text(self) -> str:
        use = f" {self.use}" if self.use else ""
        return f"{self.family.upper()} {self.component} {self.rows}x{self.cols}{use} ({self.scope})"


@dataclass(frozen=True)
class CoopMulAdd:
    """The types of one OpCooperativeMatrixMulAddKHR: A (M x K) * B (K x N) + C -> result (M x N)."""

    a: CoopMatrixType
    b: CoopMatrixType
    c: CoopMatrixType
    result: CoopMatrixType

    def text(self) -> str:
        return (f"MulAdd {self.a.component}*{self.b.component}+{self.c.component}->{self.result.component} "
                f"{self.a.rows}x{self.result.cols}x{self.a.cols} ({self.a.scope})")


@dataclass(frozen=True)
class ModuleInterface:
    version: tuple[int, int]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    addressing_model: str
    memory_model: str
    entry_points: tuple[EntryPoint, ...]
    bindings: tuple[Binding, ...]
    push_constant_size: int
    spec_constants: tuple[SpecConstant, ...]
    coop_matrix_types: tuple[CoopMatrixType, ...] = ()
    coop_muladds: tuple[CoopMulAdd, ...] = ()

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


class _Types:
    """Type declarations, decorations and constants, for sizes and values."""

    def __init__(self, module: Module):
        self.defs: dict[int, Instruction] = {}
        self.decorations: dict[int, list[tuple[str, tuple]]] = {}
        self.member_decorations: dict[tuple[int, int], list[tuple[str, tuple]]] = {}
        self.names: dict[int, str] = {}
        for inst in module.instructions:
            if inst.result_id is not None:
                self.defs[inst.result_id] = inst
            if inst.opcode == Op.Decorate:
                target, deco, *rest = inst.operands
                self.decorations.setdefault(target.value, []).append(
                    (_enum_name("Decoration", deco.value), tuple(o.value for o in rest)))
            elif inst.opcode == Op.MemberDecorate:
                target, member, deco, *rest = inst.operands
                self.member_decorations.setdefault((target.value, member.value), []).append(
                    (_enum_name("Decoration", deco.value), tuple(o.value for o in rest)))
            elif inst.opcode == Op.Name:
                self.names[inst.operands[0].value] = inst.operands[1].value

    def decoration(self, target: int, name: str, member: int | None = None):
        table = self.decorations.get(target, ()) if member is None else \
            self.member_decorations.get((target, member), ())
        for deco, args in table:
            if deco == name:
                return args
        return None

    def scalar(self, type_id: int) -> ScalarType:
        inst = self.defs[type_id]
        if inst.opcode == Op.TypeInt:
            return ScalarType("int", inst.operands[0].value, bool(inst.operands[1].value))
        if inst.opcode == Op.TypeFloat:
            enc = _enum_name("FPEncoding", inst.operands[1].value) if len(inst.operands) > 1 else None
            return ScalarType("float", inst.operands[0].value, False, enc)
        if inst.opcode == Op.TypeBool:
            return ScalarType("bool", 32)
        raise SpirvError(f"type %{type_id} is not a scalar", inst.offset)

    def constant_int(self, const_id: int) -> int:
        inst = self.defs.get(const_id)
        if inst is None or inst.opcode not in (Op.Constant, Op.SpecConstant):
            raise SpirvError(f"%{const_id} is not an integer constant")
        return inst.operands[0].value

    def size(self, type_id: int) -> int:
        """Byte size of a type in an explicitly laid out block (runtime arrays count 0)."""
        inst = self.defs[type_id]
        op = inst.opcode
        if op in (Op.TypeInt, Op.TypeFloat):
            return inst.operands[0].value // 8
        if op == Op.TypeBool:
            return 4
        if op == Op.TypeVector:
            return self.size(inst.operands[0].value) * inst.operands[1].value
        if op == Op.TypeMatrix:
            stride = self.size(self.defs[inst.operands[0].value].result_id)
            return stride * inst.operands[1].value
        if op == Op.TypeArray:
            stride = self.decoration(type_id, "ArrayStride")
            elem = stride[0] if stride else self.size(inst.operands[0].value)
            return elem * self.constant_int(inst.operands[1].value)
        if op == Op.TypeRuntimeArray:
            return 0
        if op == Op.TypeStruct:
            end = 0
            for i, member in enumerate(inst.operands):
                offset = self.decoration(type_id, "Offset", i)
                start = offset[0] if offset else end
                end = max(end, start + self.size(member.value))
            return end
        if op == Op.TypePointer:
            return 8
        raise SpirvError(f"cannot size {inst.name} %{type_id}", inst.offset)

    def scalar_leaves(self, type_id: int) -> list[ScalarType]:
        """The scalar types a block holds (vector, matrix and array elements, struct members), in order."""
        inst = self.defs[type_id]
        op = inst.opcode
        if op in (Op.TypeInt, Op.TypeFloat, Op.TypeBool):
            return [self.scalar(type_id)]
        if op in (Op.TypeVector, Op.TypeMatrix, Op.TypeArray, Op.TypeRuntimeArray):
            return self.scalar_leaves(inst.operands[0].value)
        if op == Op.TypeStruct:
            return [t for member in inst.operands for t in self.scalar_leaves(member.value)]
        return []  # pointers (PhysicalStorageBuffer addresses), opaque types

    def describe(self, type_id: int) -> str:
        """A short display of a block type: 'f32', 'vec4<f32>', 'f32[16]', 'f32[]', '{u32, f32[]}'."""
        inst = self.defs[type_id]
        op = inst.opcode
        if op in (Op.TypeInt, Op.TypeFloat, Op.TypeBool):
            return self.scalar(type_id).name
        if op == Op.TypeVector:
            return f"vec{inst.operands[1].value}<{self.describe(inst.operands[0].value)}>"
        if op == Op.TypeMatrix:
            column = self.defs[inst.operands[0].value]
            return f"mat{inst.operands[1].value}x{column.operands[1].value}<{self.describe(column.operands[0].value)}>"
        if op == Op.TypeArray:
            try:
                return f"{self.describe(inst.operands[0].value)}[{self.constant_int(inst.operands[1].value)}]"
            except SpirvError:
                return f"{self.describe(inst.operands[0].value)}[spec]"
        if op == Op.TypeRuntimeArray:
            return f"{self.describe(inst.operands[0].value)}[]"
        if op == Op.TypeStruct:
            inner = ", ".join(self.describe(m.value) for m in inst.operands)
            return inner if len(inst.operands) == 1 else "{" + inner + "}"
        if op == Op.TypePointer:
            return f"ptr<{self.describe(inst.operands[1].value)}>"
        return inst.name.removeprefix("OpType").lower()

    def access(self, variable_id: int, block: int, descriptor_type: str) -> str:
        """'read-only', 'write-only' or 'read-write', from NonWritable / NonReadable on the variable or every member."""
        if descriptor_type == "uniform_buffer":
            return "read-only"
        members = range(len(self.defs[block].operands)) if self.defs[block].opcode == Op.TypeStruct else ()

        def marked(name: str) -> bool:
            return self.decoration(variable_id, name) is not None or (
                bool(members) and all(self.decoration(block, name, m) is not None for m in members))

        if marked("NonWritable"):
            return "read-only"
        if marked("NonReadable"):
            return "write-only"
        return "read-write"

    def runtime_array_stride(self, type_id: int) -> int | None:
        inst = self.defs[type_id]
        if inst.opcode == Op.TypeStruct and inst.operands:
            return self.runtime_array_stride(inst.operands[-1].value)
        if inst.opcode == Op.TypeRuntimeArray:
            stride = self.decoration(type_id, "ArrayStride")
            return stride[0] if stride else self.size(inst.operands[0].value)
        return None


_IMAGE_DESCRIPTORS = {1: "sampled_image", 2: "storage_image"}  # OpTypeImage Sampled operand


def _descriptor(types: _Types, pointee: int, storage_class: str) -> tuple[str, int, int]:
    """(descriptor type, block type id, array count) of a resource variable's pointee."""
    inst = types.defs[pointee]
    count = 1
    if inst.opcode in (Op.TypeArray, Op.TypeRuntimeArray):
        count = types.constant_int(inst.operands[1].value) if inst.opcode == Op.TypeArray else 0
        pointee = inst.operands[0].value
        inst = types.defs[pointee]
    if storage_class == "StorageBuffer":
        return "storage_buffer", pointee, count
    if storage_class == "Uniform":
        if types.decoration(pointee, "BufferBlock") is not None:
            return "storage_buffer", pointee, count
        return "uniform_buffer", pointee, count
    if inst.opcode == Op.TypeImage:
        dim = _enum_name("Dim", inst.operands[1].value)
        sampled = inst.operands[5].value
        if dim == "Buffer":
            return ("uniform_texel_buffer" if sampled == 1 else "storage_texel_buffer"), pointee, count
        return _IMAGE_DESCRIPTORS.get(sampled, "storage_image"), pointee, count
    if inst.opcode == Op.TypeSampledImage:
        return "combined_image_sampler", pointee, count
    if inst.opcode == Op.TypeSampler:
        return "sampler", pointee, count
    if inst.opcode == Op.TypeAccelerationStructureKHR:
        return "acceleration_structure", pointee, count
    return "unknown", pointee, count


def _spec_default(inst: Instruction, scalar: ScalarType):
    if inst.opcode == Op.SpecConstantTrue:
        return True
    if inst.opcode == Op.SpecConstantFalse:
        return False
    raw = inst.operands[0].value & ((1 << scalar.width) - 1)  # narrow signed literals are sign-extended to 32 bits
    if scalar.kind == "float":
        if scalar.encoding is None and scalar.width in (16, 32, 64):
            fmt = {16: "<e", 32: "<f", 64: "<d"}[scalar.width]
            nbytes = scalar.width // 8
            return struct.unpack(fmt, raw.to_bytes(8, "little")[:nbytes])[0]
        return raw  # the bit pattern of a non-IEEE float
    if scalar.signed and raw >= 1 << (scalar.width - 1):
        return raw - (1 << scalar.width)
    return raw


_FP_ENCODING_NAMES = {"BFloat16KHR": "bf16", "Float8E4M3EXT": "e4m3", "Float8E5M2EXT": "e5m2"}
_USE_NAMES = {0: "A", 1: "B", 2: "Accumulator"}


def _component_name(types: _Types, type_id: int) -> str:
    scalar = types.scalar(type_id)
    if scalar.kind == "float":
        return _FP_ENCODING_NAMES.get(scalar.encoding, scalar.encoding) if scalar.encoding else f"f{scalar.width}"
    return f"{'s' if scalar.signed else 'u'}{scalar.width}"


def _coop_matrix_types(module: Module, types: _Types) -> dict[int, CoopMatrixType]:
    """Matrix type id -> its description (dimensions from constants or spec-constant defaults)."""
    out = {}
    for inst in module.instructions:
        if inst.opcode == Op.TypeCooperativeMatrixKHR:
            comp, scope, rows, cols, use = (o.value for o in inst.operands)
            family, use_name = "khr", use
        elif inst.opcode == Op.TypeCooperativeMatrixNV:
            comp, scope, rows, cols = (o.value for o in inst.operands)
            family, use_name = "nv", None
        else:
            continue
        try:
            if family == "khr":
                use_name = _USE_NAMES.get(types.constant_int(use_name), str(types.constant_int(use_name)))
            out[inst.result_id] = CoopMatrixType(
                family, _component_name(types, comp), _enum_name("Scope", types.constant_int(scope)).lower(),
                types.constant_int(rows), types.constant_int(cols), use_name)
        except SpirvError:
            continue  # dimensions computed by OpSpecConstantOp: known only when specialised
    return out


def _coop_muladds(module: Module, matrices: dict[int, CoopMatrixType]) -> tuple[CoopMulAdd, ...]:
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


def reflect(words_or_module) -> ModuleInterface:
    """Everything a runner must know about a module before it can dispatch it."""
    module = words_or_module if isinstance(words_or_module, Module) else decode(words_or_module)
    types = _Types(module)
    caps, exts = [], []
    addressing = memory = ""
    entry_raw: list[Instruction] = []
    modes: dict[int, dict] = {}
    bindings: list[Binding] = []
    push_size = 0
    specs: list[SpecConstant] = []
    workgroup_size_const = None
    for inst in module.instructions:
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
            pointer = types.defs[inst.result_type]
            pointee = pointer.operands[1].value
            if storage == "PushConstant":
                push_size = max(push_size, types.size(pointee))
            elif storage in ("StorageBuffer", "Uniform", "UniformConstant"):
                binding = types.decoration(inst.result_id, "Binding")
                dset = types.decoration(inst.result_id, "DescriptorSet")
                if binding is None:
                    continue
                kind, block, count = _descriptor(types, pointee, storage)
                buffer_like = kind in ("storage_buffer", "uniform_buffer")
                bindings.append(Binding(
                    set=dset[0] if dset else 0,
                    binding=binding[0],
                    descriptor_type=kind,
                    storage_class=storage,
                    variable_id=inst.result_id,
                    name=types.names.get(inst.result_id, "") or types.names.get(block, ""),
                    size=types.size(block) if buffer_like else 0,
                    runtime_array_stride=types.runtime_array_stride(block) if buffer_like else None,
                    array_count=count,
                    element_types=tuple(dict.fromkeys(types.scalar_leaves(block))) if buffer_like else (),
                    element=types.describe(block) if buffer_like else kind,
                    access=types.access(inst.result_id, block, kind) if buffer_like else "read-write",
                ))
        elif op in (Op.SpecConstant, Op.SpecConstantTrue, Op.SpecConstantFalse):
            spec_id = types.decoration(inst.result_id, "SpecId")
            if spec_id is not None:
                scalar = types.scalar(inst.result_type)
                specs.append(SpecConstant(spec_id[0], inst.result_id, types.names.get(inst.result_id, ""),
                                          scalar, _spec_default(inst, scalar)))
        if inst.result_id is not None and op in (Op.ConstantComposite, Op.SpecConstantComposite):
            builtin = types.decoration(inst.result_id, "BuiltIn")
            if builtin and _enum_name("BuiltIn", builtin[0]) == "WorkgroupSize":
                workgroup_size_const = inst
    matrices = _coop_matrix_types(module, types)
    spec_by_result = {s.result_id: s for s in specs}
    entry_points = []
    for inst in entry_raw:
        model = _enum_name("ExecutionModel", inst.operands[0].value)
        func, name = inst.operands[1].value, inst.operands[2].value
        interface = tuple(o.value for o in inst.operands[3:])
        emodes = modes.get(func, {})
        local_size = emodes.get("LocalSize")
        spec_ids: list[int | None] = [None, None, None]
        size_ids = emodes.get("LocalSizeId")
        if workgroup_size_const is not None:
            size_ids = tuple(o.value for o in workgroup_size_const.operands)
        if size_ids is not None:
            values = []
            for axis, cid in enumerate(size_ids):
                values.append(types.constant_int(cid))
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
    )
