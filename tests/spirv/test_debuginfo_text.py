"""Modules with debug-info extended instruction sets (glslang -g / -gVS) read like spirv-dis writes them.

The generated grammar tabulates every extended set spirv-tools names, and the registry's
generator ids, so our disassembly of glslang's debug output equals spirv-dis's line for line,
and spirv-as accepts it (spirv-as insists on instruction names for the sets it knows).
"""

import pytest
from conftest import run_tool

from hydroplane.spirv import disassemble

SHADER = """#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer B { float v[]; };
float twice(float x) { return 2.0 * x; }
void main() { v[gl_GlobalInvocationID.x] = twice(sqrt(v[gl_GlobalInvocationID.x])); }
"""


@pytest.mark.parametrize("flag", ["-g", "-gVS"])
def test_debug_info_module_matches_spirv_dis(flag, glslang, spirv_dis, spirv_as, tmp_path):
    src = tmp_path / "d.comp"
    src.write_text(SHADER)
    spv = tmp_path / "d.spv"
    run_tool([glslang, "-V", "--target-env", "vulkan1.3", flag, str(src), "-o", str(spv)])
    words = spv.read_bytes()
    ours = disassemble(words)
    theirs = run_tool([spirv_dis, str(spv)]).stdout.decode()
    assert ours.splitlines() == theirs.splitlines()
    if flag == "-gVS":
        assert "NonSemantic.Shader.DebugInfo." in ours and "DebugCompilationUnit" in ours and "DebugTypeBasic" in ours
    assert "Khronos Glslang Reference Front End" in ours
    listing = tmp_path / "d.spvasm"
    listing.write_text(disassemble(words, raw_id=True))
    out = tmp_path / "back.spv"
    run_tool([spirv_as, "--preserve-numeric-ids", "--target-env", "spv1.6", str(listing), "-o", str(out)])
    assert out.read_bytes()[20:] == words[20:]  # the header's generator word is spirv-as's own
