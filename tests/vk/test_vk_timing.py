"""GPU timing through timestamp queries, bench(), and pipeline executable statistics where offered."""

from __future__ import annotations

import time
import types

import numpy as np
import pytest
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import Device, UnsupportedFeature, UsageError, bench, timing
from hydroplane.vk.timing import settled, still_rising


@pytest.fixture(scope="module")
def scale_add_words(glslang, tmp_path_factory):
    return compile_glsl(glslang, "scale_add.comp", tmp_path_factory.mktemp("glsl"))


def _recording(device, words, n, timestamps=True):
    rng = np.random.default_rng(3)
    bufs = [device.buffer(rng.standard_normal(n, dtype=np.float32)) for _ in range(3)]
    pipe = device.pipeline(words, [(0, 0), (0, 1), (1, 0)], push_constant_size=8, spec={0: 64})
    push = np.array([(1.0, n)], dtype=[("s", "<f4"), ("c", "<u4")])
    return device.record(pipe, n // 64, {0: bufs[0], 1: bufs[1], (1, 0): bufs[2]}, push, timestamps=timestamps), bufs


def test_timestamps_measure_more_work_as_more_time(device, scale_add_words):
    small, small_bufs = _recording(device, scale_add_words, 64)
    large, large_bufs = _recording(device, scale_add_words, 1 << 20)
    small_result, large_result = bench(small, warmup=1, reps=5), bench(large, warmup=1, reps=5)
    for result in (small_result, large_result):
        assert 0 < result.min_ns <= result.median_ns <= result.max_ns
        assert result.reps == 5 and result.host_median_ns > 0
    assert large_result.median_ns > small_result.median_ns, (small_result.text(), large_result.text())
    for rec, bufs in ((small, small_bufs), (large, large_bufs)):
        rec.pipeline.close()
        for b in bufs:
            b.close()


def test_bench_takes_a_callable_and_checks_its_arguments():
    calls = iter(range(100, 200))
    result = bench(lambda: next(calls), warmup=2, reps=3)
    assert (result.min_ns, result.median_ns, result.max_ns) == (102, 103, 104)
    with pytest.raises(UsageError, match="reps >= 1"):
        bench(lambda: 1, reps=0)


def test_bench_warms_up_for_a_time():
    """warmup_s: calls go on until that much time has passed (a GPU's clock rises under sustained work)."""
    calls = []

    def fn():
        calls.append(time.perf_counter())
        time.sleep(0.002)
        return 1

    bench(fn, warmup=1, reps=2, warmup_s=0.05)
    assert calls[-2] - calls[0] >= 0.045  # the timed calls began only after warmup_s of warm-up calls
    assert len(calls) > 1 + 2


def test_settled_times_again_while_a_rising_clock_makes_the_runs_faster(monkeypatch):
    """A GPU's clock rising after the warm-up: each sample faster than the last, or one whose runs get faster
    within it, is taken again; a steady one (noise under SETTLE_RATIO either way) ends it; the time is capped."""
    samples = iter([[200.0] * 9, [150.0] * 9, [120.0] * 6 + [100.0] * 3, [101.0] * 9, [100.0] * 9, [50.0] * 9])
    taken = []

    def sample():
        taken.append(next(samples))
        return taken[-1]

    assert settled(sample) == [101.0] * 9 and len(taken) == 4  # 200 -> 150 -> rising within -> steady
    assert still_rising([100.0] * 9, [104.0] * 9) and not still_rising([100.0] * 9, [102.0] * 9)
    assert not still_rising([110.0] * 9, [100.0] * 9)  # slower than the last: not a rising clock
    assert not still_rising([130.0, 100.0, 100.0, 100.0, 100.0])  # under 6 runs: no thirds to compare
    assert settled(lambda: [1.0, 2.0], max_s=0) == [1.0, 2.0]
    ticks = iter(range(1000))
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    falling = iter(range(1000, 0, -100))
    assert settled(lambda: [float(next(falling))] * 3, max_s=3) == [700.0] * 3  # ever faster: ends at the deadline
    assert next(falling) == 600  # the first sample (the deadline read after it: 3 ticks on), then one a tick


def test_bench_settles_when_asked():
    device = iter([100.0, 90.0, 80.0, 70.0] + [60.0] * 20)
    result = bench(lambda: next(device), warmup=0, reps=2, settle_s=5.0)
    assert result.median_ns == 60.0  # 100/90 -> 80/70 (faster) -> 60/60 -> 60/60 (steady)
    with pytest.raises(UsageError, match="settle_s >= 0"):
        bench(lambda: 1, settle_s=-1)


def test_device_time_needs_timestamps(device, scale_add_words):
    rec, bufs = _recording(device, scale_add_words, 64, timestamps=False)
    rec.run()
    with pytest.raises(UsageError, match="timestamps=True"):
        rec.device_time_ns()
    rec.pipeline.close()
    for b in bufs:
        b.close()


def test_pipeline_statistics_where_offered(vk_info, scale_add_words):
    with Device(vk_info) as dev:
        pipe = dev.pipeline(scale_add_words, [(0, 0), (0, 1), (1, 0)], push_constant_size=8, spec={0: 64},
                            capture_statistics=True)
        if vk_info.pipeline_statistics:
            executables = pipe.statistics()
            assert executables and executables[0].statistics
            assert all(isinstance(v, (bool, int, float)) for v in executables[0].statistics.values())
        else:  # lavapipe: no VK_KHR_pipeline_executable_properties; the entry point is never called
            assert "VK_KHR_pipeline_executable_properties" not in vk_info.extensions
            with pytest.raises(UnsupportedFeature, match="VK_KHR_pipeline_executable_properties"):
                pipe.statistics()
