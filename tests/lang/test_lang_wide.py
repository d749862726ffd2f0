"""Vector buffers and matrices through memory of another type: `Buffer[vector_type(u32, 4)]` (16-byte elements),
shared arrays of vectors, and coop.load / coop.store of an f16 matrix through u32x4 memory (KHR: the stride counts
the memory's elements); on ref and lavapipe against NumPy. A memory type whose size the component does not divide
is refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from lang_helpers import compiled, poisoned, run_everywhere

from hydroplane.lang import (
    Buffer,
    CompilationError,
    barrier,
    coop,
    f16,
    f32,
    kernel_source,
    local_index,
    readonly,
    shared_array,
    u16,
    u32,
    vector_type,
)

pytestmark = pytest.mark.vulkan
V4 = vector_type(u32, 4)


@kernel_source(local_size=8)
def wide_tile(a4: Buffer[V4, readonly], b: Buffer[f16, readonly], d: Buffer[f32], d4: Buffer[V4]):
    staged = shared_array(V4, 8)  # an 8x8 f16 tile: 8 rows of 16 bytes
    staged[local_index()] = a4[local_index()]
    barrier()
    ta = coop.load(coop.Matrix[f16, 8, 8, coop.A], staged, 0, 1, coop.RowMajor)  # stride: 1 vector per row
    tb = coop.load(coop.Matrix[f16, 8, 8, coop.B], b, 0, 8, coop.RowMajor)
    acc = coop.mul_add(ta, tb, coop.fill(coop.Matrix[f32, 8, 8, coop.Accumulator], 0.0))
    coop.store(acc, d, 0, 8, coop.RowMajor)
    tt = coop.load(coop.Matrix[f16, 8, 8, coop.A], a4, 0, 1, coop.ColumnMajor)  # straight from the V4 buffer
    coop.store(tt, staged, 0, 1, coop.RowMajor)  # the transpose, through the vectors
    barrier()
    d4[local_index()] = staged[local_index()]


@kernel_source(local_size=8)
def misfit(a: Buffer[u16, readonly], d: Buffer[f32]):
    coop.store(coop.load(coop.Matrix[f32, 8, 8, coop.Accumulator], a, 0, 8), d, 0, 8)


def test_matrices_through_vector_memory():
    rng = np.random.default_rng(9)
    a = rng.integers(-8, 8, (8, 8)).astype(np.float16)
    b = rng.integers(-8, 8, (8, 8)).astype(np.float16)
    spec = compiled(wide_tile)
    arrays = {"a4": a.view(np.uint32).ravel(), "b": b.ravel(), "d": poisoned(64, np.float32),
              "d4": np.full(32, 0xDEADBEEF, np.uint32)}
    for device, out in run_everywhere(spec, (1, 1, 1), arrays).items():
        np.testing.assert_array_equal(out["d"].reshape(8, 8), a.astype(np.float32) @ b.astype(np.float32),
                                      err_msg=str(device))
        np.testing.assert_array_equal(out["d4"].view(np.float16).reshape(8, 8), a.T, err_msg=str(device))


def test_a_memory_type_the_component_does_not_divide_is_refused():
    with pytest.raises(CompilationError, match="the memory holds u16, the matrix f32"):
        misfit.compile()


def test_vector_type_checks_its_arguments():
    with pytest.raises(Exception, match="vector_type takes a numeric dtype and 2, 3 or 4 components"):
        vector_type(u32, 5)
