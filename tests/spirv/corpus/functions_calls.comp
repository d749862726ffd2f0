// Function calls: in/out/inout parameters, recursion-free call chains, struct returns.
#version 450
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { vec2 p[]; };
struct Pair { float lo; float hi; };
Pair order(float a, float b) { Pair r; r.lo = min(a, b); r.hi = max(a, b); return r; }
void scale(inout vec2 v, in float s, out float len) { v *= s; len = length(v); }
float lerp3(float a, float b, float c, float t) { return t < 0.5 ? mix(a, b, t * 2.0) : mix(b, c, t * 2.0 - 1.0); }
void main() {
    uint i = gl_GlobalInvocationID.x;
    vec2 v = p[i];
    float len;
    scale(v, 0.5, len);
    Pair o = order(v.x, v.y);
    p[i] = vec2(lerp3(o.lo, len, o.hi, fract(len)), o.hi - o.lo);
}
