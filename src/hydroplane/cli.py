"""The `hydroplane` command: one argparse tree; each layer contributes its subcommands.

A layer that offers commands has a `commands.py` with `register(subparsers)`; each
subcommand sets `func(args) -> int`. Errors derived from `HydroplaneError` print as one
line `hydroplane: error: ...` and exit 1; they never show a traceback. Ctrl-C prints
`hydroplane: interrupted` and exits 130 (128 + SIGINT), also without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from hydroplane import __version__
from hydroplane.errors import HydroplaneError

# (module, help) for each layer's command module; imported lazily so that a broken or
# slow layer does not stop the others' commands.
COMMAND_MODULES = (
    "hydroplane.spirv.commands",
    "hydroplane.isa.commands",
    "hydroplane.vk.commands",
    "hydroplane.launch.commands",
    "hydroplane.ops.commands",
    "hydroplane.models.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hydroplane",
        description="GPU kernels from Python through SPIR-V: tools for SPIR-V, Vulkan devices, "
        "the reference executor and the AMD ISA reference.",
    )
    parser.add_argument("--version", action="version", version=f"hydroplane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except HydroplaneError as exc:
        print(f"hydroplane: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # the host's memory (a size too large for this machine's arrays), not a bug
        print(f"hydroplane: error: out of host memory: {exc or 'an allocation failed'}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")  # clear a progress line
        print("hydroplane: interrupted", file=sys.stderr)
        return 130
