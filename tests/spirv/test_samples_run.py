"""The builder-made samples compute the right numbers on a real Vulkan driver (lavapipe in the userland).

Each run: fresh seeded random inputs, poisoned outputs, device created from the module's
own reflected capabilities and extensions, result compared with NumPy.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hydroplane import vk
from hydroplane.spirv import reflect
from hydroplane.spirv.samples import COOP_COMBINATIONS, coop_matmul_tile, coop_reduce_tile, vector_add

pytestmark = pytest.mark.vulkan

NUMPY_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
               "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16, "s32": np.int32,
               "u32": np.uint32, "s64": np.int64, "u64": np.uint64}
POISON = 0xA5


def _device(words) -> vk.Device:
    interface = reflect(words)
    try:
        return vk.Device(capabilities=interface.capabilities, extensions=interface.extensions)
    except vk.UnsupportedFeature as err:
        pytest.fail(f"the userland's lavapipe lacks what this sample needs: {err}")


def _random(rng, dtype: str, shape) -> np.ndarray:
    t = NUMPY_TYPES[dtype]
    if dtype[0] == "f" or dtype == "bf16":
        return rng.integers(-8, 9, size=shape).astype(np.float32).__truediv__(4).astype(t)
    info = np.iinfo(t)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(t)


@pytest.mark.parametrize("dtype", ["f32", "f16", "s8", "u16", "s32", "u64"])
def test_vector_add_runs(dtype):
    rng = np.random.default_rng(abs(hash(dtype)) % 2**32)
    n, local = 300, 64
    a, b = _random(rng, dtype, n), _random(rng, dtype, n)
    words = vector_add(dtype, local_size=local)
    with _device(words) as dev:
        bufs = [dev.buffer(a), dev.buffer(b), dev.buffer(a.nbytes + 16)]
        bufs[2].fill(POISON)
        pipeline = dev.pipeline(words, reflect(words).bindings, push_constant_size=4)
        dev.dispatch(pipeline, (-(-n // local), 1, 1), dict(enumerate(bufs)), push=np.uint32(n))
        out = bufs[2].read(np.uint8)
    result = out[:a.nbytes].view(a.dtype)
    np.testing.assert_array_equal(result, (a + b).astype(a.dtype))
    assert (out[a.nbytes:] == POISON).all()  # nothing written past n


def _reference(a, b, c, c_type) -> np.ndarray:
    if c_type[0] == "f":
        exact = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    else:
        exact = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
    return exact.astype(NUMPY_TYPES[c_type])


@pytest.mark.parametrize("a_type,c_type,layout", [("f16", "f32", "row"), ("f16", "f32", "column"),
                                                  ("f16", "f16", "row"), ("s8", "s32", "row"),
                                                  ("u8", "u32", "column")])
def test_coop_matmul_tile_runs(a_type, c_type, layout):
    """Every subgroup tile shape the device reports for these types (lavapipe: 8x8x8)."""
    shapes = sorted({(s.m, s.n, s.k) for s in vk.pick_device().coop_shapes(a_type, c_type)})
    assert shapes, f"the device reports no {a_type} x {a_type} + {c_type} subgroup shape"
    for m, n, k in shapes:
        rng = np.random.default_rng(m * 10000 + n * 100 + k + len(a_type + c_type + layout))
        a, b = _random(rng, a_type, (m, k)), _random(rng, a_type, (k, n))
        c = _random(rng, c_type, (m, n))
        words = coop_matmul_tile(m, n, k, a_type, c_type, layout=layout)
        order = "C" if layout == "row" else "F"
        with _device(words) as dev:
            flat = [np.asarray(x).flatten(order=order) for x in (a, b, c)]
            bufs = [dev.buffer(x) for x in flat] + [dev.buffer(flat[2].nbytes)]
            bufs[3].fill(POISON)
            dev.dispatch(dev.pipeline(words, reflect(words).bindings), (1, 1, 1), dict(enumerate(bufs)))
            d = bufs[3].read(NUMPY_TYPES[c_type]).reshape((m, n), order=order)
        np.testing.assert_array_equal(d, _reference(a, b, c, c_type), err_msg=f"{m}x{n}x{k}")


def _reduce_reference(tile: np.ndarray, reduce: str, combine: str) -> np.ndarray:
    fold = {"add": np.add, "max": np.maximum, "min": np.minimum}[combine]
    if reduce == "Row":
        return np.repeat(fold.reduce(tile, axis=1, keepdims=True), tile.shape[1], axis=1)
    if reduce == "Column":
        return np.repeat(fold.reduce(tile, axis=0, keepdims=True), tile.shape[0], axis=0)
    if reduce == "Row|Column":
        return np.full_like(tile, fold.reduce(tile, axis=None))
    m, n = tile.shape
    return fold.reduce(fold.reduce(tile.reshape(m // 2, 2, n // 2, 2), axis=3), axis=1)


# 2x2 is checked by spirv-val only: its 8x8 result needs a 16x16 source, and lavapipe (Mesa
# 26.2) crashes creating any pipeline with a 16x16 subgroup-scope matrix.
@pytest.mark.parametrize("reduce,combine,dtype", [("Row", "add", "f32"), ("Column", "max", "f16"),
                                                  ("Row|Column", "min", "s32"), ("Row", "max", "u32"),
                                                  ("Column", "add", "s32")])
def test_coop_reduce_tile_runs(reduce, combine, dtype):
    m = n = 8
    rng = np.random.default_rng(len(reduce) * 31 + len(combine) + len(dtype))
    tile = _random(rng, dtype, (m, n))
    words = coop_reduce_tile(m, n, reduce, combine, dtype, family="nv2")
    expected = _reduce_reference(tile, reduce, combine).astype(tile.dtype)  # add.reduce widens ints
    with _device(words) as dev:
        src, dst = dev.buffer(tile), dev.buffer(expected.nbytes)
        dst.fill(POISON)
        dev.dispatch(dev.pipeline(words, reflect(words).bindings), (1, 1, 1), {0: src, 1: dst})
        out = dst.read(tile.dtype).reshape(expected.shape)
    np.testing.assert_array_equal(out, expected)


def test_every_reported_khr_shape_runs():
    """Whatever (types, shape) the device lists and the sample can make (bf16 on the H200 too)."""
    makeable = [(s.a, s.c, s.m, s.n, s.k) for s in vk.pick_device().coop_shapes()
                if s.a == s.b and s.c == s.result and (s.a, s.c) in COOP_COMBINATIONS and not s.saturating]
    assert makeable, "the device lists no cooperative-matrix shape the sample can make"
    for a_type, c_type, m, n, k in sorted(set(makeable)):
        rng = np.random.default_rng(m * n * k)
        a, b = _random(rng, a_type, (m, k)), _random(rng, a_type, (k, n))
        c = _random(rng, c_type, (m, n))
        words = coop_matmul_tile(m, n, k, a_type, c_type)
        with _device(words) as dev:
            bufs = [dev.buffer(np.ascontiguousarray(x)) for x in (a, b, c)] + [dev.buffer(c.nbytes)]
            bufs[3].fill(POISON)
            dev.dispatch(dev.pipeline(words, reflect(words).bindings), (1, 1, 1), dict(enumerate(bufs)))
            d = bufs[3].read(NUMPY_TYPES[c_type]).reshape((m, n))
        np.testing.assert_array_equal(d, _reference(a, b, c, c_type), err_msg=f"{a_type}->{c_type} {m}x{n}x{k}")
