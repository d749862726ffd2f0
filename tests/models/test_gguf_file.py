"""The models' GGUF reader: metadata and tensors as the gguf package wrote them, and its refusals of files that are
no GGUF, truncated, or of an architecture or vocabulary hydroplane.models does not run."""

import gguf
import numpy as np
import pytest
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane.models import ModelError, Tokenizer, TokenizerError, config_from_metadata, load, read_gguf


def test_metadata_and_tensors_read_back(tiny_files):
    file = read_gguf(tiny_files["llama"])
    reader = gguf.GGUFReader(str(tiny_files["llama"]))
    assert file.metadata["general.architecture"] == "llama"
    assert file.metadata["llama.block_count"] == 2 and file.metadata["tokenizer.ggml.add_bos_token"] is True
    assert len(file.metadata["tokenizer.ggml.tokens"]) == len(reader.fields["tokenizer.ggml.tokens"].data)
    for t in reader.tensors:
        mine = file.tensor(t.name)
        assert mine.format == t.tensor_type.name and mine.shape == tuple(int(n) for n in reversed(t.shape.tolist()))
        want = gguf.quants.dequantize(t.data, t.tensor_type).reshape(mine.shape)
        np.testing.assert_array_equal(mine.dequantize(), want)
    with pytest.raises(ModelError, match="no tensor 'blk.9.attn_q.weight'"):
        file.tensor("blk.9.attn_q.weight")


def test_bad_files_are_refused(tmp_path, tiny_files):
    with pytest.raises(ModelError, match="no such file"):
        read_gguf(tmp_path / "absent.gguf")
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04" + bytes(60))
    with pytest.raises(ModelError, match="not a GGUF file"):
        read_gguf(not_gguf)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_files["llama"].read_bytes()[:5000])
    with pytest.raises(ModelError, match="truncated|past the end"):
        read_gguf(cut)


def test_unknown_architecture_and_bpe_vocabulary_are_refused(tmp_path):
    with pytest.raises(ModelError, match="architecture 'mamba' is not one"):
        config_from_metadata({"general.architecture": "mamba"})
    path = tmp_path / "bpe.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for key in ("block_count", "embedding_length", "feed_forward_length", "attention.head_count"):
        w.add_uint32(f"llama.{key}", 32)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", ["a", "b"])
    w.add_tensor("token_embd.weight", np.zeros((2, 32), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ModelError, match="output_norm"):
        load(path, device="ref")
    with pytest.raises(TokenizerError, match="'gpt2'"):
        Tokenizer.from_metadata(read_gguf(path).metadata)
