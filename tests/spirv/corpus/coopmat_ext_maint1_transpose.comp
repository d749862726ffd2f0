// GL_EXT_cooperative_matrix_maintenance1: use conversions and transposes, with int8 and f16 targets.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_cooperative_matrix_maintenance1 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
layout(binding = 1) buffer I { int32_t s[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopMatLoad(a, h, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(a);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> bt;
    coopMatTransposeEXT(bt, acc);
    coopmat<int32_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseAccumulator> iacc;
    coopMatLoad(iacc, s, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> ib;
    coopMatTransposeEXT(ib, iacc);
    coopmat<int32_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> ia = coopmat<int32_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>(iacc);
    acc = coopMatMulAdd(a, bt, acc);
    coopMatStore(acc, h, 256u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> r = coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0);
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> ia8 = coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>(ia);
    r = coopMatMulAdd(ia8, ib, r);
    coopMatStore(r, s, 1024u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
