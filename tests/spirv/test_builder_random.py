"""Randomly composed modules: whatever mix of scalar types and storage classes, the derived
capabilities and extensions make a module spirv-val accepts, and none is left over.

Each module reads one value of each chosen type from a chosen storage class (storage buffer,
uniform buffer, push-constant block member, workgroup/private/function variable), converts
it to f32, sums and stores the sum. Seeded, so a failure names its seed.
"""

from __future__ import annotations

import random

import pytest

from hydroplane.spirv import Op, decode, grammar, validate
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.types import scalar as scalar_info

TYPES = ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "f16", "bf16", "f32", "f64"]
STORAGE = ["StorageBuffer", "Uniform", "PushConstant", "Workgroup", "Private", "Function"]
# capabilities a scalar type brings whatever its storage (bf16's comes from its FPEncoding)
TYPE_CAPABILITY = {8: "Int8", 16: "Int16", 64: "Int64"}
FLOAT_CAPABILITY = {16: "Float16", 64: "Float64"}
NARROW_STORAGE = {("StorageBuffer", 8): "StorageBuffer8BitAccess", ("StorageBuffer", 16): "StorageBuffer16BitAccess",
                  ("Uniform", 8): "UniformAndStorageBuffer8BitAccess",
                  ("Uniform", 16): "UniformAndStorageBuffer16BitAccess",
                  ("PushConstant", 8): "StoragePushConstant8", ("PushConstant", 16): "StoragePushConstant16"}


def _to_f32(b: ModuleBuilder, name: str, value: int, f32: int) -> int:
    info = scalar_info(name)
    if name == "f32":
        return value
    if info.kind == "float":
        return b.emit(Op.FConvert, f32, value)
    return b.emit(Op.ConvertSToF if info.signed else Op.ConvertUToF, f32, value)


def random_module(rng: random.Random, version: tuple[int, int]):
    """(words, expected capability names) for a random choice of types and storage classes."""
    b = ModuleBuilder(version)
    f32 = b.scalar("f32")
    chosen = [(rng.choice(TYPES), rng.choice(STORAGE)) for _ in range(rng.randint(1, 5))]
    out, out_ptr = b.storage_buffer(f32, binding=0, name="out")
    expected = {"Shader"}
    sources = []  # (type name, pointer-producing callable)
    push_members = []
    binding = 1
    for name, storage in chosen:
        elem = b.scalar(name)
        info = scalar_info(name)
        if info.encoding is not None and info.encoding.name == "BFloat16KHR":
            expected.add("BFloat16TypeKHR")
        elif info.kind == "float":
            expected.add(FLOAT_CAPABILITY.get(info.width, "Shader"))
        else:
            expected.add(TYPE_CAPABILITY.get(info.width, "Shader"))
        narrow = NARROW_STORAGE.get((storage, info.width))
        if narrow:
            expected.add(narrow)
        if storage in ("StorageBuffer", "Uniform"):
            block = b.type_struct(elem, offsets=[0], block=True)
            var = b.variable(b.type_pointer(storage, block), storage)
            b.decorate(var, "DescriptorSet", 0)
            b.decorate(var, "Binding", binding)
            binding += 1
            sources.append((name, lambda var=var, storage=storage, elem=elem:
                            b.emit(Op.AccessChain, b.type_pointer(storage, elem), var, b.u32(0))))
        elif storage == "PushConstant":
            push_members.append((name, elem, len(push_members)))
        elif storage == "Function":
            sources.append((name, lambda elem=elem: b.variable(b.type_pointer("Function", elem), "Function")))
        else:
            var = b.variable(b.type_pointer(storage, elem), storage)
            sources.append((name, lambda var=var: var))
    if push_members:
        # widest first keeps every member naturally aligned without padding questions
        push_members.sort(key=lambda m: -scalar_info(m[0]).width)
        block = b.type_struct(*(m[1] for m in push_members), offsets="std430", block=True)
        push = b.variable(b.type_pointer("PushConstant", block), "PushConstant")
        for index, (name, elem, _) in enumerate(push_members):
            sources.append((name, lambda index=index, elem=elem:
                            b.emit(Op.AccessChain, b.type_pointer("PushConstant", elem), push, b.u32(index))))

    main, _ = b.function(b.type_void())
    b.label()
    total = b.constant(f32, 0.0)
    for name, pointer in sources:
        ptr = pointer()
        value = b.emit(Op.Load, b.scalar(name), ptr)
        total = b.emit(Op.FAdd, f32, total, _to_f32(b, name, value, f32))
    b.emit(Op.Store, b.emit(Op.AccessChain, out_ptr, out, b.u32(0), b.u32(0)), total)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    return b.to_words(), expected, chosen


def _minimal(expected: set[str]) -> set[str]:
    if "UniformAndStorageBuffer16BitAccess" in expected:
        expected.discard("StorageBuffer16BitAccess")
    if "UniformAndStorageBuffer8BitAccess" in expected:
        expected.discard("StorageBuffer8BitAccess")
    return expected


@pytest.mark.tools
@pytest.mark.parametrize("seed", range(40))
def test_random_module_validates_with_exactly_the_derived_capabilities(spirv_val, seed):
    rng = random.Random(seed)
    version, env = rng.choice([((1, 6), "vulkan1.3"), ((1, 5), "vulkan1.2"), ((1, 3), "vulkan1.1")])
    words, expected, chosen = random_module(rng, version)
    validate(words, env)
    module = decode(words)
    declared = {grammar.enumerant("Capability", i.operands[0].value).name
                for i in module.instructions if i.opcode == Op.Capability}
    assert declared == _minimal(expected), chosen
    extensions = {i.operands[0].value for i in module.instructions if i.opcode == Op.Extension}
    widths = {(storage, scalar_info(name).width) for name, storage in chosen}
    wanted = set()
    if any("bf16" == name for name, _ in chosen):
        wanted.add("SPV_KHR_bfloat16")
    if version < (1, 5) and any(w == 8 and s in ("StorageBuffer", "Uniform", "PushConstant") for s, w in widths):
        wanted.add("SPV_KHR_8bit_storage")
    assert extensions == wanted, chosen
