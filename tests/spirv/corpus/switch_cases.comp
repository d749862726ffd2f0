// Switches: a 32-bit switch with fallthrough and a default, and a nested one.
#version 450
layout(local_size_x = 16) in;
layout(binding = 0) buffer B { uint u[16]; int v[]; } b;
void main() {
    uint i = gl_GlobalInvocationID.x;
    int r = 0;
    switch (b.v[i]) {
        case -7: r = 1; break;
        case 0: r = 2;
        case 3: r += 3; break;
        case 2147483647: r = 4; break;
        case -2147483648: r = 5; break;
        default: r = -1;
    }
    switch (b.u[i] % 4u) {
        case 0u: case 1u: r *= 2; break;
        case 4000000000u: r = 9; break;
        default: switch (r) { case 1: r = 11; break; default: break; }
    }
    b.v[i] = r;
}
