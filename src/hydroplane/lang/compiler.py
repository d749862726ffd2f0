"""`@kernel` and `@func`: Python functions compiled to SPIR-V, one module per specialization.

    @kernel(local_size=64)
    def add(a: Buffer[f32, readonly], b: Buffer[f32, readonly], c: Buffer[f32], n: s32):
        i = global_id()
        if i < n:
            c[i] = a[i] + b[i]

    add.spirv()            # words (array('I')), cached per constexpr specialization
    add.asm()              # the disassembly
    add.compile(BLOCK=64)  # a Specialization: words + the interface a launcher needs

Parameters: `Buffer[dtype]` / `Buffer[dtype, readonly|writeonly]` are storage buffers at
set 0, bindings 0, 1, ... in order; a dtype annotation is a push-constant scalar (one
std430 block, in order); `constexpr` a compile-time value given to `spirv(**constexprs)`.
`@func` helpers are compiled per argument types (and compile-time arguments) into SPIR-V
functions; buffers and shared arrays passed to them are bound at compile time.
Launching lives above this layer (hydroplane.launch.jit).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hydroplane import spirv as spirv_layer
from hydroplane.lang import core, disk_cache
from hydroplane.lang.errors import CompilationError, SemanticError
from hydroplane.spirv import decode, types
from hydroplane.spirv.compiled import CompiledKernel, compile_kernel
from hydroplane.spirv.locations import SourceLocation, source_locations
from hydroplane.spirv.target import Target

if TYPE_CHECKING:
    from hydroplane.lang.codegen import Source

# Loaded on first use: the compiler proper (a miss of the kernels' caches; lang/build.py) and the parsed source of a
# kernel's function (a compile, or an error to locate). A process whose specializations all come from the disk cache
# imports neither, nor the semantics and spirv's builder behind them (docs/runtime.md, "The first call").
_LAZY = {"build_kernel": "hydroplane.lang.build", "Source": "hydroplane.lang.codegen"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as a launcher sees it."""

    name: str
    kind: str  # "buffer", "scalar" or "constexpr"
    dtype: types.Scalar | None = None
    access: str | None = None  # buffers: "readonly", "writeonly", "readwrite"
    binding: int | None = None  # buffers: set 0, this binding
    offset: int | None = None  # scalars: byte offset in the push-constant block


@dataclass(frozen=True)
class Specialization:
    """A kernel compiled for one set of constexprs: the words and the interface to launch it."""

    name: str
    words: array
    params: tuple[KernelParam, ...]
    push_constant_size: int
    local_size: tuple[int, int, int]
    constexprs: tuple = ()
    _locations: dict | None = field(default=None, repr=False, compare=False)

    def asm(self) -> str:
        return spirv_layer.disassemble(self.words)  # the text form loads on first use

    def compiled(self, target: Target | None = None) -> CompiledKernel:
        """The spirv layer's CompiledKernel of these words for a target (lowered, checked, reflected, with
        the source locations); the reference executor's target when None."""
        return compile_kernel(self.words, target or Target.reference())

    def location_of(self, offset: int) -> SourceLocation | None:
        """The kernel's Python file:line:col behind the instruction at word `offset` of these words."""
        if self._locations is None:
            object.__setattr__(self, "_locations", source_locations(decode(self.words)))
        return self._locations.get(offset)

    @property
    def buffers(self) -> tuple[KernelParam, ...]:
        return tuple(p for p in self.params if p.kind == "buffer")

    @property
    def scalars(self) -> tuple[KernelParam, ...]:
        return tuple(p for p in self.params if p.kind == "scalar")


# the decorators ------------------------------------------------------------------------------------
class Func:
    """A `@func` helper: compiled into a SPIR-V function per argument types when a kernel calls it."""

    __hydroplane_func__ = True

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._source: Source | None = None

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The helper's parameters (read on first use: importing the kernels' modules makes ~90 helpers)."""
        return inspect.signature(self.fn)

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = __getattr__("Source").of(self.fn)
        return self._source

    def __call__(self, *args, **kwargs):
        raise SemanticError(f"{self.__name__} is a @func helper: call it from a @kernel or another @func")

    def __repr__(self) -> str:
        return f"<func {self.__name__}>"


def func(fn) -> Func:
    """Decorate a helper that kernels (and other helpers) call."""
    return Func(fn)


class Kernel:
    """A `@kernel`: compiles per constexpr specialization; `spirv()`, `asm()`, `compile()`."""

    def __init__(self, fn, local_size=64, name: str | None = None):
        self.fn = fn
        self.name = name or fn.__name__
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.local_size = local_size
        self._source: Source | None = None
        self._cache: dict[tuple, Specialization] = {}
        self._asked: dict[tuple, Specialization] = {}  # the constexprs as asked (before defaults and target queries)
        self._constexpr_names: frozenset[str] | None = None

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The kernel's parameters (read on first use, as Func's)."""
        return inspect.signature(self.fn)

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = __getattr__("Source").of(self.fn)
        return self._source

    def compile(self, target: Target | None = None, **constexprs) -> Specialization:
        """The kernel for these constexprs (cached). With a `target` (spirv.target.Target), matrix shapes
        are checked against what it offers and `coop.largest_shape(...)` constexprs are answered by it."""
        try:  # the same request again: no resolving (a launch path asks once per call)
            asked = (None if target is None else (target.name, target.is_reference), tuple(sorted(constexprs.items())))
            found = self._asked.get(asked)
        except TypeError:
            asked = found = None
        if found is not None:
            return found
        constexprs = self._resolved(target, constexprs)
        try:
            key = (None if target is None else (target.name, target.is_reference), tuple(sorted(constexprs.items())))
            hash(key)
        except TypeError:
            raise SemanticError(f"{self.name}: constexpr values must be hashable, got {constexprs!r}") from None
        found = self._cache.get(key)
        if found is None:
            disk = disk_cache.key_of(self.fn, self.name, self.local_size, constexprs, target) \
                if disk_cache.enabled() else None
            found = disk_cache.load(disk) if disk is not None else None
            if not isinstance(found, Specialization):
                found = _compile_kernel(self, constexprs, target)
                if disk is not None:
                    disk_cache.store(disk, found)
            self._cache[key] = found
        if asked is not None:
            self._asked[asked] = found
        return found

    def _resolved(self, target: Target | None, constexprs: dict) -> dict:
        """The constexprs with values that ask the target (coop.largest_shape) answered."""
        out = dict(constexprs)
        names = self.constexpr_names()
        for p in self.signature.parameters.values():
            if p.name in names and p.name not in out and p.default is not inspect.Parameter.empty:
                out[p.name] = p.default  # defaults are part of the specialization (and local_size sees them)
            value = out.get(p.name, p.default)
            if isinstance(value, core.TargetQuery):
                try:
                    out[p.name] = value.resolve(target)
                except SemanticError as err:
                    raise _located(self.source, SemanticError(f"{p.name}: {err}")) from None
        return out

    def constexpr_names(self) -> frozenset[str]:
        """The names of the constexpr parameters (a launcher separates them from run-time arguments)."""
        if self._constexpr_names is None:
            try:
                self._constexpr_names = frozenset(p.name for p in self.signature.parameters.values()
                                                  if _is_constexpr(_annotation(self, p)))
            except SemanticError as err:
                raise _located(self.source, err) from None
        return self._constexpr_names

    def spirv(self, target: Target | None = None, **constexprs) -> array:
        """The module's words for these constexprs (and target, when given)."""
        return self.compile(target, **constexprs).words

    def asm(self, target: Target | None = None, **constexprs) -> str:
        """The module's disassembly for these constexprs (and target, when given)."""
        return self.compile(target, **constexprs).asm()

    def __call__(self, *args, **kwargs):
        raise SemanticError(f"{self.name} is a kernel: launch it with hydroplane.kernel's kernel[grid](...)")

    def __repr__(self) -> str:
        return f"<kernel {self.name}>"


def kernel_source(fn=None, *, local_size=64, name: str | None = None):
    """`@kernel_source` or `@kernel_source(local_size=64 | (x, y, z) | "CONSTEXPR_NAME" | lambda constexprs: ...)`:
    a kernel that compiles (per specialization) but does not launch. The library's kernels use it (the kernels
    layer sits below launching); users write `@hydroplane.kernel`, which wraps one of these and launches it."""
    if fn is None:
        return lambda f: Kernel(f, local_size, name)
    return Kernel(fn, local_size, name)


def _annotation(kernel_: Kernel, param: inspect.Parameter):
    ann = param.annotation
    if isinstance(ann, str):
        try:
            ann = eval(ann, kernel_.fn.__globals__)  # noqa: S307 -- the author's own annotation text
        except Exception as err:
            raise SemanticError(f"the annotation of {param.name} ({param.annotation!r}) does not evaluate: "
                                f"{type(err).__name__}: {err}") from None
    return ann


def _annotation_text(annotation) -> str:
    """How an annotation reads in a message (a class by its name, not its repr)."""
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


def _is_constexpr(annotation) -> bool:
    return annotation is core.constexpr or isinstance(annotation, core.constexpr)


def _compile_kernel(kernel_: Kernel, constexprs: dict, target: Target | None = None) -> Specialization:
    """The language compiler's run (lang/build.py, loaded with codegen, the semantics and spirv's builder on the first
    compile of the process)."""
    return __getattr__("build_kernel")(kernel_, constexprs, target)


def _located(source: Source, err: SemanticError) -> CompilationError:
    line, col, text = source.location(source.tree)
    return CompilationError(str(err), source.file, line, col, text)


__all__ = ["Func", "Kernel", "KernelParam", "Specialization", "func", "kernel_source"]
