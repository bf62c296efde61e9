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
    as_number,
    check_mask,
    check_qk,
    check_qkv,
    explain_overflow,
    require_finite_values,
    require_positive_int,
    scalar_argument,
    shape_str,
    short_repr,
)

__all__ = ["scaled_dot_product_attention", "attention_scores", "causal_mask", "padding_mask"]


# float16 and bfloat16 go through float32, as PyTorch's fused kernels accumulate: a float16
# score overflows at 65504, which q and k of size 300 already reach.
_COMPUTE_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32}

# The largest mask causal_mask and padding_mask build: 2**28 bools, 256 MiB.
MAX_MASK_ENTRIES = 2**28


def _score_factor(scale, temperature, d_k: int, dtype: torch.dtype):
    """``scale / temperature``: a float, or a 0-d tensor when either one is a tensor."""
    scale = 1.0 / math.sqrt(d_k) if scale is None else scalar_argument(scale, "scale", positive=False)
    temperature = scalar_argument(temperature, "temperature", positive=True)
    factor = scale / temperature
    size, limit = abs(as_number(factor)), torch.finfo(dtype).max
    if not size <= limit:
        raise ValueError(
            f"scale / temperature = {as_number(scale):.3g} / {as_number(temperature):.3g} = {size:.3g}, "
            f"more than {dtype} can hold ({limit:.3g}): every score would overflow. "
            f"Use a smaller scale or a larger temperature."
        )
    return factor


def _all_finite(tensor: torch.Tensor) -> bool:
    """No NaN or inf in ``tensor``. One sum decides: any NaN or inf makes it NaN or inf
    (a sum that merely overflows is checked again element by element)."""
    return math.isfinite(float(tensor.detach().sum())) or bool(torch.isfinite(tensor).all())


def _to(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return tensor if tensor.dtype == dtype else tensor.to(dtype)


def _scores(q, k, scale, temperature) -> torch.Tensor:
    """Checked scores in the compute dtype (float32 for float16/bfloat16 inputs)."""
    dtype = _COMPUTE_DTYPE.get(q.dtype, q.dtype)
    factor = _score_factor(scale, temperature, q.shape[-1], dtype)
    scores = (_to(q, dtype) @ _to(k, dtype).transpose(-2, -1)) * factor    # (..., n_q, n_k)
    if not _all_finite(scores):
        explain_overflow(q, k, factor, dtype)
    return scores


def attention_scores(q, k, *, scale=None, temperature=1.0) -> torch.Tensor:
    """Raw scores ``q @ kᵀ · scale / temperature``, shape ``(..., n_q, n_k)``, in q's dtype.

    ``scale`` defaults to ``1/√d_k`` where ``d_k = q.shape[-1]``. ``scale`` and
    ``temperature`` are numbers or one-element tensors (a tensor keeps its
    gradient, so a learnable temperature trains). Scores that overflow q's
    dtype raise a ValueError saying by how much, rather than coming back inf.
    """
    check_qk(q, k)
    scores = _scores(q, k, scale, temperature)
    if scores.dtype != q.dtype and scores.numel():
        limit = torch.finfo(q.dtype).max
        largest = scores.detach().abs().amax().item()
        if largest > limit:
            raise ValueError(
                f"the scores do not fit in {q.dtype}: the largest is about {largest:.3g}, "
                f"{largest / limit:.3g} times the largest {q.dtype} number ({limit:.3g}). "
                f"Compute them in float32 (q.float(), k.float())."
            )
    return _to(scores, q.dtype)


def _add_mask(scores, mask) -> torch.Tensor:
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, float("-inf"))
    scores = scores + _to(mask, scores.dtype)
    if scores.numel() and not float(scores.detach().amax()) < math.inf:  # NaN or +inf (-inf blocks)
        if bool((torch.isnan(mask) | torch.isposinf(mask)).any()):
            raise ValueError(
                "mask contains NaN or +inf. A float mask is added to the scores: use 0 where "
                "a key may be attended to and -inf (or a large negative number) to block it."
            )
        raise ValueError(
            f"adding the float mask overflowed the scores (the mask's largest value is "
            f"{mask.amax().item():.3g}): a float mask should hold 0 to allow and -inf to block."
        )
    return scores


def scaled_dot_product_attention(q, k, v, mask=None, *, scale=None, temperature=1.0):
    """Scaled dot-product attention; returns ``(output, weights)``.

    Shapes:
        q: ``(..., n_q, d_k)``, k: ``(..., n_k, d_k)``, v: ``(..., n_k, d_v)``;
        leading dimensions broadcast; ``d_k`` and ``n_k`` at least 1; one
        floating-point dtype and one device for all three.
        mask: broadcasts to ``(..., n_q, n_k)``. Bool: True = may attend (the
        sense of ``torch.nn.functional.scaled_dot_product_attention``). Float:
        added to the scores (use ``-inf`` to block).
        output: ``(..., n_q, d_v)``; weights: ``(..., n_q, n_k)``, both in q's dtype.

    Scores are ``q @ kᵀ · scale / temperature`` with ``scale`` defaulting to
    ``1/√d_k``; ``scale`` and ``temperature`` are numbers or one-element
    tensors (a tensor keeps its gradient). Each weight row is the softmax of a
    score row over the keys, so it sums to 1, and blocked keys get exactly 0.
    ``torch.softmax`` subtracts each row's maximum before ``exp``, so large
    finite scores are safe; float16 and bfloat16 inputs are computed in
    float32, as the fused kernels do. Scores that overflow even so, and NaN or
    inf in q, k or v, raise a ValueError that says where and by how much.

    A row whose keys are *all* blocked gets all-zero weights and a zero
    output, as PyTorch 2.13's fused function returns (a plain softmax over a
    row of ``-inf`` would give NaN). Gradients stay finite for such rows.
    """
    batch = check_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, batch + (q.shape[-2], k.shape[-2]))
    scores = _scores(q, k, scale, temperature)                      # (..., n_q, n_k), all finite
    if not _all_finite(v):
        require_finite_values(v, "v")
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        scores = _add_mask(scores, mask)
        # A row with every key blocked is all -inf; softmax of it is 0/0 = NaN.
        # Give such rows finite scores, then zero their weights afterwards.
        if mask.dtype == torch.bool:   # read the (smaller, unbroadcast) mask: (..., n_q or 1, 1)
            dead_rows = ~mask.any(dim=-1, keepdim=True)
        else:
            dead_rows = torch.isneginf(scores).all(dim=-1, keepdim=True)
        if bool(dead_rows.any()):
            scores = scores.masked_fill(dead_rows, 0.0)
            weights = torch.softmax(scores, dim=-1).masked_fill(dead_rows, 0.0)
        else:
            weights = torch.softmax(scores, dim=-1)
    output = weights @ _to(v, weights.dtype)                         # (..., n_q, d_v)
    return _to(output, q.dtype), _to(weights, q.dtype)


def _check_mask_size(entries: int, call: str) -> None:
    if entries > MAX_MASK_ENTRIES:
        raise ValueError(
            f"{call} would hold {entries:,} entries ({entries / 2**30:.3g} GiB); masks are "
            f"capped at {MAX_MASK_ENTRIES:,} entries (256 MiB) so that a typo cannot fill the memory."
        )


def causal_mask(n_q, n_k=None) -> torch.Tensor:
    """Bool ``(n_q, n_k)`` mask, lower-triangular: query i may attend to keys j <= i.

    ``n_k`` defaults to ``n_q``. For ``n_q != n_k`` the triangle starts at the
    top-left corner, as PyTorch's ``is_causal=True`` does. ``n_q · n_k`` may be at
    most ``MAX_MASK_ENTRIES`` (2**28, 256 MiB), so that a typo cannot fill the memory.
    """
    n_q = require_positive_int(n_q, "n_q", maximum=MAX_MASK_ENTRIES)
    n_k = n_q if n_k is None else require_positive_int(n_k, "n_k", maximum=MAX_MASK_ENTRIES)
    _check_mask_size(n_q * n_k, f"causal_mask(n_q={n_q}, n_k={n_k})")
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
    n = require_positive_int(n, "n", maximum=MAX_MASK_ENTRIES)
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
    _check_mask_size(len(lengths) * n, f"padding_mask with {len(lengths)} lengths and n={n}")
    for i, n_real in enumerate(lengths):
        if n_real > n:
            raise ValueError(
                f"lengths[{i}] is {short_repr(n_real)} but sequences are padded to n={n} positions; "
                f"a length cannot exceed n."
            )
    positions = torch.arange(n)
    real = positions[None, :] < torch.tensor(lengths)[:, None]   # (batch, n)
    return real[:, None, :]                                       # (batch, 1, n)
