"""Own-line rules for a decoding step (notebook 08): the step's cache, its loop over the blocks, its
embedding and its stream, each rewritten in one of the learner's own lines (see :mod:`._ownlines`,
whose table ``RULES`` says when each applies)."""

from __future__ import annotations

import ast
import re
import types

from ._learner_lines import joined_axis, statements, your_lines
from ._readers import (
    assigned,
    cache_remade,
    embed_line,
    embedded,
    parsed,
    root_name,
    the_one,
    trees,
    your_names,
)
from ._stale import code_of, names_used, segment

__all__ = ["along_the_positions", "buffers_copied", "cached_first", "causal_sized_by_your_call",
           "deep_copy_of_the_cache", "each_token_at_its_position", "embedded_at_the_caches_length",
           "embedded_from_the_caches_length", "entries_copied", "entries_read_right", "every_block",
           "full_precision_cache", "joined_along_positions", "joined_values_kept", "keys_first",
           "keys_stored_twice", "mlp_after_attention", "pointer_moved_on", "projected_without_repeat",
           "past_without_an_offset", "projections_of_the_normed", "read_keys_first", "repeated_after_caching",
           "returns_its_own_cache", "sublayer_added", "unembedded_once"]


def returns_its_own_cache(obj, result, renamed) -> str | None:
    """For a step that makes a cache, appends to it and returns the one it was given instead: its
    return line with its own cache (``return model.unembed(x), kv``); else None."""
    names = your_names(obj)
    if not {"given_back", "made_cache", "logits"} <= names.keys():
        return None
    return (f"return {names['logits']}, {names['made_cache']}   # the cache you made and appended to, not "
            f"{names['given_back']}, the one you were given")


def pointer_moved_on(obj, result, renamed) -> str | None:
    """For a step whose returned cache holds its position as it came (``{'k': kbuf, 'v': vbuf, 'pos':
    pos}``, ``pos`` what it embeds at): its return line with the position moved on by the new tokens
    (``end`` when the step names ``pos + ...`` so, else ``pos + tokens.shape[1]``); else None (the
    catalog's list line, which a buffer cache has no place for)."""
    code = code_of(obj)
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
    for source, node in statements(obj):
        value = node.value if isinstance(node, ast.Return) else None
        cache = value.elts[1] if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
        kept = cache.values if isinstance(cache, ast.Dict) else getattr(cache, "elts", [])
        same = [e for e in kept if isinstance(e, ast.Name) and e.id == position]
        if len(same) == 1:
            line, at = segment(source, node), same[0].col_offset - node.col_offset
            found.append(line[:at] + moved + line[at + len(position):])
    line = the_one(found)
    return line + f"   # in place of your return line: the position moves on past the new tokens " \
                  f"({position} is where this call wrote them)" if line else None


def joined_along_positions(obj, result, renamed) -> str | None:
    """For a step whose logits hold the right rows in another arrangement (pieces joined on the batch
    axis, say): its one line that joins with ``torch.cat(..., dim=0)`` (or ``0``), joining along the
    positions (``dim=1``); else None."""
    if result.checked != "check_decoding_step":
        return None
    found = []
    for source, node in statements(obj):
        for call in ast.walk(node):
            axis = joined_axis(call)
            if isinstance(axis, ast.Constant) and axis.value == 0:
                line, at = segment(source, node), axis.col_offset - node.col_offset
                found.append(line[:at] + "1" + line[at + 1:])
    line = the_one(found)
    return line + "   # in place of your line: the new positions side by side (dim=1), each batch row " \
                  "apart (dim=0 stacked them as extra rows of the batch)" if line else None


def keys_stored_twice(obj, result, renamed) -> str | None:
    """The learner's one line that caches one tensor as both keys and values (``present.append((pk,
    pk))``), with their values in the second place; else None (or when their values have no one name)."""
    values = your_names(obj).get("v")
    found = []
    for source, node in statements(obj):
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        if not (call and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
                and len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List))):
            continue
        pair = call.args[0].elts
        if len(pair) == 2 and all(isinstance(e, ast.Name) for e in pair) and pair[0].id == pair[1].id:
            line, second = segment(source, node), segment(source, call.args[0])
            brackets = "()" if isinstance(call.args[0], ast.Tuple) else "[]"
            found.append(line.replace(second, f"{brackets[0]}{pair[0].id}, {values}{brackets[1]}"))
    line = the_one(found) if values and values.isidentifier() else None
    return line + "   # in place of your line: the keys, then the values; the keys twice stored the keys " \
                  "in the values' place" if line else None


_HALF = {"torch.float16", "torch.half", "torch.bfloat16"}


def _without_half(source, node) -> str | None:
    """``node``'s line without what makes a tensor half precision: each ``dtype=torch.float16`` (or
    bfloat16) keyword dropped, each ``.half()``, ``.bfloat16()`` or ``.to(torch.float16)`` call taken off;
    else None."""
    line, changes = segment(source, node), []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func, text = call.func, segment(source, call)
        half = [k for k in call.keywords if k.arg == "dtype" and ast.unparse(k.value) in _HALF]
        if half:
            kept = [segment(source, a) for a in call.args] + [
                segment(source, k) for k in call.keywords if k is not half[0]]
            changes.append((text, f"{segment(source, func)}({', '.join(kept)})"))
        elif isinstance(func, ast.Attribute) and (
                func.attr in ("half", "bfloat16") and not call.args and not call.keywords
                or func.attr == "to" and len(call.args) == 1 and ast.unparse(call.args[0]) in _HALF):
            changes.append((text, segment(source, func.value)))
    for text, replacement in changes:         # outermost first (ast.walk): an inner one is then gone or kept
        line = line.replace(text, replacement, 1)
    return line if changes else None


def full_precision_cache(obj, result, renamed) -> str | None:
    """For a cache kept in float16 or bfloat16: the learner's line (or two lines, keys and values) that
    makes it so (``kbuf = torch.zeros(shape, dtype=torch.bfloat16)``, ``K = K.to(torch.bfloat16)``),
    without it; else None."""
    found = [line for source, node in statements(obj) if (line := _without_half(source, node))]
    return your_lines(found, "the model's float32, kept as it was made", most=2)


def each_token_at_its_position(obj, result, renamed) -> str | None:
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
                    and call.func.attr == "embed" and len(call.args) in (1, 2)
                # its position given as the second argument or as start= (replay 22's 08Y3)
                at = (call.args[1] if len(call.args) == 2 else next(
                    (k.value for k in call.keywords if k.arg == "start"), None)) if embeds else None
                uses = [any(isinstance(n, ast.Name) and n.id == index for n in ast.walk(arg))
                        for arg in ((call.args[0], at) if at is not None else ())]
                if uses == [True, False]:                 # the token at t, embedded at a position without t
                    line = segment(source, node)
                    position = segment(source, at)
                    found.append(line[::-1].replace(position[::-1], f"{position} + {index}"[::-1], 1)[::-1])
    line = the_one(found)
    return line + "   # in place of your line: each token at its own position" if line else None


def _last_axis(node) -> ast.AST | None:
    """The axis node of ``X.shape[-1]`` or ``X.size(-1)`` (a cached tensor's last axis: d_head in any
    layout); else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "shape":
        axis = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and len(node.args) == 1:
        axis = node.args[0]
    else:
        return None
    return axis if ast.unparse(axis) == "-1" else None


def _past_along_the_positions(obj, axis_of, right=()) -> tuple | None:
    """``(line, along)``: the step's one line that sets the past it embeds at reading a cached tensor's
    axis (``axis_of(node)`` gives it, else None) other than ``right``, with the axis the step joins its
    keys along (``2`` for ``torch.cat(..., dim=2)``, else ``-2``); else None."""
    embed = embed_line(obj)
    if not embed or not embed[2]:
        return None
    past = embed[1]
    axes = {ast.unparse(axis) for _, node in statements(obj) for call in ast.walk(node)
            if (axis := joined_axis(call)) is not None}
    along = axes.pop() if len(axes) == 1 else "-2"
    found = []
    for source, node in statements(obj):
        if assigned(node) != past:
            continue
        read = [axis for part in ast.walk(node.value) if (axis := axis_of(part)) is not None]
        if len(read) == 1 and ast.unparse(read[0]) not in {along, *right}:
            line, at = segment(source, node), segment(source, read[0])
            cut = read[0].col_offset - node.col_offset
            found.append(line[:cut] + along + line[cut + len(at):])
    line = the_one(found)
    return (line, along) if line else None


def past_from_the_positions_axis(obj, result, renamed) -> str | None:
    """For positions that do not continue after the cache, where the step's own past (the position it
    embeds at) is read from a cached tensor's last axis (``nawpaq = cache[0][0].shape[-1]``: d_head):
    that line reading the axis the step joins its keys along (``shape[2]`` for ``torch.cat(..., dim=2)``,
    else ``shape[-2]``); else None. Replay 19's 08V1 was given the catalog's ``x = model.embed(tokens,
    past)``: its own embed line under another name (a NameError pasted)."""
    found = _past_along_the_positions(obj, _last_axis)
    return found[0] + "   # in place of your line: the positions cached are the keys' axis " \
        f"{found[1]}, the one they are joined along; the last axis is d_head" if found else None


def embedded_from_the_caches_length(obj, result, renamed) -> str | None:
    """For positions that do not continue after the cache, where the step embeds with no position at all
    (``x = model.embed(tokens)``) and has no name for the positions cached: that line embedding at the
    length of the cache it is given (``cache.length`` for a gpt.KVCache; else its first layer's keys read
    along the axis it joins them on), a cache it reads as a gpt.KVCache or by index only; else None.
    Replay 23's 08Z1 was given the catalog's ``x = model.embed(tokens, past)``, and ``past`` was nowhere
    in its code: pasted, a NameError."""
    function = next((t.body[0] for t in trees(obj) if t.body and isinstance(t.body[0], ast.FunctionDef)),
                    None)
    given = [a.arg for a in function.args.args if a.arg != "self"] if function else []
    if len(given) != 3 or "past" in your_names(obj):
        return None
    if cache_remade(obj):        # a tuple of None for each block is not a cache to read
        return None
    source = next(source for source, _ in parsed(obj))
    cache, found = given[2], []
    indexed = any(isinstance(n, ast.Subscript) and getattr(n.value, "id", None) == cache
                  for n in ast.walk(function))
    axes = {ast.unparse(axis) for _, node in statements(obj) for call in ast.walk(node)
            if (axis := joined_axis(call)) is not None}
    count = f"{cache}.length" if "KVCache" in source else \
        f"{cache}[0][0].shape[{axes.pop() if len(axes) == 1 else -2}]" if indexed else None
    for _, node in statements(obj):
        calls = [c for c in ast.walk(node) if embedded(c)] if isinstance(node, ast.Assign) else []
        if count and len(calls) == 1 and len(calls[0].args) == 1 and not calls[0].keywords:
            line, call = segment(source, node), calls[0]
            at = call.end_col_offset - 1 - node.col_offset            # the call's closing parenthesis
            found.append(f"{line[:at]}, 0 if {cache} is None else {count}{line[at:]}")
    line = the_one(found)
    return (f"{line}   # in place of your line: embedded after the positions the cache you are given holds "
            "(with none given, from 0)") if line else None


def _an_axis(node) -> ast.AST | None:
    """The axis node of ``X.shape[k]`` or ``X.size(k)`` with ``X`` an entry read from a cache
    (``cache[0][0]``, ``cache[0].keys``), k a whole number; else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
            node.value.attr == "shape":
        tensor, axis = node.value.value, node.slice
    elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "size" and len(node.args) == 1:
        tensor, axis = node.func.value, node.args[0]
    else:
        return None
    whole = isinstance(axis, ast.Constant) or isinstance(axis, ast.UnaryOp) and isinstance(axis.operand,
                                                                                           ast.Constant)
    return axis if whole and isinstance(tensor, (ast.Subscript, ast.Attribute)) else None


def past_read_along_the_positions(obj, result, renamed) -> str | None:
    """For the cached length read from another axis than the positions' (``mult = cache[0][0].shape[1] if
    cache else 0``: the heads): that line with the axis the step joins its keys along, the rest of it as
    it was; else None. Replay 23's 08Z2 was given the catalog's ``0 if cache is None else ...`` in place of
    its own guard, and its cache, made {} on the first call, then raised KeyError."""
    found = _past_along_the_positions(obj, _an_axis, right=("-2", "2"))
    return found[0] + "   # in place of your line: the positions cached are the keys' axis " \
        f"{found[1]}, the one they are joined along: (batch, heads, positions, d_head)" if found else None


def logits_of_every_token(obj, result, renamed) -> str | None:
    """For a step that returns one position's logits where every new token's belong, and runs its tokens
    one at a time in a loop (each embedded inside it): where to keep each token's logits, in the
    learner's names (their unembed line after the loop reads the last token's x alone); else None.
    Replay 21's 08X3 was given the whole step's recipe, which says nothing of a loop; named
    last_position_only, such a step was given its own unembed line, 'your code has this line already'."""
    if result.bug != "last_position_only" and \
            not any("you have 1 where" in line and "new positions" in line for line in result.observed):
        return None
    for source, tree in parsed(obj):
        loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)
                 and any(embedded(c) for c in ast.walk(n) if isinstance(c, ast.Call))]
        outer = [loop for loop in loops if not any(other is not loop and loop in list(ast.walk(other))
                                                    for other in loops)]
        if len(outer) != 1:
            continue
        loop = outer[0]
        after = [node for node in ast.walk(tree)
                 if isinstance(node, ast.Assign) and node.lineno > loop.end_lineno and assigned(node)
                 and any(isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "unembed"
                         for c in ast.walk(node.value))]
        if len(after) != 1:
            continue
        node, name = after[0], assigned(after[0])
        made = segment(source, node.value)
        every = f"{name}_each"
        return (f"{every}.append({made})   # at the end of your loop's body, with {every} = [] above the "
                f"loop and {name} = torch.cat({every}, dim=1) in place of your line {name} = {made}: after "
                "the loop it reads the last token's alone")
    return None


def triangle_from_the_bottom_right(obj, result, renamed) -> str | None:
    """For a top-left triangle where the bottom-right one belongs, built by the learner from ``(A, B)``
    ones (``torch.triu(torch.ones(n_new, n_all, dtype=torch.bool), diagonal=1)``, or ``.tril()``): that
    line with the diagonal moved by ``B - A`` (the cached positions); else None. Replay 21's 08X2 was
    given a masked_fill line of its own, with no word of the triangle line it takes the place of."""
    found = []
    for source, node in statements(obj, with_helpers=True):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = getattr(func, "attr", getattr(func, "id", ""))
            if name not in ("triu", "tril"):
                continue
            method = isinstance(func, ast.Attribute) and ast.unparse(func.value) != "torch"
            ones = func.value if method else (call.args[0] if call.args else None)
            sizes = ones.args if isinstance(ones, ast.Call) and getattr(ones.func, "attr", "") in (
                "ones", "ones_like") and len(ones.args) == 2 else None
            if not sizes:
                continue
            given = [k.value for k in call.keywords if k.arg == "diagonal"] + call.args[(0 if method else 1):]
            rows, cols = (segment(source, a) for a in sizes)
            diagonal = segment(source, given[0]) if given else "0"
            moved = f"{cols} - {rows}" if diagonal == "0" else f"{diagonal} + {cols} - {rows}"
            head = segment(source, func.value if method else ones)
            made = f"{head}.{name}(diagonal={moved})" if method else f"torch.{name}({head}, diagonal={moved})"
            line = segment(source, node)
            found.append(line.replace(segment(source, call), made, 1))
    line = the_one(found)
    why = ("the triangle from the bottom-right corner, moved along by the cached positions, so each new "
           "query sees every cached key and itself")
    return f"{line}   # in place of your line: {why}" if line else None


def joined_values_kept(obj, result, renamed) -> str | None:
    """For a step that joins its values to the cached ones but keeps only the new ones: its one line that
    stores its joined keys beside its new values (``out[name] = KV(K, v_new)``), with the joined values
    (``KV(K, V)``); else None (then the joining line is what is missing, the catalog's line)."""
    names = your_names(obj)
    keys, joined, new = names.get("k"), names.get("v"), names.get("new_v")
    if not (keys and joined and new) or joined == new:
        return None
    found = []
    for source, node in statements(obj):
        read = [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        ids = [n.id for n in read]
        if keys in ids and ids.count(new) == 1 and joined not in ids and not isinstance(node, ast.Return):
            at = next(n for n in read if n.id == new)
            line, start = segment(source, node), at.col_offset - node.col_offset
            found.append(line[:start] + joined + line[start + len(new):])
    line = the_one(found)
    return line + f"   # in place of your line: {joined}, the values joined to the cached ones, not " \
                  f"this call's {new} alone" if line else None


def every_block(obj, result, renamed) -> str | None:
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
            empty, head = either.values[-1], segment(source, loop).splitlines()[0]
            at = empty.col_offset - loop.col_offset
            blocks = f"[None] * len({segment(source, blocks)})"
            found.append(head[:at] + blocks + head[at + len(segment(source, empty)):])
    line = the_one(found)
    return line + "   # in place of your loop's first line: with no cache, one empty entry per block, so " \
                  "that every block runs" if line else None


def mlp_after_attention(obj, result, renamed) -> str | None:
    """For an MLP that reads the block's input where the stream attention wrote to belongs: the
    learner's one line ``x = po_dem + block.mlp(block.norm_mlp(x))``, the norm reading what the line
    adds to (``po_dem``); else None."""
    found = []
    for source, node in statements(obj):
        value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        added = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
        if not (added and isinstance(value.left, ast.Name)):
            continue
        for call in ast.walk(value.right):
            func = call.func if isinstance(call, ast.Call) else None
            read = call.args[0] if isinstance(func, ast.Attribute) and func.attr == "norm_mlp" and \
                len(call.args) == 1 else None
            if isinstance(read, ast.Name) and read.id != value.left.id:
                line, at = segment(source, node), read.col_offset - node.col_offset
                found.append(line[:at] + value.left.id + line[at + len(read.id):])
    line = the_one(found)
    return line + "   # in place of your line: the MLP reads the stream attention wrote to" if line else None


def cached_first(obj, result, renamed) -> str | None:
    """For a step that puts its new keys and values before the cached ones: its lines that join them so
    (``clavis = torch.cat([clavis, prius[0]], dim=-2)``), the two pieces swapped; else None."""
    found = []
    for source, node in statements(obj):
        target = assigned(node)
        call = node.value if target and isinstance(node.value, ast.Call) else None
        func = getattr(call, "func", None)
        pieces = call.args[0] if isinstance(func, ast.Attribute) and func.attr in ("cat", "concat") and \
            call.args and isinstance(call.args[0], (ast.List, ast.Tuple)) else None
        if pieces is None or len(pieces.elts) != 2 or ast.unparse(pieces.elts[0]) != target:
            continue
        line, (new, old) = segment(source, node), (segment(source, e)
                                                                  for e in pieces.elts)
        at, end = pieces.elts[0].col_offset - node.col_offset, pieces.elts[1].end_col_offset - node.col_offset
        found.append(line[:at] + f"{old}, {new}" + line[end:])
    return your_lines(found, "the cached positions first, the new ones after them", most=2)


def deep_copy_of_the_cache(obj, result, renamed) -> str | None:
    """For a step whose cache is changed in place by later calls: its one line that copies the cache it
    is given only at the top (``replace(cache)``, ``copy.copy(cache)``, ``list(cache)``: its lists are
    still the given ones; replay 22's 08Y3 was told to start a new empty list, and its own lines then
    read entries the list did not have), with ``copy.deepcopy(cache)``; else None."""
    code = code_of(obj)
    if type(obj) is not types.FunctionType or code.co_argcount < 3:
        return None
    given, found = code.co_varnames[2], []
    for source, node in statements(obj):
        for call in ast.walk(node):
            func = call.func if isinstance(call, ast.Call) else None
            name = ast.unparse(func) if func is not None else ""
            if name in ("replace", "dataclasses.replace", "copy.copy", "copy", "list") and call.args \
                    and ast.unparse(call.args[0]) == given:
                line = segment(source, node)
                found.append(line.replace(segment(source, call), f"copy.deepcopy({given})", 1))
    line = the_one(found)
    if not line:
        return None
    imported = isinstance(obj.__globals__.get("copy"), types.ModuleType)
    return ("" if imported else "import copy; ") + line + "   # in place of your line: a copy whose lists " \
        "are new too, so the cache you were given stays as it was"


def _written_into(node, given: str) -> bool:
    """Whether ``node`` writes into the cache ``given`` or its entries: ``cache[i][0] = k``, ``cache[i] =
    (k, v)``, ``cache.append(...)``, ``cache[i].append(...)`` (two indexes at most)."""
    targets = node.targets if isinstance(node, ast.Assign) else []
    if any(isinstance(t, ast.Subscript) and _named(t, {given}, most=2) for t in targets):
        return True
    call = node.value if isinstance(node, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr in ("append", "extend") and \
        _named(func.value, {given}, most=1)


def _a_dict(obj, given: str) -> bool:
    """Whether the learner's step reads the cache ``given`` as a dict (``cache["n"]``) or makes it one
    (``cache = {...}``): its entries are then not a list's, to copy one by one."""
    for _, tree in parsed(obj):
        for node in ast.walk(tree):
            index = node.slice if isinstance(node, ast.Subscript) else None
            keyed = index is not None and isinstance(node.value, ast.Name) and node.value.id == given and \
                isinstance(index, ast.Constant) and isinstance(index.value, str)
            made = assigned(node) == given and any(isinstance(part, (ast.Dict, ast.DictComp))
                                                   for part in ast.walk(node.value))
            if keyed or made:
                return True
    return False


def _aliased_writes(obj, given: str) -> bool:
    """Whether the step writes into a tensor it took from the cache ``given``: ``k_buf, v_buf =
    cache["buffers"][layer]``, then ``k_buf[:, :, n:n + t] = k`` (memory the cache holds, written in
    place)."""
    taken = set()
    for _, node in statements(obj):
        if not isinstance(node, ast.Assign):
            continue
        if any(isinstance(part, ast.Subscript) and _named(part, taken) for part in node.targets):
            return True
        if any(isinstance(part, ast.Name) and part.id == given for part in ast.walk(node.value)):
            taken |= {part.id for target in node.targets for part in ast.walk(target)
                      if isinstance(part, ast.Name) and part.id != given}
    return False


def _named(target, names: set, most: int = -1) -> bool:
    """Whether an index chain (``k_buf[:, :, n:]``, ``kv[0][i]``) of at most ``most`` indexes (any number
    for -1) starts at one of ``names``."""
    while isinstance(target, ast.Subscript) and most:
        target, most = target.value, most - 1
    return isinstance(target, ast.Name) and target.id in names


def _copied_under_the_guard(obj, given: str, copied: str, why: str) -> str | None:
    """The line ``given = copied`` (``copied`` an expression of ``given``), as a line of its own under the
    step's ``if given is None:`` lines where they make a cache, else keeping None as None (``given = None
    if given is None else copied``), with ``import copy;`` where the step's module has not imported it;
    ``why`` ends its comment. None when the learner's step is not one function of its own."""
    own = [tree.body[0] for _, tree in parsed(obj) if isinstance(tree.body[0], ast.FunctionDef)]
    if len(own) != 1:
        return None
    guard = next((node for node in own[0].body if isinstance(node, ast.If)
                  and ast.unparse(node.test) == f"{given} is None"), None)
    made = guard is not None and any(assigned(node) == given for node in guard.body)
    line = f"{given} = {copied}" if made else f"{given} = None if {given} is None else {copied}"
    imported = isinstance(obj.__globals__.get("copy"), types.ModuleType)
    where = f"under your 'if {given} is None:' lines (after them, not in them)" if guard is not None else \
        "as your step's first line"
    return ("" if imported else "import copy; ") + line + f"   # a line of its own, {where}: {why}"


def _plain_step(obj) -> str | None:
    """The name of the cache argument of a step written as a plain function (not with gpt.KVCache), else
    None."""
    code = code_of(obj)
    if type(obj) is not types.FunctionType or code.co_argcount < 3 or "KVCache" in names_used(obj):
        return None
    return code.co_varnames[2]


def entries_copied(obj, result, renamed) -> str | None:
    """For a step that writes into the cache it is given (``cache[nr][0] = k``, a list of lists) and never
    copies it: a line of its own that gives it new lists for its entries (``cache = [copy.copy(entry) for
    entry in cache]``), under the step's ``if cache is None:`` lines (kept None where those leave it None),
    or as its first line; else None. Replay 24's 08A1 was given 'new_cache = []   # build the returned
    cache anew', with no place, and a new list its own lines then read nothing from."""
    given = _plain_step(obj)
    if given is None or _a_dict(obj, given) or _aliased_writes(obj, given) or \
            not any(_written_into(node, given) for _, node in statements(obj)):
        return None
    return _copied_under_the_guard(obj, given, f"[copy.copy(entry) for entry in {given}]",
                                   "new lists for its entries, so what your step writes into them leaves "
                                   "the cache you were given as it was")


def buffers_copied(obj, result, renamed) -> str | None:
    """For a step that writes into a dict it is given as its cache (``cache["n"] = n + t``), or into the
    tensors the cache holds (``k_buf[:, :, n:n + t] = k``, buffers made once for every position): a line
    of its own that copies the whole cache, its tensors too (``cache = copy.deepcopy(cache)``), placed as
    :func:`entries_copied` places its line; else None. The corpus's ``preallocated_in_place`` was given
    'new_cache = []', a list its own lines never read."""
    given = _plain_step(obj)
    if given is None:
        return None
    wrote = any(_written_into(node, given) for _, node in statements(obj))
    if not (wrote and _a_dict(obj, given) or _aliased_writes(obj, given)):
        return None
    return _copied_under_the_guard(obj, given, f"copy.deepcopy({given})",
                                   "a copy of the whole cache, its tensors too, so what your step writes "
                                   "into it leaves the cache you were given as it was (it copies all of "
                                   "the cache's buffers at every step)")


def projections_of_the_normed(obj, result, renamed) -> str | None:
    """For a step that projects the stream itself where the normed stream belongs: its lines that hand
    the stream to W_q, W_k or W_v (``W_k(stato)``), handing them the normed one (``W_k(normita)``), one
    line for them all; else None."""
    names = your_names(obj)
    stream, normed = names.get("x"), names.get("normed")
    if not (stream and normed) or stream == normed:
        return None
    found = []
    for source, node in statements(obj):
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and getattr(c.func, "attr", "") in (
            "W_q", "W_k", "W_v") and len(c.args) == 1 and ast.unparse(c.args[0]) == stream]
        if calls:
            line = segment(source, node)
            for call in calls:
                text = segment(source, call)
                line = line.replace(text, text[: -len(stream) - 1] + normed + ")", 1)
            found.append(line)
    return your_lines(found, f"W_q, W_k and W_v read {normed}, the normed stream; {stream} itself is for "
                              "the residual")


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


def entries_read_right(obj, result, renamed) -> str | None:
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
    for source, node in statements(obj):
        line, inner = segment(source, node), set()
        for expr in sorted(ast.walk(node), key=lambda n: -getattr(n, "col_offset", 0)):
            chain = _chain(expr) if isinstance(expr, ast.Subscript) and expr not in inner else None
            inner |= {n for n in ast.walk(expr) if n is not expr} if chain else set()
            at = _at_layers(chain, var) if chain and chain[0] in cache else None
            kind = next((k for k in (0, 1) if at and at == read[k] != right[k]), None)
            if kind is not None and (text := _written(chain[0], right[kind], chain[2], var)):
                start = expr.col_offset - node.col_offset
                line = line[:start] + text + line[start + len(segment(source, expr)):]
        if line != segment(source, node):
            found.append(line)
    return your_lines(found, "each layer reads its own keys and values, where your prefill put them")


def unembedded_once(obj, result, renamed) -> str | None:
    """For a final norm applied twice: the learner's one line that hands ``model.unembed`` the normed
    stream (``model.unembed(model.norm_final(x))``), handing it the stream itself; else None."""
    found = []
    for source, node in statements(obj):
        line = segment(source, node)
        for call in ast.walk(node):
            unembedding = isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "unembed"
            given = call.args[0] if unembedding and len(call.args) == 1 else None
            if isinstance(given, ast.Call) and getattr(given.func, "attr", "") == "norm_final" and given.args:
                start, end = given.col_offset - node.col_offset, given.end_col_offset - node.col_offset
                found.append(line[:start] + segment(source, given.args[0]) + line[end:])
    line = the_one(found)
    if line:
        return line + "   # in place of your line: model.unembed applies norm_final itself"
    # or a line of its own, x = model.norm_final(x), before the return (a replay's 08 d12, told to write
    # logits = model.unembed(x) with no place to put it)
    own = the_one([segment(source, node) for source, node in statements(obj)
                   if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                   and getattr(node.value.func, "attr", "") == "norm_final"])
    return f"delete your line '{own}'   # model.unembed applies norm_final itself" if own else None


def keys_first(obj, result, renamed) -> str | None:
    """For a cache that keeps each layer's values first: the learner's one line that makes an entry of
    their values and keys in that order (``Qabat(man, kilt)``, ``append((v, k))``), keys first; else
    None."""
    names = your_names(obj)
    keys, values = names.get("k"), names.get("v")
    found = []
    for source, node in statements(obj):
        line = segment(source, node)
        for pair in ast.walk(node):
            given = pair.args if isinstance(pair, ast.Call) else getattr(pair, "elts", None) or []
            if [getattr(e, "id", None) for e in given] == [values, keys] and keys and values:
                start, end = given[0].col_offset - node.col_offset, given[1].end_col_offset - node.col_offset
                found.append(line[:start] + f"{keys}, {values}" + line[end:])
    line = the_one(found)
    return line + "   # in place of your line: keys first, the order the next step reads them back in" \
        if line else None


def read_keys_first(obj, result, renamed) -> str | None:
    """For keys and values swapped, where the learner's step stores keys first but reads an entry back
    values first (``old_v, old_k = cache[layer]``, then ``value = torch.cat([old_v, value], ...)``): that
    line, keys first; else None. The catalog's append line was theirs already, and its words said their
    cache stored values first (a replay's 08 d16)."""
    code, values = code_of(obj), your_names(obj).get("v")
    if code is None or code.co_argcount < 3 or not values:
        return None
    cache, found = code.co_varnames[2], []
    for source, node in statements(obj):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        pair = [getattr(e, "id", None) for e in getattr(target, "elts", [])]
        if len(pair) != 2 or None in pair or root_name(node.value) != cache:
            continue
        joined = [other for _, other in statements(obj) if isinstance(other, ast.Assign)
                  and [getattr(t, "id", None) for t in other.targets] == [values]
                  and any(getattr(n, "id", None) == pair[0] for n in ast.walk(other.value))]
        if joined:
            found.append(f"{pair[1]}, {pair[0]} = {segment(source, node.value)}")
    line = the_one(found)
    return line + "   # in place of your line: keys first, as your step stores them" if line else None


def along_the_positions(obj, result, renamed) -> str | None:
    """For a cache joined along another axis than the positions, where the catalog's line names cached keys
    and values the learner's code does not (a stacked entry, ``kv``): their lines (two at most) that join
    something read from the cache they are given (``torch.cat([cache[shar], kv], dim=2)``), along dim=-2,
    the positions in every layout the course uses; else None."""
    code = code_of(obj)
    if type(obj) is not types.FunctionType or code.co_argcount < 3 or "past_" not in renamed:
        return None
    given, found = code.co_varnames[2], []
    for source, node in statements(obj):
        line, axes = segment(source, node), []
        for call in ast.walk(node):
            axis = joined_axis(call)
            joining = axis is not None and call.args and isinstance(call.args[0], (ast.List, ast.Tuple))
            read = joining and any(isinstance(n, ast.Name) and n.id == given for n in ast.walk(call.args[0]))
            axes += [axis] if read and axis is not None and ast.unparse(axis) != "-2" else []
        for axis in sorted(axes, key=lambda a: -a.col_offset):                # from the right
            start, end = axis.col_offset - node.col_offset, axis.end_col_offset - node.col_offset
            line = line[:start] + "-2" + line[end:]
        found += [line] if axes else []
    return your_lines(found, "along the positions, dim=-2", most=2)


def embedded_at_the_caches_length(obj, result, renamed) -> str | None:
    """For a count of positions kept outside the cache: the learner's one line (in the step or a method
    of theirs it calls) that embeds at an attribute (``start=self.polozaj``) or a global, embedding at
    the positions the cache it is given holds (``predpomnilnik.length`` for a gpt.KVCache, else its
    first layer's keys' length), the cache read under the name of that function's own parameter; else
    None. The catalog's ``past = ... cache ...`` named a cache a replay's method did not (it read the
    notebook's global ``cache`` instead)."""
    found = []
    for source, tree in parsed(obj, with_helpers=True):
        function = tree.body[0] if len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) else None
        given = [a.arg for a in function.args.args if a.arg != "self"] if function else []
        if len(given) != 3:
            continue
        stored = {n.id for n in ast.walk(function)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        cache = given[2]
        if cache_remade(obj):    # made something else in the step (a tuple of None for each block: replay
            continue             # 24's 08A3): there it is not the cache it was given
        count = f"{cache}.length" if "KVCache" in source else f"{cache}[0][0].shape[-2]"
        for node in ast.walk(function):
            calls = [c for c in ast.walk(node) if embedded(c)] if isinstance(node, ast.Assign) else []
            if len(calls) != 1 or node.lineno != node.end_lineno:
                continue
            position = calls[0].args[1] if len(calls[0].args) == 2 else next(
                (k.value for k in calls[0].keywords if k.arg == "start"), None)
            kept = isinstance(position, ast.Attribute) and ast.unparse(position.value) == "self" \
                or isinstance(position, ast.Name) and position.id not in stored | set(given)
            if kept:
                line = segment(source, node)
                at = segment(source, position)
                found.append(line.replace(at, f"(0 if {cache} is None else {count})", 1))
    line = the_one(found)
    return (f"{line}   # in place of your line: the positions the cache you are given holds, read anew each "
            "call, not a count kept between calls") if line else None


_REPEATS = ("repeat_interleave", "repeat", "expand")


def _repeated_names(node) -> list[str]:
    """The names a statement repeats for the query heads in place (``k, v = k.repeat_interleave(g, dim=1),
    v.repeat_interleave(g, dim=1)``; ``k = k.repeat(1, g, 1, 1)``): each target the call's own tensor;
    else []."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return []
    target, value = node.targets[0], node.value
    targets = target.elts if isinstance(target, ast.Tuple) else [target]
    values = value.elts if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) else [value]
    names = []
    for name, call in zip(targets, values, strict=False):
        func = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(name, ast.Name) and isinstance(func, ast.Attribute) and func.attr in _REPEATS
                and isinstance(func.value, ast.Name) and func.value.id == name.id):
            return []
        names.append(name.id)
    return names if len(targets) == len(values) else []


def _stores(node, names: set) -> bool:
    """Whether a statement hands the cache what ``names`` hold: an ``append`` of them, or an entry set
    to them (``out[i] = {"k": k, "v": v}``)."""
    return bool(names) and names <= _stored(node)


def _stored(node) -> set:
    """The names a statement hands the cache (an ``append``, or an entry set: :func:`_stores`)."""
    call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
    appended = call and isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
        and len(call.args) == 1
    entry = isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
    held = call.args[0] if appended else node.value if entry else None
    return {n.id for n in ast.walk(held) if isinstance(n, ast.Name)} if held is not None else set()


def repeated_after_caching(obj, result, renamed) -> str | None:
    """For key/value heads repeated for the query heads before they are cached, on a line (or two) of
    their own that repeats a tensor in place: that line, to move to just after the one that caches them
    (only lines that set the same names, joining them to the cached ones, in between); else None. The
    catalog's append line is a line such code already has, its change said in words (replay 17's 08T2)."""
    found = []
    for source, tree in parsed(obj):
        body = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not isinstance(
            n, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef))]
        body.sort(key=lambda n: n.lineno)
        repeats = [n for n in body if n.lineno == n.end_lineno and _repeated_names(n)]
        names = {name for n in repeats for name in _repeated_names(n)}
        last = max((r.lineno for r in repeats), default=0)
        stores = [n for n in body if names and n.lineno > last and _stores(n, names)]
        if not repeats or len(repeats) > 2 or len(stores) != 1:
            continue
        between = [n for n in body if repeats[0].lineno < n.lineno < stores[0].lineno and n not in repeats]
        if all(isinstance(n, ast.Assign) and {t.id for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)}
               <= names for n in between):
            found.append(("; ".join(segment(source, n) for n in repeats),
                          segment(source, stores[0]).splitlines()[0]))
    if len(found) != 1:
        return None
    line, store = found[0]
    return (f"{line}   # your line, moved to just after {store}: the cache keeps the n_kv_heads key/value "
            "heads, and they are repeated for the query heads only to attend")


def residual_to_the_stream(obj, result, renamed) -> str | None:
    """For a residual added to the normed stream, where the learner's code adds a sublayer's output to its
    name for the normed copy (``x = normalizzat + att.W_o(...)``, ``normalizzat = blokk.norm_attention(x)``):
    that line adding to the stream itself; else None (the catalog's mlp line, which such code has already:
    replay 22's 08Y4, whose words spoke of an x overwritten)."""
    normed, found = set(), []
    for _, node in statements(obj):
        pairs = []
        if isinstance(node, ast.Assign) and len(node.targets) == 1:       # or normed, att = norm(x), ...
            target, value = node.targets[0], node.value
            both = isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and \
                len(target.elts) == len(value.elts)
            pairs = list(zip(target.elts, value.elts, strict=True)) if both else [(target, value)]
        for target, value in pairs:
            func = value.func if isinstance(value, ast.Call) else None
            if isinstance(target, ast.Name) and isinstance(func, ast.Attribute) and \
                    func.attr in ("norm_attention", "norm_mlp") and len(value.args) == 1 and \
                    isinstance(value.args[0], ast.Name):
                normed.add((target.id, value.args[0].id))
    for source, node in statements(obj):
        value = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
            continue
        for name, stream in normed:
            if getattr(value.left, "id", None) == name and getattr(node.targets[0], "id", None) == stream:
                line = segment(source, node)
                found.append((f"{stream} = {stream} + {segment(source, value.right)}", line))
    if len(found) != 1:
        return None
    line, theirs = found[0]
    return (f"{line}   # in place of your line {theirs}: the residual adds to the stream itself, not its "
            "normed copy")


def both_repeated(obj, result, renamed) -> str | None:
    """For query heads that met the key/value heads unrepeated, where the learner's code repeats one of
    the two in place on a line of its own (``banalner = banalner.repeat_interleave(khumb, dim=1)``, the
    values left): the catalog's line for both, in their names, in place of that line. Its words "just
    before attending" led replay 22's 08Y1 to keep their line above it, and the keys were repeated twice."""
    code = renamed.split("   #")[0]
    found = [(segment(source, node), names) for source, node in statements(obj)
             if len(names := _repeated_names(node)) == 1]
    if len(found) != 1 or code.count("repeat_interleave") != 2 or found[0][1][0] not in code.split(" = ")[0]:
        return None
    return (f"{code}   # in place of your line {found[0][0]}: keys and values both repeated for the query "
            "heads, after caching")


def projected_without_repeat(obj, result, renamed) -> str | None:
    """For key/value heads repeated for the query heads on the lines that make them (``k = split_heads(...)
    .repeat_interleave(g, dim=1)``), then cached: those lines (two at most) without the repeat, to paste in
    place of them; the check then says where to repeat them (after caching, to attend). Else None (the
    catalog's append line, a line such code has already: replay 18's 08U3)."""
    found, names, repeats, last, apart = [], set(), {}, 0, ""
    for source, node in statements(obj, with_helpers=True):   # in a helper of theirs too (replay 23's 08Z4)
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        call = node.value if target is not None else None
        func = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(target, ast.Name) and isinstance(func, ast.Attribute) and func.attr in _REPEATS) \
                or isinstance(func.value, ast.Name):
            continue
        line = segment(source, node)
        start, end = call.col_offset - node.col_offset, call.end_col_offset - node.col_offset
        found.append(line[:start] + segment(source, func.value) + line[end:])
        last = max(last, node.end_lineno)
        names.add(target.id)
        whole, tensor = segment(source, call), segment(source, func.value)
        repeats[target.id] = whole[len(tensor):]                       # .repeat_interleave(grupo, dim=1)
    # stored on one line or each on its own (replay 24's 08A2: bo_nho_moi['k'].append(khoa), then the
    # values'), either way the cache holds them
    stored = set().union(*(_stored(node) for _, node in statements(obj, with_helpers=True)))
    if not names or not names <= stored:
        return None
    # and the fused call they attend with, each repeated there (replay 22's 08Y4 pasted the two lines alone,
    # and the next run raised: 6 query heads met 2 key/value heads)
    for source, node in statements(obj, with_helpers=True):
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and
                 getattr(c.func, "attr", "") == "scaled_dot_product_attention"]
        handed = [a for c in calls for a in c.args if isinstance(a, ast.Name) and a.id in repeats]
        if len(calls) == 1 and handed and len(found) + 1 <= 3:
            line = segment(source, node)
            for arg in sorted(handed, key=lambda a: -a.col_offset):
                at = arg.col_offset - node.col_offset
                line = line[:at] + arg.id + repeats[arg.id] + line[at + len(arg.id):]
            found.append(line)
            # lines between (replay 24's 08A2: the cache joined and stored): each goes where it was
            apart = ", each where yours was (the last one below your cache lines, as now)" \
                if node.lineno > last + 1 else ""
            break
    return your_lines(found, "the cache keeps the n_kv_heads key/value heads; repeat them for the query "
                             "heads only after caching, to attend", most=3, where=apart)


def causal_sized_by_your_call(obj, result, renamed) -> str | None:
    """For a step that passes ``is_causal=`` to its one call of F.scaled_dot_product_attention: the
    bottom-right mask sized by the names that call's queries and keys start from (``suroo`` of
    ``suroo[b]``), in place of its own ``is_causal=...``; else None. The catalog's line named ``q`` beside
    the learner's keys, which their step did not have (replay 18's 08U4: a NameError)."""
    if "is_causal" not in result.fix:
        return None
    found = []
    for source, tree in parsed(obj):
        for call in ast.walk(tree):
            func = call.func if isinstance(call, ast.Call) else None
            causal = [k for k in getattr(call, "keywords", []) if k.arg == "is_causal"]
            fused = getattr(func, "attr", getattr(func, "id", None)) == "scaled_dot_product_attention"
            if not (fused and causal):
                continue
            given = {k.arg: k.value for k in call.keywords}
            given |= dict(zip(("query", "key"), call.args, strict=False))
            q, k = root_name(given.get("query")), root_name(given.get("key"))
            if q and k:
                found.append((q, k, segment(source, causal[0])))
    if len(found) != 1:
        return None
    q, k, theirs = found[0]
    return (f"attn_mask=torch.ones({q}.shape[-2], {k}.shape[-2], dtype=torch.bool).tril(diagonal="
            f"{k}.shape[-2] - {q}.shape[-2])   # in place of {theirs}: the bottom-right mask, sized by your "
            "queries and keys")



def sublayer_added(obj, result, renamed) -> str | None:
    """For a sublayer's output put in place of the stream (``x = attention.W_o(merge_heads(heads))``): that
    line adding it to the stream, ``x = x + ...``, in the learner's own words (replay 26's 08 a27 was given
    ``x = x + attention.W_o(merged)``, a name its code did not have); else None."""
    stream = your_names(obj).get("x")
    called = "W_o" if "attention_residual_missing" in (result.bug, result.fix_of) else "mlp"
    found = []
    for source, node in statements(obj):
        value = node.value if stream and assigned(node) == stream and node.lineno == node.end_lineno else None
        added = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
        calls = {getattr(part.func, "attr", None) for part in ast.walk(value) if isinstance(part, ast.Call)} \
            if value is not None and not added else set()
        if called in calls:
            line = f"{stream} = {stream} + {segment(source, value)}"
            found.append(line + "   # in place of your line: add to the stream, do not replace it")
    return the_one(found)


def past_without_an_offset(obj, result, renamed) -> str | None:
    """For positions that do not continue after the cache, where the step's own past is the cached length
    plus or minus a number (``past = 0 if cache is None else cache[0][0].shape[-2] - 1``): that line
    without it. Replay 26's 08 a14 was told its embed line, which it had already, and "past = positions
    already cached". Else None."""
    pasts = {part.args[1].id for tree in trees(obj) for part in ast.walk(tree) if embedded(part)
             and len(part.args) == 2 and isinstance(part.args[1], ast.Name)}
    found = []
    for source, node in statements(obj):
        value = node.value if assigned(node) in pasts else None
        branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        shifted = next((b for b in branches if isinstance(b, ast.BinOp)), None)    # either order of the if
        if isinstance(shifted, ast.BinOp) and isinstance(shifted.op, (ast.Add, ast.Sub)) and isinstance(
                shifted.right, ast.Constant) and isinstance(shifted.right.value, int):
            line, text = segment(source, node), segment(source, shifted)
            sign = "+" if isinstance(shifted.op, ast.Add) else "-"
            found.append(line.replace(text, segment(source, shifted.left), 1)
                         + f"   # in place of your line: the positions already cached, no {sign} "
                         f"{shifted.right.value}")
    return the_one(found)
