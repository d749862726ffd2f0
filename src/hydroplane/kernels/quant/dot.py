"""The decode GEMV's integer path (DOT): the weights' small integers met with the activations as 8-bit integers in
the device's packed dot product (`dot4x8`: four products and their sum in one instruction), where the float path
spends about four instructions a weight (extract, convert, subtract, fused multiply-add).

The activations become integers once per call, not once per workgroup: `levels_kernel` writes each run of 32 (a
"block" of x, aligned with the weights' blocks) as two levels of 8-bit integers on one power-of-two scale,

    x[j] ~ s * (a[j] + b[j] / 128),   s = 2^(E - 5) where 2^E <= max |x| < 2^(E + 1),

a[j] = round_even(x[j] / s) in -64 .. 64 and b[j] = round_even((x[j] - s a[j]) / s * 128) in -64 .. 64. Every step
is exact in f32 (scalings by powers of two; x - s a is representable), so every device writes the same integers,
and the error of a value is at most s / 256 <= max |x| / 8192 of its block (f16 itself keeps 2^-11 of a value).
A block with an infinite or NaN activation gets s = NaN, so its dot products are NaN, never a finite guess.

A block's levels are LEVEL_WORDS = 20 words (5 vec4s): a's 32 bytes, b's 32 bytes, then s (f32 bits), the sums of a
over elements 0-15 and 16-31 (two s16 in one word), the same of b, and a spare word. The sums give the formats'
offsets and minimums their share without a product per weight (q4_0: q - 8, q5_0: q - 16, q6_k: q - 32 per 16;
q4_k: the sub-block's minimum times the sum of x).

`block_dot_int` is decode.py's `block_dot` on this path: the same whole blocks at compile-time offsets of the words
in registers, ROWS rows, one row of x (M = 1). This module imports only the language and the decoders.
"""

import functools

from hydroplane.kernels.nn.common import STORAGE, load
from hydroplane.kernels.quant.decode import byte_of, half_of, k4_scale_low, word_of
from hydroplane.lang import (
    Buffer,
    bitcast,
    constexpr,
    dot4x8,
    f32,
    fma,
    func,
    global_id,
    kernel_source,
    local_array,
    maximum,
    readonly,
    round_even,
    s32,
    select,
    static_range,
    u32,
)

LEVEL_WORDS = 20  # one 32-block of x: 8 words of a, 8 of b, s, the sums of a and of b (16 + 16), a spare word
LEVELS_THREADS = 64
DOT_FORMATS = ("q8_0", "q4_0", "q5_0", "q4_k", "q6_k")
LOW = 0x0F0F0F0F  # the low nibble of each byte


@functools.cache
def levels_kernel(XDT: str):
    """x (rows of K activations in storage XDT, K a multiple of 32) into its blocks' levels (the module
    docstring): one invocation a block."""
    XS = STORAGE[XDT]

    @kernel_source(local_size=LEVELS_THREADS, name=f"quant_x_levels_{XDT}")
    def quant_x_levels(x: Buffer[XS, readonly], lv: Buffer[u32], blocks: s32):
        i = global_id()
        if i < blocks:
            xv = local_array(f32, 32)
            top = u32(0)  # the largest |x| as its bits (finite floats order as their magnitude bits do)
            for j in static_range(32):
                v = load(x, 32 * i + j, XDT)
                xv[j] = v
                top = maximum(top, bitcast(v, u32) & 0x7FFFFFFF)
            bad = top >= 0x7F800000  # an infinity or NaN in the block
            e = maximum(s32(top >> 23) - 127, -121)  # s = 2^(e - 5) and 1 / s stay normal
            if bad:
                e = s32(0)
            s = bitcast(u32(e + 122) << 23, f32)
            inv = bitcast(u32(132 - e) << 23, f32)
            base = LEVEL_WORDS * i
            sums = local_array(s32, 4)  # a over 0-15, a over 16-31, b over 0-15, b over 16-31
            for t in static_range(4):
                sums[t] = s32(0)
            for w in static_range(8):
                wa = u32(0)
                wb = u32(0)
                for j in static_range(4):
                    v = xv[4 * w + j]
                    a = s32(round_even(v * inv))
                    rest = v - f32(a) * s  # exact: a multiple of v's last place, at most s / 2
                    b = s32(round_even(rest * inv * 128.0))
                    if bad:
                        a = s32(0)
                        b = s32(0)
                    wa = wa | ((u32(a) & 0xFF) << (8 * j))
                    wb = wb | ((u32(b) & 0xFF) << (8 * j))
                    sums[w // 4] += a
                    sums[2 + w // 4] += b
                lv[base + w] = wa
                lv[base + 8 + w] = wb
            lv[base + 16] = select(bad, u32(0x7FC00000), bitcast(s, u32))
            lv[base + 17] = (u32(sums[0]) & 0xFFFF) | (u32(sums[1]) << 16)
            lv[base + 18] = (u32(sums[2]) & 0xFFFF) | (u32(sums[3]) << 16)
            lv[base + 19] = u32(0)

    return quant_x_levels


def levels_words(k: int) -> int:
    """The levels' words of one row of k activations."""
    return k // 32 * LEVEL_WORDS


@func
def half_sum(word, HALF: constexpr):
    """The s16 in half HALF (0: low, 1: high; 2: both added) of word, as s32."""
    if HALF == 2:
        return (bitcast(word << 16, s32) >> 16) + (bitcast(word, s32) >> 16)
    if HALF == 0:
        return bitcast(word << 16, s32) >> 16
    return bitcast(word, s32) >> 16


@func
def x_levels(lv4, at, la, lb):
    """The 32-block `at` of x's levels (lv4: their vec4 view): a's and b's 8 words into la, lb; returns its vec4 of
    (s bits, sums of a, sums of b, spare)."""
    q = 5 * at
    for h in static_range(2):
        va = lv4[q + h]
        vb = lv4[q + 2 + h]
        for j in static_range(4):
            la[4 * h + j] = va[j]
            lb[4 * h + j] = vb[j]
    return lv4[q + 4]


@func
def nibble_word(words, q: constexpr, HIGH: constexpr):
    """Four nibbles of the bytes at byte q (even) of words[] as four bytes: the low ones, or the high ones."""
    w = word_of(words, q)
    if HIGH:
        return (w >> 4) & LOW
    return w & LOW


@func
def block_dot_int(acc, words, p0: constexpr, STRIDE: constexpr, lv4, x_at, FMT: constexpr, ROWS: constexpr):
    """acc[r] += x[x_at : x_at + BLOCK] . row r's block at byte p0 + r * STRIDE of words[] (the integer path: x's
    levels from lv4, one row of x, ROWS rows of W); the module docstring."""
    la = local_array(u32, 8)
    lb = local_array(u32, 8)
    if FMT == "q4_k":
        for sub in static_range(8):  # sub-block sub: elements 32 sub .., bytes 16 + 32 (sub // 2) .. of nibbles
            meta = x_levels(lv4, (x_at >> 5) + sub, la, lb)
            s = bitcast(meta[0], f32)
            xsum = f32(half_sum(meta[1], 2)) + f32(half_sum(meta[2], 2)) * 0.0078125
            for r in static_range(ROWS):
                q = p0 + r * STRIDE
                ia = s32(0)
                ib = s32(0)
                for h in static_range(8):
                    w = nibble_word(words, q + 16 + 32 * (sub // 2) + 4 * h, sub % 2 == 1)
                    ia += dot4x8(la[h], w, "su")
                    ib += dot4x8(lb[h], w, "su")
                scale, low = k4_scale_low(words, q, sub)
                acc[r] = fma(s, scale * (f32(ia) + f32(ib) * 0.0078125) - low * xsum, acc[r])
    elif FMT == "q6_k":
        for g32 in static_range(8):  # elements 32 g32 ..: half hh = g32 // 4 of 128, quarter g = g32 % 4
            hh = g32 // 4
            g = g32 % 4
            meta = x_levels(lv4, (x_at >> 5) + g32, la, lb)
            s = bitcast(meta[0], f32)
            for r in static_range(ROWS):
                q = p0 + r * STRIDE
                d = half_of(words, q + 208)
                total = f32(0.0)
                for half in static_range(2):  # 16 elements a scale
                    ia = s32(0)
                    ib = s32(0)
                    for c in static_range(4):
                        el = 16 * half + 4 * c
                        lw = word_of(words, q + 64 * hh + 32 * (g % 2) + el)
                        hw = word_of(words, q + 128 + 32 * hh + el)
                        w6 = ((lw >> (4 * (g // 2))) & LOW) | (((hw >> (2 * g)) & 0x03030303) << 4)
                        ia += dot4x8(la[4 * half + c], w6, "su")
                        ib += dot4x8(lb[4 * half + c], w6, "su")
                    ia -= 32 * half_sum(meta[1], half)
                    ib -= 32 * half_sum(meta[2], half)
                    sc = f32(bitcast(byte_of(words, q + 192 + 8 * hh + 2 * g + half) << 24, s32) >> 24)
                    total = fma(sc, f32(ia) + f32(ib) * 0.0078125, total)
                acc[r] = fma(d * s, total, acc[r])
    else:  # q8_0, q4_0, q5_0: one 32-block
        meta = x_levels(lv4, x_at >> 5, la, lb)
        s = bitcast(meta[0], f32)
        for r in static_range(ROWS):
            q = p0 + r * STRIDE
            ia = s32(0)
            ib = s32(0)
            if FMT == "q8_0":
                for h in static_range(8):
                    w = word_of(words, q + 2 + 4 * h)
                    ia += dot4x8(la[h], w, "ss")
                    ib += dot4x8(lb[h], w, "ss")
            else:
                QS = 2 if FMT == "q4_0" else 6
                for h in static_range(8):  # elements 4h .. 4h + 3: low nibbles (h < 4) or high of bytes 4(h % 4) ..
                    w = nibble_word(words, q + QS + 4 * (h % 4), h >= 4)
                    if FMT == "q5_0":  # bit 4 of element e is bit e of the word at byte 2
                        t = (word_of(words, q + 2) >> (4 * h)) & 0xF
                        w = w | (((t * 0x00204081) & 0x01010101) << 4)
                    ia += dot4x8(la[h], w, "su")
                    ib += dot4x8(lb[h], w, "su")
                OFFSET = 8 if FMT == "q4_0" else 16
                ia -= OFFSET * half_sum(meta[1], 2)
                ib -= OFFSET * half_sum(meta[2], 2)
            acc[r] = fma(half_of(words, q) * s, f32(ia) + f32(ib) * 0.0078125, acc[r])
