"""The capability -> (extension, feature struct, field) tables and device creation from them."""

from __future__ import annotations

import pytest
from vk_support import device, validated_instance, vk_info, vk_instance  # noqa: F401 - fixtures

from hydroplane.vk import Device, UnsupportedFeature, requirements
from hydroplane.vk.features import CAPABILITY_FEATURES, FEATURE_STRUCTS


def test_seed_002_capabilities_map_to_their_feature_bits():
    req = requirements(["Shader", "CooperativeMatrixKHR", "Float16", "StorageBuffer16BitAccess", "VulkanMemoryModel"],
                       ["SPV_KHR_cooperative_matrix", "SPV_KHR_16bit_storage"])
    assert req.bits == {"cooperative_matrix_khr": {"cooperativeMatrix"}, "float16_int8": {"shaderFloat16"},
                        "storage_16bit": {"storageBuffer16BitAccess"}, "vulkan_memory_model": {"vulkanMemoryModel"}}
    assert req.extensions == {"SPV_KHR_cooperative_matrix", "SPV_KHR_16bit_storage"}
    assert req.reasons["float16_int8.shaderFloat16"] == "capability Float16"


@pytest.mark.parametrize("cap", ["CooperativeMatrixReductionsNV", "CooperativeMatrixReductionsEXT"])
def test_shared_nv2_ext_capability_follows_the_module_extension(cap):
    nv2 = requirements([cap], ["SPV_NV_cooperative_matrix2"])
    assert nv2.bits == {"cooperative_matrix2_nv": {"cooperativeMatrixReductions"}}
    ext = requirements([cap], ["SPV_EXT_cooperative_matrix_maintenance1"])
    assert ext.bits == {"cooperative_matrix_maintenance1_ext": {"cooperativeMatrixReductions"}}


def test_every_table_field_exists_in_its_struct():
    for cap, pairs in CAPABILITY_FEATURES.items():
        for key, bit in pairs:
            if key != "core":
                assert bit in FEATURE_STRUCTS[key].bits, (cap, key, bit)


def test_unknown_names_are_reported_not_ignored():
    with pytest.raises(UnsupportedFeature, match="capability MadeUpCapability.*extension SPV_made_up") as info:
        requirements(["Shader", "MadeUpCapability"], ["SPV_made_up"])
    assert info.value.missing == ("capability MadeUpCapability", "extension SPV_made_up")


def test_device_creation_names_every_missing_feature(vk_info):
    if vk_info.support()["bfloat16"]:
        pytest.fail("this test expects lavapipe, which has no bfloat16")
    with pytest.raises(UnsupportedFeature) as info:
        Device(vk_info, capabilities=["BFloat16TypeKHR", "CooperativeMatrixKHR"], extensions=["SPV_KHR_bfloat16"])
    text = str(info.value)
    assert "VkPhysicalDeviceShaderBfloat16FeaturesKHR.shaderBFloat16Type (for capability BFloat16TypeKHR)" in text
    assert "VK_KHR_shader_bfloat16 (for SPIR-V extension SPV_KHR_bfloat16)" in text
    assert "cooperativeMatrix" not in text  # lavapipe has that one
    assert len(info.value.missing) == 2


def test_device_enables_exactly_what_was_asked_plus_defaults(vk_info):
    with Device(vk_info, capabilities=["Int8", "StorageBuffer8BitAccess"]) as dev:
        assert dev.has_bit("float16_int8", "shaderInt8")
        assert not dev.has_bit("float16_int8", "shaderFloat16")
        assert not dev.has_bit("cooperative_matrix_khr", "cooperativeMatrix")
        assert "VK_KHR_cooperative_matrix" not in dev.enabled_extensions
        # Core in Vulkan 1.2+: no extension needed for 8-bit storage on a 1.4 device.
        assert "VK_KHR_8bit_storage" not in dev.enabled_extensions
        with pytest.raises(UnsupportedFeature, match="was not created with"):
            dev.require(["Float16"])
        dev.require(["Int8"])


def test_enable_all_turns_on_every_offered_coop_feature(device, vk_info):
    for key in ("cooperative_matrix_khr", "cooperative_matrix2_nv"):
        for bit, offered in vk_info.features[key].items():
            assert device.has_bit(key, bit) == offered, (key, bit)
    assert {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2"} <= set(device.enabled_extensions)


def test_pick_device_prefers_cooperative_matrices_then_discrete(vk_info):
    from dataclasses import replace

    from hydroplane.vk import pick_device

    no_coop = replace(vk_info, index=0, device_type="discrete", features={**vk_info.features,
                                                                          "cooperative_matrix_khr": {}})
    coop_cpu = replace(vk_info, index=1)
    assert pick_device([no_coop, coop_cpu]) is coop_cpu
    discrete = replace(vk_info, index=2, device_type="discrete")
    assert pick_device([coop_cpu, discrete]) is discrete
    with pytest.raises(UnsupportedFeature, match="compute queue"):
        pick_device([replace(vk_info, compute_queue_family=-1)])
