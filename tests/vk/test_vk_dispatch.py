"""Plain compute dispatch: buffers in and out, push and specialization constants, two descriptor sets,
record once / submit many, cached dispatch(), required subgroup size, and the errors for bad calls."""

from __future__ import annotations

import numpy as np
import pytest
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import Binding, UnsupportedFeature, UsageError

SCALE_ADD_BINDINGS = [(0, 0, "storage"), Binding(0, 1), (1, 0)]
PUSH = np.dtype([("scale", "<f4"), ("count", "<u4")])


@pytest.fixture(scope="module")
def scale_add_words(glslang, tmp_path_factory):
    return compile_glsl(glslang, "scale_add.comp", tmp_path_factory.mktemp("glsl"))


def _scale_add(device, words, local_size=64, offset=0.0):
    return device.pipeline(words, SCALE_ADD_BINDINGS, push_constant_size=PUSH.itemsize,
                           spec={0: local_size, 1: np.float32(offset)})


@pytest.mark.parametrize("host_visible", [True, False], ids=["mapped", "device-local"])
def test_plain_kernel_matches_numpy(device, scale_add_words, host_visible):
    rng = np.random.default_rng(1)
    n = 1000
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    with _scale_add(device, scale_add_words, offset=0.25) as pipe, \
            device.buffer(a, host_visible=host_visible) as A, device.buffer(b, host_visible=host_visible) as B, \
            device.buffer(np.full(n + 16, np.nan, np.float32), host_visible=host_visible) as out:
        device.dispatch(pipe, (n + 63) // 64, {0: A, 1: B, (1, 0): out}, push=np.array((1.5, n), PUSH))
        got = out.read(np.float32)
    expected = (a * np.float32(1.5) + b) + np.float32(0.25)
    np.testing.assert_allclose(got[:n], expected, rtol=1e-6, atol=1e-6)
    assert np.isnan(got[n:]).all(), "elements past count stay as poisoned"


def test_record_once_submit_many_sees_new_inputs(device, scale_add_words):
    rng = np.random.default_rng(2)
    n = 256
    with _scale_add(device, scale_add_words) as pipe, device.buffer(n * 4) as A, device.buffer(n * 4) as B, \
            device.buffer(n * 4) as out:
        rec = device.record(pipe, n // 64, {0: A, 1: B, (1, 0): out}, np.array((2.0, n), PUSH))
        for _ in range(3):
            a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
            A.write(a)
            B.write(b)
            out.fill(0xFF)
            rec.run()
            np.testing.assert_allclose(out.read(np.float32), a * 2 + b, rtol=1e-6)
        rec.close()


def test_repeated_dispatch_reuses_the_recording(device, scale_add_words):
    n = 64
    with _scale_add(device, scale_add_words) as pipe, device.buffer(np.ones(n, np.float32)) as A, \
            device.buffer(np.arange(n, dtype=np.float32)) as B, device.buffer(n * 4) as out:
        push = np.array((3.0, n), PUSH)
        device.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=push)
        cached = len(device._dispatch_cache)
        out.fill(0)
        device.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=push)
        assert len(device._dispatch_cache) == cached
        np.testing.assert_array_equal(out.read(np.float32), 3 + np.arange(n, dtype=np.float32))
        device.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=np.array((0.5, n), PUSH))
        np.testing.assert_array_equal(out.read(np.float32), 0.5 + np.arange(n, dtype=np.float32))


def test_specialization_constant_changes_local_size(device, scale_add_words):
    n = 96
    a = np.arange(n, dtype=np.float32)
    with _scale_add(device, scale_add_words, local_size=32) as pipe, device.buffer(a) as A, \
            device.buffer(np.zeros(n, np.float32)) as B, device.buffer(np.zeros(n, np.float32)) as out:
        device.dispatch(pipe, 3, {0: A, 1: B, (1, 0): out}, push=np.array((1.0, n), PUSH))
        np.testing.assert_array_equal(out.read(np.float32), a)  # 3 groups of 32 cover all 96


@pytest.fixture(scope="module")
def subgroup_words(glslang, tmp_path_factory):
    return compile_glsl(glslang, "subgroup_info.comp", tmp_path_factory.mktemp("glsl"))


def test_required_subgroup_size(device, vk_info, subgroup_words):
    size = vk_info.max_subgroup_size
    with device.pipeline(subgroup_words, [(0, 0)], subgroup_size=size, require_full_subgroups=True) as pipe, \
            device.buffer(np.full(8, 0xDEAD, np.uint32)) as out:
        device.dispatch(pipe, 4, {0: out})
        info = out.read(np.uint32).reshape(4, 2)
    assert (info[:, 0] == size).all()
    assert (info[:, 1] == 32 // size).all()


def test_unsupported_subgroup_size_names_the_range(device, vk_info, subgroup_words):
    with pytest.raises(UnsupportedFeature, match=r"subgroup size 3 .*range"):
        device.pipeline(subgroup_words, [(0, 0)], subgroup_size=3)
    with pytest.raises(UnsupportedFeature, match="range"):
        device.pipeline(subgroup_words, [(0, 0)], subgroup_size=vk_info.max_subgroup_size * 2)


def test_wrong_bindings_and_push_sizes_are_named(device, scale_add_words):
    with _scale_add(device, scale_add_words) as pipe, device.buffer(256) as buf:
        with pytest.raises(UsageError, match=r"missing \[\(1, 0\)\]"):
            device.dispatch(pipe, 1, {0: buf, 1: buf}, push=np.array((1.0, 1), PUSH))
        with pytest.raises(UsageError, match="8 bytes of push constants; got 4"):
            device.dispatch(pipe, 1, {0: buf, 1: buf, (1, 0): buf}, push=np.float32(1))
        with pytest.raises(UsageError, match="at least 1"):
            device.dispatch(pipe, (0, 1, 1), {0: buf, 1: buf, (1, 0): buf}, push=np.array((1.0, 1), PUSH))


def test_bad_words_raise_before_reaching_the_driver(device):
    with pytest.raises(UsageError, match="not a SPIR-V module"):
        device.pipeline(np.arange(10, dtype=np.uint32), [])
    with pytest.raises(UsageError, match="not a SPIR-V module"):
        device.pipeline([], [])
    with pytest.raises(UsageError, match="multiple of 4"):
        device.pipeline(b"\x03\x02\x23", [])
    with pytest.raises(UsageError, match="uint32"):
        device.pipeline(np.zeros(8, np.float32), [])


def test_bad_binding_descriptions(device, scale_add_words):
    with pytest.raises(UsageError, match="kind must be one of"):
        device.pipeline(scale_add_words, [(0, 0, "image")])
    with pytest.raises(UsageError, match="listed twice"):
        device.pipeline(scale_add_words, [(0, 0, "storage"), (0, 0, "uniform")])
    with pytest.raises(UsageError, match="multiple of 4"):
        device.pipeline(scale_add_words, SCALE_ADD_BINDINGS, push_constant_size=6)
    with pytest.raises(UsageError, match="specialization constant"):
        device.pipeline(scale_add_words, SCALE_ADD_BINDINGS, push_constant_size=8, spec={0: "64"})


def test_reflected_bindings_are_accepted(device, scale_add_words):
    from hydroplane.spirv import reflect  # tests may import any layer; vk itself does not

    iface = reflect(scale_add_words)
    assert iface.push_constant_size == PUSH.itemsize
    with device.pipeline(scale_add_words, iface.bindings, push_constant_size=iface.push_constant_size,
                         spec={0: 64}, capabilities=iface.capabilities, extensions=iface.extensions) as pipe:
        assert [(b.set, b.binding, b.kind) for b in pipe.bindings] == [(0, 0, "storage"), (0, 1, "storage"),
                                                                       (1, 0, "storage")]


def test_uniform_buffer_binding_from_reflection(device, glslang, tmp_path):
    from hydroplane.spirv import reflect

    words = compile_glsl(glslang, "uniform_scale.comp", tmp_path)
    iface = reflect(words)
    n = 100
    src = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    params = np.zeros(4, np.float32)
    params[:2] = (3.0, -1.0)
    params.view(np.uint32)[2] = n
    with device.pipeline(words, iface.bindings) as pipe, device.buffer(params) as P, device.buffer(src) as S, \
            device.buffer(np.full(n, np.nan, np.float32)) as D:
        assert [b.kind for b in pipe.bindings] == ["uniform", "storage", "storage"]
        device.dispatch(pipe, (n + 31) // 32, {0: P, 1: S, 2: D})
        np.testing.assert_allclose(D.read(np.float32), src * 3 - 1, rtol=1e-6)


def test_the_dispatch_cache_stays_bounded(device, scale_add_words):
    from hydroplane.vk.device import DISPATCH_CACHE_SIZE

    n = 64
    with _scale_add(device, scale_add_words) as pipe, device.buffer(np.ones(n, np.float32)) as A, \
            device.buffer(np.zeros(n, np.float32)) as B, device.buffer(n * 4) as out:
        for scale in range(DISPATCH_CACHE_SIZE + 10):
            device.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=np.array((scale, n), PUSH))
            assert len(device._dispatch_cache) <= DISPATCH_CACHE_SIZE
        np.testing.assert_array_equal(out.read(np.float32), np.full(n, DISPATCH_CACHE_SIZE + 9, np.float32))


@pytest.mark.parametrize("value,expected", [
    (b"\x01\x02", b"\x01\x02"), (np.float16(1.5), np.float16(1.5).tobytes()), (True, b"\x01\x00\x00\x00"),
    (-2, (-2).to_bytes(4, "little", signed=True)), (7, b"\x07\x00\x00\x00"), (0.5, np.float32(0.5).tobytes()),
    (np.uint64(2**40), (2**40).to_bytes(8, "little"))])
def test_specialization_constant_bytes(value, expected):
    from hydroplane.vk.pipeline import spec_bytes

    assert spec_bytes(value) == expected
