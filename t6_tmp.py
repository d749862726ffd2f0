from hydroplane.kernels import GemmProblem, GemmConfig, parse_dtype
from hydroplane.kernels_run import GemmRunner
import sys
r = GemmRunner.open(sys.argv[1] if sys.argv[1]=="ref" else 0)
t = int(sys.argv[2]); bad = 0; n = 0
for dt in ("f16:f32","s8:s32","f16:f16"):
  for layout in ("nn","nt","tn","tt"):
    for stages in (1, 2):
      cfg = GemmConfig(tile=(t,t,t) if dt[0]=="f" or t==8 else (16,16,32), subgroups=(1,2), tiles=(2,2), k_tiles=2, stages=stages, pad=1, prefetch=True)
      bm,bn,bk = cfg.block
      for (m,nn,k,alpha) in ((2*bm,3*bn,4*bk,1),(2*bm,3*bn,4*bk,2),(2*bm+16,bn+16,3*bk+16,1),(37,45,33,2)):
        p = GemmProblem(m,nn,k,parse_dtype(dt),layout,alpha=alpha,beta=(0.5 if dt[0]=="f" else 2),bias=True)
        res = r.run(p, cfg, seed=3); n += 1
        if not res.ok: bad += 1; print("BAD", dt, layout, stages, m, nn, k, alpha, res.error)
print(n, "runs", bad, "bad")
