// Debug names with odd characters and duplicates, to exercise friendly-name sanitising and escaping.
#version 450
layout(local_size_x = 4) in;
struct Item { float value; uint key; };
layout(binding = 0) buffer Items { Item items[]; } store;
layout(binding = 1) buffer Items2 { Item items[]; } store2;
float value(Item it) { return it.value; }
uint value(uint k) { return k * 2u; }
void main() {
    uint i = gl_GlobalInvocationID.x;
    float value_0 = value(store.items[i]);
    store2.items[i].value = value_0;
    store2.items[i].key = value(store.items[i].key);
}
