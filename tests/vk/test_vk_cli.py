"""`hydroplane devices`: the aligned table and --json, through the real CLI entry point."""

from __future__ import annotations

import json

from vk_support import device, validated_instance, vk_info, vk_instance  # noqa: F401 - fixtures

from hydroplane.cli import main


def test_devices_table(capsys, vk_info):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert vk_info.name in out
    assert "VK_KHR_cooperative_matrix" in out and "8x8x8 f16*f16+f32->f32 subgroup" in out
    assert "NV2 flexible" in out


def test_devices_json(capsys, vk_info):
    assert main(["devices", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = [d["name"] for d in data["devices"]]
    assert vk_info.name in names
    dev = data["devices"][names.index(vk_info.name)]
    assert dev["cooperative_matrix_khr"] is True
    assert dev["subgroup_size"] == vk_info.subgroup_size
    assert any(s["m"] == 8 and s["a"] == "f16" and s["c"] == "f32" for s in dev["coop_khr"])
