"""The block formats' decoders in the kernel language: one table, shared by every quantized kernel.

The weights are bound as a `Buffer[u32]` of ggml's block bytes, unchanged (rows of K / BLOCK blocks, row n at byte
n * row_bytes). ggml's blocks are 2-byte aligned at best (q8_0's are 34 bytes, q4_0's 18, q5_0's 22, q6_k's 210;
q4_k's 144 are 4-byte aligned), so the helpers read 32-bit words at even byte offsets (`word_at`: one aligned load,
or two funnelled when the bytes cross a word: never a word past the last block's) and the f16 scales from them
(`half_at`).

`decode8(vals, w, row_base, e, FMT)` writes the 8 consecutive weights e .. e + 7 of the row at byte row_base
(e a multiple of 8) into vals[0:8] as f32, computed as gguf.quants.dequantize computes them (its float32 products
in its order), for FMT in FORMATS: every quantized kernel (the decode GEMV, the prefill GEMM's staging, the row
gather) calls this one helper, the format a constexpr. This module imports only the language.
"""

from hydroplane.lang import bitcast, constexpr, f16, f32, func, s32, static_range, u16, u32

FORMATS = {"q8_0": (32, 34), "q4_0": (32, 18), "q5_0": (32, 22), "q4_k": (256, 144), "q6_k": (256, 210)}


@func
def word_at(w, off):
    """The u32 at even byte offset off (little-endian), from one or two aligned words."""
    i = off >> 2
    lo = w[i]
    if off & 2 == 0:
        return lo
    return (lo >> 16) | (w[i + 1] << 16)  # only when the bytes cross a word: never past the blocks' last word


@func
def byte_at(w, off):
    """The byte at offset off, as u32."""
    return (w[off >> 2] >> u32((off & 3) << 3)) & 0xFF


@func
def half_at(w, off):
    """The f16 at even byte offset off, as f32."""
    return f32(bitcast(u16((w[off >> 2] >> u32((off & 2) << 3)) & 0xFFFF), f16))


@func
def signed_byte(word, j: constexpr):
    """Byte j of word, sign-extended, as f32."""
    return f32(bitcast(word << (24 - 8 * j), s32) >> 24)


@func
def nibble(word, j: constexpr, high):
    """Bits 4 * high .. + 3 of byte j of word (high 0 or 1, run-time), as s32."""
    return s32((word >> (8 * j)) >> u32(high << 2) & 0xF)


@func
def k_scale_min(w, scales, s):
    """q4_k's 6-bit (scale, min) of sub-block s (0..7) from the 12 scale bytes at byte offset `scales`."""
    if s < 4:
        return s32(byte_at(w, scales + s) & 63), s32(byte_at(w, scales + s + 4) & 63)
    upper = byte_at(w, scales + s + 4)
    sc = (upper & 0xF) | ((byte_at(w, scales + s - 4) >> 6) << 4)
    mn = (upper >> 4) | ((byte_at(w, scales + s) >> 6) << 4)
    return s32(sc), s32(mn)


@func
def decode8(vals, w, row_base, e, FMT: constexpr):
    """Weights e .. e + 7 of the row at byte row_base into vals[0:8] (f32): the module docstring."""
    if FMT == "q8_0":
        off = row_base + (e >> 5) * 34
        d = half_at(w, off)
        q = off + 2 + (e & 31)
        lo = word_at(w, q)
        hi = word_at(w, q + 4)
        for j in static_range(4):
            vals[j] = signed_byte(lo, j) * d
            vals[4 + j] = signed_byte(hi, j) * d
    elif FMT == "q4_0":
        off = row_base + (e >> 5) * 18
        d = half_at(w, off)
        i = e & 31
        q = off + 2 + (i & 15)
        high = i >> 4
        lo = word_at(w, q)
        hi = word_at(w, q + 4)
        for j in static_range(4):
            vals[j] = d * f32(nibble(lo, j, high) - 8)
            vals[4 + j] = d * f32(nibble(hi, j, high) - 8)
    elif FMT == "q5_0":
        off = row_base + (e >> 5) * 22
        d = half_at(w, off)
        i = e & 31
        qh = word_at(w, off + 2) >> u32(i)
        q = off + 6 + (i & 15)
        high = i >> 4
        lo = word_at(w, q)
        hi = word_at(w, q + 4)
        for j in static_range(4):
            vals[j] = d * f32(nibble(lo, j, high) + s32((qh >> j & 1) << 4) - 16)
            vals[4 + j] = d * f32(nibble(hi, j, high) + s32((qh >> (4 + j) & 1) << 4) - 16)
    elif FMT == "q4_k":
        off = row_base + (e >> 8) * 144
        d = half_at(w, off)
        dmin = half_at(w, off + 2)
        i = e & 255
        s = i >> 5
        sc, mn = k_scale_min(w, off + 4, s)
        scale = d * f32(sc)
        low = dmin * f32(mn)
        q = off + 16 + (s >> 1) * 32 + (i & 31)
        high = s & 1
        lo = w[q >> 2]
        hi = w[(q >> 2) + 1]
        for j in static_range(4):
            vals[j] = scale * f32(nibble(lo, j, high)) - low
            vals[4 + j] = scale * f32(nibble(hi, j, high)) - low
    elif FMT == "q6_k":
        off = row_base + (e >> 8) * 210
        i = e & 255
        h = i >> 7
        g = (i >> 5) & 3
        el = i & 31
        scale = half_at(w, off + 208) * f32(bitcast(byte_at(w, off + 192 + (i >> 4)) << 24, s32) >> 24)
        ql = off + h * 64 + (g & 1) * 32 + el
        qh = off + 128 + h * 32 + el
        low_shift = u32((g >> 1) << 2)
        high_shift = u32(g << 1)
        for half in static_range(2):
            lw = word_at(w, ql + 4 * half)
            hw = word_at(w, qh + 4 * half)
            for j in static_range(4):
                lq = (lw >> (8 * j)) >> low_shift & 0xF
                hq = (hw >> (8 * j)) >> high_shift & 0x3
                vals[4 * half + j] = scale * f32(s32(lq | (hq << 4)) - 32)
