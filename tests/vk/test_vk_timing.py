"""GPU timing through timestamp queries, bench(), and pipeline executable statistics where offered."""

from __future__ import annotations

import time

import numpy as np
import pytest
from vk_support import compile_glsl, device, validated_instance, vk_info, vk_instance  # noqa: F401

from hydroplane.vk import Device, UnsupportedFeature, UsageError, bench


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
