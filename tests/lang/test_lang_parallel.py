"""Shared memory, barriers, atomics and subgroup operations on the reference executor and lavapipe."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane import vk
from hydroplane.lang import (
    Buffer,
    atomic_add,
    atomic_compare_exchange,
    atomic_max,
    atomic_min,
    barrier,
    constexpr,
    f32,
    global_id,
    kernel_source,
    lane_id,
    local_id,
    readonly,
    s32,
    shared_array,
    subgroup_add,
    subgroup_broadcast,
    subgroup_elect,
    subgroup_exclusive_add,
    subgroup_inclusive_add,
    subgroup_max,
    subgroup_shuffle_xor,
    subgroup_size,
    u32,
    workgroup_id,
)

pytestmark = pytest.mark.vulkan


@kernel_source(local_size="BLOCK")
def block_sum(x: Buffer[f32, readonly], sums: Buffer[f32], BLOCK: constexpr):
    """One partial sum per workgroup: a tree reduction in shared memory between barriers."""
    partial = shared_array(f32, BLOCK)
    t = local_id()
    partial[t] = x[global_id()]
    barrier()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            partial[t] += partial[t + stride]
        barrier()
        stride //= 2
    if t == 0:
        sums[workgroup_id()] = partial[0]


@pytest.mark.parametrize("block", [32, 64])
def test_shared_memory_reduction(block):
    rng = np.random.default_rng(block)
    groups = 6
    x = rng.integers(-100, 100, groups * block).astype(np.float32) / 8  # exact sums in any order
    spec = compiled(block_sum, BLOCK=block)
    assert spec.local_size == (block, 1, 1)
    results = run_everywhere(spec, (groups, 1, 1), {"x": x, "sums": poisoned(groups, np.float32)})
    for device, out in results.items():
        np.testing.assert_array_equal(out["sums"], x.reshape(groups, block).sum(axis=1), err_msg=str(device))


@kernel_source(local_size=64)
def histogram(values: Buffer[u32, readonly], bins: Buffer[u32], stats: Buffer[s32], local_bins: Buffer[u32],
              n: s32, NBINS: constexpr):
    shared = shared_array(u32, NBINS)
    t = local_id()
    if t < NBINS:
        shared[t] = u32(0)
    barrier()
    i = global_id()
    if i < n:
        v = values[i]
        b = s32(v % u32(NBINS))
        atomic_add(bins, b, 1)
        atomic_add(shared, b, u32(1))
        atomic_min(stats, 0, s32(v))
        atomic_max(stats, 1, s32(v))
        # the first invocation to arrive claims slot 2 (compare-exchange from -1)
        atomic_compare_exchange(stats, 2, 7, -1)
    barrier()
    if t < NBINS:
        atomic_add(local_bins, t, shared[t])


def test_atomics():
    rng = np.random.default_rng(2)
    n, nbins = 1000, 16
    values = rng.integers(0, 5000, 1024).astype(np.uint32)
    spec = compiled(histogram, NBINS=nbins)
    stats = np.array([2**31 - 1, -(2**31), -1], np.int32)
    results = run_everywhere(spec, (16, 1, 1), {"values": values, "bins": np.zeros(nbins, np.uint32),
                                                "stats": stats, "local_bins": np.zeros(nbins, np.uint32)},
                             {"n": n})
    expected = np.bincount(values[:n] % nbins, minlength=nbins).astype(np.uint32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["bins"], expected, err_msg=str(device))
        np.testing.assert_array_equal(out["local_bins"], expected, err_msg=str(device))
        np.testing.assert_array_equal(out["stats"], [values[:n].min(), values[:n].max(), 7], err_msg=str(device))


@kernel_source(local_size=64)
def subgroup_ops(x: Buffer[s32, readonly], out: Buffer[s32]):
    i = global_id()
    v = x[i]
    k = i * 8
    out[k + 0] = subgroup_add(v)
    out[k + 1] = subgroup_max(v)
    out[k + 2] = subgroup_inclusive_add(v)
    out[k + 3] = subgroup_exclusive_add(v)
    out[k + 4] = subgroup_shuffle_xor(v, u32(1))
    out[k + 5] = subgroup_broadcast(v, u32(0))
    out[k + 6] = s32(subgroup_elect())
    out[k + 7] = s32(subgroup_size()) * 1000 + lane_id()


def test_subgroup_operations():
    """Results depend on the subgroup size: each device's own (reported by the kernel) is used."""
    rng = np.random.default_rng(9)
    n = 128
    x = rng.integers(-50, 50, n).astype(np.int32)
    spec = compiled(subgroup_ops)
    lavapipe_size = vk.devices()[0].subgroup_size
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "out": poisoned(n * 8, np.int32)},
                             subgroup_size=lavapipe_size)
    for device, out in results.items():
        got = out["out"].reshape(n, 8)
        size = int(got[0, 7] // 1000)
        assert size == lavapipe_size, device
        groups = x.reshape(-1, size)
        expected = np.stack([
            np.repeat(groups.sum(axis=1), size), np.repeat(groups.max(axis=1), size), np.cumsum(groups, axis=1).ravel(),
            (np.cumsum(groups, axis=1) - groups).ravel(), groups[:, np.arange(size) ^ 1].ravel(),
            np.repeat(groups[:, 0], size), np.tile(np.arange(size) == 0, n // size),
            size * 1000 + np.tile(np.arange(size), n // size)], axis=1)
        np.testing.assert_array_equal(got, expected.astype(np.int32), err_msg=str(device))
