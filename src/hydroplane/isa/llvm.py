"""Run LLVM's assembler (llvm-mc) on many lines at once and read back the bytes per line.

The tool is $HYDROPLANE_LLVM_MC, else llvm-mc-22, else llvm-mc on PATH. One process per
batch keeps checks fast; a line LLVM rejects maps to its error text instead of bytes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from hydroplane.isa.errors import IsaError

TOOL_NAMES = ("llvm-mc-22", "llvm-mc")
ENCODING = re.compile(r"encoding: \[([^\]]*)\]")
ERROR = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$")


def find_llvm_mc() -> str | None:
    chosen = os.environ.get("HYDROPLANE_LLVM_MC")
    if chosen:
        return shutil.which(chosen) or (chosen if os.path.isfile(chosen) else None)
    for name in TOOL_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def assemble_lines(lines: list[str], mcpu: str, tool: str | None = None) -> list[bytes | str]:
    """For each line, LLVM's bytes, or its error message (a str)."""
    tool = tool or find_llvm_mc()
    if tool is None:
        raise IsaError("llvm-mc not found (set HYDROPLANE_LLVM_MC or put llvm-mc-22 on PATH)")
    if any("\n" in line for line in lines):
        raise IsaError("assembly lines must not contain newlines")
    try:
        proc = subprocess.run([tool, "-arch=amdgcn", f"-mcpu={mcpu}", "-show-encoding"],
                              input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IsaError(f"running {tool}: {exc}") from None
    if "is not a recognized processor" in proc.stderr:
        raise IsaError(f"{tool} does not know -mcpu={mcpu}")
    errors: dict[int, str] = {}
    for line in proc.stderr.splitlines():
        m = ERROR.match(line)
        if m:
            errors.setdefault(int(m.group(1)), m.group(2))
    encodings = [bytes(int(x, 16) for x in m.group(1).split(",") if x.strip())
                 for m in ENCODING.finditer(proc.stdout)]
    results: list[bytes | str] = []
    ok = iter(encodings)
    for number, _ in enumerate(lines, start=1):
        if number in errors:
            results.append(errors[number])
        else:
            results.append(next(ok, "no encoding printed"))
    return results
