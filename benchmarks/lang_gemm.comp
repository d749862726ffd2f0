#version 450 core
// examples/language/gemm.py in GLSL, for benchmarks/lang_compile.py (glslang against the language):
// D = relu(alpha * A @ B + beta * C + bias), A/B f16, C/D f32, shared-memory staging, WM x WN subgroups
// per workgroup, 2 x 2 tiles of TILE x TILE per subgroup, a per-element ReLU (EXT maintenance1).
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = WM * WN * SG) in;
const uint T = TILE;
const uint BM = WM * 2 * T;
const uint BN = WN * 2 * T;
const uint BK = T;
const uint THREADS = WM * WN * SG;
layout(set = 0, binding = 0) readonly buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) readonly buffer BufB { float16_t b[]; };
layout(set = 0, binding = 2) readonly buffer BufC { float c[]; };
layout(set = 0, binding = 3) readonly buffer BufBias { float bias[]; };
layout(set = 0, binding = 4) buffer BufD { float d[]; };
layout(push_constant) uniform Push { float alpha; float beta; };
shared float16_t sa[BM * BK];
shared float16_t sb[BK * BN];

#define ACC coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>
#define TA coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA>
#define TB coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB>

void stage_a(uint row0, uint col0) {
  for (uint i = gl_LocalInvocationIndex; i < BM * BK; i += THREADS) {
    uint r = i / BK;
    uint c_ = i - r * BK;
    sa[i] = a[(row0 + r) * K_TOTAL + col0 + c_];
  }
}

void stage_b(uint row0, uint col0) {
  for (uint i = gl_LocalInvocationIndex; i < BK * BN; i += THREADS) {
    uint r = i / BN;
    uint c_ = i - r * BN;
    sb[i] = b[(row0 + r) * N_TOTAL + col0 + c_];
  }
}

float relu(const in uint row, const in uint col, const in float x) {
  return RELU != 0 ? max(x, 0.0) : x;
}

void epilogue(ACC acc, uint row0, uint col0) {
  ACC tc, bias_rows, out_;
  coopMatLoad(tc, c, row0 * N_TOTAL + col0, N_TOTAL, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(bias_rows, bias, col0, 0, gl_CooperativeMatrixLayoutRowMajor);
  out_ = acc * alpha + tc * beta + bias_rows;
  coopMatPerElementEXT(out_, out_, relu);
  coopMatStore(out_, d, row0 * N_TOTAL + col0, N_TOTAL, gl_CooperativeMatrixLayoutRowMajor);
}

void main() {
  uint wm = gl_SubgroupID / WN;
  uint wn = gl_SubgroupID % WN;
  uint row_block = gl_WorkGroupID.y * BM;
  uint col_block = gl_WorkGroupID.x * BN;
  ACC acc0 = ACC(0.0), acc1 = ACC(0.0), acc2 = ACC(0.0), acc3 = ACC(0.0);
  for (uint k = 0; k < K_TOTAL; k += BK) {
    stage_a(row_block, k);
    stage_b(k, col_block);
    barrier();
    TA a0, a1;
    TB b0, b1;
    coopMatLoad(a0, sa, (wm * 2) * T * BK, BK, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(a1, sa, (wm * 2 + 1) * T * BK, BK, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b0, sb, (wn * 2) * T, BN, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b1, sb, (wn * 2 + 1) * T, BN, gl_CooperativeMatrixLayoutRowMajor);
    acc0 = coopMatMulAdd(a0, b0, acc0);
    acc1 = coopMatMulAdd(a0, b1, acc1);
    acc2 = coopMatMulAdd(a1, b0, acc2);
    acc3 = coopMatMulAdd(a1, b1, acc3);
    barrier();
  }
  epilogue(acc0, row_block + (wm * 2) * T, col_block + (wn * 2) * T);
  epilogue(acc1, row_block + (wm * 2) * T, col_block + (wn * 2 + 1) * T);
  epilogue(acc2, row_block + (wm * 2 + 1) * T, col_block + (wn * 2) * T);
  epilogue(acc3, row_block + (wm * 2 + 1) * T, col_block + (wn * 2 + 1) * T);
}
