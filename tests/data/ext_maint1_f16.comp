#version 450 core
// All four EXT maintenance1 operations on f16 8x8 matrices (lavapipe's shape): Reduce, PerElementOp,
// ConvertUse with Transpose, GetCoordinate. Runs as it is on the reference executor and lowered to
// NV2 on lavapipe and the H200 (tests/test_run_lowering.py).
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer InBuf { float16_t data[]; } inbuf;
layout(set = 0, binding = 1) buffer OutBuf { float16_t data[]; } outbuf;
layout(set = 0, binding = 2) buffer CoordBuf { uvec2 data[]; } coords;
float16_t combine_add(const in float16_t a, const in float16_t b) { return a + b; }
float16_t scale_and_place(const in uint r, const in uint c, const in float16_t e, const in float16_t s) {
  return e * s + float16_t(r * 8u + c);
}
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, inbuf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> rows;
  coopMatReduceEXT(rows, m, gl_CooperativeMatrixReduceRowEXT, combine_add);
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> t;
  coopMatTransposeEXT(t, m);
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> placed;
  coopMatPerElementEXT(placed, m, scale_and_place, float16_t(2.0));
  coopMatStore(rows, outbuf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(placed, outbuf.data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(t, outbuf.data, 128, 8, gl_CooperativeMatrixLayoutRowMajor);
  uint n = m.length();
  for (uint i = 0; i < n; ++i) {
    coords.data[gl_LocalInvocationID.x * n + i] = coopMatGetCoordinateEXT(m, i);
  }
}
