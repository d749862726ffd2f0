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
from cts.cases import Case, build_cases
from cts.compile import compile_glsl, glsl_source
from cts.expect import expected, make_inputs
from cts.runner import check, device_runs, run_device, run_ref, same_values, tolerance

from hydroplane.spirv.lower import lower
from hydroplane.spirv.target import Target

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


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cts_case(case: Case, glslang, device):
    words = compile_glsl(glslang, SOURCE, case.defines())
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    inputs = make_inputs(case, rng)
    want = expected(case, inputs)
    ref = check(case, run_ref(case, words, inputs), want, "reference executor")
    device_words = lower(words, Target.profile("lavapipe")).words() if case.ext else words
    if device_runs(case, device.info, device_words) is not None:
        return  # the reference executor's answer was checked against NumPy above
    dev = check(case, run_device(device, case, device_words, inputs), want, "lavapipe", device=True)
    if case.op not in ("length", "composite_extract"):
        same_values(ref["o"], dev["o"], tolerance(case), "reference executor vs lavapipe")


def test_device_runs_every_pair_it_reports(device):
    """The matrix must reach the device for each type pair the device reports (no silent drop)."""
    reported = {(s.a, s.c) for s in device.info.coop_shapes() if (s.m, s.n, s.k) == (8, 8, 8)}
    assert reported, "the device reports no 8x8x8 subgroup shapes"
    on_device = {(c.types.device_a, c.types.device_c) for c in CASES if device_runs(c, device.info) is None}
    ours = {(t.device_a, t.device_c) for t in (c.types for c in CASES)}
    assert reported & ours <= on_device
    assert sum(device_runs(c, device.info) is None for c in CASES) >= 40
