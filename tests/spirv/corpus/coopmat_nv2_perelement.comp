// GL_NV_cooperative_matrix2: per-element operations with extra scalar and matrix operands.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
float16_t leaky(const in uint32_t row, const in uint32_t col, const in float16_t x) {
    return x > float16_t(0.0) ? x : x * float16_t(0.01);
}
float16_t causal(const in uint32_t row, const in uint32_t col, const in float16_t x, const in float16_t fill, const in float16_t other) {
    return col > row ? fill : x + other;
}
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> m, o, r;
    coopMatLoad(m, h, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(o, h, 256u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatPerElementNV(r, m, leaky);
    coopMatPerElementNV(r, r, causal, float16_t(-65504.0), o);
    coopMatStore(r, h, 512u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
