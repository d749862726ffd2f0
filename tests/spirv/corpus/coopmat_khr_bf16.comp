// GL_KHR_cooperative_matrix with bfloat16 inputs (GL_EXT_bfloat16) and f32 accumulation.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_bfloat16 : enable
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { bfloat16_t a[]; };
layout(binding = 1) readonly buffer Bm { bfloat16_t b[]; };
layout(binding = 2) buffer C { float c[]; };
void main() {
    coopmat<bfloat16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma;
    coopmat<bfloat16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb;
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    coopMatLoad(ma, a, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, b, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    acc = coopMatMulAdd(ma, mb, acc);
    coopMatStore(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
