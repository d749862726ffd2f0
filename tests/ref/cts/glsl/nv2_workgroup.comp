#version 450 core
// NV2 workgroup-scope matrices: one 32x32 tile per workgroup of WG invocations, plus tensor layouts.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = WG) in;
layout(set = 0, binding = 0) buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) buffer BufB { float16_t b[]; };
layout(set = 0, binding = 2) buffer BufD { float d[]; };
layout(set = 0, binding = 3) buffer BufU { uint u[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
void main() {
  coopmat<float16_t, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseA> ma;
  coopmat<float16_t, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseB> mb;
  coopmat<float, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseAccumulator> mc =
      coopmat<float, gl_ScopeWorkgroup, 32, 32, gl_MatrixUseAccumulator>(0.0);
  // A: a rows x cols tensor; this workgroup's 32x32 slice starts at row 32 * WorkGroupID.x and
  // overhangs the tensor's edge, so Constant clamping fills it with 0.
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la =
      createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  la = setTensorLayoutDimensionNV(la, pc.rows, pc.cols);
  la = sliceTensorLayoutNV(la, 32 * gl_WorkGroupID.x, 32, 0, 32);
  coopMatLoadTensorNV(ma, a, 0, la);
  // B: stored column-major (32 x 32), read through a permuting view.
  tensorLayoutNV<2> lb = createTensorLayoutNV(2);
  lb = setTensorLayoutDimensionNV(lb, 32, 32);
  tensorViewNV<2, false, 1, 0> vb = createTensorViewNV(2, false, 1, 0);
  coopMatLoadTensorNV(mb, b, 0, lb, vb);
  mc = coopMatMulAdd(ma, mb, mc);
  tensorLayoutNV<2> ld = createTensorLayoutNV(2);
  ld = setTensorLayoutDimensionNV(ld, 64, 32);
  ld = sliceTensorLayoutNV(ld, 32 * gl_WorkGroupID.x, 32, 0, 32);
  coopMatStoreTensorNV(mc, d, 0, ld);
  u[gl_WorkGroupID.x * WG + gl_LocalInvocationID.x] = mc.length();
}
