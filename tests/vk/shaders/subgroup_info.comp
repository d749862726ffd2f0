// Writes gl_SubgroupSize and gl_NumSubgroups for each workgroup: checks a required subgroup size.
#version 450
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) writeonly buffer Out { uint info[]; };
void main() {
    if (gl_LocalInvocationIndex == 0) {
        info[2 * gl_WorkGroupID.x] = gl_SubgroupSize;
        info[2 * gl_WorkGroupID.x + 1] = gl_NumSubgroups;
    }
}
