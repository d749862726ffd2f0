"""Skinny GEMMs (few rows of A: an LLM's decode step) that stream B at memory speed, in the kernel language.

D = act(alpha * op(A) @ op(B) + beta * C + bias) for small M: every element of B is read once and used for M
rows, so the time is B's bytes over the memory bandwidth, and the tensor cores buy nothing. Two kernels by how B
is stored, one for the split reduction:

- `gemv_rows_kernel(in, acc, out)`: B stored K x N (layouts nn, tn). An invocation owns VEC consecutive columns
  (one 16-byte chunk of a B row with WIDE, else one column) and a K lane; CW chunk columns side by side make the
  workgroup's loads of one B row contiguous, KW lanes walk down K (k = k_begin + kw, + KW, ...). UNROLL rows are
  loaded before any is multiplied, so that many loads are in flight; each loaded element meets MR rows of A.
  The KW lanes' sums meet in subgroup shuffles and then in shared memory.
- `gemv_dot_kernel(in, acc, out)`: B stored N x K (layouts nt, tt: a weight matrix in PyTorch's layout). An
  invocation owns CPI consecutive columns of D (rows of B) and a K lane; KW lanes (a power of two within a
  subgroup) read neighbouring 16-byte chunks of each B row, each chunk meeting the matching chunk of MR rows of A,
  and their sums meet in subgroup shuffles; KG such groups of lanes (KG subgroups) share the same columns along
  K, their sums meeting in shared memory: many invocations per column group, so that CPI can be large (A's
  chunks converted once for CPI columns) while the GPU still has enough loads in flight. EVEN_K: every K lane
  runs the same whole number of steps (no clamped loads, no masked rows of A); EVEN_N: no column past N.
- `gemv_reduce_kernel(acc, out)`: with SPLIT K ranges (grid z), each writes its partial sums (in the working type)
  to a scratch buffer `part`; this kernel adds the ranges up and applies the epilogue.

Arithmetic is in the accumulator type (work_type), wrapping for integers like the GEMM kernels; float products
are added with one fused multiply-add (`madd`: an f16 x f16 product is exact in f32, so f16:f32 gives what a
multiply and an add would, in one instruction). The epilogue is the
GEMM library's: alpha, + beta * C, + bias, ReLU or GELU (tanh form), conversion to the output type.
Configurations and launch plans: plan.py's GemvConfig (docs/gemm.md, "Skinny problems").
"""

import functools

from hydroplane.kernels.gemm.source import GELU_C, GELU_CUBIC, V4
from hydroplane.lang import (
    Buffer,
    barrier,
    bf16,
    bitcast,
    cast,
    constexpr,
    f16,
    f32,
    fma,
    func,
    global_id,
    kernel_source,
    lane_id,
    local_array,
    minimum,
    readonly,
    s32,
    select,
    shared_array,
    static_range,
    subgroup_id,
    subgroup_shuffle_xor,
    tanh,
    u16,
    workgroup_id,
)
from hydroplane.spirv import types


def work_type(acc: types.Scalar) -> types.Scalar:
    """The type the skinny kernels add in: the accumulator asked (f32, f16, s32, u32), as the tensor-core GEMM adds
    in it (hydroplane.matmul's acc_dtype holds on every route)."""
    return acc


def log2_exact(value: int) -> int:
    """log2 of a power of two (compile-time: how many shuffle steps a reduction takes)."""
    return value.bit_length() - 1


@func
def unpack(word, j: constexpr, IN: constexpr, WORK: constexpr):
    """Element j of the 2 (16-bit) or 4 (8-bit) elements of IN packed in the u32 `word`, little-endian, as WORK."""
    if IN == f16:
        return cast(bitcast(u16(word >> (16 * j) & 0xFFFF), f16), WORK)
    if IN == bf16:
        if j == 0:
            return bitcast(word << 16, f32)
        return bitcast(word & 0xFFFF0000, f32)
    if IN.signed:
        return cast(bitcast(word << (24 - 8 * j), s32) >> 24, WORK)
    return cast(word >> (8 * j) & 0xFF, WORK)


@func
def unpack_chunk(vals, chunk, IN: constexpr, WORK: constexpr, VEC: constexpr):
    """The VEC elements of a 16-byte chunk (a V4) into vals[0:VEC] as WORK."""
    PER_WORD = VEC // 4
    for w in static_range(4):
        for j in static_range(PER_WORD):
            vals[w * PER_WORD + j] = unpack(chunk[w], j, IN, WORK)


@func
def madd(acc, a, b, WORK: constexpr):
    """acc + a * b: one fused multiply-add for floats, a multiply and a wrapping add for integers."""
    if WORK.kind == "int":
        return acc + a * b
    return fma(a, b, acc)


@func
def factor(x, WORK: constexpr):
    """An f32 push constant (alpha, beta) in the working type; integers through s32, so that an unsigned
    accumulator scales modulo 2**32 as the GEMM kernels and NumPy's wrapped reference do."""
    if WORK.kind == "int":
        return cast(s32(x), WORK)
    return cast(x, WORK)  # an f16 accumulator scales in f16, as the GEMM kernels' epilogue does


@func
def epilogue(value, c, bias, row, col, N, alpha, beta, USE_C: constexpr, BIAS: constexpr, ACT: constexpr,
             SCALE: constexpr, WORK: constexpr, OUT: constexpr):
    """alpha * value (+ beta * C[row, col]) (+ bias[col]), the activation, in WORK; the result in OUT."""
    result = value
    if SCALE:
        result = result * factor(alpha, WORK)
    if USE_C:
        result += cast(c[row * N + col], WORK) * factor(beta, WORK)
    if BIAS:
        result += cast(bias[col], WORK)
    if ACT == "relu":  # NaN stays NaN, as np.maximum and torch.relu
        result = select(result < 0, WORK(0), result)
    if ACT == "gelu":
        xf = f32(result)
        result = cast(0.5 * xf * (1.0 + tanh(GELU_C * (xf + GELU_CUBIC * xf * xf * xf))), WORK)
    return cast(result, OUT)


@func
def a_element(a, row, k, M, K, AT: constexpr, WORK: constexpr):
    """A[row, k] as WORK (A stored M x K, or K x M with AT)."""
    if AT:
        return cast(a[k * M + row], WORK)
    return cast(a[row * K + k], WORK)


@func
def put(d, part, value, c, bias, row, col, split, M, N, alpha, beta, PARTIAL: constexpr, USE_C: constexpr,
        BIAS: constexpr, ACT: constexpr, SCALE: constexpr, WORK: constexpr, OUT: constexpr):
    """One result: D[row, col] through the epilogue, or (PARTIAL) this K range's sum into part[split]."""
    if PARTIAL:
        part[(split * M + row) * N + col] = value
    else:
        d[row * N + col] = epilogue(value, c, bias, row, col, N, alpha, beta, USE_C, BIAS, ACT, SCALE, WORK, OUT)


def rows_threads(constexprs: dict) -> int:
    return constexprs["CW"] * constexprs["KW"]


def rows_shared(cw: int, kw: int, mr: int, vec: int, sg: int) -> int:
    """Elements of the rows kernel's shared reduction array (1 when one subgroup holds the whole workgroup)."""
    subgroups = cw * kw // sg
    return subgroups * cw * mr * vec if subgroups > 1 else 1


@functools.cache
def gemv_rows_kernel(IN, ACC, OUT):  # noqa: N803 -- dtypes read as the kernel's constants
    """The skinny GEMM for B stored K x N (see the module docstring)."""
    WORK = work_type(ACC)

    @kernel_source(local_size=rows_threads, name=f"gemv_rows_{IN}_{ACC}_{OUT}")
    def gemv_rows(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                  bias: Buffer[OUT, readonly], d: Buffer[OUT], part: Buffer[WORK], b4: Buffer[V4, readonly],
                  alpha: f32, beta: f32, M: s32, N: s32, K: s32, k_split: s32,
                  AT: constexpr, MR: constexpr, CW: constexpr, KW: constexpr, UNROLL: constexpr, WIDE: constexpr,
                  SG: constexpr, PARTIAL: constexpr, USE_C: constexpr, BIAS: constexpr, ACT: constexpr,
                  SCALE: constexpr = True):
        VEC = WIDE if WIDE else 1
        THREADS = CW * KW
        SUBGROUPS = THREADS // SG
        OUTS = CW * MR * VEC  # results per workgroup
        red = shared_array(WORK, rows_shared(CW, KW, MR, VEC, SG))
        lane = lane_id()
        t = subgroup_id() * SG + lane
        cw = t % CW
        kw = t // CW
        col0 = (workgroup_id(0) * CW + cw) * VEC
        col = minimum(col0, N - VEC)  # a chunk past N loads the last one (its results are not stored)
        m0 = workgroup_id(1) * MR
        split = workgroup_id(2)
        k_begin = split * k_split
        k_end = minimum(K, k_begin + k_split)
        acc = local_array(WORK, MR * VEC)
        for i in static_range(MR * VEC):
            acc[i] = WORK(0)
        chunks = local_array(V4, UNROLL if WIDE else 1)
        elems = local_array(WORK, 1 if WIDE else UNROLL)
        vals = local_array(WORK, VEC)
        for k0 in range(k_begin + kw, k_end, KW * UNROLL):
            # UNROLL rows of B loaded first (rows past the range load the last row and count zero: both factors
            # zeroed, so that an inf in that row or in A's last column makes no 0 * inf = NaN)
            for u in static_range(UNROLL):
                k = minimum(k0 + u * KW, k_end - 1)
                if WIDE:
                    chunks[u] = b4[(k * N + col) // VEC]
                else:
                    elems[u] = cast(b[k * N + col], WORK)
            for u in static_range(UNROLL):
                k = minimum(k0 + u * KW, k_end - 1)
                if WIDE:
                    unpack_chunk(vals, chunks[u], IN, WORK, VEC)
                else:
                    vals[0] = elems[u]
                live = k0 + u * KW < k_end
                for j in static_range(VEC):
                    vals[j] = select(live, vals[j], WORK(0))
                for m in static_range(MR):
                    av = select(live, a_element(a, minimum(m0 + m, M - 1), k, M, K, AT, WORK), WORK(0))
                    for j in static_range(VEC):
                        acc[m * VEC + j] = madd(acc[m * VEC + j], av, vals[j], WORK)
        # the KW lanes of each column chunk: within a subgroup by shuffles, across subgroups in shared memory
        for s in static_range(log2_exact(SG // CW) if CW < SG else 0):
            for i in static_range(MR * VEC):
                acc[i] += subgroup_shuffle_xor(acc[i], CW << s)
        if SUBGROUPS > 1:
            if lane < CW:
                for i in static_range(MR * VEC):
                    red[(subgroup_id() * CW + cw) * MR * VEC + i] = acc[i]
            barrier()
            for e in range(t, OUTS, THREADS):
                total = red[e]
                for s in static_range(1, SUBGROUPS):
                    total += red[s * OUTS + e]
                owner = e // (MR * VEC)
                m = e // VEC - owner * MR
                j = e - e // VEC * VEC
                row = m0 + m
                n = (workgroup_id(0) * CW + owner) * VEC + j
                if row < M and n < N:
                    put(d, part, total, c, bias, row, n, split, M, N, alpha, beta, PARTIAL, USE_C, BIAS, ACT, SCALE,
                        WORK, OUT)
        else:
            if kw == 0 and col0 < N:
                for m in static_range(MR):
                    if m0 + m < M:
                        for j in static_range(VEC):
                            put(d, part, acc[m * VEC + j], c, bias, m0 + m, col0 + j, split, M, N, alpha, beta,
                                PARTIAL, USE_C, BIAS, ACT, SCALE, WORK, OUT)

    return gemv_rows


def dot_threads(constexprs: dict) -> int:
    return constexprs["CN"] * constexprs["KW"] * constexprs.get("KG", 1)


def dot_shared(cn: int, kg: int, mr: int, cpi: int) -> int:
    """Elements of the dot kernel's shared reduction array (1 without groups of lanes along K)."""
    return kg * cn * mr * cpi if kg > 1 else 1


@functools.cache
def gemv_dot_kernel(IN, ACC, OUT):  # noqa: N803
    """The skinny GEMM for B stored N x K (see the module docstring)."""
    WORK = work_type(ACC)

    @kernel_source(local_size=dot_threads, name=f"gemv_dot_{IN}_{ACC}_{OUT}")
    def gemv_dot(a: Buffer[IN, readonly], b: Buffer[IN, readonly], c: Buffer[OUT, readonly],
                 bias: Buffer[OUT, readonly], d: Buffer[OUT], part: Buffer[WORK], a4: Buffer[V4, readonly],
                 b4: Buffer[V4, readonly], alpha: f32, beta: f32, M: s32, N: s32, K: s32, k_split: s32,
                 AT: constexpr, MR: constexpr, CN: constexpr, CPI: constexpr, KW: constexpr, UNROLL: constexpr,
                 WIDE: constexpr, SG: constexpr, PARTIAL: constexpr, USE_C: constexpr, BIAS: constexpr,
                 ACT: constexpr, SCALE: constexpr = True, KG: constexpr = 1, EVEN_K: constexpr = False,
                 EVEN_N: constexpr = False):
        VEC = WIDE if WIDE else 1
        STEP = KW * KG * VEC  # K elements all lanes of a column group cover in one step
        red = shared_array(WORK, dot_shared(CN, KG, MR, CPI))
        lane = lane_id()
        t = subgroup_id() * SG + lane
        kw = t % KW
        cn = t // KW % CN
        kg = t // (KW * CN)
        n0 = (workgroup_id(0) * CN + cn) * CPI  # this invocation's first column (row of B)
        m0 = workgroup_id(1) * MR
        split = workgroup_id(2)
        k_begin = split * k_split
        k_end = minimum(K, k_begin + k_split)
        acc = local_array(WORK, MR * CPI)
        for i in static_range(MR * CPI):
            acc[i] = WORK(0)
        chunks = local_array(V4, UNROLL * CPI if WIDE else 1)
        elems = local_array(WORK, 1 if WIDE else UNROLL * CPI)
        bv = local_array(WORK, VEC)
        av = local_array(WORK, MR * VEC)  # this chunk of every row of A, unpacked once
        part_a = local_array(WORK, VEC)
        for k0 in range(k_begin + (kg * KW + kw) * VEC, k_end, STEP * UNROLL):
            for u in static_range(UNROLL):
                k = k0 + u * STEP
                if not EVEN_K:
                    k = minimum(k, k_end - VEC)  # past the range: the last chunk, counted zero
                for i in static_range(CPI):
                    n = n0 + i
                    if not EVEN_N:
                        n = minimum(n, N - 1)
                    if WIDE:
                        chunks[u * CPI + i] = b4[(n * K + k) // VEC]
                    else:
                        elems[u * CPI + i] = cast(b[n * K + k], WORK)
            for u in static_range(UNROLL):
                k = k0 + u * STEP
                if not EVEN_K:
                    k = minimum(k, k_end - VEC)
                live = k0 + u * STEP < k_end
                for m in static_range(MR):
                    row = minimum(m0 + m, M - 1)
                    if WIDE and not AT:
                        unpack_chunk(part_a, a4[(row * K + k) // VEC], IN, WORK, VEC)
                    else:
                        for j in static_range(VEC):
                            part_a[j] = a_element(a, row, k + j, M, K, AT, WORK)
                    for j in static_range(VEC):
                        if EVEN_K:
                            av[m * VEC + j] = part_a[j]
                        else:
                            av[m * VEC + j] = select(live, part_a[j], WORK(0))
                for i in static_range(CPI):
                    if WIDE:
                        unpack_chunk(bv, chunks[u * CPI + i], IN, WORK, VEC)
                    else:
                        bv[0] = elems[u * CPI + i]
                    if not EVEN_K:  # the last chunk again, past the range: B zeroed too (no 0 * inf = NaN)
                        for j in static_range(VEC):
                            bv[j] = select(live, bv[j], WORK(0))
                    for m in static_range(MR):
                        for j in static_range(VEC):
                            acc[m * CPI + i] = madd(acc[m * CPI + i], av[m * VEC + j], bv[j], WORK)
        for s in static_range(log2_exact(KW)):  # the KW lanes of a column group: neighbours in one subgroup
            for i in static_range(MR * CPI):
                acc[i] += subgroup_shuffle_xor(acc[i], 1 << s)
        if KG > 1:  # the KG groups of lanes of each column group: in shared memory
            if kw == 0:
                for i in static_range(MR * CPI):
                    red[(kg * CN + cn) * MR * CPI + i] = acc[i]
            barrier()
            if kw == 0 and kg == 0:
                for i in static_range(MR * CPI):
                    for g in static_range(1, KG):
                        acc[i] += red[(g * CN + cn) * MR * CPI + i]
        if kw == 0 and kg == 0:
            for m in static_range(MR):
                for i in static_range(CPI):
                    if m0 + m < M and n0 + i < N:
                        put(d, part, acc[m * CPI + i], c, bias, m0 + m, n0 + i, split, M, N, alpha, beta, PARTIAL,
                            USE_C, BIAS, ACT, SCALE, WORK, OUT)

    return gemv_dot


REDUCE_THREADS = 256


@functools.cache
def gemv_reduce_kernel(ACC, OUT):  # noqa: N803
    """Sums the SPLIT K ranges' partial results (part: SPLIT x M x N in the working type) and applies the
    epilogue into D."""
    WORK = work_type(ACC)

    @kernel_source(local_size=REDUCE_THREADS, name=f"gemv_reduce_{ACC}_{OUT}")
    def gemv_reduce(part: Buffer[WORK, readonly], c: Buffer[OUT, readonly], bias: Buffer[OUT, readonly],
                    d: Buffer[OUT], alpha: f32, beta: f32, M: s32, N: s32, splits: s32, USE_C: constexpr,
                    BIAS: constexpr, ACT: constexpr, SCALE: constexpr = True):
        i = global_id()
        if i < M * N:
            total = part[i]
            for s in range(1, splits):
                total += part[s * M * N + i]
            row = i // N
            d[i] = epilogue(total, c, bias, row, i - row * N, N, alpha, beta, USE_C, BIAS, ACT, SCALE, WORK, OUT)

    return gemv_reduce
