"""The GEMMs of benchmarks/lang_compile.py: the small one (ref_gemm.comp in the language) and the GLSL twin
of examples/language/gemm.py, at the tile device 0 reports, on ref and lavapipe against NumPy."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import REPO, run_tool
from lang_helpers import compiled, lavapipe_shapes, poisoned, run_everywhere

from hydroplane import vk
from hydroplane.launch import executors as launch

pytestmark = pytest.mark.vulkan
_spec = importlib.util.spec_from_file_location("lang_compile", REPO / "benchmarks" / "lang_compile.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_benchmark_gemm_computes_the_product():
    tile = lavapipe_shapes("f16", "f32")[0][0]
    subgroup = vk.devices()[0].subgroup_size
    size, subgroups = 8 * tile, 2
    spec = compiled(bench.gemm.kernel, **bench.constexprs(size, tile, subgroup, subgroups))
    rng = np.random.default_rng(51)
    a = (rng.integers(-8, 8, (size, size)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (size, size)) / 4).astype(np.float16)
    grid = (size // (2 * tile), size // (2 * tile * subgroups), 1)
    results = run_everywhere(spec, grid, {"a": a.ravel(), "b": b.ravel(), "d": poisoned(size * size, np.float32)},
                             subgroup_size=subgroup)
    for device, out in results.items():
        np.testing.assert_array_equal(out["d"].reshape(size, size), a.astype(np.float32) @ b.astype(np.float32),
                                      err_msg=str(device))


def test_the_glsl_twin_of_the_example_gemm_computes_the_same(glslang, tmp_path):
    """benchmarks/lang_gemm.comp (what the compile benchmark gives glslang) is the same kernel as
    examples/language/gemm.py: both run on ref and lavapipe on the same inputs and equal NumPy."""
    tile = lavapipe_shapes("f16", "f32")[0][0]
    subgroup = vk.devices()[0].subgroup_size
    size = 64
    out = tmp_path / "gemm.spv"
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", f"-DTILE={tile}", f"-DSG={subgroup}", "-DWM=2", "-DWN=2",
              "-DRELU=1", f"-DM_TOTAL={size}", f"-DN_TOTAL={size}", f"-DK_TOTAL={size}",
              str(REPO / "benchmarks" / "lang_gemm.comp"), "-o", str(out)])
    words = out.read_bytes()
    rng = np.random.default_rng(52)
    a = (rng.integers(-8, 8, (size, size)) / 8).astype(np.float16)
    b = (rng.integers(-8, 8, (size, size)) / 8).astype(np.float16)
    c = (rng.integers(-8, 8, (size, size)) / 4).astype(np.float32)
    bias = (rng.integers(-8, 8, size) / 4).astype(np.float32)
    block = 2 * 2 * tile
    expected = np.maximum(0.5 * (a.astype(np.float32) @ b.astype(np.float32)) + 2.0 * c + bias, 0)
    for device in ("ref", 0):
        result = launch.run(words, (size // block, size // block, 1),
                            {0: a.ravel(), 1: b.ravel(), 2: c.ravel(), 3: bias, 4: poisoned(size * size, np.float32)},
                            push=np.array([0.5, 2.0], np.float32), device=device,
                            subgroup_size=subgroup if device == "ref" else None)
        np.testing.assert_array_equal(result[4].reshape(size, size), expected.astype(np.float32), err_msg=str(device))
