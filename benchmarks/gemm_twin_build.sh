#!/bin/sh
# Build the GLSL twins of benchmarks/gemm_twin.py into build/twin (run in the test userland: it has glslang).
set -e
mkdir -p build/twin
mk() { name=$1; shift; glslang -V --target-env vulkan1.3 -S comp "$@" benchmarks/gemm_twin.comp -o build/twin/$name.spv >/dev/null; echo built $name; }
mk f32_2x4_4x2_kt2 -DTM=16 -DTN=16 -DTK=16 -DWM=2 -DWN=4 -DSM=4 -DSN=2 -DKT=2 -DIN_T=float16_t -DACC_T=float
mk f16_2x4_4x2_kt2 -DTM=16 -DTN=16 -DTK=16 -DWM=2 -DWN=4 -DSM=4 -DSN=2 -DKT=2 -DIN_T=float16_t -DACC_T=float16_t
mk f32_2x2_4x4_kt2 -DTM=16 -DTN=16 -DTK=16 -DWM=2 -DWN=2 -DSM=4 -DSN=4 -DKT=2 -DIN_T=float16_t -DACC_T=float
mk f32_2x4_4x4_kt1 -DTM=16 -DTN=16 -DTK=16 -DWM=2 -DWN=4 -DSM=4 -DSN=4 -DKT=1 -DIN_T=float16_t -DACC_T=float
mk f16_2x4_4x4_kt1 -DTM=16 -DTN=16 -DTK=16 -DWM=2 -DWN=4 -DSM=4 -DSN=4 -DKT=1 -DIN_T=float16_t -DACC_T=float16_t
spirv-val --target-env vulkan1.3 build/twin/f32_2x4_4x2_kt2.spv && echo valid
