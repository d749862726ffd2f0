"""Write a GGUF with the real Gemma 3 270M file's metadata and tensor layout but generated weights (the H200
benchmark: the real file is over what the device tool carries, and a weight's values do not change the speed).

    python3 tools/make_benchmark_gguf.py --layout-from gemma-3-270m-q4_k_m.gguf  # refresh the layout file
    python3 tools/make_benchmark_gguf.py OUT.gguf [--seed 0]                      # write the generated file

The layout (tools/gemma3_270m_layout.json) keeps every metadata value but the vocabulary's (its size is kept, the
tokens become "<pad>" "<eos>" "<bos>" "<unk>", the 256 byte tokens and "tok{i}") and every tensor's name, ggml type
and shape. The blocks are random bytes with each block's scales set to small f16 values (so no value is NaN or
infinite), the F32 tensors (norms) ones. Needs only NumPy (the GGUF is written here, not by the gguf package).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

LAYOUT = Path(__file__).with_name("gemma3_270m_layout.json")
# ggml type: (name, values per block, bytes per block, byte offsets of the block's f16 scales)
TYPES = {0: ("F32", 1, 4, ()), 1: ("F16", 1, 2, ()), 6: ("Q5_0", 32, 22, (0,)), 8: ("Q8_0", 32, 34, (0,)),
         12: ("Q4_K", 256, 144, (0, 2)), 14: ("Q6_K", 256, 210, (208,)), 2: ("Q4_0", 32, 18, (0,))}
BY_NAME = {v[0]: k for k, v in TYPES.items()}
VALUE_TYPES = {"u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8, "u64": 10, "f64": 12}
SCALAR_FORMATS = {4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 12: "d"}
VOCAB_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")


def layout_from(path: Path) -> dict:
    """The layout of a real file (read with hydroplane's GGUF reader, src/hydroplane/models/gguf_file.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from hydroplane.models.gguf_file import read_gguf  # noqa: PLC0415 - a tool, run from the repository

    file = read_gguf(path)
    metadata = []
    for key, value in file.metadata.items():
        if key in VOCAB_KEYS:
            continue
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int):
            kind = "u32" if 0 <= value < 2 ** 32 else "i32" if -2 ** 31 <= value < 2 ** 31 else "u64"
        elif isinstance(value, float):
            kind = "f32"
        elif isinstance(value, str):
            kind = "str"
        else:
            kind = "str[]" if all(isinstance(v, str) for v in value) else "skip"
        if kind != "skip":
            metadata.append([key, kind, value])
    tensors = [[t.name, t.format, list(t.shape)] for t in file.tensors.values()]
    return {"source": path.name, "n_vocab": len(file.metadata["tokenizer.ggml.tokens"]), "metadata": metadata,
            "tensors": tensors}


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack("<Q", len(data)) + data


def _value(kind: str, value) -> bytes:
    if kind == "str":
        return struct.pack("<I", 8) + _string(value)
    if kind == "str[]":
        return struct.pack("<IIQ", 9, 8, len(value)) + b"".join(_string(v) for v in value)
    if kind.endswith("[]"):
        item = VALUE_TYPES[kind[:-2]]
        return struct.pack("<IIQ", 9, item, len(value)) + np.asarray(value, "<" + SCALAR_FORMATS[item]).tobytes()
    code = VALUE_TYPES[kind]
    return struct.pack("<I", code) + struct.pack("<" + SCALAR_FORMATS[code], value)


def vocabulary(n: int) -> tuple[list[str], list[float], list[int]]:
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [3, 3, 3, 2] + [6] * 256
    tokens += [f"tok{i}" for i in range(len(tokens), n)]
    types += [1] * (n - len(types))
    return tokens, [0.0] * n, types


def generated(fmt: str, shape: list[int], rng: np.random.Generator) -> bytes:
    code = BY_NAME[fmt]
    _, block, block_bytes, scales = TYPES[code]
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    if fmt == "F32":
        return np.ones(rows * cols, "<f4").tobytes()
    if fmt == "F16":
        return (rng.standard_normal(rows * cols) * 0.02).astype("<f2").tobytes()
    blocks = rng.integers(0, 256, (rows * cols // block, block_bytes), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.001).tobytes(), np.uint8)
    for offset in scales:
        blocks[:, offset:offset + 2] = scale
    return blocks.tobytes()


def write(layout: dict, out: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary(layout["n_vocab"])
    kv = [(k, kind, v) for k, kind, v in layout["metadata"]]
    kv += [("tokenizer.ggml.tokens", "str[]", tokens), ("tokenizer.ggml.scores", "f32[]", scores),
           ("tokenizer.ggml.token_type", "i32[]", types)]
    alignment = 32
    infos, offset = [], 0
    for name, fmt, shape in layout["tensors"]:
        code = BY_NAME[fmt]
        _, block, block_bytes, _ = TYPES[code]
        nbytes = int(np.prod(shape)) // block * block_bytes
        infos.append((name, fmt, shape, code, offset, nbytes))
        offset += -(-nbytes // alignment) * alignment
    with out.open("wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kv)))
        for key, kind, value in kv:
            f.write(_string(key) + _value(kind, value))
        for name, _, shape, code, off, _ in infos:
            f.write(_string(name) + struct.pack("<I", len(shape)))
            f.write(b"".join(struct.pack("<Q", d) for d in reversed(shape)) + struct.pack("<IQ", code, off))
        f.write(b"\0" * (-f.tell() % alignment))
        for name, fmt, shape, _, _, nbytes in infos:
            data = generated(fmt, shape, rng)
            assert len(data) == nbytes, name
            f.write(data + b"\0" * (-nbytes % alignment))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(infos)} tensors, generated weights, seed {seed})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, help="the GGUF to write")
    parser.add_argument("--layout-from", type=Path, help="a real GGUF: write its layout to " + LAYOUT.name)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.layout_from:
        LAYOUT.write_text(json.dumps(layout_from(args.layout_from), indent=0) + "\n")
        print(f"wrote {LAYOUT}")
    if args.output:
        write(json.loads(LAYOUT.read_text()), args.output, args.seed)
    if not (args.layout_from or args.output):
        parser.error("give OUTPUT and/or --layout-from")


if __name__ == "__main__":
    main()
