"""The interpreter's op loader registers every handler module, whichever ref module is imported first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hydroplane.ref import handlers
from hydroplane.ref.coopmat import ops as coopmat_ops
from hydroplane.ref.coopmat import tensor_ops as coopmat_tensor_ops

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import importlib, sys
importlib.import_module(sys.argv[1])
from hydroplane.ref.ops import HANDLERS, Op
wanted = [Op.CooperativeMatrixMulAddKHR, Op.CooperativeMatrixLoadTensorNV, Op.CreateTensorLayoutNV,
          Op.CooperativeMatrixReduceNV, Op.FAdd]
missing = [int(op) for op in wanted if int(op) not in HANDLERS]
print("missing", missing)
sys.exit(1 if missing else 0)
"""


@pytest.mark.parametrize("first", ["hydroplane.ref", "hydroplane.ref.coopmat", "hydroplane.ref.coopmat.matrix",
                                   "hydroplane.ref.coopmat.ops", "hydroplane.ref.coopmat.tensor_ops",
                                   "hydroplane.ref.ops", "hydroplane.ref.handlers"])
def test_handlers_registered_whatever_is_imported_first(first):
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", PROBE, first], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_loader_names_the_coopmat_handler_modules():
    assert coopmat_ops in handlers.HANDLER_MODULES and coopmat_tensor_ops in handlers.HANDLER_MODULES
    assert handlers.HANDLER_MODULES.index(coopmat_ops) < handlers.HANDLER_MODULES.index(coopmat_tensor_ops)


def test_coopmat_modules_do_not_import_their_handlers():
    """The semantics modules stay free of handler imports; only the loader pulls handlers in."""
    for name in ("matrix.py", "ops.py"):
        text = (SRC / "hydroplane" / "ref" / "coopmat" / name).read_text()
        assert "import hydroplane.ref.coopmat.ops" not in text and "coopmat import ops" not in text
        assert "import hydroplane.ref.coopmat.tensor_ops" not in text and "coopmat import tensor_ops" not in text
