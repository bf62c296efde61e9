"""Comparing a learner's tensors with the expected ones, and saying how they differ."""

from __future__ import annotations

import math

import torch

from .._validate import shape_str

__all__ = ["agrees", "max_gap", "shape_complaint", "rows", "ATOL", "RTOL"]

ATOL, RTOL = 1e-4, 1e-3


def rows(tensor, live):
    """The live query rows: ``tensor`` (..., n_q, d), ``live`` bool broadcasting to (..., n_q)."""
    return tensor[live.expand(tensor.shape[:-1])]


def agrees(got, expected, live, atol=ATOL, rtol=RTOL) -> bool:
    """Same shape; on the live query rows NaN/inf in the same rows and the finite rows close.

    ``got`` and ``expected`` are tensors (any float dtype; compared in float64).
    """
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return False
    if got.shape != expected.shape or got.is_complex() or got.dtype == torch.bool:
        return False
    try:
        live = live.expand(got.shape[:-1])
    except RuntimeError:
        return False
    got_rows, exp_rows = rows(got.to(torch.float64), live), rows(expected.to(torch.float64), live)
    # NaN/inf row by row (where in a row an overflow lands depends on the order of the sums)
    finite_row = torch.isfinite(exp_rows).all(dim=-1)
    if not torch.equal(finite_row, torch.isfinite(got_rows).all(dim=-1)):
        return False
    return bool(torch.isclose(got_rows[finite_row], exp_rows[finite_row], atol=atol, rtol=rtol).all())


def max_gap(got, expected, live) -> float:
    gap = (rows(got.to(torch.float64), live) - rows(expected.to(torch.float64), live)).abs()
    gap = gap[torch.isfinite(gap)]
    return float(gap.max()) if gap.numel() else float("nan")


def shape_complaint(got_shape, expected_shape, names, extra: str = "") -> str:
    """A sentence naming the dimension that is off. ``names`` labels dims from the end; ``extra`` is
    the checker's advice when the output has more dimensions than expected (default: generic)."""
    got_shape, expected_shape = tuple(got_shape), tuple(expected_shape)
    base = f"the output has shape {shape_str(got_shape)} but should have {shape_str(expected_shape)}"
    if len(got_shape) > len(expected_shape):
        advice = extra or "Look for a dimension your code adds (an unsqueeze, a [None], a stack)."
        return f"{base}: {len(got_shape)} dimensions instead of {len(expected_shape)}. {advice}"
    if len(got_shape) < len(expected_shape):
        return (
            f"{base}: {len(got_shape)} dimensions instead of {len(expected_shape)}. "
            f"Keep the batch/head dimensions in front untouched."
        )
    rows = math.prod(expected_shape[:-1])
    rearranged = (got_shape[-1] == expected_shape[-1] and math.prod(got_shape[:-1]) == rows and rows > 0
                  and got_shape != expected_shape)
    for back in range(1, len(expected_shape) + 1):
        if got_shape[-back] != expected_shape[-back]:
            name = names[back - 1] if back <= len(names) else f"batch/head dimension {len(got_shape) - back}"
            return (
                f"{base}: in the {name} (dimension -{back}) you have {got_shape[-back]} "
                f"where {expected_shape[-back]} is expected."
            ) + (f" It holds the {rows} rows it should, in another arrangement: pieces joined (torch.cat) "
                 "or reshaped along another dimension than theirs." if rearranged else "")
    return base
