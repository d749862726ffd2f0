// Subgroup ops: arithmetic reductions, scans, ballot and elect.
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_ballot : enable
layout(local_size_x = 64) in;
layout(binding = 0) buffer B { float f[]; } b;
layout(binding = 1) buffer C { uint u[]; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = b.f[i];
    float total = subgroupAdd(x);
    float prefix = subgroupInclusiveAdd(x);
    float ex = subgroupExclusiveMul(x);
    uvec4 ballot = subgroupBallot(x > 0.0);
    uint count = subgroupBallotBitCount(ballot);
    if (subgroupElect()) c.u[gl_SubgroupID] = count + gl_SubgroupSize;
    b.f[i] = total + prefix + ex + subgroupMax(x) + float(subgroupMin(c.u[i]));
}
