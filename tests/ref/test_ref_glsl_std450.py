"""GLSL.std.450 instructions the reference executor gained for compute, each run on the reference
executor and on lavapipe from one glslang-compiled module and compared with NumPy.

Inputs are random with the edge values that matter (negative, +-0, subnormal, large, out of
range for the pack clamps). The reference executor must equal NumPy bit for bit wherever the
GLSL.std.450 text is exact; lavapipe must equal it too, except where Vulkan grants slack, and
then it is checked against exactly that slack (docs/ref.md, "GLSL.std.450 precision"):

* denormals may be flushed to zero (no DenormPreserve execution mode): a device result may also
  be the one computed from flushed inputs, with subnormal results flushed;
* the sign of a zero need not be preserved (no SignedZeroInfNanPreserve): +0 and -0 compare equal
  for the device;
* round() in the Pack formulas rounds ties in a direction the implementation chooses;
* OpFDiv (the Unpack formulas) is within 2.5 ULP;
* Determinant, MatrixInverse and Refract inherit their precision from their formulas: compared
  with a float64 evaluation under a tolerance scaled by the operands.

The instructions glslang does not emit from GLSL (Modf and Frexp with a pointer operand, IMix)
are declared through GL_EXT_spirv_intrinsics.
"""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl, spirv_text

from hydroplane.launch import executors as launch
from hydroplane.ref import Executor, UnsupportedInstructionError

HEADER = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 64) in;
"""
LANES = 64

F32_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-40, -3e-42, 1.17549435e-38, 3.4e38, -1e30,
                      8388608.5, -8388609.0, 16777216.0, 0.999999, -1.5e-7], np.float32)


@pytest.fixture(scope="module")
def lavapipe():
    ex = launch.get_executor(0)
    yield ex
    ex.close()


def poisoned(shape, dtype) -> np.ndarray:
    return np.full(int(np.prod(shape)) * np.dtype(dtype).itemsize, 0xA5, np.uint8).view(dtype).reshape(shape)


def run_both(lavapipe, source: str, inputs: dict, outputs: dict) -> tuple[dict, dict]:
    """The module on the reference executor and on lavapipe: ({binding: array}, {binding: array})."""
    words = glsl(source)
    buffers = dict(inputs)
    for b, (shape, dtype) in outputs.items():
        buffers[b] = poisoned(shape, dtype)
    # bytes of a block of mixed members go in raw (the launch checks compare dtypes otherwise)
    buffers = {b: launch.RawBytes(a) if a.dtype == np.uint8 else a for b, a in buffers.items()}
    ref = launch.run(words, (1, 1, 1), buffers, executor=Executor(subgroup_size=8))
    dev = launch.run(words, (1, 1, 1), buffers, executor=lavapipe)
    return ({b: ref[b] for b in outputs}, {b: dev[b] for b in outputs})


def f32_inputs(rng, count=LANES) -> np.ndarray:
    x = (rng.standard_normal(count) * 10.0 ** rng.integers(-3, 6, count)).astype(np.float32)
    x[:len(F32_EDGES)] = F32_EDGES
    return x


def flush(x: np.ndarray) -> np.ndarray:
    """x with subnormals replaced by zeros of the same sign (what a flushing device reads or writes)."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return x
    tiny = np.finfo(x.dtype).tiny
    return np.where(np.abs(x) < tiny, np.copysign(x.dtype.type(0), x), x)


def assert_bits(got, want, what: str) -> None:
    np.testing.assert_array_equal(np.asarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8),
                                  err_msg=f"reference executor: {what}")


def assert_device(got, exact, flushed, what: str) -> None:
    """Device result equals the exact one or the flushed-denormal one (+-0 alike, NaN equal to NaN)."""
    got, exact, flushed = (np.asarray(a) for a in (got, exact, flushed))

    def same(a, b):
        return (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b

    ok = same(got, exact) | same(got, flushed) | same(flush(got), flush(flushed))
    bad = np.flatnonzero(~ok.reshape(len(ok), -1).all(axis=1))
    assert not len(bad), f"lavapipe {what}: lanes {bad[:8]} got {got[bad[:4]]} want {exact[bad[:4]]}"


def assert_close(got, want, rtol, atol, what: str) -> None:
    """|got - want| <= max(rtol * |want|, atol) element-wise (atol may be an array)."""
    err = np.abs(np.asarray(got, np.float64) - want)
    bound = np.maximum(rtol * np.abs(want), atol)
    bad = np.flatnonzero(~(err <= bound).reshape(len(err), -1).all(axis=1))
    assert not len(bad), f"{what}: lanes {bad[:8]} off by {err[bad[:4]]} (allowed {bound[bad[:4]]})"


def ulp(x: np.ndarray) -> np.ndarray:
    return np.spacing(np.abs(x).astype(np.float32))


@pytest.mark.vulkan
def test_modf_and_frexp_with_pointer_and_struct_results(lavapipe, rng=np.random.default_rng(450)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer H { float16_t h[]; };
layout(set = 0, binding = 2) writeonly buffer F { float frac_ptr[64]; float whole_ptr[64]; float frac_struct[64];
                                                   float whole_struct[64]; float mant_ptr[64]; float mant_struct[64]; };
layout(set = 0, binding = 3) writeonly buffer E { int exp_ptr[64]; int exp_struct[64]; int exp_half[64]; };
layout(set = 0, binding = 4) writeonly buffer G { float16_t frac_half[64]; float16_t whole_half[64];
                                                   float16_t mant_half[64]; };
spirv_instruction(set = "GLSL.std.450", id = 35) float modf_ptr(float x, spirv_by_reference float whole);
spirv_instruction(set = "GLSL.std.450", id = 51) float frexp_ptr(float x, spirv_by_reference int e);
void main() {
    uint i = gl_LocalInvocationIndex;
    float w; int e; float16_t hw; int he;
    frac_ptr[i] = modf_ptr(x[i], w);            // GLSL.std.450 Modf
    whole_ptr[i] = w;
    frac_struct[i] = modf(x[i], w);             // ModfStruct
    whole_struct[i] = w;
    mant_ptr[i] = frexp_ptr(x[i], e);           // Frexp
    exp_ptr[i] = e;
    mant_struct[i] = frexp(x[i], e);            // FrexpStruct
    exp_struct[i] = e;
    frac_half[i] = modf(h[i], hw);              // ModfStruct on f16
    whole_half[i] = hw;
    mant_half[i] = frexp(h[i], he);             // FrexpStruct on f16
    exp_half[i] = he;
}"""
    x = f32_inputs(rng)
    h = (rng.standard_normal(LANES) * 10.0 ** rng.integers(-6, 4, LANES)).astype(np.float16)
    h[:8] = np.array([0.0, -0.0, 6e-8, -3e-5, 65504.0, -1024.5, 0.5, 1.0], np.float16)
    ref, dev = run_both(lavapipe, source, {0: x, 1: h},
                        {2: ((6, LANES), np.float32), 3: ((3, LANES), np.int32), 4: ((3, LANES), np.float16)})
    frac, whole = np.modf(x)
    mant, exp = np.frexp(x)
    hfrac, hwhole = np.modf(h)
    hmant, hexp = np.frexp(h)
    want = {2: np.stack([frac, whole, frac, whole, mant, mant]), 3: np.stack([exp, exp, hexp]).astype(np.int32),
            4: np.stack([hfrac, hwhole, hmant])}
    fx, fh = flush(x), flush(h)
    ffrac, fwhole = np.modf(fx)
    fmant, fexp = np.frexp(fx)
    fhfrac, fhwhole = np.modf(fh)
    fhmant, fhexp = np.frexp(fh)
    flushed = {2: np.stack([ffrac, fwhole, ffrac, fwhole, fmant, fmant]),
               3: np.stack([fexp, fexp, fhexp]).astype(np.int32), 4: np.stack([fhfrac, fhwhole, fhmant])}
    # lavapipe's frexp of an f16 subnormal is neither exact nor flushed: it keeps the fraction bits
    # under exponent -14 as if the number were normal (documented in docs/ref.md); those lanes are
    # checked on the reference executor only.
    half_normal = (np.abs(h) >= np.finfo(np.float16).tiny) | (h == 0)
    lanes = {(3, 2): half_normal, (4, 2): half_normal}
    for b in want:
        assert_bits(ref[b], want[b].astype(ref[b].dtype), f"binding {b}")
        for row in range(len(want[b])):
            keep = lanes.get((b, row), np.ones(LANES, bool))
            assert_device(dev[b][row][keep], want[b][row][keep], flushed[b][row][keep], f"binding {b} row {row}")
    assert (~half_normal).sum() >= 8  # the subnormal halves are there for the reference executor


def _pack_fields(v: np.ndarray, lo: float, hi: float, scale: float, ties_even: bool) -> np.ndarray:
    t = np.clip(v.astype(np.float32), np.float32(lo), np.float32(hi)) * np.float32(scale)
    return np.rint(t) if ties_even else np.sign(t) * np.floor(np.abs(t) + np.float32(0.5))


def _fields(words: np.ndarray, bits: int) -> np.ndarray:
    return np.stack([(words.astype(np.uint64) >> (c * bits)) & ((1 << bits) - 1) for c in range(32 // bits)], -1)


PACKS = {  # name: (GLSL function, lo, hi, scale, bits)
    "PackSnorm4x8": ("packSnorm4x8", -1, 1, 127, 8),
    "PackUnorm4x8": ("packUnorm4x8", 0, 1, 255, 8),
    "PackSnorm2x16": ("packSnorm2x16", -1, 1, 32767, 16),
    "PackUnorm2x16": ("packUnorm2x16", 0, 1, 65535, 16),
}
UNPACKS = {  # name: (GLSL function, signed, scale, bits)
    "UnpackSnorm4x8": ("unpackSnorm4x8", True, 127, 8),
    "UnpackUnorm4x8": ("unpackUnorm4x8", False, 255, 8),
    "UnpackSnorm2x16": ("unpackSnorm2x16", True, 32767, 16),
    "UnpackUnorm2x16": ("unpackUnorm2x16", False, 65535, 16),
}


@pytest.mark.vulkan
def test_snorm_unorm_pack_and_unpack(lavapipe, rng=np.random.default_rng(54)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer V { vec4 v[]; };
layout(set = 0, binding = 1) readonly buffer P { uint p[]; };
layout(set = 0, binding = 2) writeonly buffer Q { uint s4[64]; uint u4[64]; uint s2[64]; uint u2[64]; };
layout(set = 0, binding = 3) writeonly buffer U { vec4 us4[64]; vec4 uu4[64]; vec2 us2[64]; vec2 uu2[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    s4[i] = packSnorm4x8(v[i]);
    u4[i] = packUnorm4x8(v[i]);
    s2[i] = packSnorm2x16(v[i].zw);
    u2[i] = packUnorm2x16(v[i].xy);
    us4[i] = unpackSnorm4x8(p[i]);
    uu4[i] = unpackUnorm4x8(p[i]);
    us2[i] = unpackSnorm2x16(p[i]);
    uu2[i] = unpackUnorm2x16(p[i]);
}"""
    v = rng.uniform(-1.6, 1.6, (LANES, 4)).astype(np.float32)
    v.reshape(-1)[:len(F32_EDGES)] = F32_EDGES
    v[20] = [0.5 / 127, 1.5 / 255, -2.5 / 127, 0.5 / 65535]  # near the ties of round()
    p = rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32)
    p[:6] = [0, 0xFFFFFFFF, 0x80808080, 0x7F7F7F7F, 0x80007FFF, 0x00018001]
    ref, dev = run_both(lavapipe, source, {0: v, 1: p}, {2: ((4, LANES), np.uint32), 3: ((LANES * 12,), np.float32)})

    inputs = {"PackSnorm4x8": v, "PackUnorm4x8": v, "PackSnorm2x16": v[:, 2:], "PackUnorm2x16": v[:, :2]}
    for row, (name, (_, lo, hi, scale, bits)) in enumerate(PACKS.items()):
        even = _pack_fields(inputs[name], lo, hi, scale, True).astype(np.int64) & ((1 << bits) - 1)
        away = _pack_fields(inputs[name], lo, hi, scale, False).astype(np.int64) & ((1 << bits) - 1)
        want = np.zeros(LANES, np.uint64)
        for c in range(32 // bits):
            want |= even[:, c].astype(np.uint64) << np.uint64(c * bits)
        assert_bits(ref[2][row], want.astype(np.uint32), name)
        got = _fields(dev[2][row], bits)
        ok = (got == even) | (got == away)  # round(): the direction of a tie is the implementation's
        assert ok.all(), f"lavapipe {name}: lanes {np.flatnonzero(~ok.all(axis=1))[:8]}"

    out = ref[3], dev[3]
    offsets = {"UnpackSnorm4x8": (0, 4), "UnpackUnorm4x8": (256, 4), "UnpackSnorm2x16": (512, 2),
               "UnpackUnorm2x16": (640, 2)}
    for name, (_, signed, scale, bits) in UNPACKS.items():
        start, n = offsets[name]
        fields = _fields(p, bits).astype(np.int64)
        if signed:
            fields = np.where(fields >= 1 << (bits - 1), fields - (1 << bits), fields)
        want = fields.astype(np.float32) / np.float32(scale)
        if signed:
            want = np.clip(want, np.float32(-1), np.float32(1))
        got_ref, got_dev = (o[start:start + LANES * n].reshape(LANES, n) for o in out)
        assert_bits(got_ref, want, name)
        exact = fields / float(scale)  # OpFDiv: within 2.5 ULP of the exact quotient
        if signed:
            exact = np.clip(exact, -1.0, 1.0)
        err = np.abs(got_dev.astype(np.float64) - exact)
        assert (err <= 2.5 * ulp(want)).all(), f"lavapipe {name}: {np.max(err / ulp(want)):.2f} ULP"


@pytest.mark.vulkan
def test_half_and_double_pack_and_unpack(lavapipe, rng=np.random.default_rng(58)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer V { vec2 v[64]; uvec2 bits[64]; double d[64]; uint p[64]; };
layout(set = 0, binding = 1) writeonly buffer Q { uint half_packed[64]; vec2 half_unpacked[64]; double packed[64];
                                                   uvec2 unpacked[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    half_packed[i] = packHalf2x16(v[i]);
    half_unpacked[i] = unpackHalf2x16(p[i]);
    packed[i] = packDouble2x32(bits[i]);
    unpacked[i] = unpackDouble2x32(d[i]);
}"""
    v = (rng.standard_normal((LANES, 2)) * 100).astype(np.float32)
    v[0] = [0.0, -0.0]
    v[1] = [65504.0, -1.5]
    bits = rng.integers(0, 2**32, (LANES, 2), dtype=np.uint64).astype(np.uint32)
    d = (rng.standard_normal(LANES) * 1e100).astype(np.float64)
    d[:4] = [0.0, -0.0, 5e-324, -1.7976931348623157e308]
    halves = (rng.standard_normal((LANES, 2)) * 100).astype(np.float16)
    halves[0] = [6e-8, -0.0]
    p = halves.view(np.uint32).reshape(LANES)
    inp = np.concatenate([v.view(np.uint8).reshape(-1), bits.view(np.uint8).reshape(-1), d.view(np.uint8),
                          p.view(np.uint8)])
    ref, dev = run_both(lavapipe, source, {0: inp}, {1: ((64 * (4 + 8 + 8 + 8),), np.uint8)})
    want_half = v.astype(np.float16).view(np.uint32).reshape(LANES)
    want = np.concatenate([want_half.view(np.uint8), halves.astype(np.float32).view(np.uint8).reshape(-1),
                           bits.view(np.uint8).reshape(-1), d.view(np.uint8)])
    assert_bits(ref[1], want, "half/double pack and unpack")
    got = dev[1]
    np.testing.assert_array_equal(got[256:], want[256:], err_msg="lavapipe: unpackHalf2x16 and the double packs")
    got_half = _fields(got[:256].view(np.uint32), 16).astype(np.uint16).view(np.float16)
    flushed = flush(flush(v).astype(np.float16))
    assert_device(got_half, v.astype(np.float16), flushed, "packHalf2x16")


def _well_conditioned(rng, size: int, count: int) -> np.ndarray:
    """(count, columns, rows) matrices with a condition number of a few units."""
    return (rng.standard_normal((count, size, size)) * 0.3 + 2.0 * np.eye(size)).astype(np.float32)


@pytest.mark.vulkan
def test_determinant_and_matrix_inverse(lavapipe, rng=np.random.default_rng(33)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer M { mat2 m2[64]; mat3 m3[64]; mat4 m4[64]; };
layout(set = 0, binding = 1) writeonly buffer D { float det[3][64]; };
layout(set = 0, binding = 2) writeonly buffer I { mat2 i2[64]; mat3 i3[64]; mat4 i4[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    det[0][i] = determinant(m2[i]);
    det[1][i] = determinant(m3[i]);
    det[2][i] = determinant(m4[i]);
    i2[i] = inverse(m2[i]);
    i3[i] = inverse(m3[i]);
    i4[i] = inverse(m4[i]);
}"""
    m2, m3, m4 = (_well_conditioned(rng, n, LANES) for n in (2, 3, 4))
    m3[5] = np.diag([1e-20, 3e15, -7.0])  # exact in float64: the determinant rounds once
    m4[7] = np.eye(4) * 2.0 ** -40  # a subnormal determinant (2^-160) in float32: an underflow
    # std430 mat3: columns of 3 floats padded to 16 bytes
    m3_padded = np.zeros((LANES, 3, 4), np.float32)
    m3_padded[:, :, :3] = m3
    inp = np.concatenate([m2.reshape(-1), m3_padded.reshape(-1), m4.reshape(-1)])
    ref, dev = run_both(lavapipe, source, {0: inp}, {1: ((3, LANES), np.float32),
                                                     2: ((LANES * (4 + 12 + 16),), np.float32)})
    mats = [m2, m3, m4]
    # GLSL matrices are column-major: column c is m[c]; det and inverse of the transpose agree
    want_det = [np.linalg.det(m.astype(np.float64)) for m in mats]
    want_inv = [np.linalg.inv(m.astype(np.float64)) for m in mats]
    starts = [0, LANES * 4, LANES * 16]
    for k, m in enumerate(mats):
        size = m.shape[-1]
        scale = np.prod(np.linalg.norm(m.astype(np.float64), axis=-1), axis=-1)  # Hadamard's bound
        # the reference rounds a float64 cofactor expansion once: a float32 ULP of NumPy's LU determinant
        assert_close(ref[1][k], want_det[k].astype(np.float32), 2 ** -23, 1e-45,
                     f"reference executor: determinant of mat{size}")
        # Vulkan: the precision is inherited from the formula (float32 products and sums)
        assert_close(dev[1][k], want_det[k].astype(np.float32), 0, scale * size * 2 ** -20 + 2 ** -149,
                     f"lavapipe: determinant of mat{size}")
        if size == 3:
            inv_ref = ref[2][starts[k]:starts[k] + LANES * 12].reshape(LANES, 3, 4)[:, :, :3]
            inv_dev = dev[2][starts[k]:starts[k] + LANES * 12].reshape(LANES, 3, 4)[:, :, :3]
        else:
            inv_ref, inv_dev = (o[starts[k]:starts[k] + LANES * size * size].reshape(LANES, size, size)
                                for o in (ref[2], dev[2]))
        ok = np.abs(want_det[k]) > 1e-30  # the lanes whose inverse float32 can hold
        norm = np.abs(want_inv[k][ok]).max(axis=(1, 2))[:, None, None]
        np.testing.assert_allclose(inv_ref[ok], want_inv[k][ok], rtol=2 ** -23, atol=0,
                                   err_msg=f"reference executor: inverse of mat{size}")
        np.testing.assert_allclose(inv_dev[ok] / norm, want_inv[k][ok] / norm, rtol=0, atol=size * 2 ** -18,
                                   err_msg=f"lavapipe: inverse of mat{size}")


@pytest.mark.vulkan
def test_refract_and_scalar_geometric_forms(lavapipe, rng=np.random.default_rng(72)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer A { vec4 incident[64]; vec4 normal[64]; float eta[64]; };
layout(set = 0, binding = 1) writeonly buffer B { vec4 r3[64]; float rs[64]; float len[64]; float nrm[64];
                                                   float refl[64]; float dist[64]; float ff[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    r3[i] = vec4(refract(incident[i].xyz, normal[i].xyz, eta[i]), 0.0);
    float x = incident[i].x, n = normal[i].x;
    rs[i] = refract(x, n, eta[i]);
    len[i] = length(x);
    nrm[i] = normalize(x);
    refl[i] = reflect(x, n);
    dist[i] = distance(x, n);
    ff[i] = faceforward(x, n, incident[i].y);
}"""
    def unit(v):
        return v / np.linalg.norm(v, axis=-1, keepdims=True)

    incident = np.zeros((LANES, 4), np.float32)
    normal = np.zeros((LANES, 4), np.float32)
    incident[:, :3] = unit(rng.standard_normal((LANES, 3)))
    normal[:, :3] = unit(rng.standard_normal((LANES, 3)))
    eta = rng.uniform(0.3, 2.5, LANES).astype(np.float32)
    incident[:4, 0] = [0.0, -0.0, 1e-40, -3.0]
    inp = np.concatenate([incident.reshape(-1), normal.reshape(-1), eta])
    ref, dev = run_both(lavapipe, source, {0: inp}, {1: ((LANES * 10,), np.float32)})

    i64, n64, e64 = incident[:, :3].astype(np.float64), normal[:, :3].astype(np.float64), eta.astype(np.float64)

    def refract(i, n, e):
        d = np.sum(n * i, axis=-1, keepdims=True)
        k = 1.0 - e[:, None] ** 2 * (1.0 - d * d)
        return np.where(k < 0, 0.0, e[:, None] * i - (e[:, None] * d + np.sqrt(np.maximum(k, 0))) * n), k

    want3, k3 = refract(i64, n64, e64)
    wants, ks = refract(i64[:, :1], n64[:, :1], e64)
    clear = (np.abs(k3[:, 0]) > 1e-3) & (np.abs(ks[:, 0]) > 1e-3)  # lanes not at the k < 0 border
    for name, out in (("reference executor", ref[1]), ("lavapipe", dev[1])):
        r3 = out[:LANES * 4].reshape(LANES, 4)[:, :3]
        np.testing.assert_allclose(r3[clear], want3[clear], rtol=0, atol=2 ** -18, err_msg=f"{name}: refract vec3")
        np.testing.assert_allclose(out[LANES * 4:LANES * 5][clear], wants[clear, 0], rtol=0, atol=2 ** -18,
                                   err_msg=f"{name}: refract float")
    assert (ref[1][:LANES * 4].reshape(LANES, 4)[:, :3][k3[:, 0] < -1e-3] == 0).all()

    x, n, y = incident[:, 0], normal[:, 0], incident[:, 1]

    def geometric(x):  # the formulas GLSL.std.450 gives, in float32
        return np.stack([np.sqrt(x * x), x / np.sqrt(x * x), x - np.float32(2) * (n * x) * n,
                         np.sqrt((x - n) * (x - n)), np.where(y * n < 0, x, -x)])

    with np.errstate(all="ignore"):
        scalars = geometric(x)
    got_ref = ref[1][LANES * 5:].reshape(5, LANES)
    got_dev = dev[1][LANES * 5:].reshape(5, LANES)
    for row, what in enumerate(("length", "normalize", "reflect", "distance", "faceforward")):
        ok = np.isfinite(scalars[row])  # normalize(0) is 0/0
        np.testing.assert_array_equal(got_ref[row][ok], scalars[row][ok], err_msg=f"reference executor: {what}(float)")
        # lavapipe contracts x - 2 * (n * x) * n into fused multiply-adds (Vulkan allows it without
        # NoContraction): a few ULP of the operands' magnitude
        assert_close(got_dev[row][ok], scalars[row][ok], 0, (2 ** -20 * (1 + np.abs(x) + np.abs(n)))[ok],
                     f"lavapipe {what}(float)")


IMIX = HEADER + """
layout(set = 0, binding = 0) buffer A { int v[]; };
spirv_instruction(set = "GLSL.std.450", id = 47) int imix(int x, int y, int a);
void main() { uint i = gl_LocalInvocationIndex; v[i] = imix(v[i], 1, 2); }"""


def test_reserved_imix_is_refused_by_name():
    ex = Executor()
    with pytest.raises(UnsupportedInstructionError) as err:
        ex.dispatch(ex.kernel(glsl(IMIX)), (1, 1, 1), {0: ex.buffer(np.zeros(LANES, np.int32))})
    assert "GLSL.std.450 IMix is reserved" in str(err.value)
    assert "OpExtInst" in err.value.diagnostic.disassembly


INTERPOLATE = """
               OpCapability Shader
               OpCapability InterpolationFunction
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
      %float = OpTypeFloat 32
        %ptr = OpTypePointer Private %float
          %v = OpVariable %ptr Private
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %r = OpExtInst %float %1 InterpolateAtCentroid %v
               OpReturn
               OpFunctionEnd
"""


def test_fragment_only_interpolation_is_refused_by_name():
    ex = Executor()
    with pytest.raises(UnsupportedInstructionError) as err:
        ex.dispatch(ex.kernel(spirv_text(INTERPOLATE)), (1, 1, 1), {})
    assert "GLSL.std.450 InterpolateAtCentroid interpolates a fragment-shader input" in str(err.value)


@pytest.mark.vulkan
def test_double_precision_forms(lavapipe, rng=np.random.default_rng(64)):
    source = HEADER + """
layout(set = 0, binding = 0) readonly buffer A { double x[64]; dmat3 m[64]; };
layout(set = 0, binding = 1) writeonly buffer B { double frac[64]; double whole[64]; double mant[64]; double det[64];
                                                   dmat3 inv[64]; };
layout(set = 0, binding = 2) writeonly buffer E { int exps[64]; };
void main() {
    uint i = gl_LocalInvocationIndex;
    double w; int e;
    frac[i] = modf(x[i], w);
    whole[i] = w;
    mant[i] = frexp(x[i], e);
    exps[i] = e;
    det[i] = determinant(m[i]);
    inv[i] = inverse(m[i]);
}"""
    x = rng.standard_normal(LANES) * 10.0 ** rng.integers(-300, 300, LANES)
    x[:8] = [0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, 4503599627370496.5, -0.5, 3.0]
    m = rng.standard_normal((LANES, 3, 3)) * 0.3 + 2.0 * np.eye(3)
    m_padded = np.zeros((LANES, 3, 4))  # std430 dmat3: columns of three doubles padded to 32 bytes
    m_padded[:, :, :3] = m
    inp = np.concatenate([x.view(np.uint8), m_padded.view(np.uint8).reshape(-1)])
    ref, dev = run_both(lavapipe, source, {0: inp}, {1: ((LANES * 16,), np.float64), 2: ((LANES,), np.int32)})
    frac, whole = np.modf(x)
    mant, exp = np.frexp(x)
    # the cofactor expansion in float64 (no wider type to round from); NumPy's LU agrees to a few ULP
    want_det, want_inv = np.linalg.det(m), np.linalg.inv(m)
    for name, out in (("reference executor", ref), ("lavapipe", dev)):
        got = out[1]
        exact = np.stack([frac, whole, mant])
        if name == "reference executor":
            assert_bits(got[:3 * LANES].reshape(3, LANES), exact, "double modf/frexp")
            assert_bits(out[2], exp.astype(np.int32), "double frexp exponent")
        else:
            fx = flush(x)
            flushed = np.stack([*np.modf(fx), np.frexp(fx)[0]])
            for row in range(3):
                assert_device(got[row * LANES:(row + 1) * LANES], exact[row], flushed[row], f"double row {row}")
            assert_device(out[2], exp.astype(np.int32), np.frexp(fx)[1].astype(np.int32), "double frexp exponent")
        assert_close(got[3 * LANES:4 * LANES], want_det, 2 ** -48, 0, f"{name}: double determinant")
        inv = got[4 * LANES:].reshape(LANES, 3, 4)[:, :, :3]
        assert_close(inv, want_inv, 0, 2 ** -46, f"{name}: double inverse")
