"""The conformance cases (hydroplane.lang.conformance) on lavapipe against the reference executor and NumPy,
small sizes: the same list tools/lang_on_device.py runs on any Vulkan device (the H200 among them).

A case lavapipe cannot run (bf16 scalars, workgroup-scope matrices) runs on the reference executor against
NumPy instead, and the reason lavapipe gives is checked; every module is validated by spirv-val as lowered
for lavapipe (or for the reference executor)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hydroplane.lang import conformance
from hydroplane.launch import executors
from hydroplane.spirv import validate
from hydroplane.spirv.compiled import compile_kernel

pytestmark = pytest.mark.vulkan
TOOL = Path(__file__).resolve().parents[2] / "tools" / "lang_on_device.py"


def _tool():
    spec = importlib.util.spec_from_file_location("lang_on_device", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lavapipe():
    device = executors.get_executor(0)
    ref = executors.get_executor("ref", subgroup_size=device.target.subgroup_size)
    yield device, ref
    device.close()
    ref.close()


def _validated_runner(tool, device, ref):
    """The tool's runner, with every module it compiles checked by spirv-val as lowered for its executor."""
    run = tool.make_runner(device, ref)

    def checked(where, kernel, trial):
        executor = device if where == "device" else ref
        spec = kernel.compile(executor.target, **trial.constexprs)
        validate(compile_kernel(spec.words, executor.target).words, env="vulkan1.3")
        return run(where, kernel, trial)
    return checked


@pytest.mark.parametrize("case", conformance.CASES, ids=lambda c: c.name)
def test_case_on_lavapipe_equals_ref_and_numpy(case, lavapipe):
    device, ref = lavapipe
    tool = _tool()
    setup = conformance.Setup(device.target, scale=2)
    reason = case.applies(setup)
    if reason is not None:  # lavapipe lacks it: the reference executor against NumPy, and the reason named
        assert device.target.name in reason
        result = conformance.run_case(case, conformance.Setup(ref.target, scale=2),
                                      _validated_runner(tool, ref, ref), seed=7)
    else:
        result = conformance.run_case(case, setup, _validated_runner(tool, device, ref), seed=7)
    assert result.status == "PASS", conformance.summary([result])
    assert result.elements > 0


def test_the_device_extras_at_lavapipes_shapes(lavapipe):
    device, ref = lavapipe
    tool = _tool()
    setup = conformance.Setup(device.target)
    extras = conformance.device_cases(setup)[len(conformance.CASES):]
    names = [c.name for c in extras]
    assert any(n.startswith("coop f16 tile 8x8x8") for n in names) and any("K-loop" in n for n in names)
    results = [conformance.run_case(c, setup, _validated_runner(tool, device, ref), seed=3) for c in extras]
    assert all(r.status == "PASS" for r in results), conformance.summary(results)


def test_a_difference_is_found_and_counted(lavapipe):
    """The comparison fails where it must: a device result changed in one element, and a wrong expectation."""
    device, ref = lavapipe
    tool = _tool()
    run = tool.make_runner(device, ref)
    setup = conformance.Setup(device.target)

    def corrupted(where, kernel, trial):
        out = run(where, kernel, trial)
        if where == "device":
            out["r"] = out["r"].copy()
            out["r"][5] += 1
        return out
    case = conformance.CASES[0]
    result = conformance.run_case(case, setup, corrupted, seed=1)
    assert result.status == "FAIL" and result.mismatches == 1 and result.ref_mismatches == 0
    assert result.detail.startswith("r[5]:")

    def wrong_expectation(rng, s):
        trial = case.build(rng, s)
        trial.expected["q"] = trial.expected["q"] + 1
        return trial
    bad = conformance.Case("planted", case.kernel, wrong_expectation)
    result = conformance.run_case(bad, setup, run, seed=1)
    assert result.status == "FAIL" and result.mismatches == 0 and result.ref_mismatches == 64  # every q


def test_compare_modes():
    nan = np.float32(np.nan)
    assert not conformance.mismatches("exact", np.array([nan, 0.0, 1.0], np.float32),
                                      np.array([nan, -0.0, 1.0], np.float32)).any()
    one_up = np.nextafter(np.float32(1), np.float32(2))
    assert conformance.mismatches("exact", np.array([1.0], np.float32), np.array([one_up], np.float32)).all()
    assert not conformance.mismatches("ulp:1", np.array([1.0], np.float32), np.array([one_up], np.float32)).any()
    assert conformance.mismatches("ulp:1", np.array([np.inf], np.float32), np.array([1e38], np.float32)).all()
    assert not conformance.mismatches("sorted", np.array([3, 1, 2]), np.array([1, 2, 3])).any()
    assert conformance.mismatches("close:1e-3:0", np.array([1.01]), np.array([1.0])).all()
    with pytest.raises(ValueError, match="unknown compare mode"):
        conformance.mismatches("roughly", np.zeros(1), np.zeros(1))


def test_the_numpy_model_of_the_semantics():
    """NumPy's side of the table, spot-checked by hand (the conformance cases compare everything else)."""
    a = np.array([-7, 7, -7, 7, -2**31, -2**31, 5, 0], np.int32)
    b = np.array([2, -2, -2, 2, -1, 7, 0, 0], np.int32)
    assert conformance.int_divide(a, b).tolist() == [-3, -3, 3, 3, -2**31, -306783378, 5, 0]
    assert conformance.int_remainder(a, b).tolist() == [-1, 1, -1, 1, 0, -2, 0, 0]
    counts = np.array([31, 32, -1, 40], np.int32)
    assert conformance.shift(np.array([-8] * 4, np.int32), counts, False).tolist() == [-1, -1, -1, -1]
    assert conformance.shift(np.array([1] * 4, np.int32), counts, True).tolist() == [-2**31, 0, 0, 0]
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -2.9, 2147483520.0], np.float32)
    assert conformance.float_to_int(x, np.int32).tolist() == [0, 2**31 - 1, -2**31, 2**31 - 1, -2, 2147483520]
    assert conformance.matrix_float_to_int(x, np.int32).tolist() == [0, 2147483520, -2**31, 2147483520, -2,
                                                                     2147483520]
    assert conformance.float_to_int(x, np.uint8).tolist() == [0, 255, 0, 255, 0, 255]


def test_the_tool_runs_a_case_and_writes_its_record(tmp_path, capsys):
    tool = _tool()
    status = tool.main(["--device", "0", "--scale", "1", "--only", "shifts (counts", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "shifts (counts < 0, >= width; s32, u32, s64)" in printed and "1 cases: 1 PASS" in printed
    record = json.loads((tmp_path / "lang_on_device.json").read_text())
    assert [r["status"] for r in record["results"]] == ["PASS"]
    assert (tmp_path / "lang_on_device.txt").read_text().startswith(record["header"])
