#version 450 core
// Every invocation writes the elements it holds, in index order: out[lane * L + i] = (2m)[i].
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = SG) in;
layout(set = 0, binding = 0) buffer BufM { float m_in[]; };
layout(set = 0, binding = 1) buffer BufO { float o[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, R, C, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, m_in, 0, C, gl_CooperativeMatrixLayoutRowMajor);
  uint L = m.length();
  uint lane = gl_LocalInvocationID.x;
#define X(i) if (i < L) o[lane * L + i] = (m + m)[i];
#define X8(b) X(b) X(b + 1) X(b + 2) X(b + 3) X(b + 4) X(b + 5) X(b + 6) X(b + 7)
  X8(0) X8(8) X8(16) X8(24)
}
