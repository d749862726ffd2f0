"""Compile errors: one CompilationError with the message, file:line:col, the source line and a caret."""

from __future__ import annotations

import inspect
import math

import pytest
from lang_helpers import compiled

from hydroplane.lang import (
    Buffer,
    CompilationError,
    constexpr,
    coop,
    f16,
    f32,
    func,
    global_id,
    kernel_source,
    local_array,
    readonly,
    s32,
    sqrt,
    static_range,
)


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _compile_error(k, **constexprs) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        k.compile(**constexprs)
    return info.value


@kernel_source
def mixes_types(a: Buffer[f16, readonly], out: Buffer[f32]):
    i = global_id()
    out[i] = a[i] + out[i]


def test_type_error_points_at_the_operator():
    err = _compile_error(mixes_types)
    assert "f16 + f32: the operand types differ" in err.message and "convert one explicitly" in err.message
    line = _line_of(mixes_types.fn, "out[i] = a[i] + out[i]")
    assert (err.file, err.line) == (__file__, line)
    text = str(err).splitlines()
    assert text[0].startswith(f"{__file__}:{line}:{err.col}: f16 + f32")
    assert text[1].strip() == "out[i] = a[i] + out[i]"
    assert text[2].index("^") - 4 == err.col - 1  # the caret under the column (4: the indent of the listing)
    assert text[1][err.col - 1 + 4:].startswith("a[i] + out[i]")


@kernel_source
def uses_a_comprehension(out: Buffer[f32]):
    values = [x for x in range(4)]
    out[0] = values[0]


def test_unknown_construct_is_named():
    err = _compile_error(uses_a_comprehension)
    assert err.message.startswith("unsupported Python construct: ListComp")
    assert err.line == _line_of(uses_a_comprehension.fn, "values = [x for x")
    assert str(err).splitlines()[1].strip().startswith("values = [")


@kernel_source
def lambda_kernel(out: Buffer[f32]):
    f = lambda v: v  # noqa: E731
    out[0] = f(1.0)


def test_lambda_is_named():
    assert _compile_error(lambda_kernel).message.startswith("unsupported Python construct: Lambda")


@kernel_source
def writes_readonly(a: Buffer[f32, readonly]):
    a[global_id()] = 1.0


def test_store_into_readonly_buffer():
    err = _compile_error(writes_readonly)
    assert "read-only" in err.message and err.line == _line_of(writes_readonly.fn, "a[global_id()] = 1.0")


@kernel_source
def float_literal_with_int(out: Buffer[s32]):
    i = global_id()
    out[i] = i * 0.5


def test_float_literal_does_not_promote_an_int():
    assert "a float literal * s32" in _compile_error(float_literal_with_int).message


@kernel_source
def int_condition(out: Buffer[s32]):
    i = global_id()
    if i:
        out[i] = 1


def test_conditions_are_bools():
    assert "an if condition must be a bool" in _compile_error(int_condition).message


@kernel_source(local_size=32)
def bad_shape(a: Buffer[f16, readonly], c: Buffer[f32]):
    ta = coop.load(coop.Matrix[f16, 8, 16, coop.A], a, 0, 16)
    tb = coop.load(coop.Matrix[f16, 8, 8, coop.B], a, 0, 8)
    acc = coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 0.0)
    acc = coop.mul_add(ta, tb, acc)
    coop.store(acc, c, 0, 8)


def test_bad_matrix_shape():
    err = _compile_error(bad_shape)
    assert err.message.startswith("bad matrix shape for mul_add: a 8x16, b 8x8, c 8x8")
    assert err.line == _line_of(bad_shape.fn, "acc = coop.mul_add(ta, tb, acc)")


@kernel_source(local_size=32)
def zero_rows(c: Buffer[f32]):
    acc = coop.fill(coop.Matrix[f32, 0, 8, coop.Accumulator], 0.0)
    coop.store(acc, c, 0, 8)


def test_bad_matrix_type():
    err = _compile_error(zero_rows)
    assert "bad matrix shape: rows must be a positive constexpr int, not 0" in err.message
    assert "^" in str(err)


@kernel_source
def missing_annotation(a, out: Buffer[f32]):
    out[0] = 1.0


def test_parameter_without_annotation_points_at_def():
    err = _compile_error(missing_annotation)
    assert "parameter a needs an annotation" in err.message
    assert err.line == _line_of(missing_annotation.fn, "def missing_annotation")


def test_valid_module_after_errors_elsewhere():
    @kernel_source
    def fine(out: Buffer[f32]):
        out[global_id()] = 2.0

    compiled(fine)


@func
def recursive(x):
    return recursive(x)


@kernel_source
def calls_recursive(out: Buffer[f32]):
    out[0] = recursive(1.0)


@kernel_source
def assigns_constexpr(out: Buffer[f32], N: constexpr):
    N = 3
    out[0] = f32(N)


@kernel_source
def breaks_unrolled(out: Buffer[f32]):
    for _i in static_range(2):
        break


@kernel_source
def slices(out: Buffer[f32]):
    out[0:2] = 1.0


@kernel_source
def undefined(out: Buffer[f32]):
    out[0] = not_defined_anywhere  # noqa: F821 -- the error under test


@kernel_source
def plain_python_on_values(out: Buffer[f32]):
    out[0] = math.sqrt(out[1])


@kernel_source(local_size=32)
def indexes_matrix_array(out: Buffer[f32]):
    acc = local_array(coop.Matrix[f32, 8, 8, coop.Accumulator], 2)
    for t in range(2):
        acc[t] = coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 1.0)


@func
def returns_matrices(tiles):
    return tiles


@kernel_source(local_size=32)
def returns_matrix_array(out: Buffer[f32]):
    acc = local_array(coop.Matrix[f32, 8, 8, coop.Accumulator], 2)
    acc[0] = coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 1.0)
    acc[1] = coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 2.0)
    returns_matrices(acc)


@func
def indexes_matrix_parameter(tiles, i):
    return tiles[i]


@kernel_source(local_size=32)
def passes_matrix_array(out: Buffer[f32], i: s32):
    acc = local_array(coop.Matrix[f32, 8, 8, coop.Accumulator], 2)
    acc[0] = coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 1.0)
    acc[1] = indexes_matrix_parameter(acc, i)


@kernel_source
def sqrt_of_two(out: Buffer[f32]):
    out[0] = sqrt(out[1], out[2])


@pytest.mark.parametrize("k,constexprs,message,line_text", [
    (sqrt_of_two, {}, "sqrt takes 1 argument, not 2", "out[0] = sqrt(out[1], out[2])"),
    (indexes_matrix_array, {}, "an array of matrices is indexed by constexpr ints", "acc[t] = coop.fill"),
    (calls_recursive, {}, "recursive calls itself: recursion is not supported", "return recursive(x)"),
    (returns_matrix_array, {}, "a helper cannot return a local array", "return tiles"),
    (passes_matrix_array, {}, "an array of matrices is indexed by constexpr ints", "return tiles[i]"),
    (assigns_constexpr, {"N": 2}, "N is a constexpr parameter; it cannot be assigned", "N = 3"),
    (breaks_unrolled, {}, "break in an unrolled (static_range or tuple) loop is not supported", "break"),
    (slices, {}, "unsupported Python construct: Slice", "out[0:2] = 1.0"),
    (undefined, {}, "name 'not_defined_anywhere' is not defined", "out[0] = not_defined_anywhere"),
    (plain_python_on_values, {}, "sqrt() is not a kernel builtin or @func helper", "math.sqrt(out[1])"),
], ids=lambda x: getattr(x, "name", None) if isinstance(x, type(slices)) else None)
def test_more_errors(k, constexprs, message, line_text):
    err = _compile_error(k, **constexprs)
    assert err.message.startswith(message)
    assert line_text in err.source_line
    assert err.file == __file__
