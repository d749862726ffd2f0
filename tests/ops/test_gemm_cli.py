"""`hydroplane gemm` and the autotune cache: output, exit status, shrinking on ref, the sweep's plot, tuning
(every candidate verified), the XDG cache reused, the shipped table read."""

from __future__ import annotations

import json

import pytest

from hydroplane import cli
from hydroplane.kernels.gemm import GemmConfig, GemmProblem, parse_dtype
from hydroplane.launch import executors as launch
from hydroplane.ops import gemm_command as kernels_cli
from hydroplane.ops.gemm import GemmRunner, cache_path, load_cache, shipped_table


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "hydroplane" / "gemm.json"


def test_gemm_on_ref_prints_a_verified_result(capsys):
    assert cli.main(["gemm", "33", "7", "45", "--device", "ref", "--beta", "1", "--bias", "--activation", "relu",
                     "--layout", "tn", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "gemm 33x7x45 f16:f32 tn (alpha=1, beta=1, +bias, relu) on ref (the reference executor)" in out
    assert "(wall time, median of 2)" in out and "TFLOP/s" in out
    assert "check   ok: ||D-R||/||R|| = 0 (bound 0.001) against NumPy (float64)" in out
    assert "config  coop 16x16x16 tiles" in out


def test_integer_gemm_is_exact(capsys):
    assert cli.main(["gemm", "20", "30", "40", "--device", "ref", "--dtype", "u8:u32", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "check   ok: exact against NumPy" in out and "TOP/s" in out


def test_a_wrong_result_exits_1(capsys, monkeypatch):
    monkeypatch.setattr(kernels_cli, "_run", _broken_run)
    assert cli.main(["gemm", "8", "8", "8", "--device", "ref"]) == 1
    assert "check   FAILED" in capsys.readouterr().out


def _broken_run(runner, problem, args):
    runner.executor.dispatch = lambda *a, **k: None  # D keeps its poison
    return runner.run(problem, GemmConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(1, 1), stages=1))


def test_bad_arguments_are_named(capsys):
    assert cli.main(["gemm", "8", "8", "8", "--dtype", "f16:s32", "--device", "ref"]) == 1
    assert "integer inputs take an integer accumulator" in capsys.readouterr().err
    assert cli.main(["gemm", "0", "8", "8", "--device", "ref"]) == 1
    assert "GEMM size M must be a positive int" in capsys.readouterr().err
    assert cli.main(["gemm", "8", "8", "8", "--device", "ref", "--plot", "x.png"]) == 1
    assert "--plot draws a --sweep" in capsys.readouterr().err


def test_without_a_device_ref_shrinks_a_large_problem(capsys, monkeypatch):
    monkeypatch.setattr(kernels_cli, "REFERENCE_BUDGET", 64 ** 3)
    monkeypatch.setattr(GemmRunner, "open", classmethod(_ref_runner))
    assert cli.main(["gemm", "128", "256", "64", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "shrunk from 128x256x64 to 64x128x32" in out
    assert "no Vulkan device (test); ran on the reference executor" in out


def _ref_runner(cls, device=None, dtype=None):
    """GemmRunner.open as on a machine without Vulkan."""
    return cls("ref", launch.get_executor("ref"), "no Vulkan device (test); ran on the reference executor")


def test_sweep_draws_a_plot(tmp_path, capsys):
    plot = tmp_path / "gemm.png"
    assert cli.main(["gemm", "256", "256", "256", "--device", "ref", "--sweep", "--dtype", "f16:f32,s8:s32",
                     "--plot", str(plot), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count(" ok ") == 4  # two dtypes x sizes 128, 256
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tuning_verifies_stores_and_reuses(private_cache):
    problem = GemmProblem(40, 48, 56, parse_dtype("f16:f32"), "nt")
    with GemmRunner.open("ref") as runner:
        tried = []
        best = runner.tune(problem, repeat=1, limit=3, progress=lambda done, total, config, b: tried.append(done))
        assert best.ok and tried == [0, 1, 2, 3]
        assert cache_path() == private_cache
        entry = load_cache()["ref"][runner.cache_key(problem)]
        assert GemmConfig.from_dict(entry["config"]) == best.config
        assert runner.tuned_config(problem) == best.config  # reused
        other = json.loads(private_cache.read_text())
        assert other["ref"][f"f16:f32 nt {problem.size_class}"]["size"] == [40, 48, 56]


def test_tuning_skips_a_wrong_candidate(monkeypatch):
    problem = GemmProblem(16, 16, 16, parse_dtype("s8:s32"))
    with GemmRunner.open("ref") as runner:
        real = runner.run

        def run(p, config=None, **kw):
            result = real(p, config, **kw)
            if config is not None and config.kind == "coop" and config.tile == (64, 64, 64):
                result.ok = False  # as if this candidate computed garbage
            return result

        monkeypatch.setattr(runner, "run", run)
        best = runner.tune(problem, repeat=1, limit=2)
        assert best.config.tile != (64, 64, 64)


def test_the_shipped_table_has_lavapipe_entries():
    table = shipped_table()
    lavapipe = [key for key in table if key.startswith("llvmpipe")]
    assert lavapipe, "kernels/gemm_table.json lists no lavapipe winners"
    for entry in table[lavapipe[0]].values():
        GemmConfig.from_dict(entry["config"])


@pytest.mark.vulkan
def test_lavapipe_uses_its_shipped_winner():
    problem = GemmProblem(256, 256, 256, parse_dtype("f16:f32"))
    with GemmRunner.open(0) as runner:
        entry = shipped_table()[runner.device_key()][runner.cache_key(problem)]
        assert runner.tuned_config(problem) == GemmConfig.from_dict(entry["config"])
        assert runner.run(problem).ok
