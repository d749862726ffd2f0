"""The language's GEMM kernel beside its GLSL twin (benchmarks/gemm_twin.comp) on a Vulkan device.

Tells a slow code generator from a slow design: the twin has the same blocking, copies and barriers, written in
GLSL and compiled by glslang. Each twin is built into build/twin/NAME.spv by benchmarks/gemm_twin_build.sh (in the
test userland, which has glslang; the H200 has none, so the .spv files travel with the tree), NAME saying
ACC_WMxWN_SMxSN_ktKT with 16x16x16 tiles (or ..._tT: TxTxT). For each twin this runs, at --size (row-major, D = A @ B):
  1. the twin, checked against NumPy, timed by GPU timestamps (median of --reps after warm-up);
  2. the language's coop_kernel with the same configuration (pad=1, prefetch), the same way, also with the bounds
     checks (EDGES) and the alpha scaling (SCALE) compiled in;
  3. the language's kernel with its barriers' memory semantics cut to the twin's (AcquireRelease | WorkgroupMemory:
     no UniformMemory, no MakeAvailable/MakeVisible), to see what those cost.

    PYTHONPATH=src python3 benchmarks/gemm_twin.py --size 4096
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hydroplane.kernels.gemm import (  # noqa: E402  # noqa: E402
    GemmConfig,
    GemmProblem,
    gemm_plan,
    parse_dtype,
    random_inputs,
)
from hydroplane.ops.gemm import WARMUP_S, GemmRunner, poisoned  # noqa: E402
from hydroplane.spirv.binary import decode, encode  # noqa: E402
from hydroplane.spirv.enums import MemorySemantics, Op  # noqa: E402
from hydroplane.vk import bench  # noqa: E402

# constexprs the language's kernel is also run with (besides the launcher's own choice): the bounds checks and
# the alpha scaling compiled in, as the kernel was before the launcher could leave them out
OVERRIDES = ({}, {"EDGES": True, "SCALE": True}, {})
TWIN_SEMANTICS = MemorySemantics.AcquireRelease | MemorySemantics.WorkgroupMemory


def with_twin_barriers(words: list[int]) -> list[int]:
    """The module with every OpControlBarrier's semantics constant set to the twin's (the kernels' codegen uses
    that constant for barriers only)."""
    module = decode(words)
    constants = {i.result_id: i for i in module.instructions if i.opcode == Op.Constant}
    for inst in module.instructions:
        if inst.opcode == Op.ControlBarrier:
            constant = constants[inst.operands[2].number]
            constant.operands[0] = constant.operands[0]._replace(value=int(TWIN_SEMANTICS))
    return list(encode(module))


def relative_error(d: np.ndarray, exact: np.ndarray) -> float:
    return float(np.linalg.norm(d.astype(np.float64) - exact) / np.linalg.norm(exact))


def time_kernel(runner: GemmRunner, kernel, grid, buffers: dict, push: bytes, reps: int) -> float:
    """Median seconds of `reps` runs by GPU timestamps, after WARMUP_S of back-to-back runs."""
    recording = runner.executor.device.record(kernel.native, grid, buffers, push, timestamps=True)
    try:
        return bench(recording, warmup=0, reps=reps, warmup_s=WARMUP_S).median_ns / 1e9
    finally:
        recording.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--dir", default=str(ROOT / "build" / "twin"))
    args = parser.parse_args()
    runner = GemmRunner.open(0)
    ex = runner.executor
    ex.capture_statistics = True
    n = args.size
    flops = 2 * n ** 3
    for spv in sorted(Path(args.dir).glob("*.spv")):
        acc, subgroups, tiles, kt, *tags = spv.stem.split("_")
        tile = [tag for tag in tags if tag[0] == "t" and tag[1:].isdigit()]
        t = int(tile[0][1:]) if tile else 16  # a name may carry _tT: T x T x T tiles
        variant = len(tags) > len(tile)  # a GLSL variant (single, const, afirst): the twin alone
        wm, wn = map(int, subgroups.split("x"))
        sm, sn = map(int, tiles.split("x"))
        k_tiles = int(kt[2:])
        dtype = parse_dtype(f"f16:{acc}")
        problem = GemmProblem(n, n, n, dtype)
        data = random_inputs(problem, np.random.default_rng(5))
        exact = data["a"].astype(np.float32) @ data["b"].astype(np.float32)
        config = GemmConfig(tile=(t, t, t), subgroups=(wm, wn), tiles=(sm, sn), k_tiles=k_tiles, pad=1,
                            prefetch=True)
        bm, bn, _ = config.block
        grid = (n // bn, n // bm, 1)
        # 1. the twin
        words = list(struct.unpack(f"<{spv.stat().st_size // 4}I", spv.read_bytes()))
        twin = ex.kernel(words, validate=False)
        a, b = ex.buffer(data["a"]), ex.buffer(data["b"])
        d = ex.buffer(poisoned((n, n), dtype.out.dtype))
        push = struct.pack("<3I", n, n, n)
        seconds = time_kernel(runner, twin, grid, {0: a, 1: b, 2: d}, push, args.reps)
        got = ex.read(d, dtype.out.dtype, (n, n))
        print(f"{spv.stem}: GLSL twin {flops / seconds / 1e12:7.4g} TFLOP/s, error {relative_error(got, exact):.2g}, "
              f"{statistics_line(twin)}", flush=True)
        for buf in (a, b, d):
            buf.close()
        if variant:
            continue
        # 2. and 3. the language's kernel (as the launcher specializes it, then with constexprs overridden), and
        # as compiled with the twin's barriers
        plan = gemm_plan(problem, config, runner.target)
        variants = [(f"language {o or ''}", o, False) for o in OVERRIDES] + [("language, twin barriers", {}, True)]
        with runner.prepare(problem, config, data) as prepared:
            main = prepared.main  # the GEMM's launch: its buffers and push constants serve every variant
            for label, override, twin_barriers in variants:
                words = plan.kernel.compile(runner.target, **{**plan.constexprs, **override}).words
                kernel = ex.kernel(with_twin_barriers(list(words)) if twin_barriers else words, validate=False)
                prepared.repoison()
                ex.dispatch(kernel, main.grid, main.buffers, main.push)
                error = relative_error(prepared.read(), exact)
                seconds = time_kernel(runner, kernel, main.grid, dict(main.buffers), main.push, args.reps)
                print(f"{spv.stem}: {label} {flops / seconds / 1e12:7.4g} TFLOP/s, error {error:.2g}, "
                      f"{statistics_line(kernel)}", flush=True)
    runner.close()
    return 0


def statistics_line(kernel) -> str:
    from hydroplane import vk  # noqa: PLC0415

    try:
        found = vk.pipeline_statistics(kernel.native)
    except vk.VulkanError as err:
        return f"(no statistics: {err})"
    return "; ".join(f"registers {e.statistics.get('Register Count')}" for e in found)


if __name__ == "__main__":
    raise SystemExit(main())
