// GL_KHR_cooperative_matrix with signed int8 inputs and an int32 accumulator.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { int8_t a[]; };
layout(binding = 1) readonly buffer Bm { int8_t b[]; };
layout(binding = 2) buffer C { int32_t c[]; };
void main() {
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> ma;
    coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> mb;
    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc;
    coopMatLoad(ma, a, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, b, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    acc = coopMatMulAdd(ma, mb, acc);
    coopMatStore(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
