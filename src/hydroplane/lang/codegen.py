"""The kernel language's AST visitor: Python syntax -> semantics calls, through tables.

`CodeGenerator` walks one function body (a kernel's or a helper's). Operators map through
dict tables to the semantics' names; statements and expressions it knows have a visit_X
method; `generic_visit` rejects every other node by name. `visit()` is overridden once: it
tracks the node, gives the builder each statement's location (OpLine), skips statements
after a terminator, and turns any stray exception into one `CompilationError` at the node's
file:line:col.

Names: a name assigned at one place only to a compile-time object (a literal, a type, a
function, a tuple of them) stays compile-time; every other local is a Function-storage
variable of one fixed type (loads and stores; the driver makes SSA of them). Parameters that
are reassigned get such a variable too.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
from dataclasses import dataclass, field

from hydroplane.lang import core
from hydroplane.lang.errors import CompilationError, SemanticError
from hydroplane.lang.semantic import SYMBOLS, BufferRef, Local, LocalArray, SharedArray, Value, is_literal
from hydroplane.spirv import grammar, types
from hydroplane.spirv.enums import StorageClass

Op = grammar.Op

BINARY_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
              ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift",
              ast.RShift: "rshift", ast.Pow: "pow"}
COMPARE_OPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
# Compile-time folding of operators on Python values (constexpr arithmetic).
PYTHON_OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift, "pow": operator.pow,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "neg": operator.neg, "pos": operator.pos, "invert": operator.invert, "not": operator.not_,
}
# How deep statements and expressions may nest in one function (a flat chain `a + b + ... + z` of one
# operator is not nesting: it is compiled iteratively). Deeper code is refused with a located error before
# Python's own recursion limit could end the compilation with a RecursionError.
NESTING_LIMIT = 400
# What a memory object is called in a message.
MEMORY_KINDS = {BufferRef: "buffer", SharedArray: "shared array", LocalArray: "local array"}
# Python builtins inside a kernel mean these language builtins.
PYTHON_BUILTINS = {builtins.abs: core.abs_, builtins.min: core.minimum, builtins.max: core.maximum}
# Python conversions inside a kernel: float() is f32 (never a silent f64), int() s32.
PYTHON_CONVERSIONS = {builtins.float: types.F32, builtins.int: types.S32, builtins.bool: types.BOOL}


def _no_source(fn, err: Exception) -> str:
    """Why a function's source cannot be read, and what to do: a kernel is compiled from its source text, which
    Python keeps for files, IPython and Jupyter cells (linecache) and its own REPL from 3.13, but not for code piped
    to `python` on stdin, typed at an older REPL or passed to `python -c` before 3.14."""
    name = getattr(fn, "__name__", fn)
    where = getattr(getattr(fn, "__code__", None), "co_filename", "")
    if where.startswith("<") and where.endswith(">"):
        return (f"the source of {name!r} is not available: it was defined in {where} (code piped to python, typed "
                "at the plain REPL or given to python -c), where Python keeps no source text, and hydroplane "
                "compiles a kernel from its source: define it in a .py file (run or imported), a Jupyter or "
                "IPython cell, or Python 3.13's REPL")
    return f"the source of {name!r} is not available: {err}"


@dataclass
class Source:
    """A Python function's parsed source and where it lives."""

    fn: object
    file: str
    first_line: int
    indent: int
    lines: list[str]
    tree: ast.FunctionDef
    assigned: dict[str, int] = field(default_factory=dict)  # name -> number of places that bind it

    @classmethod
    def of(cls, fn) -> Source:
        try:
            lines, first = inspect.getsourcelines(fn)
            file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as err:
            raise SemanticError(_no_source(fn, err)) from None
        indent = len(lines[0]) - len(lines[0].lstrip())
        tree = ast.parse(textwrap.dedent("".join(lines)))
        fn_def = tree.body[0]
        if not isinstance(fn_def, ast.FunctionDef):
            raise SemanticError(f"{fn!r} is not a def function")
        source = cls(fn, file, first, indent, lines, fn_def)
        for node in ast.walk(fn_def):
            for target in _binding_targets(node):
                for name in _names_in(target):
                    source.assigned[name] = source.assigned.get(name, 0) + 1
        return source

    def location(self, node: ast.AST) -> tuple[int, int, str]:
        """(file line, 1-based column, the source line) of a node."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent + 1
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        return self.first_line + line - 1, col, text

    def globals(self) -> dict:
        scope = dict(getattr(self.fn, "__globals__", {}))
        code, closure = getattr(self.fn, "__code__", None), getattr(self.fn, "__closure__", None) or ()
        if code is not None:
            for name, cell in zip(code.co_freevars, closure):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:
                    pass
        return scope


def _binding_targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
        return [node.target]
    return []


def _names_in(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in _names_in(t)]
    if isinstance(target, ast.Starred):
        return _names_in(target.value)
    return []


@dataclass
class _Loop:
    """A loop being compiled: where `continue` and `break` branch to, and whether a break leaves it."""

    continue_label: int | None  # None: an unrolled loop (no break/continue)
    merge_label: int | None
    broken: bool = False  # a break leaves it


def is_compile_time(x) -> bool:
    """Whether a bound object needs no run-time storage (everything but values and tuples holding them)."""
    if isinstance(x, Value | Local):
        return False
    if isinstance(x, tuple):
        return all(is_compile_time(e) for e in x)
    return True


class CodeGenerator(ast.NodeVisitor):
    """Emits one function body; `compiler` (build.ModuleCompiler) owns the module and helper functions."""

    def __init__(self, compiler, source: Source, scope: dict, *, is_kernel: bool,
                 constexpr_names: frozenset[str] = frozenset()):
        self.compiler = compiler
        self.semantic = compiler.semantic
        self.b = compiler.builder
        self.source = source
        self.globals = source.globals()
        self.locals: dict = {}
        self.is_kernel = is_kernel
        self.loops: list[_Loop] = []
        self.terminated = False
        self.return_type: types.Type | None = None
        self.node: ast.AST = source.tree
        self.constexpr_names = constexpr_names  # a kernel's constexpr parameters: compile-time, never assigned
        self.compile_time = {core.static_assert: self._static_assert, core.static_print: self._static_print,
                             core.constexpr: lambda value: value, builtins.len: self._len,
                             builtins.range: self._range_outside_for, core.static_range: self._range_outside_for,
                             builtins.print: self._print}
        self.depth = 0  # how deep visit() is nested (NESTING_LIMIT)
        self.declared: dict[str, str] = {}  # a run-time local's name -> the source line of its first assignment
        for name, value in scope.items():
            self.bind(name, value, initial=True)

    # the one visit() ---------------------------------------------------------------------------
    def visit(self, node):
        if isinstance(node, ast.stmt) and self.terminated:
            return None  # dead code after return/break/continue
        previous = self.node
        if hasattr(node, "lineno"):
            self.node = node
        self.depth += 1
        try:
            if self.depth > NESTING_LIMIT:
                raise SemanticError(f"the code nests more than {NESTING_LIMIT} levels deep here (expressions inside "
                                    "expressions, blocks inside blocks): split it into named intermediate values")
            if isinstance(node, ast.stmt):
                self.locate(node)
            return super().visit(node)
        except CompilationError:
            raise
        except SemanticError as err:
            raise self.error(str(err)) from None
        except RecursionError:
            raise self.error("the code nests too deep to compile (Python's recursion limit): split it into named "
                             "intermediate values") from None
        except Exception as err:  # a stray exception becomes a located error too
            raise self.error(f"{type(err).__name__}: {err}") from err
        finally:
            self.depth -= 1
            self.node = previous

    def locate(self, node: ast.AST) -> None:
        """The Python file:line:col of what is emitted from now on (the builder writes the OpLines)."""
        line, col, _ = self.source.location(node)
        self.b.location(self.source.file, line, col)

    def error(self, message: str) -> CompilationError:
        line, col, text = self.source.location(self.node)
        return CompilationError(message, self.source.file, line, col, text)

    def generic_visit(self, node):
        raise SemanticError(f"unsupported Python construct: {type(node).__name__} "
                            "(see docs/language.md for what a kernel may contain)")

    def visit_body(self, statements) -> None:
        for statement in statements:
            self.visit(statement)

    # names -----------------------------------------------------------------------------------
    def lookup(self, name: str):
        if name in self.locals:
            return self.locals[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise SemanticError(f"name {name!r} is not defined")

    def read(self, binding):
        """The value of a binding: Locals are loaded, tuples read element by element."""
        if isinstance(binding, Local):
            return self.semantic.load_local(binding)
        if isinstance(binding, tuple):
            return tuple(self.read(b) for b in binding)
        return binding

    def bind(self, name: str, value, initial: bool = False) -> None:
        existing = self.locals.get(name)
        if isinstance(existing, Local):
            if isinstance(value, Value) and value.type != existing.type:
                raise SemanticError(self._retyped(name, existing, value, f"{name} = ..."))
            self.semantic.store_local(existing, value)
            return
        if isinstance(existing, tuple) and not is_compile_time(existing):
            self._store_tuple(name, existing, value)
            return
        if not initial and name in self.constexpr_names:
            raise SemanticError(f"{name} is a constexpr parameter; it cannot be assigned")
        if name in self.constexpr_names:
            self.locals[name] = value
            return
        sites = self.source.assigned.get(name, 0)
        if initial and sites == 0 and not is_compile_time(value):
            self.locals[name] = value  # a parameter never reassigned stays an SSA value
            return
        if is_compile_time(value) and not (is_literal(value) and sites > (0 if initial else 1)):
            self.locals[name] = value
            return
        self.locals[name] = self._new_storage(name, value)

    def _new_storage(self, name: str, value):
        if isinstance(value, tuple):
            return tuple(self._new_storage(f"{name}_{i}", v) for i, v in enumerate(value))
        if not is_literal(value) and is_compile_time(value):
            return value
        value = self.semantic.materialize(value)
        local = self.semantic.local(name, value.type)
        self.semantic.store_local(local, value)
        self.declared.setdefault(name, self.source.location(self.node)[2].strip())
        return local

    def _store_tuple(self, name: str, storage: tuple, value) -> None:
        if not isinstance(value, tuple) or len(value) != len(storage):
            raise SemanticError(f"{name} holds a tuple of {len(storage)}; cannot assign {type(value).__name__}")
        for slot, v in zip(storage, value):
            if isinstance(slot, Local):
                self.semantic.store_local(slot, v)
            elif isinstance(slot, tuple):
                self._store_tuple(name, slot, v)
            elif slot is not v:
                raise SemanticError(f"{name}: a compile-time element of the tuple cannot change")

    # statements ------------------------------------------------------------------------------
    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Assign(self, node: ast.Assign):
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        annotation = self.visit(node.annotation)
        if node.value is None:
            raise SemanticError("a declaration without a value; assign one")
        value = self.visit(node.value)
        if annotation is core.constexpr:
            if not is_compile_time(value):
                raise SemanticError(f"the value of a constexpr must be known at compile time, not {value}")
            self.locals[node.target.id] = value
            return
        if isinstance(annotation, types.Scalar):
            value = self.semantic.coerce(value, annotation, "annotated assignment") if is_literal(value) else value
            if not isinstance(value, Value) or value.type != annotation:
                raise SemanticError(f"the value is {getattr(value, 'type', value)}, the annotation {annotation}")
            if not isinstance(node.target, ast.Name):
                raise SemanticError("annotate a plain name")
            name = node.target.id
            if name not in self.locals:
                self.locals[name] = self._new_storage(name, value)
                return
        self.assign(node.target, value)

    def assign(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value)
        elif isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise SemanticError(f"cannot unpack {type(value).__name__} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            self.store_subscript(target, value)
        else:
            raise SemanticError(f"cannot assign to {type(target).__name__}")

    def visit_AugAssign(self, node: ast.AugAssign):
        op = BINARY_OPS.get(type(node.op))
        if op is None:
            raise SemanticError(f"unsupported operator {type(node.op).__name__}")
        if isinstance(node.target, ast.Subscript):
            container, index = self.subscript_parts(node.target)
            current = self.load_subscript(container, index)
            self.store_into(container, index, self.operate(op, current, self.visit(node.value)))
            return
        if not isinstance(node.target, ast.Name):
            raise SemanticError(f"cannot assign to {type(node.target).__name__}")
        name = node.target.id
        binding = self.lookup(name)
        current, value = self.read(binding), self.visit(node.value)
        if isinstance(binding, Local) and isinstance(value, Value) and value.type != binding.type \
                and not isinstance(value.type, types.Vector | types.CoopMatrix):
            raise SemanticError(self._retyped(name, binding, value, f"{name} {SYMBOLS[op]}= ..."))
        self.bind(name, self.operate(op, current, value))

    def _retyped(self, name: str, local: Local, value: Value, what: str) -> str:
        """The message for a value of another type meeting a variable (its type is its first assignment's)."""
        first = self.declared.get(name)
        made = f" (its first assignment `{first}` made it one)" if first else ""
        start = f"{name} = 0.0" if value.type == types.F32 else f"{name} = {value.type}(0)"
        return (f"{what}: {name} is a {local.type}{made} and the value is a {value.type}; a variable keeps the type "
                f"of its first assignment: start it as `{start}` to make it a {value.type}, or convert the value "
                f"({local.type}(...))")

    def visit_If(self, node: ast.If):
        test = self.visit(node.test)
        if is_compile_time(test):  # a constexpr condition: only the branch taken is compiled
            self.visit_body(node.body if test else node.orelse)
            return
        cond = self.semantic.condition(test, "an if condition")
        then_label, merge = self.b.id(), self.b.id()
        else_label = self.b.id() if node.orelse else merge
        self.b.emit(Op.SelectionMerge, merge, "None")
        self.b.emit(Op.BranchConditional, cond.id, then_label, else_label)
        ends = []
        for label, body in ((then_label, node.body), (else_label, node.orelse)):
            if label == merge:
                ends.append(False)
                continue
            self.b.label(label)
            self.terminated = False
            self.visit_body(body)
            ends.append(self.terminated)
            if not self.terminated:
                self.b.emit(Op.Branch, merge)
        self.b.label(merge)
        self.terminated = False
        if all(ends):
            self.b.emit(Op.Unreachable)
            self.terminated = True

    def _loop(self, condition, body, step=None, endless: bool = False) -> None:
        """A structured loop: header, condition block, body, continue block (step), merge.

        An endless loop (`while True`) that no break leaves ends the block: its merge is unreachable."""
        header, cond_label, body_label, continue_label, merge = (self.b.id() for _ in range(5))
        self.b.emit(Op.Branch, header)
        self.b.label(header)
        self.b.emit(Op.LoopMerge, merge, continue_label, "None")
        self.b.emit(Op.Branch, cond_label)
        self.b.label(cond_label)
        self.locate(self.node)  # the loop's own line for its condition and step
        test = condition()
        self.b.emit(Op.BranchConditional, test.id, body_label, merge)
        self.b.label(body_label)
        loop = _Loop(continue_label, merge)
        self.loops.append(loop)
        self.terminated = False
        try:
            self.visit_body(body)
        finally:
            self.loops.pop()
        if not self.terminated:
            self.b.emit(Op.Branch, continue_label)
        self.b.label(continue_label)
        self.terminated = False
        self.locate(self.node)
        if step is not None:
            step()
        self.b.emit(Op.Branch, header)
        self.b.label(merge)
        self.terminated = False
        if endless and not loop.broken:
            self.b.emit(Op.Unreachable)
            self.terminated = True

    def visit_While(self, node: ast.While):
        if node.orelse:
            raise SemanticError("while ... else is not supported")

        endless = isinstance(node.test, ast.Constant) and node.test.value is True

        def condition():
            test = self.visit(node.test)
            if is_compile_time(test):
                return self.semantic.constant(bool(test), types.BOOL)
            return self.semantic.condition(test, "a while condition")

        self._loop(condition, node.body, endless=endless)

    def visit_For(self, node: ast.For):
        if node.orelse:
            raise SemanticError("for ... else is not supported")
        iterable = node.iter
        callee = self.visit(iterable.func) if isinstance(iterable, ast.Call) else None
        if callee is core.static_range:
            args = [self.visit(a) for a in iterable.args]
            if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
                raise SemanticError("static_range needs constexpr int bounds")
            self._unrolled(node, range(*args))
            return
        if callee is builtins.range:
            self._range_loop(node, [self.visit(a) for a in iterable.args])
            return
        values = self.visit(iterable)
        if isinstance(values, tuple):
            self._unrolled(node, values)
            return
        raise SemanticError("a for loop iterates over range(...), static_range(...) or a tuple")

    def _unrolled(self, node: ast.For, values) -> None:
        self.loops.append(_Loop(None, None))
        try:
            for value in values:
                self.assign_compile_time(node.target, value)
                self.visit_body(node.body)
                if self.terminated:
                    break
        finally:
            self.loops.pop()

    def assign_compile_time(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.locals[target.id] = value
        else:
            self.assign(target, value)

    def _range_loop(self, node: ast.For, args: list) -> None:
        if not 1 <= len(args) <= 3:
            raise SemanticError(f"range() takes 1 to 3 arguments, not {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        typed = [a for a in (start, stop, step) if isinstance(a, Value)]
        counter_type = typed[0].type if typed else types.S32
        if not (isinstance(counter_type, types.Scalar) and counter_type.kind == "int"):
            raise SemanticError(f"range() bounds must be integers, not {counter_type}")
        for bound in (start, stop, step):
            if not isinstance(bound, int | Value) or isinstance(bound, bool):
                raise SemanticError(f"range() bounds must be integers, not {bound!r}")
        if isinstance(step, int) and step == 0:
            raise SemanticError("range() step must not be zero")
        stop_value = self.semantic.coerce(stop, counter_type, "range() stop")
        step_value = self.semantic.coerce(step, counter_type, "range() step")
        if not isinstance(node.target, ast.Name):
            raise SemanticError("a range loop binds one name")
        name = node.target.id
        counter = self.locals.get(name)
        if not isinstance(counter, Local) or counter.type != counter_type:
            counter = self.semantic.local(name, counter_type)
        self.semantic.store_local(counter, self.semantic.coerce(start, counter_type, "range() start"))
        self.locals[name] = counter
        comparison = "gt" if isinstance(step, int) and step < 0 else "lt"

        def condition():
            return self.semantic.compare(comparison, self.semantic.load_local(counter), stop_value)

        def advance():
            self.semantic.store_local(counter, self.semantic.binary("add", self.semantic.load_local(counter),
                                                                    step_value))

        self._loop(condition, node.body, advance)

    def _innermost_loop(self, what: str) -> _Loop:
        if not self.loops:
            raise SemanticError(f"{what} outside a loop")
        loop = self.loops[-1]
        if loop.continue_label is None:
            raise SemanticError(f"{what} in an unrolled (static_range or tuple) loop is not supported")
        return loop

    def visit_Break(self, node):
        loop = self._innermost_loop("break")
        loop.broken = True
        self.b.emit(Op.Branch, loop.merge_label)
        self.terminated = True

    def visit_Continue(self, node):
        self.b.emit(Op.Branch, self._innermost_loop("continue").continue_label)
        self.terminated = True

    def visit_Return(self, node: ast.Return):
        value = None if node.value is None else self.visit(node.value)
        if self.is_kernel:
            if value is not None:
                raise SemanticError("a kernel returns nothing; write results into a buffer")
            self.b.emit(Op.Return)
        elif value is None:
            if self.return_type not in (None, types.Void()):
                raise SemanticError(f"this function returns {self.return_type} elsewhere; return a value here too")
            self.return_type = types.Void()
            self.b.emit(Op.Return)
        else:
            result = self.compiler.pack_return(value, self.return_type)
            self.return_type = result.type
            self.b.emit(Op.ReturnValue, result.id)
        self.terminated = True

    # expressions -----------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant):
        return node.value

    def visit_Name(self, node: ast.Name):
        return self.read(self.lookup(node.id))

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, Value):
            if node.attr in ("type", "dtype"):
                return base.type
            raise SemanticError(f"a {base.type} value has no attribute {node.attr!r} (only .type)")
        memory = MEMORY_KINDS.get(type(base))
        if memory is not None:
            raise SemanticError(f"a {memory} has no attribute or method {node.attr!r}: it takes x[i] and x[i] = v, "
                                "len(x), the atomic_* builtins (atomic_add(x, i, v)) and coop.load / coop.store")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            what = base.__name__ if isinstance(base, type(builtins)) else type(base).__name__
            raise SemanticError(f"{what} has no attribute {node.attr!r}") from None

    def operate(self, op: str, lhs, rhs):
        if is_compile_time(lhs) and is_compile_time(rhs):
            return PYTHON_OPERATORS[op](lhs, rhs)
        if isinstance(lhs, tuple) or isinstance(rhs, tuple):
            return self._tuple_operation(op, lhs, rhs)
        return self.semantic.binary(op, lhs, rhs)

    @staticmethod
    def _tuple_operation(op: str, lhs, rhs) -> tuple:
        """Tuples holding run-time values concatenate (`t + (m,)`) and repeat by a constexpr int (`(m,) * 4`),
        as in Python: the result is a compile-time tuple of the same values (a GEMM's accumulators)."""
        if op == "add" and isinstance(lhs, tuple) and isinstance(rhs, tuple):
            return lhs + rhs
        count = rhs if isinstance(lhs, tuple) else lhs
        if op == "mul" and isinstance(count, int) and not isinstance(count, bool):
            return (lhs if isinstance(lhs, tuple) else rhs) * count
        raise SemanticError(f"{SYMBOLS.get(op, op)} of a tuple: tuples take + (another tuple) and "
                            "* (a constexpr int) only")

    def visit_BinOp(self, node: ast.BinOp):
        """A left-nested chain (`a + b - c * d + ...`) is compiled iteratively, left to right, so a long flat
        expression does not nest visit() once per operator."""
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        value = self.visit(chain[-1].left)
        for link in reversed(chain):
            self.node = link
            op = BINARY_OPS.get(type(link.op))
            if op is None:
                raise SemanticError(f"unsupported operator {type(link.op).__name__}")
            right = self.visit(link.right)
            self.node = link
            value = self.operate(op, value, right)
        return value

    def visit_UnaryOp(self, node: ast.UnaryOp):
        op = UNARY_OPS[type(node.op)]
        operand = self.visit(node.operand)
        if is_compile_time(operand):
            return PYTHON_OPERATORS[op](operand)
        if op == "not":
            self.semantic.condition(operand, "the operand of not")
        return self.semantic.unary(op, operand)

    def visit_Compare(self, node: ast.Compare):
        left = self.visit(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            op = COMPARE_OPS.get(type(op_node))
            if op is None:
                raise SemanticError(f"unsupported comparison {type(op_node).__name__}")
            right = self.visit(right_node)
            if is_compile_time(left) and is_compile_time(right):
                part = PYTHON_OPERATORS[op](left, right)
            else:
                part = self.semantic.compare(op, left, right)
            result = part if result is None else self.operate("and", result, part)
            left = right
        return result

    def visit_BoolOp(self, node: ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        value = self.visit(node.values[0])
        for operand in node.values[1:]:
            if is_compile_time(value):
                if bool(value) != is_and:  # decided: False for and, True for or
                    return value
                value = self.visit(operand)
                continue
            value = self._short_circuit(value, operand, is_and)
        return value

    def _short_circuit(self, left, right_node, is_and: bool) -> Value:
        left = self.semantic.condition(left, "an operand of and/or")
        result = self.semantic.local("bool_op", types.BOOL)
        self.semantic.store_local(result, left)
        rhs_label, merge = self.b.id(), self.b.id()
        self.b.emit(Op.SelectionMerge, merge, "None")
        targets = (rhs_label, merge) if is_and else (merge, rhs_label)
        self.b.emit(Op.BranchConditional, left.id, *targets)
        self.b.label(rhs_label)
        right = self.visit(right_node)
        right = self.semantic.constant(bool(right), types.BOOL) if is_compile_time(right) else \
            self.semantic.condition(right, "an operand of and/or")
        self.semantic.store_local(result, right)
        self.b.emit(Op.Branch, merge)
        self.b.label(merge)
        return self.semantic.load_local(result)

    def visit_IfExp(self, node: ast.IfExp):
        test = self.visit(node.test)
        if is_compile_time(test):
            return self.visit(node.body if test else node.orelse)
        return self.semantic.select(test, self.visit(node.body), self.visit(node.orelse))

    # subscripts ------------------------------------------------------------------------------
    def subscript_parts(self, node: ast.Subscript):
        if isinstance(node.value, ast.Name):
            container = self.lookup(node.value.id)
        else:
            container = self.visit(node.value)
        index = self.visit(node.slice)
        return container, index

    def visit_Subscript(self, node: ast.Subscript):
        container, index = self.subscript_parts(node)
        return self.load_subscript(container, index)

    def load_subscript(self, container, index):
        if isinstance(container, BufferRef | SharedArray | LocalArray):
            return self.semantic.load(container, index)
        if isinstance(container, Local):
            if isinstance(index, int) or not isinstance(container.type, types.CoopMatrix | types.Vector):
                return self.semantic.extract(self.semantic.load_local(container), index)
            pointer = self._element_pointer(container, index)
            comp = container.type.component
            return Value(comp, self.b.emit(Op.Load, self.semantic.type_id(comp), pointer))
        if isinstance(container, Value):
            return self.semantic.extract(container, index)
        if isinstance(container, tuple):
            if not isinstance(index, int):
                raise SemanticError("a tuple is indexed by a constexpr int")
            return self.read(container[index])
        try:
            return container[index]  # compile-time: Buffer[f32], coop.Matrix[...], a constexpr tuple ...
        except SemanticError:
            raise
        except Exception as err:
            raise SemanticError(f"cannot index {type(container).__name__}: {err}") from None

    def _element_pointer(self, local: Local, index) -> int:
        comp = local.type.component
        pointer_type = self.semantic.type_id(types.Pointer(StorageClass.Function, comp))
        return self.b.emit(Op.AccessChain, pointer_type, local.pointer, self.semantic.index(index).id)

    def store_subscript(self, node: ast.Subscript, value) -> None:
        container, index = self.subscript_parts(node)
        self.store_into(container, index, value)

    def store_into(self, container, index, value) -> None:
        if isinstance(container, BufferRef | SharedArray | LocalArray):
            self.semantic.store(container, index, value)
        elif isinstance(container, Local) and isinstance(container.type, types.CoopMatrix | types.Vector):
            element = self.semantic.coerce(value, container.type.component, "element store")
            self.b.emit(Op.Store, self._element_pointer(container, index), element.id)
        else:
            raise SemanticError(f"cannot store into an element of {type(container).__name__}; "
                                "buffers, shared arrays and vector or matrix variables take element stores")

    # calls -----------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call):
        callee = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.visit(a.value)
                if not isinstance(value, tuple):
                    raise SemanticError("only tuples can be unpacked with *")
                args.extend(value)
            else:
                args.append(self.visit(a))
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
        if any(k.arg is None for k in node.keywords):
            raise SemanticError("**kwargs in a call is not supported")
        return self.call(callee, args, kwargs)

    def call(self, callee, args, kwargs):
        try:
            return self._call(callee, args, kwargs)
        finally:
            self.locate(self.node)  # a helper compiled meanwhile set its own locations

    def _call(self, callee, args, kwargs):
        callee = PYTHON_BUILTINS.get(callee, callee) if _hashable(callee) else callee
        if _hashable(callee) and callee in self.compile_time:
            return self.compile_time[callee](*args, **kwargs)
        if getattr(callee, "__hydroplane_builtin__", False):
            return callee(*args, _semantic=self.semantic, **kwargs)
        if _hashable(callee) and callee in PYTHON_CONVERSIONS:
            callee = PYTHON_CONVERSIONS[callee]
        if isinstance(callee, types.Scalar):
            if len(args) != 1 or kwargs:
                raise SemanticError(f"{callee}(x) converts one value")
            return self.semantic.convert(args[0], callee)
        if getattr(callee, "__hydroplane_func__", False):
            return self.compiler.call_function(callee, args, kwargs)
        if callable(callee) and all(is_compile_time(a) for a in (*args, *kwargs.values())):
            return callee(*args, **kwargs)  # plain Python on compile-time values (constexpr arithmetic)
        name = getattr(callee, "__name__", repr(callee))
        raise SemanticError(f"{name}() is not a kernel builtin or @func helper, and it got run-time values")

    # compile-time helpers --------------------------------------------------------------------
    def _static_assert(self, condition, message: str = ""):
        if not is_compile_time(condition):
            raise SemanticError("static_assert needs a compile-time condition")
        if not condition:
            raise SemanticError(f"static_assert failed{': ' + message if message else ''}")

    def _static_print(self, *values):
        print(*(v.type if isinstance(v, Value) else v for v in values))

    def _print(self, *values, **options):
        raise SemanticError("print() does not run on the GPU: a kernel cannot print at run time; write the values "
                            "into a buffer to see them, or use static_print(...) to print compile-time values "
                            "(and the types of run-time ones) while compiling")

    def _len(self, x):
        if isinstance(x, BufferRef):
            return self.semantic.bitcast(self.semantic.array_length(x), types.S32)
        if isinstance(x, SharedArray | LocalArray):
            return x.length
        if isinstance(x, Value) and isinstance(x.type, types.Vector):
            return x.type.count
        if isinstance(x, Value) and isinstance(x.type, types.CoopMatrix):
            return self.semantic.coop_length(x.type)
        return len(x)

    def _range_outside_for(self, *args):
        raise SemanticError("range()/static_range() only in a for statement")


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True
