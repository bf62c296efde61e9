"""check_decoding_step: right steps pass; every bug class is named with its own id and fix; a step that
raised, exited, returned a list or timed out is told exactly that; the library cannot do the exercise;
the checker meets TinyGPT only through its public pieces."""

import ast
import json
import math
import os
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attnviz import gpt, zoo
from attnviz.check import BUGS, check_decoding_step
from attnviz.check._catalog import DECODING
from attnviz.check._verdict import NOT_WRITTEN, bug_words
from attnviz.check.decoding import DECODING_BUGS, _models_read, reference_decode_step
from attnviz.mha import merge_heads, split_heads

ROOT = Path(__file__).resolve().parent.parent

# the bug classes issue 20 lists for decode_step, each with the id the verdict must give
ATTENTION_LEVEL = ["missing_scale", "wrong_scale", "scale_multiplied", "softmax_wrong_axis", "mask_inverted",
                   "additive_mask_wrong", "heads_split_without_transpose", "heads_merged_without_transpose",
                   "missing_contiguous", "batch_one_only", "dropout_left_on", "missing_output_projection",
                   "causal_off_by_one"]
CACHE_LEVEL = ["positions_not_advanced", "cache_not_appended", "keys_not_appended", "values_not_appended",
               "cache_wrong_axis", "is_causal_top_left", "causal_mask_missing",
               "kv_heads_repeated_not_interleaved", "cache_modified_in_place"]


def _solution_source():
    """Notebook 08's exercise solution cell (### BEGIN SOLUTION)."""
    nb = json.loads((ROOT / "notebooks" / "08_generation_kv_cache.ipynb").read_text())
    (source,) = ["".join(c["source"]) for c in nb["cells"] if "### BEGIN SOLUTION" in "".join(c["source"])
                 and "def decode_step" in "".join(c["source"])]
    return source


def _notebook_names():
    """The names notebook 08 imports before its exercise."""
    return {"torch": torch, "F": F, "math": math, "gpt": gpt, "split_heads": split_heads,
            "merge_heads": merge_heads}


def _solution_edited(*edits, **names):
    """Notebook 08's solution with each (old, new) text replaced; ``names``: globals the notebook left."""
    source = _solution_source()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    space = {**_notebook_names(), **names}
    exec(source, space)                                          # noqa: S102 - the notebook's own cell
    return space["decode_step"]


def _solution():
    """Notebook 08's exercise solution, as the notebook defines it."""
    return _solution_edited()


class _RecipeStep(zoo.DecodeStep):
    """The zoo's right step, as a learner who wrote the recipe's methods would have it."""


@pytest.mark.parametrize("step", [_RecipeStep(), _solution()], ids=["recipe", "notebook_solution"])
def test_right_steps_pass(step):
    result = check_decoding_step(step)
    assert result.passed and result.status == "passed" and result.bug is None, result


def test_a_cache_kept_in_a_default_argument_is_said_as_such():
    """new_cache=[] as a default: one list for every call (round 22's file was named cache_wrong_axis)."""
    shared = _solution_edited(("def decode_step(model, tokens, cache):",
                               "def decode_step(model, tokens, cache, new_cache=[]):"),
                              ("    new_cache = []\n", ""))
    result = check_decoding_step(shared)
    assert not result.passed and result.bug is None and "new_cache=[]" in result.headline, result
    assert result.fix.startswith("new_cache = []"), result
    harmless = _solution_edited(("def decode_step(model, tokens, cache):",
                                 "def decode_step(model, tokens, cache, options={}):"))
    assert check_decoding_step(harmless).passed                 # a default nobody changes passes as before


def test_a_step_rounded_to_float16_passes_with_a_note_and_a_float32_one_without():
    """Within the tolerance on the checker's model, but a thousand times farther than float32's 2e-7."""
    half = _solution_edited(
        ("F.scaled_dot_product_attention(query,", "F.scaled_dot_product_attention(query.half(),"),
        ("key.repeat_interleave(group, dim=1),", "key.repeat_interleave(group, dim=1).half(),"),
        ("value.repeat_interleave(group, dim=1),\n", "value.repeat_interleave(group, dim=1).half(),\n"),
        ("merge_heads(heads)", "merge_heads(heads.float())"))
    result = check_decoding_step(half)
    assert result.passed and any("rounded to a smaller type" in note for note in result.notes), result
    assert not check_decoding_step(_solution()).notes


@pytest.mark.parametrize("step", [reference_decode_step, zoo.decode_step,
                                  lambda model, tokens, cache: reference_decode_step(model, tokens, cache)],
                         ids=["reference", "zoo", "wrapped"])
def test_the_courses_own_answer_handed_in_is_refused(step):
    """Notebook 08 imports reference_decode_step two sections before the exercise: handed in (or called
    from a step) on the exercise's view of the model it refuses, as the model's own forward does."""
    result = check_decoding_step(step)
    assert not result.passed and result.bug is None, result
    assert result.headline == "your step hands the work to the library instead of doing it."
    assert "own answer to this exercise" in repr(result)
    # the recipe names what a hurried learner leaves out: the mask, and a new cache, not the given one
    assert "bottom-right causal mask" in result.fix and "new cache" in result.fix, result.fix


def _rewrapped_library_step(model, tokens, cache):
    """Round 26's learner: the block's W_q..W_o rewrapped, so gpt.cached_attention's guard lets them in."""
    from types import SimpleNamespace

    cache = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, cache.length)
    for layer, block in enumerate(model.blocks):
        a = block.attention
        pieces = SimpleNamespace(W_q=a.W_q, W_k=a.W_k, W_v=a.W_v, W_o=a.W_o)
        x = x + gpt.cached_attention(pieces, block.norm_attention(x), model.n_heads, model.n_kv_heads, cache,
                                     layer)[0]
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache


def test_a_step_that_rewraps_the_pieces_for_the_librarys_cached_attention_passes_with_a_note():
    result = check_decoding_step(_rewrapped_library_step)
    assert result.passed and any("attnviz.gpt.cached_attention" in note for note in result.notes), result
    note = next(note for note in result.notes if "attnviz.gpt.cached_attention" in note)
    assert "bottom-right causal mask" in note and "new cache" in note, note
    assert not check_decoding_step(_solution()).notes


_HURRIED = """
def decode_step(model, tokens, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, past)
    kept = []
    for layer, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = split_heads(attention.W_q(normed), model.n_heads)
        keys = split_heads(attention.W_k(normed), model.n_kv_heads)
        values = split_heads(attention.W_v(normed), model.n_kv_heads)
        if cache is not None:
            keys = torch.cat([cache[layer][0], keys], dim=-2)
            values = torch.cat([cache[layer][1], values], dim=-2)
        kept.append((keys, values))
        group = model.n_heads // model.n_kv_heads
        keys_q, values_q = keys.repeat_interleave(group, 1), values.repeat_interleave(group, 1)
{attend}
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), kept
"""


def _hurried_step(*lines):
    """A step as a student in lesson 4 writes it, with cell 011's names; ``lines`` attend."""
    space = {"torch": torch, "F": F, "math": math, "split_heads": split_heads, "merge_heads": merge_heads}
    exec(_HURRIED.replace("{attend}", "\n".join(" " * 8 + line for line in lines)), space)  # noqa: S102
    return space["decode_step"]


_SCORES_BY_HAND = "scores = query @ keys_q.transpose(-2, -1) / math.sqrt(model.d_head)"
_MASK = "mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)"
_FILL = "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"


def test_the_causal_fix_comes_in_the_form_the_step_needs_and_its_names_are_defined():
    """Lesson 4's rehearsal: the bare mask line, pasted beside is_causal=True or above scores written out,
    changed nothing, and its n_new and n_all raised NameError with 'run the cell that defines it'."""
    fused = check_decoding_step(_hurried_step(
        "heads = F.scaled_dot_product_attention(query, keys_q, values_q, is_causal=True)"))
    assert fused.bug == "is_causal_top_left" and "passes is_causal=" in fused.observed[0], fused
    assert fused.fix.startswith("attn_mask=") and "in place of is_causal=True" in fused.fix
    by_hand = check_decoding_step(_hurried_step(_SCORES_BY_HAND, "heads = scores.softmax(-1) @ values_q"))
    assert by_hand.bug == "causal_mask_missing", by_hand
    assert by_hand.fix.startswith("scores = scores.masked_fill("), by_hand
    assert not any("is_causal" in line for line in by_hand.observed)
    # each fix pasted as it stands (with the call's own names for q and k) passes: it needs no other name
    call = fused.fix.split("   #")[0].replace("q.", "query.").replace("k.", "keys_q.")
    assert check_decoding_step(_hurried_step(
        f"heads = F.scaled_dot_product_attention(query, keys_q, values_q, {call})")).passed
    assert check_decoding_step(_hurried_step(_SCORES_BY_HAND, by_hand.fix.split("   #")[0],
                                             "heads = scores.softmax(-1) @ values_q")).passed
    pasted = check_decoding_step(_hurried_step(_SCORES_BY_HAND, _MASK, _FILL,
                                               "heads = scores.softmax(-1) @ values_q"))
    assert pasted.bug is None and pasted.fix.startswith("n_new = tokens.shape[1]"), pasted
    assert "a name the Fix lines use" in repr(pasted) and "run the cell" not in pasted.fix
    defined = _hurried_step(_SCORES_BY_HAND, "n_new = tokens.shape[1]", "n_all = keys.shape[-2]", _MASK,
                            _FILL, "heads = scores.softmax(-1) @ values_q")
    assert check_decoding_step(defined).passed


def test_the_zoo_has_a_step_for_every_bug_class():
    assert set(ATTENTION_LEVEL + CACHE_LEVEL) <= set(zoo.DECODING_BUGS)


@pytest.mark.parametrize("bug_id", sorted(zoo.DECODING_BUGS))
def test_every_bug_class_is_named_with_its_own_id_and_fix(bug_id):
    result = check_decoding_step(zoo.DECODING_BUGS[bug_id])
    assert not result.passed and result.bug == bug_id, result
    assert result.fix == BUGS[bug_id].fix_for(DECODING) and result.what == BUGS[bug_id].what
    # the headline says first what happened, then which bug it looks like
    assert result.headline.startswith("your step ") and result.headline.endswith(
        f"It looks like the known bug \"{bug_words(bug_id)}\".")


def test_attention_bugs_are_named_on_the_prefill_as_check_attention_names_them():
    from attnviz.check import check_attention

    for bug_id in ("missing_scale", "softmax_wrong_axis", "mask_inverted"):
        result = check_decoding_step(zoo.DECODING_BUGS[bug_id])
        assert "prefill" in result.observed[0], result
        assert check_attention(zoo.ATTENTION_BUGS[bug_id]).bug == bug_id


def test_the_issue_ids_are_in_the_one_catalog_and_the_docs():
    doc = (ROOT / "docs" / "checkers.md").read_text()
    named_in_the_issue = ("cache_not_appended", "values_not_appended", "is_causal_top_left",
                          "positions_not_advanced")
    for bug_id in (*named_in_the_issue, *CACHE_LEVEL):
        assert bug_id in BUGS and f"### `{bug_id}`" in doc, bug_id
    assert set(zoo.DECODING_BUGS) <= set(BUGS)


# ---- misnaming that the old checker did ----------------------------------------------------------


def _bottom_right(q, k, v):
    n_new, n_all = q.shape[-2], k.shape[-2]
    keep = torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)           # the bottom-right mask
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def _both(past, k, v):
    k, v = torch.cat([past[0], k], -2), torch.cat([past[1], v], -2)
    return k, v, (k, v)


def _step_with(append=_both, attend=_bottom_right):
    """A step (list-of-tuples cache, fused attention) whose append is ``append(past_kv, key, value)`` and
    whose attention over the heads (key/value heads repeated) is ``attend(q, k, v)``."""
    def step(model, tokens, cache):
        past = 0 if cache is None else cache[0][0].shape[-2]
        x = model.embed(tokens, past)
        new = []
        for layer, block in enumerate(model.blocks):
            a, y = block.attention, block.norm_attention(x)
            q = split_heads(a.W_q(y), model.n_heads)
            k, v = split_heads(a.W_k(y), model.n_kv_heads), split_heads(a.W_v(y), model.n_kv_heads)
            if cache is not None:
                k, v, stored = append(cache[layer], k, v)
            else:
                stored = (k, v)
            new.append(stored)
            g = model.n_heads // model.n_kv_heads
            o = attend(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))
            x = x + a.W_o(merge_heads(o))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), new
    return step


def test_keys_and_values_not_appended_are_named_apart():
    keys_kept = _step_with(lambda past, k, v: (*_both(past, k, v)[:2], (past[0], _both(past, k, v)[1])))
    values_kept = _step_with(lambda past, k, v: (*_both(past, k, v)[:2], (_both(past, k, v)[0], past[1])))
    assert check_decoding_step(keys_kept).bug == "keys_not_appended"
    assert check_decoding_step(values_kept).bug == "values_not_appended"


def test_the_wrong_concat_axis_is_not_called_values_not_appended():
    def features(past, k, v):
        k, v = torch.cat([past[0], k], -1), torch.cat([past[1], v], -1)
        return k, v, (k, v)

    assert check_decoding_step(_step_with(features)).bug == "cache_wrong_axis"


def test_no_mask_for_one_token_and_is_causal_for_several_is_named():
    def causal_for_several(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[-2] > 1)

    step = _step_with(attend=causal_for_several)
    result = check_decoding_step(step)
    assert result.bug == "is_causal_top_left", result
    assert "chunk" in result.observed[0]                   # single tokens are right; the chunk is not


def test_the_top_left_text_does_not_claim_is_causal_was_used():
    """The zoo's member builds a top-left tril() by hand: nothing in its verdict says it used is_causal."""
    result = check_decoding_step(zoo.DECODING_BUGS["is_causal_top_left"])
    assert "is_causal=True) does that, and so does torch.ones(n_new, n_all).tril()" in result.what
    # the headline names the bug, "is_causal top left" (the flag's spelling); the rest says nothing of it
    headline = result.headline.replace('the known bug "is_causal top left"', "the known bug")
    lines = (headline, result.shows, result.fix, *result.observed)
    assert all("is_causal" not in line for line in lines)


def _written_step(n_new_axis=1, repeat=True, kv_split="n_kv_heads", joined="keys"):
    """A cached step written from the model's pieces; n_new read from ``tokens.shape[n_new_axis]``, the
    shared key/value heads repeated or not (or "twice": before caching and again to attend), the keys
    and values split into ``getattr(model, kv_split)`` heads, and joined to the cached keys this step's
    keys (or, ``joined="queries"``, its queries: round 26's learner)."""
    from attnviz.mha import merge_heads, split_heads

    def step(model, tokens, cache):
        past = 0 if cache is None else cache[0][0].shape[-2]
        n_new, group = tokens.shape[n_new_axis], model.n_heads // model.n_kv_heads
        x = model.embed(tokens, past)
        kept = []
        for layer, block in enumerate(model.blocks):
            normed, parts = block.norm_attention(x), block.attention
            q = split_heads(parts.W_q(normed), model.n_heads)
            k = split_heads(parts.W_k(normed), getattr(model, kv_split))
            v = split_heads(parts.W_v(normed), getattr(model, kv_split))
            if repeat == "twice":                   # repeated for the query heads before caching, too
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            if cache is not None:
                k = torch.cat([cache[layer][0], q if joined == "queries" else k], dim=-2)
                v = torch.cat([cache[layer][1], v], dim=-2)
            kept.append((k, v))
            if repeat:
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            mask = torch.ones(n_new, k.shape[-2], dtype=torch.bool).tril(k.shape[-2] - n_new)
            x = x + parts.W_o(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), kept

    return step


def test_sizes_from_the_wrong_axis_are_said_in_plain_words():
    """n_new read from the batch axis, and key/value heads never repeated: both raise where two sizes
    meet, and the verdict says which sizes met and how to fix it."""
    assert check_decoding_step(_written_step()).passed
    batch = check_decoding_step(_written_step(n_new_axis=0))
    assert batch.bug is None and "4, the number of new positions, met 2, the batch size" in batch.headline
    assert batch.fix.startswith("batch, n_new = tokens.shape")
    heads = check_decoding_step(_written_step(repeat=False))
    assert heads.bug is None and "query heads met" in heads.headline and "key/value heads" in heads.headline
    assert "repeat_interleave" in heads.fix and "enable_gqa=True" in heads.fix
    # repeated before caching and again to attend: 6 query heads meet 18 key/value heads
    twice = check_decoding_step(_written_step(repeat="twice"))
    assert twice.bug == "cache_holds_repeated_heads", twice
    assert "6 query heads met 18 key/value heads" in repr(twice)
    assert "once before they were cached" in repr(twice)
    # the queries joined to the cached keys: the cache's 2 key/value heads meet 6 (the cache is right)
    queries = check_decoding_step(_written_step(joined="queries"))
    assert queries.bug is None and "the new piece joined to them has 6" in queries.headline, queries
    assert "the queries joined in place of the keys" in repr(queries) and "cache[layer]" in queries.fix
    # the query line copied for the keys and values: 10 features split into 6 heads raises in the view
    split = check_decoding_step(_written_step(kv_split="n_heads"))
    assert split.bug is None and "the keys or the values were split into 6 heads" in split.headline, split
    assert "2 key/value heads of 5 features" in repr(split) and "model.n_kv_heads" in split.fix


def test_a_step_that_caches_the_tokens_and_recomputes_is_told_it_caches_no_keys_or_values():
    """Right logits from the pieces, but the 'cache' is the token history: no KV cache at all."""
    from attnviz.mha import merge_heads, split_heads

    def recompute_from_tokens(model, tokens, cache):
        seen = tokens if cache is None else torch.cat([cache, tokens], dim=1)
        group = model.n_heads // model.n_kv_heads
        x = model.embed(seen, 0)
        for block in model.blocks:
            normed, parts = block.norm_attention(x), block.attention
            q = split_heads(parts.W_q(normed), model.n_heads)
            k = split_heads(parts.W_k(normed), model.n_kv_heads).repeat_interleave(group, dim=1)
            v = split_heads(parts.W_v(normed), model.n_kv_heads).repeat_interleave(group, dim=1)
            heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + parts.W_o(merge_heads(heads))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x)[:, -tokens.shape[1]:], seen

    result = check_decoding_step(recompute_from_tokens)
    assert not result.passed and result.bug is None, result
    assert "holds no keys or values" in result.headline
    assert "a tensor of shape (2, 4) of int64" in repr(result) and result.fix.startswith("new_cache.append")
    # the same step, its tokens kept in a list beside a float tensor: the float tensor is no layer's
    # keys or values, which the verdict says in its own words
    def beside_floats(model, tokens, cache):
        logits, seen = recompute_from_tokens(model, tokens, None if cache is None else cache[0])
        return logits, [seen, torch.zeros(1)]

    beside = check_decoding_step(beside_floats)
    assert not beside.passed and beside.bug is None
    assert "holds no keys or values" not in beside.headline
    assert "no tensor in your cache holds a layer's keys or values" in beside.headline


def test_a_step_that_caches_each_blocks_input_is_told_its_cache_holds_no_keys_or_values():
    """d2l's decoder keeps each block's input and projects all of it through W_k and W_v at every
    step: right logits, but none of the projections a KV cache saves is saved."""
    def cache_block_inputs(model, tokens, cache):
        inputs = [None] * len(model.blocks) if cache is None else cache
        past = 0 if inputs[0] is None else inputs[0].shape[1]
        x, n_new = model.embed(tokens, past), tokens.shape[1]
        group = model.n_heads // model.n_kv_heads
        kept = []
        for block, earlier in zip(model.blocks, inputs, strict=True):
            parts, normed = block.attention, block.norm_attention(x)
            every = normed if earlier is None else torch.cat([earlier, normed], dim=1)
            kept.append(every)
            q = split_heads(parts.W_q(normed), model.n_heads)
            k = split_heads(parts.W_k(every), model.n_kv_heads).repeat_interleave(group, dim=1)
            v = split_heads(parts.W_v(every), model.n_kv_heads).repeat_interleave(group, dim=1)
            mask = torch.ones(n_new, k.shape[-2], dtype=torch.bool).tril(k.shape[-2] - n_new)
            x = x + parts.W_o(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))
            x = x + block.mlp(block.norm_mlp(x))
        return model.unembed(x), kept

    result = check_decoding_step(cache_block_inputs)
    assert not result.passed and result.bug is None, result
    assert "no tensor in your cache holds a layer's keys or values" in result.headline
    # the Fix in the step's own names for its keys and values (the ones it hands to the fused function)
    # and for the list it returns as its cache
    assert "a list of 2" in repr(result) and result.fix.startswith("kept.append((k, v))"), result.fix
    # the same step caching the keys and values it projects passes, in a layout the checker's reading
    # of caches does not know too: (n_kv_heads, batch, positions, d_head)
    def heads_first(model, tokens, cache):
        logits, kept = _RecipeStep()(model, tokens, None if cache is None else
                                     [(k.transpose(0, 1), v.transpose(0, 1)) for k, v in cache])
        return logits, [(k.transpose(0, 1), v.transpose(0, 1)) for k, v in kept]

    assert check_decoding_step(heads_first).passed


# ---- what happened, in the headline --------------------------------------------------------------


def test_a_step_that_raised_says_so_and_names_no_bug():
    def interrupted(model, tokens, cache):
        raise KeyboardInterrupt

    for fn, word in ((interrupted, "KeyboardInterrupt"), (lambda m, t, c: {}["layer"], "KeyError")):
        result = check_decoding_step(fn)
        assert result.bug is None and result.headline.startswith(f"your step raised {word} on the prefill")


def test_a_step_that_exits_or_returns_a_list_says_exactly_that():
    exited = check_decoding_step(lambda m, t, c: os._exit(3))
    assert exited.bug is None and exited.headline == "the process running your code ended before it finished."
    assert "exit code 3" in repr(exited)

    def as_list(model, tokens, cache):
        logits, cache = _RecipeStep()(model, tokens, cache)
        return logits.tolist(), cache

    listed = check_decoding_step(as_list)
    assert listed.bug is None and listed.headline.startswith("your step returned the logits as a list")
    assert "tuple of two" not in listed.headline
    single = check_decoding_step(lambda m, t, c: _RecipeStep()(m, t, c)[0])
    assert "return (logits, cache), a tuple of two" in single.headline


def test_a_timeout_says_the_child_was_stopped_not_restart_the_kernel():
    release = threading.Event()

    def stuck(model, tokens, cache):
        release.wait(10)
        return _RecipeStep()(model, tokens, cache)

    result = check_decoding_step(stuck, time_limit=0.5)
    release.set()
    assert result.headline == "your code did not finish within 0.5 s."
    assert "kernel is unaffected" in repr(result) and "Restart" not in repr(result)


def test_not_written_yet_is_a_friendly_verdict():
    def stub(model, tokens, cache):
        raise NotImplementedError("write your code here")

    result = check_decoding_step(stub)
    assert result.status == "not_implemented" and result.headline == NOT_WRITTEN and not result.observed


# ---- the exercise is done, not handed to the library -------------------------------------------


def test_the_library_one_liner_and_generate_fail_in_plain_words():
    one_liner = check_decoding_step(lambda model, tokens, cache: model(tokens, cache if cache is not None
                                                                       else gpt.KVCache()))

    def generates(model, tokens, cache):
        return gpt.generate(model, tokens, 1)[:, None].float(), cache

    generated = check_decoding_step(generates)
    for result, call in ((one_liner, "model(tokens, cache)"), (generated, "gpt.generate")):
        assert not result.passed and result.bug is None
        assert result.headline == "your step hands the work to the library instead of doing it."
        assert call in result.observed[0], result


def test_recomputing_with_the_models_own_forward_is_refused_too():
    def recompute(model, tokens, cache):
        seen = tokens if cache is None else torch.cat([cache, tokens], dim=1)
        return model(seen)[0][:, -tokens.shape[1]:], seen

    result = check_decoding_step(recompute)
    assert not result.passed and "model(tokens)" in result.observed[0]


def test_the_checkers_own_steps_are_still_importable_for_notebook_07():
    """Notebook 07 and the nbgrader test use these on a real TinyGPT."""
    assert check_decoding_step(DECODING_BUGS["values_not_appended"]).bug == "values_not_appended"
    torch.manual_seed(0)
    model = gpt.TinyGPT(11, 16, 4, 2, 12).eval()
    tokens = torch.randint(11, (2, 6))
    with torch.no_grad():
        first, cache = reference_decode_step(model, tokens[:, :4], None)
        second, _ = reference_decode_step(model, tokens[:, 4:], cache)
        torch.testing.assert_close(torch.cat([first, second], 1), model(tokens)[0], atol=1e-5, rtol=1e-5)


# ---- the model view: the agreed public pieces, and nothing that does the step ----------------------


def test_the_view_exposes_the_agreed_pieces_and_refuses_the_rest():
    torch.manual_seed(1)
    model = gpt.TinyGPT(13, 24, 4, 2, 16, n_kv_heads=2).eval()
    view = model.pieces()
    for size in ("vocab_size", "d_model", "n_heads", "n_kv_heads", "d_head", "n_layers", "max_len"):
        assert getattr(view, size) == getattr(model, size), size
    tokens = torch.randint(13, (2, 5))
    x = torch.randn(2, 5, 24)
    assert torch.equal(view.embed(tokens, 3), model.embed(tokens, 3))
    assert torch.equal(view.unembed(x), model.unembed(x))
    assert view.token_embedding is model.token_embedding and view.unembedding is model.unembedding
    for mine, theirs in zip(view.blocks, model.blocks, strict=True):
        assert mine.norm_attention is theirs.norm_attention and mine.mlp is theirs.mlp
        assert mine.norm_mlp is theirs.norm_mlp
        assert all(getattr(mine.attention, w) is getattr(theirs.attention, w)
                   for w in ("W_q", "W_k", "W_v", "W_o"))
    refused = [lambda: view(tokens), lambda: view(tokens, gpt.KVCache()),
               lambda: gpt.generate(view, tokens, 2),
               lambda: view.blocks[0].attention(x), lambda: view.blocks[0](x),
               lambda: gpt.cached_attention(view.blocks[0].attention, x, 4, 2, gpt.KVCache())]
    for call in refused:
        with pytest.raises(gpt.PiecesOnlyError, match="decode_step exercise"):
            call()
    assert "model.pieces()" in gpt.__doc__ and "PiecesOnlyError" in gpt.__doc__


def test_the_checker_meets_the_model_only_through_its_public_pieces():
    """No private attribute of a model, block or attention is read by the decoding checker or its
    reference; the attribute names it reads on them are the agreed ones."""
    agreed = {"embed", "unembed", "blocks", "norm_attention", "attention", "W_q", "W_k", "W_v", "W_o",
              "norm_mlp", "mlp", "n_heads", "n_kv_heads", "d_head", "d_model", "n_layers", "vocab_size",
              "max_len", "pieces", "eval", "double",
              "unembedding",   # a StepModel layer (gpt's docstring), for final_norm_skipped
              "token_embedding",   # another, for positions left out once there is a cache
              "position_embedding",   # another, for an embedding added twice
              "norm_final"}    # another (gpt's docstring): the checker's model gets its own LayerNorm scales
    for name in ("decoding.py", "_reference.py"):
        tree = ast.parse((ROOT / "attnviz" / "check" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in (
                    "model", "block", "parts", "exact", "view"):
                assert node.attr in agreed, (name, node.value.id, node.attr)


def test_check_imports_no_zoo():
    for path in (ROOT / "attnviz" / "check").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "zoo" not in (node.module or "") and all(a.name != "zoo" for a in node.names), path
            if isinstance(node, ast.Import):
                assert all("zoo" not in a.name for a in node.names), path


def test_a_wrong_block_on_the_prefill_gets_a_fix_line_about_the_block():
    """A step whose block is wired wrong in a way no id names (the MLP's output added twice) matches
    no known bug; the fix line then says how a block is put together, not only how the cache works."""
    class MlpTwice(zoo.DecodeStep):
        def add_mlp(self, x, block, block_input):
            return x + 2 * block.mlp(block.norm_mlp(x))                  # the MLP's output added twice

    result = check_decoding_step(MlpTwice())
    assert not result.passed and result.bug is None and "prefill" in result.headline, result
    assert "x = x + W_o(merged), then x = x + mlp(norm_mlp(x))" in result.fix, result.fix


def test_a_cache_whose_buffer_a_later_step_overwrites_is_named():
    """Buffers written in place and shared by every returned cache: straight on it is right; going
    back to token 4's cache after a second continuation of the prompt is not."""
    from learner_code.decoding import preallocated_copied, preallocated_shared

    assert check_decoding_step(preallocated_copied).passed
    result = check_decoding_step(preallocated_shared)
    assert result.bug == "cache_modified_in_place", result
    assert "Called again with the cache that token 4 returned" in repr(result), result


def test_a_step_wrong_only_on_the_batch_one_token_gets_a_verdict_not_a_traceback():
    """The position search compares with the batch of 2's true cache; on the batch-1 token after the
    batch-1 prefill it must stand aside (it once raised torch.cat's size error in the kernel)."""
    class WrongOnBatchOneToken(zoo.DecodeStep):
        def unembed(self, model, x):
            logits = model.unembed(x)
            return logits * 1.5 if x.shape[:2] == (1, 1) else logits

    result = check_decoding_step(WrongOnBatchOneToken())
    assert not result.passed and "token 6 after it, batch 1" in " ".join(result.observed), result


torch.manual_seed(0)
m = gpt.TinyGPT(16, 28, 4, 2, 24, n_kv_heads=2).eval()     # notebook 08's section 2 calls its model m


def test_a_step_that_reads_the_notebooks_model_says_so():
    """Section 2's step by hand uses the notebook's m: a student who copies it into decode_step reads
    another model's sizes. The verdict says so first, whatever else went wrong."""
    def copied(model, tokens, cache):
        x = model.embed(tokens, 0)
        return split_heads(model.blocks[0].attention.W_q(x), m.n_heads), cache

    result = check_decoding_step(copied)
    assert not result.passed and result.observed[0].startswith("Your step reads m, the notebook's model")
    assert "its first argument model" in result.observed[0] and "never the notebook's m" in result.fix
    said = "your step reads m, the notebook's model, where it should use model, the model it is given."
    assert result.headline == said, result
    # 08's own model is now called model: a step that names its argument otherwise is told which is which

    def renamed(given, tokens, cache):
        return m.unembed(m.embed(tokens, 0)), cache

    named = check_decoding_step(renamed)
    assert "its first argument given" in named.observed[0] and named.fix.startswith("given.n_heads")
    assert not _models_read(_RecipeStep.__call__) and _models_read(copied) == ["m"]


def test_a_callable_object_is_not_read_for_the_models_it_uses():
    """The kernel reads no attribute of an object the learner wrote (its __getattr__ could hang it):
    the note on a notebook's model looks into plain functions only."""
    asked = []

    class Step:
        def __getattr__(self, name):
            asked.append(name)
            raise AttributeError(name)

        def __call__(self, model, tokens, cache):
            return m(tokens)[0], cache

    result = check_decoding_step(Step())
    assert not result.passed and asked == [], asked


# ---- a fresh reader's variants (round 17): named, and said in the exercise's words -------------------


def test_the_top_left_bug_keeps_the_flags_name_in_its_headline():
    """'is_causal top left', as the flag is spelled, not 'is causal top left'."""
    assert bug_words("is_causal_top_left") == "is_causal top left"
    result = check_decoding_step(zoo.DECODING_BUGS["is_causal_top_left"])
    assert result.headline.endswith('It looks like the known bug "is_causal top left".'), result


class _LastRowOnly(zoo.DecodeStep):
    """Returns logits[:, -1], (batch, vocab): the one row generation reads, without its axis."""

    def unembed(self, model, x):
        return model.unembed(x)[:, -1]


def test_logits_of_the_last_position_without_its_axis_are_named_last_position_only():
    result = check_decoding_step(_LastRowOnly())
    assert result.bug == "last_position_only", result
    assert "shape (2, 11)" in result.observed[0] and "(2, 4, 11)" in result.observed[0], result
    assert "batch/head" not in repr(result)            # logits have no head dimensions to keep


def test_a_repeat_fix_never_reads_a_group_the_step_does_not_set():
    """Replay 19's 08V3: the Fix's repeat_interleave(group, dim=1) named a group the step never set, and read
    the notebook's own group = 2 where the model had 3 query heads per key/value head (the next verdict
    caught it). Without a group of the learner's, the Fix writes it out."""
    step = _solution_edited(
        ("    group = model.n_heads // model.n_kv_heads", "    pass"),
        ("key.repeat_interleave(group, dim=1)", "key.repeat(1, model.n_heads // model.n_kv_heads, 1, 1)"),
        ("value.repeat_interleave(group, dim=1)", "value.repeat(1, model.n_heads // model.n_kv_heads, 1, 1)"),
        group=2)
    result = check_decoding_step(step)
    assert result.bug == "kv_heads_repeated_not_interleaved", result
    code = result.fix.split("   #")[0]
    assert "repeat_interleave(model.n_heads // model.n_kv_heads, dim=1)" in code and "(group" not in code, \
        result.fix


_KEPT_ON_ITSELF = """
def decode_step(model, tokens, cache):
    if cache is None:
        decode_step.seen = 0
        cache = gpt.KVCache()
    else:
        cache = cache.copy()
    past, new = decode_step.seen, tokens.shape[1]
    x = model.embed(tokens, past)
    mask = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    group = model.n_heads // model.n_kv_heads
    for layer, block in enumerate(model.blocks):
        a = block.attention
        h = block.norm_attention(x)
        k, v = cache.append(layer, split_heads(a.W_k(h), model.n_kv_heads),
                            split_heads(a.W_v(h), model.n_kv_heads))
        q = split_heads(a.W_q(h), model.n_heads)
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + a.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    decode_step.seen += new
    return model.unembed(x), cache
"""


def test_a_position_kept_on_the_step_itself_that_raises_on_a_reused_cache_is_state_outside_the_cache():
    """Replay 19's 08V4 (rounds 3 and 4): the position kept on decode_step itself; called again with the
    prompt's cache it raised (its mask sized by a later call's position). Told "cache modified in place",
    twice, though that cache was left as it was: a step that raised sent back nothing of the cache."""
    space = dict(_notebook_names())
    exec(_KEPT_ON_ITSELF, space)                                 # noqa: S102 - the learner's cell
    result = check_decoding_step(space["decode_step"])
    assert result.bug == "state_outside_cache", result
    said = "which no call had changed, your step raised RuntimeError"
    assert any(said in line for line in result.observed), result


def _stale(which):
    """An append that joins this step's keys (or values) to the cache, and attends with the cached values
    (or keys) as they were: the other one never appended before attending."""
    def append(past, k, v):
        k_all, v_all = torch.cat([past[0], k], -2), torch.cat([past[1], v], -2)
        k, v = (k_all, past[1]) if which == "values" else (past[0], v_all)
        return k, v, (k, v)
    return append


def _by_hand(q, k, v):
    n_new, n_all = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    keep = torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)
    return scores.masked_fill(~keep, float("-inf")).softmax(-1) @ v


@pytest.mark.parametrize("attend", [_bottom_right, _by_hand], ids=["sdpa_mask", "by_hand"])
@pytest.mark.parametrize("which", ["values", "keys"])
def test_attending_with_the_cached_values_as_they_were_is_named(which, attend):
    """The keys appended, the values as cached (or the other way round): torch raises where 4 cached
    positions meet 5, and the verdict names the one left behind, with its fix."""
    result = check_decoding_step(_step_with(_stale(which), attend))
    bug = f"{which}_not_appended"
    assert result.bug == bug, result
    assert result.headline.startswith("your step raised RuntimeError on token 4"), result
    assert result.fix == BUGS[bug].fix_for(DECODING)
    assert f"the {which} hold only the 4 cached positions, and this step's new {which} were not appended" \
        in result.observed[1], result


def test_a_mask_one_position_short_is_not_called_a_cache_not_appended():
    """A mask over the cached positions only (4 columns for 5 keys) raises with the same two sizes, but
    torch's message does not say which tensor is short: no cache bug is named."""
    def short_mask(q, k, v):
        n_new, n_all = q.shape[-2], k.shape[-2]
        keep = torch.ones(n_new, n_all - n_new, dtype=torch.bool)       # the new keys forgotten
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)

    result = check_decoding_step(_step_with(attend=short_mask))
    assert not result.passed and result.bug is None, result


def test_a_first_call_that_reads_the_none_cache_is_told_the_prefills_cache_is_none():
    class CopiesNone(zoo.DecodeStep):
        def start_cache(self, cache):
            return cache.copy()                                # 'NoneType' object has no attribute 'copy'

    def reads_none(model, tokens, cache):
        past = cache[0][0].shape[-2]                           # 'NoneType' object is not subscriptable
        return zoo.DecodeStep.__call__(_RecipeStep(), model, tokens, cache if past else None)

    for step, said in ((CopiesNone(), "has no attribute 'copy'"), (reads_none, "not subscriptable")):
        result = check_decoding_step(step)
        assert result.bug is None and result.headline.startswith("your step raised"), result
        assert said in result.observed[0], result
        assert any("On the prefill cache is None" in line for line in result.observed), result
        assert "gpt.KVCache()" in result.fix, result


def test_a_cached_mask_one_diagonal_too_low_is_named_causal_excludes_self():
    """tril(past - 1) once there is a cache: each new query sees the cached keys but not its own."""
    def excludes_self_after_the_prefill(q, k, v):
        n_new, n_all = q.shape[-2], k.shape[-2]
        past = n_all - n_new
        keep = torch.ones(n_new, n_all, dtype=torch.bool).tril(past - 1 if past else 0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)

    result = check_decoding_step(_step_with(attend=excludes_self_after_the_prefill))
    assert result.bug == "causal_excludes_self", result
    assert result.fix == BUGS["causal_excludes_self"].fix_for(DECODING)
    assert any("not its own key" in line for line in result.observed), result


def test_the_wrong_axis_fix_names_the_positions_axis_not_one_layout():
    """Keys cached transposed, (batch, h_kv, d_head, positions), a layout the exercise allows, joined on
    dim=-2: the fix says the positions axis, whose number depends on the layout."""
    def transposed_keys(cat_dim):
        def step(model, tokens, cache):
            past = 0 if cache is None else cache[0][1].shape[-2]
            x, group = model.embed(tokens, past), model.n_heads // model.n_kv_heads
            new = []
            for layer, block in enumerate(model.blocks):
                a, y = block.attention, block.norm_attention(x)
                q = split_heads(a.W_q(y), model.n_heads)
                keys_t = split_heads(a.W_k(y), model.n_kv_heads).transpose(-2, -1)   # (b, h_kv, d, n)
                v = split_heads(a.W_v(y), model.n_kv_heads)
                if cache is not None:
                    keys_t = torch.cat([cache[layer][0], keys_t], cat_dim)
                    v = torch.cat([cache[layer][1], v], -2)
                new.append((keys_t, v))
                o = _bottom_right(q, keys_t.transpose(-2, -1).repeat_interleave(group, 1),
                                  v.repeat_interleave(group, 1))
                x = x + a.W_o(merge_heads(o))
                x = x + block.mlp(block.norm_mlp(x))
            return model.unembed(x), new
        return step

    assert check_decoding_step(transposed_keys(-1)).passed
    result = check_decoding_step(transposed_keys(-2))
    assert result.bug == "cache_wrong_axis", result
    assert "along the positions axis (dim=-2 in the (batch, heads, positions, d_head) layout;" in result.fix
    assert "on another axis the cache holds 4 positions where this step has 1" in result.observed[1], result



GROUP = "group = model.n_heads // model.n_kv_heads"


@pytest.mark.parametrize(("group", "heads"), [("model.n_kv_heads", 4), ("model.n_heads", 12)])
def test_a_group_size_of_the_wrong_number_is_told_the_group(group, heads):
    result = check_decoding_step(_solution_edited((GROUP, f"group = {group}")))
    assert result.bug is None and f"6 query heads met {heads} key/value heads" in result.headline, result
    assert result.fix.startswith(GROUP), result


def test_a_group_of_zero_is_not_called_a_buffer_counter():
    """n_kv_heads // n_heads is 0: the fused attention returns zeros for 0 key/value heads, the symptom a
    buffer read before it was written has; the cache shows it is not one."""
    result = check_decoding_step(_solution_edited((GROUP, "group = model.n_kv_heads // model.n_heads")))
    assert result.bug is None and "attention added nothing" in result.headline, result
    assert result.fix.startswith(GROUP) and any("the wrong way round" in o for o in result.observed)


def test_a_group_left_by_an_earlier_cell_is_named():
    result = check_decoding_step(_solution_edited((GROUP, "pass"), group=2))
    assert result.bug is None and "the notebook's group = 2" in result.observed[0], result
    assert "group = model.n_heads // model.n_kv_heads" in result.fix


def test_a_list_cache_copied_then_appended_to_is_told_it_grows():
    grows = check_decoding_step(_solution_edited(
        ("new_cache = []", "new_cache = [] if cache is None else cache.copy()")))
    assert grows.bug is None and "the cache grows by 2 entries a step" in grows.headline, grows
    assert grows.fix.startswith("new_cache = []")
    replaced = check_decoding_step(_solution_edited(
        ("new_cache = []", "new_cache = [None, None] if cache is None else cache.copy()"),
        ("new_cache.append((key, value))", "new_cache[layer] = (key, value)")))
    assert replaced.passed, replaced


def test_a_square_mask_with_a_cache_and_a_cache_of_one_layer_are_said_in_plain_words():
    square = check_decoding_step(_solution_edited(
        ("mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)",
         "mask = torch.ones(n_new, n_new, dtype=torch.bool).tril()")))
    assert "a mask over 3 keys met the 10 keys attended" in square.headline, square
    assert square.fix.startswith("mask = torch.ones(n_new, n_all")
    short = check_decoding_step(_solution_edited(
        ("new_cache.append((key, value))", "new_cache = [(key, value)]")))
    assert "holds 1 entry for 2 layers" in short.headline and short.fix.startswith("new_cache = []"), short


@pytest.mark.parametrize(("edits", "bug"), [
    ([("return model.unembed(x), new_cache", "return model.unembed(model.norm_final(x)), new_cache")],
     "final_norm_twice"),
    ([("x = x + block.mlp(block.norm_mlp(x))", "x = x + block.mlp(model.norm_final(x))")], "norms_mixed_up"),
    ([("new_cache.append((key, value))", "new_cache.append((key.bfloat16(), value.bfloat16()))"),
      ("torch.cat([cache[layer][0], key]", "torch.cat([cache[layer][0].float(), key]"),
      ("torch.cat([cache[layer][1], value]", "torch.cat([cache[layer][1].float(), value]")],
     "cache_low_precision"),
    ([("x = model.embed(tokens, past)",
       "x = model.embed(tokens) if cache is None else model.token_embedding(tokens)")],
     "positions_not_advanced"),
])
def test_mistakes_the_exercise_text_warns_about_are_named(edits, bug):
    result = check_decoding_step(_solution_edited(*edits))
    assert result.bug == bug, result


def test_a_step_that_reads_one_kind_of_cache_and_returns_another_is_told_so():
    result = check_decoding_step(_solution_edited(
        ("past = 0 if cache is None else cache[0][0].shape[-2]",
         "past = 0 if cache is None else cache.length")))
    assert "it read .length on the cache its previous call returned, a list of 2" in result.headline, result


def test_a_sliding_window_is_said_as_such_and_its_own_constant_is_not_called_the_notebooks(tmp_path):
    source = tmp_path / "cell.py"                 # a cell of the learner's own: WINDOW is theirs
    source.write_text("WINDOW = 8\n" + _solution_source().replace(
        "new_cache.append((key, value))", "new_cache.append((key[:, :, -WINDOW:], value[:, :, -WINDOW:]))"))
    space = _notebook_names()
    exec(compile(source.read_text(), str(source), "exec"), space)    # noqa: S102 - the test's own text
    result = check_decoding_step(space["decode_step"])
    assert "the cache keeps the latest 8 positions only" in result.headline, result
    assert not any("WINDOW" in line for line in result.observed), result
