// GL_NV_cooperative_matrix2: workgroup-scope matrices with flexible dimensions from spec constants.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 32;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) buffer C { float c[]; };
void main() {
    coopmat<float16_t, gl_ScopeWorkgroup, BM, 32, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, 32, BN, gl_MatrixUseB> mb;
    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc = coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
    tensorLayoutNV<2> la = createTensorLayoutNV(2);
    la = setTensorLayoutDimensionNV(la, 256, 256);
    for (uint k = 0u; k < 256u; k += 32u) {
        coopMatLoadTensorNV(ma, a, 0u, sliceTensorLayoutNV(la, gl_WorkGroupID.x * BM, BM, k, 32));
        coopMatLoadTensorNV(mb, a, 0u, sliceTensorLayoutNV(la, k, 32, gl_WorkGroupID.y * BN, BN));
        acc = coopMatMulAdd(ma, mb, acc);
    }
    coopMatStore(acc, c, 0u, 256u, gl_CooperativeMatrixLayoutRowMajor);
}
