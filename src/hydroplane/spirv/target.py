"""Target: what a device offers a kernel, as plain data (cooperative-matrix families and shapes,
subgroup sizes, shared memory, features, limits).

A Target comes from a Vulkan device (the launch layer passes `vk.DeviceInfo.to_dict()`, the same
record `hydroplane devices --json` prints, to `Target.from_device_record`), from a saved profile
(`Target.profile("lavapipe" | "nvidia-h200" | "generic-khr")` or `Target.load(path)`; the shipped
profiles live in spirv/profiles/), or stands for the reference executor (`Target.reference()`),
which runs every family at any shape. `lower(module, target)` (spirv/lower.py) rewrites a module
into what a target offers; the launch layer refuses what it cannot.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hydroplane.spirv.binary import SpirvError
from hydroplane.spirv.enums import CooperativeMatrixUse, Scope
from hydroplane.spirv.types import CoopMatrix, Scalar, scalar

PROFILES = ("lavapipe", "nvidia-h200", "generic-khr")
NV2_FEATURES = ("cooperativeMatrixWorkgroupScope", "cooperativeMatrixFlexibleDimensions", "cooperativeMatrixReductions",
                "cooperativeMatrixConversions", "cooperativeMatrixPerElementOperations",
                "cooperativeMatrixTensorAddressing", "cooperativeMatrixBlockLoads")
EXT_MAINTENANCE1 = "VK_EXT_cooperative_matrix_maintenance1"
_DEFAULT_WORKGROUP_COUNT = (65535, 65535, 65535)  # Vulkan's required minimum of maxComputeWorkGroupCount


def _shipped_text(*parts: str) -> str:
    """A file shipped in this package (a folder or a zip file: pkgutil.get_data's rule) as UTF-8 text, read through
    the package's loader; not through importlib.resources, whose import loads tempfile and shutil (about 4.5 ms)."""
    loader: Any = __spec__.loader
    return loader.get_data(os.path.join(os.path.dirname(__file__), *parts)).decode("utf-8")


class TargetError(SpirvError):
    """A profile that cannot be read, or a target asked for something it does not describe."""


class UnsupportedOnTarget(SpirvError):
    """A module (or kernel) needs something the target does not offer; the message names it."""

    def __init__(self, message: str, offset: int | None = None, *, missing: tuple[str, ...] = ()):
        super().__init__(message, offset)
        self.missing = missing


@dataclass(frozen=True, slots=True)
class CoopShape:
    """One cooperative-matrix configuration a device offers: D (m x n) = A (m x k) * B (k x n) + C.

    `granularity` marks NV2 flexible (and EXT) shapes, whose m, n, k are steps: any multiple is offered."""

    m: int
    n: int
    k: int
    a: Scalar
    b: Scalar
    c: Scalar
    result: Scalar
    scope: Scope = Scope.Subgroup
    saturating: bool = False
    granularity: bool = False
    workgroup_invocations: int = 0

    def covers(self, t: CoopMatrix, workgroup_invocations: int | None = None) -> bool:
        """Whether this shape offers matrix type `t` (for a legacy NV type, in any operand position); for a
        Workgroup-scope shape, in a workgroup of `workgroup_invocations` when given (it must be the shape's)."""
        if t.scope != self.scope or not self._for_workgroup(workgroup_invocations):
            return False
        slots = {CooperativeMatrixUse.MatrixAKHR: ((self.a,), (self.m, self.k)),
                 CooperativeMatrixUse.MatrixBKHR: ((self.b,), (self.k, self.n)),
                 CooperativeMatrixUse.MatrixAccumulatorKHR: ((self.c, self.result), (self.m, self.n))}
        candidates = slots.values() if t.use is None else [slots[t.use]]
        return any(t.component in components and self._fits(t.shape, dims) for components, dims in candidates)

    def covers_muladd(self, a: CoopMatrix, b: CoopMatrix, c: CoopMatrix, result: CoopMatrix,
                      saturating: bool = False, workgroup_invocations: int | None = None) -> bool:
        """Whether this shape offers the MulAdd (with saturating accumulation when asked; in a workgroup of
        `workgroup_invocations` for a Workgroup-scope shape, when given)."""
        if (self.a, self.b, self.c, self.result) != (a.component, b.component, c.component, result.component):
            return False
        if saturating and not self.saturating or not self._for_workgroup(workgroup_invocations):
            return False
        return a.scope == self.scope and self._fits((a.rows, result.cols, a.cols), (self.m, self.n, self.k))

    def _for_workgroup(self, invocations: int | None) -> bool:
        return invocations is None or self.scope != Scope.Workgroup or self.workgroup_invocations == invocations

    def _fits(self, dims: tuple[int, ...], unit: tuple[int, ...]) -> bool:
        if self.granularity:
            return all(d % u == 0 for d, u in zip(dims, unit))
        return tuple(dims) == tuple(unit)

    def __str__(self) -> str:
        dims = f"{self.m}x{self.n}x{self.k}" + ("*" if self.granularity else "")
        sat = " saturating" if self.saturating else ""
        group = f" ({self.workgroup_invocations} invocations)" if self.scope == Scope.Workgroup else ""
        return f"{dims} {self.a}*{self.b}+{self.c}->{self.result} {self.scope.name}{group}{sat}"

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(a=str(self.a), b=str(self.b), c=str(self.c), result=str(self.result), scope=self.scope.name)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> CoopShape:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise TargetError(f"cooperative-matrix shape has unknown keys {sorted(unknown)}")
        scope = d.get("scope", "Subgroup")
        return cls(**{**d, "a": scalar(d["a"]), "b": scalar(d["b"]), "c": scalar(d["c"]),
                      "result": scalar(d["result"]), "scope": Scope[scope[:1].upper() + scope[1:]]})


@dataclass(frozen=True)
class Target:
    """What one device (or the reference executor) offers; see the module docstring."""

    name: str
    description: str = ""
    env: str = "vulkan1.3"
    spirv_version: tuple[int, int] = (1, 6)
    coop_khr: tuple[CoopShape, ...] = ()
    coop_nv: tuple[CoopShape, ...] = ()
    coop_nv2_flexible: tuple[CoopShape, ...] = ()
    coop_ext: tuple[CoopShape, ...] = ()
    nv2_features: frozenset[str] = frozenset()
    ext_maintenance1: bool = False
    support: frozenset[str] = frozenset()  # 'float16', 'int8', 'int64', 'bfloat16_coop_matrix' ...
    subgroup_size: int = 32
    min_subgroup_size: int = 32
    max_subgroup_size: int = 32
    shared_memory: int = 32768
    max_workgroup_invocations: int = 128
    max_workgroup_size: tuple[int, int, int] = (128, 128, 64)
    max_workgroup_count: tuple[int, int, int] = _DEFAULT_WORKGROUP_COUNT
    max_push_constants: int = 128
    max_bound_descriptor_sets: int = 4
    nv2_max_workgroup_size: int = 0
    nv2_max_dimension: int = 0
    is_reference: bool = False  # the reference executor: every family, any shape
    _extra: dict = field(default_factory=dict, compare=False, repr=False)

    # --- what it offers ------------------------------------------------------------------------
    @property
    def cooperative_matrix_khr(self) -> bool:
        return self.is_reference or bool(self.coop_khr)

    @property
    def cooperative_matrix_nv(self) -> bool:
        return self.is_reference or bool(self.coop_nv)

    def has_nv2(self, feature: str) -> bool:
        """An NV2 feature by its Vulkan name ('cooperativeMatrixReductions', ...)."""
        return self.is_reference or feature in self.nv2_features

    def offers(self, t: CoopMatrix, workgroup_invocations: int | None = None) -> bool:
        """Whether the target runs cooperative-matrix type `t` (family, component, shape and scope; a
        Workgroup-scope type in a workgroup of `workgroup_invocations`, when given)."""
        if self.is_reference:
            return True
        if t.family == "NV":
            return any(s.covers(t) for s in self.coop_nv)
        return any(s.covers(t, workgroup_invocations) for s in (*self.coop_khr, *self.coop_nv2_flexible,
                                                                 *self.coop_ext))

    def offers_muladd(self, a: CoopMatrix, b: CoopMatrix, c: CoopMatrix, result: CoopMatrix,
                      saturating: bool = False, workgroup_invocations: int | None = None) -> bool:
        """Whether the target runs this MulAdd (saturating accumulation only where a shape reports it)."""
        if self.is_reference:
            return True
        shapes = self.coop_nv if a.family == "NV" else (*self.coop_khr, *self.coop_nv2_flexible, *self.coop_ext)
        return any(s.covers_muladd(a, b, c, result, saturating, workgroup_invocations) for s in shapes)

    def workgroup_shapes(self) -> list[CoopShape]:
        """The Workgroup-scope (NV2) shapes, by invocations and size."""
        found = [s for s in (*self.coop_nv2_flexible, *self.coop_ext) if s.scope == Scope.Workgroup]
        return sorted(found, key=lambda s: (s.workgroup_invocations, s.m * s.n * s.k, str(s.a), str(s.c)))

    def reduce_fault(self, t: CoopMatrix, rows: bool, columns: bool) -> str | None:
        """Why the target's driver is known to compute OpCooperativeMatrixReduce of `t` wrongly (None: it is not).

        Mesa's flexible-dimension lowering (lavapipe; src/compiler/nir/nir_lower_cooperative_matrix.c,
        split_cmat_call_reduce, in Mesa 26.2) splits a matrix into granularity-sized blocks and reduces each,
        but a Row reduction then combines only the blocks of the first block row and stores, for block row r,
        the partial result of block (0, r); a Column reduction likewise for columns. So a Row reduction of a
        matrix with more rows than the granularity (Column: more columns) comes back wrong; Row | Column
        (everything) and 2x2 are right."""
        if not self._mesa_flexible_lowering() or rows == columns:
            return None
        granularity = [s for s in self.coop_nv2_flexible if s.granularity and s.scope == t.scope]
        if not granularity:
            return None
        step = min(s.m for s in granularity) if rows else min(s.n for s in granularity)
        extent = t.rows if rows else t.cols
        if extent <= step:
            return None
        what, other = ("Row", "rows") if rows else ("Column", "columns")
        return (f"{self.name} reduces a {t.rows}x{t.cols} matrix by {what} wrongly: Mesa's flexible-dimension "
                f"lowering (nir_lower_cooperative_matrix.c, split_cmat_call_reduce) combines only the first "
                f"{step}x{step} block {'row' if rows else 'column'}, so {other} past {step} come back with one block's "
                f"result; reduce at most {step} {other} by {what} there (or Row | Column)")

    def _mesa_flexible_lowering(self) -> bool:
        """Whether this is a Mesa driver whose NV2 flexible dimensions go through Mesa's NIR split (lavapipe)."""
        text = f"{self.name} {self.description}".lower()
        return not self.is_reference and ("llvmpipe" in text or "lavapipe" in text)

    def shapes(self, a: str | Scalar | None = None, c: str | Scalar | None = None,
               scope: Scope = Scope.Subgroup) -> list[CoopShape]:
        """The fixed-size KHR shapes (A type, C type, scope as asked), largest first."""
        a_t = scalar(a) if isinstance(a, str) else a
        c_t = scalar(c) if isinstance(c, str) else c
        found = [s for s in self.coop_khr if (a_t is None or s.a == a_t) and (c_t is None or s.c == c_t)
                 and s.scope == scope]
        return sorted(found, key=lambda s: (-(s.m * s.n * s.k), s.m, s.n))

    def largest_shape(self, a: str | Scalar, c: str | Scalar, scope: Scope = Scope.Subgroup) -> CoopShape:
        """The largest tile m x n x k for A type `a` and accumulator `c` (e.g. 'f16', 'f32')."""
        found = self.shapes(a, c, scope)
        if not found:
            raise UnsupportedOnTarget(f"{self.name} offers no {scope.name}-scope cooperative matrix with A {a} "
                                      f"and accumulator {c}", missing=(f"{a}->{c}",))
        return found[0]

    def lowering_extensions(self) -> tuple[str, ...]:
        """SPIR-V extensions a lowering for this target picks where the grammar offers a choice."""
        nv2 = ("SPV_NV_cooperative_matrix2",) if self.nv2_features else ()
        ext = ("SPV_EXT_cooperative_matrix_maintenance1",) if self.ext_maintenance1 or self.is_reference else ()
        return ext + nv2

    # --- data in and out ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        for key in ("coop_khr", "coop_nv", "coop_nv2_flexible", "coop_ext"):
            out[key] = [s.to_dict() for s in out[key]]
        out["nv2_features"] = sorted(self.nv2_features)
        out["support"] = sorted(self.support)
        for key in ("spirv_version", "max_workgroup_size", "max_workgroup_count"):
            out[key] = list(out[key])
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> Target:
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        unknown = set(d) - known
        if unknown:
            raise TargetError(f"target profile has unknown keys {sorted(unknown)}")
        try:
            values = dict(d)
            for key in ("coop_khr", "coop_nv", "coop_nv2_flexible", "coop_ext"):
                values[key] = tuple(CoopShape.from_dict(s) for s in d.get(key, ()))
            for key in ("nv2_features", "support"):
                values[key] = frozenset(d.get(key, ()))
            for key in ("spirv_version", "max_workgroup_size", "max_workgroup_count"):
                if key in d:
                    values[key] = tuple(d[key])
            return cls(**values)
        except (KeyError, TypeError, ValueError) as err:
            raise TargetError(f"malformed target profile: {err}") from None

    @classmethod
    def load(cls, path: str | Path) -> Target:
        """A target from a JSON file: a saved Target, or a device record of `hydroplane devices --json`."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise TargetError(f"{path}: cannot read a target profile: {err}") from None
        if "devices" in data:  # `hydroplane devices --json` output: its first device
            if not data["devices"]:
                raise TargetError(f"{path}: lists no device")
            return cls.from_device_record(data["devices"][0])
        return cls.from_dict(data)

    @classmethod
    def profile(cls, name: str) -> Target:
        """A shipped profile: 'lavapipe', 'nvidia-h200' or 'generic-khr'."""
        if name not in PROFILES:
            raise TargetError(f"unknown target profile {name!r}; shipped: {', '.join(PROFILES)}")
        return cls.from_dict(json.loads(_shipped_text("profiles", f"{name}.json")))

    @classmethod
    def reference(cls, subgroup_size: int = 32) -> Target:
        """The reference executor: every family and shape, every NV2 feature and EXT maintenance1."""
        return cls(name="ref", description="hydroplane reference executor", nv2_features=frozenset(NV2_FEATURES),
                   ext_maintenance1=True, subgroup_size=subgroup_size, min_subgroup_size=1, max_subgroup_size=1024,
                   shared_memory=1 << 30, max_workgroup_invocations=1 << 16, max_workgroup_size=(1 << 16,) * 3,
                   max_workgroup_count=(65535,) * 3, max_push_constants=1 << 16, max_bound_descriptor_sets=1 << 16,
                   is_reference=True)

    @classmethod
    def from_device_record(cls, record: dict) -> Target:
        """A target from a Vulkan device record (`vk.DeviceInfo.to_dict()`, `hydroplane devices --json`)."""
        try:
            features = record.get("features", {})
            nv2 = features.get("cooperative_matrix2_nv", {})
            nv2_props = record.get("coop_nv2_properties", {})
            support = record.get("support", {})
            name = record["name"]
            return cls(
                name=name, description=f"{name}, driver {record.get('driver_version', '?')}",
                coop_khr=tuple(CoopShape.from_dict(s) for s in record.get("coop_khr", ())),
                coop_nv=tuple(CoopShape.from_dict(s) for s in record.get("coop_nv", ())),
                coop_nv2_flexible=tuple(CoopShape.from_dict(s) for s in record.get("coop_nv2_flexible", ())),
                coop_ext=tuple(CoopShape.from_dict(s)  # records written before 2026-12 call it coop_ext_shapes
                               for s in record.get("coop_ext", record.get("coop_ext_shapes", ()))),
                nv2_features=frozenset(k for k, v in nv2.items() if v),
                ext_maintenance1=EXT_MAINTENANCE1 in record.get("extensions", ()),
                support=frozenset(k for k, v in support.items() if v),
                subgroup_size=record["subgroup_size"], min_subgroup_size=record["min_subgroup_size"],
                max_subgroup_size=record["max_subgroup_size"], shared_memory=record["shared_memory"],
                max_workgroup_invocations=record["max_workgroup_invocations"],
                max_workgroup_size=tuple(record["max_workgroup_size"]),
                max_workgroup_count=tuple(record.get("max_workgroup_count", _DEFAULT_WORKGROUP_COUNT)),
                max_push_constants=record["max_push_constants"],
                max_bound_descriptor_sets=record.get("max_bound_descriptor_sets", 4),
                nv2_max_workgroup_size=nv2_props.get("cooperativeMatrixWorkgroupScopeMaxWorkgroupSize", 0),
                nv2_max_dimension=nv2_props.get("cooperativeMatrixFlexibleDimensionsMaxDimension", 0),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise TargetError(f"malformed device record: {err}") from None

    def with_name(self, name: str) -> Target:
        return replace(self, name=name)
