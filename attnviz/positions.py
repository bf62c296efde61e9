"""Rotary position embeddings (RoPE): positions told by rotating queries and keys.

Torch only. Instead of adding a position vector to the input, :func:`rotary` turns each pair of
feature coordinates ``(2i, 2i + 1)`` of a query or key at position ``m`` by the angle
``m * base ** (-2i / d)``. Rotations keep lengths, and the dot product of two rotated vectors
depends only on the difference of their angles: the score of a query at ``m`` and a key at ``n``
depends on ``m - n``, not on ``m`` and ``n`` apart (notebook 06 asserts it). This pairs adjacent
coordinates, as the RoFormer paper writes it; implementations that pair coordinate ``i`` with
``i + d/2`` compute the same thing on reordered features.
"""

from __future__ import annotations

import torch

from ._validate import require_finite_number, require_float_tensor, require_tensor, shape_str

__all__ = ["rotary"]


def rotary(x, positions=None, base: float = 10000.0) -> torch.Tensor:
    """``x`` ``(..., n, d)`` with each position's pairs of features rotated; same shape and dtype.

    ``positions``: the position of each of the ``n`` rows, a 1-D tensor of ``n`` numbers (default
    ``0, 1, ..., n - 1``). ``d`` must be even. Pair ``i`` turns by ``position * base ** (-2i / d)``:
    the first pair fastest (one radian per position), the last slowest.
    """
    x = require_float_tensor(x, "x", 2)
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(
            f"x has shape {shape_str(x.shape)}: its last dimension (features, d = {d}) must be even, "
            f"since rotary turns the features in pairs."
        )
    base = require_finite_number(base, "base")
    if base <= 1:
        raise ValueError(f"base must be a number greater than 1, got {base:g}.")
    if positions is None:
        positions = torch.arange(n)
    positions = require_tensor(positions, "positions")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions has dtype {positions.dtype}: give numbers (torch.arange(n), say).")
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError("positions holds NaN or infinite values: every position must be a finite number.")
    if positions.shape != (n,):
        raise ValueError(
            f"positions has shape {shape_str(positions.shape)} but x has n = {n} positions "
            f"(dimension -2 of {shape_str(x.shape)}): expected shape ({n},), one position per row."
        )
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    # angles in float64 whatever x's dtype: float32 holds whole numbers exactly only up to 2**24
    speeds = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)      # (d/2,) radians per position
    angles = positions.to(torch.float64)[:, None] * speeds                 # (n, d/2)
    cos, sin = angles.cos().to(work), angles.sin().to(work)
    even, odd = x[..., 0::2].to(work), x[..., 1::2].to(work)                # (..., n, d/2) each
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)  # (..., n, d/2, 2)
    return turned.flatten(-2).to(x.dtype)                                   # (..., n, d)
