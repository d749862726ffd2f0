for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
rm -rf src benchmarks tools tests/models && tar xf .gl/land.tar
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1 PYTHONPATH=src
python3 -m compileall -q src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/0_gpu.txt 2>&1
timeout 60 python3 .gl/poolchk.py big > $OUT/1_pool.txt 2>&1
timeout 120 python3 benchmarks/quant_h200.py --out $OUT/2_quant.json > $OUT/2_quant.txt 2>&1
timeout 120 python3 benchmarks/user_path.py > $OUT/3_user.txt 2>&1
echo done
