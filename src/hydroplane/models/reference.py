"""The NumPy float64 reference forward pass of each architecture: logits for a token sequence, computed from the
file's dequantized weights the way llama.cpp's graphs compute them (src/models/gemma3.cpp, llama.cpp), one
function for every row of ARCHITECTURES (the row's data picks norms, activation, RoPE, windows and scalings).

    ref = Reference(read_gguf(path))
    logits = ref.logits([2, 818, 5279])      # float64 (3, n_vocab)

It is the truth hydroplane's device path is measured against (tests/models/), and `hydroplane generate
--device ref-numpy`'s engine; it holds no cache of keys and values (each call runs the whole sequence).
"""

from __future__ import annotations

import math

import numpy as np

from hydroplane.models.arch import Config
from hydroplane.models.errors import ModelError
from hydroplane.models.gguf_file import GGUFFile
from hydroplane.models.weights import Weights

GELU_C = math.sqrt(2.0 / math.pi)


def rms_norm(x: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if weight is None else y * weight


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


ACTIVATIONS = {"gelu_tanh": gelu_tanh, "silu": silu}


def rope(x: np.ndarray, positions: np.ndarray, n_rot: int, base: float, scale: float, style: str) -> np.ndarray:
    """ggml's RoPE (no YaRN) of x (T, H, D): dimension pairs (i, i + n_rot/2) ("neox") or (2i, 2i+1)
    ("interleaved") turned by pos * scale * base^(-2i/n_rot); dimensions past n_rot unchanged."""
    half = n_rot // 2
    theta = positions.astype(np.float64)[:, None] * scale * base ** (-2.0 * np.arange(half) / n_rot)
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    out = x.copy()
    if style == "neox":
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half], out[..., half:n_rot] = a * cos - b * sin, a * sin + b * cos
    elif style == "interleaved":
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = a * cos - b * sin, a * sin + b * cos
    else:
        raise ModelError(f"unknown RoPE style {style!r}")
    return out


def attention_mask(n_query: int, n_key: int, window: int | None) -> np.ndarray:
    """True where query i (at position n_key - n_query + i) may see key j: causal, and within `window` positions
    (llama.cpp's rule: masked when the query's position minus the key's is window or more)."""
    qpos = np.arange(n_key - n_query, n_key)[:, None]
    kpos = np.arange(n_key)[None, :]
    allowed = kpos <= qpos
    if window is not None:
        allowed &= (qpos - kpos) < window
    return allowed


class Reference:
    """float64 logits of a GGUF checkpoint (the architectures of hydroplane.models.arch)."""

    def __init__(self, file: GGUFFile, keep: bool = False):
        self.weights = Weights(file, keep=keep)
        self.config: Config = self.weights.config

    def w(self, i: int, role: str) -> np.ndarray:
        return self.weights.block(i, role).astype(np.float64)

    def hidden(self, ids) -> np.ndarray:
        """The final normed hidden states (T, n_embd) of the sequence `ids`."""
        c = self.config
        ids = np.asarray(ids, np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ModelError(f"logits takes a non-empty 1-D sequence of token ids, not shape {ids.shape}")
        if ids.min() < 0 or ids.max() >= c.n_vocab:
            raise ModelError(f"token ids must lie in [0, {c.n_vocab}); got {ids.min()}..{ids.max()}")
        T = ids.size
        positions = np.arange(T)
        x = self.weights.embedding_rows(ids).astype(np.float64) * c.embedding_scale
        act = ACTIVATIONS[c.arch.activation]
        for i, layer in enumerate(c.layers):
            h = rms_norm(x, self.w(i, "attn_norm"), c.eps)
            q = (h @ self.w(i, "q").T).reshape(T, c.n_head, c.head_dim)
            k = (h @ self.w(i, "k").T).reshape(T, c.n_head_kv, c.head_dim)
            v = (h @ self.w(i, "v").T).reshape(T, c.n_head_kv, c.head_dim_v)
            if c.arch.qk_norm:
                q = rms_norm(q, self.w(i, "q_norm"), c.eps)
                k = rms_norm(k, self.w(i, "k_norm"), c.eps)
            q = rope(q, positions, c.n_rot, layer.rope_base, layer.rope_scale, c.arch.rope_style)
            k = rope(k, positions, c.n_rot, layer.rope_base, layer.rope_scale, c.arch.rope_style)
            group = c.n_head // c.n_head_kv
            k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
            scores = np.einsum("thd,shd->hts", q * c.attention_scale, k)
            scores = np.where(attention_mask(T, T, layer.window)[None], scores, -np.inf)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            attn = np.einsum("hts,shd->thd", probs, v).reshape(T, c.n_head * c.head_dim_v)
            out = attn @ self.w(i, "o").T
            if c.arch.post_norms:
                out = rms_norm(out, self.w(i, "post_attn_norm"), c.eps)
            x = x + out
            h = rms_norm(x, self.w(i, "ffn_norm"), c.eps)
            f = (act(h @ self.w(i, "gate").T) * (h @ self.w(i, "up").T)) @ self.w(i, "down").T
            if c.arch.post_norms:
                f = rms_norm(f, self.w(i, "post_ffn_norm"), c.eps)
            x = x + f
        return rms_norm(x, self.weights.get("output_norm.weight").astype(np.float64), c.eps)

    def logits(self, ids, last_only: bool = False) -> np.ndarray:
        """float64 logits (T, n_vocab) of the sequence (teacher-forced: row t predicts token t + 1)."""
        h = self.hidden(ids)
        if last_only:
            h = h[-1:]
        out = np.empty((h.shape[0], self.config.n_vocab), np.float64)
        for start, rows in self.weights.output_chunks():
            out[:, start:start + rows.shape[0]] = h @ rows.astype(np.float64).T
        cap = self.config.logit_softcap
        if cap:
            out = np.tanh(out / cap) * cap
        return out
