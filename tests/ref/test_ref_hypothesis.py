"""Hypothesis-generated kernels from the module builder: straight-line integer/float code, vectors
(construct, shuffle, insert, dynamic extract), 8/16/64-bit integer arithmetic between width
conversions, f16 arithmetic between FConverts, subgroup arithmetic (reduce, scans, clustered;
also inside divergent branches), divergent if/else with OpPhi, calls of a function with divergent
early returns, early exits of some lanes, loops with per-lane trip counts, and exchanges through
Workgroup memory between barriers. The reference executor and lavapipe must agree bit for bit
(float results: the same bits, or both denormal-or-zero, since lavapipe may flush denormals; the
kernels ask for SignedZeroInfNanPreserve so that lavapipe keeps inf and NaN)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import run_tool
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hydroplane.launch import executors as launch
from hydroplane.ref import Executor
from hydroplane.spirv.binary import to_bytes
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.grammar import Op

LOCAL = 16
GRID = 3
N = LOCAL * GRID
INPUTS = 4
OUTPUTS = 4

INT_BINARY = [Op.IAdd, Op.ISub, Op.IMul, Op.BitwiseAnd, Op.BitwiseOr, Op.BitwiseXor, Op.ShiftLeftLogical,
              Op.ShiftRightLogical, Op.ShiftRightArithmetic, Op.UDiv, Op.UMod, Op.SDiv, Op.SRem]
FLOAT_BINARY = [Op.FAdd, Op.FSub, Op.FMul]
GROUP_INT = [Op.GroupNonUniformIAdd, Op.GroupNonUniformUMax, Op.GroupNonUniformSMin, Op.GroupNonUniformBitwiseXor,
             Op.GroupNonUniformIMul]
NARROW = [Op.IAdd, Op.ISub, Op.IMul, Op.UDiv, Op.SDiv, Op.ShiftRightArithmetic, Op.ShiftLeftLogical,
          Op.BitwiseXor, Op.SRem, Op.UMod]
STEPS = ["int", "float", "int_unary", "float_unary", "select_int", "select_float", "to_float", "subgroup",
         "width", "half", "vector", "call", "branch", "loop", "exit", "shared"]


class KernelGen:
    """Builds one kernel from a list of (step, a, b, c) choices."""

    def __init__(self, steps):
        b = self.b = ModuleBuilder()
        self.u32, self.f32, self.bool = b.scalar("u32"), b.scalar("f32"), b.type_bool()
        u32, f32 = self.u32, self.f32
        (self.in_u, self.ptr_u), (self.in_f, self.ptr_f) = b.storage_buffer(u32, 0), b.storage_buffer(f32, 1)
        (self.out_u, _), (self.out_f, _) = b.storage_buffer(u32, 2), b.storage_buffer(f32, 3)
        gid_var = b.builtin("GlobalInvocationId", b.type_vector(u32, 3))
        self.main, _ = b.function(b.type_void(), name="main")
        self.block = b.label()
        self.gid = b.emit(Op.CompositeExtract, u32, b.emit(Op.Load, b.type_vector(u32, 3), gid_var), 0)
        self.helper = None
        self.exited = False  # after an early exit, barriers would be non-uniform: no "shared" steps
        self.shared = b.variable(b.type_pointer("Workgroup", b.type_array(u32, LOCAL)), "Workgroup")
        self.shared_ptr = b.type_pointer("Workgroup", u32)
        self.lid = b.emit(Op.CompositeExtract, u32, b.emit(Op.Load, b.type_vector(u32, 3),
                                                          b.builtin("LocalInvocationId", b.type_vector(u32, 3))), 0)
        self.ints = [self.gid] + [self.load(self.in_u, self.ptr_u, u32, k) for k in range(INPUTS)]
        self.floats = [self.load(self.in_f, self.ptr_f, f32, k) for k in range(INPUTS)]
        for step in steps:
            self.step(*step)
        self.store_outputs()
        b.emit(Op.Return)
        b.end_function()
        if self.helper is not None:
            self.define_helper()
        b.entry_point("GLCompute", self.main, "main", local_size=(LOCAL,))
        for width in (16, 32):  # lavapipe must keep inf/NaN/-0 semantics (no x - x -> 0)
            b.execution_mode(self.main, "SignedZeroInfNanPreserve", width)

    def store_outputs(self):
        for k in range(OUTPUTS):
            self.store(self.out_u, self.ptr_u, k, self.ints[-1 - k % len(self.ints)])
            self.store(self.out_f, self.ptr_f, k, self.floats[-1 - k % len(self.floats)])

    def define_helper(self):
        """uint helper(uint x, uint y): two early returns under divergent conditions."""
        b, u32, boolean = self.b, self.u32, self.bool
        _, (x, y) = b.function(u32, [u32, u32], result_id=self.helper)
        b.label()
        first = b.emit(Op.IEqual, boolean, b.emit(Op.BitwiseAnd, u32, x, b.u32(3)), b.u32(0))
        r1, m1, r2, m2 = b.id(), b.id(), b.id(), b.id()
        b.emit(Op.SelectionMerge, m1, "None")
        b.emit(Op.BranchConditional, first, r1, m1)
        b.label(r1)
        b.emit(Op.ReturnValue, b.emit(Op.BitwiseXor, u32, x, y))
        b.label(m1)
        t = b.emit(Op.IAdd, u32, b.emit(Op.IMul, u32, x, y), b.u32(7))
        bigger = b.emit(Op.UGreaterThan, boolean, t, y)
        b.emit(Op.SelectionMerge, m2, "None")
        b.emit(Op.BranchConditional, bigger, r2, m2)
        b.label(r2)
        b.emit(Op.ReturnValue, b.emit(Op.ISub, u32, t, y))
        b.label(m2)
        b.emit(Op.ReturnValue, b.emit(Op.IAdd, u32, t, x))
        b.end_function()

    def index(self, k):
        b = self.b
        return b.emit(Op.IAdd, self.u32, b.emit(Op.IMul, self.u32, self.gid, b.u32(INPUTS)), b.u32(k))

    def load(self, var, ptr, t, k):
        b = self.b
        return b.emit(Op.Load, t, b.emit(Op.AccessChain, ptr, var, b.u32(0), self.index(k)))

    def store(self, var, ptr, k, value):
        b = self.b
        b.emit(Op.Store, b.emit(Op.AccessChain, ptr, var, b.u32(0), self.index(k)), value)

    def pick(self, pool, n):
        return pool[n % len(pool)]

    def int_op(self, op, x, y):
        b, u32 = self.b, self.u32
        if op in (Op.ShiftLeftLogical, Op.ShiftRightLogical, Op.ShiftRightArithmetic):
            y = b.emit(Op.BitwiseAnd, u32, y, b.u32(31))
        if op in (Op.UDiv, Op.UMod):
            y = b.emit(Op.BitwiseOr, u32, y, b.u32(1))
        if op in (Op.SDiv, Op.SRem):  # divisor in [1, 255]: no division by zero nor INT_MIN / -1
            y = b.emit(Op.BitwiseOr, u32, b.emit(Op.BitwiseAnd, u32, y, b.u32(254)), b.u32(1))
        return b.emit(op, u32, x, y)

    def compute(self, kind, a, c, d):
        """One value of `kind` from the pools; returns ('int'|'float', id)."""
        b, u32, f32 = self.b, self.u32, self.f32
        if kind == "int":
            return "int", self.int_op(INT_BINARY[d % len(INT_BINARY)], self.pick(self.ints, a), self.pick(self.ints, c))
        if kind == "float":  # NoContraction: lavapipe must not fuse a multiply into a following add
            r = b.emit(FLOAT_BINARY[d % 3], f32, self.pick(self.floats, a), self.pick(self.floats, c))
            b.decorate(r, "NoContraction")
            return "float", r
        if kind == "int_unary":
            return "int", b.emit([Op.Not, Op.SNegate, Op.BitCount][d % 3], u32, self.pick(self.ints, a))
        if kind == "float_unary":
            x = self.pick(self.floats, a)
            if d % 3 == 0:
                return "float", b.emit(Op.FNegate, f32, x)
            name = "FAbs" if d % 3 == 1 else "Floor"
            return "float", b.ext_inst("GLSL.std.450", name, f32, x)
        if kind == "select_int":
            x, y = self.pick(self.ints, a), self.pick(self.ints, c)
            cond = b.emit([Op.ULessThan, Op.SLessThan, Op.IEqual][d % 3], self.bool, x, y)
            return "int", b.emit(Op.Select, u32, cond, x, y)
        if kind == "select_float":
            x, y = self.pick(self.floats, a), self.pick(self.floats, c)
            cond = b.emit(Op.FOrdLessThan, self.bool, x, y)
            return "float", b.emit(Op.Select, f32, cond, x, y)
        if kind == "subgroup":  # reduce / inclusive scan / exclusive scan / clustered reduce over 2
            op, group_op = GROUP_INT[d % len(GROUP_INT)], (d // 5) % 4
            extra = (b.u32(2),) if group_op == 3 else ()
            return "int", b.emit(op, u32, b.scope("Subgroup"), group_op, self.pick(self.ints, a), *extra)
        if kind == "width":  # 8-, 16- or 64-bit arithmetic, wrapping, between width conversions
            width = (8, 16, 64)[d % 3]
            t = b.type_int(width, 0)
            widen = Op.SConvert if (d // 3) % 2 else Op.UConvert
            x = b.emit(widen, t, self.pick(self.ints, a))
            y = b.emit(Op.UConvert, t, self.pick(self.ints, c))
            op = NARROW[(d // 6 + a) % len(NARROW)]
            if op in (Op.ShiftRightArithmetic, Op.ShiftLeftLogical):
                y = b.emit(Op.BitwiseAnd, t, y, b.constant(t, width - 1))
            if op in (Op.UDiv, Op.UMod):
                y = b.emit(Op.BitwiseOr, t, y, b.constant(t, 1))
            if op in (Op.SDiv, Op.SRem):  # divisor in [1, 127]: no division by zero nor MIN / -1
                y = b.emit(Op.BitwiseOr, t, b.emit(Op.BitwiseAnd, t, y, b.constant(t, 126)), b.constant(t, 1))
            r = b.emit(op, t, x, y)
            return "int", b.emit(Op.SConvert if d % 2 else Op.UConvert, u32, r)
        if kind == "half":  # f16 arithmetic (rounded once per operation) between FConverts
            f16 = b.scalar("f16")
            x = b.emit(Op.FConvert, f16, self.pick(self.floats, a))
            y = b.emit(Op.FConvert, f16, self.pick(self.floats, c))
            r = b.emit(FLOAT_BINARY[d % 3], f16, x, y)
            b.decorate(r, "NoContraction")
            return "float", b.emit(Op.FConvert, f32, r)
        if kind == "call":
            if self.helper is None:
                self.helper = b.id()
            return "int", b.emit(Op.FunctionCall, u32, self.helper, self.pick(self.ints, a), self.pick(self.ints, c))
        if kind == "vector":  # uvec4 / vec4: construct, shuffle, insert, element-wise op, dynamic extract
            if d % 2:
                t, pool, op = self.u32, self.ints, [Op.IAdd, Op.IMul, Op.BitwiseXor][d % 3]
            else:
                t, pool, op = f32, self.floats, [Op.FAdd, Op.FMul, Op.FSub][d % 3]
            vt = b.type_vector(t, 4)
            v1 = b.emit(Op.CompositeConstruct, vt, *(self.pick(pool, a + k) for k in range(4)))
            v2 = b.emit(Op.VectorShuffle, vt, v1, v1, *((c >> (2 * k)) & 7 for k in range(4)))
            v2 = b.emit(Op.CompositeInsert, vt, self.pick(pool, c), v2, d % 4)
            v3 = b.emit(op, vt, v1, v2)
            if t == f32:
                b.decorate(v3, "NoContraction")
            index = b.emit(Op.BitwiseAnd, u32, self.pick(self.ints, d), b.u32(3))
            return ("int" if t == u32 else "float"), b.emit(Op.VectorExtractDynamic, t, v3, index)
        if kind == "to_float":
            x = b.emit(Op.BitwiseAnd, u32, self.pick(self.ints, a), b.u32(0xFFFFF))
            return "float", b.emit(Op.ConvertUToF if d % 2 else Op.ConvertSToF, f32, x)
        raise AssertionError(kind)

    def add(self, kind, value):
        (self.ints if kind == "int" else self.floats).append(value)

    def step(self, kind, a, c, d):
        if kind == "shared" and not self.exited:
            self.exchange(a, c, d)
        elif kind == "shared":
            self.add(*self.compute("int", a, c, d))
        elif kind == "exit":
            self.exited = True
            self.exit(a, d)
        elif kind == "branch":
            self.branch(a, c, d)
        elif kind == "loop":
            self.loop(a, c, d)
        else:
            self.add(*self.compute(kind, a, c, d))

    def barrier(self):
        b = self.b
        b.emit(Op.ControlBarrier, b.scope("Workgroup"), b.scope("Workgroup"), b.u32(0x108))  # AcqRel|Workgroup

    def exchange(self, a, c, d):
        """Every invocation writes its slot of a Workgroup array; after a barrier each reads another's."""
        b, u32 = self.b, self.u32
        b.emit(Op.Store, b.emit(Op.AccessChain, self.shared_ptr, self.shared, self.lid), self.pick(self.ints, a))
        self.barrier()
        step = 2 * (c % (LOCAL // 2)) + 1  # odd: a permutation of the slots
        other = b.emit(Op.UMod, u32, b.emit(Op.IAdd, u32, b.emit(Op.IMul, u32, self.lid, b.u32(step)), b.u32(d)),
                       b.u32(LOCAL))
        self.add("int", b.emit(Op.Load, u32, b.emit(Op.AccessChain, self.shared_ptr, self.shared, other)))
        self.barrier()

    def exit(self, a, d):
        """Some lanes store their outputs and return early; the others go on."""
        b = self.b
        low = b.emit(Op.BitwiseAnd, self.u32, self.pick(self.ints, a), b.u32(7 << (d % 8)))
        leave = b.emit(Op.IEqual, self.bool, low, b.u32(0))
        out, merge = b.id(), b.id()
        b.emit(Op.SelectionMerge, merge, "None")
        b.emit(Op.BranchConditional, leave, out, merge)
        b.label(out)
        self.store_outputs()
        b.emit(Op.Return)
        b.label(merge)
        self.block = merge

    def branch(self, a, c, d):
        b = self.b
        bit = b.emit(Op.BitwiseAnd, self.u32, self.pick(self.ints, a), b.u32(1 << (d % 4)))
        cond = b.emit(Op.IEqual, self.bool, bit, b.u32(0))
        then, other, merge = b.id(), b.id(), b.id()
        b.emit(Op.SelectionMerge, merge, "None")
        b.emit(Op.BranchConditional, cond, then, other)
        kind = ["int", "float", "subgroup"][d % 3]
        b.label(then)
        _, v1 = self.compute(kind, a + 1, c, d // 2)
        b.emit(Op.Branch, merge)
        b.label(other)
        _, v2 = self.compute(kind, c, a + 2, d // 3)
        b.emit(Op.Branch, merge)
        b.label(merge)
        kind = "float" if kind == "float" else "int"
        t = self.u32 if kind == "int" else self.f32
        self.add(kind, b.emit(Op.Phi, t, v1, then, v2, other))
        self.block = merge

    def loop(self, a, c, d):
        b, u32 = self.b, self.u32
        trips = b.emit(Op.BitwiseAnd, u32, self.pick(self.ints, a), b.u32(7))
        init = self.pick(self.ints, c)
        pre = self.block
        header, body, cont, merge = b.id(), b.id(), b.id(), b.id()
        i_next, acc_next = b.id(), b.id()
        b.emit(Op.Branch, header)
        b.label(header)
        i = b.emit(Op.Phi, u32, b.u32(0), pre, i_next, cont)
        acc = b.emit(Op.Phi, u32, init, pre, acc_next, cont)
        more = b.emit(Op.ULessThan, self.bool, i, trips)
        b.emit(Op.LoopMerge, merge, cont, "None")
        b.emit(Op.BranchConditional, more, body, merge)
        b.label(body)
        mixed = self.int_op(INT_BINARY[d % len(INT_BINARY)], acc, b.emit(Op.IAdd, u32, i, self.pick(self.ints, d)))
        b.emit(Op.IAdd, u32, mixed, b.u32(0x9E3779B9), result_id=acc_next)
        b.emit(Op.Branch, cont)
        b.label(cont)
        b.emit(Op.IAdd, u32, i, b.u32(1), result_id=i_next)
        b.emit(Op.Branch, header)
        b.label(merge)
        self.add("int", acc)
        self.block = merge


def _inputs(seed):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2**32, N * INPUTS, dtype=np.uint64).astype(np.uint32)
    f = (rng.standard_normal(N * INPUTS) * rng.choice([1e-3, 1.0, 1e3], N * INPUTS)).astype(np.float32)
    return u, f


def _same_floats(x, y):
    tiny = np.finfo(np.float32).tiny
    both_small = (np.abs(x) < tiny) & (np.abs(y) < tiny)
    same = (x.view(np.uint32) == y.view(np.uint32)) | (np.isnan(x) & np.isnan(y)) | both_small
    return same


@pytest.fixture(scope="module")
def lavapipe():
    ex = launch.get_executor(0)
    yield ex
    ex.close()


step_strategy = st.tuples(st.sampled_from(STEPS), st.integers(0, 63), st.integers(0, 63), st.integers(0, 63))


@pytest.mark.vulkan
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step_strategy, min_size=1, max_size=14), seed=st.integers(0, 2**31))
@example(steps=[("float", 0, 0, 0), ("to_float", 1, 0, 0), ("half", 5, 5, 1)], seed=0)  # f16 inf - inf
@example(steps=[("call", 0, 1, 0), ("exit", 2, 0, 1), ("loop", 3, 1, 2), ("branch", 1, 2, 5)], seed=1)
def test_random_kernels_agree_with_lavapipe(lavapipe, spirv_val, steps, seed):
    words = KernelGen(steps).b.to_words()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.spv"
        path.write_bytes(to_bytes(words))
        run_tool([spirv_val, "--target-env", "vulkan1.3", str(path)])
    u, f = _inputs(seed)
    buffers = {0: u, 1: f, 2: np.full(N * INPUTS, 0xDEADBEEF, np.uint32), 3: np.full(N * INPUTS, np.nan, np.float32)}
    ref = launch.run(words, (GRID, 1, 1), buffers, executor=Executor(subgroup_size=8))
    dev = launch.run(words, (GRID, 1, 1), buffers, executor=lavapipe)
    np.testing.assert_array_equal(ref[2], dev[2])
    same = _same_floats(ref[3], dev[3])
    assert same.all(), (ref[3][~same][:8], dev[3][~same][:8])
