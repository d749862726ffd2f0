#!/bin/bash
# Call B (tuning, not the measuring run), 2026-12-07: runA.sh's three steps (the decode through the prefill GEMM,
# PREFETCH 2 in the quantized prefill GEMM and in the f16 GEMM's deep-prefill K-split candidates), then the cost of
# f32 activations in the prefill GEMM now that each row is scaled into f16's range by its own launch first: the
# Gemma 3 270M cases (f32) and q4_0 14336 -> 4096 in f32 beside f16, shipped plans; GPU timestamps.
# STEPS picks (default all: decode,prefill,f16,scaled).
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m compileall -q src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $OUT/B0_gpu.txt
S=${STEPS:-decode,prefill,f16,scaled}
[[ $S == *decode* || $S == *prefill* || $S == *f16* ]] && STEPS=$S bash docs/gpu-2026-12-07-1230/runA.sh
[[ $S == *scaled* ]] && \
timeout 100 python3 benchmarks/quant_sweep.py --only prefill --prefill-cases 0,1,2,3,4,5 --blocks '[]' \
    --x-dtype float32 --out $OUT/B1_scaled_f32.jsonl > $OUT/B1_log.txt 2>&1
[[ $S == *scaled* ]] && \
timeout 60 python3 benchmarks/quant_sweep.py --only prefill --prefill-cases 0,1,2,3,4,5 --blocks '[]' \
    --x-dtype float16 --out $OUT/B2_f16.jsonl > $OUT/B2_log.txt 2>&1
tail -3 $OUT/B*_log.txt
