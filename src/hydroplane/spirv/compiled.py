"""CompiledKernel: what every launch takes, the same on every executor.

    kernel = compile_kernel(words_or_module, target, entry="main")

lowers the module for the target (`lower`), refuses the cooperative-matrix types and MulAdds the
target does not report (`check_matrices`), reflects the typed interface (`reflect`) and reads the
source locations the module carries (OpLine, from the kernel language or glslang -g). The result
holds the words to run, the entry point, the target, the interface (bindings with element types
and access, the push-constant block with its layout, spec constants with declared types and
defaults, local size, matrix types, capabilities), what lowering changed, and a table from
instruction word offsets to source locations.

`lower` and `check_matrices` (spirv/lower.py, with the builder it rewrites modules through) load on the first
compile: a process whose CompiledKernels come from the disk cache (lang/disk_cache.py) does not import them.
"""

from __future__ import annotations

import importlib
from array import array
from dataclasses import dataclass, field
from typing import Any

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import types
from hydroplane.spirv.binary import Module, SpirvError, decode
from hydroplane.spirv.locations import SourceLocation, source_locations
from hydroplane.spirv.reflection import Binding, ModuleInterface, SpecConstant, reflect
from hydroplane.spirv.target import Target

# loaded on first use (the first compile): name -> its module
_LAZY = {"lower": "hydroplane.spirv.lower", "check_matrices": "hydroplane.spirv.lower"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)  # found once
    return value


@dataclass(frozen=True)
class CompiledKernel:
    """A module ready for an executor of `target`; see the module docstring."""

    words: array
    entry: str
    target: Target
    interface: ModuleInterface
    changes: tuple[str, ...] = ()
    locations: dict[int, SourceLocation] = field(default_factory=dict, compare=False)
    source_words: array | None = field(default=None, compare=False, repr=False)  # before lowering

    @property
    def bindings(self) -> tuple[Binding, ...]:
        return self.interface.bindings

    @property
    def spec_constants(self) -> tuple[SpecConstant, ...]:
        return self.interface.spec_constants

    @property
    def push_constant_size(self) -> int:
        return self.interface.push_constant_size

    @property
    def push_constant_type(self) -> types.Type | None:
        return self.interface.push_constant_type

    @property
    def local_size(self) -> tuple[int, int, int] | None:
        return self.interface.entry_point(self.entry).local_size

    @property
    def matrix_types(self) -> tuple[types.CoopMatrix, ...]:
        return self.interface.coop_matrix_types

    @property
    def capabilities(self) -> tuple[str, ...]:
        return self.interface.capabilities

    def location_of(self, offset: int | None) -> SourceLocation | None:
        """The source location of the instruction at a word offset (None when the module has none)."""
        return None if offset is None else self.locations.get(offset)

    def for_target(self, target: Target) -> CompiledKernel:
        """The same kernel compiled for another target (from the words before lowering)."""
        if target == self.target:
            return self
        return compile_kernel(self.source_words if self.source_words is not None else self.words, target, self.entry)


def compile_kernel(words_or_module, target: Target, entry: str = "main") -> CompiledKernel:
    """Lower, check and reflect a module for a target; UnsupportedOnTarget names what it lacks."""
    if isinstance(words_or_module, CompiledKernel):
        return words_or_module.for_target(target)
    module = decode(words_or_module.words() if isinstance(words_or_module, Module) else words_or_module)
    try:
        return _compile(module, target, entry)
    except HydroplaneError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, AssertionError, RecursionError,
            OverflowError) as err:  # a malformed module that spirv-val would reject
        raise SpirvError(f"cannot compile the module (is it valid? spirv-val says why): "
                         f"{type(err).__name__}: {err}") from None


def _compile(module: Module, target: Target, entry: str) -> CompiledKernel:
    source_words = module.words()
    lowered = __getattr__("lower")(module, target)
    __getattr__("check_matrices")(lowered.module, target)
    words = lowered.module.words() if lowered.changes else source_words
    final = decode(words) if lowered.changes else module  # offsets of the words that run
    interface = reflect(final)
    return CompiledKernel(words, entry, target, interface, lowered.changes, source_locations(final), source_words)
