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

from hydroplane.models import ContextError, Model, Reference, read_gguf
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
    """Model.heads (q and k's norms, RoPE, f16, relayouts, v's f16 relayout: one kernel) on a (T, q | k | v) row
    array against nn.rms_norm, nn.rotary_embedding and the f16 rounding: q into a new array, k and v into poisoned
    caches at the row the positions buffer holds."""
    from hydroplane.launch.jit import device_array

    model = Model(read_gguf(tiny_files[arch]), device=device, context=12)
    c, layer, block = model.config, model.config.layers[0], model.blocks[0]
    rng = np.random.default_rng(4)
    T = 3
    widths = (c.n_head * c.head_dim, c.n_head_kv * c.head_dim, c.n_head_kv * c.head_dim_v)
    x = (rng.standard_normal((T, sum(widths))) * 3).astype(np.float32)
    x[1, :7] = 0.0
    x[2, widths[0]] = 1e4
    positions = np.array([5, 6, 7], np.int32)

    def prepared(part, heads, norm, positions=positions):
        h = part.reshape(T, heads, c.head_dim)
        if norm is not None:
            h = nn.rms_norm(h, c.head_dim, norm.numpy(), eps=c.eps, device=device)
        return nn.rotary_embedding(h, positions, theta=layer.rope_base, style=c.arch.rope_style, rotary_dim=c.n_rot,
                                   freq_scale=layer.rope_scale, device=device).astype(np.float16).transpose(1, 0, 2)

    want_q = prepared(x[:, :widths[0]], c.n_head, block.get("q_norm"))
    want_k = prepared(x[:, widths[0]:widths[0] + widths[1]], c.n_head_kv, block.get("k_norm"))
    want_v = x[:, widths[0] + widths[1]:].reshape(T, c.n_head_kv, c.head_dim_v).astype(np.float16).transpose(1, 0, 2)
    model.cache_k[0] = device_array(np.full((c.n_head_kv, 12, c.head_dim), -777.0, np.float16), device)
    model.cache_v[0] = device_array(np.full((c.n_head_kv, 12, c.head_dim_v), -777.0, np.float16), device)
    got = model.heads(device_array(x, device), block, device_array(positions, device), layer, 0).numpy()
    np.testing.assert_allclose(got.astype(np.float32), want_q.astype(np.float32), rtol=2e-3, atol=2e-3)
    for cache, want in ((model.cache_k[0].numpy(), want_k), (model.cache_v[0].numpy(), want_v)):
        np.testing.assert_allclose(cache[:, 5:8].astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
        assert (cache[:, :5] == -777.0).all() and (cache[:, 8:] == -777.0).all()
    # positions 10, 11, 12 of a 12-row cache that is the front of a larger buffer, all of it poisoned: rows 10 and
    # 11 written, row 12 (past the cache: a replay past the context) not, neither there nor in the buffer after it
    later = positions + 5
    want_k = prepared(x[:, widths[0]:widths[0] + widths[1]], c.n_head_kv, block.get("k_norm"), later)
    wholes = {}
    for name, width in (("cache_k", c.head_dim), ("cache_v", c.head_dim_v)):
        wholes[name] = device_array(np.full((c.n_head_kv + 1, 12, width), -777.0, np.float16), device)
        getattr(model, name)[0] = wholes[name][:c.n_head_kv]
    got = model.heads(device_array(x, device), block, device_array(later, device), layer, 0).numpy()
    np.testing.assert_allclose(got.astype(np.float32),
                               prepared(x[:, :widths[0]], c.n_head, block.get("q_norm"), later).astype(np.float32),
                               rtol=2e-3, atol=2e-3)
    for name, want in (("cache_k", want_k), ("cache_v", want_v)):
        whole = wholes[name].numpy()
        np.testing.assert_allclose(whole[:c.n_head_kv, 10:].astype(np.float32), want[:, :2].astype(np.float32),
                                   rtol=2e-3, atol=2e-3)
        assert (whole[:c.n_head_kv, :10] == -777.0).all() and (whole[c.n_head_kv:] == -777.0).all()


@pytest.mark.vulkan
def test_the_heads_folded_into_attention_are_the_two_kernels(tmp_path, monkeypatch):
    """A decode step's heads made in attention's main pass (Model.attention_decode) against the heads kernel and the
    attention op it replaces (that path is checked against the float64 reference by the prefill tests), on a
    checkpoint of Gemma 3 270M's shapes (head dim 256, 4 query heads on 1 KV head, window 512) on lavapipe, whose
    plan splits the keys: the logits and the cache rows written agree at positions in the first split, deep in the
    cache, past the window and at the cache's last row, over caches filled with the same random keys and values."""
    import count_launches

    from hydroplane.models import model as model_module

    monkeypatch.setattr(model_module, "FOLD_HEADS", True)  # (off by default: docs/models.md)
    file = read_gguf(count_launches.gemma_shaped(tmp_path, 2))
    fused, plain = (Model(file, device=0, context=600) for _ in range(2))
    monkeypatch.setattr(plain, "attention_decode", lambda *args: None)
    rng = np.random.default_rng(7)
    for i in range(2):
        k = rng.standard_normal(fused.cache_k[i].shape).astype(np.float16)
        v = rng.standard_normal(fused.cache_v[i].shape).astype(np.float16)
        for model in (fused, plain):
            model.cache_k[i].write(k)
            model.cache_v[i].write(v)
    for pos in (3, 200, 513, 599):
        token = int(rng.integers(4, fused.config.n_vocab))
        results = []
        for model in (fused, plain):
            model.decode_from(token, pos)
            logits = model.forward(model.embed(model.token), model.position).numpy()
            rows = [np.concatenate([model.cache_k[i].numpy()[:, pos], model.cache_v[i].numpy()[:, pos]])
                    for i in range(2)]
            results.append((logits, rows))
        (got, got_rows), (want, want_rows) = results
        assert np.isfinite(got).all()
        assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-3, pos
        for a, b in zip(got_rows, want_rows):
            np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=2e-3, atol=2e-3)
    plans = list(fused._attention_plans.values())
    assert plans and all(p.splits > 1 for p in plans), "the test must cross splits"


@pytest.mark.parametrize("device", [pytest.param(0, marks=pytest.mark.vulkan), "ref"])
def test_the_combining_pass_folded_into_the_o_projection_gives_its_bits(tmp_path, monkeypatch, device):
    """A decode step whose attention combining pass runs in the o projection's GEMV (the "combine" prologue) against
    the combining kernel and the GEMV of its f16 output, on lavapipe and the reference executor, on a checkpoint of
    Gemma 3 270M's shapes (splits of a 600-row cache, window 512; the caches filled with random keys and values):
    the same merges in the same order, so the logits are bit-identical, at positions in the first split, deep, past
    the window and at the last row; and the fold takes the combining launches away."""
    import count_launches

    from hydroplane.models import model as model_module

    monkeypatch.setattr(model_module, "FOLD_HEADS", True)  # (off by default: docs/models.md)
    file = read_gguf(count_launches.gemma_shaped(tmp_path, 2))
    folded, plain = (Model(file, device=device, context=600) for _ in range(2))
    rng = np.random.default_rng(11)
    for i in range(2):
        k = (rng.standard_normal(folded.cache_k[i].shape) * 3).astype(np.float16)
        v = rng.standard_normal(folded.cache_v[i].shape).astype(np.float16)
        for model in (folded, plain):
            model.cache_k[i].write(k)
            model.cache_v[i].write(v)
    names = {}
    for pos in (3, 200, 513, 599):
        token = int(rng.integers(4, folded.config.n_vocab))
        results = []
        for model, fold in ((folded, True), (plain, False)):
            monkeypatch.setattr(model_module, "FOLD_COMBINE", fold)
            model.decode_from(token, pos)
            names[fold] = launched = []

            def counted(launch, planned=model.runtime.launch_planned, launched=launched):
                launched.append(launch.label)
                return planned(launch)

            monkeypatch.setattr(model.runtime, "launch_planned", counted)
            results.append(model.forward(model.embed(model.token), model.position).numpy())
            monkeypatch.delattr(model.runtime, "launch_planned")
        assert np.isfinite(results[0]).all()
        np.testing.assert_array_equal(results[0], results[1], err_msg=f"position {pos}")
    assert not any("combine" in name for name in names[True]), names[True]
    assert sum("combine" in name for name in names[False]) == 2, names[False]
    assert all(p.splits > 1 for p in folded._attention_plans.values()), "the test must cross splits"


DECODE_LAUNCHES_2_BLOCKS = 18  # Gemma 3 270M's shapes and formats, 2 blocks (tests/models/count_launches.py); the heads
# and the combining pass their own launches (FOLD_HEADS off: docs/models.md)


def test_the_captured_decode_step_launch_count(tmp_path):
    """A bound on the launches of one captured decode step of a 2-block checkpoint of Gemma 3 270M's shapes and
    formats (docs/models.md: each costs a dependent launch on the GPU), and its tokens are the host loop's."""
    import count_launches

    model = Model(read_gguf(count_launches.gemma_shaped(tmp_path, 2)), device="ref", context=2048)
    model.decode_from(5, 3)
    launches, names = count_launches.captured_step(model)
    assert launches == len(names) <= DECODE_LAUNCHES_2_BLOCKS, names
    no_eog(model)
    ids = model.tokenize("the cat")
    assert list(model.generate(ids, 3)) == host_loop(model, ids, 3)


def test_float_weights_beside_quantized_ones(tmp_path):
    """A projection whose weights mix F16 and quantized formats (q and k Q8_0, v F16; gate F32, up Q4_0): the float
    part's result goes into its columns by the relayout; logits within 1% of the reference, decode the host loop's."""

    def formats(i):
        return {"q": "Q8_0", "k": "Q8_0", "v": "F16", "o": "Q8_0", "gate": "F32", "up": "Q4_0", "down": "F16"}

    file = read_gguf(tiny.write(tmp_path / "mixed.gguf", "gemma3", seed=5, block_formats=formats))
    model, ref = Model(file, device="ref", context=16), Reference(file)
    ids = model.tokenize("the cat sat on")
    got, want = model.logits(ids), ref.logits(ids)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.01
    no_eog(model)
    assert list(model.generate(ids, 4)) == host_loop(model, ids, 4)


def test_single_weights_on_demand(tiny_files):
    """A block's q, k, v, gate and up by themselves (the forward uses their stacks), uploaded on first use: what
    benchmarks/model_h200.py's torch reference dequantizes; the tied output is the embedding."""
    from hydroplane.ops.quant_matmul import quantized_rows

    model = Model(read_gguf(tiny_files["gemma3"]), device="ref", context=8)
    assert model.output is model.embedding
    for role in ("q", "k", "v", "gate", "up"):
        weight = model.blocks[1][role]
        assert weight.quantized and weight._matrix is None
        rows = quantized_rows(weight.device, np.arange(weight.shape[0], dtype=np.int32), np.float32).numpy()
        np.testing.assert_array_equal(rows, model.file.tensor(weight.name).dequantize())


@pytest.mark.parametrize("device", ["ref", 0])
def test_decode_past_the_context_is_refused_before_anything_is_queued(device, tiny_files):  # noqa: F811
    """A decode step writes its keys and values at the cache row of its position: steps past the context have no row
    (the heads kernel drops such writes: test_the_fused_heads_kernel_is_the_unfused_ops), so decode refuses them
    and queues nothing."""
    model = Model(read_gguf(tiny_files["gemma3"]), device=device, context=8)
    model.decode_from(5, 5)
    model.decode(3)  # positions 5, 6, 7: the last rows of the cache
    assert model.length == 8
    model.decode_from(5, 6)
    with pytest.raises(ContextError, match="exceed the context of 8"):
        model.decode(3)
    assert model.length == 6
