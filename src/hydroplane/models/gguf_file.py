"""A GGUF checkpoint as the models need it: metadata as Python values, tensors as (format, shape, raw blocks).

The file is parsed here (header, metadata, tensor table: GGUF v2/v3) and memory-mapped: the gguf package's
reader builds an object per array element and takes over a minute on Gemma 3's 262144-token vocabulary, this one
a fraction of a second. `Tensor.dequantize()` turns a tensor (or some of its rows) into float32 in NumPy: F32,
F16, BF16 and Q8_0 here, the other block formats through the gguf package's decoders (the `models` extra).
Shapes are row-major: (N, K) for a weight of N outputs over K inputs (ggml's ne = [K, N]).
(hydroplane.gguf / hydroplane.quant, the quant layer, are the library's general GGUF and block-format API; this
module is what the models need to read a checkpoint.)
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hydroplane.models.errors import ModelError

try:
    import gguf
    from gguf import quants as gguf_quants
except ImportError:  # the models extra is not installed: a quantized tensor's dequantize() says so
    gguf = None
    gguf_quants = None

# ggml type id -> (name, values per block, bytes per block)
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    30: ("BF16", 1, 2),
}
PLAIN_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64, "I8": np.int8,
                "I16": np.int16, "I32": np.int32, "I64": np.int64}
# GGUF metadata value types: id -> struct format (8 string, 9 array handled apart)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


@dataclass(frozen=True)
class Tensor:
    """One tensor of the file: `format` is ggml's type name ("F32", "Q8_0", "Q4_K" ...), `shape` row-major."""

    name: str
    format: str
    shape: tuple[int, ...]
    raw: np.ndarray  # plain formats: the values, shaped; block formats: (rows, bytes per row) uint8

    def dequantize(self, rows: slice | np.ndarray | None = None) -> np.ndarray:
        """float32 values of the tensor (or of some of its rows: `rows` a slice or an index array)."""
        raw = self.raw if rows is None else self.raw[rows]
        if self.format == "BF16":
            return (np.asarray(raw).astype(np.uint32) << 16).view(np.float32)
        if self.format in PLAIN_DTYPES:
            return np.asarray(raw).astype(np.float32)
        if self.format == "Q8_0":
            blocks = np.asarray(raw, np.uint8).reshape(raw.shape[0], -1, 34)
            scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
            values = blocks[:, :, 2:].copy().view(np.int8).astype(np.float32) * scale
            return values.reshape(raw.shape[0], -1)
        if gguf_quants is None:
            raise ModelError(f"dequantizing {self.name} ({self.format}) needs the gguf package: "
                             "pip install 'hydroplane-gpu[models]'")
        return np.asarray(gguf_quants.dequantize(np.asarray(raw), gguf.GGMLQuantizationType[self.format]),
                          np.float32)


@dataclass
class GGUFFile:
    """metadata: key -> int / float / bool / str / list; tensors: name -> Tensor."""

    path: Path
    metadata: dict
    tensors: dict[str, Tensor]

    def tensor(self, name: str) -> Tensor:
        if name not in self.tensors:
            raise ModelError(f"{self.path}: no tensor {name!r} (the file has {len(self.tensors)} tensors)")
        return self.tensors[name]


class _Cursor:
    """Reads GGUF's little-endian values from a buffer, refusing reads past its end."""

    def __init__(self, buffer, path: Path):
        self.buffer, self.offset, self.path = buffer, 0, path

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.offset + size > len(self.buffer):
            raise ModelError(f"{self.path}: truncated GGUF file (at byte {self.offset})")
        value = struct.unpack_from("<" + fmt, self.buffer, self.offset)
        self.offset += size
        return value[0] if len(value) == 1 else value

    def string(self) -> str:
        n = self.take("Q")
        if self.offset + n > len(self.buffer):
            raise ModelError(f"{self.path}: truncated GGUF string (at byte {self.offset})")
        text = bytes(self.buffer[self.offset:self.offset + n]).decode("utf-8", "surrogateescape")
        self.offset += n
        return text

    def value(self, kind: int):
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            item, n = self.take("I"), self.take("Q")
            if item in SCALARS and item != 7:
                dtype = np.dtype("<" + SCALARS[item])
                if self.offset + n * dtype.itemsize > len(self.buffer):
                    raise ModelError(f"{self.path}: truncated GGUF array of {n} values (at byte {self.offset})")
                values = np.frombuffer(self.buffer, dtype, n, self.offset)
                self.offset += n * dtype.itemsize
                return values.tolist()
            if n > len(self.buffer) - self.offset:
                raise ModelError(f"{self.path}: truncated GGUF array of {n} values (at byte {self.offset})")
            return [self.value(item) for _ in range(n)]
        raise ModelError(f"{self.path}: unknown GGUF value type {kind} at byte {self.offset}")


def read_gguf(path) -> GGUFFile:
    """The file's metadata and tensors; a ModelError for a missing, truncated or non-GGUF file."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    with path.open("rb") as f:
        try:
            buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise ModelError(f"{path}: not a GGUF file (empty)") from None
    cur = _Cursor(buffer, path)
    if bytes(buffer[:4]) != b"GGUF":
        raise ModelError(f"{path}: not a GGUF file (it starts {bytes(buffer[:4])!r}, not b'GGUF')")
    cur.offset = 4
    version = cur.take("I")
    if version not in (2, 3):
        raise ModelError(f"{path}: GGUF version {version}; hydroplane reads versions 2 and 3")
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    metadata = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.take("I"))
    infos = []
    for _ in range(n_tensors):
        name = cur.string()
        dims = [cur.take("Q") for _ in range(cur.take("I"))]
        kind, offset = cur.take("I"), cur.take("Q")
        if kind not in GGML_TYPES:
            raise ModelError(f"{path}: tensor {name} has ggml type {kind}, which hydroplane does not know")
        infos.append((name, dims, kind, offset))
    alignment = int(metadata.get("general.alignment", 32))
    data_start = -(-cur.offset // alignment) * alignment
    tensors = {}
    for name, dims, kind, offset in infos:
        fmt, block, block_bytes = GGML_TYPES[kind]
        shape = tuple(int(n) for n in reversed(dims)) or (1,)
        if shape[-1] % block:
            raise ModelError(f"{path}: tensor {name} has rows of {shape[-1]}, not a multiple of {fmt}'s {block}")
        rows = int(np.prod(shape[:-1], dtype=np.int64))
        row_bytes = shape[-1] // block * block_bytes
        start = data_start + offset
        if start + rows * row_bytes > len(buffer):
            raise ModelError(f"{path}: tensor {name} runs past the end of the file")
        raw = np.frombuffer(buffer, np.uint8, rows * row_bytes, start)
        if fmt in PLAIN_DTYPES:
            raw = raw.view(PLAIN_DTYPES[fmt]).reshape(shape)
        else:
            raw = raw.reshape(rows, row_bytes)
        tensors[name] = Tensor(name, fmt, shape, raw)
    return GGUFFile(path, metadata, tensors)
