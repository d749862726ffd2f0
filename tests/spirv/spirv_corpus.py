"""The GLSL round-trip corpus (tests/spirv/corpus/*.comp) compiled by glslang, once per session.

`corpus_binaries` is a session fixture: {shader name: bytes of its SPIR-V}, compiled with
`glslangValidator -V --target-env vulkan1.3` into a session temporary folder. A shader that
fails to compile fails the tests that use the corpus. Test modules import the fixture:
`from spirv_corpus import corpus_binaries, CORPUS_NAMES`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import run_tool

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
CORPUS_NAMES = sorted(p.stem for p in CORPUS_DIR.glob("*.comp"))

_compiled: dict[str, bytes] = {}  # process-wide cache: several test modules share one compile


@pytest.fixture(scope="session")
def corpus_binaries(glslang, tmp_path_factory) -> dict[str, bytes]:
    if not _compiled:
        out = tmp_path_factory.mktemp("spirv_corpus")

        def compile_one(name: str) -> tuple[str, bytes]:
            spv = out / f"{name}.spv"
            run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(CORPUS_DIR / f"{name}.comp"), "-o", str(spv)])
            return name, spv.read_bytes()

        with ThreadPoolExecutor(max_workers=4) as pool:
            _compiled.update(pool.map(compile_one, CORPUS_NAMES))
    return _compiled
