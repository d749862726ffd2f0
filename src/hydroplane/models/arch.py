"""The architectures as data: one `Architecture` row per GGUF `general.architecture`, and the `Config` a file's
metadata gives it.

The conventions are llama.cpp's (its graphs src/models/gemma3.cpp and llama.cpp are the ground truth): the
converter has folded Gemma's `1 + w` into the stored norm weights, so every norm is plain RMS norm times the stored
weight; a llama file's Q and K rows are stored permuted for the interleaved (ggml "normal") RoPE. A new
architecture of the same family is a new row of ARCHITECTURES, not new code.

Per layer (`Config.layers`): the RoPE base and scale, and the sliding window (None: full causal attention).
Gemma 3 slides a window of `attention.sliding_window` keys on five layers of six (the sixth, eleventh ... are
global: llama.cpp's pattern of 6, `il % 6 < 5` slides) with RoPE base `rope.freq_base_swa` (10000 when absent)
on the sliding layers and `rope.freq_base` on the global ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hydroplane.models.errors import ModelError


@dataclass(frozen=True)
class Architecture:
    """What distinguishes one decoder-only architecture from another, as data."""

    name: str
    activation: str  # the FFN's gate: "gelu_tanh" (GeGLU) or "silu" (SwiGLU), act(gate) * up
    rope_style: str  # "neox" (halves rotated) or "interleaved" (pairs rotated; ggml's "normal")
    qk_norm: bool  # RMS norm of each head of q and k before RoPE (attn_q_norm, attn_k_norm)
    post_norms: bool  # RMS norm of the attention and FFN outputs before their residual adds
    embedding_scale: str  # "sqrt_embd": the token embeddings times sqrt(n_embd); "none"
    swa_pattern: int | None  # every n-th layer global, the others sliding (when the file has a window)
    swa_rope_base: float | None  # the sliding layers' RoPE base when the file gives none
    rope_base: float = 10000.0  # rope.freq_base when the file gives none
    logit_softcap: bool = False  # reads final_logit_softcapping (tanh capping of the logits) when present
    # block counts whose query scale is 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim) (Gemma 3 27B)
    embd_query_scale_blocks: tuple[int, ...] = ()


ARCHITECTURES = {
    "gemma3": Architecture("gemma3", activation="gelu_tanh", rope_style="neox", qk_norm=True, post_norms=True,
                           embedding_scale="sqrt_embd", swa_pattern=6, swa_rope_base=10000.0, logit_softcap=True,
                           embd_query_scale_blocks=(62,)),
    "llama": Architecture("llama", activation="silu", rope_style="interleaved", qk_norm=False, post_norms=False,
                          embedding_scale="none", swa_pattern=None, swa_rope_base=None),
}

# The tensor names of a block (llama.cpp's gguf names), `{i}` the block's index.
BLOCK_TENSORS = {
    "attn_norm": "blk.{i}.attn_norm.weight", "q": "blk.{i}.attn_q.weight", "k": "blk.{i}.attn_k.weight",
    "v": "blk.{i}.attn_v.weight", "o": "blk.{i}.attn_output.weight", "ffn_norm": "blk.{i}.ffn_norm.weight",
    "gate": "blk.{i}.ffn_gate.weight", "up": "blk.{i}.ffn_up.weight", "down": "blk.{i}.ffn_down.weight",
}
QK_NORM_TENSORS = {"q_norm": "blk.{i}.attn_q_norm.weight", "k_norm": "blk.{i}.attn_k_norm.weight"}
POST_NORM_TENSORS = {"post_attn_norm": "blk.{i}.post_attention_norm.weight",
                     "post_ffn_norm": "blk.{i}.post_ffw_norm.weight"}


@dataclass(frozen=True)
class LayerSpec:
    """One block's attention: its RoPE base and frequency scale, its sliding window (None: none)."""

    rope_base: float
    rope_scale: float
    window: int | None


@dataclass(frozen=True)
class Config:
    """A file's hyperparameters under its architecture."""

    arch: Architecture
    n_layer: int
    n_embd: int
    n_ff: int
    n_head: int
    n_head_kv: int
    head_dim: int  # key (and query) head dimension
    head_dim_v: int
    n_rot: int  # rotated dimensions of each head (rope.dimension_count)
    n_vocab: int
    context_length: int
    eps: float
    attention_scale: float
    embedding_scale: float
    logit_softcap: float  # 0: none
    layers: tuple[LayerSpec, ...]

    def block_tensors(self, i: int) -> dict[str, str]:
        names = dict(BLOCK_TENSORS)
        if self.arch.qk_norm:
            names.update(QK_NORM_TENSORS)
        if self.arch.post_norms:
            names.update(POST_NORM_TENSORS)
        return {key: name.format(i=i) for key, name in names.items()}


def _get(metadata: dict, key: str, default=None, *, path="the file"):
    if key in metadata:
        return metadata[key]
    if default is None:
        raise ModelError(f"{path}: the metadata has no {key!r}")
    return default


def config_from_metadata(metadata: dict, n_vocab: int | None = None, path="the file") -> Config:
    """The Config of a GGUF file's metadata (llama.cpp's keys and defaults); a ModelError for an unknown
    architecture or a missing key."""
    name = metadata.get("general.architecture")
    if name not in ARCHITECTURES:
        raise ModelError(f"{path}: architecture {name!r} is not one hydroplane.models runs "
                         f"(it runs {', '.join(sorted(ARCHITECTURES))})")
    arch = ARCHITECTURES[name]

    def get(key, default=None):
        return _get(metadata, f"{name}.{key}", default, path=path)

    n_layer, n_embd = int(get("block_count")), int(get("embedding_length"))
    n_head = int(get("attention.head_count"))
    n_head_kv = int(get("attention.head_count_kv", n_head))
    head_dim = int(get("attention.key_length", n_embd // n_head))
    head_dim_v = int(get("attention.value_length", head_dim))
    if n_head % n_head_kv:
        raise ModelError(f"{path}: {n_head} query heads are not a multiple of {n_head_kv} key/value heads")
    if n_vocab is None:
        n_vocab = len(_get(metadata, "tokenizer.ggml.tokens", path=path))
    rope_base = float(get("rope.freq_base", arch.rope_base))
    rope_scale = 1.0
    scaling = metadata.get(f"{name}.rope.scaling.type", "none")
    factor = float(metadata.get(f"{name}.rope.scaling.factor", 0.0) or 0.0)
    if scaling == "linear" and factor > 0:
        rope_scale = 1.0 / factor
    elif scaling not in ("none", "linear") and factor not in (0.0, 1.0):
        raise ModelError(f"{path}: RoPE scaling {scaling!r} is not one hydroplane.models runs (linear or none)")
    window = int(get("attention.sliding_window", 0) or 0) if arch.swa_pattern else 0
    pattern = int(get("attention.sliding_window_pattern", arch.swa_pattern or 0) or 0)
    layers = []
    for il in range(n_layer):
        sliding = window > 0 and (pattern == 0 or il % pattern < pattern - 1)
        if sliding:
            base = float(get("rope.freq_base_swa", arch.swa_rope_base or rope_base))
            layers.append(LayerSpec(base, 1.0, window))
        else:
            layers.append(LayerSpec(rope_base, rope_scale, None))
    softcap = float(metadata.get(f"{name}.final_logit_softcapping", 0.0) or 0.0) if arch.logit_softcap else 0.0
    return Config(
        arch=arch, n_layer=n_layer, n_embd=n_embd, n_ff=int(get("feed_forward_length")), n_head=n_head,
        n_head_kv=n_head_kv, head_dim=head_dim, head_dim_v=head_dim_v,
        n_rot=int(get("rope.dimension_count", head_dim)), n_vocab=int(n_vocab),
        context_length=int(get("context_length", 2048)), eps=float(get("attention.layer_norm_rms_epsilon", 1e-5)),
        attention_scale=1.0 / math.sqrt(n_embd / n_head if n_layer in arch.embd_query_scale_blocks else head_dim),
        embedding_scale=math.sqrt(n_embd) if arch.embedding_scale == "sqrt_embd" else 1.0,
        logit_softcap=softcap, layers=tuple(layers))
