#version 450 core
// Planted bug: a cooperative-matrix load whose stride differs between invocations of the subgroup.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer BufC { float c[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, c, 0, 8 + (gl_LocalInvocationID.x & 1u), gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(m, d, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
