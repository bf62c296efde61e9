"""A verdict's Fix as the learner's own line, changed, where the catalog's line would not fit their code.

The catalog's Fix lines are written in the exercises' names, and :mod:`._yournames` puts them in the
learner's. Some mistakes live in a line of a form the catalog cannot foresee: a scale handed to a
helper, a softmax written by hand in a helper, an einsum with every axis named, a cache returned
under the wrong name. For those, the Fix is the learner's own line with the one change in it, to
paste in its place, and its comment says so. Each rule below says when it applies (the verdict's
bug or what it observed) and rewrites one line read from the learner's code (:mod:`._readers`), or
gives None and the catalog's line stands.
"""

from __future__ import annotations

import ast
import re
import types

from ._readers import (
    assigned,
    cell_lines,
    embed_line,
    names_a,
    one_line_statements,
    operands,
    parsed,
    returns_a_value,
    the_one,
    trees,
    your_names,
)

__all__ = ["own_line_fix", "swapped_unpack", "unreturned_fix", "lengths_as_a_column"]


def _lines(obj, with_helpers: bool = False):
    """``(text, statement)`` for each of the learner's statements on one line that is not a block's head
    (the inner statement of ``if m: x = 1`` is one), in their functions and, ``with_helpers``, the
    helpers they call: where each rule below looks for its line."""
    blocks = (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)
    for source, _, node in one_line_statements(obj, with_helpers):
        if not isinstance(node, blocks):
            yield source, node


def _your_lines(found: list, why: str, most: int = 3) -> str | None:
    """``found``, the learner's lines each with its change, as one line to paste in place of them all,
    its comment saying how many it replaces and ``why``; None for none, or for more than ``most``."""
    if not 1 <= len(found) <= most:
        return None
    which = "line" if len(found) == 1 else f"{('two', 'three')[len(found) - 2]} lines"
    return "; ".join(found) + f"   # in place of your {which}: {why}"


def own_line_fix(obj, result, renamed: str) -> str | None:
    """The Fix for ``result`` as a line of the learner's own, changed (the first rule of :data:`RULES`
    that applies and finds its line); ``renamed``: the catalog's Fix already in their names."""
    for applies, rewrite in RULES:
        if applies(result) and (line := rewrite(obj, result, renamed)):
            return line
    return None


def unreturned_fix(obj, result, renamed: str = "") -> str | None:
    """For a function that returned None, never returns a value, and ends by setting a name (``keep =
    ...``): the Fix ``return keep``, in place of the catalog's whole answer (a replay's learner, 04C of
    session 29, had to work out the return from it); else None."""
    if "returned None" not in result.headline:
        return None
    for _, tree in parsed(obj):
        function = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(function, ast.FunctionDef) or (type(obj) is type and function.name != "forward"):
            continue
        if returns_a_value(function.body) or not (name := assigned(function.body[-1])):
            return None
        return f"return {name}   # at the end of your function: without a return, it gives None"
    return None


def lengths_as_a_column(obj, result) -> str | None:
    """For a padding mask right for a batch of one only: its one line that makes the lengths a row
    (``lengths.unsqueeze(0)``, ``lengths[None, :]``, ``lengths.view(1, -1)``), with ``lengths[:, None]``,
    a column; else None. (The catalog's return line leaves that line in place, and it raises first.)"""
    code = getattr(obj, "__code__", None)
    if result.bug != "batch_one_only" or type(obj) is not types.FunctionType or code.co_argcount < 1:
        return None
    lengths, found = code.co_varnames[0], []
    for source, node in _lines(obj):
        line, rows = ast.get_source_segment(source, node), [n for n in ast.walk(node) if _a_row(n, lengths)]
        for row in sorted(rows, key=lambda n: -n.col_offset):                  # from the right
            at = row.col_offset - node.col_offset
            line = line[:at] + f"{lengths}[:, None]" + line[at + len(ast.get_source_segment(source, row)):]
        found += [line] if rows else []
    line = the_one(found)
    why = f"{lengths}[:, None], a column: one row per sequence"
    return f"{line}   # in place of your line: {why}" if line else None


def _a_row(node, lengths: str) -> bool:
    """Whether ``node`` is ``lengths`` made a row: ``.unsqueeze(0)``, ``[None, :]``, ``.view(1, -1)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == lengths:
        given = [ast.unparse(arg) for arg in node.args]
        return (node.func.attr == "unsqueeze" and given in (["0"], ["-2"])) or \
            (node.func.attr in ("view", "reshape") and given == ["1", "-1"])
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == lengths \
        and ast.unparse(node.slice) in ("None", "None, :", "(None, :)")


def _einsum_for_any_batch(obj, result, renamed) -> str | None:
    """For an einsum whose equation names every axis (``'bhqd,bhkd->bhqk'``, which raises on 2-D
    inputs): the learner's first such line with ``...`` in place of the leading axes, the same in
    every term, the last two kept; else None. The checker's inputs have 2, 3 and 4 axes, as a
    learner's may."""
    found = []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            equation = call.args[0] if func is not None and call.args else None
            written = equation.value if isinstance(equation, ast.Constant) else None
            if not (isinstance(func, ast.Attribute) and func.attr == "einsum" and isinstance(written, str)):
                continue
            inputs, _, output = written.replace(" ", "").partition("->")
            terms = [*inputs.split(","), output] if output else []
            # the same leading axes in every term ('bh' of 'bhqd,bhkd->bhqk'): '...' stands for them exactly
            shared = all(len(term) > 2 and term.isalpha() and term[:-2] == terms[0][:-2] for term in terms)
            if terms and shared:
                line = ast.get_source_segment(source, node)
                written = ast.get_source_segment(source, equation)
                new = ",".join("..." + term[-2:] for term in terms[:-1]) + "->..." + terms[-1][-2:]
                found.append((node.lineno, line.replace(written, repr(new), 1)))
    if not found:
        return None
    line = min(found)[1]
    more = "; the same in your other einsum" + ("s" if len(found) > 2 else "") if len(found) > 1 else ""
    return line + f"   # in place of your line: ... for any leading axes (2-D, 3-D, 4-D inputs alike){more}"


def _exp_of_the_row_less_its_largest(obj, result, renamed) -> str | None:
    """For a softmax written by hand: the learner's one line that takes ``torch.exp(S)`` or ``S.exp()``
    of a name S (in their function or a helper of theirs, ``_normalise``), with each row's largest score
    taken off first; else None. A replay's learner, given ``weights = torch.softmax(scores, ...)`` in
    names their function did not have, pasted it where it raised."""
    found = []
    for source, node in _lines(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr == "exp"):
                continue
            taken = call.args[0] if call.args else func.value
            if isinstance(taken, ast.Name) and len(call.args) <= 1:
                name = taken.id
                shifted = f"{name} - {name}.amax(-1, keepdim=True)"
                new = f"torch.exp({shifted})" if call.args else f"({shifted}).exp()"
                line = ast.get_source_segment(source, node)
                found.append(line.replace(ast.get_source_segment(source, call), new))
    line = the_one(found)
    return line + "   # in place of your line: each row's largest score taken off first, so exp never " \
                  "overflows (the weights are the same)" if line else None


def _roots(node) -> list:
    """The nodes whose square root ``node`` takes: ``math.sqrt(A)``, ``torch.rsqrt(A)``, ``A ** 0.5``,
    ``A ** -0.5``."""
    found = []
    for n in ast.walk(node):
        func = n.func if isinstance(n, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("sqrt", "rsqrt") and len(n.args) == 1:
            found.append(n.args[0])
        power = n.right if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) else None
        if isinstance(power, ast.UnaryOp) and isinstance(power.op, ast.USub):
            power = power.operand
        if isinstance(power, ast.Constant) and power.value == 0.5:
            found.append(n.left)
    return found


def _own_root(obj, result, renamed: str) -> str | None:
    """For a scale of the wrong size: the learner's one simple line that takes a square root (wherever
    their scale is computed: with the scores, on a line of its own, or handed to a helper of theirs),
    with the root of the Fix's size (``q.shape[-1]``, ``model.d_head``; ``renamed``: the Fix in the
    learner's names) in its place; else None.
    A replay's learners, given the catalog's ``scores = ...`` where their scores came from a helper
    (``raw = _compare(q, k) / math.sqrt(v.shape[-1])``) or their scale was handed to one, pasted it
    where it read names they did not have."""
    code, _, _ = renamed.partition("   #")
    try:
        wanted = _roots(ast.parse(code))
    except SyntaxError:
        return None
    if len(wanted) != 1:
        return None
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)
    found = [(source, node, roots[0]) for source, node in _lines(obj)
             if isinstance(node, simple) and len(roots := _roots(node)) == 1]
    if len(found) == 2 and (once := _scaled_once(obj, found)):
        return once
    if not (one := the_one(found)):
        return None
    source, node, root = one
    line, size = ast.get_source_segment(source, node), ast.get_source_segment(source, root)
    right = ast.unparse(wanted[0])
    if size is None or size == right or line.count(size) != 1:
        return None
    return line.replace(size, right) + f"   # in place of your line: the root of {right}, not {size}"


def _scaled_once(obj, found: list) -> str | None:
    """For queries and keys each divided by a root (``q = ... / math.sqrt(d)``, ``k = ... / math.sqrt(d)``:
    the scores divided by d): the keys' line without its division; else None."""
    names = your_names(obj)
    keys = {names.get("k"), names.get("new_k")} - {None}
    for source, node, root in found:
        target = assigned(node)
        value = getattr(node, "value", None)
        divided = value if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div) else None
        if target in keys and divided is not None and root in ast.walk(divided.right):
            line = ast.get_source_segment(source, node)
            segment = ast.get_source_segment
            kept = line.replace(segment(source, divided), segment(source, divided.left))
            return kept + "   # in place of your line: the scale once, on the queries (divided twice, the " \
                          "scores are divided by d_k)"
    return None


def _returns_its_own_cache(obj, result, renamed) -> str | None:
    """For a step that makes a cache, appends to it and returns the one it was given instead: its
    return line with its own cache (``return model.unembed(x), kv``); else None."""
    names = your_names(obj)
    if not {"given_back", "made_cache", "logits"} <= names.keys():
        return None
    return (f"return {names['logits']}, {names['made_cache']}   # the cache you made and appended to, not "
            f"{names['given_back']}, the one you were given")


def _pointer_moved_on(obj, result, renamed) -> str | None:
    """For a step whose returned cache holds its position as it came (``{'k': kbuf, 'v': vbuf, 'pos':
    pos}``, ``pos`` what it embeds at): its return line with the position moved on by the new tokens
    (``end`` when the step names ``pos + ...`` so, else ``pos + tokens.shape[1]``); else None (the
    catalog's list line, which a buffer cache has no place for)."""
    code = getattr(obj, "__code__", None)
    embed = embed_line(obj) if type(obj) is types.FunctionType and code.co_argcount >= 2 else None
    if not (embed and embed[2]):
        return None
    position, moved, found = embed[1], f"{embed[1]} + {code.co_varnames[1]}.shape[1]", []
    for _, tree in parsed(obj):
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(node.targets[0],
                    ast.Name) and isinstance(value.left, ast.Name) and value.left.id == position:
                moved = node.targets[0].id                              # end = pos + n_new
    for source, node in _lines(obj):
        value = node.value if isinstance(node, ast.Return) else None
        cache = value.elts[1] if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
        kept = cache.values if isinstance(cache, ast.Dict) else getattr(cache, "elts", [])
        same = [e for e in kept if isinstance(e, ast.Name) and e.id == position]
        if len(same) == 1:
            line, at = ast.get_source_segment(source, node), same[0].col_offset - node.col_offset
            found.append(line[:at] + moved + line[at + len(position):])
    line = the_one(found)
    return line + f"   # in place of your return line: the position moves on past the new tokens " \
                  f"({position} is where this call wrote them)" if line else None


def _joined_along_positions(obj, result, renamed) -> str | None:
    """For a step whose logits hold the right rows in another arrangement (pieces joined on the batch
    axis, say): its one line that joins with ``torch.cat(..., dim=0)`` (or ``0``), joining along the
    positions (``dim=1``); else None."""
    if result.checked != "check_decoding_step":
        return None
    found = []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr in ("cat", "concat", "concatenate")):
                continue
            axis = next((k.value for k in call.keywords if k.arg in ("dim", "axis")), None)
            axis = axis if axis is not None else call.args[1] if len(call.args) == 2 else None
            if isinstance(axis, ast.Constant) and axis.value == 0:
                line, at = ast.get_source_segment(source, node), axis.col_offset - node.col_offset
                found.append(line[:at] + "1" + line[at + 1:])
    line = the_one(found)
    return line + "   # in place of your line: the new positions side by side (dim=1), each batch row " \
                  "apart (dim=0 stacked them as extra rows of the batch)" if line else None


def _keys_stored_twice(obj, result, renamed) -> str | None:
    """The learner's one line that caches one tensor as both keys and values (``present.append((pk,
    pk))``), with their values in the second place; else None (or when their values have no one name)."""
    values = your_names(obj).get("v")
    found = []
    for source, node in _lines(obj):
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        if not (call and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
                and len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List))):
            continue
        pair = call.args[0].elts
        if len(pair) == 2 and all(isinstance(e, ast.Name) for e in pair) and pair[0].id == pair[1].id:
            line, second = ast.get_source_segment(source, node), ast.get_source_segment(source, call.args[0])
            brackets = "()" if isinstance(call.args[0], ast.Tuple) else "[]"
            found.append(line.replace(second, f"{brackets[0]}{pair[0].id}, {values}{brackets[1]}"))
    line = the_one(found) if values and values.isidentifier() else None
    return line + "   # in place of your line: the keys, then the values; the keys twice stored the keys " \
                  "in the values' place" if line else None


def _keys_transposed(obj, result, renamed) -> str | None:
    """For scores that multiply the queries by the keys as they are (``torch.matmul(q, k)``, which runs
    only when n_k equals d_k): the learner's one line that does, with the keys transposed; else None."""
    if type(obj) is not types.FunctionType or obj.__code__.co_argcount < 2:
        return None
    queries, keys = obj.__code__.co_varnames[:2]
    found = []
    for source, node in _lines(obj):
        for inner in ast.walk(node):
            pair = operands(inner)
            names = [n.id for n in pair if isinstance(n, ast.Name)] if pair else []
            if names == [queries, keys]:
                line, at = ast.get_source_segment(source, node), pair[1].col_offset - node.col_offset
                found.append(line[:at] + f"{keys}.transpose(-2, -1)" + line[at + len(keys):])
    line = the_one(found)
    return line + f"   # in place of your line: {queries} times {keys} transposed, each query against each " \
                  "key (without it the product runs only when n_k equals d_k)" if line else None


def _dangling(obj, result, renamed) -> str | None:
    """For a name the learner's code reads and no longer sets (``cles_r``, whose line a pasted Fix line
    replaced with one that sets ``cles``): the name their code sets that it is a longer or shorter form
    of, in place of the first; else None (then a cell of the notebook may define it)."""
    name = result.fix[len("run the cell that defines or imports "):].split(" ")[0]
    read, stored = set(), set()
    for _, tree in parsed(obj):
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (stored if isinstance(node.ctx, ast.Store) else read).add(node.id)
    if name not in read or name in stored:
        return None
    near = the_one([other for other in sorted(stored) if other != name and min(len(other), len(name)) >= 2
                    and (name.startswith(other) or other.startswith(name))])
    if not near:
        return None
    return (f"use {near} in place of {name} (your code reads {name} and sets it nowhere: a line that set it "
            f"was replaced, by a Fix line that sets {near}?), or give {name} its value above its first use")


def _whole_width(obj, result, renamed) -> str | None:
    """For a head width that is a float (``self.d_k = d_model / n_heads``): the learner's one line that
    divides by the heads, with ``//``; else None (the catalog's line named forward's x, which __init__
    does not have: a replay's learner pasted it there and read the notebook's x)."""
    found = []
    for source, node in _lines(obj):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for inner in ast.walk(node):
                divides = isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div) \
                    and isinstance(inner.right, (ast.Name, ast.Attribute))     # by n_heads, not by a root
                if divides and "head" in ast.unparse(inner.right):
                    line, text = ast.get_source_segment(source, node), ast.get_source_segment(source, inner)
                    found.append(line.replace(text, f"{ast.get_source_segment(source, inner.left)} // "
                                                    f"{ast.get_source_segment(source, inner.right)}"))
    line = the_one(found)
    return line + "   # in place of your line: // divides to a whole number" if line else None


_CASTS = {"float", "double", "half", "bfloat16"}


def _cast_dropped(obj, result, renamed) -> str | None:
    """For an output or a step in another dtype than the inputs': the learner's one line that casts
    (``scores.float().softmax(-1)``, ``x.to(torch.float32)``), without the cast; else None (then the
    dtype comes from a tensor built inside their code, which the catalog's line is about)."""
    found = []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            to_float = isinstance(func, ast.Attribute) and func.attr == "to" and len(call.args) == 1 \
                and not call.keywords and ast.unparse(call.args[0]).startswith("torch.float")
            if isinstance(func, ast.Attribute) and (func.attr in _CASTS and not call.args or to_float):
                line = ast.get_source_segment(source, node)
                receiver = ast.get_source_segment(source, func.value)
                simple = isinstance(func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                if not simple and call is not getattr(node, "value", None):    # (a @ b).float() * 2
                    receiver = f"({receiver})"
                found.append(line.replace(ast.get_source_segment(source, call), receiver, 1))
    line = the_one(found)
    return line + "   # in place of your line: no cast, so all stays in the inputs' dtype" if line else None


_HALF = {"torch.float16", "torch.half", "torch.bfloat16"}


def _without_half(source, node) -> str | None:
    """``node``'s line without what makes a tensor half precision: each ``dtype=torch.float16`` (or
    bfloat16) keyword dropped, each ``.half()``, ``.bfloat16()`` or ``.to(torch.float16)`` call taken off;
    else None."""
    line, changes = ast.get_source_segment(source, node), []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func, text = call.func, ast.get_source_segment(source, call)
        half = [k for k in call.keywords if k.arg == "dtype" and ast.unparse(k.value) in _HALF]
        if half:
            kept = [ast.get_source_segment(source, a) for a in call.args] + [
                ast.get_source_segment(source, k) for k in call.keywords if k is not half[0]]
            changes.append((text, f"{ast.get_source_segment(source, func)}({', '.join(kept)})"))
        elif isinstance(func, ast.Attribute) and (
                func.attr in ("half", "bfloat16") and not call.args and not call.keywords
                or func.attr == "to" and len(call.args) == 1 and ast.unparse(call.args[0]) in _HALF):
            changes.append((text, ast.get_source_segment(source, func.value)))
    for text, replacement in changes:         # outermost first (ast.walk): an inner one is then gone or kept
        line = line.replace(text, replacement, 1)
    return line if changes else None


def _full_precision_cache(obj, result, renamed) -> str | None:
    """For a cache kept in float16 or bfloat16: the learner's line (or two lines, keys and values) that
    makes it so (``kbuf = torch.zeros(shape, dtype=torch.bfloat16)``, ``K = K.to(torch.bfloat16)``),
    without it; else None."""
    found = [line for source, node in _lines(obj) if (line := _without_half(source, node))]
    return _your_lines(found, "the model's float32, kept as it was made", most=2)


def _out_of_place(obj, result, renamed) -> str | None:
    """For a function that changes its inputs in place: its one line that calls an in-place method
    (``q.div_(s)``, ``mask.masked_fill_(...)``) on one of its parameters, calling the method that
    returns a new tensor instead (kept under the parameter's name when the call is the whole line:
    ``mask = mask.logical_not()``); else None."""
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args} - {"self"}
    found = []
    for source, node in _lines(obj):
        line = ast.get_source_segment(source, node)
        if isinstance(node, ast.Expr) and (chain := _in_place_chain(node.value, given)):
            for at in sorted((f.end_col_offset - node.col_offset for f in chain[1]), reverse=True):
                line = line[:at - 1] + line[at:]                    # unsqueeze_( -> unsqueeze(
            found.append(f"{chain[0]} = {line}")                     # the whole line: keep what it gives
            continue
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.endswith("__") \
                    and isinstance(func.value, ast.Name) and func.value.id in given:
                at = func.end_col_offset - node.col_offset
                found.append(line[:at - 1] + line[at:])          # div_( -> div(
    line = the_one(found)
    return line + "   # in place of your line: a new tensor, your input left as it was" if line else None


def _in_place_chain(node, given: set) -> tuple | None:
    """``(name, [attributes])`` for a chain of calls on one of ``given`` with in-place methods in it
    (``mask.unsqueeze_(0).unsqueeze_(0)``, ``mask.logical_not_()``); else None."""
    methods = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr.endswith("_") and not node.func.attr.endswith("__"):
            methods.append(node.func)
        node = node.func.value
    return (node.id, methods) if isinstance(node, ast.Name) and node.id in given and methods else None


def _weights_times_values(obj, result, renamed) -> str | None:
    """For a module whose values never reach its output: its one line that multiplies the weights by
    something other than the values (``torch.bmm(gewichte, schluessel)``), with the values; else None."""
    names = your_names(obj)
    weights, values = names.get("weights"), names.get("v") or names.get("new_v")
    found = []
    for source, node in _lines(obj):
        for inner in ast.walk(node):
            pair = operands(inner, calls=("matmul", "bmm"))
            left, right = pair if pair else (None, None)
            if isinstance(left, ast.Name) and left.id == weights and isinstance(right, ast.Name) \
                    and right.id != values:
                line, at = ast.get_source_segment(source, node), pair[1].col_offset - node.col_offset
                found.append(line[:at] + values + line[at + len(pair[1].id):])
    line = the_one(found) if weights and values else None
    return line + f"   # in place of your line: the weights times the values, {values}" if line else None


def _each_token_at_its_position(obj, result, renamed) -> str | None:
    """For a step that embeds token by token in a loop (``for t in range(...): y = model.embed(tokens[:, t:t
    + 1], start)``) at one position for all: its embed line at ``start + t``; else None (the catalog's
    ``x = model.embed(tokens, past)`` embeds the whole chunk, which a loop over the tokens does not)."""
    found = []
    for source, tree in parsed(obj):
        for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)):
            index = loop.target.id
            for node in (n for n in ast.walk(loop) if isinstance(n, ast.Assign) and n.lineno == n.end_lineno):
                call = node.value
                embeds = isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr == "embed" and len(call.args) == 2
                uses = [embeds and any(isinstance(n, ast.Name) and n.id == index for n in ast.walk(arg))
                        for arg in (call.args if embeds else ())]
                if uses == [True, False]:                 # the token at t, embedded at a position without t
                    line = ast.get_source_segment(source, node)
                    position = ast.get_source_segment(source, call.args[1])
                    found.append(line[::-1].replace(position[::-1], f"{position} + {index}"[::-1], 1)[::-1])
    line = the_one(found)
    return line + "   # in place of your line: each token at its own position" if line else None


def _sum_kept(obj, result, renamed) -> str | None:
    """For a softmax by hand whose row sums lose their axis: the learner's one line (in a helper too, a
    return line there) that divides by a ``.sum(...)`` without ``keepdim``, with ``keepdim=True``; else
    None."""
    found = []
    for source, node in _lines(obj, with_helpers=True):
        for inner in ast.walk(node):
            divides = isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div)
            call = inner.right if divides and isinstance(inner.right, ast.Call) else None
            kept = call is not None and any(k.arg == "keepdim" for k in call.keywords)
            if call and getattr(call.func, "attr", "") == "sum" and not kept:
                text = ast.get_source_segment(source, call)
                line = ast.get_source_segment(source, node)
                found.append(line.replace(text, text[:-1] + ", keepdim=True)", 1))
                break
    line = the_one(found)
    return line + "   # in place of your line: each row's sum keeps its axis, so it divides its own row" \
        if line else None


def _joined_values_kept(obj, result, renamed) -> str | None:
    """For a step that joins its values to the cached ones but keeps only the new ones: its one line that
    stores its joined keys beside its new values (``out[name] = KV(K, v_new)``), with the joined values
    (``KV(K, V)``); else None (then the joining line is what is missing, the catalog's line)."""
    names = your_names(obj)
    keys, joined, new = names.get("k"), names.get("v"), names.get("new_v")
    if not (keys and joined and new) or joined == new:
        return None
    found = []
    for source, node in _lines(obj):
        read = [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        ids = [n.id for n in read]
        if keys in ids and ids.count(new) == 1 and joined not in ids and not isinstance(node, ast.Return):
            at = next(n for n in read if n.id == new)
            line, start = ast.get_source_segment(source, node), at.col_offset - node.col_offset
            found.append(line[:start] + joined + line[start + len(new):])
    line = the_one(found)
    return line + f"   # in place of your line: {joined}, the values joined to the cached ones, not " \
                  f"this call's {new} alone" if line else None


def _stacked_heads_kept_whole(obj, result, renamed) -> str | None:
    """For heads merged interleaved by stacking each head's output on a new last axis and flattening
    (``torch.stack(outs, dim=-1).flatten(2)``): that line of the learner's, stacked before the features
    (``dim=-2``), so that each head's features stay side by side; else None."""
    found = []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and func.attr == "stack" and call.args):
                continue
            given = call.args[1] if len(call.args) > 1 else None
            axis = next((k.value for k in call.keywords if k.arg == "dim"), given)
            if axis is not None and ast.unparse(axis) in ("-1", "3"):
                line, at = ast.get_source_segment(source, node), axis.col_offset - node.col_offset
                found.append(line[:at] + "-2" + line[at + len(ast.unparse(axis)):])
    line = the_one(found)
    return line + "   # in place of your line: each head's outputs stacked before their features, so that " \
                  "flattening keeps each head whole" if line else None


def _joined_heads(node) -> ast.AST | None:
    """The axis node of ``torch.cat(heads, dim=1)`` (a list joined along an axis before the features:
    0, 1, -2 or -3), else None."""
    func = node.func if isinstance(node, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and func.attr in ("cat", "concat", "concatenate") and node.args):
        return None
    axis = next((k.value for k in node.keywords if k.arg in ("dim", "axis")), None)
    axis = axis if axis is not None else node.args[1] if len(node.args) == 2 else None
    return axis if axis is not None and ast.unparse(axis) in ("0", "1", "-2", "-3") else None


def _heads_side_by_side(obj, result, renamed) -> str | None:
    """For W_o fed pieces one head wide: the learner's one line that joins a list of heads along another
    axis than the features, inside the W_o call or in the name handed to it (``self.W_o(torch.cat(hlavy,
    dim=1))``), joined along the features (``dim=-1``); else None."""
    lines = list(_lines(obj))
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
                line = ast.get_source_segment(*at_line)
                at = axis.col_offset - at_line[1].col_offset
                found.append(line[:at] + "-1" + line[at + len(ast.unparse(axis)):])
    line = the_one(found)
    return line + "   # in place of your line: the heads side by side along the features (dim=-1), " \
                  "(batch, n, n_heads * d_k); along another axis they lie one after another" if line else None


def _with_a_mask(obj):
    """``(source, statement, guarded)`` for each one-line statement (not a block's head) of the learner's
    functions and helpers (a ``Head`` module's forward too) that take a ``mask``; ``guarded``: whether it
    sits under an ``if`` that reads ``mask``."""
    for source, tree, node in one_line_statements(obj, with_helpers=True):
        function = tree.body[0] if isinstance(tree.body[0], ast.FunctionDef) else None
        if function is None or "mask" not in [a.arg for a in function.args.args] or \
                isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)):
            continue
        yield source, node, any(isinstance(test, ast.If) and _reads_mask(test.test) and node in ast.walk(test)
                                for test in ast.walk(function))


def _reads_mask(node) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "mask" for n in ast.walk(node))


def _passes_mask_on(node) -> bool:
    """Whether ``node`` only hands ``mask`` on, as an argument of a call (``h(x, mask)``): None is
    fine there."""
    handed = {id(arg) for call in ast.walk(node) if isinstance(call, ast.Call)
              for arg in [*call.args, *(k.value for k in call.keywords)]}
    return all(id(n) in handed for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == "mask")


def _the_mask_given(obj, result, renamed) -> str | None:
    """For a mask replaced by a causal one of the learner's own (a registered ``tril`` buffer, say): their
    one line that fills where that mask says, filling where the mask the function is given is False,
    under ``if mask is not None:`` unless it is already; else None."""
    found = []
    for source, node, guarded in _with_a_mask(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            filled = isinstance(func, ast.Attribute) and func.attr in ("masked_fill", "masked_fill_")
            if not (filled and call.args) or _reads_mask(call.args[0]):
                continue
            line, at = ast.get_source_segment(source, node), call.args[0].col_offset - node.col_offset
            line = line[:at] + "~mask" + line[at + len(ast.get_source_segment(source, call.args[0])):]
            found.append(line if guarded else f"if mask is not None: {line}")
    line = the_one(found)
    return line + "   # in place of your line: the mask you are given, not a causal one of your own" \
        if line else None


def _mask_only_when_given(obj, result, renamed) -> str | None:
    """For a function that raises whenever it is given no mask: its one line that reads the mask outside
    an ``if`` on it, under ``if mask is not None:``; else None."""
    found = [ast.get_source_segment(source, node) for source, node, guarded in _with_a_mask(obj)
             if not guarded and _reads_mask(node) and not _passes_mask_on(node)]
    line = the_one(found)
    return f"if mask is not None: {line}   # in place of your line: mask=None means nothing is blocked" \
        if line else None


def _every_block(obj, result, renamed) -> str | None:
    """For a step that runs no block without a cache: its loop line over ``zip(model.blocks, cache or
    [])``, with one empty entry per block in place of ``[]``; else None."""
    found = []
    for source, tree in parsed(obj):
        for loop in ast.walk(tree):
            call = loop.iter if isinstance(loop, ast.For) else None
            zipped = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "zip"
            either = call.args[-1] if zipped and len(call.args) == 2 else None
            if not (isinstance(either, ast.BoolOp) and isinstance(either.op, ast.Or)
                    and ast.unparse(either.values[-1]) in ("[]", "()")):
                continue
            blocks = call.args[0]
            if isinstance(blocks, ast.Call) and getattr(blocks.func, "id", None) == "enumerate" \
                    and blocks.args:
                blocks = blocks.args[0]                              # zip(enumerate(model.blocks), ...)
            if not ast.unparse(blocks).endswith("blocks"):
                continue
            empty, head = either.values[-1], ast.get_source_segment(source, loop).splitlines()[0]
            at = empty.col_offset - loop.col_offset
            blocks = f"[None] * len({ast.get_source_segment(source, blocks)})"
            found.append(head[:at] + blocks + head[at + len(ast.get_source_segment(source, empty)):])
    line = the_one(found)
    return line + "   # in place of your loop's first line: with no cache, one empty entry per block, so " \
                  "that every block runs" if line else None


def _heads_transposed_back(obj, result, renamed) -> str | None:
    """For heads merged without the transpose: the learner's one line that reshapes their heads straight
    (``upoko.reshape(x.shape)``, ``heads.contiguous().view(...)``; in a helper whose name says it merges,
    its first parameter), with ``.transpose(1, 2)`` after the heads and ``reshape`` for a ``view``; else
    None."""
    heads, found = your_names(obj).get("heads"), {}
    for source, tree in parsed(obj, with_helpers=True):
        for function in (f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)):
            merging = "merge" in function.name.lower() and function.args.args
            names = {heads, function.args.args[0].arg if merging else None} - {None}
            lines = (n for n in ast.walk(function) if isinstance(n, ast.stmt) and n.lineno == n.end_lineno)
            for node in lines:
                if line := _transposed_back(source, node, names):
                    found[(source, node.lineno)] = line
    line = the_one(list(found.values()))
    return line + "   # in place of your line: each position's heads side by side before the reshape" \
        if line else None


def _transposed_back(source, node, heads: set) -> str | None:
    """``node``'s line with ``.transpose(1, 2).reshape`` where it reshapes or views one of ``heads``, or a
    product (``(w @ v).view(...)``), as they are or transposed on other axes (``.transpose(-2, -1)``), after
    a ``.contiguous()`` or not; else None."""
    line = ast.get_source_segment(source, node)
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
            return line[:start] + ".transpose(1, 2).reshape" + line[func.end_col_offset - node.col_offset:]
    return None


def _mlp_after_attention(obj, result, renamed) -> str | None:
    """For an MLP that reads the block's input where the stream attention wrote to belongs: the
    learner's one line ``x = po_dem + block.mlp(block.norm_mlp(x))``, the norm reading what the line
    adds to (``po_dem``); else None."""
    found = []
    for source, node in _lines(obj):
        value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        added = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
        if not (added and isinstance(value.left, ast.Name)):
            continue
        for call in ast.walk(value.right):
            func = call.func if isinstance(call, ast.Call) else None
            read = call.args[0] if isinstance(func, ast.Attribute) and func.attr == "norm_mlp" and \
                len(call.args) == 1 else None
            if isinstance(read, ast.Name) and read.id != value.left.id:
                line, at = ast.get_source_segment(source, node), read.col_offset - node.col_offset
                found.append(line[:at] + value.left.id + line[at + len(read.id):])
    line = the_one(found)
    return line + "   # in place of your line: the MLP reads the stream attention wrote to" if line else None


def _cached_first(obj, result, renamed) -> str | None:
    """For a step that puts its new keys and values before the cached ones: its lines that join them so
    (``clavis = torch.cat([clavis, prius[0]], dim=-2)``), the two pieces swapped; else None."""
    found = []
    for source, node in _lines(obj):
        target = assigned(node)
        call = node.value if target and isinstance(node.value, ast.Call) else None
        func = getattr(call, "func", None)
        pieces = call.args[0] if isinstance(func, ast.Attribute) and func.attr in ("cat", "concat") and \
            call.args and isinstance(call.args[0], (ast.List, ast.Tuple)) else None
        if pieces is None or len(pieces.elts) != 2 or ast.unparse(pieces.elts[0]) != target:
            continue
        line, (new, old) = ast.get_source_segment(source, node), (ast.get_source_segment(source, e)
                                                                  for e in pieces.elts)
        at, end = pieces.elts[0].col_offset - node.col_offset, pieces.elts[1].end_col_offset - node.col_offset
        found.append(line[:at] + f"{old}, {new}" + line[end:])
    return _your_lines(found, "the cached positions first, the new ones after them", most=2)


def _count_from_the_keys(obj, result, renamed) -> str | None:
    """For sizes read from the queries where the keys' belong: the learner's one line that reads the
    same size of the queries twice (``L, S = q.size(-2), q.size(-2)``), its second read from the keys;
    else None."""
    code = getattr(obj, "__code__", None)
    if type(obj) is not types.FunctionType or code.co_argcount < 2:
        return None
    queries, keys = code.co_varnames[:2]
    found = []
    for source, node in _lines(obj):
        pair = node.value.elts if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) else []
        if len(pair) == 2 and ast.unparse(pair[0]) == ast.unparse(pair[1]) and \
                queries in {n.id for n in ast.walk(pair[1]) if isinstance(n, ast.Name)}:
            line, second = ast.get_source_segment(source, node), ast.get_source_segment(source, pair[1])
            at = pair[1].col_offset - node.col_offset
            changed = re.sub(rf"\b{re.escape(queries)}\b", keys, second)
            found.append(line[:at] + changed + line[at + len(second):])
    line = the_one(found)
    return line + f"   # in place of your line: the second size is the keys', from {keys}" if line else None


def _out_of_place_to_grow(obj, result, renamed) -> str | None:
    """For an in-place operation whose result must grow (``mutar.logical_and_(mask)``: a (n, n) tensor
    cannot take a (batch, n, n) result in place): the learner's one statement that calls a method in
    place on a name, assigning its out-of-place form (``mutar = mutar.logical_and(mask)``); else None."""
    found = []
    for source, node in _lines(obj):
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        func = getattr(call, "func", None)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr.endswith("_") \
                and not func.attr.startswith("_"):
            line, name = ast.get_source_segment(source, node), func.value.id
            at = func.end_col_offset - node.col_offset
            found.append(f"{name} = {line[:at - 1]}{line[at:]}")
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):     # mutar &= mask
            found.append(f"{node.target.id} = {ast.unparse(ast.BinOp(node.target, node.op, node.value))}")
    line = the_one(found)
    return line + "   # in place of your line: out of place, so the result can take the mask's batch axes" \
        if line else None


def _blend_over_the_keys(obj, result, renamed) -> str | None:
    """For weights transposed in an einsum blend (``"bhqk,bqhd->bkhd"``: the values indexed by the query
    letter, the output by the key's): the learner's one einsum line whose weights' last two letters are
    (query, key) and whose values carry the query's letter, the two letters swapped in the values and
    the output (``"bhqk,bkhd->bqhd"``); else None."""
    found = []
    for source, node in _lines(obj):
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
                line, at = ast.get_source_segment(source, node), given.col_offset - node.col_offset
                found.append(line[:at] + repr(equation).replace("'", '"') + line[given.end_col_offset -
                                                                                 node.col_offset:])
    line = the_one(found)
    return line + "   # in place of your line: each query's row of weights blends the values over the keys" \
        if line else None


def _mask_as_given(obj, result, renamed) -> str | None:
    """For a mask transposed: the learner's one line (in their function or a helper) that hands a mask
    transposed (``maska.mT``, ``mask.T``, ``mask.transpose(-2, -1)``) to ``masked_fill``, ``torch.where``
    or ``attn_mask=``, the transpose left out; else None."""
    found = {}
    for source, _, node in one_line_statements(obj, with_helpers=True):
        line = ast.get_source_segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = getattr(func, "attr", getattr(func, "id", ""))
            handed = [k.value for k in getattr(call, "keywords", []) if k.arg == "attn_mask"]
            handed += call.args[:1] if name in ("masked_fill", "masked_fill_", "where") and call.args else []
            for mask in handed:
                mask = mask.operand if isinstance(mask, ast.UnaryOp) else mask
                inner = _untransposed(mask)
                if isinstance(inner, ast.Name) and "mask" in inner.id.lower():
                    start, end = inner.end_col_offset - node.col_offset, mask.end_col_offset - node.col_offset
                    found[(source, node.lineno)] = line[:start] + line[end:]
    line = the_one(list(found.values()))
    return line + "   # in place of your line: the mask as it is given, rows = queries" if line else None


def _untransposed(node):
    """What ``node`` transposes (``m`` of ``m.mT``, ``m.T``, ``m.transpose(-2, -1)``), else None."""
    if isinstance(node, ast.Attribute) and node.attr in ("mT", "T"):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose" \
            and sorted(ast.unparse(a) for a in node.args) in (["-1", "-2"], ["0", "1"]):
        return node.func.value
    return None


def _softmax_not_its_log(obj, result, renamed) -> str | None:
    """For weights that are not normalised: the learner's one line that names ``log_softmax`` (called, or
    handed to a factory beside the def: ``_atencion = ruray(torch.log_softmax, ...)``), with ``softmax``;
    else None."""
    lines = [*_lines(obj, with_helpers=True), *cell_lines(obj)]
    found = {ast.get_source_segment(source, node) for source, node in lines
             if any(isinstance(n, ast.Attribute) and n.attr == "log_softmax" for n in ast.walk(node))}
    line = the_one(sorted(found))
    why = "softmax gives weights that sum to 1; log_softmax gives their logarithms"
    return line.replace("log_softmax", "softmax") + f"   # in place of your line: {why}" if line else None


def _deep_copy_of_the_cache(obj, result, renamed) -> str | None:
    """For a step whose cache is changed in place by later calls: its one line that copies the cache it
    is given only at the top (``replace(cache)``, ``copy.copy(cache)``: its lists are still the given
    ones), with ``copy.deepcopy(cache)``; else None."""
    code = getattr(obj, "__code__", None)
    if type(obj) is not types.FunctionType or code.co_argcount < 3:
        return None
    given, found = code.co_varnames[2], []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = ast.unparse(func) if func is not None else ""
            if name in ("replace", "dataclasses.replace", "copy.copy", "copy") and call.args \
                    and ast.unparse(call.args[0]) == given:
                line = ast.get_source_segment(source, node)
                found.append(line.replace(ast.get_source_segment(source, call), f"copy.deepcopy({given})", 1))
    line = the_one(found)
    if not line:
        return None
    imported = isinstance(obj.__globals__.get("copy"), types.ModuleType)
    return ("" if imported else "import copy; ") + line + "   # in place of your line: a copy whose lists " \
        "are new too, so the cache you were given stays as it was"


_SPLIT_SWAP = {"split": ("n_heads", "d_k"), "chunk": ("d_k", "n_heads")}
"""split takes the size of each piece, chunk the number of pieces: the one mistaken for the other."""


def _split_into_heads_of_d_k(obj, result, renamed) -> str | None:
    """For heads of n_heads features each (d_k heads): the learner's lines that cut the projections with
    ``torch.split(t, self.n_heads, dim=-1)`` (the size of a piece taken for their number) or
    ``t.chunk(self.d_k, -1)``, with the other size; one line for them all; else None."""
    found = []
    for source, node in _lines(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            swap = _SPLIT_SWAP.get(getattr(func, "attr", ""))
            module = isinstance(getattr(func, "value", None), ast.Name) and func.value.id == "torch"
            size = call.args[1 if module else 0] if swap and len(call.args) > (1 if module else 0) else None
            text = ast.unparse(size) if size is not None else ""
            if swap and text.endswith(swap[0]) and not text.endswith("n_kv_heads"):
                line, at = ast.get_source_segment(source, node), size.end_col_offset - node.col_offset
                found.append(line[:at - len(swap[0])] + swap[1] + line[at:])
                break
    return _your_lines(found, "split takes each piece's size, d_k; chunk takes how many, n_heads")


_POSITIONS = {"n", "t", "l", "length", "seq", "seq_len", "seqlen", "n_tokens", "tokens", "positions", "n_pos",
              "time", "steps"}
_BATCH = {"b", "batch", "bs", "batch_size", "n_batch", "nb"}


def swapped_unpack(obj) -> tuple | None:
    """``(line, fixed)`` for a forward that unpacks its input's shape positions first, ``length, batch,
    width = x.shape`` (x is (batch, n, d_model)), x not changed before: the line, and the line with the
    first two names the other way round; else None."""
    for source, node in _lines(obj):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        names = [e.id for e in target.elts] if isinstance(target, ast.Tuple) and all(
            isinstance(e, ast.Name) for e in target.elts) else []
        value = ast.unparse(node.value) if isinstance(node, ast.Assign) else ""
        if len(names) == 3 and value == "x.shape" and names[0].lower() in _POSITIONS \
                and names[1].lower() in _BATCH:
            line = ast.get_source_segment(source, node)
            return line, f"{names[1]}, {names[0]}, {names[2]} = x.shape"
    return None


def _batch_first(obj, result, renamed) -> str | None:
    """For a module whose forward unpacks x's shape positions first (:func:`swapped_unpack`): that line
    with the batch first, whatever the verdict's bug (the rest follows from it); else None."""
    found = swapped_unpack(obj) if result.checked == "check_multi_head" else None
    return found[1] + "   # in place of your line: x is (batch, n, d_model), the batch first" \
        if found else None


_NO_GRAD = ("torch.no_grad()", "torch.inference_mode()", "torch.no_grad", "torch.inference_mode")


def _no_decorator(obj, result, renamed) -> str | None:
    """For a function that blocks the gradient with a decorator (``@torch.no_grad()`` above its ``def``):
    its ``def`` line, to paste in place of the decorator and the ``def``; else None (a ``.detach()`` in a
    line, the catalog's line)."""
    for source, tree in parsed(obj):
        function = tree.body[0] if len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) else None
        blocking = [d for d in getattr(function, "decorator_list", []) if ast.unparse(d) in _NO_GRAD]
        if blocking:
            head = source.splitlines()[function.lineno - 1].strip()
            said = f"@{ast.unparse(blocking[0])} and {head.split('(')[0]}(...)"
            return (f"{head}   # in place of your lines {said}: no decorator, so that the output keeps its "
                    "graph and a backward pass reaches q, k and v")
    return None


def _projections_of_the_normed(obj, result, renamed) -> str | None:
    """For a step that projects the stream itself where the normed stream belongs: its lines that hand
    the stream to W_q, W_k or W_v (``W_k(stato)``), handing them the normed one (``W_k(normita)``), one
    line for them all; else None."""
    names = your_names(obj)
    stream, normed = names.get("x"), names.get("normed")
    if not (stream and normed) or stream == normed:
        return None
    found = []
    for source, node in _lines(obj):
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and getattr(c.func, "attr", "") in (
            "W_q", "W_k", "W_v") and len(c.args) == 1 and ast.unparse(c.args[0]) == stream]
        if calls:
            line = ast.get_source_segment(source, node)
            for call in calls:
                text = ast.get_source_segment(source, call)
                line = line.replace(text, text[: -len(stream) - 1] + normed + ")", 1)
            found.append(line)
    return _your_lines(found, f"W_q, W_k and W_v read {normed}, the normed stream; {stream} itself is for "
                              "the residual")


def _names_missing(obj, renamed) -> bool:
    """Whether the catalog's Fix, in the learner's names, assigns a name their code never has (``scores =
    ...`` for code of lambdas): then it has no line to take the place of."""
    try:
        node = ast.parse(renamed.split("   #")[0].strip()).body[0]
    except (SyntaxError, IndexError):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Name) and not names_a(t.id, obj) for t in targets)


def _transposes_first_two(node) -> bool:
    """Whether ``node`` is ``x.T``, ``x.t()`` or ``x.transpose(0, 1)`` (or ``(1, 0)``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "T"
    func = node.func if isinstance(node, ast.Call) else None
    if not isinstance(func, ast.Attribute):
        return False
    args = [ast.unparse(a) for a in node.args]
    return func.attr == "t" and not args or func.attr == "transpose" and args in (["0", "1"], ["1", "0"])


def _keys_transposed_from_the_end(obj, result, renamed) -> str | None:
    """For code right on 2-D inputs only, when the catalog's line names what the code does not have: the
    learner's one line that transposes with ``.T``, ``.t()`` or ``.transpose(0, 1)``, transposing the last
    two dimensions; else None."""
    if not _names_missing(obj, renamed):
        return None
    found = []
    for source, node in _lines(obj, with_helpers=True):
        inner = next((n for n in ast.walk(node) if _transposes_first_two(n)), None)
        if inner is not None:
            tensor = inner.value if isinstance(inner, ast.Attribute) else inner.func.value
            new = f"{ast.get_source_segment(source, tensor)}.transpose(-2, -1)"
            text = ast.get_source_segment(source, node)
            found.append(text.replace(ast.get_source_segment(source, inner), new, 1))
    line = the_one(found)
    return line + "   # in place of your line: the last two dimensions, whatever is before" if line else None


_SOFTMAX = ("softmax", "log_softmax")
_FUNCTIONAL = ("F", "torch", "nn.functional", "torch.nn.functional", "functional")


def _softmax_over_the_keys(obj, result, renamed) -> str | None:
    """For a softmax over another axis than the keys', when the catalog's line names what the code does
    not have: the learner's one line with a softmax, over the last dimension; else None."""
    if not _names_missing(obj, renamed):
        return None
    found = []
    for source, node in _lines(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _SOFTMAX:
                continue
            method = isinstance(func, ast.Attribute) and ast.unparse(func.value) not in _FUNCTIONAL
            kept = [ast.get_source_segment(source, k) for k in call.keywords if k.arg not in ("dim", "axis")]
            given = [] if method or not call.args else [ast.get_source_segment(source, call.args[0])]
            args = ", ".join(given + ["-1" if method else "dim=-1"] + kept)
            text = ast.get_source_segment(source, node)
            found.append(text.replace(ast.get_source_segment(source, call),
                                      f"{ast.get_source_segment(source, func)}({args})", 1))
            break
    line = the_one(found)
    return line + "   # in place of your line: over the keys, the last dimension" if line else None


def _chain(node):
    """``(base, parts, tupled)`` for an index chain of the learner's (``cache[i][0]``, ``kv[0, i]``,
    ``cache.keys[i]``): its base name, each index's node or ``('a', attribute)``, and whether it indexes
    with a tuple; else None."""
    parts, tupled = [], False
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute):
            parts.append(("a", node.attr))
        elif isinstance(node.slice, ast.Tuple):
            parts += reversed(node.slice.elts)
            tupled = True
        else:
            parts.append(node.slice)
        node = node.value
    return (node.id, parts[::-1], tupled) if isinstance(node, ast.Name) and parts else None


def _index_at(node, var: str, value: int):
    """An index of the learner's with ``var = value``: a number or a string (numbers, ``var``, + - *)."""
    if isinstance(node, tuple):                                   # an attribute
        return node
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return ("k", node.value) if isinstance(node.value, str) else ("i", node.value)
    if isinstance(node, ast.Name) and node.id == var:
        return ("i", value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _index_at(node.left, var, value), _index_at(node.right, var, value)
        if a and b and a[0] == b[0] == "i":
            return ("i", {ast.Add: a[1] + b[1], ast.Sub: a[1] - b[1], ast.Mult: a[1] * b[1]}[type(node.op)])
    return None


def _at_layers(chain, var: str) -> tuple | None:
    """The entry ``chain`` reads in layers 0 and 1 (``var``, the learner's layer index), or None."""
    at = tuple(tuple(_index_at(part, var, layer) for part in chain[1]) for layer in (0, 1))
    return None if any(None in parts for parts in at) else at


def _written(base: str, at: tuple, tupled: bool, var: str) -> str | None:
    """``base`` indexed as ``at`` gives layers 0 and 1, in the learner's style: ``kv[var, 0]``, ``cache[2 *
    var + 1]``; None when an index is not ``step * var + start``."""
    items = []
    for (kind, first), (_, second) in zip(*at, strict=True):
        if kind != "i" or first == second:
            items.append(("a", f".{first}") if kind == "a" else ("i", repr(first)))
            continue
        step = second - first
        if step <= 0:
            return None
        term = var if step == 1 else f"{step} * {var}"
        items.append(("i", term if first == 0 else f"{term} + {first}"))
    if tupled and all(kind == "i" for kind, _ in items):
        return f"{base}[{', '.join(text for _, text in items)}]"
    return base + "".join(text if kind == "a" else f"[{text}]" for kind, text in items)


_PART = re.compile(r"\[(-?\d+)\]|\[('[^']*'|\"[^\"]*\")\]|\.(\w+)")
_MISREAD = re.compile(r"layer (\d+) reads its cached (keys|values) from layer \d+'s (?:keys|values) "
                      r"\(([^)]*)\)")


def _path_parts(path: str) -> tuple:
    """A cache path as the decoding checker writes it (``cache[0][1]``, ``cache['k'][1]``) as indices."""
    return tuple(("i", int(i)) if i else ("k", ast.literal_eval(k)) if k else ("a", a)
                 for i, k, a in _PART.findall(path))


def _entries_read_right(obj, result, renamed) -> str | None:
    """For a cache read at the wrong index: the learner's lines that read the prefill's cache where
    another entry is (``kv[0, i]``, ``cache[i + 1]``), each index changed to where their prefill put that
    layer's keys or values, as the Fix says (``kv[i, 0]``, ``cache[2 * i + 1]``); else None."""
    var = your_names(obj).get("layer")
    try:
        fix = ast.parse(renamed.split("   #")[0]).body[0].value
    except (SyntaxError, AttributeError, IndexError):
        return None
    # cache[layer]: its keys at [0] and its values at [1]; else the two the Fix names
    fix = [ast.Subscript(fix, ast.Constant(kind)) for kind in (0, 1)] if isinstance(fix, ast.Subscript) else \
        getattr(fix, "elts", [])
    if not var or type(obj) is not types.FunctionType or obj.__code__.co_argcount < 3 or len(fix) != 2:
        return None
    right = [_at_layers(_chain(expr), var) if _chain(expr) else None for expr in fix]
    if None in right:
        return None
    misread = {(int(layer), ("keys", "values").index(kind)): _path_parts(path)
               for layer, kind, path in _MISREAD.findall(" ".join(result.observed))}
    read = [tuple(misread.get((layer, kind), right[kind][layer]) for layer in (0, 1)) for kind in (0, 1)]
    cache = {obj.__code__.co_varnames[2]}
    cache |= {n.targets[0].id for tree in trees(obj) for n in ast.walk(tree)     # kv = cache
              if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
              and isinstance(n.value, ast.Name) and n.value.id in cache}
    found = []
    for source, node in _lines(obj):
        line, inner = ast.get_source_segment(source, node), set()
        for expr in sorted(ast.walk(node), key=lambda n: -getattr(n, "col_offset", 0)):
            chain = _chain(expr) if isinstance(expr, ast.Subscript) and expr not in inner else None
            inner |= {n for n in ast.walk(expr) if n is not expr} if chain else set()
            at = _at_layers(chain, var) if chain and chain[0] in cache else None
            kind = next((k for k in (0, 1) if at and at == read[k] != right[k]), None)
            if kind is not None and (text := _written(chain[0], right[kind], chain[2], var)):
                start = expr.col_offset - node.col_offset
                line = line[:start] + text + line[start + len(ast.get_source_segment(source, expr)):]
        if line != ast.get_source_segment(source, node):
            found.append(line)
    return _your_lines(found, "each layer reads its own keys and values, where your prefill put them")


def _bug(*ids):
    return lambda result: result.bug in ids


RULES = (
    (lambda result: True, _batch_first),
    (_bug("gradient_blocked"), _no_decorator),
    (lambda result: "returned None" in result.headline, unreturned_fix),
    (lambda result: result.fix.startswith("run the cell that defines or imports "), _dangling),
    (lambda result: any("einsum(): the number of subscripts" in line for line in result.observed),
     _einsum_for_any_batch),
    (_bug("softmax_overflow"), _exp_of_the_row_less_its_largest),
    (_bug("dtype_changed"), _cast_dropped),
    (_bug("modifies_inputs"), _out_of_place),
    (_bug("cache_low_precision"), _full_precision_cache),
    (_bug("positions_not_advanced"), _each_token_at_its_position),
    (lambda result: result.headline.endswith("never uses self.W_v: in a backward pass it got no gradient."),
     _weights_times_values),
    (lambda result: "a head width that is a float" in result.headline, _whole_width),
    (lambda result: any("cannot be multiplied" in line or "Expected size for first two dimensions" in line
                        for line in result.observed), _keys_transposed),
    (_bug("scale_by_d_model", "wrong_scale"), _own_root),
    (_bug("cache_not_appended"), _returns_its_own_cache),
    (_bug("cache_not_appended"), _pointer_moved_on),
    (_bug("batch_one_only"), _keys_transposed_from_the_end),
    (_bug("softmax_sum_not_kept"), _sum_kept),
    (_bug("values_not_appended"), _joined_values_kept),
    (_bug("heads_merged_interleaved"), _stacked_heads_kept_whole),
    (_bug("cache_modified_in_place"), _deep_copy_of_the_cache),
    (_bug("heads_count_and_width_swapped"), _split_into_heads_of_d_k),
    (_bug("attention_norm_skipped"), _projections_of_the_normed),
    (_bug("softmax_wrong_axis"), _softmax_over_the_keys),
    (lambda result: any("in another arrangement: pieces joined" in line for line in result.observed),
     _joined_along_positions),
    (_bug("values_from_cached_keys"), _keys_stored_twice),
    (_bug("weights_not_normalised"), _softmax_not_its_log),
    (_bug("mask_transposed"), _mask_as_given),
    (_bug("weights_transposed"), _blend_over_the_keys),
    (lambda result: any("doesn't match the broadcast shape" in line for line in result.observed),
     _out_of_place_to_grow),
    (lambda result: result.headline.endswith("and wrong (or raised) whenever their numbers differ."),
     _count_from_the_keys),
    (_bug("cache_prepended"), _cached_first),
    (_bug("parallel_block"), _mlp_after_attention),
    (_bug("heads_merged_without_transpose"), _heads_transposed_back),
    (_bug("no_block_without_cache"), _every_block),
    (_bug("mask_replaced_by_causal"), _the_mask_given),
    (lambda result: "whenever no mask is given (mask=None)" in result.headline, _mask_only_when_given),
    (lambda result: "a linear layer got inputs of width" in result.headline, _heads_side_by_side),
    (_bug("cache_read_at_wrong_index"), _entries_read_right),
)
"""(applies, rewrite) pairs, in order: when ``applies(result)``, ``rewrite(obj, result, renamed)`` gives
the learner's line changed, or None."""
