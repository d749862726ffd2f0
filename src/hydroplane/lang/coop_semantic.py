"""Semantics of cooperative matrices as values: type checks and the KHR / EXT maintenance1 instructions.

The language emits the most direct form: KHR load/store/mul-add/length, element-wise
arithmetic on matrices, and the EXT maintenance1 instructions (seed 000) for convert_use,
transpose, map (PerElementOp), reduce and coordinate. A target without EXT gets them
rewritten by `hydroplane.spirv.lower.lower(module, target)` (NV2), outside this layer.
"""

from __future__ import annotations

from dataclasses import replace

from hydroplane.lang import portable
from hydroplane.lang.errors import SemanticError
from hydroplane.lang.semantic import (
    NON_PRIVATE,
    BufferRef,
    Semantic,
    SharedArray,
    Value,
    describe,
    is_literal,
    scalar_kind,
)
from hydroplane.spirv import grammar, types
from hydroplane.spirv.enums import (
    CooperativeMatrixLayout,
    CooperativeMatrixOperands,
    CooperativeMatrixReduce,
    CooperativeMatrixUse,
    Scope,
)

Op = grammar.Op
EXT = "SPV_EXT_cooperative_matrix_maintenance1"
USE_A, USE_B, USE_ACC = (CooperativeMatrixUse.MatrixAKHR, CooperativeMatrixUse.MatrixBKHR,
                         CooperativeMatrixUse.MatrixAccumulatorKHR)
def _matrix(x, what: str) -> Value:
    if not isinstance(x, Value) or not isinstance(x.type, types.CoopMatrix):
        raise SemanticError(f"{what} must be a cooperative matrix, not {describe(x)}")
    return x


class CoopSemantic(Semantic):
    """Semantic plus cooperative matrices; `functions` compiles @func callbacks (map, reduce)."""

    def __init__(self, builder, functions, target=None):
        super().__init__(builder)
        self.functions = functions
        self.target = target  # a spirv.target.Target: matrix types and MulAdds are checked against it
        self._int_clamps: dict[tuple, int] = {}  # (float type, int type) -> clamp function (coop_float_to_int)
        self.local_invocations: int | None = None  # the kernel's workgroup size (the compiler sets it)

    def offered(self, t: types.CoopMatrix) -> types.CoopMatrix:
        """`t`, when the target (if any) offers it in this kernel's workgroup; otherwise a SemanticError naming
        what the target offers."""
        target = self.target
        if target is None or target.is_reference:
            return t
        invocations = self.local_invocations
        if t.scope == Scope.Subgroup and invocations is not None and invocations % target.subgroup_size:
            raise SemanticError(f"a Subgroup-scope matrix needs whole subgroups: this workgroup has {invocations} "
                                f"invocation{'s' * (invocations != 1)}, {target.name}'s subgroups have "
                                f"{target.subgroup_size} (make local_size a multiple of {target.subgroup_size}, "
                                "e.g. with target_subgroup_size())")
        if not target.offers(t, invocations):
            if t.scope == Scope.Workgroup:
                shapes = "; ".join(str(s) for s in target.workgroup_shapes()) or "none"
                raise SemanticError(f"{target.name} offers no {t} in a workgroup of {invocations} invocations "
                                    f"(its workgroup-scope shapes: {shapes})")
            shapes = ", ".join(str(s) for s in target.shapes()) or "none"
            raise SemanticError(f"{target.name} offers no {t} (its fixed shapes: {shapes})")
        return t

    def _layout(self, layout) -> int:
        try:
            layout = CooperativeMatrixLayout(layout)
        except ValueError:
            raise SemanticError(f"a layout is coop.RowMajor or coop.ColumnMajor, not {layout!r}") from None
        return self.b.u32(int(layout))

    def _memory(self, memory, element: types.Scalar, what: str):
        """Memory of the matrix's component type, or (KHR: the stride then counts the memory's elements) of
        another numeric scalar or vector type, e.g. a `vector_type(u32, 4)` array for 16-byte accesses."""
        if not isinstance(memory, BufferRef | SharedArray):
            raise SemanticError(f"{what}: matrices load from and store to a buffer or shared array, "
                                f"not {describe(memory)}")
        held = memory.element.component if isinstance(memory.element, types.Vector) else memory.element
        if memory.element != element and (not isinstance(held, types.Scalar) or held.kind == "bool"
                                          or types.size(memory.element, "std430") % (element.width // 8)):
            raise SemanticError(f"{what}: the memory holds {memory.element}, the matrix {element}; "
                                "convert the matrix (coop.convert) or use memory of its type")

    def _stride(self, stride) -> int:
        if is_literal(stride):
            return self.constant(stride, types.U32).id
        return self.index(stride).id

    def coop_load(self, t, memory, offset, stride, layout) -> Value:
        if not isinstance(t, types.CoopMatrix):
            raise SemanticError(f"coop.load's first argument is a matrix type (coop.Matrix[...]), not {describe(t)}")
        self.offered(t)
        self._memory(memory, t.component, "coop.load")
        if memory.access == "writeonly":
            raise SemanticError(f"coop.load from the write-only buffer {memory.name}")
        pointer = self.element_pointer(memory, offset)
        return Value(t, self.b.emit(Op.CooperativeMatrixLoadKHR, self.type_id(t), pointer, self._layout(layout),
                                    self._stride(stride), NON_PRIVATE))

    def coop_store(self, m, memory, offset, stride, layout) -> None:
        m = _matrix(m, "coop.store's matrix")
        self._memory(memory, m.type.component, "coop.store")
        if memory.access == "readonly":
            raise SemanticError(f"coop.store into the read-only buffer {memory.name}")
        pointer = self.element_pointer(memory, offset)
        self.b.emit(Op.CooperativeMatrixStoreKHR, pointer, m.id, self._layout(layout), self._stride(stride),
                    NON_PRIVATE)

    def coop_mul_add(self, a, b, c, saturating: bool) -> Value:
        a, b, c = _matrix(a, "mul_add's a"), _matrix(b, "mul_add's b"), _matrix(c, "mul_add's c")
        ta, tb, tc = a.type, b.type, c.type
        for t, use, name in ((ta, USE_A, "a"), (tb, USE_B, "b"), (tc, USE_ACC, "c")):
            if t.use != use:
                raise SemanticError(f"mul_add's {name} has use {t.use_name}; it must be "
                                    f"{types.use_name(use)}")
        if not (ta.rows == tc.rows and tb.cols == tc.cols and ta.cols == tb.rows):
            raise SemanticError(f"bad matrix shape for mul_add: a {ta.rows}x{ta.cols}, b {tb.rows}x{tb.cols}, "
                                f"c {tc.rows}x{tc.cols} (a is MxK, b KxN, c MxN)")
        if not ta.scope == tb.scope == tc.scope:
            raise SemanticError("mul_add's matrices must share one scope")
        kinds = {scalar_kind(t.component) for t in (ta, tb, tc)}
        integer = kinds <= {"signed", "unsigned"}
        if not integer and kinds & {"signed", "unsigned"}:
            raise SemanticError(f"mul_add mixes integer and float matrices: {ta}, {tb}, {tc}")
        if ta.component != tb.component:
            raise SemanticError(f"mul_add's a and b have different components: {ta.component}, {tb.component}")
        if saturating and not integer:
            raise SemanticError("saturating accumulation is for integer matrices only")
        operands = CooperativeMatrixOperands.NoneKHR
        if ta.component.kind == "int" and ta.component.signed:
            operands |= CooperativeMatrixOperands.MatrixASignedComponentsKHR
        if tb.component.kind == "int" and tb.component.signed:
            operands |= CooperativeMatrixOperands.MatrixBSignedComponentsKHR
        if tc.component.kind == "int" and tc.component.signed:
            operands |= (CooperativeMatrixOperands.MatrixCSignedComponentsKHR
                         | CooperativeMatrixOperands.MatrixResultSignedComponentsKHR)
        if saturating:
            operands |= CooperativeMatrixOperands.SaturatingAccumulationKHR
        if self.target is not None and not self.target.offers_muladd(ta, tb, tc, tc, saturating,
                                                                     self.local_invocations):
            if saturating and self.target.offers_muladd(ta, tb, tc, tc, False, self.local_invocations):
                raise SemanticError(f"{self.target.name} reports no saturating accumulation for {ta} x {tb} + {tc} "
                                    "(no shape of it has saturatingAccumulation): drop saturating=True, or run "
                                    "on the reference executor or a device that reports it")
            raise SemanticError(f"{self.target.name} offers no MulAdd of {ta} x {tb} + {tc}")
        extra = (int(operands),) if operands else ()
        return Value(tc, self.b.emit(Op.CooperativeMatrixMulAddKHR, self.type_id(tc), a.id, b.id, c.id, *extra))

    def coop_fill(self, t, value) -> Value:
        if not isinstance(t, types.CoopMatrix):
            raise SemanticError(f"coop.fill's first argument is a matrix type, not {describe(t)}")
        self.offered(t)
        if is_literal(value) and getattr(t.component, "encoding", None) is None:
            return self.constant(value, t)
        # bf16 and fp8 have no literal constants (their scalars convert from f32): construct the matrix
        value = self.coerce(value, t.component, "coop.fill value")
        return Value(t, self.b.emit(Op.CompositeConstruct, self.type_id(t), value.id))

    def coop_length(self, t) -> Value:
        t = t.type if isinstance(t, Value) else t
        if not isinstance(t, types.CoopMatrix):
            raise SemanticError(f"coop.length takes a matrix or matrix type, not {describe(t)}")
        length = self.b.emit(Op.CooperativeMatrixLengthKHR, self.type_id(types.U32), self.type_id(t))
        return Value(types.S32, self.b.emit(Op.Bitcast, self.type_id(types.S32), length))

    def coop_float_to_int(self, m: Value, target: types.Scalar) -> Value:
        """A float matrix converted to integers: each element clamped in its float type to the integer range as
        that type holds it (NaN -> 0) by a per-element operation, then truncated toward zero. Exact saturation
        where the float type holds the range's ends (f32 -> 8/16-bit, f16 -> 8-bit); otherwise the nearest
        float inside (f32 -> s32: 2147483520)."""
        t = m.type
        if self.target is not None and not (self.target.is_reference or self.target.ext_maintenance1
                                            or self.target.has_nv2("cooperativeMatrixPerElementOperations")):
            raise SemanticError(f"coop.convert({t} -> {target}) clamps each element through a per-element "
                                f"operation, which {self.target.name} lacks (EXT maintenance1 or NV2 per-element "
                                "operations)")
        source = t.component
        if source.encoding is not None or source.width < 16:
            m = self.convert(m, types.F32)
            t, source = m.type, types.F32
        fn_id = self._int_clamp_function(source, target)
        self.b.extension(EXT)
        clamped = Value(t, self.b.emit(Op.CooperativeMatrixPerElementOpEXT, self.type_id(t), m.id, fn_id))
        result = replace(t, component=target)
        opcode = Op.ConvertFToS if target.signed else Op.ConvertFToU
        return Value(result, self.b.emit(opcode, self.type_id(result), clamped.id))

    def _int_clamp_function(self, source: types.Scalar, target: types.Scalar) -> int:
        """The SPIR-V function (row, col, x) -> x clamped to target's range in source's type, NaN -> 0."""
        key = (source, target)
        if key not in self._int_clamps:
            b = self.b
            with b.function_aside():
                fn_id, (_row, _col, x_id) = b.function(self.type_id(source), [self.type_id(types.S32)] * 2
                                                       + [self.type_id(source)], name=f"hydroplane_clamp_to_{target}")
                b.label()
                b.emit(Op.ReturnValue, portable.clamp_to_int_range(self, Value(source, x_id), target).id)
                b.end_function()
            self._int_clamps[key] = fn_id
        return self._int_clamps[key]

    def coop_convert(self, m, dtype, use=None) -> Value:
        m = _matrix(m, "coop.convert's matrix")
        if not isinstance(dtype, types.Scalar):
            raise SemanticError(f"coop.convert converts to a dtype, not {describe(dtype)}")
        if use is None or use == m.type.use:
            return self.convert(m, dtype)
        t = m.type
        if t.use != USE_ACC or use not in (USE_A, USE_B):
            raise SemanticError(f"coop.convert from {t.use_name} to {types.use_name(use)}: a conversion changes the "
                                "use from Accumulator to A or B only")
        if scalar_kind(t.component) not in ("float", "encoded") or scalar_kind(dtype) not in ("float", "encoded"):
            raise SemanticError(f"coop.convert with a use converts float matrices, not {t.component} -> {dtype}")
        result = self.offered(replace(t, component=dtype, use=CooperativeMatrixUse(use)))
        return Value(result, self.b.emit(Op.FConvert, self.type_id(result), m.id))  # needs NV2's conversions

    def _convert_use(self, m: Value, use, transpose: bool) -> Value:
        t = m.type
        try:
            use = CooperativeMatrixUse(use) if not isinstance(use, str) else types.coop_use(use)
        except (ValueError, types.TypeModelError):
            raise SemanticError(f"a use is coop.A, coop.B or coop.Accumulator, not {use!r}") from None
        if (t.use == USE_ACC) == (use == USE_ACC):
            raise SemanticError(f"{'transpose' if transpose else 'convert_use'}: from {t.use_name} to "
                                f"{types.use_name(use)}; EXT maintenance1 converts Accumulator to A or B "
                                "and A or B to Accumulator")
        rows, cols = (t.cols, t.rows) if transpose else (t.rows, t.cols)
        result = self.offered(replace(t, rows=rows, cols=cols, use=use))
        self.b.extension(EXT)
        rid = self.b.emit(Op.CooperativeMatrixConvertUseEXT, self.type_id(result), m.id)
        if transpose:
            self.b.decorate(rid, "CooperativeMatrixTransposeEXT")
        return Value(result, rid)

    def coop_convert_use(self, m, use) -> Value:
        return self._convert_use(_matrix(m, "coop.convert_use's matrix"), use, False)

    def coop_transpose(self, m, use) -> Value:
        m = _matrix(m, "coop.transpose's matrix")
        if use is None:
            use = USE_B if m.type.use == USE_ACC else USE_ACC
        return self._convert_use(m, use, True)

    def coop_map(self, fn, m, extra) -> Value:
        m = _matrix(m, "coop.map's matrix")
        if not getattr(fn, "__hydroplane_func__", False):
            raise SemanticError(f"coop.map applies a @func helper, not {describe(fn)}")
        extra_values, extra_params = [], []
        for x in extra:
            if isinstance(x, bool) or not isinstance(x, Value) and not is_literal(x):
                extra_params.append(x)  # compile-time (a buffer, a bool flag ...): bound in the helper
                continue
            x = self.materialize(x)
            if isinstance(x.type, types.CoopMatrix):
                if x.type != m.type:
                    raise SemanticError(f"coop.map: an extra matrix of type {x.type}, the matrix is {m.type}")
                extra_params.append(x.type.component)
            else:
                extra_params.append(x.type)
            extra_values.append(x)
        comp = m.type.component
        fn_id, result = self.functions.function_of_types(fn, [types.S32, types.S32, comp, *extra_params])
        if result != comp:
            raise SemanticError(f"coop.map: {fn.__name__} returns {result}, the matrix holds {comp}")
        self.b.extension(EXT)
        return Value(m.type, self.b.emit(Op.CooperativeMatrixPerElementOpEXT, self.type_id(m.type), m.id, fn_id,
                                         *(x.id for x in extra_values)))

    def coop_reduce(self, m, mode, combine) -> Value:
        m = _matrix(m, "coop.reduce's matrix")
        t = m.type
        if t.use != USE_ACC:
            raise SemanticError(f"coop.reduce works on Accumulator matrices, not {t.use_name}")
        try:
            mode = CooperativeMatrixReduce(mode)
        except (ValueError, TypeError):
            raise SemanticError(f"coop.reduce's mode is coop.Row, coop.Column, coop.Row | coop.Column or "
                                f"coop.Quad2x2, not {mode!r}") from None
        quad = CooperativeMatrixReduce.CooperativeMatrixReduce2x2
        if mode & quad and mode != quad or not mode:
            raise SemanticError(f"coop.reduce: {mode!r} is not a reduction (2x2 goes alone)")
        if not getattr(combine, "__hydroplane_func__", False):
            raise SemanticError(f"coop.reduce combines with a @func helper, not {describe(combine)}")
        if mode == quad:
            if t.rows % 2 or t.cols % 2:
                raise SemanticError(f"bad matrix shape: a 2x2 reduction needs even dimensions, not {t.rows}x{t.cols}")
            result = self.offered(replace(t, rows=t.rows // 2, cols=t.cols // 2))
        else:
            result = t
        if self.target is not None:
            fault = self.target.reduce_fault(t, bool(mode & CooperativeMatrixReduce.Row),
                                             bool(mode & CooperativeMatrixReduce.Column))
            if fault is not None:
                raise SemanticError(fault)
        fn_id, returned = self.functions.function_of_types(combine, [t.component, t.component])
        if returned != t.component:
            raise SemanticError(f"coop.reduce: {combine.__name__} returns {returned}, the matrix holds {t.component}")
        self.b.extension(EXT)
        return Value(result, self.b.emit(Op.CooperativeMatrixReduceEXT, self.type_id(result), m.id, int(mode), fn_id))

    def coop_coordinate(self, m, index) -> tuple[Value, Value]:
        m = _matrix(m, "coop.coordinate's matrix")
        index = self.index(index)
        if index.type.width != 32:
            raise SemanticError(f"coop.coordinate's index is a 32-bit integer, not {index.type}")
        vec = types.Vector(types.S32, 2)
        self.b.extension(EXT)
        both = self.b.emit(Op.CooperativeMatrixGetCoordinateEXT, self.type_id(vec), m.id, index.id)
        s32 = self.type_id(types.S32)
        return (Value(types.S32, self.b.emit(Op.CompositeExtract, s32, both, 0)),
                Value(types.S32, self.b.emit(Op.CompositeExtract, s32, both, 1)))
