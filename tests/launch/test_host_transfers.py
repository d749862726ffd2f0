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
from hydroplane import vk
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
def test_small_queued_writes_go_in_the_command_buffer_and_allocate_nothing_however_many_are_in_flight(
        device_local, vulkan_calls):
    """Writes of up to 64 KiB, a multiple of 4 bytes at an offset that is one, are held in the command buffer
    (vkCmdUpdateBuffer): no staging buffer even the first time, so the count of writes in flight at once (which
    depends on how fast the GPU runs) cannot make one. Any other write (odd size or offset, over 64 KiB) is staged."""
    n = 40_000
    x = hydroplane.device_array(np.zeros(n, np.float32), 0)
    out = hydroplane.device_array(np.zeros(n, np.float32), 0)
    hydroplane.synchronize(0)
    want = np.zeros(n, np.float32)
    rng = np.random.default_rng()
    vulkan_calls.clear()
    for _ in range(40):  # each write lands after the launch before it reads x, nothing waits
        lo = int(rng.integers(0, n - 16_384))
        values = rng.standard_normal(int(rng.integers(1, 16_384))).astype(np.float32)
        values[0], values[-1] = -np.inf, np.float32(-0.0)
        x[lo:lo + values.size].write(values)
        want[lo:lo + values.size] = values
        scaled_copy[_grid(n)](x, out, -1.0, n)
        values.fill(np.nan)  # the caller may reuse its array at once
    assert vulkan_calls["fence waits"] == 0 and vulkan_calls["vkAllocateMemory"] == 0
    assert vulkan_calls["vkCmdUpdateBuffer"] == 40 and vulkan_calls["vkCmdCopyBuffer"] == 0
    np.testing.assert_array_equal(out.numpy(), -want)
    np.testing.assert_array_equal(x.numpy(), want)

    raw = hydroplane.device_array(np.zeros(70_003, np.uint8), 0)
    for lo, size in ((1, 8), (4, 7), (0, 65_540), (3, 70_000)):  # odd offset, odd size, over 64 KiB: staged
        vulkan_calls.clear()
        values = rng.integers(0, 256, size, dtype=np.uint8)
        raw[lo:lo + size].write(values)
        assert vulkan_calls["vkCmdUpdateBuffer"] == 0 and vulkan_calls["vkCmdCopyBuffer"] == 1
        np.testing.assert_array_equal(raw[lo:lo + size].numpy(), values)


def test_record_update_refuses_what_vkcmdupdatebuffer_cannot_take():
    for nbytes, offset in ((6, 0), (8, 2), (0, 0), (vk.UPDATE_MAX_BYTES + 4, 0)):
        with pytest.raises(vk.UsageError, match="vkCmdUpdateBuffer takes 4 to 65536 bytes"):
            vk.record_update(None, None, offset, bytes(nbytes))


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


def test_device_array_of_a_view_too_large_to_copy_is_hydroplanes_error():
    """device_array of a broadcast view whose contiguous copy the host cannot hold raised NumPy's MemoryError
    (2026-12-07); now an ArgumentError saying so, before any device memory is taken."""
    huge = np.broadcast_to(np.ones(1, np.float16), (1 << 50,))  # 2 PiB: more than any address space holds
    with pytest.raises(ArgumentError, match="out of host memory for a contiguous copy"):
        hydroplane.device_array(huge, "ref")
