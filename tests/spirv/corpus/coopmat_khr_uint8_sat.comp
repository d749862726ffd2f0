// GL_KHR_cooperative_matrix: unsigned and mixed-sign int8 with saturating accumulation.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { uint8_t a[]; int8_t sa[]; };
layout(binding = 1) readonly buffer Bm { uint8_t b[]; };
layout(binding = 2) buffer C { uint32_t c[]; };
layout(binding = 3) buffer D { int32_t d[]; };
void main() {
    coopmat<uint8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> ma;
    coopmat<uint8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> mb;
    coopmat<uint32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc;
    coopMatLoad(ma, a, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, b, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    acc = coopMatMulAdd(ma, mb, acc, gl_MatrixOperandsSaturatingAccumulation);
    coopMatStore(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> sma;
    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> sacc;
    coopMatLoad(sma, sa, 0u, 32u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(sacc, d, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    sacc = coopMatMulAdd(sma, mb, sacc, gl_MatrixOperandsSaturatingAccumulation);
    coopMatStore(sacc, d, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
