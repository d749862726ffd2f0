"""Gemma 3 270M on the H200 in ONE run (issue 26 item 7): hydroplane's prefill and captured decode beside torch on the
same architecture and llama.cpp's figures.

The model: a GGUF with the real Gemma 3 270M file's metadata and tensor layout and generated weights
(tools/make_benchmark_gguf.py, written at the start: the real file is over what the device tool carries; the
weights' values do not change the speed). Batch 1, context DEPTH + TOKENS + 64 positions.

- hydroplane prefill (pp512): `model.step(ids)` of 512 random ids from an empty cache (only the last position's
  logits), host wall clock from the call to the logits read back. The first run plans (as calls), the second
  captures its bucket's padded step (docs/models.md) and replays it (reported as `captured_s`, about the host's
  cost of the calls), then 0.3 s of untimed replays back to back (an H200 left idle runs below its clock), then
  best and median of --reps replays; each replayed run split into `step_s` (until
  model.step returns), `read_s` (.numpy()) and `gpu_span_s` (GPU timestamps around the step's queued work), beside
  `graph_gpu_s` (the replay alone, back to back): wall much above the span is host time, a span much above the
  graph's is GPU time between or around the step's submits.
- hydroplane decode (tg128 at depth 0 and 4096): the user path of `Model.generate` after its prefill: 128 decode
  steps (the first decode step of the run is its warm-up: it runs as calls, then the step is captured; every timed
  step is a replay of the captured graph), the sampled ids read back by the host after 1, 2, 4, 8, then every 16
  steps, the next batch's steps queued before each read (generate's end-of-generation check, Model.decode_batches),
  greedy. Host wall clock over the 128 steps, from the first replay's
  submit to the last read. Depth 4096: the cache filled first by 8 prefill steps of 512 random ids (the same
  planned calls as pp512), then the 128 steps from position 4096.
- torch: the same forward (Gemma 3: RMS norms, q/k norms, NeoX RoPE with the layers' bases, the sliding window of
  512 on 5 layers of 6, post norms, GeGLU, the tied output) written here with torch ops on the weights dequantized
  to f16 (hydroplane's row-gather kernel, ops.quant_matmul.quantized_rows), QKV and gate/up fused, a static KV
  cache, F.scaled_dot_product_attention (mask: causal and the window; decode over the whole cache with the mask, so
  that the step has static shapes).
  Prefill eager; decode eager and replayed as one CUDA graph per token (torch.cuda.CUDAGraph: the argmax written
  into the next step's token tensor on the device), the ids read back at the same points as hydroplane's.
  Its last logits after a prefill are compared with hydroplane's (relative L2, top-1) as a check that both run the
  same model.
- llama.cpp: the figures of issue 26's text (the peer's numbers, not run here): llama.cpp's Vulkan backend
  (0c1e570, llama-bench, coopmat2, flash attention on) on the H200, 2026-12-01, on the model's own metadata and
  tensor formats with zeroed weights: pp512 22,141 t/s, tg128 506 t/s, 532 t/s at depth 4096.

Phases run in order of importance and the JSON is rewritten after each, so a run cut short still reports what it
measured; --budget seconds (default 250) skips the phases that would start after it.

    for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
    VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONPATH=src \\
        python3 benchmarks/model_h200.py --out $OUT/model_h200.json

Here (lavapipe or ref, no torch): `PYTHONPATH=src python3 benchmarks/model_h200.py --gguf tiny.gguf --prompt 8
--tokens 8 --depth 16 --device ref` runs the same code on a small checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hydroplane import vk  # noqa: E402
from hydroplane.launch.runtime import runtime  # noqa: E402
from hydroplane.models import load  # noqa: E402
from hydroplane.models.model import FIRST_BATCH, LAST_BATCH, PREFILL_BUCKET, Model  # noqa: E402
from hydroplane.ops.quant_matmul import quantized_rows  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402, N812
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:  # lavapipe runs: no torch
    torch, F, HAVE_CUDA = None, None, False

LLAMA_CPP = {"source": "issue 26's text: llama.cpp Vulkan backend 0c1e570, llama-bench, coopmat2, flash attention "
                       "on, the H200, 2026-12-01, the model's metadata and tensor formats with zeroed weights "
                       "(not run here)",
             "pp512": 22141.0, "tg128": 506.0, "tg128_depth4096": 532.0}
START = time.perf_counter()
WARMUP_S = 0.3  # untimed prefills back to back before the timed ones (the GPU at its clocks)


def elapsed() -> float:
    return time.perf_counter() - START


def say(text: str) -> None:
    print(f"[{elapsed():7.1f} s] {text}", flush=True)


# hydroplane ---------------------------------------------------------------------------------------------------
def hp_prefill(model: Model, ids: np.ndarray, reps: int) -> dict:
    """The first run compiles and plans (as calls), the second captures the bucket's step and replays it (its time
    is about the calls' host time: reported as `captured_s`), the timed runs replay it. Each timed run is also
    split: `step_s` (model.step until it returns: the host writes, the replay's submit, the logits' copy queued),
    `read_s` (.numpy(): the wait and the read), and on a GPU `gpu_span_s`, GPU timestamps written in the queue
    before the step's first command and after its last (the GPU's time from the step's first batch to its end,
    gaps included); `graph_gpu_s` is the replay alone, back to back (DeviceRuntime.time)."""
    rt = runtime(model.device)
    times, captured, split = [], None, []
    for rep in range(reps + 2):
        if rep == 2:  # untimed replays back to back first (llama-bench warms up too): after the seconds of
            start = time.perf_counter()  # planning the GPU idled, and an idle H200 runs below its clock
            while time.perf_counter() - start < WARMUP_S:
                model.reset()
                model.step(ids).numpy()
        model.reset()
        timed = rep >= 2 and not rt.is_reference
        pool = vk.QueryPool(rt.executor.device, 2) if timed else None
        if pool is not None:
            with rt.lock:
                rt.stream.record(pool.reset, "", (pool,))
                rt.stream.record(lambda cmd, pool=pool: pool.write(cmd, 0, False), "", (pool,))
        t0 = time.perf_counter()
        logits = model.step(ids)
        t1 = time.perf_counter()
        if pool is not None:
            with rt.lock:
                rt.stream.record(lambda cmd, pool=pool: pool.write(cmd, 1, True), "", (pool,))
        logits.numpy()
        t2 = time.perf_counter()
        elapsed = t2 - t0
        if rep == 0:
            say(f"hydroplane prefill warm-up {elapsed:.2f} s")
        elif rep == 1:
            captured = elapsed
            say(f"hydroplane prefill captured {elapsed:.4f} s")
        else:
            times.append(elapsed)
            split.append({"wall_s": elapsed, "step_s": t1 - t0, "read_s": t2 - t1})
            if pool is not None:
                split[-1]["gpu_span_s"] = pool.nanoseconds()[0] / 1e9
                pool.close()
    out = {"tokens": int(ids.size), "best_s": min(times), "median_s": statistics.median(times),
           "tokens_per_s": ids.size / min(times), "median_tokens_per_s": ids.size / statistics.median(times),
           "captured_s": captured, "captured_tokens_per_s": ids.size / captured if captured else None,
           "reps": reps, "split": split}
    bucket = max(PREFILL_BUCKET, 1 << (ids.size - 1).bit_length())
    graph = model._prefills[bucket].graph if bucket in model._prefills else None
    if graph is not None and not rt.is_reference:
        out["graph_gpu_s"] = statistics.median(rt.time(graph.replay, 5, warmup=1, warmup_s=0.3))
    return out


def decode_batches(model: Model, first: int, count: int) -> list[int]:
    """`count` decode steps from the model's state, the ids read back after 1, 2, 4, 8, then every 16 steps, the
    next batch queued before each read (Model.decode_batches, as Model.generate reads them); the ids."""
    return [int(t) for tokens in model.decode_batches(first + 1, count) for t in tokens]


def hp_decode(model: Model, depth: int, tokens: int, chunk: int, rng) -> dict:
    model.reset()
    for start in range(0, depth, chunk):  # the cache filled by prefill steps (the same plans as pp512)
        model.step(rng.integers(4, model.config.n_vocab, min(chunk, depth - start)))
    model.kv_len.numpy()  # waits for the fill
    if not model._graphs:  # the warm-up: the first decode step runs as calls, the second is captured
        model.decode_from(5, depth)
        t0 = time.perf_counter()
        model.decode(2)
        model.history.numpy()
        say(f"hydroplane decode warm-up and capture {time.perf_counter() - t0:.2f} s")
    model.decode_from(5, depth)
    decode_batches(model, depth, tokens)  # untimed: the GPU at its clocks, every replay path warm
    model.decode_from(5, depth)
    t0 = time.perf_counter()
    ids = decode_batches(model, depth, tokens)
    seconds = time.perf_counter() - t0
    graph = next(iter(model._graphs.values()))
    record = {"depth": depth, "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
              "ms_per_token": seconds / tokens * 1e3, "first_ids": ids[:8], "launches_per_step": graph.launches}
    rt = runtime(model.device)
    if not rt.is_reference:  # the GPU's own time of one replayed step (timestamps around it), from depth + tokens
        gpu = rt.time(graph.replay, 20, warmup=0, warmup_s=0.0)
        record["gpu_ms_per_step_median"] = statistics.median(gpu) * 1e3
        record["gpu_us_per_launch"] = statistics.median(gpu) * 1e6 / graph.launches
    return record


# torch --------------------------------------------------------------------------------------------------------
class TorchGemma:
    """The forward pass of Model (gemma3 / llama rows of hydroplane.models.arch) in torch, f16 weights."""

    def __init__(self, model: Model, dev: str):
        c = self.c = model.config
        self.dev, self.context = dev, model.context
        h16 = torch.float16

        def t(array, dtype=h16):
            return torch.from_numpy(np.ascontiguousarray(array)).to(dev, dtype)

        def matrix(m):  # a hydroplane weight, dequantized to f16 on the device (quantized_rows), as torch
            if m.quantized:
                return t(quantized_rows(m.device, np.arange(m.shape[0], dtype=np.int32), np.float16).numpy())
            return t(m.device.numpy())

        self.emb = matrix(model.embedding)
        self.out = self.emb if model.output is model.embedding else matrix(model.output)
        self.layers = []
        for i, block in enumerate(model.blocks):
            layer = {"qkv": torch.cat([matrix(block["q"]), matrix(block["k"]), matrix(block["v"])]),
                     "o": matrix(block["o"]), "gu": torch.cat([matrix(block["gate"]), matrix(block["up"])]),
                     "down": matrix(block["down"])}
            for role in ("attn_norm", "ffn_norm", "q_norm", "k_norm", "post_attn_norm", "post_ffn_norm"):
                if role in block:
                    layer[role] = t(block[role].numpy(), torch.float32)
            spec = c.layers[i]
            half = c.n_rot // 2
            layer["inv_freq"] = torch.tensor(spec.rope_scale * spec.rope_base ** (-2.0 * np.arange(half) / c.n_rot),
                                             dtype=torch.float32, device=dev)
            layer["window"] = spec.window
            self.layers.append(layer)
        self.out_norm = t(model.output_norm.numpy(), torch.float32)
        self.k = torch.zeros(c.n_layer, c.n_head_kv, self.context, c.head_dim, dtype=h16, device=dev)
        self.v = torch.zeros(c.n_layer, c.n_head_kv, self.context, c.head_dim_v, dtype=h16, device=dev)
        self.keys = torch.arange(self.context, device=dev)

    def norm(self, x, w):
        x = x.float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c.eps) * w

    def rope(self, x, positions, inv_freq):
        c = self.c
        half = c.n_rot // 2
        angle = positions.float()[:, None] * inv_freq[None, :]
        cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]
        x = x.float()
        if c.arch.rope_style == "neox":
            a, b = x[..., :half], x[..., half:c.n_rot]
            return torch.cat([a * cos - b * sin, a * sin + b * cos, x[..., c.n_rot:]], -1)
        a, b = x[..., 0:c.n_rot:2], x[..., 1:c.n_rot:2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)

    def forward(self, ids, pos0, whole_cache: bool, last_only: bool = True):
        """Logits of ids (T,) at positions pos0 .. (pos0 a 1-element long tensor); whole_cache: attention over the
        whole cache with the mask (static shapes: the CUDA graph), else over the keys up to the last position."""
        c = self.c
        T = ids.shape[0]
        positions = pos0 + torch.arange(T, device=self.dev)
        x = self.emb[ids].float() * c.embedding_scale
        act = (lambda g: F.gelu(g, approximate="tanh")) if c.arch.activation == "gelu_tanh" else F.silu
        q_dim, kv_dim = c.n_head * c.head_dim, c.n_head_kv * c.head_dim
        group = c.n_head // c.n_head_kv
        for i, layer in enumerate(self.layers):
            h = self.norm(x, layer["attn_norm"]).half()
            qkv = h @ layer["qkv"].T
            q = qkv[:, :q_dim].reshape(T, c.n_head, c.head_dim)
            k = qkv[:, q_dim:q_dim + kv_dim].reshape(T, c.n_head_kv, c.head_dim)
            v = qkv[:, q_dim + kv_dim:].reshape(T, c.n_head_kv, c.head_dim_v)
            if "q_norm" in layer:
                q, k = self.norm(q, layer["q_norm"]), self.norm(k, layer["k_norm"])
            q = self.rope(q, positions, layer["inv_freq"]).half()
            k = self.rope(k, positions, layer["inv_freq"]).half()
            self.k[i].index_copy_(1, positions, k.transpose(0, 1))
            self.v[i].index_copy_(1, positions, v.transpose(0, 1).half())
            if whole_cache:
                keys, kc, vc = self.keys, self.k[i], self.v[i]
            else:
                n = int(positions[-1]) + 1
                keys, kc, vc = self.keys[:n], self.k[i][:, :n], self.v[i][:, :n]
            mask = keys[None, :] <= positions[:, None]
            if layer["window"] is not None:
                mask &= (positions[:, None] - keys[None, :]) < layer["window"]
            kk = kc.expand(c.n_head, -1, -1) if c.n_head_kv == 1 else kc.repeat_interleave(group, 0)
            vv = vc.expand(c.n_head, -1, -1) if c.n_head_kv == 1 else vc.repeat_interleave(group, 0)
            o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], kk[None], vv[None], attn_mask=mask,
                                               scale=c.attention_scale)
            o = o[0].transpose(0, 1).reshape(T, c.n_head * c.head_dim_v) @ layer["o"].T
            if "post_attn_norm" in layer:
                o = self.norm(o, layer["post_attn_norm"])
            x = x + o.float()
            h = self.norm(x, layer["ffn_norm"]).half()
            gu = h @ layer["gu"].T
            f = (act(gu[:, :c.n_ff]) * gu[:, c.n_ff:]) @ layer["down"].T
            if "post_ffn_norm" in layer:
                f = self.norm(f, layer["post_ffn_norm"])
            x = x + f.float()
        if last_only:
            x = x[-1:]
        logits = self.norm(x, self.out_norm).half() @ self.out.T
        if c.logit_softcap:
            logits = torch.tanh(logits.float() / c.logit_softcap) * c.logit_softcap
        return logits.float()


def torch_phases(model: Model, args, rng, results: dict, write) -> None:
    dev = "cuda"
    t0 = time.perf_counter()
    tm = TorchGemma(model, dev)
    torch.cuda.synchronize()
    say(f"torch: weights dequantized to f16 in {time.perf_counter() - t0:.1f} s")
    out: dict = {"weights": "f16, dequantized by hydroplane's row-gather kernel (ops.quant_matmul.quantized_rows)",
                 "torch": torch.__version__}
    results["torch"] = out
    check_ids = rng.integers(4, model.config.n_vocab, args.prompt)
    with torch.no_grad():
        model.reset()
        ours = model.step(check_ids).numpy()  # the last position's logits after a prefill (planned already)
        theirs = tm.forward(torch.tensor(check_ids, device=dev), torch.zeros(1, dtype=torch.long, device=dev),
                            False).cpu().numpy()
        finite = np.isfinite(ours).all() and np.isfinite(theirs).all()
        out["logits_rel_l2_vs_hydroplane"] = float(np.linalg.norm(theirs - ours) / np.linalg.norm(ours)) \
            if finite else None
        out["top1_agree_vs_hydroplane"] = float(np.mean(theirs.argmax(-1) == ours.argmax(-1)))
        say(f"torch vs hydroplane logits after {args.prompt} tokens: rel L2 {out['logits_rel_l2_vs_hydroplane']}, "
            f"top-1 agree {out['top1_agree_vs_hydroplane']}")
        ids = torch.tensor(rng.integers(4, model.config.n_vocab, args.prompt), device=dev)
        zero = torch.zeros(1, dtype=torch.long, device=dev)
        times = []
        for rep in range(args.reps + 1):
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            tm.forward(ids, zero, False).cpu()
            if rep:
                times.append(time.perf_counter() - t1)
        out["prefill"] = {"mode": "eager", "tokens": args.prompt, "best_s": min(times),
                          "tokens_per_s": args.prompt / min(times)}
        say(f"torch prefill (eager): {out['prefill']['tokens_per_s']:.0f} tokens/s")
        write()
        token = torch.zeros(1, dtype=torch.long, device=dev)
        pos = torch.zeros(1, dtype=torch.long, device=dev)

        def step():
            logits = tm.forward(token, pos, True)
            token.copy_(logits[-1].argmax().reshape(1))
            pos.add_(1)

        def run(depth, n, one_step) -> float:
            token.fill_(5)
            pos.fill_(depth)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            done, batch = 0, FIRST_BATCH
            while done < n:
                wanted = min(batch, n - done)
                for _ in range(wanted):
                    one_step()
                int(token.item())  # the host's read (as hydroplane's history read)
                done += wanted
                batch = min(2 * batch, LAST_BATCH)
            return time.perf_counter() - t1

        def fill(depth):
            for start in range(0, depth, args.prompt):
                tm.forward(torch.tensor(rng.integers(4, model.config.n_vocab, min(args.prompt, depth - start)),
                                        device=dev), torch.full((1,), start, dtype=torch.long, device=dev), False)

        try:
            run(0, 4, step)  # warm-up
            for depth in (0, args.depth):
                fill(depth)
                seconds = run(depth, args.tokens, step)
                out[f"decode_eager_depth{depth}"] = {"tokens_per_s": args.tokens / seconds, "seconds": seconds}
                say(f"torch decode eager, depth {depth}: {args.tokens / seconds:.0f} tokens/s")
        except Exception as err:  # noqa: BLE001 - the CUDA graph figures may still come
            out["eager_decode_error"] = f"{type(err).__name__}: {err}"
            traceback.print_exc()
        write()
        try:  # one CUDA graph per decode step
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            token.fill_(5)
            pos.fill_(0)
            with torch.cuda.stream(side):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            token.fill_(5)
            pos.fill_(0)
            with torch.cuda.graph(graph):
                step()
            run(0, 4, graph.replay)
            for depth in (0, args.depth):
                fill(depth)
                seconds = run(depth, args.tokens, graph.replay)
                out[f"decode_cuda_graph_depth{depth}"] = {"tokens_per_s": args.tokens / seconds, "seconds": seconds}
                say(f"torch decode CUDA graph, depth {depth}: {args.tokens / seconds:.0f} tokens/s")
        except Exception as err:  # noqa: BLE001 - the eager figures stand
            out["cuda_graph_error"] = f"{type(err).__name__}: {err}"
            traceback.print_exc()


# the run ------------------------------------------------------------------------------------------------------
def machine(device) -> dict:
    info = {"host": platform.node(), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    try:
        info["device"] = runtime(device).name
    except Exception as err:  # noqa: BLE001
        info["device"] = f"? ({err})"
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["driver"] = None
    return info


def table(results: dict) -> str:
    hp, th, lc = results.get("hydroplane", {}), results.get("torch", {}), LLAMA_CPP
    d = results["args"]["depth"]

    def rate(record, key="tokens_per_s"):
        return f"{record[key]:10.0f}" if record and key in record else f"{'-':>10}"

    rows = [("pp512 (prefill 512)", rate(hp.get("prefill")), f"{lc['pp512']:10.0f}", rate(th.get("prefill")), "-"),
            ("tg128, depth 0", rate(hp.get("decode_depth0")), f"{lc['tg128']:10.0f}",
             rate(th.get("decode_eager_depth0")), rate(th.get("decode_cuda_graph_depth0"))),
            (f"tg128, depth {d}", rate(hp.get(f"decode_depth{d}")), f"{lc['tg128_depth4096']:10.0f}",
             rate(th.get(f"decode_eager_depth{d}")), rate(th.get(f"decode_cuda_graph_depth{d}")))]
    lines = [f"{'tokens/s':22} {'hydroplane':>10} {'llama.cpp':>10} {'torch':>10} {'torch+grph':>10}"]
    lines += [f"{name:22} {a} {b} {c} {e:>10}" for name, a, b, c, e in rows]
    lines.append("hydroplane: host wall clock, decode = captured step replayed; llama.cpp: issue 26's figures "
                 "(not run here); torch: eager / CUDA graphs, f16 weights")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, help="a checkpoint (default: generated by tools/make_benchmark_gguf.py)")
    parser.add_argument("--device", default="0", help="a Vulkan device number or ref")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--depth", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budget", type=float, default=250.0, help="seconds after which no phase starts")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")) / "model_h200.json")
    args = parser.parse_args()
    device = "ref" if args.device == "ref" else int(args.device)
    rng = np.random.default_rng(0)
    path = args.gguf
    if path is None:
        path = Path("/tmp/gemma3_270m_benchmark.gguf")
        subprocess.run([sys.executable, str(ROOT / "tools/make_benchmark_gguf.py"), str(path)], check=True)
    say(f"checkpoint {path}")
    results: dict = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                     "machine": machine(device), "llama_cpp": LLAMA_CPP, "hydroplane": {},
                     "timing": "host wall clock (time.perf_counter) over the whole prefill / the 128 decode steps, "
                               "after warm-up", "skipped": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")

    context = args.depth + args.tokens + 64
    t0 = time.perf_counter()
    model = load(path, device=device, context=context)
    say(f"hydroplane: loaded on {results['machine']['device']} in {time.perf_counter() - t0:.1f} s "
        f"(context {context})")
    model.tokenizer.eog_ids = frozenset()  # random weights: run every step
    hp = results["hydroplane"]
    phases = [("decode_depth0", lambda: hp_decode(model, 0, args.tokens, args.prompt, rng)),
              ("prefill", lambda: hp_prefill(model, rng.integers(4, model.config.n_vocab, args.prompt), args.reps)),
              ("torch", None),
              (f"decode_depth{args.depth}", lambda: hp_decode(model, args.depth, args.tokens, args.prompt, rng))]
    for name, phase in phases:
        if elapsed() > args.budget:
            results["skipped"].append(name)
            say(f"{name}: skipped (past the budget of {args.budget:.0f} s)")
            continue
        try:
            if phase is None:
                if not HAVE_CUDA:
                    results["skipped"].append("torch (no CUDA)")
                    continue
                torch_phases(model, args, rng, results, write)
            else:
                hp[name] = phase()
                say(f"hydroplane {name}: {hp[name]}")
        except Exception as err:  # noqa: BLE001 - the other phases still run and report
            results.setdefault("errors", {})[name] = f"{type(err).__name__}: {err}"
            traceback.print_exc()
        write()
    results["table"] = table(results)
    write()
    print(results["table"])


if __name__ == "__main__":
    main()
