"""Cooperative-matrix loads and stores against byte memory: the address of every element.

Covers OpCooperativeMatrixLoadKHR/StoreKHR (MemoryLayout RowMajorKHR/ColumnMajorKHR, Stride)
and the legacy OpCooperativeMatrixLoadNV/StoreNV (Stride + ColumnMajor bool). Memory is a flat
uint8 NumPy array (a buffer, or Workgroup storage); the pointer is a byte offset per scope
instance, and the Stride counts elements of the pointer's pointee type (its size in bytes is
`pointee_size`), as the KHR spec says. Inside a row (row-major) or column (column-major) the
matrix's components lie packed at the component's own size:

    row-major:    byte(r, c) = base + r * stride * pointee_size + c * component_size
    column-major: byte(r, c) = base + c * stride * pointee_size + r * component_size

A stride of 0 makes every row (column) alias the first; a store then writes the elements of
the last row (column) last, and they win. An access outside memory raises `CoopMatBoundsError`
naming the instance, element and byte range.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.coopmat.matrix import CoopMatError, check_value
from hydroplane.spirv.enums import CooperativeMatrixLayout as Layout
from hydroplane.spirv.types import CoopMatrix


class CoopMatBoundsError(CoopMatError):
    """A cooperative-matrix load or store touches bytes outside its memory."""

    def __init__(self, message: str, instance: int, row: int, col: int, byte: int, size: int):
        self.instance, self.row, self.col, self.byte, self.size = instance, row, col, byte, size
        super().__init__(message)


IMPLEMENTED_LAYOUTS = frozenset({Layout.RowMajorKHR, Layout.ColumnMajorKHR})


def layout_of(value: int) -> Layout:
    """A MemoryLayout operand value as a CooperativeMatrixLayout; unknown or unimplemented ones raise."""
    try:
        layout = Layout(int(value))
    except ValueError:
        raise CoopMatError(f"{value} is not a CooperativeMatrixLayout") from None
    if layout not in IMPLEMENTED_LAYOUTS:
        raise CoopMatError(f"cooperative-matrix memory layout {layout.name} is not implemented")
    return layout


def layout_from_column_major(column_major: bool) -> Layout:
    """The legacy NV ColumnMajor bool operand as a Layout."""
    return Layout.ColumnMajorKHR if column_major else Layout.RowMajorKHR


def element_offsets(rows: int, cols: int, layout: Layout, stride, pointee_size: int,
                    component_size: int) -> np.ndarray:
    """Byte offsets of every element from the pointer: (rows, cols) for one stride, or
    (instances, rows, cols) for an array of per-instance strides."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    major, minor = (r, c) if layout == Layout.RowMajorKHR else (c, r)
    step = np.asarray(stride, dtype=np.int64) * int(pointee_size)
    if step.ndim:
        return major[None] * step[:, None, None] + minor[None] * component_size
    return major * int(step) + minor * component_size


def _byte_addresses(memory: np.ndarray, base, mtype: CoopMatrix, layout: Layout, stride: int,
                    pointee_size: int, what: str) -> np.ndarray:
    """(instances, rows, cols) byte addresses, checked against the memory's size."""
    if memory.dtype != np.uint8 or memory.ndim != 1:
        raise CoopMatError(f"{what}: memory must be a flat uint8 array, got {memory.dtype} {memory.shape}")
    base = np.atleast_1d(np.asarray(base, dtype=np.int64))
    size = mtype.component.dtype.itemsize
    addr = base[:, None, None] + element_offsets(mtype.rows, mtype.cols, layout, stride, pointee_size, size)
    bad = (addr < 0) | (addr + size > memory.size)
    if bad.any():
        inst, row, col = (int(v) for v in np.argwhere(bad)[0])
        byte = int(addr[inst, row, col])
        raise CoopMatBoundsError(
            f"{what} of {mtype} ({layout.name}, stride {stride}) is out of bounds: "
            f"instance {inst} element ({row}, {col}) at bytes [{byte}, {byte + size}) of a "
            f"{memory.size}-byte memory ({int(bad.sum())} elements outside)",
            inst, row, col, byte, memory.size)
    return addr


def load(memory: np.ndarray, base, mtype: CoopMatrix, layout: Layout, stride: int,
         pointee_size: int) -> np.ndarray:
    """(instances, rows, cols) matrices read from memory at each instance's byte base."""
    addr = _byte_addresses(memory, base, mtype, layout, stride, pointee_size, "cooperative-matrix load")
    dtype = mtype.component.dtype
    size = dtype.itemsize
    if not (addr % size).any() and memory.size % size == 0:
        return memory.view(dtype)[addr // size]
    raw = memory[addr[..., None] + np.arange(size)]
    return np.ascontiguousarray(raw).view(dtype)[..., 0]


def store(memory: np.ndarray, base, mats: np.ndarray, mtype: CoopMatrix, layout: Layout, stride: int,
          pointee_size: int, active_instances: np.ndarray | None = None) -> None:
    """Write matrices into memory in place; aliased addresses keep the last element in row-major order."""
    check_value(mtype, mats, "stored matrix")
    addr = _byte_addresses(memory, base, mtype, layout, stride, pointee_size, "cooperative-matrix store")
    if active_instances is not None:
        keep = np.asarray(active_instances, bool)
        addr, mats = addr[keep], mats[keep]
    size = mtype.component.dtype.itemsize
    if not (addr % size).any() and memory.size % size == 0:
        _write_last_wins(memory.view(mtype.component.dtype), (addr // size).reshape(-1), mats.reshape(-1))
        return
    raw = np.ascontiguousarray(mats).view(np.uint8).reshape(*mats.shape, size)
    _write_last_wins(memory, (addr[..., None] + np.arange(size)).reshape(-1), raw.reshape(-1))


def _write_last_wins(target: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """target[index] = values where a repeated index keeps its last value (NumPy leaves that open)."""
    unique, first_in_reversed = np.unique(index[::-1], return_index=True)
    if unique.size == index.size:
        target[index] = values
    else:
        target[unique] = values[::-1][first_in_reversed]
