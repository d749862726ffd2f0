"""The runnable examples in examples/language/ compute the right numbers on ref and on Vulkan device 0."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO
from lang_helpers import validate_compiled

from hydroplane.launch.jit import JitKernel

pytestmark = pytest.mark.vulkan
EXAMPLES = sorted((REPO / "examples" / "language").glob("*.py"))


def _load(path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_examples():
    assert {p.stem for p in EXAMPLES} >= {"vector_add", "block_sum", "tiled_matmul", "matrix_ext_ops"}


@pytest.mark.parametrize("device", ["ref", 0])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, device):
    module = _load(path)
    where = module.main(device)  # each main() checks its results against NumPy
    assert where.startswith("ref" if device == "ref" else "vk:0")
    assert validate_compiled(v for v in vars(module).values() if isinstance(v, JitKernel)) >= 1
