// A uniform buffer (std140 block) next to storage buffers: out[i] = in[i] * params.scale + params.bias.
#version 450
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) uniform Params { float scale; float bias; uint count; } params;
layout(set = 0, binding = 1) readonly buffer In { float src[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < params.count) {
        dst[i] = src[i] * params.scale + params.bias;
    }
}
