"""ruff over the whole tree and mypy over the typed core pass, with their settings in pyproject.toml.

Both tools come from the test userland (scripts/userland installs Debian's ruff and mypy), never from
hydroplane's runtime dependencies; a missing tool fails these tests (require_tool), it never skips them.
"""

import subprocess
import tomllib

from conftest import REPO, require_tool

RUFF_PATHS = ["src", "tests", "tools", "benchmarks", "examples"]
LINT_TOOLS = ("ruff", "mypy")


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_passes_over_the_tree():
    proc = _run([require_tool("ruff"), "check", "--no-cache", *RUFF_PATHS])
    assert proc.returncode == 0, f"ruff check {' '.join(RUFF_PATHS)} failed:\n{proc.stdout}{proc.stderr}"


def test_ruff_takes_its_settings_from_pyproject(tmp_path):
    """A line of 121 characters is refused: the line length and rule selection of pyproject.toml are in force."""
    long_line = tmp_path / "long_line.py"
    long_line.write_text('"""A module with one line too long."""\n\nNAME = "' + "x" * 112 + '"\n')
    assert len(long_line.read_text().splitlines()[2]) == 121
    proc = _run([require_tool("ruff"), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"),
                 str(long_line)])
    assert proc.returncode == 1 and "E501" in proc.stdout, proc.stdout + proc.stderr


def test_mypy_passes_over_the_core(tmp_path):
    files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert "src/hydroplane/spirv/types.py" in files and "src/hydroplane/launch/executors.py" in files
    proc = _run([require_tool("mypy"), "--cache-dir", str(tmp_path / "mypy-cache")])  # files from pyproject
    assert proc.returncode == 0, f"mypy failed:\n{proc.stdout}{proc.stderr}"
    assert f"in {len(files)} source files" in proc.stdout, proc.stdout


def test_lint_tools_are_not_runtime_dependencies():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"]:
        assert not requirement.lower().startswith(LINT_TOOLS), f"{requirement} is a lint tool, not a runtime need"
