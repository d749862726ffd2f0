"""Run seed 002's tiles, a K-loop GEMM and the EXT maintenance1 kernel, written in the language, on
Vulkan device 0 at every shape it reports, and compare with NumPy (and with the reference executor).

For a GPU machine (the lent H200) where pytest and spirv-val are absent; docs/language.md records
its output. `PYTHONPATH=src python3 tools/lang_on_device.py`
"""

from __future__ import annotations

import datetime
import platform

import numpy as np

import hydroplane
from hydroplane import coop, vk
from hydroplane.lang import Buffer, constexpr, f16, f32, readonly, s8, s32, workgroup_id


@hydroplane.kernel(local_size=32)
def tile_f16(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32, readonly], d: Buffer[f32],
             M: constexpr, N: constexpr, K: constexpr):
    ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[f32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc), d, 0, N)


@hydroplane.kernel(local_size=32)
def tile_s8(a: Buffer[s8, readonly], b: Buffer[s8, readonly], c: Buffer[s32, readonly], d: Buffer[s32],
            M: constexpr, N: constexpr, K: constexpr, SATURATE: constexpr = False):
    ta = coop.load(coop.Matrix[s8, M, K, coop.A], a, 0, K)
    tb = coop.load(coop.Matrix[s8, K, N, coop.B], b, 0, N)
    tc = coop.load(coop.Matrix[s32, M, N, coop.Accumulator], c, 0, N)
    coop.store(coop.mul_add(ta, tb, tc, saturating=SATURATE), d, 0, N)


@hydroplane.kernel(local_size=32)
def matmul(a: Buffer[f16, readonly], b: Buffer[f16, readonly], c: Buffer[f32],
           N_TOTAL: constexpr, K_TOTAL: constexpr, M: constexpr, N: constexpr, K: constexpr):
    row = workgroup_id(1) * M
    col = workgroup_id(0) * N
    acc = coop.fill(coop.Matrix[f32, M, N, coop.Accumulator], 0.0)
    for kk in range(0, K_TOTAL, K):
        ta = coop.load(coop.Matrix[f16, M, K, coop.A], a, row * K_TOTAL + kk, K_TOTAL)
        tb = coop.load(coop.Matrix[f16, K, N, coop.B], b, kk * N_TOTAL + col, N_TOTAL)
        acc = coop.mul_add(ta, tb, acc)
    coop.store(acc, c, row * N_TOTAL + col, N_TOTAL)


@hydroplane.kernel(local_size="WG")
def tile_workgroup(a: Buffer[f16, readonly], b: Buffer[f16, readonly], d: Buffer[f32], T: constexpr, WG: constexpr):
    """NV2 workgroup scope: the WG invocations of the workgroup hold each T x T matrix together."""
    ta = coop.load(coop.Matrix[f16, T, T, coop.A, coop.Workgroup], a, 0, T)
    tb = coop.load(coop.Matrix[f16, T, T, coop.B, coop.Workgroup], b, 0, T)
    acc = coop.fill(coop.Matrix[f32, T, T, coop.Accumulator, coop.Workgroup], 1.0)
    coop.store(coop.mul_add(ta, tb, acc), d, 0, T)


@hydroplane.func
def scale_by_position(row, col, x, bias):
    return x * f32(row + 1) + f32(col) * bias


@hydroplane.func
def add(x, y):
    return x + y


@hydroplane.kernel(local_size=32)
def ext_ops(x: Buffer[f32, readonly], mapped: Buffer[f32], rows: Buffer[f32], gathered: Buffer[f32],
            product: Buffer[f32], M: constexpr):
    T = coop.Matrix[f32, M, M, coop.Accumulator]
    m = coop.load(T, x, 0, M)
    coop.store(coop.map(scale_by_position, m, 0.5), mapped, 0, M)
    coop.store(coop.reduce(m, coop.Row, add), rows, 0, M)
    for i in range(coop.length(m)):
        r, c = coop.coordinate(m, i)
        gathered[r * M + c] = m[i]
    h = coop.convert(m, f16)
    coop.store(coop.mul_add(coop.convert_use(h, coop.A), coop.transpose(h), coop.fill(T, 0.0)), product, 0, M)


def check(name: str, device_out: dict, ref_out: dict, expected: dict, where: str) -> None:
    for key, want in expected.items():
        np.testing.assert_array_equal(device_out[key], want, err_msg=f"{name} {key} on the device")
        np.testing.assert_array_equal(ref_out[key], want, err_msg=f"{name} {key} on ref")
    print(f"  ok  {name}: {where} == ref == NumPy")


def main() -> None:
    info = vk.devices()[0]
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.python_version()}, "
          f"device 0: {info.name}, driver {getattr(info, 'driver_info', '')}")
    rng = np.random.default_rng(0)
    for s in sorted({(s.m, s.n, s.k) for s in info.coop_shapes("f16", "f32")}):
        m, n, k = s
        a = (rng.integers(-8, 8, (m, k)) / 4).astype(np.float16)
        b = (rng.integers(-8, 8, (k, n)) / 4).astype(np.float16)
        c = (rng.integers(-8, 8, (m, n)) / 2).astype(np.float32)
        outs = {}
        for device in (0, "ref"):
            d = np.full(m * n, -1, np.float32)
            tile_f16[(1,)](a.ravel(), b.ravel(), c.ravel(), d, M=m, N=n, K=k, device=device)
            outs[device] = {"d": d.reshape(m, n)}
        check(f"seed 002 f16 tile {m}x{n}x{k}", outs[0], outs["ref"],
              {"d": a.astype(np.float32) @ b.astype(np.float32) + c}, "vk:0")
    for shape in sorted({(s.m, s.n, s.k, s.saturating) for s in info.coop_shapes("s8", "s32")}):
        m, n, k, can_saturate = shape
        for saturate in (False, True) if can_saturate else (False,):
            a, b = rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (k, n)).astype(np.int8)
            c = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
            if saturate:
                c[0, :], a[0, :], b[:, :] = 2**31 - 50, 127, 127
            outs = {}
            for device in (0, "ref"):
                d = np.full(m * n, -1, np.int32)
                tile_s8[(1,)](a.ravel(), b.ravel(), c.ravel(), d, M=m, N=n, K=k, SATURATE=saturate, device=device)
                outs[device] = {"d": d.reshape(m, n)}
            exact = a.astype(np.int64) @ b.astype(np.int64) + c
            want = np.clip(exact, -(2**31), 2**31 - 1) if saturate else exact.astype(np.int32)
            check(f"seed 002 s8 tile {m}x{n}x{k}{' saturating' if saturate else ''}", outs[0], outs["ref"],
                  {"d": want.astype(np.int32)}, "vk:0")
    square = max(s.m for s in info.coop_shapes("f16", "f32") if s.m == s.n == s.k)  # the largest square tile
    m = n = k = square
    mt, nt, kt = 4 * m, 3 * n, 8 * k
    a = (rng.integers(-8, 8, (mt, kt)) / 4).astype(np.float16)
    b = (rng.integers(-8, 8, (kt, nt)) / 4).astype(np.float16)
    outs = {}
    for device in (0, "ref"):
        cc = np.full(mt * nt, -1, np.float32)
        matmul[(nt // n, mt // m)](a.ravel(), b.ravel(), cc, N_TOTAL=nt, K_TOTAL=kt, M=m, N=n, K=k, device=device)
        outs[device] = {"c": cc.reshape(mt, nt)}
    check(f"K-loop GEMM {mt}x{nt}x{kt} in {m}x{n}x{k} tiles", outs[0], outs["ref"],
          {"c": a.astype(np.float32) @ b.astype(np.float32)}, "vk:0")
    workgroup = sorted({(s.m, s.workgroup_invocations) for s in info.coop_nv2_flexible
                        if s.scope == "workgroup" and (s.a, s.c) == ("f16", "f32")})
    for unit, invocations in workgroup:
        t = 2 * unit
        a = (rng.integers(-8, 8, (t, t)) / 4).astype(np.float16)
        b = (rng.integers(-8, 8, (t, t)) / 4).astype(np.float16)
        outs = {}
        for device in (0, "ref"):
            d = np.full(t * t, -1, np.float32)
            tile_workgroup[(1,)](a.ravel(), b.ravel(), d, T=t, WG=invocations, device=device)
            outs[device] = {"d": d.reshape(t, t)}
        check(f"NV2 workgroup-scope f16 tile {t}x{t}x{t}, {invocations} invocations", outs[0], outs["ref"],
              {"d": a.astype(np.float32) @ b.astype(np.float32) + 1}, "vk:0")
    x = (rng.integers(-16, 16, (m, m)) / 4).astype(np.float32)
    outs, lowered = {}, None
    for device in (0, "ref"):
        arrays = {name: np.full(m * m, -1, np.float32) for name in ("mapped", "rows", "gathered", "product")}
        r = ext_ops[(1,)](x.ravel(), **arrays, M=m, device=device)
        lowered = r.lowered if device == 0 else lowered
        outs[device] = {key: v.reshape(m, m) for key, v in arrays.items()}
    rows_, cols_ = np.indices((m, m))
    h = x.astype(np.float16).astype(np.float32)
    check(f"EXT maintenance1 map/reduce/coordinate/convert_use/transpose {m}x{m}", outs[0], outs["ref"],
          {"mapped": x * (rows_ + 1) + cols_ * np.float32(0.5), "rows": np.repeat(x.sum(1, keepdims=True), m, 1),
           "gathered": x, "product": h @ h.T}, "vk:0" + (" through the NV2 lowering" if lowered else " (EXT)"))


if __name__ == "__main__":
    main()
