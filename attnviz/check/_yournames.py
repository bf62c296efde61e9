"""A verdict's Fix line in the learner's own names for their scores, queries, keys and values.

The catalog writes its lines in the exercises' names: ``scores = q @ k.transpose(-2, -1) / ...``,
decoding's ``scores = query @ key...``, ``k, v = k.repeat_interleave(group, dim=1), ...``. A learner
whose queries are ``query`` (05's and 08's own solutions), ``Q`` or ``qh`` pastes such a line and
gets a NameError, then a verdict about a name: a round spent, and on the way the learner may be told
to look for a cell that defines ``q``, which none does. Where the learner's code shows its names
(the one line that multiplies a tensor by another's transpose, ``S = Q @ K.mT / ...``, and the
tensors it hands to ``F.scaled_dot_product_attention``), a Fix line that is Python code uses them
instead. Where the scores have no name, a softmax taking them inline (``att = (Q @ K.mT / s).softmax(-1)``),
a Fix ``scores = ...`` is written as that line of theirs with the new scores in it (:func:`inline_scores`).
Read from the code's text (never by calling it); a name the code leaves unclear (two lines that say
two things) stays as the catalog wrote it.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import textwrap
import tokenize

from ._catalog import ATTENTION_FIX_NAMES, DECODING_FIX_NAMES, MULTI_HEAD_FIX_NAMES
from ._stale import names_used, own_functions

__all__ = ["your_names", "in_your_names", "fix_in_your_names", "returned", "mask_fix_in_your_names",
           "called_on_self"]

ROLES = {"scores": "scores", "q": "q", "query": "q", "k": "k", "key": "k", "v": "v", "value": "v",
         "weights": "weights", "heads": "heads", "merged": "merged", "x": "x", "batch": "batch", "n": "n",
         "d_model": "d_model", "new_cache": "new_cache", "layer": "layer"}
"""The names Fix lines use, and what each stands for."""

_DEFINING = {*ATTENTION_FIX_NAMES.values(), *DECODING_FIX_NAMES.values(), *MULTI_HEAD_FIX_NAMES.values()}
"""Fix lines that define the name a NameError was about: they stay in that name."""

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


def _operands(node, calls=("matmul", "bmm")) -> tuple | None:
    """The two operand nodes of ``A @ B`` or ``torch.matmul(A, B)`` (a function of ``calls``); else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls \
            and len(node.args) == 2:
        return tuple(node.args)
    return None


def _product(node) -> tuple[str, str] | None:
    """``(Q, K)`` for ``Q @ K.transpose(...)`` or ``torch.matmul(Q, K.mT)``; else None."""
    left, right = _operands(node) or (None, None)
    key = _transposed(right)
    return (left.id, key) if isinstance(left, ast.Name) and key else None


def _scores(value) -> tuple[str, str] | None:
    """``(Q, K)`` when ``value`` is the scores: the product itself, or it divided or multiplied by a
    scale, once or more (``Q @ K.mT / math.sqrt(d)``, ``scale * (Q @ K.mT)``, ``Q @ K.mT / d ** 1 / 2``);
    not a softmax of it or anything else."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)):
        return _scores(value.left) or (_scores(value.right) if isinstance(value.op, ast.Mult) else None)
    return _product(value)


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


def _fused(node) -> tuple | None:
    """``(Q, K, V)``, the names handed to ``F.scaled_dot_product_attention(Q, K, V, ...)``; else None."""
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "scaled_dot_product_attention" or len(node.args) < 3:
        return None
    return tuple(_tensor_name(arg) for arg in node.args[:3])


def _sources(obj) -> list:
    """The text of each of the learner's own functions that has one (not one made by exec, say)."""
    sources = []
    for fn in own_functions(obj):
        try:
            sources.append(textwrap.dedent(inspect.getsource(fn)))
        except Exception:  # noqa: BLE001 - no text to read: nothing to say of it
            pass
    return sources


def _parsed(obj) -> list:
    """``(text, tree)`` for each of the learner's own functions whose text parses."""
    parsed = []
    for source in _sources(obj):
        try:
            parsed.append((source, ast.parse(source)))
        except SyntaxError:
            pass
    return parsed


def _trees(obj) -> list:
    return [tree for _, tree in _parsed(obj)]


def _one_line_statements(obj):
    """``(text, tree, statement)`` for each statement of the learner's functions that sits on one line."""
    for source, tree in _parsed(obj):
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and node.lineno == node.end_lineno:
                yield source, tree, node


def _the_one(found: list):
    """The one thing found, or None when there is none or more than one."""
    return found[0] if len(found) == 1 else None


def _softmaxed(node):
    """``(E, M)`` when a softmax call takes scores written inline, unnamed: ``M`` what the softmax
    takes (``E.softmax(-1)``, ``torch.softmax(M, dim=-1)``, ``F.softmax(M, -1)``), ``E`` the scores
    (:func:`_scores`) in it: ``M`` itself, or masked inline (``E.masked_fill(...)``,
    ``torch.where(m, E, ...)``); else None."""
    if not _softmax_of(node):
        return None
    for taken in (node.args[0] if node.args else None, node.func.value):
        if _scores(taken):
            return taken, taken
        masked = taken if isinstance(taken, ast.Call) and isinstance(taken.func, ast.Attribute) else None
        if masked and masked.func.attr == "masked_fill" and _scores(masked.func.value):
            return masked.func.value, taken
        if masked and masked.func.attr == "where" and len(masked.args) == 3 and _scores(masked.args[1]):
            return masked.args[1], taken
    return None


def inline_scores(obj) -> tuple[str, str, str] | None:
    """``(line, E, M)``: the learner's one line (an assignment or a return) that takes a softmax of
    scores written inline, unnamed (``att = (q @ k.mT / s).softmax(-1)``), the scores' text, and the
    text of what the softmax takes (:func:`_softmaxed`); None when there is none, more than one, or
    the line runs over several lines."""
    found = []
    for source, _, node in _one_line_statements(obj):
        if not (_assigned(node) or isinstance(node, ast.Return) and node.value is not None):
            continue
        for inner in ast.walk(node.value):
            if (taken := _softmaxed(inner)) is not None:
                found.append((ast.get_source_segment(source, node),
                              *(ast.get_source_segment(source, part) for part in taken)))
    return _the_one(found)


def _in_place_of(line: str, expression: str, taken: str, code: str, comment: str) -> tuple[str, str]:
    """A Fix ``scores = ...`` for a learner whose scores are written inline in ``line``: that line
    with the new scores in place of ``expression``, or, when the Fix changes the scores it is given
    (``scores = scores.masked_fill(...)``), the scores named first, then the Fix, then the line whose
    softmax takes them, in place of what it took (``taken``: their own masking of them, if any). The
    comment says it replaces their line."""
    value = code[len("scores = "):]
    changes = any(isinstance(node, ast.Name) and node.id == "scores" for node in ast.walk(ast.parse(value)))
    wrapped = f"({expression})"
    if changes:
        if "~mask" in value and not value.endswith(" else scores"):   # their line was for every call
            code += " if mask is not None else scores"
        reading = line.replace(f"({taken})" if f"({taken})" in line else taken, "scores")
        rewritten = f"scores = {expression}; {code}; {reading}"
    else:   # a softmax's argument needs no brackets; its receiver has them already
        rewritten = (line.replace(wrapped, f"({value})") if wrapped in line
                     else line.replace(expression, value))
    which = "return line" if line.startswith("return ") else f"line {line.split('=', 1)[0].strip()} = ..."
    said = f" in place of your {which}, whose scores are written inline"
    return rewritten, said + (f";{comment}" if comment else "")


def _softmax_of(value) -> bool:
    """Whether ``value`` is a softmax: ``S.softmax(...)``, ``torch.softmax(S, ...)``, ``F.softmax(...)``."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr == "softmax"


def _matmul(node) -> tuple | None:
    """``(A, B)`` for ``A @ B`` or ``torch.matmul(A, B)`` of two names; else None."""
    pair = _operands(node, calls=("matmul",))
    return tuple(n.id for n in pair) if pair and all(isinstance(n, ast.Name) for n in pair) else None


def _after_softmax(node) -> str | None:
    """``V`` for ``S.softmax(-1) @ V`` or ``torch.matmul(torch.softmax(S, -1), V)``; else None."""
    pair = _operands(node, calls=("matmul",))
    return pair[1].id if pair and _softmax_of(pair[0]) and isinstance(pair[1], ast.Name) else None


def _merged(node) -> str | None:
    """``M`` for ``self.W_o(M)`` or ``attention.W_o(M)``: the heads side by side, before W_o."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "W_o" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
        return node.args[0].id
    return None


def _assigned(node) -> str | None:
    single = isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    return node.targets[0].id if single else None


def your_names(obj) -> dict:
    """``{role: name}`` for each role the learner's code names one way only: ``scores``, ``q``, ``k``
    from its assignments of a product with a transpose, scaled or not (``S = Q @ K.mT``); ``q``, ``k``,
    ``v`` from the tensors it hands to ``F.scaled_dot_product_attention``; ``weights``, what a softmax is
    assigned to; ``v`` and ``heads`` from ``H = W @ V`` with W the weights (or ``H =`` the fused
    function); ``merged``, what W_o is handed (``self.W_o(M)``), or with no W_o what forward returns;
    ``x``, forward's input or a decoding step's ``model.embed(...)``; ``batch``, ``n``, ``d_model`` from
    ``B, T, C = x.shape`` (else read from x); ``new_cache``, the cache a step returns."""
    seen = {role: set() for role in ("scores", "q", "k", "v", "weights", "heads", "merged", "x", "batch", "n",
                                     "d_model", "new_cache", "layer")}
    nodes = [node for tree in _trees(obj) for node in ast.walk(tree)]
    returned = set()                          # what forward returns: the merged heads when W_o is left out
    given, forward_input = set(), set()       # every function's parameters; forward's input
    lists = set()                             # names given a new list or cache: [], list(...), KVCache()
    for node in nodes:
        target = _assigned(node)
        if target and (pair := _scores(node.value)):
            for role, name in zip(("scores", "q", "k"), (target, *pair), strict=True):
                seen[role].add(name)
        if target and _softmax_of(node.value):
            seen["weights"].add(target)
        if (inline := _softmaxed(node)) is not None:        # att = (Q @ K.mT / s).softmax(-1)
            for role, name in zip(("q", "k"), _scores(inline[0]), strict=True):
                seen[role].add(name)
        if target and _fused(node.value):
            seen["heads"].add(target)
        for role, name in zip(("q", "k", "v"), _fused(node) or (), strict=False):
            seen[role] |= {name} if name else set()
        seen["merged"] |= {_merged(node)} - {None}
        if target is None and isinstance(node, ast.Assign) and _sizes(node):
            for role, name in zip(("batch", "n", "d_model"), _sizes(node), strict=True):
                seen[role].add(name)
        if target and _embedded(node.value):                 # a decoding step's stream: x = model.embed(...)
            seen["x"].add(target)
        if isinstance(node, ast.For) and _loop_index(node):  # for layer, block in enumerate(model.blocks)
            seen["layer"].add(_loop_index(node))
        seen["new_cache"] |= {_returned_cache(node)} - {None}   # a step's return logits, new_cache
        if isinstance(node, ast.FunctionDef):
            given |= {argument.arg for argument in node.args.args}
        if target and _new_list(node.value):
            lists.add(target)
        if isinstance(node, ast.FunctionDef) and node.name == "forward" and len(node.args.args) > 1:
            seen["x"].add(node.args.args[1].arg)
            forward_input.add(node.args.args[1].arg)
            returned |= {n.value.id for n in ast.walk(node) if isinstance(n, ast.Return)
                         and isinstance(n.value, ast.Name)}
    for node in nodes:                        # the weights @ values, once the weights' name is known
        pair = _matmul(node)
        if pair and pair[0] in seen["weights"]:
            seen["v"].add(pair[1])
        target = _assigned(node)
        if target and (pair := _matmul(node.value)) and pair[0] in seen["weights"]:
            seen["heads"].add(target)
        if (values := _after_softmax(node)) is not None:     # S.softmax(-1) @ V, the weights unnamed
            seen["v"].add(values)
        if target and _after_softmax(node.value) is not None:
            seen["heads"].add(target)
    seen["merged"] = seen["merged"] or returned
    # the cache it was given, returned changed, is not a new one; a tensor (of tokens, say) is no list
    seen["new_cache"] = (seen["new_cache"] - given) & lists
    names = {role: found.pop() for role, found in seen.items() if len(found) == 1}
    if "heads" not in names and {"weights", "v"} <= names.keys():
        names["heads"] = f"({names['weights']} @ {names['v']})"     # the heads' outputs, written inline
    for axis, role in enumerate(("batch", "n", "d_model")):      # not unpacked: read from forward's input
        if role not in names and len(forward_input) == 1:
            names[role] = f"{next(iter(forward_input))}.shape[{axis}]"
    return names


def _returned_cache(node) -> str | None:
    """``C`` for a step's ``return logits, C``; else None."""
    value = node.value if isinstance(node, ast.Return) else None
    if isinstance(value, ast.Tuple) and len(value.elts) == 2 and isinstance(value.elts[1], ast.Name):
        return value.elts[1].id
    return None


def _new_list(value) -> bool:
    """Whether ``value`` makes a new list or cache: ``[]``, ``[...]``, ``list(...)``, ``gpt.KVCache()``,
    ``cache.copy()``."""
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


def _embedded(value) -> bool:
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


def _renamed(code: str, names: dict) -> str:
    """``code`` with each of :data:`ROLES`'s names, where it names a variable (not an attribute, nor a
    keyword argument), replaced by the learner's name for its role."""
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    stored = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)
              and isinstance(node.ctx, ast.Store)}
    # a name the line sets stays a name: "batch, n, d_model = x.shape" never becomes x.shape[0], ...
    names = {role: name for role, name in names.items() if name.isidentifier() or role not in stored}
    depth, edits = 0, []
    for i, token in enumerate(tokens):
        depth += token.string in "([{" if token.type == tokenize.OP else 0
        depth -= token.string in ")]}" if token.type == tokenize.OP else 0
        new = names.get(ROLES.get(token.string)) if token.type == tokenize.NAME else None
        before = tokens[i - 1].string if i else ""
        keyword = depth and tokens[i + 1].string == "="
        if new and before != "." and not keyword:
            edits.append((token.start[1], token.end[1], new))
    for start, end, new in reversed(edits):
        code = code[:start] + new + code[end:]
    return code


def in_your_names(obj, fix: str) -> str:
    """``fix`` in the learner's names (:func:`your_names`) when its code part (before ``   #``) is one
    line of Python and not a line that defines a name a NameError was about; else as it is. A line
    the learner's code already holds says so before its comment, which holds the change."""
    code, hash_, comment = fix.partition("   #")
    if not code or "\n" in code or fix in _DEFINING:
        return fix
    try:
        ast.parse(code)
    except SyntaxError:                      # words, not code ("run your function by hand ...")
        return fix
    if "KVCache" in names_used(obj):          # a step whose cache is a gpt.KVCache: its own forms
        for listed, kv_form in _KV_FORMS.items():
            code = code.replace(listed, kv_form)
        # a new cache under the name the step returns, its own parameter included: a copy of a
        # KVCache (unlike a new empty list) keeps what was cached
        returned = {_returned_cache(node) for tree in _trees(obj) for node in ast.walk(tree)} - {None}
        if len(returned) == 1 and code.startswith("new_cache = gpt.KVCache()"):
            code = returned.pop() + code[len("new_cache"):]
            hash_, comment = "   #", (" in place of your own 'if cache is None' lines: a copy, so the cache "
                                      "you were given stays as it was")
    names = your_names(obj)
    code = _renamed(code, names) if names else code
    if code.startswith("past = ") and (embedding := _embedding(obj)):
        code, comment = _past_where_embedded(*embedding, code, comment)
        hash_ = "   #"
    guarded = re.match(r"if (mask is not None): scores = (.*)$", code)
    unnamed = (code.startswith("scores = ") or guarded) and "scores" not in names
    inline = inline_scores(obj) if unnamed else None
    fills = re.match(r"(if mask is not None: )?scores = scores\.masked_fill\(~mask, ", code)
    if unnamed and not inline and fills and (fused := _fused_line(obj)):
        return f"{fused}   # in place of your line that calls it: the mask you are given, as attn_mask"
    if inline and not _names_a("scores", obj):
        if guarded:   # one line still: the guard as a conditional expression
            code = f"scores = {guarded[2]} if {guarded[1]} else scores"
        code, comment = _in_place_of(*inline, code, comment)
        hash_ = "   #"
    if comment and _squeezed(code) in _squeezed("\n".join(_sources(obj))):
        # pasting it would change nothing: the change is in the comment (cache_holds_repeated_heads's
        # append, last_position_only's unembed), so the Fix says so first
        return code + hash_ + " your code has this line already; the change is:" + comment
    return code + hash_ + comment


def _fused_line(obj) -> str | None:
    """The learner's one line that calls ``F.scaled_dot_product_attention``, handing it ``attn_mask=mask``
    in place of any mask or ``is_causal`` it had, when their function takes ``mask``; else None."""
    found = []
    for source, tree, node in _one_line_statements(obj):
        function = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(function, ast.FunctionDef) or "mask" not in {a.arg for a in function.args.args} \
                or isinstance(node, ast.If):
            continue
        for call in (c for c in ast.walk(node) if isinstance(c, ast.Call) and _fused(c) is not None):
            line, text = ast.get_source_segment(source, node), ast.get_source_segment(source, call)
            keywords = [k for k in call.keywords if k.arg not in ("attn_mask", "is_causal")]
            masked = ast.Call(call.func, call.args[:3],
                              [*keywords, ast.keyword("attn_mask", ast.Name("mask"))])
            found.append(line.replace(text, ast.unparse(masked)))
    return _the_one(found)


def called_on_self(forward, name: str) -> str | None:
    """forward's first one-line statement (not a block's head) that calls the global ``name``, with
    ``self.name`` in its place; None when there is none or no text to read."""
    blocks = (ast.FunctionDef, ast.If, ast.For, ast.While, ast.With)
    for source, _, node in _one_line_statements(forward):
        if not isinstance(node, blocks) and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                                and c.func.id == name for c in ast.walk(node)):
            line = ast.get_source_segment(source, node)
            return re.sub(rf"(?<![\w.]){re.escape(name)}\(", f"self.{name}(", line)
    return None


def _embedding(obj) -> tuple | None:
    """``(line, position, own)`` for the step's one line ``h = model.embed(tokens, P)``: the line's
    text, P's text, and whether P is a variable of the step's own (set in it, not a global); else
    None."""
    found = []
    for source, tree, node in _one_line_statements(obj):
        if not (_assigned(node) and _embedded(node.value) and len(node.value.args) == 2):
            continue
        stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        shared = {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}
        position = node.value.args[1]
        own = isinstance(position, ast.Name) and position.id in stored - shared
        found.append((ast.get_source_segment(source, node), ast.get_source_segment(source, position), own))
    return _the_one(found)


def _past_where_embedded(line: str, position: str, own: bool, code: str, comment: str) -> tuple[str, str]:
    """A Fix ``past = ...`` where the step embeds at ``position``: under the step's own name for it, or,
    when that is a global or an expression (a count kept between calls), followed by the step's embed
    line taking ``past``, to paste in place of that line (above it, ``past`` would not be set yet)."""
    if own:
        return position + code[len("past"):], comment
    embedded = line[: line.rindex(position)] + "past" + line[line.rindex(position) + len(position):]
    target = line.split("=", 1)[0].strip()
    # the line it replaces is the embed line, not the count's ("in place of the count ..." sent a replay's
    # learner to the count's line, below the embed line: session 30's replay 4)
    comment = re.sub(r"^ in place of [^:]*:", "", comment)
    said = f" in place of your line {target} = model.embed(...), which then embeds at past"
    return f"{code}; {embedded}", f"{said};{comment}"


def _names_a(name: str, obj) -> bool:
    """Whether the learner's code has a variable called ``name``."""
    return any(isinstance(node, ast.Name) and node.id == name
               for tree in _trees(obj) for node in ast.walk(tree))


def _squeezed(text: str) -> str:
    return "".join(text.split())


_KV_FORMS = {
    "cache[0][0].shape[-2]": "cache.length",
    "cache[layer]": "(cache.keys[layer], cache.values[layer])",
    "new_cache = []": "new_cache = gpt.KVCache() if cache is None else cache.copy()",
}
"""A list cache's forms in Fix lines, and a gpt.KVCache's (not subscriptable: a replay's step got a
TypeError, then a verdict with no Fix)."""

_MEANS = re.compile(r"^(\w+) in a Fix line means your ")


def fix_in_your_names(obj, result):
    """``result`` with its Fix line in the learner's names (:func:`in_your_names`) when it failed; a
    Fix that says what a name of an earlier Fix line stands for ("scores in a Fix line means your
    scores ...") also says which of the learner's names that is, when their code shows it."""
    if result.passed or not result.fix:
        return result
    if unreturned := _unreturned_fix(obj, result):
        result.fix = unreturned
        return result
    said = _MEANS.match(result.fix)
    if said:
        yours = your_names(obj).get(ROLES.get(said[1], ""), "")
        if yours.isidentifier() and yours != said[1]:
            result.fix += f" (in your code: {yours})"
        return result
    result.fix = in_your_names(obj, result.fix)
    return result


def returned(obj) -> str | None:
    """The one expression the learner's function returns, as Python writes it back (``ast.unparse``),
    or None when it has no such single return (or no text)."""
    values = [node.value for tree in _trees(obj) for node in ast.walk(tree)
              if isinstance(node, ast.Return) and node.value is not None]
    return ast.unparse(values[0]) if len(values) == 1 else None


def _unreturned_fix(obj, result) -> str | None:
    """For a function that returned None, never returns a value, and ends by setting a name (``keep =
    ...``): the Fix ``return keep``, in place of the catalog's whole answer (a replay's learner, 04C of
    session 29, had to work out the return from it); else None."""
    if "returned None" not in result.headline:
        return None
    for _, tree in _parsed(obj):
        function = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(function, ast.FunctionDef) or (type(obj) is type and function.name != "forward"):
            continue
        if _returns_a_value(function.body) or not (name := _assigned(function.body[-1])):
            return None
        return f"return {name}   # at the end of your function: without a return, it gives None"
    return None


def _returns_a_value(body) -> bool:
    """Whether ``body`` returns a value anywhere, functions defined in it aside."""
    for node in body:
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) \
                and _returns_a_value(list(ast.iter_child_nodes(node))):
            return True
    return False


def mask_fix_in_your_names(obj, result):
    """A mask checker's Fix ``return mask ...`` (mask_not_bool's ``.bool()``, ``== 0``) on the mask the
    learner's function returns: ``return torch.ones(n, n).tril().bool()``, where ``mask`` was a name
    their function never had (a NameError when pasted: a reader of 04)."""
    if result.passed:
        return result
    if unreturned := _unreturned_fix(obj, result):
        result.fix = unreturned
        return result
    expression = returned(obj)
    if result.fix.startswith("mask = ") and expression and expression.isidentifier():
        result.fix = expression + result.fix[len("mask"):]     # the name the function returns its mask as
        return result
    if not result.fix.startswith("return mask"):
        return result
    if expression and expression != "mask":
        primary = isinstance(ast.parse(expression, mode="eval").body, (ast.Name, ast.Attribute, ast.Call,
                                                                       ast.Subscript))
        shown = expression if primary else f"({expression})"
        code, hash_, comment = result.fix.partition("   #")
        result.fix = "return " + shown + code[len("return mask"):] + hash_ + comment
    return result
