"""lower(module, target): glslang-compiled EXT maintenance1 shaders lowered to NV2 for lavapipe's and the
H200's profiles, validated by spirv-val and checked instruction by instruction; unsupported Use changes
raise LoweringError; a target without EXT or NV2, or without a module's matrix shapes, is refused by name."""

import subprocess

import pytest
from cts.compile import compile_glsl, glsl_source

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import Op, binary, decode
from hydroplane.spirv.grammar import enumerant
from hydroplane.spirv.lower import LoweringError, UnsupportedOnTarget, check_matrices, lower
from hydroplane.spirv.target import Target

LAVAPIPE = Target.profile("lavapipe")


def lower_ext_to_nv2(words, target=LAVAPIPE):
    return lower(words, target).module


def _validate(spirv_val, tmp_path, words) -> None:
    path = tmp_path / "lowered.spv"
    path.write_bytes(binary.to_bytes(words))
    proc = subprocess.run([spirv_val, "--target-env", "vulkan1.3", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def _opcodes(module):
    return [i.opcode for i in module.instructions]


def _capabilities(module):
    return {i.operands[0].value for i in module.instructions if i.opcode == Op.Capability}


def _extensions(module):
    return {i.operands[0].value for i in module.instructions if i.opcode == Op.Extension}


def test_lowered_module_validates_and_has_no_ext_left(glslang, spirv_val, tmp_path):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    before = decode(words)
    assert Op.CooperativeMatrixGetCoordinateEXT in _opcodes(before)
    lowered = lower_ext_to_nv2(words)
    _validate(spirv_val, tmp_path, lowered.words())
    ops = _opcodes(lowered)
    assert Op.CooperativeMatrixGetCoordinateEXT not in ops
    assert ops.count(Op.CooperativeMatrixTransposeNV) == 1
    assert ops.count(Op.CooperativeMatrixConvertUseEXT) == 1  # Accumulator -> A stays (NV2 ConvertNV)
    assert ops.count(Op.CooperativeMatrixReduceEXT) == 1
    assert ops.count(Op.CooperativeMatrixPerElementOpEXT) == 2  # the kernel's and the emulation's
    caps = _capabilities(lowered)
    assert enumerant("Capability", "CooperativeMatrixConversionsNV").value in caps
    assert enumerant("Capability", "CooperativeMatrixConversionsEXT").value not in caps
    assert enumerant("Capability", "CooperativeMatrixGetCoordinateEXT").value not in caps
    assert _extensions(lowered) == {"SPV_NV_cooperative_matrix2", "SPV_KHR_cooperative_matrix"}
    transpose = enumerant("Decoration", "CooperativeMatrixTransposeEXT").value
    assert not [i for i in lowered.instructions if i.opcode == Op.Decorate and i.operands[1].value == transpose]
    assert lowered.bound > before.bound


def test_lowering_leaves_an_nv2_module_alone(glslang, spirv_val, tmp_path):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    once = lower_ext_to_nv2(words)
    twice = lower_ext_to_nv2(once.words())
    assert list(twice.words()) == list(once.words())


@pytest.mark.parametrize("name,message", [
    ("ext_convert_a_to_acc.comp", "from MatrixA to MatrixAccumulator has no NV2 twin"),
    ("ext_transpose_acc_to_a.comp", "CooperativeMatrixTransposeEXT from MatrixAccumulator to MatrixA has no NV2 twin"),
])
def test_use_changes_without_nv2_twin_raise(glslang, name, message):
    words = compile_glsl(glslang, glsl_source(name))
    with pytest.raises(LoweringError, match=message) as info:
        lower_ext_to_nv2(words)
    assert isinstance(info.value, HydroplaneError) and info.value.offset is not None


def test_old_spirv_version_is_refused(glslang):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    module = decode(words)
    module.version = (1, 5)
    with pytest.raises(LoweringError, match="needs SPIR-V 1.6"):
        lower_ext_to_nv2(module.words())


def test_a_module_without_ext_is_unchanged(glslang):
    from cts.compile import compile_glsl as compile_source

    khr_only = """#version 450 core
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Buf { float data[]; };
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, data, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(m + m, data, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
"""
    words = compile_source(glslang, khr_only)
    assert bytes(lower_ext_to_nv2(words).words().tobytes()) == words


@pytest.mark.parametrize("profile", ["lavapipe", "nvidia-h200"])
def test_both_nv2_profiles_lower_and_say_what_changed(glslang, spirv_val, tmp_path, profile):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    lowered = lower(words, Target.profile(profile).with_name(profile))
    _validate(spirv_val, tmp_path, lowered.words())
    text = "\n".join(lowered.changes)
    assert "GetCoordinate emulated" in text and "OpCooperativeMatrixTransposeNV" in text
    assert "SPV_NV_cooperative_matrix2" in text


def test_reference_target_keeps_ext(glslang):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    lowered = lower(words, Target.reference(8))
    assert lowered.changes == () and bytes(lowered.words().tobytes()) == words


def test_target_without_ext_or_nv2_is_refused_by_name(glslang):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    with pytest.raises(UnsupportedOnTarget, match="neither that extension nor VK_NV_cooperative_matrix2") as info:
        lower(words, Target.profile("generic-khr"))
    assert "cooperativeMatrixPerElementOperations" in str(info.value)


def test_shapes_the_target_lacks_are_refused_by_name(glslang):
    words = compile_glsl(glslang, glsl_source("ext_lowering.comp"))
    lowered = lower(words, LAVAPIPE).module
    with pytest.raises(UnsupportedOnTarget, match="does not offer these cooperative-matrix types") as info:
        check_matrices(lowered, LAVAPIPE)
    assert "coopmat<f32, Subgroup, 8x8, A>" in str(info.value)  # lavapipe has f16/int8 A only
    check_matrices(lowered, Target.reference())  # the reference executor runs any shape
    with pytest.raises(UnsupportedOnTarget, match="VK_KHR_cooperative_matrix"):
        check_matrices(lowered, Target(name="no-coop"))
