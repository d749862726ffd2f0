#!/bin/bash
# runA.sh's first step alone (the device budget left): the decode (M = 1) through the prefill GEMM's tensor cores,
# split over K, beside the shipped GEMV; tuning, not the measuring run; GPU timestamps.
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
timeout 105 python3 benchmarks/quant_sweep.py --only prefill --stats --prefill-m 1 --prefill-cases 5,8,6,7,9,10 \
    --blocks "$D" --seconds 90 --out $OUT/A3_decode_gemm.jsonl > $OUT/A3_log.txt 2>&1
tail -3 $OUT/A3_log.txt
