for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/head.tar
mkdir -p /tmp/old /tmp/mid && tar xf .gl/old.tar -C /tmp/old && tar xf .gl/mid.tar -C /tmp/mid
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
for d in src /tmp/old/src /tmp/mid/src; do python3 -m compileall -q $d; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/0_gpu.txt 2>&1
PYTHONPATH=src timeout 70 python3 benchmarks/quant_h200.py --only decode --out $OUT/1_qnew.json > $OUT/1_qnew.txt 2>&1
(cd /tmp/old && PYTHONPATH=src timeout 70 python3 benchmarks/quant_h200.py --only decode --out $OUT/2_qold.json > $OUT/2_qold.txt 2>&1)
(cd /tmp/mid && PYTHONPATH=src timeout 70 python3 benchmarks/quant_h200.py --only decode --out $OUT/3_qmid.json > $OUT/3_qmid.txt 2>&1)
V='[{"rows":1,"lw":1,"lpr":8,"split":1,"xsh":true},{"rows":2,"lw":1,"lpr":8,"split":1,"xsh":true},{"rows":1,"lw":1,"lpr":16,"split":1,"xsh":true},{"rows":1,"lw":2,"lpr":8,"split":1,"xsh":true},{"lw":1,"rows":4,"lpr":32,"pipe":true,"split":1},{"lw":1,"rows":2,"lpr":32,"pipe":true,"split":1},{"lw":1,"rows":8,"lpr":32,"pipe":true,"split":1},{"lw":1,"rows":4,"lpr":16,"pipe":true,"split":1},{"rows":4,"lpr":8,"split":1,"xsh":true}]'
PYTHONPATH=src timeout 200 python3 benchmarks/quant_sweep.py --only decode --decode-seconds 195 --formats q6_k,q5_0,q4_0,q4_k --variants "$V" --out $OUT/4_sweep.jsonl > $OUT/4_sweep.txt 2>&1
PYTHONPATH=src timeout 90 python3 benchmarks/model_h200.py --tokens 64 --reps 2 --budget 70 --out $OUT/5_model.json > $OUT/5_model.txt 2>&1
echo done
