"""Cooperative-matrix kernels made by our builder (hydroplane.spirv.samples) on the reference
executor against NumPy, and on lavapipe where the device reports the types and shape: MulAdd in
the KHR and legacy NV families (both layouts, saturating integers, NV2 workgroup scope) and
reductions through NV2 and EXT maintenance1 (the EXT form lowered to NV2 for the device)."""

import zlib

import numpy as np
import pytest
from cts.device_types import missing_matrix_types

from hydroplane.ref import Executor
from hydroplane.spirv import samples
from hydroplane.spirv.lower import lower
from hydroplane.spirv.target import Target

DTYPES = {"f16": np.float16, "f32": np.float32, "s8": np.int8, "u8": np.uint8, "s32": np.int32,
          "u32": np.uint32}
try:
    import ml_dtypes

    DTYPES["bf16"] = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - ml_dtypes is a runtime dependency
    pass


@pytest.fixture(scope="module")
def lavapipe():
    from hydroplane.vk import Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr]
    if not found:
        pytest.fail("no Vulkan device with cooperative matrices; run the suite through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        yield dev


def _values(rng, dtype, shape, full_range=False):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and full_range:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)


def _dense(x, layout):
    return np.ascontiguousarray(x if layout == "row" else x.T).reshape(-1)


def _from_dense(flat, rows, cols, layout):
    return flat.reshape(rows, cols) if layout == "row" else flat.reshape(cols, rows).T


def _muladd_expected(a, b, c, c_dtype, saturating):
    c_dtype = np.dtype(c_dtype)
    if c_dtype.kind in "iu":
        exact = np.matmul(a.astype(object), b.astype(object)) + c.astype(object)
        info = np.iinfo(c_dtype)
        bits = 8 * c_dtype.itemsize
        flat = [min(max(int(v), info.min), info.max) if saturating else int(v) % (1 << bits) for v in exact.reshape(-1)]
        out = np.array(flat, dtype=object)
        if saturating:
            return out.astype(c_dtype).reshape(exact.shape)
        return out.astype(np.uint64).astype(f"u{c_dtype.itemsize}").view(c_dtype).reshape(exact.shape)
    return (a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)).astype(c_dtype)


def _dispatch_ref(words, arrays, sg):
    ex = Executor(subgroup_size=sg)
    bufs = {i: ex.buffer(x) for i, x in enumerate(arrays)}
    ex.dispatch(ex.kernel(words), (1, 1, 1), bufs)
    return ex.read(bufs[len(arrays) - 1], arrays[-1].dtype)


def _dispatch_device(dev, words, arrays):
    from hydroplane.vk import Binding

    bufs = {i: dev.buffer(x) for i, x in enumerate(arrays)}
    dev.dispatch(dev.pipeline(words, [Binding(0, i) for i in range(len(arrays))]), (1, 1, 1), bufs)
    return bufs[len(arrays) - 1].read(arrays[-1].dtype)


def _device_has(dev, words) -> bool:
    return dev.info.subgroup_size == 8 and not missing_matrix_types(words, dev.info)


MULADD_CASES = [(a, c, family, layout, sat)
                for a, c in sorted(samples.COOP_COMBINATIONS)
                for family in ("khr", "nv") for layout in ("row", "column")
                for sat in ((False, True) if a in ("s8", "u8") else (False,))
                if not (family == "nv" and (a == "bf16" or sat))]


@pytest.mark.parametrize("a_type,c_type,family,layout,saturating", MULADD_CASES)
def test_builder_muladd_tile(lavapipe, a_type, c_type, family, layout, saturating):
    m = n = k = 8
    words = samples.coop_matmul_tile(m, n, k, a_type, c_type, family, layout, saturating, local_size=8)
    rng = np.random.default_rng(zlib.crc32(repr((a_type, c_type, family, layout, saturating)).encode()))
    full = a_type in ("s8", "u8")
    a = _values(rng, DTYPES[a_type], (m, k), full)
    b = _values(rng, DTYPES[a_type], (k, n), full)
    c = _values(rng, DTYPES[c_type], (m, n), full)
    want = _muladd_expected(a, b, c, DTYPES[c_type], saturating)
    arrays = [_dense(a, layout), _dense(b, layout), _dense(c, layout),
              np.full(m * n, 0x5A, np.uint8).view(np.uint8).astype(DTYPES[c_type])]
    got = _from_dense(_dispatch_ref(words, arrays, 8), m, n, layout)
    np.testing.assert_array_equal(got, want)
    if family == "khr" and not saturating and _device_has(lavapipe, words):
        dev = _from_dense(_dispatch_device(lavapipe, words, arrays), m, n, layout)
        np.testing.assert_array_equal(dev, want)


@pytest.mark.parametrize("a_type,c_type", [("f16", "f32"), ("s8", "s32")])
def test_builder_workgroup_scope_tile(a_type, c_type):
    m, n, k, invocations = 32, 32, 16, 64
    words = samples.coop_matmul_tile(m, n, k, a_type, c_type, "khr", "row", local_size=invocations,
                                     scope="Workgroup")
    rng = np.random.default_rng(5)
    a, b = _values(rng, DTYPES[a_type], (m, k)), _values(rng, DTYPES[a_type], (k, n))
    c = _values(rng, DTYPES[c_type], (m, n))
    arrays = [a.reshape(-1), b.reshape(-1), c.reshape(-1), np.zeros(m * n, DTYPES[c_type])]
    got = _dispatch_ref(words, arrays, 32).reshape(m, n)
    np.testing.assert_array_equal(got, _muladd_expected(a, b, c, DTYPES[c_type], False))


REDUCE = {"add": np.add, "max": np.maximum, "min": np.minimum}


def _reduce_expected(x, mode, combine):
    fn = REDUCE[combine]
    if mode == "2x2":
        return fn(fn(x[0::2, 0::2], x[1::2, 0::2]), fn(x[0::2, 1::2], x[1::2, 1::2]))
    axis = {"Row": (1,), "Column": (0,), "Row|Column": (0, 1)}[mode]
    return np.broadcast_to(fn.reduce(x, axis=axis, keepdims=True), x.shape)


@pytest.mark.parametrize("dtype", samples.REDUCE_TYPES)
@pytest.mark.parametrize("mode", samples.REDUCE_MODES)
@pytest.mark.parametrize("combine", sorted(REDUCE))
@pytest.mark.parametrize("family", ["nv2", "ext"])
def test_builder_reduce_tile(lavapipe, dtype, mode, combine, family):
    m = n = 16 if mode == "2x2" else 8
    words = samples.coop_reduce_tile(m, n, mode, combine, dtype, family, local_size=8)
    rng = np.random.default_rng(zlib.crc32(repr((dtype, mode, combine, family)).encode()))
    x = _values(rng, DTYPES[dtype], (m, n))
    want = _reduce_expected(x, mode, combine)
    out_m, out_n = want.shape
    arrays = [x.reshape(-1), np.full(out_m * out_n, 0x5A, np.uint8).astype(DTYPES[dtype])]
    got = _dispatch_ref(words, arrays, 8).reshape(out_m, out_n)
    np.testing.assert_array_equal(got, want)
    # On the device: the reported 8x8 shapes only (a 2x2 result would be 4x4; lavapipe also crashes
    # creating the pipeline of this sample at 16x16 with local size 8, see docs/ref_coopmat.md).
    device_words = lower(words, Target.profile("lavapipe")).words() if family == "ext" else words
    if mode != "2x2" and lavapipe.info.cooperative_matrix_nv2 and _device_has(lavapipe, device_words):
        dev = _dispatch_device(lavapipe, device_words, arrays).reshape(out_m, out_n)
        np.testing.assert_array_equal(dev, want)
