"""One instruction as text (spirv-dis style) for diagnostics, with OpName names where the module has them."""

from __future__ import annotations

from hydroplane.spirv import grammar


def format_instruction(inst, names: dict[int, str] | None = None) -> str:
    """`%5 = OpFAdd %float %a %b` for a decoded or executor instruction."""
    names = names or {}

    def ident(i: int) -> str:
        return f"%{names[i]}" if names.get(i) else f"%{i}"

    try:
        info = grammar.instruction(inst.opcode)
        name = info.name
    except grammar.GrammarError:
        name = f"Op<{inst.opcode}>"
    parts = []
    if getattr(inst, "result_type", None) is not None:
        parts.append(ident(inst.result_type))
    for o in inst.operands:
        if o.kind.startswith("Id"):
            parts.append(ident(o.value))
        elif isinstance(o.value, str):
            parts.append(f'"{o.value}"')
        else:
            kind = grammar.KINDS.get(o.kind)
            if kind is not None and kind.category == "ValueEnum":
                try:
                    parts.append(grammar.enumerant(o.kind, o.value).name)
                    continue
                except grammar.GrammarError:
                    pass
            parts.append(str(o.value))
    text = " ".join([name, *parts])
    if getattr(inst, "result_id", None) is not None:
        text = f"{ident(inst.result_id)} = {text}"
    return text
