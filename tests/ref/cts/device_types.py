"""Which cooperative-matrix types a module declares, and whether a device reports each of them
(VkCooperativeMatrixPropertiesKHR shapes, or NV2 flexible-dimension granularities): a device
runs a kernel only when every matrix type in it is one the device offers (the validation layer's
VUID-RuntimeSpirv-cooperativeMatrixFlexibleDimensions-10165 rule)."""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.spirv import Op, decode
from hydroplane.spirv.grammar import enumerant

USE_NAMES = {0: "A", 1: "B", 2: "Accumulator"}
SCOPE_NAMES = {2: "workgroup", 3: "subgroup"}


@dataclass(frozen=True)
class MatrixType:
    component: str  # as hydroplane.vk.CoopShape spells types: f16, f32, bf16, s8, u32, e4m3 ...
    scope: str
    rows: int
    cols: int
    use: str

    def text(self) -> str:
        return f"{self.component} {self.rows}x{self.cols} {self.use} ({self.scope})"


def _component_names(module) -> dict[int, str]:
    names = {}
    for inst in module.instructions:
        if inst.opcode == Op.TypeFloat:
            width = inst.operands[0].value
            encoding = inst.operands[1].value if len(inst.operands) > 1 else None
            if encoding is None:
                names[inst.result_id] = f"f{width}"
            else:
                name = enumerant("FPEncoding", encoding).name
                names[inst.result_id] = {"BFloat16KHR": "bf16", "Float8E4M3EXT": "e4m3",
                                         "Float8E5M2EXT": "e5m2"}.get(name, name)
        elif inst.opcode == Op.TypeInt:
            width, signed = inst.operands[0].value, inst.operands[1].value
            names[inst.result_id] = f"{'s' if signed else 'u'}{width}"
    return names


def _matrix_types(module) -> dict[int, MatrixType]:
    constants = {i.result_id: i.operands[0].value for i in module.instructions if i.opcode == Op.Constant}
    components = _component_names(module)
    out = {}
    for inst in module.instructions:
        if inst.opcode == Op.TypeCooperativeMatrixKHR:
            comp, scope, rows, cols, use = (o.value for o in inst.operands)
            out[inst.result_id] = MatrixType(components[comp], SCOPE_NAMES.get(constants[scope], str(constants[scope])),
                                             constants[rows], constants[cols], USE_NAMES[constants[use]])
    return out


def module_matrix_types(words) -> list[MatrixType]:
    """Every OpTypeCooperativeMatrixKHR of a module."""
    return list(_matrix_types(decode(words)).values())


def module_muladds(words) -> list[tuple[MatrixType, MatrixType, MatrixType, MatrixType]]:
    """(A, B, C, result) types of every OpCooperativeMatrixMulAddKHR."""
    module = decode(words)
    types = _matrix_types(module)
    type_of = {i.result_id: i.result_type for i in module.instructions if i.result_type is not None}
    out = []
    for inst in module.instructions:
        if inst.opcode == Op.CooperativeMatrixMulAddKHR:
            a, b, c = (types[type_of[o.value]] for o in inst.operands[:3])
            out.append((a, b, c, types[inst.result_type]))
    return out


def _offers(shape, t: MatrixType) -> bool:
    if shape.scope != t.scope:
        return False
    if t.use == "A":
        comp, dims = shape.a, (shape.m, shape.k)
    elif t.use == "B":
        comp, dims = shape.b, (shape.k, shape.n)
    else:
        if t.component not in (shape.c, shape.result):
            return False
        comp, dims = t.component, (shape.m, shape.n)
    if comp != t.component:
        return False
    if shape.granularity:
        return t.rows % dims[0] == 0 and t.cols % dims[1] == 0
    return (t.rows, t.cols) == dims


def _offers_muladd(shape, a: MatrixType, b: MatrixType, c: MatrixType, r: MatrixType) -> bool:
    if (shape.a, shape.b, shape.c, shape.result) != (a.component, b.component, c.component, r.component):
        return False
    dims, unit = (a.rows, r.cols, a.cols), (shape.m, shape.n, shape.k)
    if shape.granularity:
        return all(d % g == 0 for d, g in zip(dims, unit))
    return dims == unit


def _nv_types(module) -> list[tuple[str, int, int]]:
    """(component, rows, cols) of every legacy OpTypeCooperativeMatrixNV (they have no Use)."""
    constants = {i.result_id: i.operands[0].value for i in module.instructions if i.opcode == Op.Constant}
    components = _component_names(module)
    return [(components[i.operands[0].value], constants[i.operands[2].value], constants[i.operands[3].value])
            for i in module.instructions if i.opcode == Op.TypeCooperativeMatrixNV]


def _nv_offers(shape, comp: str, rows: int, cols: int) -> bool:
    return ((comp, rows, cols) == (shape.a, shape.m, shape.k) or (comp, rows, cols) == (shape.b, shape.k, shape.n)
            or (comp in (shape.c, shape.result) and (rows, cols) == (shape.m, shape.n)))


def missing_matrix_types(words, info) -> list[str]:
    """The module's matrix types and MulAdd combinations the device does not report (empty: it
    can run the module)."""
    shapes = [*info.coop_khr, *info.coop_nv2_flexible]
    missing = [t.text() for t in module_matrix_types(words) if not any(_offers(s, t) for s in shapes)]
    for a, b, c, r in module_muladds(words):
        if not any(_offers_muladd(s, a, b, c, r) for s in shapes):
            missing.append(f"MulAdd {a.component}*{b.component}+{c.component}->{r.component} "
                           f"{a.rows}x{r.cols}x{a.cols}")
    for comp, rows, cols in _nv_types(decode(words)):
        if not any(_nv_offers(s, comp, rows, cols) for s in info.coop_nv):
            missing.append(f"NV {comp} {rows}x{cols}")
    return missing
