"""NV2 tensor addressing: tensor layouts and views (SPV_NV_tensor_addressing) and the element
addresses of OpCooperativeMatrixLoadTensorNV/StoreTensorNV, with clamping and clipping.

The address arithmetic follows GL_NV_cooperative_matrix2's matrixCoordToTensorElement(WithView):
(row, col) -> linear index in the (clipped) matrix -> view coordinate (permuted) -> linear index
in the span -> span coordinate -> tensor coordinate (+ offset, clamped) -> block coordinate ->
element index -> byte offset (index * component size) from the pointer. Out-of-bounds tensor
coordinates: Constant loads give the clamp value's low bits, ClampToEdge/Repeat/MirrorRepeat move
the coordinate, a store drops the element for every mode but Undefined, and Undefined raises
(the spec leaves it undefined; the reference executor names the element). Elements outside the
view's clip region are neither loaded (they keep the Object operand's element) nor stored.
Layouts and views are immutable values; each Set/Slice instruction returns a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hydroplane.ref.coopmat.matrix import CoopMatError
from hydroplane.ref.coopmat.memory import CoopMatBoundsError
from hydroplane.spirv.enums import TensorClampMode as ClampMode
from hydroplane.spirv.types import CoopMatrix

MAX_DIM = 5
NO_CLIP_SPAN = 0xFFFFFFFF


def _check_count(what: str, values, dim: int) -> tuple[int, ...]:
    values = tuple(int(v) for v in values)
    if len(values) != dim:
        raise CoopMatError(f"{what} takes {dim} values for a {dim}-D tensor, got {len(values)}")
    return values


@dataclass(frozen=True)
class TensorLayout:
    """OpTypeTensorLayoutNV state: dimensions, strides, slice (offset, span), blocks, clamp."""

    dim: int
    clamp_mode: ClampMode = ClampMode.Undefined
    block_size: tuple[int, ...] = ()
    dimension: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: tuple[int, ...] = ()
    span: tuple[int, ...] = ()
    clamp_value: int = 0

    @staticmethod
    def create(dim: int, clamp_mode: int = ClampMode.Undefined) -> TensorLayout:
        """OpCreateTensorLayoutNV: zero dimensions/strides/offsets/spans, block size one."""
        if not 1 <= dim <= MAX_DIM:
            raise CoopMatError(f"tensor layout dimension count must be 1..{MAX_DIM}, got {dim}")
        zeros = (0,) * dim
        return TensorLayout(dim, ClampMode(clamp_mode), (1,) * dim, zeros, zeros, zeros, zeros, 0)

    def with_block_size(self, *block: int) -> TensorLayout:
        """OpTensorLayoutSetBlockSizeNV."""
        block = _check_count("SetBlockSize", block, self.dim)
        if min(block) <= 0:
            raise CoopMatError(f"tensor layout block sizes must be positive, got {block}")
        return replace(self, block_size=block)

    def with_dimension(self, *dims: int) -> TensorLayout:
        """OpTensorLayoutSetDimensionNV: also spans = dims, offsets = 0, packed strides in blocks."""
        dims = _check_count("SetDimension", dims, self.dim)
        stride = [0] * self.dim
        s = 1
        for i in range(self.dim - 1, -1, -1):
            stride[i] = s
            s *= -(-dims[i] // self.block_size[i])
        return replace(self, dimension=dims, span=dims, offset=(0,) * self.dim, stride=tuple(stride))

    def with_stride(self, *stride: int) -> TensorLayout:
        """OpTensorLayoutSetStrideNV."""
        return replace(self, stride=_check_count("SetStride", stride, self.dim))

    def slice(self, *offset_span: int) -> TensorLayout:
        """OpTensorLayoutSliceNV(offset0, span0, offset1, span1, ...): offsets add, spans replace."""
        pairs = _check_count("Slice", offset_span, 2 * self.dim)
        offsets = tuple(o + _as_int32(pairs[2 * i]) for i, o in enumerate(self.offset))
        return replace(self, offset=offsets, span=tuple(pairs[1::2]))

    def with_clamp_value(self, value: int) -> TensorLayout:
        """OpTensorLayoutSetClampValueNV."""
        return replace(self, clamp_value=int(value))


def _as_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(frozen=True)
class TensorView:
    """OpTypeTensorViewNV state: permutation (static), dimensions, strides, clip region."""

    dim: int
    has_dimensions: bool
    permutation: tuple[int, ...]
    dimension: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    clip: tuple[int, int, int, int] = (0, NO_CLIP_SPAN, 0, NO_CLIP_SPAN)  # row off, row span, col off, col span

    @staticmethod
    def create(dim: int, has_dimensions: bool = False, permutation: tuple[int, ...] | None = None) -> TensorView:
        """OpCreateTensorViewNV for a view type (Dim, HasDimensions, p0..p<Dim-1>)."""
        if not 1 <= dim <= MAX_DIM:
            raise CoopMatError(f"tensor view dimension count must be 1..{MAX_DIM}, got {dim}")
        perm = tuple(range(dim)) if permutation is None else tuple(int(p) for p in permutation)
        if sorted(perm) != list(range(dim)):
            raise CoopMatError(f"tensor view permutation {perm} is not a permutation of 0..{dim - 1}")
        zeros = (0,) * dim
        return TensorView(dim, bool(has_dimensions), perm, zeros, zeros)

    def with_dimension(self, *dims: int) -> TensorView:
        """OpTensorViewSetDimensionNV: also packed strides."""
        dims = _check_count("TensorViewSetDimension", dims, self.dim)
        stride = [1] * self.dim
        for i in range(self.dim - 2, -1, -1):
            stride[i] = stride[i + 1] * dims[i + 1]
        return replace(self, dimension=dims, stride=tuple(stride))

    def with_stride(self, *stride: int) -> TensorView:
        """OpTensorViewSetStrideNV."""
        return replace(self, stride=_check_count("TensorViewSetStride", stride, self.dim))

    def with_clip(self, row_offset: int, row_span: int, col_offset: int, col_span: int) -> TensorView:
        """OpTensorViewSetClipNV."""
        return replace(self, clip=(int(row_offset), int(row_span), int(col_offset), int(col_span)))


@dataclass(frozen=True)
class TensorAddresses:
    """Per matrix element: element index from the pointer, and what to do with the element."""

    index: np.ndarray  # (rows, cols) int64 element index; meaningful where `access`
    access: np.ndarray  # (rows, cols) bool: load/store this element from/to memory
    clamped: np.ndarray  # (rows, cols) bool: a Constant-mode load of the clamp value
    clipped: np.ndarray  # (rows, cols) bool: outside the view's clip region (untouched)


def _divide(index, extent: int, what: str):
    if extent <= 0:
        raise CoopMatError(f"tensor addressing divides by a zero {what}; set the layout's dimensions first")
    return index % extent, index // extent


def tensor_addresses(layout: TensorLayout, view: TensorView | None, rows: int, cols: int,
                     for_store: bool) -> TensorAddresses:
    """The element index of every (row, col) of a rows x cols matrix, with its clamp/clip fate."""
    row = np.arange(rows, dtype=np.int64)[:, None] + np.zeros((1, cols), np.int64)
    col = np.arange(cols, dtype=np.int64)[None, :] + np.zeros((rows, 1), np.int64)
    clipped = np.zeros((rows, cols), bool)
    if view is None:
        linear = row * cols + col
    else:
        linear, clipped = _view_to_span_linear(layout, view, row, col, cols)
    span_coord = [None] * layout.dim
    for d in range(layout.dim - 1, -1, -1):
        span_coord[d], linear = _divide(linear, layout.span[d], f"span (dimension {d})")
    mode = layout.clamp_mode
    if for_store and mode != ClampMode.Undefined:
        mode = ClampMode.Constant
    outside = np.zeros((rows, cols), bool)
    index = np.zeros((rows, cols), np.int64)
    for d in range(layout.dim):
        extent = layout.dimension[d]
        c = span_coord[d] + layout.offset[d]
        bad = ((c < 0) | (c >= extent)) & ~clipped
        if bad.any():
            if mode == ClampMode.Undefined:
                r, k = (int(v) for v in np.argwhere(bad)[0])
                raise CoopMatError(
                    f"tensor {'store' if for_store else 'load'} with clamp mode Undefined reaches tensor "
                    f"coordinate {int(c[r, k])} outside [0, {extent}) of dimension {d} at matrix element "
                    f"({r}, {k}); set a clamp mode or slice inside the tensor")
            c = _clamp_coordinate(c, extent, mode)
            outside |= bad
        index += (np.maximum(c, 0) // layout.block_size[d]) * layout.stride[d]
    constant = outside if mode == ClampMode.Constant else np.zeros_like(outside)
    access = ~clipped & ~constant
    return TensorAddresses(index, access, constant & ~clipped, clipped)


def _view_to_span_linear(layout: TensorLayout, view: TensorView, row, col, cols: int):
    row_off, row_span, col_off, col_span = view.clip
    clipped = (row < row_off) | (row >= row_off + row_span) | (col < col_off) | (col >= col_off + col_span)
    width = min(cols, col_span)
    linear = (row - row_off) * width + (col - col_off)
    linear = np.where(clipped, 0, linear)
    if not view.has_dimensions and view.dim != layout.dim:
        raise CoopMatError(f"a tensor view without dimensions must have the layout's {layout.dim} "
                           f"dimensions, has {view.dim}")
    dims = view.dimension if view.has_dimensions else layout.span[:view.dim]
    coord = [None] * view.dim
    for d in range(view.dim - 1, -1, -1):
        i = view.permutation[d]
        coord[i], linear = _divide(linear, dims[i], f"view dimension {i}")
    if view.has_dimensions:
        stride = view.stride
    else:
        stride = [1] * view.dim
        for d in range(view.dim - 2, -1, -1):
            stride[d] = stride[d + 1] * layout.span[d + 1]
    span_linear = sum(coord[d] * stride[d] for d in range(view.dim))
    return span_linear, clipped


def _clamp_coordinate(c: np.ndarray, extent: int, mode: ClampMode) -> np.ndarray:
    inside = (c >= 0) & (c < extent)
    if mode == ClampMode.Constant:
        return np.where(inside, c, 0)
    if extent <= 0:
        raise CoopMatError(f"tensor clamp mode {mode.name} needs a positive dimension, got {extent}")
    if mode == ClampMode.ClampToEdge:
        moved = np.clip(c, 0, extent - 1)
    elif mode == ClampMode.Repeat:
        moved = np.mod(c, extent)  # OpSMod: the sign of the divisor
    else:
        period = 2 * extent - 2
        if period <= 0:
            moved = np.zeros_like(c)
        else:
            moved = np.mod(c, period)
            moved = np.where(moved >= extent, period - moved, moved)
    return np.where(inside, c, moved)


def _bytes_of(memory, base: int, index, size: int, what: str):
    if memory.dtype != np.uint8 or memory.ndim != 1:
        raise CoopMatError(f"{what}: memory must be a flat uint8 array")
    addr = int(base) + index * size
    bad = (addr < 0) | (addr + size > memory.size)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        byte = int(addr[r, c])
        raise CoopMatBoundsError(f"{what} is out of bounds: element ({r}, {c}) at bytes [{byte}, {byte + size}) "
                                 f"of a {memory.size}-byte memory", 0, r, c, byte, memory.size)
    return addr


def load_tensor(memory: np.ndarray, base: int, mtype: CoopMatrix, layout: TensorLayout,
                view: TensorView | None, original: np.ndarray) -> np.ndarray:
    """OpCooperativeMatrixLoadTensorNV for one scope instance: (rows, cols); `original` is Object."""
    plan = tensor_addresses(layout, view, mtype.rows, mtype.cols, for_store=False)
    dtype = mtype.component.dtype
    size = dtype.itemsize
    out = np.array(original, dtype=dtype, copy=True).reshape(mtype.shape)
    if plan.access.any():
        addr = _bytes_of(memory, base, np.where(plan.access, plan.index, 0), size, "tensor load")
        raw = memory[addr[plan.access][:, None] + np.arange(size)]
        out[plan.access] = np.ascontiguousarray(raw).view(dtype)[:, 0]
    if plan.clamped.any():
        bits = np.array(layout.clamp_value & ((1 << 8 * size) - 1), dtype=f"u{size}")
        out[plan.clamped] = bits.view(dtype)
    return out


def store_tensor(memory: np.ndarray, base: int, mat: np.ndarray, mtype: CoopMatrix, layout: TensorLayout,
                 view: TensorView | None) -> None:
    """OpCooperativeMatrixStoreTensorNV for one scope instance, in place; later elements win."""
    plan = tensor_addresses(layout, view, mtype.rows, mtype.cols, for_store=True)
    if not plan.access.any():
        return
    size = mtype.component.dtype.itemsize
    addr = _bytes_of(memory, base, np.where(plan.access, plan.index, 0), size, "tensor store")
    raw = np.ascontiguousarray(np.asarray(mat, dtype=mtype.component.dtype)).view(np.uint8).reshape(*mtype.shape, size)
    targets = (addr[plan.access][:, None] + np.arange(size)).reshape(-1)
    values = raw[plan.access].reshape(-1)
    unique, first_in_reversed = np.unique(targets[::-1], return_index=True)
    memory[unique] = values[::-1][first_in_reversed]
