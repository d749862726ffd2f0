"""Running one CTS-style case: on the reference executor, on a Vulkan device, and checking the
outputs against the NumPy expectations (shared by tests/ref/test_coopmat_cts.py and
cts/device_check.py; needs numpy and hydroplane only, no pytest)."""

from __future__ import annotations

import numpy as np

from cts.cases import TILES, Case
from cts.device_types import missing_matrix_types
from cts.expect import POISON_U, outputs, padding_poison, poison_of
from hydroplane.ref import Executor


def device_runs(case: Case, info, words=None) -> str | None:
    """Why the device cannot run the case (None when it can), from its reported properties; with
    the module's words, every matrix type it declares must be one the device offers."""
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
    if words is not None:
        missing = missing_matrix_types(words, info)
        if missing:
            return "matrix types not offered: " + ", ".join(missing)
    return None


def _fits(shape, dims) -> bool:
    """A reported shape admits these dimensions: equal, or multiples of NV2 flexible granularities."""
    if shape.granularity:
        return all(d % g == 0 for d, g in zip(dims, (shape.m, shape.n, shape.k)))
    return dims == (shape.m, shape.n, shape.k)


def _bindings(inputs) -> dict:
    return dict(inputs.buffers)


def run_ref(case: Case, words: bytes, inputs) -> dict[int, np.ndarray]:
    # A padded stride (case.pad) breaks Vulkan's 16-byte alignment rule on purpose: the case checks the layout
    # arithmetic against lavapipe, which accepts it; the 'misaligned' diagnostic has its own test.
    ex = Executor(subgroup_size=case.sg, check_alignment=not case.pad)
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


def tolerance(case: Case):
    if not case.random_floats:
        return None
    return (2e-2, 2e-2) if case.types.c == np.dtype(np.float16) else (1e-5, 1e-5)


def same_values(got: np.ndarray, want: np.ndarray, tol, what: str) -> None:
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
    tol = tolerance(case)
    if case.op == "composite_extract" and device:
        # The device's distribution is its own: each tile must hold every element exactly once.
        same_values(np.sort(got["o"].reshape(TILES, -1), axis=1), np.sort(want["o"].reshape(TILES, -1), axis=1),
              None, f"{who}: extracted elements (as a multiset per tile)")
    elif "o" in want:
        same_values(got["o"], want["o"], tol, f"{who}: result matrix")
    if "oa" in want:
        same_values(got["oa"], want["oa"], None, f"{who}: converted matrix")
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
