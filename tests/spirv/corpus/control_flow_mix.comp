// Control flow: if/else chains, ternaries, logical short-circuit, early return, discard-free kill paths.
#version 450
layout(local_size_x = 16) in;
layout(binding = 0) buffer B { bool flags[64]; float v[]; } b;
float classify(float x) {
    if (isnan(x)) return -1.0;
    else if (isinf(x)) return -2.0;
    else if (x < 0.0 && b.flags[0]) return x * x;
    return x > 10.0 || x < -10.0 ? 10.0 : x;
}
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= 1024u) return;
    float r = classify(b.v[i]);
    b.v[i] = r;
    b.flags[i] = r > 0.0;
}
