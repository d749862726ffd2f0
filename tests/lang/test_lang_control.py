"""Control flow, helper functions, tuples and vectors on the reference executor and lavapipe."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane.lang import (
    Buffer,
    constexpr,
    dot,
    f32,
    func,
    global_id,
    kernel_source,
    local_array,
    readonly,
    s32,
    static_range,
    u32,
    vec,
)

pytestmark = pytest.mark.vulkan


@kernel_source(local_size=32)
def control_flow(x: Buffer[s32, readonly], out: Buffer[s32], n: s32):
    i = global_id()
    if i >= n:
        return  # early return
    v = x[i]
    # if / elif / else
    if v < 0:
        kind = 1
    elif v == 0:
        kind = 2
    else:
        kind = 3
    # while with break and continue: sum of the odd numbers below |v|, stopping past 40
    total = 0
    k = 0
    limit = v if v > 0 else -v
    while True:
        k += 1
        if k >= limit:
            break
        if k % 2 == 0:
            continue
        total += k
        if total > 40:
            break
    # range with a step, and a nested loop with a data-dependent exit
    steps = 0
    for j in range(10, 0, -3):
        for m in range(j):
            if m * m > limit:
                break
            steps += 1
    # short-circuit: x[i + 1] is only read when i + 1 < n
    nxt = 0
    if i + 1 < n and x[i + 1] > v:
        nxt = 1
    if not (v > 5 or v < -5):
        nxt += 10
    # static unrolling and a tuple swap
    a, b = 1, 2
    for u in static_range(3):
        a, b = b, a + b * u
    out[i * 6 + 0] = kind
    out[i * 6 + 1] = total
    out[i * 6 + 2] = steps
    out[i * 6 + 3] = nxt
    out[i * 6 + 4] = a * 100 + b
    out[i * 6 + 5] = k


def _control_reference(x: np.ndarray, n: int) -> np.ndarray:
    rows = []
    for i in range(n):
        v = int(x[i])
        kind = 1 if v < 0 else 2 if v == 0 else 3
        total = k = 0
        limit = abs(v)
        while True:
            k += 1
            if k >= limit:
                break
            if k % 2 == 0:
                continue
            total += k
            if total > 40:
                break
        steps = 0
        for j in range(10, 0, -3):
            for m in range(j):
                if m * m > limit:
                    break
                steps += 1
        nxt = 1 if i + 1 < n and x[i + 1] > v else 0
        if not (v > 5 or v < -5):
            nxt += 10
        a, b = 1, 2
        for u in range(3):
            a, b = b, a + b * u
        rows.append([kind, total, steps, nxt, a * 100 + b, k])
    return np.array(rows, np.int32)


def test_control_flow():
    rng = np.random.default_rng(21)
    n = 50
    x = rng.integers(-30, 30, 64).astype(np.int32)
    x[:3] = [0, 1, -1]
    spec = compiled(control_flow)
    out0 = poisoned(64 * 6, np.int32)
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "out": out0}, {"n": n})
    for device, out in results.items():
        got = out["out"].reshape(64, 6)
        np.testing.assert_array_equal(got[:n], _control_reference(x, n), err_msg=str(device))
        assert (got[n:] == out0[0]).all(), device  # returned early


@func
def clamp_to(v, lo, hi):
    if v < lo:
        return lo  # early return from a helper
    if v > hi:
        return hi
    return v


@func
def divmod_(a, b):
    return a // b, a % b  # a tuple result (a struct in SPIR-V)


@func
def poly(x, COEFFS: constexpr):
    acc = x * 0.0
    for c in COEFFS:  # unrolled over a compile-time tuple
        acc = acc * x + c
    return acc


@func
def first_power_of_two_above(x):
    p = 1
    while True:  # no break: the loop only ends by returning
        if p > x:
            return p
        p *= 2


@func
def store_twice(buffer, i, value):
    buffer[i * 2] = value  # a buffer argument is bound at compile time
    buffer[i * 2 + 1] = clamp_to(value, -3, 3)  # a helper calling a helper


@kernel_source(local_size=32)
def helpers(x: Buffer[s32, readonly], y: Buffer[f32, readonly], ints: Buffer[s32], floats: Buffer[f32]):
    i = global_id()
    q, r = divmod_(x[i], 7)
    ints[i * 4] = clamp_to(x[i], -10, 10)
    ints[i * 4 + 1] = q * 10 + r
    ints[i * 4 + 2] = clamp_to(q, 0, 1)
    ints[i * 4 + 3] = first_power_of_two_above(x[i])
    store_twice(ints, i * 2 + 1, r)
    floats[i] = poly(y[i], (2.0, -1.0, 0.5))


def test_helper_functions():
    rng = np.random.default_rng(8)
    n = 32
    x = rng.integers(-40, 40, n).astype(np.int32)
    y = (rng.integers(-16, 16, n) / 4).astype(np.float32)
    spec = compiled(helpers)
    text = spec.asm()
    assert text.count("OpFunctionCall") >= 5 and text.count("OpFunction ") >= 5  # helpers stay functions
    results = run_everywhere(spec, (1, 1, 1), {"x": x, "y": y, "ints": poisoned(n * 4, np.int32),
                                               "floats": poisoned(n, np.float32)})
    q = np.trunc(x / 7).astype(np.int32)
    r = x - q * 7
    powers = np.array([next(1 << e for e in range(8) if 1 << e > v) for v in x])
    expected = np.stack([np.clip(x, -10, 10), q * 10 + r, np.clip(q, 0, 1), powers], axis=1).ravel()
    for i in range(n):  # store_twice(ints, i * 2 + 1, r) writes slots 4i + 2 and 4i + 3
        expected[4 * i + 2], expected[4 * i + 3] = r[i], np.clip(r[i], -3, 3)
    for device, out in results.items():
        np.testing.assert_array_equal(out["ints"], expected.astype(np.int32), err_msg=str(device))
        np.testing.assert_array_equal(out["floats"], ((2 * y - 1) * y + 0.5).astype(np.float32), err_msg=str(device))


@kernel_source(local_size=32)
def per_invocation_histogram(x: Buffer[s32, readonly], out: Buffer[s32], BINS: constexpr):
    counts = local_array(s32, BINS)
    for j in static_range(BINS):
        counts[j] = 0
    i = global_id()
    for j in range(8):
        counts[x[i * 8 + j] % BINS] += 1  # a run-time index into a Function array
    for j in range(BINS):
        out[i * BINS + j] = counts[j]


def test_local_arrays():
    rng = np.random.default_rng(15)
    n, bins = 32, 5
    x = rng.integers(0, 100, n * 8).astype(np.int32)
    spec = compiled(per_invocation_histogram, BINS=bins)
    results = run_everywhere(spec, (1, 1, 1), {"x": x, "out": poisoned(n * bins, np.int32)})
    expected = np.stack([np.bincount(row % bins, minlength=bins) for row in x.reshape(n, 8)]).astype(np.int32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(n, bins), expected, err_msg=str(device))


@func
def fill_squares(values, n: constexpr, scale):
    """Writes into the caller's local array (passed by reference)."""
    for j in static_range(n):
        values[j] = (j + 1) * scale


@func
def total(values, n: constexpr):
    s = values[0]
    for j in static_range(1, n):
        s += values[j]
    return s


@kernel_source(local_size=32)
def array_by_reference(x: Buffer[s32, readonly], out: Buffer[s32], N: constexpr):
    values = local_array(s32, N)
    i = global_id()
    fill_squares(values, N, x[i])
    values[i % N] += 100  # the caller's own write, between the helpers'
    out[i] = total(values, N)


def test_local_array_passes_to_helpers_by_reference():
    """A local array of numbers handed to @func helpers: they write and read the caller's variable."""
    rng = np.random.default_rng(21)
    n = 32
    x = rng.integers(-50, 50, n).astype(np.int32)
    spec = compiled(array_by_reference, N=5)
    results = run_everywhere(spec, (1, 1, 1), {"x": x, "out": poisoned(n, np.int32)})
    expected = (x * 15 + 100).astype(np.int32)  # (1 + 2 + 3 + 4 + 5) * x, + 100 once
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"], expected, err_msg=str(device))


@kernel_source(local_size=16)
def vectors(x: Buffer[f32, readonly], out: Buffer[f32], counts: Buffer[u32]):
    i = global_id()
    v = vec(x[i * 3], x[i * 3 + 1], x[i * 3 + 2])
    w = v * 2.0 + vec(f32(1), 0.0, -1.0)
    d = dot(v, w)
    j = i % 3
    out[i * 4] = d
    out[i * 4 + 1] = w[j]  # a run-time index
    w[0] = w[1] - v[2]  # an element store into a vector variable
    out[i * 4 + 2] = w[0]
    out[i * 4 + 3] = f32(len(v))
    counts[i] = u32(j)


def test_vectors():
    rng = np.random.default_rng(4)
    n = 16
    x = (rng.integers(-8, 8, n * 3) / 2).astype(np.float32)
    spec = compiled(vectors)
    results = run_everywhere(spec, (1, 1, 1), {"x": x, "out": poisoned(n * 4, np.float32),
                                               "counts": poisoned(n, np.uint32)})
    v = x.reshape(n, 3)
    w = v * 2 + np.array([1, 0, -1], np.float32)
    j = np.arange(n) % 3
    expected = np.stack([(v * w).sum(axis=1), w[np.arange(n), j], w[:, 1] - v[:, 2], np.full(n, 3)], axis=1)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(n, 4), expected.astype(np.float32), err_msg=str(device))
        np.testing.assert_array_equal(out["counts"], j.astype(np.uint32), err_msg=str(device))
