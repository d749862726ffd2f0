"""Robust buffer access for one pipeline (VK_EXT_pipeline_robustness): what the device enables, what the
pipeline-creation call receives, what a robust pipeline does out of bounds, a device that cannot, and the
pipeline cache with robust and plain pipelines of the same words.

Lavapipe's own default (`default_storage_robustness`) is robustBufferAccess2 already, so the zeros and dropped
writes below would come without the struct too: what the struct is asked for is checked on the create call."""

from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pytest
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import Device, UnsupportedFeature
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S

SCALE_ADD_BINDINGS = [(0, 0), (0, 1), (1, 0)]
PUSH = np.dtype([("scale", "<f4"), ("count", "<u4")])
RBA = E.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_EXT
RBA2 = E.VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_ROBUST_BUFFER_ACCESS_2_EXT


class _Header(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def scale_add_words(glslang, tmp_path_factory):
    return compile_glsl(glslang, "scale_add.comp", tmp_path_factory.mktemp("glsl"))


@pytest.fixture
def created(monkeypatch):
    """The pNext chains (as [(sType, struct address)]) each vkCreateComputePipelines call of any Device received."""
    seen: list[list[tuple[int, int]]] = []
    call = Device.call

    def spy(self, name, *args):
        if name == "vkCreateComputePipelines":
            chain, pointer = [], args[2]._obj.pNext
            while pointer:
                header = _Header.from_address(pointer)
                chain.append((header.sType, pointer))
                pointer = header.pNext
            seen.append(chain)
        return call(self, name, *args)

    monkeypatch.setattr(Device, "call", spy)
    return seen


def _robustness_structs(chain) -> list[S.VkPipelineRobustnessCreateInfoEXT]:
    return [S.VkPipelineRobustnessCreateInfoEXT.from_address(address) for stype, address in chain
            if stype == S.VkPipelineRobustnessCreateInfoEXT.STYPE]


def _pipeline(dev, words, robust):
    return dev.pipeline(words, SCALE_ADD_BINDINGS, push_constant_size=PUSH.itemsize, spec={0: 64}, robust=robust)


def _without(info, key, bit):
    """The DeviceInfo as if the device did not offer `bit` of feature struct `key`."""
    features = {k: dict(v) for k, v in info.features.items()}
    features[key][bit] = False
    return dataclasses.replace(info, features=features)


def test_the_device_enables_pipeline_robustness_and_not_device_wide_robust_access(device, vk_info):
    assert vk_info.has_feature("pipeline_robustness", "pipelineRobustness")
    assert device.has_bit("pipeline_robustness", "pipelineRobustness")
    assert "VK_EXT_pipeline_robustness" in device.enabled_extensions  # the instance asks for Vulkan 1.3
    assert not device.robust and not device.has_bit("core", "robustBufferAccess")
    assert not device.has_bit("robustness2", "robustBufferAccess2")
    assert device.pipeline_robustness == "robustBufferAccess2"
    assert vk_info.default_storage_robustness in E.BUFFER_ROBUSTNESS_NAMES.values()
    assert vk_info.robust_storage_access_alignment in (1, 4)


def test_a_robust_pipeline_chains_robust_buffer_access_2_and_a_plain_one_nothing(device, scale_add_words, created):
    with _pipeline(device, scale_add_words, True) as robust, _pipeline(device, scale_add_words, False) as plain:
        assert robust.robustness == "robustBufferAccess2" and plain.robustness is None
        assert plain.robustness_info is None
    (robust_chain, plain_chain) = created
    (info,) = _robustness_structs(robust_chain)
    assert (info.storageBuffers, info.uniformBuffers) == (RBA2, RBA2)
    assert (info.vertexInputs, info.images) == (0, 0)  # the device's default: a compute pipeline has neither
    assert plain_chain == []


def test_a_robust_pipeline_reads_zero_and_drops_writes_past_the_buffers(device, scale_add_words):
    """out[i] = a[i] * scale + b[i] for i < count, with a and b half as long as count: the reads past their end
    give zero, and the writes past out's end leave the next buffer alone."""
    rng = np.random.default_rng(20261204)
    n = 64
    a = np.concatenate([rng.standard_normal(n - 6), [0.0, -0.0, 3e38, -3e38, 1e-40, -7.0]]).astype(np.float32)
    b = rng.uniform(-1e3, 1e3, n).astype(np.float32)
    scale = np.float32(-1.25)
    with np.errstate(over="ignore"):  # +-3e38 * 1.25 is +-inf, on the device too
        expected = a * scale + b
    with _pipeline(device, scale_add_words, True) as pipe, device.buffer(a) as A, device.buffer(b) as B, \
            device.buffer(np.full(2 * n, np.nan, np.float32)) as out:
        device.dispatch(pipe, 2, {0: A, 1: B, (1, 0): out}, push=np.array((scale, 2 * n), PUSH))
        got = out.read(np.float32)
    np.testing.assert_array_equal(got[:n], expected)
    np.testing.assert_array_equal(got[n:], np.zeros(n, np.float32))

    neighbour_values = rng.standard_normal(n).astype(np.float32)
    with _pipeline(device, scale_add_words, True) as pipe, device.buffer(a) as A, device.buffer(b) as B, \
            device.buffer(np.full(n, np.nan, np.float32)) as out, device.buffer(neighbour_values) as neighbour:
        device.dispatch(pipe, 4, {0: A, 1: B, (1, 0): out}, push=np.array((scale, 4 * n), PUSH))
        np.testing.assert_array_equal(out.read(np.float32), expected)
        np.testing.assert_array_equal(neighbour.read(np.float32), neighbour_values)


def test_robust_buffer_access_where_robustness2_is_not_offered(vk_info, scale_add_words, created):
    info = _without(vk_info, "robustness2", "robustBufferAccess2")
    with Device(info, enable_all=True) as dev:
        assert dev.pipeline_robustness == "robustBufferAccess"
        with _pipeline(dev, scale_add_words, True) as pipe:
            assert pipe.robustness == "robustBufferAccess"
            n = 32
            a = np.arange(-n, n, 2, dtype=np.float32)
            with dev.buffer(a) as A, dev.buffer(-a) as B, dev.buffer(np.full(n, np.nan, np.float32)) as out:
                dev.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=np.array((2.0, n), PUSH))
                np.testing.assert_array_equal(out.read(np.float32), a)
    (info_struct,) = _robustness_structs(created[-1])
    assert (info_struct.storageBuffers, info_struct.uniformBuffers) == (RBA, RBA)


def test_a_device_without_pipeline_robustness_says_so_and_refuses_a_robust_pipeline(vk_info, scale_add_words):
    info = _without(vk_info, "pipeline_robustness", "pipelineRobustness")
    with Device(info, enable_all=True) as dev:
        assert "VK_EXT_pipeline_robustness" not in dev.enabled_extensions
        assert dev.pipeline_robustness is None
        with pytest.raises(UnsupportedFeature, match="VK_EXT_pipeline_robustness") as err:
            _pipeline(dev, scale_add_words, True)
        assert err.value.missing == ("pipelineRobustness",)
        with _pipeline(dev, scale_add_words, False) as plain:
            assert plain.robustness is None


def test_a_robust_device_makes_every_pipeline_robust_without_the_struct(vk_info, scale_add_words, created):
    with Device(vk_info, enable_all=True, robust=True) as dev:
        assert dev.pipeline_robustness == "robustBufferAccess2"
        with _pipeline(dev, scale_add_words, True) as robust, _pipeline(dev, scale_add_words, False) as plain:
            assert robust.robustness == plain.robustness == "robustBufferAccess2"
            assert robust.robustness_info is None
    assert all(_robustness_structs(chain) == [] for chain in created)


def test_the_pipeline_cache_takes_robust_and_plain_pipelines_of_the_same_words(vk_info, scale_add_words):
    """Both pipelines go into one cache; a device seeded with its data makes both again (the robust one with its
    struct) and runs them."""
    with Device(vk_info, enable_all=True) as first:
        with _pipeline(first, scale_add_words, True), _pipeline(first, scale_add_words, False):
            data = first.pipeline_cache_data()
    assert data
    n = 64
    a = np.linspace(-4, 4, n, dtype=np.float32)
    with Device(vk_info, enable_all=True, pipeline_cache=data) as second:
        for robust in (True, False):
            with _pipeline(second, scale_add_words, robust) as pipe, second.buffer(a) as A, second.buffer(a) as B, \
                    second.buffer(np.full(n, np.nan, np.float32)) as out:
                assert (pipe.robustness_info is not None) == robust
                second.dispatch(pipe, 1, {0: A, 1: B, (1, 0): out}, push=np.array((3.0, n), PUSH))
                np.testing.assert_array_equal(out.read(np.float32), a * np.float32(3) + a)
