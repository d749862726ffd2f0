"""Counting Vulkan calls in tests (counted, not timed): `count_vulkan_calls(monkeypatch)` returns a Counter of the
COUNTED entry points called from then on (looked up through `hydroplane.vk._ffi.core` at call time) and of the
fence waits ("fence waits")."""

from __future__ import annotations

import collections

from hydroplane.vk import _ffi
from hydroplane.vk.sync import Fence

COUNTED = ("vkAllocateMemory", "vkAllocateCommandBuffers", "vkCreateFence", "vkCmdUpdateBuffer", "vkCmdCopyBuffer")


def count_vulkan_calls(monkeypatch) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    original = _ffi.core

    def core(name):
        function = original(name)
        if name not in COUNTED:
            return function

        def counted(*args):
            counts[name] += 1
            return function(*args)

        return counted

    monkeypatch.setattr(_ffi, "core", core)
    wait = Fence.wait

    def counted_wait(fence, *args, **kwargs):
        counts["fence waits"] += 1
        return wait(fence, *args, **kwargs)

    monkeypatch.setattr(Fence, "wait", counted_wait)
    return counts
