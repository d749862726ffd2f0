#version 450 core
// ConvertUse from MatrixA to MatrixAccumulator: EXT allows it, NV2 has no twin.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer Buf { float data[]; } buf;
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> a;
  coopMatLoad(a, buf.data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> c =
      coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator>(a);
  coopMatStore(c, buf.data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
