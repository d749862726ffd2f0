"""`hydroplane gemm M N K`: run the GEMM library on the best device, verify it against NumPy, print its speed.

    hydroplane gemm 1024 1024 1024 --dtype f16:f32 --layout nn --device ref --repeat 5
    hydroplane gemm 4096 4096 4096 --retune            # search tile configurations first (cached)
    hydroplane gemm 2048 2048 2048 --sweep --dtype f16:f32,s8:s32 --plot gemm.png
    hydroplane gemm --cache                              # the autotune cache's path and entries

The device is the first Vulkan device with cooperative matrices for the dtype, else the first
Vulkan device (the scalar kernel), else the reference executor, which gets a size it finishes in a
few seconds (the output says so). Every argument is checked before any work (a dtype, alpha or beta
the GEMM cannot compute, --plot without matplotlib); a warning (a broken autotune cache) is one
`hydroplane: warning:` line. Registered in cli.py; the work is in hydroplane.ops.gemm.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from hydroplane.kernels.gemm import (
    ACTIVATIONS,
    LAYOUTS,
    GemmError,
    GemmProblem,
    parse_dtype,
    with_size,
)
from hydroplane.kernels.gemm.plan import GEMM_DTYPES
from hydroplane.kernels.gemm.route import config_from_dict
from hydroplane.ops.gemm import (
    GemmRunner,
    cache_path,
    lacks_type_message,
    load_cache,
    missing_type,
    shipped_table,
    terminal_progress,
)
from hydroplane.ops.runner import device_option

PLOT_INSTALL = "pip install hydroplane-gpu[plot]"

REFERENCE_BUDGET = 1024 ** 3  # M*N*K the reference executor runs by default in a few seconds
SWEEP_REFERENCE_LARGEST = 1024  # the largest square a sweep runs on the reference executor unless --device ref


def register(sub) -> None:
    p = sub.add_parser("gemm", help="matrix multiply on the best device, verified against NumPy, with its speed",
                       description=__doc__.splitlines()[0])
    for name in ("m", "n", "k"):
        p.add_argument(name, type=int, nargs="?", help=f"{name.upper()} (D is M x N, the inner dimension K)")
    p.add_argument("--dtype", default="f16:f32",
                   help=f"A:ACCUMULATOR[:OUTPUT], one of {', '.join(GEMM_DTYPES)} (comma-separated with --sweep)")
    p.add_argument("--layout", default="nn", choices=LAYOUTS, help="n: row-major, t: transposed (A then B)")
    p.add_argument("--device", default=None, help="a Vulkan device number or 'ref' (default: the best one)")
    p.add_argument("--check", dest="check", action="store_true", default=True,
                   help="verify against NumPy in float64 (the default)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the verification")
    p.add_argument("--repeat", type=int, default=5, help="timed runs (the median is printed)")
    p.add_argument("--retune", action="store_true", help="search tile configurations anew (progress on stderr)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--bias", action="store_true", help="add a bias row vector in the epilogue")
    p.add_argument("--activation", default="none", choices=ACTIVATIONS)
    p.add_argument("--sweep", action="store_true", help="sizes 128, 256, ... up to max(M, N, K), square")
    p.add_argument("--plot", default=None, metavar="OUT.png", help="with --sweep: TFLOP/s against size (matplotlib)")
    p.add_argument("--cache", action="store_true", help="print the autotune cache's path and entries, then exit")
    p.set_defaults(func=gemm_command)


def gemm_command(args) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        return _gemm(args)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as the CLI's one line (a broken cache is said once, then the run goes on)."""
    print(f"hydroplane: warning: {message}", file=sys.stderr, flush=True)


def _gemm(args) -> int:
    if args.cache:
        print(f"autotune cache: {cache_path()}")
        for label, table in (("cached", load_cache()), ("shipped", shipped_table())):
            for device, entries in table.items():
                for key, entry in entries.items():
                    config = config_from_dict(entry["config"]).describe()
                    print(f"  {label}  {device}  {key}: {config} ({_speed(entry.get('tflops'))})")
        return 0
    if None in (args.m, args.n, args.k):
        raise GemmError("hydroplane gemm needs M N K (e.g. hydroplane gemm 1024 1024 1024)")
    if args.plot and not args.sweep:
        raise GemmError("--plot draws a --sweep; add --sweep")
    if args.plot:
        _check_plot_path(args.plot, _require_matplotlib())  # before any work: a sweep takes minutes
    if args.repeat < 1:
        raise GemmError(f"--repeat must be at least 1, not {args.repeat}")
    dtypes = [parse_dtype(t) for t in args.dtype.split(",")]
    if len(dtypes) > 1 and not args.sweep:
        raise GemmError("several dtypes need --sweep")
    shape = (1, 1, 1) if args.sweep else (args.m, args.n, args.k)  # a sweep picks its own square sizes
    for dtype in dtypes:  # layout, alpha, beta, epilogue (and sizes): refused now, not per size of a sweep
        GemmProblem(*shape, dtype, args.layout, args.alpha, args.beta, args.bias, args.activation)
    device = device_option(args.device, GemmError)
    with GemmRunner.open(device, dtypes[0]) as runner:
        for dtype in dtypes:  # a device named that lacks a type: refused now, not after a search finds nothing
            lacking = None if runner.is_reference else missing_type(dtype, runner.executor.target)
            if lacking is not None:
                raise GemmError(f"--dtype {dtype}: {lacks_type_message(lacking, runner.executor.name, '--device ref')}")
        if args.sweep:
            return _sweep(runner, args, dtypes)
        problem = GemmProblem(args.m, args.n, args.k, dtypes[0], args.layout, args.alpha, args.beta, args.bias,
                              args.activation)
        note = runner.note
        if device is None and runner.is_reference and problem.m * problem.n * problem.k > REFERENCE_BUDGET:
            shrunk = _shrink(problem)
            note = (f"{note}; shrunk from {problem.m}x{problem.n}x{problem.k} to {shrunk.m}x{shrunk.n}x{shrunk.k} "
                    f"so the reference executor finishes in seconds (--device ref runs the size asked)")
            problem = shrunk
        result = _run(runner, problem, args)
        result.note = note.lstrip("; ")
        print(result.text())
        return 0 if result.ok else 1


def _speed(tflops) -> str:
    """An entry's recorded speed as the listing shows it (any JSON value: a number too large for a float too)."""
    if isinstance(tflops, bool) or not isinstance(tflops, int | float):
        return "speed not recorded"
    try:
        return f"{float(tflops):.3g} T/s"
    except OverflowError:
        return "speed not recorded"


def _shrink(problem: GemmProblem) -> GemmProblem:
    scale = (REFERENCE_BUDGET / (problem.m * problem.n * problem.k)) ** (1 / 3)
    return with_size(problem, *(max(1, int(d * scale)) for d in (problem.m, problem.n, problem.k)))


def _run(runner: GemmRunner, problem: GemmProblem, args):
    cached = runner.tuned_config(problem)
    if args.retune or (not runner.is_reference and _untuned(runner, problem)):
        runner.tune(problem, repeat=min(args.repeat, 5), progress=terminal_progress())
        cached = runner.tuned_config(problem)
    return runner.run(problem, cached, repeat=args.repeat, check=args.check)


def _untuned(runner: GemmRunner, problem: GemmProblem) -> bool:
    key = runner.cache_key(problem)
    return not any(key in table.get(runner.device_key(), {}) for table in (load_cache(), shipped_table()))


def _sweep(runner: GemmRunner, args, dtypes) -> int:
    largest = max(args.m, args.n, args.k)
    capped = ""
    if runner.is_reference and args.device is None and largest > SWEEP_REFERENCE_LARGEST:
        largest = SWEEP_REFERENCE_LARGEST
        why = f"{runner.note}; " if runner.note else ""
        capped = (f"  ({why}the sweep stops at {SWEEP_REFERENCE_LARGEST} so that the reference executor finishes in "
                  "a minute or so; --device ref sweeps up to the size asked)")
    sizes = [s for s in (128, 256, 512, 1024, 2048, 4096, 8192, 16384) if s <= largest] or [largest]
    rows, failed = [], False
    print(f"sweep on {runner.name}: {', '.join(str(d) for d in dtypes)}, layout {args.layout}")
    if capped:
        print(capped)
    for dtype in dtypes:
        for size in sizes:
            problem = GemmProblem(size, size, size, dtype, args.layout, args.alpha, args.beta, args.bias,
                                  args.activation)
            try:
                result = _run(runner, problem, args)
            except GemmError as err:
                print(f"  {dtype} {size}: {err}")
                continue
            failed |= not result.ok
            rows.append((str(dtype), size, result.tflops))
            print(f"  {str(dtype):10} {size:6}  {result.seconds * 1e3:10.3f} ms  {result.tflops:10.4g} T/s  "
                  f"{'ok' if result.ok else 'FAILED'}  {result.config.describe()}", flush=True)
    if args.plot:
        _plot(rows, args.plot, runner.name)
        print(f"plot: {args.plot}")
    return 1 if failed else 0


def _require_matplotlib():
    try:
        import matplotlib  # noqa: PLC0415 -- optional: only --plot needs it
    except ImportError:
        raise GemmError(f"--plot needs matplotlib, which is not installed: {PLOT_INSTALL} (or pip install "
                        "matplotlib)") from None
    return matplotlib


def _check_plot_path(path: str, matplotlib) -> None:
    """--plot's file: a name whose suffix matplotlib writes (it would add .png to one without and report nothing),
    in a folder that exists, not a folder itself."""
    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase  # noqa: PLC0415

    out = Path(path)
    kinds = FigureCanvasBase.get_supported_filetypes()
    if out.is_dir():
        raise GemmError(f"--plot {path}: a folder; name the image file (e.g. {out / 'gemm.png'})")
    if out.suffix.lstrip(".").lower() not in kinds:
        raise GemmError(f"--plot {path}: the file's suffix names the image format, one of {', '.join(sorted(kinds))}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise GemmError(f"--plot {path}: the folder {parent} does not exist or cannot be written")


def _plot(rows, path: str, device: str) -> None:
    matplotlib = _require_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dtype in dict.fromkeys(r[0] for r in rows):
        points = [(size, tflops) for d, size, tflops in rows if d == dtype]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=dtype)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOP/s (TOP/s for integers)")
    ax.set_title(f"hydroplane gemm on {device}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:  # checked before the sweep; a folder removed since, a full disk
        raise GemmError(f"--plot {path}: {exc}") from None
    finally:
        plt.close(fig)


if __name__ == "__main__":
    sys.exit("run it as `hydroplane gemm ...`")
