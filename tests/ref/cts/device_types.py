"""Whether a device reports every cooperative-matrix type and MulAdd combination of a module: the
tests send a kernel to a device only then (the launch layer refuses the others by name, see
`hydroplane.launch.unsupported_matrix_types`)."""

from __future__ import annotations

from hydroplane.launch import unsupported_matrix_types
from hydroplane.spirv import reflect


def missing_matrix_types(words, info) -> list[str]:
    """The module's matrix types and MulAdd combinations the device does not report (empty: it
    can run the module)."""
    return unsupported_matrix_types(reflect(words), info)
