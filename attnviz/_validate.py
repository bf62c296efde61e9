"""Input checks that speak to a learner.

Every public function in the core calls these before touching torch, so a
wrong shape surfaces as a sentence naming the argument, both shapes and the
dimension that disagrees, never as a stack trace from inside torch.
"""

from __future__ import annotations

import numbers

import torch


def shape_str(shape) -> str:
    """``(2, 3, 5)`` for a torch.Size or tuple."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def broadcast_shape(*shapes) -> tuple[int, ...] | None:
    """Broadcast shapes by NumPy's rules, or None when they don't.

    (``torch.broadcast_shapes`` would do, but its first call imports sympy: ~0.4 s.)
    """
    result: list[int] = []
    for axis in range(1, max((len(s) for s in shapes), default=0) + 1):
        sizes = {s[-axis] for s in shapes if len(s) >= axis} - {1}
        if len(sizes) > 1:
            return None
        result.insert(0, sizes.pop() if sizes else 1)
    return tuple(result)


def require_tensor(value, name: str, min_dims: int = 1) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(value).__name__}. "
            f"Wrap it with torch.tensor(...) or torch.as_tensor(...)."
        )
    if value.dim() < min_dims:
        raise ValueError(
            f"{name} has shape {shape_str(value.shape)} ({value.dim()} dimensions) "
            f"but needs at least {min_dims}: the last two are (positions, features)."
        )
    return value


def require_positive_int(value, name: str, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {value!r} ({type(value).__name__}).")
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "at least 1"
        raise ValueError(f"{name} must be {bound}, got {value}.")
    return value


def require_positive_number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__}).")
    value = float(value)
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number greater than 0, got {value}.")
    return value


def _dim_name(axis_from_end: int, n_dims: int) -> str:
    if axis_from_end == 1:
        return "key length n_k (last dimension)"
    if axis_from_end == 2:
        return "query length n_q (dimension -2)"
    return f"batch/head dimension {n_dims - axis_from_end} (dimension -{axis_from_end})"


def check_mask(mask, scores_shape, name: str = "mask") -> torch.Tensor:
    """Check that ``mask`` is bool or float and broadcasts to ``scores_shape``.

    ``scores_shape`` is ``(..., n_q, n_k)``. The mask may have fewer leading
    dimensions, and any of its sizes may be 1, but it may not make the result
    bigger than the scores.
    """
    require_tensor(mask, name)
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(
            f"{name} has dtype {mask.dtype}; it must be bool (True = may attend) "
            f"or floating point (added to the scores, -inf = blocked). "
            f"For a 0/1 integer mask use {name}.bool()."
        )
    target = tuple(scores_shape)
    if mask.dim() > len(target):
        raise ValueError(
            f"{name} has shape {shape_str(mask.shape)} ({mask.dim()} dimensions) but the "
            f"scores have shape {shape_str(target)} (batch..., n_q, n_k) with only "
            f"{len(target)}: the mask may not have more dimensions than the scores."
        )
    for axis_from_end in range(1, mask.dim() + 1):
        got = mask.shape[-axis_from_end]
        want = target[-axis_from_end]
        if got != 1 and got != want:
            what = _dim_name(axis_from_end, len(target))
            raise ValueError(
                f"{name} of shape {shape_str(mask.shape)} does not broadcast to the scores' "
                f"shape {shape_str(target)} (batch..., n_q, n_k): in the {what} the mask "
                f"has {got} while the scores have {want}. Each mask size must equal the "
                f"scores' size or be 1."
            )
    return mask
