"""Where a model step's GPU time goes (issues 24-26): every launch of the captured decode step and of the captured
prefill of a bucket, timed alone by GPU timestamps, grouped by kernel, beside the whole captured step's time.

The model is the benchmark's (tools/make_benchmark_gguf.py: the real Gemma 3 270M file's metadata and tensor layout,
generated weights) unless --gguf names another. For each step: the step is run once as calls (planning), then
captured with every launch it queues collected; each launch is then queued alone, `--reps` times after a short
warm-up (`DeviceRuntime.time`: GPU timestamps around each), median per launch; and the captured graph's replay is
timed the same way. The launches' sum against the graph's time says what the barriers and the chain of small
dispatches cost beside the kernels' own time; the table by kernel says which kernels to work on.

    PYTHONPATH=src python3 benchmarks/model_profile.py [--gguf FILE] [--device 0] [--prompt 512] [--depth 0]
        [--top 25] [--json OUT] [--barriers] [--folds]

--barriers: the decode step again with each kind of barrier between its launches; --folds: with each fold of a
pass into another kernel undone (the combining pass, the heads), to measure whether the folds pay.

Here (lavapipe, a tiny checkpoint): `--gguf tiny.gguf --prompt 16` runs the same code in seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hydroplane import vk  # noqa: E402
from hydroplane.launch.runtime import capture, runtime  # noqa: E402
from hydroplane.models import load  # noqa: E402


def collected(model, run) -> tuple[object, list]:
    """Run `run()` once as calls (planning), then capture it with every planned launch it queues collected:
    (the graph, [(label, planned launch)])."""
    run()
    rt = model.runtime
    launches: list = []
    planned = rt.launch_planned

    def collect(launch):
        launches.append((launch.label, launch))
        planned(launch)

    rt.launch_planned = collect
    try:
        with capture(model.device) as graph:
            run()
    finally:
        del rt.launch_planned
    return graph, launches


def clocks_up(rt, graph, reset, seconds: float = 0.3) -> None:
    """Replay a stateful step's graph back to back for `seconds` (reset every 8 replays, so the state never runs past
    the cache), then reset: an idle GPU runs at its idle clock, and the timing that follows must not see it ramp up
    (a step timed right after new pipelines were made, with the GPU idle meanwhile, measured 2-4x its time)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        reset()
        for _ in range(8):
            graph.replay()
        rt.synchronize()
    reset()


def profile(model, name: str, run, reps: int, top: int, reset=None) -> dict:
    """`reset()`, where given, puts back the state a run changes (a decode step advances the cache's length) before
    the graph's timing and before each launch's, so that every launch is timed at the state it was captured at."""
    rt = runtime(model.device)
    graph, launches = collected(model, run)
    if reset is not None:  # a stateful step: its replays warm the clocks up, with resets between them
        clocks_up(rt, graph, reset)
    whole = statistics.median(rt.time(graph.replay, reps, warmup=2 if reset is None else 10,
                                      warmup_s=0.3 if reset is None else 0.0)) * 1e6
    each = []
    # the launches are timed back to back right after the step (the clock is up): without the timing's settling,
    # which re-times a sample while it looks faster than the last, and so took up to 2 s for each of a decode step's
    # 130 launches of a few us, whose medians vary by more than its 3% (a 200 s run did not finish, 2026-12-07)
    shipped, vk.timing.SETTLE_MAX_S = vk.timing.SETTLE_MAX_S, 0.0
    try:
        for label, launch in launches:
            if reset is not None:
                reset()
            times = rt.time(lambda launch=launch: rt.launch_planned(launch), reps, warmup=2, warmup_s=0.002)
            each.append((label, statistics.median(times) * 1e6))
    finally:
        vk.timing.SETTLE_MAX_S = shipped
    by_kernel: dict[str, list[float]] = collections.defaultdict(list)
    for label, us in each:
        by_kernel[label].append(us)
    total = sum(us for _, us in each)
    print(f"\n{name}: {len(launches)} launches; captured step {whole:.1f} us by GPU timestamps; the launches alone "
          f"sum to {total:.1f} us ({whole - total:+.1f} us for the chain: barriers, gaps, overlap)")
    print(f"{'kernel':60s} {'count':>5s} {'sum us':>9s} {'share':>6s} {'median us':>9s} {'max us':>8s}")
    for label, times in sorted(by_kernel.items(), key=lambda kv: -sum(kv[1])):
        print(f"{label[:60]:60s} {len(times):5d} {sum(times):9.1f} {sum(times) / total:6.1%} "
              f"{statistics.median(times):9.1f} {max(times):8.1f}")
    print(f"the {top} longest launches, in step order:")
    longest = sorted(range(len(each)), key=lambda i: -each[i][1])[:top]
    for i in sorted(longest):
        print(f"  #{i:4d} {each[i][1]:8.1f} us  {each[i][0]}")
    return {"launches": len(launches), "graph_us": whole, "sum_us": total,
            "each": [{"label": label, "us": us} for label, us in each]}


def barrier_variants(model, run, reps: int, reset) -> dict:
    """The decode step captured again with each kind of barrier between dependent launches, its replay timed by GPU
    timestamps (median of `reps` after 10 replays): what the chain costs is the barriers' or the launches' own.
    "none" computes wrong results (no launch waits for the one before): it is the floor, not a candidate."""
    from hydroplane import vk
    from hydroplane.vk import enums as E
    from hydroplane.vk import stream as stream_module
    from hydroplane.vk.transfer import barrier

    shipped = vk.batch_barrier
    variants = {  # name -> (the barrier between a graph's dependent launches, vk.stream.NARROW_BARRIERS)
        "shipped (from compute alone after dispatches)": (shipped, True),
        "full (compute, transfer, host -> compute, transfer)": (shipped, False),
        "compute -> compute": (lambda cmd, only: barrier(
            cmd, E.VK_ACCESS_SHADER_WRITE_BIT, E.VK_ACCESS_SHADER_READ_BIT | E.VK_ACCESS_SHADER_WRITE_BIT,
            E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT), True),
        "execution only (no memory barrier)": (lambda cmd, only: _ffi_barrier(cmd), True),
        "none (wrong results: the floor)": (lambda cmd, only: None, True),
    }

    def setter(fn, narrow: bool):
        def set_it(on: bool) -> None:
            vk.batch_barrier = fn if on else shipped
            stream_module.NARROW_BARRIERS = narrow if on else True
        return set_it

    return timed_captures(model, run, reps, reset, {name: setter(*v) for name, v in variants.items()},
                          "the decode step captured with each barrier between dependent launches")



def fold_variants(model, run, reps: int, reset) -> dict:
    """The decode step captured as shipped and with each fold switch of the other value (the heads in attention's
    main pass, models.model.FOLD_HEADS; with them the combining pass in the o projection's GEMV, FOLD_COMBINE; the
    GEMVs' norm prologues loading their inputs in three rounds instead of holding them in registers, PROLOGUE_HELD;
    the GEMVs' first weights loaded before the prologue instead of after it, PROLOGUE_PRELOAD), each replay timed by
    GPU timestamps: whether each pays at these shapes (the same results: tests/models, tests/quant)."""
    from hydroplane.models import model as model_module
    from hydroplane.ops import quant_matmul

    def switched(**values):
        def set_variant(on: bool) -> None:
            for name, value in values.items():
                module = model_module if name.startswith("FOLD") else quant_matmul
                if on:
                    shipped[name] = getattr(module, name)
                    setattr(module, name, value)
                else:
                    setattr(module, name, shipped.pop(name))
        return set_variant

    shipped: dict = {}
    heads, combine = model_module.FOLD_HEADS, model_module.FOLD_COMBINE
    preload, both = quant_matmul.PROLOGUE_PRELOAD, heads and combine
    return timed_captures(model, run, reps, reset,
                          {"shipped": lambda on: None,
                           f"heads in attention {'off' if heads else 'on'}, combining pass apart":
                               switched(FOLD_HEADS=not heads, FOLD_COMBINE=False),
                           f"heads in attention and combining pass in the o GEMV {'off' if both else 'on'}":
                               switched(FOLD_HEADS=not both, FOLD_COMBINE=not both),
                           "norm prologues loading in three rounds": switched(PROLOGUE_HELD=0),
                           f"GEMVs' first weights loaded {'after' if preload else 'before'} their prologues":
                               switched(PROLOGUE_PRELOAD=not preload)},
                          "the decode step captured with each fold switched")


def timed_captures(model, run, reps: int, reset, variants: dict, title: str) -> dict:
    """For each variant (name -> a setter called with True before the capture and False after it): the step `run`
    captured once, reset, its replay timed (GPU timestamps, median of `reps` after 10 replays), in microseconds."""
    rt = runtime(model.device)
    out = {}
    print(f"\n{title} (GPU timestamps, median):")
    for name, set_variant in variants.items():
        set_variant(True)
        try:
            reset()
            run()  # a new variant's launches planned (a capture cannot plan)
            reset()
            with capture(model.device) as graph:
                run()
        finally:
            set_variant(False)
        clocks_up(rt, graph, reset)
        us = statistics.median(rt.time(graph.replay, reps, warmup=10, warmup_s=0.0)) * 1e6
        graph.close()
        out[name] = {"us": us, "launches": graph.launches}
        print(f"  {name:48s} {us:8.1f} us  ({graph.launches} launches)")
    return out


def _ffi_barrier(cmd) -> None:
    """An execution dependency compute -> compute without a memory barrier."""
    from hydroplane.vk import _ffi
    from hydroplane.vk import enums as E
    _ffi.core("vkCmdPipelineBarrier")(cmd, E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                      E.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, None, 0, None, 0, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="a checkpoint (default: tools/make_benchmark_gguf.py's)")
    parser.add_argument("--device", default="0")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--depth", type=int, default=0, help="decode from this many cached positions")
    parser.add_argument("--context", type=int, default=4288, help="the cache's positions (benchmarks/model_h200.py's)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--barriers", action="store_true",
                        help="also time the decode step captured with other barriers between its launches")
    parser.add_argument("--folds", action="store_true",
                        help="also time the decode step captured with each fold of a pass into another undone")
    args = parser.parse_args()
    path = args.gguf
    if path is None:
        path = Path("/tmp/gemma3_270m_benchmark.gguf")
        if not path.exists():
            subprocess.run([sys.executable, str(ROOT / "tools" / "make_benchmark_gguf.py"), str(path)], check=True)
    start = time.perf_counter()
    if args.depth + 64 > args.context or args.prompt > args.context:  # the graph's timed replays advance the state
        parser.error(f"--context {args.context} holds neither --depth {args.depth} and 64 replays nor --prompt")
    model = load(str(path), device=args.device, context=args.context)
    rt = runtime(model.device)
    print(f"{path.name} on {rt.name}, loaded in {time.perf_counter() - start:.1f} s; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    rng = np.random.default_rng(0)
    ids = rng.integers(4, model.config.n_vocab, args.prompt)
    results = {}

    model.reset()
    model.step(ids)  # the bucket's device inputs written (ids, positions, the kept row), its plans made
    state = next(iter(model._prefills.values()))

    def prefill():  # what the bucket's captured prefill holds
        model.forward(model.embed(state.ids), state.positions, last_row=state.row)

    results["prefill"] = profile(model, f"prefill of {args.prompt} tokens", prefill, args.reps, args.top)
    model.decode_from(5, args.depth)
    sampling = {"temperature": 0.0}
    results["decode"] = profile(model, f"decode step at depth {args.depth}",
                                lambda: model._decode_step(sampling), args.reps, args.top,
                                reset=lambda: model.decode_from(5, args.depth))
    if args.barriers:
        results["barriers"] = barrier_variants(model, lambda: model._decode_step(sampling), args.reps,
                                               lambda: model.decode_from(5, args.depth))
    if args.folds:
        results["folds"] = fold_variants(model, lambda: model._decode_step(sampling), args.reps,
                                         lambda: model.decode_from(5, args.depth))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
