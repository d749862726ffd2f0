"""A GGUF checkpoint on hydroplane's ops: `Model` (logits, generate, stream_text) with its KV cache on the device.

One forward step for T new tokens at positions p .. p+T-1, every array a DeviceArray of the model's device:

    x = nn.embedding(ids, table) * embedding_scale              (T, n_embd) f32
    per block: h = rms_norm(x) -> q, k, v = matmul(h, W.T)      quantized weights: hydroplane.matmul(x, qw.T)
               q, k = rms_norm per head (gemma3) -> rotary_embedding (the block's base, scale, style)
               q -> (heads, T, dim) f16; k, v -> the block's cache (kv heads, context, dim) f16 at row p
               o = attention(q, cache[:p+T], causal, window, scale) -> (T, heads * dim) f32 -> matmul(o, Wo.T)
               [post norm] -> x = add(x, o); the FFN the same way with gated(gate, up, activation)
    logits = matmul(rms_norm(x), output.T)                      prefill keeps only the last position

The relayouts between the projections' (tokens, heads, dim) order and attention's (heads, tokens, dim), with the
f32 -> f16 rounding, and the embedding scale are kernels/models/relayout.py. Each step still reads the sampled id
back to the host (the end-of-generation check) and sends the next step's ids and positions from there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np

from hydroplane.kernels.models.relayout import THREADS as RELAYOUT_THREADS
from hydroplane.kernels.models.relayout import relayout_kernel
from hydroplane.kernels.nn.common import stride_groups
from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import DeviceArray, prepare
from hydroplane.launch.runtime import canonical_device, runtime
from hydroplane.models.arch import Config
from hydroplane.models.errors import ContextError, ModelError
from hydroplane.models.gguf_file import GGUFFile
from hydroplane.models.tokenizer import Tokenizer
from hydroplane.models.weights import Weights
from hydroplane.ops import nn
from hydroplane.ops.attention import attention
from hydroplane.ops.matmul import matmul
from hydroplane.ops.quant_matmul import upload
from hydroplane.quant import from_bytes

QUANT_FORMATS = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q5_0": "q5_0", "Q4_K": "q4_k", "Q6_K": "q6_k"}
KINDS = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
DEFAULT_CONTEXT = 2048


class _Matrix:
    """One weight on the device: quantized blocks (matmul(x, w.T) dequantizes in its loads) or f16 values."""

    def __init__(self, model: Model, name: str):
        tensor = model.file.tensor(name)
        self.name, self.shape = name, tensor.shape
        if tensor.format in QUANT_FORMATS:
            self.host = from_bytes(np.asarray(tensor.raw), QUANT_FORMATS[tensor.format], tensor.shape)
            self.device = upload(self.host, model.device)
            self.quantized = True
        else:
            self.host = None
            self.device = device_array(tensor.dequantize().astype(np.float16), model.device)
            self.quantized = False

    def apply(self, model: Model, x: DeviceArray) -> DeviceArray:
        """x @ w.T in f32 (T, N)."""
        if self.quantized:
            return matmul(x, self.device.T)
        x16 = model.relayout(x, np.float16, (1, x.shape[0], x.shape[1]), 1, 0)
        return matmul(x16.reshape(x.shape[0], x.shape[1]), self.device.T, out_dtype=np.float32)


class Model:
    """A checkpoint of an architecture of hydroplane.models.arch on one device (None: the default, "ref", or a
    Vulkan device number). `context`: the positions its KV cache holds (default min(the file's, 2048))."""

    def __init__(self, file: GGUFFile, device=None, context: int | None = None):
        self.file = file
        self.weights = Weights(file, keep=False)
        self.config: Config = self.weights.config
        self.tokenizer = Tokenizer.from_metadata(file.metadata, path=file.path)
        if self.tokenizer.n_vocab != self.config.n_vocab:
            raise ModelError(f"{file.path}: {self.tokenizer.n_vocab} tokens but an embedding of "
                             f"{self.config.n_vocab} rows")
        c = self.config
        self.context = int(context) if context is not None else min(c.context_length, DEFAULT_CONTEXT)
        if self.context < 1:
            raise ContextError(f"context must be at least 1 position, not {context}")
        self.device = canonical_device(device)
        self.runtime = runtime(self.device)
        self._pipelines: dict = {}

        def vec(name: str) -> DeviceArray:
            return device_array(file.tensor(name).dequantize().astype(np.float32).reshape(-1), self.device)

        self.blocks = []
        for i in range(c.n_layer):
            names = c.block_tensors(i)
            block = {role: (_Matrix(self, n) if role in ("q", "k", "v", "o", "gate", "up", "down") else vec(n))
                     for role, n in names.items()}
            self.blocks.append(block)
        self.output_norm = vec("output_norm.weight")
        self.output = _Matrix(self, self.weights.output_name)
        tied = self.weights.output_name == "token_embd.weight"
        self.embedding = self.output if tied else _Matrix(self, "token_embd.weight")
        self.cache_k = [self._zeros((c.n_head_kv, self.context, c.head_dim)) for _ in range(c.n_layer)]
        self.cache_v = [self._zeros((c.n_head_kv, self.context, c.head_dim_v)) for _ in range(c.n_layer)]
        self.length = 0  # positions of the cache in use

    def _zeros(self, shape) -> DeviceArray:
        return device_array(np.zeros(shape, np.float16), self.device)

    # -- the text side ---------------------------------------------------------------------------------------
    def tokenize(self, text: str, bos: bool = True, special: bool = False) -> list[int]:
        return self.tokenizer.tokenize(text, bos=bos, special=special)

    def detokenize(self, ids, special: bool = False) -> str:
        return self.tokenizer.detokenize(ids, special=special)

    # -- kernels ---------------------------------------------------------------------------------------------
    def relayout(self, src: DeviceArray, dtype, abc: tuple[int, int, int], dst_rows: int, row0: int,
                 dst: DeviceArray | None = None, scale: float = 1.0) -> DeviceArray:
        """dst[((b * dst_rows) + row0 + a) * C + c] = src[a, b, c] * scale (kernels/models/relayout.py), rounded to
        dtype; a new (B, dst_rows, C) array unless dst is given."""
        a, b, c = abc
        if dst is None:
            dst = device_array(np.empty((b, dst_rows, c), dtype), self.device)
        kernel = relayout_kernel(KINDS[np.dtype(src.dtype)], KINDS[np.dtype(dst.dtype)])
        executor = self.runtime.executor
        if kernel not in self._pipelines:
            spec = kernel.compile(executor.target)
            self._pipelines[kernel] = (spec, executor.kernel(spec.words))
        spec, checked = self._pipelines[kernel]
        args = {"src": nn.view(src, src.dtype), "dst": nn.view(dst, dst.dtype), "a_n": a, "b_n": b, "c_n": c,
                "dst_rows": dst_rows, "row0": row0, "scale": float(scale)}
        with prepare(executor, checked, spec, (stride_groups(a * b * c, RELAYOUT_THREADS), 1, 1), args) as launch:
            launch.dispatch()
        return dst

    def embed(self, ids: np.ndarray) -> DeviceArray:
        """The rows of `ids` times the embedding scale, (T, n_embd) f32 on the device (hydroplane.nn.embedding of
        the quantized table, then the scaled relayout; a float table's rows through the f16 copy)."""
        table = self.embedding
        rows = nn.embedding(ids.astype(np.int32), table.device)
        if not isinstance(rows, DeviceArray):
            rows = device_array(np.asarray(rows, np.float32), self.device)
        if np.dtype(rows.dtype) != np.float32 or self.config.embedding_scale != 1.0:
            return self.relayout(rows, np.float32, (ids.size, 1, self.config.n_embd), ids.size, 0,
                                 scale=self.config.embedding_scale).reshape(ids.size, self.config.n_embd)
        return rows

    # -- the forward step ------------------------------------------------------------------------------------
    def _check_ids(self, ids) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
            raise ModelError(f"token ids must be a non-empty 1-D sequence of integers, not {ids.dtype} {ids.shape}")
        if ids.min() < 0 or ids.max() >= self.config.n_vocab:
            raise ModelError(f"token ids must lie in [0, {self.config.n_vocab}); got {ids.min()} .. {ids.max()}")
        return ids.astype(np.int64)

    def reset(self) -> None:
        """Forget the cached positions (the next step starts at position 0)."""
        self.length = 0

    def step(self, ids, last_only: bool = True) -> DeviceArray:
        """Run `ids` at the next positions of the cache; the logits (1 or T, n_vocab) f32 on the device."""
        c = self.config
        ids = self._check_ids(ids)
        T, p = ids.size, self.length
        if p + T > self.context:
            raise ContextError(f"{p} cached positions and {T} new tokens exceed the context of {self.context} "
                               "positions (load(..., context=N) holds more)")
        positions = np.arange(p, p + T, dtype=np.int32)
        x = self.embed(ids)
        S, group = p + T, c.n_head // c.n_head_kv
        for i, (block, layer) in enumerate(zip(self.blocks, c.layers)):
            h = nn.rms_norm(x, c.n_embd, block["attn_norm"], eps=c.eps)
            q = block["q"].apply(self, h).reshape(T, c.n_head, c.head_dim)
            k = block["k"].apply(self, h).reshape(T, c.n_head_kv, c.head_dim)
            v = block["v"].apply(self, h).reshape(T, c.n_head_kv, c.head_dim_v)
            if c.arch.qk_norm:
                q = nn.rms_norm(q, c.head_dim, block["q_norm"], eps=c.eps)
                k = nn.rms_norm(k, c.head_dim, block["k_norm"], eps=c.eps)
            rope = dict(theta=layer.rope_base, style=c.arch.rope_style, rotary_dim=c.n_rot,
                        freq_scale=layer.rope_scale)
            q = nn.rotary_embedding(q, positions, **rope)
            k = nn.rotary_embedding(k, positions, **rope)
            q16 = self.relayout(q, np.float16, (T, c.n_head, c.head_dim), T, 0)
            self.relayout(k, np.float16, (T, c.n_head_kv, c.head_dim), self.context, p, dst=self.cache_k[i])
            self.relayout(v, np.float16, (T, c.n_head_kv, c.head_dim_v), self.context, p, dst=self.cache_v[i])
            o16 = device_array(np.empty((c.n_head, T, c.head_dim_v), np.float16), self.device)
            for g in range(c.n_head_kv):
                heads = slice(g * group, (g + 1) * group)
                kg = self.cache_k[i][g][:S].reshape(1, 1, S, c.head_dim)
                vg = self.cache_v[i][g][:S].reshape(1, 1, S, c.head_dim_v)
                qg = q16[heads].reshape(1, group, T, c.head_dim)
                og = o16[heads].reshape(1, group, T, c.head_dim_v)
                attention(qg, kg, vg, causal=True, window=layer.window, scale=c.attention_scale, out=og)
            o = self.relayout(o16, np.float32, (c.n_head, T, c.head_dim_v), c.n_head, 0)
            o = block["o"].apply(self, o.reshape(T, c.n_head * c.head_dim_v))
            if c.arch.post_norms:
                o = nn.rms_norm(o, c.n_embd, block["post_attn_norm"], eps=c.eps)
            x = nn.add(x, o)
            h = nn.rms_norm(x, c.n_embd, block["ffn_norm"], eps=c.eps)
            f = nn.gated(block["gate"].apply(self, h), block["up"].apply(self, h), c.arch.activation)
            f = block["down"].apply(self, f)
            if c.arch.post_norms:
                f = nn.rms_norm(f, c.n_embd, block["post_ffn_norm"], eps=c.eps)
            x = nn.add(x, f)
        self.length = S
        if last_only:
            x = x[T - 1:T]
        h = nn.rms_norm(x, c.n_embd, self.output_norm, eps=c.eps)
        logits = self.output.apply(self, h)
        if c.logit_softcap:
            raise ModelError("final logit softcapping is not run on the device yet (the reference runs it)")
        return logits

    def logits(self, ids) -> np.ndarray:
        """float32 logits (len(ids), n_vocab) of the sequence from position 0 (teacher-forced: row t predicts
        token t + 1). The cache is reset first."""
        self.reset()
        return np.asarray(self.step(ids, last_only=False).numpy(), np.float32)

    # -- generation ------------------------------------------------------------------------------------------
    def _prompt_ids(self, prompt, special: bool) -> list[int]:
        if isinstance(prompt, str):
            return self.tokenize(prompt, bos=True, special=special)
        return [int(t) for t in self._check_ids(list(prompt))]

    def generate(self, prompt: str | Sequence[int], max_tokens: int = 16, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int | None = None, *, special: bool = False,
                 stats: dict | None = None) -> Iterator[int]:
        """Token ids after `prompt` (text, tokenized with BOS, or ids): greedy at temperature 0, else sampled
        (top_k, top_p, seed) on the device; at most max_tokens, stopping before an end-of-generation token.
        Refuses (ContextError) a prompt and max_tokens that do not fit the context. `stats`, when given, gets
        prefill/decode token counts and seconds."""
        ids = self._prompt_ids(prompt, special)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ModelError(f"max_tokens must be a non-negative integer, not {max_tokens!r}")
        if len(ids) + max_tokens > self.context:
            raise ContextError(f"a prompt of {len(ids)} tokens and {max_tokens} new tokens need {len(ids) + max_tokens}"
                               f" positions; the context holds {self.context} (load(..., context=N) holds more)")
        return self._generate(ids, max_tokens, temperature, top_k, top_p, seed, stats)

    def _generate(self, ids, max_tokens, temperature, top_k, top_p, seed, stats) -> Iterator[int]:
        if max_tokens == 0:
            return
        self.reset()
        start = time.perf_counter()
        logits = self.step(ids)
        for n in range(max_tokens):
            token = int(np.asarray(nn.sample(logits, temperature=temperature, top_k=top_k, top_p=top_p,
                                             seed=None if seed is None else seed + n).numpy()).reshape(-1)[0])
            now = time.perf_counter()
            if stats is not None:
                if n == 0:
                    stats.update(prefill_tokens=len(ids), prefill_s=now - start, decode_tokens=0, decode_s=0.0)
                else:
                    stats["decode_tokens"] += 1
                    stats["decode_s"] += now - start
            start = now
            if self.tokenizer.is_eog(token):
                return
            yield token
            if n + 1 < max_tokens:
                logits = self.step([token])

    def stream_text(self, prompt, max_tokens: int = 16, **options) -> Iterator[str]:
        """The text of generate(...)'s tokens, piece by piece (never a split UTF-8 character)."""
        pieces = self.tokenizer.incremental()
        for token in self.generate(prompt, max_tokens, **options):
            text = pieces.push(token)
            if text:
                yield text
        rest = pieces.flush()
        if rest:
            yield rest
