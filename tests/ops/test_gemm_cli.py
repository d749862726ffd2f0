"""`hydroplane gemm` and the autotune cache: output, exit status, shrinking on ref, the sweep's plot, tuning
(every candidate verified), the XDG cache reused, the shipped table read."""

from __future__ import annotations

import io
import json
import re
import sys
import tomllib

import pytest
from conftest import REPO

from hydroplane import cli
from hydroplane.kernels.gemm import GemmConfig, GemmProblem, parse_dtype
from hydroplane.kernels.gemm.route import config_from_dict, route_candidates
from hydroplane.launch import executors as launch
from hydroplane.ops import gemm as gemm_module
from hydroplane.ops import gemm_command as kernels_cli
from hydroplane.ops.gemm import GemmRunner, cache_path, load_cache, shipped_table, terminal_progress


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
    assert re.search(r"^  config  \S", out, re.M)


def test_integer_gemm_is_exact(capsys):
    assert cli.main(["gemm", "20", "30", "40", "--device", "ref", "--dtype", "u8:u32", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "check   ok: exact against NumPy" in out and "TOP/s" in out


def test_a_wrong_result_exits_1(capsys, monkeypatch):
    monkeypatch.setattr(kernels_cli, "_run", _broken_run)
    # the GEMM's launches are skipped for this test only: D keeps its poison
    monkeypatch.setattr(gemm_module.PreparedGemm, "dispatch", lambda self: None)
    assert cli.main(["gemm", "8", "8", "8", "--device", "ref"]) == 1
    assert "check   FAILED" in capsys.readouterr().out


def _broken_run(runner, problem, args):
    return runner.run(problem, GemmConfig(tile=(16, 16, 16), subgroups=(1, 1), tiles=(1, 1), stages=1))


def test_bad_arguments_are_named(capsys):
    assert cli.main(["gemm", "8", "8", "8", "--dtype", "f16:s32", "--device", "ref"]) == 1
    assert "float inputs take a float accumulator" in capsys.readouterr().err
    assert cli.main(["gemm", "8", "8", "8", "--dtype", "s8:f32", "--device", "ref"]) == 1
    assert "integer inputs take an integer accumulator" in capsys.readouterr().err
    assert cli.main(["gemm", "0", "8", "8", "--device", "ref"]) == 1
    assert "GEMM size M must be a positive int" in capsys.readouterr().err
    assert cli.main(["gemm", "8", "8", "8", "--device", "ref", "--plot", "x.png"]) == 1
    assert "--plot draws a --sweep" in capsys.readouterr().err


@pytest.mark.vulkan
def test_a_type_the_device_lacks_is_refused_before_any_search(capsys, monkeypatch):
    """lavapipe has no bf16: --device 0 with a bf16 input or output is refused at once, naming the device and
    --device ref (no tuning search first); without --device the GEMM runs on ref, with a note saying why."""
    monkeypatch.setattr(GemmRunner, "tune", lambda *a, **k: pytest.fail("a search ran"))
    for dtype in ("bf16:f32", "f16:f32:bf16"):
        assert cli.main(["gemm", "32", "48", "40", "--dtype", dtype, "--device", "0"]) == 1
        err = capsys.readouterr().err
        assert f"--dtype {dtype}:" in err and "llvmpipe" in err and "has no bf16 arithmetic; pass --device ref" in err
    assert cli.main(["gemm", "16", "16", "16", "--dtype", "f16:f32:bf16", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "no Vulkan device has bf16 arithmetic; ran on the reference executor" in out and "check   ok" in out


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


def test_plot_without_matplotlib_is_refused_before_any_work(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: `import matplotlib` fails

    def no_work(*args, **kwargs):
        raise AssertionError("the sweep started before the matplotlib check")

    monkeypatch.setattr(GemmRunner, "open", no_work)
    assert cli.main(["gemm", "2048", "2048", "2048", "--sweep", "--plot", "gemm.png"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot needs matplotlib" in err and "pip install hydroplane-gpu[plot]" in err
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "hydroplane-gpu" and project["optional-dependencies"]["plot"] == ["matplotlib"]


@pytest.mark.parametrize("name, says", [("missing/x.png", "does not exist or cannot be written"),
                                         ("out.xyz", "the file's suffix names the image format"),
                                         ("noext", "the file's suffix names the image format"),
                                         (".", "a folder; name the image file")])
def test_a_plot_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, monkeypatch, name, says):
    """A folder or a name without a suffix was reported as written where matplotlib wrote NAME.png; a missing folder
    or an unknown suffix was a traceback after the whole sweep (2026-12-07)."""
    def no_work(*args, **kwargs):
        raise AssertionError("the sweep started before the plot's path was checked")

    monkeypatch.setattr(GemmRunner, "open", no_work)
    assert cli.main(["gemm", "64", "64", "64", "--sweep", "--device", "ref", "--plot", str(tmp_path / name)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_the_host_running_out_of_memory_is_one_line(capsys, monkeypatch):
    """`hydroplane gemm 30000 30000 1000` on a small host: NumPy's MemoryError was a traceback (2026-12-07)."""
    def too_large(*args, **kwargs):
        raise MemoryError("Unable to allocate 6.71 GiB for an array with shape (30000, 30000)")

    monkeypatch.setattr(GemmRunner, "open", too_large)
    assert cli.main(["gemm", "64", "64", "64", "--device", "ref"]) == 1
    err = capsys.readouterr().err
    assert err == "hydroplane: error: out of host memory: Unable to allocate 6.71 GiB for an array with shape " \
                  "(30000, 30000)\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream", [io.StringIO, Terminal])
def test_tuning_progress_shows_each_candidates_own_time(stream):
    """One entry per candidate with its own time, and the best so far labelled as such (on a terminal the line
    is redrawn, "measuring" while a candidate runs)."""
    problem = GemmProblem(40, 48, 56, parse_dtype("f16:f32"), "nt")
    out = stream()
    with GemmRunner.open("ref") as runner:
        best = runner.tune(problem, repeat=1, limit=3, progress=terminal_progress(out))
    text = out.getvalue()
    lines = [line for line in re.split(r"\r\x1b\[K|\n", text) if line]
    measured = [re.fullmatch(r"tuning (\d)/3: ([\d.e+-]+) ms \(\S+ T/s\) \| best so far ([\d.e+-]+) ms \(\S+ T/s\) "
                             r"\| (.+)", line) for line in lines if "/3: " in line and "measuring" not in line]
    assert [int(m.group(1)) for m in measured] == [1, 2, 3], text
    own = [float(m.group(2)) for m in measured]
    assert [float(m.group(3)) for m in measured] == [min(own[:i + 1]) for i in range(3)]  # the best so far
    assert len(set(m.group(4) for m in measured)) == 3  # each line names its own candidate
    assert lines[-1] == f"tuning: 3/3 done, best {best.seconds * 1e3:.4g} ms ({best.tflops:.3g} T/s)"
    assert ("measuring" in text) == (stream is Terminal)


def test_tuning_verifies_stores_and_reuses(private_cache):
    problem = GemmProblem(40, 48, 56, parse_dtype("f16:f32"), "nt")
    with GemmRunner.open("ref") as runner:
        tried = []
        best = runner.tune(problem, repeat=1, limit=3,
                           progress=lambda done, total, config, b, *own: tried.append((done, len(own))))
        assert best.ok and tried == [(0, 0), (1, 1), (1, 0), (2, 1), (2, 0), (3, 1), (3, 0)]  # before, after, end
        assert cache_path() == private_cache
        entry = load_cache()["ref"][runner.cache_key(problem)]
        assert config_from_dict(entry["config"]) == best.config
        assert runner.tuned_config(problem) == best.config  # reused
        other = json.loads(private_cache.read_text())
        assert other["ref"][runner.cache_key(problem)]["size"] == [40, 48, 56]


def test_tuning_skips_a_wrong_candidate(monkeypatch):
    problem = GemmProblem(16, 16, 16, parse_dtype("s8:s32"))
    with GemmRunner.open("ref") as runner:
        real = runner.run
        first = route_candidates(problem, runner.target)[0]

        def run(p, config=None, **kw):
            result = real(p, config, **kw)
            if config == first:
                result.ok = False  # as if this candidate computed garbage
            return result

        monkeypatch.setattr(runner, "run", run)
        best = runner.tune(problem, repeat=1, limit=2)
        assert best.config != first


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
