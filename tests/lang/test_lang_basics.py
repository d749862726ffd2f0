"""The language's scalar kernels on the reference executor and lavapipe, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

import hydroplane
from hydroplane.lang import (
    Buffer,
    abs_,
    barrier,
    bitcast,
    constexpr,
    exp,
    f16,
    f32,
    fma,
    global_id,
    kernel_source,
    local_index,
    maximum,
    minimum,
    readonly,
    s8,
    s32,
    select,
    shared_array,
    sqrt,
    u8,
    u32,
)
from hydroplane.spirv import decode, types

pytestmark = pytest.mark.vulkan


@kernel_source(local_size=64)
def vector_add_f32(a: Buffer[f32, readonly], b: Buffer[f32, readonly], c: Buffer[f32], n: s32):
    i = global_id()
    if i < n:
        c[i] = a[i] + b[i]


@kernel_source(local_size=32)
def vector_add_typed(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f16], n: s32,
                     SCALE: constexpr = 2.0):
    i = global_id()
    if i < n:
        c[i] = a[i] * SCALE + b[i]  # a float literal takes the operand's type: f16, never f64


@pytest.mark.parametrize("n", [1, 300])
def test_vector_add_f32(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(320).astype(np.float32), rng.standard_normal(320).astype(np.float32)
    spec = compiled(vector_add_f32)
    results = run_everywhere(spec, (-(-n // 64), 1, 1), {"a": a, "b": b, "c": poisoned(320, np.float32)}, {"n": n})
    for device, out in results.items():
        np.testing.assert_array_equal(out["c"][:n], a[:n] + b[:n], err_msg=str(device))
        assert (out["c"][n:] == poisoned(1, np.float32)[0]).all(), device  # nothing written past n


def test_vector_add_f16_constexpr_scale():
    rng = np.random.default_rng(5)
    n = 100
    a, b = (rng.integers(-64, 64, n) / 8).astype(np.float16), (rng.integers(-64, 64, n) / 8).astype(np.float16)
    spec = compiled(vector_add_typed, SCALE=0.5)
    assert "OpTypeFloat 64" not in spec.asm()
    results = run_everywhere(spec, (4, 1, 1), {"a": a, "b": b, "c": poisoned(n, np.float16)}, {"n": n})
    for device, out in results.items():
        np.testing.assert_array_equal(out["c"], (a * np.float16(0.5) + b).astype(np.float16), err_msg=str(device))


@kernel_source(local_size=64)
def integer_ops(x: Buffer[s32, readonly], y: Buffer[s32, readonly], out: Buffer[s32], ux: Buffer[u32]):
    i = global_id()
    a = x[i]
    b = y[i]
    k = i * 16
    out[k + 0] = a + b
    out[k + 1] = a - b
    out[k + 2] = a * b
    out[k + 3] = a // b  # truncates toward zero (C), like Triton
    out[k + 4] = a % b
    out[k + 5] = a & b
    out[k + 6] = a | b
    out[k + 7] = a ^ b
    out[k + 8] = a << 3
    out[k + 9] = a >> 2
    out[k + 10] = -a
    out[k + 11] = select(a < b, 1, 0) + select(a == b, 10, 0) + select(a >= b, 100, 0)
    out[k + 12] = minimum(a, b) + maximum(a, b) * 2 + abs_(a)
    out[k + 13] = ~a
    out[k + 14] = s32(s8(a))  # truncate to 8 bits, sign-extend back
    out[k + 15] = s32(u8(a))  # truncate to 8 bits, zero-extend back
    u = bitcast(a, u32)
    ux[i * 2] = u >> 28
    ux[i * 2 + 1] = u // 7 + u32(b & 255)


def test_integer_operators():
    rng = np.random.default_rng(11)
    n = 128
    x = rng.integers(-2000, 2000, n).astype(np.int32)
    y = rng.integers(1, 50, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    spec = compiled(integer_ops)
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "y": y, "out": poisoned(n * 16, np.int32),
                                               "ux": poisoned(n * 2, np.uint32)})
    trunc_div = (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)
    expected = np.stack([
        x + y, x - y, x * y, trunc_div, x - trunc_div * y, x & y, x | y, x ^ y, x << 3, x >> 2, -x,
        (x < y) * 1 + (x == y) * 10 + (x >= y) * 100, np.minimum(x, y) + np.maximum(x, y) * 2 + np.abs(x), ~x,
        x.astype(np.int8).astype(np.int32), x.astype(np.uint8).astype(np.int32)], axis=1).astype(np.int32)
    u = x.view(np.uint32)
    expected_u = np.stack([u >> 28, u // 7 + (y & 255).astype(np.uint32)], axis=1).astype(np.uint32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(n, 16), expected, err_msg=str(device))
        np.testing.assert_array_equal(out["ux"].reshape(n, 2), expected_u, err_msg=str(device))


@kernel_source(local_size=32)
def float_ops(x: Buffer[f32, readonly], h: Buffer[f16, readonly], out: Buffer[f32], hout: Buffer[f16]):
    i = global_id()
    a = x[i]
    k = i * 8
    out[k + 0] = a * a - 0.5 * a
    out[k + 1] = a / 3.0
    out[k + 2] = fma(a, 2.0, 1.0)
    out[k + 3] = f32(s32(a * 10.0))  # toward zero
    out[k + 4] = f32(h[i]) + 1.0
    out[k + 5] = sqrt(abs_(a))
    out[k + 6] = exp(minimum(a, 2.0))
    out[k + 7] = select(a > 0.0, a, -a) if a != 0.0 else 42.0
    hout[i] = h[i] * f16(a) + 1.5


def test_float_operators_and_conversions():
    rng = np.random.default_rng(3)
    n = 64
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[5] = 0.0
    h = (rng.integers(-50, 50, n) / 4).astype(np.float16)
    spec = compiled(float_ops)
    assert "OpTypeFloat 64" not in spec.asm()
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "h": h, "out": poisoned(n * 8, np.float32),
                                               "hout": poisoned(n, np.float16)})
    exact = np.stack([x * x - np.float32(0.5) * x, x / np.float32(3), x * 2 + 1, np.trunc(x * 10),
                      h.astype(np.float32) + 1], axis=1)
    for device, out in results.items():
        got = out["out"].reshape(n, 8)
        np.testing.assert_array_equal(got[:, :5], exact.astype(np.float32), err_msg=str(device))
        np.testing.assert_allclose(got[:, 5], np.sqrt(np.abs(x)), rtol=1e-6, err_msg=str(device))
        np.testing.assert_allclose(got[:, 6], np.exp(np.minimum(x, 2)), rtol=1e-5, err_msg=str(device))
        np.testing.assert_array_equal(got[:, 7], np.where(x != 0, np.abs(x), 42), err_msg=str(device))
        np.testing.assert_array_equal(out["hout"], h * x.astype(np.float16) + np.float16(1.5), err_msg=str(device))


def test_spirv_and_asm_are_cached_per_specialization():
    first = vector_add_typed.spirv(SCALE=3.0)
    assert vector_add_typed.spirv(SCALE=3.0) is first
    other = vector_add_typed.spirv(SCALE=0.25)
    assert other is not first and list(other) != list(first)
    text = vector_add_typed.asm(SCALE=3.0)
    assert "OpLine" in text and "test_lang_basics.py" in text and "OpFMul %half" in text


def test_shared_arrays_are_sized_to_16_byte_multiples():
    """Each shared array's byte size is a multiple of 16, so every Workgroup variable starts 16-byte aligned
    whatever order a driver places them in: the H200's driver loaded cooperative matrices from misaligned
    shared tiles (a 2-byte array declared beside them) as shifted garbage, which ref and lavapipe do not show."""
    @hydroplane.kernel(local_size=32)
    def odd_sizes(x: Buffer[f16, readonly], out: Buffer[f16]):
        one = shared_array(f16, 1)
        three = shared_array(f32, 3)
        tile = shared_array(f16, 256)
        i = local_index()
        if i == 0:
            one[0] = x[0]
            three[2] = f32(x[1])
        tile[i] = x[i]
        barrier()
        out[i] = tile[31 - i] + one[0] + f16(three[2])

    table = types.read_types(decode(odd_sizes.spirv()))
    workgroup = [table[i.result_type] for i in decode(odd_sizes.spirv()).instructions
                 if i.opcode == types.Op.Variable and i.operands[0].value == types.StorageClass.Workgroup]
    sizes = sorted(types.size(t.pointee, "scalar") for t in workgroup)
    assert sizes and all(s % 16 == 0 for s in sizes), sizes
    x = np.random.default_rng().integers(-8, 8, 32).astype(np.float16)
    for device in ("ref", 0):
        out = np.full(32, np.nan, np.float16)
        odd_sizes[(1,)](x, out, device=device)
        np.testing.assert_array_equal(out, x[::-1] + x[0] + x[1])
