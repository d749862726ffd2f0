"""Cooperative matrices on the device: the seed-002 tile kernel built with our module builder (KHR,
f16 -> f32 and 8-bit integers with signedness operands) at the shape the device reports, validated by
spirv-val and compared with NumPy; and an NV2 reduction compiled from GLSL by glslang."""

from __future__ import annotations

import numpy as np
import pytest
from vk_support import (  # noqa: F401 - fixtures
    compile_glsl,
    device,
    spirv_validate,
    validated_instance,
    vk_info,
    vk_instance,
)

from hydroplane.vk import Device, UnsupportedFeature

NUMPY_TYPES = {"f16": np.float16, "f32": np.float32, "s8": np.int8, "u8": np.uint8, "s32": np.int32,
               "u32": np.uint32}


def _coop_matmul_tile():
    try:
        from hydroplane.spirv.samples import coop_matmul_tile
    except ImportError as exc:  # the builder's sample is another engineer's deliverable
        pytest.fail(f"hydroplane.spirv.samples.coop_matmul_tile is not available yet: {exc}")
    return coop_matmul_tile


def _shape(vk_info, a_type, c_type):
    shapes = vk_info.coop_shapes(a=a_type, c=c_type)
    if not shapes:
        pytest.fail(f"{vk_info.name} reports no subgroup {a_type}->{c_type} shape: {vk_info.coop_khr}")
    return shapes[0]


def _random(rng, type_name, shape):
    dtype = NUMPY_TYPES[type_name]
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


@pytest.mark.parametrize("a_type,c_type", [("f16", "f32"), ("s8", "s32"), ("u8", "u32")])
def test_builder_tile_kernel_matches_numpy(device, vk_info, spirv_val, tmp_path, a_type, c_type):
    from hydroplane.spirv import reflect

    shape = _shape(vk_info, a_type, c_type)
    m, n, k = shape.m, shape.n, shape.k
    words = _coop_matmul_tile()(m, n, k, a_type=a_type, c_type=c_type, local_size=vk_info.subgroup_size)
    spirv_validate(spirv_val, words, tmp_path, f"tile_{a_type}_{c_type}")
    iface = reflect(words)
    assert "CooperativeMatrixKHR" in iface.capabilities
    rng = np.random.default_rng(7)
    a, b, c = _random(rng, a_type, (m, k)), _random(rng, a_type, (k, n)), _random(rng, c_type, (m, n))
    d_init = np.full((m, n), 0x7FC00000 if c_type == "f32" else 0x5A5A5A5A, np.uint32)
    with device.pipeline(words, iface.bindings, capabilities=iface.capabilities,
                         extensions=iface.extensions) as pipe, \
            device.buffer(a) as A, device.buffer(b) as B, device.buffer(c) as C, device.buffer(d_init) as D:
        device.dispatch(pipe, 1, {0: A, 1: B, 2: C, 3: D})
        got = D.read(NUMPY_TYPES[c_type], (m, n))
    if c_type == "f32":
        expected = a.astype(np.float32) @ b.astype(np.float32) + c
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    else:
        expected = (a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)).astype(NUMPY_TYPES[c_type])
        np.testing.assert_array_equal(got, expected)


def test_signedness_operands_matter(device, vk_info, tmp_path):
    """s8 data with negative values: the result must be the signed product, not the unsigned one."""
    from hydroplane.spirv import reflect

    shape = _shape(vk_info, "s8", "s32")
    m, n, k = shape.m, shape.n, shape.k
    words = _coop_matmul_tile()(m, n, k, a_type="s8", c_type="s32", local_size=vk_info.subgroup_size)
    iface = reflect(words)
    a = -np.ones((m, k), np.int8)
    b = np.full((k, n), 3, np.int8)
    c = np.zeros((m, n), np.int32)
    with device.pipeline(words, iface.bindings, capabilities=iface.capabilities,
                         extensions=iface.extensions) as pipe, \
            device.buffer(a) as A, device.buffer(b) as B, device.buffer(c) as C, device.buffer(m * n * 4) as D:
        device.dispatch(pipe, 1, {0: A, 1: B, 2: C, 3: D})
        assert (D.read(np.int32, (m, n)) == -3 * k).all()


def test_a_device_without_the_capability_refuses_the_pipeline(vk_info):
    coop = _coop_matmul_tile()
    from hydroplane.spirv import reflect

    shape = _shape(vk_info, "f16", "f32")
    words = coop(shape.m, shape.n, shape.k, local_size=vk_info.subgroup_size)
    iface = reflect(words)
    with Device(vk_info) as plain:  # created without the module's capabilities
        with pytest.raises(UnsupportedFeature, match="cooperativeMatrix .for capability CooperativeMatrixKHR"):
            plain.pipeline(words, iface.bindings, capabilities=iface.capabilities, extensions=iface.extensions)
    with Device(vk_info, capabilities=iface.capabilities, extensions=iface.extensions) as exact:
        assert "VK_KHR_cooperative_matrix" in exact.enabled_extensions
        assert exact.has_bit("cooperative_matrix_khr", "cooperativeMatrix")
        assert exact.has_bit("float16_int8", "shaderFloat16")
        exact.pipeline(words, iface.bindings, capabilities=iface.capabilities, extensions=iface.extensions).close()


REDUCE_MODES = {"row": "gl_CooperativeMatrixReduceRowNV", "column": "gl_CooperativeMatrixReduceColumnNV",
                "both": "gl_CooperativeMatrixReduceRowAndColumnNV"}


@pytest.mark.parametrize("mode", sorted(REDUCE_MODES))
def test_nv2_reduce_kernel_from_glsl(device, vk_info, glslang, spirv_val, tmp_path, mode):
    if not vk_info.has_feature("cooperative_matrix2_nv", "cooperativeMatrixReductions"):
        pytest.fail(f"{vk_info.name} lacks NV2 reductions; the test userland's lavapipe has them")
    shape = _shape(vk_info, "f16", "f32")
    m, n = shape.m, shape.n
    words = compile_glsl(glslang, "nv2_reduce.comp", tmp_path,
                         {"TILE_M": m, "TILE_N": n, "SUBGROUP": vk_info.subgroup_size, "MODE": REDUCE_MODES[mode]})
    spirv_validate(spirv_val, words, tmp_path, f"reduce_{mode}")
    from hydroplane.spirv import reflect

    iface = reflect(words)
    # One capability value with an NV and an EXT name: SPV_NV_cooperative_matrix2 says it is NV2's.
    assert {"CooperativeMatrixReductionsNV", "CooperativeMatrixReductionsEXT"} & set(iface.capabilities)
    assert "SPV_NV_cooperative_matrix2" in iface.extensions
    rng = np.random.default_rng(11)
    src = rng.integers(-50, 50, size=(m, n)).astype(np.float32)  # integers: sums are exact in any order
    with device.pipeline(words, iface.bindings, capabilities=iface.capabilities,
                         extensions=iface.extensions) as pipe, \
            device.buffer(src) as S, device.buffer(np.full((m, n), np.nan, np.float32)) as D:
        device.dispatch(pipe, 1, {0: S, 1: D})
        got = D.read(np.float32, (m, n))
    expected = {"row": np.repeat(src.sum(axis=1, keepdims=True), n, axis=1),
                "column": np.repeat(src.sum(axis=0, keepdims=True), m, axis=0),
                "both": np.full((m, n), src.sum())}[mode]
    np.testing.assert_array_equal(got, expected)
