for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/head.tar
mkdir -p /tmp/old && tar xf .gl/old.tar -C /tmp/old
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
PYTHONPATH=src python3 -m compileall -q src; PYTHONPATH=/tmp/old/src python3 -m compileall -q /tmp/old/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/0_gpu.txt 2>&1
PYTHONPATH=src timeout 60 python3 benchmarks/quant_h200.py --only decode --out $OUT/3_qnew.json > $OUT/3_qnew.txt 2>&1
cfg() { for c in "key_tiles=4,splits=0" "key_tiles=4,splits=32" "key_tiles=4,splits=64" "key_tiles=4,splits=512" "key_tiles=8,splits=0" "key_tiles=16,splits=512"; do echo --config "scalar=1,subgroups=4,$1$c"; done; }
PYTHONPATH=src timeout 120 python3 benchmarks/attention_h200.py $OUT/att_h8 --cases "ggml decode d128 h8 kv4096,ggml decode d128 h8 kv16384" --no-parity --no-arithmetic $(cfg "") > $OUT/4_att_h8.txt 2>&1
PYTHONPATH=src timeout 70 python3 benchmarks/attention_h200.py $OUT/att_h32 --cases "ggml decode d128 h32/8 kv4096" --no-parity --no-arithmetic $(cfg "grouped=1,") > $OUT/5_att_h32.txt 2>&1
PYTHONPATH=src timeout 80 python3 .gl/logits.py 256 > $OUT/6_model256.txt 2>&1
PYTHONPATH=src timeout 80 python3 .gl/logits.py 512 > $OUT/7_model512.txt 2>&1
echo done
