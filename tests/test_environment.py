"""The test environment is real: the tools and a cooperative-matrix Vulkan driver are there."""

import shutil
import subprocess

import pytest


@pytest.mark.parametrize("tool", ["spirv-val", "spirv-as", "spirv-dis", "glslangValidator"])
def test_tool_present(tool):
    assert shutil.which(tool), f"{tool} is missing from the test environment"


def test_vulkaninfo_reports_cooperative_matrix_on_llvmpipe():
    vulkaninfo = shutil.which("vulkaninfo")
    assert vulkaninfo, "vulkaninfo is missing from the test environment"
    out = subprocess.run([vulkaninfo], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "VK_KHR_cooperative_matrix" in out.stdout
    assert "llvmpipe" in out.stdout
