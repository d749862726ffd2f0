"""Benchmark: decode + encode (and disassemble + assemble) of a ~1 MB SPIR-V module.

The module is synthetic but shaped like compiler output: a header of capabilities, names,
decorations, scalar/vector/pointer types and 32/64-bit constants, then functions whose
blocks do loads, arithmetic, GLSL.std.450 calls, stores, selection merges and switches
(with 64-bit case literals), repeated until the module reaches the requested size.
Run: `PYTHONPATH=src python3 benchmarks/spirv_codec.py [--mbytes 1.0] [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import platform
import time

from hydroplane.spirv import binary, text

PROLOGUE = """\
OpCapability Shader
OpCapability Int64
OpCapability Float64
%glsl = OpExtInstImport "GLSL.std.450"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 64 1 1
OpName %main "main"
OpName %gid "gl_GlobalInvocationID"
OpName %Buf "Buf"
OpMemberName %Buf 0 "data"
OpName %buf "buf"
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rt ArrayStride 4
OpDecorate %Buf Block
OpMemberDecorate %Buf 0 Offset 0
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fnvoid = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%ulong = OpTypeInt 64 0
%float = OpTypeFloat 32
%double = OpTypeFloat 64
%v3uint = OpTypeVector %uint 3
%ptr_in_v3uint = OpTypePointer Input %v3uint
%gid = OpVariable %ptr_in_v3uint Input
%rt = OpTypeRuntimeArray %float
%Buf = OpTypeStruct %rt
%ptr_sb_Buf = OpTypePointer StorageBuffer %Buf
%ptr_sb_float = OpTypePointer StorageBuffer %float
%ptr_in_uint = OpTypePointer Input %uint
%buf = OpVariable %ptr_sb_Buf StorageBuffer
%int_0 = OpConstant %int 0
%uint_0 = OpConstant %uint 0
%uint_7 = OpConstant %uint 7
%float_half = OpConstant %float 0.5
%float_3 = OpConstant %float 3.25
%double_pi = OpConstant %double 3.1415926535897931
%ulong_big = OpConstant %ulong 0x123456789abcdef0
"""

FUNCTION_HEAD = """\
%fn{n} = OpFunction %void None %fnvoid
%entry{n} = OpLabel
%p{n} = OpAccessChain %ptr_in_uint %gid %uint_0
%i{n} = OpLoad %uint %p{n}
"""

BLOCK = """\
%a{n}_{k} = OpAccessChain %ptr_sb_float %buf %int_0 %i{n}
%x{n}_{k} = OpLoad %float %a{n}_{k} Aligned 4
%y{n}_{k} = OpFMul %float %x{n}_{k} %float_half
%z{n}_{k} = OpExtInst %float %glsl Sqrt %y{n}_{k}
%w{n}_{k} = OpFAdd %float %z{n}_{k} %float_3
%c{n}_{k} = OpFOrdLessThan %bool %w{n}_{k} %float_3
%m{n}_{k} = OpIAdd %uint %i{n} %uint_7
%l{n}_{k} = OpUConvert %ulong %m{n}_{k}
OpStore %a{n}_{k} %w{n}_{k} Aligned 4
OpSelectionMerge %merge{n}_{k} None
OpSwitch %l{n}_{k} %merge{n}_{k} 1 %case{n}_{k} 0x100000000 %case{n}_{k}
%case{n}_{k} = OpLabel
OpBranch %merge{n}_{k}
%merge{n}_{k} = OpLabel
"""

FUNCTION_TAIL = """\
OpReturn
OpFunctionEnd
"""

MAIN = """\
%main = OpFunction %void None %fnvoid
%main_entry = OpLabel
OpReturn
OpFunctionEnd
"""


def synthetic_module(target_bytes: int, blocks_per_function: int = 64):
    """Words of a valid-looking module of about target_bytes bytes."""
    parts = [PROLOGUE]
    size = 0
    n = 0
    block_bytes = None
    while size < target_bytes:
        body = [FUNCTION_HEAD.format(n=n)]
        body += [BLOCK.format(n=n, k=k) for k in range(blocks_per_function)]
        body.append(FUNCTION_TAIL)
        parts.append("".join(body))
        if block_bytes is None:
            block_bytes = len(text.assemble("".join(parts) + MAIN)) * 4
        size = block_bytes * (n + 1)
        n += 1
    parts.append(MAIN)
    return text.assemble("".join(parts))


class Timing:
    """Best wall-clock and best CPU time of several runs (CPU time is steadier on a shared machine)."""

    def __init__(self, repeat: int, func):
        self.wall = self.cpu = float("inf")
        for _ in range(repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            func()
            self.wall = min(self.wall, time.perf_counter() - wall)
            self.cpu = min(self.cpu, time.process_time() - cpu)

    def __str__(self) -> str:
        return f"{self.wall:.3f} s wall, {self.cpu:.3f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mbytes", type=float, default=1.0, help="module size in MiB (default 1)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts")
    args = parser.parse_args()
    words = synthetic_module(int(args.mbytes * (1 << 20)))
    data = binary.to_bytes(words)
    module = binary.decode(data)
    assert binary.encode(module) == words, "decode+encode changed the module"
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.processor() or 'cpu'})")
    print(f"module: {len(data)} bytes, {len(words)} words, {len(module.instructions)} instructions")
    codec = Timing(args.repeat, lambda: binary.encode(binary.decode(data)))
    print(f"decode+encode: {codec} (best of {args.repeat})")
    print(f"decode alone:  {Timing(args.repeat, lambda: binary.decode(data))}")
    print(f"encode alone:  {Timing(args.repeat, lambda: binary.encode(module))}")
    source = text.disassemble(module, raw_id=True)
    runs = max(1, args.repeat // 2)
    print(f"disassemble (raw ids): {Timing(runs, lambda: text.disassemble(module, raw_id=True))}, "
          f"{len(source)} characters")
    print(f"assemble (preserve ids): {Timing(runs, lambda: text.assemble(source, preserve_numeric_ids=True))}")

if __name__ == "__main__":
    main()
