"""The library kernels' specializations kept on disk (lang/disk_cache.py): a second process's compile of the same
specialization loads the first one's, the words equal; a changed constexpr is another entry; user kernels and
HYDROPLANE_DISK_CACHE=0 keep nothing."""

from __future__ import annotations

import pickle

import pytest

from hydroplane.kernels.gemm import copy as gemm_copy
from hydroplane.lang import Buffer, disk_cache, f32, global_id, kernel_source
from hydroplane.lang import compiler as compiler_module
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
