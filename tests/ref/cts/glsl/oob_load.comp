#version 450 core
// Planted bug: a cooperative-matrix load whose rows run past the end of the buffer.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer BufC { float c[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> mc;
  coopMatLoad(mc, c, 0, 9, gl_CooperativeMatrixLayoutRowMajor);  // needs 7*9+8 = 71 floats
  coopMatStore(mc, d, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
