"""A verdict's Fix as the learner's own line, changed, where the catalog's line would not fit their code.

The catalog's Fix lines are written in the exercises' names, and :mod:`._yournames` puts them in the
learner's. Some mistakes live in a line of a form the catalog cannot foresee: a scale handed to a
helper, a softmax written by hand in a helper, an einsum with every axis named, a cache returned
under the wrong name. For those, the Fix is the learner's own line with the one change in it, to
paste in its place, and its comment says so. Each rule below says when it applies (the verdict's
bug or what it observed) and rewrites one line read from the learner's code (:mod:`._readers`), or
gives None and the catalog's line stands. The rules for a decoding step's cache and stream are in
:mod:`._ownlines_step`, those for heads in :mod:`._ownlines_heads`; the table, and the rules for
scores, weights and masks, are here.
"""

from __future__ import annotations

import ast
import re
import types

from ._learner_lines import statements
from ._ownlines_heads import (
    blend_over_the_keys,
    heads_side_by_side,
    heads_transposed_back,
    repeated_interleaved,
    split_into_heads_of_d_k,
    split_then_transposed,
    stacked_heads_kept_whole,
    whole_width,
)
from ._ownlines_step import (
    along_the_positions,
    both_repeated,
    cached_first,
    causal_sized_by_your_call,
    deep_copy_of_the_cache,
    each_token_at_its_position,
    embedded_at_the_caches_length,
    entries_read_right,
    every_block,
    full_precision_cache,
    joined_along_positions,
    joined_values_kept,
    keys_first,
    keys_stored_twice,
    logits_of_every_token,
    mlp_after_attention,
    past_from_the_positions_axis,
    past_read_along_the_positions,
    pointer_moved_on,
    projected_without_repeat,
    projections_of_the_normed,
    repeated_after_caching,
    residual_to_the_stream,
    returns_its_own_cache,
    triangle_from_the_bottom_right,
    unembedded_once,
)
from ._readers import (
    assigned,
    cell_functions,
    cell_lines,
    names_a,
    one_line_statements,
    operands,
    parsed,
    returns_a_value,
    scores_of,
    the_one,
    trees,
    your_names,
)

__all__ = ["own_line_fix", "swapped_unpack", "unreturned_fix", "lengths_as_a_column", "elementwise_blend"]


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
        cache = your_names(obj).get("new_cache") or your_names(obj).get("made_cache")
        if result.checked == "check_decoding_step" and cache and cache != name:    # a step: (logits, cache)
            name = f"{name}, {cache}"
        return f"return {name}   # at the end of your function: without a return, it gives None"
    return None


def elementwise_blend(obj) -> str | None:
    """The learner's one line that multiplies their weights by a tensor entry by entry
    (``vazn.mul(arzesh)``, ``torch.mul(w, v)``, ``w * v``), as a matrix product (``vazn.matmul(arzesh)``,
    ``w @ v``); else None."""
    weights = your_names(obj).get("weights")
    found = []
    for source, node in statements(obj) if weights else ():
        line = ast.get_source_segment(source, node)
        for part in ast.walk(node):
            start = end = None
            if isinstance(part, ast.Call) and getattr(part.func, "attr", None) == "mul":
                first = part.func.value if part.args and len(part.args) == 1 else (part.args or [None])[0]
                if getattr(first, "id", None) == weights:
                    start = part.func.end_col_offset - len("mul") - node.col_offset
                    end, text = start + len("mul"), "matmul"
            elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mult) and \
                    getattr(part.left, "id", None) == weights:
                gap = ast.get_source_segment(source, node)[part.left.end_col_offset - node.col_offset:
                                                            part.right.col_offset - node.col_offset]
                start = part.left.end_col_offset - node.col_offset + gap.index("*")
                end, text = start + 1, "@"
            if start is not None:
                found.append(line[:start] + text + line[end:])
    return the_one(found)


def lengths_as_a_column(obj, result) -> str | None:
    """For a padding mask right for a batch of one only: its one line that makes the lengths a row
    (``lengths.unsqueeze(0)``, ``lengths[None, :]``, ``lengths.view(1, -1)``), with ``lengths[:, None]``,
    a column; else None. (The catalog's return line leaves that line in place, and it raises first.)"""
    code = getattr(obj, "__code__", None)
    if result.bug != "batch_one_only" or type(obj) is not types.FunctionType or code.co_argcount < 1:
        return None
    lengths, found = code.co_varnames[0], []
    for source, node in statements(obj):
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
    for source, node in statements(obj):
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
    for source, node in statements(obj, with_helpers=True):
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
    found = [(source, node, roots[0]) for source, node in statements(obj)
             if isinstance(node, simple) and len(roots := _roots(node)) == 1]
    if len(found) == 2 and (once := _scaled_once(obj, found)):
        return once
    if not (one := the_one(found)):
        return None
    source, node, root = one
    if isinstance(root, ast.Call) and getattr(root.func, "attr", "") in ("tensor", "as_tensor") and root.args:
        root = root.args[0]       # torch.sqrt(torch.tensor(k.shape[-2], ...)): torch.sqrt takes no int (02Z3)
    line, size = ast.get_source_segment(source, node), ast.get_source_segment(source, root)
    right = ast.unparse(wanted[0])
    if size is None or size == right or line.count(size) != 1:
        return None
    line, why = line.replace(size, right), f"the root of {right}, not {size}"
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args}
    target = node.target.id if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) else None
    if target in given and type(node.op) in _OPERATORS:
        # q *= s changes the caller's q (replay 19's 02V2 pasted it, and was told so the round after)
        value = ast.get_source_segment(line, ast.parse(line).body[0].value)
        sign = _OPERATORS[type(node.op)]
        why += f", and {target} {sign} ... (a new tensor): {target} {sign}= changed the caller's {target}"
        line = f"{target} = {target} {sign} ({value})"
    return line + f"   # in place of your line: {why}"


def _kept_anew(obj, result, renamed: str) -> str | None:
    """For state an earlier call left behind, where the learner's code sets something once and keeps it
    (``if self.maska_plote is None: self.maska_plote = torch.ones(n, n, dtype=torch.bool)``): that line
    alone, in place of the guard and it, so each call makes its own; else None (replay 20's 05W4)."""
    line = _root_kept(obj, result, renamed, scale=False)
    return line.replace("from its own d_k", "for its own sizes") if line else None


def _root_kept(obj, result, renamed: str, scale: bool = True) -> str | None:
    """For a scale of the wrong size where the learner's scale is set once and kept (``if self.scala is
    None: self.scala = 1.0 / math.sqrt(q.shape[-1])``, in their function or an object's method it calls):
    that line alone, in place of the guard and it, so each call takes its own d_k; else None. With
    ``scale`` False, any value set so (:func:`_kept_anew`)."""
    found = []
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            test = node.test if isinstance(node, ast.If) else None
            kept = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
                and ast.unparse(test.comparators[0]) == "None"
            body = node.body[0] if kept and len(node.body) == 1 and not node.orelse else None
            if isinstance(body, ast.Assign) and len(body.targets) == 1 and (_roots(body) or not scale) \
                    and ast.unparse(body.targets[0]) == ast.unparse(test.left):
                found.append((ast.get_source_segment(source, test), ast.get_source_segment(source, body)))
    if not (one := the_one(found)):
        return None
    guard, line = one
    return (f"{line}   # in place of your lines 'if {guard}:' and the one under it: set anew on each call, "
            "from its own d_k (kept, it stays the first call's)")


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


def _keys_transposed(obj, result, renamed) -> str | None:
    """For scores that multiply the queries by the keys as they are (``torch.matmul(q, k)``, which runs
    only when n_k equals d_k): the learner's one line that does, with the keys transposed; else None."""
    if type(obj) is not types.FunctionType or obj.__code__.co_argcount < 2:
        return None
    queries, keys = obj.__code__.co_varnames[:2]
    found = []
    for source, node in statements(obj):
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


def _out_of_reach(obj, result, renamed) -> str | None:
    """For a name a function of the learner's reads and has no value for, where another function of their
    cell has it (a parameter of my_attention read in a helper, a helper's own local read in the step: a
    pasted Fix line put it there, replay 23's 02Z1 and 08Z2): that it is theirs, whose, and to use the
    name this function has for it; else None (a notebook cell may define it: run it)."""
    name = result.fix[len("run the cell that defines or imports "):].split(" ")[0]
    where = next((found for line in result.observed if (found := re.search(r"\(in (\w+), line \d+\)", line))),
                 None)
    _, functions = cell_functions(obj)
    here = next((f for f in functions if where and f.name == where[1]), None)
    if here is None:
        return None

    def has(function):
        return name in {a.arg for a in function.args.args} | {
            n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    owner = next((f for f in functions if f is not here and has(f)), None)
    if owner is None or has(here):
        return None
    given = ", ".join(a.arg for a in here.args.args if a.arg != "self")
    return (f"in {here.name}, write the name it has for what {name} holds (its parameters: {given}), or hand "
            f"{name} in as an argument: {name} is {owner.name}'s own, and {here.name} cannot see it "
            "(no notebook cell is missing)")


def _scale_on_both_paths(obj, result, renamed) -> str | None:
    """For a scale right on one path through the learner's code and wrong on the other (the verdict
    says which: an early return when no mask is given, say), where the scores are made on one line and
    scaled on one other: with the scores made unscaled, the scale moved onto the line that makes them
    and taken off the other; with the scores made scaled and scaled again on one path, that path's line
    without its second scale. Else None. Read from every function of the learner's cell (a static method
    of a class of theirs among them). Replay 19's 02V3 was given the catalog's scores line in its names,
    pasted it over their own and so scaled the other path twice; then was given the same line again."""
    twice = any("divides the scores by √d_k twice" in line for line in result.observed)
    if not twice and not any("does not scale the scores at all" in line for line in result.observed):
        return None
    text, functions = cell_functions(obj)
    lines = [node for function in functions for node in ast.walk(function)
             if isinstance(node, ast.stmt) and not isinstance(node, (ast.If, ast.For, ast.While, ast.With,
                                                                     ast.FunctionDef))
             and node.lineno == node.end_lineno]
    if not (made := the_one([node for node in lines if assigned(node) and scores_of(node.value)])):
        return None
    scores = assigned(made)
    rooted = {function.name for function in functions if _roots(function)} | \
        {name for node in lines if (name := assigned(node)) and _roots(node.value)}

    def a_scale(node) -> bool:
        return bool(_roots(node)) or any(
            isinstance(n, ast.Name) and n.id in rooted or isinstance(n, ast.Attribute) and n.attr in rooted
            for n in ast.walk(node))

    def scaling(node):              # scores * s, scores / s, s * scores: the scale's node, else None
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Div, ast.Mult)):
            return None
        if isinstance(node.left, ast.Name) and node.left.id == scores and a_scale(node.right):
            return node.right
        mult = isinstance(node.op, ast.Mult) and isinstance(node.right, ast.Name) and node.right.id == scores
        return node.left if mult and a_scale(node.left) else None

    sites = [(node, part, scale) for node in lines if node is not made
             for part in ast.walk(node) if (scale := scaling(part)) is not None]
    if not (site := the_one(sites)) or a_scale(made.value) != twice:
        return None
    node, part, scale = site
    segment = ast.get_source_segment
    cut = segment(text, node).replace(segment(text, part), scores, 1)
    if twice:
        return (f"{cut}   # in place of your line: the scores are scaled where they are made already; "
                "scaled here again, they are divided by d_k")
    value, written = segment(text, made.value), segment(text, scale)
    if isinstance(made.value, ast.BinOp) and not isinstance(made.value.op, (ast.MatMult, ast.Mult, ast.Div)):
        value = f"({value})"
    if isinstance(scale, ast.BinOp):
        written = f"({written})"
    op = "/" if isinstance(part.op, ast.Div) else "*"
    scaled = segment(text, made).replace(segment(text, made.value), f"{value} {op} {written}", 1)
    return (f"{scaled}; {cut}   # in place of your two lines: the first where the scores are made, scaled "
            "there for both paths; the second where one path scaled them, now not again")


_CASTS = {"float", "double", "half", "bfloat16"}


def _cast_dropped(obj, result, renamed) -> str | None:
    """For an output or a step in another dtype than the inputs': the learner's one line that casts
    (``scores.float().softmax(-1)``, ``x.to(torch.float32)``), without the cast; else None (then the
    dtype comes from a tensor built inside their code, which the catalog's line is about). Where two or
    three lines cast (a replay's softmax of ``scores.double()``, then ``weights @ v.double()``), the first
    without its cast, and the others named: one cast taken out alone makes the product mix two dtypes."""
    found = []
    for source, node in statements(obj):
        line = original = ast.get_source_segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            to_float = isinstance(func, ast.Attribute) and func.attr == "to" and len(call.args) == 1 \
                and not call.keywords and ast.unparse(call.args[0]).startswith("torch.float")
            if isinstance(func, ast.Attribute) and (func.attr in _CASTS and not call.args or to_float):
                receiver = ast.get_source_segment(source, func.value)
                simple = isinstance(func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                if not simple and call is not getattr(node, "value", None):    # (a @ b).float() * 2
                    receiver = f"({receiver})"
                line = line.replace(ast.get_source_segment(source, call), receiver, 1)
        if line != original:
            found.append((line, original, _does_nothing(line)))
    if not found or len(found) > 3:
        return None
    kept = [f for f in found if not f[2]]
    gone = [f"'{original}'" for _, original, nothing in found if nothing]   # q, k, v = q.double(), ...
    out = f"take out your line {' and '.join(gone)}" if gone else ""
    if not kept:
        return out + ": with no cast, all stays in the inputs' dtype"
    also = "; take the cast out of " + " and ".join(f"'{o}'" for _, o, _ in kept[1:]) + " as well" \
        if kept[1:] else ""
    return kept[0][0] + "   # in place of your line: no cast, so all stays in the inputs' dtype" + also + \
        (f"; {out}" if out else "")


_MINUS_INF = {"float('-inf')", "-float('inf')", "-math.inf", "-torch.inf", "-np.inf", "-numpy.inf",
              "float('-Infinity')", "-float('Infinity')", "torch.tensor(float('-inf'))"}


def _fill_finite(obj, result, renamed) -> str | None:
    """For a fill of -inf (NaN on a fully masked row): the learner's one line that masks its scores with
    -inf (``skorlar.masked_fill(~maske, float("-inf"))``), with the scores' dtype's own minimum in its
    place; else None. Replay 19's 05V2 was given the catalog's line in the names of forward (``~mask``),
    for a line in a helper whose mask is ``maske``: a NameError, then two rounds more."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in ("masked_fill", "masked_fill_") and \
                    len(call.args) == 2 and ast.unparse(call.args[1]) in _MINUS_INF and \
                    isinstance(func.value, ast.Name | ast.Attribute):
                scores = ast.get_source_segment(source, func.value)
                fill = ast.get_source_segment(source, call.args[1])
                line = ast.get_source_segment(source, node)
                if line.count(fill) == 1:
                    found.append(line.replace(fill, f"torch.finfo({scores}.dtype).min"))
    line = the_one(found)
    return line + "   # in place of your line: the dtype's own minimum, not -inf (a fully masked row " \
        "then gets no NaN)" if line else None


def _fill_not_added(obj, result, renamed) -> str | None:
    """For a fill float16 cannot hold where the learner's mask is added to the scores (``dagdag =
    dagdag.masked_fill(~takip, torch.finfo(puntos.dtype).min)``, then ``softmax(puntos + dagdag)``:
    float16's minimum added to a negative score is -inf): the line that adds it, with the scores filled
    there in place of the sum; else None. Replay 19's 02V3 was given ``scores = scores.masked_fill(~mask,
    ...)`` for code with neither name, inside a static method (and ``scores`` was a global of the
    notebook's, so the line would have run on it)."""
    text, functions = cell_functions(obj)
    lines = [node for function in functions for node in ast.walk(function)
             if isinstance(node, ast.stmt) and node.lineno == node.end_lineno]
    fills = {}                          # the name a masked_fill is assigned to: (its mask, its call)
    for node in lines:
        value = getattr(node, "value", None)
        func = value.func if isinstance(value, ast.Call) else None
        if assigned(node) and isinstance(func, ast.Attribute) and func.attr == "masked_fill" \
                and len(value.args) == 2:
            fills[assigned(node)] = value.args[0]
    scores = {assigned(node) for node in lines if assigned(node) and scores_of(node.value)}
    found = []
    for node in lines:
        for part in ast.walk(node):
            if not (isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add)):
                continue
            pair = [ast.unparse(part.left), ast.unparse(part.right)]
            added = [name for name in pair if name in fills]
            kept = [name for name in pair if name in scores]
            if len(added) == 1 and len(kept) == 1:
                mask = ast.get_source_segment(text, fills[added[0]])
                filled = f"{kept[0]}.masked_fill({mask}, torch.finfo({kept[0]}.dtype).min)"
                line = ast.get_source_segment(text, node)
                found.append(line.replace(ast.get_source_segment(text, part), filled, 1))
    line = the_one(found)
    return line + "   # in place of your line: the blocked scores filled with the dtype's minimum, not " \
        "that minimum added to them (in float16 the sum of two large negatives is -inf)" if line else None


def _does_nothing(line: str) -> bool:
    """Whether a line, its casts taken out, only assigns names their own values (``q, k, v = q, k, v``)."""
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, IndexError):
        return False
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
        ast.unparse(node.targets[0]) == ast.unparse(node.value)


def _out_of_place(obj, result, renamed) -> str | None:
    """For a function that changes its inputs in place: its one line that calls an in-place method
    (``q.div_(s)``, ``mask.masked_fill_(...)``) on one of its parameters, calling the method that
    returns a new tensor instead, or that assigns to one in place (``q /= s``: ``q = q / s``) (kept
    under the parameter's name when the call is the whole line:
    ``mask = mask.logical_not()``); else None."""
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args} - {"self"}
    found = []
    for source, node in statements(obj):
        line = ast.get_source_segment(source, node)
        augmented = isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
        target = node.target.id if augmented else None
        if target in given and type(node.op) in _OPERATORS:             # q /= s -> q = q / s
            value = ast.get_source_segment(source, node.value)
            found.append(f"{target} = {target} {_OPERATORS[type(node.op)]} {value}")
            continue
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


_OPERATORS = {ast.Div: "/", ast.Mult: "*", ast.Add: "+", ast.Sub: "-", ast.MatMult: "@"}


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
    for source, node in statements(obj):
        for inner in ast.walk(node):
            pair = operands(inner, calls=("matmul", "bmm"))
            left, right = pair if pair else (None, None)
            if isinstance(left, ast.Name) and left.id == weights and isinstance(right, ast.Name) \
                    and right.id != values:
                line, at = ast.get_source_segment(source, node), pair[1].col_offset - node.col_offset
                found.append(line[:at] + values + line[at + len(pair[1].id):])
    line = the_one(found) if weights and values else None
    return line + f"   # in place of your line: the weights times the values, {values}" if line else None


def _sum_kept(obj, result, renamed) -> str | None:
    """For a softmax by hand whose row sums lose their axis: the learner's one line (in a helper too, a
    return line there) that divides by a ``.sum(...)`` without ``keepdim``, with ``keepdim=True``; else
    None."""
    found = []
    for source, node in statements(obj, with_helpers=True):
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


def _no_mask_made_causal(obj, result, renamed) -> str | None:
    """For a causal mask applied when none is given, made in the learner's own ``if mask is None: mask =
    ...`` (a registered tril buffer, say): the catalog's guarded fill in their names, and those two lines
    left out; with them kept, the guard is always true (replay 22's 05Y3). Else None."""
    made = []
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            body = node.body if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 else []
            test = ast.get_source_segment(source, node.test) if body else ""
            if body and test.replace(" ", "") == "maskisNone" and assigned(body[0]) == "mask":
                made.append((test, ast.get_source_segment(source, body[0])))
    fill = [ast.get_source_segment(source, node) for source, node, _ in _with_a_mask(obj)
            if any(isinstance(c, ast.Call) and getattr(c.func, "attr", "") in ("masked_fill", "masked_fill_")
                   for c in ast.walk(node)) and _reads_mask(node)]
    found, line = the_one(made), the_one(fill)
    if not (found and line and renamed.startswith("if mask is not None: ")):
        return None
    code = renamed.split("   #")[0]
    return (f"{code}   # in place of your line {line}; and leave out your lines 'if {found[0]}:' and "
            f"'{found[1]}': mask=None means nothing is blocked")


def _mask_only_when_given(obj, result, renamed) -> str | None:
    """For a function that raises whenever it is given no mask: its one line that reads the mask outside
    an ``if`` on it, under ``if mask is not None:``; else None."""
    found = [ast.get_source_segment(source, node) for source, node, guarded in _with_a_mask(obj)
             if not guarded and _reads_mask(node) and not _passes_mask_on(node)]
    line = the_one(found)
    return f"if mask is not None: {line}   # in place of your line: mask=None means nothing is blocked" \
        if line else None


def _count_from_the_keys(obj, result, renamed) -> str | None:
    """For sizes read from the queries where the keys' belong: the learner's one line that reads the
    same size of the queries twice (``L, S = q.size(-2), q.size(-2)``), its second read from the keys;
    else None."""
    code = getattr(obj, "__code__", None)
    if type(obj) is not types.FunctionType or code.co_argcount < 2:
        return None
    queries, keys = code.co_varnames[:2]
    found = []
    for source, node in statements(obj):
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
    for source, node in statements(obj):
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


def _turned(node):
    """What ``node`` turns (``m`` of ``~m``, ``m.logical_not()``, ``torch.logical_not(m)``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return node.operand
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "logical_not":
        return func.value if not node.args else node.args[0] if len(node.args) == 1 else None
    return None


def _mask_kept_as_given(obj, result, renamed) -> str | None:
    """For a mask used the wrong way round where the learner's code turns it into a name of its own that
    it hands to F.scaled_dot_product_attention (``masc = ~mask``, then ``attn_mask=masc``, as
    nn.MultiheadAttention's masks read): that line, the mask kept as given (``masc = mask``); else None
    (replay 18's 05U3: the Fix was a call to F.scaled_dot_product_attention with no name for its result)."""
    handed = set()
    for _, tree in parsed(obj, with_helpers=True):
        for call in ast.walk(tree):
            if isinstance(call, ast.Call):
                given = [k.value for k in call.keywords if k.arg == "attn_mask"]
                handed |= {g.id for g in given if isinstance(g, ast.Name)}
    found = set()
    for source, node in statements(obj, with_helpers=True):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        value = node.value if target is not None else None
        if isinstance(value, ast.IfExp):      # maske = None if mask is None else ~mask (replay 23's 05Z3)
            value = value.orelse if ast.unparse(value.body) == "None" else \
                value.body if ast.unparse(value.orelse) == "None" else value
        turned = _turned(value) if value is not None else None
        # ~mask, or ~mask[None, None] (replay 20's 05W3: the Fix was the call the mask is handed to)
        if isinstance(target, ast.Name) and target.id in handed and \
                isinstance(turned, ast.Name | ast.Subscript | ast.Attribute):
            found.add((f"{target.id} = {ast.get_source_segment(source, turned)}",
                       ast.get_source_segment(source, node)))
    line, theirs = the_one(list(found)) or (None, None)
    return (f"{line}   # in place of your line {theirs}: the mask as given, True = may attend, for "
            "F.scaled_dot_product_attention as for this course") if line else None


def _mask_turned(obj, result, renamed) -> str | None:
    """For a mask used the wrong way round, where the catalog's line names scores the learner's function
    does not have (their masking in a helper: ``return alama.masked_fill(kinyago, fill)``): their one line
    that hands a mask to ``masked_fill`` or ``attn_mask=``, the mask turned (``~kinyago``; ``m`` for
    ``~m``); else None."""
    target = renamed.split(" = ", 1)[0]
    if not target.isidentifier() or names_a(target, obj) and _masks_itself(obj):
        return None
    found = {}
    for source, _, node in one_line_statements(obj, with_helpers=True):
        line = ast.get_source_segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = getattr(func, "attr", getattr(func, "id", ""))
            handed = [k.value for k in getattr(call, "keywords", []) if k.arg == "attn_mask"]
            handed += call.args[:1] if name in ("masked_fill", "masked_fill_") and call.args else []
            for mask in handed:
                if isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert):
                    turned = ast.get_source_segment(source, mask.operand)
                elif isinstance(mask, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                    turned = "~" + ast.get_source_segment(source, mask)
                else:
                    continue
                start, end = mask.col_offset - node.col_offset, mask.end_col_offset - node.col_offset
                found[(source, node.lineno)] = line[:start] + turned + line[end:]
    line = the_one(list(found.values()))
    return line + "   # in place of your line: True = may attend, so block where the mask is False" if line \
        else None


def _masks_itself(obj) -> bool:
    """Whether the learner's function (not a helper it calls) hands a mask to masked_fill, torch.where or
    ``attn_mask=``: where it does not, its scores are masked in a helper, and a Fix line on its scores
    has no line to take the place of (replay 16's 02T1, once its scores, made by a helper too, were
    named: replay 22's 02Y1)."""
    for _, tree in parsed(obj):
        for call in ast.walk(tree):
            func = call.func if isinstance(call, ast.Call) else None
            if getattr(func, "attr", getattr(func, "id", "")) in ("masked_fill", "masked_fill_", "where") or \
                    any(k.arg == "attn_mask" for k in getattr(call, "keywords", [])):
                return True
    return False


def _filled_where_true(obj, result, renamed) -> str | None:
    """For code wrong only where a mask is given, matching no known bug (the mask the wrong way round and
    another mistake at once: replay 23's 02Z1, with a scale kept from the first call): the learner's one
    line that fills where the mask is True, filling where it is False, as :func:`_mask_turned` gives it;
    else None. Not where their line fills where it is False already: then the mask is not what is wrong."""
    line = _mask_turned(obj, result, "scores = ")
    if line is None or "~" not in line.split("   #")[0]:
        return None
    return line + " (and the other mistake the lines above point at)"


_TO_ATTEND = ("decoding_mask", "tril")
"""Calls whose mask is True where a query may attend: ``gpt.decoding_mask(...)``, ``...tril(...)``."""


def _made_to_attend(node) -> bool:
    """Whether ``node`` is a call to one of :data:`_TO_ATTEND` (``gpt.decoding_mask(n, t)``,
    ``torch.ones(n, n, dtype=torch.bool).tril()``, ``torch.tril(...)``)."""
    func = node.func if isinstance(node, ast.Call) else None
    return getattr(func, "attr", getattr(func, "id", None)) in _TO_ATTEND


def _attend_mask_filled(obj, result, renamed) -> str | None:
    """For NaN everywhere and no known bug: the learner's one line that fills where a mask made True = may
    attend is True (``ocene.masked_fill_(maska, float("-inf"))``, ``maska = gpt.decoding_mask(...)``),
    the mask turned (``~maska``); else None. With a -inf fill every variant of a turned mask is NaN too,
    so none matches (replay 17's 08T4: the Fix was the whole recipe)."""
    made = set()
    lines = list(one_line_statements(obj, with_helpers=True))
    for _, _, node in lines:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _made_to_attend(node.value):
            made.add(node.targets[0].id)
    found = set()
    for source, _, node in lines:
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if not (getattr(func, "attr", None) in ("masked_fill", "masked_fill_") and call.args):
                continue
            mask = call.args[0]
            if isinstance(mask, ast.Name) and mask.id in made or _made_to_attend(mask):
                line = ast.get_source_segment(source, node)
                start, end = mask.col_offset - node.col_offset, mask.end_col_offset - node.col_offset
                found.add(line[:start] + "~" + ast.get_source_segment(source, mask) + line[end:])
    line = the_one(list(found))
    return (f"{line}   # in place of your line: the mask is True where a query may attend, so fill where it "
            "is False; filling where it is True blocked every key a query may see, and a query that may "
            "see them all had none left (NaN)") if line else None


_FLOAT32 = {"torch.float32", "torch.float", "float32"}
_BUILDERS = ("zeros", "ones", "empty", "full")


def _without(line: str, node, part, before) -> str:
    """``line`` (``node``'s text) without ``part`` and the comma after ``before``, the argument ahead."""
    return line[:before.end_col_offset - node.col_offset] + line[part.end_col_offset - node.col_offset:]


def _in_their_own_dtype(obj, result, renamed) -> str | None:
    """For a dtype changed where no line casts (:func:`_cast_dropped`): the learner's one softmax that makes
    float32 (``dtype=torch.float32``), without it; else their one ``torch.zeros(...)`` (ones, empty, full)
    with no dtype and no mask in its line, given their first input's (``dtype=x.dtype``). Else None. The
    catalog's masked_fill line named no line of theirs (replay 18's 02U2: told to mask again; 05U4: an
    output buffer). An additive mask's line keeps the catalog's."""
    casts, builds = set(), set()
    for source, tree in parsed(obj, with_helpers=True):
        function = tree.body[0] if len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) else None
        inputs = [a.arg for a in function.args.args if a.arg != "self"] if function else []
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt) or node.lineno != node.end_lineno or isinstance(
                    node, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef)):
                continue
            line = ast.get_source_segment(source, node)
            for call in ast.walk(node):
                func = call.func if isinstance(call, ast.Call) else None
                name = getattr(func, "attr", getattr(func, "id", None))
                typed = [k for k in getattr(call, "keywords", []) if k.arg == "dtype"]
                cast = [k for k in typed if ast.unparse(k.value) in _FLOAT32]
                built = name in _BUILDERS and ast.unparse(getattr(func, "value", func)) == "torch"
                if cast and name in ("softmax", "log_softmax"):
                    others = [*call.args, *call.keywords]
                    at = others.index(cast[0])
                    if at:
                        casts.add(_without(line, node, cast[0], others[at - 1]))
                elif built and call.args and inputs and not typed and not _masking(node):
                    end = call.end_col_offset - node.col_offset - 1            # before its closing bracket
                    builds.add(line[:end] + f", dtype={inputs[0]}.dtype" + line[end:])
    if casts:
        line = the_one(list(casts))
        return line + "   # in place of your line: no dtype=, so the softmax keeps the inputs' dtype" \
            if line else None
    line = the_one(list(builds)) if result.checked != "check_decoding_step" else None
    return line + f"   # in place of your line: {_BUILT}, so it meets float64 or float16 work in theirs" \
        if line else None


_BUILT = "built in your input's dtype (float32 by default)"


def _masking(node) -> bool:
    """Whether a statement names a mask (``torch.zeros(mask.shape).masked_fill(...)``): an additive mask,
    whose Fix is the catalog's, masking the scores in their own dtype."""
    return any("mask" in (getattr(n, "id", None) or getattr(n, "attr", None) or "") for n in ast.walk(node))


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
    lines = [*statements(obj, with_helpers=True), *cell_lines(obj)]
    found = {ast.get_source_segment(source, node) for source, node in lines
             if any(isinstance(n, ast.Attribute) and n.attr == "log_softmax" for n in ast.walk(node))}
    line = the_one(sorted(found))
    why = "softmax gives weights that sum to 1; log_softmax gives their logarithms"
    return line.replace("log_softmax", "softmax") + f"   # in place of your line: {why}" if line else None


"""split takes the size of each piece, chunk the number of pieces: the one mistaken for the other."""


_POSITIONS = {"n", "t", "l", "length", "seq", "seq_len", "seqlen", "n_tokens", "tokens", "positions", "n_pos",
              "time", "steps"}
_BATCH = {"b", "batch", "bs", "batch_size", "n_batch", "nb"}


def swapped_unpack(obj) -> tuple | None:
    """``(line, fixed)`` for a forward that unpacks its input's shape positions first, ``length, batch,
    width = x.shape`` (x is (batch, n, d_model)), x not changed before: the line, and the line with the
    first two names the other way round; else None."""
    for source, node in statements(obj):
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


def _no_grad_block(obj, result, renamed) -> str | None:
    """For a function that blocks the gradient inside ``with torch.no_grad():`` (or inference_mode): that
    ``with`` line left out, its lines moved one indent to the left; else None. Replay 23's 02Z3 was given
    its softmax line twice, 'no .detach(), torch.no_grad() ...', and the with stayed."""
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and len(node.items) == 1 and \
                    ast.unparse(node.items[0].context_expr) in _NO_GRAD:
                head = f"with {ast.get_source_segment(source, node.items[0].context_expr)}:"
                return (f"leave out your line {head} and move the lines under it one indent to the left   # "
                        "no_grad stops the gradient: the output keeps no graph, and a backward pass never "
                        "reaches q, k and v")
    return None


def _dropout_only_in_training(obj, result, renamed) -> str | None:
    """For dropout left on where the learner hands F.scaled_dot_product_attention a ``dropout_p`` (which
    .eval() does not turn off: replay 23's 05Z3 wrote it for that reason): that line with the rate given
    only while training; else None."""
    found = []
    nodes = [(source, node) for source, tree in parsed(obj) for node in ast.walk(tree)
             if isinstance(node, (ast.Assign, ast.Return, ast.Expr))]
    for source, node in nodes:                              # on one line or several
        for call in ast.walk(node):
            rate = next((k.value for k in getattr(call, "keywords", []) if k.arg == "dropout_p"), None)
            if rate is None or isinstance(rate, ast.IfExp) or ast.unparse(rate) in ("0", "0.0"):
                continue
            text = re.sub(r"\s*\n\s*", " ", ast.get_source_segment(source, node))
            said = ast.get_source_segment(source, rate)
            where = "line" if node.lineno == node.end_lineno else f"{node.end_lineno - node.lineno + 1} lines"
            found.append((text.replace(f"dropout_p={said}", f"dropout_p={said} if self.training else 0.0", 1),
                          where))
    line, where = the_one(found) or (None, None)
    return (line + f"   # in place of your {where}: dropout_p is not turned off by .eval(); the module's "
            "training flag is") if line and type(obj) is type else None


def _names_missing(obj, renamed) -> bool:
    """Whether the catalog's Fix, in the learner's names, assigns a name their code never has (``scores =
    ...`` for code of lambdas): then it has no line to take the place of."""
    try:
        node = ast.parse(renamed.split("   #")[0].strip()).body[0]
    except (SyntaxError, IndexError):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Name) and not names_a(t.id, obj) for t in targets)


def _repeated_in_their_lines(obj, result, renamed) -> str | None:
    """:func:`repeated_interleaved`, where the catalog's line (``key, value = key.repeat_interleave(...),
    ...``, in the learner's names) sets a name their code does not have (their repeat in a helper of
    theirs); else None (the catalog's line fits)."""
    try:
        node = ast.parse(renamed.split("   #")[0].strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    targets = [e for t in getattr(node, "targets", []) for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    missing = any(isinstance(t, ast.Name) and not names_a(t.id, obj) for t in targets)
    own = repeated_interleaved(obj, result, renamed)
    # or names their code has, set by the lines that repeat: k_rep = k.unsqueeze(1).expand(...).reshape(...)
    # was given k_rep = k_rep.repeat_interleave(...), the tiled heads repeated again (replay 22's 08Y2)
    theirs = own and any(isinstance(t, ast.Name) and (own.startswith(f"{t.id} = ") or f"; {t.id} = " in own)
                         for t in targets)
    return own if missing or theirs else None


def _transposes_first_two(node) -> bool:
    """Whether ``node`` is ``x.T``, ``x.t()`` or ``x.transpose(0, 1)`` (or ``(1, 0)``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "T"
    func = node.func if isinstance(node, ast.Call) else None
    if not isinstance(func, ast.Attribute):
        return False
    args = [ast.unparse(a) for a in node.args]
    return func.attr == "t" and not args or func.attr == "transpose" and args in (["0", "1"], ["1", "0"])


def _mask_broadcast_before_the_loop(obj, result, renamed) -> str | None:
    """For code wrong only on inputs with a mask, that indexes the mask by its loop's batch index
    (``for b in range(q.shape[0]): ... mask[b]``): a line to put before that loop, broadcasting the
    mask to the scores' shape, so that ``mask[b]`` reads a batch axis a mask that broadcasts ((n_q, n_k),
    or (batch, 1, 1, n_k) over the heads) does not have; else None."""
    found = set()
    for _, tree in parsed(obj, with_helpers=True):
        function = tree.body[0] if len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) else None
        given = [a.arg for a in function.args.args if a.arg != "self"] if function else []
        if len(given) != 4:
            continue
        q, k, _, mask = given
        loops = [n for n in ast.walk(function) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
        for loop in loops:
            index = loop.target.id
            if any(isinstance(n, ast.Subscript) and ast.unparse(n.value) == mask
                   and ast.unparse(n.slice) == index for n in ast.walk(loop)):
                found.add((q, k, mask, index))
    if len(found) != 1:
        return None
    q, k, mask, index = found.pop()
    return (f"if {mask} is not None: {mask} = {mask}.expand(*{q}.shape[:-1], {k}.shape[-2])   # above your "
            f"loop: {mask}[{index}] reads a batch axis that a mask which broadcasts ((n_q, n_k), or one axis "
            "of size 1 for the heads) does not have; expanded to the scores' shape, it has it")


def _transposed_from_the_end(obj) -> str | None:
    """The learner's one line (in their function or a helper) that transposes with ``.T``, ``.t()`` or
    ``.transpose(0, 1)``, transposing the last two dimensions instead; else None."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        inner = next((n for n in ast.walk(node) if _transposes_first_two(n)), None)
        if inner is not None:
            tensor = inner.value if isinstance(inner, ast.Attribute) else inner.func.value
            new = f"{ast.get_source_segment(source, tensor)}.transpose(-2, -1)"
            text = ast.get_source_segment(source, node)
            found.append(text.replace(ast.get_source_segment(source, inner), new, 1))
    return the_one(found)


def _keys_transposed_from_the_end(obj, result, renamed) -> str | None:
    """For code right on 2-D inputs only, when the catalog's line names what the code does not have: its
    line that transposes the first two dimensions, transposing the last two; else None."""
    line = _transposed_from_the_end(obj) if _names_missing(obj, renamed) else None
    return line + "   # in place of your line: the last two dimensions, whatever is before" if line else None


def _raised_on_a_reversed_transpose(obj, result, renamed) -> str | None:
    """For code that raised a size mismatch and was told only to call it by hand: its line that transposes
    with ``.T`` (on a (2, 3, 6, 16) tensor it reverses every axis), transposing the last two; else None."""
    sizes = ("must match the size of tensor", "cannot be multiplied", "Expected size for first two")
    if not any(said in line for line in result.observed for said in sizes):
        return None
    line = _transposed_from_the_end(obj)
    why = (".T reverses every axis of a tensor with more than two (a batch, heads); transpose(-2, -1) swaps "
           "the last two, whatever is before")
    return f"{line}   # in place of your line: {why}" if line else None


def _first_axis_of(node, given: set) -> str | None:
    """``q`` for ``range(q.shape[0])``, ``range(q.size(0))``, ``range(len(q))`` with q a parameter; else
    None."""
    if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "range" and len(node.args) == 1):
        return None
    text = ast.unparse(node.args[0])
    found = re.fullmatch(r"(\w+)\.shape\[0\]|(\w+)\.size\(0\)|len\((\w+)\)", text)
    name = next((group for group in found.groups() if group), None) if found else None
    return name if name in given else None


def _loop_over_the_first_axis(obj, result, renamed) -> str | None:
    """For code that raised on an input with no batch axis (q of two axes) and was told only to call it by
    hand, where it loops over its first axis (``for b in range(q.shape[0])``): a Fix that says so, and
    that the loop is not needed; else None. Replay 19's 02V4 was shown the error of the line it reached,
    with nothing on the loop that sent one query's row there."""
    first = next(iter(result.observed), "")
    if not re.search(r"\(q \(\d+, \d+\),", first):
        return None
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args}
    loops = [(ast.unparse(node.target), ast.unparse(node.iter), name)
             for tree in trees(obj) for node in ast.walk(tree)
             if isinstance(node, ast.For) and (name := _first_axis_of(node.iter, given))]
    if not (one := the_one(loops)):
        return None
    index, over, name = one
    return (f"take out the loop 'for {index} in {over}' and work on the whole tensors: "
            f"it reads {name}'s first axis as a batch, and an input without one (a single sequence) has "
            f"its queries there, so {name}[{index}] is one query's row. Written with transpose(-2, -1) and "
            "dim=-1, the six lines work on every axis in front at once")


def _width_from_the_values(obj, result, renamed) -> str | None:
    """For a width read from q or k where v's belongs: the learner's one view or reshape whose last size is
    d_k (``q.shape[-1]``, or a name set from it: ``hasil.view(*depan, n_q, d_k)``), with v's width in its
    place; else None."""
    functions = [f for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    given = [a.arg for a in functions[0].args.args] if functions else []
    if len(given) < 3:
        return None
    q, k, v = given[:3]
    widths = {f"{q}.shape[-1]", f"{k}.shape[-1]", f"{q}.size(-1)", f"{k}.size(-1)"}
    for _, node in statements(obj):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        tuples = isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
        pairs = zip(target.elts, value.elts, strict=False) if tuples else [(target, value)]
        widths |= {n.id for n, made in pairs if isinstance(n, ast.Name) and ast.unparse(made) in widths}
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in ("view", "reshape") and call.args \
                    and ast.unparse(call.args[-1]) in widths and ast.unparse(func.value) not in (q, k):
                line = ast.get_source_segment(source, node)
                last = ast.get_source_segment(source, call.args[-1])
                cut = call.args[-1].col_offset - node.col_offset
                found.append(line[:cut] + f"{v}.shape[-1]" + line[cut + len(last):])
    line = the_one(found)
    return line + f"   # in place of your line: the output is as wide as {v} (d_v), not {q} and {k} (d_k)" \
        if line else None


def _mask_broadcast_before_it_is_flattened(obj, result, renamed) -> str | None:
    """For code that raised and was told only to call it by hand, where it flattens or reshapes the mask
    it was given as it is (``topeng = mask.flatten(0, -3)``, written for scores flattened to (B, n_q,
    n_k)): that line with the mask broadcast to the scores' shape first; else None. A (4, 6) mask for a
    batch of heads has no axes in front to flatten (replay 20's 02W3)."""
    functions = [f for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    given = [a.arg for a in functions[0].args.args] if functions else []
    if len(given) < 4:
        return None
    q, k, mask = given[0], given[1], given[3]
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in ("flatten", "reshape", "view") \
                    and isinstance(func.value, ast.Name) and func.value.id == mask:
                line = ast.get_source_segment(source, node)
                cut = func.value.end_col_offset - node.col_offset
                found.append(line[:cut] + f".expand(*{q}.shape[:-1], {k}.shape[-2])" + line[cut:])
    line = the_one(found)
    why = (f"the {mask} broadcast to the scores' shape first (it may come with fewer axes in front, a (n_q, "
           "n_k) one for a whole batch), then flattened as they are")
    return f"{line}   # in place of your line: {why}" if line else None


_SOFTMAX = ("softmax", "log_softmax")
_FUNCTIONAL = ("F", "torch", "nn.functional", "torch.nn.functional", "functional")


def _softmax_module(obj, attribute: str) -> list:
    """The line that makes the module's softmax ``attribute`` (``self.softmax = nn.Softmax(dim=1)``, in its
    __init__), over the last dimension; [] when there is no such line. Replay 20's 05W2 was given
    ``self.softmax(-1)`` for its forward's ``self.softmax(akara)``: the scores dropped, an AttributeError."""
    found = []
    for source, node in statements(obj):
        value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and ast.unparse(node.targets[0]) == attribute else None
        func = value.func if isinstance(value, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("Softmax", "LogSoftmax"):
            made = f"{ast.get_source_segment(source, func)}(dim=-1)"
            text = ast.get_source_segment(source, node)
            found.append(text.replace(ast.get_source_segment(source, value), made, 1))
    return found


def _softmax_over_the_keys(obj, result, renamed) -> str | None:
    """For a softmax over another axis than the keys', when the catalog's line names what the code does
    not have: the learner's one line with a softmax, over the last dimension; for a softmax by hand,
    its line that divides by a sum, summed over the last dimension; else None."""
    by_hand = _summed_over_the_keys(obj)
    if len(by_hand) == 1:
        return by_hand[0] + "   # in place of your line: over the keys, the last dimension"
    if not _names_missing(obj, renamed):
        return None
    found = []
    for source, node in statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in _SOFTMAX:
                continue
            method = isinstance(func, ast.Attribute) and ast.unparse(func.value) not in _FUNCTIONAL
            if method and ast.unparse(func.value) == "self":        # self.softmax(s): an nn.Softmax of theirs
                found += _softmax_module(obj, ast.unparse(func))
                break
            kept = [ast.get_source_segment(source, k) for k in call.keywords if k.arg not in ("dim", "axis")]
            given = [] if method or not call.args else [ast.get_source_segment(source, call.args[0])]
            args = ", ".join(given + ["-1" if method else "dim=-1"] + kept)
            text = ast.get_source_segment(source, node)
            found.append(text.replace(ast.get_source_segment(source, call),
                                      f"{ast.get_source_segment(source, func)}({args})", 1))
            break
    line = the_one(found)
    return line + "   # in place of your line: over the keys, the last dimension" if line else None


def _summed_over_the_keys(obj) -> list:
    """The learner's lines that divide by a sum over an axis other than -1 (a softmax by hand: e /
    e.sum(dim=-2, keepdim=True), replay 23's 02Z2), with that sum over the last axis."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        for division in ast.walk(node):
            total = division.right if isinstance(division, ast.BinOp) and isinstance(division.op, ast.Div) \
                else None
            if not (isinstance(total, ast.Call) and getattr(total.func, "attr", "") == "sum"):
                continue
            axis = next((k.value for k in total.keywords if k.arg in ("dim", "axis")), None) or \
                (total.args[0] if total.args else None)
            if axis is None or ast.unparse(axis) == "-1":
                continue
            text, at = ast.get_source_segment(source, node), ast.get_source_segment(source, axis)
            whole = ast.get_source_segment(source, total)
            found.append(text.replace(whole, whole.replace(at, "-1", 1), 1))
    return found


def _bug(*ids):
    """Whether a verdict names one of ``ids``, or gives the fix of one (:attr:`CheckResult.fix_of`)."""
    return lambda result: result.bug in ids or result.fix_of in ids


def _by_hand(result) -> bool:
    """Whether a verdict's Fix is only to run the code by hand (it raised, and no rule knew why)."""
    return result.fix.startswith("run your function by hand")


RULES = (
    (lambda result: True, _batch_first),
    (_bug("gradient_blocked"), _no_decorator),
    (_bug("gradient_blocked"), _no_grad_block),
    (_bug("dropout_left_on"), _dropout_only_in_training),
    (lambda result: "returned None" in result.headline, unreturned_fix),
    (lambda result: result.fix.startswith("run the cell that defines or imports "), _dangling),
    (lambda result: result.fix.startswith("run the cell that defines or imports "), _out_of_reach),
    (lambda result: any("einsum(): the number of subscripts" in line for line in result.observed),
     _einsum_for_any_batch),
    (_bug("softmax_overflow"), _exp_of_the_row_less_its_largest),
    (_bug("dtype_changed"), _cast_dropped),
    (_bug("modifies_inputs"), _out_of_place),
    (_bug("cache_low_precision"), full_precision_cache),
    (_bug("positions_not_advanced"), each_token_at_its_position),
    (_bug("positions_not_advanced"), past_from_the_positions_axis),
    (_bug("cached_length_misread"), past_read_along_the_positions),
    (_bug("state_outside_cache"), embedded_at_the_caches_length),
    (lambda result: result.headline.endswith("never uses self.W_v: in a backward pass it got no gradient."),
     _weights_times_values),
    (lambda result: "a head width that is a float" in result.headline, whole_width),
    (lambda result: any("cannot be multiplied" in line or "Expected size for first two dimensions" in line
                        for line in result.observed), _keys_transposed),
    (_bug("wrong_scale"), _scale_on_both_paths),
    (_bug("scale_by_d_model", "wrong_scale"), _root_kept),
    (lambda result: result.fix.startswith("compute everything from this call's x and mask"), _kept_anew),
    (_bug("scale_by_d_model", "wrong_scale"), _own_root),
    (_bug("cache_not_appended"), returns_its_own_cache),
    (_bug("cache_not_appended"), pointer_moved_on),
    (_bug("batch_one_only"), _keys_transposed_from_the_end),
    (_by_hand, _raised_on_a_reversed_transpose),
    (_by_hand, _loop_over_the_first_axis),
    (_by_hand, _mask_broadcast_before_it_is_flattened),
    # row sums without their axis raise where n_q differs from n_k (replay 20's 02W2)
    (lambda result: _by_hand(result) and any("must match the size" in said for said in result.observed),
     _sum_kept),
    (lambda result: any("only inputs with one go wrong" in line for line in result.observed),
     _mask_broadcast_before_the_loop),
    (_bug("softmax_sum_not_kept"), _sum_kept),
    (_bug("values_not_appended"), joined_values_kept),
    # not where the merge has the same slip: the Fix then gives both
    (lambda result: result.bug == "heads_split_without_transpose" and "merge" not in result.fix,
     split_then_transposed),
    (_bug("kv_heads_repeated_not_interleaved"), _repeated_in_their_lines),
    (_bug("is_causal_top_left"), triangle_from_the_bottom_right),
    (lambda result: result.bug == "last_position_only" or "wrong shape" in result.headline
     and result.checked == "check_decoding_step", logits_of_every_token),
    (_bug("heads_merged_interleaved"), stacked_heads_kept_whole),
    (_bug("cache_modified_in_place"), deep_copy_of_the_cache),
    (_bug("heads_count_and_width_swapped"), split_into_heads_of_d_k),
    (_bug("attention_norm_skipped"), projections_of_the_normed),
    (_bug("softmax_wrong_axis"), _softmax_over_the_keys),
    (lambda result: any("in another arrangement: pieces joined" in line for line in result.observed),
     joined_along_positions),
    (_bug("values_from_cached_keys"), keys_stored_twice),
    (lambda result: "query heads met" in result.headline and result.bug is None, both_repeated),
    (_bug("residual_from_normed"), residual_to_the_stream),
    (_bug("cache_holds_repeated_heads"), repeated_after_caching),
    (_bug("cache_holds_repeated_heads"), projected_without_repeat),
    (_bug("final_norm_twice"), unembedded_once),
    (_bug("cache_wrong_axis"), along_the_positions),
    (_bug("cache_keys_values_swapped"), keys_first),
    (_bug("weights_not_normalised"), _softmax_not_its_log),
    (_bug("mask_transposed"), _mask_as_given),
    (_bug("mask_inverted"), _mask_kept_as_given),
    (_bug("mask_inverted"), _mask_turned),
    (lambda result: result.bug is None and any("only inputs with one go wrong" in line
                                               for line in result.observed), _filled_where_true),
    (_bug("dtype_changed"), _in_their_own_dtype),
    (_bug("nan_on_fully_masked_row"), _fill_finite),
    (_bug("fill_overflows_float16"), _fill_not_added),
    (lambda result: result.bug is None and any("Every number it returned is NaN or inf" in line
                                               for line in result.observed), _attend_mask_filled),
    (_bug("weights_transposed"), blend_over_the_keys),
    (lambda result: any("doesn't match the broadcast shape" in line for line in result.observed),
     _out_of_place_to_grow),
    (lambda result: result.headline.endswith("and wrong (or raised) whenever their numbers differ."),
     _count_from_the_keys),
    (lambda result: result.headline.endswith("and wrong (or raised) whenever their widths differ."),
     _width_from_the_values),
    (_bug("cache_prepended"), cached_first),
    (_bug("parallel_block"), mlp_after_attention),
    (_bug("heads_merged_without_transpose"), heads_transposed_back),
    (_bug("no_block_without_cache"), every_block),
    (_bug("mask_replaced_by_causal"), _the_mask_given),
    (_bug("causal_when_no_mask"), _no_mask_made_causal),
    (lambda result: "whenever no mask is given (mask=None)" in result.headline, _mask_only_when_given),
    (lambda result: "a linear layer got inputs of width" in result.headline, heads_side_by_side),
    (_bug("cache_read_at_wrong_index"), entries_read_right),
    (_bug("is_causal_top_left", "causal_mask_missing"), causal_sized_by_your_call),
)
"""(applies, rewrite) pairs, in order: when ``applies(result)``, ``rewrite(obj, result, renamed)`` gives
the learner's line changed, or None."""
