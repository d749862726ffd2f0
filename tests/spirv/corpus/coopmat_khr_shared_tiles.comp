// GL_KHR_cooperative_matrix: tiles staged through shared memory, loops over K, a helper function.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) buffer C { float c[]; };
shared float16_t stage[16 * 16];
coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> step(coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc) {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> mb;
    coopMatLoad(ma, stage, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, stage, 0u, 16u, gl_CooperativeMatrixLayoutColumnMajor);
    return coopMatMulAdd(ma, mb, acc);
}
void main() {
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(1.0);
    for (uint k = 0u; k < 4u; ++k) {
        for (uint e = gl_LocalInvocationIndex; e < 256u; e += 64u) stage[e] = a[k * 256u + e];
        barrier();
        acc = step(acc);
        barrier();
    }
    coopMatStore(acc, c, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
