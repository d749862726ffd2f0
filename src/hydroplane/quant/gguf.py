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
import struct
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
    _check_lengths(path, size)
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


# the bytes of GGUF's fixed-size value types (GGUFValueType: 0..7, 10..12); 8 is a string, 9 an array
VALUE_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _check_lengths(path: str, size: int) -> None:
    """Walk the metadata's lengths (strings, arrays) against the file's size before the gguf package reads it: its
    reader takes a corrupt array length (2e8 elements in a 416-byte file) element by element past the end, for
    tens of seconds and unbounded memory."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:4] != b"GGUF":
        return  # not GGUF at all: the reader says so
    order = ">" if struct.unpack_from("<I", head, 4)[0] & 0xFFFF == 0 else "<"  # a big-endian file, as the reader
    version, tensors, kv = struct.unpack_from(order + "IQQ", head, 4)
    if version < 2:
        return
    data = np.memmap(path, np.uint8, "r")[24:]  # read where the walk goes
    at = 0

    def need(count: int, what: str) -> None:
        if count < 0 or at + count > len(data):
            raise GGUFError(f"{path} is not a readable GGUF file ({size} bytes): it is truncated or corrupt ({what} "
                            f"of {count} bytes at byte {24 + at} runs past the end)")

    def u32() -> int:
        nonlocal at
        need(4, "a value type")
        at += 4
        return struct.unpack_from(order + "I", data, at - 4)[0]

    def u64(what: str) -> int:
        nonlocal at
        need(8, what)
        at += 8
        return struct.unpack_from(order + "Q", data, at - 8)[0]

    def value(kind: int, depth: int) -> None:
        nonlocal at
        if kind == 8:
            n = u64("a string length")
            need(n, "a string")
            at += n
        elif kind == 9:
            inner, n = u32(), u64("an array length")
            if depth > 8:
                raise GGUFError(f"{path}: arrays nested more than 8 deep: the file is corrupt")
            if inner in VALUE_BYTES:
                need(n * VALUE_BYTES[inner], "an array")
                at += n * VALUE_BYTES[inner]
            elif inner in (8, 9):
                need(n * 8, "an array")  # each element takes 8 bytes or more
                for _ in range(n):
                    value(inner, depth + 1)
        elif kind in VALUE_BYTES:
            need(VALUE_BYTES[kind], "a value")
            at += VALUE_BYTES[kind]
        # an unknown type: the reader refuses it

    if kv > len(data) // 12:  # each key-value pair takes 12 bytes or more
        raise GGUFError(f"{path} is not a readable GGUF file ({size} bytes): it is truncated or corrupt (it claims "
                        f"{kv} metadata keys)")
    for _ in range(kv):
        value(8, 0)  # the key
        kind = u32()
        if kind not in VALUE_BYTES and kind not in (8, 9):
            return
        value(kind, 0)
    need(tensors * 24, "the tensors' records")  # a name's length, dimensions, type and offset: 24 bytes or more
    for _ in range(tensors):
        value(8, 0)  # the name
        dims = u32()
        need(dims * 8 + 12, "a tensor's record")
        at += dims * 8 + 12


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


def _nested(parts: list, at: int) -> tuple[list, int]:
    """The array whose parts start at parts[at] (its element type, its length, then each element's parts: a nested
    array's own, a string's length and bytes, a scalar), and the index after it."""
    inner, n = int(parts[at][0]), int(parts[at + 1][0])
    at += 2
    items = []
    for _ in range(n):
        if inner == 9:
            item, at = _nested(parts, at)
        elif inner == 8:
            item, at = _scalar(parts[at + 1], 8), at + 2
        else:
            item, at = _scalar(parts[at], inner), at + 1
        items.append(item)
    return items, at


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
        if types[0] == 9 and len(types) > 2:  # an array of arrays: its parts walked (the reader flattens it)
            return _nested(field.parts, 3)[0]
        if types[0] == 9:  # ARRAY: one part per element, listed in field.data
            return [_scalar(field.parts[i], types[-1]) for i in field.data]
        return _scalar(field.parts[field.data[0]], types[0])
    except (IndexError, ValueError, UnicodeDecodeError) as err:
        raise GGUFError(f"metadata key {field.name!r} cannot be decoded: {err}") from None
