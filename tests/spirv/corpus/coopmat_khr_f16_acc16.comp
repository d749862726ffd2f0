// GL_KHR_cooperative_matrix: f16 accumulator, element access, length, conversion to f32.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer A { float16_t h[]; };
layout(binding = 1) buffer F { float f[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> mb;
    coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> acc;
    coopMatLoad(ma, h, 0u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, h, 64u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(acc, h, 128u, 8u, gl_CooperativeMatrixLayoutRowMajor);
    acc = coopMatMulAdd(ma, mb, acc);
    for (int i = 0; i < acc.length(); ++i) acc[i] = max(acc[i], float16_t(0.0)) * float16_t(0.5);
    coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> wide = coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator>(acc);
    coopMatStore(wide, f, 0u, 8u, gl_CooperativeMatrixLayoutColumnMajor);
}
