"""Properties that hold for any input (hypothesis)."""

import os

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnviz

sizes = st.integers(min_value=1, max_value=7)


def test_tests_run_with_the_course_settings():
    """tests/conftest.py sets these in every process that runs tests (each xdist worker, or pytest
    alone): the course's hypothesis profile (the same examples every run, unless HYPOTHESIS_PROFILE
    names another), and one torch thread per test process."""
    assert settings.default == settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))
    assert settings.get_profile("course").derandomize
    assert torch.get_num_threads() == 1


@st.composite
def attention_inputs(draw, with_mask=True):
    batch, n_q, n_k = draw(st.integers(1, 3)), draw(sizes), draw(sizes)
    d_k, d_v = draw(st.integers(1, 9)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    spread = draw(st.sampled_from([0.1, 1.0, 5.0]))
    q = torch.randn(batch, n_q, d_k, generator=gen) * spread
    k = torch.randn(batch, n_k, d_k, generator=gen) * spread
    v = torch.randn(batch, n_k, d_v, generator=gen)
    mask = None
    if with_mask and draw(st.booleans()):
        mask = torch.rand(batch, n_q, n_k, generator=gen) > draw(st.sampled_from([0.0, 0.3, 0.7]))
        mask[..., 0] |= draw(st.booleans())  # sometimes guarantee a key, sometimes not
    return q, k, v, mask


@given(attention_inputs())
def test_weight_rows_sum_to_one_or_are_all_zero(inputs):
    q, k, v, mask = inputs
    _, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
    sums = weights.sum(-1)
    if mask is None:
        torch.testing.assert_close(sums, torch.ones_like(sums))
    else:
        has_key = mask.any(-1)
        torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]))
        assert torch.all(sums[~has_key] == 0)
    assert torch.all(weights >= 0)


@given(attention_inputs())
def test_masked_weights_are_exactly_zero(inputs):
    q, k, v, mask = inputs
    out, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
    if mask is not None:
        assert torch.all(weights[~mask] == 0)
    assert torch.isfinite(out).all()


@given(attention_inputs(with_mask=False), st.randoms(use_true_random=False))
def test_permuting_positions_permutes_outputs(inputs, rng):
    q, k, v, _ = inputs
    # self-attention: one sequence supplies all three roles
    x = torch.cat([q, k], dim=-2)[..., : q.shape[-2], :]
    n = x.shape[-2]
    order = list(range(n))
    rng.shuffle(order)
    perm = torch.tensor(order)
    values = torch.randn(x.shape[:-1] + (3,), generator=torch.Generator().manual_seed(n))
    out, _ = attnviz.scaled_dot_product_attention(x, x, values)
    out_perm, _ = attnviz.scaled_dot_product_attention(x[..., perm, :], x[..., perm, :], values[..., perm, :])
    torch.testing.assert_close(out_perm, out[..., perm, :], atol=1e-5, rtol=1e-5)


@given(attention_inputs(with_mask=False))
def test_permuting_keys_and_values_together_changes_nothing(inputs):
    q, k, v, _ = inputs
    perm = torch.arange(k.shape[-2]).flip(0)
    out, _ = attnviz.scaled_dot_product_attention(q, k, v)
    out_perm, _ = attnviz.scaled_dot_product_attention(q, k[..., perm, :], v[..., perm, :])
    torch.testing.assert_close(out_perm, out, atol=1e-5, rtol=1e-5)


@st.composite
def large_inputs(draw):
    """Scores far beyond exp's range (exp overflows above 88 in float32, 11 in float16)."""
    q, k, v, mask = draw(attention_inputs())
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64]))
    spread = draw(st.sampled_from([30.0, 200.0]))   # float16 products reach 200² · d_k > 65504
    return (q * spread).to(dtype), (k * spread).to(dtype), v.to(dtype), mask


@given(large_inputs())
def test_large_scores_still_give_rows_that_sum_to_one(inputs):
    q, k, v, mask = inputs
    out, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == weights.dtype == q.dtype
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    sums = weights.double().sum(-1)
    has_key = torch.ones_like(sums, dtype=torch.bool) if mask is None else mask.any(-1)
    tol = 1e-2 if q.dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert ((sums[has_key] - 1).abs() < tol).all() and (sums[~has_key] == 0).all()
