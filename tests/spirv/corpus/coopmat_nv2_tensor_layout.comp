// GL_NV_cooperative_matrix2: tensor layouts with block size, dimensions, slices and clamp modes.
#version 450
#extension GL_KHR_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_NV_cooperative_matrix2 : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer H { float16_t h[]; };
layout(binding = 1) buffer F { float f[]; };
layout(push_constant) uniform P { uint rows; uint cols; uint row0; uint col0; } pc;
void main() {
    tensorLayoutNV<2> la = createTensorLayoutNV(2);
    la = setTensorLayoutDimensionNV(la, pc.rows, pc.cols);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    lc = setTensorLayoutDimensionNV(lc, pc.rows, pc.cols);
    lc = setTensorLayoutClampValueNV(lc, 7);
    lc = setTensorLayoutStrideNV(lc, pc.cols, 1);
    tensorLayoutNV<3> lb = createTensorLayoutNV(3);
    lb = setTensorLayoutBlockSizeNV(lb, 1, 2, 4);
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoadTensorNV(a, h, 0u, sliceTensorLayoutNV(la, pc.row0, 16, pc.col0, 16));
    coopMatLoadTensorNV(b, h, 0u, sliceTensorLayoutNV(lc, pc.col0, 16, pc.row0, 16));
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
    acc = coopMatMulAdd(a, b, acc);
    tensorLayoutNV<2> lo = createTensorLayoutNV(2);
    lo = setTensorLayoutDimensionNV(lo, pc.rows, pc.cols);
    coopMatStoreTensorNV(acc, f, 0u, sliceTensorLayoutNV(lo, pc.row0, 16, pc.col0, 16));
}
