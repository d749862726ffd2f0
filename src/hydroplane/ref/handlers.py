"""The complete op table: imports every handler module (importing one registers its handlers with `ref.ops`).

A new handler module is added here; the interpreter (program, constants) resolves handlers through
`handler_for`, so importing it guarantees that every module below has registered.
"""

from __future__ import annotations

from hydroplane.ref import ops_arith, ops_composite, ops_control, ops_convert, ops_glsl, ops_group, ops_memory
from hydroplane.ref.coopmat import ops as coopmat_ops
from hydroplane.ref.coopmat import tensor_ops as coopmat_tensor_ops
from hydroplane.ref.ops import handler_for

# Every handler module, in load order (coopmat.tensor_ops imports helpers from coopmat.ops).
HANDLER_MODULES = (ops_arith, ops_convert, ops_composite, ops_memory, ops_control, ops_glsl, ops_group,
                   coopmat_ops, coopmat_tensor_ops)

__all__ = ["HANDLER_MODULES", "handler_for"]
