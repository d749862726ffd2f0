// Subgroup ops: shuffles, broadcast, votes, clustered and quad operations.
#version 450
#extension GL_KHR_shader_subgroup_shuffle : enable
#extension GL_KHR_shader_subgroup_shuffle_relative : enable
#extension GL_KHR_shader_subgroup_vote : enable
#extension GL_KHR_shader_subgroup_clustered : enable
#extension GL_KHR_shader_subgroup_quad : enable
#extension GL_KHR_shader_subgroup_ballot : enable
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { vec2 v[]; } b;
void main() {
    uint i = gl_GlobalInvocationID.x;
    vec2 x = b.v[i];
    vec2 y = subgroupShuffle(x, gl_SubgroupInvocationID ^ 1u) + subgroupShuffleXor(x, 2u);
    y += subgroupShuffleUp(x, 1u) - subgroupShuffleDown(x, 3u);
    y += subgroupBroadcastFirst(x) + subgroupBroadcast(x, 5u);
    y += subgroupClusteredAdd(x, 4u) + subgroupQuadSwapHorizontal(x) + subgroupQuadBroadcast(x, 2u);
    if (subgroupAll(x.x > 0.0) || subgroupAny(x.y < 0.0) || subgroupAllEqual(x.x)) y = -y;
    b.v[i] = y;
}
