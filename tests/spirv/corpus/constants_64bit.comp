// 64-bit float and integer constants, including extreme and negative values.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { double d[8]; int64_t i[4]; uint64_t u[4]; } b;
void main() {
    b.d[0] = 3.141592653589793lf;
    b.d[1] = -2.2250738585072014e-308lf;
    b.d[2] = 1.7976931348623157e308lf;
    b.d[3] = 4.9e-324lf;
    b.d[4] = 0.1lf;
    b.d[5] = -0.0lf;
    b.d[6] = 1.0lf / 3.0lf;
    b.d[7] = 1e100lf;
    b.i[0] = -1l; b.i[1] = 9223372036854775807l; b.i[2] = -9223372036854775807l - 1l; b.i[3] = -65536l;
    b.u[0] = 18446744073709551615ul; b.u[1] = 4294967296ul; b.u[2] = 0x123456789abcdeful; b.u[3] = 7ul;
}
