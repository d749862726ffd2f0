"""What a first call computes kept on disk between processes, so that a call at a shape an earlier process saw
neither compiles its kernels nor lowers and validates their words again.

    $XDG_CACHE_HOME/hydroplane/spirv/KEY.pkl       (~/.cache when XDG_CACHE_HOME is unset)
        the library kernels' specializations (the language compiler's output: words and interface)
    $XDG_CACHE_HOME/hydroplane/compiled/KEY.pkl
        a module's CompiledKernel for a target (spirv.compile_kernel: lowered, checked, reflected; its source
        locations packed as arrays, _StoredKernel)
    $XDG_CACHE_HOME/hydroplane/limits/KEY.pkl
        what launch.limits reads from a module's words (its shared memory; the checks of the words alone passed)
    $XDG_CACHE_HOME/hydroplane/validated/KEY
        an empty file: spirv-val accepted these words with these options (launch.limits.check_with_validator)

Every KEY starts from a SHA-256 of the source bytes of every module of the installed hydroplane package (any
change of the library, its kernels, its compiler or its lowering misses). A specialization's key adds the
kernel's module and name, its constexprs and the target, each written canonically (sets sorted, dataclasses by
their fields): only kernels defined inside the package are kept (a user's kernel may call helpers from anywhere),
and a constexpr whose text names a memory address (a function, an object without a value form) is not kept. A
CompiledKernel's key adds the SHA-256 of the words, the entry point and the target's text; the limits' the words'
SHA-256 and the entry point; a validation's the words' SHA-256, the options and the validator file (its path, size
and time of change): these hold for any words, a user's too. `HYDROPLANE_DISK_CACHE=0` turns the disk caches off
(these and the driver's pipeline cache, launch.runtime). A file that cannot be read back is ignored and written again.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import types
from array import array
from dataclasses import replace
from pathlib import Path

from hydroplane.spirv.binary import as_words, to_bytes
from hydroplane.spirv.compiled import CompiledKernel, compile_kernel
from hydroplane.spirv.target import Target

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
    """SHA-256 over the package's Python sources (path and bytes), computed once per process. A process whose sources
    have the paths, sizes and change times (ns) of an earlier one's reads that one's digest from the cache folder
    (`package/FINGERPRINT`) instead of reading and hashing the sources again (as Python's own bytecode cache trusts
    size and time)."""
    prefix = len(str(PACKAGE)) + 1
    sources = []  # (relative path, path), in the order of the paths' parts
    for root, folders, files in os.walk(PACKAGE):
        folders[:] = [f for f in folders if f != "__pycache__"]
        sources += [(path[prefix:], path) for path in (os.path.join(root, f) for f in files if f.endswith(".py"))]
    sources.sort(key=lambda source: source[0].split(os.sep))
    stats = "\n".join(f"{relative} {st.st_size} {st.st_mtime_ns}"
                      for relative, st in ((relative, os.stat(path)) for relative, path in sources))
    folder = cache_folder("package")
    known = folder / hashlib.sha256(stats.encode()).hexdigest() if folder is not None else None
    if known is not None:
        try:
            found = known.read_text()
            if len(found) == 64:
                return found
        except OSError:
            pass
    digest = hashlib.sha256()
    for relative, path in sources:
        digest.update(relative.encode())
        with open(path, "rb") as f:
            digest.update(f.read())
    text = digest.hexdigest()
    if known is not None:
        try:
            known.parent.mkdir(parents=True, exist_ok=True)
            tmp = known.with_name(f"{known.name}.{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, known)
        except OSError:
            pass
    return text


def canonical(value, depth: int = 0) -> str:
    """A text of `value` that is the same in every process (set order does not enter). A function is its module,
    name, defaults and the values it closes over (a kernel factory's closures differ only there); a language
    function or kernel is its Python function. What has no such text keeps its repr, which names an address
    ("at 0x"): key_of then keeps nothing."""
    if depth > 20:
        return "<too deep at 0x>"
    if type(value) is Target:  # a device's target is in every key of a process: its text made once (_target_text)
        try:
            return _target_text(value, depth)
        except TypeError:  # a target of an unhashable field: its text made here
            pass
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
        return _canonical_fields(value, depth)
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


@functools.lru_cache(maxsize=16)
def _target_text(target: Target, depth: int) -> str:
    """canonical() of a Target (3,800 characters for lavapipe's, about 0.3 ms): kept per target, as a process asks
    for its device's in the key of every kernel, twice (the specialization's and the CompiledKernel's)."""
    return _canonical_fields(target, depth)


def _canonical_fields(value, depth: int) -> str:
    inner = ", ".join(f"{f.name}={canonical(getattr(value, f.name), depth + 1)}" for f in dataclasses.fields(value))
    return f"{type(value).__qualname__}({inner})"


def key_of(fn, name: str, local_size, constexprs: dict, target) -> str | None:
    """The cache key of a specialization of the kernel of Python function `fn` (named `name`, with `local_size`), or
    None when it cannot be kept (see the module docstring)."""
    if not isinstance(fn, types.FunctionType) or not fn.__module__.startswith("hydroplane."):
        return None
    text = canonical((fn, name, local_size, sorted(constexprs.items()), target))
    if " at 0x" in text:
        return None
    return hashlib.sha256(f"{package_digest()}\n{text}".encode()).hexdigest()


def digest_of(*parts) -> str:
    """A cache key: the package's digest and `parts` (bytes, or anything with a canonical text) under one SHA-256."""
    digest = hashlib.sha256(package_digest().encode())
    for part in parts:
        digest.update(b"\n")
        digest.update(part if isinstance(part, bytes | bytearray) else canonical(part).encode())
    return digest.hexdigest()


def compiled_kernel(words, target: Target, entry: str = "main") -> CompiledKernel:
    """spirv's `compile_kernel(words, target, entry)`, kept on disk by the words' SHA-256, the entry and the target
    (the first call of a later process reads it instead of lowering, checking and reflecting again). `words` may be
    a CompiledKernel already (launch.run compiles before it asks an executor for the kernel)."""
    if isinstance(words, CompiledKernel):
        if words.target == target and words.entry == entry:
            return words
        words = words.words
    target_text = canonical(target) if enabled() else " at 0x"
    key = None if " at 0x" in target_text else \
        digest_of(hashlib.sha256(to_bytes(as_words(words))).digest(), entry.encode(), target_text.encode())
    found = load(key, "compiled") if key is not None else None
    if isinstance(found, _StoredKernel) and found.compiled.target == target and found.compiled.entry == entry:
        return found.unpacked(target)
    compiled = compile_kernel(words, target, entry)
    if key is not None and isinstance(compiled, CompiledKernel):
        store(key, _StoredKernel.packed(compiled), "compiled")
    return compiled


@dataclasses.dataclass(frozen=True)
class _StoredKernel:
    """A CompiledKernel as kept on disk: its source locations (a table of word offset -> SourceLocation, one entry
    per instruction: 2,849 for the causal attention kernel) as arrays of the offsets and of indices into the
    distinct locations: that kernel's entry reads back in 0.4 ms, against 1.1 ms with the table pickled whole."""

    compiled: CompiledKernel  # with no locations
    offsets: array
    which: array
    places: tuple  # the distinct locations

    @classmethod
    def packed(cls, compiled: CompiledKernel) -> _StoredKernel:
        index: dict = {}
        which = array("I", (index.setdefault(place, len(index)) for place in compiled.locations.values()))
        return cls(replace(compiled, locations={}), array("I", compiled.locations), which, tuple(index))

    def unpacked(self, target: Target) -> CompiledKernel:
        """The CompiledKernel with its locations, for this process's Target (one object per device)."""
        places = self.places
        return replace(self.compiled, target=target, locations=dict(zip(self.offsets, map(places.__getitem__,
                                                                                          self.which))))


def cached(kind: str, key: str | None, make):
    """`make()`'s value kept on disk under `kind`/`key` (a key from `digest_of`; None: not kept): read when an
    earlier process wrote it, else made and written. What `make` raises is raised and nothing is kept."""
    if key is not None:
        found = load(key, kind)
        if found is not None:
            return found
    value = make()
    if key is not None:
        store(key, value, kind)
    return value


def remembered(kind: str, key: str) -> bool:
    """Whether a fact of `kind` (an empty file named by its key) was recorded by `remember` in any process."""
    folder = cache_folder(kind)
    return folder is not None and (folder / key).is_file()


def remember(kind: str, key: str) -> None:
    folder = cache_folder(kind)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / key).touch()
    except OSError:
        pass


def load(key: str, kind: str = "spirv"):
    folder = cache_folder(kind)
    if folder is None:
        return None
    try:
        with open(folder / f"{key}.pkl", "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def store(key: str, value, kind: str = "spirv") -> None:
    """Write atomically (a temporary file renamed); a folder that cannot be written is passed over."""
    folder = cache_folder(kind)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{key}.{os.getpid()}.tmp"
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, folder / f"{key}.pkl")
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
