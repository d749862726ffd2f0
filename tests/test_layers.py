"""The layers import one way (DESIGN.md, docs/architecture.md): checked on the real import graph."""

import ast
import importlib
import os
import subprocess
import sys
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
    # block-quantized weights (QuantizedArray, ggml's formats in NumPy, GGUF files through the gguf package)
    "quant": set(),
    "isa": set(),
    # how anything is dispatched: executors, checks, limits, the jit front kernel[grid](...), `hydroplane run`
    "launch": {"spirv", "ref", "vk", "lang"},
    # what a user calls with arrays (gemm ...): runners, autotuning, caches, commands
    "ops": {"launch", "kernels", "lang", "spirv", "vk", "quant"},
    # whole models (GGUF checkpoints run through the ops)
    "models": {"ops", "quant", "launch", "kernels", "lang", "spirv", "vk"},
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


def module_name(path: Path) -> str:
    """hydroplane.ref.coopmat.ops for src/hydroplane/ref/coopmat/ops.py (a package is its __init__)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(name: str, known: set[str]) -> str | None:
    """The hydroplane module an import names: itself, else its longest known prefix."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def module_imports(path: Path, known: set[str]) -> tuple[set[str], list[str]]:
    """(the hydroplane modules `path` imports at module level, 'line: name' of imports inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top_level, in_functions = set(), []

    def names_of(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import module` imports the module; `from module import name` the module
            return [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                    for a in node.names]
        return []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            for name in names_of(child):
                if not name.startswith("hydroplane.") and name != "hydroplane":
                    continue
                if in_function:
                    in_functions.append(f"{child.lineno}: {name}")
                else:
                    target = resolve(name, known)
                    if target:
                        top_level.add(target)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top_level, in_functions


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    paths = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    known = set(paths)
    graph, local = {}, []
    for name, path in paths.items():
        graph[name], inner = module_imports(path, known)
        graph[name].discard(name)
        local += [f"{path.relative_to(REPO)}:{line}" for line in inner]
    return graph, local


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan), as a sorted list."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_no_import_cycles():
    cycles = import_cycles(import_graph()[0])
    assert not cycles, "import cycles (move the shared code to the module it belongs to):\n" + "\n".join(
        " <-> ".join(group) for group in cycles)


def dynamic_imports(path: Path) -> list[int]:
    """Lines of `importlib.import_module(...)` / `__import__(...)` calls: imports the graph cannot see."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
        or isinstance(node.func, ast.Name) and node.func.id == "__import__")]


def lazy_table(path: Path) -> dict[str, str] | None:
    """A module's `_LAZY = {name: module}` (the names its module-level `__getattr__` loads on first use), or None."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def lazy_loader_lines(path: Path) -> set[int]:
    """Lines of the module-level `__getattr__` (PEP 562) of a module that declares a `_LAZY` table."""
    if lazy_table(path) is None:
        return set()
    tree = ast.parse(path.read_text(), filename=str(path))
    return {line for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for line in range(node.lineno, node.end_lineno + 1)}


def test_no_function_level_imports_of_hydroplane():
    local = import_graph()[1]
    # the command line alone loads each layer's optional commands module by name (cli.COMMAND_MODULES),
    # and the package loads the language's entry points (hydroplane.kernel, .func, .coop) on first use
    # so that `import hydroplane.isa` does not pay for NumPy, ml_dtypes, the grammar and Vulkan; elsewhere a module
    # may load the names of its declared `_LAZY` table in its `__getattr__` (checked by test_lazy_names_point_one_way)
    by_name = (PACKAGE / "cli.py", PACKAGE / "__init__.py")
    local += [f"{path.relative_to(REPO)}:{line}: dynamic import" for path in sorted(PACKAGE.rglob("*.py"))
              if path not in by_name for line in dynamic_imports(path) if line not in lazy_loader_lines(path)]
    assert not local, "hydroplane modules imported inside functions (import at the top):\n" + "\n".join(local)


def test_lazy_names_point_one_way():
    """A `_LAZY` table (names a module loads on first use, so that a process that never uses them does not import
    their modules) names modules of layers its own may import, and each name resolves to that module's object."""
    violations, tables = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        table = lazy_table(path)
        if table is None or path == PACKAGE / "__init__.py":  # the package's own: test_the_package_loads_...
            continue
        tables += 1
        layer, module = layer_of(path), importlib.import_module(module_name(path))
        for name, target in table.items():
            target_layer = target.split(".")[1]
            if target_layer not in (layer, "errors") and target_layer not in ALLOWED[layer]:
                violations.append(f"{path.relative_to(REPO)}: {layer} loads {target} ({name})")
            assert getattr(module, name) is getattr(importlib.import_module(target), name)
    assert tables >= 3
    assert not violations, "layer violations of lazy names:\n" + "\n".join(violations)


def test_a_vulkan_call_path_imports_neither_the_reference_executor_nor_the_text_form():
    """The modules behind hydroplane.matmul, .attention and .device_array on a Vulkan device (docs/perf.md, "The warm
    first call's imports") leave `hydroplane.ref` (the CPU interpreter) and SPIR-V's text form unimported: they load
    when `get_executor("ref")`, `device="ref"` or `.asm()` first asks for them."""
    code = ("import sys, hydroplane\n"
            "hydroplane.device_array, hydroplane.matmul, hydroplane.attention, hydroplane.synchronize\n"
            "import hydroplane.launch, hydroplane.launch.runtime\n"
            "print(sorted(m for m in sys.modules if m.startswith(('hydroplane.ref', 'hydroplane.launch.reference',"
            " 'hydroplane.spirv.assembler', 'hydroplane.spirv.disassembler', 'hydroplane.spirv.text'))))\n"
            "hydroplane.launch.get_executor('ref')\n"
            "print('hydroplane.ref.executor' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "True"]


# Modules a first call whose kernels come from the disk cache never runs: the language compiler proper (lang/build.py,
# the code generator and the semantics), spirv's builder and lowering, and the quantized matmul with its kernels
COMPILE_AND_QUANT_PATH = ("hydroplane.lang.build", "hydroplane.lang.codegen", "hydroplane.lang.semantic",
                          "hydroplane.lang.coop_semantic", "hydroplane.spirv.builder", "hydroplane.spirv.lower",
                          "hydroplane.spirv.requirements", "hydroplane.ops.quant_matmul", "hydroplane.kernels.quant")


def test_the_call_modules_leave_the_compiler_and_the_quantized_path_to_first_use():
    """Importing what hydroplane.matmul, .attention and .device_array need loads neither the compiler proper nor the
    quantized path (docs/runtime.md, "The first call"): they load with a kernel's first compile (a miss of the disk
    cache) and a quantized array's first use; NumPy's masked arrays (numpy.ma) are not loaded by an upload either."""
    code = ("import sys, numpy as np, hydroplane\n"
            "masked_before = 'numpy.ma' in sys.modules\n"
            "hydroplane.device_array, hydroplane.matmul, hydroplane.attention\n"
            f"print(sorted(m for m in sys.modules if m.startswith({COMPILE_AND_QUANT_PATH!r})))\n"
            "x = hydroplane.device_array(np.ones((4, 4), np.float32), 'ref')\n"
            "print(masked_before or 'numpy.ma' not in sys.modules)\n"
            "from hydroplane.kernels.gemm import copy\n"
            "copy.copy_kernel(16)._cache.clear()\n"
            "copy.copy_kernel(16).compile(None, TX=8, TY=8, ROWS=1)\n"
            "print('hydroplane.lang.build' in sys.modules and 'hydroplane.spirv.builder' in sys.modules)\n"
            "hydroplane.device_array(hydroplane.quant.quantize(np.ones((4, 32), np.float32), 'q8_0'), 'ref')\n"
            "print('hydroplane.ops.quant_matmul' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent), "HYDROPLANE_DISK_CACHE": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:4] == ["[]", "True", "True", "True"], proc.stdout


# where the exception classes hydroplane exports come from (issue 23: one hierarchy under HydroplaneError)
ERROR_MODULES = {"hydroplane.errors", "hydroplane.kernels.attention", "hydroplane.kernels.gemm",
                 "hydroplane.launch.checks", "hydroplane.lang.errors", "hydroplane.spirv.binary",
                 "hydroplane.vk.errors", "hydroplane.ref.errors", "hydroplane.ops.nn", "hydroplane.quant",
                 "hydroplane.ops.quant_matmul"}


def test_the_package_loads_only_the_language_by_name():
    import hydroplane

    assert set(hydroplane._LAZY.values()) == {"hydroplane.launch.jit", "hydroplane.lang", "hydroplane.ops.matmul",
                                              "hydroplane.ops.attention", "hydroplane.launch.runtime",
                                              "hydroplane.ops.arrays",
                                              *ERROR_MODULES}
    assert hydroplane.kernel.__module__ == "hydroplane.launch.jit"
    assert hydroplane.coop.__name__ == "hydroplane.lang.coop"


def test_cycle_checker_sees_planted_cycles(tmp_path):
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    planted = tmp_path / "planted.py"
    planted.write_text("from hydroplane.ref import ops\n\ndef f():\n    from hydroplane.vk import memory\n")
    known = {"hydroplane.ref", "hydroplane.ref.ops", "hydroplane.vk", "hydroplane.vk.memory"}
    assert module_imports(planted, known) == ({"hydroplane.ref.ops"}, ["4: hydroplane.vk.memory"])
    planted.write_text("import importlib\n\nfor name in NAMES:\n    importlib.import_module(name)\n")
    assert dynamic_imports(planted) == [4]
