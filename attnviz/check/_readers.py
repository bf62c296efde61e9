"""What a learner's code names its scores, queries, keys, values and the rest: read from its text.

The checkers write a Fix line in the learner's own names (:mod:`._yournames`); this module reads those
names. Everything here reads the text of the learner's own functions (``inspect.getsource``, then
``ast``) and never calls their code. Each reader answers for one form (``S = Q @ K.mT / s``, the tensors
handed to ``F.scaled_dot_product_attention``, ``x = model.embed(tokens, past)``, ...), and
:func:`your_names` gathers them into ``{role: name}``, keeping only a role the code names one way.
"""

from __future__ import annotations

import ast
import functools
import linecache
import re
import types

from ._stale import code_objects, names_used, own_functions, segment, source_of, syntax_tree, unwrapped

__all__ = ["assigned", "cache_remade", "einsum_terms", "embed_line", "embedded", "fused", "helpers",
           "inline_scores", "names_a", "one_line_statements", "operands", "parsed", "returned",
           "returned_cache", "returns_a_value", "root_name", "scores_of", "softmax_input", "softmax_operand",
           "softmaxed", "sources", "the_one", "trees", "your_names"]


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


def operands(node, calls=("matmul", "bmm")) -> tuple | None:
    """The two operand nodes of ``A @ B``, ``torch.matmul(A, B)`` (a function of ``calls``) or
    ``A.matmul(B)``; else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls \
            and len(node.args) == 2:
        return tuple(node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls \
            and len(node.args) == 1 and not node.keywords and not (
                isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
        return node.func.value, node.args[0]                                    # A.matmul(B)
    return None


def _product(node) -> tuple[str, str] | None:
    """``(Q, K)`` for ``Q @ K.transpose(...)``, ``torch.matmul(Q, K.mT)`` or ``torch.einsum('...qd,...kd
    ->...qk', Q, K)``; else None."""
    left, right = operands(node) or (None, None)
    key = _transposed(right)
    return (left.id, key) if isinstance(left, ast.Name) and key else _einsum_scores(node) or _tensordot(node)


def _tensordot(node) -> tuple[str, str] | None:
    """``(Q, K)`` for ``torch.tensordot(Q, K, dims=([-1], [-1]))``, two names over their last axis (right
    for 2-D inputs only); else None."""
    func = node.func if isinstance(node, ast.Call) else None
    dims = next((k.value for k in getattr(node, "keywords", []) if k.arg == "dims"), None)
    if isinstance(func, ast.Attribute) and func.attr == "tensordot" and len(node.args) == 2 \
            and all(isinstance(a, ast.Name) for a in node.args) and dims is not None \
            and ast.unparse(dims).replace(" ", "") in ("([-1],[-1])", "[[-1],[-1]]"):
        return node.args[0].id, node.args[1].id
    return None


def _einsum_scores(node) -> tuple[str, str] | None:
    """``(Q, K)`` for an einsum of two names over their last axis, queries by keys (``'bhqd,bhkd->bhqk'``,
    ``'...id,...jd->...ij'``); else None."""
    terms = einsum_terms(node)
    if terms and terms[0][-1] == terms[1][-1] and terms[2][-2:] == terms[0][-2] + terms[1][-2] \
            and terms[0][-2] != terms[1][-2]:
        return node.args[1].id, node.args[2].id
    return None


def scores_of(value) -> tuple[str, str] | None:
    """``(Q, K)`` when ``value`` is the scores: the product itself, or it divided or multiplied by a
    scale, once or more (``Q @ K.mT / math.sqrt(d)``, ``scale * (Q @ K.mT)``, ``Q @ K.mT / d ** 1 / 2``);
    not a softmax of it or anything else."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)):
        return scores_of(value.left) or (scores_of(value.right) if isinstance(value.op, ast.Mult) else None)
    return _product(value)


def sliced_scores(value) -> bool:
    """Whether ``value`` is the scores of one head sliced from the projections (``Q[..., s] @ K[...,
    s].transpose(-2, -1) / math.sqrt(d)``): a product of two subscripted names, the second transposed,
    scaled or not. Its queries and keys have no names of their own."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)):
        return sliced_scores(value.left) or isinstance(value.op, ast.Mult) and sliced_scores(value.right)
    left, right = operands(value) or (None, None)
    if isinstance(right, ast.Attribute) and right.attr in _TRANSPOSED:
        right = right.value
    elif isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) \
            and right.func.attr in _TRANSPOSES:
        right = right.func.value
    else:
        return False
    return all(isinstance(side, ast.Subscript) and isinstance(side.value, ast.Name) for side in (left, right))


_SAME_ROWS = {"repeat_interleave", "repeat", "expand", "contiguous", "to", "float", "double", "half", "clone",
              "detach"}
"""Tensor methods that leave a tensor's last two axes as they were: ``K.repeat_interleave(group, dim=1)``
handed to the fused function is still the learner's ``K``."""


def _tensor_name(node) -> str | None:
    """``K`` for ``K``, ``K.repeat_interleave(2, dim=1)``, ``K.contiguous().float()``; else None."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in _SAME_ROWS:
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


def fused(node) -> tuple | None:
    """``(Q, K, V)``, the names handed to ``F.scaled_dot_product_attention(Q, K, V, ...)``; else None."""
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "scaled_dot_product_attention" or len(node.args) < 3:
        return None
    return tuple(_tensor_name(arg) for arg in node.args[:3])


def helpers(fn) -> list:
    """The plain functions ``fn`` calls by a global name that were written where fn was, in the same
    cell or file: a learner's helpers (``_compare``, ``attend``), the forward of a module class of
    theirs it names (a ``Head`` of Karpathy's lecture), and the methods of an object of their own class
    it calls (``_atentie(q, k, v)``: ``__call__``; ``_koracnik.korak(...)``); read, never called."""
    if type(fn) is not types.FunctionType:
        return []
    names = sorted({name for code in code_objects(fn.__code__) for name in code.co_names})
    found = []
    for value in (fn.__globals__.get(name) for name in names):
        if isinstance(value, type):         # a module's forward, or the __call__ of a class of theirs
            found.append(vars(value).get("forward") or vars(value).get("__call__"))
        elif isinstance(value, types.FunctionType | types.ModuleType) or value is None:
            found.append(value)
        else:                           # an object: its class's methods it calls, where that class is theirs
            methods = vars(type(value))
            found += [methods.get(name) for name in ("__call__", *names)]
    return [value for value in found if type(value) is types.FunctionType and value is not fn
            and value.__code__.co_filename == fn.__code__.co_filename]


def delegated_to(fn) -> list:
    """``[h]`` when ``fn`` only hands its work to one helper of the learner's that takes the same parameters
    (its body, but a docstring, is ``return h(...)``: ``return _atentie(q, k, v, mask)``, a method of an
    object of their class), whose names are then the function's own; else []."""
    try:
        tree = syntax_tree(source_of(fn))
    except (OSError, TypeError, SyntaxError):
        return []
    function = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    body = function.body if function else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not (isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)):
        return []
    found = helpers(fn)
    if len(found) != 1:
        return []
    code = found[0].__code__
    theirs = [a for a in code.co_varnames[:code.co_argcount] if a != "self"]
    given = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    # the same parameters only: a Fix line reads the function's (lengths, not the helper's haba); but a
    # method of an object of theirs handed the function's parameters in order is where all the work is,
    # its names the ones to write (replay 24's 02A1: Uwaga.__call__(self, zapytania, klucze, ...), given
    # scores, mask, q and k, four rounds of NameErrors)
    call = body[0].value
    handed = [a.id for a in call.args if isinstance(a, ast.Name)] == given and not call.keywords
    method = code.co_argcount > len(theirs) and len(theirs) == len(given) and handed
    return found if theirs == given or method else []


def sources(obj, with_helpers: bool = False) -> list:
    """The text of each of the learner's own functions that has one (not one made by exec, say), and,
    ``with_helpers``, of the helpers they call (:func:`helpers`). Names are read without them: a
    helper's parameters are not the caller's names."""
    sources = []
    own = own_functions(obj)
    own += delegated_to(own[0]) if len(own) == 1 else []
    called = [helper for function in own for helper in helpers(function) if helper not in own]
    for fn in own + (called if with_helpers else []):
        try:
            sources.append(source_of(fn))
        except Exception:  # noqa: BLE001 - no text to read: nothing to say of it
            pass
    return sources


def parsed(obj, with_helpers: bool = False) -> list:
    """``(text, tree)`` for each of the learner's own functions whose text parses (:func:`sources`)."""
    parsed = []
    for source in sources(obj, with_helpers):
        try:
            parsed.append((source, syntax_tree(source)))
        except SyntaxError:
            pass
    return parsed


def cell_lines(obj) -> list:
    """``(text, statement)`` for each top-level one-line statement of the cell (or file) the learner's
    function was written in (``_atencion = ruray(torch.log_softmax, ...)``, beside the def): read from
    linecache, as a traceback reads it; none when there is no text."""
    own = own_functions(obj)
    try:
        text = "".join(linecache.getlines(own[0].__code__.co_filename)) if own else ""
        tree = syntax_tree(text)
    except (SyntaxError, ValueError):
        return []
    return [(text, node) for node in tree.body if node.lineno == node.end_lineno]


def cell_functions(obj) -> tuple[str, list]:
    """The text of the cell (or file) the learner's function was written in and every function defined
    in it, however deep (a class's methods, static or not; a helper the function reaches through
    another): read from linecache; ``("", [])`` when there is no text."""
    own = own_functions(obj)
    try:
        text = "".join(linecache.getlines(own[0].__code__.co_filename)) if own else ""
        tree = syntax_tree(text)
    except (SyntaxError, ValueError):
        return "", []
    return text, [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]


def handed_back_guard(obj) -> str | None:
    """The test of the learner's one ``if X is not None: return X`` (a mask kept from an earlier call in a
    global or an attribute, handed back: ``_mask_zakhire is not None``), or of an ``if`` that tests a
    global or an attribute and returns from it (``if _pamiec: return _pamiec["maska"]``: replay 21's
    04X1 was given a Fix for the line below it, then one that replaced a line with itself); else None."""
    found = []
    for source, tree in parsed(obj, with_helpers=True):
        function = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
        own = {a.arg for a in function.args.args} if function else set()
        own |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for node in ast.walk(tree):
            test = node.test if isinstance(node, ast.If) else None
            body = node.body[0] if test is not None and len(node.body) == 1 and not node.orelse else None
            if not (isinstance(body, ast.Return) and body.value is not None):
                continue
            kept = isinstance(test, ast.Compare) and len(test.ops) == 1 \
                and isinstance(test.ops[0], ast.IsNot) and ast.unparse(test.comparators[0]) == "None"
            if kept and ast.unparse(body.value) == ast.unparse(test.left) \
                    or _outside(test, own) & _outside(body.value, own):
                found.append(segment(source, test))
    return the_one(found)


def _outside(node, own: set) -> set:
    """The globals ``node`` reads (names not in ``own``) and the attributes of self it reads."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own
    attributes = {ast.unparse(n) for n in ast.walk(node) if isinstance(n, ast.Attribute)
                  and isinstance(n.value, ast.Name) and n.value.id == "self"}
    return (names - {"torch", "math", "np", "F", "nn", "len", "isinstance"}) | attributes


def cell_returns(obj) -> int:
    """How many return statements with a value the cell (or file) of the learner's function holds, its
    helpers' and classes' among them: more than one, and "your return line" does not say which."""
    own = own_functions(obj)
    return _returns_in("".join(linecache.getlines(own[0].__code__.co_filename)) if own else "")


@functools.lru_cache(maxsize=64)
def _returns_in(text: str) -> int:
    """How many return statements with a value ``text`` holds (a file of many functions is read once)."""
    try:
        tree = syntax_tree(text)
    except (SyntaxError, ValueError):
        return 0
    return sum(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(tree))


def trees(obj) -> list:
    return [tree for _, tree in parsed(obj)]


def one_line_statements(obj, with_helpers: bool = False):
    """``(text, tree, statement)`` for each statement of the learner's functions (:func:`sources`) that
    sits on one line."""
    for source, tree in parsed(obj, with_helpers):
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and node.lineno == node.end_lineno:
                yield source, tree, node


def the_one(found: list):
    """The one thing found, or None when there is none or more than one."""
    return found[0] if len(found) == 1 else None


def softmaxed(node):
    """``(E, M)`` when a softmax call takes scores written inline, unnamed: ``M`` what the softmax
    takes (``E.softmax(-1)``, ``torch.softmax(M, dim=-1)``, ``F.softmax(M, -1)``), ``E`` the scores
    (:func:`scores_of`) in it: ``M`` itself, or masked inline (``E.masked_fill(...)``,
    ``torch.where(m, E, ...)``); else None."""
    if not _softmax_of(node):
        return None
    for taken in (node.args[0] if node.args else None, getattr(node.func, "value", None)):
        if scores_of(taken):
            return taken, taken
        masked = taken if isinstance(taken, ast.Call) and isinstance(taken.func, ast.Attribute) else None
        if masked and masked.func.attr == "masked_fill" and scores_of(masked.func.value):
            return masked.func.value, taken
        if masked and masked.func.attr == "where" and len(masked.args) == 3 and scores_of(masked.args[1]):
            return masked.args[1], taken
    return None


def inline_scores(obj) -> tuple[str, str, str] | None:
    """``(line, E, M)``: the learner's one line (an assignment or a return) that takes a softmax of
    scores written inline, unnamed (``att = (q @ k.mT / s).softmax(-1)``), the scores' text, and the
    text of what the softmax takes (:func:`softmaxed`); None when there is none, more than one, or
    the line runs over several lines."""
    found = []
    for source, _, node in one_line_statements(obj):
        if not (assigned(node) or isinstance(node, ast.Return) and node.value is not None):
            continue
        for inner in ast.walk(node.value):
            if (taken := softmaxed(inner)) is not None:
                found.append((segment(source, node),
                              *(segment(source, part) for part in taken)))
    return the_one(found)


def _softmax_of(value) -> bool:
    """Whether ``value`` is a softmax: ``S.softmax(...)``, ``torch.softmax(S, ...)``, ``F.softmax(...)``, or
    a function of the learner's own called softmax (``softmax(S, axis=-1)``, a NumPy habit)."""
    func = value.func if isinstance(value, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr == "softmax" or isinstance(func, ast.Name) \
        and func.id == "softmax"


def _matmul(node) -> tuple | None:
    """``(A, B)`` for ``A @ B``, ``torch.matmul(A, B)`` or ``torch.einsum('bhqk,bhkd->bhqd', A, B)`` of two
    names; else None."""
    pair = operands(node, calls=("matmul",))
    if pair and all(isinstance(n, ast.Name) for n in pair):
        return tuple(n.id for n in pair)
    return (node.args[1].id, node.args[2].id) if _einsum_matmul(node) else None


def _einsum_matmul(node, names: bool = True) -> bool:
    """Whether ``node`` is an einsum that multiplies two matrices batched alike, as ``@`` would
    (``'bhqk,bhkd->bhqd'``), of two names (``names``) or of any two operands."""
    terms = einsum_terms(node, names)
    return bool(terms) and terms[0][-1] == terms[1][-2] and terms[2][-2:] == terms[0][-2] + terms[1][-1] \
        and terms[0][:-2] == terms[1][:-2] == terms[2][:-2]


def einsum_terms(node, names: bool = True) -> tuple | None:
    """``(A, B, out)``, the subscripts of ``torch.einsum('A,B->out', X, Y)``, X and Y names (``names``),
    each of two letters or more; else None."""
    func = node.func if isinstance(node, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and func.attr == "einsum" and len(node.args) == 3
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            and (not names or all(isinstance(arg, ast.Name) for arg in node.args[1:]))):
        return None
    inputs, _, out = node.args[0].value.replace(" ", "").partition("->")
    terms = (*inputs.split(","), out)
    return terms if len(terms) == 3 and min(map(len, terms)) >= 2 else None


def _after_softmax(node) -> str | None:
    """``V`` for ``S.softmax(-1) @ V``, ``torch.matmul(torch.softmax(S, -1), V)`` or ``torch.einsum('bhqk,
    bhkd->bhqd', S.softmax(-1), V)``; else None."""
    pair = operands(node, calls=("matmul",))
    if _einsum_matmul(node, names=False) and _softmax_of(node.args[1]):
        pair = node.args[1:]
    return pair[1].id if pair and _softmax_of(pair[0]) and isinstance(pair[1], ast.Name) else None


def _merged(node) -> str | None:
    """``M`` for ``self.W_o(M)`` or ``attention.W_o(M)``: the heads side by side, before W_o."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "W_o" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
        return node.args[0].id
    return None


def assigned(node) -> str | None:
    """The one name a statement assigns (``s = ...``, or with a type hint ``s: torch.Tensor = ...``), else
    None."""
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return node.target.id
    single = isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    return node.targets[0].id if single else None


def your_names(obj) -> dict:
    """``{role: name}`` for each role the learner's code names one way only: ``scores``, ``q``, ``k``
    from its assignments of a product with a transpose, scaled or not (``S = Q @ K.mT``); ``q``, ``k``,
    ``v`` from the tensors it hands to ``F.scaled_dot_product_attention``; ``weights``, what a softmax is
    assigned to; ``v`` and ``heads`` from ``H = W @ V`` with W the weights (or ``H =`` the fused
    function); ``merged``, what W_o is handed (``self.W_o(M)``), or with no W_o what forward returns;
    ``x``, forward's input or a decoding step's ``model.embed(...)``; ``batch``, ``n``, ``d_model`` from
    ``B, T, C = x.shape`` (else read from x); ``new_cache``, the cache a step returns; and a decoding
    step's own names (:func:`_step_names`, :func:`_joined_names`)."""
    seen = {role: set() for role in ("scores", "q", "k", "v", "weights", "heads", "merged", "x", "batch", "n",
                                     "d_model", "new_cache", "layer", *_STEP_ROLES)}
    nodes = [node for tree in trees(obj) for node in ast.walk(tree)]
    returned = set()                          # what forward returns: the merged heads when W_o is left out
    given, forward_input = set(), set()       # every function's parameters; forward's input
    lists = set()                             # names given a new list or cache: [], list(...), KVCache()
    for node in nodes:
        target = assigned(node)
        if target and (pair := scores_of(node.value)):
            for role, name in zip(("scores", "q", "k"), (target, *pair), strict=True):
                seen[role].add(name)
        elif target and sliced_scores(node.value):          # s = Q[..., h] @ K[..., h].mT / r: a head's
            seen["scores"].add(target)
        if target and _softmax_of(node.value):
            seen["weights"].add(target)
        if (inline := softmaxed(node)) is not None:        # att = (Q @ K.mT / s).softmax(-1)
            for role, name in zip(("q", "k"), scores_of(inline[0]), strict=True):
                seen[role].add(name)
        if target and fused(node.value):
            seen["heads"].add(target)
        for role, name in zip(("q", "k", "v"), fused(node) or (), strict=False):
            seen[role] |= {name} if name else set()
        seen["merged"] |= {_merged(node)} - {None}
        if target is None and isinstance(node, ast.Assign) and _sizes(node):
            for role, name in zip(("batch", "n", "d_model"), _sizes(node), strict=True):
                seen[role].add(name)
        if target and embedded(node.value):                 # a decoding step's stream: x = model.embed(...)
            seen["x"].add(target)
        if isinstance(node, ast.For) and _loop_index(node):  # for layer, block in enumerate(model.blocks)
            seen["layer"].add(_loop_index(node))
        seen["new_cache"] |= {returned_cache(node)} - {None}   # a step's return logits, new_cache
        if isinstance(node, ast.FunctionDef):
            given |= {argument.arg for argument in node.args.args}
        if target and _new_list(node.value):
            lists.add(target)
        _step_names(node, target, seen)
        if isinstance(node, ast.FunctionDef) and node.name == "forward" and len(node.args.args) > 1:
            seen["x"].add(node.args.args[1].arg)
            forward_input.add(node.args.args[1].arg)
            values = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
            # a name, or the one expression returned (``return torch.cat(outs, -1)``) by a forward that
            # never calls W_o
            alone = [ast.unparse(values[0])] if len(values) == 1 and "W_o" not in ast.unparse(node) else []
            returned |= {v.id for v in values if isinstance(v, ast.Name)} or set(alone)
    if not seen["scores"]:      # made by a helper: stig = _stig(q, k), s = scale(q @ k.T)
        seen["scores"] = _scores_by_their_use(nodes)
    seen["scores"] = _scaled_further(nodes, seen["scores"])
    if not seen["weights"]:     # weights made some other way (a helper, log_softmax(...).exp()): W @ values
        _weights_by_their_values(obj, nodes, seen)
    for node in nodes:                        # the weights @ values, once the weights' name is known
        pair = _matmul(node)
        if pair and pair[0] in seen["weights"]:
            seen["v"].add(pair[1])
        target = assigned(node)
        if target and (pair := _matmul(node.value)) and pair[0] in seen["weights"]:
            seen["heads"].add(target)
        if (values := _after_softmax(node)) is not None:     # S.softmax(-1) @ V, the weights unnamed
            seen["v"].add(values)
        if target and _after_softmax(node.value) is not None:
            seen["heads"].add(target)
    seen["merged"] = seen["merged"] or returned
    if not seen["heads"] and len(seen["merged"]) == 1:     # merged = heads.permute(...).reshape(...)
        seen["heads"] = {root for node in nodes for name, value in _assignments(node)
                         if name in seen["merged"] and (root := _reshaped(value))}
    # a tensor repeated for the query heads under a name of its own (kr = k.repeat_interleave(g, 1)) is k
    same = {name: source for node in nodes for name, value in _assignments(node)
            if isinstance(value, ast.Call) and (source := _tensor_name(value)) and source != name}
    for role in ("q", "k", "v"):
        seen[role] = {same.get(name, name) for name in seen[role]}
    _joined_names(nodes, seen)
    stepping = bool(seen["x"]) or any(embedded(node) for node in nodes)   # model.embed(...): a decoding step
    if not seen["weights"] and not stepping:     # return out, w: the weights, however made (replay 23's 02Z2)
        seen["weights"] = {node.value.elts[1].id for node in nodes if isinstance(node, ast.Return)
                           and isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2
                           and isinstance(node.value.elts[1], ast.Name)}
    if stepping and type(obj) is types.FunctionType and obj.__code__.co_argcount >= 2:
        _mask_names(nodes, obj.__code__.co_varnames[1], seen)
    for role in ("k", "v"):                   # ... and kr, the name it is repeated under
        seen[role + "_rep"] = {name for name, source in same.items() if source in seen[role]}
    if type(obj) is type:     # a module's heads, split from its projections, are the ones it attends with
        for role in ("q", "k", "v"):
            seen[role] = seen[role] or seen["new_" + role]
    seen["normed"] -= seen["x"]     # the stream itself projected (the norm skipped): no name of its own
    # the cache it was given, returned changed, is not a new one; a tensor (of tokens, say) is no list
    seen["given_back"] = seen["new_cache"] & given       # returns the cache it was given, not one it made
    seen["made_cache"] = lists - given
    seen["new_cache"] = (seen["new_cache"] - given) & lists
    names = {role: found.pop() for role, found in seen.items() if len(found) == 1}
    if stepping and type(obj) is types.FunctionType and obj.__code__.co_argcount == 3:
        # a step's parameters under the learner's names (awose, ami, iranti): a Fix that read model and
        # tokens ran, pasted in 08, on the notebook's own model (a fuzzing pass)
        for role, name in zip(("model", "tokens", "cache"), obj.__code__.co_varnames, strict=False):
            if name != role:
                names[role] = name
    if "heads" not in names and {"weights", "v"} <= names.keys():
        names["heads"] = f"({names['weights']} @ {names['v']})"     # the heads' outputs, written inline
    for axis, role in enumerate(("batch", "n", "d_model")):      # not unpacked: read from forward's input
        if role not in names and len(forward_input) == 1:
            names[role] = f"{next(iter(forward_input))}.shape[{axis}]"
    return names


def _scores_by_their_use(nodes) -> set:
    """The scores' names where no assignment of the product names them, made by a function of the
    learner's own (replay 22's 02Y1 and 02Y2: a Fix line named ``scores``, which read the notebook's own or
    raised UnboundLocalError): what is assigned such a call that takes the product (``s = scale(q @
    k.T)``); else what is assigned such a call (``stig = _stig(q, k)``) and then masked in place of itself
    (``s = s.masked_fill(...)``) or handed to a softmax (``F.softmax(stig, dim=-1)``)."""
    made, around, used = set(), set(), set()
    for node in nodes:
        target, value = assigned(node), getattr(node, "value", None)
        func = value.func if isinstance(value, ast.Call) else None
        if target and (isinstance(func, ast.Name) and func.id != "softmax" or isinstance(func, ast.Attribute)
                       and getattr(func.value, "id", None) == "self"):
            made.add(target)
            around |= {target} if any(scores_of(a) for a in value.args) else set()
        if target and isinstance(func, ast.Attribute) and func.attr == "masked_fill" \
                and getattr(func.value, "id", None) == target:
            used.add(target)
        used |= {softmax_input(node)} - {None}
    return around or made & used


def softmax_operand(node):
    """What a softmax method or function takes: ``S`` (its node) in ``S.softmax(-1)``, ``torch.softmax(S,
    dim=-1)`` or ``F.softmax(S, -1)``; else None."""
    if not (_softmax_of(node) and isinstance(node.func, ast.Attribute)):
        return None
    module = getattr(node.func.value, "id", None) in ("torch", "F", "functional") or \
        isinstance(node.func.value, ast.Attribute)
    return (node.args[0] if node.args else None) if module else node.func.value


def softmax_input(node) -> str | None:
    """The name a softmax takes (:func:`softmax_operand`), when it takes a name; else None."""
    taken = softmax_operand(node)
    return taken.id if isinstance(taken, ast.Name) else None


def root_name(node) -> str | None:
    """The name a tensor expression starts from (``suroo`` of ``suroo[b]``, of
    ``achkych[b].repeat_interleave(g, dim=0)``, ``q`` of ``q.detach().numpy()``), or None."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _scaled_from(value) -> set:
    """The names ``value`` may be a scaling of: ``S`` in ``S``, ``S / math.sqrt(d)``, ``S.div(r)``,
    ``torch.div(S, r)``; ``S`` and ``r`` in ``S * r``."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
        return _scaled_from(value.left)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _scaled_from(value.left) | _scaled_from(value.right)
    func = value.func if isinstance(value, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("div", "mul", "divide", "multiply"):
        module = getattr(func.value, "id", None) in ("torch", "np", "numpy")
        return _scaled_from(value.args[0]) if module and value.args else set() if module \
            else _scaled_from(func.value)
    return set()


def _scaled_further(nodes, scores: set) -> set:
    """The scores scaled under a name of their own, which the softmax takes (``raw = q @ k.mT``, ``scaled
    = raw / math.sqrt(d)``, ``scaled.softmax(-1)``), are that name: a Fix that masks the scores or takes
    their softmax is written with it (replay 26: ``raw = raw.masked_fill(...)``, pasted in place of the
    learner's mask line, masked a tensor nothing read after it, and the next Fix said so again)."""
    if len(scores) != 1:
        return scores
    taken = {name for node in nodes if (name := softmax_input(node))}
    further = {target for node in nodes if (target := assigned(node)) and target in taken - scores
               and _scaled_from(node.value) & scores}
    return further if len(further) == 1 else scores


def returned_cache(node) -> str | None:
    """``C`` for a step's ``return logits, C``; else None."""
    value = node.value if isinstance(node, ast.Return) else None
    if isinstance(value, ast.Tuple) and len(value.elts) == 2 and isinstance(value.elts[1], ast.Name):
        return value.elts[1].id
    return None


def _new_list(value) -> bool:
    """Whether ``value`` makes a new list or cache: ``[]``, ``[...]``, ``list(...)``, ``gpt.KVCache()``,
    ``cache.copy()``, or one of them either way (``gpt.KVCache() if cache is None else cache.copy()``)."""
    if isinstance(value, ast.IfExp):
        return _new_list(value.body) or _new_list(value.orelse)
    if isinstance(value, ast.List):
        return True
    func = value.func if isinstance(value, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("list", "KVCache", "copy")


def _loop_index(node) -> str | None:
    """``i`` for ``for i, block in enumerate(...)`` or ``for i in range(...)``; else None."""
    call = node.iter if isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name) else None
    if call is None:
        return None
    if call.func.id == "enumerate" and isinstance(node.target, ast.Tuple) and node.target.elts \
            and isinstance(node.target.elts[0], ast.Name):
        return node.target.elts[0].id
    if call.func.id == "range" and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def embedded(value) -> bool:
    """Whether ``value`` is ``model.embed(...)``: where a decoding step's residual stream starts."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr == "embed"


def _sizes(node) -> tuple | None:
    """``(B, T, C)`` for ``B, T, C = x.shape`` (three names from a tensor's shape); else None."""
    target = node.targets[0] if len(node.targets) == 1 else None
    names = isinstance(target, ast.Tuple) and len(target.elts) == 3 \
        and all(isinstance(e, ast.Name) for e in target.elts)
    if names and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return tuple(e.id for e in target.elts)
    return None


def embed_line(obj) -> tuple | None:
    """``(line, position, own)`` for the step's one line ``h = model.embed(tokens, P)`` (or an assignment
    with that call inside: ``x, c = reduce(f, layers, (model.embed(tokens, P), []))``): the line's
    text, P's text, and whether P is a variable of the step's own (set in it, not a global); else
    None."""
    found = []
    for source, tree, node in one_line_statements(obj):
        calls = [c for c in ast.walk(node) if embedded(c) and len(c.args) == 2]
        if not (isinstance(node, ast.Assign) and len(calls) == 1):
            continue
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        shared = {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}
        position = calls[0].args[1]
        own = isinstance(position, ast.Name) and position.id in stored - shared
        found.append((segment(source, node), segment(source, position), own))
    return the_one(found)


def cache_remade(obj) -> bool:
    """Whether a decoding step sets its third parameter, the cache it is given, to something else in its
    own body (``cache = tuple(None for _ in model.blocks)`` when it is None): below that line, ``cache``
    is no longer what the caller handed in, and a Fix that reads it there may raise (replay 24's 08A3). A
    new gpt.KVCache is not counted: its length is 0, as a None cache's past is."""
    for tree in trees(obj)[:1]:
        function = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
        given = [a.arg for a in function.args.args if a.arg != "self"] if function else []
        if len(given) == 3:
            return any(isinstance(n, ast.Name) and n.id == given[2] and isinstance(n.ctx, ast.Store)
                       for n in ast.walk(function)) and "KVCache" not in names_used(obj)
    return False


def names_a(name: str, obj) -> bool:
    """Whether the learner's code has a variable called ``name``."""
    return any(isinstance(node, ast.Name) and node.id == name
               for tree in trees(obj) for node in ast.walk(tree))


def returned(obj) -> str | None:
    """The one expression the learner's function returns, as Python writes it back (``ast.unparse``),
    or None when it has no such single return (or no text)."""
    values = [node.value for tree in trees(obj) for node in ast.walk(tree)
              if isinstance(node, ast.Return) and node.value is not None]
    return ast.unparse(values[0]) if len(values) == 1 else None


def last_returned(obj) -> str | None:
    """What the learner's function returns last in its text (``grind`` after ``case 0: return ...``,
    ``case 1: return ...``): the general case, after the special ones; None without text."""
    values = [node for tree in trees(obj) for node in ast.walk(tree)
              if isinstance(node, ast.Return) and node.value is not None]
    return ast.unparse(max(values, key=lambda node: node.lineno).value) if values else None


def returns_a_value(body) -> bool:
    """Whether ``body`` returns a value anywhere, functions defined in it aside."""
    for node in body:
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) \
                and returns_a_value(list(ast.iter_child_nodes(node))):
            return True
    return False


_STEP_ROLES = ("new_q", "new_k", "new_v", "past_k", "past_v", "attention", "normed", "logits", "block",
               "given_back", "made_cache", "k_rep", "v_rep", "group", "n_new", "n_all", "mask", "past")
"""A decoding step's own names (and a module's split heads): its new queries, keys and values (split
from W_q, W_k and W_v, before joining the cache), the cached ones it joins them to, the attention
layer and the normed stream it projects, the block its loop is at, the logits it returns, the cache
it makes (a new list, a KVCache or a copy) and, when it returns the cache it was given instead, that
one; the names it repeats its keys and values under for the query heads (k_rep, v_rep); the positions
already cached, read from the cache it is given (past: ``cache.length``, ``cache[0][0].shape[-2]``)."""


def _projection(node) -> tuple | None:
    """``(W, owner, taken)`` for a call ``owner.W(taken)``, W one of W_q, W_k, W_v (``b.attention.W_k(xn)``);
    else None."""
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("W_q", "W_k", "W_v") and len(node.args) == 1:
        return func.attr, ast.unparse(func.value), ast.unparse(node.args[0])
    return None


def _split_projection(value) -> str | None:
    """``W`` when ``value`` splits one projection into heads: ``split_heads(att.W_k(h), n)``,
    ``att.W_k(h).view(b, n, heads, d).transpose(1, 2)``, ``self._heads(self.W_k(x))``: a call on the
    projection, not the projection itself; else None."""
    found = [p for node in ast.walk(value) if (p := _projection(node))]
    return found[0][0] if len(found) == 1 and isinstance(value, ast.Call) and not _projection(value) else None


def _assignments(node) -> list:
    """``[(name, value)]`` for ``name = value``, and pairwise for ``a, b = x, y``."""
    if name := assigned(node):
        return [(name, node.value)]
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
            and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
        return [(t.id, v) for t, v in zip(node.targets[0].elts, node.value.elts, strict=True)
                if isinstance(t, ast.Name)]
    return []


def _mask_names(nodes, tokens: str, seen: dict) -> None:
    """A decoding step's mask and its sizes, when it names them: ``n_new`` from ``tokens.shape[1]`` (or
    ``b, n_new = tokens.shape``), ``n_all`` from ``past + n_new`` (past what it embeds at) or from its
    joined keys' ``.shape[-2]``, ``mask`` the variable it hands to ``torch.where``, ``masked_fill`` or
    ``attn_mask=``."""
    positions = {ast.unparse(node.args[1]) for node in nodes if embedded(node) and len(node.args) == 2}
    counted = {f"{keys}{axis}" for keys in seen["k"] for axis in (".shape[-2]", ".shape[2]", ".size(-2)")}
    for node in nodes:
        for name, value in _assignments(node):
            if ast.unparse(value) in (f"{tokens}.shape[1]", f"{tokens}.shape[-1]", f"{tokens}.size(1)"):
                seen["n_new"].add(name)
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        unpacked = isinstance(target, ast.Tuple) and len(target.elts) == 2
        if unpacked and ast.unparse(node.value) == f"{tokens}.shape" and isinstance(target.elts[1], ast.Name):
            seen["n_new"].add(target.elts[1].id)
    for node in nodes:
        for name, value in _assignments(node):
            added = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
            if added and {ast.unparse(value.left), ast.unparse(value.right)} == {*positions, *seen["n_new"]} \
                    or ast.unparse(value) in counted:
                seen["n_all"].add(name)
    position = next(iter(positions)) if len(positions) == 1 else ""
    if not seen["n_all"] and position.isidentifier() and len(seen["n_new"]) == 1:    # no name: their sum
        seen["n_all"].add(f"({position} + {next(iter(seen['n_new']))})")
    variables = {name for node in nodes for name, _ in _assignments(node)}
    for call in (node for node in nodes if isinstance(node, ast.Call)):
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        handed = [k.value for k in call.keywords if k.arg == "attn_mask"]
        handed += call.args[:1] if name == "where" else call.args[:1] if name == "masked_fill" else []
        for mask in handed:
            mask = mask.operand if isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert) else mask
            if isinstance(mask, ast.Name) and mask.id in variables:
                seen["mask"].add(mask.id)


def _weights_by_their_values(obj, nodes, seen: dict) -> None:
    """For an attention function (q, k, v, ...) whose weights no softmax call names: ``W`` from ``W @ v``
    (or ``torch.matmul(W, v)``), v its values; and, with no scores read either, the one variable of the
    function that W is computed from (``wagi = miekki_max(wyniki)``, ``attn = torch.log_softmax(logits,
    dim=-1).exp()``)."""
    # @torch.no_grad() and the like; only a function is looked into (an object's own __getattr__, the
    # learner's code, would run here in the kernel)
    obj = unwrapped(obj)
    if type(obj) is not types.FunctionType or obj.__code__.co_argcount < 3:
        return
    code = obj.__code__
    values = code.co_varnames[2]
    variables = {name for node in nodes for name, _ in _assignments(node)}     # not a lambda's parameter
    seen["weights"] |= {pair[0] for node in nodes if (pair := _matmul(node)) and pair[1] == values
                        and pair[0] in variables}
    if len(seen["weights"]) != 1 or seen["scores"]:
        return
    weights = next(iter(seen["weights"]))
    made = [value for node in nodes for name, value in _assignments(node) if name == weights]
    read = {n.id for value in made for n in ast.walk(value) if isinstance(n, ast.Name)}
    read &= variables - {weights}
    if len(made) == 1 and len(read) == 1:
        seen["scores"] |= read


def _step_names(node, target, seen: dict) -> None:
    """Adds to ``seen`` what ``node`` says of a decoding step's names (:data:`_STEP_ROLES`) but the
    cached ones (:func:`_joined_names`)."""
    looped_over = node.iter.args[0] if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
        and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "enumerate" and node.iter.args \
        else getattr(node, "iter", None)
    if isinstance(node, ast.For) and isinstance(looped_over, ast.Attribute) and looped_over.attr == "blocks":
        looped = node.target.elts[-1] if isinstance(node.target, ast.Tuple) else node.target
        seen["block"] |= {looped.id} if isinstance(looped, ast.Name) else set()
    zipped = node.iter if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
        and getattr(node.iter.func, "id", None) == "zip" and isinstance(node.target, ast.Tuple) \
        and len(node.target.elts) == len(node.iter.args) else None
    for looped, over in zip(zipped.args if zipped else [], node.target.elts if zipped else [], strict=True):
        if isinstance(looped, ast.Attribute) and looped.attr == "blocks" and isinstance(over, ast.Name):
            seen["block"].add(over.id)                          # for bloko, old in zip(model.blocks, ...)
    if target and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Attribute) \
            and node.value.value.attr == "blocks":                           # b = model.blocks[i]
        seen["block"].add(target)
    if (projected := _projection(node)) and projected[1] != "self":
        seen["attention"].add(projected[1])
        seen["normed"].add(projected[2])
    for name, value in _assignments(node):
        if (split := _split_projection(value)) is not None:
            seen["new_" + split[-1]].add(name)
    value = node.value if isinstance(node, ast.Return) else None
    if isinstance(value, ast.Tuple) and len(value.elts) == 2 and node.lineno == node.end_lineno:
        seen["logits"].add(ast.unparse(value.elts[0]))
    if target and _group_of(node.value):                      # grp = model.n_heads // model.n_kv_heads
        seen["group"].add(target)
    if target and _cached_count(node.value):                  # nakhord = cache.length
        seen["past"].add(target)


def _cached_count(value) -> bool:
    """Whether ``value`` reads how many positions a cache holds: ``C.length``, ``C[0][0].shape[-2]`` (or
    ``[2]``, ``.size(-2)``), either after ``0 if C is None else``; C a name."""
    if isinstance(value, ast.IfExp) and isinstance(value.body, ast.Constant) and value.body.value == 0:
        value = value.orelse
    if isinstance(value, ast.Attribute) and value.attr == "length":
        return isinstance(value.value, ast.Name)
    text = ast.unparse(value)
    return bool(re.fullmatch(r"\w+(\[\w+\])+\.(shape\[(-2|2)\]|size\((-2|2)\))", text))


def _group_of(value) -> bool:
    """Whether ``value`` divides one of the model's head counts by the other (``model.n_heads //
    model.n_kv_heads``, the wrong way round too, or ``int(... / ...)``)."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "int" and value.args:
        value = value.args[0]
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, (ast.FloorDiv, ast.Div))):
        return False
    sides = [ast.unparse(side).rsplit(".", 1)[-1] for side in (value.left, value.right)]
    return sorted(sides) == ["n_heads", "n_kv_heads"]


def _reshaped(value) -> str | None:
    """``H`` for a chain of method calls on the name H that ends in a reshape (``H.permute(0, 2, 1,
    3).reshape(b, n, d)``, ``H.transpose(1, 2).contiguous().view(...)``); else None."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("reshape", "view", "flatten")):
        return None
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if isinstance(value.func.value, ast.Name) and value.func.value.id in _MODULES:   # torch.stack(...)
            return None
        value = value.func.value
    return value.id if isinstance(value, ast.Name) else None


_MODULES = ("torch", "F", "nn", "np", "math", "functional")
"""Names of modules learners call functions of: a chain that starts with one holds no tensor's name."""


def _joined(value) -> tuple | None:
    """``(P, N)`` nodes for ``torch.cat([P, N], ...)`` or ``torch.cat((P, N), ...)``, N a name; else None."""
    func = value.func if isinstance(value, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and func.attr == "cat" and value.args
            and isinstance(value.args[0], (ast.List, ast.Tuple)) and len(value.args[0].elts) == 2):
        return None
    past, new = value.args[0].elts
    return (past, new.id) if isinstance(new, ast.Name) else None


def _slot(past) -> str | None:
    """``"k"`` or ``"v"``: which of a cache's entries ``past`` reads, by a key (``cache["keys"][i]``,
    ``cache[i]["v"]``), an attribute (``kvc.values[i]``) or the last index (``cache[i][0]``); else None."""
    entries = {"k": "k", "key": "k", "keys": "k", "v": "v", "value": "v", "values": "v"}
    last = past.slice if isinstance(past, ast.Subscript) else None
    while isinstance(past, ast.Subscript):
        index = past.slice
        if isinstance(index, ast.Constant) and index.value in entries:
            return entries[index.value]
        if isinstance(past.value, ast.Attribute) and past.value.attr in entries:
            return entries[past.value.attr]
        past = past.value
    return "k" if isinstance(last, ast.Constant) and last.value == 0 else \
        "v" if isinstance(last, ast.Constant) and last.value == 1 else None


def _joined_names(nodes, seen: dict) -> None:
    """The cached keys and values a step joins its new ones to: ``past_k`` is ``cache[i][0]`` for ``k =
    torch.cat([cache[i][0], k], ...)`` when the entry it reads says which (:func:`_slot`), or the names
    a layer's entry is unpacked into (``pk, pv = cache[i]``); and, where nothing else named them, the
    joined keys and values as ``k`` and ``v``: the keys or values by the entry they read or by the
    new ones' name; where the two disagree (a slip that joins keys to the cached values, or the other
    way), the values, and the cached ones stay unnamed."""
    joined = {"k": set(), "v": set()}
    for target, value in (assignment for node in nodes for assignment in _assignments(node)):
        pair = _joined(value)
        new = next((role for role in ("k", "v") if pair and pair[1] in seen["new_" + role]), None)
        if new is None:
            continue
        slot = _slot(pair[0])
        role = new if slot in (None, new) else "v"
        if slot == role:
            seen["past_" + role].add(ast.unparse(pair[0]))
        joined[role].add(target)
    for node in nodes:                      # past_keys, past_values = cache[layer]
        unpacked = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        pair = unpacked.elts if isinstance(unpacked, ast.Tuple) else []
        names = len(pair) == 2 and all(isinstance(e, ast.Name) for e in pair)
        if names and isinstance(node.value, ast.Subscript):
            seen["past_k"].add(pair[0].id)
            seen["past_v"].add(pair[1].id)
    for role in ("k", "v"):
        seen[role] = seen[role] or joined[role]
