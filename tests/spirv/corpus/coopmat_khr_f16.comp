// GL_KHR_cooperative_matrix, f16 inputs with an f32 accumulator: load, mul-add, store.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 32) in;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) readonly buffer Bm { float16_t b[]; };
layout(binding = 2) buffer C { float c[]; };
layout(push_constant) uniform P { uint K; uint N; } pc;
void main() {
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    for (uint k = 0u; k < pc.K; k += 16u) {
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma;
        coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb;
        coopMatLoad(ma, a, k, pc.K, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(mb, b, k * pc.N, pc.N, gl_CooperativeMatrixLayoutColumnMajor);
        acc = coopMatMulAdd(ma, mb, acc);
    }
    acc = acc * 2.0;
    coopMatStore(acc, c, 0u, pc.N, gl_CooperativeMatrixLayoutRowMajor);
}
