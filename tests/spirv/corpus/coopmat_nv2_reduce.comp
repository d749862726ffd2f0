// GL_NV_cooperative_matrix2: row, column, row-and-column and 2x2 reductions with combine functions.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer F { float f[]; };
float add_pair(const in float x, const in float y) { return x + y; }
float max_pair(const in float x, const in float y) { return max(x, y); }
void main() {
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> src;
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> rows, cols, all;
    coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> quads;
    coopMatLoad(src, f, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatReduceNV(rows, src, gl_CooperativeMatrixReduceRowNV, max_pair);
    coopMatReduceNV(cols, src, gl_CooperativeMatrixReduceColumnNV, add_pair);
    coopMatReduceNV(all, src, gl_CooperativeMatrixReduceRowAndColumnNV, add_pair);
    coopMatReduceNV(quads, src, gl_CooperativeMatrixReduce2x2NV, max_pair);
    coopMatStore(rows + cols + all, f, 256u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatStore(quads, f, 512u, 8u, gl_CooperativeMatrixLayoutRowMajor);
}
