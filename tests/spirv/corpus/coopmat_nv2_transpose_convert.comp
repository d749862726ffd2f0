// GL_NV_cooperative_matrix2: transpose and use conversion (accumulator -> A/B) at subgroup scope.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
layout(binding = 1) buffer F { float f[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseAccumulator> acc;
    coopMatLoad(acc, h, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float16_t, gl_ScopeSubgroup, 8, 16, gl_MatrixUseB> t;
    coopMatTransposeNV(t, acc);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseA> a = coopmat<float16_t, gl_ScopeSubgroup, 16, 8, gl_MatrixUseA>(acc);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> out_acc = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    out_acc = coopMatMulAdd(a, t, out_acc);
    coopMatStore(out_acc, f, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
