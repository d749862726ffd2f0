"""The benchmark's tiled cooperative-matrix GEMM (benchmarks/ref_gemm.comp) as a test: exact on
integer-valued f16 inputs on the reference executor and on lavapipe. The issue's 3 s "done when" bound is
measured (docs/ref_coopmat.md), not asserted: the test bounds the work instead (one batch of every
invocation, a fixed number of instruction steps)."""

from pathlib import Path

import numpy as np
import pytest
from cts.compile import compile_glsl

from hydroplane.ref import Executor

SOURCE = (Path(__file__).resolve().parents[2] / "benchmarks" / "ref_gemm.comp").read_text()
SIZE, SUBGROUPS, TILE = 256, 4, 16


DEVICE_SIZE = 128  # lavapipe runs 16x16 tiles slowly; the reference executor also checks 256


def _inputs(seed, size=SIZE):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (size, size)).astype(np.float16)
    b = rng.integers(-3, 4, (size, size)).astype(np.float16)
    return a, b, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32)


def _grid(size=SIZE):
    return size // (2 * TILE), size // (2 * TILE * SUBGROUPS), 1


def test_gemm_on_reference_executor_is_exact_and_fast(glslang):
    words = compile_glsl(glslang, SOURCE, {"SG": 32, "SUBGROUPS": SUBGROUPS})
    a, b, want = _inputs(1)
    ex = Executor(subgroup_size=32)
    bufs = {0: ex.buffer(a), 1: ex.buffer(b), 2: ex.buffer(np.full((SIZE, SIZE), np.nan, np.float32))}
    kernel = ex.kernel(words)
    ex.dispatch(kernel, _grid(), bufs)
    np.testing.assert_array_equal(ex.read(bufs[2], np.float32, (SIZE, SIZE)), want)
    # what keeps it fast: every invocation in one batch, each instruction executed once for all (1312 steps)
    assert ex.last_stats["batches"] == 1 and ex.last_stats["instructions"] <= 2000, ex.last_stats


def test_gemm_reference_and_lavapipe_agree(glslang):
    from hydroplane.vk import Binding, Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr and d.cooperative_matrix_nv2]
    if not found:
        pytest.fail("no device with KHR + NV2 cooperative matrices (lavapipe); run through scripts/test")
    sg = found[0].subgroup_size
    words = compile_glsl(glslang, SOURCE, {"SG": sg, "SUBGROUPS": SUBGROUPS})
    size, spec = DEVICE_SIZE, {0: DEVICE_SIZE, 1: DEVICE_SIZE, 2: DEVICE_SIZE}
    a, b, want = _inputs(2, size)
    ex = Executor(subgroup_size=sg)
    bufs = {0: ex.buffer(a), 1: ex.buffer(b), 2: ex.buffer(np.full((size, size), np.nan, np.float32))}
    ex.dispatch(ex.kernel(words, spec=spec), _grid(size), bufs)
    ref = ex.read(bufs[2], np.float32, (size, size))
    with Device(found[0], enable_all=True) as dev:
        dbufs = {0: dev.buffer(a), 1: dev.buffer(b), 2: dev.buffer(np.full((size, size), np.nan, np.float32))}
        pipeline = dev.pipeline(words, [Binding(0, i) for i in range(3)], spec=spec)
        dev.dispatch(pipeline, _grid(size), dbufs)
        got = dbufs[2].read(np.float32, (size, size))
    np.testing.assert_array_equal(ref, want)
    np.testing.assert_array_equal(got, want)


def test_optimised_gemm_keeps_matrices_in_phis(glslang, tmp_path):
    """spirv-opt -O turns the accumulator variables into OpPhi of cooperative matrices."""
    import subprocess

    from conftest import require_tool

    from hydroplane.spirv import Op, decode

    words = compile_glsl(glslang, SOURCE, {"SG": 32, "SUBGROUPS": SUBGROUPS})
    src, out = tmp_path / "gemm.spv", tmp_path / "gemm_opt.spv"
    src.write_bytes(words)
    subprocess.run([require_tool("spirv-opt"), "-O", str(src), "-o", str(out)], check=True, capture_output=True)
    optimised = out.read_bytes()
    assert sum(i.opcode == Op.Phi for i in decode(optimised).instructions) >= 4
    a, b, want = _inputs(3)
    ex = Executor(subgroup_size=32)
    bufs = {0: ex.buffer(a), 1: ex.buffer(b), 2: ex.buffer(np.full((SIZE, SIZE), np.nan, np.float32))}
    ex.dispatch(ex.kernel(optimised), _grid(), bufs)
    np.testing.assert_array_equal(ex.read(bufs[2], np.float32, (SIZE, SIZE)), want)


@pytest.mark.parametrize("device", ["ref", "0"])
def test_gemm_through_the_cli(glslang, tmp_path, device):
    """`hydroplane run` with the GEMM kernel, on the reference executor and on Vulkan device 0."""
    import subprocess
    import sys

    size = DEVICE_SIZE
    sg = 32 if device == "ref" else 8  # lavapipe's subgroup size
    words = compile_glsl(glslang, SOURCE, {"SG": sg, "SUBGROUPS": SUBGROUPS})
    a, b, want = _inputs(4, size)
    module = tmp_path / "gemm.spv"
    module.write_bytes(words)
    for name, arr in (("a", a), ("b", b), ("d", np.full((size, size), np.nan, np.float32))):
        np.save(tmp_path / f"{name}.npy", arr)
    grid = ",".join(str(g) for g in _grid(size))
    argv = [sys.executable, "-m", "hydroplane", "run", str(module), "--grid", grid,
            "--buf", f"0={tmp_path / 'a.npy'}", "--buf", f"1={tmp_path / 'b.npy'}", "--buf", f"2={tmp_path / 'd.npy'}",
            "--out", f"2={tmp_path / 'out.npy'}", "--spec", f"0={size}", "--spec", f"1={size}", "--spec", f"2={size}",
            "--device", device] + (["--subgroup-size", str(sg)] if device == "ref" else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), want)
