#version 450 core
// A cooperative-matrix load through a pointer to uvec4 (as Vulkan-CTS does): the stride counts
// uvec4s (16 bytes), the f16 elements lie packed within each row.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer BufV { uvec4 v[]; };
layout(set = 0, binding = 1) buffer BufO { float16_t o[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, v, 1, 2, gl_CooperativeMatrixLayoutRowMajor);  // rows 32 bytes apart, from byte 16
  coopMatStore(m, o, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
