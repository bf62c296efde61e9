"""Comparing a learner's tensors with the expected ones, and saying how they differ."""

from __future__ import annotations

import torch

from ._run import shape_str

__all__ = ["agrees", "max_gap", "shape_complaint", "ATOL", "RTOL"]

ATOL, RTOL = 1e-4, 1e-4


def _rows(tensor, live):
    """Select the live query rows: ``tensor`` (..., n_q, d), ``live`` bool (..., n_q)."""
    live = live.expand(tensor.shape[:-1])
    return tensor[live]


def agrees(got, expected, live) -> bool:
    """Same shape, and equal (within float32 tolerance) on the live query rows.

    Where ``expected`` itself is not finite (a zoo member's NaN), anything is
    accepted: the learner may have used a finite fill for the same mistake.
    """
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        return False
    if got.is_complex():
        return False
    got_rows = _rows(got.detach().to(torch.float64), live)
    exp_rows = _rows(expected.detach().to(torch.float64), live)
    close = torch.isclose(got_rows, exp_rows, atol=ATOL, rtol=RTOL) | ~torch.isfinite(exp_rows)
    return bool(close.all())


def max_gap(got, expected, live) -> float:
    got_rows = _rows(got.detach().to(torch.float64), live)
    exp_rows = _rows(expected.detach().to(torch.float64), live)
    gap = (got_rows - exp_rows).abs()
    gap = gap[torch.isfinite(gap)]
    return float(gap.max()) if gap.numel() else float("nan")


def shape_complaint(got_shape, expected_shape, names) -> str:
    """A sentence naming the dimension that is off. ``names`` labels dims from the end."""
    got_shape, expected_shape = tuple(got_shape), tuple(expected_shape)
    base = f"the output has shape {shape_str(got_shape)} but should have {shape_str(expected_shape)}"
    if len(got_shape) != len(expected_shape):
        return (f"{base}: {len(got_shape)} dimensions instead of {len(expected_shape)}. "
                f"Keep the batch/head dimensions in front untouched.")
    for back in range(1, len(expected_shape) + 1):
        if got_shape[-back] != expected_shape[-back]:
            name = names[back - 1] if back <= len(names) else f"batch/head dimension {len(got_shape) - back}"
            return (f"{base}: in the {name} (dimension -{back}) you have {got_shape[-back]} "
                    f"where {expected_shape[-back]} is expected.")
    return base
