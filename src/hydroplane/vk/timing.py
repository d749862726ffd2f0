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


def bench(fn, warmup: int = 3, reps: int = 20, warmup_s: float = 0.0) -> BenchResult:
    """Time `fn` on the device: a timestamped Recording, or a callable returning device ns per call. The warm-up
    is `warmup` calls and at least `warmup_s` seconds of calls: give a discrete GPU some 0.3 s, since one that
    idled a second runs at its idle clock until sustained work raises it (the H200: 345 MHz against 1980)."""
    if reps < 1 or warmup < 0 or warmup_s < 0:
        raise UsageError(f"bench needs reps >= 1, warmup >= 0 and warmup_s >= 0, got reps={reps} warmup={warmup} "
                         f"warmup_s={warmup_s}")
    if hasattr(fn, "device_time_ns"):
        recording = fn

        def fn():
            recording.run()
            return recording.device_time_ns()

    warm_up(fn, warmup, warmup_s)
    device, host = [], []
    for _ in range(reps):
        start = time.perf_counter_ns()
        device.append(float(fn()))
        host.append(time.perf_counter_ns() - start)
    import statistics  # only when timing (~2 ms of import)
    return BenchResult(min(device), statistics.median(device), max(device), reps, statistics.median(host))


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
