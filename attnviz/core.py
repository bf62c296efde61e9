"""Scaled dot-product attention and its masks: the reference math.

Torch only. Shapes follow the course's convention: the last two dimensions of
``q``, ``k`` and ``v`` are (positions, features); anything before them
(batch, heads) broadcasts. Masks are bool with True = *may attend*, the same
sense as :func:`torch.nn.functional.scaled_dot_product_attention`, or float
and added to the scores.
"""

from __future__ import annotations

import math

import torch

from ._validate import (
    broadcast_shape,
    check_mask,
    require_positive_int,
    require_positive_number,
    require_tensor,
    shape_str,
)

__all__ = ["scaled_dot_product_attention", "attention_scores", "causal_mask", "padding_mask"]


def _check_qkv(q, k, v) -> tuple[int, ...]:
    require_tensor(q, "q", 2)
    require_tensor(k, "k", 2)
    require_tensor(v, "v", 2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has shape {shape_str(q.shape)} and k has shape {shape_str(k.shape)}: "
            f"their feature size d_k (last dimension) differs, {q.shape[-1]} against "
            f"{k.shape[-1]}. A query is compared with a key by a dot product, so both "
            f"need the same d_k."
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k has shape {shape_str(k.shape)} and v has shape {shape_str(v.shape)}: "
            f"the number of positions n_k (dimension -2) differs, {k.shape[-2]} keys "
            f"against {v.shape[-2]} values. Every key needs exactly one value."
        )
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if batch is None:
        raise ValueError(
            f"the leading (batch/head) dimensions of q {shape_str(q.shape[:-2])}, "
            f"k {shape_str(k.shape[:-2])} and v {shape_str(v.shape[:-2])} do not "
            f"broadcast together; each must be equal or 1."
        )
    return batch


def attention_scores(q, k, *, scale=None, temperature=1.0) -> torch.Tensor:
    """Raw scores ``q @ kᵀ · scale / temperature``, shape ``(..., n_q, n_k)``.

    ``scale`` defaults to ``1/√d_k`` where ``d_k = q.shape[-1]``.
    """
    require_tensor(q, "q", 2)
    require_tensor(k, "k", 2)
    if q.shape[-1] != k.shape[-1]:
        _check_qkv(q, k, k)
    temperature = require_positive_number(temperature, "temperature")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return (q @ k.transpose(-2, -1)) * (float(scale) / temperature)


def scaled_dot_product_attention(q, k, v, mask=None, *, scale=None, temperature=1.0):
    """Scaled dot-product attention; returns ``(output, weights)``.

    Shapes:
        q: ``(..., n_q, d_k)``, k: ``(..., n_k, d_k)``, v: ``(..., n_k, d_v)``;
        leading dimensions broadcast.
        mask: broadcasts to ``(..., n_q, n_k)``. Bool: True = may attend (the
        sense of ``torch.nn.functional.scaled_dot_product_attention``). Float:
        added to the scores (use ``-inf`` to block).
        output: ``(..., n_q, d_v)``; weights: ``(..., n_q, n_k)``.

    Scores are ``q @ kᵀ · scale / temperature`` with ``scale`` defaulting to
    ``1/√d_k``. Each weight row is the softmax of a score row over the keys,
    so it sums to 1, and blocked keys get exactly 0.

    A row whose keys are *all* blocked gets all-zero weights and a zero
    output, as PyTorch 2.13's fused function returns (a plain softmax over a
    row of ``-inf`` would give NaN). Gradients stay finite for such rows.
    """
    batch = _check_qkv(q, k, v)
    temperature = require_positive_number(temperature, "temperature")
    if scale is not None and not math.isfinite(float(scale)):
        raise ValueError(f"scale must be a finite number, got {scale}.")
    scores = attention_scores(q, k, scale=scale, temperature=temperature)
    scores_shape = batch + (q.shape[-2], k.shape[-2])
    if mask is not None:
        check_mask(mask, scores_shape)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask.to(scores.dtype)
    # A row with every key blocked is all -inf; softmax of it is 0/0 = NaN.
    # Give such rows finite scores, then zero their weights afterwards.
    dead_rows = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(dead_rows, 0.0)
    weights = torch.softmax(scores, dim=-1)
    weights = weights.masked_fill(dead_rows, 0.0)
    return weights @ v, weights


def causal_mask(n_q, n_k=None) -> torch.Tensor:
    """Bool ``(n_q, n_k)`` mask, lower-triangular: query i may attend to keys j <= i.

    ``n_k`` defaults to ``n_q``. For ``n_q != n_k`` the triangle starts at the
    top-left corner, as PyTorch's ``is_causal=True`` does.
    """
    n_q = require_positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else require_positive_int(n_k, "n_k")
    return torch.ones(n_q, n_k, dtype=torch.bool).tril()


def padding_mask(lengths, n) -> torch.Tensor:
    """Bool ``(batch, 1, n)`` mask: True for real tokens, False for padding.

    ``lengths`` holds each sequence's number of real tokens (padding sits at
    the end). The mask acts on *key columns*: broadcast against scores of
    shape ``(batch, n_q, n_k)`` it blocks the padded keys for every query.
    With heads, scores are ``(batch, n_heads, n_q, n_k)``; insert the head
    dimension with ``padding_mask(lengths, n)[:, None]`` (shape
    ``(batch, 1, 1, n)``). :class:`attnviz.MultiHeadAttention` does that for
    you when it is given a 3-dimensional mask.
    """
    n = require_positive_int(n, "n")
    if isinstance(lengths, torch.Tensor):
        if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
            raise TypeError(
                f"lengths must be a 1-D integer tensor or a list of whole numbers, "
                f"got a {lengths.dtype} tensor of shape {shape_str(lengths.shape)}."
            )
        lengths = lengths.tolist()
    try:
        lengths = [require_positive_int(n_real, f"lengths[{i}]", allow_zero=True)
                   for i, n_real in enumerate(lengths)]
    except TypeError as err:
        if "lengths[" in str(err):
            raise
        raise TypeError(f"lengths must be a list of whole numbers, got {lengths!r}.") from None
    if not lengths:
        raise ValueError("lengths is empty: give one length per sequence in the batch.")
    for i, n_real in enumerate(lengths):
        if n_real > n:
            raise ValueError(
                f"lengths[{i}] is {n_real} but sequences are padded to n={n} positions; "
                f"a length cannot exceed n."
            )
    positions = torch.arange(n)
    real = positions[None, :] < torch.tensor(lengths)[:, None]   # (batch, n)
    return real[:, None, :]                                       # (batch, 1, n)
