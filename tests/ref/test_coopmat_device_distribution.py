"""The element distribution as a parameter that mimics a device: lavapipe's own layout is read
with GetCoordinate (an EXT kernel lowered to NV2, so the PerElementOp emulation reports the
driver's element order), handed to the reference executor as an explicit table, and then
per-invocation element access agrees bit for bit between the two."""

import numpy as np
import pytest
from cts.compile import compile_glsl, glsl_source

from hydroplane.ref import Executor
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.spirv.lower import lower
from hydroplane.spirv.target import Target


@pytest.fixture(scope="module")
def lavapipe():
    from hydroplane.vk import Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr and d.cooperative_matrix_nv2]
    if not found:
        pytest.fail("no device with KHR + NV2 cooperative matrices (lavapipe); run through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        yield dev


def _device(dev, words, arrays):
    from hydroplane.vk import Binding

    bufs = {i: dev.buffer(a) for i, a in enumerate(arrays)}
    dev.dispatch(dev.pipeline(words, [Binding(0, i) for i in range(len(arrays))]), (1, 1, 1), bufs)
    return [bufs[i].read(a.dtype) for i, a in enumerate(arrays)]


def _ref(words, arrays, sg, dist):
    ex = Executor(subgroup_size=sg, coopmat_distribution=dist)
    bufs = {i: ex.buffer(a) for i, a in enumerate(arrays)}
    ex.dispatch(ex.kernel(words), (1, 1, 1), bufs)
    return [ex.read(bufs[i], a.dtype) for i, a in enumerate(arrays)]


@pytest.mark.parametrize("rows,cols", [(8, 8), (16, 16)])
def test_reference_executor_mimics_the_devices_distribution(glslang, lavapipe, rows, cols):
    sg = lavapipe.info.subgroup_size
    defines = {"SG": sg, "R": rows, "C": cols}
    coords_words = compile_glsl(glslang, glsl_source("coordinates.comp"), defines)
    length = rows * cols // sg
    arrays = [np.full(2 * sg * length, 0xFFFFFFFF, np.uint32), np.zeros(sg, np.uint32)]
    coords, lengths = _device(lavapipe, lower(coords_words, Target.profile("lavapipe")).words(), arrays)
    assert (lengths == length).all()
    pairs = coords.reshape(sg, length, 2).astype(np.int64)
    table = pairs[..., 0] * cols + pairs[..., 1]
    assert sorted(table.reshape(-1).tolist()) == list(range(rows * cols))
    if (rows, cols) == (8, 8):  # lavapipe's 8x8 layout is the documented default
        np.testing.assert_array_equal(table, cm.STRIDED.table(rows, cols, sg))
    dist = cm.ElementDistribution.from_table("lavapipe", table)

    ref_coords, _ = _ref(coords_words, arrays, sg, dist)
    np.testing.assert_array_equal(ref_coords, coords)

    words = compile_glsl(glslang, glsl_source("lane_elements.comp"), defines)
    m = np.random.default_rng(rows).standard_normal(rows * cols).astype(np.float32)
    held = [m, np.full(sg * length, np.nan, np.float32)]
    _, on_device = _device(lavapipe, words, held)
    _, on_ref = _ref(words, held, sg, dist)
    np.testing.assert_array_equal(on_ref, on_device)
    np.testing.assert_array_equal(on_ref.reshape(sg, length), 2 * m[table])
