"""The learner's one-line statements, where each own-line rule (:mod:`._ownlines`) looks for its line,
and a Fix made of several of them, pasted as one."""

from __future__ import annotations

import ast

from ._readers import one_line_statements

__all__ = ["joined_axis", "statements", "your_lines"]


def statements(obj, with_helpers: bool = False):
    """``(text, statement)`` for each of the learner's statements on one line that is not a block's head
    (the inner statement of ``if m: x = 1`` is one), in their functions and, ``with_helpers``, the
    helpers they call: where each own-line rule looks for its line."""
    blocks = (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)
    for source, _, node in one_line_statements(obj, with_helpers):
        if not isinstance(node, blocks):
            yield source, node


def your_lines(found: list, why: str, most: int = 3, where: str = "") -> str | None:
    """``found``, the learner's lines each with its change, as one line to paste in place of them all,
    its comment saying how many it replaces (and ``where``, when they are apart) and ``why``; None for
    none, or for more than ``most``."""
    if not 1 <= len(found) <= most:
        return None
    which = "line" if len(found) == 1 else f"{('two', 'three')[len(found) - 2]} lines"
    return "; ".join(found) + f"   # in place of your {which}{where}: {why}"


def joined_axis(node) -> ast.AST | None:
    """The axis node of a ``torch.cat`` (``concat``, ``concatenate``) call: its ``dim=`` or ``axis=``, or its
    second positional argument; None for any other node, or a join that names no axis."""
    func = node.func if isinstance(node, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and func.attr in ("cat", "concat", "concatenate")):
        return None
    axis = next((k.value for k in node.keywords if k.arg in ("dim", "axis")), None)
    return axis if axis is not None else node.args[1] if len(node.args) == 2 else None
