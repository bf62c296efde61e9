"""Input checks that speak to a learner.

Every public function of the math layer calls these before touching torch, so a
wrong shape surfaces as a sentence naming the argument, both shapes and the
dimension that disagrees, never as a stack trace from inside torch.
"""

from __future__ import annotations

import math
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


def short_repr(value) -> str:
    """``repr(value)``, but a 400-digit integer becomes ``a 401-digit number``."""
    text = repr(value)
    if len(text) <= 40:
        return text
    if text.lstrip("-").isdigit():
        return f"a {len(text.lstrip('-'))}-digit number"
    return text[:37] + "..."


def require_tensor(value, name: str, min_dims: int = 1) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(value).__name__}. "
            f"Wrap it with torch.tensor(...) or torch.as_tensor(...)."
        )
    if value.dim() < min_dims:
        why = ": the last two are (positions, features)." if min_dims >= 2 else "."
        raise ValueError(
            f"{name} has shape {shape_str(value.shape)} ({value.dim()} dimensions) "
            f"but needs at least {min_dims}{why}"
        )
    return value


def require_float_tensor(value, name: str, min_dims: int = 1) -> torch.Tensor:
    """A tensor of real floating point (float16, bfloat16, float32, float64) that holds values."""
    require_tensor(value, name, min_dims)
    if value.is_complex() or not value.is_floating_point():
        raise TypeError(
            f"{name} has dtype {value.dtype}, but attention needs real floating-point numbers "
            f"(float32 is the usual choice): convert with {name}.float()."
        )
    if value.layout != torch.strided:
        raise TypeError(f"{name} is a {value.layout} tensor; convert it with {name}.to_dense().")
    if value.is_meta:
        raise ValueError(f"{name} is on the meta device: it has a shape but no values to compute with.")
    return value


def require_finite_values(value: torch.Tensor, name: str) -> None:
    """Raise if ``value`` holds NaN or ±inf, saying how many and where the first one is."""
    bad = ~torch.isfinite(value)
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} contains {int(bad.sum())} value(s) that are NaN or infinite, the first at "
            f"index {first}: attention needs finite numbers in {name}."
        )


def require_positive_int(value, name: str, allow_zero: bool = False, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a whole number, got {short_repr(value)} ({type(value).__name__})."
        )
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "at least 1"
        raise ValueError(f"{name} must be {bound}, got {short_repr(value)}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {short_repr(value)}.")
    return value


def typed_whole_number(value, name: str, low: int, high: int) -> int:
    """A number typed into a box (a FloatText gives 64.9 or 1e3 as typed), as a whole number from
    ``low`` to ``high``; ValueError in words for a fraction, a value out of range or not a number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a whole number from {low:,} to {high:,}, got {short_repr(value)}.")
    if value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value:g}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low:,} to {high:,}, got {int(value):,}.")
    return int(value)


def _to_float(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {short_repr(value)} ({type(value).__name__}).")
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def require_positive_number(value, name: str) -> float:
    number = _to_float(value, name)
    if not number > 0 or number == float("inf"):
        raise ValueError(f"{name} must be a finite number greater than 0, got {short_repr(value)}.")
    return number


def require_finite_number(value, name: str) -> float:
    number = _to_float(value, name)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {short_repr(value)}.")
    return number


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


# --- the arguments of attention (attnviz.core) ------------------------------------------


def _like_q(q, other, name: str) -> None:
    if other.dtype != q.dtype or other.device != q.device:
        raise TypeError(
            f"q is {q.dtype} on {q.device} but {name} is {other.dtype} on {other.device}: q, k and v "
            f"must share one dtype and device. Convert with {name}.to(q)."
        )


def check_qk(q, k) -> None:
    require_float_tensor(q, "q", 2)
    require_float_tensor(k, "k", 2)
    _like_q(q, k, "k")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has shape {shape_str(q.shape)} and k has shape {shape_str(k.shape)}: "
            f"their feature size d_k (last dimension) differs, {q.shape[-1]} against "
            f"{k.shape[-1]}. A query is compared with a key by a dot product, so both "
            f"need the same d_k."
        )
    if q.shape[-1] == 0:
        raise ValueError(
            f"q has shape {shape_str(q.shape)} and k has shape {shape_str(k.shape)}: the "
            f"feature size d_k (last dimension) is 0, so there is nothing to compare; "
            f"d_k must be at least 1."
        )
    if k.shape[-2] == 0:
        raise ValueError(
            f"k has shape {shape_str(k.shape)}: the number of keys n_k (dimension -2) is 0, "
            f"so a query has nothing to attend to; n_k must be at least 1."
        )


def check_qkv(q, k, v) -> tuple[int, ...]:
    check_qk(q, k)
    require_float_tensor(v, "v", 2)
    _like_q(q, v, "v")
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


def scalar_argument(value, name: str, positive: bool):
    """A number, or a one-element float tensor (kept as a 0-d tensor so its gradient flows)."""
    if not isinstance(value, torch.Tensor):
        return require_positive_number(value, name) if positive else require_finite_number(value, name)
    if value.numel() != 1 or value.is_complex() or not value.is_floating_point():
        raise TypeError(
            f"{name} must be a number or a one-element floating-point tensor, got a "
            f"{value.dtype} tensor of shape {shape_str(value.shape)}."
        )
    number = float(value.detach())
    if positive:
        require_positive_number(number, name)
    else:
        require_finite_number(number, name)
    return value.reshape(())


def as_number(value) -> float:
    return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)


def explain_overflow(q, k, factor, dtype) -> None:
    """The scores hold NaN or inf: say whether q or k did, or by how much the scores overflowed."""
    require_finite_values(q, "q")
    require_finite_values(k, "k")
    limit = torch.finfo(dtype).max
    products = (q.detach().double() @ k.detach().double().transpose(-2, -1)).abs().amax().item()
    largest = products * abs(as_number(factor))
    what, size = ("q @ kᵀ", products) if products > limit else ("q @ kᵀ · scale / temperature", largest)
    if math.isfinite(size):
        amount = f"about {size:.3g}, {size / limit:.3g} times the largest {dtype} number ({limit:.3g})"
    else:
        amount = f"beyond float64's range, far more than the largest {dtype} number ({limit:.3g})"
    wider = "" if dtype == torch.float64 else ", or compute in float64 (q.double(), k.double(), v.double())"
    raise ValueError(
        f"the scores overflowed: the largest |{what}| is {amount}. Make q or k smaller, "
        f"lower the scale or raise the temperature{wider}."
    )
