#version 450 core
// Legacy SPV_NV_cooperative_matrix: fcoopmatNV (no Use), Stride + ColumnMajor bool; T x T tiles.
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : enable
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = SG) in;
layout(set = 0, binding = 0) buffer BufA { float16_t a[]; };
layout(set = 0, binding = 1) buffer BufB { float16_t b[]; };
layout(set = 0, binding = 2) buffer BufC { float c[]; };
layout(set = 0, binding = 3) buffer BufD { float d[]; };
void main() {
  fcoopmatNV<16, gl_ScopeSubgroup, T, T> ma, mb;
  fcoopmatNV<32, gl_ScopeSubgroup, T, T> mc;
  coopMatLoadNV(ma, a, 0, T, false);
  coopMatLoadNV(mb, b, 0, T, true);
  coopMatLoadNV(mc, c, 0, T, false);
  mc = coopMatMulAddNV(ma, mb, mc);
  coopMatStoreNV(mc, d, 0, T, true);
#if WITH_LENGTH
  d[T * T + gl_LocalInvocationID.x] = float(mc.length());
#endif
}
