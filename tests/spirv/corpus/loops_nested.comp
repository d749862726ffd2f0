// Loops: nested for/while/do-while with break and continue.
#version 450
layout(local_size_x = 32) in;
layout(binding = 0) buffer B { int data[]; };
void main() {
    int acc = 0;
    for (int i = 0; i < 16; ++i) {
        if ((i & 3) == 1) continue;
        int j = i;
        while (j > 0) {
            acc += data[j] ^ i;
            j -= 3;
            if (acc > 1000) break;
        }
    }
    int k = 0;
    do { acc -= k * k; k++; } while (k < int(gl_LocalInvocationID.x));
    data[gl_GlobalInvocationID.x] = acc;
}
