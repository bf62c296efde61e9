"""Own-line rules for sizes, axes, names and the calls around attention: batch and positions unpacked
the wrong way round, a size read from the queries where the keys' belong, a transpose or a loop over
the wrong axis, a softmax module over the wrong axis, ``no_grad`` and dropout left on, and a name a
function reads that only another function of the cell has. Each rule takes ``(obj, result, renamed)``
and gives the learner's one line, changed, with a comment saying where it goes, or None;
:data:`._ownlines.RULES` says when each applies."""

from __future__ import annotations

import ast
import builtins
import re
import types

from ._learner_lines import statements
from ._ownlines_heads import repeated_interleaved
from ._readers import (
    cell_functions,
    names_a,
    parsed,
    root_name,
    the_one,
    trees,
)
from ._stale import code_of, segment

__all__ = [
    "batch_first", "count_from_the_keys", "dangling", "dropout_only_in_training",
    "keys_transposed_from_the_end", "loop_over_the_first_axis", "no_decorator", "no_grad_block", "numpy_left",
    "out_of_place_to_grow", "out_of_reach", "raised_on_a_reversed_transpose", "repeated_in_their_lines",
    "softmax_over_the_keys", "swapped_unpack", "width_from_the_values",
]


def dangling(obj, result, renamed) -> str | None:
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


def out_of_reach(obj, result, renamed) -> str | None:
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


def count_from_the_keys(obj, result, renamed) -> str | None:
    """For sizes read from the queries where the keys' belong: the learner's one line that reads the
    same size of the queries twice (``L, S = q.size(-2), q.size(-2)``), its second read from the keys;
    else None."""
    code = code_of(obj)
    if type(obj) is not types.FunctionType or code.co_argcount < 2:
        return None
    queries, keys = code.co_varnames[:2]
    found = []
    for source, node in statements(obj):
        pair = node.value.elts if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) else []
        if len(pair) == 2 and ast.unparse(pair[0]) == ast.unparse(pair[1]) and \
                queries in {n.id for n in ast.walk(pair[1]) if isinstance(n, ast.Name)}:
            line, second = segment(source, node), segment(source, pair[1])
            at = pair[1].col_offset - node.col_offset
            changed = re.sub(rf"\b{re.escape(queries)}\b", keys, second)
            found.append(line[:at] + changed + line[at + len(second):])
    line = the_one(found)
    return line + f"   # in place of your line: the second size is the keys', from {keys}" if line else None


def out_of_place_to_grow(obj, result, renamed) -> str | None:
    """For an in-place operation whose result must grow (``mutar.logical_and_(mask)``: a (n, n) tensor
    cannot take a (batch, n, n) result in place): the learner's one statement that calls a method in
    place on a name, assigning its out-of-place form (``mutar = mutar.logical_and(mask)``); else None."""
    found = []
    for source, node in statements(obj):
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        func = getattr(call, "func", None)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr.endswith("_") \
                and not func.attr.startswith("_"):
            line, name = segment(source, node), func.value.id
            at = func.end_col_offset - node.col_offset
            found.append(f"{name} = {line[:at - 1]}{line[at:]}")
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):     # mutar &= mask
            found.append(f"{node.target.id} = {ast.unparse(ast.BinOp(node.target, node.op, node.value))}")
    line = the_one(found)
    return line + "   # in place of your line: out of place, so the result can take the mask's batch axes" \
        if line else None


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
            line = segment(source, node)
            return line, f"{names[1]}, {names[0]}, {names[2]} = x.shape"
    return None


def batch_first(obj, result, renamed) -> str | None:
    """For a module whose forward unpacks x's shape positions first (:func:`swapped_unpack`): that line
    with the batch first, whatever the verdict's bug (the rest follows from it); else None."""
    found = swapped_unpack(obj) if result.checked == "check_multi_head" else None
    return found[1] + "   # in place of your line: x is (batch, n, d_model), the batch first" \
        if found else None


_NO_GRAD = ("torch.no_grad()", "torch.inference_mode()", "torch.no_grad", "torch.inference_mode")


def no_decorator(obj, result, renamed) -> str | None:
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


def no_grad_block(obj, result, renamed) -> str | None:
    """For a function that blocks the gradient inside ``with torch.no_grad():`` (or inference_mode): that
    ``with`` line left out, its lines moved one indent to the left; else None. Replay 23's 02Z3 was given
    its softmax line twice, 'no .detach(), torch.no_grad() ...', and the with stayed."""
    for source, tree in parsed(obj, with_helpers=True):
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and len(node.items) == 1 and \
                    ast.unparse(node.items[0].context_expr) in _NO_GRAD:
                head = f"with {segment(source, node.items[0].context_expr)}:"
                return (f"leave out your line {head} and move the lines under it one indent to the left   # "
                        "no_grad stops the gradient: the output keeps no graph, and a backward pass never "
                        "reaches q, k and v")
    return None


def dropout_only_in_training(obj, result, renamed) -> str | None:
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
            text = re.sub(r"\s*\n\s*", " ", segment(source, node))
            said = segment(source, rate)
            where = "line" if node.lineno == node.end_lineno else f"{node.end_lineno - node.lineno + 1} lines"
            found.append((text.replace(f"dropout_p={said}", f"dropout_p={said} if self.training else 0.0", 1),
                          where))
    line, where = the_one(found) or (None, None)
    return (line + f"   # in place of your {where}: dropout_p is not turned off by .eval(); the module's "
            "training flag is") if line and type(obj) is type else None


_MODULES = {"torch", "math", "F", "nn", "np", "numpy"}


def _names_missing(obj, renamed) -> bool:
    """Whether the catalog's Fix, in the learner's names, assigns a name their code never has (``scores =
    ...`` for code of lambdas): then it has no line to take the place of; or reads one (``att =
    torch.softmax(scores, dim=-1)`` for code whose scores are ``att`` too: pasted in a notebook, it read
    the notebook's own ``scores``, and no error said so; a replay's 08 e01)."""
    try:
        node = ast.parse(renamed.split("   #")[0].strip()).body[0]
    except (SyntaxError, IndexError):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else []
    if any(isinstance(t, ast.Name) and not names_a(t.id, obj) for t in targets):
        return True
    value = getattr(node, "value", None)
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
    return any(name not in _MODULES and not hasattr(builtins, name) and not names_a(name, obj)
               for name in read)


def repeated_in_their_lines(obj, result, renamed) -> str | None:
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
    # or repeats written inside the call that attends (F.scaled_dot_product_attention(q, k.repeat(1, g, 1,
    # 1), ...)): the catalog's line pasted above it repeated the heads twice (replay 26's 08 a12)
    inline = own and "scaled_dot_product_attention" in own.split("   #")[0]
    return own if missing or theirs or inline else None


def _transposes_first_two(node) -> bool:
    """Whether ``node`` is ``x.T``, ``x.t()`` or ``x.transpose(0, 1)`` (or ``(1, 0)``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "T"
    func = node.func if isinstance(node, ast.Call) else None
    if not isinstance(func, ast.Attribute):
        return False
    args = [ast.unparse(a) for a in node.args]
    return func.attr == "t" and not args or func.attr == "transpose" and args in (["0", "1"], ["1", "0"])


def _transposed_from_the_end(obj) -> str | None:
    """The learner's one line (in their function or a helper) that transposes with ``.T``, ``.t()`` or
    ``.transpose(0, 1)``, transposing the last two dimensions instead; else None."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        inner = next((n for n in ast.walk(node) if _transposes_first_two(n)), None)
        if inner is not None:
            tensor = inner.value if isinstance(inner, ast.Attribute) else inner.func.value
            new = f"{segment(source, tensor)}.transpose(-2, -1)"
            text = segment(source, node)
            found.append(text.replace(segment(source, inner), new, 1))
    return the_one(found)


def keys_transposed_from_the_end(obj, result, renamed) -> str | None:
    """For code right on 2-D inputs only, when the catalog's line names what the code does not have: its
    line that transposes the first two dimensions, transposing the last two; else None."""
    line = _transposed_from_the_end(obj) if _names_missing(obj, renamed) else None
    return line + "   # in place of your line: the last two dimensions, whatever is before" if line else None


def raised_on_a_reversed_transpose(obj, result, renamed) -> str | None:
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


def loop_over_the_first_axis(obj, result, renamed) -> str | None:
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


def width_from_the_values(obj, result, renamed) -> str | None:
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
                line = segment(source, node)
                last = segment(source, call.args[-1])
                cut = call.args[-1].col_offset - node.col_offset
                found.append(line[:cut] + f"{v}.shape[-1]" + line[cut + len(last):])
    line = the_one(found)
    return line + f"   # in place of your line: the output is as wide as {v} (d_v), not {q} and {k} (d_k)" \
        if line else None


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
            made = f"{segment(source, func)}(dim=-1)"
            text = segment(source, node)
            found.append(text.replace(segment(source, value), made, 1))
    return found


def softmax_over_the_keys(obj, result, renamed) -> str | None:
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
            kept = [segment(source, k) for k in call.keywords if k.arg not in ("dim", "axis")]
            given = [] if method or not call.args else [segment(source, call.args[0])]
            args = ", ".join(given + ["-1" if method else "dim=-1"] + kept)
            text = segment(source, node)
            found.append(text.replace(segment(source, call),
                                      f"{segment(source, func)}({args})", 1))
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
            text, at = segment(source, node), segment(source, axis)
            whole = segment(source, total)
            found.append(text.replace(whole, whole.replace(at, "-1", 1), 1))
    return found


def numpy_left(obj, result, renamed) -> str | None:
    """For a gradient blocked by a round trip through NumPy (``.numpy()``, then ``torch.from_numpy``): words
    that say to write the steps in torch, since no one line mends it (replay 26's 02 a12 was given the
    catalog's ``weights = torch.softmax(s, dim=-1)``, and its s was a NumPy array: a TypeError). Else
    None."""
    given = {a.arg for tree in trees(obj) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
             for a in f.args.args}
    # q, k or v themselves taken to NumPy (q.detach().numpy(), or t.numpy() for t in (q, k, v)): every
    # step after is NumPy's; one step there (a softmax of the scores) keeps the catalog's line
    loops = [c for tree in trees(obj) for c in ast.walk(tree) if isinstance(c, ast.comprehension)]
    given |= {c.target.id for c in loops if isinstance(c.target, ast.Name)
              and given & {n.id for n in ast.walk(c.iter) if isinstance(n, ast.Name)}}
    if not any(isinstance(part, ast.Call) and getattr(part.func, "attr", None) == "numpy"
               and root_name(part.func.value) in given for tree in trees(obj) for part in ast.walk(tree)):
        return None
    return ("write each step with torch on q, k and v themselves (q @ k.transpose(-2, -1), torch.where or "
            "masked_fill, torch.softmax): .numpy() and torch.from_numpy leave PyTorch's graph, so no "
            "gradient reaches q, k or v")

