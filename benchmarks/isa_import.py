"""Benchmark of hydroplane.isa on full-size AMD XML files grown from the excerpts.

Measures, per excerpt: a cold import of the grown file (parse + cache image + write), a warm
lookup (new cache object and library, as a fresh `hydroplane isa show` sees them, then one
instruction), decoding and encoding throughput, and rendering a page. Prints a Markdown
table with the machine, date and command; the numbers go in docs/isa.md.

    python3 benchmarks/isa_import.py [--amd DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hydroplane.isa import IsaLibrary, SpecCache, decode  # noqa: E402
from hydroplane.isa.page import build_page, render_text  # noqa: E402
from hydroplane.isa.sources import XmlSource  # noqa: E402
from hydroplane.isa.syntax import assemble  # noqa: E402
from hydroplane.isa.synthetic import grow_excerpt  # noqa: E402

# excerpt -> size of AMD's original file (README of the excerpts)
ORIGINAL_SIZES = {"amdgpu_isa_rdna3.excerpt.xml": 12_123_219, "amdgpu_isa_cdna5.excerpt.xml": 17_163_258}


def default_amd_dir() -> Path:
    shared = os.environ.get("HYDROPLANE_SHARED")
    base = Path(shared) if shared else Path(__file__).resolve().parent.parent.parent / "shared"
    return base / "isa" / "amd"


def timed(func, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def bench_one(excerpt: Path, size: int, repeat: int, work: Path) -> dict[str, float]:
    xml = work / excerpt.name.replace(".excerpt", ".synthetic")
    xml.write_bytes(grow_excerpt(excerpt.read_bytes(), size))
    cache_folder = work / f"cache-{excerpt.stem}"
    start = time.perf_counter()
    spec = SpecCache(cache_folder).load(XmlSource(xml))
    cold = time.perf_counter() - start
    image = cache_folder / f"{spec.sha256}.img"

    def warm_lookup():
        library = IsaLibrary([SpecCache(cache_folder).load(XmlSource(xml))])
        return library.find("v_cvt_off_f32_i4_syn0042")

    warm, _ = timed(warm_lookup, repeat)
    library = IsaLibrary([spec])
    lines = ["v_cvt_off_f32_i4 v5, v1", "v_cvt_f32_f64 v5, s[2:3]", "v_cvt_f64_f32 v[4:5], 0x3e800001"] * 1000
    words = [assemble(spec, line)[0] for line in lines[:3]] * 1000
    encode_time, _ = timed(lambda: [assemble(spec, line) for line in lines], 3)
    decode_time, _ = timed(lambda: [decode(spec, w) for w in words], 3)
    page_time, _ = timed(lambda: render_text(build_page(library, "v_cvt_off_f32_i4", check_with_llvm=False)), repeat)
    return {"file MB": xml.stat().st_size / 1e6, "instructions": len(spec.instruction_names()),
            "cold import s": cold, "image MB": image.stat().st_size / 1e6, "warm lookup ms": warm * 1e3,
            "assemble us/line": encode_time / len(lines) * 1e6, "decode us/insn": decode_time / len(words) * 1e6,
            "page ms": page_time * 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--amd", type=Path, default=default_amd_dir(), help="folder of the XML excerpts")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, size in ORIGINAL_SIZES.items():
            rows[name.split("_")[2].split(".")[0]] = bench_one(args.amd / name, size, args.repeat, Path(tmp))
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {platform.platform()}")
    print(f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"command: python3 benchmarks/isa_import.py --repeat {args.repeat}\n")
    keys = list(next(iter(rows.values())))
    print("| file | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for arch, row in rows.items():
        print(f"| {arch} | " + " | ".join(f"{row[k]:.3g}" if isinstance(row[k], float) else str(row[k])
                                           for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
