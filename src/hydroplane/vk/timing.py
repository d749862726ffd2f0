"""GPU timing and what the driver says about a pipeline.

`bench(fn, warmup, reps)` runs `fn` (a Recording made with timestamps=True, or any callable that
returns one run's device time in ns) and reports min/median/max device time plus host time.
`pipeline_statistics(pipeline)` reads VK_KHR_pipeline_executable_properties (registers, shared
memory, ... as the driver names them) where the device offers it.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import UnsupportedFeature, UsageError
from hydroplane.vk.instance import STyped, enumerate_structs

PIPELINE_EXECUTABLE_EXTENSION = "VK_KHR_pipeline_executable_properties"


@dataclass(frozen=True)
class BenchResult:
    """Device time per run (ns) over `reps` runs, and host wall time per run (ns)."""

    min_ns: float
    median_ns: float
    max_ns: float
    reps: int
    host_median_ns: float

    def text(self) -> str:
        return (f"device min {self.min_ns / 1e3:.2f} us, median {self.median_ns / 1e3:.2f} us, "
                f"max {self.max_ns / 1e3:.2f} us over {self.reps} runs "
                f"(host median {self.host_median_ns / 1e3:.2f} us)")


def warm_up(fn, runs: int, seconds: float) -> None:
    """Call `fn` at least `runs` times and for at least `seconds` (a GPU's clock rises under sustained work)."""
    start = time.perf_counter()
    done = 0
    while done < runs or time.perf_counter() - start < seconds:
        fn()
        done += 1


# A GPU's clock can take over a second of sustained work to rise from idle (an H100, 2026-12-06: still at 660-990 of
# 1980 MHz 0.4 s after 0.3 s of back-to-back work; docs/perf.md), so a fixed warm-up can time the ramp. `settled`
# times samples again, for up to SETTLE_MAX_S seconds, while they still get faster.
SETTLE_MAX_S = 2.0
SETTLE_RATIO = 1.03  # a sample whose median is this much faster than the last one's, or whose first third is this
# much slower than its last third, is taken as timed on a rising clock


def _median(values) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def still_rising(times, last=None) -> bool:
    """Whether a sample of per-run times (in any unit) looks timed on a rising clock: its median more than
    SETTLE_RATIO faster than the end of the `last` sample (the median of its last third, or of the whole under 3
    runs), or (6 runs or more) its first third's median more than SETTLE_RATIO slower than its last third's."""
    if last is not None and _median(times) * SETTLE_RATIO < _median(last[-max(len(last) // 3, 1):]):
        return True
    third = len(times) // 3
    return third >= 2 and _median(times[:third]) > SETTLE_RATIO * _median(times[-third:])


def settled(sample, max_s: float = SETTLE_MAX_S) -> list:
    """Call `sample()` (a list of per-run times) at least twice and again while the newest sample is still rising
    (`still_rising` against the one before), for at most `max_s` seconds after the first; returns the newest. With
    `max_s` 0, one sample."""
    times = sample()
    if max_s <= 0:
        return times
    deadline = time.perf_counter() + max_s
    while True:
        last, times = times, sample()
        if not still_rising(times, last) or time.perf_counter() >= deadline:
            return times


def bench(fn, warmup: int = 3, reps: int = 20, warmup_s: float = 0.0, settle_s: float = 0.0) -> BenchResult:
    """Time `fn` on the device: a timestamped Recording, or a callable returning device ns per call. The warm-up
    is `warmup` calls and at least `warmup_s` seconds of calls: give a discrete GPU some 0.3 s, since one that
    idled a second runs at its idle clock until sustained work raises it (the H200: 345 MHz against 1980). With
    `settle_s` > 0 the `reps` timed calls are repeated while they still get faster, for up to `settle_s` seconds
    (`settled`: the clock still rising after the warm-up)."""
    if reps < 1 or warmup < 0 or warmup_s < 0 or settle_s < 0:
        raise UsageError(f"bench needs reps >= 1, warmup >= 0, warmup_s >= 0 and settle_s >= 0, got reps={reps} "
                         f"warmup={warmup} warmup_s={warmup_s} settle_s={settle_s}")
    if hasattr(fn, "device_time_ns"):
        recording = fn

        def fn():
            recording.run()
            return recording.device_time_ns()

    warm_up(fn, warmup, warmup_s)
    host: list = []

    def sample() -> list:
        device = []
        host.clear()
        for _ in range(reps):
            start = time.perf_counter_ns()
            device.append(float(fn()))
            host.append(time.perf_counter_ns() - start)
        return device

    device = settled(sample, settle_s)
    return BenchResult(min(device), _median(device), max(device), reps, _median(host))


@dataclass(frozen=True)
class PipelineExecutable:
    """One executable of a pipeline (a compute pipeline has one) with the driver's statistics."""

    name: str
    description: str
    subgroup_size: int
    statistics: dict


def _statistic_value(stat):
    fmt, value = stat.format, stat.value
    return {E.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: lambda: bool(value.b32),
            E.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: lambda: value.i64,
            E.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: lambda: value.u64,
            E.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: lambda: value.f64}.get(fmt, lambda: None)()


def pipeline_statistics(pipeline) -> list[PipelineExecutable]:
    """Statistics of each executable of `pipeline` (created with capture_statistics=True)."""
    device = pipeline.device
    if not device.has_bit("pipeline_executable_properties", "pipelineExecutableInfo"):
        raise UnsupportedFeature(f"{device.info.name} does not offer {PIPELINE_EXECUTABLE_EXTENSION} "
                                 "(pipelineExecutableInfo)", missing=(PIPELINE_EXECUTABLE_EXTENSION,))
    if not pipeline.capture_statistics:
        raise UsageError("create the pipeline with capture_statistics=True to read its statistics")
    get_props = device.extension_proc("vkGetPipelineExecutablePropertiesKHR", PIPELINE_EXECUTABLE_EXTENSION)
    get_stats = device.extension_proc("vkGetPipelineExecutableStatisticsKHR", PIPELINE_EXECUTABLE_EXTENSION)
    info = S.VkPipelineInfoKHR(pipeline=pipeline.handle)
    out = []
    for index, props in enumerate(enumerate_structs(get_props, STyped(S.VkPipelineExecutablePropertiesKHR),
                                             device.handle, ctypes.byref(info))):
        exe = S.VkPipelineExecutableInfoKHR(pipeline=pipeline.handle, executableIndex=index)
        stats = enumerate_structs(get_stats, STyped(S.VkPipelineExecutableStatisticKHR), device.handle,
                                  ctypes.byref(exe))
        out.append(PipelineExecutable(props.name.decode(), props.description.decode(), props.subgroupSize,
                                      {s.name.decode(): _statistic_value(s) for s in stats}))
    return out
