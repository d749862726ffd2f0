"""A decoded module made ready to run: names, decorations, types, constants, functions and blocks.

`Program(words, spec={id: value})` parses once per specialization: types (array lengths may be
spec constants), constants (OpSpecConstantOp evaluated through the op table), global variables,
functions split into blocks, each instruction wrapped as an `Instr` with its handler resolved.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.ref import constants
from hydroplane.ref.errors import InvalidModuleError, UnsupportedInstructionError
from hydroplane.ref.handlers import handler_for
from hydroplane.ref.instruction import Instr
from hydroplane.ref.layout import has_layout
from hydroplane.ref.visibility import DEVICE_SCOPES
from hydroplane.spirv import binary, grammar
from hydroplane.spirv import types as T
from hydroplane.spirv.disassembler import InstructionPrinter
from hydroplane.spirv.enums import BuiltIn, StorageClass
from hydroplane.spirv.locations import source_locations

Op = grammar.Op


@dataclass(eq=False)
class Block:
    """A basic block: its label, phis, body, terminator, and its merge and continue targets."""

    label: int
    phis: list[Instr] = field(default_factory=list)
    body: list[Instr] = field(default_factory=list)
    terminator: Instr | None = None
    merge: int | None = None  # merge block of a selection or loop header
    continue_target: int | None = None
    order: int = -1  # position in structured order


@dataclass(eq=False)
class Function:
    """A function ready to run: its type, parameters, blocks in structured order and variables."""

    id: int
    type: T.Function
    params: list[int]
    blocks: dict[int, Block]
    order: list[int]  # labels in structured order (a construct's merge after its contents)
    entry: int
    variables: list[Instr]


@dataclass(eq=False)
class EntryPoint:
    """An entry point: its name, function, interface ids and execution modes."""

    name: str
    function: int
    interface: list[int]
    modes: dict[str, tuple]


def _decoration_name(value: int) -> str:
    return grammar.enumerant("Decoration", value).name


def _enum_name(kind: str, value: int) -> str:
    try:
        return grammar.enumerant(kind, value).name
    except grammar.GrammarError:
        return str(value)


@dataclass
class _SpecializedTypes(T.TypeTable):
    """`hydroplane.spirv.types`' reader, with the lengths and sizes it reads from constants taken as this
    program has evaluated them (a spec constant's specialized value, an OpSpecConstantOp's result)."""

    program: Program | None = None

    def constant_int(self, const_id: int) -> int:
        return self.program.const_int(const_id)


class Program:
    def __init__(self, words_or_module, spec: dict[int, object] | None = None):
        module = words_or_module if isinstance(words_or_module, binary.Module) else binary.decode(words_or_module)
        self.module = module
        self.locations = source_locations(module)  # word offset -> the kernel source's file:line (OpLine)
        self._printer: InstructionPrinter | None = None
        self.spec = dict(spec or {})
        self.names: dict[int, str] = {}
        self.decorations: dict[int, dict[str, list]] = {}
        self.types: dict[int, T.Type] = {}  # every declared type, read by hydroplane.spirv.types
        self.type_table = _SpecializedTypes(module.instructions, program=self)
        self.value_types: dict[int, T.Type] = {}  # result id -> type of the value
        self.constants: dict[int, object] = {}  # id -> value with lane width 1
        self.dispatch_constants: list[binary.Instruction] = []  # evaluated per launch (constants.for_dispatch)
        self.dispatch_constant_ids: set[int] = set()
        self.global_variables: list[Instr] = []
        self.functions: dict[int, Function] = {}
        self.entry_points: dict[str, EntryPoint] = {}
        self.ext_sets: dict[int, str] = {}
        self.capabilities: list[str] = []
        self.used_spec_ids: set[int] = set()
        self.workgroup_size_constant: int | None = None
        try:
            self._parse()
        except HydroplaneError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, AttributeError, OverflowError, MemoryError) as exc:
            raise InvalidModuleError(f"malformed module: {type(exc).__name__}: {exc}") from exc

    # -- helpers handlers use ---------------------------------------------------------------
    def describe(self, inst) -> str:
        """One instruction of the module in spirv-dis syntax with spirv-dis's names, for diagnostics."""
        if self._printer is None:  # made on the first diagnostic: most runs never print
            self._printer = InstructionPrinter.for_module(self.module)
        return self._printer.format(inst)

    def decoration(self, target: int, name: str):
        """The parameters of decoration `name` on `target` (a list, [] when it has none), or None."""
        return self.decorations.get(target, {}).get(name)

    @property
    def device_sync(self) -> bool:
        """Whether the module's workgroups may hand buffer memory to each other: an atomic on a buffer, or a barrier
        or fence whose memory scope reaches the device (ref.visibility checks such dispatches)."""
        found = self.__dict__.get("_device_sync")
        if found is None:
            found = self._device_sync = self._find_device_sync()
        return found

    def _find_device_sync(self) -> bool:
        buffers = (StorageClass.StorageBuffer, StorageClass.PhysicalStorageBuffer, StorageClass.Uniform)
        pointers = {v.result_id: v.type for v in self.global_variables}
        for fn in self.functions.values():
            for block in fn.blocks.values():
                for inst in block.body:
                    if inst.opcode in (Op.MemoryBarrier, Op.ControlBarrier):
                        scope = inst.args[0] if inst.opcode == Op.MemoryBarrier else inst.args[1]
                        if self.constants.get(scope) is not None and self.const_int(scope) in DEVICE_SCOPES:
                            return True
                    elif inst.name.startswith("OpAtomic") and inst.args:
                        t = self.value_types.get(inst.args[0]) or pointers.get(inst.args[0])
                        if isinstance(t, T.Pointer) and t.storage in buffers:
                            return True
        return False

    def const_int(self, ident: int) -> int:
        """The integer value of a scalar constant id (scopes, semantics, lengths)."""
        v = self.constants.get(ident)
        if v is None and ident in self.dispatch_constant_ids:
            raise InvalidModuleError(f"%{ident} is needed as a constant when the module is loaded, but its value "
                                     f"depends on the dispatch (a cooperative matrix's length)")
        if v is None:
            raise InvalidModuleError(f"%{ident} must be a constant")
        return int(np.asarray(v).reshape(-1)[0])

    # -- parsing ------------------------------------------------------------------------------
    def _parse(self) -> None:
        insts = self.module.instructions
        for raw in insts:
            op = raw.opcode
            if op == Op.Name:
                self.names[raw.operands[0].value] = raw.operands[1].value
            elif op in (Op.Decorate, Op.DecorateId, Op.DecorateString):
                d = self.decorations.setdefault(raw.operands[0].value, {})
                d[_decoration_name(raw.operands[1].value)] = [o.value for o in raw.operands[2:]]
            elif op == Op.ExtInstImport:
                self.ext_sets[raw.result_id] = raw.operands[0].value
            elif op == Op.Capability:
                self.capabilities.append(_enum_name("Capability", raw.operands[0].value))
        current: list | None = None
        fn_raw: list[list[binary.Instruction]] = []
        for raw in insts:
            op = raw.opcode
            if op == Op.Function:
                current = [raw]
                continue
            if current is not None:
                current.append(raw)
                if op == Op.FunctionEnd:
                    fn_raw.append(current)
                    current = None
                continue
            if op == Op.EntryPoint:
                model = _enum_name("ExecutionModel", raw.operands[0].value)
                name = raw.operands[2].value
                if model == "GLCompute":
                    self.entry_points[name] = EntryPoint(name, raw.operands[1].value,
                                                         [o.value for o in raw.operands[3:]], {})
            elif op in (Op.ExecutionMode, Op.ExecutionModeId):
                fn = raw.operands[0].value
                mode = _enum_name("ExecutionMode", raw.operands[1].value)
                for ep in self.entry_points.values():
                    if ep.function == fn:
                        ep.modes[mode] = tuple(o.value for o in raw.operands[2:])
            elif grammar.instruction(op).opclass == "Type-Declaration" and raw.result_id is not None:
                self.types[raw.result_id] = self._read_type(raw)
            elif op == Op.Variable:
                inst = Instr(raw)
                inst.set_type(self.types.get(raw.result_type))
                self.value_types[raw.result_id] = inst.type
                self.global_variables.append(inst)
            elif op not in MODULE_OPS and op not in constants.CONSTANT_OPS:
                raise UnsupportedInstructionError(f"{grammar.instruction(op).name} at word {raw.offset} is not "
                                                  f"implemented by the reference executor")
            elif raw.result_id is not None and raw.result_type is not None:
                self.value_types[raw.result_id] = self.types.get(raw.result_type)
                constants.evaluate(self, raw)
        for group in fn_raw:
            self._parse_function(group)
        self._find_register_variables()
        self._find_block_local_values()
        for ident, deco in self.decorations.items():
            if deco.get("BuiltIn") == [BuiltIn.WorkgroupSize]:
                self.workgroup_size_constant = ident

    def _read_type(self, raw: binary.Instruction) -> T.Type:
        """The type `raw` declares, read by hydroplane.spirv.types (refusals as InvalidModuleError)."""
        try:
            return self._settled(self.type_table[raw.result_id])
        except HydroplaneError as err:
            if isinstance(err, InvalidModuleError):
                raise
            raise InvalidModuleError(f"type %{raw.result_id} ({raw.name}): {err}") from None

    def _settled(self, t: T.Type) -> T.Type:
        """`t` with a Forward left only as a pointer's pointee: where the reader met a forward-declared
        pointer while reading that pointer's own pointee, the member holds the pointer type itself."""
        if isinstance(t, T.Forward):
            raw = self.type_table.defs.get(t.type_id)
            if raw is None or raw.opcode != Op.TypePointer:
                raise InvalidModuleError(f"%{t.type_id} is used as a type before it is declared")
            pointer = self.type_table[t.type_id]
            return T.Pointer(pointer.storage, T.Forward(raw.operands[1].value), pointer.stride)
        if isinstance(t, T.Array):
            element = self._settled(t.element)
            return t if element is t.element else T.Array(element, t.length, t.stride)
        if isinstance(t, T.Struct):
            members = tuple(m if (s := self._settled(m.type)) is m.type else
                            T.Member(s, m.offset, m.matrix_stride, m.row_major, m.name) for m in t.members)
            same = all(a is b for a, b in zip(members, t.members))
            return t if same else T.Struct(members, t.block, t.name)
        if isinstance(t, T.Pointer) and not isinstance(t.pointee, T.Forward):
            pointee = self._settled(t.pointee)
            return t if pointee is t.pointee else T.Pointer(t.storage, pointee, t.stride)
        return t

    def pointee(self, t: T.Pointer) -> T.Type:
        """What a pointer type points to, a forward-declared pointee looked up by its id."""
        pointee = t.pointee
        return self.types[pointee.type_id] if isinstance(pointee, T.Forward) else pointee

    def _parse_function(self, group: list[binary.Instruction]) -> None:
        head = group[0]
        fn_type = self.types.get(head.operands[1].value)
        params: list[int] = []
        blocks: dict[int, Block] = {}
        variables: list[Instr] = []
        block: Block | None = None
        entry = None
        for raw in group[1:-1]:
            op = raw.opcode
            if raw.result_id is not None and raw.result_type is not None:
                self.value_types[raw.result_id] = self.types.get(raw.result_type)
            if op == Op.FunctionParameter:
                params.append(raw.result_id)
                continue
            if op == Op.Label:
                block = Block(raw.result_id)
                blocks[raw.result_id] = block
                entry = entry or raw.result_id
                continue
            if block is None:
                raise InvalidModuleError(f"instruction at word {raw.offset} is outside any block")
            inst = Instr(raw)
            inst.set_type(self.types.get(raw.result_type) if raw.result_type is not None else None)
            if op == Op.Phi:
                block.phis.append(inst)
            elif op == Op.Variable:
                variables.append(inst)
            elif op == Op.LoopMerge:
                block.merge, block.continue_target = raw.operands[0].value, raw.operands[1].value
            elif op == Op.SelectionMerge:
                block.merge = raw.operands[0].value
            elif op in _TERMINATORS:
                block.terminator = inst
            elif op in _IGNORED:
                continue
            else:
                inst.handler = handler_for(self, inst)
                block.body.append(inst)
        if entry is None:
            raise InvalidModuleError(f"function %{head.result_id} has no blocks")
        order = _structured_order(blocks, entry)
        for i, label in enumerate(order):
            blocks[label].order = i
        self.functions[head.result_id] = Function(head.result_id, fn_type, params, blocks, order, entry, variables)

    def _find_block_local_values(self) -> None:
        """Results used only later in their own block (never by a phi): no lane can need an older
        value of them, so setting them needs no merge under the active-lane mask."""
        local: set[int] = set()
        for fn in self.functions.values():
            for block in fn.blocks.values():
                defined_here = {inst.result_id for inst in block.body if inst.result_id is not None}
                used_elsewhere: set[int] = set()
                for other in fn.blocks.values():
                    insts = (*other.phis, *other.body, *([other.terminator] if other.terminator else []))
                    for inst in insts:
                        if other is block and inst.opcode != Op.Phi:
                            continue
                        used_elsewhere.update(i for i in inst.args if i in defined_here)
                local |= defined_here - used_elsewhere
        self.block_local_values = local

    def _find_register_variables(self) -> None:
        """Function/Private variables kept as values: used only as the pointer of whole loads and
        stores, or passed to a function whose parameter is used only so; and every variable whose
        type has no memory layout (cooperative matrices, opaque types)."""
        all_insts = [inst for fn in self.functions.values() for block in fn.blocks.values()
                     for inst in (*block.phis, *block.body, *([block.terminator] if block.terminator else []))]
        param_owner = {p: (fn.id, i) for fn in self.functions.values() for i, p in enumerate(fn.params)}

        def only_loaded_and_stored(ids: set[int], allow_calls: dict | None) -> set[int]:
            keep = set(ids)
            for inst in all_insts:
                for pos, ident in enumerate(inst.args):
                    if ident not in keep:
                        continue
                    if pos == 0 and inst.opcode in (Op.Load, Op.Store):
                        continue
                    if allow_calls is not None and inst.opcode == Op.FunctionCall and pos > 0:
                        callee_param = self.functions[inst.args[0]].params[pos - 1] \
                            if inst.args[0] in self.functions else None
                        if callee_param in allow_calls:
                            continue
                    keep.discard(ident)
            return keep

        safe_params = only_loaded_and_stored(set(param_owner), None)
        candidates = {v.result_id for fn in self.functions.values() for v in fn.variables}
        candidates |= {v.result_id for v in self.global_variables if v.type.storage == StorageClass.Private}
        registers = only_loaded_and_stored(candidates, safe_params)
        for var in [v for fn in self.functions.values() for v in fn.variables] + self.global_variables:
            if var.type.storage in (StorageClass.Function, StorageClass.Private) \
                    and not has_layout(self.pointee(var.type)):
                registers.add(var.result_id)
        self.register_variables = registers


_IGNORED = {Op.Line, Op.NoLine, Op.Nop}
_TERMINATORS = {Op.Branch, Op.BranchConditional, Op.Switch, Op.Return, Op.ReturnValue, Op.Unreachable,
                Op.Kill, Op.TerminateInvocation}

# The instructions the loader and the scheduler consume themselves, outside the op table (the
# coverage table of docs/ref.md reads these with the op table): module information and
# annotations, global variables, the structure of functions, and the terminators control.py
# runs (OpKill and OpTerminateInvocation are fragment-only: control.py refuses them by name).
# Every type declaration is read too (the ones the executor does not model become OpaqueType,
# and an instruction that needs their values is refused by name); constants are constants.py's.
MODULE_OPS = frozenset({Op.Capability, Op.Extension, Op.ExtInstImport, Op.MemoryModel, Op.EntryPoint,
                        Op.ExecutionMode, Op.ExecutionModeId, Op.String, Op.Source, Op.SourceContinued,
                        Op.SourceExtension, Op.Name, Op.MemberName, Op.ModuleProcessed, Op.Decorate,
                        Op.DecorateId, Op.DecorateString, Op.MemberDecorate, Op.MemberDecorateString,
                        Op.TypeForwardPointer, Op.Variable, Op.ExtInst, Op.ExtInstWithForwardRefsKHR}) | _IGNORED
FUNCTION_OPS = frozenset({Op.Function, Op.FunctionEnd, Op.FunctionParameter, Op.Label, Op.Phi, Op.Variable,
                          Op.LoopMerge, Op.SelectionMerge}) | _IGNORED | (_TERMINATORS - {Op.Kill,
                                                                                          Op.TerminateInvocation})


def successors(block: Block) -> list[int]:
    t = block.terminator
    if t is None:
        return []
    if t.opcode == Op.Branch:
        return [t.args[0]]
    if t.opcode == Op.BranchConditional:
        return [t.args[1], t.args[2]]
    if t.opcode == Op.Switch:
        return [t.args[1]] + [o.value for o in t.operands[2:] if o.kind == "IdRef"]
    return []


def _structured_order(blocks: dict[int, Block], entry: int) -> list[int]:
    """Blocks so that a construct's continue target and merge block follow all its other blocks."""
    order: list[int] = []
    seen: set[int] = set()
    pending: set[int] = set()  # merges and continue targets of constructs still open

    def visit(label: int) -> None:
        if label in seen or label in pending or label not in blocks:
            return
        seen.add(label)
        order.append(label)
        b = blocks[label]
        late = [x for x in (b.continue_target, b.merge) if x is not None and x not in pending]
        pending.update(late)
        for s in successors(b):
            visit(s)
        pending.difference_update(late)
        for x in late:
            visit(x)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(blocks) + 1000))
    try:
        visit(entry)
        for label in blocks:  # unreachable blocks keep a position
            visit(label)
    finally:
        sys.setrecursionlimit(limit)
    return order
