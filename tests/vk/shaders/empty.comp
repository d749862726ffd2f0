// An empty kernel: what the dispatch-overhead measurements submit.
#version 450
layout(local_size_x = 1) in;
void main() {}
