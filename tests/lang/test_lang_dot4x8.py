"""dot4x8: the packed 4 x 8-bit integer dot product (SDot, SUDot, UDot), on ref and lavapipe against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane.lang import Buffer, CompilationError, constexpr, dot4x8, global_id, kernel_source, readonly, s32, u32
from hydroplane.spirv.target import Target


@kernel_source(local_size=64)
def dots(a: Buffer[u32, readonly], b: Buffer[u32, readonly], out: Buffer[u32], n: s32, SIGNS: constexpr):
    i = global_id()
    if i < n:
        out[i] = u32(dot4x8(a[i], b[i], SIGNS)) if SIGNS != "uu" else dot4x8(a[i], b[i], SIGNS)


@kernel_source(local_size=64)
def accumulated(a: Buffer[u32, readonly], b: Buffer[u32, readonly], out: Buffer[s32], n: s32):
    """A sum of dot products over four words, as a kernel accumulates them (an s32 word read from an s32 buffer)."""
    i = global_id()
    if i < n:
        total = s32(0)
        for j in range(4):
            total += dot4x8(a[4 * i + j], s32(b[4 * i + j]), "su")
        out[i] = total


def expected(a: np.ndarray, b: np.ndarray, signs: str) -> np.ndarray:
    av = a.view(np.uint8).reshape(-1, 4)
    bv = b.view(np.uint8).reshape(-1, 4)
    av = av.view(np.int8) if signs[0] == "s" else av
    bv = bv.view(np.int8) if signs[1] == "s" else bv
    return (av.astype(np.int64) * bv.astype(np.int64)).sum(axis=1)


def words(rng, n: int) -> np.ndarray:
    """Random words with the extremes of both readings in every byte position (0x00, 0x7F, 0x80, 0xFF)."""
    w = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    w[:4] = [0x00000000, 0x7F7F7F7F, 0x80808080, 0xFFFFFFFF]
    return w


@pytest.mark.parametrize("signs", ["ss", "su", "uu"])
def test_dot4x8_matches_numpy(signs):
    rng = np.random.default_rng(7)
    n = 200
    a, b = words(rng, n), words(rng, n)
    b[4:8] = [0x80808080, 0xFFFFFFFF, 0x7F7F7F7F, 0x00000000]  # the extremes against each other too
    a[4:8] = [0x80808080, 0x80808080, 0xFFFFFFFF, 0x7F7F7F7F]
    spec = compiled(dots, SIGNS=signs)
    want = expected(a, b, signs).astype(np.int64 if signs != "uu" else np.uint64)
    want = want.astype(np.int32).view(np.uint32) if signs != "uu" else want.astype(np.uint32)
    for device, got in run_everywhere(spec, ((n + 63) // 64,), {"a": a, "b": b, "out": poisoned(n, np.uint32)},
                                      {"n": n}).items():
        np.testing.assert_array_equal(got["out"], want, err_msg=f"{signs} on {device}")


def test_dot4x8_accumulates_in_s32():
    rng = np.random.default_rng(8)
    n = 96
    a, b = words(rng, 4 * n), words(rng, 4 * n)
    want = expected(a, b, "su").reshape(n, 4).sum(axis=1).astype(np.int32)
    spec = compiled(accumulated)
    for device, got in run_everywhere(spec, ((n + 63) // 64,), {"a": a, "b": b, "out": poisoned(n, np.int32)},
                                      {"n": n}).items():
        np.testing.assert_array_equal(got["out"], want, err_msg=f"on {device}")


def test_dot4x8_refusals():
    with pytest.raises(CompilationError, match="signs must be one of"):
        dots.compile(SIGNS="us")
    plain = Target.profile("generic-khr")  # a Vulkan 1.3 profile that does not list the integer dot product
    assert "integer_dot_product" not in plain.support
    with pytest.raises(CompilationError, match="integer dot product"):
        dots.compile(plain, SIGNS="ss")
    assert "integer_dot_product" in Target.profile("nvidia-h200").support
