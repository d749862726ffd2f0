for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/land.tar
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1 PYTHONPATH=src
python3 -m compileall -q src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/0_gpu.txt 2>&1
timeout 100 python3 .gl/loopdiag.py > $OUT/1_loopdiag.txt 2>&1
timeout 70 python3 benchmarks/quant_h200.py --only decode --out /tmp/q.json > $OUT/2_quant.txt 2>&1
timeout 90 python3 benchmarks/model_h200.py --tokens 64 --reps 2 --budget 70 --out /tmp/m.json > $OUT/3_model.txt 2>&1
cat /tmp/m.json >> $OUT/3_model.txt
if [ -n "$FULL" ]; then STEPS=attention,peer,user bash benchmarks/h200_session.sh; fi
echo done
