"""hydroplane.models on the reference executor: tiny random llama and gemma3 checkpoints, hydroplane's logits
against the float64 NumPy reference (relative L2 within 1%), greedy generation against the reference's argmax,
the KV cache across steps, end-of-generation and context refusals."""

import numpy as np
import pytest
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane.models import ContextError, Model, ModelError, Reference, read_gguf


def rel_l2(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def pair(request, tiny_files):
    file = read_gguf(tiny_files[request.param])
    return Model(file, device="ref", context=16), Reference(file)


def test_logits_match_the_reference(pair):
    model, ref = pair
    ids = model.tokenize("the cat sat on the mat")
    got = model.logits(ids)
    want = ref.logits(ids)
    assert got.shape == want.shape == (len(ids), model.config.n_vocab) and got.dtype == np.float32
    assert rel_l2(got, want) < 0.01


def test_greedy_generation_follows_the_reference_and_the_cache(pair):
    model, ref = pair
    ids = model.tokenize("the dog")
    got = list(model.generate(ids, 3))
    seq = list(ids)
    for _ in range(3):
        logits = ref.logits(seq)[-1]
        top2 = np.sort(logits)[-2:]
        nxt = int(np.argmax(logits))
        if model.tokenizer.is_eog(nxt):
            break
        seq.append(nxt)
        assert top2[1] - top2[0] > 1e-3, "a tie in the reference: pick another prompt"
    assert got == seq[len(ids):]


def test_generation_stops_at_end_of_generation(pair):
    model, _ = pair
    ids = model.tokenize("the cat")
    first = list(model.generate(ids, 1))
    saved = model.tokenizer.eog_ids
    model.tokenizer.eog_ids = frozenset({first[0]})
    try:
        assert list(model.generate(ids, 4)) == []
    finally:
        model.tokenizer.eog_ids = saved


def test_context_is_refused_past_its_end(pair):
    model, _ = pair
    ids = model.tokenize("the cat sat on the mat")
    with pytest.raises(ContextError, match="context holds 16"):
        model.generate(ids, 16 - len(ids) + 1)
    model.reset()
    model.step(ids)
    with pytest.raises(ContextError, match="exceed the context of 16"):
        model.step(list(range(3, 3 + 16 - len(ids) + 1)))
    with pytest.raises(ModelError, match="must lie in"):
        model.logits([0, model.config.n_vocab])


def test_sampling_is_seeded_and_top_k_1_is_greedy(pair):
    model, _ = pair
    ids = model.tokenize("the mat")
    greedy = list(model.generate(ids, 2))
    assert list(model.generate(ids, 2, temperature=0.9, top_k=1, seed=5)) == greedy
    drawn = list(model.generate(ids, 2, temperature=1.5, top_p=0.9, seed=11))
    assert list(model.generate(ids, 2, temperature=1.5, top_p=0.9, seed=11)) == drawn
    assert all(0 <= t < model.config.n_vocab for t in drawn)
    text = "".join(model.stream_text(ids, 2))
    assert text == model.detokenize(greedy)
