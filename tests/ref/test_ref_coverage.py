"""The coverage table of docs/ref.md is generated (tools/gen_ref_coverage.py) and current, and the
instructions it calls refused are refused by name when a module holding one is run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from conftest import REPO
from ref_helpers import spirv_text

from hydroplane.ref import Executor, UnsupportedInstructionError

_spec = importlib.util.spec_from_file_location("gen_ref_coverage", REPO / "tools" / "gen_ref_coverage.py")
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)


def test_coverage_table_in_docs_is_current():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_ref_coverage.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_every_compute_glsl_std_450_instruction_is_supported():
    rows = coverage.glsl_rows()
    assert len(rows) == 77 and all(status == "supported" for _, _, status in rows)
    names = {name for _, name, _ in rows}
    assert {"Determinant", "MatrixInverse", "ModfStruct", "FrexpStruct", "Refract", "UnpackDouble2x32"} <= names
    assert not names & {"IMix", "InterpolateAtCentroid", "InterpolateAtSample", "InterpolateAtOffset"}


def test_the_rule_leaves_out_other_execution_models():
    names = {name for _, name, _ in coverage.core_rows()}
    assert {"OpFAdd", "OpGroupNonUniformIAdd", "OpCooperativeMatrixMulAddKHR", "OpImageRead"} <= names
    # OpenCL, geometry, ray tracing, mesh, fragment-only, Intel FPGA
    assert not names & {"OpEnqueueKernel", "OpEmitVertex", "OpTraceRayKHR", "OpSetMeshOutputsEXT", "OpKill",
                        "OpDemoteToHelperInvocation", "OpSubgroupShuffleINTEL", "OpReadPipe"}


HEAD = """
               OpCapability Shader
               OpCapability Int64
               OpCapability GroupNonUniform
               OpCapability DerivativeControl
               OpCapability Groups
               OpCapability ShaderClockKHR
               OpCapability ExpectAssumeKHR
               OpCapability QuadControlKHR
               OpCapability VariablePointers
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
{decorations}
       %void = OpTypeVoid
       %bool = OpTypeBool
       %true = OpConstantTrue %bool
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
   %subgroup = OpConstant %uint 3
      %float = OpTypeFloat 32
        %one = OpConstant %float 1
        %ptr = OpTypePointer Private %float
          %v = OpVariable %ptr Private
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
{body}
               OpReturn
               OpFunctionEnd
"""

# A sample of the refused instructions, each in a module of its own (the body, or module-level text).
REFUSED_SAMPLE = {
    "OpFwidth": "%r = OpFwidth %float %one",
    "OpGroupIAdd": "%r = OpGroupIAdd %uint %subgroup Reduce %subgroup",
    "OpReadClockKHR": "%r = OpReadClockKHR %ulong %subgroup",
    "OpExpectKHR": "%r = OpExpectKHR %float %one %one",
    "OpGroupNonUniformQuadAnyKHR": "%r = OpGroupNonUniformQuadAnyKHR %bool %true",
    "OpPtrEqual": "%r = OpPtrEqual %bool %v %v",
    "OpCopyMemorySized": "OpCopyMemorySized %v %v %subgroup",
    "OpDecorationGroup": None,  # module level: refused when the module is loaded
}


@pytest.mark.parametrize("name", sorted(REFUSED_SAMPLE))
def test_refused_instructions_are_refused_by_name(name):
    table = {row_name: status for _, row_name, status in coverage.core_rows()}
    assert table[name] == "refused"
    body = REFUSED_SAMPLE[name]
    decorations = "%group = OpDecorationGroup" if body is None else ""
    words = spirv_text(HEAD.format(decorations=decorations, body=body or ""))
    ex = Executor()
    with pytest.raises(UnsupportedInstructionError) as err:
        ex.dispatch(ex.kernel(words), (1, 1, 1), {})
    assert name in str(err.value)
