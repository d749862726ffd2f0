// 8/16-bit integer and 16/32-bit float constants, infinities, denormals, NaN-free edge values.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : enable
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float f[8]; float16_t h[8]; int8_t c[4]; uint8_t uc[4]; int16_t s[4]; uint16_t us[4]; } b;
void main() {
    b.f[0] = 1.0 / 0.0; b.f[1] = -1.0 / 0.0; b.f[2] = 1e-40; b.f[3] = 3.4028235e38;
    b.f[4] = 0.1; b.f[5] = -123456.789; b.f[6] = 1.17549435e-38; b.f[7] = -0.0;
    b.h[0] = float16_t(65504.0); b.h[1] = float16_t(-0.333); b.h[2] = float16_t(6e-8); b.h[3] = float16_t(1.0 / 0.0);
    b.h[4] = float16_t(0.0); b.h[5] = float16_t(-2.0); b.h[6] = float16_t(1e-5); b.h[7] = float16_t(-1.0 / 0.0);
    b.c[0] = int8_t(-128); b.c[1] = int8_t(127); b.c[2] = int8_t(-1); b.c[3] = int8_t(5);
    b.uc[0] = uint8_t(255); b.uc[1] = uint8_t(0); b.uc[2] = uint8_t(128); b.uc[3] = uint8_t(7);
    b.s[0] = int16_t(-32768); b.s[1] = int16_t(32767); b.s[2] = int16_t(-2); b.s[3] = int16_t(300);
    b.us[0] = uint16_t(65535); b.us[1] = uint16_t(1); b.us[2] = uint16_t(40000); b.us[3] = uint16_t(9);
}
