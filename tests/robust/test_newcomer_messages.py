"""What a newcomer meets on a bare machine says what to do: `hydroplane devices` without a Vulkan loader or driver
points at `--device ref`; `validate(words)` without spirv-val says where spirv-val comes from (the spirv-tools
package, HYDROPLANE_SPIRV_VAL). Each in a subprocess with the environment of such a machine."""

from __future__ import annotations

import json
import linecache
import os
import subprocess
import sys

import numpy as np
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
def test_devices_without_vulkan_lists_the_reference_executor(env, says, json_flag):
    proc = _hydroplane("devices", *json_flag, **env)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("hydroplane: note: no Vulkan device (") and says in line, line
    assert "`--device ref` runs kernels on hydroplane's reference executor" in line
    assert "hydroplane gemm 256 256 256 --device ref" in line
    if json_flag:
        data = json.loads(proc.stdout)  # one JSON document, as with devices
        assert data["devices"] == [] and data["reference"]["device"] == "ref" and says in data["vulkan_error"]
    else:
        assert proc.stdout.startswith("device ") and "hydroplane reference executor" in proc.stdout
        assert "ref" in proc.stdout.splitlines()[0]


def test_devices_lists_the_reference_executor_beside_vulkan_devices():
    proc = _hydroplane("devices", "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    data = json.loads(proc.stdout)
    assert data["devices"] and data["vulkan_error"] is None and data["reference"]["device"] == "ref"


def test_gemm_sweep_on_ref_says_why_it_stops_at_1024():
    script = ("import sys; from hydroplane import cli; from hydroplane.ops import gemm_command as g; "
              "g.SWEEP_REFERENCE_LARGEST = 256; sys.exit(cli.main(['gemm', '4096', '4096', '4096', '--sweep', "
              "'--repeat', '1']))")  # the cap lowered to 256 so that the test runs in seconds
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src"),
                                   HYDROPLANE_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("sweep on ref") and "no Vulkan device" in lines[1]
    assert "the sweep stops at 256 so that the reference executor finishes" in lines[1]
    assert "--device ref sweeps up to the size asked" in lines[1]
    assert [line.split()[1] for line in lines[2:]] == ["128", "256"]


KERNEL = """
import numpy as np
import hydroplane
from hydroplane.lang import Buffer, f32


@hydroplane.kernel(local_size=1)
def inc(x: Buffer[f32]):
    x[0] = x[0] + 1.0


x = np.zeros(4, np.float32)
inc[1](x, device="ref")
print(x[0])
"""


def test_a_kernel_from_piped_stdin_says_why_it_cannot_compile():
    proc = subprocess.run([sys.executable, "-"], input=KERNEL, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "the source of 'inc' is not available: it was defined in <stdin>" in last, proc.stderr
    assert "define it in a .py file" in last and "Jupyter or IPython cell" in last


@pytest.mark.parametrize("device", ["ref", pytest.param(0, marks=pytest.mark.vulkan)])
def test_a_kernel_in_a_notebook_cell_compiles(device):
    """IPython and Jupyter keep each cell's source in linecache under a name of their own: the kernel compiles."""
    cell = KERNEL.replace('device="ref"', f"device={device!r}").replace("print(x[0])", "")
    name = f"<ipython-input-{device}-issue23>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    try:
        scope: dict = {}
        exec(compile(cell, name, "exec"), scope)  # noqa: S102 -- what a notebook does with a cell
    finally:
        linecache.cache.pop(name, None)
    np.testing.assert_array_equal(scope["x"], [1, 0, 0, 0])


def test_tiled_matmul_example_picks_the_best_device_without_vulkan():
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "language" / "tiled_matmul.py")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src"),
                                   HYDROPLANE_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1"))
    assert proc.returncode == 0 and proc.stdout.startswith("matmul: correct on ref"), proc.stderr
    assert "Traceback" not in proc.stderr


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


def test_the_readme_spirv_snippet_runs_without_spirv_val(monkeypatch, tmp_path):
    """The README's first Python block runs on a machine without spirv-val (or with an old one: it does not call
    the validator); the sentence after it says which spirv-val validate() needs."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "coop_matmul_tile" in block and "validate(words)" not in block
    after = readme.split(block, 1)[1][:600]
    assert "2026.4 or newer" in after and "ValidatorNotFound" in after and "ValidatorTooOld" in after
    monkeypatch.delenv("HYDROPLANE_SPIRV_VAL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # a host without spirv-val
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102 -- the user's copy and paste


def test_without_a_loader_device_n_raises_the_ops_own_class_and_the_default_is_ref():
    """No Vulkan loader: device=0 is each op's error (MatmulError, AttentionError, both HydroplaneErrors), and
    device=None (the default device) is the reference executor."""
    script = """
import numpy as np, hydroplane
a = np.ones((16, 16), np.float16)
q = a[None, None]
for call, cls in ((lambda: hydroplane.matmul(a, a, device=0), hydroplane.MatmulError),
                  (lambda: hydroplane.attention(q, q, q, device=0), hydroplane.AttentionError)):
    try:
        call()
    except cls as err:
        assert "Vulkan loader" in str(err), err
    else:
        raise SystemExit("no error")
assert hydroplane.default_device() == "ref"
assert (hydroplane.matmul(a, a) == 16).all()
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src"),
                                   HYDROPLANE_VULKAN_LIBRARY="/nonexistent/libvulkan.so.1"))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
