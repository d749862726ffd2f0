"""Specialization constants of every scalar type, packed by their declared types: the same on the reference
executor and lavapipe, equal to the values given (a u64 above 2^32, a negative i64), refused by SpecId when
a value does not fit."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_tool

from hydroplane.launch import executors as launch
from hydroplane.launch.checks import SpecConstantError
from hydroplane.spirv import reflect

SOURCE = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(constant_id = 0) const bool B = true;
layout(constant_id = 1) const int8_t I8 = int8_t(-3);
layout(constant_id = 2) const int16_t I16 = int16_t(-300);
layout(constant_id = 3) const int I32 = -70000;
layout(constant_id = 4) const int64_t I64 = -5000000000l;
layout(constant_id = 5) const uint8_t U8 = uint8_t(200);
layout(constant_id = 6) const uint16_t U16 = uint16_t(60000);
layout(constant_id = 7) const uint U32 = 4000000000u;
layout(constant_id = 8) const uint64_t U64 = 9000000000ul;
layout(constant_id = 9) const float16_t F16 = float16_t(0.5);
layout(constant_id = 10) const float F32 = 0.25;
layout(constant_id = 11) const double F64 = 0.125lf;
layout(set = 0, binding = 0) buffer Ints { int64_t ints[]; };
layout(set = 0, binding = 1) buffer Floats { double floats[]; };
void main() {
    ints[0] = B ? 1l : 0l;
    ints[1] = int64_t(I8);
    ints[2] = int64_t(I16);
    ints[3] = int64_t(I32);
    ints[4] = I64;
    ints[5] = int64_t(U8);
    ints[6] = int64_t(U16);
    ints[7] = int64_t(U32);
    ints[8] = int64_t(U64);
    floats[0] = double(F16);
    floats[1] = double(F32);
    floats[2] = F64;
}
"""

DEFAULTS = {0: True, 1: -3, 2: -300, 3: -70000, 4: -5000000000, 5: 200, 6: 60000, 7: 4000000000,
            8: 9000000000, 9: 0.5, 10: 0.25, 11: 0.125}


@pytest.fixture(scope="module")
def spec_kernel(tmp_path_factory, glslang) -> bytes:
    d = tmp_path_factory.mktemp("spec")
    (d / "spec.comp").write_text(SOURCE)
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(d / "spec.comp"), "-o", str(d / "spec.spv")])
    return (d / "spec.spv").read_bytes()


def random_spec(seed: int) -> dict:
    """Values across each type's range, with a u64 above 2^32 and a negative i64 beyond 32 bits."""
    rng = np.random.default_rng(seed)
    ints = {1: (8, True), 2: (16, True), 3: (32, True), 5: (8, False), 6: (16, False), 7: (32, False)}
    spec = {0: bool(rng.integers(2))}
    for sid, (width, signed) in ints.items():
        low, high = (-(1 << (width - 1)), 1 << (width - 1)) if signed else (0, 1 << width)
        spec[sid] = int(rng.integers(low, high))
    spec[4] = -int(rng.integers(1 << 33, 1 << 62))
    spec[8] = int(rng.integers(1 << 33, 1 << 63)) * 2 + 1  # above 2^63 too: the top bit set
    spec[9] = float(rng.standard_normal())  # rounded to f16 by packing
    spec[10] = float(rng.standard_normal())
    spec[11] = float(rng.standard_normal())
    return spec


def expected(spec: dict) -> tuple[np.ndarray, np.ndarray]:
    ints = np.array([int(spec[0]), spec[1], spec[2], spec[3], spec[4], spec[5], spec[6], spec[7], 0], np.int64)
    ints[8] = np.array([spec[8]], np.uint64).view(np.int64)[0]
    floats = np.array([np.float16(spec[9]), np.float32(spec[10]), spec[11]], np.float64)
    return ints, floats


def run_spec(words: bytes, spec: dict | None, device) -> tuple[np.ndarray, np.ndarray]:
    poison_ints = np.full(9, 0x5A5A5A5A5A5A5A5A, np.int64)
    poison_floats = np.full(3, np.nan, np.float64)
    out = launch.run(words, (1, 1, 1), {0: poison_ints, 1: poison_floats}, spec=spec, device=device)
    return out[0], out[1]


def test_reflect_gives_every_declared_type(spec_kernel):
    iface = reflect(spec_kernel)
    names = {s.spec_id: s.type.name for s in iface.spec_constants}
    assert names == {0: "bool", 1: "s8", 2: "s16", 3: "s32", 4: "s64", 5: "u8", 6: "u16", 7: "u32", 8: "u64",
                     9: "f16", 10: "f32", 11: "f64"}
    assert {s.spec_id: s.default for s in iface.spec_constants} == DEFAULTS


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_values_on_the_reference_executor(spec_kernel, seed):
    spec = random_spec(seed)
    ints, floats = run_spec(spec_kernel, spec, "ref")
    want_ints, want_floats = expected(spec)
    np.testing.assert_array_equal(ints, want_ints)
    np.testing.assert_array_equal(floats, want_floats)
    assert ints.view(np.uint64)[8] == spec[8] and spec[8] > 1 << 32
    assert ints[4] == spec[4] < -(1 << 32)


def test_defaults_on_the_reference_executor(spec_kernel):
    ints, floats = run_spec(spec_kernel, None, "ref")
    want_ints, want_floats = expected(DEFAULTS)
    np.testing.assert_array_equal(ints, want_ints)
    np.testing.assert_array_equal(floats, want_floats)


@pytest.mark.vulkan
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_values_on_lavapipe(spec_kernel, seed):
    spec = random_spec(seed)
    ref = run_spec(spec_kernel, spec, "ref")
    dev = run_spec(spec_kernel, spec, 0)
    want_ints, want_floats = expected(spec)
    np.testing.assert_array_equal(dev[0], want_ints)
    np.testing.assert_array_equal(dev[1], want_floats)
    np.testing.assert_array_equal(dev[0], ref[0])
    np.testing.assert_array_equal(dev[1], ref[1])


@pytest.mark.vulkan
def test_defaults_on_lavapipe(spec_kernel):
    dev = run_spec(spec_kernel, None, 0)
    want_ints, want_floats = expected(DEFAULTS)
    np.testing.assert_array_equal(dev[0], want_ints)
    np.testing.assert_array_equal(dev[1], want_floats)


BAD_VALUES = [
    (5, 256, r"specialization constant 5 \(u8\): 256 does not fit u8 \(0 \.\. 255\)"),
    (7, -1, r"specialization constant 7 \(u32\): -1 does not fit u32"),
    (1, 128, r"specialization constant 1 \(s8\): 128 does not fit s8 \(-128 \.\. 127\)"),
    (8, 1 << 64, r"specialization constant 8 \(u64\): 18446744073709551616 does not fit u64"),
    (3, 1.5, r"specialization constant 3 \(s32\): 1\.5 is not an integer"),
    (0, 2, r"specialization constant 0 \(bool\): 2 is not true/false"),
    (9, 1e6, r"specialization constant 9 \(f16\): 1000000\.0 is beyond the range of f16"),
    (11, 1 << 1100, r"specialization constant 11 \(f64\): \d+ is beyond the range of f64"),
    (10, "x", r"specialization constant 10 \(f32\): 'x' is not a number"),
    (12, 1, r"specialization constant 12: the module has no such SpecId \(it has: 0, 1, 2"),
]


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
@pytest.mark.parametrize("spec_id, value, message", BAD_VALUES)
def test_a_value_that_does_not_fit_names_the_spec_id(spec_kernel, device, spec_id, value, message):
    with pytest.raises(SpecConstantError, match=message):
        run_spec(spec_kernel, {spec_id: value}, device)
    ex = launch.get_executor(device)
    try:
        with pytest.raises(SpecConstantError, match=message):
            ex.kernel(spec_kernel, spec={spec_id: value})
    finally:
        ex.close()
