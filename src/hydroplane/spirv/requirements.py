"""The capabilities and extensions a module needs, derived from its instructions and the grammar.

`derive(instructions, version)` reads every instruction's own requirements and those of
every enumerant in its operands (Decoration, StorageClass, BuiltIn, ExecutionMode,
MemoryAccess, CooperativeMatrixOperands ...) from the grammar tables, adds the type rules
the grammar cannot express (TYPE_WIDTH_CAPABILITIES, STORAGE_WIDTH_CAPABILITIES,
COOP_COMPONENT_CAPABILITIES), and returns the minimal capability set (a capability that
another one implies is dropped) plus the extensions that the target SPIR-V version does
not have in core. Works on any instruction list: built or decoded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction, SpirvError

Op = grammar.Op

# (OpTypeInt | OpTypeFloat, width) -> the capability the type declaration needs.
TYPE_WIDTH_CAPABILITIES = {
    (Op.TypeInt, 8): "Int8",
    (Op.TypeInt, 16): "Int16",
    (Op.TypeInt, 64): "Int64",
    (Op.TypeFloat, 16): "Float16",
    (Op.TypeFloat, 64): "Float64",
}

# (storage class, scalar width) -> the capability for 8/16-bit data in that storage class.
STORAGE_WIDTH_CAPABILITIES = {
    ("StorageBuffer", 8): "StorageBuffer8BitAccess",
    ("StorageBuffer", 16): "StorageBuffer16BitAccess",
    ("Uniform", 8): "UniformAndStorageBuffer8BitAccess",
    ("Uniform", 16): "UniformAndStorageBuffer16BitAccess",
    ("PushConstant", 8): "StoragePushConstant8",
    ("PushConstant", 16): "StoragePushConstant16",
    ("PhysicalStorageBuffer", 8): "StorageBuffer8BitAccess",
    ("PhysicalStorageBuffer", 16): "StorageBuffer16BitAccess",
    ("Input", 16): "StorageInputOutput16",
    ("Output", 16): "StorageInputOutput16",
}

# FPEncoding of a cooperative matrix's component type -> the capability that allows it.
COOP_COMPONENT_CAPABILITIES = {
    "BFloat16KHR": "BFloat16CooperativeMatrixKHR",
    "Float8E4M3EXT": "Float8CooperativeMatrixEXT",
    "Float8E5M2EXT": "Float8CooperativeMatrixEXT",
}

# Conversions that may also change a cooperative matrix's Use (Accumulator -> A or B): NV2's conversions then.
COOP_USE_CONVERSIONS = frozenset({Op.FConvert, Op.ConvertFToS, Op.ConvertFToU, Op.ConvertSToF, Op.ConvertUToF,
                                  Op.SConvert, Op.UConvert})

# Scope of a KHR cooperative-matrix type beyond Subgroup -> the extension that allows it.
COOP_SCOPE_EXTENSIONS = {
    grammar.enumerant("Scope", "Workgroup").value: "SPV_NV_cooperative_matrix2",
}

# Scope enumerant value of Device: with the Vulkan memory model it needs its own capability.
_SCOPE_DEVICE = grammar.enumerant("Scope", "Device").value

_ENUM_KINDS = grammar.ENUM_KINDS

# A capability that a Vulkan (Shader) module never picks when the grammar offers alternatives.
_NOT_FOR_SHADERS = frozenset({"Kernel"})


class RequirementError(SpirvError):
    """A module needs something its target SPIR-V version cannot give."""


@dataclass(frozen=True, slots=True)
class Requirements:
    """The minimal capabilities and the extensions a module needs."""

    capabilities: tuple[str, ...]  # minimal, in enumerant-value order
    extensions: tuple[str, ...]  # sorted by name


def _version_has(item_version: str, target: tuple[int, int]) -> bool:
    core = grammar.version_tuple(item_version)
    return core is not None and core <= target


def implied(capabilities: Iterable[str]) -> set[str]:
    """Every capability the given ones declare implicitly (the grammar's `capabilities` field), transitively."""
    out: set[str] = set()
    todo = [c for c in capabilities]
    while todo:
        for dep in grammar.enumerant("Capability", todo.pop()).capabilities:
            if dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


def canonical_capability(name: str) -> str:
    """The grammar's first spelling of a capability (aliases such as StorageUniform16 map to it)."""
    return grammar.enumerant("Capability", name).name


class _Collector:
    """Gathers requirement alternatives while walking a module once."""

    def __init__(self, version: tuple[int, int]):
        self.version = version
        self.extinst_sets: dict[int, str] = {}  # OpExtInstImport id -> set name
        self.capability_needs: dict[tuple[str, ...], None] = {}  # each: any one of these (ordered set)
        self.extension_needs: dict[tuple[str, ...], None] = {}
        self.seen: set[tuple] = set()  # (opcode, enumerant operands) already collected

    def need(self, capabilities: tuple[str, ...], extensions: tuple[str, ...], item_version: str) -> None:
        if capabilities:
            self.capability_needs[capabilities] = None
        if extensions and not _version_has(item_version, self.version):
            self.extension_needs[extensions] = None

    def instruction(self, inst: Instruction) -> None:
        if inst.opcode == Op.ExtInstImport:
            self.extinst_sets[inst.result_id] = inst.operands[0].value
        elif inst.opcode == Op.ExtInst:
            table = grammar.extinst_set(self.extinst_sets.get(inst.operands[0].value, "")) or {}
            ext = table.get(inst.operands[1].value)
            if ext is not None:
                self.need(ext.capabilities, ext.extensions, "None")
        elif inst.opcode == Op.SpecConstantOp:
            inner = grammar.instruction(inst.operands[0].value)
            self.need(inner.capabilities, inner.extensions, inner.version)
        key = (inst.opcode, *((o.kind, o.value) for o in inst.operands if o.kind in _ENUM_KINDS))
        if key not in self.seen:
            self.seen.add(key)
            self.grammar_needs(inst)

    def grammar_needs(self, inst: Instruction) -> None:
        """What the grammar says the instruction and the enumerants in its operands need."""
        info = grammar.instruction(inst.opcode)
        self.need(info.capabilities, info.extensions, info.version)
        core = grammar.version_tuple(info.version)
        if core is not None and core > self.version and not info.extensions:
            raise RequirementError(f"{info.name} needs SPIR-V {info.version}; the target is "
                                   f"{self.version[0]}.{self.version[1]}")
        declares = inst.opcode == Op.Capability
        for operand in inst.operands:
            if operand.kind not in _ENUM_KINDS or isinstance(operand.value, str):
                continue
            for e in _enumerants(grammar.operand_kind(operand.kind), operand.value):
                # An OpCapability operand's `capabilities` are those it implies, not needs.
                self.need(() if declares else e.capabilities, e.extensions, e.version)


def _enumerants(kind: grammar.KindInfo, value: int) -> list[grammar.EnumerantInfo]:
    values = grammar.enumerant_values(kind.kind)
    if kind.category == "ValueEnum":
        e = values.get(value)
        return [e] if e is not None else []
    return [e for v, e in values.items() if v and value & v == v]


class _TypeRules:
    """The type-dependent rules: scalar widths, narrow data in buffers, matrix components."""

    def __init__(self, instructions: list[Instruction]):
        self.defs: dict[int, Instruction] = {}
        self.constants: dict[int, int] = {}
        for inst in instructions:
            if inst.result_id is not None:
                self.defs[inst.result_id] = inst
            if inst.opcode == Op.Constant and inst.operands:
                self.constants[inst.result_id] = inst.operands[0].value

    def scalar_widths(self, type_id: int, seen: set[int] | None = None) -> set[int]:
        """Bit widths of every int/float scalar inside a type (through arrays, structs, vectors)."""
        seen = set() if seen is None else seen
        if type_id in seen or type_id not in self.defs:
            return set()
        seen.add(type_id)
        inst = self.defs[type_id]
        if inst.opcode in (Op.TypeInt, Op.TypeFloat):
            return {inst.operands[0].value}
        if inst.opcode in (Op.TypeVector, Op.TypeMatrix, Op.TypeArray, Op.TypeRuntimeArray):
            return self.scalar_widths(inst.operands[0].value, seen)
        if inst.opcode == Op.TypeStruct:
            out: set[int] = set()
            for member in inst.operands:
                out |= self.scalar_widths(member.value, seen)
            return out
        return set()

    def float_encoding(self, type_id: int) -> str | None:
        inst = self.defs.get(type_id)
        if inst is None or inst.opcode != Op.TypeFloat or len(inst.operands) < 2:
            return None
        return grammar.enumerant("FPEncoding", inst.operands[1].value).name

    def matrix_use(self, type_id: int | None) -> int | None:
        """The Use of a KHR cooperative-matrix type (None for any other type)."""
        inst = self.defs.get(type_id) if type_id is not None else None
        if inst is None or inst.opcode != Op.TypeCooperativeMatrixKHR or len(inst.operands) < 5:
            return None
        return self.constants.get(inst.operands[4].value)

    def needs(self, inst: Instruction, vulkan_memory_model: bool) -> tuple[list[str], list[str]]:
        """(capabilities, extensions) that the type rules ask of one instruction."""
        out, extensions = [], []
        op = inst.opcode
        if op in COOP_USE_CONVERSIONS and inst.operands:
            source = self.defs.get(inst.operands[0].value)
            result_use = self.matrix_use(inst.result_type)
            if result_use is not None and source is not None \
                    and self.matrix_use(source.result_type) not in (None, result_use):
                out.append("CooperativeMatrixConversionsNV")
        if op in (Op.TypeInt, Op.TypeFloat):
            has_encoding = op == Op.TypeFloat and len(inst.operands) > 1
            rule = None if has_encoding else TYPE_WIDTH_CAPABILITIES.get((op, inst.operands[0].value))
            if rule:
                out.append(rule)
        elif op == Op.TypePointer:
            storage = grammar.enumerant("StorageClass", inst.operands[0].value).name
            for width in sorted(self.scalar_widths(inst.operands[1].value)):
                rule = STORAGE_WIDTH_CAPABILITIES.get((storage, width))
                if rule:
                    out.append(rule)
        elif op == Op.TypeCooperativeMatrixKHR:
            rule = COOP_COMPONENT_CAPABILITIES.get(self.float_encoding(inst.operands[0].value))
            if rule:
                out.append(rule)
            scope_extension = COOP_SCOPE_EXTENSIONS.get(self.constants.get(inst.operands[1].value))
            if scope_extension:
                extensions.append(scope_extension)
        if vulkan_memory_model:
            for operand in inst.operands:
                if operand.kind == "IdScope" and self.constants.get(operand.value) == _SCOPE_DEVICE:
                    out.append("VulkanMemoryModelDeviceScope")
        return out, extensions


def uses_vulkan_memory_model(instructions: Iterable[Instruction]) -> bool:
    """True when the module declares OpMemoryModel ... Vulkan."""
    vulkan = grammar.enumerant("MemoryModel", "Vulkan").value
    return any(i.opcode == Op.MemoryModel and i.operands[1].value == vulkan for i in instructions)


def default_memory_model(instructions: Iterable[Instruction]) -> str:
    """OpenCL for Kernel modules; for shaders Vulkan when KHR cooperative matrices are used, else GLSL450."""
    instructions = list(instructions)
    kernel = grammar.enumerant("ExecutionModel", "Kernel").value
    if any(i.opcode == Op.EntryPoint and i.operands[0].value == kernel for i in instructions):
        return "OpenCL"
    if any(i.opcode == Op.TypeCooperativeMatrixKHR for i in instructions):
        return "Vulkan"
    return "GLSL450"


def _resolve(needs: Iterable[tuple[str, ...]], chosen: list[str], closure, preferred=lambda name: False) -> list[str]:
    """Satisfy each need (any-of) by what is chosen already, else by its first usable alternative
    (a preferred one first)."""
    for alternatives in sorted(needs, key=len):
        have = closure(chosen)
        if any(a in have for a in alternatives):
            continue
        usable = [a for a in alternatives if a not in _NOT_FOR_SHADERS] or list(alternatives)
        chosen.append(sorted(usable, key=lambda name: not preferred(name))[0])
    return chosen


def derive(instructions: Iterable[Instruction], version: tuple[int, int] = (1, 6),
           capabilities: Iterable[str] = (), extensions: Iterable[str] = (),
           prefer_extensions: Iterable[str] = ()) -> Requirements:
    """The minimal capabilities and the extensions `instructions` need at SPIR-V `version`.

    `capabilities`/`extensions` are declared on purpose and always kept. Where the grammar offers
    alternatives (ConvertUse: the EXT or the NV2 capability; Reduce: the EXT or the NV2 extension),
    those of `prefer_extensions` win (a target's lowering says which it has).
    """
    prefer = frozenset(prefer_extensions)
    instructions = [i for i in instructions if i.opcode not in (Op.Capability, Op.Extension)]
    explicit_caps = [canonical_capability(c) for c in capabilities]
    collector = _Collector(tuple(version))
    rules = _TypeRules(instructions)
    vulkan_mm = uses_vulkan_memory_model(instructions)
    for inst in instructions:
        collector.instruction(inst)
        caps, exts = rules.needs(inst, vulkan_mm)
        collector.capability_needs.update(((c,), None) for c in caps)
        collector.extension_needs.update(((e,), None) for e in exts)

    chosen = _resolve(collector.capability_needs, list(dict.fromkeys(explicit_caps)),
                      lambda caps: set(caps) | implied(caps),
                      lambda cap: bool(prefer & set(grammar.enumerant("Capability", cap).extensions)))
    # Minimal: drop a derived capability that another chosen one implies.
    minimal = [c for c in dict.fromkeys(chosen)
               if c in explicit_caps or c not in implied(x for x in chosen if x != c)]
    for cap in sorted(set(minimal) | implied(minimal)):
        e = grammar.enumerant("Capability", cap)
        if e.extensions and not _version_has(e.version, collector.version):
            collector.extension_needs[e.extensions] = None
        elif not e.extensions and not _version_has(e.version, collector.version) and e.version != "None":
            raise RequirementError(f"capability {cap} needs SPIR-V {e.version}; the target is "
                                   f"{version[0]}.{version[1]}")
    exts = _resolve(collector.extension_needs, list(dict.fromkeys(extensions)), set, prefer.__contains__)
    value = {c: grammar.enumerant("Capability", c).value for c in minimal}
    return Requirements(tuple(sorted(minimal, key=value.__getitem__)), tuple(sorted(set(exts))))
