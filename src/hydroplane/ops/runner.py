"""What every op's runner shares: one executor (a Vulkan device or the reference executor), its name, closing it.

`DeviceRunner` is the base of `ops.gemm.GemmRunner` and `ops.attention.AttentionRunner`; `runner_executor(device)`
makes the executor an op's runner times on; `device_option(text, error)` reads a command's --device.
"""

from __future__ import annotations

from hydroplane.launch.runtime import runtime


def runner_executor(device):
    """The executor an op's runner works on: the device runtime's (one per device for the process; on a Vulkan
    device without robust buffer access: the library's kernels keep every access inside their buffers, and robust
    access cost the GEMM 2-3x on the H200, docs/robustness.md)."""
    return runtime(device).executor


def device_option(text: str | None, error: type[Exception]):
    """A command's --device: None (the best device), "ref", or a Vulkan device number; `error` names a bad one."""
    if text is None or text == "ref":
        return text
    try:
        return int(text)
    except ValueError:
        raise error(f"--device is a Vulkan device number or 'ref', not {text!r}") from None


def _registered(executor) -> bool:
    """Whether the executor is a device runtime's own (the registry's: it lives as long as the process)."""
    rt = getattr(executor, "_hp_runtime", None)
    return rt is not None and rt.owns_executor


class DeviceRunner:
    """One executor and the device it is on ("ref" or a Vulkan device number); `note` says why it was chosen.

    `owns_executor=False` for an executor shared with others (`executors.shared_executor`, whose device arrays bind
    there): close() then leaves it open."""

    def __init__(self, device, executor, note: str = "", *, owns_executor: bool = True):
        self.device = device
        self.executor = executor
        # a device runtime's executor is the process's: a runner never closes it
        self.owns_executor = owns_executor and not _registered(executor)
        self.target = executor.target
        self.note = note

    @property
    def name(self) -> str:
        return "ref (the reference executor)" if self.device == "ref" else self.executor.name

    @property
    def is_reference(self) -> bool:
        return self.device == "ref"

    def close(self) -> None:
        if self.owns_executor:
            self.executor.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
