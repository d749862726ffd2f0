"""types.py's layouts checked through memory: a shader writes every scalar of random std140, std430 and
scalar storage blocks, on the reference executor and on lavapipe, and the bytes must be exactly those
our layout predicts; and a shader reads every scalar of uniform blocks and push constants filled at the
offsets our layout gives.

Each block (tests/spirv/layout_blocks.py: scalars of every width, vectors, row- and column-major
matrices, arrays, nested structs, runtime-array tails) gets a distinct random value in each scalar,
written element by element from GLSL compiled by glslang. The buffers start as 0xA5 bytes; the expected
bytes place each value at the offset `types.laid_out(block, rule)` gives it, and every other byte
(padding, the tail past the block) must still be 0xA5.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from layout_blocks import (
    HEADER,
    BlockMaker,
    block_type,
    compile_glsl,
    every_shape_block,
    glsl_type_name,
    leaves,
    random_value,
    render_block,
    render_shader,
)

from hydroplane.launch import executors as launch
from hydroplane.spirv import reflect, types
from hydroplane.spirv.types import LAYOUT_RULES

BLOCKS_PER_SHADER = 6
SEEDS = 8
TAIL = 32  # bytes past the block's end that must stay poisoned
POISON = 0xA5


def _case(rule: types.LayoutRule, seed: int) -> tuple[str, list, dict[int, bytes], dict[int, str]]:
    """(GLSL source, blocks, {binding: expected bytes}, {binding: the block's GLSL}) of one random case."""
    maker = BlockMaker(1000 + seed * 7 + LAYOUT_RULES.index(rule))
    rng = random.Random(seed)
    blocks = [every_shape_block(rule)] + [maker.block("buffer", rule, binding=i) for i in range(1, BLOCKS_PER_SHADER)]
    body, expected, texts = [], {}, {}
    for b in blocks:
        laid = types.laid_out(block_type(b), rule)
        found = list(leaves(laid, b.instance))
        end = max([types.size(laid, rule)] + [leaf.offset + leaf.scalar.nbytes for leaf in found])
        memory = np.full(-(-(end + TAIL) // 16) * 16, POISON, np.uint8)
        written = np.zeros(memory.size, bool)
        for leaf in found:
            literal, data = random_value(rng, leaf.scalar)
            span = slice(leaf.offset, leaf.offset + len(data))
            assert not written[span].any(), f"our layout overlaps {leaf.access} with another member in {b}"
            written[span] = True
            memory[span] = np.frombuffer(data, np.uint8)
            body.append(f"    {leaf.access} = {literal};\n")
        expected[b.binding] = memory.tobytes()
        texts[b.binding] = render_block(b)
    return render_shader(blocks, "".join(body)), blocks, expected, texts


_WORDS: dict[str, bytes] = {}


def _run(rule, seed, tmp_path, **where) -> None:
    source, blocks, expected, texts = _case(rule, seed)
    if source not in _WORDS:
        _WORDS[source] = compile_glsl(source, tmp_path)
    buffers = {b: launch.RawBytes(np.full(len(data), POISON, np.uint8)) for b, data in expected.items()}
    out = launch.run(_WORDS[source], (1, 1, 1), buffers, **where)
    for binding, data in expected.items():
        got = out[binding].tobytes()
        if got != data:
            wrong = [i for i in range(len(data)) if got[i] != data[i]]
            pytest.fail(f"{rule} block {texts[binding]}: {len(wrong)} bytes differ, first at {wrong[:8]}: "
                        f"got {got[wrong[0]:wrong[0] + 8].hex()} expected {data[wrong[0]:wrong[0] + 8].hex()}\n"
                        f"{source}")


@pytest.mark.parametrize("rule", LAYOUT_RULES)
@pytest.mark.parametrize("seed", range(SEEDS))
def test_writes_land_where_our_layout_says_on_the_reference_executor(rule, seed, tmp_path):
    _run(rule, seed, tmp_path, device="ref")


@pytest.fixture(scope="module")
def lavapipe():
    ex = launch.get_executor(0)
    yield ex
    ex.close()


@pytest.mark.vulkan
@pytest.mark.parametrize("rule", LAYOUT_RULES)
@pytest.mark.parametrize("seed", range(SEEDS))
def test_writes_land_where_our_layout_says_on_lavapipe(rule, seed, tmp_path, lavapipe):
    _run(rule, seed, tmp_path, executor=lavapipe)


def test_the_cases_cover_every_shape_the_issue_names():
    """The cases hold row- and column-major mat2/mat3/mat4, arrays of vectors and of structs, nested structs
    and runtime arrays under every rule (so a passing run means something)."""
    for rule in LAYOUT_RULES:
        seen = set()
        for seed in range(SEEDS):
            for b in _case(rule, seed)[1]:
                _shapes(types.laid_out(block_type(b), rule), seen, depth=0)
        wanted = {("matrix", n, major) for n in (2, 3, 4) for major in (False, True)}
        wanted |= {"array of vectors", "array of structs", "nested struct", "runtime array"}
        assert wanted <= seen, f"{rule}: no case has {sorted(map(str, wanted - seen))}"


def _shapes(t, seen: set, depth: int, row_major: bool = False) -> None:
    if isinstance(t, types.Matrix):
        if t.rows == t.columns:
            seen.add(("matrix", t.rows, row_major))
    elif isinstance(t, types.Array):
        if t.length is None:
            seen.add("runtime array")
        if isinstance(t.element, types.Vector):
            seen.add("array of vectors")
        if isinstance(t.element, types.Struct):
            seen.add("array of structs")
        _shapes(t.element, seen, depth, row_major)
    elif isinstance(t, types.Struct):
        if depth >= 2:
            seen.add("nested struct")
        for m in t.members:
            _shapes(m.type, seen, depth + 1, m.row_major)


# ------------------------------------------------------------------------------------------------
# Reads: uniform blocks and push constants filled by our layout, every scalar copied out in order

PUSH_LIMIT = 128  # maxPushConstantsSize every Vulkan device offers


def _read_case(rule: types.LayoutRule, seed: int, storage: str):
    """(source, {binding: block bytes}, push bytes or None, {output binding: expected values}, what)."""
    maker = BlockMaker(5000 + seed * 7 + LAYOUT_RULES.index(rule), max_fields=4)
    rng = random.Random(seed)
    if storage == "push_constant":
        blocks = [maker.block(storage, rule)]
        while types.size(types.laid_out(block_type(blocks[0]), rule)) > PUSH_LIMIT:
            blocks = [maker.block(storage, rule)]
    else:
        blocks = [maker.block(storage, rule, binding=i) for i in range(3)]
    inputs, outputs, body = {}, {}, []
    for b in blocks:
        laid = types.laid_out(block_type(b), rule)
        # push constants: exactly the block's size; a uniform buffer: whole 16-byte rows
        nbytes = types.size(laid) if storage == "push_constant" else -(-types.size(laid) // 16) * 16
        memory = np.full(nbytes, POISON, np.uint8)
        for leaf in leaves(laid, b.instance):
            _, data = random_value(rng, leaf.scalar)
            memory[leaf.offset:leaf.offset + len(data)] = np.frombuffer(data, np.uint8)
            values = outputs.setdefault(leaf.scalar, [])
            body.append(f"    out_{leaf.scalar.name}.v[{len(values)}] = {leaf.access};\n")
            values.append(data)
        inputs[b.binding] = memory
    out_bindings = {t: 10 + i for i, t in enumerate(outputs)}
    decls = "".join(f"layout(std430, set = 0, binding = {out_bindings[t]}) buffer O_{t.name} "
                    f"{{ {glsl_type_name(t)} v[]; }} out_{t.name};\n" for t in outputs)
    source = render_shader(blocks, "".join(body)).replace("void main()", decls + "void main()")
    expected = {out_bindings[t]: np.frombuffer(b"".join(v), t.dtype) for t, v in outputs.items()}
    push = inputs.pop(0) if storage == "push_constant" else None
    return source, inputs, push, expected, "\n".join(render_block(b) for b in blocks)


def _run_reads(rule, seed, storage, tmp_path, **where) -> None:
    source, inputs, push, expected, what = _read_case(rule, seed, storage)
    if source not in _WORDS:
        _WORDS[source] = compile_glsl(source, tmp_path)
    buffers = {b: launch.RawBytes(data) for b, data in inputs.items()}
    buffers.update({b: np.full(v.nbytes, POISON, np.uint8).view(v.dtype) for b, v in expected.items()})
    out = launch.run(_WORDS[source], (1, 1, 1), buffers, push=push, **where)
    for binding, values in expected.items():
        got = out[binding].view(np.uint8)
        assert got.tobytes() == values.tobytes(), f"{rule} {storage}: {what}\ngot {out[binding]}\nwanted {values}"


READS = [(rule, storage) for rule in LAYOUT_RULES for storage in ("uniform", "push_constant")
         if (rule, storage) != ("std430", "uniform")]


@pytest.mark.parametrize("rule,storage", READS)
@pytest.mark.parametrize("seed", range(SEEDS // 2))
def test_reads_find_what_our_layout_placed_on_the_reference_executor(rule, storage, seed, tmp_path):
    _run_reads(rule, seed, storage, tmp_path, device="ref")


@pytest.mark.vulkan
@pytest.mark.parametrize("rule,storage", READS)
@pytest.mark.parametrize("seed", range(SEEDS // 2))
def test_reads_find_what_our_layout_placed_on_lavapipe(rule, storage, seed, tmp_path, lavapipe):
    _run_reads(rule, seed, storage, tmp_path, executor=lavapipe)


PUSH_F16_TAIL = HEADER + """
layout(push_constant) uniform P { float a; float16_t h; } p;
layout(set = 0, binding = 0) buffer O { float a; float16_t h; } o;
void main() { o.a = p.a; o.h = p.h; }
"""


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_a_push_constant_block_of_6_bytes_runs(device, tmp_path):
    """A block ending in a float16_t is 6 bytes; Vulkan ranges are multiples of 4, which the runtime rounds to."""
    words = compile_glsl(PUSH_F16_TAIL, tmp_path)
    assert reflect(words).push_constant_size == 6
    push = np.float32(-2.5).tobytes() + np.float16(0.375).tobytes()
    out = launch.run(words, (1, 1, 1), {0: launch.RawBytes(np.full(8, POISON, np.uint8))}, push=push, device=device)
    assert out[0].tobytes() == push + bytes([POISON, POISON])
