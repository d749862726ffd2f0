"""`hydroplane spirv dis|as|val` on the command line: outputs, exit codes, one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO
from spirv_corpus import corpus_binaries  # noqa: F401  (fixture)

from hydroplane import cli
from hydroplane.spirv import binary, text

SOURCE = """\
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
         %10 = OpLabel
               OpReturn
               OpFunctionEnd
"""


def hydroplane(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`python -m hydroplane ARGS` in a fresh interpreter (what the console command runs)."""
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run([sys.executable, "-m", "hydroplane", *args], input=stdin, capture_output=True,
                          timeout=120, env=env)


def test_dis_prints_the_listing_and_writes_files(corpus_binaries, tmp_path):
    data = corpus_binaries["coopmat_khr_f16"]
    spv = tmp_path / "m.spv"
    spv.write_bytes(data)
    out = hydroplane("spirv", "dis", str(spv))
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == text.disassemble(data)
    raw = hydroplane("spirv", "dis", "--raw-id", "-", stdin=data)
    assert raw.stdout.decode() == text.disassemble(data, raw_id=True)
    assert cli.main(["spirv", "dis", str(spv), "--raw-id", "-o", str(tmp_path / "m.spvasm")]) == 0
    assert (tmp_path / "m.spvasm").read_text() == text.disassemble(data, raw_id=True)


def test_as_writes_the_binary(tmp_path):
    src = tmp_path / "m.spvasm"
    src.write_text(SOURCE)
    assert cli.main(["spirv", "as", str(src), "-o", str(tmp_path / "a.spv")]) == 0
    assert binary.as_words((tmp_path / "a.spv").read_bytes()) == text.assemble(SOURCE)
    assert cli.main(["spirv", "as", str(src), "-o", str(tmp_path / "b.spv"), "--preserve-numeric-ids"]) == 0
    words = binary.as_words((tmp_path / "b.spv").read_bytes())
    assert words == text.assemble(SOURCE, preserve_numeric_ids=True)
    assert 10 in [i.result_id for i in binary.decode(words).instructions]
    assert cli.main(["spirv", "as", str(src), "-o", str(tmp_path / "c.spv"), "--target-env", "vulkan1.1"]) == 0
    assert binary.decode((tmp_path / "c.spv").read_bytes()).version == (1, 3)


def test_round_trip_through_the_command_line(corpus_binaries, tmp_path):
    data = corpus_binaries["coopmat_nv2_tensor_view"]
    (tmp_path / "in.spv").write_bytes(data)
    assert cli.main(["spirv", "dis", str(tmp_path / "in.spv"), "--raw-id", "-o", str(tmp_path / "x.spvasm")]) == 0
    assert cli.main(["spirv", "as", str(tmp_path / "x.spvasm"), "-o", str(tmp_path / "out.spv"),
                     "--preserve-numeric-ids"]) == 0
    again = (tmp_path / "out.spv").read_bytes()
    assert again[:8] == data[:8] and again[12:] == data[12:]  # all but the generator word


def test_val_passes_valid_and_reports_invalid(corpus_binaries, tmp_path, spirv_val):
    good = tmp_path / "good.spv"
    good.write_bytes(corpus_binaries["coopmat_ext_maint1_transpose"])
    ok = hydroplane("spirv", "val", str(good), "--target-env", "vulkan1.3")
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.spv"
    bad.write_bytes(binary.to_bytes(text.assemble(SOURCE.replace("OpReturn\n", ""))))  # block without terminator
    out = hydroplane("spirv", "val", str(bad))
    assert out.returncode == 1
    lines = out.stderr.decode().strip().splitlines()
    assert lines[0].startswith("hydroplane: error: spirv-val (vulkan1.3) rejected the module")
    assert "Traceback" not in out.stderr.decode()


@pytest.mark.parametrize("args,stdin,message", [
    (["spirv", "as", "-", "-o", "-"], b"OpCapability Shader\n  OpMemoryModel Logical Bogus\n",
     "line 2, column 25: 'Bogus' is not a MemoryModel enumerant"),
    (["spirv", "dis", "-"], b"\x03\x02\x23\x07\x00\x06\x01\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00"
                            b"\x11\x00\x09\x00",
     "word 5: instruction with opcode 17 runs past the end"),
    (["spirv", "dis", "/nonexistent/file.spv"], None, "cannot read /nonexistent/file.spv"),
    (["spirv", "as", "-", "-o", "-", "--target-env", "vulkan9"], b"", "unknown --target-env 'vulkan9'"),
    (["spirv", "as", "-", "-o", "-"], b"\xff\xfe", "is not UTF-8 text"),
])
def test_errors_are_one_line(args, stdin, message):
    out = hydroplane(*args, stdin=stdin)
    assert out.returncode == 1
    err = out.stderr.decode()
    assert err == f"hydroplane: error: {err.split('hydroplane: error: ', 1)[1]}" and len(err.splitlines()) == 1
    assert message in err


def test_as_to_stdout_matches_the_api():
    out = hydroplane("spirv", "as", "-", "-o", "-", stdin=SOURCE.encode())
    assert out.returncode == 0, out.stderr
    assert binary.as_words(out.stdout) == text.assemble(SOURCE)
