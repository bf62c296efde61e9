"""Multi-head attention as a module, built on :func:`attnviz.core.scaled_dot_product_attention`."""

from __future__ import annotations

import torch
from torch import nn

from ._validate import (
    check_mask,
    require_finite_values,
    require_float_tensor,
    require_positive_int,
    shape_str,
)
from .core import scaled_dot_product_attention

__all__ = ["MultiHeadAttention", "split_heads", "merge_heads"]

# 4 · d_model² weights: at 8192 that is 2**28 numbers (1 GiB in float32), the most a course kernel can hold.
MAX_D_MODEL = 8192


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(batch, n, n_heads · d_head)`` → ``(batch, n_heads, n, d_head)``: head h gets features
    ``h·d_head .. (h+1)·d_head`` of every position."""
    batch, n, width = x.shape
    return x.view(batch, n, n_heads, width // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(batch, n_heads, n, d_head)`` → ``(batch, n, n_heads · d_head)``: the inverse of
    :func:`split_heads`."""
    batch, n_heads, n, d_head = x.shape
    return x.transpose(1, 2).contiguous().view(batch, n, n_heads * d_head)


class MultiHeadAttention(nn.Module):
    """Multi-head attention, batch first.

    ``W_q``, ``W_k``, ``W_v`` and ``W_o`` are each ``nn.Linear(d_model, d_model)``.
    Each head works in ``d_k = d_model // n_heads`` features and its scores
    are divided by ``√d_k`` (the per-head size, not ``d_model``).

    ``x`` and ``context`` must have the weights' dtype (float32 unless the
    module was converted with ``.double()`` or ``.half()``).

    ``forward(x, context=None, mask=None)`` returns ``(output, weights)``:
        x: ``(batch, n_q, d_model)``, the positions asking (queries).
        context: ``(batch, n_k, d_model)`` or None. None means self-attention
        (keys and values from ``x``); given, it is cross-attention (keys and
        values from ``context``).
        mask: bool (True = may attend) or float (added), broadcasting to
        ``(batch, n_q, n_k)`` or ``(batch, n_heads, n_q, n_k)``. A mask with
        3 or fewer dimensions is applied to every head: ``(n_k,)`` blocks key
        columns, ``(n_q, n_k)`` is one pattern for the batch, ``(batch, n_q, n_k)``
        or ``(batch, 1, n_k)`` (:func:`attnviz.padding_mask`) one per sequence.
        output: ``(batch, n_q, d_model)``; weights: ``(batch, n_heads, n_q, n_k)``.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        d_model = require_positive_int(d_model, "d_model", maximum=MAX_D_MODEL)
        n_heads = require_positive_int(n_heads, "n_heads")
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be True or False, got {bias!r} ({type(bias).__name__}).")
        if d_model % n_heads:
            divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: each head gets "
                f"d_model / n_heads features, which must be a whole number. "
                f"n_heads could be one of {divisors}."
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _check_input(self, tensor, name: str) -> None:
        require_float_tensor(tensor, name)
        if tensor.dim() != 3 or tensor.shape[-1] != self.d_model:
            raise ValueError(
                f"{name} has shape {shape_str(tensor.shape)} but MultiHeadAttention expects "
                f"(batch, positions, d_model) with d_model={self.d_model}"
                + (f"; its last dimension is {tensor.shape[-1]}" if tensor.dim() == 3 else
                   f"; it has {tensor.dim()} dimensions instead of 3")
                + "."
            )
        weight = self.W_q.weight
        if tensor.dtype != weight.dtype or tensor.device != weight.device:
            raise TypeError(
                f"{name} is {tensor.dtype} on {tensor.device} but this MultiHeadAttention's weights "
                f"are {weight.dtype} on {weight.device}: convert {name} with {name}.to({weight.dtype}), "
                f"or the module with .to({tensor.dtype})."
            )

    def _explain(self, err: ValueError, x, context) -> ValueError:
        """Name what the learner passed (x, context, a weight) rather than the heads' q, k, v."""
        require_finite_values(x, "x")
        require_finite_values(context, "context")
        for name, param in self.named_parameters():
            require_finite_values(param.detach(), name)
        return ValueError(f"inside MultiHeadAttention (per head, q = W_q(x), k = W_k(context), "
                          f"v = W_v(context)): {err}")

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, n, d_model)`` → ``(batch, n_heads, n, d_k)``."""
        return split_heads(x, self.n_heads)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, n_heads, n, d_k)`` → ``(batch, n, d_model)``."""
        return merge_heads(x)

    def forward(self, x, context=None, mask=None):
        self._check_input(x, "x")
        if context is None:
            context = x
        else:
            self._check_input(context, "context")
            if context.shape[0] != x.shape[0]:
                raise ValueError(
                    f"x has batch size {x.shape[0]} (dimension 0) but context has "
                    f"{context.shape[0]}; they must match."
                )
        batch, n_q, n_k = x.shape[0], x.shape[1], context.shape[1]
        if n_k == 0:
            name = "x" if context is x else "context"
            raise ValueError(f"{name} has shape {shape_str(context.shape)}: 0 positions (dimension 1) "
                             f"to attend to; it needs at least 1.")
        if mask is not None:
            if isinstance(mask, torch.Tensor) and mask.dim() <= 3:
                check_mask(mask, (batch, n_q, n_k))
                if mask.dim() == 3:
                    mask = mask.unsqueeze(1)  # (batch, 1, n_q, n_k): the same mask for every head
            else:
                check_mask(mask, (batch, self.n_heads, n_q, n_k))
        query = self.split_heads(self.W_q(x))        # (batch, n_heads, n_q, d_k)
        key = self.split_heads(self.W_k(context))    # (batch, n_heads, n_k, d_k)
        value = self.split_heads(self.W_v(context))  # (batch, n_heads, n_k, d_k)
        try:
            heads, weights = scaled_dot_product_attention(query, key, value, mask)
        except ValueError as err:
            raise self._explain(err, x, context) from None
        return self.W_o(self.merge_heads(heads)), weights
