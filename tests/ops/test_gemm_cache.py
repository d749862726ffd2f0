"""A broken autotune cache never costs a user the run: each way of breaking it warns once (GemmCacheWarning; the CLI
prints one `hydroplane: warning:` line), the bad part is ignored (or the file rebuilt when the next winner is
stored), and the GEMM runs, tunes and verifies. On the reference executor with tiny sizes, the cache in tmp_path
through XDG_CACHE_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings

import pytest
from conftest import REPO

from hydroplane.kernels.gemm import GemmProblem, parse_dtype
from hydroplane.ops import gemm
from hydroplane.ops.gemm import GemmCacheWarning, GemmRunner, cache_path, load_cache, shipped_table

PROBLEM = GemmProblem(24, 20, 28, parse_dtype("f16:f32"), "nt", beta=1.0)


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """Each test: its own cache home, and warnings not yet given (they are given once per process)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(gemm, "_WARNED", set())
    return tmp_path / "cache" / "hydroplane" / "gemm.json"


@pytest.fixture(scope="module")
def ref():
    with GemmRunner.open("ref") as runner:
        yield runner


def _key(runner) -> str:
    return runner.cache_key(PROBLEM)


# (name, how to break the cache given its path and the runner's problem key, whether a stored winner can be kept)
def _write(content):
    def breaks(path, key):
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content(key) if callable(content) else content
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return breaks


def _home_is_a_file(path, key):
    home = path.parent.parent
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("not a folder")


def _file_is_a_folder(path, key):
    (path / "inside").mkdir(parents=True)


def _read_only_folder(path, key):
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"ref": {}}))
    path.parent.chmod(0o555)


CASES = [
    ("a list", _write("[1, 2, 3]"), True, "holds a list, not a table of devices"),
    ("a string per device", _write('{"ref": "fast", "other gpu": "slow"}'), True, "holds a str, not a table"),
    ("an entry without config", _write(lambda key: json.dumps({"ref": {key: {"seconds": 1.0}}})), True,
     "no config"),
    ("a config with wrong fields", _write(lambda key: json.dumps({"ref": {key: {"config": {"bogus": 1}}}})), True,
     "unexpected keyword argument 'bogus'"),
    ("a config with wrong types", _write(lambda key: json.dumps({"ref": {key: {"config": {"tile": "abc"}}}})),
     True, "config tile='abc' is not like (16, 16, 16)"),
    ("an entry that is a number", _write(lambda key: json.dumps({"ref": {key: 7}})), True, "a int, not an entry"),
    ("invalid JSON", _write("{not json"), True, "is not JSON"),
    ("not UTF-8", _write(b'{"ref": "\xff\xfe"}'), True, "(UnicodeDecodeError: 'utf-8' codec"),
    ("nested past the parser's stack", _write("[" * 100000 + "]" * 100000), True,
     "is nested far deeper than a cache"),
    ("an entry nested deeper than an entry", _write(lambda key: json.dumps(
        {"ref": {key: {"config": {"tile": [[[[16]]]]}, "size": [[[[[1]]]]]}}})), True, "nested deeper than an entry"),
    ("a kind that is a list", _write(lambda key: json.dumps({"ref": {key: {"config": {"kind": ["coop"]}}}})), True,
     "a GEMM config's kind is a string, not ['coop']"),
    ("a kind that is an object", _write(lambda key: json.dumps({"ref": {key: {"config": {"kind": {"a": 1}}}}})),
     True, "a GEMM config's kind is a string"),
    ("a config field that is an object", _write(lambda key: json.dumps({"ref": {key: {"config": {"stages": {}}}}})),
     True, "a GEMM config has 1 or 2 stages, not {}"),
    ("a read-only folder", _read_only_folder, False, "cannot write the autotune cache"),
    ("a cache home that is a file", _home_is_a_file, False, "gemm.json (NotADirectoryError"),
    ("a cache file that is a folder", _file_is_a_folder, False, "gemm.json (IsADirectoryError"),
]


@pytest.mark.parametrize("name, breaks, rebuilt, says", CASES, ids=[c[0] for c in CASES])
def test_a_broken_cache_warns_once_and_the_run_goes_on(ref, fresh, monkeypatch, name, breaks, rebuilt, says):
    breaks(fresh, _key(ref))
    if name == "a read-only folder" and os.geteuid() == 0:  # root writes anyway: fail the write as the kernel would
        def denied(*args, **kwargs):
            raise PermissionError(13, "Permission denied", str(fresh.parent))
        monkeypatch.setattr(tempfile, "mkstemp", denied)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ref.run(PROBLEM).ok  # the default config when the cache gives none
        best = ref.tune(PROBLEM, repeat=1, limit=2)
        assert best.ok
        assert ref.run(PROBLEM, best.config).ok
        load_cache()
        load_cache()
    messages = [str(w.message) for w in caught if issubclass(w.category, GemmCacheWarning)]
    others = [str(w.message) for w in caught if not issubclass(w.category, GemmCacheWarning)]
    assert not others, others
    assert messages and len(messages) == len(set(messages)), messages  # each trouble said once
    assert any(says in m for m in messages), messages
    if rebuilt:  # the winner went into a rewritten file; only valid entries are kept
        table = json.loads(fresh.read_text())
        assert table["ref"][_key(ref)]["config"] == best.config.to_dict()
        assert set(table) == {"ref"} and load_cache()["ref"][_key(ref)]
    if name == "a read-only folder":
        fresh.parent.chmod(0o755)
        assert json.loads(fresh.read_text()) == {"ref": {}}  # untouched
        assert not [p for p in fresh.parent.iterdir() if p.suffix == ".tmp"]  # no temporary file left behind


def test_valid_entries_survive_beside_broken_ones(ref, fresh):
    good = {"config": ref.tuned_config(PROBLEM).to_dict(), "seconds": 1.0, "tflops": 0.1}
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({"ref": {_key(ref): good, "f16:f32 nn 8": {"config": 3}}, "gpu": [1]}))
    with pytest.warns(GemmCacheWarning, match=r"ignored 2 malformed entries: .*\(and 1 more\)"):
        table = load_cache()
    assert table == {"ref": {_key(ref): good}}


def test_a_missing_cache_is_silent(fresh):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_cache() == {}
        assert shipped_table()  # the package's table reads cleanly
    assert shipped_table() is shipped_table()  # read and checked once per process (a first matmul asks twice)
    assert cache_path() == fresh


def _cli(*args: str, env_extra: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PYTHONWARNINGS="default", **env_extra)
    return subprocess.run([sys.executable, "-m", "hydroplane", "gemm", *args], capture_output=True, text=True,
                          env=env, timeout=600)


DEEP = "[" * 100000 + "]" * 100000  # past the JSON parser's stack


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", '{"ref": {"x": {"config": {"tile": 5}}}}', DEEP,
                                     '{"ref": {"x": {"config": {"kind": ["coop"]}}}}'],
                         ids=["list", "not json", "tile", "deep", "kind list"])
def test_cli_says_it_in_one_line_and_keeps_the_result(tmp_path, content):
    home = tmp_path / "home"
    (home / "hydroplane").mkdir(parents=True)
    (home / "hydroplane" / "gemm.json").write_text(content)
    proc = _cli("24", "20", "28", "--device", "ref", "--retune", "--repeat", "1", env_extra={"XDG_CACHE_HOME":
                                                                                                str(home)})
    assert proc.returncode == 0, proc.stderr
    assert "check   ok" in proc.stdout
    warning_lines = [line for line in proc.stderr.splitlines() if line.startswith("hydroplane: warning: ")]
    assert len(warning_lines) == 1 and "autotune cache" in warning_lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "GemmCacheWarning" not in proc.stderr
    listed = _cli("--cache", env_extra={"XDG_CACHE_HOME": str(home)})  # the rebuilt cache lists its winner
    assert listed.returncode == 0 and "  cached  ref  " in listed.stdout, listed.stderr


@pytest.mark.parametrize("content, warns", [
    (DEEP, "nested far deeper than a cache"),
    ('{"ref": {"f16:f32 nn 256": {"config": {"kind": ["coop"]}}}}', "kind is a string, not ['coop']"),
    ('{"ref": {"f16:f32 nn 256": {"config": {"kind": "scalar"}, "tflops": ' + "9" * 400 + '}}}', None),
], ids=["deep", "kind list", "speed past a float"])
def test_cli_cache_listing_of_hostile_json(tmp_path, content, warns):
    home = tmp_path / "home"
    (home / "hydroplane").mkdir(parents=True)
    (home / "hydroplane" / "gemm.json").write_text(content)
    proc = _cli("--cache", env_extra={"XDG_CACHE_HOME": str(home)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("autotune cache: ") and "  shipped  " in proc.stdout
    if warns:
        assert proc.stderr.count("hydroplane: warning: ") == 1 and warns in proc.stderr, proc.stderr
    else:
        assert "  cached  ref  f16:f32 nn 256: scalar" in proc.stdout and "(speed not recorded)" in proc.stdout


def test_cli_cache_listing_of_a_broken_cache(tmp_path):
    home = tmp_path / "home"
    home.write_text("a file where the cache home should be")
    proc = _cli("--cache", env_extra={"XDG_CACHE_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"autotune cache: {home / 'hydroplane' / 'gemm.json'}")
    assert proc.stderr.count("hydroplane: warning: cannot read the autotune cache") == 1
    assert "Traceback" not in proc.stderr


def test_an_output_type_without_entries_takes_its_accumulators_winner(ref, fresh):
    """f16:f32:f16 with no winner of its own runs f16:f32's (the same kernels; only the epilogue rounds to f16); a
    winner of its own comes first."""
    from hydroplane.kernels.gemm.route import route_candidates

    narrow = GemmProblem(24, 20, 28, parse_dtype("f16:f32:f16"), "nt", beta=1.0)
    default = ref.tuned_config(narrow)
    others = [c for c in route_candidates(narrow, ref.target) if c != default]
    assert len(others) >= 2
    wide_key = ref.cache_key(PROBLEM)
    assert ref.cache_key(narrow) == wide_key.replace("f16:f32", "f16:f32:f16", 1)
    entry = {"seconds": 1.0, "tflops": 0.1}
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({"ref": {wide_key: dict(entry, config=others[0].to_dict())}}))
    assert ref.tuned_config(narrow) == others[0]
    fresh.write_text(json.dumps({"ref": {wide_key: dict(entry, config=others[0].to_dict()),
                                         ref.cache_key(narrow): dict(entry, config=others[1].to_dict())}}))
    assert ref.tuned_config(narrow) == others[1]
    assert ref.tuned_config(PROBLEM) == others[0]
