"""Shared fixtures: the external tools the tests need and the shared/ folder.

A missing tool fails the test that needs it: the test userland (scripts/test) has every
tool, so a skip there would hide a broken environment. Nothing in the suite needs data
outside the repository: the ISA tests run on the project's own files (tests/isa/fixture),
the grammar checks on seed 000's facts recorded in tests/spirv/test_grammar.py. Where the
shared folder (../shared, or $HYDROPLANE_SHARED) is present, those tests gain extra
parameters or tests that compare with AMD's excerpts and the seeds; where it is absent those
are never collected, so a clone on its own skips nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


# The library kernels' disk caches (lang/disk_cache.py, the driver's pipeline cache) stay off in the suite, so that
# every test compiles what it tests; tests/lang/test_disk_cache.py and the runtime's cache test turn them on.
os.environ["HYDROPLANE_DISK_CACHE"] = "0"

def shared_dir() -> Path | None:
    """The shared/ folder beside the checkout (HYDROPLANE_SHARED overrides)."""
    env = os.environ.get("HYDROPLANE_SHARED")
    for candidate in ([Path(env)] if env else []) + [REPO.parent / "shared"]:
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    return None


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.fail(f"{name} is not on PATH; run the suite through scripts/test")
    return path


@pytest.fixture(scope="session")
def spirv_as() -> str:
    return require_tool("spirv-as")


@pytest.fixture(scope="session")
def spirv_dis() -> str:
    return require_tool("spirv-dis")


@pytest.fixture(scope="session")
def spirv_val() -> str:
    return require_tool("spirv-val")


@pytest.fixture(scope="session")
def glslang() -> str:
    return require_tool("glslangValidator")


def run_tool(argv: list[str], **kw) -> subprocess.CompletedProcess:
    """Run a tool, failing the test with its stderr when it fails."""
    proc = subprocess.run(argv, capture_output=True, timeout=120, **kw)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace") if isinstance(proc.stderr, bytes) else proc.stderr
        pytest.fail(f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n{err[-4000:]}")
    return proc


@pytest.fixture(autouse=True)
def no_vulkan_validation_messages():
    """Fail any test during which the Vulkan validation layer (on in the test userland) spoke.

    Applies to every test that used hydroplane.vk, directly or through the launch layer: the
    suite must end with zero validation messages.
    """
    import sys

    vk = sys.modules.get("hydroplane.vk")
    if vk is not None:
        vk.take_all_messages()
    yield
    vk = sys.modules.get("hydroplane.vk")
    if vk is None:
        return
    messages = vk.take_all_messages()
    if messages:
        text = "\n".join(f"[{m.severity}] {m.message_id}: {m.text}" for m in messages)
        pytest.fail(f"{len(messages)} Vulkan validation message(s) during the test:\n{text}")
