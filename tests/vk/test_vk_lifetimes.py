"""Lifetimes and failures: close() twice, context managers, parents closing their children, use after
close, DEVICE_LOST and out-of-memory as exceptions, and no leaks across create/dispatch/destroy cycles."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import ClosedError, Device, DeviceLost, Instance, OutOfDeviceMemory, VulkanError, _ffi, check


@pytest.fixture(scope="module")
def empty_words(glslang, tmp_path_factory):
    return compile_glsl(glslang, "empty.comp", tmp_path_factory.mktemp("glsl"))


def test_close_is_safe_twice_and_context_managers_close(vk_info, empty_words):
    with Device(vk_info) as dev:
        with dev.buffer(64) as buf, dev.pipeline(empty_words) as pipe:
            rec = dev.record(pipe, 1, {})
            rec.run()
        assert buf.closed and pipe.closed and rec.closed, "closing a pipeline closes its recordings"
        buf.close()
        pipe.close()
    assert dev.closed
    dev.close()


def test_closing_a_device_closes_its_children_first(vk_info, empty_words):
    dev = Device(vk_info)
    buf, pipe = dev.buffer(np.ones(4, np.float32)), dev.pipeline(empty_words)
    rec = dev.record(pipe, (2, 1, 1), {})
    dev.close()
    assert buf.closed and pipe.closed and rec.closed
    with pytest.raises(ClosedError, match="Buffer is closed"):
        buf.read(np.float32)
    with pytest.raises(ClosedError):
        rec.run()
    with pytest.raises(ClosedError, match="Device is closed"):
        dev.buffer(4)


def test_closing_a_buffer_closes_the_recordings_that_use_it(device, glslang, tmp_path):
    words = compile_glsl(glslang, "subgroup_info.comp", tmp_path)
    with device.pipeline(words, [(0, 0)]) as pipe:
        buf = device.buffer(64)
        rec = device.record(pipe, 1, {0: buf})
        rec.run()
        buf.close()
        assert rec.closed and not pipe.closed


def test_children_keep_their_parents_alive(vk_info):
    buf = Device(vk_info).buffer(np.arange(8, dtype=np.int32))  # the Device has no other reference
    gc.collect()
    assert not buf.device.closed
    np.testing.assert_array_equal(buf.read(np.int32), np.arange(8))
    buf.device.close()


def test_an_instance_closes_its_devices(vk_info):
    inst = Instance(validation=False)
    from hydroplane.vk import devices

    info = [d for d in devices(inst) if d.name == vk_info.name][0]
    dev = Device(info)
    inst.close()
    assert dev.closed
    inst.close()
    with pytest.raises(ClosedError, match="list devices.. again"):
        Device(info)  # its physical-device handle is gone: refused, not a crash


@pytest.mark.parametrize("code,cls,name", [(-4, DeviceLost, "VK_ERROR_DEVICE_LOST"),
                                          (-2, OutOfDeviceMemory, "VK_ERROR_OUT_OF_DEVICE_MEMORY"),
                                          (-3, VulkanError, "VK_ERROR_INITIALIZATION_FAILED"),
                                          (-1000069000, VulkanError, "VK_ERROR_OUT_OF_POOL_MEMORY"),
                                          (-77, VulkanError, "VK_RESULT_-77")])
def test_check_raises_the_right_exception(code, cls, name):
    with pytest.raises(cls, match=name) as info:
        check(code, "vkSomething")
    assert info.value.result == name and info.value.call == "vkSomething"
    assert check(5, "vkEnumerate") == 5  # VK_INCOMPLETE is not an error


def test_device_lost_on_submit_surfaces_and_sticks(vk_info, empty_words, monkeypatch):
    dev = Device(vk_info)
    real_core = _ffi.core

    def losing_core(name):
        if name == "vkQueueSubmit":
            return lambda *args: -4  # what a driver returns when the GPU resets
        return real_core(name)

    monkeypatch.setattr(_ffi, "core", losing_core)
    rec = dev.record(dev.pipeline(empty_words), 1, {})
    monkeypatch.setattr(_ffi, "core", real_core)
    with pytest.raises(DeviceLost, match="vkQueueSubmit failed with VK_ERROR_DEVICE_LOST"):
        rec.run()
    with pytest.raises(DeviceLost, match="lost earlier"):
        dev.buffer(16)
    dev.close()


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leaks_across_create_dispatch_destroy_cycles(vk_info, empty_words):
    """A few hundred cycles here (lavapipe + validation is slow); benchmarks/vk_leak_cycles.py runs 10,000."""
    with Device(vk_info) as dev:
        def cycle():
            with dev.buffer(np.ones(1024, np.float32)) as buf, dev.pipeline(empty_words) as pipe:
                dev.record(pipe, 1, {}).run()
                buf.read(np.float32)

        for _ in range(50):
            cycle()
        gc.collect()
        rss, driver = _rss_bytes(), dev.memory_usage()
        for _ in range(300):
            cycle()
        gc.collect()
        grown = _rss_bytes() - rss
        assert grown < 8 << 20, f"RSS grew by {grown} bytes over 300 cycles"
        # A CPU device (lavapipe) reports the whole system's memory as its heap usage, which
        # moves with every other process: only a GPU's heap usage says something about us.
        if driver is not None and vk_info.device_type != "cpu":
            assert sum(dev.memory_usage()) - sum(driver) < 8 << 20
        assert [c for c in dev._children if not c.closed] == [], "every cycle's objects were destroyed"


@pytest.mark.parametrize("how", ["executor", "gemm"])
def test_objects_left_open_at_exit_do_not_abort_the_process(how, tmp_path):
    """A device (and its pipelines and buffers) nobody closed is cleaned up at exit without calling into a destroyed
    instance: before, the loader aborted ('vkDeviceWaitIdle: Invalid device', exit 134) when garbage collection
    finalized the instance first."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    script = {
        "executor": "from hydroplane.launch import get_executor\nimport numpy as np\nex = get_executor(0)\n"
                    "b = ex.buffer(np.ones(4, np.float32))\nprint('ok')\n",
        "gemm": "from hydroplane.kernels.gemm import GemmProblem, parse_dtype\n"
                "from hydroplane.ops.gemm import GemmRunner\n"
                "runner = GemmRunner.open(0)\nr = runner.run(GemmProblem(64, 64, 64, parse_dtype('f16:f32')))\n"
                "print('ok', r.ok)\n",
    }[how]
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok") and "Invalid device" not in proc.stderr
