"""CompiledKernel: one object per (module, target) with the typed interface and source locations; the
reference executor reports a fault at the kernel source's file:line when the module carries OpLine."""

from __future__ import annotations

import numpy as np
import pytest

from hydroplane.launch import executors as launch
from hydroplane.ref.errors import OutOfBoundsError
from hydroplane.spirv import Op, types
from hydroplane.spirv.builder import ModuleBuilder
from hydroplane.spirv.compiled import compile_kernel
from hydroplane.spirv.locations import SourceLocation
from hydroplane.spirv.samples import coop_matmul_tile, vector_add
from hydroplane.spirv.target import Target, UnsupportedOnTarget


def _out_of_bounds_kernel(index: int) -> bytes:
    """out[index] = 1.0 at line 7 of 'kernel.py' (index past the buffer for a planted bug)."""
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    out, ptr = b.storage_buffer(f32, 0, name="out")
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    b.location("kernel.py", 7, 5)
    b.emit(Op.Store, b.emit(Op.AccessChain, ptr, out, b.u32(0), b.u32(index)), b.constant(f32, 1.0))
    b.location(None)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    return b.to_words().tobytes()


def test_interface_is_typed():
    kernel = compile_kernel(vector_add("f16", local_size=32), Target.reference())
    assert kernel.local_size == (32, 1, 1) and kernel.push_constant_size == 4
    assert [b.element_types for b in kernel.bindings] == [(types.F16,)] * 3
    assert [b.access for b in kernel.bindings] == ["read-only", "read-only", "read-write"]
    push = kernel.push_constant_type
    assert isinstance(push, types.Struct) and push.members[0].type == types.U32 and push.members[0].name == "n"
    assert "Float16" in kernel.capabilities and kernel.changes == ()


def test_matrix_types_are_checked_against_the_target():
    words = coop_matmul_tile(16, 16, 16, a_type="f16", c_type="f32")
    h200 = compile_kernel(words, Target.profile("nvidia-h200"))
    assert {t.use_name for t in h200.matrix_types} == {"A", "B", "Accumulator"}
    compile_kernel(words, Target.profile("generic-khr"))
    with pytest.raises(UnsupportedOnTarget, match="coopmat<f16, Subgroup, 8x8, A>"):
        compile_kernel(coop_matmul_tile(8, 8, 8, a_type="f16", c_type="f32"), Target.profile("generic-khr"))


def test_locations_reach_ref_diagnostics():
    words = _out_of_bounds_kernel(4)
    kernel = compile_kernel(words, Target.reference())
    assert set(kernel.locations.values()) == {SourceLocation("kernel.py", 7, 5)}
    with pytest.raises(OutOfBoundsError, match=r"at kernel\.py:7:5 \(word \d+\)") as info:
        launch.run(words, (1, 1, 1), {0: np.full(4, np.nan, np.float32)}, device="ref")
    assert info.value.diagnostic.location == "kernel.py:7:5"
    ok = launch.run(_out_of_bounds_kernel(3), (1, 1, 1), {0: np.full(4, np.nan, np.float32)}, device="ref")
    assert ok[0][3] == 1.0 and np.isnan(ok[0][:3]).all()
