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
The names are read from the code's text (never by calling it) in :mod:`._readers`; a name the code
leaves unclear (two lines that say two things) stays as the catalog wrote it. This module rewrites
the lines.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import types

from ._catalog import ATTENTION_FIX_NAMES, DECODING_FIX_NAMES, MULTI_HEAD_FIX_NAMES
from ._ownlines import (
    keys_sliced_in_the_loop,
    lengths_as_a_column,
    lengths_kept_as_given,
    own_line_fix,
    unreturned_fix,
)
from ._ownlines_shapes import swapped_unpack
from ._readers import (
    cache_remade,
    cell_returns,
    delegated_to,
    embed_line,
    fused,
    handed_back_guard,
    inline_scores,
    last_returned,
    names_a,
    one_line_statements,
    returned,
    returned_cache,
    sources,
    the_one,
    trees,
    your_names,
)
from ._stale import code_of, names_used, own_functions, segment, source_of, syntax_tree

__all__ = ["in_your_names", "fix_in_your_names", "mask_fix_in_your_names", "called_on_self"]

ROLES = {"scores": "scores", "q": "q", "query": "q", "k": "k", "key": "k", "v": "v", "value": "v",
         "weights": "weights", "heads": "heads", "merged": "merged", "x": "x", "batch": "batch", "n": "n",
         "d_model": "d_model", "new_cache": "new_cache", "layer": "layer", "new_key": "new_k",
         "new_value": "new_v", "past_keys": "past_k", "past_values": "past_v", "attention": "attention",
         "normed": "normed", "logits": "logits", "block": "block", "lengths": "lengths", "group": "group",
         "n_new": "n_new", "n_all": "n_all", "mask": "mask", "past": "past", "model": "model",
         "tokens": "tokens", "cache": "cache"}
"""The names Fix lines use, and what each stands for (new_key and new_value: a step's keys and values
before it joins the cache's to them, written ``key`` and ``value`` in the catalog's lines; model,
tokens and cache: a step's parameters)."""

_DEFINING = {*ATTENTION_FIX_NAMES.values(), *DECODING_FIX_NAMES.values(), *MULTI_HEAD_FIX_NAMES.values()}
"""Fix lines that define the name a NameError was about: they stay in that name."""


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


def _renamed(code: str, names: dict) -> str:
    """``code`` with each of :data:`ROLES`'s names, where it names a variable (not an attribute, nor a
    keyword argument), replaced by the learner's name for its role."""
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    stored = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)
              and isinstance(node.ctx, ast.Store)}
    # a name the line sets stays a name: "batch, n, d_model = x.shape" never becomes x.shape[0], ...
    stored = {ROLES.get(name, name) for name in stored}
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


def _repeated_as_theirs(obj, code: str, found: dict) -> str:
    """A repeat Fix (``group = ...; key, value = key.repeat_interleave(group, dim=1), ...``) under the names
    the learner's attention reads the repeated keys and values by (``chave_r, valor_r = ...``), without
    the group line when their own group is right."""
    grouped = "group = model.n_heads // model.n_kv_heads; "
    if code.startswith(grouped) and _group_right(obj, found.get("group")):
        code = code[len(grouped):]
    elif "group" not in found and re.search(r"\bgroup\b", code) and not re.search(r"\bgroup\s*=(?!=)", code) \
            and any("group" in fn.__globals__ for fn in own_functions(obj)):
        # no group of theirs, but one in their notebook's globals, which the line would read: written out
        # (replay 19's 08V3 repeated by a notebook cell's group = 2 where its model had 3 query heads per
        # key/value head)
        code = re.sub(r"(.?)(\s*)\bgroup\b", lambda m: m[1] + m[2] + (
            "model.n_heads // model.n_kv_heads" if m[1] in ("", "(", ",", "=") else
            "(model.n_heads // model.n_kv_heads)"), code)   # an operand of another operator: in brackets
    for repeated in ("key, value = key.repeat_interleave(", "k, v = k.repeat_interleave("):
        if code.startswith(repeated) and {"k_rep", "v_rep"} <= found.keys():
            code = f"{found['k_rep']}, {found['v_rep']} = {repeated.split(' = ')[1]}" + code[len(repeated):]
    return code


def _group_right(obj, name) -> bool:
    """Whether the learner's code sets ``name`` to the query heads per key/value head, the right way
    round (``grp = model.n_heads // model.n_kv_heads``)."""
    values = [node.value for tree in trees(obj) for node in ast.walk(tree)
              if name and isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [name]]
    if len(values) != 1 or not (isinstance(values[0], ast.BinOp) and isinstance(values[0].op, ast.FloorDiv)):
        return False
    left, right = ast.unparse(values[0].left), ast.unparse(values[0].right)
    return left.endswith("n_heads") and not left.endswith("n_kv_heads") and right.endswith("n_kv_heads")


def in_your_names(obj, fix: str) -> str:
    """``fix`` in the learner's names (:func:`your_names`) when its code part (before ``   #``) is one
    line of Python and not a line that defines a name a NameError was about; else as it is. A line
    the learner's code already holds says so before its comment, which holds the change."""
    code, hash_, comment = fix.partition("   #")
    if fix in _DEFINING and "KVCache" in names_used(obj):      # in a gpt.KVCache's own forms
        return _kv_forms(code) + hash_ + comment
    if not code or "\n" in code or fix in _DEFINING:
        return fix
    try:
        ast.parse(code)
    except SyntaxError:                      # words, not code ("run your function by hand ...")
        return fix
    found = your_names(obj)
    for written, (new, role) in _NEW_FORMS.items():
        code = code.replace(written, new) if role in found else code
    if "KVCache" in names_used(obj):          # a step whose cache is a gpt.KVCache: its own forms
        code = _kv_forms(code)
        if code.startswith(_KV_APPEND):
            hash_, comment = "   #", (" append keeps the new keys and values in the cache and returns this "
                                      "layer's, cached and new")
            if "past_k" in your_names(obj):
                joined = (" in place of your lines that join them to the cached ones, and any if/else around "
                          "them (on an empty cache append returns the new ones as they are):")
                comment = joined + comment
        # a new cache under the name the step returns, its own parameter included: a copy of a
        # KVCache (unlike a new empty list) keeps what was cached
        returned = {returned_cache(node) for tree in trees(obj) for node in ast.walk(tree)} - {None}
        if len(returned) == 1 and code.startswith("new_cache = gpt.KVCache()"):
            name = returned.pop()
            code = name + code[len("new_cache"):]
            # and their line that makes it the cache given (`välimuisti = cache`, replay 23's 08Z1): kept, it
            # undoes the copy
            alias = the_one([line for line, target, value in _plain_assignments(obj)
                             if target == name and value == _cache_parameter(obj)])
            also = f" and your line '{alias}'" if alias else ""
            hash_, comment = "   #", (f" in place of your own 'if cache is None' lines{also}: a copy, so the "
                                      "cache you were given stays as it was")
    plain, code = code, _repeated_as_theirs(obj, code, found)
    names = found
    for new, role, written in (("new_k", "k", "key"), ("new_v", "v", "value")):   # where only one is known,
        names.setdefault(new, names.get(role, written))                          # new and joined alike
    code = _renamed(code, names) if names else code
    if names.get("past", "past").isidentifier() and comment.startswith(" past = "):      # the comment's too
        comment = re.sub(r"\bpast\b", names.get("past", "past"), comment)
    if code != _renamed(plain, names) and _squeezed(code) in _squeezed("\n".join(sources(obj))):
        code = _renamed(plain, names)     # their repeat line already: the catalog's, repeating in place
    if code.startswith("past = ") and (embedding := embed_line(obj)) and not cache_remade(obj):
        code, comment = _past_where_embedded(*embedding, code, comment)
        hash_ = "   #"
    guarded = re.match(r"if (mask is not None): scores = (.*)$", code)
    unnamed = (code.startswith("scores = ") or guarded) and "scores" not in names
    inline = inline_scores(obj) if unnamed else None
    fills = re.match(r"(if mask is not None: )?scores = scores\.masked_fill\(~mask, ", code)
    if unnamed and not inline and fills and (fused := _fused_line(obj)):
        return f"{fused}   # in place of your line that calls it: the mask you are given, as attn_mask"
    if inline and not names_a("scores", obj):
        if guarded:   # one line still: the guard as a conditional expression
            code = f"scores = {guarded[2]} if {guarded[1]} else scores"
        code, comment = _in_place_of(*inline, code, comment)
        hash_ = "   #"
    held = _squeezed(code) in _squeezed("\n".join(sources(obj))) and not _first_branch_only(obj, code) \
        and not _cut_short(obj, code)
    if comment and held:
        # pasting it would change nothing: the change is in the comment (cache_holds_repeated_heads's
        # append, last_position_only's unembed), so the Fix says so first
        return code + hash_ + " your code has this line already; the change is:" + comment
    return code + hash_ + comment


def _plain_assignments(obj) -> list:
    """``(line, target, value)`` for each one-line ``name = other_name`` of the learner's function."""
    return [(segment(source, node), node.targets[0].id, node.value.id)
            for source, _, node in one_line_statements(obj)
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Name)]


def _cache_parameter(obj) -> str | None:
    """The name of a step's third parameter, the cache it is given; else None."""
    code = code_of(obj)
    return code.co_varnames[2] if type(obj) is types.FunctionType and code.co_argcount == 3 else None


def _fused_line(obj) -> str | None:
    """The learner's one line that calls ``F.scaled_dot_product_attention``, handing it ``attn_mask=mask``
    in place of any mask or ``is_causal`` it had, when their function takes ``mask``; else None."""
    found = []
    for source, tree, node in one_line_statements(obj):
        function = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(function, ast.FunctionDef) or "mask" not in {a.arg for a in function.args.args} \
                or isinstance(node, ast.If):
            continue
        for call in (c for c in ast.walk(node) if isinstance(c, ast.Call) and fused(c) is not None):
            line, text = segment(source, node), segment(source, call)
            keywords = [k for k in call.keywords if k.arg not in ("attn_mask", "is_causal")]
            masked = ast.Call(call.func, call.args[:3],
                              [*keywords, ast.keyword("attn_mask", ast.Name("mask"))])
            found.append(line.replace(text, ast.unparse(masked)))
    return the_one(found)


def called_on_self(forward, name: str) -> str | None:
    """forward's first one-line statement (not a block's head) that calls the global ``name``, with
    ``self.name`` in its place; None when there is none or no text to read."""
    blocks = (ast.FunctionDef, ast.If, ast.For, ast.While, ast.With)
    for source, _, node in one_line_statements(forward):
        if not isinstance(node, blocks) and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                                and c.func.id == name for c in ast.walk(node)):
            line = segment(source, node)
            return re.sub(rf"(?<![\w.]){re.escape(name)}\(", f"self.{name}(", line)
    return None


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


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _cut_short(obj, code: str) -> bool:
    """Whether ``code`` sets a name (``maska = mask``) and is found in the learner's text only as the start
    of a longer line of theirs (``maska = mask.unsqueeze(1)``): a line they do not have as it is."""
    try:
        statement = ast.parse(code).body
    except SyntaxError:
        return False
    if len(statement) != 1 or not isinstance(statement[0], ast.Assign):
        return False
    squeezed = _squeezed(code)
    lines = [_squeezed(segment(source, node) or "")
             for source, _, node in one_line_statements(obj)]
    return squeezed not in lines and any(line.startswith(squeezed) for line in lines)


def _first_branch_only(obj, code: str) -> bool:
    """Whether ``code`` is found in the learner's text only as the first branch of one of their lines
    (``new = []`` in ``new = [] if cache is None else list(cache)``): a line they do not have as it is."""
    squeezed = _squeezed(code)
    lines = [_squeezed(segment(source, node) or "")
             for source, _, node in one_line_statements(obj)]
    return squeezed not in lines and any(line.startswith(squeezed + "if") for line in lines)


_NEW_FORMS = {
    "[past_keys, key]": ("[past_keys, new_key]", "k"),
    "[past_values, value]": ("[past_values, new_value]", "v"),
    "key, value = split_heads(": ("new_key, new_value = split_heads(", "new_k"),
}
"""The catalog's lines name a step's keys ``key`` before and after it joins the cache's to them (as the
notebook's solution does); where a learner's step names the two apart (``k_new``, ``k_all``), the
keys a line splits from W_k, or joins to the cached ones, are the new ones."""

_KV_APPEND = "key, value = new_cache.append(layer, new_key, new_value)"

_KV_FORMS = {
    "new_cache.append((key, value))": _KV_APPEND,
    "cache[0][0].shape[-2]": "cache.length",
    "cache[layer]": "(cache.keys[layer], cache.values[layer])",
    "new_cache = []": "new_cache = gpt.KVCache() if cache is None else cache.copy()",
}
"""A list cache's forms in Fix lines, and a gpt.KVCache's (not subscriptable: a replay's step got a
TypeError, then a verdict with no Fix)."""

def _kv_forms(code: str) -> str:
    for listed, kv_form in _KV_FORMS.items():
        code = code.replace(listed, kv_form)
    return code


_MEANS = re.compile(r"^(\w+) in a Fix line means your ")


def fix_in_your_names(obj, result):
    """:func:`_fix_in_your_names`, then the module's own attribute names for its head count and width
    (:func:`_own_attributes`)."""
    result = _fix_in_your_names(obj, result)
    if not result.passed and result.fix:
        result.fix = _own_attributes(obj, result.fix)
    return result


def _own_attributes(obj, fix: str) -> str:
    """``fix`` with ``self.n_heads`` and ``self.d_k`` under the names the learner's module class keeps
    them as (``self.pocet_hlav = n_heads``, ``self.rozmer_hlavy = d_model // n_heads`` in its __init__),
    where it has no attribute of the Fix's name; a Fix line that sets them is left as it is (a replay's
    module got view(batch, n, self.n_heads, self.d_k): an AttributeError)."""
    init = vars(obj).get("__init__") if type(obj) is type else None
    try:
        tree = syntax_tree(source_of(init))
    except (TypeError, OSError, SyntaxError):
        return fix
    function = tree.body[0]
    if not isinstance(function, ast.FunctionDef):       # __init__ = lambda ...: ..., or a file edited since
        return fix
    given = [a.arg for a in function.args.args]
    if len(given) < 3:
        return fix
    d_model, n_heads = given[1], given[2]
    kept, own = {}, set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = zip(target.elts, value.elts, strict=False) if isinstance(target, ast.Tuple) \
            and isinstance(value, ast.Tuple) else [(target, value)]
        for name, made in pairs:
            if not (isinstance(name, ast.Attribute) and isinstance(name.value, ast.Name)
                    and name.value.id == "self"):
                continue
            own.add(name.attr)
            if ast.unparse(made) == n_heads:
                kept["n_heads"] = name.attr
            elif ast.unparse(made) == f"{d_model} // {n_heads}":
                kept["d_k"] = name.attr
    try:
        stored = {n.attr for n in ast.walk(ast.parse(fix.partition("   #")[0]))
                  if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    except SyntaxError:                       # words and code: "split each: .view(batch, n, self.n_heads..."
        stored = set()
    for ours, theirs in kept.items():
        if ours not in own and ours not in stored:
            fix = re.sub(rf"\bself\.{ours}\b", f"self.{theirs}", fix)
    return fix


def _fix_in_your_names(obj, result):
    """``result`` with its Fix line in the learner's names (:func:`in_your_names`) when it failed; a
    Fix that says what a name of an earlier Fix line stands for ("scores in a Fix line means your
    scores ...") also says which of the learner's names that is, when their code shows it."""
    result = _fix_in_their_names(obj, result)
    if result.checked == "check_attention" and result.fix:
        result.fix = _mask_as_named(obj, result.fix)
    return result


def _mask_as_named(obj, fix: str) -> str:
    """``fix`` with ``mask`` under the name the learner's attention gives its fourth parameter (read through
    a method it hands its work to), where their code has no ``mask`` of its own (replay 24's 02A1:
    ``maska`` in Uwaga.__call__, given ``~mask``, a NameError)."""
    function = (delegated_to(obj) or [obj])[0] if type(obj) is types.FunctionType else None
    code = code_of(function)
    given = [a for a in code.co_varnames[:code.co_argcount] if a != "self"] if code else []
    if len(given) != 4 or given[3] == "mask":
        return fix
    try:
        tree = syntax_tree(source_of(function))
    except (OSError, TypeError, SyntaxError):
        return fix
    if any(isinstance(n, ast.Name) and n.id == "mask" for n in ast.walk(tree)):
        return fix
    head, hash_, comment = fix.partition("   #")
    try:
        return _renamed(head, {"mask": given[3]}) + hash_ + comment
    except (SyntaxError, tokenize.TokenError):            # words, not code
        return fix


def _fix_in_their_names(obj, result):
    if result.passed or not result.fix:
        return result
    if own := own_line_fix(obj, result, in_your_names(obj, result.fix)):
        result.fix = own
        if (swapped := swapped_unpack(obj)) and own.startswith(swapped[1]):
            names = swapped[0].split("=")[0].strip()
            said = (f"Your forward unpacks x.shape as {names}, but x is (batch, n, d_model): the first axis "
                    "is the batch. What else this verdict says may follow from that: fix it first.")
            result.observed.insert(0, said)
        if result.bug == "dtype_changed" and "built in your input's dtype" not in own:   # a cast's dtype
            cast = ("Your code casts to another dtype on the way (the line below): the rest of the work, and "
                    "the output, then leave the inputs' dtype.")
            result.observed = [cast if line.startswith("A tensor built inside your code") else line
                               for line in result.observed]
        return result
    said = _MEANS.match(result.fix)
    if said:
        yours = your_names(obj).get(ROLES.get(said[1], ""), "")
        if yours.isidentifier() and yours != said[1]:
            result.fix += f" (in your code: {yours})"
        elif yours and not yours.isidentifier() and len(yours) <= 60:     # an expression: model.unembed(x)
            result.fix += f" (in your code: {yours}, which has no name of its own)"
        return result
    result.fix = in_your_names(obj, result.fix)
    return result


def mask_fix_in_your_names(obj, result, parameters: tuple = ()):
    """A mask checker's Fix in the learner's function's terms: its ``n`` and ``lengths`` under the
    names of their parameters (a replay's ``size``: the Fix's n read the notebook's n = 5); a Fix
    ``mask = ...`` under the name their function returns, or as a return line when it returns an
    expression; a bare expression as a return line (pasted as the value of their first assignment, the
    lines after it undid it: ``m.triu_(1)``, ``.unsqueeze(0)``); ``return mask ...`` (mask_not_bool's
    ``.bool()``) on the mask their function returns, where ``mask`` was a name their function never
    had (a NameError when pasted: a reader of 04)."""
    if result.passed or not result.fix:
        return result
    if unreturned := unreturned_fix(obj, result):
        result.fix = unreturned
        return result
    if "lengths" in parameters and (column := lengths_as_a_column(obj, result)):
        result.fix = column
        return result
    if "lengths" in parameters and (kept := lengths_kept_as_given(obj, result)):
        result.fix = kept
        return result
    if "lengths" in parameters and (sliced := keys_sliced_in_the_loop(obj, result)):
        result.fix = sliced
        return result
    result.fix = _lengths_rebound(obj, _in_your_parameters(obj, result.fix, parameters))
    code, hash_, comment = result.fix.partition("   #")
    # (and a padding mask kept by n alone, handed out for other lengths: replay 25's 04B4, whose return line
    # was "replaced" by itself, the guard above it left as it was)
    kept = any("built on an earlier call" in line or "a mask kept from" in line for line in result.observed)
    if kept and (guard := handed_back_guard(obj)):
        # "in place of your line return _mask_zakhire" named two lines, and neither alone mended it
        # (replay 18's 04U2): the right mask in place of the guard that hands back the kept one
        value = code[len("mask = "):] if code.startswith("mask = ") else code.removeprefix("return ")
        result.fix = (f"return {value}   # in place of your lines 'if {guard}:' and the one under it: built "
                      "from this call's arguments each time, not handed back from an earlier call")
        return result
    expression, where = returned(obj), "your return line"
    named = obj.__name__ if type(obj) in (types.FunctionType, type) else ""   # not an object's __getattr__
    if expression is not None and cell_returns(obj) > 1 and named.isidentifier():
        where = f"your return line in {obj.__name__}"       # a helper's or a class's return beside it
    if expression is None and (expression := last_returned(obj)):     # case 0: ..., case 1: ..., then this
        where = f"your line return {expression}"
    if code.startswith("mask = ") and expression and expression.isidentifier():
        result.fix = expression + result.fix[len("mask"):]     # the name the function returns its mask as
        return result
    if (code.startswith("mask = ") or _expression(code)) and expression:
        # returned as an expression (return real.unsqueeze(-1)): a mask = line pasted over real's line left
        # the return reading the notebook's own real (replay 5's 04N3)
        value = code[len("mask = "):] if code.startswith("mask = ") else code
        result.fix = f"return {value}   # in place of {where}" + (f";{comment}" if comment else "")
        return result
    if not code.startswith("return mask"):
        return result
    if expression and expression != "mask":
        primary = isinstance(ast.parse(expression, mode="eval").body, (ast.Name, ast.Attribute, ast.Call,
                                                                       ast.Subscript))
        shown = expression if primary else f"({expression})"
        result.fix = "return " + shown + code[len("return mask"):] + hash_ + comment
    return result


def _expression(code: str) -> bool:
    """Whether ``code`` is one Python expression (not a statement, not words)."""
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return bool(code.strip())


def _lengths_rebound(obj, fix: str) -> str:
    """A padding Fix that indexes the lengths (``lengths[:, None]``) for a function that sets its lengths
    parameter anew (``lengths = lengths.tolist()``): the lengths made a tensor again where the Fix reads
    them, ``torch.as_tensor(lengths)[:, None]`` (a replay's 04 p12: a list indexed [:, None] raised
    TypeError, and the next verdict only said to run the function by hand)."""
    code = code_of(obj)
    if code is None or code.co_argcount < 1:
        return fix
    lengths = code.co_varnames[0]
    targets = [target for tree in trees(obj) for node in ast.walk(tree)
               for target in (node.targets if isinstance(node, ast.Assign) else
                              [node.target] if isinstance(node, ast.AugAssign) else [])]
    rebound = any(isinstance(t, ast.Name) and t.id == lengths for target in targets for t in ast.walk(target))
    head, hash_, comment = fix.partition("   #")
    if not rebound or f"{lengths}[:, None]" not in head:
        return fix
    return head.replace(f"{lengths}[:, None]", f"torch.as_tensor({lengths})[:, None]") + hash_ + comment


def _in_your_parameters(obj, fix: str, exercise: tuple) -> str:
    """A mask Fix with the exercise's parameters (``exercise``: ``("n",)``, ``("lengths", "n")``) under
    the names the learner's function gives them, by position, when it takes as many."""
    through = delegated_to(obj) if type(obj) is types.FunctionType else []
    code = code_of(through[0] if through else obj)     # a method it hands its work to
    given = [a for a in code.co_varnames[:code.co_argcount] if a != "self"] if code is not None else ()
    if len(given) != len(exercise):
        return fix
    names = {ours: theirs for ours, theirs in zip(exercise, given, strict=True) if ours != theirs}
    if not names:
        return fix
    head, hash_, comment = fix.partition("   #")
    try:
        return _renamed(head, names) + hash_ + comment
    except (SyntaxError, tokenize.TokenError):            # words, not code
        return fix
