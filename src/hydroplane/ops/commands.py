"""The ops layer's commands (`hydroplane gemm`, ...): each op keeps its command in its own module."""

from hydroplane.ops import gemm_command


def register(subparsers) -> None:
    gemm_command.register(subparsers)
