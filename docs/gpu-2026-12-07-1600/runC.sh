#!/bin/bash
# Call C (tuning, not the measuring run), 2026-12-07 16:30 UTC: call B found the 128 x 128 block with K steps of
# 64 (kt 4), one stage and PREFETCH 2 fastest at every 512-row 14336-deep shape; this call separates PREFETCH 2 from
# the deeper step (the same block with PREFETCH 1; without the rows' padding; as 4 x 2 subgroups: two stages or
# K steps of 128 would exceed the 48 KiB of shared memory) and tries it at Gemma 3 270M's prefill shapes (f32 activations, scaled) beside the shipped plans. Outputs tarred (few files come back).
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m compileall -q src
mkdir -p /tmp/c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > /tmp/c/C0_gpu.txt
B='[{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":1,"prefetch":true,"stages":1},
{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1},
{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":0,"prefetch":2,"stages":1},
{"wm":4,"wn":2,"sm":2,"sn":4,"kt":4,"pad":1,"prefetch":2,"stages":1}]'
timeout 130 python3 benchmarks/quant_sweep.py --only prefill --stats --prefill-cases 5,8,6,7,9,10 \
    --blocks "$B" --seconds 115 --out /tmp/c/C1_prefill.jsonl > /tmp/c/C1_log.txt 2>&1
G='[{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1},
{"wm":2,"wn":2,"sm":2,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1},
{"wm":2,"wn":2,"sm":2,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1,"split":4},
{"wm":2,"wn":4,"sm":4,"sn":2,"kt":4,"pad":1,"prefetch":2,"stages":1,"split":2}]'
timeout 70 python3 benchmarks/quant_sweep.py --only prefill --prefill-cases 0,1,2,3,4 --blocks "$G" --seconds 60 \
    --out /tmp/c/C2_gemma.jsonl > /tmp/c/C2_log.txt 2>&1
tar czf $OUT/C.tgz -C /tmp c
tail -n 2 /tmp/c/C*_log.txt
