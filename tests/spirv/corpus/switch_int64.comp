// 64-bit integer arithmetic selected by a switch; 64-bit literals in constants and comparisons.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
layout(local_size_x = 8) in;
layout(binding = 0) buffer B { int64_t s[]; } b;
layout(binding = 1) buffer C { uint64_t u[]; } c;
void main() {
    uint i = gl_GlobalInvocationID.x;
    int64_t r = 0l;
    switch (int(b.s[i] & 7l)) {
        case 1: r = 0x7fffffffffffffffl; break;
        case 2: r = -9223372036854775807l - 1l; break;
        case 3: r = b.s[i] >> 33; break;
        default: r = b.s[i] * 3l;
    }
    if (c.u[i] == 18446744073709551615ul) c.u[i] = 0x8000000000000001ul;
    else c.u[i] = c.u[i] / 4294967296ul + uint64_t(r);
    b.s[i] = r;
}
