"""The H200 attention benchmark in ONE run: hydroplane's fused attention beside torch's scaled_dot_product_attention.

For each case (f16, torch's layout (batch, heads, sequence, head_dim)):
  (4, 16, 4096, 128) non-causal and causal, (1, 16, 16384, 128), (8, 32, 1024, 64), decode: (16, 32, 1 query,
  8192 keys, 128), and ggml's FLASH_ATTN_EXT cases of issue 25 ("ggml ..."; ggml's `test-backend-ops perf` feeds
  f32 queries, f16 K and V, an all-zero f16 mask and writes f32 out; hydroplane's are f16 in and out, no mask) —
  1. every configuration of the sweep (kernels.attention.candidate_configs for the device, best first, at most
     --max-configs; the decode case also its split counts) runs on the case's inputs with the output poisoned first
     and checked after (||O - R|| / ||R|| against torch's SDPA in float32 on the GPU, or NumPy's float64 softmax
     without torch), then is timed by GPU timestamps: at least --warmup-s of back-to-back runs, then the median of
     --reps runs (the decode path's two dispatches' times summed); a configuration that fails or is wrong is
     reported and skipped; on the decode cases the leading configurations that split the keys (the default first)
     are also timed with the fused combine (config.fused: one launch, the last split workgroup merging), each pair
     printed side by side with whether their outputs had the same bits, and the table gives the default's fused
     time beside the default's (`--config ...,fused=1` times a given one; `--fused` times only those pairs);
  2. torch.nn.functional.scaled_dot_product_attention on the same inputs (CUDA events, the same warm-up, median of
     --reps), when torch with CUDA is there.
FLOPs are 4·B·H·S_q·S_kv·D (halved for causal); the decode case is also given as TB/s of K and V read. The table
comes last, beside llama.cpp's Vulkan times for the ggml cases (PEER: issue 25's run of 2026-12-01, coopmat2,
`test-backend-ops perf`, which repeats the op in one graph and divides its time); before it, the arithmetic checks
(NaN and inf in Q and K, scales up to float32's largest, rows of equal scores, through the one-pass kernel, the
grouped decode path and the split prefill, against the float64 softmax of the f32 scores, NaN exactly where it has
NaN). Everything printed, and a JSON of every measurement, go to the folder given (default: $OUT, else none).

On the lent H200 (Vulkan needs the loader and the GLVND libraries unpacked first, docs/vulkan.md):

    for d in build/gldebs/*.deb; do dpkg -x "$d" /; done; ldconfig; \\
    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/attention_h200.py $OUT

Here (lavapipe, no torch): `PYTHONPATH=src python3 benchmarks/attention_h200.py build/att_tiny --tiny`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from h200_check import Tee  # noqa: E402 -- this folder's standalone H200 check: writes to several streams

from hydroplane import vk  # noqa: E402
from hydroplane.kernels.attention import (  # noqa: E402
    AttentionConfig,
    AttentionError,
    AttentionProblem,
    attention_plan,
    candidate_configs,
    random_inputs,
    reference,
    relative_error,
    tolerance,
)
from hydroplane.kernels.attention import plan as plan_module  # noqa: E402
from hydroplane.launch.runtime import capture, runtime_of  # noqa: E402
from hydroplane.ops.attention import AttentionRunner, attention  # noqa: E402

CASES = {  # name: (batch, heads, q_len, kv_len, head_dim, causal[, kv_heads])
    "4x16x4096x128": (4, 16, 4096, 4096, 128, False),
    "4x16x4096x128 causal": (4, 16, 4096, 4096, 128, True),
    "1x16x16384x128": (1, 16, 16384, 16384, 128, False),
    "8x32x1024x64": (8, 32, 1024, 1024, 64, False),
    "decode 16x32 1x8192x128": (16, 32, 1, 8192, 128, False),
}
GGML = {  # issue 25's FLASH_ATTN_EXT cases (ggml's perf list; no causal mask: ggml's mask is all zeros)
    "ggml decode d128 h8 kv4096": (1, 8, 1, 4096, 128, False, 8),
    "ggml decode d128 h32/8 kv4096": (1, 32, 1, 4096, 128, False, 8),
    "ggml decode d128 h8 kv16384": (1, 8, 1, 16384, 128, False, 8),
    "ggml decode d256 h32/2 kv10000": (1, 32, 1, 10000, 256, False, 2),
    "ggml decode d256 h32/2 kv20000": (1, 32, 1, 20000, 256, False, 2),
    "ggml prefill d256 h32/2 q512 kv10000": (1, 32, 512, 10000, 256, False, 2),
    "ggml prefill d256 h32/2 q512 kv20000": (1, 32, 512, 20000, 256, False, 2),
    "ggml decode d64 h64/8 q4 kv7680": (1, 64, 4, 7680, 64, False, 8),
}
CASES.update(GGML)
CASES["model prefill d256 h4/1 q512 causal"] = (1, 4, 512, 512, 256, True, 1)  # Gemma 3 270M's prefill of 512
PEER = {  # llama.cpp's Vulkan backend on the H200 (issue 25's table): µs per op
    "ggml decode d128 h8 kv4096": 12.8, "ggml decode d128 h32/8 kv4096": 17.0, "ggml decode d128 h8 kv16384": 33.4,
    "ggml decode d256 h32/2 kv10000": 35.8, "ggml decode d256 h32/2 kv20000": 50.6,
    "ggml prefill d256 h32/2 q512 kv10000": 2041.0, "ggml prefill d256 h32/2 q512 kv20000": 2466.0,
    "ggml decode d64 h64/8 q4 kv7680": 58.9,
}
TINY = {  # the same code paths at sizes lavapipe finishes in seconds
    "2x2x40x16": (2, 2, 40, 40, 16, False),
    "4x16x4096x128 bf16": (2, 2, 40, 40, 16, False),  # not run where the device has no bf16 (lavapipe)
    "2x2x40x16 causal": (2, 2, 40, 40, 16, True),
    "decode 2x2 1x200x16": (2, 2, 1, 200, 16, False),
    "decode grouped 8/2 2x200x32": (1, 8, 2, 200, 32, False, 2),
}
CASE_DTYPE = {"4x16x4096x128 bf16": "bf16"}  # f16 unless named here
CASES["4x16x4096x128 bf16"] = (4, 16, 4096, 4096, 128, False)  # bf16 where the device has it (DIRECT_P on the H200)
PARITY = [  # (batch, heads, kv_heads, q_len, kv_len, head_dim, causal, dtype, logit_scale): hydroplane.attention()
    (1, 2, 2, 33, 40, 64, False, "f16", 1.0),
    (1, 2, 2, 40, 33, 64, True, "f16", 1.0),  # S_q > S_kv: rows that see no key are zeros
    (2, 8, 2, 7, 70, 128, True, "f16", 1.0),  # GQA, S_q < S_kv
    (1, 8, 1, 1, 1000, 128, False, "f16", 1.0),  # MQA decode: the split path
    (2, 4, 4, 3, 777, 64, True, "f16", 1.0),  # short queries, causal, split
    (1, 2, 2, 100, 129, 128, True, "f16", 3.2),  # logits to about ±30
    (1, 2, 2, 65, 65, 256, False, "f16", 1.0),
    (1, 2, 2, 65, 65, 80, True, "f16", 1.0),
    (1, 4, 2, 47, 100, 128, True, "bf16", 1.0),
    (2, 4, 4, 1, 3000, 64, False, "bf16", 3.2),
]
TINY_PARITY = [(1, 2, 2, 17, 20, 16, True, "f16", 1.0), (1, 2, 1, 1, 100, 32, False, "f16", 3.2)]
TARGETS = {"4x16x4096x128": "≥ 200 TFLOP/s", "4x16x4096x128 causal": "≥ 150 TFLOP/s",
           "decode 16x32 1x8192x128": "≥ 3 TB/s"}
DECODE_SPLITS = (8, 16, 32, 64, 128, 256)  # the decode cases' split counts tried with their leading configurations
SCALAR_CONFIGS = 4  # the decode cases' leading scalar-pass configurations (config.scalar), all swept
SCALAR_SPLITS = (64, 256)  # and split counts (per head: one per key group) of the first of them
FUSED_CONFIGS = 6  # the decode cases' leading configurations that split the keys (the default first), each also
# timed with the fused combine (config.fused: no combining pass; unmeasured, never the default unless FUSED_COMBINE)
MODEL_DECODE = (1, 4, 1, 4288, 256, 1)  # Gemma 3 270M's decode step (B, H, S_q, cache capacity, D, H_kv), causal
MODEL_LENGTHS = (1, 512, 4096)  # the keys in use, read from the device (kv_len=)
MODEL_WINDOWS = (512, None)  # its sliding-window layers and its global ones


def torch_or_none():
    try:
        import torch  # noqa: PLC0415 -- optional: the baseline and the GPU reference
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def parity(cases, device, log) -> int:
    """hydroplane.attention() (the API path: the shared executor, robust buffer access) on small odd cases against
    the float64 NumPy reference; returns the number that failed."""
    failed = 0
    rng = np.random.default_rng(7)
    print("\nparity: hydroplane.attention() against NumPy (float64) on odd shapes", file=log)
    for b, h, h_kv, s_q, s_kv, d, causal, dtype, logit in cases:
        problem = AttentionProblem(b, h, s_q, s_kv, d, dtype, h_kv, causal)
        data = random_inputs(problem, rng, logit)
        start = time.perf_counter()
        try:
            out = attention(data["q"], data["k"], data["v"], causal=causal, device=device)
            error = relative_error(out, reference(problem, data["q"], data["k"], data["v"]))
            verdict = "ok" if error <= tolerance(problem) else "WRONG"
        except Exception as err:  # noqa: BLE001 -- reported, counted, and the run goes on
            error, verdict = float("nan"), f"FAILED {type(err).__name__}: {str(err)[:200]}"
        failed += verdict != "ok"
        print(f"    {verdict:5} {problem.describe():60} error {error:.2g} ({time.perf_counter() - start:.1f} s)",
              file=log, flush=True)
    return failed


def make_inputs(problem: AttentionProblem, rng, torch):
    """Q, K, V (NumPy, f16 normal values) and the reference: torch SDPA in float32 on the GPU, else NumPy float64."""
    data = random_inputs(problem, rng)
    if torch is None:
        return data, reference(problem, data["q"], data["k"], data["v"])
    q, k, v = (to_torch(data[name], torch) for name in "qkv")
    data["torch"] = (q, k, v)
    group = problem.heads // problem.kv_heads
    with torch.no_grad():
        qf, kf, vf = q.float(), k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
        scores = (qf @ kf.transpose(-1, -2)) * problem.softmax_scale
        if problem.causal:
            rows = torch.arange(problem.q_len, device="cuda")[:, None]
            cols = torch.arange(problem.kv_len, device="cuda")[None, :]
            scores = scores.masked_fill(cols > rows + problem.kv_len - problem.q_len, float("-inf"))
        exact = torch.softmax(scores, dim=-1) @ vf
        del scores
    return data, exact


def to_torch(array: np.ndarray, torch):
    """A CUDA tensor of a NumPy f16 or bf16 array (torch reads no ml_dtypes array: bf16 goes as its bits)."""
    if array.dtype == np.float16:
        return torch.from_numpy(np.ascontiguousarray(array)).cuda()
    return torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).cuda().view(torch.bfloat16)


def error_of(out: np.ndarray, exact, torch) -> float:
    if isinstance(exact, np.ndarray):
        return relative_error(out, exact)
    got = to_torch(out, torch).float()
    norm = float(torch.linalg.norm(exact))
    return float(torch.linalg.norm(got - exact)) / norm


def sweep_configs(problem: AttentionProblem, runner: AttentionRunner, limit: int, per_tile: int) -> list:
    """The first `limit` candidates, and the first `per_tile` of every other tile shape (NV2 flexible ones too)."""
    candidates = candidate_configs(problem, runner.target)
    configs = candidates[:limit]
    for tile in dict.fromkeys(c.tile for c in candidates):
        configs += [c for c in candidates if c.tile == tile][:per_tile]
    if problem.q_len <= 4:  # the decode path: also split counts of its leading (grouped and one-head) configurations
        leading = [c for c in configs if c.splits != 1 and c.grouped][:1] + \
            [c for c in configs if c.splits != 1 and not c.grouped][:1]
        configs += [replace(c, splits=s) for c in leading for s in DECODE_SPLITS]
        configs += [c for c in candidates if c.key_split][:2]  # the subgroups splitting each key block
        scalar = [c for c in candidates if c.scalar]  # the scalar main pass (unmeasured: never the default)
        configs += scalar[:SCALAR_CONFIGS] + [replace(c, splits=s) for c in scalar[:1] for s in SCALAR_SPLITS]
        configs = with_fused_twins(problem, configs, runner.target)
    configs += [c for c in candidates if c.q_rounds > 1][:1]  # Q staged in rounds (8 subgroups at head dim 256)
    if problem.q_len > 4 and any(c.splits != 1 for c in configs[:1]):  # a split prefill: unsplit and other counts
        configs += [replace(configs[0], splits=s) for s in (1, 2, 4, 8)]
    plans = {}  # the configurations as they run (split counts the plan clamps to the keys), each once
    for config in configs:
        try:
            plans.setdefault(attention_plan(problem, config, runner.target).config, config)
        except AttentionError:
            continue
    return list(plans.values())


def with_fused_twins(problem: AttentionProblem, configs: list, target) -> list:
    """`configs` with the first FUSED_CONFIGS of them that split the keys (in the order given: the default leads)
    each followed by itself with the fused combine (the same splits, one launch): timed one after the other, so
    that a run cut short still has the leading pairs."""
    leading = [c for c in configs if not c.fused and plan_module.splitting(problem, c)][:FUSED_CONFIGS]
    out = []
    for config in configs:
        out.append(config)
        twin = replace(config, fused=True)
        if config in leading and plan_module.fits(problem, twin, target):
            out.append(twin)
    return out


def fused_text(rows: list) -> str | None:
    """Each configuration timed with and without the fused combine (the same splits): both times and whether
    their outputs had the same bits (as they must: the same merges in the same order)."""
    by_config = {}
    for row in rows:
        key = json.dumps({k: v for k, v in row["config_dict"].items() if k != "fused"}, sort_keys=True)
        by_config.setdefault(key, {})[row["config_dict"].get("fused", False)] = row
    lines = []
    for pair in by_config.values():
        if len(pair) == 2:
            two, one = pair[False], pair[True]
            lines.append(f"    fused combine {one['seconds'] * 1e6:8.2f} us against {two['seconds'] * 1e6:8.2f} us "
                         f"({one['seconds'] / two['seconds'] - 1:+.1%}; bits "
                         f"{'equal' if one['bits'] == two['bits'] else 'DIFFERENT'}): {two['config']}")
    return "\n".join(lines) or None


def special_values(runner: AttentionRunner, log) -> int:
    """Issue 23's arithmetic on this device: NaN and inf in Q and K, scales to float32's largest, rows of equal
    scores, through each path's default configuration; NaN exactly where the float64 softmax of the f32 scores has
    it, the finite rest within the bound. Returns the number of cases that failed."""
    print("\narithmetic: special values against the float64 softmax of the f32 scores", file=log)
    failed = 0
    shapes = [("one pass", (1, 4, 70, 300, 128, True, 2)), ("grouped decode", (1, 32, 1, 3000, 128, False, 8)),
              ("grouped decode d256", (1, 32, 2, 5000, 256, True, 2)),
              ("split prefill", (1, 4, 300, 4000, 256, True, 2))]
    for path, (b, h, s_q, s_kv, d, causal, h_kv) in shapes:
        for kind, scale in (("NaN/inf in q and k", None), ("scale 1e30", 1e30), ("scale 3.4e38", 3.4e38),
                            ("scale -3.4e38", -3.4e38), ("scale 1e-40", 1e-40), ("equal rows, scale 1e36", 1e36),
                            ("equal rows, scale -1e36", -1e36)):
            problem = AttentionProblem(b, h, s_q, s_kv, d, "f16", h_kv, causal, scale)
            rng = np.random.default_rng(23)
            data = random_inputs(problem, rng)
            if kind.startswith("NaN"):
                data["q"][0, 0, 0, 5] = np.nan
                data["q"][0, 1, -1, 7] = np.inf
                data["k"][0, 0, s_kv - 1, 3] = np.nan
            elif kind.startswith("equal"):
                data["k"][:] = data["k"][:, :, :1]
            else:
                small = max(1, s_q // 2)
                data["q"][:, :, :small] = np.abs(data["q"][:, :, :small]) / 64
                data["k"][:, :, 0] = -30 * np.sign(scale)
            try:
                result = runner.run(problem, None, inputs=data, check=False)
                exact = reference(problem, data["q"], data["k"], data["v"])
                got = result.output.astype(np.float64)
                nan_ok = bool((np.isnan(got) == np.isnan(exact)).all())
                finite = np.isfinite(exact)
                error = relative_error(got[finite], exact[finite]) if finite.any() else 0.0
                ok = nan_ok and bool((np.isinf(got) == np.isinf(exact)).all()) and error <= tolerance(problem)
                verdict = "ok" if ok else "WRONG"
                detail = (f"NaN {int(np.isnan(exact).sum())} of {exact.size} as the reference: {nan_ok}, finite error "
                          f"{error:.2g}, {result.config.describe()}")
            except Exception as err:  # noqa: BLE001 -- reported, counted, and the run goes on
                verdict, detail = "FAILED", f"{type(err).__name__}: {str(err)[:200]}"
            failed += verdict != "ok"
            print(f"    {verdict:6} {path:20} {kind:26} {problem.describe()}: {detail}", file=log, flush=True)
    try:
        attention(*(np.zeros((1, 1, 1, 16), np.float16),) * 3, scale=1e39, device=runner.device)
        print("    WRONG  scale 1e39 was accepted", file=log)
        failed += 1
    except AttentionError as err:
        print(f"    ok     scale 1e39 refused: {err}", file=log)
    return failed


def parse_config(text: str) -> AttentionConfig:
    """`tile=16x16x16,subgroups=4,query_tiles=1,key_tiles=2,pad=1,splits=1` (fields left out keep their defaults;
    the scalar decode pass: `scalar=1,grouped=1,subgroups=4,key_tiles=8,splits=0`; the fused combine: `fused=1`)."""
    fields: dict = {}
    flags = ("grouped", "key_split", "column_split", "scalar", "fused")
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        fields[key] = tuple(int(v) for v in value.split("x")) if key == "tile" else \
            value in ("1", "true", "True") if key in flags else int(value)
    return AttentionConfig(**fields)


def statistics_text(prepared) -> str:
    """The driver's register count and local (spill) memory of the main pass, where it reports them."""
    kernel = prepared.passes[0].kernel
    try:
        found = vk.pipeline_statistics(kernel.native)
    except (vk.VulkanError, AttributeError) as err:
        return f"no statistics ({type(err).__name__})"
    keep = ("Register Count", "Stack Size")  # its "Local Memory Size" reads 2**36 and more: not a byte count
    return "; ".join(", ".join(f"{k} {v}" for k, v in e.statistics.items() if k in keep) for e in found)


GRAPH_S = 2e-3  # a captured graph of back-to-back runs lasts about this long


def graph_time(runner, prepared, one: float, reps: int, warmup_s: float) -> tuple[list[float], int]:
    """Seconds per run from a captured graph of N back-to-back runs (each run's passes behind a barrier, N about
    GRAPH_S / `one`), replayed as one submit and timed by GPU timestamps around it, divided by N: the kernels'
    time without the host's time between submits (ggml's `test-backend-ops perf` likewise repeats the op in one
    graph). Also (the list, N)."""
    per = max(1, min(200, int(GRAPH_S / max(one, 1e-7))))
    with capture(runner.device) as graph:
        for _ in range(per):
            prepared.dispatch()
    try:
        times = runtime_of(runner.executor).time(graph.replay, max(5, reps // 2), warmup_s=warmup_s)
    finally:
        graph.close()
    return [t / per for t in times], per


def time_hydroplane(runner, problem, config, data, exact, torch, reps, warmup_s, log) -> dict | None:
    start = time.perf_counter()
    try:
        with runner.prepare(problem, config, data) as prepared:
            stats = statistics_text(prepared)
            prepared.dispatch()  # the output was poisoned when prepared
            error = error_of(prepared.read(), exact, torch)
            if not error <= tolerance(problem):
                print(f"    WRONG   {config.describe()}: ||O-R||/||R|| = {error:.3g}", file=log)
                return None
            times = prepared.time(reps, warmup_s=warmup_s)
            graph_times, per = graph_time(runner, prepared, statistics.median(times), reps, warmup_s)
            prepared.repoison()
            prepared.dispatch()
            out = prepared.read()
            error = max(error, error_of(out, exact, torch))  # checked again after the timed runs
            plan = prepared.plan
    except Exception as err:  # noqa: BLE001 -- a configuration the driver refuses is skipped, and said so
        print(f"    FAILED  {config.describe()}: {type(err).__name__}: {str(err)[:300]}", file=log)
        if isinstance(err, vk.DeviceLost):
            runner.executor.close()
            runner.executor = runner.__class__.open(runner.device).executor
        return None
    submit_s = statistics.median(times)
    seconds = statistics.median(graph_times)
    row = {"config": plan.config.describe(), "config_dict": plan.config.to_dict(), "seconds": seconds,
           "submit_s": submit_s, "graph_runs": per, "min_s": min(graph_times), "max_s": max(graph_times),
           "runs": len(graph_times), "error": error,
           "tflops": problem.flops / seconds / 1e12, "kv_tbps": problem.kv_bytes / seconds / 1e12,
           "statistics": stats, "bits": hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()}
    print(f"    {row['tflops']:8.2f} TFLOP/s {row['kv_tbps']:6.3f} TB/s {seconds * 1e3:9.3f} ms "
          f"(one per submit {submit_s * 1e3:.3f})  error {error:.2g}  "
          f"{row['config']} [{stats}] ({time.perf_counter() - start:.1f} s)", file=log, flush=True)
    return row


def model_decode_configs(problem: AttentionProblem, runner) -> list[AttentionConfig]:
    """The model decode sweep's configurations: the default, the one-subgroup grouped one (the default before the
    column split), and the column split on 4 and 2 subgroups (16- and 32-key blocks), each at several split
    counts."""
    tile = (16, 16, 16)
    one = AttentionConfig(tile, 1, 1, 1, splits=0, grouped=True)
    four = AttentionConfig(tile, 4, 1, 1, splits=0, grouped=True, column_split=True)
    two = replace(four, subgroups=2)
    wide = replace(four, key_tiles=2)
    configs = [candidate_configs(problem, runner.target)[0], one, replace(one, splits=134)]
    configs += [replace(four, splits=s) for s in (0, 34, 134, 268)] + [replace(two, splits=s) for s in (0, 134)]
    configs += [replace(wide, splits=s) for s in (0, 134)]
    narrow = AttentionConfig((16, 8, 16), 4, 1, 2, splits=0, grouped=True, column_split=True)  # the causal default
    configs += [narrow, replace(narrow, splits=134), AttentionConfig((16, 8, 16), 1, 1, 2, splits=0, grouped=True)]
    return list(dict.fromkeys(configs))


def model_decode(runner, reps: int, warmup_s: float, log) -> list[dict]:
    """The model's decode attention (MODEL_DECODE, kv_len read from a device buffer) at each of MODEL_LENGTHS and
    MODEL_WINDOWS through each configuration of `model_decode_configs`: checked against the float64 reference at
    each length (the output poisoned first), then timed per run from a captured graph of back-to-back runs, and each
    pass alone (one per submit, GPU timestamps: what benchmarks/model_profile.py reports per launch)."""
    b, h, s_q, s_kv, d, h_kv = MODEL_DECODE
    rt = runtime_of(runner.executor)
    rows = []
    for window in MODEL_WINDOWS:
        problem = AttentionProblem(b, h, s_q, s_kv, d, "f16", h_kv, True, None, window, device_kv_len=True)
        data = random_inputs(problem, np.random.default_rng(25))
        data["kv_len"] = np.array([s_kv], np.int32)
        print(f"\nmodel decode: {problem.describe()}", file=log, flush=True)
        for config in model_decode_configs(problem, runner):
            start = time.perf_counter()
            try:
                prepared = runner.prepare(problem, config, data)
            except Exception as err:  # noqa: BLE001 -- a configuration the driver refuses is skipped, and said so
                print(f"    FAILED  {config.describe()}: {type(err).__name__}: {str(err)[:200]}", file=log)
                continue
            with prepared:
                stats = statistics_text(prepared)
                for length in MODEL_LENGTHS:
                    prepared.kv_len.write(np.array([length], np.int32))
                    prepared.repoison()
                    prepared.dispatch()
                    error = relative_error(prepared.read(), reference(problem, data["q"], data["k"], data["v"],
                                                                      length))
                    alone = [statistics.median(rt.time(p.dispatch, reps, warmup=2, warmup_s=0.05))
                             for p in prepared.passes]
                    per_run, per = graph_time(runner, prepared, sum(alone), reps, 0.05)
                    row = {"window": window, "kv_len": length, "config": prepared.plan.config.describe(),
                           "config_dict": prepared.plan.config.to_dict(), "error": error,
                           "graph_us": statistics.median(per_run) * 1e6, "graph_runs": per,
                           "alone_us": [t * 1e6 for t in alone], "statistics": stats}
                    rows.append(row)
                    ok = "ok" if error <= tolerance(problem) else "WRONG"
                    print(f"    kv_len {length:5d}: {row['graph_us']:7.2f} us per run in a graph; alone "
                          + " + ".join(f"{t:.2f}" for t in row["alone_us"]) + f" us; error {error:.2g} {ok}  "
                          f"{row['config']} [{stats}]", file=log, flush=True)
            print(f"    ({time.perf_counter() - start:.1f} s)", file=log, flush=True)
    return rows


def time_torch(problem: AttentionProblem, data, torch, reps: int, warmup_s: float) -> float | None:
    q, k, v = data["torch"]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    extra = {"enable_gqa": True} if problem.kv_heads != problem.heads else {}

    def call():
        return sdpa(q, k, v, is_causal=problem.causal, **extra)

    call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        call()
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=os.environ.get("OUT"), help="where the full output goes")
    parser.add_argument("--tiny", action="store_true", help="small cases (lavapipe, the reference executor)")
    parser.add_argument("--device", default=None, help="a Vulkan device number or 'ref' (default: the best)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup-s", type=float, default=0.3)
    parser.add_argument("--max-configs", type=int, default=4, help="leading configurations swept per case")
    parser.add_argument("--per-tile", type=int, default=1, help="and the leading ones of every other tile shape")
    parser.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    parser.add_argument("--no-parity", action="store_true", help="skip the odd-shape parity cases")
    parser.add_argument("--no-arithmetic", action="store_true", help="skip the special-value checks")
    parser.add_argument("--config", action="append", default=[],
                        help="a configuration to time instead of the sweep (repeatable), e.g. "
                             "tile=16x16x16,subgroups=4,key_tiles=2")
    parser.add_argument("--fused", action="store_true",
                        help="only the decode cases' leading configurations that split the keys (the default first), "
                             "each with and without the fused combine")
    parser.add_argument("--model-decode", action="store_true",
                        help="only the model's decode attention (MODEL_DECODE) at each kv_len and window")
    args = parser.parse_args(argv)
    cases = TINY if args.tiny else CASES
    if args.cases:
        cases = {name: cases[name] for name in args.cases.split(",")}
    folder = Path(args.folder) if args.folder else None
    streams = [sys.stdout]
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
        streams.append(open(folder / "attention_h200.txt", "w"))  # noqa: SIM115 -- closed at the end
    log = Tee(*streams)
    began = time.perf_counter()
    torch = None if args.tiny else torch_or_none()
    device = None if args.device is None else (args.device if args.device == "ref" else int(args.device))
    results = []
    explicit = [parse_config(text) for text in args.config]
    with AttentionRunner.open(device, "f16") as runner:
        runner.executor.capture_statistics = not runner.is_reference  # registers, spills: printed per configuration
        print(f"attention benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python "
              f"{platform.python_version()}, on {runner.name}"
              + (f", driver {runner.executor.info.driver_version}" if not runner.is_reference else "")
              + (f", torch {torch.__version__}" if torch else ", no torch (NumPy float64 reference, no baseline)"),
              file=log, flush=True)
        if args.model_decode:
            rows = model_decode(runner, args.reps, args.warmup_s, log)
            if folder:
                (folder / "model_decode.json").write_text(json.dumps(rows, indent=1) + "\n")
            for stream in streams[1:]:
                stream.close()
            return 0 if rows and all(r["error"] <= 3e-3 for r in rows) else 1
        failed = parity(TINY_PARITY if args.tiny else PARITY, runner.device, log) if not args.no_parity else 0
        if not args.no_arithmetic and not args.tiny:
            failed += special_values(runner, log)
        rng = np.random.default_rng(2026)
        for name, (b, h, s_q, s_kv, d, causal, *kv_heads) in cases.items():
            problem = AttentionProblem(b, h, s_q, s_kv, d, CASE_DTYPE.get(name, "f16"), (kv_heads or [h])[0],
                                       causal=causal)
            if args.fused and s_q > 4:  # not a decode case
                continue
            case_start = time.perf_counter()
            print(f"\n{name}: {problem.describe()}", file=log, flush=True)
            data, exact = make_inputs(problem, rng, torch)
            try:
                if args.fused:  # the fused combine beside the two launches, nothing else
                    candidates = [c for c in candidate_configs(problem, runner.target)
                                  if plan_module.splitting(problem, c)]
                    configs = with_fused_twins(problem, candidates[:FUSED_CONFIGS], runner.target)
                else:
                    configs = explicit or sweep_configs(problem, runner, args.max_configs if name not in CASE_DTYPE
                                                        else 3, args.per_tile if name not in CASE_DTYPE else 0)
            except AttentionError as err:  # bf16 where the device has none
                print(f"    not run: {err}", file=log)
                continue
            if not configs:
                print("    not run: no configuration splits the keys", file=log)
                continue
            rows = [r for r in (time_hydroplane(runner, problem, config, data, exact, torch, args.reps,
                                                args.warmup_s, log) for config in configs) if r]
            best = min(rows, key=lambda r: r["seconds"]) if rows else None
            default = runner.plan(problem).config.describe() if not explicit or args.fused else None
            shipped = next((r for r in rows if r["config"] == default), None)
            fused = fused_text(rows)
            if fused:
                print(fused, file=log)
            torch_s = time_torch(problem, data, torch, args.reps, args.warmup_s) if torch else None
            if torch_s:
                print(f"    torch SDPA: {problem.flops / torch_s / 1e12:8.2f} TFLOP/s "
                      f"{problem.kv_bytes / torch_s / 1e12:6.3f} TB/s {torch_s * 1e3:9.3f} ms", file=log)
            default_fused = None if shipped is None else next(
                (r for r in rows if r["config_dict"] == {**shipped["config_dict"], "fused": True}), None)
            results.append({"case": name, "problem": problem.describe(), "flops": problem.flops,
                            "kv_bytes": problem.kv_bytes, "best": best, "default": shipped,
                            "default_fused": default_fused, "tried": rows, "torch_s": torch_s,
                            "peer_us": PEER.get(name)})
            print(f"    ({time.perf_counter() - case_start:.1f} s)", file=log, flush=True)
            del data, exact
    print(f"\nsummary (hydroplane: per run from a captured graph of back-to-back runs, GPU timestamps around its "
          f"replay, median of {max(5, args.reps // 2)} after {args.warmup_s} s warm-up; torch: CUDA events around "
          f"each call, median of {args.reps}; TFLOP/s = 4·B·H·S_q·S_kv·D / time, halved for causal; "
          f"{time.perf_counter() - began:.0f} s in all)",
          file=log)
    print("| case | hydroplane ms | TFLOP/s | TB/s K+V | torch SDPA ms | TFLOP/s | hydroplane/torch | target | "
          "error | config | default config ms | default fused ms | llama.cpp Vulkan µs |", file=log)
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", file=log)
    for r in results:
        best, torch_s = r["best"], r["torch_s"]
        if best is None:
            print(f"| {r['case']} | no configuration verified | | | | | | {TARGETS.get(r['case'], '')} | | | |",
                  file=log)
            continue
        t_ms = f"{torch_s * 1e3:.3f}" if torch_s else "-"
        t_tf = f"{r['flops'] / torch_s / 1e12:.1f}" if torch_s else "-"
        ratio = f"{torch_s / best['seconds']:.2f}" if torch_s else "-"
        shipped = f"{r['default']['seconds'] * 1e3:.3f}" if r["default"] else "-"
        fused = f"{r['default_fused']['seconds'] * 1e3:.3f}" if r["default_fused"] else "-"
        peer = f"{r['peer_us']:.1f}" if r["peer_us"] else ""
        print(f"| {r['case']} | {best['seconds'] * 1e3:.3f} | {best['tflops']:.1f} | {best['kv_tbps']:.3f} | {t_ms} | "
              f"{t_tf} | {ratio} | {TARGETS.get(r['case'], '')} | {best['error']:.2g} | {best['config']} | "
              f"{shipped} | {fused} | {peer} |", file=log)
    if folder:
        (folder / "attention_h200.json").write_text(json.dumps(results, indent=1) + "\n")
        for s in streams[1:]:
            s.close()
    if failed:
        print(f"\n{failed} parity case(s) FAILED (above)", file=log)
    return 0 if all(r["best"] for r in results) and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
