#version 450 core
// Tiled cooperative-matrix GEMM for benchmarks/ref_gemm.py: D (MxN, f32) = A (MxK, f16) * B (KxN, f16).
// Each subgroup owns a 2x2 block of 16x16 accumulator tiles (32x32 of D); a workgroup of
// SUBGROUPS subgroups owns a SUBGROUPS*32 x 32 strip. Row-major A, B and D.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = SG * SUBGROUPS) in;
layout(constant_id = 0) const uint M = 256;
layout(constant_id = 1) const uint N = 256;
layout(constant_id = 2) const uint K = 256;
layout(set = 0, binding = 0) readonly buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) readonly buffer BufB { float16_t b[]; };
layout(set = 0, binding = 2) writeonly buffer BufD { float d[]; };
const uint T = 16;

#define ACC coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>
#define LOAD_A(m, i) coopMatLoad(m, a, (row0 + (i) * T) * K + k, K, gl_CooperativeMatrixLayoutRowMajor)
#define LOAD_B(m, j) coopMatLoad(m, b, k * N + col0 + (j) * T, N, gl_CooperativeMatrixLayoutRowMajor)
#define STORE(m, i, j) coopMatStore(m, d, (row0 + (i) * T) * N + col0 + (j) * T, N, gl_CooperativeMatrixLayoutRowMajor)

void main() {
  // Tiles are separate variables, not arrays: a kernel like this keeps them in registers.
  uint row0 = (gl_WorkGroupID.y * SUBGROUPS + gl_SubgroupID) * 2 * T;
  uint col0 = gl_WorkGroupID.x * 2 * T;
  ACC acc00 = ACC(0.0), acc01 = ACC(0.0), acc10 = ACC(0.0), acc11 = ACC(0.0);
  for (uint k = 0; k < K; k += T) {
    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA> a0, a1;
    coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB> b0, b1;
    LOAD_A(a0, 0); LOAD_A(a1, 1);
    LOAD_B(b0, 0); LOAD_B(b1, 1);
    acc00 = coopMatMulAdd(a0, b0, acc00);
    acc01 = coopMatMulAdd(a0, b1, acc01);
    acc10 = coopMatMulAdd(a1, b0, acc10);
    acc11 = coopMatMulAdd(a1, b1, acc11);
  }
  STORE(acc00, 0, 0); STORE(acc01, 0, 1); STORE(acc10, 1, 0); STORE(acc11, 1, 1);
}
