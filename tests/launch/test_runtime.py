"""The device runtime (launch.runtime, docs/runtime.md): one registry of devices, queued launches with hazards
tracked per byte range, DeviceArray views, deferred frees, capture and replay, errors at the wait, blocking mode.

Every test runs on the reference executor and on lavapipe (device 0 in the test userland)."""

from __future__ import annotations

import dataclasses
import gc
import threading

import numpy as np
import pytest

import hydroplane
from hydroplane import vk
from hydroplane.errors import HydroplaneError
from hydroplane.lang import Buffer, f32, global_id, readonly, s32
from hydroplane.launch import runtime as rt_module
from hydroplane.launch.executors import VulkanExecutor
from hydroplane.launch.prepared import ArgumentError, DeviceArray, ReleasedError
from hydroplane.launch.runtime import CaptureError, DeviceError, DeviceRuntime, canonical_device, runtime

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


@hydroplane.kernel(local_size=64)
def axpy(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], alpha: f32, n: s32):
    i = global_id()
    if i < n:
        out[i] = alpha * x[i] + y[i]


@hydroplane.kernel(local_size=64)
def spin(out: Buffer[f32], rounds: s32):
    i = global_id()
    acc = 0.0
    for _ in range(rounds):
        acc = acc * 0.5 + 1.0
    out[i] = acc


def _fresh(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    x[::17] = 0.0
    x[5] = -3.0e38
    return x


def _grid(n):
    return (-(-n // 64),)


@pytest.mark.parametrize("device", DEVICES)
def test_a_queued_chain_ping_pongs_between_two_outputs(device):
    rng = np.random.default_rng()
    n = 1000
    x, y = _fresh(rng, n), _fresh(rng, n) / 4
    dx, dy = hydroplane.device_array(x, device), hydroplane.device_array(y, device)
    p, q = hydroplane.device_array(np.full(n, -7.25e4, np.float32), device), \
        hydroplane.device_array(np.full(n, -7.25e4, np.float32), device)
    axpy[_grid(n)](dx, dy, p, 0.5, n)  # p = x/2 + y
    want = np.float32(0.5) * x + y
    src, dst = p, q
    for _ in range(9):  # each step reads the one before: read-after-write and write-after-read each time
        axpy[_grid(n)](src, dy, dst, -1.0, n)
        want = np.float32(-1.0) * want + y
        src, dst = dst, src
    np.testing.assert_array_equal(src.numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_host_writes_between_queued_calls_are_ordered(device):
    rng = np.random.default_rng()
    n = 256
    dx, out = hydroplane.device_array(np.zeros(n, np.float32), device), \
        hydroplane.device_array(np.zeros(n, np.float32), device)
    acc = hydroplane.device_array(np.zeros(n, np.float32), device)
    total = np.zeros(n, np.float32)
    for _ in range(5):
        x = _fresh(rng, n) / 8
        dx.write(x)
        x[:] = np.nan  # the caller reuses its array at once: the write copied it
        axpy[_grid(n)](dx, acc, out, 1.0, n)
        axpy[_grid(n)](out, out, acc, 0.0, n)  # acc = out
        total = total + dx.numpy()
    np.testing.assert_array_equal(acc.numpy(), total)


@pytest.mark.parametrize("device", DEVICES)
def test_buffers_released_or_dropped_in_flight_stay_until_the_work_is_done(device):
    rng = np.random.default_rng()
    n = 4096
    x, y = _fresh(rng, n), _fresh(rng, n)
    out = hydroplane.device_array(np.zeros(n, np.float32), device)
    for _ in range(3):
        dx, dy = hydroplane.device_array(x, device), hydroplane.device_array(y, device)
        axpy[_grid(n)](dx, dy, out, 2.0, n)
        dx.release()  # freed once the launch that reads it has finished
        del dy  # dropped: the same
        gc.collect()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), np.float32(2.0) * x + y)
    with pytest.raises(ReleasedError, match="released"):
        dx.numpy()
    with pytest.raises(ReleasedError, match="released"):
        dx.write(x)
    with pytest.raises(ReleasedError):
        axpy[_grid(n)](dx, out, out, 1.0, n)


def test_release_frees_on_the_reference_executor():
    rt = runtime("ref")
    before = len(rt.executor.buffers)
    arrays = [hydroplane.device_array(np.ones(1000, np.float32), "ref") for _ in range(10)]
    assert len(rt.executor.buffers) == before + 10
    for a in arrays:
        a.release()
    assert len(rt.executor.buffers) == before
    x = np.arange(64, dtype=np.float32)
    for _ in range(5):  # a NumPy launch's buffers go with it
        hydroplane.matmul(x.reshape(8, 8).astype(np.float16), x.reshape(8, 8).astype(np.float16), device="ref")
    gc.collect()
    assert len(rt.executor.buffers) <= before + 16  # the planned call keeps its own, not one set per call


@pytest.mark.parametrize("device", DEVICES)
def test_views_are_layouts_and_offsets_never_copies(device):
    rng = np.random.default_rng()
    x = _fresh(rng, 6 * 40).reshape(6, 40)
    d = hydroplane.device_array(x, device)
    table = {
        "T": (d.T, x.T), "mT": (d.mT, x.mT), "swapaxes": (d.swapaxes(-1, -2), np.swapaxes(x, -1, -2)),
        "reshape": (d.reshape(4, 60), x.reshape(4, 60)), "reshape -1": (d.reshape(-1), x.reshape(-1)),
        "rows": (d[2:5], x[2:5]), "row": (d[3], x[3]), "step": (d[::2], x[::2]), "element": (d[1, 3:9], x[1, 3:9]),
        "view": (d.view(np.int32), x.view(np.int32)), "view of a row": (d[1].view(np.uint8), x[1].view(np.uint8)),
    }
    for name, (view, want) in table.items():
        assert view.storage is d.storage, name  # the same bytes: no copy
        assert view.shape == want.shape, name
        np.testing.assert_array_equal(view.numpy(), want, err_msg=name)
    with pytest.raises(ArgumentError, match="strided view"):
        d.T.reshape(-1)
    with pytest.raises(ArgumentError, match="basic indexing"):
        d[[0, 1]]
    d.release()
    with pytest.raises(ReleasedError):
        table["rows"][0].numpy()  # a view of a released array is released too


@pytest.mark.parametrize("device", DEVICES)
def test_views_bind_at_their_offsets_aligned_or_not(device):
    rng = np.random.default_rng()
    n = 1000
    x, y = _fresh(rng, n), _fresh(rng, n)
    dx, dy = hydroplane.device_array(x, device), hydroplane.device_array(y, device)
    out = hydroplane.device_array(np.full(n, -7.25e4, np.float32), device)
    axpy[_grid(100)](dx[100:200], dy[100:200], out[0:100], 1.0, 100)  # aligned offsets: descriptor offsets
    axpy[_grid(100)](dx[3:103], dy[7:107], out[501:601], 1.0, 100)  # 12 and 28 bytes: through queued copies
    got = out.numpy()
    np.testing.assert_array_equal(got[0:100], x[100:200] + y[100:200])
    np.testing.assert_array_equal(got[501:601], x[3:103] + y[7:107])
    assert (got[100:501] == -7.25e4).all() and (got[601:] == -7.25e4).all()  # nothing around the views written
    with pytest.raises(ArgumentError, match="strided view"):
        axpy[_grid(n)](dx[::2], dy[::2], out[0:500], 1.0, 500)


@pytest.mark.parametrize("device", DEVICES)
def test_threads_share_one_device(device):
    rng = np.random.default_rng()
    n = 512
    inputs = [(_fresh(rng, n) / 4, _fresh(rng, n) / 4) for _ in range(4)]
    results: dict = {}
    errors: list = []

    def work(index):
        try:
            x, y = inputs[index]
            dx, dy = hydroplane.device_array(x, device), hydroplane.device_array(y, device)
            out = hydroplane.device_array(np.zeros(n, np.float32), device)
            for _ in range(20):
                axpy[_grid(n)](dx, dy, out, 1.0, n)
                axpy[_grid(n)](out, dy, dx, 0.0, n)  # dx = y
            results[index] = out.numpy()
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for index, (_, y) in enumerate(inputs):
        np.testing.assert_array_equal(results[index], y + y)


@pytest.mark.parametrize("device", DEVICES)
def test_capture_records_and_replay_runs_the_sequence_again(device):
    rng = np.random.default_rng()
    n = 300
    y = rng.standard_normal(n).astype(np.float32)  # sums of 200 of them stay finite
    dy = hydroplane.device_array(y, device)
    a, b = hydroplane.device_array(np.zeros(n, np.float32), device), \
        hydroplane.device_array(np.zeros(n, np.float32), device)
    with hydroplane.capture(device) as graph:
        for _ in range(100):  # 200 small dependent launches
            axpy[_grid(n)](a, dy, b, 1.0, n)  # b = a + y
            axpy[_grid(n)](b, b, a, 0.0, n)  # a = b
        with pytest.raises(CaptureError, match="cannot be captured"):
            a.numpy()
    assert graph.launches == 200
    np.testing.assert_array_equal(a.numpy(), 0)  # nothing ran while capturing
    graph.replay()
    np.testing.assert_array_equal(a.numpy(), _repeat_add(y, 100))
    dy.write(np.float32(2) * y)  # a replay reads the buffers anew
    a.write(np.zeros(n, np.float32))
    graph.replay()
    graph.replay()
    np.testing.assert_array_equal(a.numpy(), _repeat_add(np.float32(2) * y, 200))
    dy.release()  # the graph keeps what it replays
    graph.replay()
    np.testing.assert_array_equal(a.numpy(), _repeat_add(np.float32(2) * y, 300))
    graph.close()
    with pytest.raises(CaptureError, match="closed"):
        graph.replay()


def _repeat_add(y, times):
    acc = np.zeros_like(y)
    for _ in range(times):
        acc = acc + y
    return acc


def test_capture_refuses_numpy_operands_and_nesting():
    with hydroplane.capture("ref"):
        with pytest.raises(CaptureError):
            hydroplane.device_array(np.ones(4, np.float32), "ref")
        with pytest.raises(CaptureError, match="already capturing"):
            with hydroplane.capture("ref"):
                pass


@pytest.mark.vulkan
def test_blocking_mode_and_queued_mode_give_identical_answers(monkeypatch):
    rng = np.random.default_rng()
    n = 2048
    x, y = _fresh(rng, n) / 3, _fresh(rng, n) / 5
    answers = []
    for blocking in (False, True):
        rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
        rt.blocking = blocking
        try:
            dx, dy = (DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,)) for _ in range(2))
            dx.write(x)
            dy.write(y)
            out = DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,))
            for _ in range(6):
                axpy[_grid(n)](dx, dy, out, 0.75, n)
                axpy[_grid(n)](out, dx, dy, -0.5, n)
                if blocking:
                    assert not rt.stream.recording and rt.stream.completed == rt.stream.seq - 1
            answers.append(dy.numpy())
        finally:
            rt.close()
            rt.executor.close()
    np.testing.assert_array_equal(answers[0], answers[1])


def _queue_of_axpys(rng, n: int, outs: int):
    """A private runtime on device 0 with x and y of fresh values written, `outs` poisoned outputs, the queue
    drained, and a list that counts the stream's submits (the batch number of each)."""
    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False))
    dx, dy = (DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,)) for _ in range(2))
    x, y = _fresh(rng, n), _fresh(rng, n)
    dx.write(x)
    dy.write(y)
    results = [DeviceArray(0, rt.executor, rt.alloc(n * 4), np.float32, (n,)) for _ in range(outs)]
    for out in results:
        out.write(np.full(n, np.nan, np.float32))  # poisoned
    rt.stream.wait()
    return rt, dx, dy, x, y, results


def _count_submits(monkeypatch, stream) -> list:
    submits = []
    submit = stream._submit

    def counted(*args):
        submits.append(stream.seq)
        return submit(*args)

    monkeypatch.setattr(stream, "_submit", counted)
    return submits


@pytest.mark.vulkan
def test_a_loop_of_short_calls_submits_once_per_idle_batch_and_a_call_after_a_pause_at_once(monkeypatch):
    """A GPU that finishes each call before the host queues the next (in_flight() always 0 here) and calls closer
    together than IDLE_GAP_S (a clock that stands still): one submit for the first call, then one per IDLE_BATCH
    commands, not one per call; a call after a pause is submitted at once; the answers are those of NumPy."""
    from hydroplane.vk import stream as stream_module

    rng = np.random.default_rng()
    n = 1024
    rt, dx, dy, x, y, outs = _queue_of_axpys(rng, n, 5)
    try:
        stream = rt.stream
        submits = _count_submits(monkeypatch, stream)
        now = [1.0]
        monkeypatch.setattr(stream, "in_flight", lambda: 0)
        monkeypatch.setattr(stream_module, "_clock", lambda: now[0])
        stream._submitted_at = float("-inf")
        calls = 4 * stream_module.IDLE_BATCH + 3
        for i in range(calls):  # independent launches: no barrier between them counts as a command
            axpy[_grid(n)](dx, dy, outs[i % len(outs)], float(i), n)
        assert len(submits) == 1 + (calls - 1) // stream_module.IDLE_BATCH
        assert stream.recording  # the last few held, no pause yet
        now[0] += 10 * stream_module.IDLE_GAP_S
        axpy[_grid(n)](dx, dy, outs[0], 0.5, n)
        assert not stream.recording, "a call after a pause waits for nothing"
        rt.stream.wait()
        for j, out in enumerate(outs):
            last = 0.5 if j == 0 else max(i for i in range(calls) if i % len(outs) == j)
            with np.errstate(over="ignore"):  # extremes overflow to inf on both sides
                want = np.float32(last) * x + y
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    finally:
        rt.close()
        rt.executor.close()


@pytest.mark.vulkan
@pytest.mark.parametrize("running", [1, 2])
def test_a_batch_is_queued_behind_the_one_the_gpu_runs_but_not_behind_two(monkeypatch, running):
    """With one submit unfinished, a batch of IDLE_BATCH commands is submitted behind it (the GPU finds it queued
    when the running one ends, instead of idling until the host's next call); with MAX_IN_FLIGHT (2) unfinished it
    is held and collects the calls that follow; the answers are NumPy's either way."""
    from hydroplane.vk import stream as stream_module

    assert stream_module.MAX_IN_FLIGHT == 2
    rng = np.random.default_rng()
    n = 512
    rt, dx, dy, x, y, (out,) = _queue_of_axpys(rng, n, 1)
    try:
        stream = rt.stream
        submits = _count_submits(monkeypatch, stream)
        monkeypatch.setattr(stream, "in_flight", lambda: running)
        monkeypatch.setattr(stream_module, "_clock", lambda: 1.0)
        stream._submitted_at = 1.0  # a recent submit: short batches are held
        for i in range(stream_module.IDLE_BATCH):
            axpy[_grid(n)](dx, dy, out, float(i), n)
        assert len(submits) == (1 if running < 2 else 0)
        assert stream.recording == (running == 2)
        monkeypatch.undo()
        rt.stream.wait()
        with np.errstate(over="ignore"):
            want = np.float32(stream_module.IDLE_BATCH - 1) * x + y
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    finally:
        rt.close()
        rt.executor.close()


@pytest.mark.vulkan
def test_a_device_fault_surfaces_at_the_wait_naming_the_calls():
    """A dispatch past its timeout (a private device, so the others go on): the launch returned at once; the
    wait raises hydroplane's DeviceLost naming the calls of the failed submission."""
    rt = DeviceRuntime(0, VulkanExecutor(0, robust=False, timeout=0.05))
    out = DeviceArray(0, rt.executor, rt.alloc(64 * 4), np.float32, (64,))
    spin[(1,)](out, 40_000_000)  # seconds on lavapipe: past the 50 ms timeout
    with pytest.raises(HydroplaneError, match="spin") as caught:
        out.numpy()
    assert "submission" in str(caught.value) or "did not finish" in str(caught.value)


def test_one_parser_names_every_device():
    assert canonical_device("ref") == "ref"
    assert canonical_device("0") == 0 and canonical_device(0) == 0
    for bad in (-1, "cuda", True, 1.5):
        with pytest.raises(DeviceError):
            canonical_device(bad)
    assert canonical_device(None) == rt_module.default_device()
    assert runtime(None) is runtime(rt_module.default_device())
    with pytest.raises(DeviceError, match="already"):
        hydroplane.set_device("ref" if rt_module.default_device() != "ref" else 0)


@pytest.mark.parametrize("device", DEVICES)
def test_timing_goes_through_the_checked_launch(device):
    n = 4096
    dx = hydroplane.device_array(np.ones(n, np.float32), device)
    out = hydroplane.device_array(np.zeros(n, np.float32), device)
    with axpy[_grid(n)].prepare(dx, dx, out, 1.0, n) as launch:
        seconds = launch.time(repeat=3, warmup=1, warmup_s=0.0)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)
    np.testing.assert_array_equal(out.numpy(), 2.0)


@pytest.mark.vulkan
def test_timing_on_a_gpu_takes_its_runs_again_while_they_get_faster(monkeypatch):
    """On a GPU (not a CPU device: lavapipe here says it is a discrete one) a timing with a warm-up settles:
    `vk.timing.settled` takes the timed runs at least twice, for up to SETTLE_MAX_S; with no warm-up (timed_run),
    or on a CPU device, once."""
    n = 4096
    dx = hydroplane.device_array(np.ones(n, np.float32), 0)
    out = hydroplane.device_array(np.zeros(n, np.float32), 0)
    rt = runtime(0)
    samples, given = [], []
    settled = vk.timing.settled

    def counted(sample, max_s=vk.timing.SETTLE_MAX_S):
        given.append(max_s)
        return settled(lambda: samples.append(sample()) or samples[-1], max_s)

    monkeypatch.setattr(vk.timing, "settled", counted)
    with axpy[_grid(n)].prepare(dx, dx, out, 1.0, n) as launch:
        assert len(launch.time(repeat=4, warmup=0, warmup_s=0.01)) == 4
        assert given == [0.0] and len(samples) == 1  # lavapipe: a CPU device
        monkeypatch.setattr(rt.executor, "info", dataclasses.replace(rt.executor.info, device_type="discrete"))
        seconds = launch.time(repeat=4, warmup=0, warmup_s=0.01)
        assert given[1] == vk.timing.SETTLE_MAX_S and len(samples) >= 3 and seconds == samples[-1]
        assert len(seconds) == 4 and all(s > 0 for s in seconds)
        launch.timed_run()
        assert given[2] == 0.0
    np.testing.assert_array_equal(out.numpy(), 2.0)


@pytest.mark.vulkan
def test_the_driver_pipeline_cache_is_kept_on_disk(tmp_path, monkeypatch):
    """A device runtime saves the driver's pipeline cache at close and the next one seeds the driver with it
    ($XDG_CACHE_HOME/hydroplane/pipelines/...); HYDROPLANE_DISK_CACHE=0 keeps nothing."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")
    n = 256
    first = DeviceRuntime(0)
    try:
        out = DeviceArray(0, first.executor, first.alloc(4 * n), np.float32, (n,))
        axpy[_grid(n)](DeviceArray(0, first.executor, first.alloc(4 * n), np.float32, (n,)), out, out, 1.0, 0)
        first.synchronize()
    finally:
        first.close()
    files = list((tmp_path / "hydroplane" / "pipelines").glob("*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > 0, files
    second = DeviceRuntime(0)
    try:
        assert second._pipeline_cache_seed == files[0].read_bytes()
    finally:
        second.close()
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "off"))
    third = DeviceRuntime(0)
    third.close()
    assert not (tmp_path / "off").exists()


@pytest.mark.vulkan
def test_a_buffer_a_graph_released_is_not_freed_again_by_a_later_graph():
    """A buffer freed by a graph's close (its array was dropped while the graph replayed it) goes to the pool; when a
    new array gets it and a second graph captures that array, closing the second graph must leave the live array's
    buffer alone (it was once freed twice, and two live arrays then shared one buffer)."""
    n = 1024
    rt = runtime(0)
    x = hydroplane.device_array(np.ones(n, np.float32), 0)
    a = hydroplane.device_array(np.zeros(n, np.float32), 0)
    axpy[_grid(n)](x, x, a, 1.0, n)  # planned before capturing
    with hydroplane.capture(0) as first:
        axpy[_grid(n)](x, x, a, 1.0, n)
    buffer = a.buffer
    del a
    gc.collect()
    first.close()  # frees the dropped array's buffer: back to the pool
    c = hydroplane.device_array(np.full(n, 5.0, np.float32), 0)
    assert c.buffer is buffer
    axpy[_grid(n)](x, x, c, 1.0, n)
    with hydroplane.capture(0) as second:
        axpy[_grid(n)](x, x, c, 1.0, n)
    second.close()
    d = hydroplane.device_array(np.full(n, 9.0, np.float32), 0)
    assert d.buffer is not c.buffer
    rt.synchronize()
    np.testing.assert_array_equal(c.numpy(), np.full(n, 2.0, np.float32))
    np.testing.assert_array_equal(d.numpy(), np.full(n, 9.0, np.float32))



@pytest.mark.vulkan
def test_a_pooled_buffer_closed_behind_the_pool_is_never_handed_out():
    """A buffer that went back to the pool and was then closed by something else (seen: an array and its buffer
    collected as one garbage cycle, the array's finalizer pooling the buffer and the buffer's own closing it): the
    next array of that size gets an open buffer and its contents."""
    rt = runtime(0)
    rt.trim()
    n = 1037  # float32 elements: a size no other test pools
    first = hydroplane.device_array(np.zeros(n, np.float32), 0)
    buffer = first.buffer
    first.release()  # pooled
    buffer.close()  # closed behind the pool's back
    fresh = hydroplane.device_array(np.full(n, -2.5, np.float32), 0)
    assert fresh.buffer is not buffer and not fresh.buffer.closed
    np.testing.assert_array_equal(fresh.numpy(), np.full(n, -2.5, np.float32))


@pytest.mark.vulkan
def test_a_full_pool_makes_room_by_evicting_the_buffers_freed_longest_ago():
    """A pool filled with buffers of one size (a finished workload's arrays) still serves a loop of another size:
    the oldest freed buffers are destroyed to make room, so the loop's arrays come from the pool after its first
    call instead of a Vulkan allocation each (seen on the H200: a loop of new 64 x 4096 results ran at 1321 us a
    call against 217 with out=, every result allocated because earlier cases' weights filled the pool)."""
    rt = runtime(0)
    rt.trim()
    saved = rt.pool_bytes
    rt.pool_bytes = 64 * 1024
    try:
        old = [hydroplane.device_array(np.full(4096, i, np.float32), 0) for i in range(4)]  # 16 KiB each
        for a in old:
            a.release()  # the pool is full
        made = rt._made
        x = hydroplane.device_array(np.arange(1000, dtype=np.float32) - 500.0, 0)
        for i in range(20):  # a new 4000-byte result each call, the previous one dropped
            y = hydroplane.device_array(np.zeros(1000, np.float32), 0)
            axpy[_grid(1000)](x, x, y, float(i), 1000)
            np.testing.assert_array_equal(y.numpy(), (i + 1) * (np.arange(1000, dtype=np.float32) - 500.0))
            del y
            gc.collect()
        assert rt._made - made <= 3  # x and the loop's first result or two, not one per call
        assert rt._pooled_bytes <= rt.pool_bytes
        survivor = hydroplane.device_array(np.full(4096, 7.0, np.float32), 0)  # a 16 KiB one is still pooled
        np.testing.assert_array_equal(survivor.numpy(), np.full(4096, 7.0, np.float32))
    finally:
        rt.pool_bytes = saved
        rt.trim()
