"""Every GEMM dtype string and scalar either works and verifies or is refused by name (a GemmError; the CLI prints
one line): an output conversion the kernels do not build (f16:f32:s8, s8:s32:f32), other inputs or accumulators,
alpha/beta that are not finite or do not fit where the kernel holds them (f32 push constants, a f16 accumulator,
s32 for integers). Runs on the reference executor with small sizes."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest
from conftest import REPO

from hydroplane import cli
from hydroplane.kernels.gemm import GemmError, GemmProblem, parse_dtype
from hydroplane.kernels.gemm.plan import GEMM_DTYPES, GemmDtype
from hydroplane.ops.gemm import GemmRunner
from hydroplane.spirv import types


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def ref():
    with GemmRunner.open("ref") as runner:
        yield runner


def test_every_dtype_string_is_a_gemm_dtype_or_refused_by_name():
    """All 3600 A:ACC and A:ACC:OUT strings over the scalar names: accepted ones are exactly GEMM_DTYPES."""
    accepted = set()
    for parts in itertools.chain(itertools.product(types.SCALARS, repeat=2), itertools.product(types.SCALARS,
                                                                                               repeat=3)):
        text = ":".join(parts)
        try:
            accepted.add(parse_dtype(text).name)
        except GemmError as err:
            assert f"GEMM dtype {text!r}" in str(err), str(err)
    assert accepted == set(GEMM_DTYPES)
    assert {"f16:f32", "f16:f16", "bf16:f32", "s8:s32", "u8:u32", "e4m3:f32", "e5m2:f32", "f16:f32:f16"} <= accepted


@pytest.mark.parametrize("text, says", [
    ("f16:f32:s8", "f32 accumulators write f32, f16 or bf16, not s8"),
    ("s8:s32:f32", "s32 accumulators write s32, not f32"),
    ("f16:f32:e4m3", "not e4m3"),
    ("s8:s64", "s8 inputs accumulate in s32, not s64"),
    ("f32:f32", "no GEMM takes f32 inputs"),
    ("f16:f32:f16:f16", "A:ACCUMULATOR[:OUTPUT]"),
    ("f16:half", "unknown scalar type 'half'"),
])
def test_refused_dtypes_say_why(text, says):
    with pytest.raises(GemmError, match="GEMM dtype|A:ACC") as caught:
        parse_dtype(text)
    assert says in str(caught.value)


def test_a_gemm_dtype_object_is_checked_too():
    f32 = types.scalar("f32")
    with pytest.raises(GemmError, match="no GEMM takes f32 inputs"):
        GemmProblem(4, 4, 4, GemmDtype(f32, f32, f32))
    with pytest.raises(GemmError, match="must be a GemmDtype"):
        GemmProblem(4, 4, 4, "f16:f32")
    with pytest.raises(GemmError, match="is a string"):
        parse_dtype(None)


@pytest.mark.parametrize("dtype", GEMM_DTYPES)
def test_every_accepted_dtype_verifies_on_ref(ref, dtype):
    """Edges in M and N, a K long enough that 16-bit accumulators round, the whole epilogue."""
    for shape, options in (((9, 20, 70), {}), ((33, 40, 300), dict(alpha=-2.0, beta=3.0, bias=True))):
        problem = GemmProblem(*shape, parse_dtype(dtype), "tn", activation="relu", **options)
        result = ref.run(problem)
        assert result.ok, f"{problem.describe()}: error {result.error} with {result.config.describe()}"


@pytest.mark.parametrize("dtype, options, says", [
    ("f16:f32", dict(alpha=float("nan")), "GEMM alpha must be a finite number, not nan"),
    ("f16:f32", dict(beta=float("inf")), "GEMM beta must be a finite number, not inf"),
    ("f16:f32", dict(alpha=-float("inf")), "GEMM alpha must be a finite number, not -inf"),
    ("f16:f32", dict(alpha=1e39), "GEMM alpha=1e+39 does not fit f32, its push constant's type"),
    ("f16:f32", dict(beta=10 ** 400), "GEMM beta must be a finite number"),
    ("f16:f16", dict(alpha=70000.0), "GEMM alpha=70000.0 does not fit f16, the accumulator type (largest 65504)"),
    ("s8:s32", dict(alpha=2 ** 31), "GEMM alpha=2147483648 does not fit s32"),
    ("s8:s32", dict(beta=1.5), "an integer GEMM takes integer alpha and beta, not beta=1.5"),
    # the integer reaches the kernel as an f32 push constant: one f32 cannot hold would be rounded (2026-12-07)
    ("s8:s32", dict(alpha=2 ** 24 + 1), "GEMM alpha=16777217 is not exact in f32"),
    ("u8:u32", dict(beta=123456789), "GEMM beta=123456789 is not exact in f32"),
    ("s8:s32", dict(alpha=2 ** 31 - 1), "GEMM alpha=2147483647 is not exact in f32"),
    # a float that f32 (or the f16 accumulator) rounds to zero (2026-12-07)
    ("f16:f32", dict(alpha=1e-50), "GEMM alpha=1e-50 becomes 0 in f32, its push constant's type"),
    ("f16:f16", dict(beta=1e-9), "GEMM beta=1e-09 becomes 0 in f16, the accumulator type"),
    ("f16:f32", dict(alpha="2"), "GEMM alpha must be a number, not '2'"),
    ("f16:f32", dict(beta=None), "GEMM beta must be a number, not None"),
])
def test_scalars_are_refused_by_name(dtype, options, says):
    with pytest.raises(GemmError) as caught:
        GemmProblem(8, 8, 8, parse_dtype(dtype), **options)
    assert says in str(caught.value)


def test_largest_scalars_that_fit_still_verify(ref):
    problem = GemmProblem(8, 8, 8, parse_dtype("f16:f32"), alpha=-3e38 / 4096, beta=0.5)
    assert ref.run(problem).ok
    assert GemmProblem(8, 8, 8, parse_dtype("s8:s32"), alpha=2 ** 30, beta=-(2 ** 31)).alpha == 2 ** 30
    assert GemmProblem(8, 8, 8, parse_dtype("s8:s32"), alpha=-(2 ** 24), beta=2 ** 24 - 1).beta == 2 ** 24 - 1
    with pytest.raises(GemmError, match="size M must be a positive int, not True"):
        GemmProblem(True, 8, 8, parse_dtype("f16:f32"))


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONWARNINGS="default")
    return subprocess.run([sys.executable, "-m", "hydroplane", "gemm", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.parametrize("args, says", [
    (["--dtype", "f16:f32:s8"], "GEMM dtype 'f16:f32:s8': f32 accumulators write f32, f16 or bf16, not s8"),
    (["--dtype", "s8:s32:f32"], "GEMM dtype 's8:s32:f32': s32 accumulators write s32, not f32"),
    (["--alpha", "nan"], "GEMM alpha must be a finite number, not nan"),
    (["--alpha", "1e39"], "GEMM alpha=1e+39 does not fit f32"),
    (["--beta", "inf"], "GEMM beta must be a finite number, not inf"),
    (["--beta", "inf", "--sweep"], "GEMM beta must be a finite number, not inf"),  # refused before the sweep
])
def test_cli_refuses_in_one_line_without_numpy_warnings(args, says):
    proc = _cli("16", "16", "16", "--device", "ref", "--repeat", "1", *args)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == f"hydroplane: error: {proc.stderr.split('error: ', 1)[1]}" and proc.stderr.count("\n") == 1
    assert says in proc.stderr and "Warning" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""  # nothing ran


def test_cli_runs_an_output_conversion_and_verifies(capsys):
    assert cli.main(["gemm", "24", "40", "56", "--device", "ref", "--dtype", "f16:f32:f16", "--beta", "2",
                     "--repeat", "1"]) == 0
    assert "check   ok" in capsys.readouterr().out

