"""What a queued launch records into its batch (launch.runtime.launch_planned, vk.stream.DispatchRecorder): only the
binds its batch's last dispatch left different, and a barrier exactly where the byte ranges of the launches pending
conflict, whether the pending accesses are one launch's (the kept answer of two launches) or several's (the range
comparison). On lavapipe, one batch held on the host (a clock that stands still, a long idle batch)."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane.lang import Buffer, f32, global_id, readonly, s32
from hydroplane.launch.executors import VulkanExecutor
from hydroplane.launch.prepared import DeviceArray
from hydroplane.launch.runtime import DeviceRuntime

pytestmark = pytest.mark.vulkan


@hydroplane.kernel(local_size=64)
def axpy(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


@hydroplane.kernel(local_size=64)
def scale(x: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i]


N = 1000
GRID = (-(-N // 64),)


def _counting(monkeypatch, owner, name: str, counts: dict) -> None:
    real = getattr(owner, name)

    def counted(*args):
        counts[name] = counts.get(name, 0) + 1
        return real(*args)

    counted.argtypes = getattr(real, "argtypes", None)  # type: ignore[attr-defined] - DispatchRecorder converts by it
    monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def held(monkeypatch):
    """A private device runtime whose batch is held on the host until a wait, and the counts of its barriers and of
    the binds and dispatches its DispatchRecorders record."""
    from hydroplane.vk import stream as stream_module

    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
    rng = np.random.default_rng(7)
    arrays = {}
    for name in "abcdef":
        arrays[name] = DeviceArray(0, rt.executor, rt.alloc(N * 4), np.float32, (N,))
        arrays[name].write(rng.standard_normal(N).astype(np.float32))
    rt.stream.wait()
    counts: dict = {}
    axpy[GRID](arrays["a"], arrays["b"], arrays["f"], 1.0, N)  # the entry points looked up, then counted
    rt.stream.wait()
    entry = stream_module._ENTRY
    for name in ("bind", "bind_sets", "push_constants", "dispatch"):
        _counting(monkeypatch, entry, name, counts)
    _counting(monkeypatch, rt.stream, "_barrier", counts)
    monkeypatch.setattr(stream_module, "_clock", lambda: 1.0)
    monkeypatch.setattr(rt.stream, "idle_batch", 10 ** 6)
    try:
        yield rt, arrays, counts
    finally:
        rt.close()
        rt.executor.close()


def test_a_chain_gets_a_barrier_exactly_where_the_ranges_conflict_and_one_pipeline_bind(held):
    rt, d, counts = held
    host = {name: arr.numpy() for name, arr in d.items()}
    for warm in (True, False):  # the first round binds each place's launch; the second queues the planned ones
        counts.clear()
        rt.stream._submitted_at = 1.0
        for _ in range(3):
            axpy[GRID](d["a"], d["b"], d["c"], 0.5, N)  # c: after e's launch read it (write-after-read)
            axpy[GRID](d["a"], d["b"], d["d"], 0.5, N)  # d: independent of c's launch, not of e's
            axpy[GRID](d["c"], d["d"], d["e"], 0.5, N)  # e: reads c and d (read-after-write)
        assert rt.stream.recording, "the batch is held on the host"
        # round 1: the batch starts clean, e waits for c and d; rounds 2 and 3: c waits for e, e for c and d
        assert counts["_barrier"] == 5, counts
        if not warm:
            assert counts["dispatch"] == 9 and counts["bind"] == 1 and counts["push_constants"] == 1, counts
            assert counts["bind_sets"] == 9, counts
        rt.stream.wait()
    c = np.float32(0.5) * host["a"] + host["b"]
    np.testing.assert_allclose(d["c"].numpy(), c, rtol=1e-6)
    np.testing.assert_allclose(d["d"].numpy(), c, rtol=1e-6)
    np.testing.assert_allclose(d["e"].numpy(), np.float32(0.5) * c + c, rtol=1e-6)


def test_a_launch_after_another_pipeline_or_a_copy_binds_everything_again(held):
    rt, d, counts = held
    host = {name: arr.numpy() for name, arr in d.items()}
    for _ in range(2):  # plan every launch once
        axpy[GRID](d["a"], d["b"], d["c"], 2.0, N)
        scale[GRID](d["c"], d["d"], 3.0, N)
        axpy[GRID](d["a"], d["b"], d["c"], 2.0, N)
        rt.copy(d["b"].buffer, 0, d["e"].buffer, 0, N * 4)
        axpy[GRID](d["e"], d["a"], d["f"], 2.0, N)
        rt.stream.wait()
    counts.clear()
    rt.stream._submitted_at = 1.0
    axpy[GRID](d["a"], d["b"], d["c"], 2.0, N)
    scale[GRID](d["c"], d["d"], 3.0, N)  # another pipeline (and layout): every bind
    axpy[GRID](d["a"], d["b"], d["c"], 2.0, N)  # back: every bind again
    rt.copy(d["b"].buffer, 0, d["e"].buffer, 0, N * 4)  # a command the stream does not know: forgets the binds
    axpy[GRID](d["e"], d["a"], d["f"], 2.0, N)
    assert rt.stream.recording
    assert counts["dispatch"] == 4 and counts["bind"] == 4 and counts["bind_sets"] == 4, counts
    assert counts["push_constants"] == 4, counts
    rt.stream.wait()
    c = np.float32(2.0) * host["a"] + host["b"]
    np.testing.assert_allclose(d["c"].numpy(), c, rtol=1e-6)
    np.testing.assert_allclose(d["d"].numpy(), np.float32(3.0) * c, rtol=1e-6)
    np.testing.assert_allclose(d["f"].numpy(), np.float32(2.0) * host["b"] + host["a"], rtol=1e-6)


def test_barriers_after_dispatches_alone_start_at_the_compute_stage(held, monkeypatch):
    """A barrier whose commands since the last one were dispatches alone orders the compute stage's shader writes;
    one after a copy orders compute and transfer writes; both make them visible to every later shader and transfer
    (a copy that no barrier precedes, because it conflicts with nothing since the last one, still reads the writes
    of the dispatches before it). NARROW_BARRIERS False: each is the batch's opening full barrier."""
    from hydroplane.vk import enums as E
    from hydroplane.vk import stream as stream_module

    rt, d, _ = held
    seen: list = []
    real = rt.stream._barrier

    def noted(cmd, src_stage, dst_stage, flags, count, barrier, *rest):
        seen.append((src_stage.value, dst_stage.value, barrier.contents.srcAccessMask,
                     barrier.contents.dstAccessMask))
        return real(cmd, src_stage, dst_stage, flags, count, barrier, *rest)

    monkeypatch.setattr(rt.stream, "_barrier", noted)
    compute, transfer = E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, E.VK_PIPELINE_STAGE_TRANSFER_BIT
    shader_w, transfer_w = E.VK_ACCESS_SHADER_WRITE_BIT, E.VK_ACCESS_TRANSFER_WRITE_BIT
    every_read = (E.VK_ACCESS_SHADER_READ_BIT | E.VK_ACCESS_SHADER_WRITE_BIT | E.VK_ACCESS_TRANSFER_READ_BIT
                  | E.VK_ACCESS_TRANSFER_WRITE_BIT)
    host = {name: arr.numpy() for name, arr in d.items()}
    for narrow in (True, False):
        monkeypatch.setattr(stream_module, "NARROW_BARRIERS", narrow)
        seen.clear()
        rt.stream._submitted_at = 1.0
        scale[GRID](d["a"], d["c"], 2.0, N)  # c = 2a
        scale[GRID](d["c"], d["d"], 3.0, N)  # reads c: a barrier after one dispatch
        rt.copy(d["c"].buffer, 0, d["e"].buffer, 0, N * 4)  # reads c again: no barrier, ordered by the one before
        axpy[GRID](d["e"], d["d"], d["f"], 1.0, N)  # reads e (copied): a barrier after a dispatch and a copy
        assert rt.stream.recording, "one batch"
        if narrow:
            assert seen == [(compute, compute | transfer, shader_w, every_read),
                            (compute | transfer, compute | transfer, shader_w | transfer_w, every_read)], seen
        else:
            assert len(seen) == 2 and all(s[0] & E.VK_PIPELINE_STAGE_HOST_BIT for s in seen), seen
        rt.stream.wait()
        c = np.float32(2.0) * host["a"]
        np.testing.assert_array_equal(d["e"].numpy(), c)
        np.testing.assert_array_equal(d["f"].numpy(), c + np.float32(3.0) * c)


@hydroplane.kernel(local_size=64)
def sum12(a: Buffer[f32, readonly], b: Buffer[f32, readonly], c: Buffer[f32, readonly], d: Buffer[f32, readonly],
          e: Buffer[f32, readonly], f: Buffer[f32, readonly], g: Buffer[f32, readonly], h: Buffer[f32, readonly],
          i: Buffer[f32, readonly], j: Buffer[f32, readonly], k: Buffer[f32, readonly], out: Buffer[f32], n: s32):
    t = global_id()
    if t < n:
        out[t] = a[t] + b[t] + c[t] + d[t] + e[t] + f[t] + g[t] + h[t] + i[t] + j[t] + k[t]


def test_descriptor_sets_of_released_buffers_are_written_again_for_new_ones(monkeypatch):
    """A loop over many new arrays (each a new binding) takes its descriptor sets REFILL at a time and, once the
    arrays' buffers are freed, writes the same sets for the next ones: right answers every round, no set leaked.
    Sets of twelve bindings use up a small pool's descriptors before its sets: the next pool takes them, and no
    allocation asks a pool for more than it has left (the validation layer, on in the test userland, says so)."""
    from hydroplane.vk.stream import DescriptorSets

    monkeypatch.setattr(DescriptorSets, "POOL_SETS", 8)  # several pools
    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
    rt.pool_bytes = 0  # a released buffer is destroyed once its work is done (no reuse of its handle): its sets go
    try:
        rng = np.random.default_rng(3)
        n = 256
        grid = (-(-n // 64),)
        spare_before = None
        for _round in range(3):
            outs = []
            for _ in range(20):  # 20 new bindings of each kernel a round
                x = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
                host = rng.standard_normal(n).astype(np.float32)
                x.write(host)
                y = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
                scale[grid](x, y, 2.0, n)
                z = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
                sum12[grid](*[x] * 11, z, n)
                outs.append((host, x, y, z))
            for host, x, y, z in outs:
                np.testing.assert_array_equal(y.numpy(), np.float32(2.0) * host)
                np.testing.assert_allclose(z.numpy(), np.float32(11.0) * host, rtol=1e-5)
                for arr in (x, y, z):
                    arr.release()
            rt.stream.wait()
            sets = rt.sets
            spare = sum(len(v) for v in sets._spare.values())
            made = sum(DescriptorSets.POOL_SETS - free[0] for free in sets._free_in_pool.values())
            assert not sets._sets and spare == made, "every set given back once its buffers are gone"
            if spare_before is not None:
                assert spare == spare_before, "each round writes the last round's sets again, allocating none"
            spare_before = spare
        assert len(sets._pools) >= 2
        assert any(free[0] > 0 and free[1] < 12 for free in sets._free_in_pool.values())  # sets left, not descriptors
    finally:
        rt.close()
        rt.executor.close()


def test_a_pool_out_of_descriptors_before_sets_is_left_for_the_next(monkeypatch):
    """Sets of many bindings can use up a pool's descriptors while it has sets to spare (lavapipe does not count
    them; a driver that does answers VK_ERROR_OUT_OF_POOL_MEMORY, played here): the sets come one at a time, then
    from a new pool; a new pool that cannot hold one set is an error, not a loop."""
    from hydroplane.vk import _ffi
    from hydroplane.vk.errors import VulkanError

    real = _ffi.core
    made_in: dict = {}
    refuse = {"first pool after": 3, "every pool": False}

    def allocate(device, info, out):
        pool, count = info._obj.descriptorPool, info._obj.descriptorSetCount
        first = not made_in or pool == next(iter(made_in))
        if refuse["every pool"] or (first and made_in.get(pool, 0) + count > refuse["first pool after"]):
            return -1000069000  # VK_ERROR_OUT_OF_POOL_MEMORY
        made_in[pool] = made_in.get(pool, 0) + count
        return real("vkAllocateDescriptorSets")(device, info, out)

    monkeypatch.setattr(_ffi, "core", lambda name: allocate if name == "vkAllocateDescriptorSets" else real(name))
    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
    try:
        n = 128
        xs = [DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,)) for _ in range(6)]
        ys = [DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,)) for _ in range(6)]
        for i, x in enumerate(xs):
            x.write(np.full(n, i, np.float32))
            scale[(2,)](x, ys[i], 3.0, n)
        for i, y in enumerate(ys):
            np.testing.assert_array_equal(y.numpy(), np.full(n, 3.0 * i, np.float32))
        assert rt.sets.pools_filled == 1 and len(made_in) == 2 and next(iter(made_in.values())) == 3
        refuse["every pool"] = True
        spare = rt.sets._spare
        for layout in spare:
            spare[layout].clear()
        with pytest.raises(VulkanError, match="OUT_OF_POOL_MEMORY"):
            for x in xs:
                scale[(2,)](ys[0], x, 1.0, n)
    finally:
        monkeypatch.setattr(_ffi, "core", real)
        rt.close()
        rt.executor.close()



def test_descriptor_sets_are_cached_by_the_pipeline_not_its_handles():
    """A driver may hand a destroyed pipeline's layout handle to the next pipeline made (a full CI run once met it:
    a pipeline of other bindings found the old one's descriptor types, KeyError (0, 6)). The descriptor sets and
    descriptor types are cached by the pipeline's serial, never by its handles: a pipeline of sum12's bindings
    given scale's layout handle, as a reusing driver would, gets sets of its own set layouts and descriptor types."""
    import gc
    import types

    from hydroplane.vk.pipeline import _SERIALS, Pipeline

    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
    try:
        n = 256
        grid = (-(-n // 64),)
        x = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
        host = np.random.default_rng(5).uniform(-3, 3, n).astype(np.float32)
        x.write(host)
        y = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
        z = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
        scale[grid](x, y, 2.0, n)
        sum12[grid](*[x] * 11, z, n)
        rt.stream.wait()
        made = [p for p in gc.get_objects() if isinstance(p, Pipeline) and p.device is rt.executor.device and
                p.serial in rt.sets._shapes]
        two = next(p for p in made if len(p.bindings) == 2)
        twelve = next(p for p in made if len(p.bindings) == 12)
        reused = types.SimpleNamespace(serial=next(_SERIALS), layout=two.layout, set_layouts=twelve.set_layouts,
                                       bindings=twelve.bindings)
        bound = tuple((b.set, b.binding, x.storage.buffer, 0, n * 4) for b in twelve.bindings)
        handles = rt.sets.get(reused, bound)
        assert list(handles) and list(handles) != list(rt.sets.get(two, bound[:2]))
        assert rt.sets._shapes[reused.serial][1] == rt.sets._shapes[twelve.serial][1]  # twelve's descriptor types
        np.testing.assert_array_equal(y.numpy(), np.float32(2.0) * host)
        np.testing.assert_allclose(z.numpy(), np.float32(11.0) * host, rtol=1e-5)
    finally:
        rt.close()
        rt.executor.close()
