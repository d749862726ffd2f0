"""Helpers for the reference-executor tests: compile GLSL with glslangValidator, assemble SPIR-V text
with spirv-as, and run a kernel on the reference executor with poisoned outputs."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import require_tool

from hydroplane.spirv.enums import CooperativeMatrixUse as Use
from hydroplane.spirv.enums import Scope
from hydroplane.spirv.types import CoopMatrix, scalar_of_dtype

CACHE = Path(tempfile.gettempdir()) / "hydroplane-ref-tests"


def _cached(kind: str, text: str, compile_fn) -> bytes:
    CACHE.mkdir(exist_ok=True)
    key = hashlib.sha256((kind + text).encode()).hexdigest()[:24]
    out = CACHE / f"{key}.spv"
    if not out.exists():
        compile_fn(text, out)
    return out.read_bytes()


def glsl(source: str, stage: str = "comp", flags: tuple[str, ...] = ()) -> bytes:
    """SPIR-V words (bytes) of a GLSL compute shader, compiled for Vulkan 1.3 (extra glslang flags)."""
    tool = require_tool("glslangValidator")

    def compile_fn(text, out):
        src = out.with_suffix("." + stage)
        src.write_text(text)
        proc = subprocess.run([tool, "-V", "--target-env", "vulkan1.3", *flags, str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode:
            pytest.fail(f"glslangValidator failed:\n{proc.stdout}\n{proc.stderr}")

    return _cached("glsl" + " ".join(flags), source, compile_fn)


def spirv_text(source: str) -> bytes:
    """SPIR-V words (bytes) of spirv-as text (target env vulkan1.3)."""
    tool = require_tool("spirv-as")

    def compile_fn(text, out):
        src = out.with_suffix(".spvasm")
        src.write_text(text)
        proc = subprocess.run([tool, "--target-env", "vulkan1.3", str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode:
            pytest.fail(f"spirv-as failed:\n{proc.stdout}\n{proc.stderr}")

    return _cached("asm", source, compile_fn)


def poison(shape, dtype) -> np.ndarray:
    """An output buffer's initial contents: NaN for floats, a recognisable pattern for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name in ("bfloat16",):
        return np.full(shape, np.nan, dtype)
    return np.full(shape, 0x5A, np.uint8).view(dtype)[: int(np.prod(shape))].reshape(shape) \
        if dtype.itemsize == 1 else np.full(np.prod(shape) * dtype.itemsize, 0x5A, np.uint8).view(dtype).reshape(shape)


def run(words, inputs: dict, outputs: dict, grid=(1, 1, 1), spec=None, push=None, subgroup_size=32, **options):
    """Run on the reference executor; inputs {binding: array}, outputs {binding: (shape, dtype)}.

    Returns {binding: array} for the outputs, read back after the dispatch."""
    from hydroplane.ref import Executor

    ex = Executor(subgroup_size=subgroup_size, **options)
    bufs = {b: ex.buffer(a) for b, a in inputs.items()}
    for b, (shape, dtype) in outputs.items():
        bufs[b] = ex.buffer(poison(shape, dtype))
    kernel = ex.kernel(words, spec=spec)
    ex.dispatch(kernel, grid, bufs, push)
    return {b: ex.read(bufs[b], dtype, shape) for b, (shape, dtype) in outputs.items()}


def coop_type(dtype, rows: int, cols: int, use=Use.MatrixAccumulatorKHR, scope=Scope.Subgroup) -> CoopMatrix:
    """The cooperative-matrix type (hydroplane.spirv.types) of a NumPy component dtype."""
    return CoopMatrix(scalar_of_dtype(dtype), rows, cols, use, scope)
