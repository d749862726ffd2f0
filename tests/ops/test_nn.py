"""hydroplane.nn: every op against NumPy float64 on the reference executor and lavapipe (device 0), with random inputs
holding negatives, zeros and large values at odd sizes (not multiples of the subgroup) and at sizes that take the
16-byte path; f32, f16 and bf16; NumPy and DeviceArray inputs (results stay on the device, out= poisoned first);
and every refusal by name (NNError, a HydroplaneError)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hydroplane
from hydroplane.errors import HydroplaneError
from hydroplane.kernels.nn import sampling
from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import DeviceArray
from hydroplane.launch.runtime import capture
from hydroplane.ops import nn
from hydroplane.ops.nn import NNError
from hydroplane.quant import quantize

DEVICES = ["ref", 0]  # 0: lavapipe in the test userland
BF16 = ml_dtypes.bfloat16
# |got - want| <= RTOL * |want| + ATOL * scale: one rounding into the storage plus the f32 work before it
RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1.2e-3, np.dtype(BF16): 8e-3}
ATOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float16): 1e-3, np.dtype(BF16): 8e-3}
POISON = np.nan


def awkward(rng, shape, dtype, scale=1.0, large=None):
    """Normal values with zeros, signed zeros and large values mixed in."""
    x = rng.standard_normal(shape) * scale
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
    specials = np.array([0.0, -0.0, large or 8.0 * scale, -(large or 8.0 * scale), 1e-3, -1e-3])
    flat[picks] = specials[np.arange(picks.size) % specials.size]
    return x.astype(dtype)


def assert_close(got, want, rtol_scale=1.0, *, what=""):
    got = got.numpy() if isinstance(got, DeviceArray) else np.asarray(got)
    dtype = got.dtype
    g = got.astype(np.float64)
    scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
    bound = RTOL[dtype] * rtol_scale * np.abs(want) + ATOL[dtype] * rtol_scale * 1e-3 * scale
    bad = ~(np.abs(g - want) <= bound)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} elements off; first at "
                           f"{np.argwhere(bad)[0]}: got {g[bad][0]!r}, want {want[bad][0]!r}")


def to_device(a, device):
    """A DeviceArray of `device` holding a (bf16 through its bits: device_array takes no bfloat16 today)."""
    if a.dtype == BF16:
        return device_array(a.view(np.uint16), device).view(BF16)
    return device_array(a, device)


def on(device, *arrays):
    """The arrays as DeviceArrays of `device`."""
    return [to_device(a, device) for a in arrays]


def poisoned(shape, dtype, device):
    return to_device(np.full(shape, POISON, dtype), device)


def test_the_package_exports_nn():
    assert hydroplane.nn is nn
    assert set(nn.OPS) >= {"rms_norm", "rotary_embedding", "gelu", "silu", "gated", "add", "embedding", "sample"}


# rms_norm ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, norm, dtype, weighted", [
    ((3, 37), 37, np.float32, True),            # odd width: the scalar path
    ((2, 3, 40), (40,), np.float16, True),      # a multiple of 8: 16-byte chunks
    ((5, 33), 33, BF16, False),
    ((2, 4, 6), (4, 6), np.float32, False),     # two normalized dimensions, 24 = 6 chunks
    ((2, 1000), 1000, np.float32, True),        # several subgroups meet in shared memory
    ((3, 1001), 1001, np.float16, True),
])
def test_rms_norm(device, shape, norm, dtype, weighted):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    x = awkward(rng, shape, dtype, 2.0, large=300.0)
    x.reshape(-1, x.shape[-1])[0] = 0  # a row of zeros: 0 * rsqrt(eps)
    dims = (norm,) if isinstance(norm, int) else norm
    w = awkward(rng, dims, dtype) if weighted else None
    got = nn.rms_norm(x, norm, w, eps=1e-6, device=device)
    assert isinstance(got, np.ndarray) and got.dtype == x.dtype and got.shape == x.shape
    assert_close(got, nn.reference_rms_norm(x, len(dims), w, 1e-6), what="rms_norm")


@pytest.mark.parametrize("device", DEVICES)
def test_rms_norm_on_device_arrays_with_out_and_default_eps(device):
    rng = np.random.default_rng(1)
    x, w = awkward(rng, (4, 24), np.float16, 3.0), awkward(rng, (24,), np.float16)
    dx, dw = on(device, x, w)
    out = poisoned(x.shape, np.float16, device)
    assert nn.rms_norm(dx, 24, dw, out=out) is out
    assert_close(out, nn.reference_rms_norm(x, 1, w, float(np.finfo(np.float32).eps)), what="rms_norm out")
    made = nn.rms_norm(dx, [24])
    assert isinstance(made, DeviceArray) and made.device == device
    assert_close(made, nn.reference_rms_norm(x), what="rms_norm no weight")


@pytest.mark.parametrize("device", DEVICES)
def test_views_of_device_arrays_in_and_out(device):
    rng = np.random.default_rng(12)
    x = awkward(rng, (4, 24), np.float32)
    d = device_array(x, device)
    assert_close(nn.rms_norm(d[1:3], 24), nn.reference_rms_norm(x[1:3]), what="rms_norm of a slice")
    out = poisoned((4, 24), np.float32, device)
    nn.silu(d[1:3], out=out[2:4])  # into a slice: the rows around it untouched
    got = out.numpy()
    assert_close(got[2:], nn.reference_activation(x[1:3], "silu"), 10.0, what="silu into a slice")
    assert np.isnan(got[:2]).all()
    with pytest.raises(NNError, match="silu: x is a strided DeviceArray view"):
        nn.silu(d.T)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, n", [(np.float32, 37), (np.float16, 40), (BF16, 24)])
def test_rms_norm_with_its_residual_add_fused(device, dtype, n):
    rng = np.random.default_rng(n)
    x, w, res = awkward(rng, (3, n), dtype, 2.0), awkward(rng, (n,), dtype), awkward(rng, (3, n), dtype, 4.0)
    want = nn.reference_rms_norm(x, 1, w, 1e-6) + res.astype(np.float64)
    assert_close(nn.rms_norm(x, n, w, 1e-6, residual=res, device=device), want, what="rms_norm + residual")
    dx, dw, dres = on(device, x, w, res)
    assert nn.rms_norm(dx, n, dw, 1e-6, residual=dres, out=dres) is dres  # the residual stream updated in place
    assert_close(dres, want, what="rms_norm + residual in place")
    with pytest.raises(NNError, match="residual has shape"):
        nn.rms_norm(x, n, w, residual=res[:2], device=device)


# rotary_embedding -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("style", ["neox", "interleaved"])
@pytest.mark.parametrize("dtype, d, rotary_dim, theta, freq_scale", [
    (np.float32, 10, None, 10000.0, 1.0),    # 5 pairs: not a power of two
    (np.float32, 12, 6, 1e6, 0.25),          # a partial rotation, the rest copied
    (np.float16, 8, None, 10000.0, 1.0),
    (BF16, 6, 4, 500.0, 2.0),
])
def test_rotary_embedding(device, style, dtype, d, rotary_dim, theta, freq_scale):
    rng = np.random.default_rng(d + (rotary_dim or 0))
    x = awkward(rng, (5, 3, d), dtype, 1.0, large=100.0)
    positions = np.array([0, 1, 7, 300, 2047], np.int64)
    got = nn.rotary_embedding(x, positions, theta=theta, style=style, rotary_dim=rotary_dim, freq_scale=freq_scale,
                              device=device)
    want = nn.reference_rotary(x, positions, theta=theta, style=style, rotary_dim=rotary_dim, freq_scale=freq_scale)
    assert got.shape == x.shape and got.dtype == x.dtype
    assert_close(got, want, 4.0, what=f"rotary {style}")  # sin and cos of angles up to 2047 rad
    r = rotary_dim or d
    assert np.array_equal(got[..., r:], x[..., r:])  # copied bit for bit


def test_rotary_styles_pair_as_llama_cpp_does():
    x = np.zeros((1, 1, 4), np.float32)
    x[0, 0] = [1.0, 2.0, 3.0, 4.0]
    turn = np.array([1], np.int32)  # angle 1 rad for pair 0 (freq 1), 1/100 for pair 1 with theta 10^4
    neox = nn.rotary_embedding(x, turn, style="neox", device="ref")[0, 0]
    c, s = np.cos(1.0), np.sin(1.0)
    assert np.allclose([neox[0], neox[2]], [1 * c - 3 * s, 1 * s + 3 * c], rtol=1e-6)  # pair (0, 2)
    inter = nn.rotary_embedding(x, turn, style="interleaved", device="ref")[0, 0]
    assert np.allclose([inter[0], inter[1]], [1 * c - 2 * s, 1 * s + 2 * c], rtol=1e-6)  # pair (0, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_rotary_positions_from_a_device_buffer_in_place(device):
    rng = np.random.default_rng(3)
    x = awkward(rng, (3, 2, 16), np.float16)
    positions = np.array([5, 0, 9], np.int32)
    dx, dpos = on(device, x, positions)
    assert nn.rotary_embedding(dx, dpos, out=dx) is dx
    assert_close(dx, nn.reference_rotary(x, positions), 2.0, what="rotary in place")
    dpos.write(np.array([6, 1, 10], np.int32))  # the next decode step: the same call reads the new positions
    again = nn.rotary_embedding(device_array(x, device), dpos)
    assert_close(again, nn.reference_rotary(x, np.array([6, 1, 10])), 2.0, what="rotary rewritten positions")


# activations ------------------------------------------------------------------------------------------------
ACTS = [("gelu", lambda x, **k: nn.gelu(x, **k)), ("gelu_tanh", lambda x, **k: nn.gelu(x, "tanh", **k)),
        ("silu", lambda x, **k: nn.silu(x, **k))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, fn", ACTS, ids=[a[0] for a in ACTS])
@pytest.mark.parametrize("dtype, n", [(np.float32, 301), (np.float32, 256), (np.float16, 203), (np.float16, 64),
                                      (BF16, 77)])
def test_activations(device, name, fn, dtype, n):
    rng = np.random.default_rng(n)
    x = awkward(rng, (n,), dtype, 3.0, large=30000.0 if dtype != np.float32 else 1e30)
    x[:6] = np.array([-100.0, -20.0, -5.0, 20.0, 100.0, 0.0]).astype(dtype)
    got = fn(x, device=device)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert_close(got, nn.reference_activation(x, name), 10.0 if dtype == np.float32 else 1.0, what=name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu", "silu"])
@pytest.mark.parametrize("dtype, shape", [(np.float32, (3, 45)), (np.float16, (2, 32)), (BF16, (5, 9))])
def test_gated(device, activation, dtype, shape):
    rng = np.random.default_rng(shape[1])
    gate, up = awkward(rng, shape, dtype, 2.0, large=40.0), awkward(rng, shape, dtype, 2.0)
    want = nn.reference_activation(gate, activation) * up.astype(np.float64)
    assert_close(nn.gated(gate, up, activation, device=device), want, 10.0 if dtype == np.float32 else 1.0,
                 what=f"gated {activation}")
    dg, du = on(device, gate, up)
    out = poisoned(shape, dtype, device)
    assert nn.gated(dg, du, activation, out=out) is out
    assert_close(out, want, 10.0 if dtype == np.float32 else 1.0, what="gated on device")


def test_a_grid_stride_loop_past_the_largest_grid_on_lavapipe():
    rng = np.random.default_rng(14)
    n = 77 * 6810  # more than common.MAX_GROUPS (4096) workgroups of 128: each invocation loops again
    assert n > 4096 * 128
    x = rng.standard_normal(n).astype(np.float32) * 4
    assert_close(nn.silu(x, device=0), nn.reference_activation(x, "silu"), 10.0, what="silu, long")
    a, b = x.reshape(-1, 77), rng.standard_normal(77).astype(np.float32)
    assert_close(nn.add(a, b, device=0), a.astype(np.float64) + b, what="add, long")


# add --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("a_shape, b_shape, dtype", [
    ((3, 5, 7), (5, 7), np.float32), ((3, 5, 7), (7,), np.float16), ((4, 16), (4, 16), np.float16),
    ((2, 24), (24,), BF16), ((6, 8), (8,), np.float32),
])
def test_add(device, a_shape, b_shape, dtype):
    rng = np.random.default_rng(sum(a_shape))
    a, b = awkward(rng, a_shape, dtype, 4.0, large=1000.0), awkward(rng, b_shape, dtype, 4.0)
    want = a.astype(np.float64) + b.astype(np.float64)
    got = nn.add(a, b, device=device)
    assert got.shape == a_shape and got.dtype == a.dtype
    assert_close(got, want, what="add")
    if want.dtype != np.float32:  # the sum of two 16-bit floats, rounded once: NumPy's own (correctly rounded)
        assert np.array_equal(got.astype(np.float64), (a + b).astype(np.float64))


@pytest.mark.parametrize("device", DEVICES)
def test_add_in_place_on_the_device(device):
    rng = np.random.default_rng(5)
    a, b = awkward(rng, (3, 11), np.float32), awkward(rng, (11,), np.float32)
    da, db = on(device, a, b)
    assert nn.add(da, db, out=da) is da
    assert_close(da, a.astype(np.float64) + b, what="add in place")


# embedding --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype, vocab, d", [(np.float32, 11, 7), (np.float16, 9, 16), (BF16, 13, 5),
                                             (np.float32, 6, 8)])
def test_embedding(device, dtype, vocab, d):
    rng = np.random.default_rng(vocab * d)
    table = awkward(rng, (vocab, d), dtype, 1.0, large=1e4)
    ids = np.array([[0, vocab - 1, 3], [3, 1, 0]], np.int64)
    got = nn.embedding(ids, table, device=device)
    assert got.shape == (2, 3, d) and got.dtype == table.dtype
    assert np.array_equal(got.view(np.uint8), table[ids].view(np.uint8))  # the rows' bits, copied


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_of_device_ids_outside_the_table_gives_zero_rows(device):
    table = np.arange(40, dtype=np.float32).reshape(5, 8) - 20
    ids = np.array([4, -1, 0, 5], np.int32)
    got = nn.embedding(device_array(ids, device), device_array(table, device))
    assert isinstance(got, DeviceArray)
    want = np.zeros((4, 8), np.float32)
    want[0], want[2] = table[4], table[0]
    assert np.array_equal(got.numpy(), want)


# sample -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_greedy_ties_nan_and_infinities(device, dtype):
    rng = np.random.default_rng(7)
    logits = awkward(rng, (7, 45), dtype, 3.0)
    logits[0, [5, 30]] = 1000.0  # a tie (above every other value): the lower index
    logits[1, [2, 40]] = np.nan  # NaN ranks below every number
    logits[2] = np.nan  # all NaN: index 0
    logits[3] = -np.inf
    logits[3, 44] = np.nan  # -inf ranks above NaN: the first -inf
    logits[4, 17] = np.inf
    logits[5, [3, 9]] = [-0.0, 0.0]
    logits[5] = np.where(logits[5] > 0, -1.0, logits[5]).astype(dtype)  # zeros the largest: -0 and +0 tie
    got = nn.sample(logits, device=device)
    assert got.dtype == np.int32 and got.shape == (7,)
    assert got[0] == 5 and got[2] == 0 and got[3] == 0 and got[4] == 17
    assert got[1] == np.argmax(np.where(np.isnan(logits[1].astype(np.float32)), -np.inf, logits[1]))
    assert got[5] == int(np.flatnonzero(logits[5].astype(np.float32) == 0)[0])
    assert np.array_equal(got, nn.reference_sample(logits))
    # a draw answers a row with nothing to draw greedily too (an all-NaN row gave 0x7FFFFFFF, 2026-12-06)
    for options in (dict(temperature=1.0), dict(temperature=0.7, top_k=5, top_p=0.9)):
        drawn = nn.sample(logits[2:5], seed=3, device=device, **options)
        assert np.array_equal(drawn, got[2:5]), options


@pytest.mark.parametrize("device", DEVICES)
def test_greedy_in_two_passes(device):
    rng = np.random.default_rng(8)
    v = 2 * nn.ARGMAX_CHUNK + 37  # three chunks per row
    logits = rng.standard_normal((2, v)).astype(np.float32)
    logits[0, [nn.ARGMAX_CHUNK + 1, 2 * nn.ARGMAX_CHUNK + 5]] = 50.0  # a tie across chunks
    logits[1, v - 1] = 50.0
    got = nn.sample(device_array(logits, device))
    assert isinstance(got, DeviceArray) and got.shape == (2,)
    assert got.numpy().tolist() == [nn.ARGMAX_CHUNK + 1, v - 1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("options", [dict(temperature=1.0), dict(temperature=0.7, top_k=5),
                                     dict(temperature=1.3, top_p=0.5), dict(temperature=1.0, top_k=12, top_p=0.8),
                                     dict(temperature=2.0, top_k=1000)])
def test_sampling_against_the_reference(device, dtype, options):
    rng = np.random.default_rng(9)
    logits = (rng.standard_normal((6, 67)) * 2).astype(dtype)
    logits[1, :10] = -np.inf
    logits[2, 3] = np.nan  # never drawn
    logits[3, :] = logits[3, 0]  # all equal: every token kept by top-k's ties
    logits[4, [20, 50]] = np.inf  # +inf outweighs everything: the first one
    logits[5, :] = -np.inf  # nothing to draw: greedy's answer
    for seed in (1, 12345):
        got = nn.sample(logits, seed=seed, device=device, **options)
        assert np.array_equal(got, nn.reference_sample(logits, seed=seed, **options)), (seed, got)
        assert got[2] != 3 and got[4] == 20 and got[5] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_top_k_ties_past_the_shared_memory_compaction(device):
    rng = np.random.default_rng(15)
    logits = np.zeros((2, 600), np.float32)  # row 0: 600 ties with the 3rd largest, more than kernels' CAP (512)
    logits[1] = rng.standard_normal(600)  # row 1: 3 survivors, compacted
    got = nn.sample(logits, temperature=1.0, top_k=3, top_p=0.7, seed=2, device=device)
    assert np.array_equal(got, nn.reference_sample(logits, temperature=1.0, top_k=3, top_p=0.7, seed=2))
    assert sampling.CAP < 600


@pytest.mark.parametrize("device", DEVICES)
def test_sampling_limits_agree_with_greedy(device):
    rng = np.random.default_rng(10)
    logits = rng.standard_normal((4, 50)).astype(np.float32) * 3
    greedy = nn.sample(logits, device=device)
    assert np.array_equal(nn.sample(logits, temperature=1.0, top_k=1, seed=4, device=device), greedy)
    assert np.array_equal(nn.sample(logits, temperature=1.0, top_p=1e-6, seed=4, device=device), greedy)
    row = np.full(30, -np.inf, np.float32)
    row[[4, 20]] = [1.0, 1.0 + np.log(3.0)]  # two tokens: probabilities 1/4 and 3/4
    draws = [nn.sample(row, temperature=1.0, seed=s, device=device) for s in range(24)]
    assert set(draws) == {4, 20}
    assert draws == [int(nn.reference_sample(row[None], temperature=1.0, seed=s)[0]) for s in range(24)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_sampling_a_device_row(device, dtype):
    logits = np.linspace(-3, 3, 101).astype(dtype)
    got = nn.sample(to_device(logits, device), temperature=0.9, top_k=20, top_p=0.9, seed=99)
    assert isinstance(got, DeviceArray) and got.shape == () and got.dtype == np.int32
    assert int(got.numpy()) == int(nn.reference_sample(logits[None], temperature=0.9, top_k=20, top_p=0.9,
                                                       seed=99)[0])
    assert isinstance(nn.sample(logits, device=device), int)


@pytest.mark.parametrize("device", DEVICES)
def test_the_seed_read_from_a_device_buffer(device):
    logits = device_array(np.linspace(-2, 2, 64).astype(np.float32)[None].repeat(3, 0), device)
    seeds = device_array(np.array([7], np.uint32), device)
    first = nn.sample(logits, temperature=1.0, top_p=0.9, seed=seeds)
    seeds.write(np.array([8], np.uint32))  # the next step's seed, written where the call reads it
    second = nn.sample(logits, temperature=1.0, top_p=0.9, seed=seeds)
    host = logits.numpy()
    for got, seed in ((first, 7), (second, 8)):
        assert np.array_equal(got.numpy(), nn.reference_sample(host, temperature=1.0, top_p=0.9, seed=seed))


def test_seed_none_draws_a_fresh_seed_and_a_seed_repeats():
    logits = np.zeros(200, np.float32)
    fixed = {nn.sample(logits, temperature=1.0, seed=5, device="ref") for _ in range(3)}
    assert len(fixed) == 1
    fresh = {nn.sample(logits, temperature=1.0, device="ref") for _ in range(4)}
    assert len(fresh) > 1


# a captured decode step -------------------------------------------------------------------------------------
def decode_step(dx, dw, dl, pos, seeds):
    h = nn.rms_norm(dx, 16, dw)
    r = nn.rotary_embedding(h, pos, theta=5000.0)
    s = nn.add(nn.gated(r, h, "gelu_tanh"), dx)
    return s, nn.sample(dl, temperature=1.0, top_k=10, seed=seeds), nn.sample(dl)


@pytest.mark.parametrize("device", DEVICES)
def test_a_captured_step_replays_with_positions_and_seeds_from_the_device(device):
    rng = np.random.default_rng(13)
    x, w = awkward(rng, (1, 4, 16), np.float16), awkward(rng, (16,), np.float16)
    logits = rng.standard_normal((2, 64)).astype(np.float32)
    dx, dw, dl = on(device, x, w, logits)
    pos, seeds = device_array(np.array([3], np.int32), device), device_array(np.array([5], np.uint32), device)
    with pytest.raises(NNError, match="before capturing"):
        with capture(device):
            nn.rotary_embedding(dx, pos, theta=5000.0)
    nn.rotary_embedding(dx, pos, theta=5000.0)  # its table made
    with capture(device) as graph:
        captured = decode_step(dx, dw, dl, pos, seeds)
    for p, seed in ((7, 1), (100, 2)):
        pos.write(np.array([p], np.int32))
        seeds.write(np.array([seed], np.uint32))
        graph.replay()
        eager = decode_step(dx, dw, dl, pos, seeds)
        for got, want in zip(captured, eager):
            assert np.array_equal(got.numpy(), want.numpy())
        assert np.array_equal(eager[1].numpy(), nn.reference_sample(logits, temperature=1.0, top_k=10, seed=seed))
    graph.close()


def test_empty_arrays_and_a_scalar_addend():
    z = np.zeros((0, 8), np.float32)
    assert nn.rms_norm(z, 8).shape == nn.silu(z).shape == nn.gated(z, z).shape == (0, 8)
    assert nn.add(z, np.ones(8, np.float32)).shape == (0, 8)
    assert nn.rotary_embedding(np.zeros((0, 2, 8), np.float16), np.zeros(0, np.int32)).shape == (0, 2, 8)
    assert nn.embedding(np.zeros(0, np.int64), np.ones((4, 8), np.float32)).shape == (0, 8)
    assert nn.sample(np.zeros((0, 5), np.float32)).shape == (0,)
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    assert np.array_equal(nn.add(a, np.float32(2.5)), a + np.float32(2.5))


# refusals ---------------------------------------------------------------------------------------------------
X = np.ones((2, 8), np.float32)
X3 = np.ones((3, 2, 8), np.float32)
POS = np.arange(3, dtype=np.int32)


@pytest.mark.parametrize("call, message", [
    (lambda: nn.rms_norm(X.astype(np.float64), 8), "rms_norm: x is float64; it takes f32, f16, bf16"),
    (lambda: nn.rms_norm(X, 7), "not the trailing dimensions"),
    (lambda: nn.rms_norm(X, (2, 2, 8)), "not the trailing dimensions"),
    (lambda: nn.rms_norm(X, 8, np.ones(8, np.float16)), "weight is float16 and x f32"),
    (lambda: nn.rms_norm(X, 8, np.ones(7, np.float32)), "weight has shape"),
    (lambda: nn.rms_norm(X, 8, eps=-1.0), "eps must be finite and at least 0"),
    (lambda: nn.rms_norm(X, 8, eps=float("nan")), "eps must be"),
    (lambda: nn.rms_norm(X, 8, out=np.ones((2, 8), np.float16)), "out is"),
    (lambda: nn.rms_norm(X, "8"), "normalized_shape"),
    (lambda: nn.rms_norm("text", 8), "not an array of numbers"),
    (lambda: nn.rotary_embedding(X, POS), "must be \\(tokens, heads, head_dim\\)"),
    (lambda: nn.rotary_embedding(X3, POS, style="gptj"), "style is 'neox' or 'interleaved'"),
    (lambda: nn.rotary_embedding(X3, POS, rotary_dim=5), "rotary_dim 5 must be even"),
    (lambda: nn.rotary_embedding(X3, POS, rotary_dim=10), "at most head_dim 8"),
    (lambda: nn.rotary_embedding(X3, POS, theta=0.0), "theta must be finite and positive"),
    (lambda: nn.rotary_embedding(X3, POS, freq_scale=float("inf")), "freq_scale must be"),
    (lambda: nn.rotary_embedding(X3, POS[:2]), "positions has shape \\(2,\\)"),
    (lambda: nn.rotary_embedding(X3, np.array([0, -1, 2])), "positions range over -1 .. 2"),
    (lambda: nn.rotary_embedding(X3, np.array([0, 1 << 24, 2])), "0 .. 16777215"),
    (lambda: nn.rotary_embedding(X3, POS.astype(np.float32)), "positions is float32"),
    (lambda: nn.gelu(X, approximate="fast"), "approximate is 'none' or 'tanh'"),
    (lambda: nn.silu(X.astype(np.int32)), "silu: x is int32"),
    (lambda: nn.gated(X, np.ones((2, 7), np.float32)), "must have one shape"),
    (lambda: nn.gated(X, X, "relu"), "activation is one of"),
    (lambda: nn.add(X, np.ones(7, np.float32)), "neither a's"),
    (lambda: nn.add(X, np.ones((3, 2, 8), np.float32)), "neither a's"),
    (lambda: nn.add(X, X.astype(np.float16)), "b is float16 and a f32"),
    (lambda: nn.embedding(np.array([0, 4]), np.ones((4, 3), np.float32)), "ids range over 0 .. 4"),
    (lambda: nn.embedding(np.array([0.0]), np.ones((4, 3), np.float32)), "ids is float64"),
    (lambda: nn.embedding(np.array([0]), np.ones(4, np.float32)), "weight has shape \\(4,\\)"),
    (lambda: nn.embedding(np.array([0]), np.ones((4, 3), np.float64)), "weight is float64"),
    (lambda: nn.sample(np.ones((2, 2, 3), np.float32)), "logits has shape"),
    (lambda: nn.sample(np.ones((2, 0), np.float32)), "vocab at least 1"),
    (lambda: nn.sample(X, temperature=-1.0), "temperature must be finite and at least 0"),
    (lambda: nn.sample(X, top_k=-2), "top_k is an integer of at least 0"),
    (lambda: nn.sample(X, top_p=0.0), "top_p must lie in \\(0, 1\\]"),
    (lambda: nn.sample(X, top_p=1.5), "top_p must lie in"),
    (lambda: nn.sample(X, seed=-3), "seed is an integer of at least 0"),
    (lambda: nn.sample(X, seed=1.5), "seed is an integer"),
    (lambda: nn.silu(X, device="cuda"), "device is 'ref', a Vulkan device number or None"),
    (lambda: nn.silu(X, device=True), "device is 'ref'"),
])
def test_refusals_name_what_is_wrong(call, message):
    with pytest.raises(NNError, match=message) as info:
        call()
    assert isinstance(info.value, HydroplaneError)


def test_device_argument_refusals():
    dx = device_array(X, "ref")
    with pytest.raises(NNError, match="with device=0"):
        nn.silu(dx, device=0)
    with pytest.raises(NNError, match="must be int32"):
        nn.rotary_embedding(device_array(X3, "ref"), device_array(POS.astype(np.int64), "ref"))
    with pytest.raises(NNError, match="must be int32"):
        nn.embedding(device_array(POS.astype(np.uint32), "ref"), device_array(X, "ref"))
    with pytest.raises(NNError, match="holds one uint32"):
        nn.sample(X, temperature=1.0, seed=device_array(np.array([1, 2], np.uint32), "ref"))
    released = device_array(X, "ref")
    released.release()
    with pytest.raises(NNError, match="released"):
        nn.silu(released)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", ["q8_0", "q4_k"])
def test_embedding_of_a_quantized_table(device, fmt):
    rng = np.random.default_rng(11)
    qw = quantize(rng.standard_normal((6, 256)).astype(np.float32), fmt)
    ids = np.array([[5, 0], [2, 2]])
    want = qw.dequantize()[ids].astype(np.float64)
    got = nn.embedding(ids, qw, device=device)
    assert isinstance(got, np.ndarray) and got.shape == (2, 2, 256) and got.dtype == np.float32
    assert_close(got, want, what=f"{fmt} rows")
    out = np.full((2, 2, 256), np.nan, np.float16)
    assert nn.embedding(ids, qw, out=out, device=device) is out
    assert_close(out, want, what=f"{fmt} rows f16")
    on_device = nn.embedding(device_array(ids.astype(np.int32), device), qw)
    assert isinstance(on_device, DeviceArray)
    assert_close(on_device, want, what=f"{fmt} rows on the device")


def test_quantized_embedding_refusals():
    qw = quantize(np.ones((4, 32), np.float32), "q8_0")
    with pytest.raises(NNError, match="dtype is float32, float16 or bfloat16"):
        nn.embedding(np.array([0]), qw, dtype=np.int8)
    with pytest.raises(NNError, match="dtype= is for quantized tables"):
        nn.embedding(np.array([0]), np.ones((4, 3), np.float32), dtype=np.float16)
    with pytest.raises(HydroplaneError, match="ids range over"):
        nn.embedding(np.array([4]), qw, device="ref")
