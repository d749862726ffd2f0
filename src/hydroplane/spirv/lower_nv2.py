"""Lower an SPV_EXT_cooperative_matrix_maintenance1 module to SPV_NV_cooperative_matrix2, so that
EXT kernels run on drivers that have NV2 but not EXT (lavapipe, the H200's driver).

What changes (seed 000 against the NV2 spec):
  * Reduce (5366) and PerElementOp (5369) share opcode and capability value with NV2: only the
    extension changes.
  * ConvertUse (5293) without CooperativeMatrixTransposeEXT is NV2's ConvertNV: capability
    CooperativeMatrixConversionsEXT becomes CooperativeMatrixConversionsNV. NV2 converts only
    Accumulator -> A or B; A or B -> Accumulator raises LoweringError.
  * ConvertUse decorated CooperativeMatrixTransposeEXT becomes OpCooperativeMatrixTransposeNV,
    which NV2 defines only from Accumulator to MatrixB; other Uses raise LoweringError.
  * GetCoordinate (5363) has no NV2 twin and is emulated: a uint32 matrix of the operand's
    scope, shape and Use is filled by PerElementOp with (row << 16) | col, stored to a Function
    variable, the element at Index read through OpAccessChain, and split into (row, col).
    The element order is the driver's own, so the emulation agrees with its composite access.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.spirv.binary import Instruction, Module, Operand, SpirvError, decode
from hydroplane.spirv.grammar import Op, enumerant

EXT_NAME = "SPV_EXT_cooperative_matrix_maintenance1"
NV2_NAME = "SPV_NV_cooperative_matrix2"
TRANSPOSE_DECORATION = enumerant("Decoration", "CooperativeMatrixTransposeEXT").value
CAP_CONVERSIONS_EXT = enumerant("Capability", "CooperativeMatrixConversionsEXT").value
CAP_CONVERSIONS_NV = enumerant("Capability", "CooperativeMatrixConversionsNV").value
CAP_GET_COORDINATE = enumerant("Capability", "CooperativeMatrixGetCoordinateEXT").value
CAP_PER_ELEMENT = enumerant("Capability", "CooperativeMatrixPerElementOperationsEXT").value
USE_A, USE_B, USE_ACCUMULATOR = 0, 1, 2
USE_NAMES = {USE_A: "MatrixA", USE_B: "MatrixB", USE_ACCUMULATOR: "MatrixAccumulator"}
FUNCTION_STORAGE = 7
COORDINATE_SHIFT = 16


class LoweringError(SpirvError):
    """An EXT maintenance1 construct that has no NV2 encoding; names the instruction."""


@dataclass(frozen=True)
class _CoopType:
    id: int
    component: int
    scope: int
    rows: int
    cols: int
    use: int


def _ids(inst: Instruction) -> list[int]:
    return [o.value for o in inst.operands if o.kind in ("IdRef", "IdScope")]


class _Module:
    """The instructions of a module with the look-ups the lowering needs and a way to add ids."""

    def __init__(self, module: Module):
        self.module = module
        self.insts = module.instructions
        self.by_id = {i.result_id: i for i in self.insts if i.result_id is not None}

    def fresh(self) -> int:
        self.module.bound += 1
        return self.module.bound - 1

    def constant(self, id_: int) -> int:
        inst = self.by_id.get(id_)
        if inst is None or inst.opcode != Op.Constant:
            raise LoweringError(f"id %{id_} must be an OpConstant to lower this module")
        return inst.operands[0].value

    def coop_type(self, type_id: int, where: Instruction) -> _CoopType:
        inst = self.by_id.get(type_id)
        if inst is None or inst.opcode != Op.TypeCooperativeMatrixKHR:
            raise LoweringError(f"{where.name}: %{type_id} is not an OpTypeCooperativeMatrixKHR", where.offset)
        comp, scope, rows, cols, use = _ids(inst)
        return _CoopType(type_id, comp, self.constant(scope), self.constant(rows), self.constant(cols),
                         self.constant(use))

    def type_of(self, value_id: int) -> int:
        inst = self.by_id.get(value_id)
        if inst is None or inst.result_type is None:
            raise LoweringError(f"id %{value_id} has no type")
        return inst.result_type

    def first_function_index(self) -> int:
        for n, inst in enumerate(self.insts):
            if inst.opcode == Op.Function:
                return n
        return len(self.insts)

    def find_global(self, opcode: int, operands: list[Operand]) -> int | None:
        for inst in self.insts:
            if inst.opcode == opcode and inst.operands == operands:
                return inst.result_id
        return None

    def declare(self, opcode: int, operands: list[Operand], result_type: int | None = None,
                reuse: bool = True) -> int:
        """A global type or constant (reused when an identical one exists) before the first function."""
        if reuse:
            found = self.find_global(opcode, operands)
            if found is not None and self.by_id[found].result_type == result_type:
                return found
        new = Instruction(opcode, result_type, self.fresh(), list(operands))
        self.insts.insert(self.first_function_index(), new)
        self.by_id[new.result_id] = new
        return new.result_id


def _ref(value: int) -> Operand:
    return Operand("IdRef", value)


def _lit(value: int) -> Operand:
    return Operand("LiteralInteger", value)


def lower_ext_to_nv2(words_or_module) -> Module:
    """A new NV2 module equivalent to an EXT maintenance1 module (words or a decoded Module)."""
    module = decode(words_or_module) if not isinstance(words_or_module, Module) else decode(words_or_module.words())
    if module.version < (1, 6):
        raise LoweringError(f"{NV2_NAME} needs SPIR-V 1.6; the module is {module.version[0]}.{module.version[1]}")
    m = _Module(module)
    transposed = {i.operands[0].value for i in m.insts
                  if i.opcode == Op.Decorate and i.operands[1].value == TRANSPOSE_DECORATION}
    emulator = _CoordinateEmulator(m)
    replacements: dict[int, list[Instruction]] = {}  # id(instruction) -> what replaces it
    for inst in list(m.insts):  # new globals land in m.insts while this runs
        if inst.opcode == Op.Decorate and inst.operands[1].value == TRANSPOSE_DECORATION:
            replacements[id(inst)] = []
        elif inst.opcode == Op.CooperativeMatrixConvertUseEXT:
            replacements[id(inst)] = [_lower_convert_use(m, inst, inst.result_id in transposed)]
        elif inst.opcode == Op.CooperativeMatrixGetCoordinateEXT:
            replacements[id(inst)] = emulator.replace(inst)
    out = [new for inst in m.insts for new in replacements.get(id(inst), [inst])]
    module.instructions = out
    emulator.finish()
    _rewrite_capabilities(module, emulated=emulator.used)
    return module


def _lower_convert_use(m: _Module, inst: Instruction, transpose: bool) -> Instruction:
    src = m.coop_type(m.type_of(inst.operands[0].value), inst)
    dst = m.coop_type(inst.result_type, inst)
    if transpose:
        if src.use != USE_ACCUMULATOR or dst.use != USE_B:
            raise LoweringError(
                f"OpCooperativeMatrixConvertUseEXT %{inst.result_id} with CooperativeMatrixTransposeEXT from "
                f"{USE_NAMES[src.use]} to {USE_NAMES[dst.use]} has no NV2 twin: "
                f"OpCooperativeMatrixTransposeNV only takes MatrixAccumulator to MatrixB", inst.offset)
        return Instruction(Op.CooperativeMatrixTransposeNV, inst.result_type, inst.result_id,
                           list(inst.operands), inst.offset)
    if src.use != USE_ACCUMULATOR:
        raise LoweringError(
            f"OpCooperativeMatrixConvertUseEXT %{inst.result_id} from {USE_NAMES[src.use]} to "
            f"{USE_NAMES[dst.use]} has no NV2 twin: OpCooperativeMatrixConvertNV converts "
            f"MatrixAccumulator to MatrixA or MatrixB only", inst.offset)
    return inst


class _CoordinateEmulator:
    """Replaces OpCooperativeMatrixGetCoordinateEXT with PerElementOp + Function-variable access."""

    def __init__(self, m: _Module):
        self.m = m
        self.used = False
        self.uint = self.shift = self.mask = self.ptr_uint = self.func = None
        self.variables: dict[tuple[int, int], int] = {}  # (function id, coop type) -> variable
        self.current_function = None
        self.pending_variables: list[tuple[int, Instruction]] = []

    def _setup(self):
        m = self.m
        self.uint = m.declare(Op.TypeInt, [_lit(32), _lit(0)])
        self.shift = m.declare(Op.Constant, [Operand("LiteralContextDependentNumber", COORDINATE_SHIFT)], self.uint)
        self.mask = m.declare(Op.Constant, [Operand("LiteralContextDependentNumber", (1 << COORDINATE_SHIFT) - 1)],
                              self.uint)
        self.ptr_uint = m.declare(Op.TypePointer, [Operand("StorageClass", FUNCTION_STORAGE), _ref(self.uint)])
        fn_type = m.declare(Op.TypeFunction, [_ref(self.uint)] * 4)
        self.func = m.fresh()
        row, col, elem, label, shifted, packed = (m.fresh() for _ in range(6))
        self.func_body = [
            Instruction(Op.Function, self.uint, self.func, [Operand("FunctionControl", 0), _ref(fn_type)]),
            Instruction(Op.FunctionParameter, self.uint, row),
            Instruction(Op.FunctionParameter, self.uint, col),
            Instruction(Op.FunctionParameter, self.uint, elem),
            Instruction(Op.Label, None, label),
            Instruction(Op.ShiftLeftLogical, self.uint, shifted, [_ref(row), _ref(self.shift)]),
            Instruction(Op.BitwiseOr, self.uint, packed, [_ref(shifted), _ref(col)]),
            Instruction(Op.ReturnValue, None, None, [_ref(packed)]),
            Instruction(Op.FunctionEnd),
        ]

    def replace(self, inst: Instruction) -> list[Instruction]:
        m = self.m
        if not self.used:
            self.used = True
            self._setup()
        matrix, index = inst.operands[0].value, inst.operands[1].value
        src = m.coop_type(m.type_of(matrix), inst)
        if max(src.rows, src.cols) > 1 << COORDINATE_SHIFT:
            raise LoweringError(f"GetCoordinate emulation packs row and column in 16 bits; "
                                f"{src.rows}x{src.cols} is too large", inst.offset)
        coop_u = m.declare(Op.TypeCooperativeMatrixKHR, [
            _ref(self.uint), Operand("IdScope", _constant_id(m, src.scope, self.uint)),
            _ref(_constant_id(m, src.rows, self.uint)), _ref(_constant_id(m, src.cols, self.uint)),
            _ref(_constant_id(m, src.use, self.uint))])
        zero = m.declare(Op.ConstantComposite, [_ref(_constant_id(m, 0, self.uint))], coop_u)
        ptr = m.declare(Op.TypePointer, [Operand("StorageClass", FUNCTION_STORAGE), _ref(coop_u)])
        function = _enclosing_function(m, inst)
        key = (function, coop_u)
        if key not in self.variables:
            var = m.fresh()
            self.variables[key] = var
            self.pending_variables.append((function, Instruction(Op.Variable, ptr, var,
                                                                 [Operand("StorageClass", FUNCTION_STORAGE)])))
        var = self.variables[key]
        coords, chain, packed, row, col = (m.fresh() for _ in range(5))
        result_component = _vector_component(m, inst.result_type, inst)
        out = [
            Instruction(Op.CooperativeMatrixPerElementOpEXT, coop_u, coords, [_ref(zero), _ref(self.func)]),
            Instruction(Op.Store, None, None, [_ref(var), _ref(coords)]),
            Instruction(Op.AccessChain, self.ptr_uint, chain, [_ref(var), _ref(index)]),
            Instruction(Op.Load, self.uint, packed, [_ref(chain)]),
            Instruction(Op.ShiftRightLogical, self.uint, row, [_ref(packed), _ref(self.shift)]),
            Instruction(Op.BitwiseAnd, self.uint, col, [_ref(packed), _ref(self.mask)]),
        ]
        parts = [row, col]
        if result_component != self.uint:
            parts = []
            for value in (row, col):
                cast = m.fresh()
                out.append(Instruction(Op.Bitcast, result_component, cast, [_ref(value)]))
                parts.append(cast)
        out.append(Instruction(Op.CompositeConstruct, inst.result_type, inst.result_id, [_ref(p) for p in parts]))
        return out

    def finish(self):
        if not self.used:
            return
        insts = self.m.module.instructions
        for function, variable in self.pending_variables:
            start = next(n for n, i in enumerate(insts) if i.opcode == Op.Function and i.result_id == function)
            label = next(n for n in range(start, len(insts)) if insts[n].opcode == Op.Label)
            insts.insert(label + 1, variable)
        insts.extend(self.func_body)


def _constant_id(m: _Module, value: int, uint_type: int) -> int:
    return m.declare(Op.Constant, [Operand("LiteralContextDependentNumber", value)], uint_type)


def _vector_component(m: _Module, type_id: int, where: Instruction) -> int:
    inst = m.by_id.get(type_id)
    if inst is None or inst.opcode != Op.TypeVector or inst.operands[1].value != 2:
        raise LoweringError("GetCoordinate result must be a 2-component vector", where.offset)
    return inst.operands[0].value


def _enclosing_function(m: _Module, inst: Instruction) -> int:
    function = None
    for candidate in m.insts:
        if candidate.opcode == Op.Function:
            function = candidate.result_id
        if candidate is inst:
            return function
    raise LoweringError("GetCoordinate outside any function", inst.offset)


def _rewrite_capabilities(module: Module, emulated: bool) -> None:
    out = []
    seen_caps = set()
    extensions = []
    for inst in module.instructions:
        if inst.opcode == Op.Capability:
            cap = inst.operands[0].value
            if cap == CAP_CONVERSIONS_EXT:
                cap = CAP_CONVERSIONS_NV
            if cap == CAP_GET_COORDINATE:
                continue
            if cap in seen_caps:
                continue
            seen_caps.add(cap)
            out.append(Instruction(Op.Capability, operands=[Operand("Capability", cap)], offset=inst.offset))
            continue
        if inst.opcode == Op.Extension:
            extensions.append(inst.operands[0].value)
            if inst.operands[0].value == EXT_NAME:
                continue
        out.append(inst)
    if emulated and CAP_PER_ELEMENT not in seen_caps:
        last_cap = max(n for n, i in enumerate(out) if i.opcode == Op.Capability)
        out.insert(last_cap + 1, Instruction(Op.Capability, operands=[Operand("Capability", CAP_PER_ELEMENT)]))
    if NV2_NAME not in extensions and EXT_NAME in extensions:
        first_other = next(n for n, i in enumerate(out) if i.opcode not in (Op.Capability,))
        out.insert(first_other, Instruction(Op.Extension, operands=[Operand("LiteralString", NV2_NAME)]))
    module.instructions = out
