"""Running a learner's code safely: exceptions caught, a time limit, inputs guarded.

The learner's function runs in a daemon thread. If it does not finish within
the time limit the checker stops waiting and reports it; the thread cannot be
killed from outside, but the kernel stays usable (a real infinite loop keeps
one CPU busy until the kernel is restarted, and the verdict says so).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from .._validate import shape_str

__all__ = ["Outcome", "call", "describe_error", "first_tensor", "shape_str"]

TIME_LIMIT = 5.0   # seconds per call; the check inputs are tiny, correct code takes milliseconds


@dataclass
class Outcome:
    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    modified: tuple = ()       # names of the inputs the call changed in place


def _snapshot(value):
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _same(before, after) -> bool:
    if not isinstance(before, torch.Tensor):
        return True
    if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
        return False
    return bool(torch.equal(before, after) or torch.allclose(before, after, equal_nan=True, atol=0, rtol=0))


def call(fn, args: dict, *, positional=(), time_limit: float = TIME_LIMIT) -> Outcome:
    """Run ``fn(*positional-args, **keyword-args)`` on fresh copies of ``args``.

    ``args`` maps argument names to values, in call order; names listed in
    ``positional`` are passed positionally, the rest by keyword. Returns an
    :class:`Outcome`; never raises.
    """
    fresh = {name: _snapshot(value) for name, value in args.items()}
    kept = {name: _snapshot(value) for name, value in fresh.items()}
    box: dict = {}

    def target():
        try:
            with torch.no_grad():           # grad mode is per thread: set it here
                pos = [fresh[name] for name in positional if name in fresh]
                kw = {name: value for name, value in fresh.items() if name not in positional}
                box["value"] = fn(*pos, **kw)
        except BaseException as err:        # noqa: BLE001 - anything the learner raises is a verdict
            box["error"] = err

    worker = threading.Thread(target=target, name="attnviz-check", daemon=True)
    worker.start()
    worker.join(time_limit)
    if worker.is_alive():
        return Outcome(timed_out=True)
    modified = tuple(name for name in fresh if not _same(kept[name], fresh[name]))
    return Outcome(value=box.get("value"), error=box.get("error"), modified=modified)


def describe_error(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 300:
        first = first[:300] + " ..."
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def first_tensor(value):
    """The output tensor from a return value that is a tensor or (output, weights).

    Returns ``(output, weights_or_None, complaint_or_None)``.
    """
    weights = None
    if isinstance(value, (tuple, list)):
        if not value:
            return None, None, "returned an empty tuple; return the output tensor (or output, weights)."
        if len(value) >= 2 and isinstance(value[1], torch.Tensor):
            weights = value[1]
        value = value[0]
    if isinstance(value, torch.Tensor):
        return value, weights, None
    if value is None:
        return None, None, "returned None. Did the function end without a return statement?"
    kind = type(value).__name__
    if kind == "ndarray":
        return None, None, "returned a NumPy array; keep everything in torch and return a torch.Tensor."
    return None, None, f"returned a {kind}, not a torch.Tensor."
