"""The lifetime rules every runtime object follows: one handle, a parent reference, close() safe twice.

A child keeps its parent alive by holding a reference to it (a buffer holds its device, the device
its instance). Closing a parent first closes the children it still tracks, so nothing is ever
destroyed while something that depends on it is alive; `__del__` only closes as a fallback.
"""

from __future__ import annotations

import abc
import weakref

from hydroplane.vk.errors import ClosedError


class Owned(abc.ABC):
    """Base of runtime objects: `close()` once (idempotent), context manager, closes children first."""

    _closed = True  # until a subclass's __init__ finishes creating its handle

    def _adopt(self, parent: Owned | None) -> None:
        """Record the parent (kept alive by this reference) and register as its child."""
        self._parent = parent
        self._children: weakref.WeakSet = weakref.WeakSet()
        if parent is not None:
            parent._children.add(self)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _require_open(self, what: str = "") -> None:
        if self._closed:
            raise ClosedError(f"{what or type(self).__name__} is closed")

    def close(self) -> None:
        """Destroy the Vulkan objects (children first); a second call does nothing."""
        if self._closed:
            return
        for child in list(self._children):
            child.close()
        self._closed = True
        self._destroy()

    @abc.abstractmethod
    def _destroy(self) -> None:
        """Destroy this object's Vulkan handles (children are already closed)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        parent = getattr(self, "_parent", None)
        if parent is not None and parent._closed:
            # The parent went first (garbage collection of a cycle at interpreter shutdown finalizes in any order,
            # and clears the parent's weak list of children before): calling into a destroyed device or instance
            # aborts in the loader, so this object's handles go with the process.
            self._closed = True
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing useful left to report
            pass
