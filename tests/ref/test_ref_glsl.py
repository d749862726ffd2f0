"""GLSL kernels compiled by glslangValidator, run on the reference executor, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl, run

HEADER = "#version 450\n#extension GL_EXT_shader_explicit_arithmetic_types : require\n"


def test_saxpy_with_bounds_check(rng=np.random.default_rng(1)):
    words = glsl(HEADER + """
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform P { float a; uint n; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
}""")
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    push = np.array([2.5], np.float32).tobytes() + np.array([n], np.uint32).tobytes()
    from hydroplane.ref import Executor

    ex = Executor()
    bx, by = ex.buffer(x), ex.buffer(y)
    ex.dispatch(ex.kernel(words), (16, 1, 1), {0: bx, 1: by}, push)
    got = ex.read(by, np.float32)
    np.testing.assert_array_equal(got, np.float32(2.5) * x + y)


def test_loops_break_continue_switch_and_calls():
    words = glsl(HEADER + """
layout(local_size_x = 32, local_size_y = 2) in;
layout(set = 0, binding = 0) readonly buffer A { int a[]; };
layout(set = 0, binding = 1) writeonly buffer B { int b[]; };
int classify(int v) {
    if (v < -50) return -1;
    switch (v & 3) {
        case 0: return 10;
        case 1: v *= 3; break;
        case 2:
        case 3: v -= 7; break;
    }
    return v;
}
void main() {
    uint i = gl_LocalInvocationIndex + gl_WorkGroupID.x * 64u;
    int acc = 0;
    int v = a[i];
    for (int k = 0; k < 40; k++) {
        if (k == v % 7) continue;
        if (k * k > (v & 255)) break;
        acc += classify(v + k);
        int j = 0;
        while (j < (k & 3)) { acc ^= j << k; j++; }
    }
    b[i] = (v > 0 && (v & 1) == 1) || acc < 0 ? acc : -acc;
}""")
    rng = np.random.default_rng(2)
    a = rng.integers(-100, 300, 128).astype(np.int32)
    out = run(words, {0: a}, {1: ((128,), np.int32)}, grid=(2, 1, 1))[1]

    def classify(v):
        if v < -50:
            return -1
        r = v & 3
        if r == 0:
            return 10
        return v * 3 if r == 1 else v - 7

    want = []
    for v in a.tolist():
        acc = 0
        for k in range(40):
            if k == v % 7:  # glslang emits OpSMod: the sign of the divisor
                continue
            if k * k > (v & 255):
                break
            acc += classify(v + k)
            for j in range(k & 3):
                acc ^= j << k
        want.append(acc if (v > 0 and (v & 1) == 1) or acc < 0 else -acc)
    np.testing.assert_array_equal(out, np.array(want, np.int32))


def test_shared_memory_tree_reduction_with_barriers():
    words = glsl(HEADER + """
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
shared float s[128];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[gl_GlobalInvocationID.x];
    barrier();
    for (uint step = 64u; step > 0u; step >>= 1) {
        if (l < step) s[l] += s[l + step];
        barrier();
    }
    if (l == 0u) b[gl_WorkGroupID.x] = s[0];
}""")
    rng = np.random.default_rng(3)
    a = rng.standard_normal(128 * 3).astype(np.float32)
    out = run(words, {0: a}, {1: ((3,), np.float32)}, grid=(3, 1, 1))[1]
    want = a.reshape(3, 128).copy()
    step = 64
    while step:
        want[:, :step] += want[:, step:2 * step]
        step //= 2
    np.testing.assert_array_equal(out, want[:, 0])


@pytest.mark.parametrize("subgroup_size", [8, 16, 32, 64])
def test_subgroup_builtins_and_arithmetic(subgroup_size):
    words = glsl(HEADER + """
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_clustered : require
layout(local_size_x = 96) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) writeonly buffer B { uint b[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = a[i];
    uint base = i * 8u;
    b[base + 0u] = subgroupAdd(v);
    b[base + 1u] = subgroupExclusiveAdd(v);
    b[base + 2u] = subgroupMax(v);
    b[base + 3u] = subgroupClusteredAdd(v, 4u);
    b[base + 4u] = subgroupShuffleXor(v, 1u);
    b[base + 5u] = subgroupBallotBitCount(subgroupBallot((v & 1u) == 1u));
    b[base + 6u] = subgroupBroadcastFirst(v) + (subgroupAll(v < 1000u) ? 1u : 0u);
    b[base + 7u] = gl_SubgroupInvocationID + 100u * gl_SubgroupID + 10000u * gl_NumSubgroups;
}""")
    rng = np.random.default_rng(4)
    a = rng.integers(0, 1000, 96).astype(np.uint32)
    out = run(words, {0: a}, {1: ((96, 8), np.uint32)}, subgroup_size=subgroup_size)[1]
    s = subgroup_size
    groups = [a[g:g + s] for g in range(0, 96, s)]
    want = np.zeros((96, 8), np.uint64)
    for g, vals in enumerate(groups):
        n = len(vals)
        for j in range(n):
            i = g * s + j
            want[i, 0] = vals.sum()
            want[i, 1] = vals[:j].sum()
            want[i, 2] = vals.max()
            c = j // 4 * 4
            want[i, 3] = vals[c:c + 4].sum()
            want[i, 4] = vals[j ^ 1] if (j ^ 1) < n else 0
            want[i, 5] = int(((vals & 1) == 1).sum())
            want[i, 6] = vals[0] + 1
            want[i, 7] = j + 100 * g + 10000 * (-(-96 // s))
    np.testing.assert_array_equal(out, want.astype(np.uint32))


def test_spec_constants_and_local_size_id():
    words = glsl(HEADER + """
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SCALE = 3;
layout(constant_id = 2) const bool NEGATE = false;
const int DOUBLE_SCALE = SCALE * 2;
layout(set = 0, binding = 0) buffer B { int b[]; };
void main() {
    int v = int(gl_GlobalInvocationID.x) * DOUBLE_SCALE + int(gl_WorkGroupSize.x);
    b[gl_GlobalInvocationID.x] = NEGATE ? -v : v;
}""")
    out = run(words, {}, {0: ((48,), np.int32)}, grid=(3, 1, 1), spec={0: 16, 1: 5, 2: True})[0]
    np.testing.assert_array_equal(out, -(np.arange(48) * 10 + 16).astype(np.int32))


def test_atomics_on_buffer_and_shared():
    words = glsl(HEADER + """
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer H { uint hist[16]; uint total; int minv; };
shared uint local_count;
void main() {
    if (gl_LocalInvocationIndex == 0u) local_count = 0u;
    barrier();
    uint v = a[gl_GlobalInvocationID.x];
    atomicAdd(hist[v & 15u], 1u);
    atomicAdd(local_count, v);
    atomicMin(minv, int(v) - 500);
    barrier();
    if (gl_LocalInvocationIndex == 0u) atomicAdd(total, local_count);
}""")
    rng = np.random.default_rng(5)
    a = rng.integers(0, 1000, 256).astype(np.uint32)
    init = np.zeros(18, np.uint32)
    init[17] = np.int32(1 << 30).view(np.uint32)
    from hydroplane.ref import Executor

    ex = Executor()
    ba, bh = ex.buffer(a), ex.buffer(init)
    ex.dispatch(ex.kernel(words), (4, 1, 1), {0: ba, 1: bh})
    got = ex.read(bh, np.uint32)
    np.testing.assert_array_equal(got[:16], np.bincount(a & 15, minlength=16))
    assert got[16] == a.sum()
    assert got[17].view(np.int32) == int(a.min()) - 500


def test_integer_widths_wrap_and_signed_division():
    words = glsl(HEADER + """
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { int a[32]; int b[32]; };
layout(set = 0, binding = 1) writeonly buffer B { int q[32]; int r[32]; int w8[32]; uint sh[32]; int64_t m64[32]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    int x = a[i], y = b[i];
    q[i] = x / y;
    r[i] = x % y;
    w8[i] = int(int8_t(x) * int8_t(y));
    sh[i] = (uint(x) >> 3) ^ uint(x >> 5);
    m64[i] = int64_t(x) * int64_t(y) * int64_t(0x10001);
}""")
    rng = np.random.default_rng(6)
    x = rng.integers(-(2**31), 2**31, 32, dtype=np.int64).astype(np.int32)
    y = rng.integers(-1000, 1000, 32).astype(np.int32)
    y[y == 0] = 7
    a = np.concatenate([x, y])
    from hydroplane.ref import Executor

    ex = Executor()
    ba = ex.buffer(a)
    bb = ex.buffer(np.full(32 * 4 + 64, 0x5A5A5A5A, np.uint32))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ba, 1: bb})
    raw = ex.read(bb, np.uint8)
    q, r, w8, sh = (raw[k * 128:(k + 1) * 128].view(np.int32) for k in range(4))
    m64 = raw[512:512 + 256].view(np.int64)
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    want_q = np.trunc(x64 / y64).astype(np.int64)
    np.testing.assert_array_equal(q, want_q.astype(np.int32))
    np.testing.assert_array_equal(r, np.remainder(x64, y64).astype(np.int32))  # OpSMod
    np.testing.assert_array_equal(w8, (x.astype(np.int8) * y.astype(np.int8)).astype(np.int8).astype(np.int32))
    np.testing.assert_array_equal(sh.view(np.uint32), (x.view(np.uint32) >> 3) ^ (x >> 5).view(np.uint32))
    np.testing.assert_array_equal(m64, x64 * y64 * 0x10001)


def test_f16_arithmetic_rounds_once_and_glsl_std450():
    words = glsl(HEADER + """
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float16_t a[64]; float16_t b[64]; float f[64]; };
layout(set = 0, binding = 1) writeonly buffer B { float16_t s[64]; float16_t p[64]; float g[64]; float h[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    s[i] = a[i] + b[i];
    p[i] = a[i] * b[i];
    g[i] = clamp(floor(f[i]) + abs(f[i] - 0.5), -2.0, 2.0);
    h[i] = max(f[i], float(a[i])) - min(f[i], 0.25);
}""")
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(64) * 4).astype(np.float16)
    b = (rng.standard_normal(64) * 4).astype(np.float16)
    f = (rng.standard_normal(64) * 3).astype(np.float32)
    inp = np.concatenate([a.view(np.uint8), b.view(np.uint8), f.view(np.uint8)])
    from hydroplane.ref import Executor

    ex = Executor()
    bi, bo = ex.buffer(inp), ex.buffer(np.full(128 + 128 + 512, 0xFF, np.uint8))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: bi, 1: bo})
    raw = ex.read(bo, np.uint8)
    np.testing.assert_array_equal(raw[:128].view(np.float16), a + b)
    np.testing.assert_array_equal(raw[128:256].view(np.float16), a * b)
    np.testing.assert_array_equal(raw[256:512].view(np.float32),
                                  np.clip(np.floor(f) + np.abs(f - np.float32(0.5)), -2, 2))
    np.testing.assert_array_equal(raw[512:768].view(np.float32),
                                  np.maximum(f, a.astype(np.float32)) - np.minimum(f, np.float32(0.25)))


def test_struct_layout_vectors_and_matrices_std430():
    words = glsl(HEADER + """
layout(local_size_x = 8) in;
struct Item { vec3 pos; float w; mat2 m; };
layout(std430, set = 0, binding = 0) readonly buffer A { Item items[]; };
layout(std430, set = 0, binding = 1) writeonly buffer B { vec4 out_v[]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    Item it = items[i];
    vec2 t = it.m * it.pos.xy;
    out_v[i] = vec4(t, dot(it.pos, vec3(1.0, 2.0, 3.0)), it.w * length(it.pos));
}""")
    rng = np.random.default_rng(8)
    raw = rng.standard_normal((8, 8)).astype(np.float32)  # pos(3) w(1) m(2x2 columns)
    out = run(words, {0: raw}, {1: ((8, 4), np.float32)})[1]
    pos, w, m = raw[:, :3], raw[:, 3], raw[:, 4:].reshape(8, 2, 2)  # m[:, col, row]
    t = np.stack([m[:, 0, 0] * pos[:, 0] + m[:, 1, 0] * pos[:, 1], m[:, 0, 1] * pos[:, 0] + m[:, 1, 1] * pos[:, 1]], 1)
    np.testing.assert_allclose(out[:, :2], t, rtol=1e-6)
    np.testing.assert_allclose(out[:, 2], pos[:, 0] + 2 * pos[:, 1] + 3 * pos[:, 2], rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], w * np.sqrt((pos.astype(np.float64) ** 2).sum(1)), rtol=1e-6)


def test_buffer_device_address():
    words = glsl(HEADER + """
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 16) in;
layout(buffer_reference, std430) buffer Floats { float v[]; };
layout(set = 0, binding = 0) readonly buffer Ptrs { Floats src; Floats dst; };
void main() {
    uint i = gl_LocalInvocationIndex;
    dst.v[i] = src.v[i] * 2.0 + 1.0;
}""")
    from hydroplane.ref import Executor

    rng = np.random.default_rng(9)
    x = rng.standard_normal(16).astype(np.float32)
    ex = Executor()
    src, dst = ex.buffer(x), ex.buffer(np.full(16, np.nan, np.float32))
    ptrs = ex.buffer(np.array([src.address, dst.address], np.uint64))
    ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ptrs})
    np.testing.assert_array_equal(ex.read(dst, np.float32), x * np.float32(2) + np.float32(1))


DOT_AND_ROTATE = HEADER + """
#extension GL_EXT_integer_dot_product : require
#extension GL_KHR_shader_subgroup_rotate : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer A { i8vec4 x[32]; u8vec4 y[32]; uint px[32]; uint py[32]; int acc[32]; };
layout(set = 0, binding = 1) writeonly buffer B {
    int sdot[32]; uint udot[32]; int sudot[32]; int sat[32]; uint rot[32]; uint crot[32];
};
void main() {
    uint i = gl_LocalInvocationIndex;
    sdot[i] = dotPacked4x8EXT(int(px[i]), int(py[i]));
    udot[i] = dotEXT(u8vec4(x[i]), y[i]);
    sudot[i] = dotPacked4x8EXT(int(px[i]), py[i]);
    sat[i] = dotPacked4x8AccSatEXT(int(px[i]), int(py[i]), acc[i]);
    rot[i] = subgroupRotate(i * 3u + 1u, 5u);
    crot[i] = subgroupClusteredRotate(i * 7u, 3u, 4u);
}"""


def test_integer_dot_products_and_subgroup_rotate():
    words = glsl(DOT_AND_ROTATE)
    rng = np.random.default_rng(15)
    x = rng.integers(-128, 128, (32, 4)).astype(np.int8)
    y = rng.integers(0, 256, (32, 4)).astype(np.uint8)
    px = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    py = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    acc = rng.integers(-(2**31), 2**31, 32, dtype=np.int64).astype(np.int32)
    acc[:4] = [2**31 - 5, -(2**31) + 3, 2**31 - 1, -(2**31)]
    inp = np.concatenate([x.view(np.uint8).reshape(-1), y.reshape(-1), px.view(np.uint8), py.view(np.uint8),
                          acc.view(np.uint8)])
    out = run(words, {0: inp}, {1: ((6, 32), np.uint32)}, subgroup_size=8)[1]
    pxs = px.view(np.uint8).reshape(32, 4).view(np.int8).astype(np.int64)
    pyu = py.view(np.uint8).reshape(32, 4).astype(np.int64)
    pys = pyu.astype(np.uint8).view(np.int8).astype(np.int64)
    np.testing.assert_array_equal(out[0].view(np.int32), (pxs * pys).sum(1))
    np.testing.assert_array_equal(out[1], (x.view(np.uint8).astype(np.int64) * y).sum(1))
    np.testing.assert_array_equal(out[2].view(np.int32), (pxs * pyu).sum(1))
    np.testing.assert_array_equal(out[3].view(np.int32), np.clip(acc.astype(np.int64) + (pxs * pys).sum(1),
                                                                 -(2**31), 2**31 - 1))
    lane = np.arange(32) % 8
    base = np.arange(32) - lane
    np.testing.assert_array_equal(out[4], (base + (lane + 5) % 8) * 3 + 1)
    np.testing.assert_array_equal(out[5], (base + lane - lane % 4 + (lane + 3) % 4) * 7)


SMALL_FLOATS = """#version 450
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[64]; };
layout(set = 0, binding = 1) writeonly buffer B {
    bfloat16_t bf[64]; floate4m3_t e4[64]; floate5m2_t e5[64]; float back[64];
};
void main() {
    uint i = gl_LocalInvocationIndex;
    bfloat16_t h = bfloat16_t(a[i]);
    floate4m3_t x = floate4m3_t(a[i]);
    floate5m2_t y = floate5m2_t(a[i]);
    bf[i] = h;
    e4[i] = x;
    e5[i] = y;
    back[i] = float(h) + float(x) * 2.0 + float(y) * 4.0;
}"""


def test_bf16_and_fp8_conversions_round_to_nearest_even():
    import ml_dtypes

    words = glsl(SMALL_FLOATS)
    rng = np.random.default_rng(16)
    a = (rng.standard_normal(64) * 20).astype(np.float32)
    out = run(words, {0: a}, {1: ((128 + 64 + 64 + 256,), np.uint8)})[1]
    bf, e4, e5 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    np.testing.assert_array_equal(out[:128].view(bf), a.astype(bf))
    np.testing.assert_array_equal(out[128:192].view(e4), a.astype(e4))
    np.testing.assert_array_equal(out[192:256].view(e5), a.astype(e5))
    want = (a.astype(bf).astype(np.float32) + a.astype(e4).astype(np.float32) * np.float32(2)) \
        + a.astype(e5).astype(np.float32) * np.float32(4)
    np.testing.assert_array_equal(out[256:].view(np.float32), want)
