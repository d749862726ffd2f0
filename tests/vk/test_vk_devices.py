"""devices(): the capability picture of each device, cross-checked against vulkaninfo where it overlaps."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from vk_support import device, validated_instance, vk_info, vk_instance  # noqa: F401 - fixtures

from hydroplane.vk import devices
from hydroplane.vk.commands import render_table


@pytest.fixture(scope="module")
def vulkaninfo_text() -> str:
    tool = shutil.which("vulkaninfo")
    if not tool:
        pytest.fail("vulkaninfo is missing; run the suite through scripts/test")
    proc = subprocess.run([tool], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _value(text: str, key: str) -> str:
    match = re.search(rf"^\s*{key}\s*=\s*(.+)$", text, re.M)
    assert match, f"vulkaninfo has no {key}"
    return match.group(1).strip()


def test_the_device_matches_vulkaninfo(vk_info, vulkaninfo_text):
    assert vk_info.name == _value(vulkaninfo_text, "deviceName")
    assert vk_info.driver_name == _value(vulkaninfo_text, "driverName")
    assert vk_info.driver_info == _value(vulkaninfo_text, "driverInfo")
    assert vk_info.api_version == _value(vulkaninfo_text, "apiVersion").split()[0]
    assert vk_info.subgroup_size == int(_value(vulkaninfo_text, "subgroupSize"))
    assert vk_info.min_subgroup_size == int(_value(vulkaninfo_text, "minSubgroupSize"))
    assert vk_info.max_subgroup_size == int(_value(vulkaninfo_text, "maxSubgroupSize"))
    assert vk_info.shared_memory == int(_value(vulkaninfo_text, "maxComputeSharedMemorySize"))
    assert vk_info.timestamp_period_ns == float(_value(vulkaninfo_text, "timestampPeriod"))
    for ext in ("VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2", "VK_KHR_vulkan_memory_model"):
        assert (ext in vk_info.extensions) == (ext in vulkaninfo_text), ext


def test_feature_bits_match_vulkaninfo(vk_info, vulkaninfo_text):
    for key, bit in (("cooperative_matrix_khr", "cooperativeMatrix"), ("float16_int8", "shaderFloat16"),
                     ("float16_int8", "shaderInt8"), ("storage_16bit", "storageBuffer16BitAccess"),
                     ("vulkan_memory_model", "vulkanMemoryModel"),
                     ("cooperative_matrix_khr", "cooperativeMatrixRobustBufferAccess"),
                     ("subgroup_size_control", "computeFullSubgroups")):
        assert vk_info.has_feature(key, bit) == (_value(vulkaninfo_text, bit) == "true"), (key, bit)


def test_lavapipe_reports_its_khr_shapes(vk_info):
    assert vk_info.cooperative_matrix_khr
    shapes = {(s.m, s.n, s.k, s.a, s.c, s.result, s.scope) for s in vk_info.coop_khr}
    assert (8, 8, 8, "f16", "f32", "f32", "subgroup") in shapes
    assert (8, 8, 8, "s8", "s32", "s32", "subgroup") in shapes
    assert vk_info.coop_shapes(a="f16", c="f32")[0].m == 8
    assert all(s.a == s.b for s in vk_info.coop_khr)


def test_nv2_properties_and_flexible_dimensions(vk_info):
    assert vk_info.cooperative_matrix_nv2
    assert vk_info.coop_nv2_properties["cooperativeMatrixFlexibleDimensionsMaxDimension"] >= 8
    assert vk_info.coop_nv2_flexible and all(s.granularity for s in vk_info.coop_nv2_flexible)
    assert set(vk_info.features["cooperative_matrix2_nv"]) >= {"cooperativeMatrixReductions",
                                                               "cooperativeMatrixFlexibleDimensions"}


def test_ext_maintenance1_is_only_queried_when_present(vk_info):
    # lavapipe lacks the EXT extension: no entry point was called and nothing is reported.
    if "VK_EXT_cooperative_matrix_maintenance1" not in vk_info.extensions:
        assert vk_info.coop_ext == () and "cooperative_matrix_maintenance1_ext" not in vk_info.features
    else:
        assert "cooperative_matrix_maintenance1_ext" in vk_info.features


def test_support_table(vk_info):
    support = vk_info.support()
    assert support["float16"] and support["int8"] and support["vulkan_memory_model"]
    assert support["storage_buffer_16bit"]
    assert set(support) >= {"bfloat16", "float8", "float16", "int8", "storage_buffer_16bit", "vulkan_memory_model"}


def test_to_dict_is_json(vk_info):
    data = json.loads(json.dumps(vk_info.to_dict()))
    assert data["name"] == vk_info.name
    assert data["cooperative_matrix_khr"] is True
    assert {"m": 8, "n": 8, "k": 8} .items() <= data["coop_khr"][0].items()
    assert "handle" not in data and "instance" not in data


def test_devices_without_an_instance_uses_the_default(vk_info):
    names = [d.name for d in devices()]
    assert vk_info.name in names


def test_render_table_is_aligned(vk_info):
    text = render_table([vk_info])
    lines = text.splitlines()
    assert lines[0].startswith("device") and vk_info.name in lines[0]
    columns = {re.match(r"^( *\S+(?: \S+)*)  +(?=\S)", line).end() for line in lines}
    assert len(columns) == 1, f"values start in one column, not at {columns}"
    assert "8x8x8 f16*f16+f32->f32 subgroup" in text
