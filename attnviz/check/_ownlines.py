"""A verdict's Fix as the learner's own line, changed, where the catalog's line would not fit their code.

The catalog's Fix lines are written in the exercises' names, and :mod:`._yournames` puts them in the
learner's. Some mistakes live in a line of a form the catalog cannot foresee: a scale handed to a
helper, a softmax written by hand in a helper, an einsum with every axis named, a cache returned
under the wrong name. For those, the Fix is the learner's own line with the one change in it, to
paste in its place, and its comment says so. Each rule says when it applies (the verdict's bug or
what it observed) and rewrites one line read from the learner's code (:mod:`._readers`), or gives
None and the catalog's line stands.

The table of rules, :data:`RULES`, is here, in the order they are tried. The rules themselves are in
five modules, by what they change: :mod:`._ownlines_scores` (the scale, the softmax, casts, fills),
:mod:`._ownlines_masks` (masks), :mod:`._ownlines_shapes` (sizes, axes, names, no_grad and dropout),
:mod:`._ownlines_heads` (splitting and merging heads) and :mod:`._ownlines_step` (a decoding step's
cache and stream). Here too: the rules the checkers call outside the table (a missing return, a
product taken entry by entry, lengths made a row).
"""

from __future__ import annotations

import ast
import re
import types

from ._learner_lines import statements
from ._ownlines_heads import (
    blend_over_the_keys,
    contiguous_before_view,
    heads_side_by_side,
    heads_transposed_back,
    split_into_heads_of_d_k,
    split_then_transposed,
    stacked_heads_kept_whole,
    whole_width,
)
from ._ownlines_masks import (
    attend_mask_filled,
    filled_where_true,
    in_their_own_dtype,
    mask_as_given,
    mask_broadcast_before_it_is_flattened,
    mask_broadcast_before_the_loop,
    mask_kept_as_given,
    mask_only_when_given,
    mask_turned,
    masked_before_the_softmax,
    no_mask_made_causal,
    the_mask_given,
)
from ._ownlines_scores import (
    cast_dropped,
    einsum_for_any_batch,
    einsum_rows_first,
    exp_of_the_row_less_its_largest,
    fill_finite,
    fill_not_added,
    fill_of_a_fixed_dtype,
    fill_tensor_in_float32,
    floor_float16_holds,
    kept_anew,
    keys_transposed,
    out_of_place,
    own_root,
    root_kept,
    root_of_the_divisor,
    scale_into_the_scores,
    scale_of_the_values,
    scale_on_both_paths,
    softmax_not_its_log,
    sum_kept,
    weights_times_values,
)
from ._ownlines_shapes import (
    batch_first,
    count_from_the_keys,
    dangling,
    dropout_only_in_training,
    keys_transposed_from_the_end,
    loop_over_the_first_axis,
    no_decorator,
    no_grad_block,
    numpy_left,
    out_of_place_to_grow,
    out_of_reach,
    raised_on_a_reversed_transpose,
    repeated_in_their_lines,
    softmax_over_the_keys,
    width_from_the_values,
)
from ._ownlines_step import (
    along_the_positions,
    both_repeated,
    buffers_copied,
    cached_first,
    causal_sized_by_your_call,
    deep_copy_of_the_cache,
    each_token_at_its_position,
    embedded_at_the_caches_length,
    embedded_from_the_caches_length,
    entries_copied,
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
    past_without_an_offset,
    pointer_moved_on,
    projected_without_repeat,
    projections_of_the_normed,
    read_keys_first,
    repeated_after_caching,
    residual_to_the_stream,
    returns_its_own_cache,
    sublayer_added,
    triangle_from_the_bottom_right,
    unembedded_once,
)
from ._readers import (
    assigned,
    parsed,
    returns_a_value,
    the_one,
    your_names,
)
from ._stale import code_of, segment

__all__ = ["own_line_fix", "unreturned_fix", "lengths_as_a_column", "lengths_kept_as_given",
           "keys_sliced_in_the_loop", "elementwise_blend"]


def own_line_fix(obj, result, renamed: str) -> str | None:
    """The Fix for ``result`` as a line of the learner's own, changed (the first rule of :data:`RULES`
    that applies and finds its line); ``renamed``: the catalog's Fix already in their names. A rule that
    raises on code of a shape it did not foresee finds no line: the verdict stands, with the next rule's
    line or the catalog's, and the learner never sees the checker's own traceback."""
    for applies, rewrite in RULES:
        try:
            line = applies(result) and rewrite(obj, result, renamed)
        except Exception:  # noqa: BLE001 - any slip of a rule's reading: the rule is skipped
            line = None
        if line:
            return line
    return None


_UNCALLED = re.compile(r"the tensor method \.(\w+) itself, not its result")


def called(obj, result, renamed) -> str | None:
    """For a tensor method returned without its parentheses (``return out.contiguous``): the learner's one
    line that returns it, with them (``return out.contiguous()``); else None (the catalog's ``return
    output`` named an ``output`` their code may not have)."""
    said = _UNCALLED.search(result.headline)
    found = []
    for source, node in statements(obj) if said else ():
        value = node.value if isinstance(node, ast.Return) else None
        parts = value.elts if isinstance(value, ast.Tuple) else [value] if value is not None else []
        bare = [p for p in parts if isinstance(p, ast.Attribute) and p.attr == said[1]]
        if len(bare) == 1:
            line, at = segment(source, node), bare[0].end_col_offset - node.col_offset
            found.append(line[:at] + "()" + line[at:])
    line = the_one(found)
    return f"{line}   # in place of your line: .{said[1]}() calls the method" if line else None


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
        line = segment(source, node)
        for part in ast.walk(node):
            start = end = None
            if isinstance(part, ast.Call) and getattr(part.func, "attr", None) == "mul":
                first = part.func.value if part.args and len(part.args) == 1 else (part.args or [None])[0]
                if getattr(first, "id", None) == weights:
                    start = part.func.end_col_offset - len("mul") - node.col_offset
                    end, text = start + len("mul"), "matmul"
            elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mult) and \
                    getattr(part.left, "id", None) == weights:
                gap = segment(source, node)[part.left.end_col_offset - node.col_offset:
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
    code = code_of(obj)
    if result.bug != "batch_one_only" or type(obj) is not types.FunctionType or code.co_argcount < 1:
        return None
    lengths, found = code.co_varnames[0], []
    for source, node in statements(obj):
        line, rows = segment(source, node), [n for n in ast.walk(node) if _a_row(n, lengths)]
        for row in sorted(rows, key=lambda n: -n.col_offset):                  # from the right
            at = row.col_offset - node.col_offset
            line = line[:at] + f"{lengths}[:, None]" + line[at + len(segment(source, row)):]
        found += [line] if rows else []
    line = the_one(found)
    why = f"{lengths}[:, None], a column: one row per sequence"
    return f"{line}   # in place of your line: {why}" if line else None


def lengths_kept_as_given(obj, result) -> str | None:
    """For lengths clamped or sorted before the mask is built: the learner's one line that sets the lengths
    parameter anew (``lengths = lengths.clamp(min=1)``, ``lengths, _ = torch.sort(lengths, ...)``), to
    delete; else None. The catalog's return line was the one they had already, and it named no other
    (a replay's 04 p14: the same verdict and the same line, round after round)."""
    code = code_of(obj)
    if result.bug not in ("padding_lengths_clamped", "padding_lengths_reordered") or code is None or \
            code.co_argcount < 1:
        return None
    lengths, found = code.co_varnames[0], []
    for source, node in statements(obj):
        targets = [t for target in getattr(node, "targets", []) for t in
                   (target.elts if isinstance(target, ast.Tuple) else [target])]
        if any(isinstance(t, ast.Name) and t.id == lengths for t in targets):
            found.append(segment(source, node))
    line = the_one(found)
    return f"delete your line '{line}'   # {lengths} as given, 0 included, in their order" if line else None


def keys_sliced_in_the_loop(obj, result) -> str | None:
    """For a padding mask made ``(batch, 1, n)`` and filled in a loop over the sequences by a line that
    slices its size-1 query axis (``mask[b, :L] = True``, which lets every key through): that line with
    the keys' axis sliced, ``mask[b, :, :L] = True``; else None. The catalog's ``mask = ...`` line, pasted
    over their ``torch.zeros`` line, left the loop to undo it (a replay's 04 p03)."""
    if result.passed or result.checked != "check_padding_mask":
        return None
    made, found = set(), []
    for _, node in statements(obj):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        call = node.value if isinstance(target, ast.Name) and isinstance(node.value, ast.Call) else None
        if call is None or getattr(call.func, "attr", "") not in ("zeros", "ones", "full", "empty"):
            continue
        given = call.args[0] if call.args else None
        sizes = given.elts if isinstance(given, (ast.Tuple, ast.List)) else call.args
        if len(sizes) >= 3 and ast.unparse(sizes[1]) == "1":
            made.add(target.id)
    for source, node in statements(obj):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        filled = isinstance(target, ast.Subscript) and getattr(target.value, "id", None) in made
        index = target.slice if filled else None
        if isinstance(index, ast.Tuple) and len(index.elts) == 2 and isinstance(index.elts[1], ast.Slice):
            line, at = segment(source, node), index.elts[1].col_offset - node.col_offset
            found.append(line[:at] + ":, " + line[at:])
    line = the_one(found)
    return (f"{line}   # in place of your line: the keys are the last axis; the one after the batch is the "
            "queries', of size 1, and slicing it lets every key through") if line else None


def _a_row(node, lengths: str) -> bool:
    """Whether ``node`` is ``lengths`` made a row: ``.unsqueeze(0)``, ``[None, :]``, ``.view(1, -1)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == lengths:
        given = [ast.unparse(arg) for arg in node.args]
        return (node.func.attr == "unsqueeze" and given in (["0"], ["-2"])) or \
            (node.func.attr in ("view", "reshape") and given == ["1", "-1"])
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == lengths \
        and ast.unparse(node.slice) in ("None", "None, :", "(None, :)")


"""Calls whose mask is True where a query may attend: ``gpt.decoding_mask(...)``, ``...tril(...)``."""


"""split takes the size of each piece, chunk the number of pieces: the one mistaken for the other."""


def _bug(*ids):
    """Whether a verdict names one of ``ids``, or gives the fix of one (:attr:`CheckResult.fix_of`)."""
    return lambda result: result.bug in ids or result.fix_of in ids


def _by_hand(result) -> bool:
    """Whether a verdict's Fix is only to run the code by hand (it raised, and no rule knew why)."""
    return result.fix.startswith("run your function by hand")


RULES = (
    (lambda result: True, batch_first),
    (_bug("gradient_blocked"), no_decorator),
    (_bug("gradient_blocked"), no_grad_block),
    (_bug("gradient_blocked"), numpy_left),
    (_bug("dropout_left_on"), dropout_only_in_training),
    (lambda result: "returned None" in result.headline, unreturned_fix),
    (lambda result: "itself, not its result" in result.headline, called),
    (lambda result: result.fix.startswith("run the cell that defines or imports "), dangling),
    (lambda result: result.fix.startswith("run the cell that defines or imports "), out_of_reach),
    (lambda result: any("einsum(): the number of subscripts" in line for line in result.observed),
     einsum_for_any_batch),
    (_bug("softmax_overflow"), exp_of_the_row_less_its_largest),
    (_bug("dtype_changed"), cast_dropped),
    (_bug("modifies_inputs"), out_of_place),
    (_bug("cache_low_precision"), full_precision_cache),
    (_bug("positions_not_advanced"), each_token_at_its_position),
    (_bug("positions_not_advanced"), past_without_an_offset),
    (_bug("positions_not_advanced"), past_from_the_positions_axis),
    (_bug("positions_not_advanced"), embedded_from_the_caches_length),
    (_bug("cached_length_misread"), past_read_along_the_positions),
    (_bug("state_outside_cache"), embedded_at_the_caches_length),
    (lambda result: result.headline.endswith("never uses self.W_v: in a backward pass it got no gradient."),
     weights_times_values),
    (lambda result: "a head width that is a float" in result.headline, whole_width),
    (lambda result: any("cannot be multiplied" in line or "Expected size for first two dimensions" in line
                        for line in result.observed), keys_transposed),
    (_bug("missing_scale"), scale_into_the_scores),
    (_bug("scores_transposed"), einsum_rows_first),
    (_bug("wrong_scale"), scale_on_both_paths),
    (_bug("scale_by_d_model", "wrong_scale"), root_kept),
    (lambda result: result.fix.startswith("compute everything from this call's x and mask"), kept_anew),
    (_bug("scale_by_d_model", "wrong_scale"), own_root),
    (_bug("wrong_scale"), root_of_the_divisor),
    (_bug("wrong_scale"), scale_of_the_values),
    (_bug("cache_not_appended"), returns_its_own_cache),
    (_bug("cache_not_appended"), pointer_moved_on),
    (_bug("batch_one_only"), keys_transposed_from_the_end),
    (_by_hand, raised_on_a_reversed_transpose),
    (_by_hand, loop_over_the_first_axis),
    (_by_hand, mask_broadcast_before_it_is_flattened),
    # a loop over the query rows that indexes a padding mask's size-1 query axis (replay 24's 02A4)
    (lambda result: _by_hand(result) and any("IndexError" in said for said in result.observed),
     mask_broadcast_before_the_loop),
    # row sums without their axis raise where n_q differs from n_k (replay 20's 02W2)
    (lambda result: _by_hand(result) and any("must match the size" in said for said in result.observed),
     sum_kept),
    (lambda result: any("only inputs with one go wrong" in line for line in result.observed),
     mask_broadcast_before_the_loop),
    (_bug("softmax_sum_not_kept"), sum_kept),
    (_bug("values_not_appended"), joined_values_kept),
    # not where the merge has the same slip: the Fix then gives both
    (lambda result: result.bug == "heads_split_without_transpose" and "merge" not in result.fix,
     split_then_transposed),
    (_bug("kv_heads_repeated_not_interleaved"), repeated_in_their_lines),
    (_bug("is_causal_top_left"), triangle_from_the_bottom_right),
    (lambda result: result.bug == "last_position_only" or "wrong shape" in result.headline
     and result.checked == "check_decoding_step", logits_of_every_token),
    (_bug("heads_merged_interleaved"), stacked_heads_kept_whole),
    (_bug("cache_modified_in_place"), deep_copy_of_the_cache),
    (_bug("cache_modified_in_place"), entries_copied),
    (_bug("cache_modified_in_place"), buffers_copied),
    (_bug("heads_count_and_width_swapped"), split_into_heads_of_d_k),
    (_bug("attention_norm_skipped"), projections_of_the_normed),
    (_bug("softmax_wrong_axis"), softmax_over_the_keys),
    (lambda result: any("in another arrangement: pieces joined" in line for line in result.observed),
     joined_along_positions),
    (_bug("values_from_cached_keys"), keys_stored_twice),
    (lambda result: "query heads met" in result.headline and result.bug is None, both_repeated),
    (_bug("residual_from_normed"), residual_to_the_stream),
    (_bug("attention_residual_missing", "mlp_residual_missing"), sublayer_added),
    (_bug("cache_holds_repeated_heads"), repeated_after_caching),
    (_bug("cache_holds_repeated_heads"), projected_without_repeat),
    (_bug("final_norm_twice"), unembedded_once),
    (_bug("cache_wrong_axis"), along_the_positions),
    (_bug("cache_keys_values_swapped"), keys_first),
    (_bug("cache_keys_values_swapped"), read_keys_first),
    (_bug("weights_not_normalised"), softmax_not_its_log),
    (_bug("mask_transposed"), mask_as_given),
    (_bug("mask_inverted"), mask_kept_as_given),
    (_bug("mask_inverted"), mask_turned),
    (lambda result: result.bug is None and any("only inputs with one go wrong" in line
                                               for line in result.observed), filled_where_true),
    (_bug("dtype_changed"), in_their_own_dtype),
    (_bug("softmax_max_over_blocked"), masked_before_the_softmax),
    (_bug("nan_on_fully_masked_row"), fill_finite),
    (_bug("fill_overflows_float16"), fill_not_added),
    (_bug("fill_overflows_float16"), fill_of_a_fixed_dtype),
    (_bug("floor_underflows_float16"), floor_float16_holds),
    (lambda result: result.bug is None and "NaN or inf on float64 inputs, although float32 is fine"
     in result.headline, fill_tensor_in_float32),
    (lambda result: result.bug is None and any("Every number it returned is NaN or inf" in line
                                               for line in result.observed), attend_mask_filled),
    (_bug("weights_transposed"), blend_over_the_keys),
    (lambda result: any("doesn't match the broadcast shape" in line for line in result.observed),
     out_of_place_to_grow),
    (lambda result: result.headline.endswith("and wrong (or raised) whenever their numbers differ."),
     count_from_the_keys),
    (lambda result: result.headline.endswith("and wrong (or raised) whenever their widths differ."),
     width_from_the_values),
    (_bug("cache_prepended"), cached_first),
    (_bug("parallel_block"), mlp_after_attention),
    (_bug("heads_merged_without_transpose"), heads_transposed_back),
    (_bug("missing_contiguous"), contiguous_before_view),
    (_bug("no_block_without_cache"), every_block),
    (_bug("mask_replaced_by_causal"), the_mask_given),
    (_bug("causal_when_no_mask"), no_mask_made_causal),
    (lambda result: "whenever no mask is given (mask=None)" in result.headline, mask_only_when_given),
    (lambda result: "a linear layer got inputs of width" in result.headline, heads_side_by_side),
    (_bug("cache_read_at_wrong_index"), entries_read_right),
    (_bug("is_causal_top_left", "causal_mask_missing"), causal_sized_by_your_call),
)


"""(applies, rewrite) pairs, in order: when ``applies(result)``, ``rewrite(obj, result, renamed)`` gives
the learner's line changed, or None."""
