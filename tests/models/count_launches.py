"""The launches of one captured decode step, by kernel: `python3 tests/models/count_launches.py [--device ref|0]
[--blocks N] [--file GGUF]` writes a checkpoint of Gemma 3 270M's shapes and formats (tiny.py, a small vocabulary;
or loads GGUF, e.g. tools/make_benchmark_gguf.py's) and prints the captured step's launch count per kernel name."""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tiny  # noqa: E402

from hydroplane.launch.runtime import capture  # noqa: E402
from hydroplane.models import Model, read_gguf  # noqa: E402


def gemma_shaped(directory: Path, blocks: int = 2, seed: int = 0) -> Path:
    """A gemma3 checkpoint of Gemma 3 270M's shapes and per-block formats, `blocks` blocks, the tiny vocabulary."""
    return tiny.write(directory / f"gemma_shaped_{blocks}.gguf", "gemma3", seed=seed, n_layer=blocks,
                      dims=tiny.GEMMA_270M_DIMS, block_formats=tiny.gemma_270m_formats)


def captured_step(model: Model, sampling: dict | None = None) -> tuple[int, list[str]]:
    """(launches, their kernel names in order) of one decode step captured (run once first: the first run of a
    step plans its launches, which a capture cannot)."""
    model._decode_step(sampling or {"temperature": 0.0})
    rt = model.runtime
    names: list[str] = []
    planned = rt.launch_planned

    def counted(launch):
        names.append(launch.label)
        planned(launch)

    rt.launch_planned = counted
    try:
        with capture(model.device) as graph:
            model._decode_step(sampling or {"temperature": 0.0})
    finally:
        del rt.launch_planned
    return graph.launches, names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ref")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--file", type=Path, help="a GGUF to load instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = args.file or gemma_shaped(Path(directory), args.blocks)
        model = Model(read_gguf(path), device=args.device, context=2048)
        model.decode_from(5, 3)
        count, names = captured_step(model)
    print(f"{count} launches a decode step ({model.config.n_layer} blocks; {len(names)} named)")
    for name, n in collections.Counter(names).most_common():
        print(f"  {n:4d}  {name}")


if __name__ == "__main__":
    main()
