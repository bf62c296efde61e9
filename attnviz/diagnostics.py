"""How soft or saturated an attention row is, and how much gradient it passes.

All functions take ``weights`` of shape ``(..., n_k)``, usually ``(..., n_q, n_k)`` (each row a
softmax output) and return one number per row, shape ``(...)``.
A row of all zeros (every key masked) gives 0 for each. ``weights`` must be a real
floating-point tensor; its values are taken as they are (negative or infinite entries give
meaningless numbers, not an error).
"""

from __future__ import annotations

import torch

from ._validate import require_float_tensor

__all__ = [
    "attention_entropy",
    "row_max_weight",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "softmax_max_gradient",
]


def attention_entropy(weights) -> torch.Tensor:
    """Entropy of each query row in nats: 0 for one-hot, ``log(n_k)`` for uniform."""
    require_float_tensor(weights, "weights")
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def row_max_weight(weights) -> torch.Tensor:
    """Each row's largest weight: near 1 means the softmax has become a hard pick."""
    require_float_tensor(weights, "weights")
    return weights.amax(dim=-1)


def softmax_jacobian(weights) -> torch.Tensor:
    """Jacobian of the softmax at each row, ``diag(p) - p pᵀ``: shape ``(..., n_q, n_k, n_k)``."""
    require_float_tensor(weights, "weights")
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


def softmax_jacobian_norm(weights) -> torch.Tensor:
    """Frobenius norm of each row's softmax Jacobian: the gradient signal a row passes back.

    Computed in closed form, ``‖diag(p) - ppᵀ‖² = Σp² - 2Σp³ + (Σp²)²``, so it
    costs O(n_k) per row. It is 0 for a one-hot row (a saturated softmax
    passes no gradient to its scores), less for an even spread than for a row a little sharper, and
    largest in between.
    """
    require_float_tensor(weights, "weights")
    p = weights.double()  # the three sums nearly cancel for saturated rows
    p2 = (p**2).sum(dim=-1)
    p3 = (p**3).sum(dim=-1)
    return (p2 - 2 * p3 + p2**2).clamp_min(0).sqrt().to(weights.dtype)


def softmax_max_gradient(weights) -> torch.Tensor:
    """Largest entry of each row's softmax Jacobian, ``max_j p_j (1 - p_j)``: at most 1/4."""
    require_float_tensor(weights, "weights")
    return (weights * (1 - weights)).amax(dim=-1)
