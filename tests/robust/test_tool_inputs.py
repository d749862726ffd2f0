"""The SPIR-V tools on issue 9's inputs, through the CLI in a subprocess: one `hydroplane: error:` line with
where (line and column, word offset), never a traceback.
"""

from __future__ import annotations

import sys

import pytest
from nasty_modules import run_process, store_module

from hydroplane.spirv import text
from hydroplane.spirv.binary import SpirvError, to_bytes

HEADER = "OpCapability Shader\nOpMemoryModel Logical GLSL450\n"


@pytest.mark.parametrize("ident,fits", [("%4294967295", False), ("%4294967294", True)])
def test_assembler_keeps_room_for_the_bound(tmp_path, ident, fits):
    source = tmp_path / "m.spvasm"
    source.write_text(HEADER + f"{ident} = OpTypeVoid\n")
    outcome = run_process([sys.executable, "-m", "hydroplane", "spirv", "as", "--preserve-numeric-ids", str(source),
                           "-o", str(tmp_path / "m.spv")], 60)
    if fits:
        assert outcome.returncode == 0, outcome.stderr
        assert text.disassemble((tmp_path / "m.spv").read_bytes(), raw_id=True).count("%4294967294 = OpTypeVoid") == 1
    else:
        line = outcome.error_line
        assert "line 3, column 1" in line and "leaves no room for the header's bound" in line
    with pytest.raises(SpirvError, match="does not fit in the header"):
        text.assemble(HEADER, bound=1 << 32)


def test_reflect_cli_on_a_variable_of_an_undefined_type(tmp_path):
    assembly = store_module().replace("%buf = OpVariable %ptr_b StorageBuffer",
                                      "%buf = OpVariable %nothing StorageBuffer")
    module = tmp_path / "m.spv"
    module.write_bytes(to_bytes(text.assemble(assembly)))
    line = run_process([sys.executable, "-m", "hydroplane", "spirv", "reflect", str(module)], 60).error_line
    assert "is used as a type but never defined" in line and "word " in line
