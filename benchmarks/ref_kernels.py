"""Benchmark: the reference executor on three GLSL kernels that are not cooperative-matrix work, each
checked against NumPy: a shared-memory tree reduction (barriers, Workgroup tracking), a divergent
loop/switch kernel (masks, phis, function calls) and subgroup scans. Reports dispatch wall time
(best and median of --repeat), interpreted instructions and elements per second, with Workgroup
checks on and off. Run inside the test userland (it needs glslangValidator):
`PYTHONPATH=src python3 benchmarks/ref_kernels.py [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from hydroplane.ref import Executor

REDUCE = """#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
shared float s[256];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[gl_GlobalInvocationID.x];
    barrier();
    for (uint step = 128u; step > 0u; step >>= 1) {
        if (l < step) s[l] += s[l + step];
        barrier();
    }
    if (l == 0u) b[gl_WorkGroupID.x] = s[0];
}"""

BRANCHY = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) writeonly buffer B { uint b[]; };
uint mix_bits(uint v, uint k) { return (v ^ (v >> 7)) * 0x9E3779B1u + k; }
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = a[i], acc = 0u;
    for (uint k = 0u; k < (v & 31u); k++) {
        switch (v & 3u) {
            case 0u: acc += mix_bits(v, k); break;
            case 1u: acc ^= v << (k & 7u); break;
            default: if ((acc & 1u) == 0u) acc += k; else acc = mix_bits(acc, k);
        }
        v = v * 1664525u + 1013904223u;
    }
    b[i] = acc;
}"""

SCAN = """#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 128) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) writeonly buffer B { uint b[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    b[i] = subgroupInclusiveAdd(a[i]) + subgroupMax(a[i]);
}"""


def compile_glsl(source: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.comp", Path(tmp) / "k.spv"
        src.write_text(source)
        subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.3", str(src), "-o", str(out)],
                       check=True, capture_output=True)
        return out.read_bytes()


def branchy_numpy(a):
    out = np.zeros_like(a)
    for idx, v0 in enumerate(a.tolist()):
        v, acc, k = v0, 0, 0
        while k < (v & 31):  # the bound is re-read from the updated v each iteration
            r = v & 3
            if r == 0:
                acc += ((v ^ (v >> 7)) * 0x9E3779B1 + k)
            elif r == 1:
                acc ^= (v << (k & 7)) & 0xFFFFFFFF
            elif (acc & 1) == 0:
                acc += k
            else:
                acc = ((acc ^ (acc >> 7)) * 0x9E3779B1 + k)
            acc &= 0xFFFFFFFF
            v = (v * 1664525 + 1013904223) & 0xFFFFFFFF
            k += 1
        out[idx] = acc
    return out


def cases(n):
    rng = np.random.default_rng(0)
    f = rng.standard_normal(n).astype(np.float32)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(0, 1000, n).astype(np.uint32)

    def reduce_want():
        w = f.reshape(-1, 256).copy()
        step = 128
        while step:
            w[:, :step] += w[:, step:2 * step]
            step //= 2
        return w[:, 0]

    def scan_want():
        g = small.reshape(-1, 32).astype(np.uint64)
        return (np.cumsum(g, axis=1) + g.max(axis=1, keepdims=True)).astype(np.uint32).reshape(-1)

    return [
        ("shared-memory tree reduction", REDUCE, f, n // 256, n // 256, np.float32, reduce_want),
        ("divergent loop/switch/calls", BRANCHY, u, n // 64, n, np.uint32, lambda: branchy_numpy(u)),
        ("subgroup scan + max (S=32)", SCAN, small, n // 128, n, np.uint32, scan_want),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 18)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__}")
    print(f"# elements {args.elements}, repeat {args.repeat}")
    for name, source, data, groups, n_out, out_dtype, want in cases(args.elements):
        words = compile_glsl(source)
        expected = want()
        for checks in (True, False):
            ex = Executor(checks=checks)
            kernel = ex.kernel(words)
            times = []
            for _ in range(args.repeat):
                a = ex.buffer(data)
                b = ex.buffer(np.full(n_out, 0xFF, np.uint8).repeat(4).view(out_dtype))
                t0 = time.perf_counter()
                ex.dispatch(kernel, (groups, 1, 1), {0: a, 1: b})
                times.append(time.perf_counter() - t0)
                got = ex.read(b, out_dtype)
                assert np.array_equal(got, expected), f"{name}: wrong result"
            best = min(times)
            print(f"{name:32s} checks={'on ' if checks else 'off'} best {best:.3f} s  median "
                  f"{statistics.median(times):.3f} s  {ex.last_stats['instructions']} instructions interpreted  "
                  f"{args.elements / best / 1e6:.2f} M elements/s")


if __name__ == "__main__":
    main()
