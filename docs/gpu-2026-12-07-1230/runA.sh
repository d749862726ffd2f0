#!/bin/bash
# Call A (tuning, not the measuring run): the decode (M = 1) through the prefill GEMM's tensor cores, split over K,
# beside the shipped GEMV; the loads two K steps ahead (PREFETCH 2) in the quantized prefill GEMM and in the f16
# GEMM's deep-prefill K-split candidates, beside the shipped plans; GPU timestamps. STEPS picks (default all three:
# decode,prefill,f16).
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m compileall -q src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $OUT/A0_gpu.txt
# the decode (M = 1) through the prefill GEMM's tensor cores, split over K, beside the shipped GEMV ({})
D='[{"wm":1,"wn":4,"sm":1,"sn":2,"kt":2,"pad":1,"prefetch":2,"split":16},
{"wm":1,"wn":4,"sm":1,"sn":2,"kt":2,"pad":1,"prefetch":2,"split":32},
{"wm":1,"wn":4,"sm":1,"sn":1,"kt":2,"pad":1,"prefetch":2,"split":16},
{"wm":1,"wn":4,"sm":1,"sn":1,"kt":2,"pad":1,"prefetch":2,"split":32},
{"wm":1,"wn":4,"sm":1,"sn":1,"kt":4,"pad":1,"prefetch":2,"split":16},
{"wm":1,"wn":4,"sm":1,"sn":2,"kt":2,"pad":1,"prefetch":1,"split":32},
{"wm":1,"wn":8,"sm":1,"sn":1,"kt":2,"pad":1,"prefetch":2,"split":16},
{"wm":1,"wn":2,"sm":1,"sn":2,"kt":2,"pad":1,"prefetch":2,"split":32}]'
[[ ${STEPS:-decode,prefill,f16} == *decode* ]] && \
timeout 105 python3 benchmarks/quant_sweep.py --only prefill --stats --prefill-m 1 --prefill-cases 5,8,6,7,9,10 \
    --blocks "$D" --seconds 90 --out $OUT/A3_decode_gemm.jsonl > $OUT/A3_log.txt 2>&1
B='[{"wm":2,"wn":4,"sm":4,"sn":2,"kt":2,"pad":1,"prefetch":2},
{"wm":2,"wn":4,"sm":4,"sn":2,"kt":2,"pad":1,"prefetch":2,"stages":1},
{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1},
{"wm":4,"wn":2,"sm":2,"sn":4,"kt":2,"pad":1,"prefetch":2},
{"wm":2,"wn":2,"sm":4,"sn":4,"kt":4,"pad":1,"prefetch":2,"stages":1}]'
[[ ${STEPS:-decode,prefill,f16} == *prefill* ]] && \
timeout 115 python3 benchmarks/quant_sweep.py --only prefill --stats --prefill-cases 5,8,6,7,9,10 \
    --blocks "$B" --seconds 100 --out $OUT/A1_prefill.jsonl > $OUT/A1_log.txt 2>&1
[[ ${STEPS:-decode,prefill,f16} == *f16* ]] && \
timeout 60 python3 benchmarks/llama_peer.py --sweep --ns 512 --candidates 0 --skinny-candidates 0 \
    --thin-candidates 0 --budget-s 45 $OUT/A2_peer > $OUT/A2_log.txt 2>&1
tail -3 $OUT/A*_log.txt
