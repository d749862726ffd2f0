"""What a newcomer meets on a bare machine says what to do: `hydroplane devices` without a Vulkan loader or driver
points at `--device ref`; `validate(words)` without spirv-val says where spirv-val comes from (the spirv-tools
package, HYDROPLANE_SPIRV_VAL). Each in a subprocess with the environment of such a machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from hydroplane.spirv import text
from hydroplane.spirv.validation import ValidatorNotFound, validate


def _hydroplane(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hydroplane", *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src"), **env))


@pytest.mark.parametrize("env, says", [
    ({"HYDROPLANE_VULKAN_LIBRARY": "/nonexistent/libvulkan.so.1"}, "cannot load the Vulkan loader"),
    ({"VK_DRIVER_FILES": "/nonexistent/icd.json", "VK_ICD_FILENAMES": "/nonexistent/icd.json"},
     "VK_ERROR_INCOMPATIBLE_DRIVER"),
], ids=["no loader", "no driver"])
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["table", "json"])
def test_devices_without_vulkan_points_at_the_reference_executor(env, says, json_flag):
    proc = _hydroplane("devices", *json_flag, **env)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line.startswith("hydroplane: error: ") and says in line, line
    assert "`--device ref` runs kernels on hydroplane's reference executor" in line
    assert "hydroplane gemm 256 256 256 --device ref" in line


def test_the_suggested_reference_run_works_without_vulkan():
    proc = _hydroplane("gemm", "16", "16", "16", "--device", "ref", "--repeat", "1",
                       HYDROPLANE_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1")
    assert proc.returncode == 0 and "check   ok" in proc.stdout, proc.stderr


MODULE = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
"""


def test_validate_without_spirv_val_says_where_to_get_it(monkeypatch, tmp_path):
    words = text.assemble(MODULE)
    monkeypatch.delenv("HYDROPLANE_SPIRV_VAL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # a host without spirv-val
    with pytest.raises(ValidatorNotFound) as caught:
        validate(words)
    message = str(caught.value)
    assert "spirv-val not found on PATH" in message
    assert "spirv-tools package" in message and "apt install spirv-tools" in message and "2026.4" in message
    assert "HYDROPLANE_SPIRV_VAL" in message and "\n" not in message
    monkeypatch.setenv("HYDROPLANE_SPIRV_VAL", str(tmp_path / "spirv-val"))
    with pytest.raises(ValidatorNotFound, match=r"HYDROPLANE_SPIRV_VAL=.*is not an executable file: point it at a "
                                                r"spirv-val \(it comes with the spirv-tools package"):
        validate(words)
