"""`QuantizedArray`: a weight matrix in one of ggml's block formats, its bytes exactly as ggml lays them out.

    qw = hydroplane.quant.quantize(w, "q4_0")        # w: (N, K) floats, each row quantized in blocks along K
    qw.format, qw.shape, qw.nbytes, qw.blocks         # "q4_0", (N, K), N * K / 32 * 18, (N, K / 32 * 18) uint8
    w_back = qw.dequantize()                          # float32 (N, K), bit-identical to gguf.quants.dequantize
    y = hydroplane.matmul(x, qw.T)                    # x @ w.T with the dequantization in the kernels' loads

`from_bytes(raw, fmt, shape)` wraps ggml block bytes (a GGUF tensor's, a memory map's) without copying them. The
shape is NumPy's: the last dimension is K, the quantized one; leading dimensions are rows. `qw[i:j]` is the rows
i..j-1 (a view of the blocks: a memory-mapped tensor reads only those). Layer: quant (imports errors and NumPy).
"""

from __future__ import annotations

import math

import numpy as np

from hydroplane.quant.formats import (
    BlockFormat,
    QuantError,
    beyond_f16,
    block_format,
    dequantize_blocks,
    finite_scales,
    quantize_blocks,
)


class QuantizedArray:
    """Rows of K weights in a block format (the module docstring). `.blocks` is an (…, K / BLOCK * BYTES) uint8
    array: ggml's bytes, in NumPy row order."""

    __slots__ = ("fmt", "shape", "blocks", "_largest", "__weakref__")

    def __init__(self, blocks: np.ndarray, fmt, shape):
        self.fmt: BlockFormat = block_format(fmt)
        self.shape: tuple[int, ...] = _checked_shape(shape, self.fmt)
        row = self.fmt.row_bytes(self.shape[-1])
        want = math.prod(self.shape[:-1]) * row
        if not isinstance(blocks, np.ndarray) or blocks.dtype != np.uint8:
            raise QuantError(f"{self.fmt.name} blocks are a NumPy uint8 array, not "
                             f"{getattr(blocks, 'dtype', type(blocks).__name__)}")
        if blocks.size != want:
            raise QuantError(f"{blocks.size} bytes do not hold a {self.fmt.name} array of shape {self.shape}: that "
                             f"takes {want} bytes ({self.shape[-1]} // {self.fmt.block} blocks of "
                             f"{self.fmt.bytes} bytes per row)")
        self.blocks = blocks.reshape(*self.shape[:-1], row)
        self._largest: tuple | None = None  # (beyond_f16's answer,) once asked

    @property
    def format(self) -> str:
        """The block format's name as ggml spells it, lowercase: "q4_0", "q4_k" ..."""
        return self.fmt.name

    @property
    def ggml_type(self) -> int:
        return self.fmt.ggml_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """The blocks' bytes."""
        return int(self.blocks.size)

    @property
    def T(self) -> QuantizedTranspose:  # noqa: N802 - NumPy's name
        """The transpose as a layout (K, N): what `hydroplane.matmul(x, qw.T)` multiplies by."""
        if self.ndim != 2:
            raise QuantError(f".T of a {self.ndim}-D quantized array: matmul takes a 2-D weight (N, K)")
        return QuantizedTranspose(self)

    def dequantize(self) -> np.ndarray:
        """The weights as float32, of shape `shape` (bit-identical to gguf.quants.dequantize)."""
        flat = np.ascontiguousarray(self.blocks).reshape(-1, self.fmt.bytes)
        return dequantize_blocks(flat, self.fmt).reshape(self.shape)

    def beyond_f16(self) -> float | None:
        """The largest finite |weight| where it is beyond f16's range (65504), else None; found once (from the scales
        alone where they bound the weights within it). The quantized matmul refuses such weights."""
        if self._largest is None:
            self._largest = (beyond_f16(np.ascontiguousarray(self.blocks).reshape(-1, self.fmt.bytes), self.fmt),)
        return self._largest[0]

    def __getitem__(self, key) -> QuantizedArray:
        """Rows by int or slice of the leading dimensions (the last, K, stays whole): a view of the blocks."""
        keys = key if isinstance(key, tuple) else (key,)
        if len(keys) >= self.ndim or any(not isinstance(k, int | np.integer | slice) or isinstance(k, bool)
                                         for k in keys):
            raise QuantError(f"a {self.format} array is indexed by ints and slices of its leading dimensions "
                             f"(shape {self.shape}: the last, K, is quantized in blocks and stays whole), not {key!r}")
        try:
            view = self.blocks[keys]
        except IndexError as err:
            raise QuantError(f"{key!r} of a {self.format} array of shape {self.shape}: {err}") from None
        return QuantizedArray(view, self.fmt, (*view.shape[:-1], self.shape[-1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"QuantizedArray({self.format}, shape={self.shape}, {self.nbytes} bytes)"


class QuantizedTranspose:
    """`qw.T`: a (K, N) layout of a (N, K) QuantizedArray, for matmul (no copy, nothing to compute)."""

    __slots__ = ("base",)

    def __init__(self, base: QuantizedArray):
        self.base = base

    @property
    def shape(self) -> tuple[int, int]:
        return self.base.shape[1], self.base.shape[0]

    @property
    def format(self) -> str:
        return self.base.format

    @property
    def T(self) -> QuantizedArray:  # noqa: N802
        return self.base

    def dequantize(self) -> np.ndarray:
        return self.base.dequantize().T

    def __repr__(self) -> str:
        return f"{self.base!r}.T"


def _checked_shape(shape, fmt: BlockFormat) -> tuple[int, ...]:
    items = shape if isinstance(shape, tuple | list) else (shape,)
    if any(isinstance(s, bool) or not isinstance(s, int | np.integer) for s in items):
        raise QuantError(f"a shape is a tuple of ints, not {shape!r}")
    dims = tuple(int(s) for s in items)
    if not dims or any(d < 0 for d in dims):
        raise QuantError(f"a {fmt.name} array has 1 or more dimensions of size >= 0, not {shape!r}")
    if dims[-1] % fmt.block:
        raise QuantError(f"K={dims[-1]} (the last dimension of {dims}) is not a multiple of {fmt.name}'s block of "
                         f"{fmt.block}: each row is quantized in whole blocks")
    return dims


def from_bytes(raw, fmt, shape) -> QuantizedArray:
    """Wrap ggml block bytes (bytes, a buffer, a uint8 array or a memory map: not copied where it can be viewed)."""
    if isinstance(raw, np.ndarray):
        data = raw.reshape(-1).view(np.uint8) if raw.dtype != np.uint8 and raw.flags.c_contiguous else raw
        if data.dtype != np.uint8:
            raise QuantError(f"from_bytes takes bytes or a uint8 array, not a non-contiguous {raw.dtype} array")
    else:
        try:
            data = np.frombuffer(raw, np.uint8)
        except (TypeError, ValueError) as err:
            raise QuantError(f"from_bytes takes bytes, a buffer or a uint8 array, not {type(raw).__name__} "
                             f"({err})") from None
    return QuantizedArray(data.reshape(-1), fmt, shape)


def quantize(w, fmt) -> QuantizedArray:
    """Quantize floats `w` (…, K) into `fmt` along the last dimension (the gguf package's rounding for q8_0, q4_0 and
    q5_0; a simple one for q4_k and q6_k: hydroplane.quant.formats)."""
    f = block_format(fmt)
    try:
        array = np.asarray(w)
    except (TypeError, ValueError) as err:
        raise QuantError(f"quantize takes an array of floats, not {type(w).__name__} ({err})") from None
    if array.dtype.kind not in "fiu" and str(array.dtype) != "bfloat16":
        raise QuantError(f"quantize takes an array of numbers, not {array.dtype}")
    array = array.astype(np.float32)
    shape = _checked_shape(array.shape, f)
    if not np.isfinite(array).all():
        raise QuantError(f"quantize({f.name}): the array holds NaN or infinite values (at flat index "
                         f"{int(np.flatnonzero(~np.isfinite(array))[0])})")
    flat = array.reshape(-1, f.block)
    with np.errstate(over="ignore"):  # a scale beyond f16's range is refused below, by name
        out = quantize_blocks(flat, f) if flat.size else np.zeros((0, f.bytes), np.uint8)
    if not finite_scales(out, f):  # a scale beyond f16's range: the gguf package writes inf there, silently
        raise QuantError(f"quantize({f.name}): values up to {float(np.abs(array).max()):g} need a block scale beyond "
                         "f16's range (its largest is 65504), which would make them infinite: scale the weights "
                         "down")
    return QuantizedArray(np.ascontiguousarray(out).reshape(-1), f, shape)
