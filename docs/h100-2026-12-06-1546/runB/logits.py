import runpy, sys
sys.path.insert(0, "src")
import hydroplane.kernels.attention.plan as P
P.COLUMN_SPLIT_WORKGROUPS = int(sys.argv[1])
sys.argv = ["model_h200.py", "--tokens", "8", "--reps", "1", "--budget", "60", "--out", "/tmp/m.json"]
runpy.run_path("benchmarks/model_h200.py", run_name="__main__")
