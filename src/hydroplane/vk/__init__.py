"""hydroplane.vk: the Vulkan runtime over ctypes (devices, capabilities, buffers, pipelines, dispatch, timing).

It imports nothing of ours but hydroplane.errors: it takes SPIR-V as words plus plain data that
describes the module (bindings, push-constant size, spec constants, capability/extension names).

    from hydroplane.vk import Device, Binding
    with Device(capabilities=["Shader"]) as dev:
        a = dev.buffer(np.arange(64, dtype=np.float32))
        p = dev.pipeline(words, [Binding(0, 0)], push_constant_size=4)
        dev.dispatch(p, (1, 1, 1), {0: a}, push=np.uint32(64))
        out = a.read(np.float32)

Executor interface (the shape the reference executor shares; `launch.VulkanExecutor` adapts it):
`Device.buffer(array|nbytes)`, `Buffer.write(array)`, `Buffer.read(dtype, shape)`,
`Device.pipeline(words, bindings, push_constant_size=, spec=, subgroup_size=)`,
`Device.dispatch(pipeline, grid, {binding | (set, binding): buffer}, push=)`, `close()`.
"""

from hydroplane.vk.capabilities import CoopMatrixProperties, DeviceInfo, default_instance, devices
from hydroplane.vk.device import Device, pick_device
from hydroplane.vk.errors import (
    ClosedError,
    DeviceLost,
    DeviceTimeout,
    LoaderMissing,
    OutOfDeviceMemory,
    OutOfHostMemory,
    UnsupportedFeature,
    UsageError,
    ValidationMessage,
    VulkanError,
)
from hydroplane.vk.features import requirements
from hydroplane.vk.instance import Instance, Message, take_all_messages, validation_requested
from hydroplane.vk.memory import Buffer
from hydroplane.vk.pipeline import Binding, Pipeline
from hydroplane.vk.recording import Recording
from hydroplane.vk.results import check, result_name
from hydroplane.vk.stream import (
    UPDATE_MAX_BYTES,
    DescriptorSets,
    DispatchRecorder,
    QueryPool,
    SecondaryCommands,
    Stream,
    batch_barrier,
    dispatch_recorder,
    full_barrier,
    host_barrier,
    record_copy,
    record_dispatch,
    record_fill,
    record_update,
)
from hydroplane.vk.timing import BenchResult, PipelineExecutable, bench, pipeline_statistics, warm_up

__all__ = [
    "BenchResult", "Binding", "Buffer", "ClosedError", "CoopMatrixProperties", "DescriptorSets", "Device", "DeviceInfo",
    "DeviceLost", "DispatchRecorder", "QueryPool", "SecondaryCommands", "Stream", "batch_barrier",
    "dispatch_recorder", "full_barrier", "host_barrier", "record_copy", "record_dispatch", "record_fill",
    "record_update", "UPDATE_MAX_BYTES", "DeviceTimeout", "Instance", "LoaderMissing", "Message",
    "OutOfDeviceMemory", "OutOfHostMemory", "Pipeline",
    "PipelineExecutable", "Recording", "UnsupportedFeature", "UsageError", "ValidationMessage", "VulkanError",
    "bench", "check", "default_instance", "devices", "pick_device", "pipeline_statistics", "requirements",
    "result_name", "take_all_messages", "validation_requested", "warm_up",
]
