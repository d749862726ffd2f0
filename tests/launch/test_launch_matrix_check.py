"""The launch layer refuses cooperative-matrix types a device does not report, before Vulkan sees them.

Building a pipeline with a matrix type the driver does not list is undefined behaviour (lavapipe
leaves a 4x4 reduction result unwritten, and can crash on shapes it does not handle); hydroplane
answers with an error that names the types. Lavapipe reports 8x8x8 KHR tiles, NV2 flexible
dimensions in multiples of 8, and no bfloat16 at all.
"""

import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO

from hydroplane.launch import executors as launch
from hydroplane.spirv import decode, reflect
from hydroplane.spirv.lower import check_matrices
from hydroplane.spirv.samples import coop_matmul_tile, coop_reduce_tile
from hydroplane.spirv.target import UnsupportedOnTarget


def test_reflect_names_matrix_types_and_muladds():
    iface = reflect(coop_matmul_tile(16, 8, 16, a_type="f16", c_type="f32"))
    texts = {str(t) for t in iface.coop_matrix_types}
    assert texts == {"coopmat<f16, Subgroup, 16x16, A>", "coopmat<f16, Subgroup, 16x8, B>",
                     "coopmat<f32, Subgroup, 16x8, Accumulator>"}
    (muladd,) = iface.coop_muladds
    assert str(muladd) == "MulAdd f16*f16+f32->f32 16x8x16 (Subgroup)"
    nv = reflect(coop_matmul_tile(16, 16, 16, a_type="f16", c_type="f16", family="nv"))
    assert {t.family for t in nv.coop_matrix_types} == {"NV"} and nv.coop_muladds == ()


@pytest.fixture(scope="module")
def lavapipe():
    ex = launch.get_executor(0)
    yield ex
    ex.close()


def test_unoffered_types_are_refused_by_name(lavapipe):
    # A 2x2 reduction of an 8x8 tile gives a 4x4 accumulator: not a multiple of lavapipe's 8x8.
    with pytest.raises(UnsupportedOnTarget) as err:
        lavapipe.kernel(coop_reduce_tile(8, 8, reduce="2x2", local_size=8))
    assert err.value.missing == ("coopmat<f32, Subgroup, 4x4, Accumulator>",)
    assert "does not offer" in str(err.value)
    assert not any(s.a == "bf16" for s in lavapipe.info.coop_khr)
    with pytest.raises(UnsupportedOnTarget) as err:
        lavapipe.kernel(coop_matmul_tile(8, 8, 8, a_type="bf16", c_type="f32"))
    assert "coopmat<bf16, Subgroup, 8x8, A>" in err.value.missing
    assert "MulAdd bf16*bf16+f32->f32 8x8x8 (Subgroup)" in err.value.missing


def test_flexible_dimensions_count_as_offered(lavapipe):
    assert any(s.granularity and (s.m, s.n, s.k) == (8, 8, 8) for s in lavapipe.info.coop_nv2_flexible)
    check_matrices(decode(coop_matmul_tile(16, 16, 16, a_type="f16", c_type="f32")), lavapipe.target)


def test_offered_shape_runs(lavapipe):
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, (8, 8)).astype(np.float16)
    b = rng.integers(-3, 4, (8, 8)).astype(np.float16)
    c = rng.standard_normal((8, 8)).astype(np.float32)
    out = launch.run(coop_matmul_tile(8, 8, 8, a_type="f16", c_type="f32"), grid=(1, 1, 1),
                     buffers={0: a, 1: b, 2: c, 3: np.full((8, 8), np.nan, np.float32)}, device=0)
    np.testing.assert_allclose(out[3], a.astype(np.float32) @ b.astype(np.float32) + c, rtol=1e-6)


def test_run_command_reports_unoffered_shape_without_crashing(tmp_path):
    module = tmp_path / "tile_bf16.spv"
    module.write_bytes(coop_matmul_tile(8, 8, 8, a_type="bf16", c_type="f32").tobytes())
    bufs = []
    for binding, (shape, dtype) in enumerate([((64,), np.uint16)] * 2 + [((64,), np.float32)] * 2):
        path = tmp_path / f"b{binding}.npy"
        np.save(path, np.ones(shape, dtype))
        bufs += ["--buf", f"{binding}={path}"] + (["--raw", str(binding)] if dtype == np.uint16 else [])
    proc = subprocess.run([sys.executable, "-m", "hydroplane", "run", str(module), "--grid", "1,1,1", *bufs,
                           "--device", "0"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("hydroplane: error:") and "coopmat<bf16, Subgroup, 8x8, A>" in proc.stderr
    assert "Traceback" not in proc.stderr
