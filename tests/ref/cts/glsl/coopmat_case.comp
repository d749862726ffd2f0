#version 450 core
// One case of the CTS-style cooperative-matrix matrix, chosen by defines (tests/ref/cts/cases.py):
//   A_T, C_T      GLSL component types of A/B and of C/result (float16_t, float, int8_t, uint32_t ...)
//   M, N, K       tile shape (HALF_M, HALF_N: halves, for 2x2 reductions); each subgroup handles one tile: tile = WorkGroupID.x * SUBGROUPS + SubgroupID
//   SG            subgroup size (local_size_x = SG * SUBGROUPS)
//   LAYOUT        gl_CooperativeMatrixLayoutRowMajor / ColumnMajor, for every load and store
//   PAD           extra elements in every row (column) stride; STRIDE_A0 loads A with stride 0
//   SHARED        1: inputs go buffer -> Workgroup memory -> cooperative-matrix load
//   OP_<name>     the operation under test; EXT_OPS selects the EXT maintenance1 spellings
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#if defined(NEED_BF16)
#extension GL_EXT_bfloat16 : require
#endif
#if defined(NEED_FP8)
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#endif
#if defined(NEED_NV2)
#extension GL_NV_cooperative_matrix2 : require
#endif
#if defined(EXT_OPS)
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#endif

#define SUBGROUPS 2
layout(local_size_x = SG * SUBGROUPS) in;

layout(set = 0, binding = 0) buffer BufA { A_T a[]; };
layout(set = 0, binding = 1) buffer BufB { A_T b[]; };
layout(set = 0, binding = 2) buffer BufC { C_T c[]; };
layout(set = 0, binding = 3) buffer BufD { C_T d[]; };
layout(set = 0, binding = 4) buffer BufO { C_T o[]; };
layout(set = 0, binding = 5) buffer BufU { uint u[]; };
layout(set = 0, binding = 6) buffer BufOA { A_T oa[]; };
layout(push_constant) uniform Push { C_T scalar; } pc;

#define IS_ROW (LAYOUT == gl_CooperativeMatrixLayoutRowMajor)
// Stride (in elements) of an R x C tile stored with LAYOUT, and the tile's element count.
#define STRIDE(R, C) ((IS_ROW ? (C) : (R)) + PAD)
#define TILE(R, C) ((IS_ROW ? (R) : (C)) * STRIDE(R, C))

#define MatA coopmat<A_T, gl_ScopeSubgroup, M, K, gl_MatrixUseA>
#define MatB coopmat<A_T, gl_ScopeSubgroup, K, N, gl_MatrixUseB>
#define MatC coopmat<C_T, gl_ScopeSubgroup, M, N, gl_MatrixUseAccumulator>

#if SHARED
shared A_T sh_a[SUBGROUPS * TILE(M, K)];
shared A_T sh_b[SUBGROUPS * TILE(K, N)];
shared C_T sh_c[SUBGROUPS * TILE(M, N)];
shared C_T sh_d[SUBGROUPS * TILE(M, N)];
#endif

C_T combine_sum(const in C_T x, const in C_T y) { return x + y; }
C_T combine_min(const in C_T x, const in C_T y) { return min(x, y); }
C_T place(const in uint r, const in uint col, const in C_T e, const in C_T other, const in C_T s) {
  return e * s + other + C_T(r * 3u + col);
}
MatC twice_plus(MatC x, MatC y) { return x + x + y; }

void main() {
  uint sg = gl_SubgroupID;
  uint tile = gl_WorkGroupID.x * SUBGROUPS + sg;
  uint offA = tile * TILE(M, K), offB = tile * TILE(K, N), offC = tile * TILE(M, N);
  MatA ma; MatB mb; MatC mc; MatC md;
#if SHARED
  for (uint i = gl_SubgroupInvocationID; i < TILE(M, K); i += SG) sh_a[sg * TILE(M, K) + i] = a[offA + i];
  for (uint i = gl_SubgroupInvocationID; i < TILE(K, N); i += SG) sh_b[sg * TILE(K, N) + i] = b[offB + i];
  for (uint i = gl_SubgroupInvocationID; i < TILE(M, N); i += SG) {
    sh_c[sg * TILE(M, N) + i] = c[offC + i];
    sh_d[sg * TILE(M, N) + i] = d[offC + i];
  }
  barrier();
  coopMatLoad(ma, sh_a, sg * TILE(M, K), STRIDE_A, LAYOUT);
  coopMatLoad(mb, sh_b, sg * TILE(K, N), STRIDE(K, N), LAYOUT);
  coopMatLoad(mc, sh_c, sg * TILE(M, N), STRIDE(M, N), LAYOUT);
  coopMatLoad(md, sh_d, sg * TILE(M, N), STRIDE(M, N), LAYOUT);
#else
  coopMatLoad(ma, a, offA, STRIDE_A, LAYOUT);
  coopMatLoad(mb, b, offB, STRIDE(K, N), LAYOUT);
  coopMatLoad(mc, c, offC, STRIDE(M, N), LAYOUT);
  coopMatLoad(md, d, offC, STRIDE(M, N), LAYOUT);
#endif

#if defined(OP_LENGTH)
  u[tile * SG + gl_SubgroupInvocationID] = mc.length();
  MatC res = mc;
#elif defined(OP_CONSTANT)
  MatC res = MatC(C_T(CONSTANT_VALUE));
#elif defined(OP_CONSTRUCT)
  MatC res = MatC(pc.scalar + C_T(1));  // a runtime scalar: OpCompositeConstruct
#elif defined(OP_COMPOSITE_EXTRACT)
  // Each invocation writes the elements it holds, in index order: o[tile][lane * L + i].
  uint L = mc.length();
  uint lane = gl_SubgroupInvocationID;
#define EXTRACT(i) if (i < L) o[offC + lane * L + i] = (mc + md)[i];
  EXTRACT(0) EXTRACT(1) EXTRACT(2) EXTRACT(3) EXTRACT(4) EXTRACT(5) EXTRACT(6) EXTRACT(7)
#elif defined(OP_COMPOSITE)
  // Vulkan-CTS "composite": element access through the variable (OpAccessChain into the matrix).
  MatC res;
  for (uint i = 0; i < mc.length(); ++i) res[i] = mc[i] + md[i];
#elif defined(OP_ADD)
  MatC res = mc + md;
#elif defined(OP_SUB)
  MatC res = mc - md;
#elif defined(OP_MUL)
  MatC res = mc * md;
#elif defined(OP_DIV)
  MatC res = mc / md;
#elif defined(OP_NEGATE)
  MatC res = -mc;
#elif defined(OP_MATRIX_TIMES_SCALAR)
  MatC res = mc * pc.scalar;
#elif defined(OP_FUNC)
  MatC res = twice_plus(mc, md);
#elif defined(OP_MULADD)
  MatC res = coopMatMulAdd(ma, mb, mc);
#elif defined(OP_MULADD_SATURATING)
  MatC res = coopMatMulAdd(ma, mb, mc, gl_MatrixOperandsSaturatingAccumulation);
#elif defined(OP_CONVERT_ACC_TO_A)
  coopmat<A_T, gl_ScopeSubgroup, M, N, gl_MatrixUseA> conv = coopmat<A_T, gl_ScopeSubgroup, M, N, gl_MatrixUseA>(mc);
  coopMatStore(conv, oa, offC, STRIDE(M, N), LAYOUT);
  MatC res = mc;
#elif defined(OP_CONVERT_ACC_TO_B)
  coopmat<A_T, gl_ScopeSubgroup, M, N, gl_MatrixUseB> conv = coopmat<A_T, gl_ScopeSubgroup, M, N, gl_MatrixUseB>(mc);
  coopMatStore(conv, oa, offC, STRIDE(M, N), LAYOUT);
  MatC res = mc;
#elif defined(OP_TRANSPOSE)
  coopmat<C_T, gl_ScopeSubgroup, N, M, gl_MatrixUseB> tr;
#if defined(EXT_OPS)
  coopMatTransposeEXT(tr, mc);
#else
  coopMatTransposeNV(tr, mc);
#endif
  coopMatStore(tr, o, tile * TILE(N, M), STRIDE(N, M), LAYOUT);
#elif defined(OP_REDUCE)
#if REDUCE_MODE == 4
  coopmat<C_T, gl_ScopeSubgroup, HALF_M, HALF_N, gl_MatrixUseAccumulator> red;
#else
  MatC red;
#endif
#if defined(EXT_OPS)
  coopMatReduceEXT(red, mc, REDUCE_MODE, COMBINE);
#else
  coopMatReduceNV(red, mc, REDUCE_MODE, COMBINE);
#endif
#if REDUCE_MODE == 4
  coopMatStore(red, o, tile * TILE(HALF_M, HALF_N), STRIDE(HALF_M, HALF_N), LAYOUT);
#else
  coopMatStore(red, o, offC, STRIDE(M, N), LAYOUT);
#endif
#elif defined(OP_PER_ELEMENT)
  MatC res;
#if defined(EXT_OPS)
  coopMatPerElementEXT(res, mc, place, md, pc.scalar);
#else
  coopMatPerElementNV(res, mc, place, md, pc.scalar);
#endif
#elif defined(OP_GET_COORDINATE)
  // out[coordinate of element i] = element i: the matrix itself, whatever the distribution.
  for (uint i = 0; i < mc.length(); ++i) {
    uvec2 rc = coopMatGetCoordinateEXT(mc, i);
    u[offC + rc.x * N + rc.y] = uint(tile * 1000u + rc.x * N + rc.y + 1u);
  }
  MatC res = mc;
#endif

#if !defined(OP_TRANSPOSE) && !defined(OP_REDUCE) && !defined(OP_COMPOSITE_EXTRACT)
  coopMatStore(res, o, offC, STRIDE(M, N), LAYOUT);
#endif
}
