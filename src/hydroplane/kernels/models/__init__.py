"""Kernels the models need beside hydroplane.nn's: the relayout of heads between the projections' (tokens, heads,
dim) order and attention's (heads, tokens, dim), with the dtype change, into a KV cache at a position."""
