"""Block-quantized weights: ggml's formats (q8_0, q4_0, q5_0, q4_k, q6_k) as `QuantizedArray`s, and GGUF files.

`hydroplane.quant.quantize(w, "q4_0")`, `from_bytes(raw, fmt, shape)`, `QuantizedArray.dequantize()`;
`hydroplane.gguf.load(path)` (this package's `gguf` module: the gguf package, the `gguf` extra). Multiplying by
one is `hydroplane.matmul(x, qw.T)` (ops.quant_matmul). docs/quant.md. Layer: quant (imports only errors).
"""

from hydroplane.quant.array import QuantizedArray, QuantizedTranspose, from_bytes, quantize
from hydroplane.quant.formats import FORMATS, BlockFormat, QuantError, block_format

__all__ = ["FORMATS", "BlockFormat", "QuantError", "QuantizedArray", "QuantizedTranspose", "block_format",
           "from_bytes", "quantize"]
