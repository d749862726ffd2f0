"""`hydroplane attention B H S D`: the verified result and its speed, the options, shrinking on ref, exit status."""

from __future__ import annotations

import re

from hydroplane import cli
from hydroplane.launch import executors
from hydroplane.ops import attention_command


def test_attention_on_ref_prints_a_verified_result(capsys):
    assert cli.main(["attention", "1", "2", "33", "64", "--kv-len", "47", "--causal", "--device", "ref",
                     "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "attention B=1 H=2 S_q=33 S_kv=47 D=64 f16 (causal) on ref (the reference executor)" in out
    assert "(wall time, median of 2)" in out and "TFLOP/s" in out and "TB/s of K and V read" in out
    assert re.search(r"check   ok: \|\|O-R\|\|/\|\|R\|\| = \S+ \(bound 0.003\) against NumPy \(float64\)", out)
    assert re.search(r"^  config  tiles 16x16x16: block \d+ queries x \d+ keys", out, re.M)


def test_gqa_bf16_and_the_decode_path(capsys):
    assert cli.main(["attention", "1", "4", "1", "64", "--kv-heads", "2", "--kv-len", "200", "--dtype", "bf16",
                     "--device", "ref", "--splits", "3", "--scale", "0.1", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "B=1 H=4 S_q=1 S_kv=200 D=64 bf16 (2 KV heads, scale 0.1)" in out
    assert "3 KV splits (decode path)" in out and "check   ok" in out and "bound 0.015" in out


def test_window(capsys):
    assert cli.main(["attention", "1", "2", "5", "32", "--kv-len", "60", "--causal", "--window", "16",
                     "--device", "ref", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "S_kv=60 D=32 f16 (causal, window 16)" in out and "check   ok" in out


def test_no_check(capsys):
    assert cli.main(["attention", "1", "1", "16", "16", "--device", "ref", "--no-check", "--repeat", "1"]) == 0
    assert "check" not in capsys.readouterr().out


def test_the_reference_executor_gets_a_problem_it_finishes(monkeypatch, capsys):
    """Without --device and without a Vulkan device (as on a host without the loader), the lengths shrink."""
    monkeypatch.setattr(attention_command, "REFERENCE_BUDGET", 2 ** 16)
    monkeypatch.setattr(attention_command.AttentionRunner, "open", classmethod(
        lambda cls, device, dtype: cls("ref", executors.get_executor("ref"), "no Vulkan device")))
    assert cli.main(["attention", "1", "1", "100", "64", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "shrunk from S_q=100 S_kv=100" in out and "S_q=32 S_kv=32" in out and "check   ok" in out


def test_a_wrong_result_exits_1(capsys, monkeypatch):
    real = attention_command.AttentionRunner.run

    def broken(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        result.ok = False
        return result

    monkeypatch.setattr(attention_command.AttentionRunner, "run", broken)
    assert cli.main(["attention", "1", "1", "8", "16", "--device", "ref", "--repeat", "1"]) == 1


def test_bad_arguments_are_one_line_errors(capsys):
    assert cli.main(["attention", "1", "3", "8", "64", "--kv-heads", "2", "--device", "ref"]) != 0
    assert "the 2 KV heads must divide the 3 query heads" in capsys.readouterr().err
    assert cli.main(["attention", "1", "1", "8", "72", "--device", "ref"]) != 0
    assert "head_dim 72 is not supported" in capsys.readouterr().err
    assert cli.main(["attention", "1", "1", "8", "64", "--device", "gpu"]) != 0
    assert "--device is a Vulkan device number or 'ref', not 'gpu'" in capsys.readouterr().err
    assert cli.main(["attention", "1", "1", "8", "64", "--repeat", "0", "--device", "ref"]) != 0
    assert "--repeat must be at least 1" in capsys.readouterr().err
    assert cli.main(["attention", "1", "1", "8", "64", "--splits", "0", "--device", "ref"]) != 0
    assert "--splits must be at least 1" in capsys.readouterr().err
