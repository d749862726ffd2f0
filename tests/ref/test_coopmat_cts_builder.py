"""CTS-style cases made with our ModuleBuilder instead of glslang (tests/ref/cts/builder_kernels.py):
element-wise arithmetic, matrix-times-scalar, component+Use conversion, TransposeNV and
PerElementOp with a matrix operand, validated by spirv-val, run on the reference executor against
NumPy and on lavapipe where the device reports the accumulator (and A) types at 8x8x8."""

import subprocess
import zlib

import ml_dtypes
import numpy as np
import pytest
from cts import builder_kernels as bk
from cts.device_types import missing_matrix_types

from hydroplane.ref import Executor
from hydroplane.spirv import binary

DTYPES = {"f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16),
          "s8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "s32": np.dtype(np.int32), "u32": np.dtype(np.uint32)}
C_TYPES = ["f16", "f32", "s32", "u32"]
A_OF = {"f16": "f16", "f32": "f16", "s32": "s8", "u32": "u8"}
N = bk.TILE


@pytest.fixture(scope="module")
def lavapipe():
    from hydroplane.vk import Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr and d.cooperative_matrix_nv2]
    if not found:
        pytest.fail("no device with KHR + NV2 cooperative matrices (lavapipe); run through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        yield dev


def _inputs(c_type, op, seed):
    rng = np.random.default_rng(seed)
    dtype = DTYPES[c_type]
    low = 0 if dtype.kind == "u" else -6
    c = rng.integers(low, 7, (N, N)).astype(dtype)
    if op == "div":
        d = rng.integers(1, 5, (N, N))
        d = (d * (rng.choice([-1, 1], (N, N)) if dtype.kind != "u" else 1)).astype(dtype)
        if dtype.kind == "f":
            d = rng.choice([-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], (N, N)).astype(dtype)
    else:
        d = rng.integers(low, 7, (N, N)).astype(dtype)
    return c, d


def _truncating_div(c, d):
    return (np.trunc(c.astype(np.float64) / d.astype(np.float64))).astype(c.dtype)


EXPECT = {
    "add": lambda c, d: c + d,
    "sub": lambda c, d: c - d,
    "mul": lambda c, d: c * d,
    "div": lambda c, d: _truncating_div(c, d) if c.dtype.kind in "iu" else c / d,
    "negate": lambda c, d: -c if c.dtype.kind != "u" else (0 - c.astype(np.int64)).astype(c.dtype),
    "times_scalar": lambda c, d: c * c.dtype.type(3),
}


def _validate(spirv_val, tmp_path, words):
    path = tmp_path / "kernel.spv"
    path.write_bytes(binary.to_bytes(words))
    proc = subprocess.run([spirv_val, "--target-env", "vulkan1.3", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def _ref(words, c, d, out_dtype):
    ex = Executor(subgroup_size=8)
    bufs = {0: ex.buffer(c), 1: ex.buffer(d), 2: ex.buffer(np.full(N * N, 0x5A, np.uint8).astype(out_dtype))}
    ex.dispatch(ex.kernel(words), (1, 1, 1), bufs)
    return ex.read(bufs[2], out_dtype, (N, N))


def _device(dev, words, c, d, out_dtype):
    from hydroplane.vk import Binding

    bufs = {0: dev.buffer(c), 1: dev.buffer(d), 2: dev.buffer(np.full(N * N, 0x5A, np.uint8).astype(out_dtype))}
    dev.dispatch(dev.pipeline(words, [Binding(0, i) for i in range(3)]), (1, 1, 1), bufs)
    return bufs[2].read(out_dtype, (N, N))


def _device_offers(dev, words) -> bool:
    return dev.info.subgroup_size == 8 and not missing_matrix_types(words, dev.info)


def _check(words, c, d, want, out_type, dev, a_type, c_type):
    got = _ref(words, c, d, DTYPES[out_type])
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.astype(DTYPES[out_type]).view(f"u{got.itemsize}"))
    if _device_offers(dev, words):
        on_device = _device(dev, words, c, d, DTYPES[out_type])
        np.testing.assert_array_equal(on_device.view(f"u{got.itemsize}"), got.view(f"u{got.itemsize}"))


@pytest.mark.parametrize("c_type", C_TYPES)
@pytest.mark.parametrize("op", sorted(bk.ELEMENT_WISE))
def test_builder_element_wise(spirv_val, tmp_path, lavapipe, op, c_type):
    words = bk.element_wise(op, c_type)
    _validate(spirv_val, tmp_path, words)
    c, d = _inputs(c_type, op, zlib.crc32(f"{op}{c_type}".encode()))
    with np.errstate(over="ignore"):
        want = EXPECT[op](c, d).astype(DTYPES[c_type])
    _check(words, c, d, want, c_type, lavapipe, None, c_type)


@pytest.mark.parametrize("c_type", C_TYPES)
def test_builder_convert_accumulator_to_a(spirv_val, tmp_path, lavapipe, c_type):
    a_type = A_OF[c_type]
    words = bk.convert_to_a(c_type, a_type)
    _validate(spirv_val, tmp_path, words)
    c, d = _inputs(c_type, "convert", zlib.crc32(f"convert{c_type}".encode()))
    _check(words, c, d, c.astype(DTYPES[a_type]), a_type, lavapipe, a_type, c_type)


@pytest.mark.parametrize("c_type", C_TYPES)
def test_builder_transpose(spirv_val, tmp_path, lavapipe, c_type):
    words = bk.transpose(c_type)
    _validate(spirv_val, tmp_path, words)
    c, d = _inputs(c_type, "transpose", zlib.crc32(f"transpose{c_type}".encode()))
    _check(words, c, d, c.T, c_type, lavapipe, None, c_type)


@pytest.mark.parametrize("c_type", C_TYPES)
def test_builder_per_element_with_matrix_operand(spirv_val, tmp_path, lavapipe, c_type):
    words = bk.per_element(c_type)
    _validate(spirv_val, tmp_path, words)
    c, d = _inputs(c_type, "per_element", zlib.crc32(f"per_element{c_type}".encode()))
    place = (np.arange(N)[:, None] * N + np.arange(N)[None, :]).astype(DTYPES[c_type])
    _check(words, c, d, (c + d + place).astype(DTYPES[c_type]), c_type, lavapipe, None, c_type)


@pytest.mark.parametrize("c_type", C_TYPES)
def test_builder_composite_extract_insert(spirv_val, tmp_path, lavapipe, c_type):
    words = bk.composite(c_type, N * N // 8)
    _validate(spirv_val, tmp_path, words)
    c, d = _inputs(c_type, "composite", zlib.crc32(f"composite{c_type}".encode()))
    _check(words, c, d, (c + d).astype(DTYPES[c_type]), c_type, lavapipe, None, c_type)
