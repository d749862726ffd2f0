"""Compile GLSL compute shaders with glslangValidator once per session (cached by source and defines)."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import pytest

GLSL_DIR = Path(__file__).resolve().parent / "glsl"
_CACHE: dict[str, bytes] = {}


def glsl_source(name: str) -> str:
    return (GLSL_DIR / name).read_text()


def compile_glsl(glslang: str, source: str, defines: dict[str, object] | None = None,
                 target: str = "vulkan1.3") -> bytes:
    """SPIR-V bytes of a GLSL compute shader; a compile error fails the test with glslang's log."""
    flags = [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    key = hashlib.sha256("\0".join([source, target, *flags]).encode()).hexdigest()
    if key in _CACHE:
        return _CACHE[key]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "shader.comp"
        out = Path(tmp) / "shader.spv"
        src.write_text(source)
        proc = subprocess.run([glslang, "-V", "--target-env", target, *flags, str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            pytest.fail(f"glslangValidator failed ({' '.join(flags)}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        words = out.read_bytes()
    _CACHE[key] = words
    return words
