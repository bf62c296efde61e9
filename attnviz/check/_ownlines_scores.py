"""Own-line rules for the scores and the weights: the scale (a root kept, a scale on one path only, a
scale handed to a helper), the softmax (by hand, its log, its row sums), casts, fills, and operations
done in place on the learner's inputs. Each rule takes ``(obj, result, renamed)`` and gives the
learner's one line, changed, with a comment saying where it goes, or None; :data:`._ownlines.RULES`
says when each applies."""

from __future__ import annotations

import ast
import types

from ._learner_lines import statements
from ._readers import (
    assigned,
    cell_functions,
    cell_lines,
    einsum_terms,
    helpers,
    names_a,
    operands,
    parsed,
    scores_of,
    softmax_input,
    the_one,
    trees,
    your_names,
)
from ._stale import own_functions, segment, source_of, syntax_tree
from ._verdict import bug_found

__all__ = [
    "cast_dropped", "einsum_for_any_batch", "einsum_rows_first", "exp_of_the_row_less_its_largest",
    "fill_finite", "fill_not_added", "fill_of_a_fixed_dtype", "fill_tensor_in_float32", "floor_below_float16",
    "floor_float16_holds", "kept_anew",
    "keys_transposed", "out_of_place", "own_root", "root_kept", "root_of_the_divisor",
    "scale_into_the_scores", "scale_of_the_values", "scale_on_both_paths", "softmax_not_its_log",
    "sum_kept", "weights_times_values",
]


def einsum_for_any_batch(obj, result, renamed) -> str | None:
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
                line = segment(source, node)
                written = segment(source, equation)
                new = ",".join("..." + term[-2:] for term in terms[:-1]) + "->..." + terms[-1][-2:]
                found.append((node.lineno, line.replace(written, repr(new), 1)))
    if not found:
        return None
    line = min(found)[1]
    more = "; the same in your other einsum" + ("s" if len(found) > 2 else "") if len(found) > 1 else ""
    return line + f"   # in place of your line: ... for any leading axes (2-D, 3-D, 4-D inputs alike){more}"


def exp_of_the_row_less_its_largest(obj, result, renamed) -> str | None:
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
                line = segment(source, node)
                found.append(line.replace(segment(source, call), new))
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


def own_root(obj, result, renamed: str) -> str | None:
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
    line, size = segment(source, node), segment(source, root)
    right = ast.unparse(wanted[0])
    if size is None or size == right or line.count(size) != 1:
        return None
    line, why = line.replace(size, right), f"the root of {right}, not {size}"
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args}
    target = node.target.id if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) else None
    if target in given and type(node.op) in _OPERATORS:
        # q *= s changes the caller's q (replay 19's 02V2 pasted it, and was told so the round after)
        value = segment(line, ast.parse(line).body[0].value)
        sign = _OPERATORS[type(node.op)]
        why += f", and {target} {sign} ... (a new tensor): {target} {sign}= changed the caller's {target}"
        line = f"{target} = {target} {sign} ({value})"
    return line + f"   # in place of your line: {why}"


def kept_anew(obj, result, renamed: str) -> str | None:
    """For state an earlier call left behind, where the learner's code sets something once and keeps it
    (``if self.maska_plote is None: self.maska_plote = torch.ones(n, n, dtype=torch.bool)``): that line
    alone, in place of the guard and it, so each call makes its own; else None (replay 20's 05W4)."""
    line = root_kept(obj, result, renamed, scale=False)
    return line.replace("from its own d_k", "for its own sizes") if line else None


def scale_of_the_values(obj, result, renamed) -> str | None:
    """For a scale of the wrong size taken by a helper of the learner's from the values: their one line
    that hands the values to a helper whose text takes the root of its input's last size (``diem *
    ti_le(v)``, ``ti_le = lambda t: t.shape[-1] ** -0.5``), handing it the queries instead; else None.
    Replay 24's 02A2 was given ``diem = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])`` with no place,
    and pasted it over the product, the helper's scale kept under it: scaled twice, then three rounds
    more."""
    names = your_names(obj)
    queries, values = names.get("q"), names.get("v")
    if not queries or not values or queries == values:
        return None
    scales = set()
    for function in own_functions(obj):
        for helper in helpers(function):
            try:
                tree = syntax_tree(source_of(helper))
            except Exception:  # noqa: BLE001 - no text to read
                continue
            if ".shape[-1]" in ast.unparse(tree) and _roots(tree):
                scales |= {name for name, value in function.__globals__.items() if value is helper}
    found = []
    for source, node in statements(obj) if scales else ():
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in scales and \
                    [ast.unparse(a) for a in call.args] == [values] and not call.keywords:
                line, given = segment(source, node), segment(source, call)
                found.append(line.replace(given, f"{call.func.id}({queries})", 1))
    line = the_one(found)
    return line + f"   # in place of your line: the root of d_k, the last size of {queries}, not of " \
        f"{values} (its d_v)" if line else None


def root_kept(obj, result, renamed: str, scale: bool = True) -> str | None:
    """For a scale of the wrong size where the learner's scale is set once and kept (``if self.scala is
    None: self.scala = 1.0 / math.sqrt(q.shape[-1])``, in their function or an object's method it calls):
    that line alone, in place of the guard and it, so each call takes its own d_k; else None. With
    ``scale`` False, any value set so (:func:`kept_anew`)."""
    found = []
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            test = node.test if isinstance(node, ast.If) else None
            kept = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
                and ast.unparse(test.comparators[0]) == "None"
            body = node.body[0] if kept and len(node.body) == 1 and not node.orelse else None
            if isinstance(body, ast.Assign) and len(body.targets) == 1 and (_roots(body) or not scale) \
                    and ast.unparse(body.targets[0]) == ast.unparse(test.left):
                found.append((segment(source, test), segment(source, body)))
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
            line = segment(source, node)
            kept = line.replace(segment(source, divided), segment(source, divided.left))
            return kept + "   # in place of your line: the scale once, on the queries (divided twice, the " \
                          "scores are divided by d_k)"
    return None


def keys_transposed(obj, result, renamed) -> str | None:
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
                line, at = segment(source, node), pair[1].col_offset - node.col_offset
                found.append(line[:at] + f"{keys}.transpose(-2, -1)" + line[at + len(keys):])
    line = the_one(found)
    return line + f"   # in place of your line: {queries} times {keys} transposed, each query against each " \
                  "key (without it the product runs only when n_k equals d_k)" if line else None


def scale_on_both_paths(obj, result, renamed) -> str | None:
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


def cast_dropped(obj, result, renamed) -> str | None:
    """For an output or a step in another dtype than the inputs': the learner's one line that casts
    (``scores.float().softmax(-1)``, ``x.to(torch.float32)``), without the cast; else None (then the
    dtype comes from a tensor built inside their code, which the catalog's line is about). Where two or
    three lines cast (a replay's softmax of ``scores.double()``, then ``weights @ v.double()``), the first
    without its cast, and the others named: one cast taken out alone makes the product mix two dtypes."""
    found = []
    for source, node in statements(obj):
        line = original = segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            to_float = isinstance(func, ast.Attribute) and func.attr == "to" and len(call.args) == 1 \
                and not call.keywords and ast.unparse(call.args[0]).startswith("torch.float")
            if isinstance(func, ast.Attribute) and (func.attr in _CASTS and not call.args or to_float):
                receiver = segment(source, func.value)
                simple = isinstance(func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
                if not simple and call is not getattr(node, "value", None):    # (a @ b).float() * 2
                    receiver = f"({receiver})"
                line = line.replace(segment(source, call), receiver, 1)
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


def fill_finite(obj, result, renamed) -> str | None:
    """For a fill of -inf (NaN on a fully masked row): the learner's one line that masks its scores with
    -inf (``skorlar.masked_fill(~maske, float("-inf"))``), with the scores' dtype's own minimum in its
    place, or the same for -inf written through ``torch.where`` or ``S[m] = -inf`` (:func:`_fill_line`);
    else None. Replay 19's 05V2 was given the catalog's line in the names of forward (``~mask``), for a
    line in a helper whose mask is ``maske``: a NameError, then two rounds more."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr in ("masked_fill", "masked_fill_") and \
                    len(call.args) == 2 and ast.unparse(call.args[1]) in _MINUS_INF and \
                    isinstance(func.value, ast.Name | ast.Attribute):
                scores = segment(source, func.value)
                fill = segment(source, call.args[1])
                line = segment(source, node)
                if line.count(fill) == 1:
                    found.append(line.replace(fill, f"torch.finfo({scores}.dtype).min"))
    # -inf written another way (torch.where(m, S, -inf), S[m] = -inf, or a name given to it): _fill_line's
    line = the_one(found) if found else _fill_line(obj, lambda part: ast.unparse(part) in _MINUS_INF)
    return line + "   # in place of your line: the dtype's own minimum, not -inf (a fully masked row " \
        "then gets no NaN)" if line else None


def fill_not_added(obj, result, renamed) -> str | None:
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
                mask = segment(text, fills[added[0]])
                filled = f"{kept[0]}.masked_fill({mask}, torch.finfo({kept[0]}.dtype).min)"
                line = segment(text, node)
                found.append(line.replace(segment(text, part), filled, 1))
    line = the_one(found)
    return line + "   # in place of your line: the blocked scores filled with the dtype's minimum, not " \
        "that minimum added to them (in float16 the sum of two large negatives is -inf)" if line else None


_FLOAT16_MAX = 65504.0
_WIDER = {"float32", "float", "float64", "double", "bfloat16"}


def _fixed_fill(node) -> bool:
    """Whether ``node`` is a fill float16 cannot hold, fixed whatever the scores' dtype: a number below
    float16's minimum (``-1e9``) or a wider type's minimum (``torch.finfo(torch.float32).min``)."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if negative and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value > _FLOAT16_MAX
    finfo = node.value if isinstance(node, ast.Attribute) and node.attr == "min" else None
    if not (isinstance(finfo, ast.Call) and ast.unparse(finfo.func) in ("torch.finfo", "finfo")
            and len(finfo.args) == 1):
        return False
    return ast.unparse(finfo.args[0]).removeprefix("torch.") in _WIDER


def _tensor_of(call, fill) -> bool:
    """Whether ``call`` is ``torch.tensor(fill)`` with no dtype given."""
    return isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.tensor" and call.args == [fill] \
        and not call.keywords


def _filled_into(node, fill: str) -> ast.AST | None:
    """The scores ``node`` fills with ``fill`` (a name or a fill's text): ``S`` of ``S.masked_fill(m,
    fill)``, of ``torch.where(m, S, fill)`` or ``torch.where(m, fill, S)``, or of ``S[m] = fill``; else
    None."""
    for call in ast.walk(node):
        func = call.func if isinstance(call, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in ("masked_fill", "masked_fill_") and \
                len(call.args) == 2 and ast.unparse(call.args[1]) == fill:
            return func.value
        if isinstance(func, ast.Attribute) and func.attr == "where" and len(call.args) == 3:
            branches = [ast.unparse(branch) for branch in call.args[1:]]
            if branches.count(fill) == 1:
                return call.args[2 - branches.index(fill)]
    target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
    if isinstance(target, ast.Subscript) and ast.unparse(node.value) == fill:
        return target.value
    return None


def fill_of_a_fixed_dtype(obj, result, renamed) -> str | None:
    """For a fill float16 cannot hold: the learner's one line that writes it (``-1e9``, or
    ``torch.finfo(torch.float32).min``), with ``torch.finfo(S.dtype).min`` in its place, ``S`` the scores
    it fills: those of the line itself (``S.masked_fill(m, -1e9)``, ``torch.where(m, S, -1e9)``, ``S[m]
    = -1e9``), or those a name it is given to fills, in a line of the same function (replay 25's 02B1:
    ``minimum = torch.tensor(torch.finfo(torch.float32).min)``, then ``skore = torch.where(m, skore,
    minimum)``, in a class's ``__call__``, was given the catalog's ``scores = scores.masked_fill(~mask,
    ...)``). A fill made a tensor (``torch.tensor(fill)``) is made one in the scores' dtype: a float32
    tensor turns float64's minimum into -inf. Else None. A fill added to the scores is
    :func:`fill_not_added`'s."""
    line = _fill_line(obj, _fixed_fill)
    return line + "   # in place of your line: the scores' own dtype's minimum, which float16 holds " \
        "too" if line else None


def _fill_line(obj, is_fill) -> str | None:
    """The learner's one line with a fill (``is_fill``) of the scores, the scores' own minimum in its
    place (:func:`fill_of_a_fixed_dtype`); else None."""
    lines = list(statements(obj, with_helpers=True))
    found = []
    for source, node in lines:
        for part in ast.walk(node):
            if not is_fill(part):
                continue
            scores = _filled_into(node, ast.unparse(part))
            if scores is None and (name := assigned(node)):            # minimum = torch.tensor(-1e9)
                used = [_filled_into(other, name) for text, other in lines if text == source]
                scores = the_one([filled for filled in used if filled is not None])
            if isinstance(scores, (ast.Name, ast.Attribute)):
                line, fill = segment(source, node), segment(source, part)
                named = ast.unparse(scores)
                minimum = f"torch.finfo({named}.dtype).min"
                tensor = part if _a_tensor(part) else \
                    next((call for call in ast.walk(node) if _tensor_of(call, part)), None)
                if tensor is not None:    # torch.tensor(fill) is float32: float64's minimum there is -inf
                    fill = segment(source, tensor)
                    minimum = f"torch.tensor({minimum}, dtype={named}.dtype)"
                found.append(line.replace(fill, minimum, 1))
    return the_one(found)


def _a_tensor(call) -> bool:
    """Whether ``call`` is ``torch.tensor(x)``, one argument and no dtype."""
    return isinstance(call, ast.Call) and len(call.args) == 1 and _tensor_of(call, call.args[0])


def _float32_minimum(node) -> bool:
    """Whether ``node`` is ``torch.tensor(torch.finfo(...).min)`` with no dtype: a float32 tensor, -inf for
    float64's minimum."""
    return _a_tensor(node) and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "min" and \
        "finfo" in ast.unparse(node.args[0])


def fill_tensor_in_float32(obj, result, renamed) -> str | None:
    """For NaN on float64 inputs alone, where the learner fills the scores with a minimum made a tensor with
    no dtype (``torch.tensor(torch.finfo(s.dtype).min)``, float32, so -inf for float64's minimum): that
    line with the tensor in the scores' dtype; else None (the catalog's line then says where float64
    meets float32)."""
    line = _fill_line(obj, _float32_minimum)
    return line + "   # in place of your line: the fill in the scores' own dtype (a tensor made with no " \
        "dtype is float32, where float64's minimum is -inf)" if line else None


_FLOAT16_SMALLEST = 2.0 ** -24     # float16's smallest positive number (about 6e-8): below it, 0


def _tiny(node) -> bool:
    """Whether ``node`` is a positive number float16 rounds to 0 (``1e-12``, ``1e-9``)."""
    return isinstance(node, ast.Constant) and type(node.value) is float and \
        0 < node.value < _FLOAT16_SMALLEST / 2


def floor_below_float16(obj, result):
    """A float16 NaN named fill_overflows_float16, on code whose fill float16 holds (no ``-1e9``, no wider
    type's minimum, no minimum added) but which has a number float16 rounds to 0 (``clamp_min(1e-12)``,
    ``+ 1e-9``): named floor_underflows_float16 instead. In float16 that floor is 0, so a fully masked row
    divides 0 by 0 (the NaN), however the blocked scores were filled."""
    if result.bug != "fill_overflows_float16" or not any(
            _tiny(node) for tree in trees(obj) for node in ast.walk(tree)):
        return result
    if _fill_line(obj, _fixed_fill) or fill_not_added(obj, result, ""):
        return result
    happened = result.headline.split(". It looks like", 1)[0]
    return bug_found(result.checked, "floor_underflows_float16", happened, result.observed)


def floor_float16_holds(obj, result, renamed) -> str | None:
    """For floor_underflows_float16: the learner's one line with a number float16 rounds to 0, with
    ``torch.finfo(t.dtype).tiny`` (float16's smallest normal number, about 6e-5, where the inputs are
    float16) in its place, ``t`` the first tensor the line reads (else the function's first argument);
    else None."""
    found = []
    for source, tree in parsed(obj, with_helpers=True):
        function = tree.body[0] if isinstance(tree.body[0], ast.FunctionDef) else None
        for node in ast.walk(tree):
            if not (isinstance(node, ast.stmt) and node.lineno == node.end_lineno) or \
                    isinstance(node, ast.FunctionDef):
                continue
            tiny = [part for part in ast.walk(node) if _tiny(part)]
            if not tiny:
                continue
            value = getattr(node, "value", None)
            read = [part.id for part in ast.walk(value) if isinstance(part, ast.Name)
                    and part.id not in ("torch", "math", "F", "nn")] if value is not None else []
            first = function.args.args[0].arg if function and function.args.args else None
            tensor = read[0] if read else first
            if tensor is None or len(tiny) != 1:
                continue
            line, number = segment(source, node), segment(source, tiny[0])
            found.append((line.replace(number, f"torch.finfo({tensor}.dtype).tiny", 1), number))
    if not (one := the_one(found)):
        return None
    return f"{one[0]}   # in place of your line: a floor float16 holds too ({one[1]} is 0 there)"


def _does_nothing(line: str) -> bool:
    """Whether a line, its casts taken out, only assigns names their own values (``q, k, v = q, k, v``)."""
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, IndexError):
        return False
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
        ast.unparse(node.targets[0]) == ast.unparse(node.value)


def out_of_place(obj, result, renamed) -> str | None:
    """For a function that changes its inputs in place: its one line that calls an in-place method
    (``q.div_(s)``, ``mask.masked_fill_(...)``) on one of its parameters, calling the method that
    returns a new tensor instead, or that assigns to one in place (``q /= s``: ``q = q / s``) (kept
    under the parameter's name when the call is the whole line:
    ``mask = mask.logical_not()``); else None."""
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args} - {"self"}
    found = []
    for source, node in statements(obj):
        line = segment(source, node)
        augmented = isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
        target = node.target.id if augmented else None
        if target in given and type(node.op) in _OPERATORS:             # q /= s -> q = q / s
            value = segment(source, node.value)
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


def weights_times_values(obj, result, renamed) -> str | None:
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
                line, at = segment(source, node), pair[1].col_offset - node.col_offset
                found.append(line[:at] + values + line[at + len(pair[1].id):])
    line = the_one(found) if weights and values else None
    return line + f"   # in place of your line: the weights times the values, {values}" if line else None


def sum_kept(obj, result, renamed) -> str | None:
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
                text = segment(source, call)
                line = segment(source, node)
                found.append(line.replace(text, text[:-1] + ", keepdim=True)", 1))
                break
    line = the_one(found)
    return line + "   # in place of your line: each row's sum keeps its axis, so it divides its own row" \
        if line else None


def softmax_not_its_log(obj, result, renamed) -> str | None:
    """For weights that are not normalised: the learner's one line that names ``log_softmax`` (called, or
    handed to a factory beside the def: ``_atencion = ruray(torch.log_softmax, ...)``), with ``softmax``;
    else None."""
    lines = [*statements(obj, with_helpers=True), *cell_lines(obj)]
    found = {segment(source, node) for source, node in lines
             if any(isinstance(n, ast.Attribute) and n.attr == "log_softmax" for n in ast.walk(node))}
    line = the_one(sorted(found))
    why = "softmax gives weights that sum to 1; log_softmax gives their logarithms"
    return line.replace("log_softmax", "softmax") + f"   # in place of your line: {why}" if line else None


def scale_into_the_scores(obj, result, renamed) -> str | None:
    """For scores never scaled, where the catalog's line in the learner's names reads or sets a name their
    code does not have, or their scores come from an einsum (whose layout ``q @ k.transpose(-2, -1)`` need
    not share): their own line that makes the scores the softmax takes, divided by the root of
    the last size of the product's first operand. Replay 26: scores of an einsum with the heads on
    another axis got ``scores = q @ k.transpose(-2, -1) / ...``, which multiplies heads by heads there;
    a loop over each head's slice got a line of q and k it does not have. Else None."""
    try:
        read = {n.id for n in ast.walk(ast.parse(renamed.split("   #")[0].strip()))
                if isinstance(n, ast.Name)} - {"math", "torch", "F", "np"}
    except SyntaxError:
        return None
    lines = list(statements(obj))
    einsum = any(isinstance(part, ast.Call) and getattr(part.func, "attr", "") == "einsum"
                 for _, node in lines for part in ast.walk(node))
    if all(names_a(name, obj) for name in read) and not einsum:
        return None
    taken = _softmaxed(lines)
    found, defined = [], set()
    for source, node in lines:
        target = assigned(node)
        first, axis = _first_factor(node.value) if target in taken and target not in defined else (None, 0)
        defined |= {target}
        if first is not None and node.lineno == node.end_lineno:
            value, factor = segment(source, node.value), segment(source, first)
            value = value if isinstance(node.value, (ast.Call, ast.Name)) else f"({value})"
            factor = factor if isinstance(first, (ast.Name, ast.Attribute, ast.Subscript)) else f"({factor})"
            size = "the last size" if axis == -1 else f"its size {axis}"
            found.append(f"{target} = {value} / math.sqrt({factor}.shape[{axis}])   # in place of your line: "
                         f"the scores divided by the root of d_k, {size} of {factor}")
    return the_one(found)


def _softmaxed(lines) -> set:
    """The names a softmax takes, in the learner's ``(text, statement)`` lines."""
    return {name for _, node in lines for part in ast.walk(node) if (name := softmax_input(part))}


def _first_factor(value) -> tuple:
    """``(A, axis)``: the first operand of the product that makes ``value`` (``A @ B``, ``torch.matmul(A,
    B)``, ``A.matmul(B)``, ``torch.bmm(A, B)``, ``torch.einsum(eq, A, B)``) and the axis of A it sums
    over, counted from the end (-1 but in an einsum that says otherwise); else ``(None, 0)``."""
    for part in ast.walk(value):
        if pair := operands(part):
            return pair[0], -1
        terms = einsum_terms(part, names=False)
        summed = [c for c in terms[0] if c.isalpha() and c in terms[1] and c not in terms[2]] if terms else []
        if len(summed) == 1:
            return part.args[1], terms[0].index(summed[0]) - len(terms[0])
    return None, 0


def root_of_the_divisor(obj, result, renamed) -> str | None:
    """For a scale of the wrong size where no line of the learner's takes a root: their one line that
    divides the queries, the keys or the scores by a size (``q = q / self.d_k``), with the root of that
    size. Replay 26's 05 a21 was given the catalog's scores line, pasted it over its own scores line
    (now divided twice) and was told "no known bug". Else None."""
    if any(_roots(node) for _, node in statements(obj)):
        return None
    names = your_names(obj)
    tensors = {names.get(role) for role in ("q", "k", "scores")} - {None}
    found = []
    for source, node in statements(obj):
        value = node.value if assigned(node) and node.lineno == node.end_lineno else None
        size = value.right if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div) else None
        # a size read as it is (self.d_k, q.shape[-1]); a name may hold anything (d_k ** 1 / 2 is d_k / 2,
        # or a d_k of another cell's)
        product = size is not None and _first_factor(value.left)[0] is not None    # a head's slices in a loop
        if isinstance(size, (ast.Attribute, ast.Subscript, ast.Call)) and (
                product or tensors & {n.id for n in ast.walk(value.left) if isinstance(n, ast.Name)}):
            line, said = segment(source, node), segment(source, size)
            start, end = size.col_offset - node.col_offset, size.end_col_offset - node.col_offset
            found.append(f"{line[:start]}math.sqrt({said}){line[end:]}   # in place of your line: the root "
                         f"of {said}, not {said} itself")
    return the_one(found)


def einsum_rows_first(obj, result, renamed) -> str | None:
    """For scores transposed by an einsum (``'bhqd,bhkd->bhkq'``): the learner's one such line with the
    output's last two axes the other way round, a row per query (replay 26's 05 a18 was given the
    catalog's ``scores = q @ k.transpose(-2, -1) ...`` for code that named its scores att). Else None."""
    lines = list(statements(obj))
    taken = _softmaxed(lines)
    found = []
    for source, node in lines:
        for part in ast.walk(node) if assigned(node) in taken else ():     # the scores, not weights @ values
            if not (terms := einsum_terms(part, names=False)):
                continue
            first, second, out = terms
            equation = part.args[0]
            own = [c for c in first if c.isalpha() and c not in second], [c for c in second if c.isalpha()
                                                                           and c not in first]
            # the output ends in the two operands' own axes, in either order (keys handed first too):
            # the verdict found it transposed, so turned round it is right
            one = len(own[0]) == len(own[1]) == 1
            ends = {own[0][0] + own[1][0], own[1][0] + own[0][0]} if one else set()
            if out[-2:] in ends:
                turned = out[:-2] + out[-1] + out[-2]
                line = segment(source, node)
                text = segment(source, equation)
                if line.count(text) == 1:
                    found.append(line.replace(text, text.replace("->" + out, "->" + turned))
                                 + f"   # in place of your line: ->{turned} where you wrote ->{out}, one row "
                                 "per query")
    return the_one(found)
