"""lower(module, target): rewrite a module into what a target offers, or say by name what it lacks.

Kernels (ours, or any producer's) use one vocabulary; the target picks the encoding:

* SPV_EXT_cooperative_matrix_maintenance1 stays where the target has it (and on the reference
  executor). Where the target has SPV_NV_cooperative_matrix2 instead (lavapipe, the H200):
  - Reduce (5366) and PerElementOp (5369) share opcode and capability value with NV2: only the
    extension changes, which re-deriving the requirements for the target does.
  - ConvertUse (5293) from Accumulator to A or B is NV2's ConvertNV (capability re-derived:
    CooperativeMatrixConversionsNV). From A or B to Accumulator NV2 has no form: refused by name.
  - ConvertUse decorated CooperativeMatrixTransposeEXT becomes OpCooperativeMatrixTransposeNV,
    which NV2 defines from Accumulator to B only; other Uses are refused by name.
  - GetCoordinate (5363) has no NV2 twin and is emulated: PerElementOp fills a u32 matrix of the
    operand's shape and Use with (row << 16) | col, a Function variable holds it, the element at
    Index is read through OpAccessChain and split into (row, col). The element order is the
    driver's own, so the emulation agrees with its composite access.
* A target without EXT maintenance1 or the NV2 features an EXT module needs is refused with
  UnsupportedOnTarget naming them. `check_matrices(module, target)`, which launching calls, refuses
  cooperative-matrix types and MulAdds the target does not report (a family it lacks, or a shape).
* Capabilities and extensions are re-derived by the builder (ModuleBuilder.from_module), never
  edited by hand; a module that needs no rewrite comes back unchanged, word for word.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.spirv import types
from hydroplane.spirv.binary import Instruction, Module, SpirvError, decode
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.enums import (
    Capability,
    CooperativeMatrixOperands,
    CooperativeMatrixReduce,
    CooperativeMatrixUse,
    Decoration,
    ExecutionMode,
    Scope,
)
from hydroplane.spirv.grammar import Op
from hydroplane.spirv.target import Target, UnsupportedOnTarget

EXT_NAME = "SPV_EXT_cooperative_matrix_maintenance1"
NV2_NAME = "SPV_NV_cooperative_matrix2"
COORDINATE_SHIFT = 16
_EXT_CAPABILITIES = {Capability.CooperativeMatrixConversionsEXT, Capability.CooperativeMatrixGetCoordinateEXT}
# EXT instruction -> the NV2 feature (Vulkan name) its lowering needs.
_NV2_FEATURE_FOR = {
    Op.CooperativeMatrixReduceEXT: "cooperativeMatrixReductions",
    Op.CooperativeMatrixPerElementOpEXT: "cooperativeMatrixPerElementOperations",
    Op.CooperativeMatrixGetCoordinateEXT: "cooperativeMatrixPerElementOperations",
    Op.CooperativeMatrixConvertUseEXT: "cooperativeMatrixConversions",
}


class LoweringError(UnsupportedOnTarget):
    """An EXT maintenance1 construct that has no encoding on the target; names the instruction."""


@dataclass(frozen=True)
class Lowered:
    """A module lowered for a target, with what was changed (one line each; empty: unchanged)."""

    module: Module
    target: Target
    changes: tuple[str, ...] = ()

    def words(self):
        return self.module.words()


def _decoded(words_or_module) -> Module:
    return decode(words_or_module.words() if isinstance(words_or_module, Module) else words_or_module)


def uses_ext_maintenance1(module: Module) -> bool:
    """Whether the module is written against SPV_EXT_cooperative_matrix_maintenance1."""
    for inst in module.instructions:
        if inst.opcode == Op.Extension and inst.operands[0].value == EXT_NAME:
            return True
        if inst.opcode == Op.Capability and inst.operands[0].value in _EXT_CAPABILITIES:
            return True
        if inst.opcode == Op.CooperativeMatrixGetCoordinateEXT:
            return True
    return False


def lower(words_or_module, target: Target) -> Lowered:
    """The module rewritten for `target` (see the module docstring); UnsupportedOnTarget names what
    the target lacks."""
    module = _decoded(words_or_module)
    if target.is_reference or target.ext_maintenance1 or not uses_ext_maintenance1(module):
        return Lowered(module, target)
    _require_nv2(module, target)
    return _ext_to_nv2(module, target)


def check_matrices(module: Module, target: Target) -> None:
    """Refuse, by name, every cooperative-matrix type and MulAdd combination the target does not report (a
    saturating MulAdd where no shape saturates; a Workgroup-scope type in a workgroup of another size than its
    shape's; a Subgroup-scope type in a workgroup that is not whole subgroups), and the reductions its driver
    is known to compute wrongly (`Target.reduce_fault`)."""
    if target.is_reference:
        return
    table = types.read_types(module)
    invocations = _local_invocations(module)
    missing: list[str] = []
    for inst in module.instructions:
        if inst.opcode in (Op.TypeCooperativeMatrixKHR, Op.TypeCooperativeMatrixNV):
            t = table[inst.checked_result_id]
            assert isinstance(t, types.CoopMatrix)
            family_ok = target.cooperative_matrix_nv if t.family == "NV" else (
                target.cooperative_matrix_khr or bool(target.coop_nv2_flexible))
            if not family_ok:
                ext = "VK_NV_cooperative_matrix" if t.family == "NV" else "VK_KHR_cooperative_matrix"
                missing.append(f"{t} (the target has no {ext})")
            elif t.scope == Scope.Subgroup and invocations is not None and invocations % target.subgroup_size:
                missing.append(f"{t} in a workgroup of {invocations} invocations (a Subgroup-scope matrix needs "
                               f"whole subgroups of {target.subgroup_size})")
            elif not target.offers(t, invocations):
                missing.append(str(t) if t.scope != Scope.Workgroup else f"{t} in a workgroup of {invocations}")
        elif inst.opcode in (Op.CooperativeMatrixMulAddKHR, Op.CooperativeMatrixMulAddNV):
            a, b, c = (table[_type_of(module, o.number)] for o in inst.operands[:3])
            result = table[inst.checked_result_type]
            saturating = inst.opcode == Op.CooperativeMatrixMulAddKHR and len(inst.operands) > 3 and bool(
                inst.operands[3].number & CooperativeMatrixOperands.SaturatingAccumulationKHR)
            if isinstance(a, types.CoopMatrix) and isinstance(b, types.CoopMatrix) and \
                    isinstance(c, types.CoopMatrix) and isinstance(result, types.CoopMatrix) and \
                    not target.offers_muladd(a, b, c, result, saturating, invocations):
                missing.append(f"{'saturating ' * saturating}MulAdd {a.component}*{b.component}+{c.component}->"
                               f"{result.component} {a.rows}x{result.cols}x{a.cols} ({a.scope.name})")
        elif inst.opcode == Op.CooperativeMatrixReduceEXT:  # NV2's reduce shares the opcode
            source = table[_type_of(module, inst.operands[0].number)]
            mode = CooperativeMatrixReduce(inst.operands[1].number)
            fault = target.reduce_fault(source, bool(mode & CooperativeMatrixReduce.Row),
                                        bool(mode & CooperativeMatrixReduce.Column)) \
                if isinstance(source, types.CoopMatrix) else None
            if fault is not None:
                raise UnsupportedOnTarget(fault, inst.offset, missing=(f"Reduce of {source}",))
    if missing:
        unique = tuple(dict.fromkeys(missing))
        raise UnsupportedOnTarget(f"{target.name} does not offer these cooperative-matrix types of the module: "
                                  + "; ".join(unique) + " (`hydroplane devices` lists what a device reports)",
                                  missing=unique)


def _local_invocations(module: Module) -> int | None:
    """The workgroup size of the module's one entry point when a LocalSize execution mode gives it."""
    sizes = [inst.operands[2:5] for inst in module.instructions
             if inst.opcode == Op.ExecutionMode and inst.operands[1].value == ExecutionMode.LocalSize]
    if len(sizes) != 1:
        return None
    x, y, z = (o.number for o in sizes[0])
    return x * y * z


def _type_of(module: Module, value_id: int) -> int:
    for inst in module.instructions:
        if inst.result_id == value_id and inst.result_type is not None:
            return inst.result_type
    raise SpirvError(f"%{value_id} has no type")


def _require_nv2(module: Module, target: Target) -> None:
    needed = {_NV2_FEATURE_FOR[Op(i.opcode)] for i in module.instructions if i.opcode in _NV2_FEATURE_FOR}
    missing = sorted(f for f in needed if not target.has_nv2(f))
    if missing:
        raise UnsupportedOnTarget(
            f"the module uses {EXT_NAME}; {target.name} has neither that extension nor VK_NV_cooperative_matrix2 "
            f"with {', '.join(missing)}", missing=tuple(missing))
    if module.version < (1, 6):
        raise LoweringError(f"{NV2_NAME} needs SPIR-V 1.6; the module is {module.version[0]}.{module.version[1]}")


def _ext_to_nv2(module: Module, target: Target) -> Lowered:
    b = ModuleBuilder.from_module(module)
    b.prefer_extensions = target.lowering_extensions()
    table = types.read_types(module)
    changes = [f"{EXT_NAME} -> {NV2_NAME} (requirements re-derived for {target.name})"]
    transposed = set()
    for inst in b.instructions("annotations"):
        if inst.opcode == Op.Decorate and inst.operands[1].value == Decoration.CooperativeMatrixTransposeEXT:
            transposed.add(inst.operands[0].value)
            b.remove(inst)
    coordinates = _CoordinateEmulator(b, table)
    for function, body in b.functions():
        for inst in list(body):
            if inst.opcode == Op.CooperativeMatrixConvertUseEXT:
                changes.append(_lower_convert_use(b, table, inst, inst.result_id in transposed))
            elif inst.opcode == Op.CooperativeMatrixGetCoordinateEXT:
                changes.append(coordinates.replace(function, inst))
    coordinates.finish()
    return Lowered(b.module(), target, tuple(changes))


def _value_type(b: ModuleBuilder, table: types.TypeTable, value: int, where: Instruction) -> types.CoopMatrix:
    t = table[b.type_of(value)]
    if not isinstance(t, types.CoopMatrix):
        raise LoweringError(f"{where.name} %{where.result_id}: %{value} is not a cooperative matrix", where.offset)
    return t


def _lower_convert_use(b: ModuleBuilder, table: types.TypeTable, inst: Instruction, transpose: bool) -> str:
    src = _value_type(b, table, inst.operands[0].number, inst)
    dst = table[inst.checked_result_type]
    assert isinstance(dst, types.CoopMatrix)
    accumulator = CooperativeMatrixUse.MatrixAccumulatorKHR
    if transpose:
        if src.use != accumulator or dst.use != CooperativeMatrixUse.MatrixBKHR:
            raise LoweringError(
                f"OpCooperativeMatrixConvertUseEXT %{inst.result_id} with CooperativeMatrixTransposeEXT from "
                f"Matrix{src.use_name} to Matrix{dst.use_name} has no NV2 twin: OpCooperativeMatrixTransposeNV "
                "only takes MatrixAccumulator to MatrixB", inst.offset)
        inst.opcode = Op.CooperativeMatrixTransposeNV
        return f"%{inst.result_id}: ConvertUse with Transpose -> OpCooperativeMatrixTransposeNV"
    if src.use != accumulator:
        raise LoweringError(
            f"OpCooperativeMatrixConvertUseEXT %{inst.result_id} from Matrix{src.use_name} to Matrix{dst.use_name} "
            f"has no NV2 twin: OpCooperativeMatrixConvertNV converts MatrixAccumulator to MatrixA or MatrixB only",
            inst.offset)
    return f"%{inst.result_id}: ConvertUse -> OpCooperativeMatrixConvertNV"


class _CoordinateEmulator:
    """Replaces OpCooperativeMatrixGetCoordinateEXT with PerElementOp and Function-variable access."""

    def __init__(self, b: ModuleBuilder, table: types.TypeTable):
        self.b, self.table = b, table
        self.u32 = b.scalar("u32")
        self.pack_function: int | None = None
        self.variables: dict[tuple[int, int], int] = {}  # (function, u32 matrix type) -> variable

    def replace(self, function: int, inst: Instruction) -> str:
        b = self.b
        matrix, index = inst.operands[0].number, inst.operands[1].number
        src = _value_type(b, self.table, matrix, inst)
        if max(src.rows, src.cols) > 1 << COORDINATE_SHIFT:
            raise LoweringError(f"GetCoordinate emulation packs row and column in {COORDINATE_SHIFT} bits; "
                                f"{src.rows}x{src.cols} is too large", inst.offset)
        if self.pack_function is None:
            self.pack_function = b.id()
        u32 = self.u32
        coords_type = b.declare(types.CoopMatrix(types.U32, src.rows, src.cols, src.use, src.scope))
        zero = b.constant_composite(coords_type, b.u32(0))
        component = self._vector_component(inst)
        with b.replacing(inst):
            key = (function, coords_type)
            if key not in self.variables:
                self.variables[key] = b.variable(b.type_pointer("Function", coords_type), "Function")
            variable = self.variables[key]
            coords = b.emit(Op.CooperativeMatrixPerElementOpEXT, coords_type, zero, self.pack_function)
            b.emit(Op.Store, variable, coords)
            packed = b.emit(Op.Load, u32, b.emit(Op.AccessChain, b.type_pointer("Function", u32), variable, index))
            parts = [b.emit(Op.ShiftRightLogical, u32, packed, b.u32(COORDINATE_SHIFT)),
                     b.emit(Op.BitwiseAnd, u32, packed, b.u32((1 << COORDINATE_SHIFT) - 1))]
            if component != u32:
                parts = [b.emit(Op.Bitcast, component, p) for p in parts]
            b.emit(Op.CompositeConstruct, inst.result_type, *parts, result_id=inst.result_id)
        return f"%{inst.result_id}: GetCoordinate emulated through PerElementOp ({src})"

    def _vector_component(self, inst: Instruction) -> int:
        t = self.table[inst.checked_result_type]
        if not isinstance(t, types.Vector) or t.count != 2:
            raise LoweringError("GetCoordinate result must be a 2-component vector", inst.offset)
        return self.b.declare(t.component)

    def finish(self) -> None:
        """The (row, col, element) -> (row << 16) | col function PerElementOp calls."""
        if self.pack_function is None:
            return
        b, u32 = self.b, self.u32
        _, (row, col, _element) = b.function(u32, [u32, u32, u32], result_id=self.pack_function,
                                             name="hydroplane_pack_coordinate")
        b.label()
        shifted = b.emit(Op.ShiftLeftLogical, u32, row, b.u32(COORDINATE_SHIFT))
        b.emit(Op.ReturnValue, b.emit(Op.BitwiseOr, u32, shifted, col))
        b.end_function()


__all__ = ["Lowered", "LoweringError", "UnsupportedOnTarget", "check_matrices", "lower", "uses_ext_maintenance1"]
