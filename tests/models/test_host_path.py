"""The model's host path (issue 26: host time no GPU needs): a replayed prefill's `step` queues its writes without
waiting for the GPU and, with its read, allocates nothing; decode_batches (generate's loop) queues the next batch
of decode steps before it reads a batch, and gives the ids of a plain loop.

Counted, not timed: Vulkan calls through `hydroplane.vk._ffi.core`; `vk.memory.mapping_is_fast` patched to say no
makes the model's buffers device-local, as on a discrete GPU (lavapipe's are mapped)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from launch.vulkan_counts import count_vulkan_calls
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane.launch.runtime import runtime
from hydroplane.models import Model, read_gguf
from hydroplane.models.errors import ContextError
from hydroplane.vk import memory

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


@pytest.fixture(params=["mapped", "device-local"])
def memory_kind(request, monkeypatch):
    """Device 0's new buffers as lavapipe makes them (mapped) or device-local, as a discrete GPU's (the pool
    emptied before, since it holds mapped ones, and after). Either way the earlier tests' garbage is collected and
    the pool emptied first, so that the counts see this test's buffers alone. (A full CI run, 2026-12-06 01:47 UTC,
    counted one vkAllocateMemory in the replays of the mapped case, which this file alone never did; with queued
    submits behind a running one it came in one run of three: a host write's staging buffer made anew while the
    kept ones sat in a batch that had finished but was not retired yet. The runtime now retires finished batches
    before it makes a staging buffer. The CI run of 2026-12-06 about 21:00 UTC counted one again: a replay met more
    of its writes in flight at once than the warm-up had, which depends on the GPU's speed. A step's writes are
    small, and small queued writes now go inside the command buffer (vkCmdUpdateBuffer), with no staging buffer.)"""
    if request.param == "device-local":
        monkeypatch.setattr(memory, "mapping_is_fast", lambda device: False)
    gc.collect()
    runtime(0).trim()
    yield request.param
    if request.param == "device-local":
        runtime(0).trim()


@pytest.mark.vulkan
def test_a_replayed_prefill_waits_only_in_its_read_and_allocates_nothing(memory_kind, monkeypatch, tiny_files):
    model = Model(read_gguf(tiny_files["gemma3"]), device=0, context=64)
    assert model.kv_len.buffer.mapped == (memory_kind == "mapped")
    ids = np.random.default_rng().integers(0, model.config.n_vocab, 9)
    model.reset()
    want = model.step(ids).numpy()
    for _ in range(3):  # captured, then replayed (its staging buffers made)
        model.reset()
        model.step(ids).numpy()
    counts = count_vulkan_calls(monkeypatch)
    replays = 8
    for _ in range(replays):
        model.reset()
        waits = counts["fence waits"]
        logits = model.step(ids)
        assert counts["fence waits"] == waits  # its writes into the arrays the last replay used are queued
        np.testing.assert_allclose(logits.numpy(), want, rtol=1e-5, atol=1e-5)
        del logits  # as the warm-up's: one result alive at a time
    assert counts["vkAllocateMemory"] == 0
    # The stream's ring of command buffers and fences grows while it meets the most batches a step has in flight
    # at once, which depends on when the GPU goes idle (a batch is submitted then); it does not grow per prefill.
    assert counts["vkAllocateCommandBuffers"] + counts["vkCreateFence"] <= replays // 2
    assert model.length == 9 and int(model.kv_len.numpy()[0]) == 9 and int(model.position.numpy()[0]) == 8


@pytest.mark.parametrize("device", DEVICES)
def test_decode_batches_queue_the_next_batch_before_a_read(device, tiny_files):
    model = Model(read_gguf(tiny_files["gemma3"]), device=device, context=32)
    count = 12
    model.decode_from(5, 0)
    model.decode(count)  # planned, captured, replayed: the plain loop
    want = model.history[1:1 + count].numpy()
    model.decode_from(5, 0)
    got, queued = [], []
    for tokens in model.decode_batches(1, count):
        queued.append(model.length)  # the decode steps queued when a batch is handed over
        got += [int(t) for t in tokens]
    assert got == [int(t) for t in want]
    assert queued == [3, 7, 12, 12]  # batches of 1, 2, 4, 5; each read after the next batch was queued
    model.decode_from(5, 0)
    for _ in model.decode_batches(1, count):
        break  # a caller that stops: one batch queued past what it took
    assert model.length == 3
    with pytest.raises(ContextError):  # a step at position 32 would write past the cache
        next(model.decode_batches(30, 4))
