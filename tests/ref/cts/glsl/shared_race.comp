#version 450 core
// Planted bugs around Workgroup memory and cooperative matrices (chosen by BUG):
//   BUG 1: subgroup 1 loads the tile subgroup 0 stores, with no barrier between (a race)
//   BUG 2: a cooperative-matrix load of Workgroup memory nobody wrote (uninitialised read)
//   BUG 0: the correct kernel (barrier between store and load)
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) buffer BufC { float c[]; };
layout(set = 0, binding = 1) buffer BufD { float d[]; };
shared float tile[64];
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  if (gl_SubgroupID == 0) {
    coopMatLoad(m, c, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
#if BUG != 2
    coopMatStore(m, tile, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
#endif
  }
#if BUG != 1
  barrier();
#endif
  if (gl_SubgroupID == 1) {
    coopMatLoad(m, tile, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
    coopMatStore(m, d, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  }
}
