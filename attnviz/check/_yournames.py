"""A scale bug's Fix line in the learner's own names.

The catalog writes the scores line as ``scores = q @ k.transpose(-2, -1) / ...`` (decoding's as
``scores = query @ key...``). A learner whose queries are ``query`` (05's own solution), ``Q`` or
``qh`` pastes it and gets a NameError, then a verdict that says what ``q`` stands for: one round
spent on a name. Where the learner's code has exactly one line that multiplies a tensor by another
one's transpose (``S = Q @ K.transpose(-2, -1)``, ``torch.matmul(Q, K.mT)`` ...), the Fix uses its
names instead. Read from the code's text (never by calling it); anything unclear leaves the Fix as
it is.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

from ._stale import own_functions

__all__ = ["SCALE_BUGS", "scores_names", "in_your_names", "scale_fix_in_your_names"]

SCALE_BUGS = {"missing_scale", "wrong_scale", "scale_multiplied", "scale_by_d_model"}
"""The bugs whose Fix line is the scores line."""

_TRANSPOSES = {"transpose", "permute", "swapaxes", "swapdims", "movedim"}   # methods: k.transpose(-2, -1)
_TRANSPOSED = {"mT", "T", "mH"}                                               # attributes: k.mT


def _transposed(node) -> str | None:
    """``K`` for ``K.transpose(...)``, ``K.mT``, ``torch.transpose(K, ...)``; else None."""
    if isinstance(node, ast.Attribute) and node.attr in _TRANSPOSED and isinstance(node.value, ast.Name):
        return node.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TRANSPOSES:
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id not in ("torch", "F"):
            return owner.id
        if node.args and isinstance(node.args[0], ast.Name):       # torch.transpose(K, -2, -1)
            return node.args[0].id
    return None


def _product(node) -> tuple[str, str] | None:
    """``(Q, K)`` for ``Q @ K.transpose(...)`` or ``torch.matmul(Q, K.mT)``; else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        left, right = node.left, node.right
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("matmul", "bmm") and len(node.args) == 2:
        left, right = node.args
    else:
        return None
    key = _transposed(right)
    return (left.id, key) if isinstance(left, ast.Name) and key else None


def _assignments(fn) -> list:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except Exception:  # noqa: BLE001 - no text to read (a lambda, a built-in): nothing to say
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]


def _scores(value) -> tuple[str, str] | None:
    """``(Q, K)`` when ``value`` is the scores: the product itself, or it divided or multiplied by a
    scale, once or more (``Q @ K.mT / math.sqrt(d)``, ``scale * (Q @ K.mT)``, ``Q @ K.mT / d ** 1 / 2``);
    not a softmax of it or anything else."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)):
        return _scores(value.left) or (_scores(value.right) if isinstance(value.op, ast.Mult) else None)
    return _product(value)


def scores_names(obj) -> tuple[str, str, str] | None:
    """``(scores, q, k)``: the learner's names for the scores and the two tensors multiplied into them,
    from the assignments in their code of a product with a transpose (scaled or not); None if there is
    none, or more than one set of names."""
    found = {(node.targets[0].id, *pair) for fn in own_functions(obj) for node in _assignments(fn)
             if (pair := _scores(node.value))}
    return found.pop() if len(found) == 1 else None


def in_your_names(obj, fix: str, generic=("scores", "q", "k")) -> str:
    """``fix`` with ``generic``'s names (scores, queries, keys) in its code part replaced by the
    learner's (:func:`scores_names`); ``fix`` as it is when they cannot be told."""
    names = scores_names(obj)
    if not names or not fix:
        return fix
    code, hash_, comment = fix.partition("   #")
    swap = dict(zip(generic, names, strict=True))
    code = re.sub(r"(?<![\w.])(" + "|".join(map(re.escape, generic)) + r")\b", lambda m: swap[m[1]], code)
    return code + hash_ + comment


def scale_fix_in_your_names(obj, result, generic=("scores", "q", "k")):
    """``result`` with its Fix line in the learner's names (:func:`in_your_names`) when it names a
    scale bug; as it is otherwise."""
    if result.bug in SCALE_BUGS:
        result.fix = in_your_names(obj, result.fix, generic)
    return result
