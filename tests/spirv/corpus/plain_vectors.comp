// Plain compute: vector and matrix arithmetic, GLSL.std.450 built-ins.
#version 450
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = 0) buffer Data { mat4 m; vec4 v[]; } data;
void main() {
    uint i = gl_LocalInvocationIndex;
    vec4 a = data.v[i];
    vec3 n = normalize(a.xyz) * inversesqrt(dot(a, a) + 1.0);
    vec4 r = data.m * vec4(cross(n, vec3(0.0, 1.0, 0.0)), fract(a.w));
    data.v[i] = clamp(mix(r, a, 0.25), vec4(-1.0), vec4(1.0)) + vec4(pow(abs(a.x), 2.2), exp(a.y), log2(abs(a.z) + 1.0), atan(a.w, 3.0));
}
