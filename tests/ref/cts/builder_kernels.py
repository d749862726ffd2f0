"""CTS-style cooperative-matrix kernels written with our ModuleBuilder (no glslang): one 8x8 tile
per subgroup, buffers c (binding 0), d (binding 1), out (binding 2), all row-major, stride = cols.

`element_wise(op, c_type)` makes out = C op D (or op C, or C * 3); `convert_to_a(c_type, a_type)`
out = A-matrix(C) (component type and Use change, NV2 conversions); `transpose(c_type)`
out = TransposeNV(C); `per_element(c_type)` out = PerElementOp(C, f(row, col, e, d) =
e + d + row * 8 + col) with D as a matrix operand; `composite` out = C + D element by element.
"""

from __future__ import annotations

from array import array

from hydroplane.spirv import grammar
from hydroplane.spirv.builder import ModuleBuilder

Op = grammar.Op
TILE = 8

# op name -> (float opcode, signed opcode, unsigned opcode)
ELEMENT_WISE = {
    "add": (Op.FAdd, Op.IAdd, Op.IAdd),
    "sub": (Op.FSub, Op.ISub, Op.ISub),
    "mul": (Op.FMul, Op.IMul, Op.IMul),
    "div": (Op.FDiv, Op.SDiv, Op.UDiv),
    "negate": (Op.FNegate, Op.SNegate, Op.SNegate),
    "times_scalar": (Op.MatrixTimesScalar, Op.IMul, Op.IMul),
}
FLOATS = ("f16", "f32", "bf16")


def _kind(type_name: str) -> int:
    return 0 if type_name in FLOATS else (1 if type_name.startswith("s") else 2)


class _Tile:
    """The common frame: buffers, one function, the C and D accumulators loaded."""

    def __init__(self, c_type: str, out_type: str | None = None, local_size: int = 8):
        b = self.b = ModuleBuilder()
        self.c_elem = b.scalar(c_type)
        self.out_elem = b.scalar(out_type or c_type)
        self.c_var, self.c_ptr = b.storage_buffer(self.c_elem, 0, name="c", readonly=True)
        self.d_var, _ = b.storage_buffer(self.c_elem, 1, name="d", readonly=True)
        self.o_var, self.o_ptr = b.storage_buffer(self.out_elem, 2, name="out")
        self.local_size = local_size
        self.acc = b.type_coop_matrix_khr(self.c_elem, TILE, TILE, "MatrixAccumulatorKHR")

    def begin(self):
        b = self.b
        self.main, _ = b.function(b.type_void(), name="main")
        b.label()
        zero = b.u32(0)
        self.row_major = b.u32(grammar.enumerant("CooperativeMatrixLayout", "RowMajorKHR").value)
        self.stride = b.u32(TILE)
        c_at = b.emit(Op.AccessChain, self.c_ptr, self.c_var, zero, zero)
        d_at = b.emit(Op.AccessChain, self.c_ptr, self.d_var, zero, zero)
        self.c = b.emit(Op.CooperativeMatrixLoadKHR, self.acc, c_at, self.row_major, self.stride)
        self.d = b.emit(Op.CooperativeMatrixLoadKHR, self.acc, d_at, self.row_major, self.stride)

    def finish(self, result: int) -> array:
        b = self.b
        zero = b.u32(0)
        b.emit(Op.CooperativeMatrixStoreKHR, b.emit(Op.AccessChain, self.o_ptr, self.o_var, zero, zero), result,
               self.row_major, self.stride)
        b.emit(Op.Return)
        b.end_function()
        b.entry_point("GLCompute", self.main, "main", local_size=(self.local_size,))
        return b.to_words()


def element_wise(op: str, c_type: str) -> array:
    t = _Tile(c_type)
    t.begin()
    opcode = ELEMENT_WISE[op][_kind(c_type)]
    b = t.b
    if op == "negate":
        result = b.emit(opcode, t.acc, t.c)
    elif op == "times_scalar":
        three = b.constant(t.c_elem, 3)
        if opcode == Op.MatrixTimesScalar:
            result = b.emit(opcode, t.acc, t.c, three)
        else:  # integer matrices have no OpMatrixTimesScalar: multiply by a splatted matrix
            result = b.emit(opcode, t.acc, t.c, b.emit(Op.CompositeConstruct, t.acc, three))
    else:
        result = b.emit(opcode, t.acc, t.c, t.d)
    return t.finish(result)


CONVERT_OPS = {  # (source kind, target kind) -> opcode; kinds 0 float, 1 signed, 2 unsigned
    (0, 0): Op.FConvert, (0, 1): Op.ConvertFToS, (0, 2): Op.ConvertFToU,
    (1, 0): Op.ConvertSToF, (2, 0): Op.ConvertUToF, (1, 1): Op.SConvert, (1, 2): Op.SConvert,
    (2, 1): Op.UConvert, (2, 2): Op.UConvert,
}


def convert_to_a(c_type: str, a_type: str) -> array:
    """Accumulator -> A in one conversion instruction, the component type changing too: NV2
    (CooperativeMatrixConversionsNV) lets OpFConvert & co. change the Use, as glslang emits it.
    Same component type: OpCooperativeMatrixConvertNV (the Use change alone)."""
    t = _Tile(c_type, a_type)
    t.b.extension("SPV_NV_cooperative_matrix2")
    t.b.capability("CooperativeMatrixConversionsNV")
    t.begin()
    a_mat = t.b.type_coop_matrix_khr(t.out_elem, TILE, TILE, "MatrixAKHR")
    if c_type == a_type:
        return t.finish(t.b.emit(Op.CooperativeMatrixConvertNV, a_mat, t.c))
    return t.finish(t.b.emit(CONVERT_OPS[(_kind(c_type), _kind(a_type))], a_mat, t.c))


def transpose(c_type: str) -> array:
    t = _Tile(c_type)
    t.b.extension("SPV_NV_cooperative_matrix2")
    t.begin()
    b_mat = t.b.type_coop_matrix_khr(t.c_elem, TILE, TILE, "MatrixBKHR")
    return t.finish(t.b.emit(Op.CooperativeMatrixTransposeNV, b_mat, t.c))


def per_element(c_type: str) -> array:
    t = _Tile(c_type)
    b = t.b
    b.extension("SPV_NV_cooperative_matrix2")
    u32 = b.scalar("u32")
    fn, params = b.function(t.c_elem, [u32, u32, t.c_elem, t.c_elem], name="place")
    row, col, elem, other = params
    b.label()
    kind = _kind(c_type)
    add = Op.FAdd if kind == 0 else Op.IAdd
    place = b.emit(Op.IAdd, u32, b.emit(Op.IMul, u32, row, b.u32(TILE)), col)
    if kind == 0:
        place = b.emit(Op.ConvertUToF, t.c_elem, place)
    elif kind == 1:
        place = b.emit(Op.Bitcast, t.c_elem, place)
    b.emit(Op.ReturnValue, b.emit(add, t.c_elem, b.emit(add, t.c_elem, elem, other), place))
    b.end_function()
    t.begin()
    return t.finish(b.emit(Op.CooperativeMatrixPerElementOpNV, t.acc, t.c, fn, t.d))


def composite(c_type: str, length: int) -> array:
    """Vulkan-CTS "composite" on SSA values: out = C + D element by element, each invocation
    taking its elements apart (OpCompositeExtract) and putting the sums back (OpCompositeInsert)
    at literal indices 0 .. length-1 (the Length of an 8x8 tile on 8 lanes)."""
    t = _Tile(c_type)
    t.begin()
    b = t.b
    add = Op.FAdd if _kind(c_type) == 0 else Op.IAdd
    result = t.c
    for i in range(length):
        x = b.emit(Op.CompositeExtract, t.c_elem, t.c, i)
        y = b.emit(Op.CompositeExtract, t.c_elem, t.d, i)
        result = b.emit(Op.CompositeInsert, t.acc, b.emit(add, t.c_elem, x, y), result, i)
    return t.finish(result)
