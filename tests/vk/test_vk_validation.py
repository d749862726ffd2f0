"""The validation mode really reports problems (so the suite's 'zero messages' means something), and
the pipeline cache and the C dispatch loop of the benchmark are sound."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, require_tool
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import Device, Instance, ValidationMessage, devices
from hydroplane.vk import structs as S


def test_the_messenger_collects_a_real_validation_error(vk_info):
    with Instance(validation=True) as inst:
        assert inst.validation and "VK_EXT_debug_utils" in inst.extensions
        info = [d for d in devices(inst) if d.name == vk_info.name][0]
        with Device(info) as dev:
            fence = ctypes.c_void_p()
            bad = S.VkFenceCreateInfo(flags=0x10)  # no such VkFenceCreateFlagBits bit
            dev.call("vkCreateFence", ctypes.byref(bad), None, ctypes.byref(fence))
            dev.release("vkDestroyFence", fence.value, None)
        messages = inst.take_messages()
        assert any("VUID-VkFenceCreateInfo-flags-parameter" in m.message_id for m in messages), messages
        assert all(m.severity in ("warning", "error") for m in messages)
        assert inst.take_messages() == []
        error = ValidationMessage(messages)
        assert "VUID-VkFenceCreateInfo-flags-parameter" in str(error) and error.messages == messages


def test_without_validation_nothing_is_collected(vk_info):
    with Instance(validation=False) as inst:
        assert not inst.validation and inst.layers == ()
        info = [d for d in devices(inst) if d.name == vk_info.name][0]
        with Device(info):
            pass
        assert inst.messages == []


def test_pipeline_cache_data_grows_with_pipelines(vk_info, glslang, tmp_path):
    words = compile_glsl(glslang, "empty.comp", tmp_path)
    with Device(vk_info) as dev:
        before = dev.pipeline_cache_data()
        dev.pipeline(words).close()
        after = dev.pipeline_cache_data()
    assert len(after) >= len(before) > 0
    with Device(vk_info, pipeline_cache=after) as seeded:  # accepted as the new cache's initial data
        seeded.pipeline(words).close()
        assert len(seeded.pipeline_cache_data()) >= len(before)


def test_the_benchmark_c_loop_matches_the_header_and_runs(glslang, tmp_path):
    gcc = require_tool("gcc")
    source = REPO / "benchmarks" / "vk_dispatch_loop.c"
    exe = tmp_path / "vk_dispatch_loop"
    for extra in (["-DHP_CHECK_HEADER"], []):
        proc = subprocess.run([gcc, "-std=c11", "-Wall", "-Werror", "-O2", *extra, "-o", str(exe), str(source), "-ldl"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-4000:]
    words = compile_glsl(glslang, "empty.comp", tmp_path)
    spv = tmp_path / "empty.spv"
    words.tofile(spv)
    run = subprocess.run([str(exe), str(spv), "20"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    name, value = run.stdout.split()
    assert name == "ns_per_dispatch" and float(value) > 0
    assert Path(spv).stat().st_size == words.nbytes


def test_raise_messages_turns_collected_messages_into_an_exception(vk_info):
    with Instance(validation=True) as inst:
        inst.raise_messages()  # nothing collected: no exception
        info = [d for d in devices(inst) if d.name == vk_info.name][0]
        with Device(info) as dev:
            fence = ctypes.c_void_p()
            dev.call("vkCreateFence", ctypes.byref(S.VkFenceCreateInfo(flags=0x10)), None, ctypes.byref(fence))
            dev.release("vkDestroyFence", fence.value, None)
        with pytest.raises(ValidationMessage, match="VUID-VkFenceCreateInfo-flags-parameter"):
            inst.raise_messages()
        inst.raise_messages()
