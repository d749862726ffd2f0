#version 450 core
// Shared-memory staged cooperative-matrix GEMM for benchmarks/ref_gemm.py --kernel shared:
// D (MxN, f32) = A (MxK, f16) * B (KxN, f16), row-major. A workgroup of SUBGROUPS subgroups owns a
// (SUBGROUPS*32) x 64 block of D; each K step of 32 copies the A and B slices global -> shared with
// 16-byte loads (uvec4), waits at a barrier, and each subgroup runs 2x4 MulAdds of 16x16x16 tiles
// loaded from shared memory. This is the shape of the kernel-language GEMMs (staging, barriers).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = SG * SUBGROUPS) in;
layout(constant_id = 0) const uint M = 256;
layout(constant_id = 1) const uint N = 256;
layout(constant_id = 2) const uint K = 256;
layout(set = 0, binding = 0) readonly buffer BufA { uvec4 a[]; };
layout(set = 0, binding = 1) readonly buffer BufB { uvec4 b[]; };
layout(set = 0, binding = 2) writeonly buffer BufD { float d[]; };
const uint T = 16, BM = SUBGROUPS * 32, BN = 64, BK = 32;
const uint THREADS = SG * SUBGROUPS;
shared uvec4 sa[BM * BK / 8];  // BM x BK f16, row-major, BK / 8 uvec4 per row
shared uvec4 sb[BK * BN / 8];  // BK x BN f16, row-major, BN / 8 uvec4 per row

#define ACC coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>
#define LOAD_A(m, i) coopMatLoad(m, sa, ((srow + (i) * T) * BK + kk) / 8, BK / 8, gl_CooperativeMatrixLayoutRowMajor)
#define LOAD_B(m, j) coopMatLoad(m, sb, (kk * BN + (j) * T) / 8, BN / 8, gl_CooperativeMatrixLayoutRowMajor)
#define STORE(m, i, j) coopMatStore(m, d, (brow + srow + (i) * T) * N + bcol + (j) * T, N, \
                                    gl_CooperativeMatrixLayoutRowMajor)

void main() {
  uint tid = gl_LocalInvocationIndex;
  uint brow = gl_WorkGroupID.y * BM, bcol = gl_WorkGroupID.x * BN;
  uint srow = gl_SubgroupID * 32;
  ACC c00 = ACC(0.0), c01 = ACC(0.0), c02 = ACC(0.0), c03 = ACC(0.0);
  ACC c10 = ACC(0.0), c11 = ACC(0.0), c12 = ACC(0.0), c13 = ACC(0.0);
  for (uint k = 0; k < K; k += BK) {
    for (uint v = tid; v < BM * BK / 8; v += THREADS) {
      uint r = v / (BK / 8), c = v % (BK / 8);
      sa[v] = a[((brow + r) * K + k) / 8 + c];
    }
    for (uint v = tid; v < BK * BN / 8; v += THREADS) {
      uint r = v / (BN / 8), c = v % (BN / 8);
      sb[v] = b[((k + r) * N + bcol) / 8 + c];
    }
    barrier();
    for (uint kk = 0; kk < BK; kk += T) {
      coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> a0, a1;
      coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> b0, b1, b2, b3;
      LOAD_A(a0, 0); LOAD_A(a1, 1);
      LOAD_B(b0, 0); LOAD_B(b1, 1); LOAD_B(b2, 2); LOAD_B(b3, 3);
      c00 = coopMatMulAdd(a0, b0, c00); c01 = coopMatMulAdd(a0, b1, c01);
      c02 = coopMatMulAdd(a0, b2, c02); c03 = coopMatMulAdd(a0, b3, c03);
      c10 = coopMatMulAdd(a1, b0, c10); c11 = coopMatMulAdd(a1, b1, c11);
      c12 = coopMatMulAdd(a1, b2, c12); c13 = coopMatMulAdd(a1, b3, c13);
    }
    barrier();
  }
  STORE(c00, 0, 0); STORE(c01, 0, 1); STORE(c02, 0, 2); STORE(c03, 0, 3);
  STORE(c10, 1, 0); STORE(c11, 1, 1); STORE(c12, 1, 2); STORE(c13, 1, 3);
}
