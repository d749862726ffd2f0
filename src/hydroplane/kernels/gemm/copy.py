"""Matrix copies on the device, in the kernel language: pad a matrix into aligned scratch, take a block back out.

`copy_kernel(bits)` copies the rows x cols block of a row-major source (element offset, leading dimension) into
the dst_rows x dst_cols block of a row-major destination, zeros where the destination reaches past the source:
with dst larger it pads (odd sizes into scratch whose rows are multiples of 16 bytes, for the GEMM's 16-byte
loads), with dst smaller it extracts (a padded result into the caller's M x N). Grid z runs a batch of such
copies (batch strides in elements). The elements are moved as unsigned integers of their width (8, 16 or 32
bits): a copy never looks at values. Invocations take neighbouring columns, so both sides are read and written
contiguously; each handles ROWS rows TY apart.
"""

import functools

from hydroplane.lang import (
    Buffer,
    constexpr,
    kernel_source,
    local_index,
    readonly,
    s32,
    static_range,
    u8,
    u16,
    u32,
    workgroup_id,
)

COPY_TX = 64  # columns per workgroup
COPY_TY = 4  # row lanes per workgroup
COPY_ROWS = 4  # rows per invocation: a workgroup covers COPY_TX x COPY_TY * COPY_ROWS
ELEMENT_TYPES = {8: u8, 16: u16, 32: u32}


def copy_threads(constexprs: dict) -> int:
    return constexprs["TX"] * constexprs["TY"]


def copy_grid(rows: int, cols: int, batch: int = 1) -> tuple[int, int, int]:
    """The workgroups that cover a rows x cols destination block (batch of them)."""
    return -(-cols // COPY_TX), -(-rows // (COPY_TY * COPY_ROWS)), batch


@functools.cache
def copy_kernel(bits: int):
    """The copy of elements of `bits` bits (8, 16, 32)."""
    T = ELEMENT_TYPES[bits]

    @kernel_source(local_size=copy_threads, name=f"copy_u{bits}")
    def copy_block(src: Buffer[T, readonly], dst: Buffer[T], src_offset: s32, src_ld: s32, src_batch: s32,
                   rows: s32, cols: s32, dst_offset: s32, dst_ld: s32, dst_batch: s32, dst_rows: s32,
                   dst_cols: s32, TX: constexpr, TY: constexpr, ROWS: constexpr):
        t = local_index()
        x = t % TX
        y = t // TX
        col = workgroup_id(0) * TX + x
        batch = workgroup_id(2)
        source = src_offset + batch * src_batch
        target = dst_offset + batch * dst_batch
        if col < dst_cols:
            for i in static_range(ROWS):
                row = (workgroup_id(1) * ROWS + i) * TY + y
                if row < dst_rows:
                    value = T(0)
                    if row < rows and col < cols:
                        value = src[source + row * src_ld + col]
                    dst[target + row * dst_ld + col] = value

    return copy_block
