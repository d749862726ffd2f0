// GL_NV_cooperative_matrix2: tensor views (dimensions, strides, clip, permutation) and a decode function.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_EXT_buffer_reference : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer HalfRef { float16_t v; };
float16_t decode_scaled(const in HalfRef r, const in uint32_t block[2], const in uint32_t inner[2]) {
    return r.v * float16_t(2.0);
}
void main() {
    tensorLayoutNV<2> l = createTensorLayoutNV(2);
    l = setTensorLayoutDimensionNV(l, 64, 64);
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
    tensorViewNV<3, true> v3 = createTensorViewNV(3, true);
    v3 = setTensorViewDimensionsNV(v3, 4, 16, 16);
    v3 = setTensorViewStrideNV(v3, 256, 16, 1);
    v3 = setTensorViewClipNV(v3, 0, 16, 0, 16);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoadTensorNV(b, h, 0u, sliceTensorLayoutNV(l, 0, 16, 0, 16), transposed);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopMatLoadTensorNV(a, h, 0u, sliceTensorLayoutNV(l, 16, 16, 0, 16), decode_scaled);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    acc = coopMatMulAdd(a, b, acc);
    coopMatStoreTensorNV(acc, h, 4096u, sliceTensorLayoutNV(l, 0, 16, 16, 16), transposed);
}
