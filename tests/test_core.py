"""attnviz.scaled_dot_product_attention agrees with PyTorch's fused function."""

import math

import pytest
import torch
import torch.nn.functional as F
from _fresh import modules_after

import attnviz

ATOL = 1e-6


def _qkv(*batch, n_q=5, n_k=7, d_k=8, d_v=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, n_q, d_k, generator=gen)
    k = torch.randn(*batch, n_k, d_k, generator=gen)
    v = torch.randn(*batch, n_k, d_v, generator=gen)
    return q, k, v


def _assert_matches_torch(q, k, v, mask=None, **kw):
    ours, weights = attnviz.scaled_dot_product_attention(q, k, v, mask, **kw)
    torch_kw = {}
    scale = kw.get("scale")
    temperature = kw.get("temperature", 1.0)
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    torch_kw["scale"] = scale / temperature
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **torch_kw)
    assert ours.shape == theirs.shape
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)
    assert weights.shape == q.shape[:-1] + (k.shape[-2],)
    return ours, weights


def test_no_mask():
    _assert_matches_torch(*_qkv(2))


def test_two_dimensional_inputs():
    _assert_matches_torch(*_qkv())


def test_bool_mask_true_means_may_attend():
    q, k, v = _qkv(2)
    mask = torch.rand(2, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.4
    mask[..., 0] = True  # keep at least one key per row
    _, weights = _assert_matches_torch(q, k, v, mask)
    assert torch.all(weights[~mask] == 0)


def test_float_mask_is_added_to_scores():
    q, k, v = _qkv(2)
    mask = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(2))
    mask[0, :, 3] = float("-inf")
    _, weights = _assert_matches_torch(q, k, v, mask)
    assert torch.all(weights[0, :, 3] == 0)


def test_causal_matches_is_causal():
    q, k, v = _qkv(3, n_q=6, n_k=6)
    ours, weights = attnviz.scaled_dot_product_attention(q, k, v, attnviz.causal_mask(6))
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)
    upper = ~torch.ones(6, 6, dtype=torch.bool).tril()
    assert torch.all(weights[..., upper] == 0)


def test_causal_rectangular_matches_is_causal():
    q, k, v = _qkv(2, n_q=4, n_k=7)
    ours, _ = attnviz.scaled_dot_product_attention(q, k, v, attnviz.causal_mask(4, 7))
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)


def test_cross_attention_n_q_differs_from_n_k():
    q, k, v = _qkv(2, n_q=3, n_k=11)
    out, weights = _assert_matches_torch(q, k, v)
    assert out.shape == (2, 3, 6) and weights.shape == (2, 3, 11)


def test_batch_and_head_dimensions():
    q, k, v = _qkv(2, 4)
    mask = attnviz.padding_mask([7, 3], 7)[:, None]  # (batch, 1, 1, n_k)
    _assert_matches_torch(q, k, v, mask)


def test_broadcast_leading_dimensions():
    q, _, _ = _qkv(2, 4)
    _, k, v = _qkv(1, 4, seed=3)
    _assert_matches_torch(q, k, v)


@pytest.mark.parametrize("scale", [0.05, 1.0, 3.0])
def test_explicit_scale(scale):
    _assert_matches_torch(*_qkv(2), scale=scale)


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0, 10.0])
def test_temperature_divides_scores(temperature):
    _assert_matches_torch(*_qkv(2), temperature=temperature)


def test_scale_and_temperature_together():
    _assert_matches_torch(*_qkv(2), scale=0.3, temperature=2.5)


def test_default_scale_is_one_over_sqrt_d_k():
    q, k, _ = _qkv(d_k=16)
    scores = attnviz.attention_scores(q, k)
    torch.testing.assert_close(scores, q @ k.T / 4.0)


def test_fully_masked_row_gives_zeros_like_torch():
    q, k, v = _qkv(2)
    mask = torch.ones(2, 5, 7, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of sequence 1 may attend to nothing
    out, weights = _assert_matches_torch(q, k, v, mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(theirs[1, 2] == 0), "PyTorch's fused function returns zeros here on this version"
    assert torch.all(out[1, 2] == 0) and torch.all(weights[1, 2] == 0)
    assert torch.isfinite(out).all()


def test_fully_masked_float_row_gives_zeros():
    q, k, v = _qkv(1)
    mask = torch.zeros(1, 5, 7)
    mask[0, 4] = float("-inf")
    out, weights = _assert_matches_torch(q, k, v, mask)
    assert torch.all(out[0, 4] == 0) and torch.all(weights[0, 4] == 0)


def test_fully_masked_row_has_finite_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv(1))
    mask = torch.ones(1, 5, 7, dtype=torch.bool)
    mask[0, 0] = False
    out, _ = attnviz.scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[0, 0] == 0)


def test_float16_bool_mask_no_nan():
    q, k, v = (t.half() for t in _qkv(1))
    mask = attnviz.causal_mask(5, 7)
    out, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == torch.float16 and torch.isfinite(out).all()


def test_causal_mask_values():
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    assert torch.equal(attnviz.causal_mask(3), expected)
    assert attnviz.causal_mask(2, 4).tolist() == [[True, False, False, False], [True, True, False, False]]
    assert attnviz.causal_mask(3).dtype == torch.bool


def test_padding_mask_masks_key_columns():
    mask = attnviz.padding_mask([3, 1, 0], 4)
    assert mask.shape == (3, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [
        [True, True, True, False],
        [True, False, False, False],
        [False, False, False, False],
    ]
    q, k, v = _qkv(3, n_q=4, n_k=4)
    _, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
    # every query row of sequence 0 puts zero weight on key column 3
    assert torch.all(weights[0, :, 3] == 0)
    assert torch.all(weights[0, :, :3].sum(-1) > 0.999)


def test_padding_mask_accepts_tensor_lengths():
    assert torch.equal(attnviz.padding_mask(torch.tensor([2, 3]), 3), attnviz.padding_mask([2, 3], 3))


def test_kv_cache_worked_case():
    per_token = attnviz.kv_cache_bytes(32, 32, 128, 1, bytes_per_element=2)
    assert per_token == 512 * 1024
    assert attnviz.kv_cache_bytes(32, 32, 128, 4096) == 2 * 1024**3
    # grouped-query attention with 8 KV heads keeps a quarter of that
    assert attnviz.kv_cache_bytes(32, 8, 128, 4096) == 2 * 1024**3 // 4
    assert attnviz.kv_cache_bytes(32, 32, 128, 4096, batch=3) == 3 * 2 * 1024**3


def test_attention_matrix_bytes():
    assert attnviz.attention_matrix_bytes(1024) == 4 * 1024 * 1024


def test_import_loads_no_widget_libraries():
    bad = modules_after("import attnviz") & {"ipywidgets", "plotly", "anywidget"}
    assert not bad, bad


def test_float16_large_inputs_match_torch_and_sum_to_one():
    # a float16 score overflows at 65504; q and k of size 300 reach it, so the core computes in
    # float32 as PyTorch's fused function does
    q, k, v = (t.half() for t in _qkv(2))
    q, k = q * 300, k * 300
    assert torch.isinf(q @ k.transpose(-2, -1)).any(), "the float16 product itself overflows"
    out, weights = attnviz.scaled_dot_product_attention(q, k, v)
    assert out.dtype == weights.dtype == torch.float16
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-3, rtol=0)
    torch.testing.assert_close(weights.float().sum(-1), torch.ones(2, 5), atol=1e-2, rtol=0)


def test_large_finite_scores_are_stable():
    # scores in the thousands: exp would overflow, softmax subtracts the row maximum first
    q, k, v = _qkv(2)
    out, weights = _assert_matches_torch(q * 40, k * 40, v)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))


def test_tensor_scale_and_temperature_keep_their_gradient():
    q, k, v = _qkv(2)
    scale = torch.tensor(0.3, requires_grad=True)
    temperature = torch.tensor([2.0], requires_grad=True)
    out, _ = attnviz.scaled_dot_product_attention(q, k, v, scale=scale, temperature=temperature)
    out.square().sum().backward()
    assert scale.grad is not None and scale.grad != 0 and temperature.grad is not None
    # the same numbers as with plain floats
    plain, _ = attnviz.scaled_dot_product_attention(q, k, v, scale=0.3, temperature=2.0)
    torch.testing.assert_close(out, plain)
    # and the gradient is d/dscale of the same function, checked by a finite difference
    step = 1e-3
    up, down = (attnviz.scaled_dot_product_attention(q, k, v, scale=0.3 + s, temperature=2.0)[0]
                .square().sum() for s in (step, -step))
    assert abs((up - down).item() / (2 * step) - scale.grad.item()) < 1e-2 * abs(scale.grad.item()) + 1e-3


def test_attention_scores_in_float16_fits_or_raises():
    q, k, _ = (t.half() for t in _qkv())
    assert attnviz.attention_scores(q * 300, k * 300, scale=0.001).dtype == torch.float16
    with pytest.raises(ValueError, match=r"the scores do not fit in torch.float16"):
        attnviz.attention_scores(q * 300, k * 300, scale=1.0)


def test_empty_query_dimension_gives_empty_results():
    q, k, v = torch.randn(0, 4), torch.randn(5, 4), torch.randn(5, 2)
    out, weights = attnviz.scaled_dot_product_attention(q, k, v)
    assert out.shape == (0, 2) and weights.shape == (0, 5)
