"""reflect() on glslang output, and validate() over spirv-val."""


import os
import shutil

import pytest
from conftest import run_tool

from hydroplane.spirv import ValidationError, ValidatorNotFound, reflect, validate, validation
from hydroplane.spirv.binary import SpirvError, decode, encode

SHADER = """
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x_id = 3, local_size_y = 2) in;
layout(constant_id = 7) const int SCALE = -5;
layout(constant_id = 8) const float BIAS = 0.25;
layout(constant_id = 9) const bool FLAG = true;
layout(set = 0, binding = 1) buffer Out { float16_t head[3]; float tail[]; } outb;
layout(set = 1, binding = 0) uniform Params { vec4 v; mat4 m; } params;
layout(push_constant) uniform Push { uint n; double d; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  outb.tail[i] = params.v.x * float(SCALE) + BIAS + float(pc.d) + (FLAG ? 1.0 : 0.0) + float(outb.head[0]);
}
"""


@pytest.fixture(scope="module")
def shader_words(glslang, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reflect")
    src = tmp / "r.comp"
    src.write_text(SHADER)
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", str(src), "-o", str(tmp / "r.spv")])
    return (tmp / "r.spv").read_bytes()


def test_reflect_glslang_module(shader_words):
    iface = reflect(shader_words)
    ep = iface.entry_point("main")
    assert ep.execution_model == "GLCompute"
    assert ep.local_size == (1, 2, 1)  # x comes from spec constant 3 (default 1)
    assert ep.local_size_spec_ids == (3, None, None)
    b0, b1 = iface.bindings
    assert (b0.set, b0.binding, b0.descriptor_type) == (0, 1, "storage_buffer")
    assert b0.size == 8 and b0.runtime_array_stride == 4  # 3 halves padded to the float array at 8
    assert (b1.set, b1.binding, b1.descriptor_type) == (1, 0, "uniform_buffer")
    assert b1.size == 16 + 64
    assert iface.push_constant_size == 16
    specs = {s.spec_id: s for s in iface.spec_constants}
    assert specs[7].default == -5 and specs[7].type.signed
    assert specs[8].default == 0.25 and specs[8].type.kind == "float"
    assert specs[9].default is True
    assert "StorageBuffer16BitAccess" in iface.capabilities and "Float64" in iface.capabilities
    with pytest.raises(SpirvError, match="no entry point 'other'"):
        iface.entry_point("other")


def test_validate_accepts_and_rejects(shader_words, spirv_val):
    validate(shader_words)
    module = decode(shader_words)
    # Drop the OpMemoryModel: the validator must refuse, and we must carry its message.
    module.instructions = [i for i in module.instructions if i.name != "OpMemoryModel"]
    with pytest.raises(ValidationError) as err:
        validate(encode(module))
    assert "MemoryModel" in str(err.value) or "memory model" in str(err.value).lower()


def test_missing_validator_is_an_error(shader_words, monkeypatch, tmp_path):
    monkeypatch.setenv("HYDROPLANE_SPIRV_VAL", str(tmp_path / "no-such-spirv-val"))
    with pytest.raises(ValidatorNotFound, match="HYDROPLANE_SPIRV_VAL"):
        validate(shader_words)
    monkeypatch.delenv("HYDROPLANE_SPIRV_VAL")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ValidatorNotFound, match="spirv-val not found"):
        validate(shader_words)


def test_the_validator_is_found_as_shutil_finds_it(monkeypatch, tmp_path):
    """validation.on_path (spirv-val's look-up, without importing shutil) answers as shutil.which does."""
    for folder, mode in (("a", 0o755), ("b", 0o644), ("c", 0o755)):
        (tmp_path / folder).mkdir()
        tool = tmp_path / folder / "spirv-val"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(mode)
    (tmp_path / "d" / "spirv-val").mkdir(parents=True)  # a folder of that name is no executable
    monkeypatch.chdir(tmp_path / "a")
    for path in (None, "", ":", str(tmp_path / "b"), f"{tmp_path / 'b'}:{tmp_path / 'c'}:{tmp_path / 'a'}",
                 f"{tmp_path / 'd'}:{tmp_path / 'd'}:{tmp_path / 'c'}", str(tmp_path / "missing"), os.environ["PATH"]):
        if path is None:
            monkeypatch.delenv("PATH", raising=False)
        else:
            monkeypatch.setenv("PATH", path)
        assert validation.on_path("spirv-val") == shutil.which("spirv-val"), path
        assert validation.on_path("no-such-tool") is None
