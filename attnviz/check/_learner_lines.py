"""The learner's one-line statements, where each own-line rule (:mod:`._ownlines`) looks for its line,
and a Fix made of several of them, pasted as one."""

from __future__ import annotations

import ast

from ._readers import one_line_statements

__all__ = ["statements", "your_lines"]


def statements(obj, with_helpers: bool = False):
    """``(text, statement)`` for each of the learner's statements on one line that is not a block's head
    (the inner statement of ``if m: x = 1`` is one), in their functions and, ``with_helpers``, the
    helpers they call: where each own-line rule looks for its line."""
    blocks = (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)
    for source, _, node in one_line_statements(obj, with_helpers):
        if not isinstance(node, blocks):
            yield source, node


def your_lines(found: list, why: str, most: int = 3) -> str | None:
    """``found``, the learner's lines each with its change, as one line to paste in place of them all,
    its comment saying how many it replaces and ``why``; None for none, or for more than ``most``."""
    if not 1 <= len(found) <= most:
        return None
    which = "line" if len(found) == 1 else f"{('two', 'three')[len(found) - 2]} lines"
    return "; ".join(found) + f"   # in place of your {which}: {why}"
