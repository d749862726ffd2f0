"""Every math, id, atomic and subgroup builtin not covered elsewhere, on ref and lavapipe against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane import vk
from hydroplane.lang import (
    Buffer,
    CompilationError,
    atan,
    atan2,
    atomic_and,
    atomic_exchange,
    atomic_or,
    atomic_sub,
    atomic_xor,
    ceil,
    clamp,
    constexpr,
    cos,
    exp2,
    f32,
    floor,
    fract,
    global_id,
    kernel_source,
    lane_id,
    local_id,
    local_index,
    log,
    log2,
    mix,
    num_subgroups,
    num_workgroups,
    pow_,
    readonly,
    round_even,
    rsqrt,
    s32,
    sign,
    sin,
    static_assert,
    subgroup_all,
    subgroup_and,
    subgroup_any,
    subgroup_broadcast_first,
    subgroup_id,
    subgroup_min,
    subgroup_mul,
    subgroup_or,
    subgroup_shuffle,
    subgroup_shuffle_down,
    subgroup_shuffle_up,
    subgroup_size,
    subgroup_xor,
    tan,
    tanh,
    trunc,
    u32,
    workgroup_id,
    writeonly,
)

pytestmark = pytest.mark.vulkan
FLOAT_MATH = 17


@kernel_source(local_size=32)
def float_math(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32, writeonly]):
    i = global_id()
    a = x[i]
    b = y[i]
    k = i * 17
    out[k + 0] = sin(a)
    out[k + 1] = cos(a)
    out[k + 2] = tan(a * 0.25)
    out[k + 3] = tanh(a)
    out[k + 4] = atan(a)
    out[k + 5] = atan2(a, b)
    out[k + 6] = log(b)
    out[k + 7] = log2(b)
    out[k + 8] = exp2(a)
    out[k + 9] = rsqrt(b)
    out[k + 10] = pow_(b, 1.5)
    out[k + 11] = floor(a) + ceil(a) * 10.0
    out[k + 12] = trunc(a) + round_even(a) * 10.0
    out[k + 13] = fract(a)
    out[k + 14] = clamp(a, -1.0, 1.0)
    out[k + 15] = sign(a) + mix(a, b, 0.25)
    out[k + 16] = b ** 2.0


def test_float_math():
    rng = np.random.default_rng(41)
    n = 64
    x = (rng.integers(-40, 40, n) / 8).astype(np.float32)
    x[:4] = [0.5, -0.5, 1.5, 2.5]  # ties of round-to-even
    y = (rng.integers(1, 64, n) / 8).astype(np.float32)
    spec = compiled(float_math)
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "y": y, "out": poisoned(n * FLOAT_MATH, np.float32)})
    expected = np.stack([
        np.sin(x), np.cos(x), np.tan(x * 0.25), np.tanh(x), np.arctan(x), np.arctan2(x, y), np.log(y), np.log2(y),
        np.exp2(x), 1 / np.sqrt(y), y ** 1.5, np.floor(x) + np.ceil(x) * 10, np.trunc(x) + np.round(x) * 10,
        x - np.floor(x), np.clip(x, -1, 1), np.sign(x) + (x * 0.75 + y * 0.25), y * y], axis=1)
    exact = [11, 12, 13, 14, 16]
    for device, out in results.items():
        got = out["out"].reshape(n, FLOAT_MATH)
        np.testing.assert_array_equal(got[:, exact], expected[:, exact].astype(np.float32), err_msg=str(device))
        np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-5, err_msg=str(device))


@kernel_source(local_size=(4, 2, 1))
def ids(out: Buffer[s32], n: s32):
    i = local_index() + (workgroup_id(0) + workgroup_id(1) * num_workgroups(0)) * 8
    if i < n:
        out[i * 6] = local_id(0) + local_id(1) * 10
        out[i * 6 + 1] = workgroup_id(0) * 10 + workgroup_id(1)
        out[i * 6 + 2] = num_workgroups(0) * 10 + num_workgroups(1)
        out[i * 6 + 3] = global_id(0) * 100 + global_id(1)
        out[i * 6 + 4] = subgroup_id() * 100 + num_subgroups()
        out[i * 6 + 5] = local_index()


def test_ids():
    n = 3 * 2 * 8
    spec = compiled(ids)
    results = run_everywhere(spec, (3, 2, 1), {"out": poisoned(n * 6, np.int32)}, {"n": n})
    rows = []
    for wy in range(2):
        for wx in range(3):
            for ly in range(2):
                for lx in range(4):
                    rows.append([lx + ly * 10, wx * 10 + wy, 32, (wx * 4 + lx) * 100 + wy * 2 + ly, -1, ly * 4 + lx])
    expected = np.array(rows, np.int32)
    for device, out in results.items():
        got = out["out"].reshape(n, 6)
        subgroups = got[:, 4].copy()
        got[:, 4] = -1  # the subgroup split of 8 invocations is the device's: checked apart
        np.testing.assert_array_equal(got, expected, err_msg=str(device))
        size = subgroups % 100
        assert (size == size[0]).all() and size[0] == -(-8 // min(8, vk.devices()[0].subgroup_size)), device
        assert ((subgroups // 100) < size).all(), device


@kernel_source(local_size=64)
def more_atomics(values: Buffer[u32, readonly], acc: Buffer[u32], swapped: Buffer[u32], n: s32):
    i = global_id()
    if i < n:
        v = values[i]
        atomic_sub(acc, 0, v)
        atomic_and(acc, 1, v | u32(0xFFFF0000))
        atomic_or(acc, 2, v & u32(0xFF))
        atomic_xor(acc, 3, v)
        old = atomic_exchange(acc, 4, v)
        swapped[i] = u32(old == old)  # every invocation gets some earlier value back


def test_more_atomics():
    rng = np.random.default_rng(42)
    n = 500
    values = rng.integers(0, 2**16, 512).astype(np.uint32)
    spec = compiled(more_atomics)
    start = np.array([10**9, 0xFFFFFFFF, 0, 0x12345678, 0], np.uint32)
    results = run_everywhere(spec, (8, 1, 1), {"values": values, "acc": start, "swapped": np.zeros(512, np.uint32)},
                             {"n": n})
    v = values[:n]
    and_all = np.bitwise_and.reduce(v | np.uint32(0xFFFF0000)) & start[1]
    xor_all = np.bitwise_xor.reduce(v) ^ start[3]
    for device, out in results.items():
        acc = out["acc"]
        assert acc[0] == np.uint32((int(start[0]) - int(v.astype(np.int64).sum())) % 2**32), device
        assert acc[1] == and_all and acc[2] == np.bitwise_or.reduce(v & 0xFF) and acc[3] == xor_all, device
        assert acc[4] in set(v.tolist()), device
        assert (out["swapped"][:n] == 1).all(), device


@kernel_source(local_size=64)
def more_subgroup(x: Buffer[s32, readonly], out: Buffer[s32]):
    i = global_id()
    v = x[i]
    k = i * 9
    out[k + 0] = subgroup_mul(v % 3 + 1)
    out[k + 1] = subgroup_min(v)
    out[k + 2] = subgroup_and(v) + subgroup_or(v) * 3 + subgroup_xor(v) * 7
    out[k + 3] = subgroup_shuffle(v, u32(subgroup_size() - 1) - u32(lane_id()))
    out[k + 4] = subgroup_shuffle_up(v, u32(1)) if lane_id() >= 1 else -1
    out[k + 5] = subgroup_shuffle_down(v, u32(1)) if lane_id() + 1 < subgroup_size() else -1
    out[k + 6] = subgroup_broadcast_first(v)
    out[k + 7] = s32(subgroup_all(v > -100)) + s32(subgroup_any(v > 40)) * 10
    out[k + 8] = subgroup_size()


def test_more_subgroup_operations():
    rng = np.random.default_rng(43)
    n = 128
    x = rng.integers(-50, 50, n).astype(np.int32)
    spec = compiled(more_subgroup)
    size = vk.devices()[0].subgroup_size
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "out": poisoned(n * 9, np.int32)}, subgroup_size=size)
    g = x.reshape(-1, size)
    lanes = np.arange(size)
    up = np.where(lanes >= 1, g[:, (lanes - 1) % size], -1)
    down = np.where(lanes + 1 < size, g[:, (lanes + 1) % size], -1)
    per = lambda col: np.repeat(col, size)  # noqa: E731
    expected = np.stack([
        per(np.prod((np.fmod(g, 3) + 1).astype(np.int64), axis=1).astype(np.int32)), per(g.min(1)),
        per(np.bitwise_and.reduce(g, 1) + np.bitwise_or.reduce(g, 1) * 3 + np.bitwise_xor.reduce(g, 1) * 7),
        g[:, ::-1].ravel(), up.ravel(), down.ravel(), per(g[:, 0]),
        per((g > -100).all(1) * 1 + (g > 40).any(1) * 10), np.full(n, size)], axis=1).astype(np.int32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(n, 9), expected, err_msg=str(device))


@kernel_source
def asserts(out: Buffer[f32], BLOCK: constexpr):
    static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    out[global_id()] = 1.0


def test_static_assert():
    compiled(asserts, BLOCK=64)
    with pytest.raises(CompilationError, match="static_assert failed: BLOCK must be a multiple of 32"):
        asserts.compile(BLOCK=48)
