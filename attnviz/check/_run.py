"""Running one learner call safely: isolated, timed, its inputs guarded, the result as plain data.

The public interface for checkers (tested in tests/test_check_sandbox.py):

``call(fn, args, *, positional=(), time_limit=TIME_LIMIT) -> Outcome``
    runs ``fn(*positional args, **keyword args)`` once, under ``torch.no_grad()``, on fresh copies of
    ``args`` (a dict name -> value, in call order) in a forked child process
    (see :mod:`._sandbox`). ``Outcome.value`` is what it returned, rebuilt from
    plain data: tensors come back as CPU tensors of their dtype (complex, meta,
    sparse or subclass tensors as an :class:`Odd`), tuples/lists as lists,
    numbers and strings as themselves, other objects as an :class:`Odd`.
    ``Outcome.error`` is an exception of the learner's type when it is a
    builtin one (``NotImplementedError``, ``RuntimeError``, ...), else a
    :class:`LearnerError`; ``describe_error`` turns it into one line.
    ``Outcome.timed_out`` and ``Outcome.exited`` say the call was stopped;
    ``Outcome.modified`` names the inputs it changed in place. Never raises.

For several calls in one child (cheaper, ~15-30 ms per child) use
:func:`._sandbox.run_steps` with steps built from :func:`guarded_call`.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import torch

from .._validate import shape_str
from ._sandbox import error_info, run_steps, to_plain

__all__ = [
    "Outcome",
    "Odd",
    "LearnerError",
    "call",
    "guarded_call",
    "describe_error",
    "first_tensor",
    "shape_str",
    "rebuild",
    "TIME_LIMIT",
]

TIME_LIMIT = 5.0  # seconds for all the calls of one check together (correct code takes milliseconds)


class LearnerError(Exception):
    """Stands for an exception of a type that is not builtin; ``type_name`` is the learner's type."""

    def __init__(self, type_name, message):
        super().__init__(message)
        self.type_name = type_name


@dataclass(frozen=True)
class Odd:
    """A returned thing that is not a readable tensor; ``what`` says what it is in words."""

    what: str


@dataclass
class Outcome:
    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    modified: tuple = ()  # names of the inputs the call changed in place
    exited: str = ""  # why the child process ended early, if it did
    isolated: bool = True  # False: ran in a thread of the kernel (no fork on this system)


def _snapshot(value):
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _same(before, after) -> bool:
    if not isinstance(before, torch.Tensor):
        return True
    if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
        return False
    return bool(torch.equal(before, after) or torch.allclose(before, after, equal_nan=True, atol=0, rtol=0))


def guarded_call(fn, args: dict, positional=()):
    """Inside a child: call ``fn`` on fresh copies of ``args``; returns
    ``{"value": plain data, "modified": [names]}`` (raises what ``fn`` raises)."""
    fresh = {name: _snapshot(value) for name, value in args.items()}
    kept = {name: _snapshot(value) for name, value in fresh.items()}
    pos = [fresh[name] for name in positional if name in fresh]
    kw = {name: value for name, value in fresh.items() if name not in positional}
    with torch.no_grad():
        value = fn(*pos, **kw)
    plain = to_plain(value)
    return {"value": plain, "modified": [name for name in fresh if not _same(kept[name], fresh[name])]}


def rebuild(plain):
    """Plain data from :func:`._sandbox.to_plain` back to tensors, lists and :class:`Odd`."""
    if isinstance(plain, dict):
        kind = plain.get("kind")
        if kind == "tensor":
            tensor = torch.from_numpy(plain["array"])
            dtype = getattr(torch, plain["dtype"], None)
            return tensor.to(dtype) if isinstance(dtype, torch.dtype) else tensor
        if kind in ("tuple", "list"):
            return [rebuild(item) for item in plain["items"]]
        if kind == "ndarray":
            return Odd(f"a NumPy array of shape {tuple(plain['shape'])}")
        if kind == "odd":
            return Odd(plain["what"])
        if kind == "object":
            return Odd(f"a {plain['type']}")
    return plain


def _exception(info):
    if info is None:
        return None
    kind = getattr(builtins, info["type"], None)
    if info.get("builtin") and isinstance(kind, type) and issubclass(kind, BaseException):
        try:
            return kind(info["message"])
        except BaseException:  # noqa: BLE001 - an exception type with odd arguments
            pass
    return LearnerError(info["type"], info["message"])


def call(fn, args: dict, *, positional=(), time_limit: float = TIME_LIMIT) -> Outcome:
    """Run ``fn(*positional-args, **keyword-args)`` once, isolated; see the module docstring."""
    run = run_steps([lambda: guarded_call(fn, args, positional)], time_limit=time_limit, budget=time_limit)
    step = run.steps[0]
    if step.status in ("timeout", "over_budget"):
        return Outcome(timed_out=True, isolated=run.isolated)
    if step.status in ("exited", "skipped"):
        return Outcome(error=RuntimeError(run.note), exited=run.note, isolated=run.isolated)
    if step.status == "error":
        return Outcome(error=_exception(step.error), isolated=run.isolated)
    return Outcome(
        value=rebuild(step.value["value"]), modified=tuple(step.value["modified"]), isolated=run.isolated
    )


def describe_error(err) -> str:
    """One line: the exception's type and the first line of its message (err or an error_info dict)."""
    if isinstance(err, dict):
        name, first = err["type"], err["message"]
    else:
        info = error_info(err)
        name = err.type_name if isinstance(err, LearnerError) else info["type"]
        first = info["message"]
    if len(first) > 300:
        first = first[:300] + " ..."
    return f"{name}: {first}" if first else name


def first_tensor(value):
    """The output tensor from a return value that is a tensor or (output, weights).

    Returns ``(output, weights_or_None, complaint_or_None)``.
    """
    weights = None
    if isinstance(value, (tuple, list)):
        if not value:
            return None, None, "returned an empty tuple; return the output tensor (or output, weights)."
        if len(value) > 2:
            return (
                None,
                None,
                (f"returned {len(value)} things; return the output tensor, or (output, weights)."),
            )
        if len(value) == 2 and isinstance(value[1], torch.Tensor):
            weights = value[1]
        value = value[0]
    if isinstance(value, torch.Tensor):
        return value, weights, None
    if value is None:
        return None, None, "returned None. Did the function end without a return statement?"
    if isinstance(value, Odd):
        if "NumPy" in value.what:
            return None, None, "returned a NumPy array; keep everything in torch and return a torch.Tensor."
        return None, None, f"returned {value.what}, not a real-valued torch.Tensor the checker can read."
    return None, None, f"returned a {type(value).__name__}, not a torch.Tensor."

