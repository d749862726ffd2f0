"""A GGUF checkpoint on hydroplane's ops: `Model` (logits, generate, stream_text) with its KV cache on the device.

One forward step for T new tokens at positions p .. p+T-1, every array a DeviceArray of the model's device:

    x = nn.embedding(ids, table) * embedding_scale              (T, n_embd) f32
    per block: h = rms_norm(x) -> q, k, v = matmul(h, W.T)      quantized weights: hydroplane.matmul(x, qw.T)
               q, k: rms_norm per head (gemma3), rotary (the block's base, scale, style), f16, relayout: one
               kernel each (kernels/models/heads.py): q -> (heads, T, dim); k -> the block's cache (kv heads,
               context, dim) at row p; v -> the cache (the relayout kernel)
               o = attention(q, cache, kv_len=p+T, causal, window, scale) -> (T, heads * dim) f32 -> matmul(o, Wo.T)
               x = add(x, o) (gemma3: x = rms_norm(o, residual=x), one kernel); the FFN the same way with
               gated(gate, up, activation)
    logits = matmul(rms_norm(x), output.T) [softcap]            prefill keeps only the last position

The relayouts between the projections' (tokens, heads, dim) order and attention's (heads, tokens, dim), with the
f32 -> f16 rounding, and the embedding scale are kernels/models/relayout.py. The positions (rotary and the cache
row), the cache's valid length and the token ids are read by the kernels from device buffers, so one decode step
is captured (`hydroplane.capture`) once per sampling setting and replayed for every token: it embeds the id in
`token`, runs at `position` with `kv_len` keys, samples with the seed in `seed`, and the advance kernel
(kernels/models/advance.py) moves that state on and keeps the id in `history`. The host reads the history once per
batch of steps (the end-of-generation check).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import numpy as np

from hydroplane.kernels.attention import AttentionProblem, attention_plan, default_config
from hydroplane.kernels.models.advance import advance_kernel
from hydroplane.kernels.models.heads import attention_heads_kernel, heads_kernel
from hydroplane.kernels.models.relayout import THREADS as RELAYOUT_THREADS
from hydroplane.kernels.models.relayout import relayout_kernel
from hydroplane.kernels.nn.common import stride_groups
from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import DeviceArray, prepare
from hydroplane.launch.runtime import Graph, canonical_device, capture, runtime
from hydroplane.models.arch import Config
from hydroplane.models.errors import ContextError, ModelError
from hydroplane.models.gguf_file import GGUFFile
from hydroplane.models.tokenizer import Tokenizer
from hydroplane.models.weights import Weights
from hydroplane.ops import nn
from hydroplane.ops.attention import attention
from hydroplane.ops.matmul import matmul
from hydroplane.ops.nn import inverse_frequencies
from hydroplane.ops.quant_matmul import Prologue, prologue_fits, quantized_rows, run_quantized, upload, weight_of
from hydroplane.quant import from_bytes

QUANT_FORMATS = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q5_0": "q5_0", "Q4_K": "q4_k", "Q6_K": "q6_k"}
KINDS = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
DEFAULT_CONTEXT = 2048
MATRICES = ("q", "k", "v", "o", "gate", "up", "down")  # a block's weights (the others are norm vectors)
FIRST_BATCH, LAST_BATCH = 1, 16  # decode steps replayed between two reads of the history (doubling between them)
# A decode step's heads (norms, RoPE, the new cache row) in attention's main pass (Model.attention_decode), and with
# it the combining pass in the o projection's GEMV (FOLD_COMBINE). Both off: on an H100 (2026-12-06 05:37 UTC,
# benchmarks/model_profile.py --folds, the captured step at depth 4096, docs/perf.md) the step took 1846.9 us folded,
# 1825.5 with the combining pass its own launch and 1772.3 with the heads and the combining pass as their own launches
FOLD_HEADS = False
FOLD_COMBINE = False
PREFILL_BUCKET = 16  # the smallest padded prefill (Model.step): prompts of 2 .. 16 tokens share one plan


class _Matrix:
    """One weight on the device, or several stacked by rows (`names`: ggml's rows are independent, so the blocks of
    weights of one format concatenate into one): quantized blocks (matmul(x, w.T) dequantizes in its loads) or f16
    values."""

    def __init__(self, model: Model, names: str | Sequence[str]):
        names = [names] if isinstance(names, str) else list(names)
        tensors = [model.file.tensor(name) for name in names]
        self.name = " + ".join(names)
        self.shape = (sum(t.shape[0] for t in tensors), tensors[0].shape[1])
        formats = {t.format for t in tensors}
        if len(formats) == 1 and tensors[0].format in QUANT_FORMATS:
            raw = np.concatenate([np.asarray(t.raw).reshape(-1) for t in tensors]) if len(tensors) > 1 else \
                np.asarray(tensors[0].raw)
            self.host = from_bytes(raw, QUANT_FORMATS[tensors[0].format], self.shape)
            self.device = upload(self.host, model.device)
            self.quantized = True
        elif not formats & set(QUANT_FORMATS):
            self.host = None
            values = np.concatenate([t.dequantize() for t in tensors]) if len(tensors) > 1 else tensors[0].dequantize()
            self.device = device_array(values.astype(np.float16), model.device)
            self.quantized = False
        else:
            raise ModelError(f"{self.name}: formats {sorted(formats)} cannot be stacked into one weight")

    def takes_prologue(self) -> bool:
        """Whether its decode GEMV computes its input row from the step's (ops.quant_matmul.Prologue)."""
        return self.quantized and self.host is not None and prologue_fits(self.host.format, self.shape[1])

    def apply(self, model: Model, x: DeviceArray, out: DeviceArray | None = None, col0: int | None = None,
              prologue: Prologue | None = None) -> DeviceArray:
        """x @ w.T in f32 (T, N), x f32 or f16: a new array, or columns col0 .. of `out`; `prologue` (quantized
        weights, T = 1) computes the row from x and its arrays in the GEMV."""
        if self.quantized:
            return run_quantized(x, weight_of(self.device.T), out=out, col0=col0, prologue=prologue,
                                 out_dtype=np.float32)
        assert prologue is None
        T, K = x.shape
        x16 = x if np.dtype(x.dtype) == np.float16 else model.relayout(x, np.float16, (1, T, K), 1, 0)
        y = matmul(x16.reshape(T, K), self.device.T, out_dtype=np.float32)
        if out is None:
            return y
        return model.relayout(y, np.float32, (T, 1, self.shape[0]), T, 0, dst=out, ld=out.shape[1], col=col0 or 0)


class _OnDemand:
    """One weight of the file by itself as a _Matrix, uploaded on first use: a block's q, k, v, gate and up (the
    forward multiplies by their stacks, block["qkv"] and block["gate_up"]; benchmarks/model_h200.py's torch
    reference reads them one by one)."""

    def __init__(self, model: Model, name: str):
        tensor = model.file.tensor(name)
        self.name, self.shape, self.quantized = name, tensor.shape, tensor.format in QUANT_FORMATS
        self._model = weakref.ref(model)  # no cycle: a model is freed by reference counting, its buffers at once
        self._matrix: _Matrix | None = None

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        if self._matrix is None:
            model = self._model()
            if model is None:
                raise ModelError(f"{self.name}: the model this weight belongs to is gone")
            self._matrix = _Matrix(model, self.name)
        return getattr(self._matrix, attribute)


class _Projection:
    """Weights applied to one input whose results lie side by side in one (T, N) f32 array (q | k | v, gate | up):
    consecutive weights of one format are stacked into one matrix at load, so each run of one format is one
    matmul (Gemma 3 270M: q, k and v where v is Q5_0 as they are; q and k, then v where v is Q8_0), and two runs of
    quantized formats one decode GEMV where ops.quant_matmul.pair_plan finds one for both."""

    def __init__(self, model: Model, names: Sequence[str]):
        runs: list[tuple[str, list[str]]] = []
        for name in names:
            fmt = model.file.tensor(name).format
            key = fmt if fmt in QUANT_FORMATS else "float"
            if runs and runs[-1][0] == key:
                runs[-1][1].append(name)
            else:
                runs.append((key, [name]))
        self.parts: list[tuple[_Matrix, int]] = []
        col = 0
        for _, run in runs:
            matrix = _Matrix(model, run)
            self.parts.append((matrix, col))
            col += matrix.shape[0]
        self.n = col

    def takes_prologue(self) -> bool:
        return all(matrix.takes_prologue() for matrix, _ in self.parts)

    def apply(self, model: Model, x: DeviceArray, prologue: Prologue | None = None) -> DeviceArray:
        """(T, N) f32: every part's x @ w.T in its columns (the prologue's running sum written by the first only)."""
        if len(self.parts) == 1:
            return self.parts[0][0].apply(model, x, prologue=prologue)
        if len(self.parts) == 2 and all(matrix.quantized for matrix, _ in self.parts):  # one launch where it can
            first, second = (weight_of(matrix.device.T) for matrix, _ in self.parts)
            return run_quantized(x, first, second=second, prologue=prologue, out_dtype=np.float32)
        out = model._empty((x.shape[0], self.n), np.float32)
        for matrix, col in self.parts:
            matrix.apply(model, x, out=out, col0=col, prologue=prologue)
            if prologue is not None:
                prologue = replace(prologue, sum_out=None)
        return out


class _Prefill:
    """A bucket's padded prefill (Model.step): its ids, positions and kept row as device buffers, the logits its
    forward writes, and its captured graph once it has one."""

    def __init__(self, model: Model, bucket: int):
        self.ids = device_array(np.zeros(bucket, np.int32), model.device)
        self.positions = device_array(np.zeros(bucket, np.int32), model.device)
        self.row = device_array(np.zeros(1, np.int32), model.device)
        self.logits: DeviceArray | None = None
        self.graph: Graph | None = None
        self.planned = False


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
        if context is not None and (isinstance(context, bool) or not isinstance(context, int | np.integer)):
            raise ContextError(f"context is a number of positions (an int), not {context!r}")
        self.context = int(context) if context is not None else min(c.context_length, DEFAULT_CONTEXT)
        if self.context < 1:
            raise ContextError(f"context must be at least 1 position, not {context}")
        cached = c.n_head_kv * self.context * max(c.head_dim, c.head_dim_v)  # one layer's K or V cache, elements
        if cached >= 1 << 31:  # the kernels index with 32 bits (and the cache would take that much memory)
            raise ContextError(f"context={self.context} makes a layer's KV cache of {cached} elements; the kernels "
                               f"index at most 2**31")
        self.device = canonical_device(device)
        self.runtime = runtime(self.device)
        self._pipelines: dict = {}
        self._attention_plans: dict = {}  # the decode attention's plan per problem (attention_decode)
        self._scratches: dict[str, DeviceArray] = {}

        def vec(name: str) -> DeviceArray:
            return device_array(file.tensor(name).dequantize().astype(np.float32).reshape(-1), self.device)

        self.blocks: list[dict] = []
        for i in range(c.n_layer):
            names = c.block_tensors(i)
            block: dict = {role: vec(n) for role, n in names.items() if role not in MATRICES}
            block["qkv"] = _Projection(self, [names["q"], names["k"], names["v"]])
            block["o"] = _Matrix(self, names["o"])
            block["gate_up"] = _Projection(self, [names["gate"], names["up"]])
            block["down"] = _Matrix(self, names["down"])
            block.update({role: _OnDemand(self, names[role]) for role in ("q", "k", "v", "gate", "up")})
            self.blocks.append(block)
        self.output_norm = vec("output_norm.weight")
        self.output_projection = _Projection(self, [self.weights.output_name])
        self.output = self.output_projection.parts[0][0]
        tied = self.weights.output_name == "token_embd.weight"
        self.embedding = self.output if tied else _Matrix(self, "token_embd.weight")
        self.cache_k = [self._zeros((c.n_head_kv, self.context, c.head_dim)) for _ in range(c.n_layer)]
        self.cache_v = [self._zeros((c.n_head_kv, self.context, c.head_dim_v)) for _ in range(c.n_layer)]
        self.length = 0  # positions of the cache in use
        # the decode state the kernels read and the advance kernel moves on (module docstring)
        self.token = device_array(np.zeros(1, np.int32), self.device)  # the next step's id
        self.position = device_array(np.zeros(1, np.int32), self.device)  # its position
        self.kv_len = device_array(np.zeros(1, np.int32), self.device)  # the cache's valid length in that step
        self.seed = device_array(np.zeros(1, np.uint32), self.device)  # the sampling seed of the next draw
        self.history = device_array(np.zeros(self.context + 1, np.int32), self.device)  # sampled ids by position
        self._graphs: dict[tuple, Graph] = {}  # the captured decode step per sampling setting
        self._planned: set[tuple] = set()  # the settings whose step has run once as calls (planned)
        self._prefills: dict[int, _Prefill] = {}  # the padded prefill of each bucket of lengths (step's docstring)
        self._freq = {key: device_array(inverse_frequencies(key[0], key[1], c.n_rot), self.device)
                      for key in {(layer.rope_base, layer.rope_scale) for layer in c.layers}}  # rotary, per block

    def _empty(self, shape, dtype) -> DeviceArray:
        """A new DeviceArray, unset (allocated, nothing written: allowed inside a capture)."""
        dtype = np.dtype(dtype)
        return DeviceArray(self.runtime.key, self.runtime.executor,
                           self.runtime.alloc(max(4, int(np.prod(shape)) * dtype.itemsize)), dtype, tuple(shape))

    def _zeros(self, shape) -> DeviceArray:
        return device_array(np.zeros(shape, np.float16), self.device)

    # -- the text side ---------------------------------------------------------------------------------------
    def tokenize(self, text: str, bos: bool = True, special: bool = False) -> list[int]:
        return self.tokenizer.tokenize(text, bos=bos, special=special)

    def detokenize(self, ids, special: bool = False) -> str:
        return self.tokenizer.detokenize(ids, special=special)

    # -- kernels ---------------------------------------------------------------------------------------------
    def _pipeline(self, kernel, **constexprs):
        executor = self.runtime.executor
        key = (kernel, tuple(sorted(constexprs.items())))
        if key not in self._pipelines:
            spec = kernel.compile(executor.target, **constexprs)
            self._pipelines[key] = (spec, executor.kernel(spec.words))
        return self._pipelines[key]

    def relayout(self, src: DeviceArray, dtype, abc: tuple[int, int, int], dst_rows: int, row0: int,
                 dst: DeviceArray | None = None, scale: float = 1.0, row0_at: DeviceArray | None = None,
                 ld: int | None = None, col: int = 0) -> DeviceArray:
        """dst[((b * dst_rows) + row0 + a) * ld + col + c] = src[a, b, c] * scale (kernels/models/relayout.py),
        rounded to dtype; a new (B, dst_rows, C) array unless dst is given; ld = C unless given. row0_at: an int32
        DeviceArray whose first element is added to row0 on the device."""
        a, b, c = abc
        if dst is None:
            dst = self._empty((b, dst_rows, c), dtype)
        kernel = relayout_kernel(KINDS[np.dtype(src.dtype)], KINDS[np.dtype(dst.dtype)])
        spec, checked = self._pipeline(kernel, ROW0_DEVICE=row0_at is not None)
        args = {"src": nn.view(src, src.dtype), "dst": nn.view(dst, dst.dtype), "a_n": a, "b_n": b, "c_n": c,
                "dst_rows": dst_rows, "row0": row0, "scale": float(scale), "ld": c if ld is None else ld, "col": col}
        aliases = None
        if row0_at is None:
            aliases = {"row0_at": "src"}  # not read
        else:
            args["row0_at"] = row0_at.reshape(-1)
        with prepare(self.runtime.executor, checked, spec, (stride_groups(a * b * c, RELAYOUT_THREADS), 1, 1), args,
                     aliases=aliases) as launch:
            launch.dispatch()
        return dst

    def heads(self, qkv: DeviceArray, block: dict, positions: DeviceArray, layer, index: int) -> DeviceArray:
        """The projection's output qkv (T, q | k | v columns) f32 made ready for attention in one kernel
        (kernels/models/heads.py): q's and k's per-head RMS norms (gemma3), RoPE at `positions` with the block's base
        and scale, rounded to f16: q into a new (heads, T, head_dim) array (returned), k and v into block `index`'s
        caches at row positions[0] (read on the device)."""
        c = self.config
        T = qkv.shape[0]
        dq = self._empty((c.n_head, T, c.head_dim), np.float16)
        sg = self.runtime.executor.target.subgroup_size
        threads = max(sg, 64) if 64 % sg == 0 or sg > 64 else sg
        spec, checked = self._pipeline(heads_kernel(c.arch.qk_norm, c.arch.rope_style == "neox"), THREADS=threads,
                                       SG=sg)
        k_col = c.n_head * c.head_dim
        args = {"x": qkv.reshape(-1), "positions": positions.reshape(-1),
                "freq": self._freq[(layer.rope_base, layer.rope_scale)], "dq": dq.reshape(-1),
                "dk": self.cache_k[index].reshape(-1), "dv": self.cache_v[index].reshape(-1), "heads_q": c.n_head,
                "heads_kv": c.n_head_kv, "ld": qkv.shape[1], "k_col": k_col, "v_col": k_col + c.n_head_kv * c.head_dim,
                "d": c.head_dim, "d_v": c.head_dim_v, "r": c.n_rot, "q_rows": T, "cache_rows": self.context,
                "eps": float(c.eps)}
        aliases = None
        if c.arch.qk_norm:
            args.update(wq=block["q_norm"], wk=block["k_norm"])
        else:
            aliases = {"wq": "x", "wk": "x"}  # not read
        with prepare(self.runtime.executor, checked, spec, (T * (c.n_head + 2 * c.n_head_kv), 1, 1), args,
                     aliases=aliases) as launch:
            launch.dispatch()
        return dq

    def attention_decode(self, qkv: DeviceArray, block: dict, positions: DeviceArray, layer,
                         index: int, fold: bool = False) -> DeviceArray | tuple[DeviceArray, Prologue] | None:
        """A decode step's heads and attention (what `heads` and `attention` do for one token) with the heads in the
        attention's main pass (kernels/models/heads.py, attention_heads_kernel; the combining pass as attention's):
        o (heads, 1, head_dim) f16. With `fold` where the plan splits the keys: (the split results (1, splits *
        heads * head_dim), the "combine" Prologue of the GEMV that multiplies o): the combining pass runs in that
        GEMV. None where that kernel does not serve the plan (Q staged in rounds, key and value heads of two sizes):
        the caller runs the two ops."""
        c = self.config
        problem = AttentionProblem(1, c.n_head, 1, self.context, c.head_dim, "f16", c.n_head_kv, True,
                                   c.attention_scale, layer.window, True)
        plan = self._attention_plans.get(problem)
        if plan is None:
            target = self.runtime.executor.target
            config = replace(default_config(problem, target), fused=False)  # (the combine: its own pass or the
            plan = self._attention_plans[problem] = attention_plan(problem, config, target)  # GEMV's prologue)
        if c.head_dim_v != c.head_dim or plan.main.constexprs.get("QROUNDS", 1) != 1:
            return None
        fold = fold and plan.combine is not None
        out = None if fold else self._empty((c.n_head, 1, c.head_dim), np.float16)  # folded: the GEMV's prologue
        if plan.combine is None:
            partial_o = stats = self._scratch("attention_none", 4)
        else:
            partial_o = self._scratch("attention_o", plan.partial_o)
            stats = self._scratch("attention_stats", plan.partial_stats)
        k_col = c.n_head * c.head_dim
        args = {"qkv": qkv.reshape(-1), "positions": positions.reshape(-1),
                "freq": self._freq[(layer.rope_base, layer.rope_scale)],
                "k4": self.cache_k[index].reshape(-1).reinterpret(np.uint32),
                "v4": self.cache_v[index].reshape(-1).reinterpret(np.uint32),
                "out4": (out if plan.combine is None else stats).reshape(-1).reinterpret(np.uint32),
                "o_part4": partial_o.reinterpret(np.uint32), "ml_part": stats, "kv_valid": self.kv_len,
                "k_col": k_col, "v_col": k_col + c.n_head_kv * c.head_dim, "rot": c.n_rot, "eps": float(c.eps),
                **plan.main.scalars}
        aliases = None
        if c.arch.qk_norm:
            args.update(wq=block["q_norm"], wk=block["k_norm"])
        else:
            aliases = {"wq": "qkv", "wk": "qkv"}  # not read
        kernel = attention_heads_kernel(c.arch.qk_norm, c.arch.rope_style == "neox")
        spec, checked = self._pipeline(kernel, **plan.main.constexprs)
        with prepare(self.runtime.executor, checked, spec, plan.main.grid, args, aliases=aliases) as launch:
            launch.dispatch()
        if fold:
            assert plan.combine is not None
            merge = plan.combine.scalars
            assert merge["Q_LEN"] == 1 and plan.combine.constexprs["CAUSAL"] and plan.combine.constexprs["KV_DEVICE"]
            return partial_o.reshape(1, -1), Prologue(
                "combine", weight=self.kv_len, delta=stats,
                combine=(merge["SPLITS"], merge["SPLIT_LEN"], merge["WINDOW"], merge["S_KV"], merge["S_Q"], c.head_dim,
                         plan.combine.constexprs["LANES"]))
        assert out is not None
        if plan.combine is not None:
            spec, checked = self._pipeline(plan.combine.kernel, **plan.combine.constexprs)
            args = {"o_part": partial_o, "ml_part": stats, "out": out.reshape(-1), "kv_valid": self.kv_len,
                    **plan.combine.scalars}
            with prepare(self.runtime.executor, checked, spec, plan.combine.grid, args) as launch:
                launch.dispatch()
        return out

    def _scratch(self, name: str, n: int) -> DeviceArray:
        """A float32 scratch array of n elements kept by the model (its steps run in order: one serves them all)."""
        held = self._scratches.get(name)
        if held is None or held.size < n:
            held = self._scratches[name] = self._empty((n,), np.float32)
        return held[:n]

    def advance(self, sampled: DeviceArray) -> None:
        """The decode state moved on by one step on the device (kernels/models/advance.py): `sampled` (one int32)
        becomes the next token, at the next position, kept in the history."""
        spec, checked = self._pipeline(advance_kernel)
        args = {"sampled": sampled.reshape(1), "token": self.token, "position": self.position, "kv_len": self.kv_len,
                "seed": self.seed, "history": self.history, "history_n": int(self.history.shape[0])}
        with prepare(self.runtime.executor, checked, spec, (1, 1, 1), args) as launch:
            launch.dispatch()

    def embed(self, ids: np.ndarray | DeviceArray) -> DeviceArray:
        """The rows of `ids` (NumPy, or an int32 DeviceArray read on the device) times the embedding scale,
        (T, n_embd) f32 on the device (one gather of the quantized table with the scale in it; a float table's rows
        through the f16 copy, then the scaled relayout)."""
        table = self.embedding
        ids = ids if isinstance(ids, DeviceArray) else ids.astype(np.int32)
        if table.quantized:  # the scale in the gather (one kernel)
            return quantized_rows(table.device, ids, np.float32, device=self.device,
                                  scale=self.config.embedding_scale).reshape(ids.size, self.config.n_embd)
        rows = nn.embedding(ids, table.device)
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
        """Run `ids` at the next positions of the cache; the logits (1 or T, n_vocab) f32 on the device. The decode
        state is left at the last of them (position p + T - 1, the cache's valid length p + T).

        With last_only (a prefill) of T > 1 tokens the step runs padded to its bucket B (the next power of two, at
        least PREFILL_BUCKET, where p + B fits the context): ids, positions and the row whose logits are kept come
        from device buffers, the cache's valid length is p + B during the step (the padding's keys lie after every
        real query's position, so the causal mask hides them; their cache rows are rewritten by later steps before
        anything reads them), then p + T. So every prompt length of a bucket shares one plan: its first prefill
        runs as calls, the second is captured (hydroplane.capture) and replayed from then on, one submit."""
        ids = self._check_ids(ids)
        T, p = ids.size, self.length
        if p + T > self.context:
            raise ContextError(f"{p} cached positions and {T} new tokens exceed the context of {self.context} "
                               "positions (load(..., context=N) holds more)")
        bucket = max(PREFILL_BUCKET, 1 << (T - 1).bit_length())
        if last_only and T > 1 and p + bucket <= self.context:
            logits = self._prefill(ids, p, bucket)
        else:
            positions = device_array(np.arange(p, p + T, dtype=np.int32), self.device)
            self.kv_len.write(np.array([p + T], np.int32))
            logits = self.forward(self.embed(ids), positions, last_only)
        self.kv_len.write(np.array([p + T], np.int32))
        self.position.write(np.array([p + T - 1], np.int32))
        self.length = p + T
        return logits

    def _prefill(self, ids: np.ndarray, p: int, bucket: int) -> DeviceArray:
        """step(ids) at position p, padded to `bucket` tokens (step's docstring): the last real token's logits, a
        new (1, n_vocab) f32 array (a copy of the graph's, which the next replay overwrites)."""
        T = ids.size
        state = self._prefills.get(bucket)
        if state is None:
            state = self._prefills[bucket] = _Prefill(self, bucket)
        padded = np.zeros(bucket, np.int32)
        padded[:T] = ids
        state.ids.write(padded)
        state.positions.write(np.arange(p, p + bucket, dtype=np.int32))
        state.row.write(np.array([T - 1], np.int32))
        self.kv_len.write(np.array([p + bucket], np.int32))
        if state.graph is not None:
            state.graph.replay()
        elif state.planned:
            with capture(self.device) as graph:
                state.logits = self.forward(self.embed(state.ids), state.positions, last_row=state.row)
            state.graph = graph
            graph.replay()
        else:
            state.logits = self.forward(self.embed(state.ids), state.positions, last_row=state.row)
            state.planned = True
        logits = state.logits
        assert logits is not None
        copy = self._empty(logits.shape, logits.dtype)
        copy.copy_from(logits)
        return copy

    def forward(self, x: DeviceArray, positions: DeviceArray, last_only: bool = True,
                last_row: DeviceArray | None = None) -> DeviceArray:
        """The blocks and the output on x (T, n_embd) f32 at `positions` (T,) int32 (read on the device: the first
        is the cache row the new keys and values go to), with `self.kv_len` keys in use (read on the device).

        The residual stream is carried as x plus a pending `(delta, norm weight or None)`: the next projection adds
        it (x + rms_norm(delta) * weight, gemma3's post-norms; x + delta, llama's) and norms the sum. At T = 1 (a
        decode step) that happens in the projection's GEMV (its prologue, ops.quant_matmul.Prologue), and so does
        the FFN's gating in the down projection's; else as kernels of their own (nn.rms_norm(residual=), nn.add,
        nn.gated)."""
        c = self.config
        T = x.shape[0]
        decode = T == 1
        pending: tuple | None = None
        for i, (block, layer) in enumerate(zip(self.blocks, c.layers)):
            qkv, x = self._normed(block["qkv"], x, pending, block["attn_norm"], decode)
            o16 = self.attention_decode(qkv, block, positions, layer, i, FOLD_COMBINE and block["o"].takes_prologue()) \
                if decode and FOLD_HEADS else None
            o_prologue = None
            if isinstance(o16, tuple):  # the split results, the combining pass in the o projection's GEMV
                o16, o_prologue = o16
            if o16 is None:
                q16 = self.heads(qkv, block, positions, layer, i)
                o16 = attention(q16.reshape(1, c.n_head, T, c.head_dim),
                                self.cache_k[i].reshape(1, c.n_head_kv, self.context, c.head_dim),
                                self.cache_v[i].reshape(1, c.n_head_kv, self.context, c.head_dim_v),
                                causal=True, window=layer.window, scale=c.attention_scale, kv_len=self.kv_len)
            if o_prologue is not None:
                o_rows = o16
            elif decode:  # (heads, 1, dim) is (1, heads * dim) in memory: the f16 rows as they are
                o_rows = o16.reshape(1, c.n_head * c.head_dim_v)
            else:
                o_rows = self.relayout(o16.reshape(c.n_head, T, c.head_dim_v), np.float32,
                                       (c.n_head, T, c.head_dim_v), c.n_head, 0).reshape(T, c.n_head * c.head_dim_v)
            pending = (block["o"].apply(self, o_rows, prologue=o_prologue), block.get("post_attn_norm"))
            gate_up, x = self._normed(block["gate_up"], x, pending, block["ffn_norm"], decode)
            down = block["down"]
            if decode and down.takes_prologue():
                f = down.apply(self, gate_up, prologue=Prologue("gated", activation=c.arch.activation))
            else:
                f = down.apply(self, nn.gated(gate_up, None, c.arch.activation))
            pending = (f, block.get("post_ffn_norm"))
        if last_row is not None:  # the row whose logits are kept, read on the device (a padded prefill)
            x = nn.embedding(last_row, x)
            pending = (nn.embedding(last_row, pending[0]), pending[1]) if pending is not None else None
        elif last_only and T > 1:
            x = x[T - 1:T]
            pending = (pending[0][T - 1:T], pending[1]) if pending is not None else None
        logits, _ = self._normed(self.output_projection, x, pending, self.output_norm, decode, keep_sum=False)
        if c.logit_softcap:
            logits = nn.softcap(logits, c.logit_softcap, out=logits)
        return logits

    def _normed(self, projection: _Projection, x: DeviceArray, pending: tuple | None, norm: DeviceArray,
                decode: bool, keep_sum: bool = True) -> tuple[DeviceArray, DeviceArray]:
        """(projection of rms_norm(x'), x'), x' = x with `pending` added (forward's docstring): in the GEMV's
        prologue when `decode` and the projection takes one (keep_sum: x' is written for later), else by kernels."""
        c = self.config
        if decode and projection.takes_prologue():
            if pending is None:
                return projection.apply(self, x, Prologue("norm", weight=norm, eps=c.eps)), x
            delta, weight = pending
            total = self._empty(x.shape, np.float32) if keep_sum else None
            prologue = Prologue("add_norm" if weight is None else "postnorm_add_norm", weight=norm, eps=c.eps,
                                delta=delta, delta_weight=weight, sum_out=total)
            return projection.apply(self, x, prologue), total if total is not None else x
        if pending is not None:
            delta, weight = pending
            x = nn.add(x, delta) if weight is None else nn.rms_norm(delta, c.n_embd, weight, eps=c.eps, residual=x)
        return projection.apply(self, nn.rms_norm(x, c.n_embd, norm, eps=c.eps)), x

    def decode_from(self, token: int, position: int) -> None:
        """Set the decode state: `token` is the next decode step's input, at `position` (the cache's first
        `position` rows taken as filled, whatever they hold: a benchmark's depth)."""
        if not 0 <= position < self.context:
            raise ContextError(f"position {position} lies outside the context of {self.context} positions")
        if not 0 <= token < self.config.n_vocab:
            raise ModelError(f"token {token} lies outside [0, {self.config.n_vocab})")
        self.token.write(np.array([token], np.int32))
        self.position.write(np.array([position], np.int32))
        self.kv_len.write(np.array([position + 1], np.int32))
        self.length = position

    def _decode_step(self, sampling: dict) -> None:
        """One decode step from the device state to the next (what the graph captures): the token at `position`
        through the blocks, the next id sampled and the state advanced."""
        logits = self.forward(self.embed(self.token), self.position)
        self.advance(nn.sample(logits, seed=self.seed, **sampling))

    @staticmethod
    def _sampling(temperature: float, top_k: int, top_p: float) -> tuple[dict, tuple]:
        """The sampler's arguments of a setting and its key (one captured step per key)."""
        sampling = dict(temperature=temperature, top_k=top_k, top_p=top_p) if temperature > 0 else \
            dict(temperature=0.0)
        return sampling, tuple(sorted(sampling.items()))

    def decode(self, steps: int, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0) -> None:
        """`steps` decode steps from the device state (queued; nothing read back): the first one of a sampling
        setting runs as calls (planning every launch), then it is captured once, and replayed from then on."""
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
            raise ModelError(f"steps must be a non-negative integer, not {steps!r}")
        nn.sample_options(temperature, top_k, top_p, "decode")
        if self.length + steps > self.context:  # a step writes its keys at row `length`: past the cache, never
            raise ContextError(f"{steps} decode steps from position {self.length} exceed the context of "
                               f"{self.context} positions (load(..., context=N) holds more)")
        sampling, key = self._sampling(temperature, top_k, top_p)
        for _ in range(steps):
            graph = self._graphs.get(key)
            if graph is not None:
                graph.replay()
            elif key in self._planned:
                with capture(self.device) as graph:
                    self._decode_step(sampling)
                self._graphs[key] = graph
                graph.replay()
            else:
                self._decode_step(sampling)
                self._planned.add(key)
            self.length += 1

    def decode_batches(self, start: int, count: int, queued: int = 0, temperature: float = 0.0, top_k: int = 0,
                       top_p: float = 1.0) -> Iterator[np.ndarray]:
        """The ids at history[start:start + count], each from a decode step (the first `queued` of them queued
        already: generate's first id comes from its prefill), read back in batches of FIRST_BATCH doubling to
        LAST_BATCH ids. Once the setting's step is captured, the steps of the next batch are queued before a batch
        is read, the batch copied out in the queue ahead of them (DeviceArray.numpy_later), so the GPU runs on
        while the host reads and checks; a caller that stops early leaves at most one batch of steps queued past
        the last id it took (they never pass `count`)."""
        if start < 1 or start + count > self.context + 1:
            raise ContextError(f"history[{start}:{start + count}] lies outside the ids the {self.context} positions "
                               f"of the context sample (1 .. {self.context})")
        key = self._sampling(temperature, top_k, top_p)[1]
        steps = queued

        def queue(lo: int, hi: int) -> Callable[[], np.ndarray]:
            nonlocal steps
            if hi > steps:
                self.decode(hi - steps, temperature, top_k, top_p)
                steps = hi
            return self.history[start + lo:start + hi].numpy_later()

        done, batch = 0, FIRST_BATCH
        pending = queue(0, min(batch, count)) if count > 0 else None
        while pending is not None:
            wanted = min(batch, count - done)
            batch = min(2 * batch, LAST_BATCH)
            following = None
            if done + wanted < count and key in self._graphs:  # the next batch's steps, ahead of this read
                following = queue(done + wanted, min(done + wanted + batch, count))
            yield pending()
            done += wanted
            if following is None and done < count:
                following = queue(done, min(done + batch, count))
            pending = following

    def logits(self, ids) -> np.ndarray:
        """float32 logits (len(ids), n_vocab) of the sequence from position 0 (teacher-forced: row t predicts
        token t + 1). The cache is reset first."""
        self.reset()
        return np.asarray(self.step(ids, last_only=False).numpy(), np.float32)

    # -- generation ------------------------------------------------------------------------------------------
    def _prompt_ids(self, prompt, special: bool) -> list[int]:
        if isinstance(prompt, str):
            return self.tokenize(prompt, bos=True, special=special)
        if isinstance(prompt, bytes | bytearray | memoryview) or not hasattr(prompt, "__iter__"):
            raise ModelError(f"a prompt is text (str) or a sequence of token ids, not {type(prompt).__name__}")
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
        nn.sample_options(temperature, top_k, top_p, "generate")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise ModelError(f"seed is an integer or None, not {seed!r}")
        if len(ids) + max_tokens > self.context:
            raise ContextError(f"a prompt of {len(ids)} tokens and {max_tokens} new tokens need {len(ids) + max_tokens}"
                               f" positions; the context holds {self.context} (load(..., context=N) holds more)")
        return self._generate(ids, max_tokens, temperature, top_k, top_p, seed, stats)

    def _generate(self, ids, max_tokens, temperature, top_k, top_p, seed, stats) -> Iterator[int]:
        if max_tokens == 0:
            return
        self.reset()
        start = time.perf_counter()
        base = int(np.random.default_rng().integers(1 << 32)) if seed is None else int(seed)
        self.seed.write(np.array([base & 0xFFFFFFFF], np.uint32))  # step n draws with seed + n
        logits = self.step(ids)
        sampling = dict(temperature=temperature, top_k=top_k, top_p=top_p)
        self.advance(nn.sample(logits, seed=self.seed, **sampling))
        first = len(ids)  # the history's position of the first new token: from the prefill, later ones from decode
        done = 0
        for tokens in self.decode_batches(first, max_tokens, 1, temperature, top_k, top_p):
            now = time.perf_counter()
            if stats is not None:
                if done == 0:
                    stats.update(prefill_tokens=len(ids), prefill_s=now - start, decode_tokens=0, decode_s=0.0)
                else:
                    stats["decode_tokens"] += len(tokens)
                    stats["decode_s"] += now - start
            start = now
            for token in tokens:
                if self.tokenizer.is_eog(int(token)):
                    return
                yield int(token)
            done += len(tokens)

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
