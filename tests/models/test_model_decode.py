"""The captured decode step (issue 26 item 4): `generate` runs the first decode step of a sampling setting as calls,
captures it, and replays it for every later token, the position, the cache's valid length, the token id and the
seed read by the kernels from device buffers. Its tokens against a host-driven loop of `step` (no capture, the ids
sent from the host), greedy and sampled, on the reference executor and lavapipe; final logit softcapping on the
device against the float64 reference."""

import sys
from pathlib import Path

import numpy as np
import pytest
from models.model_fixtures import (
    tiny_files,  # noqa: F401 -- the models' fixtures (no conftest: it would shadow tests/conftest.py)
)

from hydroplane.models import Model, Reference, read_gguf
from hydroplane.ops import nn

sys.path.insert(0, str(Path(__file__).parent))
import tiny  # noqa: E402


def host_loop(model, ids, n, temperature=0.0, top_k=0, top_p=1.0, seed=0):
    """n tokens by `step`, one call per token, each id read back and sent again (step n draws with seed + n)."""
    model.reset()
    logits = model.step(ids)
    out = []
    for i in range(n):
        token = int(np.asarray(nn.sample(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                                         seed=seed + i).numpy()).reshape(-1)[0])
        if model.tokenizer.is_eog(token):
            break
        out.append(token)
        logits = model.step([token])
    return out


def no_eog(model):
    model.tokenizer.eog_ids = frozenset()


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_replayed_decode_gives_the_host_loops_tokens(arch, tiny_files):
    model = Model(read_gguf(tiny_files[arch]), device="ref", context=40)
    no_eog(model)
    ids = model.tokenize("the cat sat")
    want = host_loop(model, ids, 12)
    assert list(model.generate(ids, 12)) == want
    assert len(model._graphs) == 1 and model.length == len(ids) + 11
    assert list(model.generate(ids, 12)) == want  # the same graph again, from a reset cache
    sampled = host_loop(model, ids, 9, temperature=1.3, top_k=20, top_p=0.95, seed=7)
    assert list(model.generate(ids, 9, temperature=1.3, top_k=20, top_p=0.95, seed=7)) == sampled
    assert len(model._graphs) == 2


def test_replays_reach_the_end_of_the_context(tiny_files):
    model = Model(read_gguf(tiny_files["llama"]), device="ref", context=12)
    no_eog(model)
    ids = model.tokenize("the dog")
    n = 12 - len(ids)
    assert list(model.generate(ids, n)) == host_loop(model, ids, n)


def test_softcapped_logits_on_the_device(tmp_path):
    path = tiny.write(tmp_path / "capped.gguf", "gemma3", seed=3, softcap=2.5)
    file = read_gguf(path)
    model, ref = Model(file, device="ref", context=16), Reference(file)
    assert model.config.logit_softcap == 2.5
    ids = model.tokenize("the cat sat on")
    got, want = model.logits(ids), ref.logits(ids)
    assert np.abs(got).max() <= 2.5 and np.abs(want).max() > 1.0  # capped, and the cap is reached
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.01
    no_eog(model)
    assert list(model.generate(ids, 4)) == host_loop(model, ids, 4)


@pytest.mark.vulkan
def test_replayed_decode_on_lavapipe(tiny_files):
    model = Model(read_gguf(tiny_files["gemma3"]), device=0, context=24)
    no_eog(model)
    ids = model.tokenize("the cat sat")
    want = host_loop(model, ids, 10)
    assert list(model.generate(ids, 10)) == want
    sampled = host_loop(model, ids, 6, temperature=0.9, top_p=0.9, seed=3)
    assert list(model.generate(ids, 6, temperature=0.9, top_p=0.9, seed=3)) == sampled


@pytest.mark.parametrize("arch, device", [("gemma3", "ref"), ("llama", "ref"),
                                          pytest.param("gemma3", 0, marks=pytest.mark.vulkan)])
def test_the_fused_heads_kernel_is_the_unfused_ops(arch, device, tiny_files):
    """Model.heads (q/k norm, RoPE, f16, relayout in one kernel) against nn.rms_norm, nn.rotary_embedding and the
    f16 rounding, into a new array and into a poisoned cache at the row the positions buffer holds."""
    from hydroplane.launch.jit import device_array

    model = Model(read_gguf(tiny_files[arch]), device=device, context=12)
    c, layer = model.config, model.config.layers[0]
    rng = np.random.default_rng(4)
    T, heads = 3, c.n_head_kv
    x = (rng.standard_normal((T, heads * c.head_dim)) * 3).astype(np.float32)
    positions = np.array([5, 6, 7], np.int32)
    norm = model.blocks[0]["k_norm"] if c.arch.qk_norm else None
    h = x.reshape(T, heads, c.head_dim)
    if norm is not None:
        h = nn.rms_norm(h, c.head_dim, norm.numpy(), eps=c.eps, device=device)
    want = nn.rotary_embedding(h, positions, theta=layer.rope_base, style=c.arch.rope_style, rotary_dim=c.n_rot,
                               freq_scale=layer.rope_scale, device=device).astype(np.float16).transpose(1, 0, 2)
    dx, dpos = device_array(x, device), device_array(positions, device)
    got = model.heads(dx, heads, norm, dpos, layer).numpy()
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    cache = device_array(np.full((heads, 12, c.head_dim), -777.0, np.float16), device)
    model.heads(dx, heads, norm, dpos, layer, dst=cache)
    rows = cache.numpy()
    np.testing.assert_array_equal(rows[:, 5:8], got)
    assert (rows[:, :5] == -777.0).all() and (rows[:, 8:] == -777.0).all()
