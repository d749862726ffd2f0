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


def test_bad_arguments_are_refused_before_any_work(pair, tiny_files):
    """Found by a randomized run on 2026-12-07: bytes prompts were read as ids, a bad sampling option was refused
    only after the prefill had run, decode(-1) did nothing, context=2.5 became 2, and several mistakes raised
    TypeError or NumPy's MemoryError instead of hydroplane's errors."""
    from hydroplane import HydroplaneError
    from hydroplane.models import TokenizerError

    model, _ = pair
    ids = model.tokenize("the cat")
    for prompt in (b"hi", None, 7):
        with pytest.raises(ModelError, match="a prompt is text"):
            model.generate(prompt, 1)
    for options, says in ((dict(temperature=-1.0), "temperature must be finite and at least 0"),
                          (dict(temperature=0.8, top_p=2.0), r"top_p must lie in \(0, 1\]"),
                          (dict(top_k=-1), "top_k is an integer of at least 0"),
                          (dict(temperature=0.8, seed="x"), "seed is an integer or None")):
        model.reset()
        with pytest.raises(HydroplaneError, match=says):
            model.generate(ids, 1, **options)
        assert model.length == 0  # refused before the prefill ran
    for steps_arg in (-1, 1.5, True):
        with pytest.raises(ModelError, match="steps must be a non-negative integer"):
            model.decode(steps_arg)
    with pytest.raises(HydroplaneError, match="temperature"):
        model.decode(1, temperature=float("nan"))
    file = model.file
    for context, says in ((2.5, "context is a number of positions"), ("16", "context is a number of positions"),
                          (10 ** 9, "KV cache of .* elements; the kernels index at most 2")):
        with pytest.raises(ContextError, match=says):
            Model(file, device="ref", context=context)
    tokenizer = model.tokenizer
    with pytest.raises(TokenizerError, match="UTF-8"):
        tokenizer.tokenize("a\ud800b")
    for bad in (818, None, "ab"):
        with pytest.raises(TokenizerError, match="detokenize takes a sequence"):
            tokenizer.detokenize(bad)
    with pytest.raises(TokenizerError, match="token ids are integers, not bool"):
        tokenizer.detokenize([True])
