// Specialization constants: local size ids, spec-constant arithmetic (OpSpecConstantOp).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const int TILE = 16;
layout(constant_id = 3) const bool USE_SCALE = true;
layout(constant_id = 4) const float SCALE = 0.5;
layout(constant_id = 5) const uint MASK = 0xff00u;
const int TILE2 = TILE * 2 + 1;
const uint SHIFTED = (MASK >> 4u) | 3u;
const bool BOTH = USE_SCALE && (TILE > 8);
layout(binding = 0) buffer B { float v[]; };
void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_WorkGroupSize.x;
    float s = BOTH ? SCALE : 1.0;
    v[i] = v[i] * s + float(TILE2) + float(SHIFTED);
}
