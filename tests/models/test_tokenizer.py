"""The SentencePiece tokenizer against llama.cpp's recorded tokens of the real Gemma 3 vocabulary (every prompt:
spaces, digits, unicode, byte fallback, control tokens with and without special=True), detokenize against its
llama_detokenize, the incremental detokenizer, and the refusals."""

import numpy as np
import pytest
from models.model_fixtures import (  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
    gemma_file,
    gemma_path,
    llama_cpp,
)

from hydroplane.models import Tokenizer, TokenizerError
from hydroplane.models.tokenizer import BYTE, CONTROL, NORMAL


@pytest.fixture(scope="module")
def gemma_tokenizer(gemma_file):
    return Tokenizer.from_metadata(gemma_file.metadata)


def test_every_recorded_prompt_tokenizes_as_llama_cpp(gemma_tokenizer, llama_cpp):
    cases = llama_cpp["tokenize"]
    assert len(cases) > 30 and any(c["special"] for c in cases) and any("\n" in c["text"] for c in cases)
    for case in cases:
        assert gemma_tokenizer.tokenize(case["text"], special=case["special"]) == case["ids"], case["text"]


def test_bos_and_control_tokens(gemma_tokenizer):
    assert gemma_tokenizer.tokenize("", bos=True) == [2]
    assert gemma_tokenizer.tokenize("", bos=False) == []
    ids = gemma_tokenizer.tokenize("<end_of_turn>", bos=False, special=True)
    assert ids == [106] and gemma_tokenizer.is_eog(106) and gemma_tokenizer.is_eog(1)
    assert gemma_tokenizer.tokenize("<end_of_turn>", bos=False) != [106]


def test_detokenize_gives_llama_cpps_text(gemma_tokenizer, llama_cpp):
    for run in llama_cpp["runs"]:
        assert gemma_tokenizer.detokenize(run["greedy"]) == run["greedy_text"]
        pieces = gemma_tokenizer.incremental()
        assert "".join(pieces.push(t) for t in run["greedy"]) + pieces.flush() == run["greedy_text"]
    assert gemma_tokenizer.detokenize([2, 105]) == ""
    assert gemma_tokenizer.detokenize([2, 105], special=True) == "<bos><start_of_turn>"


def test_round_trip_of_random_text(gemma_tokenizer):
    rng = np.random.default_rng()
    alphabet = list("abc XYZ 019 \n\t.,;éßΩжи日本🙂") + ["\u0001", "ꙮ"]
    for _ in range(20):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(1, 40))))
        assert gemma_tokenizer.detokenize(gemma_tokenizer.tokenize(text, bos=False)) == text


def test_incremental_detokenizer_never_splits_a_character(gemma_tokenizer):
    text = "🙂 ꙮ"  # not whole tokens: byte fallback spreads them over byte tokens
    ids = gemma_tokenizer.tokenize(text, bos=False)
    assert any(gemma_tokenizer.types[i] == BYTE for i in ids)
    pieces = gemma_tokenizer.incremental()
    out = [pieces.push(i) for i in ids] + [pieces.flush()]
    assert "".join(out) == text
    assert all("\ufffd" not in piece for piece in out)
    assert "" in out  # a byte token that only starts a character gives no text yet
    unfinished = gemma_tokenizer.incremental()
    unfinished.push(gemma_tokenizer.byte_token(0xF0))
    assert unfinished.flush() == "\ufffd"


def small(model="llama", **changes):
    tokens = ["<unk>", "<s>", "</s>", "▁a", "a", "<0x61>"]
    types = [2, CONTROL, CONTROL, NORMAL, NORMAL, BYTE]
    metadata = {"tokenizer.ggml.model": model, "tokenizer.ggml.tokens": tokens,
                "tokenizer.ggml.scores": [0.0] * 6, "tokenizer.ggml.token_type": types}
    metadata.update(changes)
    return metadata


def test_add_space_prefix_and_refusals():
    tok = Tokenizer.from_metadata(small())
    assert tok.tokenize("a") == [1, 3]  # add_space_prefix defaults to true for SentencePiece, BOS id 1
    assert tok.detokenize([3]) == "a"
    bare = Tokenizer.from_metadata(small(**{"tokenizer.ggml.add_space_prefix": False}))
    assert bare.tokenize("a", False) == [4]
    with pytest.raises(TokenizerError, match="no byte-fallback token for byte 0x62"):
        bare.tokenize("b")
    with pytest.raises(TokenizerError, match="byte 0xE2"):  # the first byte of "▁" (U+2581), not in this vocabulary
        tok.tokenize("b")
    with pytest.raises(TokenizerError, match="'gpt2'.*BPE.*SentencePiece"):
        Tokenizer.from_metadata(small("gpt2"))
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        tok.detokenize([6])
    with pytest.raises(TokenizerError, match="takes a str"):
        tok.tokenize(b"a")
