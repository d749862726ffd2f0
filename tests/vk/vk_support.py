"""Shared pieces of the Vulkan runtime tests (imported by each test module; not a conftest.py, so that
`from conftest import ...` keeps meaning tests/conftest.py): one validated instance and device for
the whole run, GLSL compiled with glslang at test time, spirv-val, and an autouse check after every
test runs with the validated instance (tests/conftest.py checks that the layer said nothing)."""

from __future__ import annotations

import atexit
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hydroplane.vk import Device, Instance, devices, validation_requested

SHADERS = Path(__file__).resolve().parent / "shaders"


_SHARED: dict = {}


@atexit.register
def _close_shared() -> None:
    for key in ("device", "instance"):
        if key in _SHARED:
            _SHARED[key].close()


def shared_instance() -> Instance:
    """The run's instance; validation follows HYDROPLANE_VALIDATION (scripts/test sets it to 1)."""
    if "instance" not in _SHARED or _SHARED["instance"].closed:
        _SHARED["instance"] = Instance(validation=validation_requested())
    return _SHARED["instance"]


@pytest.fixture
def vk_instance():
    return shared_instance()


@pytest.fixture
def vk_info(vk_instance):
    """The cooperative-matrix device the suite runs on (lavapipe in the test userland)."""
    found = [d for d in devices(vk_instance) if d.cooperative_matrix_khr]
    if not found:
        pytest.fail("no Vulkan device offers VK_KHR_cooperative_matrix; run the suite through scripts/test")
    return found[0]


@pytest.fixture
def device(vk_info):
    """A Device with every feature the physical device offers (as a launch layer would make), shared."""
    if "device" not in _SHARED or _SHARED["device"].closed:
        _SHARED["device"] = Device(vk_info, enable_all=True)
    return _SHARED["device"]


@pytest.fixture(autouse=True)
def validated_instance():
    """Every vk test runs with the shared validated instance alive; tests/conftest.py fails a
    test during which any validation message arrived."""
    shared_instance()


def compile_glsl(glslang: str, name: str, tmp_path: Path, defines: dict | None = None) -> np.ndarray:
    """Compile tests/vk/shaders/<name> for Vulkan 1.3 with glslang; the SPIR-V words."""
    out = tmp_path / (name + ".spv")
    argv = [glslang, "--target-env", "vulkan1.3", "-o", str(out)]
    argv += [f"-D{k}={v}" for k, v in (defines or {}).items()]
    proc = subprocess.run(argv + [str(SHADERS / name)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"glslang failed on {name}:\n{proc.stdout}\n{proc.stderr}")
    return np.fromfile(out, dtype="<u4")


def spirv_validate(spirv_val: str, words, tmp_path: Path, name: str = "module") -> None:
    """Run spirv-val --target-env vulkan1.3 on words; fail the test with its message."""
    path = tmp_path / f"{name}.spv"
    np.asarray(words, dtype="<u4").tofile(path)
    proc = subprocess.run([spirv_val, "--target-env", "vulkan1.3", str(path)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"spirv-val rejects {name}:\n{proc.stdout}{proc.stderr}")
