// GL_EXT_cooperative_matrix_maintenance1: reductions (row, column, both, 2x2) at workgroup scope.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_cooperative_matrix_maintenance1 : enable
layout(local_size_x = 64) in;
layout(binding = 0) buffer F { float f[]; };
float sum2(const in float a, const in float b) { return a + b; }
float min2(const in float a, const in float b) { return min(a, b); }
void main() {
    coopmat<float, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseAccumulator> m, r;
    coopmat<float, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseAccumulator> q;
    coopMatLoad(m, f, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sum2);
    coopMatReduceEXT(r, r, gl_CooperativeMatrixReduceColumnEXT, min2);
    coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowAndColumnEXT, sum2);
    coopMatReduceEXT(q, m, gl_CooperativeMatrixReduce2x2EXT, min2);
    coopMatStore(r, f, 1024u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatStore(q, f, 2048u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
