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

from hydroplane.lang import bitcast, constexpr, f16, f32, fma, func, minimum, s32, select, static_range, u16, u32

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


# Whole blocks from words in registers (the decode GEMV) -------------------------------------------------------------
# The decode GEMV loads a run of whole blocks (a "unit": UB blocks whose bytes are a multiple of the load width, so
# that every unit starts aligned) in 4-, 8- or 16-byte loads into a local array of words, and decodes it with
# compile-time byte offsets: no funnel decided at run time, no scale read twice. The dot products factor each scale
# out (sum x * q first, then * scale), in f32 with fused multiply-adds. The small unsigned integers u of W (q plus the
# format's offset) become f32 without a conversion instruction by placing them at the top of a mantissa
# (`ones`): 1 + u / 2^width, exact, one shift and one and-or. A group's sum of x * (1 + u / 2^width) is then
# X + U / 2^width, where X is the sum of the group's activations (computed once for all ROWS rows), so
# U = 2^width (part - X), and the offset's share folds into the same correction: q = u - offset gives
# sum x * q = 2^width * part - (2^width + offset) * X. (`small`, the exponent trick bits | 0x4B000000 = 2^23 + bits,
# costs one subtraction more a weight but needs no X: q8_0, q6_k and the lane GEMV keep it; an H100 measured `ones`
# 5-8% faster for q4_0, q5_0 and q4_k and no faster, or 11% slower, for q8_0.) Where a weight's bits lie in two
# fields (q5_0's nibble and fifth bit, q6_k's 4 low and 2 high bits), four weights are put together at once, one in
# each byte of a word (`field`'s REPEAT), and each is then taken from its byte: the same integers in fewer
# instructions.

MAGIC = 8388608.0  # 2^23: the f32 whose low mantissa bits hold a small integer exactly


def unit_blocks(fmt: str, load_bytes: int) -> int:
    """Blocks of `fmt` per unit: the fewest whole blocks whose bytes are a multiple of load_bytes (4, 8 or 16)."""
    nbytes = FORMATS[fmt][1]
    for count in (1, 2, 4, 8):
        if count * nbytes % load_bytes == 0:
            return count
    raise ValueError(f"no unit of {fmt} blocks fits {load_bytes}-byte loads")


@func
def word_of(words, p: constexpr):
    """The u32 at even byte offset p (compile-time) of the bytes held in words[]."""
    if p % 4 == 0:
        return words[p // 4]
    return (words[p // 4] >> 16) | (words[p // 4 + 1] << 16)


@func
def byte_of(words, p: constexpr):
    """The byte at offset p (compile-time) of the bytes held in words[], as u32."""
    return (words[p // 4] >> (8 * (p % 4))) & 0xFF


@func
def half_of(words, p: constexpr):
    """The f16 at even byte offset p (compile-time), as f32."""
    return f32(bitcast(u16((words[p // 4] >> (8 * (p % 4))) & 0xFFFF), f16))


@func
def field(word, BIT: constexpr, TO: constexpr, WIDTH: constexpr, REPEAT: constexpr = 1):
    """The WIDTH-bit field at bit BIT of the u32 word moved to bit TO (the other bits 0): a shift and an and.
    REPEAT 0x01010101: the four fields at BIT, BIT + 8, BIT + 16, BIT + 24 of the word's bytes, each moved to TO of its
    byte (TO + WIDTH <= 8), in the same two instructions."""
    MASK = (((1 << WIDTH) - 1) << TO) * REPEAT
    if BIT < TO:
        return (word << (TO - BIT)) & MASK
    if BIT > TO:
        return (word >> (BIT - TO)) & MASK
    return word & MASK


@func
def ones(word, BIT: constexpr, WIDTH: constexpr):
    """1 + u / 2^WIDTH as f32, exactly, for the WIDTH-bit unsigned field u at bit BIT of the u32 word (the field moved
    to the top of the mantissa of 1.0)."""
    return bitcast(field(word, BIT, 23 - WIDTH, WIDTH) | 0x3F800000, f32)


@func
def small(bits, OFFSET: constexpr):
    """The unsigned integer bits (< 2^23) minus OFFSET (an f32 constant: 2^23 + the offset), exactly, as f32."""
    return bitcast(bits | 0x4B000000, f32) - OFFSET


@func
def dot8(part, at, xs, wv, MR: constexpr, STEP: constexpr):
    """part[at + STEP * m] += xs[8m:8m+8] . wv[0:8] for the MR rows of x (fused multiply-adds)."""
    for m in static_range(MR):
        total = part[at + STEP * m]
        for j in static_range(8):
            total = fma(xs[m * 8 + j], wv[j], total)
        part[at + STEP * m] = total


@func
def sum8(part, xs, MR: constexpr):
    """part[m] += the sum of xs[8m:8m+8] (q4_k's minimums)."""
    for m in static_range(MR):
        total = part[m]
        for j in static_range(8):
            total += xs[m * 8 + j]
        part[m] = total


@func
def q8_ints(wv, words, p0: constexpr, g: constexpr):
    """Elements 8g .. 8g + 7 of the q8_0 block at byte p0 of words[] into wv[0:8] as f32 (`small`): the weights are
    these times the block's scale d (half_of(words, p0))."""
    for h in static_range(2):
        qw = word_of(words, p0 + 2 + 8 * g + 4 * h) ^ 0x80808080
        for j in static_range(4):
            wv[4 * h + j] = small((qw >> (8 * j)) & 0xFF, MAGIC + 128.0)


@func
def group_ones(wv, words, p0: constexpr, g: constexpr, FMT: constexpr):
    """Elements 8g .. 8g + 7 of the q4_0 or q5_0 block at byte p0 of words[] into wv[0:8] as 1 + u / 2^width (`ones`;
    u: q4_0's nibble, q5_0's 5 bits; width 4 or 5): ONES_SHIFT says how a group's sum of x * wv becomes sum x * q.
    Elements 8g .. 8g + 7 are the low nibbles (g < 2) or the high nibbles of bytes 8(g % 2) .. of the block's quants."""
    QS = 2 if FMT == "q4_0" else 6
    for h in static_range(2):
        qw = word_of(words, p0 + QS + 8 * (g % 2) + 4 * h)
        if FMT == "q4_0":
            for j in static_range(4):
                wv[4 * h + j] = ones(qw, 8 * j + 4 * (g // 2), 4)
        else:  # the 4 weights' nibbles in the 4 bytes of q, and their fifth bits (bits 8g + 4h .. + 3 of qh) at bit
            # 4 of each byte: bit j of the 4-bit t lands at 8j + 4 in t * 0x02040810 (the 4 shifted copies of t
            # never overlap, so the sum carries nothing)
            t = field(word_of(words, p0 + 2), 8 * g + 4 * h, 0, 4)
            q = field(qw, 4 * (g // 2), 0, 4, 0x01010101) | ((t * 0x02040810) & 0x10101010)
            for j in static_range(4):
                wv[4 * h + j] = ones(q, 8 * j, 5)


# (2^width, 2^width + offset) of group_ones: sum x * q = 2^width * sum x * wv - (2^width + offset) * sum x
ONES_SHIFT = {"q4_0": (16.0, 24.0), "q5_0": (32.0, 48.0)}


@func
def load_x_rows(xs, x4, xoff, at, MR: constexpr, XDT: constexpr, load_x: constexpr):
    """The 8 activations at element `at` of each of MR rows of x (rows at elements xoff[m]) into xs[8m:8m+8]."""
    for m in static_range(MR):
        load_x(xs, m * 8, x4, xoff[m] + at, XDT)


@func
def k4_scale_low(words, q: constexpr, s: constexpr):
    """q4_k's sub-block s: (d * scale, dmin * min) in f32 from the block at byte q of words[] (6-bit scales and mins
    in its 12 bytes from byte 4)."""
    if s < 4:
        sc = byte_of(words, q + 4 + s) & 63
        mn = byte_of(words, q + 8 + s) & 63
    else:
        sc = (byte_of(words, q + 8 + s) & 0xF) | ((byte_of(words, q + s) >> 6) << 4)
        mn = (byte_of(words, q + 8 + s) >> 4) | ((byte_of(words, q + 4 + s) >> 6) << 4)
    return half_of(words, q) * f32(s32(sc)), half_of(words, q + 2) * f32(s32(mn))


@func
def block_dot(acc, words, p0: constexpr, STRIDE: constexpr, xs, wv, part, xsum, x4, xoff, x_at, FMT: constexpr,
              MR: constexpr, ROWS: constexpr, XDT: constexpr, load_x: constexpr):
    """acc[m * ROWS + r] += x[row m, x_at : x_at + BLOCK] . row r's block at byte p0 + r * STRIDE of words[], for MR
    rows of x (starting at elements xoff[m]) and ROWS rows of W: each 8 activations, read once by `load_x(xs, slot,
    x4, at, XDT)` as f32, meet every row (xs, wv, part: MR * ROWS and xsum: MR are the caller's scratch)."""
    if FMT == "q8_0" or FMT == "q4_0" or FMT == "q5_0":  # q8_0 by the exponent trick (`small`), the others `ones`
        for i in static_range(MR * ROWS):
            part[i] = 0.0
        for m in static_range(MR):
            xsum[m] = 0.0
        for g in static_range(4):
            load_x_rows(xs, x4, xoff, x_at + 8 * g, MR, XDT, load_x)
            if FMT != "q8_0":
                sum8(xsum, xs, MR)
            for r in static_range(ROWS):
                if FMT == "q8_0":
                    q8_ints(wv, words, p0 + r * STRIDE, g)
                else:
                    group_ones(wv, words, p0 + r * STRIDE, g, FMT)
                dot8(part, r, xs, wv, MR, ROWS)
        for r in static_range(ROWS):
            d = half_of(words, p0 + r * STRIDE)
            for m in static_range(MR):
                if FMT == "q8_0":
                    acc[m * ROWS + r] = fma(d, part[m * ROWS + r], acc[m * ROWS + r])
                else:
                    UNIT, SHIFT = ONES_SHIFT[FMT]
                    acc[m * ROWS + r] = fma(d, fma(UNIT, part[m * ROWS + r], -SHIFT * xsum[m]), acc[m * ROWS + r])
    elif FMT == "q4_k":
        for s in static_range(8):  # sub-block s: elements 32s .. 32s + 31, bytes 16 + 32(s//2) .. of nibbles
            for i in static_range(MR * ROWS):
                part[i] = 0.0
            for m in static_range(MR):
                xsum[m] = 0.0
            for g in static_range(4):
                load_x_rows(xs, x4, xoff, x_at + 32 * s + 8 * g, MR, XDT, load_x)
                sum8(xsum, xs, MR)
                for r in static_range(ROWS):
                    for h in static_range(2):
                        qw = word_of(words, p0 + r * STRIDE + 16 + 32 * (s // 2) + 8 * g + 4 * h)
                        for j in static_range(4):
                            wv[4 * h + j] = ones(qw, 8 * j + 4 * (s % 2), 4)
                    dot8(part, r, xs, wv, MR, ROWS)
            for r in static_range(ROWS):  # part = X + Q / 16: d sc Q - dmin m X = 16 d sc part - (16 d sc + dmin m) X
                q = p0 + r * STRIDE
                scale, low = k4_scale_low(words, q, s)
                scale16 = 16.0 * scale
                for m in static_range(MR):
                    acc[m * ROWS + r] = fma(scale16, part[m * ROWS + r], acc[m * ROWS + r]) - (scale16 + low) * xsum[m]
    elif FMT == "q6_k":
        for i in static_range(16):  # 16 elements per scale: i = 8h + 2g + half
            hh = i // 8
            g = (i // 2) % 4
            half = i % 2
            for t in static_range(MR * ROWS):
                part[t] = 0.0
            for c in static_range(2):
                el = 16 * half + 8 * c
                load_x_rows(xs, x4, xoff, x_at + 128 * hh + 32 * g + el, MR, XDT, load_x)
                for r in static_range(ROWS):
                    for q4 in static_range(2):  # 4 weights' 6 bits put together in the 4 bytes of q at once
                        lw = word_of(words, p0 + r * STRIDE + 64 * hh + 32 * (g % 2) + el + 4 * q4)
                        hw = word_of(words, p0 + r * STRIDE + 128 + 32 * hh + el + 4 * q4)
                        q = field(lw, 4 * (g // 2), 0, 4, 0x01010101) | field(hw, 2 * g, 4, 2, 0x01010101)
                        for j in static_range(3):
                            wv[4 * q4 + j] = small(field(q, 8 * j, 0, 6), MAGIC + 32.0)
                        wv[4 * q4 + 3] = small(q >> 24, MAGIC + 32.0)
                    dot8(part, r, xs, wv, MR, ROWS)
            for r in static_range(ROWS):
                q = p0 + r * STRIDE
                sc = half_of(words, q + 208) * f32(bitcast(byte_of(words, q + 192 + i) << 24, s32) >> 24)
                for m in static_range(MR):
                    acc[m * ROWS + r] = fma(sc, part[m * ROWS + r], acc[m * ROWS + r])


# Lane groups (the lane-interleaved decode GEMV, kernels/quant/source.py `gemv_lanes_kernel`) --------------------------
# Four consecutive lanes share a 32-weight block of q8_0, q4_0 or q5_0, each taking 8 of its weights ("group" s, 0 ..
# 3): q8_0 elements 8s .. 8s + 7 (bytes 8s .. 8s + 7 of its quants); q4_0 and q5_0 the low and the high nibbles of
# bytes 4s .. 4s + 3 (elements 4s .. 4s + 3 and 16 + 4s .. 16 + 4s + 3). So 32 lanes read 8 consecutive blocks: each
# load instruction of a subgroup touches one run of bytes, every sector used whole (a lane per unit of blocks touches
# 32 runs a unit apart). The bytes are 2-byte aligned: a lane loads the aligned words around its bytes and funnels
# them (a select, not a branch).

LANE_FORMATS = ("q8_0", "q4_0", "q5_0")


@func
def word_near(w, p, w_last):
    """The u32 at even byte offset p: the aligned word, or two (the second's index clamped to w_last) funnelled."""
    i = p >> 2
    a = w[i]
    b = w[minimum(i + 1, w_last)]
    return select((p & 2) != 0, (a >> 16) | (b << 16), a)


@func
def lane_group(wv, w, off, s, w_last, FMT: constexpr):
    """Group s (0 .. 3, run time) of the q8_0, q4_0 or q5_0 block at byte off of w into wv[0:8] as integers with the
    format's offset removed (f32, exactly; the order of `lane_runs`' activations); returns the block's scale d (f32).
    No word past w_last (the weight's last) is read."""
    w0 = w[off >> 2]
    d = f32(bitcast(u16(select((off & 2) != 0, w0 >> 16, w0 & 0xFFFF)), f16))
    if FMT == "q8_0":
        lo = word_near(w, off + 2 + 8 * s, w_last) ^ 0x80808080
        hi = word_near(w, off + 6 + 8 * s, w_last) ^ 0x80808080
        for j in static_range(4):
            wv[j] = small((lo >> (8 * j)) & 0xFF, MAGIC + 128.0)
            wv[4 + j] = small((hi >> (8 * j)) & 0xFF, MAGIC + 128.0)
    elif FMT == "q4_0":
        qw = word_near(w, off + 2 + 4 * s, w_last)
        for j in static_range(4):
            wv[j] = small((qw >> (8 * j)) & 0xF, MAGIC + 8.0)
            wv[4 + j] = small((qw >> (8 * j + 4)) & 0xF, MAGIC + 8.0)
    else:  # q5_0: bit e of qh (bytes 2 .. 5) is element e's fifth bit
        hb = word_near(w, off + 2, w_last) >> u32(4 * s)
        qw = word_near(w, off + 6 + 4 * s, w_last)
        for j in static_range(4):
            wv[j] = small(((qw >> (8 * j)) & 0xF) | (((hb >> j) & 1) << 4), MAGIC + 16.0)
            wv[4 + j] = small(((qw >> (8 * j + 4)) & 0xF) | (((hb >> (16 + j)) & 1) << 4), MAGIC + 16.0)
    return d


@func
def lane_runs(g, FMT: constexpr):
    """The first elements of group g's two runs of 4 activations (g: the row's 8-weight group, 4 a block)."""
    e = (g >> 2) * 32
    s = g & 3
    if FMT == "q8_0":
        return e + 8 * s, e + 8 * s + 4
    return e + 4 * s, e + 16 + 4 * s
