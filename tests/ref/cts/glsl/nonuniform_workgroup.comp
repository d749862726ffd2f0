#version 450 core
// Planted bug: a Workgroup-scope MulAdd reached by one of the workgroup's two subgroups only.
// Each subgroup is uniform in itself, so only the workgroup-scope check can see it.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
void main() {
  coopmat<float16_t, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseA> ma;
  coopmat<float16_t, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseB> mb;
  coopmat<float, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseAccumulator> mc =
      coopmat<float, gl_ScopeWorkgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  coopMatLoad(ma, a, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(mb, a, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
#if BUG
  if (gl_SubgroupID == 0) {
#else
  if (gl_WorkGroupID.x == 0) {
#endif
    mc = coopMatMulAdd(ma, mb, mc);
  }
  coopMatStore(mc, d, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
