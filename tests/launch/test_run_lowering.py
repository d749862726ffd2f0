"""`hydroplane run` lowers for the chosen device: a glslang-compiled EXT maintenance1 module (all four
operations) runs as it is on the reference executor and, with plain `--device 0`, lowered to NV2 on
lavapipe (which lacks EXT); both agree with NumPy. `--explain` says what lowering changed."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, run_tool

SOURCE = REPO / "tests/data/ext_maint1_f16.comp"
LANES = 8  # lavapipe's subgroup size; the reference executor is told the same


@pytest.fixture(scope="module")
def module_file(tmp_path_factory, glslang):
    d = tmp_path_factory.mktemp("ext")
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(SOURCE), "-o", str(d / "ext.spv")])
    return d / "ext.spv"


def _run(module_file, tmp_path, device: str, a: np.ndarray, *extra: str) -> subprocess.CompletedProcess:
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "out.npy", np.full(192, np.nan, np.float16))  # poisoned
    np.save(tmp_path / "coords.npy", np.full((LANES * 8, 2), 0xDEAD, np.uint32))
    args = [sys.executable, "-m", "hydroplane", "run", str(module_file), "--device", device,
            "--spec", f"0={LANES}", "--buf", f"0={tmp_path / 'a.npy'}", "--buf", f"1={tmp_path / 'out.npy'}",
            "--buf", f"2={tmp_path / 'coords.npy'}", "--raw", "2", "--out", f"1={tmp_path / 'out.npy'}",
            "--out", f"2={tmp_path / 'coords.npy'}", *extra]
    if device == "ref":
        args += ["--subgroup-size", str(LANES)]
    return subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
                          timeout=300)


def _expected(a: np.ndarray) -> np.ndarray:
    m = a.reshape(8, 8).astype(np.float16)
    rows = np.repeat(m.astype(np.float32).sum(axis=1, keepdims=True), 8, axis=1)
    placed = m.astype(np.float32) * 2 + (np.arange(8)[:, None] * 8 + np.arange(8)[None, :])
    return np.concatenate([rows.reshape(-1), placed.reshape(-1), m.T.astype(np.float32).reshape(-1)])


@pytest.mark.vulkan
def test_ext_module_runs_lowered_on_lavapipe_and_equals_ref(module_file, tmp_path):
    rng = np.random.default_rng()
    a = rng.integers(-8, 9, 64).astype(np.float16)  # small integers: every sum is exact in f16
    results = {}
    for device in ("ref", "0"):
        folder = tmp_path / device
        folder.mkdir()
        proc = _run(module_file, folder, device, a, "--explain")
        assert proc.returncode == 0, proc.stderr
        results[device] = (np.load(folder / "out.npy"), np.load(folder / "coords.npy"))
        explained = proc.stderr
        if device == "0":
            assert "SPV_EXT_cooperative_matrix_maintenance1 -> SPV_NV_cooperative_matrix2" in explained
            assert "GetCoordinate emulated" in explained and "OpCooperativeMatrixTransposeNV" in explained
        else:
            assert "nothing: the module runs as it is" in explained
    np.testing.assert_array_equal(results["ref"][0], results["0"][0])
    np.testing.assert_array_equal(results["ref"][0].astype(np.float32), _expected(a))
    for device, (_, coords) in results.items():
        # every element's coordinate exactly once, whatever order the device keeps them in
        seen = sorted(map(tuple, coords.reshape(-1, 2).tolist()))
        assert seen == [(r, c) for r in range(8) for c in range(8)], device
