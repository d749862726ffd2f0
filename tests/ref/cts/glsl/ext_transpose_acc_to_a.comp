#version 450 core
// Transposing ConvertUse from Accumulator to MatrixA: NV2's TransposeNV only gives MatrixB.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Buf { float data[]; } buf;
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> c;
  coopMatLoad(c, buf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> a;
  coopMatTransposeEXT(a, c);
  coopMatStore(a, buf.data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
