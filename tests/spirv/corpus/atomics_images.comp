// Atomics on buffers and shared memory plus storage images.
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0) buffer Counters { uint hits; int low; uint bins[16]; };
layout(binding = 1, rgba8) uniform readonly image2D src;
layout(binding = 2, r32f) uniform writeonly image2D dst;
shared uint local_max;
void main() {
    if (gl_LocalInvocationIndex == 0u) local_max = 0u;
    barrier();
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    vec4 c = imageLoad(src, p);
    uint lum = uint(dot(c.rgb, vec3(0.299, 0.587, 0.114)) * 255.0);
    atomicMax(local_max, lum);
    atomicAdd(hits, 1u);
    atomicMin(low, int(lum) - 128);
    atomicOr(bins[lum >> 4], 1u << (lum & 15u));
    barrier();
    imageStore(dst, p, vec4(float(atomicCompSwap(local_max, 0u, lum)) / 255.0));
}
