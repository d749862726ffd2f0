"""Sizes, alignments and std430 offsets of the types a ModuleBuilder has declared.

Reads the builder's id -> defining-instruction map; used for ArrayStride and member
Offset decorations (`storage_buffer`, `type_struct(offsets="std430")`).
"""

from __future__ import annotations

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction
from hydroplane.spirv.build_error import BuildError

Op = grammar.Op


class LayoutError(BuildError):
    """A type without a size in an explicit layout (bool, runtime array inside, unknown id)."""


class TypeLayout:
    """std430 layout of declared types: scalars by width, vec3 aligned as vec4, arrays by stride."""

    def __init__(self, defs: dict[int, Instruction]):
        self.defs = defs

    def _def(self, type_id: int) -> Instruction:
        inst = self.defs.get(type_id)
        if inst is None:
            raise LayoutError(f"%{type_id} is not a declared type")
        return inst

    def alignment(self, type_id: int) -> int:
        inst = self._def(type_id)
        op = inst.opcode
        if op in (Op.TypeInt, Op.TypeFloat):
            return inst.operands[0].value // 8
        if op == Op.TypeVector:
            count = inst.operands[1].value
            return self.alignment(inst.operands[0].value) * (2 if count == 2 else 4)
        if op in (Op.TypeArray, Op.TypeRuntimeArray, Op.TypeMatrix):
            return self.alignment(inst.operands[0].value)
        if op == Op.TypeStruct:
            return max((self.alignment(m.value) for m in inst.operands), default=1)
        raise LayoutError(f"%{type_id} ({inst.name}) has no explicit layout")

    def size(self, type_id: int) -> int:
        inst = self._def(type_id)
        op = inst.opcode
        if op in (Op.TypeInt, Op.TypeFloat):
            return inst.operands[0].value // 8
        if op == Op.TypeVector:
            return self.size(inst.operands[0].value) * inst.operands[1].value
        if op == Op.TypeMatrix:
            return self.array_stride(inst.operands[0].value) * inst.operands[1].value
        if op == Op.TypeArray:
            return self.array_stride(inst.operands[0].value) * self._length(inst.operands[1].value)
        if op == Op.TypeStruct:
            offsets = self.std430_offsets([m.value for m in inst.operands])
            end = offsets[-1] + self.size(inst.operands[-1].value) if offsets else 0
            return _round_up(end, self.alignment(type_id))
        raise LayoutError(f"%{type_id} ({inst.name}) has no fixed size")

    def array_stride(self, element: int) -> int:
        """std430 stride of an array of `element`: its size rounded up to its alignment."""
        return _round_up(self.size(element), self.alignment(element))

    def std430_offsets(self, members) -> list[int]:
        offsets, at = [], 0
        for member in members:
            at = _round_up(at, self.alignment(member))
            offsets.append(at)
            if self._def(member).opcode != Op.TypeRuntimeArray:
                at += self.size(member)
        return offsets

    def _length(self, constant_id: int) -> int:
        inst = self._def(constant_id)
        if inst.opcode != Op.Constant:
            raise LayoutError(f"array length %{constant_id} is not an OpConstant")
        return inst.operands[0].value


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment
