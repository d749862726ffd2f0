"""spirv-dis's default names for ids (`FriendlyNames`): OpName, BuiltIn, type shapes, constant values."""

from __future__ import annotations

import re

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction, Module
from hydroplane.spirv.enums import FPEncoding
from hydroplane.spirv.text_literals import format_literal, scalar_type
from hydroplane.spirv.types import Scalar

Op = grammar.Op

_FRIENDLY_FLOAT = {(16, None): "half", (32, None): "float", (64, None): "double",
                   (16, FPEncoding.BFloat16KHR): "bfloat16", (8, FPEncoding.Float8E4M3EXT): "fp8e4m3",
                   (8, FPEncoding.Float8E5M2EXT): "fp8e5m2"}
_FRIENDLY_INT = {8: "char", 16: "short", 32: "int", 64: "long"}

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_BUILTIN_DECORATION = grammar.enumerant("Decoration", "BuiltIn").value

# What spirv-dis calls a BuiltIn-decorated id that has no OpName: GLSL's gl_* spelling for
# the GLSL built-ins, the bare name for OpenCL / subgroup ones; other built-ins stay numbered.
# (Observed from spirv-dis 2026.4; tests/spirv/test_text.py compares every BuiltIn.)
_BUILTIN_NAMES = {
    **{name: "gl_" + name for name in (
        "Position PointSize ClipDistance CullDistance FragCoord FragDepth FrontFacing HelperInvocation "
        "InstanceIndex BaseInstance Layer LocalInvocationIndex PatchVertices PointCoord SampleMask "
        "SamplePosition TessCoord TessLevelInner TessLevelOuter VertexIndex ViewportIndex").split()},
    "VertexId": "gl_VertexID", "InstanceId": "gl_InstanceID", "PrimitiveId": "gl_PrimitiveID",
    "InvocationId": "gl_InvocationID", "SampleId": "gl_SampleID", "NumWorkgroups": "gl_NumWorkGroups",
    "WorkgroupSize": "gl_WorkGroupSize", "WorkgroupId": "gl_WorkGroupID",
    "LocalInvocationId": "gl_LocalInvocationID", "GlobalInvocationId": "gl_GlobalInvocationID",
    **{name: name for name in (
        "WorkDim GlobalSize EnqueuedWorkgroupSize GlobalOffset GlobalLinearId SubgroupSize SubgroupMaxSize "
        "NumSubgroups NumEnqueuedSubgroups SubgroupId SubgroupLocalInvocationId").split()},
    **{f"Subgroup{m}Mask": f"Subgroup{m}MaskKHR" for m in ("Eq", "Ge", "Gt", "Le", "Lt")},
}


def _sanitize(name: str) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", name) if name else "_"


class FriendlyNames:
    """Names ids like spirv-dis does by default: OpName first, BuiltIn decorations as
    gl_*, types by shape (uint, v4float, _ptr_StorageBuffer_float, _arr_float_uint_4),
    constants by type and value (uint_0, float_n1_5), the number for everything else;
    clashes get `_0`, `_1`, ... suffixes."""

    def __init__(self, module: Module):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.scalars: dict[int, Scalar] = {}
        for inst in module.instructions:
            self.visit(inst)

    def __getitem__(self, id_: int) -> str:
        return self.names.get(id_) or str(id_)

    def save(self, id_: int | None, suggestion: str) -> None:
        if id_ is None or id_ in self.names:
            return
        base = name = _sanitize(suggestion)
        if name in self.used:
            # The first free base_N; N resumes where the last search for this base stopped
            # (names only get taken, never freed), so many clashes stay linear.
            index = self.next_suffix.get(base, 0)
            while (name := f"{base}_{index}") in self.used:
                index += 1
            self.next_suffix[base] = index + 1
        self.used.add(name)
        self.names[id_] = name

    def visit(self, inst: Instruction) -> None:
        op, ops, rid = inst.opcode, inst.operands, inst.result_id
        try:
            if op == Op.Name:
                self.save(ops[0].value, ops[1].value)
            elif op == Op.Decorate and ops[1].value == _BUILTIN_DECORATION:
                builtin = grammar.enumerant_values("BuiltIn").get(ops[2].value)
                if builtin is not None and builtin.name in _BUILTIN_NAMES:
                    self.save(ops[0].value, _BUILTIN_NAMES[builtin.name])
            elif op in (Op.TypeInt, Op.TypeFloat):
                t = scalar_type(inst)
                self.scalars[rid] = t
                if t.kind == "float":
                    self.save(rid, _FRIENDLY_FLOAT.get((t.width, t.encoding), f"fp{t.width}"))
                else:
                    root = _FRIENDLY_INT.get(t.width)
                    prefix = ("" if root else "i") if t.signed else "u"
                    self.save(rid, prefix + (root or str(t.width)))
            else:
                self.save(rid, self.shape_name(inst) or str(rid))
        except (IndexError, TypeError, AttributeError, ValueError):  # malformed: name it by number
            self.save(rid, str(rid))

    def shape_name(self, inst: Instruction) -> str | None:
        op, ops, name = inst.opcode, inst.operands, self.__getitem__
        if op == Op.TypeVoid:
            return "void"
        if op == Op.TypeBool:
            return "bool"
        if op == Op.TypeVector:
            return f"v{ops[1].value}{name(ops[0].value)}"
        if op == Op.TypeMatrix:
            return f"mat{ops[1].value}{name(ops[0].value)}"
        if op == Op.TypeArray:
            return f"_arr_{name(ops[0].value)}_{name(ops[1].value)}"
        if op == Op.TypeRuntimeArray:
            return f"_runtimearr_{name(ops[0].value)}"
        if op == Op.TypePointer:
            return f"_ptr_{_enum_name('StorageClass', ops[0].value)}_{name(ops[1].value)}"
        if op == Op.TypeUntypedPointerKHR:
            return f"_ptr_{_enum_name('StorageClass', ops[0].value)}"
        if op == Op.TypeStruct:
            return f"_struct_{inst.result_id}"
        if op == Op.TypeOpaque:
            return "Opaque_" + _sanitize(ops[0].value)
        if op == Op.ConstantTrue:
            return "true"
        if op == Op.ConstantFalse:
            return "false"
        if op == Op.Constant:
            t = self.scalars.get(inst.result_type)
            text = format_literal(ops[0].value, t, ops[0].nwords).replace("-", "n")
            return f"{name(inst.result_type)}_{text}"
        return None


def _enum_name(kind: str, value: int) -> str:
    e = grammar.enumerant_values(kind).get(value)
    return e.name if e else f"{kind}{value}"
