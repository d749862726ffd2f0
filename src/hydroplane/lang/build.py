"""The language compiler's run for one specialization (`Kernel.compile` on a miss of its caches): the module's
builder, the semantics and the code generator over the kernel's Python source, and the `@func` helpers it calls.

lang/compiler.py loads this module (and with it codegen, the semantics and spirv's builder) on the first compile: a
process whose kernels all come from the disk cache (lang/disk_cache.py) does not import them (docs/runtime.md, "The
first call").
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import replace

from hydroplane.lang import core
from hydroplane.lang.codegen import CodeGenerator, Source
from hydroplane.lang.compiler import (
    Func,
    Kernel,
    KernelParam,
    Specialization,
    _annotation,
    _annotation_text,
    _is_constexpr,
    _located,
)
from hydroplane.lang.coop_semantic import CoopSemantic
from hydroplane.lang.errors import SemanticError
from hydroplane.lang.semantic import BufferRef, LocalArray, Value, is_literal
from hydroplane.spirv import grammar, types
from hydroplane.spirv.builder import BuildError, ModuleBuilder, local_size_dims
from hydroplane.spirv.enums import StorageClass
from hydroplane.spirv.target import Target

Op = grammar.Op
# How many helper specializations may be in compilation inside one another (a call chain of @funcs).
HELPER_NESTING_LIMIT = 32
# Python's recursion limit while a kernel compiles: deep enough for NESTING_LIMIT levels of code inside
# HELPER_NESTING_LIMIT helpers, so that our own limits, with located errors, are what a deep kernel meets.
COMPILE_RECURSION_LIMIT = 20000


def build_kernel(kernel_: Kernel, constexprs: dict, target: Target | None = None) -> Specialization:
    """Compile `kernel_` for these constexprs (and target): a SemanticError about the signature is located at the
    def line."""
    source = kernel_.source
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, COMPILE_RECURSION_LIMIT))
    try:
        return _build(kernel_, source, constexprs, target)
    except SemanticError as err:  # about the signature: point at the def line
        raise _located(source, err) from None
    finally:
        sys.setrecursionlimit(previous)


class ModuleCompiler:
    """The state of one module being compiled: builder, semantics, helper functions."""

    def __init__(self, target: Target | None = None):
        self.builder = ModuleBuilder(memory_model="Vulkan")
        self.semantic = CoopSemantic(self.builder, self, target)
        self._functions: dict[tuple, tuple[int, types.Type]] = {}
        self._in_progress: list[tuple] = []  # the keys of the helpers being compiled, outermost first

    # helper functions ----------------------------------------------------------------------------
    def call_function(self, func: Func, args, kwargs):
        """Call a @func helper: compile it for these argument types (once), emit OpFunctionCall."""
        try:
            bound = func.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise SemanticError(f"{func.__name__}(): {err}") from None
        bound.apply_defaults()
        leaves: list[Value] = []
        key = (func, tuple((name, _template(value, leaves)) for name, value in bound.arguments.items()))
        fn_id, result = self.define(func, key, bound.arguments, [v.type for v in leaves])
        call = self.builder.emit(Op.FunctionCall, self.semantic.type_id(result), fn_id, *(v.id for v in leaves))
        return unpack(self.semantic, Value(result, call))

    def define(self, func: Func, key: tuple, arguments: dict, param_types: list[types.Type]):
        """The SPIR-V function of a helper for one specialization key: (function id, return type)."""
        if key in self._functions:
            return self._functions[key]
        if key in self._in_progress:
            raise SemanticError(f"{func.__name__} calls itself: recursion is not supported")
        if len(self._in_progress) >= HELPER_NESTING_LIMIT:
            chain = " -> ".join(k[0].__name__ for k in self._in_progress[-4:])
            raise SemanticError(f"helper calls nest more than {HELPER_NESTING_LIMIT} deep (... {chain} -> "
                                f"{func.__name__}): a @func that calls itself with a compile-time argument that "
                                "changes at every call never ends; recursion is not supported")
        self._in_progress.append(key)
        b = self.builder
        try:
            with b.function_aside():
                fn_id, param_ids = b.function(b.type_void(), [self.semantic.type_id(t) for t in param_types],
                                              name=func.__name__)
                line, col, _ = func.source.location(func.source.tree)
                b.location(func.source.file, line, col)  # its parameters' stores belong to its def line
                b.label()
                ids = iter(param_ids)
                scope = {name: _rebuild(value, ids) for name, value in arguments.items()}
                generator = CodeGenerator(self, func.source, scope, is_kernel=False)
                generator.visit_body(func.source.tree.body)
                result = generator.return_type or types.Void()
                if not generator.terminated:
                    if result != types.Void():
                        generator.node = func.source.tree.body[-1]
                        raise generator.error(f"{func.__name__} can reach its end without a return "
                                              f"(it returns {result} elsewhere)")
                    b.emit(Op.Return)
                b.end_function()
                b.set_return_type(fn_id, self.semantic.type_id(result))
        finally:
            self._in_progress.pop()
        self._functions[key] = (fn_id, result)
        return fn_id, result

    def function_of_types(self, func: Func, params: list):
        """A helper compiled for these parameters (for coop map/reduce callbacks): a type is a run-time
        parameter of the SPIR-V function, anything else a compile-time value bound to the Python one."""
        names = list(func.signature.parameters)
        if len(names) != len(params):
            raise SemanticError(f"{func.__name__} takes {len(names)} parameters, is given {len(params)}")
        arguments = {name: _Placeholder(p) if isinstance(p, types.Type) else p for name, p in zip(names, params)}
        leaves: list[Value] = []
        key = (func, tuple((n, ("value", p) if isinstance(p, types.Type) else _template(p, leaves))
                           for n, p in zip(names, params)))
        return self.define(func, key, arguments, [p for p in params if isinstance(p, types.Type)])

    def pack_return(self, value, expected: types.Type | None) -> Value:
        """A helper's return value as one SPIR-V value (tuples as structs)."""
        if isinstance(value, tuple):
            parts = [self.pack_return(v, None) for v in value]
            struct = types.Struct(tuple(types.Member(p.type) for p in parts))
            packed = Value(struct, self.builder.emit(Op.CompositeConstruct, self.semantic.type_id(struct),
                                                     *(p.id for p in parts)))
        elif is_literal(value):
            packed = self.semantic.coerce(value, expected, "return") if isinstance(expected, types.Scalar) \
                else self.semantic.materialize(value)
        elif isinstance(value, Value):
            packed = value
        elif isinstance(value, LocalArray):
            raise SemanticError("a helper cannot return a local array: arrays pass to helpers by reference, so take "
                                "the caller's array as a parameter and update it in place")
        else:
            raise SemanticError(f"a helper returns run-time values (or tuples of them), not {value!r}")
        if expected is not None and packed.type != expected:
            raise SemanticError(f"this return gives {packed.type}, an earlier one {expected}")
        return packed


class _Placeholder:
    """A run-time parameter known only by its type (function_of_types)."""

    def __init__(self, t: types.Type):
        self.type = t


def _template(value, leaves: list[Value]):
    if isinstance(value, LocalArray):
        if value.slots:
            # An array of matrices goes by reference too, one pointer parameter per slot (each slot is its own
            # Function variable, or a pointer parameter of the caller's): the helper reads, writes and passes on the
            # caller's matrices, and drivers see plain variables once they inline it.
            for slot in value.slots:
                leaves.append(Value(types.Pointer(StorageClass.Function, slot.type), slot.pointer))
            return ("local_matrix_array", value.element, value.length)
        # An array of numbers or vectors goes by reference: the helper reads and writes the caller's variable.
        leaves.append(Value(types.Pointer(StorageClass.Function, types.Array(value.element, value.length)),
                            value.variable))
        return ("local_array", value.element, value.length)
    if isinstance(value, Value):
        leaves.append(value)
        return ("value", value.type)
    if isinstance(value, tuple):
        return ("tuple", tuple(_template(v, leaves) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return ("const", type(value), value)


def _rebuild(value, ids):
    if isinstance(value, LocalArray):
        if value.slots:
            return replace(value, slots=tuple(replace(slot, pointer=next(ids)) for slot in value.slots))
        return replace(value, variable=next(ids))
    if isinstance(value, Value | _Placeholder):
        return Value(value.type, next(ids))
    if isinstance(value, tuple):
        return tuple(_rebuild(v, ids) for v in value)
    return value


def unpack(semantic, value: Value):
    """A helper's result: a struct is a tuple again, void is None."""
    if isinstance(value.type, types.Void):
        return None
    if isinstance(value.type, types.Struct):
        return tuple(unpack(semantic, Value(m.type, semantic.b.emit(Op.CompositeExtract, semantic.type_id(m.type),
                                                                    value.id, i)))
                     for i, m in enumerate(value.type.members))
    return value


def _local_size(kernel_: Kernel, constexprs: dict) -> tuple[int, int, int]:
    size = kernel_.local_size
    if callable(size):
        try:
            size = size(dict(constexprs))
        except Exception as err:
            raise SemanticError(f"local_size({sorted(constexprs)}) failed: {type(err).__name__}: {err}") from None
    if isinstance(size, str):
        if size not in constexprs:
            raise SemanticError(f"local_size names the constexpr {size!r}, which was not given")
        size = constexprs[size]
    try:
        return local_size_dims(size)
    except BuildError as err:
        raise SemanticError(str(err)) from None


def _build(kernel_: Kernel, source: Source, constexprs: dict, target: Target | None) -> Specialization:
    compiler = ModuleCompiler(target)
    b = compiler.builder
    params, scope, push = [], {}, []
    binding = 0
    for p in kernel_.signature.parameters.values():
        ann = _annotation(kernel_, p)
        if _is_constexpr(ann):
            if p.name in constexprs:
                value = constexprs[p.name]
            elif p.default is not inspect.Parameter.empty:
                value = p.default
            else:
                raise SemanticError(f"{kernel_.name}: the constexpr {p.name} needs a value ({p.name}=...)")
            scope[p.name] = value
            params.append(KernelParam(p.name, "constexpr"))
        elif isinstance(ann, core.BufferType):
            element = b.declare(ann.element)
            variable, pointer = b.storage_buffer(element, binding, name=p.name,
                                                 readonly=ann.access is core.Access.readonly)
            if ann.access is core.Access.writeonly:
                b.decorate(variable, "NonReadable")
            scope[p.name] = BufferRef(p.name, ann.element, ann.access.value, binding, variable, pointer)
            params.append(KernelParam(p.name, "buffer", ann.element, ann.access.value, binding))
            binding += 1
        elif isinstance(ann, types.Scalar) and ann.kind != "bool":
            push.append((p.name, ann))
        else:
            given = "it has none" if ann is inspect.Parameter.empty else f"not {_annotation_text(ann)}"
            raise SemanticError(f"parameter {p.name} needs an annotation: Buffer[dtype], a numeric dtype "
                                f"(push constant) or constexpr; {given}")
    unknown = sorted(set(constexprs) - {p.name for p in params if p.kind == "constexpr"})
    if unknown:
        raise SemanticError(f"{kernel_.name} has no constexpr parameter {', '.join(unknown)}")
    local_size = _local_size(kernel_, constexprs)
    compiler.semantic.local_invocations = local_size[0] * local_size[1] * local_size[2]
    main, _ = b.function(b.type_void(), name=kernel_.name)
    b.label()
    push_size = 0
    if push:
        laid = types.Struct(tuple(types.Member(t, name=n) for n, t in push), block=True)
        offsets = types.member_offsets(laid, "std430")
        block = types.Struct(tuple(types.Member(t, offset=o, name=n) for (n, t), o in zip(push, offsets)),
                             block=True, name="PushConstants")
        push_size = types.size(block, "std430")
        variable = b.variable(b.declare(types.Pointer(StorageClass.PushConstant, block)), "PushConstant",
                              name="push")
        for i, ((name, t), offset) in enumerate(zip(push, offsets)):
            pointer = b.emit(Op.AccessChain, b.declare(types.Pointer(StorageClass.PushConstant, t)), variable,
                             b.u32(i))
            scope[name] = Value(t, b.emit(Op.Load, b.declare(t), pointer))
            params.append(KernelParam(name, "scalar", t, offset=offset))
    order = {p.name: i for i, p in enumerate(kernel_.signature.parameters.values())}
    params.sort(key=lambda p: order[p.name])
    generator = CodeGenerator(compiler, source, scope, is_kernel=True,
                              constexpr_names=frozenset(p.name for p in params if p.kind == "constexpr"))
    generator.visit_body(source.tree.body)
    if not generator.terminated:
        b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, "main", local_size=local_size)
    words = b.to_words()
    return Specialization(kernel_.name, words, tuple(params), push_size, local_size,
                          tuple(sorted(constexprs.items())))


__all__ = ["ModuleCompiler", "build_kernel"]
