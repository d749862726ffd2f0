"""Target: device capabilities as data, from a live device, a saved profile or the reference executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO

from hydroplane.spirv.enums import CooperativeMatrixUse, Scope
from hydroplane.spirv.target import PROFILES, CoopShape, Target, TargetError, UnsupportedOnTarget
from hydroplane.spirv.types import F16, F32, S8, S32, CoopMatrix
from hydroplane.vk import devices


@pytest.mark.parametrize("name", PROFILES)
def test_shipped_profiles_load_and_round_trip(name):
    target = Target.profile(name)
    assert target.name == name and target.coop_khr
    assert Target.from_dict(json.loads(target.to_json())) == target


@pytest.mark.parametrize("name", PROFILES)
def test_a_shipped_profile_is_the_file_in_the_package(name):
    shipped = json.loads((REPO / "src/hydroplane/spirv/profiles" / f"{name}.json").read_text(encoding="utf-8"))
    assert Target.profile(name) == Target.from_dict(shipped)


def test_profiles_load_from_a_zipped_package(tmp_path):
    """Target.profile reads through the package's loader, so a package imported from a zip file finds them too."""
    archive = tmp_path / "hydroplane.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in (REPO / "src/hydroplane").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zipped.write(path, path.relative_to(REPO / "src").as_posix())
    code = ("import json\nfrom hydroplane.spirv import target\n"
            "assert '.zip' in target.__file__, target.__file__\n"
            "print(json.dumps([target.Target.profile(name).to_json() for name in target.PROFILES]))")
    env = {**os.environ, "PYTHONPATH": str(archive), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [Target.profile(name).to_json() for name in PROFILES]


def test_live_lavapipe_matches_the_shipped_profile():
    found = [d for d in devices() if d.cooperative_matrix_khr]
    assert found, "no Vulkan device with cooperative matrices; run the suite through scripts/test"
    live = Target.from_device_record(found[0].to_dict()).with_name("lavapipe")
    shipped = Target.profile("lavapipe")
    assert live.coop_khr == shipped.coop_khr and live.coop_nv2_flexible == shipped.coop_nv2_flexible
    assert live.nv2_features == shipped.nv2_features and live.subgroup_size == shipped.subgroup_size


def test_h200_profile_is_the_recorded_device():
    h200 = Target.profile("nvidia-h200")
    assert "580.159.04" in h200.description and not h200.ext_maintenance1
    assert h200.largest_shape("f16", "f32") == CoopShape(16, 16, 16, F16, F16, F32, F32)
    assert h200.largest_shape("s8", "s32").k == 32
    assert h200.has_nv2("cooperativeMatrixWorkgroupScope") and h200.nv2_max_workgroup_size == 256


def test_offers_follows_uses_shapes_scopes_and_granularity():
    lvp = Target.profile("lavapipe")
    acc = CoopMatrix(F32, 8, 8, CooperativeMatrixUse.MatrixAccumulatorKHR)
    assert lvp.offers(acc) and lvp.offers(CoopMatrix(F16, 8, 8, CooperativeMatrixUse.MatrixAKHR))
    assert not lvp.offers(CoopMatrix(F32, 8, 8, CooperativeMatrixUse.MatrixAKHR))
    assert lvp.offers(CoopMatrix(F32, 16, 24, CooperativeMatrixUse.MatrixAccumulatorKHR))  # NV2 flexible: steps
    assert not lvp.offers(CoopMatrix(F32, 12, 8, CooperativeMatrixUse.MatrixAccumulatorKHR))
    assert not lvp.offers(CoopMatrix(F32, 8, 8, CooperativeMatrixUse.MatrixAccumulatorKHR, Scope.Workgroup))
    a, b = (CoopMatrix(S8, 8, 8, u) for u in (CooperativeMatrixUse.MatrixAKHR, CooperativeMatrixUse.MatrixBKHR))
    c = CoopMatrix(S32, 8, 8)
    assert lvp.offers_muladd(a, b, c, c) and not Target.profile("generic-khr").offers_muladd(a, b, c, c)
    assert Target.reference().offers(CoopMatrix(F32, 3, 5, None, family="NV"))


def test_bad_profiles_and_missing_shapes_are_named(tmp_path):
    with pytest.raises(TargetError, match="unknown target profile 'amd'"):
        Target.profile("amd")
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "warp": 32}')
    with pytest.raises(TargetError, match="unknown keys \\['warp'\\]"):
        Target.load(bad)
    with pytest.raises(UnsupportedOnTarget, match="generic-khr offers no Subgroup-scope cooperative matrix with A s8"):
        Target.profile("generic-khr").largest_shape("s8", "s32")
