"""Attention's arithmetic against its definition, the float64 softmax of the f32 scores (kernels.attention.reference),
on the reference executor and lavapipe: NaN and infinities in Q and K, scales up to float32's largest (scores that
overflow to ±inf), rows whose scores are all equal at any size (the mean of V), rows of only -inf scores (NaN, as
0 / 0 in the softmax), each through the one-pass kernel and the decode path's combining pass, with causal masking and
a sliding window, outputs poisoned first. NaNs must appear exactly where the reference has them, and the finite
elements agree within the usual bound."""

from __future__ import annotations

import numpy as np
import pytest

from hydroplane.kernels.attention import AttentionConfig, AttentionProblem, reference, relative_error, tolerance
from hydroplane.kernels.attention.plan import scores32
from hydroplane.ops.attention import AttentionRunner


@pytest.fixture(scope="module")
def ref():
    with AttentionRunner.open("ref") as runner:
        yield runner


@pytest.fixture(scope="module")
def lavapipe():
    with AttentionRunner.open(0) as runner:
        assert runner.target.subgroup_size == 8
        yield runner


def agrees(out: np.ndarray, exact: np.ndarray, problem: AttentionProblem) -> None:
    """NaN exactly where the reference has NaN, ±inf where it has them, the rest within the bound."""
    got = out.astype(np.float64)
    assert (np.isnan(got) == np.isnan(exact)).all(), (np.argwhere(np.isnan(got) != np.isnan(exact))[:5])
    assert (np.isposinf(got) == np.isposinf(exact)).all() and (np.isneginf(got) == np.isneginf(exact)).all()
    finite = np.isfinite(exact)
    assert relative_error(got[finite], exact[finite]) <= tolerance(problem)


def run(runner, problem, config, data):
    result = runner.run(problem, config, inputs=data, check=False)
    exact = reference(problem, data["q"], data["k"], data["v"])
    agrees(result.output, exact, problem)
    return result.output, exact


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def data_of(problem, seed):
    rng = np.random.default_rng(seed)
    q_shape, kv_shape = problem.shapes()
    return {"q": normal(rng, q_shape), "k": normal(rng, kv_shape), "v": normal(rng, kv_shape)}


C = AttentionConfig
ONE_PASS, SPLIT = C((16, 16, 16), 2, 1, 2), C((16, 16, 16), 1, 1, 2, splits=3)


@pytest.mark.parametrize("config", [ONE_PASS, SPLIT], ids=["one pass", "decode splits"])
@pytest.mark.parametrize("causal", [False, True])
def test_nan_and_inf_in_queries_and_keys(ref, config, causal):
    """A NaN or inf in a query row: that row (where it sees keys) is NaN; a NaN key: NaN in the rows that see it
    (causal: the later ones only), the others exact."""
    problem = AttentionProblem(1, 2, 20 if config is ONE_PASS else 3, 70, 64, causal=causal)
    data = data_of(problem, 1)
    data["q"][0, 0, 1, 5] = np.nan
    data["q"][0, 1, 2, 7] = np.inf
    data["k"][0, 1, 69, 3] = np.nan  # the last key: seen by the last causal row only
    out, exact = run(ref, problem, config, data)
    assert np.isnan(exact[0, 0, 1]).all() and np.isnan(exact[0, 1, 2]).all()
    assert np.isfinite(exact[0, 0, 0]).all() and np.isfinite(out[0, 0, 0]).all()
    if causal:
        assert np.isfinite(exact[0, 1, 0]).all() and np.isnan(exact[0, 1, -1]).all()
    else:
        assert np.isnan(exact[0, 1]).all()


@pytest.mark.parametrize("config", [ONE_PASS, SPLIT], ids=["one pass", "decode splits"])
@pytest.mark.parametrize("scale", [1e30, 1e38, -3.4028234e38, 3.4028234e38, 1e-40])
def test_scales_up_to_float32s_largest(ref, config, scale):
    """Scores of about ±1e31 (a one-hot softmax), scores that overflow to ±inf (a +inf gives its row NaN, a row of
    only -inf NaN, a row with a finite maximum ignores its -inf keys), and a subnormal scale (about the mean). The
    first half of the rows have small positive queries and key 0 points against them: finite scores but one."""
    problem = AttentionProblem(1, 2, 20 if config is ONE_PASS else 2, 70, 64, scale=scale)
    data = data_of(problem, 2)
    small = problem.q_len // 2
    data["q"][:, :, :small] = np.abs(data["q"][:, :, :small]) / 64
    data["k"][:, :, 0] = -30 * np.sign(scale)
    out, exact = run(ref, problem, config, data)
    if abs(scale) >= 1e38:  # every kind of row occurs: NaN rows, finite rows with a -inf key
        scores = scores32(problem, data["q"], data["k"])
        assert np.isnan(exact[:, :, small:]).any() and np.isfinite(exact[:, :, :small]).all()
        assert np.isneginf(scores[:, :, :small, 0]).all() and np.isfinite(scores[:, :, :small, 1:]).all()


@pytest.mark.parametrize("config", [ONE_PASS, SPLIT], ids=["one pass", "decode splits"])
@pytest.mark.parametrize("scale", [1.0, 1e36, -1e36, 3.4e38])
def test_rows_of_equal_scores_give_the_mean_of_v(ref, config, scale):
    """Every key the same: each row's scores are equal (as large as the scale makes them: -1e36 lies below the
    -1e30 the running maximum once started at) and the output is the mean of V; at 3.4e38 the scores are ±inf:
    rows of +inf and rows of -inf both NaN (inf - inf, -inf - -inf), as in the softmax."""
    problem = AttentionProblem(1, 2, 17 if config is ONE_PASS else 3, 47, 64, scale=scale)
    data = data_of(problem, 3)
    data["k"][:] = data["k"][:, :, :1]
    data["q"][:, :, 0] /= 256  # a row of small (but, at 3.4e38, still huge) scores
    out, exact = run(ref, problem, config, data)
    mean = np.broadcast_to(data["v"].astype(np.float64).mean(axis=2, keepdims=True), exact.shape)
    finite = np.isfinite(scores32(problem, data["q"], data["k"])[..., :1])  # (rows of) equal finite scores
    assert finite.any() and (scale < 1e38 or not finite.all())
    np.testing.assert_allclose(exact[finite[..., 0]], mean[finite[..., 0]], rtol=1e-9, atol=1e-12)
    assert relative_error(out[finite[..., 0]], mean[finite[..., 0]]) <= tolerance(problem)
    assert np.isnan(exact[~finite[..., 0]]).all() and np.isnan(out[~finite[..., 0]].astype(np.float32)).all()


@pytest.mark.parametrize("scale", [None, 1e36, 3.4e38])
def test_grouped_decode_path(ref, scale):
    """The grouped decode path (a KV head's query heads in one workgroup, splits combined in one pass): a NaN query
    row, a NaN key seen by the last query only, a head of equal scores, at ordinary and huge scales."""
    problem = AttentionProblem(1, 8, 3, 90, 64, kv_heads=2, causal=True, scale=scale)
    data = data_of(problem, 7)
    data["q"][0, 1, 0, 2] = np.nan
    data["k"][0, 0, 89, 4] = np.nan
    data["k"][0, 1] = data["k"][0, 1, :1]
    data["q"][0, 4:, :] /= 256
    out, exact = run(ref, problem, C((16, 16, 16), 1, 1, 2, splits=3, grouped=True), data)
    assert np.isnan(exact[0, 1, 0]).all() and np.isnan(exact[0, 0, 2]).all()
    assert not np.isnan(exact[0, 0, 1]).any() or scale == 3.4e38  # (there: ±inf scores, NaN rows)


def test_masked_rows_are_zeros_and_unmasked_inf_rows_nan(ref):
    """With causal masking and S_q > S_kv the first rows see no key: zeros; a row that sees keys whose scores are all
    -inf: NaN (the window keeps at least the query's own position)."""
    problem = AttentionProblem(1, 1, 40, 33, 64, causal=True, window=5, scale=3.4e38)
    data = data_of(problem, 4)
    data["k"][:] = np.abs(data["k"][:, :, :1]) + 0.5
    data["q"][0, 0, 7:] = -np.abs(data["q"][0, 0, 7:]) - 0.5  # every dot negative: -inf scores
    out, exact = run(ref, problem, ONE_PASS, data)
    assert (out[0, 0, :7] == 0).all() and np.isnan(exact[0, 0, 7:]).all()


@pytest.mark.vulkan
def test_special_values_on_lavapipe(lavapipe):
    """One problem carrying every case (a NaN query row, an inf query row, a NaN key, rows of equal scores at a
    scale of 1e36) through lavapipe's one-pass and decode-path kernels, then scores of ±inf (head dim 16: lavapipe
    compiles each specialization for seconds)."""
    for config, q_len in ((C((8, 8, 8), 2, 1, 2), 17), (C((8, 8, 8), 1, 1, 2, splits=3), 3)):
        problem = AttentionProblem(1, 3, q_len, 47, 16, causal=True, scale=1e36)
        data = data_of(problem, 5)
        data["k"][0, 2] = data["k"][0, 2, :1]  # head 2: every key the same (equal scores, about -1e36 or +1e36)
        data["q"][0, 0, 1, 3] = np.nan
        data["q"][0, 1, 0, 3] = -np.inf
        data["k"][0, 0, 46, 0] = np.nan  # seen by the last row only
        out, exact = run(lavapipe, problem, config, data)
        assert np.isnan(exact[0, 0, 1]).all() and np.isnan(exact[0, 0, -1]).all()
        mean = data["v"][0, 2].astype(np.float64).mean(axis=0)
        assert relative_error(out[0, 2, -1], mean) <= tolerance(problem)
    huge = AttentionProblem(1, 1, 9, 20, 16, causal=True, scale=3.4e38)  # ±inf scores (the one-pass kernel above)
    run(lavapipe, huge, C((8, 8, 8), 2, 1, 2), data_of(huge, 6))
