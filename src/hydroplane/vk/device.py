"""A logical Vulkan device: created with exactly the extensions and feature bits a module set needs.

`Device(info, capabilities=..., extensions=...)` takes SPIR-V capability and extension *names*
(plain strings) and turns them, through the tables in `features`, into device extensions and a
pNext chain of feature structs; whatever the device lacks raises `UnsupportedFeature` naming the
struct field or extension and the capability that needed it. It owns one compute queue, a command
pool and a pipeline cache, and is the factory of buffers, pipelines and recordings.
"""

from __future__ import annotations

import ctypes

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk import structs_caps as C
from hydroplane.vk.capabilities import DeviceInfo, devices
from hydroplane.vk.errors import ClosedError, DeviceLost, UnsupportedFeature, UsageError
from hydroplane.vk.features import (
    COMPANION_BITS,
    CORE,
    FEATURE_STRUCTS,
    ROBUST_BITS,
    SPIRV_EXTENSIONS,
    Requirements,
    requirements,
    struct_name,
)
from hydroplane.vk.handles import Owned
from hydroplane.vk.instance import chain_structs
from hydroplane.vk.memory import Buffer
from hydroplane.vk.pipeline import Pipeline
from hydroplane.vk.recording import Recording, push_bytes
from hydroplane.vk.results import check
from hydroplane.vk.sync import CPU_TIMEOUT_NS, DEFAULT_TIMEOUT_NS

# Enabled whenever the device has them: cheap, and the runtime's optional paths use them.
DEFAULT_BITS = {
    "subgroup_size_control": ("subgroupSizeControl", "computeFullSubgroups"),
    "pipeline_executable_properties": ("pipelineExecutableInfo",),
    "maintenance4": ("maintenance4",),  # LocalSizeId (glslang's local_size_x_id) needs it
    "pipeline_robustness": ("pipelineRobustness",),  # robust access per pipeline (`Pipeline(robust=True)`)
}
OPTIONAL_EXTENSIONS = ("VK_EXT_memory_budget",)
DISPATCH_CACHE_SIZE = 64


def pick_device(candidates: list[DeviceInfo] | None = None) -> DeviceInfo:
    """The device a plain `Device()` uses: discrete, then integrated, then any with compute; KHR coop first."""
    candidates = devices() if candidates is None else candidates
    usable = [d for d in candidates if d.compute_queue_family >= 0]
    if not usable:
        raise UnsupportedFeature("no Vulkan device with a compute queue", missing=("compute queue",))
    rank = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3}
    return min(usable, key=lambda d: (not d.cooperative_matrix_khr, rank.get(d.device_type, 4), d.index))


def _every_supported_bit(info: DeviceInfo) -> Requirements:
    req = Requirements()
    for key, bits in info.features.items():
        if key == CORE or key in ROBUST_BITS:  # robust access only when asked for (Device(robust=True))
            continue
        for bit, on in bits.items():
            if on:
                req.add_bit(key, bit, "enable_all")
    for bit in ("shaderInt16", "shaderInt64", "shaderFloat64"):
        if info.has_feature(CORE, bit):
            req.add_bit(CORE, bit, "enable_all")
    return req


class Device(Owned):
    """A VkDevice with one compute queue; `capabilities`/`extensions` are SPIR-V names to support,
    `enable_all` turns on every feature bit offered, `pipeline_cache` seeds the pipeline cache with
    bytes from an earlier `pipeline_cache_data()`, `robust` enables robustBufferAccess (and
    robustBufferAccess2 / robustImageAccess2 where VK_EXT_robustness2 offers them): out-of-bounds
    buffer reads give zero and writes are dropped instead of touching other memory.

    A dispatch that does not finish within `timeout_ns` (`set_timeout`) marks the device hung: from then
    on nothing of it is destroyed (a shader may still run), and every call raises DeviceLost."""

    def __init__(self, info: DeviceInfo | None = None, capabilities=(), extensions=(), *, enable_all: bool = False,
                 pipeline_cache: bytes | None = None, robust: bool = False):
        self.info = info = info or pick_device()
        if info.instance is None or info.instance.closed:  # its physical-device handle died with it
            raise ClosedError(f"the Instance that listed {info.name} is closed; list devices() again")
        api = info.api_version_number
        req = requirements(capabilities, extensions)
        if enable_all:
            req.merge(_every_supported_bit(info))
        self._check_supported(req)
        for key, bits in DEFAULT_BITS.items():
            for bit in bits:
                if info.has_feature(key, bit):
                    req.add_bit(key, bit, "default")
        for key in list(req.bits):
            for bit in COMPANION_BITS.get(key, ()):
                if info.has_feature(key, bit):
                    req.add_bit(key, bit, "companion")
        if robust:
            for key, bits in ROBUST_BITS.items():
                for bit in bits:
                    if info.has_feature(key, bit):
                        req.add_bit(key, bit, "robust")
        self.robust = robust and info.has_feature(CORE, "robustBufferAccess")
        self.timeout_ns = CPU_TIMEOUT_NS if info.device_type == "cpu" else DEFAULT_TIMEOUT_NS
        self._hung = False
        self.enabled_bits = {k: frozenset(v) for k, v in req.bits.items()}
        self.enabled_extensions = self._device_extensions(req, api)
        self._create(req, pipeline_cache or b"")

    def _check_supported(self, req: Requirements) -> None:
        info, missing = self.info, []
        for key, bits in sorted(req.bits.items()):
            for bit in sorted(bits):
                if not info.has_feature(key, bit):
                    missing.append(f"{struct_name(key)}.{bit} (for {req.reasons.get(f'{key}.{bit}', '?')})")
        for ext in sorted(req.extensions):
            device_ext, core = SPIRV_EXTENSIONS[ext]
            if not (core and info.api_version_number >= core) and device_ext not in info.extensions:
                missing.append(f"{device_ext} (for SPIR-V extension {ext})")
        if missing:
            raise UnsupportedFeature(f"{info.name} lacks: " + "; ".join(missing), missing=tuple(missing))

    def _device_extensions(self, req: Requirements, api: int) -> tuple[str, ...]:
        names = set()
        for key in req.bits:
            if key != CORE:
                ext = FEATURE_STRUCTS[key].extension_needed(api)
                if ext:
                    names.add(ext)
        for ext in req.extensions:
            device_ext, core = SPIRV_EXTENSIONS[ext]
            if not (core and api >= core):
                names.add(device_ext)
        names.update(e for e in OPTIONAL_EXTENSIONS if e in self.info.extensions)
        return tuple(sorted(names))

    def _create(self, req: Requirements, cache_data: bytes) -> None:
        info = self.info
        top = C.VkPhysicalDeviceFeatures2()
        chain = [top]
        for key, bits in sorted(req.bits.items()):
            target = top.features if key == CORE else FEATURE_STRUCTS[key].struct()
            for bit in bits:
                setattr(target, bit, 1)
            if key != CORE:
                chain.append(target)
        chain_structs(*chain)
        priority = ctypes.c_float(1.0)
        queue_info = S.VkDeviceQueueCreateInfo(queueFamilyIndex=info.compute_queue_family, queueCount=1,
                                               pQueuePriorities=ctypes.addressof(priority))
        names = [e.encode() for e in self.enabled_extensions]
        name_array = (ctypes.c_char_p * max(1, len(names)))(*names)
        create = S.VkDeviceCreateInfo(pNext=ctypes.addressof(top), queueCreateInfoCount=1,
                                      pQueueCreateInfos=ctypes.addressof(queue_info),
                                      enabledExtensionCount=len(names),
                                      ppEnabledExtensionNames=ctypes.addressof(name_array))
        handle = ctypes.c_void_p()
        check(_ffi.core("vkCreateDevice")(info.handle, ctypes.byref(create), None, ctypes.byref(handle)),
              "vkCreateDevice")
        self.handle = handle.value
        self.instance = info.instance
        self._lost = False
        self._adopt(info.instance)
        queue = ctypes.c_void_p()
        _ffi.core("vkGetDeviceQueue")(self.handle, info.compute_queue_family, 0, ctypes.byref(queue))
        self.queue = queue.value
        pool_info = S.VkCommandPoolCreateInfo(flags=E.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                              queueFamilyIndex=info.compute_queue_family)
        pool = ctypes.c_void_p()
        self.call("vkCreateCommandPool", ctypes.byref(pool_info), None, ctypes.byref(pool))
        self.command_pool = pool.value
        # Data from pipeline_cache_data() of an earlier run; the driver ignores data of another device.
        self._cache_seed = ctypes.create_string_buffer(cache_data, max(1, len(cache_data)))
        seed = ctypes.addressof(self._cache_seed) if cache_data else None
        cache_info = S.VkPipelineCacheCreateInfo(initialDataSize=len(cache_data), pInitialData=seed)
        cache = ctypes.c_void_p()
        self.call("vkCreatePipelineCache", ctypes.byref(cache_info), None, ctypes.byref(cache))
        self.pipeline_cache = cache.value
        self._memory_properties = S.VkPhysicalDeviceMemoryProperties()
        _ffi.core("vkGetPhysicalDeviceMemoryProperties")(info.handle, ctypes.byref(self._memory_properties))
        self._dispatch_cache: dict = {}

    # --- calls -------------------------------------------------------------------------------
    def call(self, name: str, *args) -> int | None:
        """Call a core device-level entry point with this device first; errors raise (DeviceLost marks us)."""
        self._require_open("Device")
        if self._lost:
            raise DeviceLost(f"{self.info.name}: the device was lost earlier; create a new Device",
                             result="VK_ERROR_DEVICE_LOST", call=name)
        result = _ffi.core(name)(self.handle, *args)
        if result is not None and _ffi.SIGNATURES[name][0] is ctypes.c_int32:  # a VkResult
            self.fail(result, name)
        return result

    def fail(self, result: int, name: str) -> int:
        """Raise for a failed `result` of `name` (DeviceLost also marks the device lost); else return it."""
        try:
            return check(result, name)
        except DeviceLost:
            self._lost = True
            raise

    def queue_call(self, name: str, *args) -> int:
        """Call a queue-level entry point (vkQueueSubmit ...) on this device's compute queue."""
        self._require_open("Device")
        return self.fail(_ffi.core(name)(self.queue, *args), name)

    def release(self, name: str, *args) -> None:
        """Call a vkDestroy*/vkFree* entry point: no checks, since it must work while closing. On a hung
        device nothing is destroyed: a shader may still be using it (the objects leak on purpose)."""
        if self._hung:
            return
        _ffi.core(name)(self.handle, *args)

    def extension_proc(self, name: str, extension: str):
        """A device-level extension entry point; UnsupportedFeature unless the extension was enabled."""
        if extension not in self.enabled_extensions:
            state = "offers but was not enabled" if extension in self.info.extensions else "lacks"
            raise UnsupportedFeature(f"{name} needs {extension}, which {self.info.name} {state}",
                                     missing=(extension,))
        return _ffi.device_proc(self.handle, name)

    def has_bit(self, key: str, bit: str) -> bool:
        return bit in self.enabled_bits.get(key, ())

    @property
    def pipeline_robustness(self) -> str | None:
        """The buffer robustness a `pipeline(..., robust=True)` gets: "robustBufferAccess2" (out-of-bounds reads
        give zero, writes are dropped) or "robustBufferAccess" (reads give zero or a value from inside the bound
        range, writes are dropped or land inside it), per pipeline through VK_EXT_pipeline_robustness, or device-wide
        on a `Device(robust=True)`; None where neither is possible (no VK_EXT_pipeline_robustness on a device
        created without robust access): such a pipeline's out-of-bounds accesses are undefined."""
        if self.robust:
            return "robustBufferAccess2" if self.has_bit("robustness2", "robustBufferAccess2") else \
                "robustBufferAccess"
        if not self.has_bit("pipeline_robustness", "pipelineRobustness"):
            return None
        if self.info.has_feature("robustness2", "robustBufferAccess2"):  # supported is enough, enabled not needed
            return "robustBufferAccess2"
        return "robustBufferAccess" if self.info.has_feature(CORE, "robustBufferAccess") else None

    def require(self, capabilities=(), extensions=()) -> None:
        """Raise UnsupportedFeature unless a module with these names can run on this device as created."""
        req = requirements(capabilities, extensions)
        missing = [f"{struct_name(k)}.{b} (for {req.reasons[f'{k}.{b}']})"
                   for k, bits in sorted(req.bits.items()) for b in sorted(bits) if not self.has_bit(k, b)]
        for ext in sorted(req.extensions):
            device_ext, core = SPIRV_EXTENSIONS[ext]
            if not (core and self.info.api_version_number >= core) and device_ext not in self.enabled_extensions:
                missing.append(f"{device_ext} (for SPIR-V extension {ext})")
        if missing:
            raise UnsupportedFeature(f"this Device was not created with: {'; '.join(missing)} "
                                     "(pass the module's capabilities/extensions to Device())", missing=tuple(missing))

    def wait_idle(self) -> None:
        self.call("vkDeviceWaitIdle")

    def set_timeout(self, seconds: float) -> None:
        """How long a dispatch may run before the device is taken as hung (DeviceTimeout)."""
        if not seconds > 0:
            raise UsageError(f"timeout must be a positive number of seconds, not {seconds!r}")
        self.timeout_ns = min(int(seconds * 1e9), (1 << 64) - 1)

    def mark_hung(self) -> None:
        """A submission never finished: the device is lost, and none of its objects may be destroyed."""
        self._lost = True
        self._hung = True
        self.instance.has_hung_device = True

    @property
    def hung(self) -> bool:
        return self._hung

    # --- factories (the executor-facing surface lives in these modules) ------------------------
    def buffer(self, data_or_nbytes, **kwargs):
        """A Buffer from a NumPy array (copied in) or of a byte size; see `memory.Buffer`."""
        return Buffer.create(self, data_or_nbytes, **kwargs)

    def pipeline(self, words, bindings=(), **kwargs):
        """A compute Pipeline from SPIR-V words; see `pipeline.Pipeline`."""
        return Pipeline(self, words, bindings, **kwargs)

    def record(self, pipeline, grid, buffers, push=None, *, timestamps: bool = False):
        """Record a dispatch once into a command buffer to submit many times; see `recording.Recording`."""
        return Recording(pipeline, grid, buffers, push, timestamps=timestamps)

    def dispatch(self, pipeline, grid, buffers, push=None) -> None:
        """Run `pipeline` over `grid` workgroups and wait. Repeated calls with the same pipeline, grid,
        buffers and push bytes reuse one recorded command buffer (up to DISPATCH_CACHE_SIZE of them;
        a cached recording keeps its buffers alive until it is evicted or they are closed)."""
        push_data = push if isinstance(push, bytes) else push_bytes(push)
        key = (id(pipeline), grid if isinstance(grid, int) else tuple(grid),
               tuple([(k, id(b)) for k, b in buffers.items()]), push_data)
        rec = self._dispatch_cache.get(key)
        if rec is None or rec._closed:
            if len(self._dispatch_cache) >= DISPATCH_CACHE_SIZE:
                for old in list(self._dispatch_cache.values())[: DISPATCH_CACHE_SIZE // 2]:
                    old.close()
                self._dispatch_cache = {k: v for k, v in self._dispatch_cache.items() if not v.closed}
            rec = self._dispatch_cache[key] = self.record(pipeline, grid, buffers, push_data)
        rec.run()

    def memory_usage(self) -> list[int] | None:
        """Bytes the driver reports in use per heap (VK_EXT_memory_budget), or None without it."""
        if "VK_EXT_memory_budget" not in self.enabled_extensions:
            return None
        budget = S.VkPhysicalDeviceMemoryBudgetPropertiesEXT()
        props = S.VkPhysicalDeviceMemoryProperties2(pNext=ctypes.addressof(budget))
        _ffi.core("vkGetPhysicalDeviceMemoryProperties2")(self.info.handle, ctypes.byref(props))
        return list(budget.heapUsage[: props.memoryProperties.memoryHeapCount])

    def _destroy(self) -> None:
        if self._hung:  # a shader may still run: leave the device and everything of it to the process's end
            self.handle = None
            return
        try:
            if not self._lost:
                _ffi.core("vkDeviceWaitIdle")(self.handle)
        finally:
            if getattr(self, "pipeline_cache", None):
                _ffi.core("vkDestroyPipelineCache")(self.handle, self.pipeline_cache, None)
            if getattr(self, "command_pool", None):
                _ffi.core("vkDestroyCommandPool")(self.handle, self.command_pool, None)
            _ffi.core("vkDestroyDevice")(self.handle, None)
            self.handle = None

    def pipeline_cache_data(self) -> bytes:
        """The driver's serialised pipeline cache (to persist between runs)."""
        size = ctypes.c_size_t()
        self.call("vkGetPipelineCacheData", self.pipeline_cache, ctypes.byref(size), None)
        data = ctypes.create_string_buffer(size.value)
        self.call("vkGetPipelineCacheData", self.pipeline_cache, ctypes.byref(size), data)
        return data.raw[: size.value]

