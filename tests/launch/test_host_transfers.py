"""Host writes and reads of DeviceArrays (launch.runtime's upload, download and read_queued; docs/runtime.md): once
warm they make no Vulkan allocation and no one-off submit, a small write into mapped memory that queued work uses
is queued instead of waited for, and a queued read returns what the work before it left, whatever is queued after.

Counted, not timed: the Vulkan calls are counted through `hydroplane.vk._ffi.core`. A discrete GPU's device-local
buffers (the H200's) are reached through staging copies; lavapipe's buffers are mapped, so the tests that need the
discrete path make new buffers with `vk.memory.mapping_is_fast` patched to say no."""

from __future__ import annotations

import numpy as np
import pytest
from launch.vulkan_counts import count_vulkan_calls

import hydroplane
from hydroplane.lang import Buffer, f32, global_id, readonly, s32
from hydroplane.launch.checks import LaunchError
from hydroplane.launch.prepared import ArgumentError
from hydroplane.launch.runtime import runtime
from hydroplane.vk import memory

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


@hydroplane.kernel(local_size=64)
def scaled_copy(x: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i]


@pytest.fixture
def vulkan_calls(monkeypatch):
    """A Counter of the counted Vulkan calls made from now on and of the fence waits (launch/vulkan_counts.py)."""
    return count_vulkan_calls(monkeypatch)


def _grid(n: int) -> tuple[int]:
    return (-(-n // 64),)


@pytest.fixture
def device_local(monkeypatch):
    """Device 0's new buffers device-local during the test, as a discrete GPU's; its pool emptied before (it holds
    mapped ones) and after (the later tests' buffers mapped again)."""
    monkeypatch.setattr(memory, "mapping_is_fast", lambda device: False)
    runtime(0).trim()
    yield
    runtime(0).trim()


@pytest.mark.vulkan
def test_writes_and_reads_of_device_local_arrays_allocate_nothing_once_warm(device_local, vulkan_calls):
    n = 1003
    x = hydroplane.device_array(np.zeros(n, np.float32), 0)
    out = hydroplane.device_array(np.zeros(n, np.float32), 0)
    assert not x.buffer.mapped and not out.buffer.mapped
    rng = np.random.default_rng()
    for rep in range(4):
        if rep == 1:
            vulkan_calls.clear()  # the first round made the staging buffers
        values = rng.standard_normal(n).astype(np.float32)
        x.write(values)
        scaled_copy[_grid(n)](x, out, 2.0, n)
        np.testing.assert_array_equal(out.numpy(), 2 * values)
        np.testing.assert_array_equal(x[5:9].numpy(), values[5:9])
    assert vulkan_calls["vkAllocateMemory"] == 0
    assert vulkan_calls["vkAllocateCommandBuffers"] == 0 and vulkan_calls["vkCreateFence"] == 0


@pytest.mark.vulkan
def test_a_small_write_into_mapped_memory_in_use_is_queued_not_waited_for(vulkan_calls):
    n = 4096
    x = hydroplane.device_array(np.ones(n, np.float32), 0)
    first, second = (hydroplane.device_array(np.zeros(n, np.float32), 0) for _ in range(2))
    hydroplane.synchronize(0)
    scaled_copy[_grid(n)](x, first, 3.0, n)  # queued: it reads x
    vulkan_calls.clear()
    x.write(np.full(n, 2.0, np.float32))  # must land after that read, without waiting for it
    assert vulkan_calls["fence waits"] == 0
    scaled_copy[_grid(n)](x, second, 3.0, n)
    np.testing.assert_array_equal(first.numpy(), np.full(n, 3.0, np.float32))
    np.testing.assert_array_equal(second.numpy(), np.full(n, 6.0, np.float32))
    np.testing.assert_array_equal(x.numpy(), np.full(n, 2.0, np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_a_queued_read_gives_what_the_work_before_it_left(device):
    n = 300
    x = hydroplane.device_array(np.arange(n, dtype=np.float32), device)
    out = hydroplane.device_array(np.zeros(n, np.float32), device)
    scaled_copy[_grid(n)](x, out, 2.0, n)
    before = out[10:20].numpy_later()
    scaled_copy[_grid(n)](x, out, -1.0, n)  # queued after the read: overwrites what it reads
    np.testing.assert_array_equal(before(), 2 * np.arange(10, 20, dtype=np.float32))
    np.testing.assert_array_equal(out.numpy(), -np.arange(n, dtype=np.float32))
    if device != "ref":  # the reference executor copies at the call: nothing is held
        with pytest.raises(LaunchError, match="taken already"):
            before()


@pytest.mark.vulkan
def test_a_queued_read_of_device_local_memory_gives_what_the_work_before_it_left(device_local):
    n = 2001
    x = hydroplane.device_array(np.arange(n, dtype=np.float32), 0)
    out = hydroplane.device_array(np.zeros(n, np.float32), 0)
    assert not out.buffer.mapped
    scaled_copy[_grid(n)](x, out, 2.0, n)
    read = out.numpy_later()
    for _ in range(3):
        scaled_copy[_grid(n)](x, out, -1.0, n)
    np.testing.assert_array_equal(read(), 2 * np.arange(n, dtype=np.float32))
    np.testing.assert_array_equal(out.numpy(), -np.arange(n, dtype=np.float32))
    with pytest.raises(ArgumentError, match="contiguous"):
        out[:2000].reshape(2, 1000).T.numpy_later()
