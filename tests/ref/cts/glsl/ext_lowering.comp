#version 450 core
// EXT maintenance1 operations that have NV2 twins (or an emulation), for lower_nv2 tests.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer InBuf { float data[]; } inbuf;
layout(set = 0, binding = 1) buffer OutBuf { float data[]; } outbuf;
layout(set = 0, binding = 2) buffer CoordBuf { uvec2 data[]; } coords;
float combine_add(const in float a, const in float b) { return a + b; }
float scale_and_place(const in uint r, const in uint c, const in float e, const in float s) {
  return e * s + float(r * 100u + c);
}
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, inbuf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> rows;
  coopMatReduceEXT(rows, m, gl_CooperativeMatrixReduceRowEXT, combine_add);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> t;
  coopMatTransposeEXT(t, m);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> a = coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA>(m);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> placed;
  coopMatPerElementEXT(placed, m, scale_and_place, 2.0);
  coopMatStore(rows, outbuf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(placed, outbuf.data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(t, outbuf.data, 128, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(a, outbuf.data, 192, 8, gl_CooperativeMatrixLayoutRowMajor);
  uint n = m.length();
  for (uint i = 0; i < n; ++i) {
    coords.data[gl_LocalInvocationID.x * n + i] = coopMatGetCoordinateEXT(m, i);
  }
}
