"""Tuples holding run-time values concatenate (`t + (x,)`) and repeat by a constexpr int (`(x,) * n`), as in
Python; other operators on tuples are refused by name. On ref and lavapipe against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane.lang import Buffer, CompilationError, constexpr, f32, global_id, kernel_source, readonly, static_range

pytestmark = pytest.mark.vulkan


@kernel_source(local_size=32)
def tuple_building(x: Buffer[f32, readonly], out: Buffer[f32], COPIES: constexpr = 3):
    i = global_id()
    v = x[i]
    repeated = (v,) * COPIES  # three copies of one run-time value
    joined = repeated + (v * 2.0, v + 1.0)  # a tuple of five
    for j in static_range(len(joined)):
        out[i * 5 + j] = joined[j] * f32(j + 1)


@kernel_source(local_size=32)
def tuple_minus(x: Buffer[f32, readonly], out: Buffer[f32]):
    i = global_id()
    pair = (x[i], x[i])
    out[i] = (pair - (1.0,))[0]


def test_tuples_concatenate_and_repeat():
    x = np.random.default_rng(4).integers(-8, 8, 64).astype(np.float32)
    spec = compiled(tuple_building)
    expected = np.stack([x, x, x, 2 * x, x + 1], axis=1) * np.arange(1, 6, dtype=np.float32)
    for device, result in run_everywhere(spec, (2, 1, 1), {"x": x, "out": poisoned(64 * 5, np.float32)}).items():
        np.testing.assert_array_equal(result["out"].reshape(64, 5), expected, err_msg=str(device))


def test_other_operators_on_tuples_are_refused():
    with pytest.raises(CompilationError, match=r"- of a tuple: tuples take \+ \(another tuple\) and \* "):
        tuple_minus.compile()
