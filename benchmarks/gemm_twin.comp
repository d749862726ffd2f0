// A GLSL twin of hydroplane's staged cooperative-matrix GEMM (gemm_kernels.coop_kernel with WIDE, PAD=1 and
// PREFETCH, whole blocks only): the same blocking, 16-byte copies through registers into padded shared rows,
// one barrier per K step. glslang compiles it; benchmarks/gemm_twin.py runs it beside the language's kernel to
// tell a slow code generator from a slow design. Row-major A (M x K), B (K x N), D = A @ B; M, N, K multiples of
// the block. Defines: TM TN TK (tile), WM WN (subgroups), SM SN (tiles per subgroup), KT (tiles per K step),
// IN_T (float16_t), ACC_T (float or float16_t), SUBGROUP (default 32). Variants, to find what the driver
// rewards: SINGLE (one shared buffer, two barriers per step: NVIDIA's vk_cooperative_matrix_perf structure),
// CONST_SIZE=n (M = N = K = n compiled in instead of push constants), A_FIRST (a subgroup loads its A tiles, then
// one B tile at a time, instead of its B tiles, then one A tile at a time).
#version 450
#pragma use_vulkan_memory_model
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_control_flow_attributes : enable

#ifndef SUBGROUP
#define SUBGROUP 32  // the device's subgroup size (lavapipe: 8)
#endif
const uint THREADS = WM * WN * SUBGROUP;
layout(local_size_x = THREADS) in;
layout(set = 0, binding = 0) readonly buffer AV { uvec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer BV { uvec4 b4[]; };
layout(set = 0, binding = 2) writeonly buffer DV { ACC_T d[]; };
layout(push_constant) uniform Sizes { uint M; uint N; uint K; } size;
#ifdef CONST_SIZE
#define SIZE_N CONST_SIZE
#define SIZE_K CONST_SIZE
#else
#define SIZE_N size.N
#define SIZE_K size.K
#endif
#ifdef SINGLE
#define STAGES 1
#else
#define STAGES 2
#endif

const uint BM = WM * SM * TM;
const uint BN = WN * SN * TN;
const uint BK = KT * TK;
const uint PER = 8;               // f16 elements in 16 bytes
const uint A_LD = BK + PER;       // shared row lengths (elements), one 16-byte chunk of padding
const uint B_LD = BN + PER;
const uint A_SIZE = BM * A_LD;
const uint B_SIZE = BK * B_LD;
const uint A_CHUNKS = BM * BK / PER / THREADS;  // 16-byte chunks per invocation and K step
const uint B_CHUNKS = BK * BN / PER / THREADS;

shared uvec4 sa[STAGES * A_SIZE / PER];
shared uvec4 sb[STAGES * B_SIZE / PER];

uvec4 ra[A_CHUNKS];
uvec4 rb[B_CHUNKS];

void fetch(uint row0, uint col0, uint k0)
{
    [[unroll]] for (uint t = 0; t < A_CHUNKS; ++t) {
        uint i = gl_LocalInvocationID.x + t * THREADS;
        uint r = i / (BK / PER);
        uint c = (i % (BK / PER)) * PER;
        ra[t] = a4[((row0 + r) * SIZE_K + k0 + c) / PER];
    }
    [[unroll]] for (uint t = 0; t < B_CHUNKS; ++t) {
        uint i = gl_LocalInvocationID.x + t * THREADS;
        uint r = i / (BN / PER);
        uint c = (i % (BN / PER)) * PER;
        rb[t] = b4[((k0 + r) * SIZE_N + col0 + c) / PER];
    }
}

void put(uint half_)
{
    [[unroll]] for (uint t = 0; t < A_CHUNKS; ++t) {
        uint i = gl_LocalInvocationID.x + t * THREADS;
        uint r = i / (BK / PER);
        uint c = (i % (BK / PER)) * PER;
        sa[(half_ * A_SIZE + r * A_LD + c) / PER] = ra[t];
    }
    [[unroll]] for (uint t = 0; t < B_CHUNKS; ++t) {
        uint i = gl_LocalInvocationID.x + t * THREADS;
        uint r = i / (BN / PER);
        uint c = (i % (BN / PER)) * PER;
        sb[(half_ * B_SIZE + r * B_LD + c) / PER] = rb[t];
    }
}

void main()
{
    uint wm = gl_SubgroupID / WN;
    uint wn = gl_SubgroupID % WN;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    coopmat<ACC_T, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator> acc[SM * SN];
    [[unroll]] for (uint t = 0; t < SM * SN; ++t) {
        acc[t] = coopmat<ACC_T, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>(0.0);
    }
    fetch(row0, col0, 0);
#ifndef SINGLE
    put(0);
    barrier();
#endif
    uint steps = SIZE_K / BK;
    for (uint s = 0; s < steps; ++s) {
#ifdef SINGLE
        uint cur = 0;
        barrier();
        put(0);
        barrier();
        if (s + 1 < steps) {
            fetch(row0, col0, (s + 1) * BK);
        }
#else
        uint cur = s & 1;
        if (s + 1 < steps) {
            fetch(row0, col0, (s + 1) * BK);
        }
#endif
        [[unroll]] for (uint kt = 0; kt < KT; ++kt) {
#ifdef A_FIRST
            coopmat<IN_T, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ta[SM];
            [[unroll]] for (uint i = 0; i < SM; ++i) {
                uint off = cur * A_SIZE + (wm * SM + i) * TM * A_LD + kt * TK;
                coopMatLoad(ta[i], sa, off / PER, A_LD / PER, gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint j = 0; j < SN; ++j) {
                coopmat<IN_T, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> tb;
                uint off = cur * B_SIZE + kt * TK * B_LD + (wn * SN + j) * TN;
                coopMatLoad(tb, sb, off / PER, B_LD / PER, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (uint i = 0; i < SM; ++i) {
                    acc[i * SN + j] = coopMatMulAdd(ta[i], tb, acc[i * SN + j]);
                }
            }
#else
            coopmat<IN_T, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB> tb[SN];
            [[unroll]] for (uint j = 0; j < SN; ++j) {
                uint off = cur * B_SIZE + kt * TK * B_LD + (wn * SN + j) * TN;
                coopMatLoad(tb[j], sb, off / PER, B_LD / PER, gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint i = 0; i < SM; ++i) {
                coopmat<IN_T, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA> ta;
                uint off = cur * A_SIZE + (wm * SM + i) * TM * A_LD + kt * TK;
                coopMatLoad(ta, sa, off / PER, A_LD / PER, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (uint j = 0; j < SN; ++j) {
                    acc[i * SN + j] = coopMatMulAdd(ta, tb[j], acc[i * SN + j]);
                }
            }
#endif
        }
#ifndef SINGLE
        if (s + 1 < steps) {
            put(1 - cur);
        }
        barrier();
#endif
    }
    [[unroll]] for (uint i = 0; i < SM; ++i) {
        [[unroll]] for (uint j = 0; j < SN; ++j) {
            uint r = row0 + (wm * SM + i) * TM;
            uint c = col0 + (wn * SN + j) * TN;
            coopMatStore(acc[i * SN + j], d, r * SIZE_N + c, SIZE_N, gl_CooperativeMatrixLayoutRowMajor);
        }
    }
}
