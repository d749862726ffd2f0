#version 450 core
// Cooperative-matrix load and store through PhysicalStorageBuffer pointers (buffer references
// whose addresses arrive as push constants), column-major with a padded stride.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 8) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Floats { float v[]; };
layout(push_constant) uniform Push { Floats src; Floats dst; } pc;
layout(set = 0, binding = 0) buffer Unused { float unused[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, pc.src.v, 4, 11, gl_CooperativeMatrixLayoutColumnMajor);
  m = m * 2.0;
  coopMatStore(m, pc.dst.v, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
