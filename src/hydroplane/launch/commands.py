"""`hydroplane run MODULE.spv --grid X,Y,Z --buf B=FILE.npy ... --out B=FILE.npy ...`: run a kernel once.

--buf gives a binding's initial contents (descriptor set 0; its dtype must be the binding's declared
element type, or --raw B takes it as bytes), --out B=FILE.npy writes a binding back after the run,
--out B=SHAPE:DTYPE allocates it zero-filled instead (printed, or written with B=FILE.npy:SHAPE:DTYPE),
--spec ID=VALUE sets specialization constants (packed by their declared types), --push FILE.npy the
push-constant bytes, --device ref (default) or N picks the executor, --collect lists every diagnostic
of the reference executor instead of stopping at the first, --timeout S bounds the run's wall clock on
either executor, --max-steps N the reference executor's step budget. Every check (bindings, dtypes, push
size, grid, spec values, --out destinations, and on a device its limits and spirv-val) runs before the
kernel does; a Vulkan device runs with robust buffer access. A long reference run shows its progress on a
terminal, and Ctrl-C stops it (exit status 130).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from hydroplane.launch.checks import check_output_path
from hydroplane.launch.executors import LaunchError, RawBytes, get_executor, run, terminal_progress
from hydroplane.spirv.commands import file_kind, read_module
from hydroplane.spirv.compiled import compile_kernel


def _grid(text: str) -> tuple[int, int, int]:
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid {text!r} is not X[,Y[,Z]] integers") from None
    if not 1 <= len(parts) <= 3 or any(p < 0 for p in parts):
        raise argparse.ArgumentTypeError(f"grid {text!r} is not X[,Y[,Z]] non-negative integers")
    return tuple(parts + [1] * (3 - len(parts)))


def _binding_file(text: str) -> tuple[int, str]:
    binding, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not BINDING=FILE")
    try:
        return int(binding), path
    except ValueError:
        raise argparse.ArgumentTypeError(f"binding {binding!r} in {text!r} is not an integer") from None


def _spec_value(text: str) -> tuple[int, float | int]:
    ident, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not ID=VALUE")
    try:
        key = int(ident)
    except ValueError:
        raise argparse.ArgumentTypeError(f"spec constant id {ident!r} is not an integer") from None
    v = value.strip().lower()
    if v in ("true", "false"):
        return key, v == "true"
    try:
        return key, int(value, 0)
    except ValueError:
        pass
    try:
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"spec constant value {value!r} is not a number or true/false") from None


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: the timeout must be a positive, finite number of seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number")
    return value


def _device(text: str) -> str | int:
    if text == "ref":
        return "ref"
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"device {text!r} is not 'ref' or a device number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"device {n} is negative")
    return n


def _load_npy(path: str, what: str) -> np.ndarray:
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise LaunchError(f"{what}: {path} does not exist") from None
    except IsADirectoryError:
        raise LaunchError(f"{what}: {path} is a folder, not a .npy file") from None
    except (ValueError, OSError, EOFError) as exc:
        kind = file_kind(Path(path).read_bytes()[:65536]) if Path(path).is_file() else "other"
        hint = {"binary": "it is a SPIR-V binary", "assembly": "it is SPIR-V assembly text",
                "glsl": "it is GLSL source"}.get(kind, str(exc) or type(exc).__name__)
        raise LaunchError(f"{what}: {path} is not a .npy array ({hint}); save one with numpy.save") from None
    if not isinstance(data, np.ndarray):
        raise LaunchError(f"{what}: {path} is a .npz archive, not a .npy array")
    return data


@dataclass(frozen=True)
class OutputRequest:
    """One --out: write binding `binding` to `path` (None: print it); allocate shape/dtype when given."""

    binding: int
    path: str | None
    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None


def _shape_and_dtype(shape_text: str, dtype_text: str) -> tuple[tuple[int, ...], np.dtype] | None:
    try:
        shape = tuple(int(n) for n in re.split(r"[x,]", shape_text))
        dtype = np.dtype(_DTYPE_ALIASES.get(dtype_text, dtype_text))
    except (ValueError, TypeError):
        return None
    if any(n < 1 for n in shape):
        return None
    return shape, dtype


_DTYPE_ALIASES = {"f16": "float16", "f32": "float32", "f64": "float64", "bf16": ml_dtypes.bfloat16,
                  "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                  "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


def _output(text: str) -> OutputRequest:
    """BINDING=FILE.npy, BINDING=SHAPE:DTYPE (allocate, print) or BINDING=FILE.npy:SHAPE:DTYPE (allocate, write)."""
    binding_text, sep, rest = text.partition("=")
    if not sep or not rest:
        raise argparse.ArgumentTypeError(f"{text!r} is not BINDING=FILE.npy, BINDING=SHAPE:DTYPE or "
                                         "BINDING=FILE.npy:SHAPE:DTYPE")
    try:
        binding = int(binding_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"binding {binding_text!r} in {text!r} is not an integer") from None
    parts = rest.rsplit(":", 2)
    if len(parts) >= 2:
        allocation = _shape_and_dtype(parts[-2], parts[-1])
        if allocation is None:
            raise argparse.ArgumentTypeError(f"{rest!r}: SHAPE:DTYPE wants sizes like 64 or 8x8 and a NumPy dtype "
                                             "(float32, f16, u32, ...)")
        path = parts[0] if len(parts) == 3 else None
        return OutputRequest(binding, path, *allocation)
    return OutputRequest(binding, rest)


def _cmd_run(args) -> int:
    words = read_module(args.module)
    buffers = {}
    for binding, path in args.buf:
        if binding in buffers:
            raise LaunchError(f"binding {binding} is given twice with --buf")
        buffers[binding] = _load_npy(path, f"--buf {binding}")
    for request in args.out:
        if request.shape is not None:
            if request.binding in buffers:
                raise LaunchError(f"--out {request.binding}: binding {request.binding} has a --buf already; "
                                  "give SHAPE:DTYPE only for a binding without one")
            buffers[request.binding] = np.zeros(request.shape, request.dtype)
        elif request.binding not in buffers:
            raise LaunchError(f"--out {request.binding}: binding {request.binding} has no --buf (its size and dtype "
                              f"are unknown); give --out {request.binding}={request.path}:SHAPE:DTYPE to allocate it")
        if request.path is not None:
            check_output_path(request.path, f"--out {request.binding}")
    for binding in args.raw:
        if binding not in buffers:
            raise LaunchError(f"--raw {binding}: binding {binding} has no --buf")
        buffers[binding] = RawBytes(buffers[binding])
    push = _push_argument(args.push)
    spec = dict(args.spec)
    if args.collect and args.device != "ref":
        raise LaunchError("--collect needs --device ref (diagnostics are the reference executor's)")
    if args.max_steps is not None and args.device != "ref":
        raise LaunchError("--max-steps is the reference executor's step budget; it needs --device ref")
    if args.device == "ref":
        executor = get_executor("ref", diagnostics="collect" if args.collect else None,
                                subgroup_size=args.subgroup_size, progress=terminal_progress(),
                                max_blocks=args.max_steps, timeout=args.timeout)
    else:
        executor = get_executor(args.device, timeout=args.timeout)
    try:
        compiled = compile_kernel(words, executor.target, args.entry)  # lowered for the device
        if args.explain:
            changes = compiled.changes or ("nothing: the module runs as it is",)
            print(f"hydroplane: lowered for {executor.target.description or executor.target.name}:", file=sys.stderr)
            for change in changes:
                print(f"  {change}", file=sys.stderr)
        out = run(compiled, args.grid, buffers, spec=spec, push=push, subgroup_size=args.subgroup_size,
                  entry=args.entry, executor=executor)
        report = list(getattr(executor, "last_report", ()) if args.collect else ())
    finally:
        executor.close()
    for d in report:
        print(f"hydroplane: {d}", file=sys.stderr)
    for request in args.out:
        result = out[request.binding]
        if request.path is None:
            print(f"binding {request.binding} ({' x '.join(map(str, result.shape))} {result.dtype}):")
            print(np.array2string(result, threshold=result.size + 1, max_line_width=120))
        else:
            try:
                np.save(request.path, result)
            except OSError as exc:
                raise LaunchError(f"--out {request.binding}: cannot write {request.path}: {exc.strerror}") from None
    return 1 if report else 0


def _push_argument(text: str | None):
    """--push: FILE.npy (the block's bytes) or comma-separated numbers (packed by the block's member types)."""
    if not text:
        return None
    if text.endswith(".npy"):
        return _load_npy(text, "--push")
    values: list[int | float] = []
    for item in text.split(","):
        try:
            values.append(int(item, 0))
        except ValueError:
            try:
                values.append(float(item))
            except ValueError:
                raise LaunchError(f"--push {text!r}: {item!r} is not a number (give FILE.npy or numbers "
                                  "like 64,0.5)") from None
    return values


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a SPIR-V compute module once (reference executor or a Vulkan device)",
                              description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("module", help="SPIR-V binary (.spv)")
    p.add_argument("--grid", type=_grid, default=(1, 1, 1), help="workgroups X[,Y[,Z]] (default 1,1,1)")
    p.add_argument("--buf", type=_binding_file, action="append", default=[], metavar="BINDING=FILE.npy",
                   help="initial contents of a set-0 binding")
    p.add_argument("--out", type=_output, action="append", default=[],
                   metavar="BINDING=FILE.npy|SHAPE:DTYPE|FILE.npy:SHAPE:DTYPE",
                   help="write a binding back after the run to FILE.npy (checked writable before the run); with "
                        "SHAPE:DTYPE (e.g. 64:float32, 8x8:f16) the binding is allocated zero-filled, no --buf "
                        "needed, and printed when no FILE is given")
    p.add_argument("--raw", type=int, action="append", default=[], metavar="BINDING",
                   help="take that binding's --buf as raw bytes: no check of its dtype against the declared type")
    p.add_argument("--spec", type=_spec_value, action="append", default=[], metavar="ID=VALUE",
                   help="specialization constant")
    p.add_argument("--push", metavar="FILE.npy|V,V,...",
                   help="push constants: the block's bytes (.npy), or values in member order packed by their "
                   "declared types (e.g. 64,0.5)")
    p.add_argument("--device", type=_device, default="ref", help="'ref' (default) or a Vulkan device number")
    p.add_argument("--subgroup-size", type=int, default=None, help="subgroup size (8, 16, 32, 64)")
    p.add_argument("--entry", default="main", help="entry point name (default main)")
    p.add_argument("--timeout", type=_positive_seconds, default=None, metavar="S",
                   help="stop a run that takes longer than S seconds (both executors; a Vulkan device's default "
                        "is 60 s, the reference executor has none besides its step budget)")
    p.add_argument("--max-steps", type=_positive_int, default=None, metavar="N",
                   help="reference executor: the step budget, in block executions per batch of workgroups "
                        "(default 262144); raise it for long loops")
    p.add_argument("--explain", action="store_true",
                   help="print what lowering for the device changed (e.g. EXT maintenance1 -> NV2) on stderr")
    p.add_argument("--collect", action="store_true",
                   help="reference executor: report every diagnostic (out-of-bounds, races, ...) and finish "
                        "the run instead of stopping at the first; exit status 1 when there were any")
    p.set_defaults(func=_cmd_run)
