"""ModuleBuilder: build a SPIR-V module instruction by instruction, in the logical layout.

One generic `emit(op, *operands)` takes any instruction with its operands by grammar kind
(ids as ints, enumerants by name or value, masks as 'A|B' or a sequence of names, literal
numbers and strings) and files it in its section. A few typed helpers cover what every
kernel needs: scalar/vector/array/struct/pointer/function/cooperative-matrix types and
constants (de-duplicated), buffers, functions and blocks, entry points. Capabilities,
extensions and the memory model are derived when the words are made
(`requirements.derive`), so an author never lists them; `capability()`/`extension()`
add more on purpose.

    b = ModuleBuilder()
    f32 = b.scalar("f32")
    ...
    words = b.to_words()      # array('I'); b.module() gives a binary.Module
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache

from hydroplane.spirv import enums, grammar, literals, requirements, types
from hydroplane.spirv.binary import Instruction, Module, Operand, SpirvError, encode
from hydroplane.spirv.build_error import BuildError
from hydroplane.spirv.builder_operands import OperandEncoder

Op = grammar.Op
__all__ = ["BuildError", "ModuleBuilder"]


_TERMINATORS = frozenset({
    Op.Return, Op.ReturnValue, Op.Branch, Op.BranchConditional, Op.Switch, Op.Kill,
    Op.Unreachable, Op.TerminateInvocation,
})
# Opcodes that the builder never merges with an equal earlier one.
_NOT_DEDUPLICATED = frozenset({
    Op.TypeStruct, Op.TypeOpaque, Op.TypeForwardPointer, Op.SpecConstant, Op.SpecConstantTrue,
    Op.SpecConstantFalse, Op.SpecConstantComposite, Op.SpecConstantOp,
})
# Module-level sections, in the logical layout order (capabilities/extensions are derived).
_SECTION_OF_OPCODE = {
    Op.ExtInstImport: "imports", Op.EntryPoint: "entry_points", Op.ExecutionMode: "modes",
    Op.ExecutionModeId: "modes", Op.String: "sources", Op.Source: "sources",
    Op.SourceContinued: "sources", Op.SourceExtension: "sources", Op.Name: "names",
    Op.MemberName: "names", Op.ModuleProcessed: "processed",
}
_SECTION_OF_CLASS = {"Annotation": "annotations", "Type-Declaration": "globals",
                     "Constant-Creation": "globals"}


@dataclass(slots=True)
class _Function:
    """A function being built: its head, its Function-storage variables and its body so far."""

    head: list[Instruction]  # OpFunction and its parameters
    variables: list[Instruction] = field(default_factory=list)  # Function-storage OpVariables
    body: list[Instruction] = field(default_factory=list)  # labels and everything after
    terminated: bool = True  # no block open

    @property
    def id(self) -> int:
        return self.head[0].result_id

    def instructions(self) -> list[Instruction]:
        if self.variables and not self.body:
            raise BuildError(f"function %{self.id} has variables but no block")
        return [*self.head, *self.body[:1], *self.variables, *self.body[1:],
                Instruction(Op.FunctionEnd)]


@dataclass(slots=True)
class _EntryPoint:
    """An entry point being built: execution model, function id, name and interface ids."""

    model: int
    function: int
    name: str
    interface: list[int] | None  # None: derived from the global variables the function uses


class ModuleBuilder:
    """Builds one SPIR-V module; see the module docstring."""

    def __init__(self, version: tuple[int, int] = (1, 6), *, addressing: str = "Logical",
                 memory_model: str | None = None):
        if tuple(version) < (1, 0) or tuple(version) > (1, 6):
            raise BuildError(f"SPIR-V version {version} is not one of 1.0 .. 1.6")
        self.version = tuple(version)
        self.addressing = addressing
        self.memory_model = memory_model  # None: GLSL450, or Vulkan when the module needs it
        self._bound = 1
        self._sections: dict[str, list[Instruction]] = {
            s: [] for s in ("imports", "entry_points", "modes", "sources", "names", "processed",
                            "annotations", "globals")}
        self._capabilities: list[str] = []
        self._extensions: list[str] = []
        self._interned: dict[tuple, int] = {}
        self._imports: dict[str, int] = {}
        self._entry_points: list[_EntryPoint] = []
        self._functions: list[_Function] = []
        self._current: _Function | None = None
        self._defs: dict[int, Instruction] = {}  # result id -> defining instruction
        self._names: dict[int, str] = {}
        self._location: tuple[str, int, int] | None = None  # (file, line, column) of what is emitted now
        self._files: dict[str, int] = {}  # file name -> OpString id
        self._block_location: tuple[int, int, int] | None = None  # the OpLine in force in the open block
        self.prefer_extensions: tuple[str, ...] = ()  # extensions picked first where the grammar offers a choice

    @classmethod
    def from_module(cls, module: Module, *, keep_requirements: bool = False) -> ModuleBuilder:
        """A builder that starts from an existing module (any producer): every instruction kept with
        its id, its types and constants reused by later requests, functions open for rewriting.

        Capabilities and extensions are re-derived when the module is made, unless
        `keep_requirements` keeps the module's own as declared on purpose."""
        b = cls(module.version)
        b._bound = module.bound
        type_decorations: dict[int, list[tuple]] = {}
        for inst in module.instructions:
            if inst.opcode == Op.Decorate and len(inst.operands) >= 2:
                name = grammar.enumerant("Decoration", inst.operands[1].value).name
                type_decorations.setdefault(inst.operands[0].value, []).append(
                    (name, *(o.value for o in inst.operands[2:])))
        for inst in module.instructions:
            b._adopt(inst, type_decorations, keep_requirements)
        if b._current is not None:
            raise BuildError(f"function %{b._current.id} of the module has no OpFunctionEnd")
        return b

    def _adopt(self, inst: Instruction, type_decorations: dict[int, list[tuple]], keep_requirements: bool) -> None:
        """File one instruction of an existing module as if it had been emitted (see from_module)."""
        info, _, _, deduplicated = _facts(inst.opcode)
        op = inst.opcode
        if op in (Op.Capability, Op.Extension) and not keep_requirements:
            return
        if op == Op.EntryPoint:
            ids = [o.value for o in inst.operands if o.kind == "IdRef"]
            self._entry_points.append(_EntryPoint(inst.operands[0].value, ids[0], inst.operands[2].value, None))
            return
        if op == Op.ExtInstImport:
            self._imports[inst.operands[0].value] = inst.result_id
        if op == Op.Name:
            self._names.setdefault(inst.operands[0].value, inst.operands[1].value)
        in_function = self._current is not None
        section = _SECTION_OF_OPCODE.get(op) or _SECTION_OF_CLASS.get(info.opclass)
        if not in_function and section is None and op not in (Op.Function, Op.Capability, Op.Extension,
                                                               Op.MemoryModel):
            self._record(inst, self._sections["globals"])  # OpLine, OpExtInst of debug info, OpUndef ...
            return
        if op == Op.FunctionEnd:
            self._current.terminated = True  # type: ignore[union-attr]
        self._place(info, inst)
        if deduplicated and inst.result_id is not None and op != Op.TypeStruct:
            decorations = tuple(type_decorations.get(inst.result_id, ()))
            self._interned.setdefault((*_key(inst), decorations), inst.result_id)

    @contextmanager
    def replacing(self, inst: Instruction) -> Iterator[None]:
        """Emit, inside the block that holds `inst`, what replaces it (a pass rewriting a module built
        or adopted by this builder): `with b.replacing(inst): b.emit(...)`. The replacement may
        define inst's result id again; Function variables go to the top of the function."""
        for fn in self._functions:
            index = next((n for n, candidate in enumerate(fn.body) if candidate is inst), None)
            if index is not None:
                break
        else:
            raise BuildError(f"{inst.name} is not in a function of this builder")
        if self._current is not None:
            raise BuildError(f"function %{self._current.id} is still open (end_function())")
        self._defs.pop(inst.result_id, None)
        self._current = _Function(fn.head, fn.variables, [], terminated=False)
        try:
            yield
        finally:
            replacement, self._current = self._current.body, None
        fn.body[index:index + 1] = replacement

    def functions(self) -> list[tuple[int, list[Instruction]]]:
        """(function id, its instructions from the first label on) of every function: for passes."""
        return [(fn.id, fn.body) for fn in self._functions]

    def remove(self, inst: Instruction) -> None:
        """Drop a module-level instruction (a decoration, a name ...) that a pass makes obsolete."""
        for section in self._sections.values():
            for n, candidate in enumerate(section):
                if candidate is inst:
                    del section[n]
                    return
        raise BuildError(f"{inst.name} is not a module-level instruction of this builder")

    def instructions(self, section: str) -> list[Instruction]:
        """The module-level instructions of a section ('annotations', 'globals', 'names', ...)."""
        return list(self._sections[section])

    # source locations --------------------------------------------------------------------------
    def location(self, file: str | None, line: int = 0, column: int = 0) -> None:
        """The source location of what is emitted from now on (OpLine before the next instruction in
        a block); None stops emitting locations (OpNoLine)."""
        self._location = None if file is None else (file, int(line), int(column))

    def _line_for(self, op: int) -> Instruction | None:
        """The OpLine (or OpNoLine) to put before an instruction placed in the open block, if it changed."""
        if op in (Op.Label, Op.Line, Op.NoLine, Op.Variable) or (self._location is None and
                                                                   self._block_location is None):
            return None
        if self._location is None:
            self._block_location = None
            return Instruction(Op.NoLine)
        file, line, column = self._location
        file_id = self._files.get(file)
        if file_id is None:
            file_id = self._files[file] = self.emit(Op.String, file)
        where = (file_id, line, column)
        if where == self._block_location:
            return None
        self._block_location = where
        return Instruction(Op.Line, operands=[Operand("IdRef", file_id), Operand("LiteralInteger", line),
                                             Operand("LiteralInteger", column)])

    # ids, explicit requirements ------------------------------------------------------------
    def id(self) -> int:
        """A fresh id (for forward references: labels, functions called before they exist)."""
        new = self._bound
        self._bound += 1
        return new

    def type_of(self, value: int) -> int:
        """The result type id of a value this builder defined."""
        inst = self._defs.get(value)
        if inst is None or inst.result_type is None:
            raise BuildError(f"%{value} is not a value defined by this builder")
        return inst.result_type

    def capability(self, name: str) -> None:
        """Declare a capability on purpose (derivation adds every needed one by itself)."""
        try:
            self._capabilities.append(requirements.canonical_capability(name))
        except grammar.GrammarError as err:
            raise BuildError(f"OpCapability: {err}") from None

    def extension(self, name: str) -> None:
        """Declare an extension on purpose (also picks among alternatives the grammar allows)."""
        if not isinstance(name, str) or not name:
            raise BuildError(f"OpExtension: the name must be a non-empty string, not {name!r}")
        self._extensions.append(name)

    # the generic emitter ---------------------------------------------------------------------
    def emit(self, op: int | str, *operands, result_id: int | None = None) -> int | None:
        """Emit any instruction; returns its result id (None when it has none).

        Operands follow the grammar after the result id: the result type first (when the
        instruction has one), then each operand by its kind.
        """
        info, has_result_type, has_result, deduplicated = _facts(op)
        args = list(operands)
        inst = Instruction(info.opcode)
        if has_result_type:
            if not args:
                raise BuildError(f"{info.name}: missing the result type")
            inst.result_type = self._check_id(info, "result type", args.pop(0))
        if not has_result and result_id is not None:
            raise BuildError(f"{info.name} has no result id")
        inst.operands = OperandEncoder(self, info, inst).encode(args)
        if result_id is not None:
            inst.result_id = self._check_id(info, "result id", result_id)
        elif has_result and not deduplicated:
            inst.result_id = self.id()  # a type or constant gets its id when it is new
        return self._place(info, inst)

    def _check_id(self, info, what: str, value) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < self._bound:
            raise BuildError(f"{info.name}: {what} must be an id allocated by this builder "
                             f"(1..{self._bound - 1}), not {value!r}")
        return value

    def _place(self, info: grammar.InstructionInfo, inst: Instruction) -> int | None:
        op = inst.opcode
        if op == Op.Capability:
            self.capability(grammar.enumerant("Capability", inst.operands[0].value).name)
            return None
        if op == Op.Extension:
            self.extension(inst.operands[0].value)
            return None
        if op == Op.MemoryModel:
            self.addressing = grammar.enumerant("AddressingModel", inst.operands[0].value).name
            self.memory_model = grammar.enumerant("MemoryModel", inst.operands[1].value).name
            return None
        if op in (Op.Function, Op.FunctionParameter, Op.Label, Op.FunctionEnd):
            return self._function_structure(info, inst)
        if op == Op.EntryPoint:
            ids = [o.value for o in inst.operands if o.kind == "IdRef"]
            self._entry_points.append(_EntryPoint(inst.operands[0].value, ids[0], inst.operands[2].value,
                                                  ids[1:] or None))
            return None
        section = _SECTION_OF_OPCODE.get(op) or _SECTION_OF_CLASS.get(info.opclass)
        in_function = self._current is not None and not self._current.terminated
        if op == Op.Variable:
            function_storage = inst.operands[0].value == grammar.enumerant("StorageClass", "Function").value
            if function_storage:
                if self._current is None:
                    raise BuildError("OpVariable Function: no function is open")
                return self._record(inst, self._current.variables)
            section = "globals"
        elif op == Op.Undef and not in_function:
            section = "globals"
        if section is not None:
            if info.has_result and inst.result_id is None:
                return self._intern(_key(inst), inst)
            return self._record(inst, self._sections[section])
        if not in_function:
            raise BuildError(f"{info.name} belongs in a block: open a function and a block "
                             "(function(), label()) first" + (" -- the last block is already terminated"
                                                               if self._current is not None else ""))
        line = self._line_for(op)
        if line is not None:
            self._current.body.append(line)
        self._record(inst, self._current.body)
        if op in _TERMINATORS:
            self._current.terminated = True
        return inst.result_id

    def _record(self, inst: Instruction, where: list[Instruction]) -> int | None:
        if inst.result_id is not None:
            if inst.result_id in self._defs:
                raise BuildError(f"{inst.name}: id {inst.result_id} is already defined by "
                                 f"{self._defs[inst.result_id].name}")
            self._defs[inst.result_id] = inst
        where.append(inst)
        return inst.result_id

    def _intern(self, key: tuple, inst: Instruction, decorations: Sequence[tuple] = ()) -> int:
        """Reuse the id of an equal type/constant (same key) or emit this one with its decorations."""
        return self._intern_new(key, inst, decorations)[0]

    def _intern_new(self, key: tuple, inst: Instruction, decorations: Sequence[tuple] = ()) -> tuple[int, bool]:
        """(id, whether it is new): an equal earlier type/constant's id, or `inst` given a fresh id."""
        key = (*key, tuple(decorations))
        found = self._interned.get(key)
        if found is not None:
            return found, False
        inst.result_id = self.id()
        self._record(inst, self._sections["globals"])
        for decoration in decorations:
            self.decorate(inst.result_id, *decoration)
        self._interned[key] = inst.result_id
        return inst.result_id, True

    def _function_structure(self, info, inst: Instruction) -> int | None:
        op = inst.opcode
        if op == Op.Function:
            if self._current is not None:
                raise BuildError(f"OpFunction: function %{self._current.id} is still open (end_function())")
            self._current = _Function([inst])
            self._functions.append(self._current)
            return self._record(inst, [])
        fn = self._current
        if fn is None:
            raise BuildError(f"{info.name}: no function is open")
        if op == Op.FunctionParameter:
            if fn.body:
                raise BuildError("OpFunctionParameter: parameters come before the first block")
            fn.head.append(inst)
            return self._record(inst, [])
        if op == Op.Label:
            if not fn.terminated:
                raise BuildError(f"OpLabel: the block before %{inst.result_id} has no terminator")
            fn.terminated = False
            self._block_location = None  # an OpLine does not reach past its block
            return self._record(inst, fn.body)
        if not fn.terminated:
            raise BuildError(f"OpFunctionEnd: the last block of function %{fn.id} has no terminator")
        self._current = None
        return None

    # functions and blocks --------------------------------------------------------------------
    def function(self, return_type: int, params: Sequence[int] = (), control: str | int = "None",
                 name: str | None = None, result_id: int | None = None) -> tuple[int, list[int]]:
        """Open a function; returns (function id, parameter ids). Then label(), ..., end_function()."""
        fn_type = self.type_function(return_type, *params)
        fn = self.emit(Op.Function, return_type, control, fn_type, result_id=result_id)
        if name:
            self.name(fn, name)
        return fn, [self.emit(Op.FunctionParameter, p) for p in params]

    @contextmanager
    def function_aside(self):
        """Set the open function aside while another one is built (a callee met in its caller's body)."""
        saved, self._current = self._current, None
        try:
            yield
        except BaseException:
            self._current = saved  # the error in flight says what went wrong
            raise
        if self._current is not None:
            left_open, self._current = self._current, saved
            raise BuildError(f"function %{left_open.id} was left open inside function_aside()")
        self._current = saved

    def set_return_type(self, function: int, return_type: int) -> None:
        """Change a function's return type after its body is built (a language infers it from the body)."""
        fn = next((f for f in self._functions if f.id == function), None)
        if fn is None:
            raise BuildError(f"%{function} is not a function of this builder")
        head = fn.head[0]
        head.result_type = self._check_id(grammar.instruction(Op.Function), "return type", return_type)
        params = [p.result_type for p in fn.head[1:]]
        head.operands[1] = Operand("IdRef", self.type_function(return_type, *params))

    def label(self, label_id: int | None = None) -> int:
        """Start a block (the previous one must be terminated)."""
        return self.emit(Op.Label, result_id=label_id)

    def end_function(self) -> None:
        self.emit(Op.FunctionEnd)

    def variable(self, pointer_type: int, storage: str | int, initializer: int | None = None,
                 name: str | None = None) -> int:
        """A variable: module-level for every storage class but Function (hoisted to the entry block)."""
        extra = () if initializer is None else (initializer,)
        var = self.emit(Op.Variable, pointer_type, storage, *extra)
        if name:
            self.name(var, name)
        return var

    def entry_point(self, model: str | int, function: int, name: str = "main",
                    interface: Sequence[int] | None = None, local_size: Sequence[int] | None = None) -> None:
        """Declare an entry point; the interface (all global variables it uses) is derived when None."""
        self.emit(Op.EntryPoint, model, function, name, *(interface or ()))
        if interface is not None:
            self._entry_points[-1].interface = list(interface)
        if local_size is not None:
            self.execution_mode(function, "LocalSize", *local_size_dims(local_size))

    def execution_mode(self, function: int, mode: str | int, *literals) -> None:
        self.emit(Op.ExecutionMode, function, mode, *literals)

    # debug names and decorations --------------------------------------------------------------
    def name(self, target: int, name: str) -> int:
        if target not in self._names:
            self._names[target] = name
            self.emit(Op.Name, target, name)
        return target

    def member_name(self, struct_type: int, member: int, name: str) -> None:
        self.emit(Op.MemberName, struct_type, member, name)

    def decorate(self, target: int, decoration: str | int, *params) -> None:
        self.emit(Op.Decorate, target, decoration, *params)

    def member_decorate(self, struct_type: int, member: int, decoration: str | int, *params) -> None:
        self.emit(Op.MemberDecorate, struct_type, member, decoration, *params)

    # types -------------------------------------------------------------------------------------
    def type_void(self) -> int:
        return self.emit(Op.TypeVoid)

    def type_bool(self) -> int:
        return self.emit(Op.TypeBool)

    def type_int(self, width: int, signed: int) -> int:
        return self.emit(Op.TypeInt, width, int(signed))

    def type_float(self, width: int, encoding: str | None = None) -> int:
        return self.emit(Op.TypeFloat, width, *(() if encoding is None else (encoding,)))

    def scalar(self, name: str) -> int:
        """The type of a short scalar name: 'f16', 'bf16', 'f32', 's8', 'u32', 'bool' ..."""
        try:
            return self.declare(types.scalar(name))
        except types.TypeModelError as err:
            raise BuildError(str(err)) from None

    def type_at(self, type_id: int) -> types.Type:
        """The type-model value of a type this builder declared (with its layout decorations)."""
        s = self._sections
        try:
            return types.TypeTable(s["annotations"] + s["names"] + s["globals"])[type_id]
        except SpirvError as err:
            raise BuildError(f"%{type_id}: {err}") from None

    @staticmethod
    def _layout(rule, t: types.Type):
        """A std430 layout query on the type model, its errors as BuildErrors."""
        try:
            return rule(t, "std430")
        except types.TypeModelError as err:
            raise BuildError(f"{t}: {err}") from None

    def declare(self, t: types.Type) -> int:
        """The id of a type of the type model (spirv/types.py), declared once with its decorations.

        Arrays, structs and pointers carry their layout (ArrayStride, Offset, MatrixStride,
        RowMajor) as the type says; `types.laid_out(t, rule)` fills them in under a layout rule."""
        declare = _DECLARERS.get(type(t))
        if declare is None:
            raise BuildError(f"cannot declare {t} ({type(t).__name__}) through the builder")
        return declare(self, t)

    def _declare_struct(self, t: types.Struct) -> int:
        members = [self.declare(m.type) for m in t.members]
        offsets = [m.offset for m in t.members]
        if any(o is None for o in offsets) and any(o is not None for o in offsets):
            raise BuildError(f"{t}: either every member has an Offset or none has")
        inst = self._new(Op.TypeStruct, *members)
        decorations = [("Block",)] if t.block else []
        layout = tuple((m.offset, m.matrix_stride, m.row_major) for m in t.members)
        struct, new = self._intern_new((*_key(inst), layout, t.name), inst, decorations)
        if new:
            for i, m in enumerate(t.members):
                if m.offset is not None:
                    self.member_decorate(struct, i, "Offset", m.offset)
                if m.matrix_stride is not None:
                    self.member_decorate(struct, i, "RowMajor" if m.row_major else "ColMajor")
                    self.member_decorate(struct, i, "MatrixStride", m.matrix_stride)
                if m.name:
                    self.member_name(struct, i, m.name)
            if t.name:
                self.name(struct, t.name)
        return struct

    def _declare_pointer(self, t: types.Pointer) -> int:
        inst = self._new(Op.TypePointer, int(t.storage), self.declare(t.pointee))
        return self._intern(_key(inst), inst, _stride_decoration(t.stride))

    def _declare_coop(self, t: types.CoopMatrix) -> int:
        component = self.declare(t.component)
        if t.family == "NV":
            return self.type_coop_matrix_nv(component, t.rows, t.cols, int(t.scope))
        return self.type_coop_matrix_khr(component, t.rows, t.cols, int(t.use), int(t.scope))

    def type_vector(self, component: int, count: int) -> int:
        return self.emit(Op.TypeVector, component, count)

    def type_array(self, element: int, length: int, stride: int | None = None) -> int:
        """OpTypeArray of `length` (a Python int; the u32 constant is made) with ArrayStride when given."""
        inst = self._new(Op.TypeArray, element, self.constant(self.scalar("u32"), length))
        return self._intern(_key(inst), inst, _stride_decoration(stride))

    def type_runtime_array(self, element: int, stride: int | None = None) -> int:
        inst = self._new(Op.TypeRuntimeArray, element)
        return self._intern(_key(inst), inst, _stride_decoration(stride))

    def type_struct(self, *members: int, offsets: Sequence[int] | str | None = None, block: bool = False,
                    name: str | None = None, member_names: Sequence[str] = ()) -> int:
        """OpTypeStruct; offsets a list, 'std430', or None (no Offset); Block when `block`."""
        if offsets == "std430":
            offsets = self._layout(types.member_offsets, types.Struct(tuple(types.Member(self.type_at(m))
                                                                             for m in members)))
        elif offsets is not None and len(offsets) != len(members):
            raise BuildError(f"OpTypeStruct: {len(offsets)} offsets for {len(members)} members")
        inst = self._new(Op.TypeStruct, *members)
        decorations = [("Block",)] if block else []
        struct, new = self._intern_new((*_key(inst), tuple(offsets or ())), inst, decorations)
        if new:
            for i, offset in enumerate(offsets or ()):
                self.member_decorate(struct, i, "Offset", offset)
            for i, member in enumerate(member_names):
                self.member_name(struct, i, member)
            if name:
                self.name(struct, name)
        return struct

    def type_pointer(self, storage: str | int, pointee: int) -> int:
        return self.emit(Op.TypePointer, storage, pointee)

    def type_function(self, return_type: int, *params: int) -> int:
        return self.emit(Op.TypeFunction, return_type, *params)

    def type_coop_matrix_khr(self, component: int, rows: int, cols: int, use: str | int,
                             scope: str | int = "Subgroup") -> int:
        """OpTypeCooperativeMatrixKHR; rows/cols Python ints, use/scope enumerant names or values."""
        u32 = self.scalar("u32")
        return self.emit(Op.TypeCooperativeMatrixKHR, component, self.scope(scope),
                         self.constant(u32, rows), self.constant(u32, cols),
                         self.constant(u32, _enum_value("CooperativeMatrixUse", use)))

    def type_coop_matrix_nv(self, component: int, rows: int, cols: int, scope: str | int = "Subgroup") -> int:
        """OpTypeCooperativeMatrixNV (legacy SPV_NV_cooperative_matrix: no Use)."""
        u32 = self.scalar("u32")
        return self.emit(Op.TypeCooperativeMatrixNV, component, self.scope(scope),
                         self.constant(u32, rows), self.constant(u32, cols))

    def _new(self, op, *operands) -> Instruction:
        """An instruction encoded but not placed, its id not yet given (for _intern)."""
        info = _facts(op)[0]
        inst = Instruction(info.opcode)
        inst.operands = OperandEncoder(self, info, inst).encode(list(operands))
        return inst

    # constants ---------------------------------------------------------------------------------
    def constant(self, type_id: int, value: int | float) -> int:
        """OpConstant of a scalar int/float type (any width; f16/bf16 rounded to nearest even)."""
        return self.emit(Op.Constant, type_id, value)

    def constant_bits(self, type_id: int, bits: int) -> int:
        """OpConstant from the type's raw bit pattern (e.g. 0x3C00 for f16 1.0)."""
        value, nwords = literals.bits_literal(self._scalar_of(type_id, "OpConstant"), bits)
        inst = Instruction(Op.Constant, type_id, None, [Operand("LiteralContextDependentNumber", value, nwords)])
        return self._intern(_key(inst), inst)

    def constant_bool(self, value: bool) -> int:
        return self.emit(Op.ConstantTrue if value else Op.ConstantFalse, self.type_bool())

    def constant_composite(self, type_id: int, *constituents: int) -> int:
        return self.emit(Op.ConstantComposite, type_id, *constituents)

    def constant_null(self, type_id: int) -> int:
        return self.emit(Op.ConstantNull, type_id)

    def spec_constant(self, type_id: int, default: int | float | bool, spec_id: int, name: str | None = None) -> int:
        """A specialization constant with SpecId (never shared with another one)."""
        if isinstance(default, bool):
            const = self.emit(Op.SpecConstantTrue if default else Op.SpecConstantFalse, type_id)
        else:
            const = self.emit(Op.SpecConstant, type_id, default)
        self.decorate(const, "SpecId", spec_id)
        if name:
            self.name(const, name)
        return const

    def scope(self, scope: str | int) -> int:
        """The u32 constant id of a Scope ('Subgroup', 'Workgroup', ...)."""
        return self.constant(self.scalar("u32"), _enum_value("Scope", scope))

    def u32(self, value: int) -> int:
        return self.constant(self.scalar("u32"), value)

    def _scalar_of(self, type_id: int, where: str) -> types.Scalar:
        inst = self._defs.get(type_id)
        if inst is None:
            raise BuildError(f"{where}: %{type_id} is not a type defined before it")
        if inst.opcode == Op.TypeInt:
            return types.Scalar("int", inst.operands[0].value, bool(inst.operands[1].value))
        if inst.opcode == Op.TypeFloat:
            encoding = enums.FPEncoding(inst.operands[1].value) if len(inst.operands) > 1 else None
            return types.Scalar("float", inst.operands[0].value, encoding=encoding)
        raise BuildError(f"{where}: %{type_id} ({inst.name}) is not an integer or float type")

    # composite helpers -------------------------------------------------------------------------
    def storage_buffer(self, element: int, binding: int, set: int = 0, name: str | None = None,
                       readonly: bool = False) -> tuple[int, int]:
        """A std430 storage buffer `{ element data[]; }`: returns (variable, element pointer type)."""
        stride = self._layout(types.array_stride, types.Array(self.type_at(element), None))
        array_type = self.type_runtime_array(element, stride=stride)
        block = self.type_struct(array_type, offsets=[0], block=True)
        var = self.variable(self.type_pointer("StorageBuffer", block), "StorageBuffer", name=name)
        self.decorate(var, "DescriptorSet", set)
        self.decorate(var, "Binding", binding)
        if readonly:
            self.decorate(var, "NonWritable")
        return var, self.type_pointer("StorageBuffer", element)

    def builtin(self, builtin: str, type_id: int, storage: str = "Input") -> int:
        """A variable decorated BuiltIn (e.g. 'GlobalInvocationId' of a uvec3)."""
        var = self.variable(self.type_pointer(storage, type_id), storage)
        self.decorate(var, "BuiltIn", builtin)
        return var

    def ext_inst_import(self, set_name: str) -> int:
        if set_name not in self._imports:
            self._imports[set_name] = self.emit(Op.ExtInstImport, set_name)
        return self._imports[set_name]

    def ext_inst(self, set_name: str, instruction: str | int, result_type: int, *operands: int) -> int:
        """OpExtInst of an extended set; GLSL.std.450 instructions by name too."""
        if isinstance(instruction, str):
            try:
                instruction = grammar.extinst(set_name, instruction).opcode
            except grammar.GrammarError as err:
                raise BuildError(f"OpExtInst: {err}") from None
        return self.emit(Op.ExtInst, result_type, self.ext_inst_import(set_name), instruction, *operands)

    # output ------------------------------------------------------------------------------------
    def module(self) -> Module:
        """The finished module: derived capabilities, extensions and memory model, entry-point interfaces."""
        if self._current is not None:
            raise BuildError(f"function %{self._current.id} is still open (end_function())")
        functions = [i for fn in self._functions for i in fn.instructions()]
        s = self._sections
        entry_points = [self._entry_point_instruction(ep, functions) for ep in self._entry_points]
        memory_model = self._memory_model_instruction(entry_points + functions)
        body = [*s["imports"], memory_model, *entry_points, *s["modes"], *s["sources"], *s["names"],
                *s["processed"], *s["annotations"], *s["globals"], *functions]
        try:
            needed = requirements.derive(body, self.version, self._capabilities, self._extensions,
                                         prefer_extensions=self.prefer_extensions)
        except grammar.GrammarError as err:
            raise BuildError(str(err)) from None
        head = [Instruction(Op.Capability, operands=[Operand("Capability", grammar.enumerant("Capability", c).value)])
                for c in needed.capabilities]
        head += [Instruction(Op.Extension, operands=[Operand("LiteralString", e)]) for e in needed.extensions]
        module = Module(self.version, 0, self._bound, 0, head + body)
        self._check_ids_defined(module.instructions)
        return module

    def to_words(self) -> array:
        """The module as words: array('I')."""
        return encode(self.module())

    def _memory_model_instruction(self, code: list[Instruction]) -> Instruction:
        model = self.memory_model
        if model is None:
            model = requirements.default_memory_model([i for s in self._sections.values() for i in s] + code)
        return Instruction(Op.MemoryModel, operands=[
            Operand("AddressingModel", _enum_value("AddressingModel", self.addressing)),
            Operand("MemoryModel", _enum_value("MemoryModel", model))])

    def _entry_point_instruction(self, ep: _EntryPoint, functions: list[Instruction]) -> Instruction:
        interface = ep.interface if ep.interface is not None else self._interface(ep.function, functions)
        operands = [Operand("ExecutionModel", ep.model), Operand("IdRef", ep.function),
                    Operand("LiteralString", ep.name)]
        return Instruction(Op.EntryPoint, operands=operands + [Operand("IdRef", v) for v in interface])

    def _interface(self, entry: int, functions: list[Instruction]) -> list[int]:
        """Global variables used by the entry point's call tree (only Input/Output before SPIR-V 1.4)."""
        bodies: dict[int, list[Instruction]] = {}
        current = None
        for inst in functions:
            if inst.opcode == Op.Function:
                current = bodies.setdefault(inst.result_id, [])
            if current is not None:
                current.append(inst)
        reached, todo, used = set(), [entry], set()
        while todo:
            fn = todo.pop()
            if fn in reached:
                continue
            reached.add(fn)
            for inst in bodies.get(fn, ()):
                used.update(inst.ids())
                if inst.opcode == Op.FunctionCall:
                    todo.append(inst.operands[0].value)
        io_only = self.version < (1, 4)
        io_classes = {grammar.enumerant("StorageClass", n).value for n in ("Input", "Output")}
        return [v.result_id for v in self._sections["globals"]
                if v.opcode == Op.Variable and v.result_id in used
                and (not io_only or v.operands[0].value in io_classes)]

    def _check_ids_defined(self, instructions: list[Instruction]) -> None:
        defined = {i.result_id for i in instructions if i.result_id is not None}
        for inst in instructions:
            refs = inst.ids() + ([inst.result_type] if inst.result_type is not None else [])
            for ref in refs:
                if ref not in defined:
                    label = f" ({self._names[ref]})" if ref in self._names else ""
                    raise BuildError(f"{inst.name} uses %{ref}{label}, which is never defined")


def _enum_value(kind: str, value: str | int) -> int:
    try:
        return grammar.enumerant(kind, value).value
    except grammar.GrammarError as err:
        raise BuildError(str(err)) from None


@cache
def _facts(op: int | str) -> tuple[grammar.InstructionInfo, bool, bool, bool]:
    """(grammar, has result type, has result id, de-duplicated) of an opcode or name."""
    if isinstance(op, bool) or not isinstance(op, (int, str)):
        raise BuildError(f"an instruction is an Op, an opcode number or a name, not {op!r}")
    try:
        info = grammar.instruction(int(op) if isinstance(op, int) else op)
    except grammar.GrammarError as err:
        raise BuildError(str(err)) from None
    # Types and constants are shared: one id per distinct declaration (structs, spec constants excepted).
    deduplicated = _SECTION_OF_CLASS.get(info.opclass) == "globals" and info.opcode not in _NOT_DEDUPLICATED
    return info, info.has_result_type, info.has_result, deduplicated


def _key(inst: Instruction) -> tuple:
    return (inst.opcode, inst.result_type, tuple(inst.operands))


def _stride_decoration(stride: int | None) -> list[tuple]:
    return [] if stride is None else [("ArrayStride", stride)]


def local_size_dims(size: Sequence[int] | int) -> tuple[int, int, int]:
    """A workgroup size as three ints from an int or 1 to 3 positive ints (the one normalisation: the builder's
    LocalSize and the kernel language's local_size); BuildError for anything else."""
    dims = (size,) if isinstance(size, int) else tuple(size) if isinstance(size, tuple | list) else None
    if dims is None or not 1 <= len(dims) <= 3 or any(
            not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise BuildError(f"local_size must be 1 to 3 positive ints, not {size!r}")
    return (dims[0], *dims[1:], *(1,) * (3 - len(dims)))  # type: ignore[return-value]


_DECLARERS = {
    types.Void: lambda b, t: b.type_void(),
    types.Scalar: lambda b, t: b.type_bool() if t.kind == "bool" else
    b.type_int(t.width, t.signed) if t.kind == "int" else
    b.type_float(t.width, None if t.encoding is None else t.encoding.name),
    types.Vector: lambda b, t: b.type_vector(b.declare(t.component), t.count),
    types.Matrix: lambda b, t: b.emit(Op.TypeMatrix, b.declare(t.column), t.columns),
    types.Array: lambda b, t: b.type_runtime_array(b.declare(t.element), t.stride) if t.length is None else
    b.type_array(b.declare(t.element), t.length, t.stride),
    types.Struct: ModuleBuilder._declare_struct,
    types.Pointer: ModuleBuilder._declare_pointer,
    types.Function: lambda b, t: b.type_function(b.declare(t.result), *(b.declare(p) for p in t.params)),
    types.CoopMatrix: ModuleBuilder._declare_coop,
}
