"""`hydroplane generate MODEL "prompt"`: text from a GGUF checkpoint (or a packaged name) on a device, streamed,
then the prefill and decode speed.

    hydroplane generate gemma3-270m "The capital of France is"
    hydroplane generate model.gguf "Once upon a time" --tokens 64 --temperature 0.8 --top-k 40 --seed 1
    hydroplane generate gemma3-270m "2 + 2 =" --device numpy          # the float64 NumPy reference instead

--device: a Vulkan device number, "ref" (the reference executor: only for tiny models, it interprets SPIR-V) or
"numpy" (hydroplane.models.reference, greedy only, no KV cache); default the best device.
Registered from cli.py's COMMAND_MODULES; the work is hydroplane.models.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from hydroplane.models import load, read_gguf, reference, resolve
from hydroplane.models.errors import ModelError
from hydroplane.models.tokenizer import Tokenizer
from hydroplane.ops import nn
from hydroplane.ops.runner import device_option


def register(sub) -> None:
    p = sub.add_parser("generate", help="generate text from a GGUF model (gemma3, llama) on a device",
                       description=__doc__.splitlines()[0])
    p.add_argument("model", help="a .gguf file or a packaged model name (gemma3-270m)")
    p.add_argument("prompt", help="the prompt text (BOS added as the file asks)")
    p.add_argument("--tokens", type=int, default=32, help="new tokens at most (default 32)")
    p.add_argument("--device", default=None, help="a Vulkan device number, 'ref', or 'numpy' (default: the best)")
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (the default)")
    p.add_argument("--top-k", type=int, default=0, help="keep the k largest logits (0: all)")
    p.add_argument("--top-p", type=float, default=1.0, help="keep the nucleus of this probability (1: all)")
    p.add_argument("--seed", type=int, default=None, help="the sampling seed (default: a fresh one)")
    p.add_argument("--context", type=int, default=None, help="KV cache positions (default min(the file's, 2048))")
    p.add_argument("--special", action="store_true", help="parse control tokens (<start_of_turn> ...) in the prompt")
    p.set_defaults(func=generate_command)


def generate_command(args) -> int:
    if args.tokens < 0:
        raise ModelError(f"--tokens must be at least 0, not {args.tokens}")
    # the options every device path takes, checked before any work (the numpy path ignores none of them silently)
    nn.sample_options(args.temperature, args.top_k, args.top_p, "generate")
    if args.context is not None and args.context < 1:
        raise ModelError(f"--context must be at least 1 position, not {args.context}")
    if args.seed is not None and not 0 <= args.seed < 1 << 32:
        raise ModelError(f"--seed is a 32-bit unsigned integer (0 .. {(1 << 32) - 1}), not {args.seed}")
    if args.device == "numpy":
        return _numpy_generate(args)
    try:
        device = device_option(args.device, ModelError)
    except ModelError:
        raise ModelError(f"--device is a Vulkan device number, 'ref' or 'numpy', not {args.device!r}") from None
    model = load(args.model, device=device, context=args.context)
    stats: dict = {}
    pieces = model.tokenizer.incremental()
    tokens = model.generate(args.prompt, args.tokens, temperature=args.temperature, top_k=args.top_k,
                            top_p=args.top_p, seed=args.seed, special=args.special, stats=stats)  # checks first
    out = sys.stdout
    out.write(args.prompt)
    out.flush()
    for token in tokens:
        out.write(pieces.push(token))
        out.flush()
    out.write(pieces.flush() + "\n")
    out.flush()  # the text before the speed line on stderr, also where both go to one file
    _speed(stats)
    return 0


def _speed(stats: dict) -> None:
    if not stats:
        return
    prefill = stats["prefill_tokens"] / max(stats["prefill_s"], 1e-9)
    line = f"prefill: {stats['prefill_tokens']} tokens, {prefill:.1f} tokens/s"
    if stats["decode_tokens"]:
        line += f"; decode: {stats['decode_tokens']} tokens, {stats['decode_tokens'] / stats['decode_s']:.2f} tokens/s"
    print(line, file=sys.stderr)


def _numpy_generate(args) -> int:
    if args.temperature != 0.0:
        raise ModelError("--device numpy runs greedy decoding only (--temperature 0)")
    if args.seed is not None or args.top_k or args.top_p != 1.0 or args.context is not None:
        raise ModelError("--device numpy runs greedy decoding without a KV cache: --seed, --top-k, --top-p and "
                         "--context do not apply")
    ref = reference(args.model)
    tokenizer = Tokenizer.from_metadata(read_gguf(resolve(args.model)).metadata)
    ids = tokenizer.tokenize(args.prompt, special=args.special)
    pieces = tokenizer.incremental()
    sys.stdout.write(args.prompt)
    start = time.perf_counter()
    for _ in range(args.tokens):
        token = int(np.argmax(ref.logits(ids, last_only=True)[-1]))
        if tokenizer.is_eog(token):
            break
        ids.append(token)
        sys.stdout.write(pieces.push(token))
        sys.stdout.flush()
    sys.stdout.write(pieces.flush() + "\n")
    sys.stdout.flush()
    print(f"numpy reference: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0
