"""check_decoding_step: a learner's cached decoding step against full recomputation.

The learner writes ``decode_step(model, tokens, cache) -> (logits, cache)`` for an
:class:`attnviz.gpt.TinyGPT`: ``tokens`` ``(batch, n_new)`` are the positions after those already
in ``cache`` (None at the start), ``logits`` ``(batch, n_new, vocab)``, and the returned cache is
handed to the next call (its format is the learner's own). The checker feeds a prompt in pieces (a
prefill of 4 tokens, three single tokens, then a chunk of 3) and compares every piece's logits with
``model(all tokens so far)``. Four classic mistakes are written out below and recognised by their
outcomes: the cache never appended, keys appended but not values, ``is_causal=True`` on the new
queries (aligned top-left), and positions not advanced. Torch only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..gpt import TinyGPT
from . import _verdict
from ._run import TIME_LIMIT, Outcome, _exception, describe_error, rebuild, shape_str
from ._sandbox import run_steps, to_plain

__all__ = ["check_decoding_step", "reference_decode_step", "DECODING_BUGS", "DECODING_WORDS"]

NAME = "check_decoding_step"
PIECES = ((0, 4), (4, 5), (5, 6), (6, 7), (7, 10))   # prefill, three single tokens, a chunk of 3
ATOL = 1e-4


def _decode(model, tokens, cache, *, append_keys=True, append_values=True, attend="bottom_right",
            advance=True):
    """The cached step, with switches for the four mistakes. ``cache``: None or [(keys, values)] per layer."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    batch, n_new = tokens.shape
    start = past if advance else 0
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(start, start + n_new))
    h, h_kv, d = model.n_heads, model.n_kv_heads, model.d_head
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = attention.W_q(normed).view(batch, n_new, h, d).transpose(1, 2)      # (batch, h, n_new, d)
        key = attention.W_k(normed).view(batch, n_new, h_kv, d).transpose(1, 2)     # (batch, h_kv, n_new, d)
        value = attention.W_v(normed).view(batch, n_new, h_kv, d).transpose(1, 2)
        if cache is not None:
            key = torch.cat([cache[layer][0], key], dim=-2)                         # (batch, h_kv, n_all, d)
            value = torch.cat([cache[layer][1], value], dim=-2) if append_values else cache[layer][1]
        kept = (key, value) if cache is None else cache[layer]                        # what was there
        new_cache.append((key, value) if append_keys else kept)
        key, value = key.repeat_interleave(h // h_kv, 1), value.repeat_interleave(h // h_kv, 1)
        if attend == "bottom_right":
            mask = torch.ones(n_new, key.shape[-2], dtype=torch.bool).tril(key.shape[-2] - n_new)
            heads = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        else:
            heads = F.scaled_dot_product_attention(query, key, value, is_causal=True)   # top-left
        x = x + attention.W_o(heads.transpose(1, 2).contiguous().view(batch, n_new, h * d))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembedding(model.norm_final(x)), new_cache


def reference_decode_step(model, tokens, cache):
    """The correct cached step (the checker's reference)."""
    return _decode(model, tokens, cache)


DECODING_BUGS = {
    "cache_not_appended": lambda m, t, c: _decode(m, t, c, append_keys=False),
    "values_not_appended": lambda m, t, c: _decode(m, t, c, append_values=False),
    "is_causal_top_left": lambda m, t, c: _decode(m, t, c, attend="top_left"),
    "positions_not_advanced": lambda m, t, c: _decode(m, t, c, advance=False),
}

# bug id -> (what is wrong, how it shows, the fix)
DECODING_WORDS = {
    "cache_not_appended": (
        "The new keys and values are never stored: the cache you return is the one you were given.",
        "The first token after the prompt comes out right, then every later token attends to the prompt "
        "and itself only, as if the tokens generated in between did not exist.",
        "cache[layer] = (torch.cat([past_keys, key], dim=-2), torch.cat([past_values, value], dim=-2))"),
    "values_not_appended": (
        "The new keys are appended to the cache but the new values are not.",
        "There is one more key than there are values, so weights @ values fails (or the values "
        "belong to the wrong positions).",
        "values = torch.cat([past_values, value], dim=-2)   # as for the keys"),
    "is_causal_top_left": (
        "The new queries use F.scaled_dot_product_attention(..., is_causal=True) against the whole cache.",
        "is_causal=True aligns the triangle to the top left: one new query may see key 0 only, so "
        "every generated token is computed from the first token alone. Right on the prefill, wrong "
        "on every step after it.",
        "one new query: no mask at all; several: a bottom-right mask, "
        "torch.ones(n_new, n_all, dtype=torch.bool).tril(n_all - n_new)"),
    "positions_not_advanced": (
        "The new tokens get position embeddings 0, 1, ... again instead of continuing after the cache.",
        "The prefill is right; every later token is read as if it stood at the start of the text.",
        "positions = torch.arange(past, past + n_new)   # past = positions already in the cache"),
}


def _probe():
    torch.manual_seed(7)
    model = TinyGPT(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=12, n_kv_heads=2).eval()
    tokens = torch.randint(11, (2, 10), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        expected = model(tokens)[0]
    return model, tokens, expected


def _run_steps(fn, model, tokens, time_limit):
    """Feed the pieces in order; one entry per piece reached: logits, or the Outcome that failed.

    All pieces run in one isolated child (see :mod:`._sandbox`), so the learner's cache stays
    whatever object the learner made: only the logits come back to the kernel.
    """
    state = {"cache": None}

    def piece(start, stop):
        def step():
            with torch.no_grad():
                value = fn(model, tokens[:, start:stop], state["cache"])
            if not (isinstance(value, (tuple, list)) and len(value) == 2
                    and isinstance(value[0], torch.Tensor)):
                return {"wrong": f"returned {type(value).__name__}; return (logits, cache), a tuple of two."}
            state["cache"] = value[1]
            return {"logits": to_plain(value[0])}
        return step

    run = run_steps([piece(a, b) for a, b in PIECES], time_limit=time_limit, budget=time_limit)
    results = []
    for step in run.steps:
        if step.status == "skipped":
            break
        if step.status in ("timeout", "over_budget"):
            return results + [Outcome(timed_out=True, isolated=run.isolated)]
        if step.status == "exited":
            return results + [Outcome(error=RuntimeError(run.note), exited=run.note, isolated=run.isolated)]
        if step.status == "error":
            return results + [Outcome(error=_exception(step.error), isolated=run.isolated)]
        if "wrong" in step.value:
            return results + [step.value["wrong"]]
        results.append(rebuild(step.value["logits"]))
    return results


def _same(mine, theirs) -> bool:
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=True):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return False
        if isinstance(a, torch.Tensor):
            if a.shape != b.shape or not torch.allclose(a, b, atol=ATOL, rtol=ATOL):
                return False
        elif (a.error is None) != (b.error is None):
            return False
    return True


_KNOWN: dict = {}


def _known(model, tokens):
    if not _KNOWN:
        _KNOWN.update({bug: _run_steps(fn, model, tokens, TIME_LIMIT) for bug, fn in DECODING_BUGS.items()})
    return _KNOWN


def _found(bug_id, observed):
    """A verdict for one of this checker's bugs (kept here: they are not in the shared catalogue)."""
    what, shows, fix = DECODING_WORDS[bug_id]
    return _verdict.CheckResult(False, bug_id, "bug", NAME, f"found a known bug, {bug_id.replace('_', ' ')}",
                                what=what, shows=shows, fix=fix, observed=observed)


def _piece_name(index):
    start, stop = PIECES[index]
    if index == 0:
        return f"the prefill (cache None, tokens 0..{stop - 1})"
    return f"token {start}" if stop - start == 1 else f"the chunk of tokens {start}..{stop - 1}"


def check_decoding_step(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(model, tokens, cache) -> (logits, cache)`` against full recomputation.

    The model is a :class:`attnviz.gpt.TinyGPT` with 4 query heads sharing 2 key/value heads.
    Returns a :class:`CheckResult`: passed, a named bug, or what differs and where.
    """
    if not callable(fn):
        return _verdict.problem(NAME, f"expected a function, got a {type(fn).__name__}.",
                                ["Pass the function itself: check_decoding_step(decode_step)."])
    model, tokens, expected = _probe()
    mine = _run_steps(fn, model, tokens, time_limit)
    last = mine[-1] if mine else None
    if last is not None and not isinstance(last, torch.Tensor):
        if isinstance(last, str):
            return _verdict.problem(NAME, f"on {_piece_name(len(mine) - 1)}, your function {last}", [])
        if last.timed_out:
            return _verdict.problem(NAME, f"on {_piece_name(len(mine) - 1)} it did not finish within "
                                    f"{time_limit:g} s.", ["Restart the kernel if it is still running."])
        if isinstance(last.error, NotImplementedError):
            return _verdict.not_implemented(NAME, str(last.error))
    right = []
    for index, got in enumerate(mine):
        start, stop = PIECES[index]
        want = expected[:, start:stop]
        right.append(isinstance(got, torch.Tensor) and got.shape == want.shape
                     and torch.allclose(got, want, atol=ATOL, rtol=ATOL))
    if len(mine) == len(PIECES) and all(right):
        return _verdict.passed(NAME, "every piece's logits equal full recomputation.", [
            "A prefill of 4 tokens, three single tokens and a chunk of 3, with 4 query heads "
            "sharing 2 key/value heads."])
    bad = right.index(False) if False in right else len(mine) - 1
    got, (start, stop) = mine[bad], PIECES[bad]
    if isinstance(got, torch.Tensor):
        want = expected[:, start:stop]
        note = (f"On {_piece_name(bad)} the logits have shape {shape_str(got.shape)} instead of "
                f"{shape_str(want.shape)}." if got.shape != want.shape else
                f"On {_piece_name(bad)} the logits differ from full recomputation by up to "
                f"{(got - want).abs().max().item():.3g}.")
    else:
        note = f"On {_piece_name(bad)} your function raised {describe_error(got.error)}"
    notes = [note] + ([f"Right on: {', '.join(_piece_name(i) for i in range(bad))}."] if bad else [])
    for bug_id, theirs in _known(model, tokens).items():
        if _same(mine, theirs):
            return _found(bug_id, notes)
    return _verdict.problem(NAME, "the logits differ from full recomputation, and match no known bug.", notes,
                            fix="append this step's keys and values to the cache, attend with a bottom-right "
                                "mask, and embed positions past .. past + n_new - 1")
