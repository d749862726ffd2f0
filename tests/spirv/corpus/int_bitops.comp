// Integer and bit operations: bitfield built-ins, shifts, integer division, conversions.
#version 450
layout(local_size_x = 64) in;
layout(binding = 0) buffer B { uint u[64]; int s[]; } b;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = b.u[i];
    int y = int(x) - 1000;
    uint r = bitfieldExtract(x, 3, 5) | bitfieldInsert(x, 0x5u, 8, 4);
    r ^= bitfieldReverse(x) + uint(bitCount(x)) + uint(findMSB(y)) + uint(findLSB(x));
    uint hi, lo;
    umulExtended(x, 0x9e3779b9u, hi, lo);
    uint carry;
    r += uaddCarry(hi, lo, carry) + carry;
    b.s[i] = (y / 7) % 5 + (y >> 2) + abs(y) * sign(y);
    b.u[i] = r;
}
