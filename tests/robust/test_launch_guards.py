"""The guards in front of a driver, from Python: spirv-val on outside modules (cached, said once when it is
missing, skipped for trusted words), robust buffer access on by default with an opt-out, the Vulkan
timeout that leaves a hung device alone, and the reference executor's step budget and time limit.
Runs that could crash or hang go to a subprocess.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from nasty_modules import LOOP, run_process, store_module

from hydroplane import vk
from hydroplane.launch import limits as launch_limits
from hydroplane.launch.executors import VulkanExecutor, run
from hydroplane.launch.limits import LimitError, check_with_validator
from hydroplane.ref import Executor
from hydroplane.ref.errors import ExecutionLimitError
from hydroplane.spirv import text

GUARDED = """
import os, sys, numpy as np
from hydroplane.launch.executors import VulkanExecutor
from hydroplane.spirv import text
from hydroplane import vk
words = text.assemble(sys.argv[1])
ex = VulkanExecutor(0, timeout=float(sys.argv[2]))
buf = ex.buffer(np.zeros(4, np.uint32))
kernel = ex.kernel(words)
try:
    ex.dispatch(kernel, (1, 1, 1), {0: buf})
except vk.DeviceTimeout as exc:
    print("timeout:", exc, "hung:", ex.device.hung)
try:
    ex.dispatch(kernel, (1, 1, 1), {0: buf})
except vk.DeviceLost as exc:
    print("again:", type(exc).__name__)
ex.close()
print("closed")
"""


def test_spirv_val_refuses_an_invalid_module_before_the_driver():
    words = text.assemble(store_module().replace("OpExecutionMode %main LocalSize 64 1 1", ""))
    with VulkanExecutor(0) as ex:
        with pytest.raises(LimitError, match=r"spirv-val \(vulkan1.3\) rejects the module"):
            ex.kernel(words)


def test_validation_is_cached_per_module(monkeypatch):
    words = text.assemble(store_module())
    calls = []
    monkeypatch.setattr(launch_limits, "validate", lambda data, env, options: calls.append((env, *options)))
    monkeypatch.setattr(launch_limits, "_validated", {})
    assert check_with_validator(words) and check_with_validator(words)
    assert calls == [("vulkan1.3",)]
    assert check_with_validator(words, "vulkan1.4") and calls == [("vulkan1.3",), ("vulkan1.4",)]
    layout = ("--scalar-block-layout",)
    assert check_with_validator(words, "vulkan1.3", layout) and check_with_validator(words, "vulkan1.3", layout)
    assert calls[2:] == [("vulkan1.3", "--scalar-block-layout")]


def test_missing_validator_is_said_once_and_trusted_words_skip_it(tmp_path):
    script = """
import os, sys, numpy as np
os.environ["HYDROPLANE_SPIRV_VAL"] = "/nonexistent/spirv-val"
from hydroplane.launch.executors import run
from hydroplane.spirv import text
words = text.assemble(sys.argv[1])
for value in (1, 2):
    out = run(words, (1, 1, 1), {0: np.zeros(64, np.uint32)}, device=0, validate=value == 1)
    assert (out[0] == 2 * np.arange(64)).all()
print("trusted run done", file=sys.stderr)
out = run(words, (1, 1, 1), {0: np.zeros(64, np.uint32)}, device=0)
"""
    outcome = run_process([sys.executable, "-c", script, store_module()], 120)
    assert outcome.returncode == 0, outcome.stderr
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 2 and "unvalidated" in lines[0] and "/nonexistent/spirv-val" in lines[0], lines
    assert lines[1] == "trusted run done"


def test_robust_access_is_on_by_default_and_can_be_turned_off():
    with VulkanExecutor(0) as robust, VulkanExecutor(0, robust=False) as fast:
        assert robust.validator_layouts == ("--scalar-block-layout",)  # lavapipe takes scalar block layout
        assert robust.device.robust and "robustBufferAccess" in robust.device.enabled_bits["core"]
        if "VK_EXT_robustness2" in robust.info.extensions:
            assert "robustBufferAccess2" in robust.device.enabled_bits["robustness2"]
        assert not fast.device.robust and "robustBufferAccess" not in fast.device.enabled_bits.get("core", ())
        assert "robustness2" not in fast.device.enabled_bits
        words = text.assemble(store_module(index_offset=1000))
        for ex in (robust, fast):  # in-bounds work is the same either way
            out = run(text.assemble(store_module()), (1, 1, 1), {0: np.zeros(64, np.uint32)}, executor=ex)
            assert (out[0] == 2 * np.arange(64)).all()
        out = run(words, (1, 1, 1), {0: np.full(64, 7, np.uint32)}, executor=robust)
        assert (out[0] == 7).all()  # every write was out of bounds: dropped


def test_vulkan_timeout_marks_the_device_hung_and_leaves_it_alone():
    endless = LOOP.format(limit=4294967295, compare="ULessThanEqual")
    outcome = run_process([sys.executable, "-c", GUARDED, endless, "2"], 120)
    assert outcome.returncode == 0, outcome.stderr
    lines = outcome.stdout.strip().splitlines()
    assert lines[0].startswith("timeout: a dispatch did not finish within 2 s") and lines[0].endswith("hung: True")
    assert lines[1:] == ["again: DeviceLost", "closed"]  # every later call: the device is lost
    assert issubclass(vk.DeviceTimeout, vk.DeviceLost)


def test_reference_step_budget_and_time_limit_from_python():
    words = text.assemble(LOOP.format(limit=4294967295, compare="ULessThanEqual"))
    for options, says in (({"max_blocks": 5000}, "step budget: more than 5000"), ({"time_limit": 0.5}, "time limit")):
        ex = Executor(**options)
        with pytest.raises(ExecutionLimitError, match=says):
            ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ex.buffer(np.zeros(4, np.uint32))})
    finite = text.assemble(LOOP.format(limit=3000, compare="ULessThan"))
    ex = Executor(max_blocks=100_000, time_limit=60)
    buf = ex.buffer(np.zeros(4, np.uint32))
    ex.dispatch(ex.kernel(finite), (1, 1, 1), {0: buf})
    assert ex.read(buf, np.uint32)[0] == 3000
    for bad in ({"max_blocks": 0}, {"time_limit": -1}, {"time_limit": "10"}):
        with pytest.raises(Exception, match="must be a positive"):
            Executor(**bad)


@pytest.mark.vulkan
def test_a_cpu_device_waits_longer_by_default():
    """lavapipe compiles a pipeline at its first dispatch on cores it shares with everything else: 600 s by default
    (a head-dim-256 attention's first dispatch passed 60 s on a loaded 2-core machine); a GPU keeps 60 s."""
    from hydroplane.vk.sync import CPU_TIMEOUT_NS, DEFAULT_TIMEOUT_NS

    (info, *_) = vk.devices()
    with vk.Device(info) as device:
        assert info.device_type == "cpu"  # lavapipe, in the test userland
        assert device.timeout_ns == CPU_TIMEOUT_NS == 600 * 10 ** 9
        device.set_timeout(2)
        assert device.timeout_ns == 2 * 10 ** 9
    assert DEFAULT_TIMEOUT_NS == 60 * 10 ** 9
