"""The GEMM library: problems, dtypes, tile configurations and the kernel launch plan, as plain data.

    problem = GemmProblem(m=1000, n=33, k=255, dtype=parse_dtype("f16:f32"), layout="nt")
    config = default_config(problem, target)        # tile shape asked of the target (Target.shapes)
    plan = gemm_plan(problem, config, target)       # kernel, constexprs, grid, push-constant values
    plan.kernel.compile(target, **plan.constexprs)  # the SPIR-V

D = act(alpha * op(A) @ op(B) + beta * C + bias) with op(X) = X or X^T (layout: nn, nt, tn, tt; a "t"
means that matrix is stored transposed: A as K x M, B as N x K), C and D M x N row-major, bias N.
Launching, timing and autotuning live above this layer (hydroplane.ops.gemm); the kernels are in
source.py. Imports only lang and spirv.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.kernels.gemm import source
from hydroplane.spirv import types
from hydroplane.spirv.enums import CooperativeMatrixUse, Scope
from hydroplane.spirv.target import Target, UnsupportedOnTarget

LAYOUTS = ("nn", "nt", "tn", "tt")
ACTIVATIONS = ("none", "relu", "gelu")
# The dtype names `hydroplane gemm --dtype` takes: A/B element : accumulator (C, D and bias have the accumulator's type
# unless a third part names the output type, e.g. f16:f32:f16).
DTYPE_NAMES = ("f16:f16", "f16:f32", "bf16:f32", "s8:s32", "u8:u32", "e4m3:f32", "e5m2:f32")


class GemmError(HydroplaneError):
    """A GEMM request that cannot be run as asked (bad dtype, layout, size, or configuration)."""


@dataclass(frozen=True)
class GemmDtype:
    """A/B element type, accumulator type, and output type (of C, bias and D)."""

    a: types.Scalar
    acc: types.Scalar
    out: types.Scalar

    @property
    def name(self) -> str:
        base = f"{self.a}:{self.acc}"
        return base if self.out == self.acc else f"{base}:{self.out}"

    @property
    def integer(self) -> bool:
        return self.acc.kind == "int"

    def __str__(self) -> str:
        return self.name


# What the GEMM kernels compute and the NumPy reference checks: input -> its accumulators, accumulator -> the
# outputs it converts to (the accumulator itself first). Anything else is refused by name (parse_dtype, GemmProblem):
# an integer output of a float accumulator or a float output of an integer one (no such conversion is built or
# modelled), fp8 outputs (no verification bound fits them), other inputs (no cooperative matrix takes them).
GEMM_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",), "e4m3": ("f32",), "e5m2": ("f32",), "s8": ("s32",),
                     "u8": ("u32",)}
GEMM_OUTPUTS = {"f32": ("f32", "f16", "bf16"), "f16": ("f16", "f32"), "s32": ("s32",), "u32": ("u32",)}
GEMM_DTYPES = tuple(f"{a}:{acc}" + ("" if out == acc else f":{out}")
                    for a, accs in GEMM_ACCUMULATORS.items() for acc in accs for out in GEMM_OUTPUTS[acc])


def check_dtype(dtype: GemmDtype, text: str | None = None) -> GemmDtype:
    """`dtype` if the GEMM computes it, else a GemmError naming what it takes."""
    name = text if text is not None else str(dtype)
    a, acc, out = (str(t) for t in (dtype.a, dtype.acc, dtype.out))
    if a not in GEMM_ACCUMULATORS:
        raise GemmError(f"GEMM dtype {name!r}: no GEMM takes {a} inputs (inputs: {', '.join(GEMM_ACCUMULATORS)})")
    if acc not in GEMM_ACCUMULATORS[a]:
        kind = ("integer inputs take an integer accumulator of their signedness" if dtype.a.kind == "int"
                else "float inputs take a float accumulator")
        raise GemmError(f"GEMM dtype {name!r}: {kind}; {a} inputs accumulate in {_either(GEMM_ACCUMULATORS[a])}, "
                        f"not {acc}")
    if out not in GEMM_OUTPUTS[acc]:
        raise GemmError(f"GEMM dtype {name!r}: {acc} accumulators write {_either(GEMM_OUTPUTS[acc])}, not {out} "
                        f"(the GEMM dtypes: {', '.join(GEMM_DTYPES)})")
    return dtype


def _either(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def parse_dtype(text: str) -> GemmDtype:
    """'f16:f32' (A/B f16, accumulate and output f32), 'f16:f32:f16' (output f16), 's8:s32', ... (GEMM_DTYPES)."""
    if not isinstance(text, str):
        raise GemmError(f"a GEMM dtype is a string A:ACCUMULATOR[:OUTPUT] (e.g. 'f16:f32'), not {text!r}")
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise GemmError(f"a GEMM dtype is A:ACCUMULATOR[:OUTPUT] (e.g. f16:f32), not {text!r}")
    try:
        a, acc, *rest = (types.scalar(p.strip()) for p in parts)
    except (types.TypeModelError, KeyError, ValueError) as err:
        raise GemmError(f"GEMM dtype {text!r}: {err}") from None
    return check_dtype(GemmDtype(a, acc, rest[0] if rest else acc), text)


@dataclass(frozen=True)
class GemmProblem:
    """One GEMM: sizes, dtype, layout, scalars and the epilogue."""

    m: int
    n: int
    k: int
    dtype: GemmDtype
    layout: str = "nn"
    alpha: float = 1.0
    beta: float = 0.0
    bias: bool = False
    activation: str = "none"
    saturate: bool = False

    def __post_init__(self):
        if not isinstance(self.dtype, GemmDtype):
            raise GemmError(f"GEMM dtype must be a GemmDtype (parse_dtype('f16:f32')), not {self.dtype!r}")
        check_dtype(self.dtype)
        for name in ("m", "n", "k"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
                raise GemmError(f"GEMM size {name.upper()} must be a positive int, not {value!r}")
            object.__setattr__(self, name, int(value))
        if self.m * self.k >= 1 << 31 or self.k * self.n >= 1 << 31 or self.m * self.n >= 1 << 31:
            raise GemmError(f"GEMM {self.m}x{self.n}x{self.k}: a matrix over 2**31 elements (32-bit indices)")
        if self.layout not in LAYOUTS:
            raise GemmError(f"GEMM layout is one of {', '.join(LAYOUTS)}, not {self.layout!r}")
        if self.activation not in ACTIVATIONS:
            raise GemmError(f"GEMM activation is one of {', '.join(ACTIVATIONS)}, not {self.activation!r}")
        if self.activation == "gelu" and self.dtype.integer:
            raise GemmError(f"GELU needs a float accumulator, not {self.dtype.acc}")
        if self.saturate and not self.dtype.integer:
            raise GemmError("saturating accumulation is for integer GEMMs")
        for name in ("alpha", "beta"):
            self._check_scalar(name, getattr(self, name))

    def _check_scalar(self, name: str, value) -> None:
        """alpha and beta: finite numbers that the kernel can hold (push constants are f32, a f16 accumulator
        scales in f16, an integer one takes them through s32)."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise GemmError(f"GEMM {name} must be a number, not {value!r}")
        try:
            number = float(value)
        except OverflowError:
            number = float("inf")
        if not np.isfinite(number):
            raise GemmError(f"GEMM {name} must be a finite number, not {value!r}")
        if self.dtype.integer:
            if not number.is_integer():
                raise GemmError(f"an integer GEMM takes integer alpha and beta, not {name}={value!r}")
            if not -(1 << 31) <= int(value) < 1 << 31:
                raise GemmError(f"GEMM {name}={value!r} does not fit s32, in which an integer GEMM scales")
            if int(np.float32(int(value))) != int(value):  # the push constant is f32: it would round the integer
                raise GemmError(f"GEMM {name}={value!r} is not exact in f32, the push constant's type that carries it "
                                f"to the integer GEMM (every integer up to 2**24 in magnitude is)")
            return
        for holder, dtype in (("f32, its push constant's type", np.float32),
                              (f"{self.dtype.acc}, the accumulator type", self.dtype.acc.dtype)):
            with np.errstate(over="ignore", under="ignore"):
                held = np.asarray(number).astype(dtype)
            if not np.isfinite(held):
                raise GemmError(f"GEMM {name}={value!r} does not fit {holder} (largest {float(np.finfo(dtype).max):g})")
            if number != 0 and held == 0:
                raise GemmError(f"GEMM {name}={value!r} becomes 0 in {holder} (its smallest is "
                                f"{float(np.finfo(dtype).smallest_subnormal):g})")

    @property
    def a_transposed(self) -> bool:
        return self.layout[0] == "t"

    @property
    def b_transposed(self) -> bool:
        return self.layout[1] == "t"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def size_class(self) -> str:
        """The autotune cache's bucket: the power of two at or above the geometric mean of M, N, K."""
        mean = (self.m * self.n * self.k) ** (1 / 3)
        return f"{1 << max(0, int(np.ceil(np.log2(max(mean, 1)))))}"

    def describe(self) -> str:
        extras = [f"alpha={self.alpha:g}", f"beta={self.beta:g}"] if (self.alpha, self.beta) != (1.0, 0.0) else []
        extras += ["+bias"] if self.bias else []
        extras += [self.activation] if self.activation != "none" else []
        return f"{self.m}x{self.n}x{self.k} {self.dtype} {self.layout}" + (f" ({', '.join(extras)})" if extras else "")


@dataclass(frozen=True)
class GemmConfig:
    """A tile configuration.

    kind 'coop' (KHR subgroup scope): tile (TM, TN, TK) per cooperative matrix, subgroups (WM, WN) per workgroup,
    tiles (SM, SN) per subgroup, k_tiles TK-steps per K block, stages 1 or 2 (double buffering), direct (tiles
    loaded straight from the buffers, edge tiles moved inside, the K tail staged).
    kind 'workgroup' (NV2 workgroup scope): tile is the block (BM, BN, BK) one workgroup-scope matrix covers,
    threads[0] the workgroup's invocations.
    kind 'scalar': threads (TX, TY) per workgroup, registers (RM, RN) per invocation, bk per K block.
    wide: 16-byte loads (through V4 views of A and B) where the sizes allow them (see wide_elements); with them, a
    staged coop kernel pads each shared row by `pad` 16-byte chunks (against bank conflicts) and, with `prefetch`,
    loads the next blocks into registers before its multiplications and stores them into shared memory after them
    (into the other buffer with 2 stages; with 1, after a barrier); prefetch 2 loads two K steps ahead, into two
    register sets. kmajor (with prefetch, 8-bit inputs): a B stored
    K x N (layouts nn, tn) goes into shared memory transposed, K contiguous, its bytes transposed in registers: the
    layout of B that NVIDIA's 8-bit tensor-core loads want (s8 at 8192^3 on the H200: 453 TOP/s with B stored
    N x K, 274 with B stored K x N; docs/perf.md)."""

    kind: str = "coop"
    tile: tuple[int, int, int] = (16, 16, 16)
    subgroups: tuple[int, int] = (2, 2)
    tiles: tuple[int, int] = (2, 2)
    k_tiles: int = 1
    stages: int = 2
    direct: bool = False
    threads: tuple[int, int] = (16, 8)
    registers: tuple[int, int] = (4, 4)
    bk: int = 16
    wide: bool = True
    pad: int = 0
    prefetch: bool | int = False
    kmajor: bool = False

    def __post_init__(self):
        if self.prefetch not in (False, True, 2):
            raise GemmError(f"a GEMM config's prefetch is False, True (1: the next K step) or 2 (two steps ahead), "
                            f"not {self.prefetch!r}")
        if self.kind not in ("coop", "workgroup", "scalar"):
            raise GemmError(f"a GEMM config's kind is 'coop', 'workgroup' or 'scalar', not {self.kind!r}")
        if self.stages not in (1, 2):
            raise GemmError(f"a GEMM config has 1 or 2 stages, not {self.stages}")
        if self.prefetch and (self.kind != "coop" or self.direct or not self.wide):
            raise GemmError("register prefetch is for staged coop configs with wide loads")
        if self.pad and (self.kind != "coop" or self.direct or not self.wide):
            raise GemmError("shared-row padding is for staged coop configs with wide loads")
        if self.kmajor and not self.prefetch:
            raise GemmError("a K-major B in shared memory (kmajor) comes with register prefetch")

    @property
    def block(self) -> tuple[int, int, int]:
        """(BM, BN, BK): the block of D one workgroup computes and its K step."""
        if self.kind == "scalar":
            return self.threads[1] * self.registers[0], self.threads[0] * self.registers[1], self.bk
        if self.kind == "workgroup":
            return tuple(self.tile)
        tm, tn, tk = self.tile
        return self.subgroups[0] * self.tiles[0] * tm, self.subgroups[1] * self.tiles[1] * tn, self.k_tiles * tk

    def describe(self) -> str:
        bm, bn, bk = self.block
        if self.kind == "workgroup":
            return (f"NV2 workgroup scope: block {bm}x{bn}x{bk} in one matrix, {self.threads[0]} invocations"
                    + ("" if self.wide else ", no wide loads"))
        if self.kind == "scalar":
            return (f"scalar: block {bm}x{bn}x{bk}, {self.threads[0]}x{self.threads[1]} invocations of "
                    f"{self.registers[0]}x{self.registers[1]} registers")
        tm, tn, tk = self.tile
        return (f"coop {tm}x{tn}x{tk} tiles: block {bm}x{bn}x{bk}, {self.subgroups[0]}x{self.subgroups[1]} subgroups "
                f"of {self.tiles[0]}x{self.tiles[1]} tiles, {self.stages} stage{'s' * (self.stages > 1)}"
                + (", direct loads" if self.direct else "") + ("" if self.wide else ", no wide loads")
                + (f", rows padded by {16 * self.pad} bytes" if self.pad else "")
                + (", register prefetch" if self.prefetch else "") + (" two steps ahead" * (self.prefetch == 2))
                + (", B K-major in shared memory" if self.kmajor else ""))

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> GemmConfig:
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as err:
            raise GemmError(f"a malformed GEMM config {d!r}: {err}") from None


@dataclass(frozen=True)
class GemmPlan:
    """What a launcher needs: the kernel (a lang Kernel), its constexprs, the grid, the push-constant values."""

    kernel: object
    constexprs: dict
    grid: tuple[int, int, int]
    scalars: dict
    config: GemmConfig
    problem: GemmProblem
    shared_bytes: int = field(default=0)


def flexible_tiles(dtype: GemmDtype, target: Target) -> list[tuple[int, int, int]]:
    """Larger subgroup-scope tiles from NV2 flexible dimensions (multiples of the granularity), where offered."""
    found = []
    for s in target.coop_nv2_flexible:
        if s.scope == Scope.Subgroup and (s.a, s.c) == (dtype.a, dtype.acc):
            found += [(2 * s.m, 2 * s.n, s.k), (4 * s.m, 2 * s.n, s.k)]
    return found


def offers_tile(dtype: GemmDtype, tile, target: Target) -> bool:
    """Whether the target runs subgroup-scope A, B, accumulator matrices of this tile and their MulAdd."""
    tm, tn, tk = tile
    a = types.CoopMatrix(dtype.a, tm, tk, CooperativeMatrixUse.MatrixAKHR)
    b = types.CoopMatrix(dtype.a, tk, tn, CooperativeMatrixUse.MatrixBKHR)
    c = types.CoopMatrix(dtype.acc, tm, tn, CooperativeMatrixUse.MatrixAccumulatorKHR)
    out = types.CoopMatrix(dtype.out, tm, tn, CooperativeMatrixUse.MatrixAccumulatorKHR)
    return all(target.offers(t) for t in (a, b, c, out)) and target.offers_muladd(a, b, c, c)


def coop_shapes(dtype: GemmDtype, target: Target) -> list[tuple[int, int, int]]:
    """The subgroup-scope tile shapes (m, n, k) the target offers for the dtype, largest first (any on ref)."""
    if target.is_reference:
        return [(16, 16, 16), (32, 32, 32), (64, 64, 64), (64, 64, 32)]
    return [(s.m, s.n, s.k) for s in target.shapes(dtype.a, dtype.acc) if not s.granularity]


def workgroup_shapes(dtype: GemmDtype, target: Target) -> list:
    """The NV2 workgroup-scope granularities the target offers for the dtype (CoopShape records)."""
    return [s for s in target.coop_nv2_flexible if s.scope == Scope.Workgroup and (s.a, s.c) == (dtype.a, dtype.acc)]


def wide_elements(problem: GemmProblem, config: GemmConfig) -> int:
    """Elements per 16-byte load (8 for 16-bit inputs, 16 for 8-bit), or 0: wide loads need M, N, K and every
    tile (block) dimension a multiple of it, so that each 16-byte chunk lies inside a row and is aligned."""
    per = 16 // (problem.dtype.a.width // 8)
    dims = (problem.m, problem.n, problem.k, *(config.block if config.kind == "workgroup" else config.tile))
    if not config.wide or config.kind == "scalar" or any(d % per for d in dims):
        return 0
    return per


def aligned_for_matrices(problem: GemmProblem) -> tuple[bool, bool]:
    """(inputs, outputs): whether A and B (M, N, K) and C and D (N) let cooperative-matrix loads and stores reach the
    buffers directly. Vulkan wants each one's pointer and stride aligned to 16 bytes (the lesser of 16 and a row's
    size; VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986): the H200 returns wrong values otherwise, and the
    reference executor reports it ('misaligned')."""
    per_in = 16 // (problem.dtype.a.width // 8)
    per_out = 16 // (problem.dtype.out.width // 8)
    return (all(d % per_in == 0 for d in (problem.m, problem.n, problem.k)), problem.n % per_out == 0)


def workgroup_edges(config: GemmConfig, problem: GemmProblem) -> tuple[bool, bool]:
    """(EDGE, TAIL) of the workgroup kernel: M or N no multiple of the block; K no multiple of its step."""
    bm, bn, bk = config.block
    return bool(problem.m % bm or problem.n % bn), bool(problem.k % bk)


def coop_edges(config: GemmConfig, problem: GemmProblem) -> bool:
    """EDGES of the coop kernel: False (bounds checks compiled out) only for the staged kernel on whole blocks (M, N,
    K multiples of the block, rows of D 16-byte aligned)."""
    bm, bn, bk = config.block
    whole = not (problem.m % bm or problem.n % bn or problem.k % bk) and aligned_for_matrices(problem)[1]
    return config.direct or not whole


def kmajor_b(problem: GemmProblem, config: GemmConfig) -> bool:
    """Whether the coop kernel transposes B into shared memory: kmajor asked, B stored K x N, 16-byte loads."""
    return config.kmajor and not problem.b_transposed and bool(wide_elements(problem, config))


def _coop_shared_bytes(config: GemmConfig, problem: GemmProblem) -> int:
    """The coop kernel's shared memory: STAGES of the A and B blocks (rows padded, B K-major where transposed) and
    one output tile per subgroup."""
    bm, bn, bk = config.block
    a_bytes, out_bytes = problem.dtype.a.width // 8, problem.dtype.out.width // 8
    tm, tn, _ = config.tile
    pad = config.pad * wide_elements(problem, config)  # elements per shared row
    a_rows, a_cols = (bk, bm) if problem.a_transposed else (bm, bk)
    b_rows, b_cols = (bn, bk) if problem.b_transposed or kmajor_b(problem, config) else (bk, bn)
    blocks = a_rows * (a_cols + pad) + b_rows * (b_cols + pad)
    return config.stages * blocks * a_bytes + config.subgroups[0] * config.subgroups[1] * tm * tn * out_bytes


def _workgroup_shared_bytes(config: GemmConfig, problem: GemmProblem) -> int:
    """The workgroup kernel's: the K tail's blocks (TAIL) and the edge block's output (EDGE), only where needed."""
    bm, bn, bk = config.block
    edge, tail = workgroup_edges(config, problem)
    return (bm + bn) * bk * (problem.dtype.a.width // 8) * tail + bm * bn * (problem.dtype.out.width // 8) * edge


def _scalar_shared_bytes(config: GemmConfig, problem: GemmProblem) -> int:
    bm, bn, bk = config.block
    return (bm + bn) * bk * (problem.dtype.a.width // 8)


def _shared_bytes(config: GemmConfig, problem: GemmProblem) -> int:
    return KERNEL_KINDS[config.kind].shared_bytes(config, problem)


def _coop_check(problem: GemmProblem, config: GemmConfig, target: Target) -> int:
    """The coop kernel's refusals (tile shape, saturation, the prefetch's and K-major B's even split); its
    invocations per workgroup."""
    dtype = problem.dtype
    if not target.is_reference:
        if not offers_tile(dtype, config.tile, target):
            raise GemmError(f"{target.name} offers no {dtype} cooperative-matrix tile "
                            f"{'x'.join(map(str, config.tile))} (it offers: "
                            f"{', '.join('x'.join(map(str, s)) for s in coop_shapes(dtype, target)) or 'none'})")
    if problem.saturate and not target.is_reference and not any(
            s.saturating for s in target.shapes(dtype.a, dtype.acc)):
        raise GemmError(f"{target.name} offers no saturating accumulation")
    invocations = config.subgroups[0] * config.subgroups[1] * target.subgroup_size
    bm, bn, bk = config.block
    per = 16 // (dtype.a.width // 8)
    if config.prefetch and (bm * bk // per % invocations or bn * bk // per % invocations):
        raise GemmError(f"{config.describe()}: register prefetch needs each block's 16-byte chunks "
                        f"({bm * bk // per} of A, {bn * bk // per} of B) to split evenly among {invocations} "
                        "invocations")
    if config.kmajor and dtype.a.width != 8:
        raise GemmError(f"{config.describe()}: a K-major B (kmajor) is for 8-bit inputs, not {dtype.a}")
    if config.kmajor and bk // 4 * (bn // per) % invocations:
        raise GemmError(f"{config.describe()}: a K-major B needs its {bk // 4 * (bn // per)} items (4 rows of "
                        f"16 bytes) to split evenly among {invocations} invocations")
    return invocations


def _workgroup_check(problem: GemmProblem, config: GemmConfig, target: Target) -> int:
    """The workgroup kernel's: a matrix at least one block large, a block the target's granularities tile."""
    invocations = config.threads[0]
    bm, bn, bk = config.block
    if problem.m < bm or problem.n < bn:
        raise GemmError(f"{config.describe()}: needs M >= {bm} and N >= {bn} (the block moves inside the matrix)")
    if not target.is_reference and not any(
            s.scope == Scope.Workgroup and s.workgroup_invocations == invocations and bm % s.m == 0
            and bn % s.n == 0 and bk % s.k == 0 for s in workgroup_shapes(problem.dtype, target)):
        raise GemmError(f"{target.name} offers no NV2 workgroup-scope {problem.dtype} block {bm}x{bn}x{bk} for "
                        f"{invocations} invocations")
    return invocations


def _scalar_check(problem: GemmProblem, config: GemmConfig, target: Target) -> int:
    return config.threads[0] * config.threads[1]


def check_config(problem: GemmProblem, config: GemmConfig, target: Target) -> None:
    """Refuse (GemmError) a configuration the target cannot run: the input type, the kind's own refusals
    (KERNEL_KINDS), workgroup size, shared memory, matrices loaded straight from unaligned buffers."""
    dtype = problem.dtype
    needed = {"bf16": "bfloat16", "e4m3": "float8", "e5m2": "float8"}.get(str(dtype.a))
    if needed and not target.is_reference and needed not in target.support:
        raise GemmError(f"{target.name} has no {dtype.a} arithmetic type (Vulkan feature {needed})")
    kind = KERNEL_KINDS[config.kind]
    invocations = kind.check(problem, config, target)
    if invocations > target.max_workgroup_invocations:
        raise GemmError(f"{config.describe()}: {invocations} invocations per workgroup, {target.name} allows "
                        f"{target.max_workgroup_invocations}")
    shared = kind.shared_bytes(config, problem)
    if shared > target.shared_memory:
        raise GemmError(f"{config.describe()}: {shared} bytes of shared memory, {target.name} has "
                        f"{target.shared_memory}")
    inputs_aligned, outputs_aligned = aligned_for_matrices(problem)
    if kind.direct_loads(config) and not (inputs_aligned and outputs_aligned):
        per_in = 16 // (dtype.a.width // 8)
        raise GemmError(f"{config.describe()}: loads its matrices straight from the buffers, which needs M, N and K "
                        f"multiples of {per_in} for {dtype.a} (Vulkan's 16-byte alignment of cooperative-matrix "
                        f"loads); {problem.m}x{problem.n}x{problem.k} is not")


# A constexpr's rule: its value from (problem, config, target); ABSENT leaves it out of the plan (the kernel's
# default holds, as for the coop kernel's padding, prefetch and K-major B without 16-byte loads).
Rule = Callable[[GemmProblem, GemmConfig, Target], object]
ABSENT = object()


def _with_wide_loads(rule: Rule) -> Rule:
    """A rule whose constexpr comes with the 16-byte loads (WIDE), absent without them."""
    return lambda p, c, t: rule(p, c, t) if wide_elements(p, c) else ABSENT


# Every kernel's epilogue and layouts.
COMMON_CONSTEXPRS: dict[str, Rule] = {
    "AT": lambda p, c, t: p.a_transposed,
    "BT": lambda p, c, t: p.b_transposed,
    "USE_C": lambda p, c, t: p.beta != 0,
    "BIAS": lambda p, c, t: p.bias,
    "ACT": lambda p, c, t: p.activation,
}


@dataclass(frozen=True)
class KernelKind:
    """One kind of GEMM kernel as data (the way tinygrad keeps per-op behaviour): the factory that gives its kernel
    for an (input, accumulator, output) dtype triple (source.py, cached per triple), the rules that derive its
    constexprs (in the plan's order), the shared memory it takes, its own refusals (returning its invocations per
    workgroup), and whether a configuration loads matrices straight from the buffers (which needs them aligned)."""

    factory: Callable[..., object]
    constexprs: dict[str, Rule]
    shared_bytes: Callable[[GemmConfig, GemmProblem], int]
    check: Callable[[GemmProblem, GemmConfig, Target], int]
    direct_loads: Callable[[GemmConfig], bool]

    def constexprs_of(self, problem: GemmProblem, config: GemmConfig, target: Target) -> dict:
        values = {name: rule(problem, config, target) for name, rule in self.constexprs.items()}
        return {name: value for name, value in values.items() if value is not ABSENT}


KERNEL_KINDS: dict[str, KernelKind] = {
    "coop": KernelKind(
        factory=source.coop_kernel,
        constexprs={
            **COMMON_CONSTEXPRS,
            "TM": lambda p, c, t: c.tile[0],
            "TN": lambda p, c, t: c.tile[1],
            "TK": lambda p, c, t: c.tile[2],
            "WM": lambda p, c, t: c.subgroups[0],
            "WN": lambda p, c, t: c.subgroups[1],
            "SM": lambda p, c, t: c.tiles[0],
            "SN": lambda p, c, t: c.tiles[1],
            "KT": lambda p, c, t: c.k_tiles,
            "STAGES": lambda p, c, t: c.stages,
            "DIRECT": lambda p, c, t: c.direct,
            "SG": lambda p, c, t: t.subgroup_size,
            "SATURATE": lambda p, c, t: p.saturate,
            "WIDE": lambda p, c, t: wide_elements(p, c),
            "ALIGNED_OUT": lambda p, c, t: aligned_for_matrices(p)[1],
            "PAD": _with_wide_loads(lambda p, c, t: c.pad),
            "PREFETCH": _with_wide_loads(lambda p, c, t: c.prefetch),
            "KMAJOR_B": _with_wide_loads(lambda p, c, t: kmajor_b(p, c)),
            "EDGES": lambda p, c, t: coop_edges(c, p),
            "SCALE": lambda p, c, t: p.alpha != 1,
        },
        shared_bytes=_coop_shared_bytes, check=_coop_check, direct_loads=lambda c: c.direct),
    "workgroup": KernelKind(
        factory=source.workgroup_kernel,
        constexprs={
            **COMMON_CONSTEXPRS,
            "BM": lambda p, c, t: c.block[0],
            "BN": lambda p, c, t: c.block[1],
            "BK": lambda p, c, t: c.block[2],
            "THREADS": lambda p, c, t: c.threads[0],
            "SATURATE": lambda p, c, t: p.saturate,
            "EDGE": lambda p, c, t: workgroup_edges(c, p)[0],
            "TAIL": lambda p, c, t: workgroup_edges(c, p)[1],
            "WIDE": lambda p, c, t: wide_elements(p, c),
            "SCALE": lambda p, c, t: p.alpha != 1,
        },
        shared_bytes=_workgroup_shared_bytes, check=_workgroup_check, direct_loads=lambda c: True),
    "scalar": KernelKind(
        factory=source.scalar_kernel,
        constexprs={
            **COMMON_CONSTEXPRS,
            "RM": lambda p, c, t: c.registers[0],
            "RN": lambda p, c, t: c.registers[1],
            "TX": lambda p, c, t: c.threads[0],
            "TY": lambda p, c, t: c.threads[1],
            "BK": lambda p, c, t: c.bk,
        },
        shared_bytes=_scalar_shared_bytes, check=_scalar_check, direct_loads=lambda c: False),
}


def gemm_plan(problem: GemmProblem, config: GemmConfig, target: Target) -> GemmPlan:
    """The kernel, constexprs, grid and push-constant values of `problem` under `config` for `target`: its kind's
    row of KERNEL_KINDS applied."""
    check_config(problem, config, target)
    kind = KERNEL_KINDS[config.kind]
    dtype = problem.dtype
    bm, bn, _ = config.block
    grid = (-(-problem.n // bn), -(-problem.m // bm), 1)
    scalars = dict(alpha=float(problem.alpha), beta=float(problem.beta), M=problem.m, N=problem.n, K=problem.k)
    return GemmPlan(kind.factory(dtype.a, dtype.acc, dtype.out), kind.constexprs_of(problem, config, target), grid,
                    scalars, config, problem, kind.shared_bytes(config, problem))


# ... and for problems that the large blocks leave with less than a wave of workgroups (1024^3: 32 of 128x256):
# 64x64, 128x64, 64x128 and 64x256 blocks (untimed on the H200 when written; the H200 benchmark tunes them)
SMALL_BLOCKS = (((2, 2), (2, 2), 2, 2), ((2, 2), (4, 2), 2, 2), ((2, 2), (2, 4), 2, 2), ((2, 4), (2, 2), 2, 2),
                ((1, 4), (4, 2), 2, 2), ((2, 4), (2, 4), 2, 1))  # the last 64x256: 64 rows of A (a skinny M = 64)
GPU_WAVE = 264  # workgroups that keep a large GPU busy (the H200: 132 SMs, two workgroups each)
SMALLEST_FAST = None  # set below: the 64x64 block, the most workgroups the candidates give


def workgroups(problem: GemmProblem, config: GemmConfig) -> int:
    """How many workgroups the configuration's grid has for the problem."""
    bm, bn, _ = config.block
    return -(-problem.m // bm) * -(-problem.n // bn)


def default_config(problem: GemmProblem, target: Target) -> GemmConfig:
    """A reasonable configuration without tuning: the target's largest tile (or the scalar kernel without one)."""
    candidates = candidate_configs(problem, target)
    if target.is_reference and min(problem.m, problem.n, problem.k) < 64:  # small: the small direct tiles
        return next((c for c in candidates if c.kind == "coop" and c.tile == (16, 16, 16) and c.direct), candidates[0])
    return candidates[0]


# (subgroups, tiles per subgroup, k_tiles, stages) of the prefetching staged configurations, fastest first on the
# H200 with 16x16 tiles (benchmarks/gemm_configs.py, docs/perf.md): at 4096^3 for 32-bit accumulators; the last,
# the winner's 256x128 mirror (s8 at 8192^3: 262.7 TOP/s against the winner's 276.6)
FAST_BLOCKS = (((2, 4), (4, 4), 2, 1), ((2, 2), (4, 4), 2, 2), ((2, 4), (4, 4), 1, 2), ((2, 4), (4, 2), 2, 2),
               ((4, 2), (4, 4), 1, 2), ((4, 2), (4, 4), 2, 1))
# ... and before them for 16-bit accumulators, whose tiles take half the registers: 256x256 and 128x512 blocks
# (328.5, 325.7 and 317.4 TFLOP/s for f16:f16 at 8192^3, against 261.2 for 128x256)
FAST_BLOCKS_16BIT_ACC = (((2, 4), (8, 4), 2, 1), ((4, 4), (4, 4), 2, 1), ((2, 4), (4, 8), 2, 1))
# ... and for 8-bit inputs, whose B tiles load slowly from a K x N layout in shared memory: one row of subgroups
# with tall tiles, fewer B tiles per subgroup (s8:s32 nn at 8192^3: 332.5 TOP/s against 276.6 for 2x4 of 4x4)
FAST_BLOCKS_8BIT = (((1, 8), (8, 2), 2, 1),)
# the blocks tried first with B transposed into shared memory (kmajor) where B is stored K x N
KMAJOR_BLOCKS = (((2, 4), (4, 4), 2, 1), ((1, 8), (8, 2), 2, 1))
SMALLEST_FAST = GemmConfig(tile=(16, 16, 16), subgroups=(2, 2), tiles=(2, 2))


def candidate_configs(problem: GemmProblem, target: Target, *, scalar_only: bool = False) -> list[GemmConfig]:
    """The configurations an autotuner tries for `problem` on `target`, the default first; each runs there."""
    found = []
    shapes = [] if scalar_only else coop_shapes(problem.dtype, target)
    if target.is_reference and not scalar_only:
        found += [GemmConfig(tile=(64, 64, 64), subgroups=(1, 1), tiles=(2, 2), stages=1, direct=True),
                  GemmConfig(tile=(32, 32, 32), subgroups=(1, 1), tiles=(4, 4), stages=1, direct=True),
                  GemmConfig(tile=(64, 64, 32), subgroups=(2, 2), tiles=(1, 1), stages=1, direct=True),
                  GemmConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(2, 2), stages=1, direct=True),
                  GemmConfig(tile=(16, 16, 16), subgroups=(2, 2), tiles=(2, 2), k_tiles=2, stages=2)]
    else:
        # Register prefetch into padded shared rows, large blocks: the fastest on the H200 (docs/perf.md), first,
        # for tensor-core tiles of 16 rows and more (the blocks are sized for them; lavapipe's 8x8x8 keeps its order).
        for tile in (t for t in shapes if t[0] >= 16):
            widen = 2 if tile[1] < 16 else 1  # narrow tiles: twice as many across, for the same block
            blocks = FAST_BLOCKS
            if problem.dtype.acc.width == 16:
                blocks = FAST_BLOCKS_16BIT_ACC + blocks
            kmajor = problem.dtype.a.width == 8 and not problem.b_transposed
            if problem.dtype.a.width == 8:
                blocks = (KMAJOR_BLOCKS if kmajor else ()) + FAST_BLOCKS_8BIT + blocks
            for index, (subgroups, tiles, k_tiles, stages) in enumerate(blocks + SMALL_BLOCKS):
                found.append(GemmConfig(tile=tile, subgroups=subgroups, tiles=(tiles[0], tiles[1] * widen),
                                        k_tiles=k_tiles, stages=stages, pad=1, prefetch=True,
                                        kmajor=kmajor and index < len(KMAJOR_BLOCKS)))
        # a problem too small to give every multiprocessor a workgroup of a large block tries first the blocks that do
        enough = min(GPU_WAVE // 2, workgroups(problem, SMALLEST_FAST))
        found.sort(key=lambda c: -min(workgroups(problem, c), enough))  # stable: the measured order otherwise
        for tile in shapes:
            for subgroups, tiles, k_tiles, stages in (((2, 2), (2, 2), 2, 2), ((2, 2), (4, 2), 1, 2),
                                                      ((4, 2), (2, 2), 2, 2), ((2, 2), (2, 2), 2, 1)):
                found.append(GemmConfig(tile=tile, subgroups=subgroups, tiles=tiles, k_tiles=k_tiles, stages=stages))
            for subgroups, tiles in (((2, 2), (2, 2)), ((2, 2), (4, 2))):
                found.append(GemmConfig(tile=tile, subgroups=subgroups, tiles=tiles, stages=1, direct=True))
            found += [GemmConfig(tile=tile, subgroups=(2, 2), tiles=(2, 2), k_tiles=2, stages=2, wide=False),
                      GemmConfig(tile=tile, subgroups=(2, 2), tiles=(2, 2), stages=1, direct=True, wide=False)]
        for tile in flexible_tiles(problem.dtype, target):
            for subgroups, tiles in (((2, 2), (1, 1)), ((2, 2), (2, 2))):
                found.append(GemmConfig(tile=tile, subgroups=subgroups, tiles=tiles, stages=1, direct=True))
    if not scalar_only:
        if target.is_reference:
            found.append(GemmConfig(kind="workgroup", tile=(64, 64, 32), threads=(64, 1)))
        for shape in workgroup_shapes(problem.dtype, target):
            if shape.workgroup_invocations < 128:
                continue
            for scale in ((4, 4, 2), (2, 4, 2)) if shape.workgroup_invocations >= 256 else ((4, 4, 2),):
                block = (shape.m * scale[0], shape.n * scale[1], shape.k * scale[2])
                found.append(GemmConfig(kind="workgroup", tile=block, threads=(shape.workgroup_invocations, 1)))
    found += [GemmConfig(kind="scalar", threads=(16, 8), registers=(4, 4), bk=16),
              GemmConfig(kind="scalar", threads=(16, 16), registers=(4, 4), bk=8),
              GemmConfig(kind="scalar", threads=(8, 8), registers=(2, 2), bk=16)]
    runnable = []
    for config in found:
        try:
            check_config(problem, config, target)
        except GemmError:
            continue
        runnable.append(config)
    if not runnable:
        raise UnsupportedOnTarget(f"{target.name}: no GEMM configuration fits for {problem.describe()}")
    return runnable


def with_size(problem: GemmProblem, m: int, n: int, k: int) -> GemmProblem:
    return replace(problem, m=m, n=n, k=k)


def verification_problem(problem: GemmProblem, config: GemmConfig) -> GemmProblem:
    """A smaller problem that takes the same code paths as `problem` under `config` (tails in M, N and K; 16-byte
    loads when `problem` gets them; whole blocks for the workgroup kernel when `problem` has no edges), for an
    autotuner to verify a candidate before timing it at full size (whole blocks for the staged coop kernel, whose
    bounds checks compile out then: EDGES). Small problems verify as they are."""
    if problem.m * problem.n * problem.k <= 512 ** 3:
        return problem
    bm, bn, bk = config.block
    wide = wide_elements(problem, config)
    # Multiples of 16 bytes of the input where the kernel needs them (16-byte loads, or matrices loaded straight
    # from the buffers: the direct and workgroup kernels), odd sizes otherwise.
    aligned = wide or config.direct or config.kind == "workgroup"
    m, n, k = (528, 272, 304) if aligned else (515, 259, 300)
    if config.kind == "workgroup":
        edge, _ = workgroup_edges(config, problem)
        m, n = (m, n) if edge else (2 * bm, 2 * bn)
        m, n = max(m, bm), max(n, bn)
    if config.kind == "coop" and not coop_edges(config, problem):
        m, n, k = 2 * bm, 2 * bn, -(-k // bk) * bk
    return with_size(problem, min(problem.m, m), min(problem.n, n), min(problem.k, k))


# inputs and the NumPy reference ---------------------------------------------------------------------
def random_inputs(problem: GemmProblem, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A, B (stored as the layout says), C and bias: small integers (exact in every input type), float32 sums
    stay exact up to K of a few thousand for f16:f32."""
    dtype = problem.dtype
    m, n, k = problem.m, problem.n, problem.k
    a_shape = (k, m) if problem.a_transposed else (m, k)
    b_shape = (n, k) if problem.b_transposed else (k, n)

    def values(shape, np_dtype, signed):
        low = -8 if signed else 0
        return rng.integers(low, 8, shape).astype(np.float32).astype(np_dtype) if np.dtype(np_dtype).kind not in "iu" \
            else rng.integers(low, 8, shape).astype(np_dtype)

    signed_in = dtype.a.kind == "float" or dtype.a.signed
    signed_out = dtype.out.kind == "float" or dtype.out.signed
    return {"a": values(a_shape, dtype.a.dtype, signed_in), "b": values(b_shape, dtype.a.dtype, signed_in),
            "c": values((m, n), dtype.out.dtype, signed_out), "bias": values((n,), dtype.out.dtype, signed_out)}


def reference(problem: GemmProblem, a: np.ndarray, b: np.ndarray, c: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """D in float64 (exact integers as int64 for integer GEMMs, wrapped to the output type's width)."""
    work = np.int64 if problem.dtype.integer else np.float64
    op_a = a.astype(np.float64).T if problem.a_transposed else a.astype(np.float64)
    op_b = b.astype(np.float64).T if problem.b_transposed else b.astype(np.float64)
    result = op_a @ op_b  # float64 BLAS; exact for 8-bit integers (|sum| < 2**14 * K < 2**53)
    if problem.dtype.integer:
        result = result.astype(np.int64)
    result = result * work(problem.alpha)
    if problem.beta != 0:
        result = result + work(problem.beta) * c.astype(work)
    if problem.bias:
        result = result + bias.astype(work)[None, :]
    if problem.dtype.integer:  # the epilogue's value in the accumulator (its type: parse_dtype), then the activation
        info = np.iinfo(problem.dtype.out.dtype)
        if problem.saturate:
            result = np.clip(result, info.min, info.max)
        else:
            bits = problem.dtype.out.width
            wrapped = result & ((1 << bits) - 1)
            result = np.where(wrapped > info.max, wrapped - (1 << bits), wrapped) if info.min < 0 else wrapped
        return np.maximum(result, 0) if problem.activation == "relu" else result
    if problem.activation == "relu":
        result = np.maximum(result, 0)
    elif problem.activation == "gelu":
        result = 0.5 * result * (1 + np.tanh(source.GELU_C * (result + source.GELU_CUBIC * result ** 3)))
    return result


def relative_error(d: np.ndarray, exact: np.ndarray) -> float:
    """||D - R|| / ||R|| (Frobenius; 0 when both are 0)."""
    d64 = d.astype(np.float64)
    norm = float(np.linalg.norm(exact))
    diff = float(np.linalg.norm(d64 - exact))
    return diff / norm if norm else diff


def tolerance(problem: GemmProblem) -> float:
    """The verification bound: 0 (exact) for integers, 1e-3 for f32 output, looser for 16-bit and fp8 outputs."""
    if problem.dtype.integer:
        return 0.0
    if problem.dtype.out.width == 32:
        return 1e-3
    return 1e-2
