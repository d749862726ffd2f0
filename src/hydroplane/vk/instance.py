"""The Vulkan instance: loader, optional validation layer, and the debug messenger that collects messages.

Validation is opt-in: `Instance(validation=True)` or HYDROPLANE_VALIDATION=1 enables
VK_LAYER_KHRONOS_validation and a VK_EXT_debug_utils messenger that records every warning and
error into `instance.messages` (`take_messages()` hands them over and clears the list).
"""

from __future__ import annotations

import ctypes
import os
import weakref
from dataclasses import dataclass

from hydroplane.vk import _ffi
from hydroplane.vk import enums as E
from hydroplane.vk import structs as S
from hydroplane.vk.errors import UnsupportedFeature, ValidationMessage
from hydroplane.vk.handles import Owned
from hydroplane.vk.results import INCOMPLETE, check

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
DEBUG_UTILS = "VK_EXT_debug_utils"

_SEVERITY_NAMES = {
    E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT: "verbose",
    E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT: "info",
    E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT: "warning",
    E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT: "error",
}
_COLLECTED_SEVERITIES = (E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                         | E.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
_COLLECTED_TYPES = (E.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | E.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                    | E.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)
# VkBool32 callback(severity, types, const VkDebugUtilsMessengerCallbackDataEXT*, void* user)
_MESSENGER_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                       ctypes.POINTER(S.VkDebugUtilsMessengerCallbackDataEXT), ctypes.c_void_p)


@dataclass(frozen=True)
class Message:
    """One message of the validation layer (or the loader) through VK_EXT_debug_utils."""

    severity: str
    message_id: str
    text: str


_LIVE_INSTANCES: weakref.WeakSet = weakref.WeakSet()
_MESSAGES_OF_CLOSED_INSTANCES: list[Message] = []


def take_all_messages() -> list[Message]:
    """Every message collected by every Instance of the process so far (closed ones too); all are cleared.

    A test suite can call this at the end of each test or of the session to turn any validation
    message, wherever it came from (the default instance, a launch layer's device), into a failure."""
    taken = list(_MESSAGES_OF_CLOSED_INSTANCES)
    _MESSAGES_OF_CLOSED_INSTANCES.clear()
    for inst in list(_LIVE_INSTANCES):
        taken += inst.take_messages()
    return taken


def validation_requested() -> bool:
    """True when HYDROPLANE_VALIDATION asks for the validation layer."""
    return os.environ.get("HYDROPLANE_VALIDATION", "").strip().lower() in ("1", "true", "yes", "on")


def enumerate_structs(call, struct, *leading) -> list:
    """The two-call enumeration idiom: count, then fill (retrying on VK_INCOMPLETE)."""
    name = getattr(call, "__name__", "vkEnumerate*")
    while True:
        count = ctypes.c_uint32()
        result = call(*leading, ctypes.byref(count), None)
        if result is not None:
            check(result, name)
        items = (struct * count.value)()
        result = call(*leading, ctypes.byref(count), items)
        if result is None or check(result, name) != INCOMPLETE:
            return list(items[: count.value])


def chain_structs(*structs) -> None:
    """Link structs through pNext in the order given (the caller keeps them alive)."""
    for first, second in zip(structs, structs[1:]):
        first.pNext = ctypes.addressof(second)


class STyped:
    """Stands in for a struct type in `enumerate_structs`: `(STyped(T) * n)()` is a T array with sType set,
    as queries whose output structs are also inputs (they carry sType/pNext) require."""

    def __init__(self, struct):
        self.struct = struct

    def __mul__(self, count):
        def make():
            array = (self.struct * count)()
            for item in array:
                item.sType = self.struct.STYPE
            return array
        return make


def instance_layers() -> list[str]:
    """Names of the layers the loader can enable."""
    props = enumerate_structs(_ffi.core("vkEnumerateInstanceLayerProperties"), S.VkLayerProperties)
    return [p.layerName.decode() for p in props]


def instance_extensions(layer: str | None = None) -> list[str]:
    """Names of the instance extensions (of the loader and drivers, or of one layer)."""
    props = enumerate_structs(_ffi.core("vkEnumerateInstanceExtensionProperties"), S.VkExtensionProperties,
                       layer.encode() if layer else None)
    return [p.extensionName.decode() for p in props]


def _names_array(names: list[str]):
    encoded = [n.encode() for n in names]
    return (ctypes.c_char_p * max(1, len(encoded)))(*encoded), encoded


class Instance(Owned):
    """A VkInstance. `validation=None` follows HYDROPLANE_VALIDATION."""

    def __init__(self, validation: bool | None = None, api_version: int = E.VK_API_VERSION_1_3,
                 application: str = "hydroplane"):
        self.validation = validation_requested() if validation is None else bool(validation)
        self.api_version = api_version  # the highest version this instance lets devices be used at
        self.messages: list[Message] = []
        self._messenger = None
        self._callback = _MESSENGER_CALLBACK(self._on_message)
        layers, extensions = [], []
        if self.validation:
            if VALIDATION_LAYER not in instance_layers():
                raise UnsupportedFeature(f"validation was requested but {VALIDATION_LAYER} is not installed",
                                         missing=(VALIDATION_LAYER,))
            layers.append(VALIDATION_LAYER)
            if DEBUG_UTILS not in instance_extensions() + instance_extensions(VALIDATION_LAYER):
                raise UnsupportedFeature(f"validation needs {DEBUG_UTILS}, which is missing", missing=(DEBUG_UTILS,))
            extensions.append(DEBUG_UTILS)
        self.layers, self.extensions = tuple(layers), tuple(extensions)
        self._app_name = application.encode()
        app = S.VkApplicationInfo(pApplicationName=self._app_name, applicationVersion=1,
                                  pEngineName=b"hydroplane", engineVersion=1, apiVersion=api_version)
        layer_array, _keep_layers = _names_array(layers)
        ext_array, _keep_exts = _names_array(extensions)
        messenger_info = self._messenger_info()
        info = S.VkInstanceCreateInfo(
            pNext=ctypes.addressof(messenger_info) if self.validation else None,
            pApplicationInfo=ctypes.addressof(app),
            enabledLayerCount=len(layers), ppEnabledLayerNames=ctypes.addressof(layer_array),
            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=ctypes.addressof(ext_array))
        handle = ctypes.c_void_p()
        check(_ffi.core("vkCreateInstance")(ctypes.byref(info), None, ctypes.byref(handle)), "vkCreateInstance")
        self.handle = handle.value
        self.api_version = api_version
        self._adopt(None)
        _LIVE_INSTANCES.add(self)
        if self.validation:
            self._create_messenger(messenger_info)

    def _messenger_info(self) -> S.VkDebugUtilsMessengerCreateInfoEXT:
        return S.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=_COLLECTED_SEVERITIES, messageType=_COLLECTED_TYPES,
            pfnUserCallback=ctypes.cast(self._callback, ctypes.c_void_p))

    def _create_messenger(self, info) -> None:
        self._create_messenger_fn = _ffi.instance_proc(self.handle, "vkCreateDebugUtilsMessengerEXT")
        self._destroy_messenger_fn = _ffi.instance_proc(self.handle, "vkDestroyDebugUtilsMessengerEXT")
        messenger = ctypes.c_void_p()
        check(self._create_messenger_fn(self.handle, ctypes.byref(info), None, ctypes.byref(messenger)),
              "vkCreateDebugUtilsMessengerEXT")
        self._messenger = messenger.value

    def _on_message(self, severity, types, data, user) -> int:
        try:
            d = data.contents
            message_id = ctypes.string_at(d.pMessageIdName).decode(errors="replace") if d.pMessageIdName else ""
            text = ctypes.string_at(d.pMessage).decode(errors="replace") if d.pMessage else ""
            self.messages.append(Message(_SEVERITY_NAMES.get(severity, str(severity)), message_id, text))
        except Exception as exc:  # noqa: BLE001 - never let an exception cross into C
            self.messages.append(Message("error", "hydroplane-callback", repr(exc)))
        return 0

    def take_messages(self) -> list[Message]:
        """The messages collected so far; the list is emptied."""
        taken, self.messages[:] = list(self.messages), []
        return taken

    def raise_messages(self) -> None:
        """Raise ValidationMessage with every message collected so far (and clear them), if any."""
        messages = self.take_messages()
        if messages:
            raise ValidationMessage(messages)

    def physical_device_handles(self) -> list[int]:
        self._require_open("Instance")
        handles = enumerate_structs(_ffi.core("vkEnumeratePhysicalDevices"), ctypes.c_void_p, self.handle)
        return [h if isinstance(h, int) else h.value for h in handles]

    def _destroy(self) -> None:
        if getattr(self, "has_hung_device", False):  # a shader of one of its devices may still run: leave it
            self.handle = None
            return
        if self._messenger:
            self._destroy_messenger_fn(self.handle, self._messenger, None)
            self._messenger = None
        _ffi.core("vkDestroyInstance")(self.handle, None)
        self.handle = None
        _MESSAGES_OF_CLOSED_INSTANCES.extend(self.take_messages())
