"""Validate a module with the Khronos validator (spirv-val).

The validator is found through HYDROPLANE_SPIRV_VAL, then PATH. A missing validator is
an error (`ValidatorNotFound`), never a silent pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from hydroplane.errors import HydroplaneError
from hydroplane.spirv.binary import as_words, to_bytes


class ValidationError(HydroplaneError):
    """spirv-val rejected the module; `message` is the validator's own text."""

    def __init__(self, message: str, env: str):
        self.message = message
        self.env = env
        super().__init__(f"spirv-val ({env}) rejected the module:\n{message}")


class ValidatorNotFound(HydroplaneError):
    """No spirv-val to run."""


def find_validator() -> str:
    """The spirv-val to run: $HYDROPLANE_SPIRV_VAL, else the one on PATH."""
    configured = os.environ.get("HYDROPLANE_SPIRV_VAL")
    if configured:
        if not (os.path.isfile(configured) and os.access(configured, os.X_OK)):
            raise ValidatorNotFound(f"HYDROPLANE_SPIRV_VAL={configured} is not an executable file")
        return configured
    found = shutil.which("spirv-val")
    if not found:
        raise ValidatorNotFound(
            "spirv-val not found: install spirv-tools (2026.4 or newer for cooperative-matrix "
            "extensions) or set HYDROPLANE_SPIRV_VAL"
        )
    return found


def validate(words, env: str = "vulkan1.3", extra_args: tuple[str, ...] = ()) -> None:
    """Run spirv-val on the module; raise ValidationError with its message when it fails."""
    binary = to_bytes(as_words(words))
    validator = find_validator()
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(binary)
        f.flush()
        try:
            proc = subprocess.run(
                [validator, "--target-env", env, *extra_args, f.name],
                capture_output=True, text=True, timeout=120,
            )
        except OSError as exc:
            raise ValidatorNotFound(f"cannot run {validator}: {exc}") from None
    if proc.returncode != 0:
        message = (proc.stderr + proc.stdout).strip().replace(f.name, "<module>")
        raise ValidationError(message or f"exit status {proc.returncode}", env)
