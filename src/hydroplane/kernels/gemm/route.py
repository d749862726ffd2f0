"""How one GEMM runs as a chain of dispatches: the skinny kernels, padding odd sizes into aligned scratch, plain.

    route = gemm_route(problem, config, target)      # config: a GemmConfig or a GemvConfig
    route.steps        # Step: kernel, constexprs, grid, push-constant values, {buffer parameter: buffer name}
    route.scratch      # Scratch buffers the launcher allocates (padded copies, partial sums)
    route.result       # where D is when the steps are done (a buffer name, rows, cols, leading dimension)

Buffer names: "a", "b", "c", "bias" (the caller's operands, stored as the problem's layout says) and "d" (the
caller's M x N result), and the route's scratch. A skinny problem (GemvConfig) runs gemv.py's kernels, with a
reduction step when it splits K. A problem whose sizes are not multiples of 16 bytes of the input, under a
configuration that wants 16-byte loads, is padded: A, B (and C, bias) are copied into zeroed scratch whose sizes
are (copy.py), the GEMM runs on the padded problem, and D is copied back out (or, where the launcher owns the
result buffer, read from the padded one: `exact_output=False`). Otherwise the route is the one GEMM of gemm_plan.
Device-independent, like plan.py: it imports the kernels and the type model.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from hydroplane.kernels.gemm import copy, gemv, splitk
from hydroplane.kernels.gemm.plan import (
    KERNEL_KINDS,
    GemmConfig,
    GemmError,
    GemmProblem,
    aligned_for_matrices,
    candidate_configs,
    coop_shapes,
    default_config,
    gemm_plan,
    offers_tile,
    verification_problem,
    with_size,
)
from hydroplane.spirv import types
from hydroplane.spirv.target import Target

SKINNY_M = 64  # rows of A up to which a problem is skinny: B streamed once, the skinny kernels' case
GEMV_ROWS = 8  # rows of A the skinny kernels multiply in one pass over B (more rows: more passes)
WAVE = 264  # workgroups that keep a large GPU busy (the H200: 132 SMs, two workgroups each)
PAD_WASTE = 1.0625  # padding to whole blocks is taken where it adds at most this factor of work


@dataclass(frozen=True)
class GemvConfig:
    """A skinny-kernel configuration (gemv.py).

    rows: rows of A (MR) per workgroup; columns: 16-byte column chunks side by side (rows kernel, B stored K x N; one
    column each without wide loads) or column groups (dot kernel, B stored N x K); per_lane: columns per invocation
    (dot kernel); lanes: invocations along K (KW); unroll: loads issued before they are used; split: K ranges run
    by separate workgroups (grid z), summed by the reduction kernel; wide: 16-byte loads where the sizes allow;
    k_groups: groups of `lanes` invocations along K that share a column group (dot kernel), summed in shared
    memory."""

    kind: str = "gemv"
    rows: int = 8
    columns: int = 8
    per_lane: int = 1
    lanes: int = 32
    unroll: int = 4
    split: int = 1
    wide: bool = True
    k_groups: int = 1

    def __post_init__(self):
        if self.kind != "gemv":
            raise GemmError(f"a GemvConfig's kind is 'gemv', not {self.kind!r}")
        for name in ("rows", "columns", "per_lane", "lanes", "unroll", "split", "k_groups"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise GemmError(f"a GemvConfig's {name} is a positive int, not {value!r}")

    def describe(self) -> str:
        return (f"skinny: {self.rows} row{'s' * (self.rows > 1)}, {self.columns} column "
                f"{'chunks' if self.per_lane == 1 else 'groups'}"
                + (f" of {self.per_lane}" if self.per_lane > 1 else "") + f" x {self.lanes} K lanes"
                + (f" x {self.k_groups} groups" if self.k_groups > 1 else "") + ", unroll "
                f"{self.unroll}" + (f", K split {self.split} ways" if self.split > 1 else "")
                + ("" if self.wide else ", no wide loads"))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GemvConfig:
        try:
            return cls(**d)
        except TypeError as err:
            raise GemmError(f"a malformed skinny GEMM config {d!r}: {err}") from None


@dataclass(frozen=True)
class SplitConfig:
    """A staged cooperative-matrix configuration (GemmConfig's fields of the kind) run over `split` K ranges by
    separate workgroups (splitk.py), their partial sums added up by the reduction kernel."""

    kind: str = "splitk"
    tile: tuple[int, int, int] = (16, 16, 16)
    subgroups: tuple[int, int] = (2, 2)
    tiles: tuple[int, int] = (2, 2)
    k_tiles: int = 2
    stages: int = 1
    wide: bool = True
    pad: int = 0
    prefetch: bool | int = False
    kmajor: bool = False
    split: int = 2

    def __post_init__(self):
        if self.kind != "splitk":
            raise GemmError(f"a SplitConfig's kind is 'splitk', not {self.kind!r}")
        if not isinstance(self.split, int) or self.split < 2:
            raise GemmError(f"a K split runs 2 or more ranges, not {self.split!r}")
        self.coop()  # the GEMM fields checked as GemmConfig checks them

    def coop(self) -> GemmConfig:
        """The cooperative-matrix configuration each K range runs."""
        return GemmConfig(kind="coop", tile=tuple(self.tile), subgroups=tuple(self.subgroups), tiles=tuple(self.tiles),
                          k_tiles=self.k_tiles, stages=self.stages, wide=self.wide, pad=self.pad,
                          prefetch=self.prefetch, kmajor=self.kmajor)

    @classmethod
    def of(cls, config: GemmConfig, split: int) -> SplitConfig:
        return cls(tile=config.tile, subgroups=config.subgroups, tiles=config.tiles, k_tiles=config.k_tiles,
                   stages=config.stages, wide=config.wide, pad=config.pad, prefetch=config.prefetch,
                   kmajor=config.kmajor, split=split)

    @property
    def block(self) -> tuple[int, int, int]:
        return self.coop().block

    def describe(self) -> str:
        return f"{self.coop().describe()}, K split {self.split} ways"

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict) -> SplitConfig:
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except TypeError as err:
            raise GemmError(f"a malformed K-split GEMM config {d!r}: {err}") from None


def config_from_dict(d: dict) -> GemmConfig | GemvConfig | SplitConfig:
    """A stored configuration (the autotune cache, the shipped table) of any kind."""
    if not isinstance(d, dict):
        raise GemmError(f"a GEMM config is a dict, not {d!r}")
    kind = d.get("kind", "coop")
    if not isinstance(kind, str):  # a list or a dict is no key of the table below (and no kind)
        raise GemmError(f"a GEMM config's kind is a string, not {kind!r}")
    kinds = {"gemv": GemvConfig, "splitk": SplitConfig}
    return kinds[kind].from_dict(d) if kind in kinds else GemmConfig.from_dict(d)


@dataclass(frozen=True)
class Step:
    """One dispatch: a language kernel, its constexprs, grid, push-constant values and buffers by parameter."""

    name: str
    kernel: object
    constexprs: dict
    grid: tuple[int, int, int]
    scalars: dict
    bindings: dict  # buffer parameter -> buffer name


@dataclass(frozen=True)
class Scratch:
    """A buffer the launcher allocates for the route: `count` elements of `dtype` (every step that reads it is preceded
    by one that writes all of it)."""

    name: str
    dtype: types.Scalar
    count: int


@dataclass(frozen=True)
class ResultView:
    """Where D is after the steps: rows x cols of a row-major buffer with leading dimension ld."""

    buffer: str
    rows: int
    cols: int
    ld: int


@dataclass(frozen=True)
class Route:
    problem: GemmProblem
    config: GemmConfig | GemvConfig
    steps: tuple[Step, ...]
    scratch: tuple[Scratch, ...]
    result: ResultView
    padded: GemmProblem | None = None  # the problem the GEMM step runs, where the route pads

    @property
    def main(self) -> Step:
        """The step that multiplies (the GEMM or the skinny kernel)."""
        return next(s for s in self.steps if s.name in ("gemm", "gemv"))


# the skinny kernels ---------------------------------------------------------------------------------------------
UNPACKED = ("f16", "bf16", "s8", "u8")  # input types gemv.unpack reads from 16-byte chunks


def gemv_vec(problem: GemmProblem, config: GemvConfig) -> int:
    """Elements per 16-byte load (0: element loads): the rows kernel needs N, the dot kernel K, a multiple of it."""
    per = 16 // (problem.dtype.a.width // 8)
    along = problem.k if problem.b_transposed else problem.n
    if not config.wide or str(problem.dtype.a) not in UNPACKED or along % per:
        return 0
    return per


def check_gemv(problem: GemmProblem, config: GemvConfig, target: Target) -> None:
    """Refuse (GemmError) a skinny configuration the target cannot run."""
    dtype = problem.dtype
    needed = {"bf16": "bfloat16", "e4m3": "float8", "e5m2": "float8"}.get(str(dtype.a))
    if needed and not target.is_reference and needed not in target.support:
        raise GemmError(f"{target.name} has no {dtype.a} arithmetic type (Vulkan feature {needed})")
    if problem.saturate:
        raise GemmError("the skinny kernels accumulate wrapping; saturating accumulation runs on the tensor cores")
    sg = target.subgroup_size
    threads = config.columns * config.lanes * config.k_groups
    if threads % sg or threads > target.max_workgroup_invocations:
        raise GemmError(f"{config.describe()}: {threads} invocations, which must be a multiple of the subgroup size "
                        f"{sg} and at most {target.max_workgroup_invocations}")
    if problem.b_transposed:
        if config.lanes > sg or sg % config.lanes:
            raise GemmError(f"{config.describe()}: the dot kernel's K lanes lie in one subgroup (a divisor of its "
                            f"{sg} invocations)")
        shared = gemv.dot_shared(config.columns, config.k_groups, config.rows, config.per_lane)
        if shared * gemv.work_type(dtype.acc).width // 8 > target.shared_memory:
            raise GemmError(f"{config.describe()}: {shared * gemv.work_type(dtype.acc).width // 8} bytes of shared "
                            f"memory, {target.name} has {target.shared_memory}")
    else:
        if config.k_groups > 1:
            raise GemmError(f"{config.describe()}: groups of K lanes are the dot kernel's (B stored N x K)")
        if config.columns > sg or sg % config.columns:
            raise GemmError(f"{config.describe()}: the rows kernel's column chunks divide the subgroup size {sg}")
        vec = gemv_vec(problem, config) or 1
        shared = gemv.rows_shared(config.columns, config.lanes, config.rows, vec, sg) * gemv.work_type(dtype.acc).width
        if shared // 8 > target.shared_memory:
            raise GemmError(f"{config.describe()}: {shared // 8} bytes of shared memory, {target.name} has "
                            f"{target.shared_memory}")


def gemv_route(problem: GemmProblem, config: GemvConfig, target: Target) -> Route:
    """The skinny kernel (and its reduction where K is split) for `problem`."""
    check_gemv(problem, config, target)
    dtype = problem.dtype
    vec = gemv_vec(problem, config)
    m, n, k = problem.m, problem.n, problem.k
    split = min(config.split, k)
    k_split = -(-k // split)
    if vec and problem.b_transposed:
        k_split = -(-k_split // vec) * vec  # whole chunks per range
    split = -(-k // k_split)
    partial = split > 1
    step = config.lanes * config.k_groups * (vec or 1) * config.unroll  # K one loop iteration covers (dot kernel)
    common = dict(AT=problem.a_transposed, MR=config.rows, UNROLL=config.unroll, WIDE=vec, SG=target.subgroup_size,
                  PARTIAL=partial, USE_C=problem.beta != 0 and not partial, BIAS=problem.bias and not partial,
                  ACT="none" if partial else problem.activation, SCALE=problem.alpha != 1 and not partial)
    bindings = dict(a="a", b="b", c="c", bias="bias", d="d", part="part" if partial else "d", b4="b")
    if problem.b_transposed:
        kernel = gemv.gemv_dot_kernel(dtype.a, dtype.acc, dtype.out)
        per_group = config.columns * config.per_lane
        constexprs = dict(common, CN=config.columns, CPI=config.per_lane, KW=config.lanes, KG=config.k_groups,
                          EVEN_K=k_split % step == 0 and split * k_split == k, EVEN_N=n % per_group == 0)
        bindings["a4"] = "a"
    else:
        kernel = gemv.gemv_rows_kernel(dtype.a, dtype.acc, dtype.out)
        constexprs = dict(common, CW=config.columns, KW=config.lanes)
        per_group = config.columns * (vec or 1)
    grid = (-(-n // per_group), -(-m // config.rows), split)
    scalars = dict(alpha=float(problem.alpha), beta=float(problem.beta), M=m, N=n, K=k, k_split=k_split)
    steps = [Step("gemv", kernel, constexprs, grid, scalars, bindings)]
    scratch = []
    work = gemv.work_type(dtype.acc)
    if partial:
        scratch.append(Scratch("part", work, split * m * n))
        steps.append(reduce_step(problem, split))
    return Route(problem, config, tuple(steps), tuple(scratch), ResultView("d", m, n, n))


def reduce_step(problem: GemmProblem, split: int) -> Step:
    """The sum of `split` partial results (the scratch "part": split x M x N in the working type) through the
    epilogue into D."""
    m, n = problem.m, problem.n
    return Step("reduce", gemv.gemv_reduce_kernel(problem.dtype.acc, problem.dtype.out),
                dict(USE_C=problem.beta != 0, BIAS=problem.bias, ACT=problem.activation, SCALE=problem.alpha != 1),
                (-(-(m * n) // gemv.REDUCE_THREADS), 1, 1),
                dict(alpha=float(problem.alpha), beta=float(problem.beta), M=m, N=n, splits=split),
                dict(part="part", c="c", bias="bias", d="d"))


# the GEMM split over K ----------------------------------------------------------------------------------------
SPLIT_FLOPS_PER_BYTE = 62.5  # a GEMM's operations per byte of memory traffic in the same time (the H200's ratio)
SPLIT_DROPPED = ("USE_C", "BIAS", "ACT", "SCALE", "DIRECT", "ALIGNED_OUT")  # the reduction's, not the K ranges'


def splitk_route(problem: GemmProblem, config: SplitConfig, target: Target) -> Route:
    """The K-split GEMM (splitk.py) writing partial sums, then the reduction kernel's epilogue into D."""
    coop_config = config.coop()
    plan = gemm_plan(problem, coop_config, target)  # the tile, workgroup, prefetch and memory checks; constexprs
    dtype = problem.dtype
    work = gemv.work_type(dtype.acc)
    tm, tn, _ = coop_config.tile
    tiles_bytes = coop_config.subgroups[0] * coop_config.subgroups[1] * tm * tn
    shared = plan.shared_bytes + tiles_bytes * (work.width - dtype.out.width) // 8
    if shared > target.shared_memory:
        raise GemmError(f"{config.describe()}: {shared} bytes of shared memory, {target.name} has "
                        f"{target.shared_memory}")
    bk = coop_config.block[2]
    per_range = -(-problem.k // config.split)
    k_split = -(-per_range // bk) * bk  # whole K steps per range
    split = -(-problem.k // k_split)
    if split < 2:
        raise GemmError(f"{config.describe()}: K={problem.k} gives {split} range of {k_split}")
    constexprs = {name: value for name, value in plan.constexprs.items() if name not in SPLIT_DROPPED}
    constexprs["ALIGNED_PART"] = problem.n * work.width // 8 % 16 == 0
    kernel = splitk.splitk_kernel(dtype.a, dtype.acc, dtype.out)
    grid = (plan.grid[0], plan.grid[1], split)
    scalars = dict(M=problem.m, N=problem.n, K=problem.k, k_split=k_split)
    steps = (Step("gemm", kernel, constexprs, grid, scalars, dict(a="a", b="b", part="part", a4="a", b4="b")),
             reduce_step(problem, split))
    return Route(problem, config, steps, (Scratch("part", work, split * problem.m * problem.n),),
                 ResultView("d", problem.m, problem.n, problem.n))


def max_split(problem: GemmProblem) -> int:
    """The most K ranges worth their partial sums: the sums' bytes (written and read again, split x M x N x 2 x 4)
    at most half of what the GEMM would move or compute in their time otherwise, its inputs' bytes or its
    operations at SPLIT_FLOPS_PER_BYTE (the H200: about 250 TFLOP/s of the staged kernel against 4 TB/s)."""
    inputs = (problem.m + problem.n) * problem.k * problem.dtype.a.width // 8
    budget = max(inputs, problem.flops / SPLIT_FLOPS_PER_BYTE) / 2
    return max(1, int(budget // (problem.m * problem.n * 8)))


def splitk_configs(problem: GemmProblem, target: Target, coop_configs: list[GemmConfig]) -> list[SplitConfig]:
    """K-split versions of the prefetching configurations whose grid leaves the GPU short of a wave of workgroups
    (where K gives each range at least 4 K steps): the three with the largest useful blocks (the most work per
    workgroup, rows and columns past M and N not counted, weighed by the share of the block they are), each split
    to reach a wave and half that."""
    eligible = []
    for config in coop_configs:
        bm, bn, bk = config.block
        groups = -(-problem.m // bm) * -(-problem.n // bn)
        if config.kind == "coop" and config.prefetch and groups < WAVE // 2 and problem.k >= 8 * bk:
            useful = min(bm, problem.m) * min(bn, problem.n)
            eligible.append((-useful * useful / (bm * bn), len(eligible), config, groups))  # useful, less waste
    found = []
    if max_split(problem) < 2:
        return found
    for _, _, config, groups in sorted(eligible)[:3]:
        split = 2
        while groups * split < WAVE and problem.k // (2 * split) >= 4 * config.block[2] and \
                2 * split <= max_split(problem):
            split *= 2
        for candidate in dict.fromkeys((split, max(2, split // 2), max(2, split // 4))):
            try:
                splitk_route(problem, SplitConfig.of(config, candidate), target)
            except GemmError:
                continue
            found.append(SplitConfig.of(config, candidate))
    return found


# (columns per invocation, groups of K lanes) of the dot kernel's grouped candidates, one column group per
# workgroup (4096 x 14336 f16: 4096 workgroups of 256 invocations for (1, 8), 512 of 128 for (8, 4)), the H200's
# fastest first (2026-12-04, f16:f32 by 14336 -> 4096: (4, 8) 31.0 us for 1 row and 56.9 for 8, (4, 4) 31.5 for 2,
# (2, 4) 35.0 for 4; f16:f16: (2, 8) 31.6 for 1 and 32.8 for 2 rows), so that the untuned default is the first
GROUPED_DOT = ((4, 8), (2, 8), (4, 4), (2, 4), (1, 8), (8, 4), (8, 8), (4, 2), (16, 8), (16, 4))


DOT_REGISTERS = 200  # the grouped candidates' unroll kept under this estimate of 32-bit registers per invocation


def dot_registers(rows: int, per_lane: int, unroll: int) -> int:
    """About how many 32-bit registers the dot kernel holds (16-byte chunks of B in flight, the sums, a chunk of
    A unpacked per row, addresses)."""
    return unroll * per_lane * 4 + rows * per_lane + rows * 8 + 24


def gemv_configs(problem: GemmProblem, target: Target) -> list[GemvConfig]:
    """The skinny configurations an autotuner tries for `problem` on `target`, a sensible default first; each
    runs there."""
    sg = target.subgroup_size
    m, k = problem.m, problem.k
    rows = min(m, GEMV_ROWS)
    found = []
    if problem.b_transposed:
        lanes = min(sg, 32)
        vec = gemv_vec(problem, GemvConfig()) or 1
        # groups of K lanes first: many invocations per column group, so that a column group can be several
        # columns (A's chunks unpacked once for all of them) and the GPU still has enough loads in flight
        for per_lane, k_groups in GROUPED_DOT:
            steps = k / (lanes * k_groups * vec)  # loop steps per invocation: a whole number compiles EVEN_K
            fits = [u for u in range(8, 0, -1) if dot_registers(rows, per_lane, u) <= DOT_REGISTERS]
            divisors = [u for u in fits if steps == int(steps) and int(steps) % u == 0]
            unrolls = dict.fromkeys(divisors[:1] + [u for u in divisors if u <= 4][:1]) if divisors else \
                [u for u in (4, 2) if u in fits]
            for unroll in unrolls:
                found.append(GemvConfig(rows=rows, columns=1, per_lane=per_lane, lanes=lanes, unroll=unroll,
                                        k_groups=k_groups))
        for per_lane, columns in ((2, 256 // lanes), (4, 256 // lanes), (1, 256 // lanes), (2, 128 // lanes),
                                  (4, 128 // lanes), (8, 64 // lanes)):
            for unroll in (2, 4, 8):
                found.append(GemvConfig(rows=rows, columns=max(columns, 1), per_lane=per_lane, lanes=lanes,
                                        unroll=unroll))
        found += [GemvConfig(rows=rows, columns=max(256 // lanes // 2, 1), per_lane=2, lanes=lanes // 2 or 1,
                             unroll=4)]
    else:
        probe = GemvConfig()
        wide = gemv_vec(problem, probe) > 0
        chunk = min(8 if wide else sg, sg)
        for columns, lanes, unroll in ((chunk, 256 // chunk, 4), (chunk, 256 // chunk, 8), (chunk, 128 // chunk, 8),
                                       (max(chunk // 2, 1), 256 // max(chunk // 2, 1), 4),
                                       (min(2 * chunk, sg), 256 // min(2 * chunk, sg), 4)):
            found.append(GemvConfig(rows=rows, columns=columns, lanes=lanes, unroll=unroll))
    # K split where the columns alone give too few workgroups for the GPU
    split_found = []
    for config in found:
        groups = _gemv_workgroups(problem, config)
        split = 1
        while groups * split < WAVE and k // (2 * split) >= config.lanes * config.k_groups * config.unroll * 2:
            split *= 2
        split_found.append(replace(config, split=split))
        if split > 1:
            split_found.append(config)
    if m > rows:
        split_found += [replace(c, rows=min(m, 2 * rows)) for c in split_found[:2]]
    runnable = []
    for config in dict.fromkeys(split_found):
        try:
            check_gemv(problem, config, target)
        except GemmError:
            continue
        runnable.append(config)
    return runnable


def _gemv_workgroups(problem: GemmProblem, config: GemvConfig) -> int:
    per_group = config.columns * (config.per_lane if problem.b_transposed else (gemv_vec(problem, config) or 1))
    return -(-problem.n // per_group) * -(-problem.m // config.rows)


# padding odd sizes ----------------------------------------------------------------------------------------------
def input_granule(problem: GemmProblem) -> int:
    """Elements of the input type in 16 bytes: the multiple the 16-byte loads want of M, N and K."""
    return 16 // (problem.dtype.a.width // 8)


def wants_padding(problem: GemmProblem, config: GemmConfig | SplitConfig, target: Target) -> bool:
    """Whether padding would let `config` use 16-byte loads it loses at these sizes: a wide cooperative-matrix
    configuration whose tile is whole 16-byte chunks, on sizes that are not."""
    if isinstance(config, SplitConfig):
        config = config.coop()
    per = input_granule(problem)
    if ref_whole_k(problem, config, target) and all(t % per == 0 for t in config.tile):
        return True
    return (config.kind == "coop" and config.wide and not aligned_for_matrices(problem)[0]
            and all(t % per == 0 for t in config.tile) and (target.is_reference or offers_tile(problem.dtype,
                                                                                               config.tile, target)))


def loads_directly(config: GemmConfig | SplitConfig) -> bool:
    """Whether the configuration loads its matrices straight from the buffers (plan.KERNEL_KINDS: aligned sizes
    only)."""
    coop = config.coop() if isinstance(config, SplitConfig) else config
    return KERNEL_KINDS[coop.kind].direct_loads(coop)


def aligned_sizes(problem: GemmProblem) -> GemmProblem:
    """The problem with M, N and K rounded up to 16 bytes of the input (what a padded route runs at the least)."""
    per = input_granule(problem)
    return with_size(problem, *(-(-d // per) * per for d in (problem.m, problem.n, problem.k)))


def ref_whole_k(problem: GemmProblem, config: GemmConfig, target: Target) -> bool:
    """Whether the reference executor should pad K to whole K steps of a direct configuration: its K tail, staged
    element by element through shared memory, costs the interpreter several times the whole GEMM's tiles (256x256
    by K = 776 takes 4x as long as K = 768), far more than copying A and B once."""
    return target.is_reference and loads_directly(config) and problem.k % config.block[2] != 0


def padded_sizes(problem: GemmProblem, config: GemmConfig, whole_k: bool = False) -> tuple[int, int, int]:
    """M, N, K rounded up to 16 bytes of the input, or to whole blocks where that costs at most PAD_WASTE more work
    (whole blocks compile the kernel's bounds checks out); whole_k: K to whole K steps in any case."""
    per = input_granule(problem)
    dims = tuple(-(-d // per) * per for d in (problem.m, problem.n, problem.k))
    blocks = tuple(-(-d // b) * b for d, b in zip(dims, config.block))
    if whole_k:  # K padded in any case: M and N to whole blocks where those alone cost at most PAD_WASTE more
        whole_mn = blocks[0] * blocks[1] <= PAD_WASTE * dims[0] * dims[1]
        return (*(blocks[:2] if whole_mn else dims[:2]), blocks[2])
    if blocks[0] * blocks[1] * blocks[2] <= PAD_WASTE * dims[0] * dims[1] * dims[2]:
        return blocks
    return dims


def _copy_step(name: str, bits: int, src: str, dst: str, rows: int, cols: int, src_ld: int, dst_rows: int,
               dst_cols: int, dst_ld: int) -> Step:
    scalars = dict(src_offset=0, src_ld=src_ld, src_batch=0, rows=rows, cols=cols, dst_offset=0, dst_ld=dst_ld,
                   dst_batch=0, dst_rows=dst_rows, dst_cols=dst_cols)
    return Step(name, copy.copy_kernel(bits), dict(TX=copy.COPY_TX, TY=copy.COPY_TY, ROWS=copy.COPY_ROWS),
                copy.copy_grid(dst_rows, dst_cols), scalars, dict(src=src, dst=dst))


def padded_route(problem: GemmProblem, config: GemmConfig | SplitConfig, target: Target, *,
                 exact_output: bool = True) -> Route:
    """Copy A, B (C, bias) into padded scratch, run `config` on the padded problem, D back out (exact_output) or
    left in the padded scratch for the launcher to read."""
    inner_config = config.coop() if isinstance(config, SplitConfig) else config
    mp, np_, kp = padded_sizes(problem, config, ref_whole_k(problem, inner_config, target))
    padded = with_size(problem, mp, np_, kp)
    inner = gemm_route(padded, config, target, pad=False)
    dtype = problem.dtype
    in_bits, out_bits = dtype.a.width, dtype.out.width
    m, n, k = problem.m, problem.n, problem.k
    a_shape = (k, m) if problem.a_transposed else (m, k)
    a_pad = (kp, mp) if problem.a_transposed else (mp, kp)
    b_shape = (n, k) if problem.b_transposed else (k, n)
    b_pad = (np_, kp) if problem.b_transposed else (kp, np_)
    steps, scratch = [], []
    names = dict(a="a", b="b", c="c", bias="bias", d="d")
    for operand, shape, pad, bits, dt in (("a", a_shape, a_pad, in_bits, dtype.a), ("b", b_shape, b_pad, in_bits,
                                                                                    dtype.a)):
        if shape != pad:
            names[operand] = f"{operand}_pad"
            scratch.append(Scratch(names[operand], dt, pad[0] * pad[1]))
            steps.append(_copy_step(f"pad {operand}", bits, operand, names[operand], *shape, shape[1], *pad, pad[1]))
    if problem.beta != 0 and (mp, np_) != (m, n):
        names["c"] = "c_pad"
        scratch.append(Scratch("c_pad", dtype.out, mp * np_))
        steps.append(_copy_step("pad c", out_bits, "c", "c_pad", m, n, n, mp, np_, np_))
    if problem.bias and np_ != n:
        names["bias"] = "bias_pad"
        scratch.append(Scratch("bias_pad", dtype.out, np_))
        steps.append(_copy_step("pad bias", out_bits, "bias", "bias_pad", 1, n, n, 1, np_, np_))
    result = ResultView("d", m, n, n)
    if (mp, np_) != (m, n):
        names["d"] = "d_pad"
        scratch.append(Scratch("d_pad", dtype.out, mp * np_))
        result = ResultView("d_pad", m, n, np_)
    for step in inner.steps:  # the padded problem's steps, bound to the padded buffers
        steps.append(replace(step, bindings={p: names.get(b, b) for p, b in step.bindings.items()}))
    scratch += inner.scratch
    if exact_output and names["d"] != "d":
        steps.append(_copy_step("extract d", out_bits, "d_pad", "d", m, n, np_, m, n, n))
        result = ResultView("d", m, n, n)
    return Route(problem, config, tuple(steps), tuple(scratch), result, padded)


def gemm_route(problem: GemmProblem, config: GemmConfig | GemvConfig, target: Target, *, pad: bool | None = None,
               exact_output: bool = True) -> Route:
    """The dispatches that compute `problem` under `config` on `target`. pad: None pads odd sizes where the
    configuration wants 16-byte loads (on the reference executor only where the configuration loads its matrices
    straight from the buffers, which odd sizes forbid: ref's fast configurations), True pads wherever that helps,
    False never."""
    if isinstance(config, GemvConfig):
        return gemv_route(problem, config, target)
    if pad is None:
        pad = not target.is_reference or loads_directly(config)
    if pad and wants_padding(problem, config, target):
        return padded_route(problem, config, target, exact_output=exact_output)
    if isinstance(config, SplitConfig):
        return splitk_route(problem, config, target)
    plan = gemm_plan(problem, config, target)
    bindings = dict(a="a", b="b", c="c", bias="bias", d="d", a4="a", b4="b")
    step = Step("gemm", plan.kernel, plan.constexprs, plan.grid, plan.scalars, bindings)
    return Route(problem, config, (step,), (), ResultView("d", problem.m, problem.n, problem.n))


def is_skinny(problem: GemmProblem) -> bool:
    return problem.m <= SKINNY_M and not problem.saturate


# choosing and tuning by shape -----------------------------------------------------------------------------------
def _pow2_at_least(x: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(x, 1))))


def is_deep(problem: GemmProblem) -> bool:
    """K at least twice the larger of M and N while a grid of the largest blocks (128 x 256) leaves the GPU short of
    half a wave: an LLM's prefill against a deep weight (512 x 14336 -> 4096), the K-split kernels' shapes."""
    groups = -(-problem.m // 128) * -(-problem.n // 256)
    return problem.k >= 2 * max(problem.m, problem.n) and groups < WAVE // 2


def shape_class(problem: GemmProblem) -> str:
    """The autotune cache's bucket of a problem's shape: 'skinny-mR-S' (at most SKINNY_M rows of A: R the power of two
    at or above M, S the one at or above the larger of N and K), 'odd-S' (sizes not multiples of 16 bytes of the
    input, padded), else the size class S (the power of two at or above the geometric mean of M, N, K), with
    '-deep' (is_deep: K deep against a short grid, the K-split shapes), '-wide' (N at least 4 M: an LLM's
    projections of few tokens) or '-tall' (M at least 4 N)."""
    if is_skinny(problem):
        return f"skinny-m{_pow2_at_least(problem.m)}-{_pow2_at_least(max(problem.n, problem.k))}"
    size = problem.size_class
    if not aligned_for_matrices(problem)[0]:
        return f"odd-{size}"
    if is_deep(problem):
        return f"{size}-deep"
    if problem.n >= 4 * problem.m:
        return f"{size}-wide"
    if problem.m >= 4 * problem.n:
        return f"{size}-tall"
    return size


THIN_M = 16  # rows of A up to which one tensor-core tile row holds them all (thin_configs)
# (subgroups, tiles), the H200's fastest first (8 x 4096 x 14336, 2026-12-02: 1x8 of 1x1 65.5 us, 1x4 of 1x2 101 us)
THIN_BLOCKS = (((1, 8), (1, 1)), ((1, 4), (1, 2)), ((1, 2), (1, 4)), ((1, 4), (1, 4)))


def thin_configs(problem: GemmProblem, target: Target) -> list[SplitConfig]:
    """Tensor-core configurations for at most THIN_M rows of A (an LLM's decode of a few tokens): blocks one 16-row
    tile high, so that B (the weights) is read once for every row, as wide as 128 or 256 columns, split over K until
    the grid fills the GPU (a wave of workgroups). The skinny kernels' scalar multiplications grow with M; these do
    not (16 rows cost what 1 row costs)."""
    if problem.m > THIN_M or problem.saturate:
        return []
    found = []
    for tile in [t for t in coop_shapes_of(problem, target) if t[0] == 16][:1]:  # the widest 16-row tile
        for subgroups, tiles in THIN_BLOCKS:
            # K steps deep enough that the one tile row of A splits into whole 16-byte chunks per invocation
            threads = subgroups[0] * subgroups[1] * target.subgroup_size
            k_tiles = max(2, threads * 16 // (tile[0] * (problem.dtype.a.width // 8) * tile[2]))
            config = GemmConfig(tile=tile, subgroups=subgroups, tiles=tiles, k_tiles=k_tiles, stages=1, pad=1,
                                prefetch=True)
            groups = -(-problem.n // config.block[1])
            split = 2
            while groups * split < WAVE and problem.k // (2 * split) >= 4 * config.block[2]:
                split *= 2
            for candidate in dict.fromkeys((2 * split, split, max(2, split // 2))):
                try:
                    gemm_route(problem, SplitConfig.of(config, candidate), target)
                except GemmError:
                    continue
                found.append(SplitConfig.of(config, candidate))
    return found


def coop_shapes_of(problem: GemmProblem, target: Target) -> list[tuple[int, int, int]]:
    """The tensor-core tile shapes the target offers for the problem's types (plan.coop_shapes; none on ref)."""
    return [] if target.is_reference else coop_shapes(problem.dtype, target)


def route_candidates(problem: GemmProblem, target: Target) -> list[GemmConfig | GemvConfig]:
    """What an autotuner tries: for a skinny problem the skinny kernels' configurations, the thin tensor-core ones
    (at most THIN_M rows) and then the GEMM's, else the GEMM's (plan.candidate_configs), best first."""
    found = list(gemv_configs(problem, target)) + thin_configs(problem, target) if is_skinny(problem) else []
    coop = candidate_configs(problem, target)
    split = splitk_configs(problem, target, coop)
    if split:  # the GPU short of workgroups: whole-K candidates and K-split ones in turn, best first
        first = coop[:len(split)]
        interleaved = [c for pair in zip(first, split) for c in pair] + split[len(first):]
        return found + list(dict.fromkeys(interleaved + coop))
    return found + coop


def route_default_config(problem: GemmProblem, target: Target) -> GemmConfig | GemvConfig:
    """The configuration without tuning: the skinny kernels' first for a skinny problem (float inputs on a target
    with 16-row tiles: the thin tensor-core one for 9 to THIN_M rows, the first K-split one for more), else
    plan.default_config."""
    measured = not problem.dtype.integer  # the rules below were measured with float inputs (8-bit: the skinny kernels)
    if measured and GEMV_ROWS < problem.m <= THIN_M and is_skinny(problem):
        # past GEMV_ROWS rows the skinny kernels read B once per GEMV_ROWS rows of A; one tile row of the tensor
        # cores reads it once (the H200, 2026-12-05: 16 x 4096 x 4096 as the GEMV 55 us, twice its 8 rows' 30 us;
        # the thin block at 8 x 4096 x 14336 65.5 us against the GEMV's 55.8). The middle of its splits: about a wave.
        thin = thin_configs(problem, target)
        if thin:
            first = sorted((c for c in thin if c.block == thin[0].block), key=lambda c: c.split)
            return first[len(first) // 2]
    if measured and THIN_M < problem.m and is_skinny(problem) and \
            any(t[0] >= 16 for t in coop_shapes_of(problem, target)):
        # 17 to 64 rows: the first K-split tensor-core block (the H200's tuned 64 x 4096 x 4096: K-split 53-63 us for
        # f16:f32 and bf16 against 172-198 us on the skinny kernels, 2026-12-01)
        split = splitk_configs(problem, target, candidate_configs(problem, target))
        if split:
            return split[0]
    if is_skinny(problem):
        skinny = gemv_configs(problem, target)
        if skinny:
            return skinny[0]
    if is_deep(problem) and any(t[0] >= 16 for t in coop_shapes_of(problem, target)):
        # K deep against a short grid on a large GPU: the first K-split block with the fewest ranges (one wave; the
        # H200's 512 x 14336 -> 4096 took 128x256 split 2 at 275 us against 298 for 4 ways, 685 for 64x64 whole-K)
        split = splitk_configs(problem, target, candidate_configs(problem, target))
        if split:
            first = [c for c in split if c.block == split[0].block]
            return min(first, key=lambda c: c.split)
    if target.is_reference and not aligned_for_matrices(problem)[0]:
        # ref's fastest configurations load straight from the buffers: an odd size runs them padded (gemm_route),
        # at about the cost of the next aligned size, not the staged kernel's several times that (docs/perf.md)
        return default_config(aligned_sizes(problem), target)
    return default_config(problem, target)


def route_verification_problem(problem: GemmProblem, config: GemmConfig | GemvConfig | SplitConfig) -> GemmProblem:
    """A smaller problem that takes the same code paths under `config`, for checking a candidate before timing it:
    plan.verification_problem for the GEMM's configurations; for the skinny ones N and K cut to about 1024 and
    2048 with their remainders modulo 16 kept (so the 16-byte loads are taken or not as at full size), K to whole
    steps of the dot kernel where it has them (so that EVEN_K is compiled as at full size)."""
    if isinstance(config, GemmConfig):
        return verification_problem(problem, config)
    if isinstance(config, SplitConfig):  # the same K ranges: K kept
        small = verification_problem(problem, config.coop())
        return with_size(problem, small.m, small.n, problem.k) if small.k != problem.k else small
    n = problem.n if problem.n <= 1024 else 1024 + problem.n % 16
    k = problem.k if problem.k <= 2048 else 2048 + problem.k % 16
    step = config.lanes * config.k_groups * config.unroll * input_granule(problem) * config.split
    if problem.b_transposed and problem.k > 2048 and problem.k % step == 0:  # whole steps kept (EVEN_K)
        k = max(step, 2048 // step * step)
    return with_size(problem, problem.m, n, k)
