#version 450 core
// NV2 tensor addressing at subgroup scope: a T x T tile (subgroup size SG) read from a ROWS x COLS
// tensor at a slice that starts above and left of it (clamp mode CLAMP), then written through a
// clipped view.
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = SG) in;
layout(set = 0, binding = 0) buffer BufT { float t_in[]; };
layout(set = 0, binding = 1) buffer BufO { float o[]; };
layout(set = 0, binding = 2) buffer BufS { float s[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator> m =
      coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>(-1.0);
  tensorLayoutNV<2, CLAMP> t = createTensorLayoutNV(2, CLAMP);
  t = setTensorLayoutDimensionNV(t, ROWS, COLS);
  t = setTensorLayoutClampValueNV(t, floatBitsToUint(42.0));
  t = sliceTensorLayoutNV(t, -3, T, -2, T);
  coopMatLoadTensorNV(m, t_in, 0, t);
  coopMatStore(m, o, 0, T, gl_CooperativeMatrixLayoutRowMajor);
  // Store the tile into a T x T tensor through a view clipped to rows 2..5, columns 1..6.
  tensorLayoutNV<2> ls = createTensorLayoutNV(2);
  ls = setTensorLayoutDimensionNV(ls, T, T);
  tensorViewNV<2, false, 0, 1> v = createTensorViewNV(2, false, 0, 1);
  v = setTensorViewClipNV(v, 2, 4, 1, 6);
  coopMatStoreTensorNV(m, s, 0, ls, v);
}
