"""Python spellings a kernel may use: builtins (abs, min, max, float, int, bool, len), chained comparisons,
annotated assignments, float // and %, compile-time if/else and folding; on ref and lavapipe against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane.lang import Buffer, constexpr, f32, global_id, kernel_source, readonly

pytestmark = pytest.mark.vulkan
SLOTS = 12


@kernel_source(local_size=32)
def python_spellings(x: Buffer[f32, readonly], y: Buffer[f32, readonly], out: Buffer[f32], MODE: constexpr = 2):
    i = global_id()
    a = x[i]
    b = y[i]
    k = i * 12
    total: f32 = 0.0  # an annotated local
    total += abs(a) + min(a, b) + max(a, b, 1.0)
    out[k + 0] = total
    out[k + 1] = a // b  # floor of the quotient
    out[k + 2] = a % b  # C fmod: the sign of a
    out[k + 3] = float(int(a))  # toward zero, back to f32
    out[k + 4] = float(bool(int(a)))
    out[k + 5] = 1.0 if -1.0 < a < 1.0 else 0.0  # a chained comparison
    if MODE == 1:  # compile-time if: only one branch is compiled
        out[k + 6] = a
    else:
        out[k + 6] = b
    out[k + 7] = f32(len(x)) - f32(SLOTS * 0 + 64)  # len(buffer) is OpArrayLength
    scale = 2 ** MODE  # folded at compile time: 4
    out[k + 8] = a * scale
    c = a
    c -= b
    c *= 2.0
    c /= 4.0
    out[k + 9] = c
    out[k + 10] = -a if a < 0.0 else a
    out[k + 11] = f32(i % 5 == 0 or i % 7 == 0)


def test_python_spellings():
    rng = np.random.default_rng(61)
    n = 64
    x = (rng.integers(-40, 40, n) / 8).astype(np.float32)
    y = (rng.integers(1, 20, n) / 4 * rng.choice([-1, 1], n)).astype(np.float32)
    spec = compiled(python_spellings)
    results = run_everywhere(spec, (2, 1, 1), {"x": x, "y": y, "out": poisoned(n * SLOTS, np.float32)})
    i = np.arange(n)
    expected = np.stack([
        np.abs(x) + np.minimum(x, y) + np.maximum(np.maximum(x, y), 1), np.floor(x / y), np.fmod(x, y),
        np.trunc(x), (np.trunc(x) != 0).astype(np.float32), ((-1 < x) & (x < 1)).astype(np.float32), y,
        np.zeros(n), x * 4, (x - y) * 2 / 4, np.abs(x), ((i % 5 == 0) | (i % 7 == 0)).astype(np.float32)],
        axis=1).astype(np.float32)
    for device, out in results.items():
        np.testing.assert_array_equal(out["out"].reshape(n, SLOTS), expected, err_msg=str(device))
