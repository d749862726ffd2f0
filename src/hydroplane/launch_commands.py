"""`hydroplane run MODULE.spv --grid X,Y,Z --buf B=FILE.npy ... --out B=FILE.npy ...`: run a kernel once.

--buf gives a binding's initial contents (outputs too, so size and dtype are known; descriptor
set 0), --out writes a binding back after the run, --spec ID=VALUE sets specialization constants,
--push FILE.npy the push-constant bytes, --device ref (default) or N picks the executor,
--collect lists every diagnostic of the reference executor instead of stopping at the first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hydroplane.launch import LaunchError, RawBytes, get_executor, run


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
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise LaunchError(f"{what}: {path} does not exist") from None
    except (ValueError, OSError) as exc:
        raise LaunchError(f"{what}: {path} is not a .npy array ({exc})") from None


def _cmd_run(args) -> int:
    try:
        words = Path(args.module).read_bytes()
    except OSError as exc:
        raise LaunchError(f"cannot read {args.module}: {exc.strerror}") from None
    buffers = {}
    for binding, path in args.buf:
        if binding in buffers:
            raise LaunchError(f"binding {binding} is given twice with --buf")
        buffers[binding] = _load_npy(path, f"--buf {binding}")
    for binding in args.raw:
        if binding not in buffers:
            raise LaunchError(f"--raw {binding}: binding {binding} has no --buf")
        buffers[binding] = RawBytes(buffers[binding])
    for binding, _ in args.out:
        if binding not in buffers:
            raise LaunchError(f"--out {binding}: binding {binding} has no --buf (its size and dtype are unknown)")
    push = _load_npy(args.push, "--push") if args.push else None
    spec = dict(args.spec)
    executor = None
    if args.collect:
        if args.device != "ref":
            raise LaunchError("--collect needs --device ref (diagnostics are the reference executor's)")
        executor = get_executor("ref", diagnostics="collect", subgroup_size=args.subgroup_size)
    out = run(words, args.grid, buffers, spec=spec, push=push, device=args.device,
              subgroup_size=args.subgroup_size, entry=args.entry, executor=executor)
    if executor is not None:
        for d in executor.last_report:
            print(f"hydroplane: {d}", file=sys.stderr)
        executor.close()
    for binding, path in args.out:
        np.save(path, out[binding])
    return 1 if executor is not None and executor.last_report else 0


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a SPIR-V compute module once (reference executor or a Vulkan device)",
                              description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("module", help="SPIR-V binary (.spv)")
    p.add_argument("--grid", type=_grid, default=(1, 1, 1), help="workgroups X[,Y[,Z]] (default 1,1,1)")
    p.add_argument("--buf", type=_binding_file, action="append", default=[], metavar="BINDING=FILE.npy",
                   help="initial contents of a set-0 binding")
    p.add_argument("--out", type=_binding_file, action="append", default=[], metavar="BINDING=FILE.npy",
                   help="write a binding back after the run")
    p.add_argument("--raw", type=int, action="append", default=[], metavar="BINDING",
                   help="take that binding's --buf as raw bytes: no check of its dtype against the declared type")
    p.add_argument("--spec", type=_spec_value, action="append", default=[], metavar="ID=VALUE",
                   help="specialization constant")
    p.add_argument("--push", metavar="FILE.npy", help="push-constant bytes")
    p.add_argument("--device", type=_device, default="ref", help="'ref' (default) or a Vulkan device number")
    p.add_argument("--subgroup-size", type=int, default=None, help="subgroup size (8, 16, 32, 64)")
    p.add_argument("--entry", default="main", help="entry point name (default main)")
    p.add_argument("--collect", action="store_true",
                   help="reference executor: report every diagnostic (out-of-bounds, races, ...) and finish "
                        "the run instead of stopping at the first; exit status 1 when there were any")
    p.set_defaults(func=_cmd_run)
