#!/bin/bash
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/head.tar
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src PYTHONUNBUFFERED=1
python3 -m compileall -q src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/0_gpu.txt 2>&1
date -u >> $OUT/0_gpu.txt
timeout 150 python3 benchmarks/model_profile.py --prompt 16 --depth 4096 --barriers --folds > $OUT/1_profile.txt 2>&1
date -u >> $OUT/0_gpu.txt
timeout 100 python3 benchmarks/model_h200.py --out /tmp/model_h200.json > $OUT/2_model.txt 2>&1; cat /tmp/model_h200.json >> $OUT/2_model.txt
date -u >> $OUT/0_gpu.txt
timeout 130 python3 benchmarks/attention_h200.py /tmp/attd --cases "ggml decode d256 h32/2 kv10000,ggml decode d256 h32/2 kv20000,ggml decode d64 h64/8 q4 kv7680,ggml decode d128 h8 kv4096" --max-configs 2 --per-tile 0 --no-parity --no-arithmetic > $OUT/3_att_decode.txt 2>&1
date -u >> $OUT/0_gpu.txt
timeout 120 python3 benchmarks/llama_peer.py /tmp/peer > $OUT/4_peer.txt 2>&1
date -u >> $OUT/0_gpu.txt
timeout 40 python3 benchmarks/host_cost.py --device 0 --calls 200 --wall > $OUT/5_host_cost.txt 2>&1
date -u >> $OUT/0_gpu.txt
echo done
