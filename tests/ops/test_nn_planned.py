"""A user's loop of hydroplane.nn calls on DeviceArrays: the later calls of a key (the op, the arrays' signatures,
out's, the other arguments and their types) skip the checks and queue the first call's planned launches
(ops.nn's _Plan, served by `planned_call`). Each result is compared bit for bit with the checked path's (the same op
on NumPy copies of the inputs), through fresh contents with negatives and extremes written between queued calls,
ping-pong and in-place outputs (poisoned before each call), new results, new places; every call that differs in
something checked misses the plan (and a bad one is refused as before); released arguments are refused."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hydroplane.launch.jit import device_array
from hydroplane.launch.prepared import DeviceArray
from hydroplane.ops import nn
from hydroplane.ops.nn import NNError

DEVICES = ["ref", 0]  # 0: lavapipe in the test userland
BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng()


def awkward(shape, dtype):
    """Normal values of mixed scales with zeros, signed zeros and values near the dtype's largest."""
    big = {np.dtype(np.float16): 3e4, np.dtype(BF16): 3e37, np.dtype(np.float32): 3e37}[np.dtype(dtype)]
    x = rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 30.0], shape)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)
    flat[picks] = np.array([0.0, -0.0, big, -big, 1e-3, -1e-3])[np.arange(picks.size) % 6]
    return x.astype(dtype)


def ints(high):
    return lambda shape, dtype: rng.integers(0, high, shape).astype(dtype)


def small(shape, dtype):  # rms_norm's inputs: values whose squares' sum stays finite in f32
    return (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 30.0], shape)).astype(dtype)


# name: (the op of (arrays..., out), the inputs as (shape, dtype, contents), the result's shape and dtype)
CASES = {
    "rms_norm": (lambda x, w, r, out=None, device=None: nn.rms_norm(x, 40, w, eps=1e-5, residual=r, out=out,
                                                                     device=device),
                 [((4, 40), np.float32, small), ((40,), np.float32, small), ((4, 40), np.float32, small)],
                 ((4, 40), np.float32)),
    "rms_norm_f16": (lambda x, w, out=None, device=None: nn.rms_norm(x, (37,), w, out=out, device=device),
                     [((3, 37), np.float16, small), ((37,), np.float16, small)], ((3, 37), np.float16)),
    "rotary": (lambda x, p, out=None, device=None: nn.rotary_embedding(
        x, p, theta=1e4, style="interleaved", rotary_dim=8, out=out, device=device),
        [((5, 3, 16), np.float16, awkward), ((5,), np.int32, ints(5000))], ((5, 3, 16), np.float16)),
    "gelu": (lambda x, out=None, device=None: nn.gelu(x, "tanh", out=out, device=device),
             [((7, 33), BF16, awkward)], ((7, 33), BF16)),
    "silu": (lambda x, out=None, device=None: nn.silu(x, out=out, device=device),
             [((64,), np.float32, awkward)], ((64,), np.float32)),
    "gated": (lambda g, u, out=None, device=None: nn.gated(g, u, "silu", out=out, device=device),
              [((3, 48), np.float16, awkward), ((3, 48), np.float16, awkward)], ((3, 48), np.float16)),
    "gated_halves": (lambda g, out=None, device=None: nn.gated(g, None, "gelu", out=out, device=device),
                     [((3, 64), np.float32, awkward)], ((3, 32), np.float32)),
    "add": (lambda a, b, out=None, device=None: nn.add(a, b, out=out, device=device),
            [((4, 24), np.float32, awkward), ((24,), np.float32, awkward)], ((4, 24), np.float32)),
    "softcap": (lambda x, out=None, device=None: nn.softcap(x, 30.0, out=out, device=device),
                [((5, 30), np.float32, awkward)], ((5, 30), np.float32)),
    "embedding": (lambda i, w, out=None, device=None: nn.embedding(i, w, out=out, device=device),
                  [((6,), np.int32, ints(11)), ((11, 16), np.float16, awkward)], ((6, 16), np.float16)),
}


def to_device(a, device):
    """A DeviceArray of `device` holding a (bf16 through its bits)."""
    if a.dtype == BF16:
        return device_array(a.view(np.uint16), device).view(BF16)
    return device_array(a, device)


def write(arr: DeviceArray, a: np.ndarray) -> None:
    """a written into arr (bf16 through its bits)."""
    if a.dtype == BF16:
        arr.view(np.uint16).write(a.view(np.uint16))
    else:
        arr.write(a)


def bits(a) -> np.ndarray:
    """The result's bytes (NaN-proof equality)."""
    a = a.numpy() if isinstance(a, DeviceArray) else np.asarray(a)
    return np.ascontiguousarray(a).view(np.uint8)


def fresh(case: str) -> list[np.ndarray]:
    return [make(shape, dtype) for shape, dtype, make in CASES[case][1]]


def checked(case: str, inputs: list[np.ndarray], device) -> np.ndarray:
    """The checked path's result: the op on NumPy copies (never planned)."""
    return np.asarray(CASES[case][0](*inputs, device=device))


@pytest.fixture(autouse=True)
def no_plans_of_earlier_tests():
    """Each test starts with no plans: in a full suite the earlier tests' plans fill nn.PLANNED_CALLS, and each new
    plan then evicts the oldest, taking its `served` count out of `served()`'s sum."""
    nn._plans.clear()


def served() -> int:
    return sum(plan.served for plan in nn._plans.values())


def poison(out: DeviceArray) -> None:
    shape, dtype = out.shape, out.dtype
    write(out, np.full(shape, np.nan, dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_a_loop_of_calls_is_planned_and_bit_identical(device, case, monkeypatch):
    op, specs, (shape, dtype) = CASES[case]
    inputs = fresh(case)
    arrays = [to_device(a, device) for a in inputs]
    outs = [to_device(np.full(shape, np.nan, dtype), device) for _ in range(2)]
    start = served()
    reads, wants = [], []
    for step in range(8):  # queued one after another: contents written between them, results read at the end
        o = outs[step % 2]
        poison(o)  # queued behind the last call that wrote it and the read of it
        inputs = fresh(case)
        for arr, a in zip(arrays, inputs):
            write(arr, a)
        assert op(*arrays, out=o) is o
        reads.append(o.numpy_later())
        wants.append(checked(case, inputs, device))
    for step, (read, want) in enumerate(zip(reads, wants)):
        assert np.array_equal(bits(read()), bits(want)), f"step {step}"
    assert served() - start >= 7, "the loop's calls were not planned"
    # served without a check: the planned call reads no argument's type, dtype or shape again
    monkeypatch.setattr(nn, "as_array", lambda *a: pytest.fail("a planned call ran the checks"))
    got = op(*arrays, out=outs[0])
    monkeypatch.undo()
    assert np.array_equal(bits(got), bits(checked(case, inputs, device)))
    # new results: a new array each call, the kept ones untouched by the later calls
    kept = []
    for step in range(4):
        inputs = fresh(case)
        for arr, a in zip(arrays, inputs):
            write(arr, a)
        y = op(*arrays)
        assert isinstance(y, DeviceArray) and y.shape == shape and y.dtype == dtype
        assert all(y is not k and y.storage is not k.storage for k, _ in kept)
        if step % 2:
            kept.append((y, checked(case, inputs, device)))
        else:
            assert np.array_equal(bits(y), bits(checked(case, inputs, device)))
            y.release()
    for y, want in kept:
        assert np.array_equal(bits(y), bits(want))
    # new places: arrays made anew (the recorded launches bound to them)
    before = served()
    for _ in range(3):
        inputs = fresh(case)
        again = [to_device(a, device) for a in inputs]
        o = to_device(np.full(shape, np.nan, dtype), device)
        op(*again, out=o)
        assert np.array_equal(bits(o), bits(checked(case, inputs, device)))
    assert served() - before == 3


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_calls_ping_pong(device):
    """The residual stream's calls: add(h, r, out=r) and rms_norm(residual=r, out=r) over two streams."""
    x, h = awkward((4, 24), np.float32), awkward((4, 24), np.float32)
    streams = [awkward((4, 24), np.float32) for _ in range(2)]
    dx, dh = to_device(x, device), to_device(h, device)
    dstreams = [to_device(s, device) for s in streams]
    w = small((24,), np.float32)
    dw = to_device(w, device)
    start = served()
    for step in range(6):
        i = step % 2
        if step == 3:  # a host write between queued calls
            h = awkward((4, 24), np.float32)
            dh.write(h)
        assert nn.add(dh, dstreams[i], out=dstreams[i]) is dstreams[i]
        streams[i] = np.asarray(nn.add(h, streams[i], device=device))
        got = nn.rms_norm(dx, 24, dw, residual=dstreams[i], out=dstreams[i])
        assert got is dstreams[i]
        streams[i] = np.asarray(nn.rms_norm(x, 24, w, residual=streams[i], device=device))
        x = small((4, 24), np.float32)
        dx.write(x)
    for got, want in zip(dstreams, streams):
        assert np.array_equal(bits(got), bits(want))
    assert served() - start >= 8


@pytest.mark.parametrize("device", DEVICES)
def test_views_of_one_buffer(device):
    """x and out slices of one array's rows, at offsets the device binds and at some it does not (staged through
    copies): each key's later calls served, every result the checked path's."""
    w = small((37,), np.float16)
    dw = to_device(w, device)
    big = to_device(np.zeros((13, 37), np.float16), device)  # rows of 74 bytes: row 8 at 592, a multiple of 16
    start = served()
    for a, b in [(0, 8), (8, 0), (1, 5), (5, 1)] * 2:
        rows = small((13, 37), np.float16)
        big.write(rows)
        got = nn.rms_norm(big[a:a + 4], 37, dw, out=big[b:b + 4])
        assert np.array_equal(bits(got), bits(nn.rms_norm(rows[a:a + 4], 37, w, device=device)))
        assert np.array_equal(bits(big[a:a + 4]), bits(rows[a:a + 4]))  # x as written
    assert served() - start >= 4


def variants(device):
    """(name, a call that differs from the base call in one thing checked, whether it is refused)"""
    x, w, r = small((4, 40), np.float32), small((40,), np.float32), small((4, 40), np.float32)
    dx, dw, dr = (to_device(a, device) for a in (x, w, r))
    x16 = to_device(x.astype(np.float16), device)
    rows = to_device(small((2, 40), np.float32), device)
    out = to_device(np.zeros((4, 40), np.float32), device)
    out16 = to_device(np.zeros((4, 40), np.float16), device)
    one = to_device(small((4, 1), np.float32), device)
    w16 = to_device(w.astype(np.float16), device)
    base = dict(eps=1e-5)
    return (lambda **kw: nn.rms_norm(dx, 40, dw, **{**base, **kw})), [
        ("other rows", lambda: nn.rms_norm(rows, 40, dw, eps=1e-5), False),
        ("f16 x", lambda: nn.rms_norm(x16, 40, dw, eps=1e-5), True),  # weight f32, x f16
        ("no weight", lambda: nn.rms_norm(dx, 40, None, eps=1e-5), False),
        ("a residual", lambda: nn.rms_norm(dx, 40, dw, eps=1e-5, residual=dr), False),
        ("another eps", lambda: nn.rms_norm(dx, 40, dw, eps=1e-3), False),
        ("eps None", lambda: nn.rms_norm(dx, 40, dw), False),
        ("eps a NumPy float32", lambda: nn.rms_norm(dx, 40, dw, eps=np.float32(1e-5)), False),
        ("normalized_shape a list", lambda: nn.rms_norm(dx, [40], dw, eps=1e-5), False),
        ("normalized_shape of a NumPy int", lambda: nn.rms_norm(dx, (np.int64(40),), dw, eps=1e-5), False),
        ("eps negative", lambda: nn.rms_norm(dx, 40, dw, eps=-1e-5), True),
        ("eps True", lambda: nn.rms_norm(dx, 40, dw, eps=True), True),
        ("normalized_shape a tuple", lambda: nn.rms_norm(dx, (40,), dw, eps=1e-5), False),
        ("normalized_shape wrong", lambda: nn.rms_norm(dx, 20, dw, eps=1e-5), True),
        ("normalized_shape (1,)", lambda: nn.rms_norm(one, (1,), eps=1e-5), False),
        ("normalized_shape (True,)", lambda: nn.rms_norm(one, (True,), eps=1e-5), True),
        ("out given", lambda: nn.rms_norm(dx, 40, dw, eps=1e-5, out=out), False),
        ("out f16", lambda: nn.rms_norm(dx, 40, dw, eps=1e-5, out=out16), True),
        ("weight f16", lambda: nn.rms_norm(dx, 40, w16, eps=1e-5), True),
        ("a transposed x", lambda: nn.rms_norm(to_device(small((40, 40), np.float32), device).T, 40, dw, eps=1e-5),
         True),
        ("device named", lambda: nn.rms_norm(dx, 40, dw, eps=1e-5, device=device), False),
        ("another device", lambda: nn.rms_norm(dx, 40, dw, eps=1e-5, device=1 if device == "ref" else "ref"), True),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_every_checked_difference_misses_the_plan(device):
    base, cases = variants(device)
    nn._plans.clear()
    base()
    (plan,) = nn._plans.values()
    base()
    count = plan.served
    base()
    assert plan.served == count + 1
    for name, call, refused in cases:
        if refused:
            with pytest.raises(NNError):
                call()
        else:
            call()
        assert plan.served == count + 1, f"{name}: served by the base call's plan"


@pytest.mark.parametrize("device", DEVICES)
def test_refusals_of_the_other_ops_after_their_plans(device):
    """A planned key of each op, then a call of a value its checks refuse (some equal to the planned one as ==
    compares them: True is 1)."""
    x = to_device(awkward((5, 30), np.float32), device)
    nn.softcap(x, 1)
    nn.softcap(x, 1)
    with pytest.raises(NNError, match="cap"):
        nn.softcap(x, True)
    with pytest.raises(NNError, match="cap"):
        nn.softcap(x, -1.0)
    xr, pos = to_device(awkward((5, 3, 16), np.float16), device), to_device(np.arange(5, dtype=np.int32), device)
    for _ in range(2):
        nn.rotary_embedding(xr, pos, rotary_dim=8)
    with pytest.raises(NNError, match="rotary_dim"):
        nn.rotary_embedding(xr, pos, rotary_dim=7)
    with pytest.raises(NNError, match="style"):
        nn.rotary_embedding(xr, pos, rotary_dim=8, style="gptj")
    with pytest.raises(NNError, match="int32"):
        nn.rotary_embedding(xr, to_device(np.arange(5, dtype=np.int64), device), rotary_dim=8)
    for _ in range(2):
        nn.gelu(x)
    with pytest.raises(NNError, match="approximate"):
        nn.gelu(x, "sigmoid")
    ids, table = to_device(np.arange(4, dtype=np.int32), device), to_device(awkward((6, 8), np.float32), device)
    for _ in range(2):
        nn.embedding(ids, table)
    with pytest.raises(NNError, match="dtype"):
        nn.embedding(ids, table, dtype=np.float32)
    with pytest.raises(NNError, match="int32"):
        nn.embedding(to_device(np.arange(4, dtype=np.uint32), device), table)
    a, b = to_device(awkward((4, 24), np.float32), device), to_device(awkward((24,), np.float32), device)
    for _ in range(2):
        nn.add(a, b)
    with pytest.raises(NNError, match="trailing"):
        nn.add(a, to_device(awkward((12,), np.float32), device))
    with pytest.raises(NNError, match="dtype"):
        nn.add(a, to_device(awkward((24,), np.float16), device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["rms_norm", "rotary", "add", "embedding"])
def test_released_arguments_are_refused(device, case):
    op, _, (shape, dtype) = CASES[case]
    inputs = fresh(case)
    arrays = [to_device(a, device) for a in inputs]
    out = to_device(np.zeros(shape, dtype), device)
    for _ in range(2):
        op(*arrays, out=out)
        op(*arrays)
    start = served()
    out.release()
    with pytest.raises(NNError, match="released"):
        op(*arrays, out=out)
    for i in range(len(arrays)):
        kept = arrays[i]
        arrays[i] = to_device(inputs[i], device)
        kept.release()
        with pytest.raises(NNError, match="released"):
            op(*(kept if j == i else a for j, a in enumerate(arrays)))
    assert served() == start
    got = op(*arrays)
    assert np.array_equal(bits(got), bits(checked(case, inputs, device)))


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_inputs_stay_on_the_checked_path(device):
    x, w = small((4, 40), np.float32), small((40,), np.float32)
    start = served()
    for _ in range(3):
        y = nn.rms_norm(x, 40, w, device=device)
        assert type(y) is np.ndarray
    dx = to_device(x, device)
    positions = np.arange(5, dtype=np.int32)  # a NumPy argument beside a DeviceArray: checked (its values are)
    xr = to_device(awkward((5, 3, 16), np.float16), device)
    for _ in range(3):
        nn.rotary_embedding(xr, positions)
    with pytest.raises(NNError, match="positions"):
        nn.rotary_embedding(xr, positions + (1 << 24))
    assert served() == start
    assert np.array_equal(bits(nn.rms_norm(dx, 40, w)), bits(nn.rms_norm(x, 40, w, device=device)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("options", [dict(), dict(temperature=0.8, top_k=40, top_p=0.9), dict(temperature=1.5)])
@pytest.mark.parametrize("vocab", [700, nn.ARGMAX_CHUNK * 2 + 3])  # greedy in one pass, and in chunks
def test_a_loop_of_samples_is_planned_and_draws_what_the_checked_path_draws(device, options, vocab, monkeypatch):
    """nn.sample's later calls of a key are planned: greedy's partial results and a draw's seed live in buffers
    its plan holds, the seed (a new int each call, or None: a fresh one) written into it per call, queued."""
    shape = (3, vocab)
    logits = to_device(np.zeros(shape, np.float16), device)
    start = served()
    reads, wants = [], []
    for step in range(8):  # queued: logits rewritten between calls, the ids read at the end
        values = awkward(shape, np.float16)
        logits.write(values)
        reads.append(nn.sample(logits, seed=step, **options).numpy_later())
        wants.append(nn.sample(values, seed=step, device=device, **options))
    for step, (read, want) in enumerate(zip(reads, wants)):
        assert np.array_equal(read(), want), f"step {step}"
    assert served() - start >= 7, "the loop's calls were not planned"
    monkeypatch.setattr(nn, "as_array", lambda *a: pytest.fail("a planned call ran the checks"))
    draws = [nn.sample(logits, seed=seed, **options) for seed in (11, 12, None, None)]
    monkeypatch.undo()
    values = logits.numpy()
    for seed, got in zip((11, 12), draws):
        assert np.array_equal(got.numpy(), nn.sample(values, seed=seed, device=device, **options))
    for got in draws[2:]:  # a fresh seed: some token of each row
        assert got.shape == (3,) and np.all((0 <= got.numpy()) & (got.numpy() < vocab))
    with pytest.raises(NNError, match="seed is an integer of at least 0"):
        nn.sample(logits, seed=-1, **options)  # refused with a plan there too
    with pytest.raises(NNError, match="seed is an integer"):
        nn.sample(logits, seed=True, **options)


@pytest.mark.parametrize("device", DEVICES)
def test_planned_draws_with_fresh_seeds_differ_and_a_device_seed_is_read_on_the_device(device):
    vocab = 64
    logits = to_device(np.zeros((1, vocab), np.float32), device)  # every token equally likely
    fresh_draws = {int(nn.sample(logits, temperature=1.0).numpy()[0]) for _ in range(12)}
    assert len(fresh_draws) > 3  # 12 draws of 64 equal tokens: a fixed seed would give one
    seed = to_device(np.array([7], np.uint32), device)
    first = nn.sample(logits, temperature=1.0, seed=seed)
    seed.write(np.array([8], np.uint32))
    second = nn.sample(logits, temperature=1.0, seed=seed)
    seed.write(np.array([7], np.uint32))
    third = nn.sample(logits, temperature=1.0, seed=seed)
    assert np.array_equal(first.numpy(), third.numpy())
    assert np.array_equal(first.numpy(), nn.sample(logits.numpy(), temperature=1.0, seed=7, device=device))
    assert np.array_equal(second.numpy(), nn.sample(logits.numpy(), temperature=1.0, seed=8, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_samples_of_one_key_from_several_threads(device):
    """The calls of a key share its held buffers (greedy's partial results, a draw's seed): each call writes and
    queues them under the runtime's lock, so threads drawing at once each get the draw of their own seed."""
    import threading

    vocab = nn.ARGMAX_CHUNK + 5  # greedy in two passes: partial results between two launches
    values = awkward((2, vocab), np.float32)
    logits = to_device(values, device)
    nn.sample(logits, temperature=1.0, seed=0)
    nn.sample(logits)  # the keys planned
    got: dict = {}

    def draws(first: int) -> None:
        for seed in range(first, first + 6):
            got[seed] = (nn.sample(logits, temperature=1.0, seed=seed).numpy_later(), nn.sample(logits))

    threads = [threading.Thread(target=draws, args=(6 * i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    greedy = nn.sample(values, device=device)
    for seed, (drawn, best) in sorted(got.items()):
        assert np.array_equal(drawn(), nn.sample(values, temperature=1.0, seed=seed, device=device)), seed
        assert np.array_equal(best.numpy(), greedy)
