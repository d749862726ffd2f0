// NV2 reduction of one accumulator tile (GL_NV_cooperative_matrix2): MODE selects row, column or both.
// TILE_M x TILE_N comes from the device's reported shapes (-D at compile time); sum is the combine op.
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = SUBGROUP) in;
layout(set = 0, binding = 0) readonly buffer In { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float dst[]; };

float add(const in float a, const in float b) { return a + b; }

void main() {
    coopmat<float, gl_ScopeSubgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> tile;
    coopMatLoad(tile, src, 0, TILE_N, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator> reduced;
    coopMatReduceNV(reduced, tile, MODE, add);
    coopMatStore(reduced, dst, 0, TILE_N, gl_CooperativeMatrixLayoutRowMajor);
}
