"""`hydroplane attention B H S D`: fused attention on the best device, verified against NumPy, with its speed.

    hydroplane attention 4 16 4096 128 --causal              # softmax(q kᵀ / sqrt(D)) v, q k v (B, H, S, D) f16
    hydroplane attention 16 32 1 128 --kv-len 8192            # decode: one query against 8192 keys
    hydroplane attention 1 32 512 128 --kv-heads 8 --dtype bf16 --device ref

The device is the first Vulkan device with cooperative matrices for the dtype, else the reference executor,
which gets a problem it finishes in a few seconds (the output says so). Registered by ops/commands.py; the
work is in hydroplane.ops.attention.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from hydroplane.kernels.attention import DTYPE_NAMES, AttentionError, AttentionProblem, parse_dtype
from hydroplane.ops.attention import AttentionRunner
from hydroplane.ops.runner import device_option

REFERENCE_BUDGET = 2 ** 22  # B * H * S_q * S_kv * D the reference executor runs by default in a few seconds


def register(sub) -> None:
    p = sub.add_parser("attention", help="fused attention on the best device, verified against NumPy, with its speed",
                       description=__doc__.splitlines()[0])
    p.add_argument("batch", type=int, help="B")
    p.add_argument("heads", type=int, help="H: query heads")
    p.add_argument("seq", type=int, help="S: query length (and the key length unless --kv-len)")
    p.add_argument("head_dim", type=int, help="D: a multiple of 16 up to 256")
    p.add_argument("--kv-heads", type=int, default=None, help="K/V heads (dividing H; default H)")
    p.add_argument("--kv-len", type=int, default=None, help="key/value length (default S)")
    p.add_argument("--causal", action="store_true", help="mask keys j > i + S_kv - S_q (aligned bottom-right)")
    p.add_argument("--scale", type=float, default=None, help="softmax scale (default 1/sqrt(D))")
    p.add_argument("--window", type=int, default=None,
                   help="sliding window W: mask keys W or more before the query's position")
    p.add_argument("--dtype", default="f16", choices=DTYPE_NAMES)
    p.add_argument("--device", default=None, help="a Vulkan device number or 'ref' (default: the best one)")
    p.add_argument("--check", dest="check", action="store_true", default=True,
                   help="verify against NumPy in float64 (the default)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the verification")
    p.add_argument("--repeat", type=int, default=5, help="timed runs (the median is printed)")
    p.add_argument("--splits", type=int, default=None,
                   help="KV splits of the decode path (1: one pass; default: chosen from the problem)")
    p.set_defaults(func=attention_command)


def attention_command(args) -> int:
    if args.repeat < 1:
        raise AttentionError(f"--repeat must be at least 1, not {args.repeat}")
    dtype = parse_dtype(args.dtype)
    problem = AttentionProblem(args.batch, args.heads, args.seq, args.seq if args.kv_len is None else args.kv_len,
                               args.head_dim, dtype, args.kv_heads, args.causal, args.scale, args.window)
    device = device_option(args.device, AttentionError)
    with AttentionRunner.open(device, dtype) as runner:
        note = runner.note
        if device is None and runner.is_reference:
            shrunk = _shrink(problem)
            if shrunk != problem:
                note = (f"{note}; shrunk from S_q={problem.q_len} S_kv={problem.kv_len} so the reference executor "
                        f"finishes in seconds (--device ref runs the size asked)")
                problem = shrunk
        config = None
        if args.splits is not None:
            if args.splits < 1:
                raise AttentionError(f"--splits must be at least 1, not {args.splits}")
            base = runner.plan(problem).config
            config = replace(base, splits=args.splits)
        result = runner.run(problem, config, repeat=args.repeat, check=args.check)
        result.note = note.lstrip("; ")
        print(result.text())
        return 0 if result.ok else 1


def _shrink(problem: AttentionProblem) -> AttentionProblem:
    """The problem with both lengths cut by one factor (at least 1) until the reference executor's budget fits."""
    work = problem.batch * problem.heads * problem.q_len * problem.kv_len * problem.head_dim
    if work <= REFERENCE_BUDGET:
        return problem
    factor = (REFERENCE_BUDGET / work) ** 0.5
    return AttentionProblem(problem.batch, problem.heads, max(1, int(problem.q_len * factor)),
                            max(1, int(problem.kv_len * factor)), problem.head_dim, problem.dtype, problem.kv_heads,
                            problem.causal, problem.scale, problem.window)


if __name__ == "__main__":
    sys.exit("run it as `hydroplane attention ...`")
