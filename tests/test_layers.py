"""The layers import one way (DESIGN.md, docs/architecture.md): checked on the real import graph."""

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "src" / "hydroplane"

# layer -> the layers it may import (its own and hydroplane.errors always allowed)
ALLOWED = {
    "errors": set(),
    "spirv": set(),
    "ref": {"spirv"},
    "vk": set(),
    "lang": {"spirv"},
    "kernels": {"lang", "spirv"},
    "isa": set(),
    "launch": {"spirv", "ref", "vk"},
    "launch_commands": {"launch", "spirv", "ref", "vk"},
    "jit": {"lang", "launch", "spirv"},  # launching language kernels sits above lang and launch
    "cli": None,  # the command line sits on top of everything
    "__init__": set(),  # hydroplane.kernel, .func, .coop: loaded lazily from jit and lang by name
    "__main__": {"cli"},
}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_layers(path: Path) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; use absolute hydroplane.* imports")
        for name in names:
            parts = name.split(".")
            if parts[0] == "hydroplane" and len(parts) > 1:
                found.add((parts[1], node.lineno))
    return found


def test_every_layer_is_known():
    for path in PACKAGE.rglob("*.py"):
        assert layer_of(path) in ALLOWED, f"{path} belongs to no layer of ALLOWED"


def test_imports_point_one_way():
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = layer_of(path)
        allowed = ALLOWED[layer]
        if allowed is None:
            continue
        for target, line in imported_layers(path):
            if target in (layer, "errors"):
                continue
            if target not in allowed:
                violations.append(f"{path.relative_to(REPO)}:{line}: {layer} imports {target}")
    assert not violations, "layer violations:\n" + "\n".join(violations)


def test_checker_sees_a_planted_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from hydroplane.vk import devices\n")
    assert ("vk", 2) in imported_layers(bad)
