"""The quantized kernels (ggml block formats dequantized in the kernels' loads): decode.py's per-format decoders,
source.py's decode GEMV, prefill GEMM (on the GEMM's staged K loop), split-K reduction and row gather.
docs/quant.md. Imports only the language (and the gemm and nn kernel helpers)."""
