"""A checkpoint's tensors by role: the block tensors of each layer, the embedding, the output projection
(`output.weight`, or the embedding itself when the file ties them, as Gemma 3 does), each dequantized to float32 on
first use and kept (`keep=False` dequantizes again on every use, for a reference that should not hold 1 GB)."""

from __future__ import annotations

import numpy as np

from hydroplane.models.arch import Config, config_from_metadata
from hydroplane.models.errors import ModelError
from hydroplane.models.gguf_file import GGUFFile, Tensor


class Weights:
    def __init__(self, file: GGUFFile, config: Config | None = None, keep: bool = True):
        self.file = file
        self.config = config or config_from_metadata(file.metadata, path=file.path)
        self.keep = keep
        self._cache: dict[str, np.ndarray] = {}
        c = self.config
        self.output_name = "output.weight" if "output.weight" in file.tensors else "token_embd.weight"
        expected = {"token_embd.weight": (c.n_vocab, c.n_embd), "output_norm.weight": (c.n_embd,)}
        for i in range(c.n_layer):
            b = c.block_tensors(i)
            expected.update({
                b["attn_norm"]: (c.n_embd,), b["q"]: (c.n_head * c.head_dim, c.n_embd),
                b["k"]: (c.n_head_kv * c.head_dim, c.n_embd), b["v"]: (c.n_head_kv * c.head_dim_v, c.n_embd),
                b["o"]: (c.n_embd, c.n_head * c.head_dim_v), b["ffn_norm"]: (c.n_embd,),
                b["gate"]: (c.n_ff, c.n_embd), b["up"]: (c.n_ff, c.n_embd), b["down"]: (c.n_embd, c.n_ff)})
            if c.arch.qk_norm:
                expected.update({b["q_norm"]: (c.head_dim,), b["k_norm"]: (c.head_dim,)})
            if c.arch.post_norms:
                expected.update({b["post_attn_norm"]: (c.n_embd,), b["post_ffn_norm"]: (c.n_embd,)})
        for name, shape in expected.items():
            got = file.tensor(name).shape
            if tuple(got) != shape:
                raise ModelError(f"{file.path}: tensor {name} is {got}; {c.arch.name} with these hyperparameters "
                                 f"needs {shape}")

    def tensor(self, name: str) -> Tensor:
        return self.file.tensor(name)

    def get(self, name: str) -> np.ndarray:
        """float32 values of a tensor, (N, K) for a matrix."""
        if name in self._cache:
            return self._cache[name]
        values = self.file.tensor(name).dequantize()
        if self.keep:
            self._cache[name] = values
        return values

    def block(self, i: int, role: str) -> np.ndarray:
        return self.get(self.config.block_tensors(i)[role])

    def embedding_rows(self, ids: np.ndarray) -> np.ndarray:
        """float32 rows of the token embedding for `ids` (only those rows are dequantized)."""
        name = "token_embd.weight"
        if name in self._cache:
            return self._cache[name][ids]
        return self.file.tensor(name).dequantize(np.asarray(ids))

    def output_chunks(self, rows: int = 32768):
        """(start, float32 rows) of the output projection, a chunk at a time."""
        if self.output_name in self._cache or self.keep:
            full = self.get(self.output_name)
            for start in range(0, full.shape[0], rows):
                yield start, full[start:start + rows]
            return
        tensor = self.file.tensor(self.output_name)
        for start in range(0, tensor.shape[0], rows):
            yield start, tensor.dequantize(slice(start, start + rows))
