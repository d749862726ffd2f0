"""`Instr`: a decoded instruction as the interpreter's handlers see it (ids and literals split, type resolved)."""

from __future__ import annotations

from hydroplane.ref.layout import value_dtype
from hydroplane.spirv import binary, grammar


class Instr:
    """An instruction as handlers see it.

    opcode, name ('OpFAdd'), result_type (id), result_id, operands (binary.Operand list),
    offset (word offset), args (ids of the Id* operands, in order), literals (the other operand
    values, in order), type (the result's hydroplane.spirv.types Type or None), dtype (the NumPy
    dtype of a numeric result, or of a cooperative matrix's component; None otherwise), handler.
    """

    __slots__ = ("opcode", "name", "result_type", "result_id", "operands", "offset", "args", "literals",
                 "type", "dtype", "handler", "extra")

    def __init__(self, raw: binary.Instruction):
        self.opcode = raw.opcode
        self.result_type = raw.result_type
        self.result_id = raw.result_id
        self.operands = raw.operands
        self.offset = raw.offset
        self.args = tuple(o.value for o in raw.operands if o.kind in grammar.ID_KINDS)
        self.literals = tuple(o.value for o in raw.operands if o.kind not in grammar.ID_KINDS)
        try:
            self.name = grammar.instruction(raw.opcode).name
        except grammar.GrammarError:
            self.name = f"Op<{raw.opcode}>"
        self.type = None
        self.dtype = None
        self.handler = None
        self.extra = None  # per-instruction data a handler may cache

    def set_type(self, t) -> None:
        """Give the instruction its result type (and that type's value dtype)."""
        self.type = t
        self.dtype = value_dtype(t)
