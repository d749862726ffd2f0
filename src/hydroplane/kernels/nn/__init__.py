"""The transformer ops' kernels, in the kernel language, one module per family (docs/nn.md):

- `norm` — RMS norm fused with its weight multiply;
- `rotary` — rotary position embedding (NeoX and interleaved pairs), positions read from a buffer;
- `activation` — GELU (erf and tanh forms), SiLU, and the gated FFN activation act(gate) * up in one kernel;
- `elementwise` — the residual add (same shape or a broadcast of the trailing dimensions);
- `embedding` — rows of a table gathered by token id;
- `sampling` — greedy argmax (two passes) and temperature / top-k / top-p sampling with a seeded hash;
- `common` — storage by dtype, f32 loads and stores, order keys, workgroup reductions.

Running them on arrays is hydroplane.ops.nn's. This package imports only `lang` (and spirv's types).
"""
