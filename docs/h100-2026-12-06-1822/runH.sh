for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/land.tar
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1 PYTHONPATH=src
python3 -m compileall -q src
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv -lms 50 > $OUT/2_clocks.csv 2>&1 &
SMI=$!
sleep 1
timeout 100 python3 .gl/pool3.py big > $OUT/1_pool3.txt 2>&1
sleep 1; kill $SMI
echo done
