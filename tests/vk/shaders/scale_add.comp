// Plain compute kernel for the runtime tests: out[i] = a[i] * scale + b[i] + offset (spec constant).
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float offset = 0.0;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 1, binding = 0) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Push { float scale; uint count; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.count) {
        result[i] = a[i] * pc.scale + b[i] + offset;
    }
}
