"""The padded, captured prefill (Model.step with last_only): a prompt of T > 1 tokens runs padded to its bucket
(a power of two, at least 16) with its ids, positions and kept row in device buffers; the first prefill of a
bucket runs as calls, the second is captured, later ones replay. Its logits against the unpadded forward of the
same ids (Model.logits, every row computed at exactly T) on the reference executor and lavapipe, for prompts of
several lengths in one bucket and across buckets, at position 0 and after cached positions, and the exact path
where the bucket does not fit the context."""

import numpy as np
import pytest
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane.models import Model, read_gguf

DEVICES = ["ref", pytest.param(0, marks=pytest.mark.vulkan)]


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """Within 2e-3 relative L2: the padded step's attention tiles its queries and keys differently, so its f16
    rounding of the probabilities lands elsewhere (seen: 2.8e-4); the top-1 token the same wherever the margin is
    clear of that."""
    got, want = np.asarray(got, np.float64).reshape(-1), np.asarray(want, np.float64).reshape(-1)
    assert np.all(np.isfinite(got))
    bound = 2e-3 * np.linalg.norm(want)
    assert np.linalg.norm(got - want) <= bound
    assert got[int(np.argmax(want))] >= got.max() - bound


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_padded_prefills_give_the_unpadded_logits(arch, device, tiny_files):
    model = Model(read_gguf(tiny_files[arch]), device=device, context=64)
    rng = np.random.default_rng()
    lengths = [5, 2, 16, 9, 3, 17, 30] if device == "ref" else [5, 2, 16, 9, 17, 30]
    for T in lengths:  # bucket 16 three times and more (planned, captured, replayed), then bucket 32 twice
        ids = rng.integers(0, model.config.n_vocab, T)
        want = model.logits(ids)[-1]
        model.reset()
        got = model.step(ids)
        assert got.shape == (1, model.config.n_vocab) and model.length == T
        _close(got.numpy(), want)
    assert model._prefills[16].graph is not None and model._prefills[32].planned


@pytest.mark.parametrize("device", DEVICES)
def test_a_padded_prefill_after_cached_positions_and_the_decode_after_it(device, tiny_files):
    """A prompt continued by a second prefill (the cache's first rows kept) and a decode step: the padding's cache
    rows, written during the prefill, are rewritten before anything reads them."""
    model = Model(read_gguf(tiny_files["gemma3"]), device=device, context=64)
    rng = np.random.default_rng()
    first, second = rng.integers(0, model.config.n_vocab, 6), rng.integers(0, model.config.n_vocab, 7)
    following = int(rng.integers(0, model.config.n_vocab))
    want = model.logits(np.concatenate([first, second, [following]]))
    for _ in range(3):  # planned, captured, replayed
        model.reset()
        model.step(first)
        _close(model.step(second).numpy(), want[len(first) + len(second) - 1])
        assert model.length == len(first) + len(second)
        _close(model.step([following]).numpy(), want[-1])  # a decode step at the next position


def test_the_exact_path_where_the_bucket_does_not_fit(tiny_files):
    model = Model(read_gguf(tiny_files["llama"]), device="ref", context=20)
    ids = np.random.default_rng().integers(0, model.config.n_vocab, 18)  # bucket 32 > 20 positions
    want = model.logits(ids)[-1]
    model.reset()
    _close(model.step(ids).numpy(), want)
    assert not model._prefills
