"""Robustness benchmark: spirv-val-valid mutants of the test corpus run on the reference executor and a
Vulkan device (lavapipe in the test userland), each in its own subprocess with a timeout; counts the
runs that end in a signal, a traceback or a hang (none should) and those that end cleanly (exit 0, or
exit 1 with one `hydroplane: error:` line).

The corpus (tests/spirv/corpus/*.comp) is compiled with glslangValidator. A mutant changes what
spirv-val does not police but a driver trusts: a LocalSize, a DescriptorSet or Binding, a member
Offset or ArrayStride, an integer constant (loop bounds, indices, array lengths, matrix dimensions),
or drops one decoration. Only mutants that spirv-val accepts are run, until --count of them.

    PYTHONPATH=src python3 benchmarks/robust_mutants.py [--count 300] [--device 0] [--seed 9] [--jobs 2]

Each run is `python3 benchmarks/robust_mutants.py --one MODULE.spv --device D` (a driver that gives every
binding 64 KiB of random bytes, zero push constants, grid 1x1x1, the executor's --timeout 10) under a
wall-clock limit of 60 s. Prints one line per failure and a summary; docs/robustness.md has the numbers.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from hydroplane.errors import HydroplaneError  # noqa: E402
from hydroplane.spirv import binary, grammar  # noqa: E402
from hydroplane.spirv.binary import Operand  # noqa: E402
from hydroplane.spirv.enums import Decoration, ExecutionMode  # noqa: E402
from hydroplane.spirv.validation import ValidationError, validate  # noqa: E402

Op = grammar.Op
INTERESTING = (0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 255, 256, 1024, 4096, 32768, 32784, 65535, 65536, 1 << 20,
               1 << 24, 536870920, 3274859104, (1 << 31) - 1, 1 << 31, (1 << 32) - 1)
RUN_LIMIT_S = 60
EXECUTOR_TIMEOUT_S = 10
BUFFER_BYTES = 64 * 1024


def compile_corpus(out: Path) -> list[Path]:
    glslang = shutil.which("glslangValidator")
    if glslang is None:
        sys.exit("glslangValidator not found: run inside the test userland (scripts/userland)")
    found = []
    for source in sorted((REPO / "tests" / "spirv" / "corpus").glob("*.comp")):
        spv = out / f"{source.stem}.spv"
        subprocess.run([glslang, "-V", "--target-env", "vulkan1.3", str(source), "-o", str(spv)],
                       check=True, capture_output=True)
        found.append(spv)
    return found


def _set_literal(inst, index: int, value: int) -> None:
    inst.operands[index] = Operand(inst.operands[index].kind, value, inst.operands[index].nwords)


def mutate(module: binary.Module, rng: random.Random) -> str | None:
    """Change one thing of the module in place; return what, or None when it has nothing of that kind."""
    kind = rng.randrange(6)
    insts = module.instructions
    value = rng.choice(INTERESTING)
    if kind == 0:
        modes = [i for i in insts if i.opcode == Op.ExecutionMode and i.operands[1].value == ExecutionMode.LocalSize]
        if modes:
            axis = rng.randrange(3)
            _set_literal(rng.choice(modes), 2 + axis, value)
            return f"LocalSize {'xyz'[axis]} = {value}"
    elif kind == 1:
        decorations = [i for i in insts if i.opcode == Op.Decorate and i.operands[1].value in
                       (Decoration.DescriptorSet, Decoration.Binding, Decoration.ArrayStride)]
        if decorations:
            inst = rng.choice(decorations)
            _set_literal(inst, 2, value)
            return f"{Decoration(inst.operands[1].value).name} {value}"
    elif kind == 2:
        offsets = [i for i in insts if i.opcode == Op.MemberDecorate and i.operands[2].value == Decoration.Offset]
        if offsets:
            _set_literal(rng.choice(offsets), 3, value)
            return f"member Offset {value}"
    elif kind in (3, 4):
        ints = {i.result_id for i in insts if i.opcode == Op.TypeInt and i.operands[0].value == 32}
        constants = [i for i in insts if i.opcode in (Op.Constant, Op.SpecConstant) and i.result_type in ints]
        if constants:
            _set_literal(rng.choice(constants), 0, value)
            return f"integer constant {value}"
    else:
        decorations = [i for i in insts if i.opcode in (Op.Decorate, Op.MemberDecorate)]
        if decorations:
            inst = rng.choice(decorations)
            insts.remove(inst)
            decoration = inst.operands[1 if inst.opcode == Op.Decorate else 2].value
            return f"removed {inst.name} {grammar.enumerant('Decoration', decoration).name}"
    return None


def make_mutants(corpus: list[Path], count: int, seed: int, out: Path) -> tuple[list[tuple[Path, str]], int]:
    """(path, what changed) of `count` spirv-val-valid mutants, and how many mutants spirv-val rejected."""
    rng = random.Random(seed)
    sources = [(p, p.read_bytes()) for p in corpus]
    kept, rejected = [], 0
    while len(kept) < count:
        path, data = rng.choice(sources)
        module = binary.decode(data)
        what = mutate(module, rng)
        if what is None:
            continue
        words = module.words()
        try:
            validate(words, "vulkan1.3")
        except ValidationError:
            rejected += 1
            continue
        mutant = out / f"m{len(kept):04d}_{path.stem}.spv"
        mutant.write_bytes(binary.to_bytes(words))
        kept.append((mutant, f"{path.stem}: {what}"))
    return kept, rejected


def run_one(module_path: str, device: str) -> int:
    """The driver of one run: random bytes for every binding, zero push constants, grid 1x1x1."""
    from hydroplane.launch.executors import RawBytes, get_executor, run
    from hydroplane.spirv.compiled import compile_kernel

    try:
        executor = get_executor(device if device == "ref" else int(device), timeout=EXECUTOR_TIMEOUT_S)
        try:
            words = Path(module_path).read_bytes()
            compiled = compile_kernel(words, executor.target)
            rng = np.random.default_rng(1)
            buffers = {(b.set, b.binding): RawBytes(rng.integers(0, 256, max(BUFFER_BYTES, min(b.size, 1 << 24)),
                                                                 np.uint8))
                       for b in compiled.bindings}
            push = np.zeros(compiled.push_constant_size, np.uint8) if compiled.push_constant_size else None
            run(words, (1, 1, 1), buffers, push=push, executor=executor)
        finally:
            executor.close()
    except HydroplaneError as exc:
        print(f"hydroplane: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def classify(proc: subprocess.CompletedProcess | None) -> str:
    if proc is None:
        return "hang"
    if proc.returncode < 0:
        return f"signal {-proc.returncode}"
    if "Traceback" in proc.stderr:
        return "traceback"
    if proc.returncode == 0:
        return "ok"
    if proc.returncode == 1 and proc.stderr.strip().startswith("hydroplane: error:"):
        return "error"
    return f"exit {proc.returncode}"


def launch(module: Path, device: str) -> tuple[str, str, float]:
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    try:
        proc = subprocess.run([sys.executable, __file__, "--one", str(module), "--device", device],
                              capture_output=True, text=True, timeout=RUN_LIMIT_S, env=env)
    except subprocess.TimeoutExpired:
        proc = None
    tail = "" if proc is None else (proc.stderr.strip().splitlines() or [""])[-1][:160]
    return classify(proc), tail, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--device", default="0", help="the Vulkan device besides 'ref' (default 0)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", metavar="FOLDER", help="write the mutants to FOLDER (to rerun one)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return run_one(args.one, args.device)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        corpus = compile_corpus(folder)
        mutants, rejected = make_mutants(corpus, args.count, args.seed, folder)
        print(f"{len(mutants)} spirv-val-valid mutants of {len(corpus)} corpus modules "
              f"({rejected} other mutants rejected by spirv-val); seed {args.seed}")
        jobs = [(m, what, device) for m, what in mutants for device in ("ref", args.device)]
        counts: dict[str, Counter] = {"ref": Counter(), args.device: Counter()}
        slowest = {"ref": 0.0, args.device: 0.0}
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = pool.map(lambda job: (job, launch(job[0], job[2])), jobs)
            for (module, what, device), (outcome, tail, seconds) in results:
                counts[device][outcome] += 1
                slowest[device] = max(slowest[device], seconds)
                if outcome not in ("ok", "error"):
                    print(f"  {outcome:10} {device:>3} {module.name} ({what}): {tail}")
        print(f"{time.perf_counter() - start:.0f} s for {len(jobs)} runs")
        bad = 0
        for device, c in counts.items():
            name = "ref" if device == "ref" else f"Vulkan device {device}"
            summary = ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
            print(f"{name}: {summary}; slowest run {slowest[device]:.1f} s")
            bad += sum(v for k, v in c.items() if k not in ("ok", "error"))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
