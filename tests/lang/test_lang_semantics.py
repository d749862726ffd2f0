"""The defined semantics as emitted (no instruction whose result SPIR-V or Vulkan leaves open), the refusals of
what a target lacks (each a CompilationError at the Python line), and the messages a newcomer met.

The values themselves are checked by the conformance cases (test_lang_conformance.py: ref and lavapipe against
NumPy at the edges); here the module's instructions, the refusals, and a few kernels end to end."""

from __future__ import annotations

import inspect
import linecache
from dataclasses import replace

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

import hydroplane
from hydroplane.lang import (
    Buffer,
    CompilationError,
    clamp,
    constexpr,
    coop,
    f16,
    f32,
    func,
    global_id,
    kernel_source,
    maximum,
    readonly,
    s8,
    s32,
    subgroup_min,
    u32,
)
from hydroplane.spirv import Op, decode
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.target import Target, UnsupportedOnTarget

pytestmark = pytest.mark.vulkan
LAVAPIPE, H200 = Target.profile("lavapipe"), Target.profile("nvidia-h200")


def _opcodes(words) -> set[int]:
    return {i.opcode for i in decode(words).instructions}


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _error(k, target=None, **constexprs) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        k.compile(target, **constexprs)
    return info.value


# the instructions ------------------------------------------------------------------------------------
@kernel_source(local_size=64)
def integer_ops(a: Buffer[s32, readonly], b: Buffer[s32, readonly], out: Buffer[s32], u: Buffer[u32]):
    i = global_id()
    out[i * 4] = a[i] // b[i]
    out[i * 4 + 1] = a[i] % b[i]
    out[i * 4 + 2] = a[i] % 8
    out[i * 4 + 3] = a[i] << b[i]
    u[i] = u32(a[i]) // u32(b[i])


def test_division_and_remainder_never_use_signed_division():
    """Vulkan leaves OpSRem and OpSMod undefined for negative operands (the H200 gives -7 % 2 == 1) and every
    division undefined for a zero divisor: the module divides magnitudes with OpUDiv / OpUMod only, by a
    divisor made non-zero, and guards the shift."""
    ops = _opcodes(compiled(integer_ops).words)
    assert not ops & {Op.SRem, Op.SMod, Op.SDiv}
    assert {Op.UDiv, Op.UMod, Op.Select, Op.ULessThan, Op.ShiftLeftLogical} <= ops


@kernel_source(local_size=64)
def float_ops(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], i: Buffer[s32]):
    k = global_id()
    out[k * 3] = x[k] * y[k] + 1.0
    out[k * 3 + 1] = maximum(x[k], y[k])
    out[k * 3 + 2] = clamp(x[k], 0.0, 1.0)
    i[k] = s32(x[k])


def test_floats_are_not_contracted_and_min_max_clamp_are_selects():
    spec = compiled(float_ops)
    module = decode(spec.words)
    decorated = {i.operands[0].value for i in module.instructions
                 if i.opcode == Op.Decorate and i.operands[1].value == 42}  # NoContraction
    multiplies = [i.result_id for i in module.instructions if i.opcode == Op.FMul]
    assert multiplies and set(multiplies) <= decorated
    text = spec.asm()
    assert "FMax" not in text and "FMin" not in text and "FClamp" not in text  # NaN makes them undefined
    assert "OpIsNan" in text and "OpConvertFToS" in text


# refusals ---------------------------------------------------------------------------------------------
@kernel_source(local_size=32)
def saturating_tile(a: Buffer[s8, readonly], b: Buffer[s8, readonly], c: Buffer[s32, readonly], d: Buffer[s32],
                    M: constexpr, N: constexpr, K: constexpr):
    ta = coop.load(coop.Matrix[s8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[s8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[s32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc, saturating=True), d, 0, N)


@pytest.mark.parametrize("target,shape", [(LAVAPIPE, (8, 8, 8)), (H200, (16, 16, 32))], ids=["lavapipe", "h200"])
def test_saturating_accumulation_is_refused_where_no_shape_reports_it(target, shape):
    m, n, k = shape
    err = _error(saturating_tile, target, M=m, N=n, K=k)
    assert "reports no saturating accumulation" in err.message
    assert err.line == _line_of(saturating_tile.fn, "saturating=True")
    saturating = replace(target, coop_khr=tuple(replace(s, saturating=True) for s in target.coop_khr))
    saturating_tile.compile(saturating, M=m, N=n, K=k)  # a target that reports it compiles the kernel
    words = saturating_tile.compile(None, M=m, N=n, K=k).words  # compiled without a target: the launch refuses
    with pytest.raises(UnsupportedOnTarget, match="saturating MulAdd"):
        compile_kernel(words, target)


@kernel_source(local_size="WG")
def workgroup_tile(a: Buffer[f16, readonly], d: Buffer[f32], T: constexpr, WG: constexpr):
    ta = coop.load(coop.Matrix[f16, T, T, coop.A, coop.Workgroup], a, 0, T)
    tb = coop.load(coop.Matrix[f16, T, T, coop.B, coop.Workgroup], a, 0, T)
    acc = coop.fill(coop.Matrix[f32, T, T, coop.Accumulator, coop.Workgroup], 0.0)
    coop.store(coop.mul_add(ta, tb, acc), d, 0, T)


def test_workgroup_scope_needs_the_local_size_the_target_reports():
    workgroup_tile.compile(H200, T=32, WG=32)  # 16x16x16 steps at 32 invocations
    workgroup_tile.compile(H200, T=64, WG=256)  # 32x32x16 steps at 256
    err = _error(workgroup_tile, H200, T=32, WG=48)
    assert "in a workgroup of 48 invocations" in err.message and "(32 invocations)" in err.message
    assert err.line == _line_of(workgroup_tile.fn, "ta = coop.load")
    err = _error(workgroup_tile, H200, T=16, WG=256)  # 16 is not a multiple of 256 invocations' 32x32 steps
    assert "in a workgroup of 256 invocations" in err.message
    with pytest.raises(UnsupportedOnTarget, match="in a workgroup of 48"):
        compile_kernel(workgroup_tile.compile(None, T=32, WG=48).words, H200)


@kernel_source(local_size="LOCAL")
def small_workgroup(x: Buffer[f32, readonly], out: Buffer[f32], LOCAL: constexpr):
    m = coop.load(coop.Matrix[f32, 8, 8, coop.Accumulator], x, 0, 8)
    coop.store(m, out, 0, 8)


def test_a_matrix_needs_whole_subgroups():
    small_workgroup.compile(LAVAPIPE, LOCAL=8)
    small_workgroup.compile(LAVAPIPE, LOCAL=16)
    small_workgroup.compile(Target.reference(), LOCAL=1)  # the reference executor runs partial subgroups
    for local in (1, 12):
        err = _error(small_workgroup, LAVAPIPE, LOCAL=local)
        assert f"this workgroup has {local} invocation" in err.message and "subgroups have 8" in err.message
        assert err.line == _line_of(small_workgroup.fn, "m = coop.load")
    with pytest.raises(UnsupportedOnTarget, match="needs whole subgroups of 8"):
        compile_kernel(small_workgroup.compile(None, LOCAL=1).words, LAVAPIPE)


@func
def add(x, y):
    return x + y


@kernel_source(local_size=32)
def reduce_tile(x: Buffer[f32, readonly], out: Buffer[f32], M: constexpr, N: constexpr, MODE: constexpr):
    m = coop.load(coop.Matrix[f32, M, N, coop.Accumulator], x, 0, N)
    coop.store(coop.reduce(m, MODE, add), out, 0, N)


def test_reductions_lavapipe_computes_wrongly_are_refused():
    """Mesa 26.2's flexible-dimension lowering (nir_lower_cooperative_matrix.c, split_cmat_call_reduce) combines
    only the first block row of a Row reduction (the first block column of a Column one): a 16x16 matrix of
    8x8 blocks comes back with rows 8-15 wrong. Where that happens the reduction is refused."""
    for mode, name in ((coop.Row, "Row"), (coop.Column, "Column")):
        err = _error(reduce_tile, LAVAPIPE, M=16, N=16, MODE=mode)
        assert f"by {name} wrongly" in err.message and "split_cmat_call_reduce" in err.message
        assert err.line == _line_of(reduce_tile.fn, "coop.reduce")
        with pytest.raises(UnsupportedOnTarget, match="wrongly"):
            compile_kernel(reduce_tile.compile(None, M=16, N=16, MODE=mode).words, LAVAPIPE)
        reduce_tile.compile(H200, M=16, N=16, MODE=mode)  # not a Mesa driver
    reduce_tile.compile(LAVAPIPE, M=8, N=8, MODE=coop.Row)
    reduce_tile.compile(LAVAPIPE, M=8, N=16, MODE=coop.Row)  # one block row
    reduce_tile.compile(LAVAPIPE, M=16, N=8, MODE=coop.Column)  # one block column
    reduce_tile.compile(LAVAPIPE, M=16, N=16, MODE=coop.Row | coop.Column)


def test_the_refused_reduction_on_lavapipe_itself():
    """Launched on the device (its own target from the driver's record), the same refusal, before any work;
    the 16x8 Column reduction it accepts comes back right."""
    launched = hydroplane.kernel(local_size=32)(reduce_tile.fn)
    x = np.arange(256, dtype=np.float32) - 100
    with pytest.raises(CompilationError, match="wrongly"):
        launched[(1,)](x, np.zeros(256, np.float32), M=16, N=16, MODE=coop.Row, device=0)
    for device in ("ref", 0):
        out = poisoned(128, np.float32)
        launched[(1,)](x[:128], out, M=16, N=8, MODE=coop.Column, device=device)
        np.testing.assert_array_equal(out.reshape(16, 8), np.repeat(x[:128].reshape(16, 8).sum(0, keepdims=True),
                                                                    16, 0), err_msg=str(device))


# messages ---------------------------------------------------------------------------------------------
@kernel_source(local_size=1)
def int_accumulator(x: Buffer[f32, readonly], out: Buffer[f32]):
    s = 0
    for i in range(4):
        s += x[i]
    out[0] = s


@kernel_source(local_size=1)
def no_annotation(x, out: Buffer[f32]):
    out[0] = 1.0


@kernel_source(local_size=1)
def prints(out: Buffer[f32]):
    print(out[0])


@func
def deeper(x, N: constexpr):
    return deeper(x, N + 1)


@kernel_source(local_size=1)
def endless_helpers(out: Buffer[f32]):
    out[0] = deeper(out[0], 0)


@kernel_source(local_size=1)
def buffer_method(out: Buffer[f32]):
    out.fill(0.0)


@pytest.mark.parametrize("k,message,line_text", [
    (int_accumulator, "s += ...: s is a s32 (its first assignment `s = 0` made it one) and the value is a f32; "
                      "a variable keeps the type of its first assignment: start it as `s = 0.0`", "s += x[i]"),
    (no_annotation, "parameter x needs an annotation: Buffer[dtype], a numeric dtype (push constant) or "
                    "constexpr; it has none", "def no_annotation"),
    (prints, "print() does not run on the GPU", "print(out[0])"),
    (endless_helpers, "helper calls nest more than 32 deep (... deeper -> deeper", "return deeper(x, N + 1)"),
    (buffer_method, "a buffer has no attribute or method 'fill': it takes x[i] and x[i] = v, len(x)",
     "out.fill(0.0)"),
], ids=["int-accumulator", "no-annotation", "print", "endless-helpers", "buffer-method"])
def test_newcomer_messages(k, message, line_text):
    err = _error(k)
    assert err.message.startswith(message), err.message
    assert line_text in err.source_line and err.file == __file__
    assert "static_print" in err.message if k is prints else True
    assert "inspect._empty" not in err.message


def _generated(name: str, source: str):
    """A kernel from generated source (registered with linecache, as a file would be)."""
    filename = f"<generated {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"Buffer": Buffer, "f32": f32, "readonly": readonly}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 -- our own generated kernel text
    return kernel_source(local_size=1)(scope[name])


def test_a_400_term_expression_compiles_and_runs():
    terms = " + ".join(f"x[{i % 7}] * {i % 5}.0" for i in range(400))
    k = _generated("long_sum", f"def long_sum(x: Buffer[f32, readonly], out: Buffer[f32]):\n    out[0] = {terms}\n")
    x = np.array([1.5, -2.0, 0.25, 3.0, -0.5, 8.0, 0.125], np.float32)
    expected = np.float32(0)
    for i in range(400):
        expected = np.float32(expected + x[i % 7] * np.float32(i % 5))
    spec = compiled(k)
    for device, out in run_everywhere(spec, (1, 1, 1), {"x": x, "out": poisoned(1, np.float32)}).items():
        assert out["out"][0] == expected, device


def test_code_nested_too_deep_is_a_located_error():
    nested = "x[0] ** " * 450 + "x[1]"  # ** groups to the right: 450 levels without a parenthesis
    k = _generated("nested", f"def nested(x: Buffer[f32, readonly], out: Buffer[f32]):\n    out[0] = {nested}\n")
    err = _error(k)
    assert "nests more than 400 levels deep" in err.message and err.line == 2


@kernel_source(local_size=64)
def nan_aware(x: Buffer[f32, readonly], out: Buffer[f32]):
    out[global_id()] = subgroup_min(x[global_id()])


def test_subgroup_min_leaves_nans_out():
    x = np.arange(64, dtype=np.float32)
    x[::3] = np.nan
    x[8:16] = np.nan  # one of lavapipe's subgroups all NaN
    size = 8
    results = run_everywhere(compiled(nan_aware), (1, 1, 1), {"x": x, "out": poisoned(64, np.float32)},
                             subgroup_size=size)
    groups = x.reshape(-1, size)
    want = np.repeat([g[~np.isnan(g)].min() if (~np.isnan(g)).any() else np.nan for g in groups], size)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"], want.astype(np.float32), err_msg=str(device))
