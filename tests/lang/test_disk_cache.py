"""What a first call computes kept on disk (lang/disk_cache.py): a second process's compile of the same
specialization loads the first one's, the words equal; a changed constexpr is another entry; user kernels and
HYDROPLANE_DISK_CACHE=0 keep nothing. The CompiledKernel of the same words, the limits read from them and
spirv-val's acceptance are kept too: a warm process (a subprocess with the first one's cache folder) compiles,
lowers and validates nothing."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import REPO

from hydroplane.kernels.gemm import copy as gemm_copy
from hydroplane.lang import Buffer, disk_cache, f32, global_id, kernel_source
from hydroplane.lang import compiler as compiler_module
from hydroplane.launch import limits as launch_limits
from hydroplane.launch.limits import check_target_limits
from hydroplane.spirv.locations import SourceLocation
from hydroplane.spirv.target import Target


@kernel_source(local_size=64)
def _users_kernel(x: Buffer[f32]):
    x[global_id()] = 1.0


CONSTEXPRS = {"TX": 16, "TY": 4, "ROWS": 2}


def _library_kernel():
    return gemm_copy.copy_kernel(16)


@pytest.fixture(autouse=True)
def _cache_on(monkeypatch):
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")


def test_a_library_kernel_compiles_once_across_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    kernel = _library_kernel()
    kernel._cache.clear(), kernel._asked.clear()
    target = Target.reference()
    constexprs = dict(CONSTEXPRS)
    first = kernel.compile(target, **constexprs)
    files = list((tmp_path / "hydroplane" / "spirv").glob("*.pkl"))
    assert len(files) == 1, files
    kernel._cache.clear(), kernel._asked.clear()  # as a new process: nothing in memory
    calls = []
    monkeypatch.setattr(compiler_module, "_compile_kernel", lambda *a: calls.append(a))
    again = kernel.compile(target, **constexprs)
    assert calls == [] and again.words == first.words and again.params == first.params
    files[0].write_bytes(b"not a pickle")  # a damaged entry is compiled again, not trusted
    kernel._cache.clear(), kernel._asked.clear()
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")
    assert kernel.compile(target, **constexprs).words == first.words
    assert isinstance(pickle.loads(files[0].read_bytes()), compiler_module.Specialization)


def _factory(value):
    def kernel_fn():
        return value
    return kernel_fn


def test_keys_follow_constexprs_targets_and_closures_and_skip_users_kernels(monkeypatch):
    target = Target.reference()
    fn = _library_kernel().fn
    a = disk_cache.key_of(fn, "k", 64, {"N": 16}, target)
    assert a is not None and a == disk_cache.key_of(fn, "k", 64, {"N": 16}, target)
    assert a != disk_cache.key_of(fn, "k", 64, {"N": 32}, target)
    assert a != disk_cache.key_of(fn, "k", 64, {"N": 16}, None)
    assert a != disk_cache.key_of(fn, "k", 128, {"N": 16}, target)
    # a kernel factory's kernels differ only in what they close over (copy_kernel(16) and copy_kernel(32))
    k16, k32 = gemm_copy.copy_kernel(16), gemm_copy.copy_kernel(32)
    assert k16.fn.__qualname__ == k32.fn.__qualname__
    assert disk_cache.key_of(k16.fn, "k", 64, {}, target) != disk_cache.key_of(k32.fn, "k", 64, {}, target)
    assert disk_cache.key_of(_users_kernel.fn, "k", 64, {}, target) is None  # not the library's
    assert disk_cache.key_of(fn, "k", 64, {"F": object()}, target) is None  # no value text: an address
    assert disk_cache.canonical(frozenset({"b", "a"})) == disk_cache.canonical(frozenset({"a", "b"}))
    # a Target's text is kept per target (it is in every key): the same text its fields give, another for another
    other = replace(target, name="another")
    assert disk_cache.canonical(target) == disk_cache._canonical_fields(target, 0) != disk_cache.canonical(other)
    assert disk_cache.canonical((target,)) == f"({disk_cache._canonical_fields(target, 1)})"
    assert a != disk_cache.key_of(fn, "k", 64, {"N": 16}, other)
    assert disk_cache.canonical(_factory(1)) != disk_cache.canonical(_factory(2))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "0")
    assert disk_cache.cache_folder("spirv") is None


@pytest.mark.parametrize("off", [False, True])
def test_users_kernels_and_the_switch_keep_no_file(tmp_path, monkeypatch, off):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if off:
        monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "0")
        kernel = _library_kernel()
        kernel._cache.clear(), kernel._asked.clear()
        kernel.compile(Target.reference(), TX=8, TY=8, ROWS=1)
    else:
        _users_kernel.compile(Target.reference())
    assert not (tmp_path / "hydroplane").exists()


# A process that counts what its first calls compute: the language compiler's runs, spirv's compile_kernel (lower,
# check, reflect), the limits' reading of the words and spirv-val's runs; then prints the counts and a result.
COUNTING_PROCESS = """
import json, sys
import numpy as np
import hydroplane
from hydroplane.lang import compiler, disk_cache
from hydroplane.launch import limits
counts = {"language compiler": 0, "compile_kernel": 0, "limits read the words": 0, "spirv-val": 0}

def counted(owner, name, what):
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        counts[what] += 1
        return original(*args, **kwargs)
    setattr(owner, name, wrapper)

counted(compiler, "_compile_kernel", "language compiler")
counted(disk_cache, "compile_kernel", "compile_kernel")
counted(limits, "_checked_words", "limits read the words")
counted(limits, "validate", "spirv-val")
device = sys.argv[1] if sys.argv[1] == "ref" else int(sys.argv[1])
x = (np.arange(64 * 32).reshape(64, 32) / 1000).astype(np.float16)
w = (np.arange(48 * 32).reshape(48, 32) / 1000).astype(np.float16)
y = hydroplane.matmul(x, w.T, device=device)
compiler_loaded = sorted(m for m in ("hydroplane.lang.build", "hydroplane.spirv.builder") if m in sys.modules)
print(json.dumps({"counts": counts, "sum": float(np.asarray(y).sum()), "compiler loaded": compiler_loaded}))
"""


def _counting_process(tmp_path, device: str) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), HYDROPLANE_DISK_CACHE="1",
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", COUNTING_PROCESS, device], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("device", ["0", "ref"])
def test_a_warm_process_compiles_lowers_and_validates_nothing(tmp_path, device):
    """The second process with the first one's cache folder: no language compile, no lowering, no reading of the
    words for the limits, no spirv-val; the same result."""
    cold = _counting_process(tmp_path, device)
    assert cold["counts"]["language compiler"] > 0 and cold["counts"]["compile_kernel"] > 0, cold
    assert cold["counts"]["limits read the words"] > 0, cold
    assert device == "ref" or cold["counts"]["spirv-val"] > 0, cold  # the reference executor runs no spirv-val
    warm = _counting_process(tmp_path, device)
    assert warm["counts"] == dict.fromkeys(cold["counts"], 0), warm
    assert warm["sum"] == cold["sum"]
    # nor does it import the compiler proper (lang/build.py) or spirv's builder: they load with the first compile
    assert cold["compiler loaded"] == ["hydroplane.lang.build", "hydroplane.spirv.builder"], cold
    assert device == "ref" or warm["compiler loaded"] == [], warm
    for kind in ("spirv", "compiled", "limits") + (("validated",) if device != "ref" else ()):
        assert any((tmp_path / "hydroplane" / kind).iterdir()), kind


def test_compiled_kernels_and_limits_are_kept_by_their_words(tmp_path, monkeypatch):
    """spirv's CompiledKernel of the same words and target comes from the disk (with this process's Target); other
    words, another entry or another target are other entries; a damaged entry is compiled again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    target = Target.reference()
    words = _library_kernel().spirv(target, **CONSTEXPRS)
    first = disk_cache.compiled_kernel(words, target)
    files = list((tmp_path / "hydroplane" / "compiled").glob("*.pkl"))
    assert len(files) == 1
    calls = []
    monkeypatch.setattr(disk_cache, "compile_kernel", lambda *a: calls.append(a))
    again = disk_cache.compiled_kernel(words, target)
    assert calls == [] and again == first and again.target is target and again.locations == first.locations
    assert first.locations and all(isinstance(place, SourceLocation) for place in again.locations.values())
    stored = pickle.loads(files[0].read_bytes())  # the locations packed as arrays (about 10x faster to read back)
    assert isinstance(stored, disk_cache._StoredKernel) and stored.compiled.locations == {}
    assert len(stored.places) < len(stored.offsets) == len(first.locations)
    other = _library_kernel().spirv(target, TX=8, TY=8, ROWS=1)
    disk_cache.compiled_kernel(other, target)
    disk_cache.compiled_kernel(words, replace(target, name="another"))
    assert len(calls) == 2
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")
    files[0].write_bytes(b"not a pickle")
    assert disk_cache.compiled_kernel(words, target) == first
    assert check_target_limits(first, target) == check_target_limits(first, target)  # written, then read
    assert len(list((tmp_path / "hydroplane" / "limits").glob("*.pkl"))) == 1


def test_a_failed_check_keeps_nothing(tmp_path, monkeypatch):
    """`cached` writes only what `make` returned: a check that raised is not remembered as passed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = disk_cache.digest_of(b"words", "main")

    def refuse():
        raise ValueError("refused")

    with pytest.raises(ValueError):
        disk_cache.cached("limits", key, refuse)
    assert disk_cache.cached("limits", key, lambda: 7) == 7
    assert disk_cache.cached("limits", key, refuse) == 7  # read back, `make` not called
    assert disk_cache.digest_of(b"words", "main") != disk_cache.digest_of(b"words", "other")


def test_a_validation_is_remembered_per_validator_file_and_package(tmp_path, monkeypatch, spirv_val):
    """spirv-val's verdict is keyed by the validator file (another file, or the same one changed, is asked again) and,
    like every key, by the package's sources."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = ("words-sha", "vulkan1.3")
    monkeypatch.setenv("HYDROPLANE_SPIRV_VAL", spirv_val)
    first = launch_limits._validation_key(key)
    assert first is not None and first == launch_limits._validation_key(key)
    copy = tmp_path / "spirv-val"
    copy.write_bytes(open(spirv_val, "rb").read())
    copy.chmod(0o755)
    monkeypatch.setenv("HYDROPLANE_SPIRV_VAL", str(copy))
    second = launch_limits._validation_key(key)
    assert second not in (None, first)
    os.utime(copy, ns=(1, 1))  # the same file, changed
    assert launch_limits._validation_key(key) not in (first, second)
    assert launch_limits._validation_key(("other-sha", "vulkan1.3")) != launch_limits._validation_key(key)
    monkeypatch.setattr(disk_cache, "package_digest", lambda: "another version of the package")
    changed = launch_limits._validation_key(key)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "1")
    monkeypatch.setenv("HYDROPLANE_SPIRV_VAL", str(copy))
    assert changed != launch_limits._validation_key(key)
    monkeypatch.setenv("HYDROPLANE_DISK_CACHE", "0")
    assert launch_limits._validation_key(key) is None


def test_launch_run_on_the_reference_executor_with_the_cache_on(tmp_path, monkeypatch):
    """launch.run compiles the words and hands the executor the CompiledKernel: the reference executor's kernel
    cache takes it as it is (it once read it as words and raised SpirvError whenever the disk cache was on)."""
    import numpy as np

    from hydroplane.launch import executors

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = _users_kernel.compile()
    out = executors.run(spec.words, (1,), {0: np.zeros(64, np.float32)}, device="ref")
    assert (out[0] == 1.0).all()
