"""BuildError: the one exception family of module building (builder, literals, layout).

Kept in its own module so that the builder's helpers can raise it without importing the
builder.
"""

from hydroplane.spirv.binary import SpirvError


class BuildError(SpirvError):
    """The builder was asked for something SPIR-V cannot hold; says which instruction and operand."""
