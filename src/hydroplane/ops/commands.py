"""The ops layer's commands (`hydroplane gemm`, ...): each op keeps its command in its own module."""

from hydroplane.ops import attention_command, gemm_command


def register(subparsers) -> None:
    gemm_command.register(subparsers)
    attention_command.register(subparsers)
