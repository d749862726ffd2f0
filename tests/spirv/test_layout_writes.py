"""types.py's layouts checked through memory: a shader writes every scalar of random std140, std430 and
scalar storage blocks, on the reference executor and on lavapipe, and the bytes must be exactly those
our layout predicts.

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

from hydroplane import launch
from hydroplane.spirv import types
from hydroplane.spirv.types import LAYOUT_RULES
from layout_blocks import (BlockMaker, block_type, compile_glsl, every_shape_block, leaves, random_value, render_block,
                           render_shader)

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
