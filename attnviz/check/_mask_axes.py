"""A learner's line that gives forward's (n, n) mask axes in the wrong place, read from its text.

``mask = mask.unsqueeze(1).unsqueeze(2)`` (or ``mask[:, None, None, :]``, Hugging Face's form for a
(batch, n) padding mask) turns an (n, n) mask into (n, 1, 1, n): against scores (batch, n_heads, n,
n) its queries line up with the batch. The checker's hypotheses run the reference with one such
change, but where the module also raises for another reason, or the change is another, nothing
names the line (replay 22's 05Y3: a causal buffer for mask=None, then that line; four rounds were
spent on a verdict about heads). The axes are followed by reading the text only: ``unsqueeze`` with
a whole number, and subscripts of ``None``, ``:`` and ``...``.
"""

from __future__ import annotations

import ast

from ._readers import parsed
from ._stale import segment

__all__ = ["misplaced_axes"]

_Q, _K = "q", "k"        # the mask's two axes, queries and keys; 1 for each axis added


def _axes(node, mask: str) -> list | None:
    """The axes of ``node`` (a chain of unsqueezes and subscripts on the name ``mask``), or None."""
    if isinstance(node, ast.Name):
        return [_Q, _K] if node.id == mask else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "unsqueeze" \
            and len(node.args) == 1 and not node.keywords:
        axes, at = _axes(node.func.value, mask), _whole(node.args[0])
        if axes is None or at is None or not -len(axes) - 1 <= at <= len(axes):
            return None
        at = at if at >= 0 else len(axes) + 1 + at
        return axes[:at] + [1] + axes[at:]
    if isinstance(node, ast.Subscript):
        axes = _axes(node.value, mask)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if axes is None:
            return None
        out, rest = [], list(axes)
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                out.append(1)
            elif isinstance(item, ast.Slice) and item.lower is item.upper is item.step is None and rest:
                out.append(rest.pop(0))
            elif isinstance(item, ast.Constant) and item.value is Ellipsis:
                keep = len(rest) - sum(1 for i in items[items.index(item) + 1:]
                                       if not (isinstance(i, ast.Constant) and i.value is None))
                out += rest[:keep]
                rest = rest[keep:]
            else:
                return None
        return out + rest
    return None


def _whole(node) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _whole(node.operand)
        return -value if value is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def misplaced_axes(forward) -> tuple[str, list] | None:
    """``(line, axes)`` for forward's one line ``m = <mask with axes added>`` whose queries and keys
    are not its last two axes (``axes``: 'q', 'k' or 1 for each); else None."""
    found = []
    for source, tree in parsed(forward):
        function = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
        if function is None or len(function.args.args) < 3:
            continue
        mask = function.args.args[2].arg
        for node in ast.walk(function):
            # under its own name or another (maska = mask.unsqueeze(1): replay 24's 05A1)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and node.lineno == node.end_lineno:
                axes = _axes(node.value, mask)
                if axes and len(axes) > 2 and axes[-2:] != [_Q, _K]:
                    found.append((segment(source, node), axes))
    return found[0] if len(found) == 1 else None


def shape_for(axes: list, n: int) -> tuple:
    """The shape ``axes`` give an (n, n) mask."""
    return tuple(n if axis in (_Q, _K) else 1 for axis in axes)
