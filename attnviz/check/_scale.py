"""Which number a learner's attention divides its scores by, read off its outputs: for code whose
only mistake is the scale but none of the catalog's usual wrong divisors (√(2·d_k), say, or
√(k.shape[0]), which is √n_k on 2-D inputs and the batch on 3-D ones). Torch only.
"""

from __future__ import annotations

import math

import torch

from ._compare import agrees

__all__ = ["fitted_divisor", "divisor_names"]

_LOW, _HIGH, _GRID = math.log(1e-3), math.log(1e5), 161     # divisors 0.001 .. 100000, 8% apart


def _output(q, k, v, mask, divisor):
    scores = q @ k.transpose(-2, -1) / divisor
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v


def fitted_divisor(args: dict, output, live) -> float | None:
    """The divisor c for which attention with scores ``q @ kᵀ / c`` gives ``output`` (on the ``live``
    query rows), or None when none does, or when every c would (values all alike: nothing to read)."""
    q, k, v = (args[name].detach().to(torch.float64) for name in ("q", "k", "v"))
    mask = args.get("mask")
    if not isinstance(output, torch.Tensor) or output.shape != q.shape[:-1] + v.shape[-1:]:
        return None
    target = output.detach().to(torch.float64)
    rows = live.expand(target.shape[:-1])

    def error(log_c):
        return float((_output(q, k, v, mask, math.exp(log_c)) - target)[rows].abs().max())

    grid = [_LOW + (_HIGH - _LOW) * i / (_GRID - 1) for i in range(_GRID)]
    errors = [error(x) for x in grid]
    if max(errors) - min(errors) < 1e-6:
        return None                                  # the output does not depend on the scale
    best = min(range(_GRID), key=errors.__getitem__)
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, _GRID - 1)]
    for _ in range(60):                              # golden section on the bracket around the best
        a, b = high - (high - low) / 1.618, low + (high - low) / 1.618
        low, high = (low, b) if error(a) < error(b) else (a, high)
    divisor = math.exp((low + high) / 2)
    found = _output(q, k, v, mask, divisor)
    return divisor if agrees(found, target, live, atol=1e-4, rtol=1e-4) else None


def divisor_names(divisor: float, args: dict) -> set[str]:
    """The expressions of the input's sizes that ``divisor`` equals: {'math.sqrt(2 * q.shape[-1])'},
    {'math.sqrt(k.shape[0])', 'math.sqrt(k.shape[-2])'} (on 2-D inputs), or an empty set."""
    q, k, v = args["q"], args["k"], args["v"]
    sizes = {"q.shape[-1]": q.shape[-1], "2 * q.shape[-1]": 2 * q.shape[-1], "v.shape[-1]": v.shape[-1],
             "k.shape[-2]": k.shape[-2], "q.shape[-2]": q.shape[-2], "k.shape[0]": k.shape[0],
             "q.shape[0]": q.shape[0]}
    candidates = {**{f"math.sqrt({name})": math.sqrt(size) for name, size in sizes.items()}, **sizes}
    return {name for name, size in candidates.items() if abs(divisor - size) <= 1e-3 * size}
