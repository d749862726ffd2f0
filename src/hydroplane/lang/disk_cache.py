"""The library kernels' compiled specializations kept on disk between processes, so that a call at a shape an
earlier process saw does not compile its kernels again.

    $XDG_CACHE_HOME/hydroplane/spirv/KEY.pkl      (~/.cache when XDG_CACHE_HOME is unset)

KEY is a SHA-256 of: the source bytes of every module of the installed hydroplane package (any change of the
library, its kernels or its compiler misses), the kernel's module and name, its constexprs and the target, each
written canonically (sets sorted, dataclasses by their fields). Only kernels defined inside the package are kept (a
user's kernel may call helpers from anywhere); a constexpr whose text names a memory address (a function, an
object without a value form) is not kept. `HYDROPLANE_DISK_CACHE=0` turns the disk caches off (this one and the
driver's pipeline cache, launch.runtime). A file that cannot be read back is ignored and written again.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import types
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # src/hydroplane (or site-packages/hydroplane)


def enabled() -> bool:
    return os.environ.get("HYDROPLANE_DISK_CACHE", "1") != "0"


def cache_folder(kind: str) -> Path | None:
    """$XDG_CACHE_HOME/hydroplane/KIND (~/.cache/hydroplane/KIND), or None when off or no home is known."""
    if not enabled():
        return None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            return None
    return Path(base) / "hydroplane" / kind


@functools.cache
def package_digest() -> str:
    """SHA-256 over the package's Python sources (path and bytes), computed once per process."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def canonical(value, depth: int = 0) -> str:
    """A text of `value` that is the same in every process (set order does not enter). A function is its module,
    name, defaults and the values it closes over (a kernel factory's closures differ only there); a language
    function or kernel is its Python function. What has no such text keeps its repr, which names an address
    ("at 0x"): key_of then keeps nothing."""
    if depth > 20:
        return "<too deep at 0x>"
    if isinstance(value, types.FunctionType):
        try:
            cells = [c.cell_contents for c in value.__closure__ or ()]
        except ValueError:  # an empty cell
            return repr(value)
        return (f"fn {value.__module__}.{value.__qualname__}({canonical(cells, depth + 1)}; "
                f"{canonical(value.__defaults__, depth + 1)}; {canonical(value.__kwdefaults__, depth + 1)})")
    if isinstance(getattr(value, "fn", None), types.FunctionType) and not isinstance(value, type):
        return f"{type(value).__qualname__} {canonical(value.fn, depth + 1)}"
    if isinstance(value, functools.partial):
        return f"partial {canonical((value.func, value.args, value.keywords), depth + 1)}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = ", ".join(f"{f.name}={canonical(getattr(value, f.name), depth + 1)}"
                          for f in dataclasses.fields(value))
        return f"{type(value).__qualname__}({inner})"
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(canonical(v, depth + 1) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{canonical(k, depth + 1)}: {canonical(v, depth + 1)}"
                                      for k, v in value.items())) + "}"
    if isinstance(value, list | tuple):
        return "(" + ", ".join(canonical(v, depth + 1) for v in value) + ")"
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    return repr(value)


def key_of(fn, name: str, local_size, constexprs: dict, target) -> str | None:
    """The cache key of a specialization of the kernel of Python function `fn` (named `name`, with `local_size`), or
    None when it cannot be kept (see the module docstring)."""
    if not isinstance(fn, types.FunctionType) or not fn.__module__.startswith("hydroplane."):
        return None
    text = canonical((fn, name, local_size, sorted(constexprs.items()), target))
    if " at 0x" in text:
        return None
    return hashlib.sha256(f"{package_digest()}\n{text}".encode()).hexdigest()


def load(key: str):
    folder = cache_folder("spirv")
    if folder is None:
        return None
    try:
        with open(folder / f"{key}.pkl", "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def store(key: str, value) -> None:
    """Write atomically (a temporary file renamed); a folder that cannot be written is passed over."""
    folder = cache_folder("spirv")
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{key}.{os.getpid()}.tmp"
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, folder / f"{key}.pkl")
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
