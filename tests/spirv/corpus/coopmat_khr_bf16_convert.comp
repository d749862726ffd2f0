// bfloat16 scalars and matrices: constants, conversions to and from f32 accumulators.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_bfloat16 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer A { bfloat16_t a[]; };
layout(binding = 1) buffer F { float f[]; };
void main() {
    bfloat16_t k = bfloat16_t(1.5);
    bfloat16_t tiny = bfloat16_t(-0.0078125);
    f[gl_GlobalInvocationID.x + 1024u] = float(k) + float(tiny);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc;
    coopMatLoad(acc, f, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<bfloat16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> narrow = coopmat<bfloat16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc);
    coopMatStore(narrow, a, 0u, 16u, gl_CooperativeMatrixLayoutRowMajor);
}
