#version 450 core
// Which element each (invocation, index) holds: GetCoordinate and Length per lane.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = SG) in;
layout(set = 0, binding = 0) buffer BufU { uvec2 coords[]; };
layout(set = 0, binding = 1) buffer BufL { uint lengths[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> m =
      coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator>(1.0);
  uint n = m.length();
  lengths[gl_LocalInvocationID.x] = n;
  for (uint i = 0; i < n; ++i) coords[gl_LocalInvocationID.x * n + i] = coopMatGetCoordinateEXT(m, i);
}
