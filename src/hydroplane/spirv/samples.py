"""Sample compute kernels made with the ModuleBuilder, for the runtime, the reference executor and tests.

- `coop_matmul_tile`: one cooperative-matrix tile, D = A*B + C (seed 002's kernel), in the
  KHR or the legacy NV family, any supported component types, either memory layout;
  `scope="Workgroup"` makes the NV2 workgroup-scope form.
- `coop_reduce_tile`: a cooperative-matrix reduction (row, column, whole tile, 2x2) with
  add/max/min, through SPV_NV_cooperative_matrix2 or SPV_EXT_cooperative_matrix_maintenance1.
- `vector_add`: c[i] = a[i] + b[i] for i < n (push constant), one invocation per element.

Every sample returns the module's words (array('I')); buffers are in descriptor set 0.
"""

from __future__ import annotations

from array import array

from hydroplane.spirv import grammar
from hydroplane.spirv.builder import BuildError, ModuleBuilder

Op = grammar.Op

COOP_A_TYPES = ("f16", "bf16", "f32", "s8", "u8")
COOP_C_TYPES = ("f16", "f32", "s32", "u32")
_FLOAT_TYPES = frozenset({"f16", "bf16", "f32"})
# (a_type, c_type) pairs that the cooperative-matrix families accept.
COOP_COMBINATIONS = frozenset(
    [("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("f32", "f32")]
    + [(a, c) for a in ("s8", "u8") for c in ("s32", "u32")]
)
_SIGNED = frozenset({"s8", "s16", "s32", "s64"})
_LAYOUTS = {"row": "RowMajorKHR", "column": "ColumnMajorKHR"}
_ADD_OPCODE = {"float": Op.FAdd, "int": Op.IAdd}
VECTOR_ADD_TYPES = ("f16", "f32", "f64", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")


class SampleError(BuildError):
    """A sample kernel asked for with arguments it cannot be made with."""


def _check_choice(what: str, value, choices) -> None:
    if value not in choices:
        raise SampleError(f"{what}={value!r} is not one of {', '.join(map(repr, choices))}")


def _check_dimension(what: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SampleError(f"{what} must be a positive int, not {value!r}")


def coop_matmul_tile(m: int, n: int, k: int, a_type: str = "f16", c_type: str = "f32",
                     family: str = "khr", layout: str = "row", saturating: bool = False,
                     local_size: int = 32, scope: str = "Subgroup") -> array:
    """D = A*B + C on one m x n tile (A m x k, B k x n); buffers a, b, c, d at bindings 0..3.

    Every matrix is dense in its buffer in `layout` order ('row' or 'column') with no
    padding (stride k / n / n for A / B / C,D row-major; m / k / m column-major).
    """
    for what, value in (("m", m), ("n", n), ("k", k), ("local_size", local_size)):
        _check_dimension(what, value)
    _check_choice("a_type", a_type, COOP_A_TYPES)
    _check_choice("c_type", c_type, COOP_C_TYPES)
    _check_choice("family", family, ("khr", "nv"))
    _check_choice("layout", layout, tuple(_LAYOUTS))
    _check_choice("scope", scope, ("Subgroup", "Workgroup"))
    if (a_type, c_type) not in COOP_COMBINATIONS:
        raise SampleError(f"a_type={a_type!r} with c_type={c_type!r} is not a cooperative-matrix "
                          f"combination; use one of {sorted(COOP_COMBINATIONS)}")
    if saturating and a_type in _FLOAT_TYPES:
        raise SampleError("saturating accumulation is for integer matrices only")
    if family == "nv" and (a_type == "bf16" or saturating or scope != "Subgroup"):
        raise SampleError("the legacy NV family has no bf16, no saturating accumulation and "
                          "subgroup scope only")

    b = ModuleBuilder()
    a_elem, c_elem = b.scalar(a_type), b.scalar(c_type)
    buffers = [b.storage_buffer(elem, binding, name=name, readonly=name != "d")
               for binding, (name, elem) in enumerate((("a", a_elem), ("b", a_elem), ("c", c_elem), ("d", c_elem)))]
    void = b.type_void()
    main, _ = b.function(void, name="main")
    b.label()
    zero = b.u32(0)
    pointers = [b.emit(Op.AccessChain, elem_ptr, var, zero, zero) for var, elem_ptr in buffers]
    row_major = layout == "row"
    strides = [b.u32(s) for s in ((k, n, n, n) if row_major else (m, k, m, m))]
    shapes = ((a_elem, m, k, "MatrixAKHR"), (a_elem, k, n, "MatrixBKHR"), (c_elem, m, n, "MatrixAccumulatorKHR"))

    if family == "khr":
        types = [b.type_coop_matrix_khr(elem, rows, cols, use, scope) for elem, rows, cols, use in shapes]
        layout_id = b.u32(grammar.enumerant("CooperativeMatrixLayout", _LAYOUTS[layout]).value)
        loaded = [b.emit(Op.CooperativeMatrixLoadKHR, t, p, layout_id, s)
                  for t, p, s in zip(types, pointers, strides)]
        operands = _mul_add_operands(a_type, c_type, saturating)
        result = b.emit(Op.CooperativeMatrixMulAddKHR, types[2], *loaded, *([operands] if operands else []))
        b.emit(Op.CooperativeMatrixStoreKHR, pointers[3], result, layout_id, strides[3])
    else:
        types = [b.type_coop_matrix_nv(elem, rows, cols, scope) for elem, rows, cols, _ in shapes]
        column_major = b.constant_bool(not row_major)
        loaded = [b.emit(Op.CooperativeMatrixLoadNV, t, p, s, column_major)
                  for t, p, s in zip(types, pointers, strides)]
        result = b.emit(Op.CooperativeMatrixMulAddNV, types[2], *loaded)
        b.emit(Op.CooperativeMatrixStoreNV, pointers[3], result, strides[3], column_major)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(local_size,))
    return b.to_words()


def _mul_add_operands(a_type: str, c_type: str, saturating: bool) -> list[str]:
    """The CooperativeMatrixOperands of an integer MulAdd: signedness per matrix, saturation."""
    names = []
    if a_type in _SIGNED:
        names += ["MatrixASignedComponentsKHR", "MatrixBSignedComponentsKHR"]
    if c_type in _SIGNED:
        names += ["MatrixCSignedComponentsKHR", "MatrixResultSignedComponentsKHR"]
    if saturating:
        names.append("SaturatingAccumulationKHR")
    return names


# combine name -> per scalar kind: ('op', opcode) or ('glsl', GLSL.std.450 instruction)
_COMBINE = {
    "add": {"float": ("op", Op.FAdd), "signed": ("op", Op.IAdd), "unsigned": ("op", Op.IAdd)},
    "max": {"float": ("glsl", "FMax"), "signed": ("glsl", "SMax"), "unsigned": ("glsl", "UMax")},
    "min": {"float": ("glsl", "FMin"), "signed": ("glsl", "SMin"), "unsigned": ("glsl", "UMin")},
}
REDUCE_MODES = ("Row", "Column", "Row|Column", "2x2")
REDUCE_TYPES = ("f16", "f32", "s32", "u32")


def coop_reduce_tile(m: int, n: int, reduce: str = "Row", combine: str = "add", dtype: str = "f32",
                     family: str = "nv2", local_size: int = 32) -> array:
    """Reduce an m x n accumulator tile (binding 0, row-major) into binding 1 (row-major).

    'Row': every element of row r is the combination of row r (m x n result); 'Column'
    likewise per column; 'Row|Column': every element is the whole tile's combination;
    '2x2': an (m/2) x (n/2) result, each element the combination of a 2x2 block.
    `family` picks the extension: 'nv2' (SPV_NV_cooperative_matrix2) or 'ext'
    (SPV_EXT_cooperative_matrix_maintenance1); the instruction is the same opcode.
    """
    for what, value in (("m", m), ("n", n), ("local_size", local_size)):
        _check_dimension(what, value)
    _check_choice("reduce", reduce, REDUCE_MODES)
    _check_choice("combine", combine, tuple(_COMBINE))
    _check_choice("dtype", dtype, REDUCE_TYPES)
    _check_choice("family", family, ("nv2", "ext"))
    if reduce == "2x2" and (m % 2 or n % 2):
        raise SampleError(f"a 2x2 reduction needs even m and n, not {m} x {n}")
    out_m, out_n = (m // 2, n // 2) if reduce == "2x2" else (m, n)

    b = ModuleBuilder()
    b.extension({"nv2": "SPV_NV_cooperative_matrix2", "ext": "SPV_EXT_cooperative_matrix_maintenance1"}[family])
    elem = b.scalar(dtype)
    (source, elem_ptr), (target, _) = (b.storage_buffer(elem, i, name=name, readonly=name == "src")
                                       for i, name in enumerate(("src", "dst")))
    combine_fn = _combine_function(b, elem, dtype, combine)
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    zero = b.u32(0)
    row_major = b.u32(grammar.enumerant("CooperativeMatrixLayout", "RowMajorKHR").value)
    in_type = b.type_coop_matrix_khr(elem, m, n, "MatrixAccumulatorKHR")
    out_type = b.type_coop_matrix_khr(elem, out_m, out_n, "MatrixAccumulatorKHR")
    tile = b.emit(Op.CooperativeMatrixLoadKHR, in_type, b.emit(Op.AccessChain, elem_ptr, source, zero, zero),
                  row_major, b.u32(n))
    reduced = b.emit(Op.CooperativeMatrixReduceNV, out_type, tile, reduce, combine_fn)
    b.emit(Op.CooperativeMatrixStoreKHR, b.emit(Op.AccessChain, elem_ptr, target, zero, zero), reduced,
           row_major, b.u32(out_n))
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(local_size,))
    return b.to_words()


def _combine_function(b: ModuleBuilder, elem: int, dtype: str, combine: str) -> int:
    """`elem combine(elem x, elem y)`: the reduction's CombineFunc."""
    kind = "float" if dtype.startswith("f") else "signed" if dtype in _SIGNED else "unsigned"
    how, what = _COMBINE[combine][kind]
    fn, (x, y) = b.function(elem, [elem, elem], name=f"combine_{combine}")
    b.label()
    value = b.emit(what, elem, x, y) if how == "op" else b.ext_inst("GLSL.std.450", what, elem, x, y)
    b.emit(Op.ReturnValue, value)
    b.end_function()
    return fn


def vector_add(dtype: str = "f32", local_size: int = 64) -> array:
    """c[i] = a[i] + b[i] for i < n: buffers a, b, c at bindings 0..2, n a u32 push constant."""
    _check_choice("dtype", dtype, VECTOR_ADD_TYPES)
    _check_dimension("local_size", local_size)
    b = ModuleBuilder()
    elem, u32 = b.scalar(dtype), b.scalar("u32")
    (a, elem_ptr), (bb, _), (c, _) = (b.storage_buffer(elem, i, name=name, readonly=name != "c")
                                     for i, name in enumerate("abc"))
    params = b.type_struct(u32, offsets=[0], block=True, name="Params", member_names=["n"])
    push = b.variable(b.type_pointer("PushConstant", params), "PushConstant", name="params")
    uvec3 = b.type_vector(u32, 3)
    global_id = b.name(b.builtin("GlobalInvocationId", uvec3), "global_id")

    main, _ = b.function(b.type_void(), name="main")
    b.label()
    x = b.emit(Op.CompositeExtract, u32, b.emit(Op.Load, uvec3, global_id), 0)
    count = b.emit(Op.Load, u32, b.emit(Op.AccessChain, b.type_pointer("PushConstant", u32), push, b.u32(0)))
    in_range = b.emit(Op.ULessThan, b.type_bool(), x, count)
    body, merge = b.id(), b.id()
    b.emit(Op.SelectionMerge, merge, "None")
    b.emit(Op.BranchConditional, in_range, body, merge)
    b.label(body)
    zero = b.u32(0)
    left, right = (b.emit(Op.Load, elem, b.emit(Op.AccessChain, elem_ptr, var, zero, x)) for var in (a, bb))
    total = b.emit(_ADD_OPCODE[_scalar_kind(dtype)], elem, left, right)
    b.emit(Op.Store, b.emit(Op.AccessChain, elem_ptr, c, zero, x), total)
    b.emit(Op.Branch, merge)
    b.label(merge)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=(local_size,))
    return b.to_words()


def _scalar_kind(dtype: str) -> str:
    return "float" if dtype.startswith("f") else "int"
