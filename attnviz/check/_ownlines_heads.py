"""Own-line rules for heads (notebook 05, and a decoding step's heads): how they are split, joined,
merged and blended, each rewritten in one of the learner's own lines (see :mod:`._ownlines`, whose
table ``RULES`` says when each applies)."""

from __future__ import annotations

import ast

from ._learner_lines import joined_axis, statements, your_lines
from ._readers import (
    assigned,
    helpers,
    one_line_statements,
    operands,
    parsed,
    the_one,
    your_names,
)
from ._stale import segment

__all__ = ["blend_over_the_keys", "contiguous_before_view", "heads_side_by_side", "heads_transposed_back",
           "split_into_heads_of_d_k", "repeated_interleaved", "split_then_transposed",
           "stacked_heads_kept_whole", "whole_width"]


def whole_width(obj, result, renamed) -> str | None:
    """For a head width that is a float (``self.d_k = d_model / n_heads``): the learner's one line that
    divides by the heads, with ``//``; else None (the catalog's line named forward's x, which __init__
    does not have: a replay's learner pasted it there and read the notebook's x)."""
    found = []
    for source, node in statements(obj):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for inner in ast.walk(node):
                divides = isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div) \
                    and isinstance(inner.right, (ast.Name, ast.Attribute))     # by n_heads, not by a root
                if divides and "head" in ast.unparse(inner.right):
                    line, text = segment(source, node), segment(source, inner)
                    found.append(line.replace(text, f"{segment(source, inner.left)} // "
                                                    f"{segment(source, inner.right)}"))
    line = the_one(found)
    return line + "   # in place of your line: // divides to a whole number" if line else None


def split_then_transposed(obj, result, renamed) -> str | None:
    """For heads split without a transpose in one reshape or view of the learner's (a helper that splits
    one sequence at a time: ``t.reshape(koka, n, d // koka)``; or ``x.view(b, h, n, d // h)``), where the
    size before the positions is the one the width is divided by: that line with the two sizes swapped
    and the two axes transposed back (``t.reshape(n, koka, d // koka).transpose(0, 1)``); else None.
    Replay 20's 05W4 split in such a helper inside a loop over the batch, and was given the catalog's
    split of the whole batch, which its merge could not take."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr in ("reshape", "view")
                    and len(call.args) in (3, 4) and not call.keywords):
                continue
            width = call.args[-1]
            heads = call.args[-3]
            divided = isinstance(width, ast.BinOp) and isinstance(width.op, ast.FloorDiv) and \
                ast.unparse(width.right) == ast.unparse(heads)
            # or a count of heads by its name (view(b, model.n_kv_heads, t, dh): a replay's 08 d18, whose
            # queries, keys and values were split so on three lines, was given x.view(batch, n, n_heads,
            # d_head).transpose(1, 2), none of its names)
            stepping = result.checked == "check_decoding_step"
            if not (divided or (stepping and len(call.args) == 4 and "heads" in ast.unparse(heads))):
                continue
            at = len(call.args) - 3
            text = [segment(source, a) for a in call.args]
            text[at], text[at + 1] = text[at + 1], text[at]
            made = f"{segment(source, func)}({', '.join(text)}).transpose({at}, {at + 1})"
            line = segment(source, node)
            found.append(line.replace(segment(source, call), made, 1))
    why = "positions first, then the heads moved in front of them (a reshape alone cuts each head from the " \
        "positions)"
    if result.checked == "check_decoding_step":    # a step's own queries, keys and values: its lines for all
        return your_lines(found, why)
    line = the_one(found)
    return f"{line}   # in place of your line: {why}" if line else None


def _tiled(call) -> tuple | None:
    """``(tensor, group)`` for ``tensor.unsqueeze(1).expand(B, group, ...).reshape(...)`` (or ``view``,
    ``flatten``): the whole block of key/value heads ``group`` times, as ``.repeat`` gives (replay 22's
    08Y2); else None."""
    func = call.func if isinstance(call, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and func.attr in ("reshape", "view", "flatten")):
        return None
    expand = func.value
    inner = expand.func if isinstance(expand, ast.Call) else None
    if not (isinstance(inner, ast.Attribute) and inner.attr == "expand" and len(expand.args) >= 4):
        return None
    unsqueeze = inner.value
    first = unsqueeze.func if isinstance(unsqueeze, ast.Call) else None
    if isinstance(first, ast.Attribute) and first.attr == "unsqueeze" and len(unsqueeze.args) == 1 and \
            ast.unparse(unsqueeze.args[0]) == "1":
        return first.value, expand.args[1]
    if isinstance(unsqueeze, ast.Subscript) and ast.unparse(unsqueeze.slice) == "(:, None)":   # k[:, None]
        return unsqueeze.value, expand.args[1]
    return None


def repeated_interleaved(obj, result, renamed) -> str | None:
    """For key/value heads repeated with ``.repeat(1, g, 1, 1)`` (the whole block of heads g times, where
    each head belongs g times in a row): the learner's lines that do it (in a helper of theirs too), each
    with ``.repeat_interleave(g, dim=1)``; else None. Replay 21's 08X1 repeated in a helper per block,
    and was given the catalog's line in the step's generic names (key, value): an UnboundLocalError."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        line, done = segment(source, node), False
        for call in ast.walk(node):
            if (one := _block_repeat(source, call)) is not None:
                line = line.replace(segment(source, call), one, 1)
                done = True
            elif tiled := _tiled(call):       # k.unsqueeze(1).expand(B, g, Hkv, T, dh).reshape(B, H, T, dh)
                tensor, group = (segment(source, part) for part in tiled)
                line = line.replace(segment(source, call),
                                    f"{tensor}.repeat_interleave({group}, dim=1)", 1)
                done = True
                break
        if done:
            found.append(line)
    # a tiling written over two lines: the statement as one line (replay 24's 08A3)
    spread = ""
    for source, tree in parsed(obj, with_helpers=True) if not found else ():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and node.lineno != node.end_lineno and len(node.targets) == 1 \
                    and (tiled := _tiled(node.value)):
                tensor, group = (segment(source, part) for part in tiled)
                target = segment(source, node.targets[0])
                found.append(f"{target} = {tensor}.repeat_interleave({group}, dim=1)")
            elif isinstance(node, ast.Assign) and node.lineno != node.end_lineno:
                # repeats inside a call over several lines (the fused function's): the statement as one line,
                # each repeat interleaved (replay 26's 08 a12 pasted the catalog's line above it: twice)
                text = segment(source, node)
                for call in ast.walk(node.value):
                    if (one := _block_repeat(source, call)) is not None:
                        text = text.replace(segment(source, call), one, 1)
                if text != segment(source, node):
                    found.append(" ".join(part.strip() for part in text.splitlines()).replace("( ", "("))
                    spread = f" (one statement, over {node.end_lineno - node.lineno + 1} lines)"
    return your_lines(found, "each key/value head repeated in place, next to itself (the query heads of a "
                             "group share it), not the whole block of heads again", where=spread)


def _block_repeat(source: str, call) -> str | None:
    """``T.repeat_interleave(g, dim=1)`` for a call ``T.repeat(1, g, 1, 1)`` (the whole block of heads
    repeated g times); else None."""
    func = call.func if isinstance(call, ast.Call) else None
    ones = len(call.args) == 4 and all(isinstance(a, ast.Constant) and a.value == 1
                                       for i, a in enumerate(call.args) if i != 1) if func else False
    if not (isinstance(func, ast.Attribute) and func.attr == "repeat" and ones and not call.keywords):
        return None
    tensor, group = segment(source, func.value), segment(source, call.args[1])
    return f"{tensor}.repeat_interleave({group}, dim=1)"


def stacked_heads_kept_whole(obj, result, renamed) -> str | None:
    """For heads merged interleaved by stacking each head's output on a new last axis and flattening
    (``torch.stack(outs, dim=-1).flatten(2)``): that line of the learner's, stacked before the features
    (``dim=-2``), so that each head's features stay side by side; else None."""
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr == "stack" and call.args):
                continue
            given = call.args[1] if len(call.args) > 1 else None
            axis = next((k.value for k in call.keywords if k.arg == "dim"), given)
            if axis is not None and ast.unparse(axis) in ("-1", "3"):
                line, at = segment(source, node), axis.col_offset - node.col_offset
                found.append(line[:at] + "-2" + line[at + len(ast.unparse(axis)):])
    line = the_one(found)
    return line + "   # in place of your line: each head's outputs stacked before their features, so that " \
                  "flattening keeps each head whole" if line else None


def _joined_heads(node) -> ast.AST | None:
    """The axis node of ``torch.cat(heads, dim=1)`` (a list joined along an axis before the features:
    0, 1, -2 or -3), else None."""
    axis = joined_axis(node) if isinstance(node, ast.Call) and node.args else None
    return axis if axis is not None and ast.unparse(axis) in ("0", "1", "-2", "-3") else None


def heads_side_by_side(obj, result, renamed) -> str | None:
    """For W_o fed pieces one head wide: the learner's one line that joins a list of heads along another
    axis than the features, inside the W_o call or in the name handed to it (``self.W_o(torch.cat(hlavy,
    dim=1))``), joined along the features (``dim=-1``); else None."""
    lines = list(statements(obj))
    joined = {assigned(node): (source, node) for source, node in lines
              if assigned(node) and _joined_heads(node.value) is not None}      # merged = torch.cat(...)
    found = []
    for source, node in lines:
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr == "W_o" and len(call.args) == 1):
                continue
            at_line, given = (source, node), call.args[0]
            if isinstance(given, ast.Name) and given.id in joined:
                at_line = joined[given.id]
                given = at_line[1].value
            if (axis := _joined_heads(given)) is not None:
                line = segment(*at_line)
                at = axis.col_offset - at_line[1].col_offset
                found.append(line[:at] + "-1" + line[at + len(ast.unparse(axis)):])
    line = the_one(found)
    return line + "   # in place of your line: the heads side by side along the features (dim=-1), " \
                  "(batch, n, n_heads * d_k); along another axis they lie one after another" if line else None


def heads_transposed_back(obj, result, renamed) -> str | None:
    """For heads merged without the transpose: the learner's one line that reshapes their heads straight
    (``upoko.reshape(x.shape)``, ``heads.contiguous().view(...)``; in a helper whose name says it merges,
    its first parameter), with ``.transpose(1, 2)`` after the heads and ``reshape`` for a ``view``; else
    None."""
    # the heads' name in the learner's function, or in a helper that attends (replay 23's 08Z4: a step whose
    # layer helper merged `ulo` straight, given the catalog's line in names it has none of)
    heads = {your_names(f).get("heads") for f in (obj, *helpers(obj))} - {None}
    found, folded = {}, _heads_in_the_batch(obj)
    for source, tree in parsed(obj, with_helpers=True):
        for function in (f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)):
            merging = "merge" in function.name.lower() and function.args.args
            names = heads | {function.args.args[0].arg if merging else None} - {None}
            lines = (n for n in ast.walk(function) if isinstance(n, ast.stmt) and n.lineno == n.end_lineno)
            for node in lines:
                if line := _transposed_back(source, node, names, unfold=folded):
                    found[(source, node.lineno)] = line
    line = the_one(list(found.values()))
    if line and folded:
        return line + (f"   # in place of your line: the heads out of the batch axis first ({folded}, as you "
                       "split them), then each position's heads side by side before the reshape")
    return line + "   # in place of your line: each position's heads side by side before the reshape" \
        if line else None


def _heads_in_the_batch(obj) -> str | None:
    """``view(b, h, n, d)`` where the learner folded the heads into the batch axis (a replay's
    ``.reshape(iqoqo * h, n, d_k)``, for torch.bmm): their heads are (b * h, n, d), and a transpose(1, 2)
    alone swaps positions and features. Read from their one reshape or view to a product and two other
    sizes (their scores folded so are (b * h, n, n)); else None."""
    found = set()
    for source, tree in parsed(obj, with_helpers=True):
        for call in ast.walk(tree):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in ("reshape", "view") and len(call.args) == 3 \
                    and isinstance(call.args[0], ast.BinOp) and isinstance(call.args[0].op, ast.Mult):
                b, h = (segment(source, s) for s in (call.args[0].left, call.args[0].right))
                n, d = (segment(source, size) for size in call.args[1:])
                if n != d:                                          # not scores folded so: (b * h, n, n)
                    found.add(f"view({b}, {h}, {n}, {d})")
    return the_one(list(found))


def _transposed_back(source, node, heads: set, unfold: str | None = None) -> str | None:
    """``node``'s line with ``.transpose(1, 2).reshape`` where it reshapes or views one of ``heads``, or a
    product (``(w @ v).view(...)``), as they are or transposed on other axes (``.transpose(-2, -1)``), after
    a ``.contiguous()`` or not (``unfold``: a ``view(b, h, n, d)`` to put first, for heads folded into the
    batch axis); else None."""
    line = segment(source, node)
    for call in ast.walk(node):
        func = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and func.attr in ("reshape", "view")):
            continue
        first, inner = func, func.value                     # first: the attribute the change starts at
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and \
                inner.func.attr == "contiguous":
            first, inner = inner.func, inner.func.value
        axes = [ast.unparse(a) for a in inner.args] if isinstance(inner, ast.Call) else []
        if isinstance(inner.func if axes else None, ast.Attribute) and inner.func.attr == "transpose" and \
                axes in (["-2", "-1"], ["2", "3"]):                 # features and positions swapped
            first, inner = inner.func, inner.func.value
        named = isinstance(inner, ast.Name) and inner.id in heads
        start = first.end_col_offset - len(first.attr) - 1 - node.col_offset
        if (named or operands(inner, calls=("matmul",))) and func.end_lineno == node.lineno and \
                line[start:start + 1] == ".":
            unfolded = f".{unfold}" if unfold else ""           # (b * h, n, d) -> (b, h, n, d) first
            return line[:start] + unfolded + ".transpose(1, 2).reshape" + \
                line[func.end_col_offset - node.col_offset:]
    return None


_SPLIT_SWAP = {"split": ("n_heads", "d_k"), "chunk": ("d_k", "n_heads")}


def split_into_heads_of_d_k(obj, result, renamed) -> str | None:
    """For heads of n_heads features each (d_k heads): the learner's lines that cut the projections with
    ``torch.split(t, self.n_heads, dim=-1)`` (the size of a piece taken for their number) or
    ``t.chunk(self.d_k, -1)``, with the other size; one line for them all; else None."""
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            swap = _SPLIT_SWAP.get(getattr(func, "attr", ""))
            module = isinstance(getattr(func, "value", None), ast.Name) and func.value.id == "torch"
            size = call.args[1 if module else 0] if swap and len(call.args) > (1 if module else 0) else None
            text = ast.unparse(size) if size is not None else ""
            if swap and text.endswith(swap[0]) and not text.endswith("n_kv_heads"):
                line, at = segment(source, node), size.end_col_offset - node.col_offset
                found.append(line[:at - len(swap[0])] + swap[1] + line[at:])
                break
    return your_lines(found, "split takes each piece's size, d_k; chunk takes how many, n_heads")


def blend_over_the_keys(obj, result, renamed) -> str | None:
    """For weights transposed in an einsum blend (``"bhqk,bqhd->bkhd"``: the values indexed by the query
    letter, the output by the key's): the learner's one einsum line whose weights' last two letters are
    (query, key) and whose values carry the query's letter, the two letters swapped in the values and
    the output (``"bhqk,bkhd->bqhd"``); else None."""
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            given = call.args[0] if isinstance(func, ast.Attribute) and func.attr == "einsum" and call.args \
                else None
            if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
                continue
            terms, _, out = given.value.replace(" ", "").partition("->")
            weights, _, values = terms.partition(",")
            if len(weights) < 2 or "." in weights + values:
                continue
            query, key = weights[-2:]
            if query in values and key not in values and key in out and query not in out:
                swap = str.maketrans({query: key, key: query})
                equation = f"{weights},{values.translate(swap)}->{out.translate(swap)}"
                line, at = segment(source, node), given.col_offset - node.col_offset
                found.append(line[:at] + repr(equation).replace("'", '"') + line[given.end_col_offset -
                                                                                 node.col_offset:])
    line = the_one(found)
    return line + "   # in place of your line: each query's row of weights blends the values over the keys" \
        if line else None


_TRANSPOSING = {"transpose", "permute", "swapaxes", "swapdims", "movedim"}


def contiguous_before_view(obj, result, renamed) -> str | None:
    """For ``.view`` on a transposed tensor: the learner's one line that calls ``.view(...)`` straight on a
    transpose (``t.transpose(1, 2).view(b, n, h * d_k)``, in a method that merges their heads, say), with
    ``.contiguous()`` before the view; else None. Replay 24's 05A1 was given the catalog's ``merged =
    kontekst.transpose(1, 2)...view(x.shape)`` for its merge method's return line: neither name is in it."""
    found = {}
    for source, _, node in one_line_statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            inner = func.value if isinstance(func, ast.Attribute) and func.attr == "view" else None
            turned = isinstance(inner, ast.Call) and getattr(inner.func, "attr", "") in _TRANSPOSING \
                or isinstance(inner, ast.Attribute) and inner.attr in ("mT", "T")
            if turned and inner.lineno == node.lineno:
                line = segment(source, node)
                at = inner.end_col_offset - node.col_offset
                found[(source, node.lineno)] = line[:at] + ".contiguous()" + line[at:]
    line = the_one(list(found.values()))
    return line + ("   # in place of your line: contiguous() before view (after a transpose the numbers are "
                   "not laid out in the order view needs), or reshape in place of view") if line else None

