"""Whether a device reports every cooperative-matrix type and MulAdd combination of a module: the
tests send a kernel to a device only then (the launch layer refuses the others by name, see
`hydroplane.spirv.lower.check_matrices`)."""

from __future__ import annotations

from hydroplane.spirv import decode
from hydroplane.spirv.lower import check_matrices
from hydroplane.spirv.target import Target, UnsupportedOnTarget


def missing_matrix_types(words, info) -> list[str]:
    """The module's matrix types and MulAdd combinations the device does not report (empty: it
    can run the module)."""
    try:
        check_matrices(decode(words), Target.from_device_record(info.to_dict()))
    except UnsupportedOnTarget as err:
        return list(err.missing)
    return []
