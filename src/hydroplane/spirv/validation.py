"""Validate a module with the Khronos validator (spirv-val).

The validator is found through HYDROPLANE_SPIRV_VAL, then PATH. A missing validator is
an error (`ValidatorNotFound`, saying where spirv-val comes from), never a silent pass. A
validator too old to parse the module (it reports an opcode or enumerant our grammar knows as
invalid, e.g. bookworm's 2023.1 on cooperative matrices) is `ValidatorTooOld`, naming its
version, instead of blaming the module.
"""

from __future__ import annotations

import functools
import os
import re

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import grammar
from hydroplane.spirv.binary import as_words, to_bytes

# SPIRV-Tools' binary parser: "Invalid opcode: 4456", "Invalid capability operand: 6022".
_UNKNOWN_WORD = re.compile(r"Invalid (opcode|([\w ]+?) operand): (\d+)")
NEWEST_NEEDED = "2026.4"  # the first spirv-tools that validates every extension hydroplane emits (EXT maintenance1)


class ValidationError(HydroplaneError):
    """spirv-val rejected the module; `message` is the validator's own text."""

    def __init__(self, message: str, env: str):
        self.message = message
        self.env = env
        super().__init__(f"spirv-val ({env}) rejected the module:\n{message}")


class ValidatorNotFound(HydroplaneError):
    """No spirv-val to run."""


class ValidatorTooOld(HydroplaneError):
    """spirv-val does not know an instruction or enumerant of the module (our grammar does)."""


@functools.lru_cache(maxsize=8)
def validator_version(validator: str) -> str:
    """The first line of `spirv-val --version` ('SPIRV-Tools v2026.4 ...'), or 'unknown version'."""
    import subprocess  # here, not at the top: a process whose modules' verdicts are on disk never runs spirv-val

    try:
        proc = subprocess.run([validator, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown version"
    first = (proc.stdout or proc.stderr).strip().splitlines()
    return first[0].strip() if first else "unknown version"


def _known_to_grammar(kind: str, value: int) -> str | None:
    """The grammar's name for an opcode or an enumerant of the kind spirv-val names ('capability', ...)."""
    try:
        if kind == "opcode":
            return f"instruction {grammar.instruction(value).name}"
        kind_name = "".join(word.capitalize() for word in kind.split())
        return f"{kind} {grammar.enumerant(kind_name, value).name}"
    except (grammar.GrammarError, KeyError, ValueError):
        return None


def too_old_error(validator: str, message: str) -> ValidatorTooOld | None:
    """A ValidatorTooOld when spirv-val's message says it cannot parse something our grammar knows."""
    for match in _UNKNOWN_WORD.finditer(message):
        kind = "opcode" if match.group(1) == "opcode" else match.group(2)
        known = _known_to_grammar(kind, int(match.group(3)))
        if known:
            return ValidatorTooOld(
                f"spirv-val ({validator}, {validator_version(validator)}) does not know {known} ({match.group(3)}) "
                f"that the module uses: the validator is too old, not the module wrong; install spirv-tools "
                f"{NEWEST_NEEDED} or newer, or set HYDROPLANE_SPIRV_VAL to one")
    return None


# Where spirv-val comes from (no host names: the package managers' own defaults know where to fetch it).
GET_SPIRV_VAL = (f"it comes with the spirv-tools package, {NEWEST_NEEDED} or newer for the cooperative-matrix "
                 "extensions (apt install spirv-tools, dnf install spirv-tools, brew install spirv-tools, "
                 "conda install spirv-tools; also in the Vulkan SDK)")


def on_path(name: str) -> str | None:
    """`shutil.which(name)` on POSIX: the first executable file `name` in a folder of $PATH. Written out because
    importing shutil loads bz2, lzma and zstd (about 3 ms), and every launching process looks spirv-val up."""
    path = os.environ.get("PATH")
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    if not path:
        return None
    for folder in dict.fromkeys(os.path.normcase(folder) for folder in path.split(os.pathsep)):
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate) and os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def find_validator() -> str:
    """The spirv-val to run: $HYDROPLANE_SPIRV_VAL, else the one on PATH."""
    configured = os.environ.get("HYDROPLANE_SPIRV_VAL")
    if configured:
        if not (os.path.isfile(configured) and os.access(configured, os.X_OK)):
            raise ValidatorNotFound(f"HYDROPLANE_SPIRV_VAL={configured} is not an executable file: point it at a "
                                    f"spirv-val ({GET_SPIRV_VAL}), or unset it to use the one on PATH")
        return configured
    found = on_path("spirv-val")
    if not found:
        raise ValidatorNotFound(f"spirv-val not found on PATH: {GET_SPIRV_VAL}; or set HYDROPLANE_SPIRV_VAL to a "
                                "spirv-val executable. Only validation needs it: kernels still launch without it "
                                "(unvalidated, said once)")
    return found


def validate(words, env: str = "vulkan1.3", extra_args: tuple[str, ...] = ()) -> None:
    """Run spirv-val on the module; raise ValidationError with its message when it fails."""
    import subprocess  # here, not at the top: a process whose modules' verdicts are on disk never runs spirv-val
    import tempfile

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
        old = too_old_error(validator, message)
        if old is not None:
            raise old
        raise ValidationError(message or f"exit status {proc.returncode}", env)
