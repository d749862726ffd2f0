"""The nasty modules of issue 9 ("What was found"), written in assembly text, and a runner that runs one in a
subprocess (`hydroplane run`, or a small Python driver for what the CLI cannot bind) so that a crash fails
the test that ran it, not the test run.

Every module starts from one of two templates: STORE (each invocation writes 2*x to buf[x + OFFSET]; its
block's array and decorations are parameters) and COOP (a subgroup loads a ROWS x ROWS f32 accumulator
matrix from the buffer and stores it back). `run_cli(module, device, ...)` returns a finished `Outcome`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

from hydroplane.spirv import text
from hydroplane.spirv.binary import to_bytes

RUN_LIMIT_S = 600  # a hang guard, not a speed bound: generous enough for a loaded 2-core machine

STORE = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid %buf {extra_interface}
               OpExecutionMode %main LocalSize {lsx} {lsy} {lsz}
               {builtin}
               {extra_decorations}
               OpDecorate %arr ArrayStride {stride}
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset {offset}
               OpDecorate %buf DescriptorSet {dset}
               OpDecorate %buf Binding {binding}
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
     %v3uint = OpTypeVector %uint 3
      %ptr_i = OpTypePointer Input %v3uint
      %ptr_u = OpTypePointer Input %uint
     %length = OpConstant %uint {length}
        %arr = {array}
        %blk = OpTypeStruct %arr
      %ptr_b = OpTypePointer StorageBuffer %blk
     %ptr_sb = OpTypePointer StorageBuffer %uint
        %gid = OpVariable %ptr_i Input
        %buf = OpVariable %ptr_b StorageBuffer
               {extra_types}
      %uint0 = OpConstant %uint 0
      %uint2 = OpConstant %uint 2
      %shift = OpConstant %uint {index_offset}
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %px = OpAccessChain %ptr_u %gid %uint0
          %x = OpLoad %uint %px
          %i = OpIAdd %uint %x %shift
          %p = OpAccessChain %ptr_sb %buf %uint0 %i
         %v2 = OpIMul %uint %x %uint2
               OpStore %p %v2
               OpReturn
               OpFunctionEnd
"""
STORE_DEFAULTS = dict(lsx=64, lsy=1, lsz=1, builtin="OpDecorate %gid BuiltIn GlobalInvocationId", stride=4, offset=0,
                      dset=0, binding=0, length=16, array="OpTypeRuntimeArray %uint", index_offset=0,
                      extra_interface="", extra_decorations="", extra_types="")
IMAGE = dict(extra_interface="%image", extra_decorations="OpDecorate %image DescriptorSet 0\n"
             "OpDecorate %image Binding 1", extra_types="%float = OpTypeFloat 32\n"
             "%img = OpTypeImage %float 2D 0 0 0 2 R32f\n%ptr_img = OpTypePointer UniformConstant %img\n"
             "%image = OpVariable %ptr_img UniformConstant")

COOP = """
               OpCapability Shader
               OpCapability VulkanMemoryModel
               OpCapability CooperativeMatrixKHR
               OpExtension "SPV_KHR_cooperative_matrix"
               OpMemoryModel Logical Vulkan
               OpEntryPoint GLCompute %main "main" %buf
               OpExecutionMode %main LocalSize 8 1 1
               OpDecorate %arr ArrayStride 4
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
      %float = OpTypeFloat 32
        %arr = OpTypeRuntimeArray %float
        %blk = OpTypeStruct %arr
      %ptr_b = OpTypePointer StorageBuffer %blk
     %ptr_sf = OpTypePointer StorageBuffer %float
        %buf = OpVariable %ptr_b StorageBuffer
      %uint0 = OpConstant %uint 0
   %subgroup = OpConstant %uint 3
        %acc = OpConstant %uint 2
       %rows = OpConstant %uint {rows}
        %mat = OpTypeCooperativeMatrixKHR %float %subgroup %rows %rows %acc
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %p = OpAccessChain %ptr_sf %buf %uint0 %uint0
          %m = OpCooperativeMatrixLoadKHR %mat %p %uint0 %rows
         %m2 = OpFAdd %mat %m %m
               OpCooperativeMatrixStoreKHR %p %m2 %uint0 %rows
               OpReturn
               OpFunctionEnd
"""

LOOP = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %buf
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %arr ArrayStride 4
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
       %bool = OpTypeBool
        %arr = OpTypeRuntimeArray %uint
        %blk = OpTypeStruct %arr
      %ptr_b = OpTypePointer StorageBuffer %blk
     %ptr_sb = OpTypePointer StorageBuffer %uint
        %buf = OpVariable %ptr_b StorageBuffer
      %uint0 = OpConstant %uint 0
      %uint1 = OpConstant %uint 1
      %limit = OpConstant %uint {limit}
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %p = OpAccessChain %ptr_sb %buf %uint0 %uint0
               OpBranch %header
     %header = OpLabel
               OpLoopMerge %merge %body None
               OpBranch %body
       %body = OpLabel
          %v = OpLoad %uint %p
         %v1 = OpIAdd %uint %v %uint1
               OpStore %p %v1
          %c = Op{compare} %bool %v1 %limit
               OpBranchConditional %c %header %merge
      %merge = OpLabel
               OpReturn
               OpFunctionEnd
"""

LOCAL_ARRAY = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %buf {shared_var}
               OpExecutionMode %main LocalSize 1 1 1
               OpDecorate %arr ArrayStride 4
               OpDecorate %blk Block
               OpMemberDecorate %blk 0 Offset 0
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
        %arr = OpTypeRuntimeArray %uint
        %blk = OpTypeStruct %arr
      %ptr_b = OpTypePointer StorageBuffer %blk
     %ptr_sb = OpTypePointer StorageBuffer %uint
        %buf = OpVariable %ptr_b StorageBuffer
      %uint0 = OpConstant %uint 0
      %uint5 = OpConstant %uint 5
      %count = OpConstant %uint {count}
        %big = OpTypeArray %uint %count
      %ptr_f = OpTypePointer {storage} %big
     %ptr_fu = OpTypePointer {storage} %uint
     {global_var}
       %main = OpFunction %void None %fn
      %entry = OpLabel
     {function_var}
         %p0 = OpAccessChain %ptr_sb %buf %uint0 %uint0
         %ix = OpLoad %uint %p0
         %pe = OpAccessChain %ptr_fu %loc %ix
               OpStore %pe %uint5
          %v = OpLoad %uint %pe
         %p1 = OpAccessChain %ptr_sb %buf %uint0 %uint5
               OpStore %p1 %v
               OpReturn
               OpFunctionEnd
"""


def store_module(**changes) -> str:
    return STORE.format(**{**STORE_DEFAULTS, **changes})


def local_array_module(count: int, storage: str = "Function") -> str:
    if storage == "Function":
        return LOCAL_ARRAY.format(count=count, storage=storage, shared_var="", global_var="",
                                  function_var="%loc = OpVariable %ptr_f Function")
    return LOCAL_ARRAY.format(count=count, storage=storage, shared_var="%loc", function_var="",
                              global_var=f"%loc = OpVariable %ptr_f {storage}")


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def error_line(self) -> str:
        """The one stderr line of a clean refusal (asserts it is exactly one `hydroplane: error:` line)."""
        lines = self.stderr.strip().splitlines()
        assert self.returncode == 1, f"exit status {self.returncode}, stderr: {self.stderr[-2000:]}"
        assert len(lines) == 1 and lines[0].startswith("hydroplane: error: "), self.stderr[-2000:]
        return lines[0]

    def assert_clean_success(self) -> None:
        assert self.returncode == 0, f"exit status {self.returncode}, stderr: {self.stderr[-2000:]}"
        assert self.stderr.strip() == "", self.stderr[-2000:]


def write_module(tmp_path: Path, name: str, assembly: str) -> Path:
    path = tmp_path / f"{name}.spv"
    path.write_bytes(to_bytes(text.assemble(assembly)))
    return path


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONWARNINGS="default")


def run_cli(module: Path, device: str, *args: str, limit_s: float = RUN_LIMIT_S) -> Outcome:
    """`hydroplane run MODULE --device D ARGS...` in a subprocess; a signal or a hang fails here."""
    return run_process([sys.executable, "-m", "hydroplane", "run", str(module), "--device", device, *args], limit_s)


DRIVER = """
import sys, numpy as np
from hydroplane.errors import HydroplaneError
from hydroplane.launch.executors import RawBytes, run
from pathlib import Path
words = Path(sys.argv[1]).read_bytes()
device = sys.argv[2] if sys.argv[2] == "ref" else int(sys.argv[2])
keys = [tuple(int(k) for k in key.split(",")) for key in sys.argv[3].split(";")]
key = keys[0]
try:
    out = run(words, (1, 1, 1), {k: RawBytes(np.zeros(int(sys.argv[4]), np.uint32)) for k in keys}, device=device)
except HydroplaneError as exc:
    print(f"hydroplane: error: {exc}", file=sys.stderr)
    sys.exit(1)
np.save(sys.argv[5], out[key])
"""


def run_driver(module: Path, device: str, key: str, count: int, out: Path) -> Outcome:
    """run(words, buffers={(set, binding): zeros(count, uint32)}, device=D) in a subprocess (`key` 'S,B', or
    several 'S,B;S,B'), the first key's buffer saved to out."""
    return run_process([sys.executable, "-c", DRIVER, str(module), device, key, str(count), str(out)], RUN_LIMIT_S)


def run_process(argv: list[str], limit_s: float) -> Outcome:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit_s, env=_env())
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hung: no exit within {limit_s} s: {argv}\n{exc.stderr}") from None
    outcome = Outcome(proc.returncode, proc.stdout, proc.stderr)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {argv}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return outcome
