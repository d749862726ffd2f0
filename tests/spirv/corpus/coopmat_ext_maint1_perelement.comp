// GL_EXT_cooperative_matrix_maintenance1: per-element operations and GetCoordinate.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_cooperative_matrix_maintenance1 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
layout(binding = 1) buffer U { uvec2 coords[]; };
float16_t mask_upper(const in uint32_t row, const in uint32_t col, const in float16_t x) {
    return col > row ? float16_t(0.0) : x;
}
float16_t scale_by(const in uint32_t row, const in uint32_t col, const in float16_t x, const in float16_t s) {
    return x * s;
}
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> m;
    coopMatLoad(m, h, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatPerElementEXT(m, m, mask_upper);
    coopMatPerElementEXT(m, m, scale_by, float16_t(0.125));
    for (uint i = 0u; i < uint(m.length()); ++i) {
        coords[gl_LocalInvocationIndex * 8u + i] = coopMatGetCoordinateEXT(m, i);
    }
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopMatLoad(a, h, 256u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    uvec2 c0 = coopMatGetCoordinateEXT(a, 0u);
    coords[1024u + gl_LocalInvocationIndex] = c0;
    coopMatStore(m, h, 512u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
