#version 450 core
// Composites *of* cooperative matrices (a struct built and taken apart as values): the matrix
// handlers leave these to the interpreter's own composite handlers.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer BufC { float c[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
struct Pair { coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> x, y; };
Pair make(coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m) { return Pair(m, m + m); }
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> x;
  coopMatLoad(x, c, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(make(x).y - make(x).x * 0.5, d, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
