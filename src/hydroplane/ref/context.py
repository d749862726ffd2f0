"""The evaluation context a handler receives: values by id, the active-lane mask, lanes, memory, diagnostics.

Handlers are `fn(ctx, inst)`; they read operands with `ctx.get(id)`, write their result with
`ctx.set(inst.result_id, value)` (merged under the active-lane mask), reach memory through
`ctx.memory` and pointers, and report problems with `ctx.diagnose(kind, message, lanes)`.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.control import run_function
from hydroplane.ref.errors import ERROR_OF_KIND, Diagnostic, InvalidModuleError
from hydroplane.ref.lanes import Lanes
from hydroplane.ref.memory import Memory
from hydroplane.ref.values import broadcast_lanes, merge
from hydroplane.spirv import types as T
from hydroplane.spirv.enums import Scope

MAX_NAMED_INVOCATIONS = 4


class ExecContext:
    """State of one batch of workgroups (or of a flat lane vector for constants and element calls)."""

    def __init__(self, program, lanes: Lanes, memory: Memory | None = None, options=None,
                 globals: dict | None = None, report: list | None = None):
        self.program = program
        self.lanes = lanes
        self.options = options
        self.memory = memory if memory is not None else Memory(self._memory_diagnose)
        self.globals: dict[int, object] = globals if globals is not None else {}
        self.frame: dict[int, object] = {}
        self.block_local = getattr(program, "block_local_values", frozenset())
        self.mask = lanes.valid.copy()
        self.entry_mask = self.mask
        self.mask_full = True
        self.inst = None  # the instruction being executed
        self.report: list[Diagnostic] | None = report  # collect mode when not None
        self.stats = {"instructions": 0, "blocks": 0}
        self.max_blocks = (options or {}).get("max_blocks", 1 << 18) if isinstance(options, dict) else 1 << 18
        self.deadline = (options or {}).get("deadline") if isinstance(options, dict) else None  # (time, limit)

    # -- values --------------------------------------------------------------------------------
    def get(self, ident: int):
        try:
            return self.frame[ident]
        except KeyError:
            pass
        try:
            return self.globals[ident]
        except KeyError:
            raise InvalidModuleError(f"%{ident} is used before it has a value"
                                     + self._where()) from None

    def set(self, ident: int, value) -> None:
        """Give `ident` its value in the active lanes (the others keep theirs)."""
        frame = self.frame
        if self.mask_full or ident not in frame or ident in self.block_local:
            frame[ident] = value
            return
        t = self.program.value_types.get(ident)
        try:
            frame[ident] = merge(self.instance_mask(t.scope) if isinstance(t, T.CoopMatrix) else self.mask,
                                 value, frame[ident])
        except TypeError:
            self.unsupported(f"%{ident} would point to different objects in different lanes (variable pointers)")

    def type(self, type_id: int) -> T.Type:
        return self.program.types[type_id]

    def type_of(self, ident: int) -> T.Type:
        """The type of the value `ident`."""
        return self.program.value_types[ident]

    def const_int(self, ident: int) -> int:
        return self.program.const_int(ident)

    @property
    def width(self) -> int:
        return self.lanes.count

    def active_lanes(self) -> np.ndarray:
        return np.flatnonzero(self.mask)

    def instance_mask(self, scope: Scope) -> np.ndarray:
        """Which instances of a scope (Subgroup, else Workgroup) have an active lane."""
        if scope == Scope.Subgroup:
            return self.lanes.by_subgroup(self.mask).any(axis=1)
        return self.lanes.by_workgroup(self.mask).any(axis=1)

    def mask_for(self, t, mask: np.ndarray) -> np.ndarray:
        """A lane mask as the mask a value of type `t` merges under (instances for coop matrices)."""
        if isinstance(t, T.CoopMatrix):
            lanes = self.lanes.by_subgroup(mask) if t.scope == Scope.Subgroup else self.lanes.by_workgroup(mask)
            return lanes.any(axis=1)
        return mask

    def full(self, value):
        """A value with its lane axis materialised to the lane count."""
        return broadcast_lanes(value, self.lanes.count)

    # -- calls ----------------------------------------------------------------------------------
    def call(self, function_id: int, args: list, lanes: int | None = None):
        """Call a SPIR-V function on the active lanes, or element-wise on `lanes` flat lanes.

        With `lanes`, every argument has leading axis `lanes` (or 1), and the function runs in a
        fresh flat context that shares globals and memory but has no invocations behind it
        (what PerElementOp's Func and Reduce's CombineFunc need).
        """
        if lanes is None:
            return run_function(self, self.program.functions[function_id], args)
        sub = ExecContext(self.program, Lanes.flat(lanes), self.memory, self.options, self.globals, self.report)
        sub.diagnose = self.diagnose
        return run_function(sub, self.program.functions[function_id], args)

    # -- diagnostics ------------------------------------------------------------------------------
    def _where(self) -> str:
        if self.inst is None:
            return ""
        location = self.program.locations.get(self.inst.offset)
        where = f"{location} (word {self.inst.offset})" if location else f"word {self.inst.offset}"
        return f" at {where}: {self.program.describe(self.inst)}"

    def diagnostic(self, kind: str, message: str, lanes=None) -> Diagnostic:
        lanes = np.unique(np.asarray(lanes, np.int64).reshape(-1)) if lanes is not None else np.zeros(0, np.int64)
        inst = self.inst
        return Diagnostic(kind, message,
                          [self.lanes.describe(int(i)) for i in lanes[:MAX_NAMED_INVOCATIONS]],
                          inst.offset if inst is not None else None,
                          self.program.describe(inst) if inst is not None else "",
                          len(lanes),
                          str(self.program.locations.get(inst.offset, "")) if inst is not None else "")

    def diagnose(self, kind: str, message: str, lanes=None) -> None:
        """Raise the diagnostic (default) or append it to the report (collect mode)."""
        d = self.diagnostic(kind, message, lanes)
        if self.report is not None and kind not in ("unsupported", "invalid", "unreachable", "limit"):
            if len(self.report) < 1000:
                self.report.append(d)
            return
        raise ERROR_OF_KIND[kind](d)

    def _memory_diagnose(self, kind: str, message: str, lanes) -> None:
        self.diagnose(kind, message, lanes)

    def unsupported(self, what: str | None = None) -> None:
        self.diagnose("unsupported", what or f"{self.inst.name} is not implemented by the reference executor")
