"""The reference executor's options: element distributions by name or as objects; a bad name is refused."""

import pytest

from hydroplane.ref import Executor
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.errors import InvalidModuleError


def test_distribution_by_name_or_object():
    assert Executor(coopmat_distribution="blocked").options["coopmat_distribution"] is cm.BLOCKED
    assert Executor(coopmat_distribution="strided").options["coopmat_distribution"] is cm.STRIDED
    assert Executor(coopmat_distribution=cm.BLOCKED).options["coopmat_distribution"] is cm.BLOCKED


def test_unknown_distribution_name_is_refused():
    with pytest.raises(InvalidModuleError, match="coopmat_distribution must be one of strided, blocked"):
        Executor(coopmat_distribution="diagonal")
