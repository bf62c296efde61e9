"""The saturation diagnostics say what their docstrings say."""

import math

import torch

import attnviz


def test_entropy_extremes():
    one_hot = torch.tensor([[0.0, 1.0, 0.0, 0.0]])
    uniform = torch.full((1, 4), 0.25)
    assert attnviz.attention_entropy(one_hot).item() == 0.0
    assert math.isclose(attnviz.attention_entropy(uniform).item(), math.log(4), rel_tol=1e-6)


def test_entropy_of_masked_row_is_zero():
    assert attnviz.attention_entropy(torch.zeros(2, 3)).tolist() == [0.0, 0.0]


def test_jacobian_matches_autograd():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(6, generator=gen)
    auto = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    weights = torch.softmax(scores, -1)
    torch.testing.assert_close(attnviz.softmax_jacobian(weights), auto)


def test_closed_form_norm_matches_full_jacobian():
    gen = torch.Generator().manual_seed(1)
    weights = torch.softmax(torch.randn(3, 5, 9, generator=gen) * 3, -1)
    full = torch.linalg.matrix_norm(attnviz.softmax_jacobian(weights))
    torch.testing.assert_close(attnviz.softmax_jacobian_norm(weights), full, atol=1e-6, rtol=1e-4)


def test_saturated_row_passes_no_gradient():
    one_hot = torch.tensor([[0.0, 0.0, 1.0]])
    assert attnviz.softmax_jacobian_norm(one_hot).item() == 0.0
    assert attnviz.softmax_max_gradient(one_hot).item() == 0.0
    soft = torch.full((1, 2), 0.5)
    assert attnviz.softmax_max_gradient(soft).item() == 0.25


def test_unscaled_scores_saturate_with_d_k():
    gen = torch.Generator().manual_seed(0)
    grad = {}
    for d_k in (4, 1024):
        q = torch.randn(64, d_k, generator=gen)
        k = torch.randn(16, d_k, generator=gen)
        weights = torch.softmax(q @ k.T, -1)  # unscaled
        grad[d_k] = attnviz.softmax_jacobian_norm(weights).mean().item()
        assert attnviz.row_max_weight(weights).shape == (64,)
    assert grad[1024] < grad[4] / 5
