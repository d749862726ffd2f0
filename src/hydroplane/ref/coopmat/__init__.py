"""Cooperative matrices in the reference executor (KHR, legacy NV, NV2, EXT maintenance1).

matrix (types, element-to-invocation distribution, lane views), memory (load/store addresses),
arith (MulAdd, conversions, ConvertUse, transpose), reduce (Reduce, PerElementOp), tensor (NV2
tensor layouts and views): the semantics, free of the interpreter. ops and tensor_ops: the opcode
handlers that the interpreter's op table loads (docs/ref_coopmat.md).
"""
