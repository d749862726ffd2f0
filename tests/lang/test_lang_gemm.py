"""benchmarks/lang_compile.py's GEMM (ref_gemm.comp in the language): 2x2 tiles per subgroup, several
subgroups per workgroup, at the tile device 0 reports, on ref and lavapipe against NumPy."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import REPO
from hydroplane import vk
from lang_helpers import compiled, lavapipe_shapes, poisoned, run_everywhere

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
