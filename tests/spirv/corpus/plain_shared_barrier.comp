// Plain compute: shared memory tree reduction with barriers.
#version 450
layout(local_size_x = 128) in;
layout(binding = 0) readonly buffer In { float src[]; };
layout(binding = 1) writeonly buffer Out { float dst[]; };
shared float partial[128];
void main() {
    uint t = gl_LocalInvocationID.x;
    partial[t] = src[gl_GlobalInvocationID.x];
    barrier();
    for (uint s = 64u; s > 0u; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        memoryBarrierShared();
        barrier();
    }
    if (t == 0u) dst[gl_WorkGroupID.x] = partial[0];
}
