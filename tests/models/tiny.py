"""Tiny GGUF checkpoints with random weights, written by the gguf package: a llama (GQA, interleaved RoPE, SwiGLU)
and a gemma3 (q/k norms, post norms, NeoX RoPE, GeGLU, a sliding window of 3 on its first block), each with a
small SentencePiece vocabulary (control tokens, byte fallback, a user-defined token, merges by score)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from hydroplane.quant import quantize

WORDS = ["▁the", "▁cat", "▁sat", "▁on", "▁mat", "▁a", "▁dog", "the", "at", "▁", "a", "b", "c", "d", "e", "h",
         "m", "n", "o", "s", "t", "g", "▁c", "▁s", "▁m", "▁o", "▁d", "▁t", "th", "he", "ca", "sa", "ma", "do", "og"]


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    types = [3, 3, 3, 2, 3, 3]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    tokens += ["<b>"]  # user-defined: split out of text even without special=True
    types += [4]
    tokens += WORDS
    types += [1] * len(WORDS)
    scores = [0.0] * (len(tokens) - len(WORDS)) + [-float(len(WORDS) - i) / (1 + len(w)) for i, w in
                                                    enumerate(WORDS)]
    scores = [s if t == 1 else 0.0 for s, t in zip(scores, types)]
    for i, w in enumerate(WORDS):  # longer pieces score higher, so merges prefer whole words
        scores[len(tokens) - len(WORDS) + i] = float(len(w)) - i * 1e-3
    return tokens, scores, types


# Gemma 3 270M's shapes and, per block, its weights' formats (tools/gemma3_270m_layout.json): q, k, gate, up
# Q5_0; v Q8_0 on the blocks of GEMMA_270M_Q8_V (mod 18) and Q5_0 on the others; o Q4_K; down Q6_K where v is Q8_0,
# else Q4_K
GEMMA_270M_DIMS = {"n_embd": 640, "n_ff": 2048, "head_dim": 256, "n_head": 4, "n_head_kv": 1}
GEMMA_270M_Q8_V = (0, 1, 4, 7, 10, 13, 15, 16, 17)


def gemma_270m_formats(i: int) -> dict[str, str]:
    wide = i % 18 in GEMMA_270M_Q8_V
    return {"q": "Q5_0", "k": "Q5_0", "v": "Q8_0" if wide else "Q5_0", "o": "Q4_K", "gate": "Q5_0", "up": "Q5_0",
            "down": "Q6_K" if wide else "Q4_K"}


def write(path: Path, arch: str, seed: int = 0, n_layer: int = 2, formats=("Q8_0", "Q5_0"),
          softcap: float = 0.0, dims: dict | None = None, block_formats=None) -> Path:
    """A random checkpoint of `arch` ("llama" or "gemma3") at `path`; `softcap`: gemma3's
    final_logit_softcapping (0: none); `dims` overrides the shapes (n_embd, n_ff, head_dim, n_head, n_head_kv);
    `block_formats(i)` gives block i's formats by role (q, k, v, o, gate, up, down) instead of `formats`."""
    rng = np.random.default_rng(seed)
    shape = {"n_embd": 64, "n_ff": 128, "head_dim": 16, "n_head": 4, "n_head_kv": 2 if arch == "llama" else 1,
             **(dims or {})}
    n_embd, n_ff, head_dim = shape["n_embd"], shape["n_ff"], shape["head_dim"]
    n_head, n_head_kv = shape["n_head"], shape["n_head_kv"]
    tokens, scores, types = vocabulary()
    w = gguf.GGUFWriter(str(path), arch)
    w.add_uint32(f"{arch}.block_count", n_layer)
    w.add_uint32(f"{arch}.embedding_length", n_embd)
    w.add_uint32(f"{arch}.feed_forward_length", n_ff)
    w.add_uint32(f"{arch}.attention.head_count", n_head)
    w.add_uint32(f"{arch}.attention.head_count_kv", n_head_kv)
    w.add_uint32(f"{arch}.context_length", 64)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6 if arch == "gemma3" else 1e-5)
    if arch == "gemma3":
        w.add_uint32(f"{arch}.attention.key_length", head_dim)
        w.add_uint32(f"{arch}.attention.value_length", head_dim)
        w.add_uint32(f"{arch}.attention.sliding_window", 3)
        w.add_uint32(f"{arch}.attention.sliding_window_pattern", 2)
        w.add_float32(f"{arch}.rope.freq_base", 1e6)
        if softcap:
            w.add_float32(f"{arch}.final_logit_softcapping", softcap)
    else:
        w.add_float32(f"{arch}.rope.freq_base", 500.0)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", scores)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.bos_token_id", 2)
    w.add_uint32("tokenizer.ggml.eos_token_id", 1)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_space_prefix", arch == "llama")
    n_vocab = len(tokens)

    def matrix(name: str, rows: int, cols: int, fmt: str, scale: float) -> None:
        values = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        if fmt == "F32":
            w.add_tensor(name, values)
        elif fmt == "F16":
            w.add_tensor(name, values.astype(np.float16))
        else:
            blocks = np.ascontiguousarray(quantize(values, fmt.lower()).blocks).reshape(rows, -1)
            w.add_tensor(name, blocks, raw_dtype=gguf.GGMLQuantizationType[fmt])

    def norm(name: str, n: int) -> None:
        w.add_tensor(name, (1.0 + 0.3 * rng.standard_normal(n)).astype(np.float32))

    matrix("token_embd.weight", n_vocab, n_embd, "Q8_0", 1.0)
    norm("output_norm.weight", n_embd)
    for i in range(n_layer):
        fmt = formats[i % len(formats)]
        roles = {"q": fmt, "k": formats[(i + 1) % len(formats)], "v": fmt, "o": fmt, "gate": fmt,
                 "up": formats[(i + 2) % len(formats)], "down": fmt}
        if block_formats is not None:
            roles = block_formats(i)
        norm(f"blk.{i}.attn_norm.weight", n_embd)
        matrix(f"blk.{i}.attn_q.weight", n_head * head_dim, n_embd, roles["q"], 0.2)
        matrix(f"blk.{i}.attn_k.weight", n_head_kv * head_dim, n_embd, roles["k"], 0.2)
        matrix(f"blk.{i}.attn_v.weight", n_head_kv * head_dim, n_embd, roles["v"], 0.2)
        matrix(f"blk.{i}.attn_output.weight", n_embd, n_head * head_dim, roles["o"], 0.1)
        norm(f"blk.{i}.ffn_norm.weight", n_embd)
        matrix(f"blk.{i}.ffn_gate.weight", n_ff, n_embd, roles["gate"], 0.2)
        matrix(f"blk.{i}.ffn_up.weight", n_ff, n_embd, roles["up"], 0.2)
        matrix(f"blk.{i}.ffn_down.weight", n_embd, n_ff, roles["down"], 0.1)
        if arch == "gemma3":
            norm(f"blk.{i}.attn_q_norm.weight", head_dim)
            norm(f"blk.{i}.attn_k_norm.weight", head_dim)
            norm(f"blk.{i}.post_attention_norm.weight", n_embd)
            norm(f"blk.{i}.post_ffw_norm.weight", n_embd)
    if arch == "llama":
        matrix("output.weight", n_vocab, n_embd, "Q8_0", 0.3)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
