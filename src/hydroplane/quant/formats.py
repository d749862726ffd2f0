"""ggml's block formats in NumPy: each format's block size and bytes, its dequantizer and its quantizer.

A row of K weights is stored as K / BLOCK blocks of BYTES bytes each, in ggml's layout unchanged (little-endian):

| format | block | bytes | a block |
| --- | --- | --- | --- |
| q8_0 | 32 | 34 | f16 d, 32 x s8 q: w = d * q |
| q4_0 | 32 | 18 | f16 d, 16 bytes of nibbles (low nibbles: elements 0-15, high: 16-31): w = d * (q - 8) |
| q5_0 | 32 | 22 | f16 d, u32 qh (bit j: the 5th bit of element j), 16 bytes of nibbles as q4_0: w = d * (q - 16) |
| q4_k | 256 | 144 | f16 d, f16 dmin, 12 bytes of eight 6-bit (scale, min) pairs, 128 bytes of nibbles (32-byte
  groups: low nibbles one sub-block of 32, high nibbles the next): w = d * scale * q - dmin * min |
| q6_k | 256 | 210 | 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 x s8 scales (one per 16), f16 d:
  w = d * scale * (q - 32) |

The dequantizers compute in float32 in the gguf package's order (`gguf.quants.dequantize`), so that their results
are bit-identical to it. The quantizers of q8_0, q4_0 and q5_0 are the gguf package's rounding (q8_0 bit-identical
to ggml's reference); q4_k and q6_k get a simple one-pass rounding (scales from each sub-block's range, not ggml's
search), good enough for tests and benchmarks. This module imports only hydroplane.errors and NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hydroplane.errors import HydroplaneError


class QuantError(HydroplaneError):
    """A block-quantized array that cannot be made or read as asked: format, shape, bytes."""


@dataclass(frozen=True)
class BlockFormat:
    """One ggml block format: its name as ggml spells it (lowercase), GGMLQuantizationType value, block, bytes."""

    name: str
    ggml_type: int
    block: int  # weights per block
    bytes: int  # bytes per block

    def row_bytes(self, k: int) -> int:
        return k // self.block * self.bytes


FORMATS = {f.name: f for f in (BlockFormat("q4_0", 2, 32, 18), BlockFormat("q5_0", 6, 32, 22),
                               BlockFormat("q8_0", 8, 32, 34), BlockFormat("q4_k", 12, 256, 144),
                               BlockFormat("q6_k", 14, 256, 210))}
BY_TYPE = {f.ggml_type: f for f in FORMATS.values()}


def block_format(fmt) -> BlockFormat:
    """A format given by name ("q4_0", "Q4_K"), a GGMLQuantizationType (or its int value) or a BlockFormat."""
    if isinstance(fmt, BlockFormat):
        return fmt
    if isinstance(fmt, str):
        found = FORMATS.get(fmt.lower())
    elif isinstance(fmt, int | np.integer) and not isinstance(fmt, bool):
        found = BY_TYPE.get(int(fmt))
    else:
        found = None
    if found is None:
        shown = getattr(fmt, "name", None) or repr(fmt)
        raise QuantError(f"unknown block format {shown}: hydroplane.quant reads {', '.join(FORMATS)} "
                         f"(GGMLQuantizationType values {', '.join(str(f.ggml_type) for f in FORMATS.values())})")
    return found


def _f16(raw: np.ndarray) -> np.ndarray:
    """Two bytes per row (the last axis) as float32 values of the f16 they hold, shape (n, 1)."""
    return np.ascontiguousarray(raw).view(np.float16).astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """(n, 16) bytes -> (n, 32) values: the low nibbles, then the high ones."""
    return np.concatenate([qs & np.uint8(0x0F), qs >> np.uint8(4)], axis=-1)


def k_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q4_k's 12 scale bytes per block -> (the 8 six-bit scales, the 8 six-bit mins), each (n, 8) uint8."""
    d, m, m_d = scales[:, 0:4], scales[:, 4:8], scales[:, 8:12]
    sc = np.concatenate([d & 0x3F, (m_d & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([m & 0x3F, (m_d >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return sc, mn


def dequantize_blocks(blocks: np.ndarray, fmt: BlockFormat) -> np.ndarray:
    """(n, BYTES) uint8 blocks -> (n, BLOCK) float32 weights (the gguf package's arithmetic, bit for bit)."""
    with np.errstate(invalid="ignore", over="ignore"):  # a scale of inf or NaN gives what gguf's gives
        return _dequantize(blocks, fmt)


def _dequantize(blocks: np.ndarray, fmt: BlockFormat) -> np.ndarray:
    n = blocks.shape[0]
    if fmt.name == "q8_0":
        return blocks[:, 2:].view(np.int8).astype(np.float32) * _f16(blocks[:, :2])
    if fmt.name == "q4_0":
        q = _nibbles(blocks[:, 2:]).astype(np.int8) - np.int8(8)
        return _f16(blocks[:, :2]) * q.astype(np.float32)
    if fmt.name == "q5_0":
        qh = np.ascontiguousarray(blocks[:, 2:6]).view(np.uint32) >> np.arange(32, dtype=np.uint32)
        q = _nibbles(blocks[:, 6:]) | ((qh & np.uint32(1)).astype(np.uint8) << np.uint8(4))
        return _f16(blocks[:, :2]) * (q.astype(np.int8) - np.int8(16)).astype(np.float32)
    if fmt.name == "q4_k":
        d, dmin = _f16(blocks[:, 0:2]), _f16(blocks[:, 2:4])
        sc, mn = k_scale_min(blocks[:, 4:16])
        scale = (d * sc.astype(np.float32)).reshape(n, 8, 1)
        low = (dmin * mn.astype(np.float32)).reshape(n, 8, 1)
        qs = blocks[:, 16:].reshape(n, 4, 1, 32) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)
        q = (qs & np.uint8(0x0F)).reshape(n, 8, 32).astype(np.float32)
        return (scale * q - low).reshape(n, 256)
    if fmt.name == "q6_k":
        ql, qh = blocks[:, :128], blocks[:, 128:192]
        scale = (_f16(blocks[:, 208:210]) * blocks[:, 192:208].view(np.int8).astype(np.float32)).reshape(n, 16, 1)
        low = (ql.reshape(n, 2, 1, 64) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)) & np.uint8(0x0F)
        high = (qh.reshape(n, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & np.uint8(0x03)
        q = (low.reshape(n, 8, 32) | (high.reshape(n, 8, 32) << np.uint8(4))).astype(np.int8) - np.int8(32)
        return (scale * q.reshape(n, 16, 16).astype(np.float32)).reshape(n, 256)
    raise QuantError(f"no dequantizer for {fmt.name}")


# the largest |integer| each format's scale multiplies: q4_k's is sc * q (63 * 15) beside dmin * m (63); q6_k's is the
# int8 scale times q - 32
SCALE_REACH = {"q8_0": 128.0, "q4_0": 8.0, "q5_0": 16.0, "q4_k": 945.0, "q6_k": 128.0 * 32.0}
SCALE_BYTES = {"q8_0": 0, "q4_0": 0, "q5_0": 0, "q4_k": 0, "q6_k": 208}  # where the f16 d sits in a block


def _scales(blocks: np.ndarray, fmt: BlockFormat) -> list[tuple[np.ndarray, float]]:
    """Each f16 scale field of (n, BYTES) blocks as float32 (n, 1), with the largest |integer| it multiplies: d, and
    q4_k's dmin."""
    at = SCALE_BYTES[fmt.name]
    fields = [(_f16(blocks[:, at:at + 2]), SCALE_REACH[fmt.name])]
    return fields + [(_f16(blocks[:, 2:4]), 63.0)] if fmt.name == "q4_k" else fields


def finite_scales(blocks: np.ndarray, fmt: BlockFormat) -> bool:
    """Whether every (n, BYTES) block's f16 scales (d; q4_k's dmin too) are finite."""
    return all(bool(np.isfinite(scale).all()) for scale, _ in _scales(blocks, fmt))


def beyond_f16(blocks: np.ndarray, fmt: BlockFormat, rows: int = 1 << 14) -> float | None:
    """The largest finite |weight| of (n, BYTES) blocks where it is beyond f16's range (65504), else None: bounded
    from the scales first (every real model's weights are far below that range, so their weights are not decoded),
    then found exactly, `rows` blocks at a time. Infinite and NaN weights (scales of inf or NaN) do not count."""
    with np.errstate(invalid="ignore", over="ignore"):
        bound = sum(np.abs(scale) * reach for scale, reach in _scales(blocks, fmt))
        if not (bound > 65504.0).any():
            return None
        largest = 0.0
        for start in range(0, blocks.shape[0], rows):
            w = np.abs(_dequantize(blocks[start:start + rows], fmt))
            largest = max(largest, float(w[np.isfinite(w)].max(initial=0.0)))
        return largest if largest > 65504.0 else None


def _round_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero (ggml's roundf), as the gguf package computes it."""
    a = np.abs(x)
    floored = np.floor(a)
    return np.sign(x) * (floored + np.floor(2 * (a - floored)))


def _signed_absmax(blocks: np.ndarray) -> np.ndarray:
    """The element of largest magnitude of each block, with its sign (n, 1)."""
    return np.take_along_axis(blocks, np.abs(blocks).argmax(axis=-1, keepdims=True), axis=-1)


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d == 0, 0, 1 / d)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    """(n, 32) values 0..15 -> (n, 16) bytes: element j in the low nibble of byte j, element 16 + j in its high."""
    return (q[:, :16] & np.uint8(0x0F)) | (q[:, 16:] << np.uint8(4))


def quantize_blocks(blocks: np.ndarray, fmt: BlockFormat) -> np.ndarray:
    """(n, BLOCK) float32 weights -> (n, BYTES) uint8 blocks."""
    n = blocks.shape[0]
    if fmt.name == "q8_0":
        d = np.abs(blocks).max(axis=1, keepdims=True) / 127
        q = _round_away(blocks * _inverse(d))
        return np.concatenate([d.astype(np.float16).view(np.uint8), q.astype(np.int8).view(np.uint8)], axis=1)
    if fmt.name in ("q4_0", "q5_0"):
        levels = 8 if fmt.name == "q4_0" else 16
        d = _signed_absmax(blocks) / -levels
        q = np.trunc(blocks * _inverse(d) + np.float32(levels + 0.5), dtype=np.float32).astype(np.uint8)
        q = q.clip(0, 2 * levels - 1)
        parts = [d.astype(np.float16).view(np.uint8)]
        if fmt.name == "q5_0":
            parts.append(np.packbits(q >> np.uint8(4), axis=-1, bitorder="little"))
        return np.concatenate([*parts, _pack_nibbles(q)], axis=-1)
    if fmt.name == "q4_k":
        sub = blocks.reshape(n, 8, 32)
        low = np.minimum(sub.min(axis=-1), 0)  # a sub-block's offset (<= 0: ggml's mins are subtracted)
        span = (sub.max(axis=-1) - low) / 15
        d = (span.max(axis=-1, keepdims=True) / 63).astype(np.float16)
        dmin = (-low.min(axis=-1, keepdims=True) / 63).astype(np.float16)
        sc = np.clip(np.rint(span * _inverse(d.astype(np.float32))), 0, 63).astype(np.uint8)
        mn = np.clip(np.rint(-low * _inverse(dmin.astype(np.float32))), 0, 63).astype(np.uint8)
        scale = d.astype(np.float32) * sc
        # a sub-block of no scale (d or sc 0: its span below f16's smallest steps) holds one value for its 32 weights:
        # their mean where it is <= 0, else 0 (the minimum for all of them was up to 2.4x worse than zeros)
        mean = np.clip(np.rint(-np.minimum(sub.mean(axis=-1), 0) * _inverse(dmin.astype(np.float32))), 0, 63)
        mn = np.where(scale == 0, mean.astype(np.uint8), mn)
        offset = dmin.astype(np.float32) * mn
        q = np.clip(np.rint((sub + offset[..., None]) * _inverse(scale)[..., None]), 0, 15).astype(np.uint8)
        packed = np.empty((n, 12), np.uint8)
        packed[:, 0:4] = (sc[:, :4] & 0x3F) | ((sc[:, 4:] >> 4) << 6)
        packed[:, 4:8] = (mn[:, :4] & 0x3F) | ((mn[:, 4:] >> 4) << 6)
        packed[:, 8:12] = (sc[:, 4:] & 0x0F) | ((mn[:, 4:] & 0x0F) << 4)
        qs = (q.reshape(n, 4, 2, 32)[:, :, 0] | (q.reshape(n, 4, 2, 32)[:, :, 1] << np.uint8(4))).reshape(n, 128)
        return np.concatenate([d.view(np.uint8), dmin.view(np.uint8), packed, qs], axis=-1)
    if fmt.name == "q6_k":
        sub = blocks.reshape(n, 16, 16)
        amax = _signed_absmax(sub).reshape(n, 16) / -32  # each sub-block's scale (a float), as q4_0 finds it
        d = (np.abs(amax).max(axis=-1, keepdims=True) / 127).astype(np.float16)
        sc = np.clip(np.rint(amax * _inverse(d.astype(np.float32))), -128, 127).astype(np.int8)
        scale = d.astype(np.float32) * sc
        q = np.clip(np.rint(sub * _inverse(scale)[..., None]) + 32, 0, 63).astype(np.uint8).reshape(n, 2, 4, 32)
        lo = q & np.uint8(0x0F)
        ql_bytes = np.concatenate([lo[:, :, 0] | (lo[:, :, 2] << 4), lo[:, :, 1] | (lo[:, :, 3] << 4)],
                                  axis=-1).reshape(n, 128)
        qh = ((q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6))
        return np.concatenate([ql_bytes, qh.reshape(n, 64).astype(np.uint8), sc.view(np.uint8), d.view(np.uint8)],
                              axis=-1)
    raise QuantError(f"no quantizer for {fmt.name}")
