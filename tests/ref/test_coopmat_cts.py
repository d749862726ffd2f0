"""The CTS-style cooperative-matrix matrix: every case compiled from GLSL by glslang, run on the
reference executor and (where the device reports the type pair and shape) on lavapipe through
hydroplane.vk, each compared with NumPy and with each other. Inputs are fresh random values per
case (seeded by the case id); outputs start poisoned. Integer and exactly representable float
inputs must agree bit for bit; random-fraction floats within CTS-style tolerances. EXT
maintenance1 cases run lowered to NV2 on the device.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from cts.cases import TILES, Case, build_cases
from cts.compile import compile_glsl, glsl_source
from cts.expect import POISON_U, expected, make_inputs, outputs, padding_poison, poison_of
from hydroplane.ref import Executor
from hydroplane.spirv.lower_nv2 import lower_ext_to_nv2

CASES = build_cases()
SOURCE = glsl_source("coopmat_case.comp")


@pytest.fixture(scope="session")
def device():
    from hydroplane.vk import Device, devices

    found = [d for d in devices() if d.cooperative_matrix_khr]
    if not found:
        pytest.fail("no Vulkan device with VK_KHR_cooperative_matrix; run the suite through scripts/test")
    with Device(found[0], enable_all=True) as dev:
        yield dev


def device_runs(case: Case, info) -> str | None:
    """Why the device cannot run the case (None when it can), from its reported properties."""
    t = case.types
    if case.sg != info.subgroup_size:
        return f"subgroup size {case.sg} (device {info.subgroup_size})"
    dims = [(case.m, case.n, case.k)]
    if case.reduce == "2x2":
        dims.append((case.m // 2, case.n // 2, case.k))
    shapes = [s for s in (*info.coop_khr, *info.coop_nv2_flexible)
              if s.scope == "subgroup" and s.a == t.device_a and s.c == t.device_c
              and all(_fits(s, d) for d in dims)]
    if not shapes:
        return f"{case.pair} {case.m}x{case.n}x{case.k} not reported"
    if case.op == "muladd_saturating" and not any(s.saturating for s in shapes):
        return "no saturating accumulation reported"
    return None


def _fits(shape, dims) -> bool:
    """A reported shape admits these dimensions: equal, or multiples of NV2 flexible granularities."""
    if shape.granularity:
        return all(d % g == 0 for d, g in zip(dims, (shape.m, shape.n, shape.k)))
    return dims == (shape.m, shape.n, shape.k)


def _bindings(inputs) -> dict:
    return dict(inputs.buffers)


def run_ref(case: Case, words: bytes, inputs) -> dict[int, np.ndarray]:
    ex = Executor(subgroup_size=case.sg)
    bufs = {b: ex.buffer(arr) for b, arr in _bindings(inputs).items()}
    kernel = ex.kernel(words)
    ex.dispatch(kernel, (2, 1, 1), bufs, push=inputs.push)
    return {b: ex.read(buf, arr.dtype) for (b, arr), buf in zip(_bindings(inputs).items(), bufs.values())}


def run_device(dev, case: Case, words: bytes, inputs) -> dict[int, np.ndarray]:
    from hydroplane.vk import Binding

    arrays = _bindings(inputs)
    bufs = {b: dev.buffer(arr) for b, arr in arrays.items()}
    pipeline = dev.pipeline(words, [Binding(0, b) for b in arrays], push_constant_size=len(inputs.push))
    dev.dispatch(pipeline, (2, 1, 1), bufs, push=np.frombuffer(inputs.push, np.uint8))
    return {b: bufs[b].read(arr.dtype) for b, arr in arrays.items()}


def _tolerance(case: Case):
    if not case.random_floats:
        return None
    return (2e-2, 2e-2) if case.types.c == np.dtype(np.float16) else (1e-5, 1e-5)


def _same(got: np.ndarray, want: np.ndarray, tol, what: str) -> None:
    if tol is None:
        g = np.ascontiguousarray(got).view(f"u{got.dtype.itemsize}")
        w = np.ascontiguousarray(want.astype(got.dtype)).view(f"u{got.dtype.itemsize}")
        nan_both = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)) \
            if got.dtype.kind not in "iu" else np.zeros(got.shape, bool)
        bad = (g != w) & ~nan_both
        if bad.any():
            where = np.argwhere(bad)[:5].tolist()
            raise AssertionError(f"{what}: {int(bad.sum())} elements differ, first at (tile, row, col) {where}: "
                                 f"got {got[bad][:5].tolist()} want {want.astype(got.dtype)[bad][:5].tolist()}")
        return
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol[0], atol=tol[1],
                               err_msg=what)


def check(case: Case, flat: dict[int, np.ndarray], want: dict, who: str, device: bool = False) -> dict:
    got = outputs(case, flat)
    tol = _tolerance(case)
    if case.op == "composite_extract" and device:
        # The device's distribution is its own: each tile must hold every element exactly once.
        _same(np.sort(got["o"].reshape(TILES, -1), axis=1), np.sort(want["o"].reshape(TILES, -1), axis=1),
              None, f"{who}: extracted elements (as a multiset per tile)")
    elif "o" in want:
        _same(got["o"], want["o"], tol, f"{who}: result matrix")
    if "oa" in want:
        _same(got["oa"], want["oa"], None, f"{who}: converted matrix")
    if "u" in want:
        np.testing.assert_array_equal(got["u"], want["u"], err_msg=f"{who}: coordinates")
    poison = poison_of(case.types.c, 1)
    pad = padding_poison(case, flat[4])
    if case.op != "reduce" or case.reduce != "2x2":
        assert np.array_equal(pad.view(f"u{pad.dtype.itemsize}"),
                              np.broadcast_to(poison.view(f"u{pad.dtype.itemsize}"), pad.shape)), \
            f"{who}: the kernel wrote into the stride padding"
    if case.op == "length":
        words = flat[5][:TILES * case.sg]
        if device:
            assert (words.astype(np.int64) * case.sg >= case.m * case.n).all(), f"{who}: Length {words[:4]}"
        else:
            assert (words == -(-case.m * case.n // case.sg)).all(), f"{who}: Length {words[:4]}"
        assert (flat[5][TILES * case.sg:] == POISON_U).all()
    return got


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cts_case(case: Case, glslang, device):
    words = compile_glsl(glslang, SOURCE, case.defines())
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    inputs = make_inputs(case, rng)
    want = expected(case, inputs)
    ref = check(case, run_ref(case, words, inputs), want, "reference executor")
    why_not = device_runs(case, device.info)
    if why_not is not None:
        return  # the reference executor's answer was checked against NumPy above
    device_words = lower_ext_to_nv2(words).words() if case.ext else words
    dev = check(case, run_device(device, case, device_words, inputs), want, "lavapipe", device=True)
    if case.op not in ("length", "composite_extract"):
        _same(ref["o"], dev["o"], _tolerance(case), "reference executor vs lavapipe")


def test_device_runs_every_pair_it_reports(device):
    """The matrix must reach the device for each type pair the device reports (no silent drop)."""
    reported = {(s.a, s.c) for s in device.info.coop_shapes() if (s.m, s.n, s.k) == (8, 8, 8)}
    assert reported, "the device reports no 8x8x8 subgroup shapes"
    on_device = {(c.types.device_a, c.types.device_c) for c in CASES if device_runs(c, device.info) is None}
    ours = {(t.device_a, t.device_c) for t in (c.types for c in CASES)}
    assert reported & ours <= on_device
    assert sum(device_runs(c, device.info) is None for c in CASES) >= 40
