"""Kernels beyond the CTS-style matrix that a real GPU can also run (NV2 tensor addressing with every
clamp mode and a clipped view; NV2 workgroup-scope tiles with tensor layouts), as data: GLSL source,
defines, inputs and a NumPy check. Used by tests/ref/test_coopmat_kernels.py and by
cts/device_check.py (which needs no pytest)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

CLAMP_MODES = {  # GLSL clamp mode -> numpy.pad mode
    "gl_CooperativeMatrixClampModeConstantNV": "constant",
    "gl_CooperativeMatrixClampModeClampToEdgeNV": "edge",
    "gl_CooperativeMatrixClampModeRepeatNV": "wrap",
    "gl_CooperativeMatrixClampModeMirrorRepeatNV": "reflect",
}


@dataclass
class Extra:
    name: str
    source: str  # file in cts/glsl
    defines: dict
    buffers: list  # initial contents, binding i = buffers[i]
    check: Callable[[list], None]  # raises AssertionError when the outputs are wrong
    grid: tuple = (1, 1, 1)
    sg: int = 8
    push: bytes = b""
    needs: dict = field(default_factory=dict)  # device features: {"tensor_addressing": True, ...}


def tensor_clamp(clamp: str, tile: int, sg: int) -> Extra:
    rows, cols = 5, 6
    pad_mode = CLAMP_MODES[clamp]
    tensor = np.random.default_rng(11).integers(-50, 50, (rows, cols)).astype(np.float32)
    if pad_mode == "constant":
        padded = np.pad(tensor, ((3, tile), (2, tile)), mode="constant", constant_values=42.0)
    else:
        padded = np.pad(tensor, ((3, tile), (2, tile)), mode=pad_mode)
    want_tile = padded[:tile, :tile]
    want_store = np.full((tile, tile), np.nan, np.float32)
    # the clipped view maps matrix rows 2..5, columns 1..6 onto the first 4x6 elements of the span
    want_store.reshape(-1)[:24] = want_tile[2:6, 1:7].reshape(-1)

    def check(out):
        np.testing.assert_array_equal(out[1].reshape(tile, tile), want_tile, err_msg="tensor load")
        np.testing.assert_array_equal(out[2].reshape(tile, tile), want_store, err_msg="clipped tensor store")

    return Extra(f"tensor_clamp-{pad_mode}-{tile}x{tile}", "tensor_clamp.comp",
                 {"CLAMP": clamp, "ROWS": rows, "COLS": cols, "T": tile, "SG": sg},
                 [tensor.reshape(-1), np.full(tile * tile, np.nan, np.float32),
                  np.full(tile * tile, np.nan, np.float32)], check, sg=sg, needs={"tensor_addressing": True})


def workgroup_tile(invocations: int, sg: int) -> Extra:
    rng = np.random.default_rng(7)
    rows, cols = 40, 32
    a = rng.integers(-4, 5, (rows, cols)).astype(np.float16)
    b = rng.integers(-4, 5, (32, 32)).astype(np.float16)
    padded = np.zeros((64, 32), np.float64)
    padded[:rows] = a  # Constant clamp mode, clamp value 0: the overhanging rows read as zeros
    want = (padded @ b.astype(np.float64)).astype(np.float32)

    def check(out):
        np.testing.assert_array_equal(out[2].reshape(64, 32), want, err_msg="workgroup-scope product")
        lengths = out[3]
        assert (lengths.astype(np.int64) * invocations >= 32 * 32).all(), f"Length {lengths[:4]}"

    return Extra(f"nv2_workgroup-{invocations}", "nv2_workgroup.comp", {"WG": invocations},
                 [a.reshape(-1), b.T.reshape(-1).copy(), np.full(64 * 32, np.nan, np.float32),
                  np.full(2 * invocations, 0xDEADBEEF, np.uint32)], check, grid=(2, 1, 1), sg=sg,
                 push=np.array([rows, cols], np.uint32).tobytes(),
                 needs={"tensor_addressing": True, "workgroup_scope": invocations})


def nv_legacy(tile: int, sg: int) -> Extra:
    rng = np.random.default_rng(sg + tile)
    a = rng.integers(-4, 5, (tile, tile)).astype(np.float16)
    b = rng.integers(-4, 5, (tile, tile)).astype(np.float16)
    c = rng.integers(-4, 5, (tile, tile)).astype(np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32)

    def check(out):
        d = out[3]
        np.testing.assert_array_equal(d[:tile * tile].reshape(tile, tile).T, want, err_msg="NV MulAdd (column-major)")
        assert np.isnan(d[tile * tile:]).all()

    return Extra(f"nv_legacy-{tile}x{tile}", "nv_legacy.comp", {"T": tile, "SG": sg, "WITH_LENGTH": 0},
                 [a.reshape(-1), b.T.reshape(-1).copy(), c.reshape(-1), np.full(tile * tile + sg, np.nan, np.float32)],
                 check, sg=sg)


def device_extras(tile: int, sg: int, invocations: int) -> list[Extra]:
    return ([tensor_clamp(c, tile, sg) for c in CLAMP_MODES] + [workgroup_tile(invocations, sg)]
            + [nv_legacy(tile, sg)])
