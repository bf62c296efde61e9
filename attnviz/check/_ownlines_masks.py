"""Own-line rules for masks: a mask read where none is given, replaced by a causal one of the learner's
own, turned the wrong way round, transposed, built in the wrong dtype, or broadcast before a loop or
a reshape. Each rule takes ``(obj, result, renamed)`` and gives the learner's one line, changed, with
a comment saying where it goes, or None; :data:`._ownlines.RULES` says when each applies. (A mask
checker's own Fix, the learner's lines with a token or two changed, is :mod:`._repair`'s.)"""

from __future__ import annotations

import ast

from ._learner_lines import statements
from ._readers import (
    assigned,
    names_a,
    one_line_statements,
    parsed,
    softmax_operand,
    the_one,
    trees,
)
from ._stale import segment

__all__ = [
    "attend_mask_filled", "filled_where_true", "in_their_own_dtype", "mask_as_given",
    "mask_broadcast_before_it_is_flattened", "mask_broadcast_before_the_loop", "mask_kept_as_given",
    "mask_only_when_given", "mask_turned", "masked_before_the_softmax", "no_mask_made_causal",
    "the_mask_given",
]


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


def the_mask_given(obj, result, renamed) -> str | None:
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
            line, at = segment(source, node), call.args[0].col_offset - node.col_offset
            line = line[:at] + "~mask" + line[at + len(segment(source, call.args[0])):]
            found.append(line if guarded else f"if mask is not None: {line}")
    line = the_one(found)
    return line + "   # in place of your line: the mask you are given, not a causal one of your own" \
        if line else None


def no_mask_made_causal(obj, result, renamed) -> str | None:
    """For a causal mask applied when none is given, made in the learner's own ``if mask is None: mask =
    ...`` (a registered tril buffer, say): the catalog's guarded fill in their names, and those two lines
    left out; with them kept, the guard is always true (replay 22's 05Y3). Else None."""
    made = []
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            body = node.body if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 else []
            test = segment(source, node.test) if body else ""
            if body and test.replace(" ", "") == "maskisNone" and assigned(body[0]) == "mask":
                made.append((test, segment(source, body[0])))
    fill = [segment(source, node) for source, node, _ in _with_a_mask(obj)
            if any(isinstance(c, ast.Call) and getattr(c.func, "attr", "") in ("masked_fill", "masked_fill_")
                   for c in ast.walk(node)) and _reads_mask(node)]
    found, line = the_one(made), the_one(fill)
    if not (found and line and renamed.startswith("if mask is not None: ")):
        return None
    code = renamed.split("   #")[0]
    return (f"{code}   # in place of your line {line}; and leave out your lines 'if {found[0]}:' and "
            f"'{found[1]}': mask=None means nothing is blocked")


def mask_only_when_given(obj, result, renamed) -> str | None:
    """For a function that raises whenever it is given no mask: its one line that reads the mask outside
    an ``if`` on it, under ``if mask is not None:``; else None."""
    found = [segment(source, node) for source, node, guarded in _with_a_mask(obj)
             if not guarded and _reads_mask(node) and not _passes_mask_on(node)]
    line = the_one(found)
    return f"if mask is not None: {line}   # in place of your line: mask=None means nothing is blocked" \
        if line else None


def mask_as_given(obj, result, renamed) -> str | None:
    """For a mask transposed: the learner's one line (in their function or a helper) that hands a mask
    transposed (``maska.mT``, ``mask.T``, ``mask.transpose(-2, -1)``) to ``masked_fill``, ``torch.where``
    or ``attn_mask=``, the transpose left out; else None."""
    found = {}
    for source, node, line, mask in _masks_handed(obj, ("masked_fill", "masked_fill_", "where")):
        mask = mask.operand if isinstance(mask, ast.UnaryOp) else mask
        inner = _untransposed(mask)
        if isinstance(inner, ast.Name) and "mask" in inner.id.lower():
            start, end = inner.end_col_offset - node.col_offset, mask.end_col_offset - node.col_offset
            found[(source, node.lineno)] = line[:start] + line[end:]
    line = the_one(list(found.values()))
    return line + "   # in place of your line: the mask as it is given, rows = queries" if line else None


def _masks_handed(obj, fills):
    """``(source, statement, line, mask)`` for each mask a one-line statement of the learner's function
    (or a helper) hands to ``attn_mask=``, or to one of ``fills`` as its first argument."""
    for source, _, node in one_line_statements(obj, with_helpers=True):
        line = segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = getattr(func, "attr", getattr(func, "id", ""))
            handed = [k.value for k in getattr(call, "keywords", []) if k.arg == "attn_mask"]
            handed += call.args[:1] if name in fills and call.args else []
            for mask in handed:
                yield source, node, line, mask


def _turned(node):
    """What ``node`` turns (``m`` of ``~m``, ``m.logical_not()``, ``torch.logical_not(m)``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return node.operand
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr == "logical_not":
        return func.value if not node.args else node.args[0] if len(node.args) == 1 else None
    return None


def mask_kept_as_given(obj, result, renamed) -> str | None:
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
            found.add((f"{target.id} = {segment(source, turned)}",
                       segment(source, node)))
    line, theirs = the_one(list(found)) or (None, None)
    return (f"{line}   # in place of your line {theirs}: the mask as given, True = may attend, for "
            "F.scaled_dot_product_attention as for this course") if line else None


def mask_turned(obj, result, renamed) -> str | None:
    """For a mask used the wrong way round, where the catalog's line names scores the learner's function
    does not have (their masking in a helper: ``return alama.masked_fill(kinyago, fill)``): their one line
    that hands a mask to ``masked_fill`` or ``attn_mask=``, the mask turned (``~kinyago``; ``m`` for
    ``~m``); else None."""
    target = renamed.split(" = ", 1)[0]
    if not target.isidentifier() or names_a(target, obj) and _masks_itself(obj):
        return None
    found = {}
    # torch.where(m, a, b): a and b swapped (replay 25's 02B1, in a class's __call__ with the mask on self)
    for source, _, node in one_line_statements(obj, with_helpers=True):
        line = segment(source, node)
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            if getattr(func, "attr", getattr(func, "id", "")) == "where" and len(call.args) == 3 \
                    and _reads_mask_named(call.args[0]) and not call.keywords:
                one, two = (segment(source, a) for a in call.args[1:])
                start = call.args[1].col_offset - node.col_offset
                end = call.args[2].end_col_offset - node.col_offset
                found[(source, node.lineno)] = line[:start] + f"{two}, {one}" + line[end:]
    for source, node, line, mask in _masks_handed(obj, ("masked_fill", "masked_fill_")):
        if isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert):
            turned = segment(source, mask.operand)
        elif isinstance(mask, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            turned = "~" + segment(source, mask)
        else:
            continue
        start, end = mask.col_offset - node.col_offset, mask.end_col_offset - node.col_offset
        found[(source, node.lineno)] = line[:start] + turned + line[end:]
    line = the_one(list(found.values()))
    return line + "   # in place of your line: True = may attend, so block where the mask is False" if line \
        else None


def _reads_mask_named(node) -> bool:
    """Whether ``node`` reads a name or an attribute whose name says mask (``mask``, ``self.maska``,
    ``m.bool()`` of one): what a torch.where's condition is when it is the mask."""
    return any(isinstance(n, (ast.Name, ast.Attribute)) and "mask" in (getattr(n, "id", "") or n.attr).lower()
               for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))


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


def filled_where_true(obj, result, renamed) -> str | None:
    """For code wrong only where a mask is given, matching no known bug (the mask the wrong way round and
    another mistake at once: replay 23's 02Z1, with a scale kept from the first call): the learner's one
    line that fills where the mask is True, filling where it is False, as :func:`mask_turned` gives it;
    else None. Not where their line fills where it is False already: then the mask is not what is wrong."""
    line = mask_turned(obj, result, "scores = ")
    if line is None or "~" not in line.split("   #")[0]:
        return None
    return line + " (and the other mistake the lines above point at)"


_TO_ATTEND = ("decoding_mask", "tril")


def _made_to_attend(node) -> bool:
    """Whether ``node`` is a call to one of :data:`_TO_ATTEND` (``gpt.decoding_mask(n, t)``,
    ``torch.ones(n, n, dtype=torch.bool).tril()``, ``torch.tril(...)``)."""
    func = node.func if isinstance(node, ast.Call) else None
    return getattr(func, "attr", getattr(func, "id", None)) in _TO_ATTEND


def attend_mask_filled(obj, result, renamed) -> str | None:
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
                line = segment(source, node)
                start, end = mask.col_offset - node.col_offset, mask.end_col_offset - node.col_offset
                found.add(line[:start] + "~" + segment(source, mask) + line[end:])
    line = the_one(list(found))
    return (f"{line}   # in place of your line: the mask is True where a query may attend, so fill where it "
            "is False; filling where it is True blocked every key a query may see, and a query that may "
            "see them all had none left (NaN)") if line else None


_FLOAT32 = {"torch.float32", "torch.float", "float32"}


_BUILDERS = ("zeros", "ones", "empty", "full")


def _without(line: str, node, part, before) -> str:
    """``line`` (``node``'s text) without ``part`` and the comma after ``before``, the argument ahead."""
    return line[:before.end_col_offset - node.col_offset] + line[part.end_col_offset - node.col_offset:]


def in_their_own_dtype(obj, result, renamed) -> str | None:
    """For a dtype changed where no line casts (:func:`cast_dropped`): the learner's one softmax that makes
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
            line = segment(source, node)
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


def mask_broadcast_before_the_loop(obj, result, renamed) -> str | None:
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
        # the mask under a name of its own too (mwgwd = mask: replay 24's 02A4, a loop over the query rows)
        names = {mask} | {n.targets[0].id for n in ast.walk(function) if isinstance(n, ast.Assign)
                          and isinstance(n.value, ast.Name) and n.value.id == mask
                          and isinstance(n.targets[0], ast.Name)}
        loops = [n for n in ast.walk(function) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
        for loop in loops:
            index = loop.target.id
            for n in ast.walk(loop):
                if isinstance(n, ast.Subscript) and ast.unparse(n.value) in names and any(
                        isinstance(part, ast.Name) and part.id == index for part in ast.walk(n.slice)):
                    found.add((q, k, ast.unparse(n.value), index, ast.unparse(n.slice) == index))
    if len(found) != 1:
        return None
    q, k, mask, index, first = found.pop()
    read = (f"{mask}[{index}] reads a batch axis" if first else
            f"{mask} indexed by {index} reads an axis")
    return (f"if {mask} is not None: {mask} = {mask}.expand(*{q}.shape[:-1], {k}.shape[-2])   # above your "
            f"loop: {read} that a mask which broadcasts ((n_q, n_k), or an axis of size 1 for the heads or "
            "the queries) does not have; expanded to the scores' shape, it has it")


def mask_broadcast_before_it_is_flattened(obj, result, renamed) -> str | None:
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
                line = segment(source, node)
                cut = func.value.end_col_offset - node.col_offset
                found.append(line[:cut] + f".expand(*{q}.shape[:-1], {k}.shape[-2])" + line[cut:])
    line = the_one(found)
    why = (f"the {mask} broadcast to the scores' shape first (it may come with fewer axes in front, a (n_q, "
           "n_k) one for a whole batch), then flattened as they are")
    return f"{line}   # in place of your line: {why}" if line else None


def masked_before_the_softmax(obj, result, renamed) -> str | None:
    """For an attention whose weights are masked after the softmax and renormalised (``w =
    torch.softmax(s, dim=-1)``, then ``w = w * mask``, ``w = w / w.sum(-1, keepdim=True)``): its softmax
    line with the scores masked first (the mask's absence kept), and which of its lines to leave out: the
    ones after it that change the weights, with the ``if`` they make up the whole of. Replay 26: the
    fill alone, pasted above the softmax, left the 0/0 of a fully masked row, and the same verdict came
    back. Else None."""
    if result.checked != "check_attention":
        return None
    found = []
    for source, tree in parsed(obj):
        function = tree.body[0] if isinstance(tree.body[0], ast.FunctionDef) else None
        if function is None or len(function.args.args) < 4:
            continue
        mask = function.args.args[3].arg
        lines = sorted((n for n in ast.walk(function) if isinstance(n, ast.stmt) and n is not function),
                       key=lambda n: n.lineno)
        for at, node in enumerate(lines):
            weights, call = assigned(node), getattr(node, "value", None)
            taken = softmax_operand(call)
            if not (weights and isinstance(taken, ast.Name)):
                continue
            after = [n for n in lines[at + 1:] if assigned(n) == weights and weights in _names_in(n.value)
                     and (mask in _names_in(n.value) or ".sum(" in ast.unparse(n.value))]
            if not after or node.lineno != node.end_lineno:
                continue
            scores = taken.id
            masked = f"{scores}.masked_fill(~{mask}, torch.finfo({scores}.dtype).min)"
            text = segment(source, node)
            start, end = taken.col_offset - node.col_offset, taken.end_col_offset - node.col_offset
            either = f"{scores} if {mask} is None else {masked}"
            method = taken is call.func.value                     # s.softmax(-1): the receiver in brackets
            line = f"{text[:start]}{f'({either})' if method else either}{text[end:]}"
            guards = [n for n in lines if isinstance(n, ast.If) and mask in _names_in(n.test) and not n.orelse
                      and all(isinstance(b, ast.Assign) and b in after for b in n.body)]
            left = [f"'if {segment(source, g.test)}:' and the lines under it" for g in guards]
            inside = {id(b) for g in guards for b in g.body}
            left += [f"'{segment(source, n)}'" for n in after if id(n) not in inside]
            found.append(f"{line}   # in place of your line; leave out your lines {' and '.join(left)}: the "
                         "scores masked first, nothing done to the weights after")
    return the_one(found)


def _names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

