"""`hydroplane.gguf.load(path)`: a GGUF file's tensors and metadata, memory-mapped, through the gguf package.

    model = hydroplane.gguf.load("gemma3-270m.gguf")
    w = model.tensors["blk.0.ffn_up.weight"]       # a QuantizedArray (N, K) for block formats
    norm = model.tensors["blk.0.attn_norm.weight"] # a NumPy array for F32 / F16 / BF16 (ml_dtypes.bfloat16)
    model.metadata["general.architecture"]         # "gemma3"

Shapes are NumPy's (GGUF stores ggml's ne[0] first: the innermost dimension; here it is the last). Nothing is read
until used: the tensors view a read-only memory map, the metadata decodes a key on first access. A tensor in a
format hydroplane.quant does not read is a `GGUFTensor` record (name, ggml type, shape, raw bytes), not an error, so
that a file with one exotic tensor still loads. The gguf package is the `gguf` extra
(`pip install 'hydroplane-gpu[gguf]'`). Layer: quant.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from hydroplane.quant.array import QuantizedArray
from hydroplane.quant.formats import BY_TYPE, QuantError

try:
    import gguf as _gguf
except ImportError:  # the optional extra
    _gguf = None


class GGUFError(QuantError):
    """A GGUF file that cannot be read: missing, truncated, corrupt, or the gguf package absent."""


F32, F16, BF16 = 0, 1, 30  # GGMLQuantizationType values of the plain float tensors


@dataclass(frozen=True)
class GGUFTensor:
    """A tensor in a type hydroplane.quant does not read: its ggml type (GGMLQuantizationType value), its shape
    (NumPy order) and its raw bytes (a view of the memory map)."""

    name: str
    ggml_type: int
    shape: tuple[int, ...]
    raw: np.ndarray


class Metadata(Mapping):
    """The file's key -> value table (str, int, float, bool, or a list of them), each decoded on first access."""

    def __init__(self, fields: dict):
        self._fields = fields
        self._values: dict[str, Any] = {}

    def __getitem__(self, key: str):
        if key not in self._values:
            self._values[key] = _field_value(self._fields[key])
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


@dataclass
class GGUFFile:
    """What `load` gives: `tensors` (name -> QuantizedArray, NumPy array or GGUFTensor, in the file's order),
    `metadata` (a Metadata mapping), the path."""

    path: str
    tensors: dict
    metadata: Metadata

    def __repr__(self) -> str:
        return f"GGUFFile({self.path!r}: {len(self.tensors)} tensors, {len(self.metadata)} metadata keys)"


def require_gguf():
    """The gguf package, or a GGUFError naming the extra."""
    if _gguf is None:
        raise GGUFError("reading GGUF files needs the gguf package: pip install 'hydroplane-gpu[gguf]' "
                        "(or pip install gguf)")
    return _gguf


def load(path) -> GGUFFile:
    """Open a GGUF file (memory-mapped, read-only): its tensors and metadata (the module docstring)."""
    g = require_gguf()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise GGUFError(f"{path}: no such file")
    size = os.path.getsize(path)
    try:
        reader = g.GGUFReader(path, "r")
    except Exception as err:  # noqa: BLE001 - the reader fails in many ways on a bad file (ValueError, IndexError..)
        raise GGUFError(f"{path} is not a readable GGUF file ({size} bytes): it is truncated or corrupt (the gguf "
                        f"package's reader: {type(err).__name__}: {err})") from None
    tensors: dict = {}
    for t in reader.tensors:
        tensors[t.name] = _tensor(path, size, t)
    fields = {name: field for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    return GGUFFile(path, tensors, Metadata(fields))


def _tensor(path: str, size: int, t):
    shape = tuple(int(s) for s in reversed([int(x) for x in t.shape]))
    kind = int(t.tensor_type)
    data = t.data
    start = int(t.data_offset)
    if start + int(t.n_bytes) > size or data.nbytes != int(t.n_bytes):
        raise GGUFError(f"{path}: tensor {t.name!r} ({shape}, type {kind}) needs bytes {start}..{start + t.n_bytes} "
                        f"but the file has {size}: it is truncated or corrupt")
    raw = data.reshape(-1).view(np.uint8) if data.dtype != np.uint8 else data.reshape(-1)
    if kind in BY_TYPE:
        try:
            return QuantizedArray(raw, BY_TYPE[kind], shape)
        except QuantError as err:
            raise GGUFError(f"{path}: tensor {t.name!r}: {err}") from None
    if kind in (F32, F16, BF16):
        dtype = {F32: np.dtype(np.float32), F16: np.dtype(np.float16), BF16: np.dtype(ml_dtypes.bfloat16)}[kind]
        return raw.view(dtype).reshape(shape)
    return GGUFTensor(t.name, kind, shape, raw)


def _scalar(part: np.ndarray, kind: int):
    if kind == 8:  # GGUFValueType.STRING
        return bytes(part).decode("utf-8", errors="replace")
    value = part[0].item() if part.ndim else part.item()
    return bool(value) if kind == 7 else value  # 7: BOOL


def _field_value(field):
    try:
        types = [int(x) for x in field.types]
        if not types:
            return None
        if types[0] == 9:  # ARRAY: one part per element, listed in field.data
            return [_scalar(field.parts[i], types[-1]) for i in field.data]
        return _scalar(field.parts[field.data[0]], types[0])
    except (IndexError, ValueError, UnicodeDecodeError) as err:
        raise GGUFError(f"metadata key {field.name!r} cannot be decoded: {err}") from None
