"""Evaluate AMD's encoding-condition expression trees against an instruction's fields.

Trees are the importer's nested tuples (tag, value, children): `op` nodes with an operator
type, `id` names, `lit` numbers, `ty` type annotations (ignored). Operators are a table;
an operator not in it makes the condition unknown (None) rather than guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

UNKNOWN = object()

OPERATORS: dict[str, Callable[[list[Any]], Any]] = {
    ".notwithin": lambda a: a[0] not in a[1],
    ".within": lambda a: a[0] in a[1],
    ".cons_array": lambda a: tuple(a),
    ".eq": lambda a: a[0] == a[1],
    ".ne": lambda a: a[0] != a[1],
    ".and": lambda a: all(a),
    ".or": lambda a: any(a),
    ".not": lambda a: not a[0],
}


def evaluate(tree: Any, field_value: Callable[[str], int | None]) -> bool | None:
    """True/False, or None when the tree uses something this evaluator does not know."""
    if not tree:
        return True
    result = _eval(tree, field_value)
    return None if result is UNKNOWN else bool(result)


def _eval(node: Any, field_value: Callable[[str], int | None]) -> Any:
    tag, value, children = node
    if tag == "lit":
        try:
            return int(value, 0)
        except ValueError:
            return UNKNOWN
    if tag != "op":
        return UNKNOWN
    if value == ".fieldderef":
        names = [c[1] for c in children if c[0] == "id"]
        inner = [c for c in children if c[0] == "op"]
        name = names[-1] if names else None
        if name is None or (not inner and len(names) < 2):
            return UNKNOWN
        found = field_value(name)
        return UNKNOWN if found is None else found
    operator = OPERATORS.get(value)
    if operator is None:
        return UNKNOWN
    args = [_eval(c, field_value) for c in children if c[0] != "ty"]
    if any(a is UNKNOWN for a in args):
        return UNKNOWN
    return operator(args)


def describe(tree: Any) -> str:
    """A one-line text of a condition: 'SRC0 not in [250, 233, 234, 255, 254]'."""
    if not tree:
        return "always"
    tag, value, children = tree
    if tag in ("lit", "id"):
        return value
    kids = [describe(c) for c in children if c[0] != "ty"]
    if value == ".fieldderef":
        return kids[-1]
    if value == ".cons_array":
        return "[" + ", ".join(kids) + "]"
    if value in (".notwithin", ".within") and len(kids) == 2:
        return f"{kids[0]} {'not in' if value == '.notwithin' else 'in'} {kids[1]}"
    return f"{value.lstrip('.')}({', '.join(kids)})"
