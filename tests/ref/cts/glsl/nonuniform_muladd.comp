#version 450 core
// Planted bug: a subgroup-scope MulAdd reached by only half of the subgroup (seed 002).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> ma;
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> mb;
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> mc =
      coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator>(0.0);
  coopMatLoad(ma, a, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(mb, a, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  if (gl_LocalInvocationID.x < 4) {
    mc = coopMatMulAdd(ma, mb, mc);
  }
  coopMatStore(mc, d, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
