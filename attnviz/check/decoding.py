"""check_decoding_step: a learner's cached decoding step, named by its symptoms at two levels.

The learner writes ``decode_step(model, tokens, cache) -> (logits, cache)`` for notebook 08's
tiny GPT: ``tokens`` ``(batch, n_new)`` are the positions after those already in ``cache`` (None
at the start), ``logits`` ``(batch, n_new, vocab_size)``, and the returned cache (its format is the
learner's own) is handed to the next call. The step gets ``model.pieces()``
(:class:`attnviz.gpt.StepModel`): the agreed public pieces, and no forward of its own, so the
exercise cannot be handed back to the library.

This checker is its probes plus the rules that differ from the shared engine (:mod:`._engine`,
:mod:`._rules`), in two stages:

1. the prefills (no cache yet: where every attention-level bug already shows) against a full
   recomputation by the checker's own reference (:func:`._reference.decode`, float64), with the
   shared rules and the prefill hypotheses, so missing scale, softmax over the wrong axis, heads
   split without the transpose, a mask off by one, ... are named as ``check_attention`` and
   ``check_multi_head`` name them;
2. when the prefills are right, the cached steps (three single tokens, a chunk of three, a token
   after it, a second continuation from the prefill's cache): the cache the step returned is read in the child
   (which tensors hold which layer's keys and values, for how many positions, with how many heads)
   to name keys or values not appended or concatenated on the wrong axis (and, from torch's message
   when the step raised, keys or values attended before this step's were appended), then the cached
   hypotheses (positions not advanced, a top-left triangle, a diagonal one too low, no mask for a
   chunk, the cache not appended), then a cache changed in place, a cache that keeps its key/value
   heads repeated for the queries, and a cache that holds no layer's keys or values (the tokens, or
   each block's input).

The checker meets the model only through its public pieces (``embed``, ``blocks[i]``, ``unembed``,
the sizes; see :mod:`attnviz.gpt`). Torch only.
"""

from __future__ import annotations

import ast
import copy
import itertools
import re
import types
from dataclasses import replace

import torch

from .._threads import one_thread
from ..gpt import PiecesOnlyError, StepModel, TinyGPT, cached_attention
from . import _verdict
from ._catalog import DECODING_FIX_NAMES
from ._compare import agrees, max_gap
from ._diagnose import RAISED, Answer, Hypotheses, error_kind
from ._engine import Probe, Rule, Spec, Trial, decide, run_check
from ._readers import softmax_input, trees
from ._reference import CACHED_VARIANTS, PREFILL_VARIANTS, decode, in_neutral, neutral
from ._repair import diagonal_moved
from ._rules import NO_KNOWN_BUG, hypothesis, no_known_bug, raised, rules
from ._run import TIME_LIMIT, Odd, rebuild, shape_str
from ._sandbox import error_info, to_plain
from ._stale import (
    code_objects,
    globals_read,
    library_used,
    names_used,
    shared_defaults,
    shared_defaults_in_classes,
    source_of,
    syntax_tree,
    values_read,
    with_stale_note,
)
from ._yournames import fix_in_your_names

__all__ = ["check_decoding_step", "reference_decode_step", "DECODING_BUGS"]

NAME = "check_decoding_step"
# 6 query heads share 2 key/value heads: a group of 3, so that mixing up the group size and the number
# of key/value heads (repeat_interleave(n_kv_heads), h // n_kv_heads the wrong way round) shows
SIZES = {"vocab_size": 11, "d_model": 30, "n_heads": 6, "n_layers": 2, "max_len": 12, "n_kv_heads": 2}
_FIX = ("x = model.embed(tokens, past); per block: project norm_attention(x), append keys AND values along "
        "the positions (dim=-2), repeat_interleave the key/value heads, attend with a bottom-right mask, "
        "x = x + W_o(merged), then x = x + mlp(norm_mlp(x)); logits = model.unembed(x)")
_PASSED = ("A prefill of 4 tokens, three single tokens, a chunk of 3 and a token after it (batch 2), with "
           "6 query heads sharing 2 key/value heads; a second continuation from the prefill's cache, then "
           "token 5 again from token 4's cache; a prefill of batch 1 and a token after it; the same prefill "
           "twice.")


def reference_decode_step(model, tokens, cache):
    """The correct cached step (the checker's own): cache None or a list of (keys, values) per layer.

    On the exercise's view of a model (``model.pieces()``, what the checker hands a learner's step) it
    refuses: handing it in, or calling it from a step, is not writing the step."""
    if isinstance(model, StepModel):
        raise PiecesOnlyError("reference_decode_step(...) is the checker's own answer to this exercise; "
                              "write the step yourself from model.embed(tokens, past), each block's "
                              "norm_attention, attention.W_q, W_k, W_v and W_o, norm_mlp and mlp, then "
                              "model.unembed(x).")
    return decode(model, tokens, cache)


def _keep_keys_only(model, tokens, cache):
    logits, kept = decode(model, tokens, cache)
    if cache is not None:
        kept = [(keys, cache[layer][1]) for layer, (keys, _) in enumerate(kept)]
    return logits, kept


DECODING_BUGS = {
    "cache_not_appended": CACHED_VARIANTS["cache_not_appended"][0],
    "values_not_appended": _keep_keys_only,
    "is_causal_top_left": CACHED_VARIANTS["is_causal_top_left"][0],
    "positions_not_advanced": CACHED_VARIANTS["positions_not_advanced"][0],
}
"""Four of the checker's own hypotheses as steps (used by notebook 08 and the nbgrader test); the
zoo's readable members are in :data:`attnviz.zoo.DECODING_BUGS`."""


# ---- the probes -------------------------------------------------------------------------------


def _piece(name, tokens, start, expected, kind, cache_from="", **facts):
    n_new = tokens.shape[1]
    past = "no cache yet" if not cache_from else f"{start} positions cached"
    facts.update(cache_from=cache_from, positions=start + n_new, n_new=n_new, batch_one=tokens.shape[0] == 1)
    return Probe(name, {"tokens": tokens}, expected=expected, kind=kind,
                 shapes=f"tokens {shape_str(tokens.shape)}, {past}", facts=facts)


_SETUP: dict = {}


def _setup():
    """The model (seeded), its float64 copy for the reference, the probes with their expected logits,
    every layer's true keys and values, and the two hypothesis tables; built once per kernel."""
    with neutral(), torch.no_grad(), one_thread():
        if not _SETUP:
            dtype = torch.get_default_dtype()
            try:                                       # the same float32 model whatever the kernel set
                torch.set_default_dtype(torch.float32)
                with torch.random.fork_rng():
                    torch.manual_seed(7)
                    model = TinyGPT(**SIZES).eval()
                    # every LayerNorm its own scale and shift (a new model's are all 1 and 0, which
                    # would make norm_attention, norm_mlp and norm_final interchangeable)
                    norms = [model.norm_final]
                    norms += [n for block in model.blocks for n in (block.norm_attention, block.norm_mlp)]
                    with torch.no_grad():
                        for norm in norms:
                            norm.weight.uniform_(0.5, 1.5)
                            norm.bias.uniform_(-0.3, 0.3)
            finally:
                torch.set_default_dtype(dtype)
            exact = copy.deepcopy(model).double().pieces()
            g = torch.Generator().manual_seed(8)
            text = torch.randint(SIZES["vocab_size"], (2, 10), generator=g)
            other = (text[:, 4:5] + 1 + torch.randint(SIZES["vocab_size"] - 1, (2, 1), generator=g)) % 11
            short = torch.randint(SIZES["vocab_size"], (1, 7), generator=g)
            short_full = decode(exact, short, None)[0]
            # one more token after the chunk, drawn last so the draws above stay as they were
            text = torch.cat([text, torch.randint(SIZES["vocab_size"], (2, 1), generator=g)], dim=1)
            full, truth = decode(exact, text, None)
            branch = decode(exact, torch.cat([text[:, :4], other], dim=1), None)[0][:, 4:5]
            prefill = "the prefill, tokens 0..3"
            probes = [
                _piece(prefill, text[:, :4], 0, full[:, :4], "prefill"),
                _piece("token 4", text[:, 4:5], 4, full[:, 4:5], "cached", prefill),
                _piece("token 5", text[:, 5:6], 5, full[:, 5:6], "cached", "token 4"),
                _piece("token 6", text[:, 6:7], 6, full[:, 6:7], "cached", "token 5"),
                _piece("the chunk of tokens 7..9, 3 new queries against 10 keys", text[:, 7:10], 7,
                       full[:, 7:10], "cached", "token 6"),
                _piece("token 10 after the chunk", text[:, 10:11], 10, full[:, 10:11], "cached",
                       "the chunk of tokens 7..9, 3 new queries against 10 keys"),
                _piece("another token 4, from the prefill's cache", other, 4, branch, "branch", prefill),
                _piece("token 5 again, from token 4's cache after that", text[:, 5:6], 5, full[:, 5:6],
                       "branch", "token 4"),
                _piece("a prefill of 6 tokens, batch 1", short[:, :6], 0, short_full[:, :6], "prefill"),
                _piece("token 6 after it, batch 1", short[:, 6:], 6, short_full[:, 6:], "cached",
                       "a prefill of 6 tokens, batch 1"),
                Probe("the prefill again", {"tokens": text[:, :4]}, full[:, :4], kind="repeat",
                      same_as=prefill, facts={"cache_from": "", "n_new": 4, "positions": 4}),
            ]
            view = model.pieces()
            _SETUP.update(
                view=view, probes=probes, exact=exact,
                truth={"keys": [k for k, _ in truth], "values": [v for _, v in truth]},
                prefill=Hypotheses(PREFILL_VARIANTS, evaluate=lambda fn, p: _logits(fn, view, p)),
                cached=Hypotheses(CACHED_VARIANTS, evaluate=_sequence(view, probes)),
            )
    return _SETUP


def _logits(fn, view, probe):
    with torch.no_grad():
        return fn(view, probe.args["tokens"], None)[0]


def _sequence(view, probes):
    """A hypothesis's logits on every probe that follows a cache, run once per hypothesis."""
    runs: dict = {}
    chain = [p for p in probes if p.kind in ("prefill", "cached", "branch")]

    def evaluate(fn, probe):
        if id(fn) not in runs:
            caches, out = {}, {}
            for piece in chain:
                source = piece.facts["cache_from"]
                if source and source not in caches:
                    out[piece.name] = RAISED
                    continue
                try:
                    with torch.no_grad():
                        logits, caches[piece.name] = fn(view, piece.args["tokens"], caches.get(source))
                    out[piece.name] = logits
                except Exception:  # noqa: BLE001 - the hypothesis cannot run this piece
                    out[piece.name] = RAISED
            runs[id(fn)] = out
        return runs[id(fn)][probe.name]

    return evaluate


# ---- in the child: the learner's step, and what its cache holds --------------------------------


def _tensors(obj, path, found, depth=0):
    """Every tensor in the learner's cache (lists, tuples, dicts, objects; stacked tensors split)."""
    if len(found) >= 48 or depth > 5 or isinstance(obj, torch.nn.Module):
        return
    try:
        if isinstance(obj, torch.Tensor):
            if obj.dim() > 4 and obj.shape[0] <= 8:
                for i in range(obj.shape[0]):
                    _tensors(obj[i], f"{path}[{i}]", found, depth + 1)
            elif obj.is_floating_point():
                found.append((path, obj.detach()))
        elif isinstance(obj, (list, tuple)):
            for i, item in enumerate(list(obj)[:16]):
                _tensors(item, f"{path}[{i}]", found, depth + 1)
        elif isinstance(obj, dict):
            for key in list(obj)[:16]:
                _tensors(obj[key], f"{path}[{key!r}]", found, depth + 1)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            for name, value in list(vars(obj).items())[:16]:
                _tensors(value, f"{path}.{name}", found, depth + 1)
    except BaseException:  # noqa: BLE001 - a learner's object may refuse to be read
        return


def _layouts(t, batch, h, h_kv, d):
    """``(view, heads)``: ``t`` seen as (batch, h_kv, positions, d) in the layouts learners cache keys
    in, and how many heads ``t`` holds (h_kv, or h when expanded for the query heads)."""
    group = h // h_kv
    if t.dim() == 4 and t.shape[0] == batch and t.shape[-1] == d:
        for heads_first in (t, t.transpose(1, 2)):
            if heads_first.shape[1] == h_kv:
                yield heads_first, h_kv
            if heads_first.shape[1] == h:                       # expanded for the query heads
                yield heads_first[:, ::group], h
                yield heads_first[:, :h_kv], h
    if t.dim() == 3 and t.shape[0] == batch and t.shape[-1] == h_kv * d:
        yield t.reshape(batch, t.shape[1], h_kv, d).transpose(1, 2), h_kv
    if t.dim() == 3 and t.shape[0] == batch * h_kv and t.shape[-1] == d:
        yield t.reshape(batch, h_kv, t.shape[1], d), h_kv


def _identify(t, truth):
    """(kind, layer, start, length, heads) when ``t`` holds one layer's keys or values from position
    ``start`` on (its first position must match; the rest may be wrong), else None."""
    reference = truth["keys"][0]
    batch, h_kv, total, d = reference.shape
    for seen, heads in _layouts(t, batch, h_kv * SIZES["n_heads"] // SIZES["n_kv_heads"], h_kv, d):
        length = seen.shape[2]
        if not 0 < length <= total:
            continue
        first = seen[:, :, :1].to(torch.float64)
        rtol = max(1e-3, 2 * torch.finfo(t.dtype).eps)         # a float16 or bfloat16 cache: its rounding
        for kind in ("keys", "values"):
            for layer, ref in enumerate(truth[kind]):
                for start in range(total - length + 1):
                    if torch.allclose(first, ref[:, :, start:start + 1], atol=1e-4, rtol=rtol):
                        return kind, layer, start, length, heads
    return None


def _holds_their_numbers(found, truth) -> bool:
    """Whether some tensor of the cache holds the numbers of position 0's keys or values in some layer,
    in any layout: every one of them, within 1e-4 and the rounding of the tensor's own type (a float16
    or bfloat16 buffer too; a layout :func:`_layouts` does not know included)."""
    for kind in ("keys", "values"):
        for ref in truth[kind]:
            wanted = ref[0, :, 0].flatten()                              # (n_kv_heads * d_head,)
            for _, tensor in found:
                flat = tensor.detach().flatten().to(torch.float64)
                within = 1e-4 + torch.finfo(tensor.dtype).eps * wanted.abs()
                if flat.numel() and bool(((flat[:, None] - wanted[None]).abs().amin(0) < within).all()):
                    return True
    return False


def _summary(found, truth):
    """What the learner's cache holds: [{path, kind, layer, start, length, heads}] for every tensor
    ``found`` in it (:func:`_tensors`) that :func:`_identify` reads."""
    out = []
    for path, tensor in found:
        seen = _identify(tensor, truth)
        if seen:
            out.append(dict(zip(("kind", "layer", "start", "length", "heads"), seen, strict=True), path=path))
    return out


def _holds_no_floats(obj, depth=0):
    """Whether ``obj`` is plainly free of floating-point tensors: None, a number, a string, an integer
    tensor, or lists, tuples and dicts of those. Any other object counts as unknown (False)."""
    if depth > 5:
        return False
    if obj is None or isinstance(obj, (bool, int, str)):
        return True
    if isinstance(obj, torch.Tensor):
        return not (obj.is_floating_point() or obj.is_complex())
    if type(obj) in (list, tuple):
        return len(obj) <= 64 and all(_holds_no_floats(item, depth + 1) for item in obj)
    if type(obj) is dict:
        return len(obj) <= 64 and all(_holds_no_floats(item, depth + 1) for item in obj.values())
    return False


def _describe_value(value):
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {shape_str(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _snapshot(cache):
    found = []
    _tensors(cache, "cache", found)
    return [(path, tensor.clone()) for path, tensor in found]


def _changed_since(cache, snapshot):
    """Whether the tensors in ``cache`` differ from ``snapshot`` (taken when it was returned)."""
    now = _snapshot(cache)
    return len(now) != len(snapshot) or any(
        path != then_path or tensor.shape != then.shape or not torch.equal(tensor, then)
        for (path, tensor), (then_path, then) in zip(now, snapshot, strict=True))


def _steps(fn, setup):
    view, truth, state, snapshots = setup["view"], setup["truth"], {}, {}

    def piece(probe):
        def step():
            source = probe.facts["cache_from"]
            if source and source not in state:
                return {"skipped": True}
            tokens = probe.args["tokens"].clone()
            given_changed = _changed_since(state[source], snapshots[source]) if source in snapshots else None
            try:
                with torch.no_grad():
                    value = fn(view, tokens, state.get(source))
            except Exception as err:  # noqa: BLE001 - said with whether the cache it was given had changed
                return {"raised": error_info(err), "given_changed": given_changed}
            out = {"modified": [] if torch.equal(tokens, probe.args["tokens"]) else ["tokens"],
                   "given_changed": given_changed}
            if not (isinstance(value, (tuple, list)) and len(value) == 2):
                what = _describe_value(value)
                out["complaint"] = f"returned {what}; return (logits, cache), a tuple of two."
                return out
            state[probe.name] = value[1]
            snapshots[probe.name] = _snapshot(value[1])
            out["cache_floats"] = 0 if _holds_no_floats(value[1]) else None
            dtype = f" of {str(value[1].dtype)[6:]}" if isinstance(value[1], torch.Tensor) else ""
            out["cache_is"] = _describe_value(value[1]) + dtype
            out["value"] = to_plain(value[0])
            if probe.kind in ("prefill", "cached") and not probe.facts["batch_one"]:
                found = []
                _tensors(value[1], "cache", found)
                out["summary"] = _summary(found, truth)
                half = [(path, str(t.dtype)[6:]) for path, t in found
                        if t.dtype in (torch.float16, torch.bfloat16)]
                out["cache_half"] = half[0] if half else None
                # None: no floating-point tensor to read (that is _nothing_cached's case)
                out["cache_has_their_numbers"] = _holds_their_numbers(found, truth) if found else None
            return out

        return step

    return [piece(p) for p in setup["probes"]]


def _read(step, probe):
    if step.status == "error":
        return Answer(error=step.error)
    if step.status != "ok":
        return Answer(complaint=step.status)
    value = step.value
    if value.get("skipped"):
        message = f"not run: the step that should have made its cache ({probe.facts['cache_from']}) failed"
        return Answer(error={"type": "NotRun", "message": message, "where": None, "not_implemented": False,
                             "skipped": True})
    if value.get("raised"):
        return Answer(error=value["raised"], extra={"given_changed": value["given_changed"]})
    if value.get("complaint"):
        return Answer(complaint=value["complaint"])
    logits = rebuild(value["value"])
    tensor = logits if isinstance(logits, torch.Tensor) else None
    ans = Answer(output=tensor, modified=tuple(value["modified"]),
                 extra={"summary": value.get("summary"), "given_changed": value.get("given_changed"),
                        "cache_floats": value.get("cache_floats"), "cache_is": value.get("cache_is"),
                        "cache_has_their_numbers": value.get("cache_has_their_numbers"),
                        "cache_half": value.get("cache_half")})
    if not isinstance(logits, torch.Tensor):
        what = logits.what if isinstance(logits, Odd) else f"a {type(logits).__name__}"
        ans.complaint = (f"returned the logits as {what}, not a torch.Tensor: return (logits, cache) with "
                         f"logits of shape (batch, n_new, vocab_size).")
    return ans


# ---- the rules that differ --------------------------------------------------------------------


def _delegated(t):
    """The step asked the model (or generate, or cached_attention) to do the step."""
    for probe, ans in t.pairs():
        if ans.error is not None and ans.error["type"] == "PiecesOnlyError":
            return t.problem(
                "your step hands the work to the library instead of doing it.",
                [f"{probe.where}: {ans.error['message']}",
                 "The model it is given is model.pieces(): its layers and sizes, and no forward or "
                 "generate of its own."],
                fix="x = model.embed(tokens, past); per block: norm_attention, W_q/W_k/W_v, the keys "
                "and values joined to the cache's in a new cache (torch.cat: the one you are given is read "
                "again), attend with repeat_interleave and a bottom-right causal mask, W_o, norm_mlp and "
                "mlp; then return model.unembed(x) and the new cache",
            )
    return None


def _cached_stage(t):
    """Every prefill is right: decide on the cached steps."""
    return decide(Trial(replace(t.spec, hypotheses=_SETUP["cached"], rules=CACHED_RULES), t.probes,
                        t.answers, t.run, t.time_limit, t.notes, main_kind="cached"))


_CAT = "Sizes of tensors must match except in dimension"   # torch.cat, along an axis that should not grow
_CAT_SIZES = re.compile(r"Expected size (\d+) but got size (\d+)")
_CAT_DIM = re.compile(r"except in dimension (\d+)")


def _joined_query_heads(t, probe, ans, happened):
    """torch.cat met the cache's n_kv_heads heads (right) and a new piece of n_heads: the queries joined
    in place of the keys (round 26's learner), or this step's keys repeated before they were joined."""
    n_heads, n_kv = SIZES["n_heads"], SIZES["n_kv_heads"]
    return t.problem(
        f"{happened}: the cached keys or values have the model's {n_kv} key/value heads, and the new piece "
        f"joined to them has {n_heads}.",
        [t.describe(probe, ans), f"{n_heads} heads is the number of query heads: the queries joined in place "
         "of the keys (torch.cat([past_keys, query])), or this step's keys or values repeated for the query "
         f"heads before they were joined. The cache holds this step's keys and values as W_k and W_v make "
         f"them, {n_kv} heads; repeat_interleave them only to attend."],
        fix="key = torch.cat([past_keys, key], dim=-2)   # past_keys: this layer's cached keys "
            "(cache[layer]); key: this step's, from W_k, n_kv_heads heads; the same for the values; "
            "repeat_interleave only to attend",
    )


def _cat_axis(t):
    """torch.cat refused the cache and the new keys: along the wrong axis, or (sizes n_heads and
    n_kv_heads) a cache kept with its key/value heads repeated, meeting new ones that are not."""
    for probe, ans in t.main:
        if ans.error is not None and _CAT in ans.error["message"]:
            happened = f"your step raised {ans.error['type']} on {probe.name}"
            sizes = _CAT_SIZES.search(ans.error["message"])
            n_heads, n_kv = SIZES["n_heads"], SIZES["n_kv_heads"]
            if sizes and [int(s) for s in sizes.groups()] == [n_kv, n_heads]:    # the cache first, as joined
                return _joined_query_heads(t, probe, ans, happened)
            if sizes and [int(s) for s in sizes.groups()] == [n_heads, n_kv]:
                return t.bug("cache_holds_repeated_heads", happened, [
                    t.describe(probe, ans),
                    f"The two tensors joined have {sizes.group(1)} and {sizes.group(2)} heads: the model has "
                    f"{SIZES['n_heads']} query heads and {SIZES['n_kv_heads']} key/value heads, so one of "
                    f"them was repeated for the query heads before it was cached."])
            observed = [t.describe(probe, ans)]
            past, n_new = probe.facts["positions"] - probe.facts["n_new"], probe.facts["n_new"]
            joined = _CAT_DIM.search(ans.error["message"])
            if sizes and joined and [int(s) for s in sizes.groups()] == [past, n_new]:
                observed.append(f"torch.cat joined them along dimension {joined[1]}, and on another axis the "
                                f"cache holds {past} positions where this step has {n_new}: that axis holds "
                                "the positions, whatever the layout you keep them in; join along it.")
            return t.bug("cache_wrong_axis", happened, observed)
    return None


_BOTTOM_RIGHT = "mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)"
_ENTRIES = re.compile(r"^a (list|tuple) of (\d+)")


def _cache_grows(t):
    """A list cache that gains n_layers entries every step: the given cache copied (cache.copy()) and
    this step's layers appended after the old ones, so layer i keeps reading entry i, an old one."""
    counts = []
    for probe, ans in t.pairs():
        if probe.kind in ("prefill", "cached"):
            found = _ENTRIES.match((ans.extra or {}).get("cache_is") or "")
            counts.append((probe, int(found[2]) if found else None))
    layers = SIZES["n_layers"]
    if not counts or counts[0][1] != layers or not any((n or 0) > layers for _, n in counts[1:]):
        return None
    probe, n = next((p, n) for p, n in counts[1:] if (n or 0) > layers)
    stop, failed = t.first_wrong()
    return t.problem(
        f"{t.happened(stop, failed)}: the cache grows by {layers} entries a step, and layer i reads an old "
        "one.",
        [t.describe(stop, failed),
         f"After the prefill your cache holds {layers} entries, one per layer; after {probe.name} it holds "
         f"{n}: this step's layers went after the cached ones (a copy of the list, then append), so "
         f"cache[layer] on the next step is still an old entry."],
        fix="new_cache = []   # a new list every step, one (key, value) per layer; or new_cache = "
            "list(cache) and new_cache[layer] = (key, value)",
    )


def _mask_square(t):
    """A chunk after the prefill raised where its n_new queries' mask (n_new, n_new), a prefill's square
    triangle, met the n_all keys: with a cache the mask is (n_new, n_all). A single token's (1, 1) mask
    broadcasts, so only a chunk shows it."""
    for probe, ans in t.main:
        found = _SIZES_MEET.search((ans.error or {}).get("message", "")) if ans.error else None
        n_new, n_all = probe.facts["n_new"], probe.facts["positions"]
        met = {int(found[1]), int(found[2])} if found else set()
        if probe.facts["cache_from"] and n_new > 1 and met == {n_all, n_new}:
            said = (f"With a cache the new queries attend to every key so far: the mask is (n_new, n_all) = "
                    f"({n_new}, {n_all}), the cached columns all True and a triangle over the new ones. A "
                    "square (n_new, n_new) triangle is a prefill's; a single token's (1, 1) mask broadcasts, "
                    "so only a chunk shows it.")
            return t.problem(f"{t.spec.subject} raised {ans.error['type']} on {probe.name}: a mask over "
                             f"{n_new} keys met the {n_all} keys attended.", [t.describe(probe, ans), said],
                             fix=_BOTTOM_RIGHT + "   # n_all = past + n_new keys")
    return None


def _given_cache_is(t, probe) -> str:
    """What the cache ``probe`` was handed is ("a list of 2", ...), as the step that returned it saw it."""
    given = next((a for p, a in t.pairs() if p.name == probe.facts["cache_from"]), None)
    return ((given.extra or {}).get("cache_is") or "") if given else ""


def _cache_short(t):
    """A cached step raised IndexError reading the cache, whose prefill returned fewer entries than
    layers: one entry kept (new_cache = [(key, value)] inside the loop, reset every layer)."""
    probe, ans = t.first_wrong()
    if probe is None or ans.error is None or ans.error["type"] != "IndexError":
        return None
    if not probe.facts["cache_from"]:
        return None
    found = _ENTRIES.match(_given_cache_is(t, probe))
    layers = SIZES["n_layers"]
    if not found or int(found[2]) >= layers:
        return None
    return t.problem(
        f"{t.spec.subject} raised IndexError on {probe.name}: the cache it was given holds {found[2]} "
        f"{'entry' if found[2] == '1' else 'entries'} for {layers} layers.",
        [t.describe(probe, ans), f"After {probe.facts['cache_from']}, your step returned {found[0]}: one "
         "(key, value) per layer is needed, and cache[layer] runs past the end. A list made anew inside "
         "the loop over the blocks (new_cache = [(key, value)]) keeps the last layer only."],
        fix="new_cache = []   # once, before the loop over the blocks; inside it new_cache.append((key, "
            "value))",
    )


_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def _cache_kind_changed(t):
    """A cached step raised AttributeError reading, on the cache its previous call returned, an
    attribute that cache's kind lacks (cache.length on a list): it started one kind of cache and
    returned another."""
    probe, ans = t.first_wrong()
    if probe is None or ans.error is None or ans.error["type"] != "AttributeError":
        return None
    found = _NO_ATTRIBUTE.search(ans.error.get("message", ""))
    kind = _given_cache_is(t, probe)
    if not found or not kind.startswith(f"a {found[1]}"):
        return None
    return t.problem(
        f"{t.spec.subject} raised AttributeError on {probe.name}: it read .{found[2]} on the cache its "
        f"previous call returned, {kind}.",
        [t.describe(probe, ans), f"After {probe.facts['cache_from']}, your step returned {kind} as the "
         f"cache, and the next call read it as another kind of cache (one with .{found[2]}): the cache a "
         "step returns is the one the next call reads, so return the same kind you read."],
        fix="return logits, new_cache   # the cache you built and appended to (a gpt.KVCache stays one)",
    )


def _layer_state(summary, layer, positions):
    """('right' | 'prepended' | 'behind' | 'absent') for this layer's keys and values in a cache
    summary; 'prepended': as many positions as there should be, the first not position 0 (the new
    ones put in front)."""
    states = {}
    for kind in ("keys", "values"):
        entries = [e for e in summary if e["kind"] == kind and e["layer"] == layer]
        if not entries:
            states[kind] = "absent"
        elif any(e["start"] == 0 and e["length"] == positions for e in entries):
            states[kind] = "right"
        elif any(e["start"] > 0 and e["length"] == positions for e in entries):
            states[kind] = "prepended"
        else:
            states[kind] = "behind"
    return states


def _held(summary, kind, layer):
    spans = sorted((e["start"], e["start"] + e["length"] - 1) for e in summary
                   if e["kind"] == kind and e["layer"] == layer)
    return " and ".join(f"{a}..{b}" for a, b in spans)


def _windowed(t, probe, summary, layer):
    """The cache holds a layer's latest positions, more than this step added, and not the oldest: a
    sliding window, said in plain words (not "not appended": it was, then trimmed)."""
    window = [e for e in summary if e["kind"] == "keys" and e["layer"] == layer and e["start"] > 0
              and e["start"] + e["length"] == probe.facts["positions"]
              and e["length"] > probe.facts["n_new"]]     # more than this step's own: not only the newest
    if not window:
        return None
    stop, failed = t.first_wrong()
    return t.problem(
        f"{t.happened(stop, failed)}: the cache keeps the latest {window[0]['length']} positions only.",
        [t.describe(stop, failed),
         f"After {probe.name} the cache your step returned holds layer {layer}'s keys for positions "
         f"{_held(summary, 'keys', layer)} only: the oldest were dropped, a sliding window. This model "
         "attends to every earlier position (it was trained so, and its positions are absolute), so the "
         "window changes its logits as soon as it is full."],
        fix="new_cache.append((key, value))   # every position so far: no trimming to a window")


def _appended(t):
    """Read the caches the step returned, up to the first wrong piece: are keys AND values appended?"""
    stop, failed = t.first_wrong()
    for probe, ans in t.pairs():
        if probe.kind not in ("prefill", "cached") or probe.facts["batch_one"]:
            continue
        summary = (ans.extra or {}).get("summary")
        if summary:
            for layer in range(SIZES["n_layers"]):
                state = _layer_state(summary, layer, probe.facts["positions"])
                bug = {("right", "behind"): "values_not_appended", ("behind", "right"): "keys_not_appended",
                       ("behind", "behind"): "cache_not_appended"}.get((state["keys"], state["values"]))
                if "prepended" in state.values():
                    kind = "keys" if state["keys"] == "prepended" else "values"
                    first = probe.facts["positions"] - probe.facts["n_new"]
                    return t.bug("cache_prepended", t.happened(stop, failed), [
                        t.describe(stop, failed),
                        f"After {probe.name} the cache your step returned holds layer {layer}'s {kind} "
                        f"for all {probe.facts['positions']} positions, but the first of them is position "
                        f"{first}, the newest: the new ones went in front of the cached ones."])
                windowed = _windowed(t, probe, summary, layer) if bug else None
                if windowed:
                    return windowed
                if bug:
                    last = probe.facts["positions"] - 1
                    return t.bug(bug, t.happened(stop, failed), [
                        t.describe(stop, failed),
                        f"After {probe.name} the cache your step returned holds layer {layer}'s keys for "
                        f"positions {_held(summary, 'keys', layer)} and its values for positions "
                        f"{_held(summary, 'values', layer)}; both should cover 0..{last}."])
        if probe is stop:
            break
    return None


_BMM = re.compile(r"batch2 tensor to be: \[\d+, (\d+)\] but got: \[\d+, (\d+)\]")
_EINSUM = re.compile(r"has size (\d+) for operand 1 which does not broadcast with previously seen size (\d+)")
# F.scaled_dot_product_attention with a mask over the keys, and fewer values than keys
_EXPAND = re.compile(r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) at "
                     r"non-singleton dimension 3")


def _weights_meet_values(t):
    """weights @ values refused: the weights cover one number of keys, the values another (read from
    torch's message, whose two sizes must be exactly the positions the step should attend to and either
    its new positions or the cached ones): the keys or the values left out of the cache, or left out of
    what was attended."""
    probe, ans = t.first_wrong()
    if probe is None or ans.error is None:
        return None
    message = ans.error["message"]
    if error_kind(ans.error) != "matmul" and "einsum" not in message and not _EXPAND.search(message):
        return None
    found = _BMM.search(message)
    keys, values = (int(found[1]), int(found[2])) if found else (None, None)
    found = _EINSUM.search(message) or _EXPAND.search(message)
    if found:
        values, keys = int(found[1]), int(found[2])
    n_new, total = probe.facts["n_new"], probe.facts["positions"]
    past = total - n_new
    # the short side holds this step's new positions only (the cache never read), or the cached ones
    # only (this step's never appended before attending): exactly these two sizes, nothing else
    readings = {(total, n_new): ("values_not_appended", "new"),
                (n_new, total): ("keys_not_appended", "new"),
                (total, past): ("values_not_appended", "cached"),
                (past, total): ("keys_not_appended", "cached")}
    bug, short = readings.get((keys, values), (None, None))
    if not bug:
        return None
    kind = "values" if bug == "values_not_appended" else "keys"
    held = "is 1 value" if values == 1 else f"are {values} values"
    said = f"The weights cover {keys} key{'s' * (keys != 1)} but there {held}: the {kind} hold"
    if past == n_new:                           # both readings give these sizes: say only what they are
        said += f" {past} positions, not all {total}."
    elif short == "new":
        said += " only this step's new positions."
    else:
        said += (f" only the {past} cached positions, and this step's new {kind} were not appended before "
                 "attending.")
    return t.bug(bug, t.happened(probe, ans), [t.describe(probe, ans), said])


def _positions_elsewhere(t):
    """The first wrong step after the prefill equals the right step with its new tokens embedded from
    another position: the positions do not continue after the cache, whatever the learner counted."""
    probe, ans = t.first_wrong()
    if probe is None or not isinstance(ans.output, torch.Tensor) or ans.output.shape != probe.expected.shape:
        return None
    if probe.facts["batch_one"]:            # the true keys and values are the batch of 2's
        return None
    exact, truth = _SETUP["exact"], _SETUP["truth"]
    n_new, past = probe.facts["n_new"], probe.facts["positions"] - probe.facts["n_new"]
    given = [(k[:, :, :past], v[:, :, :past]) for k, v in zip(truth["keys"], truth["values"], strict=True)]
    got = ans.output.to(torch.float64)
    with torch.no_grad():
        for start in range(SIZES["max_len"] - n_new + 1):
            if start != past and torch.allclose(got, decode(exact, probe.args["tokens"], given, at=start)[0],
                                                atol=1e-4, rtol=1e-3):
                return t.bug("positions_not_advanced", t.happened(probe, ans), [
                    t.describe(probe, ans),
                    f"Its logits are those of the right step with the new tokens at positions {start}.."
                    f"{start + n_new - 1}; after {past} cached positions they stand at {past}.."
                    f"{past + n_new - 1}."])
    return None


def _last_only(t):
    """A prefill's logits that equal its last position's: (batch, 1, vocab) from logits[:, -1:], or
    (batch, vocab) from logits[:, -1], the row generation reads, its positions axis gone."""
    for probe, ans in t.main:
        out, expected = ans.output, probe.expected
        if not isinstance(out, torch.Tensor) or expected.shape[1] < 2:
            continue
        for last, how in ((expected[:, -1:], ""), (expected[:, -1], " (logits[:, -1]: no positions axis)")):
            if out.shape == last.shape and torch.allclose(out.to(torch.float64), last, atol=1e-4, rtol=1e-3):
                return t.bug("last_position_only", t.happened(probe, ans), [
                    f"On {probe.name}, your step returned logits of shape {shape_str(out.shape)}: the "
                    f"right logits of the last position only{how}, where each of the {expected.shape[1]} "
                    f"new positions needs its row, {shape_str(expected.shape)}."])
    return None


_OUT_OF_RANGE = re.compile(r"index (\d+) is out of bounds for dimension \d+ with size (\d+)")


def _kv_head_index(t):
    """Every prefill raised IndexError for a key/value head past the last: the query heads' index into
    the shared key/value heads used n_kv_heads where the group size belongs."""
    wrong = [(p, a) for p, a in t.main if not t.right(p, a)]
    found = [_OUT_OF_RANGE.search(a.error["message"]) if a.error and a.error["type"] == "IndexError" else None
             for _, a in wrong]
    n_kv, n_heads = SIZES["n_kv_heads"], SIZES["n_heads"]
    if not wrong or not all(f and int(f[2]) == n_kv and n_kv <= int(f[1]) < n_heads for f in found):
        return None
    probe, ans = wrong[0]
    group = n_heads // n_kv
    return t.bug("kv_head_index_wrong", t.happened(probe, ans), [
        t.describe(probe, ans),
        f"The model has {n_heads} query heads sharing {n_kv} key/value heads, a group of {group}: query "
        f"head h reads key/value head h // {group}, so the index runs 0..{n_kv - 1}; yours reached "
        f"{found[0][1]}."])


_SIZES_MEET = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
                         r"(?: at non-singleton dimension (\d+))?")


def _sizes_met(t):
    """A prefill raised where two sizes met that belong to different axes: the new positions against the
    batch (n_new read from tokens.shape[0]), or the query heads against the key/value heads (the shared
    key/value heads never repeated). Said in plain words, with the fix."""
    n_heads, n_kv = SIZES["n_heads"], SIZES["n_kv_heads"]
    for probe, ans in t.main:
        found = _SIZES_MEET.search((ans.error or {}).get("message", "")) if ans.error else None
        if not found:
            continue
        met = {int(found[1]), int(found[2])}
        batch, n_new = probe.args["tokens"].shape
        if batch != n_new and met == {batch, n_new}:
            return t.problem(
                f"{t.spec.subject} raised {ans.error['type']} on {probe.name}: {n_new}, the number of new "
                f"positions, met {batch}, the batch size.",
                [t.describe(probe, ans), f"tokens is (batch, n_new) = ({batch}, {n_new}): a size read from "
                 "dimension 0 where dimension 1 belongs (or the other way round), often when building the "
                 "causal mask. With a batch of one such a step may run, and be wrong."],
                fix="batch, n_new = tokens.shape   # n_new = tokens.shape[1]; tokens.shape[0] is the batch",
            )
        if met == {n_heads, n_heads * (n_heads // n_kv)}:
            group = n_heads // n_kv
            return t.bug("cache_holds_repeated_heads", f"{t.spec.subject} raised {ans.error['type']} on "
                         f"{probe.name}", [
                             t.describe(probe, ans),
                             f"{n_heads} query heads met {n_heads * group} key/value heads: the model's "
                             f"{n_kv} key/value heads were repeated twice ({group} times each time): once "
                             f"before they were cached and again to attend, or by two lines that repeat "
                             f"them."])
        other = (met - {n_heads}).pop() if n_heads in met and len(met) == 2 else None
        group = n_heads // n_kv
        if other is not None and other != n_kv and other % n_kv == 0 and found[3] == "1":    # the heads' axis
            times = other // n_kv
            how = ("0 times: model.n_kv_heads // model.n_heads is 0, the division the wrong way round" if not
                   times else f"{times} times each, where each must serve {group} query heads")
            return t.problem(
                f"{t.spec.subject} raised {ans.error['type']} on {probe.name}: {n_heads} query heads met "
                f"{other} key/value heads.",
                [t.describe(probe, ans), f"The model's {n_kv} key/value heads were repeated {how}: the group "
                 f"is model.n_heads // model.n_kv_heads = {n_heads} // {n_kv} = {group} (not "
                 "model.n_kv_heads, nor model.n_heads)."],
                fix=f"group = model.n_heads // model.n_kv_heads   # {group} query heads per key/value head; "
                    "then key.repeat_interleave(group, dim=1), and the same for value",
            )
        if met == {n_heads, n_kv}:
            return t.problem(
                f"{t.spec.subject} raised {ans.error['type']} on {probe.name}: {n_heads} query heads met "
                f"{n_kv} key/value heads.",
                [t.describe(probe, ans), f"This model shares each key/value head among {n_heads // n_kv} "
                 "query heads (grouped-query attention): repeat them before the scores, head i reading "
                 f"key/value head i // {n_heads // n_kv}."],
                fix="group = model.n_heads // model.n_kv_heads; k, v = k.repeat_interleave(group, dim=1), "
                    f"v.repeat_interleave(group, dim=1)   # group is {n_heads // n_kv} here; after caching, "
                    "just before attending (or F.scaled_dot_product_attention(..., enable_gqa=True))",
            )
    return None


# the first call's cache, None, read as a cache: cache.copy(), cache.length, cache[0][0], len(cache)
_NONE_READ = re.compile(r"'NoneType' object (has no attribute|is not subscriptable|is not iterable)|"
                        r"object of type 'NoneType' has no len")


def _cache_none_read(t):
    """A prefill raised where None was read as a cache (an attribute, an index, its length): on the first
    call the cache is None. The verdict says what happened, as :func:`._rules.raised` does, and that."""
    errors = [(p, a) for p, a in t.main if a.error is not None]
    if not errors or not _NONE_READ.search(errors[0][1].error.get("message", "")):
        return None
    verdict = raised(t)
    verdict.observed.insert(2, "On the prefill cache is None (nothing is cached yet): if that is the None "
                               "your step read, start a new cache then (gpt.KVCache(), or an empty list), "
                               "and copy the one you are given on every later call.")
    verdict.fix = ("cache = gpt.KVCache() if cache is None else cache.copy()   # first in the step: a cache "
                   "of your own, the given one left as it was; with a list of (keys, values): past = 0 if "
                   "cache is None else cache[0][0].shape[-2]")
    return verdict


_VIEW = re.compile(r"shape '\[(\d+), (\d+), (\d+), (-?\d+)\]' is invalid for input of size (\d+)")


def _kv_split_as_queries(t):
    """A prefill raised where the keys or values, n_kv_heads * d_head features wide, were split into
    n_heads heads: the query line copied for W_k and W_v. Said in plain words, with the fix."""
    n_heads, n_kv = SIZES["n_heads"], SIZES["n_kv_heads"]
    d_head = SIZES["d_model"] // n_heads
    for probe, ans in t.main:
        found = _VIEW.search((ans.error or {}).get("message", "")) if ans.error else None
        batch, n_new = probe.args["tokens"].shape
        if found and int(found[3]) == n_heads and int(found[5]) == batch * n_new * n_kv * d_head:
            return t.problem(
                f"{t.spec.subject} raised {ans.error['type']} on {probe.name}: the keys or the values were "
                f"split into {n_heads} heads.",
                [t.describe(probe, ans),
                 f"This model's W_k and W_v make {n_kv} key/value heads of {d_head} features "
                 f"({n_kv * d_head} per position), fewer than W_q's {n_heads} query heads (grouped-query "
                 "attention): split them into model.n_kv_heads heads, cache those, and repeat them for the "
                 "query heads only to attend."],
                fix="key, value = split_heads(attention.W_k(normed), model.n_kv_heads), "
                    "split_heads(attention.W_v(normed), model.n_kv_heads)   # the queries into "
                    "model.n_heads; cache these, and where you attend repeat them for the query heads: "
                    ".repeat_interleave(model.n_heads // model.n_kv_heads, dim=1)",
            )
    return None


def _branch(t):
    """Every cached step right, but a cache used a second time (from the prefill's cache another token
    4; then token 5 again from token 4's cache, which the steps since may have overwritten) is not."""
    for probe, ans in t.pairs("branch"):
        if not t.right(probe, ans):
            source = probe.facts["cache_from"]
            got = f"raised {ans.error['type']}" if ans.error is not None else "got the wrong logits"
            changed = ans.extra.get("given_changed") if isinstance(ans.extra, dict) else None
            if changed is False:
                return t.bug("state_outside_cache", "your step gave the right logits generating straight on, "
                             "but not when a cache is used twice", [
                                 t.describe(probe, ans),
                                 f"Called again with the cache that {source} returned, which no call had "
                                 f"changed, your step {got}: it read something kept outside that cache."])
            if changed is None:                 # not known whether that cache changed: neither bug is named
                return None
            return t.bug("cache_modified_in_place", "your step gave the right logits generating straight on, "
                         "but not when a cache is used twice", [
                             t.describe(probe, ans),
                             f"Called again with the cache that {source} returned, your step {got}: a later "
                             "call changed that cache, or memory it shares, in place."])
    return None


def _repeated_heads(t):
    """Every piece right, but the cache keeps the key/value heads repeated for the query heads."""
    for probe, ans in t.pairs():
        for entry in (ans.extra or {}).get("summary") or ():
            if entry.get("heads") == SIZES["n_heads"]:
                group = SIZES["n_heads"] // SIZES["n_kv_heads"]
                happened = (f"every piece's logits are right, but the cache holds {SIZES['n_heads']} "
                            f"key/value heads where the model has {SIZES['n_kv_heads']}")
                return t.bug("cache_holds_repeated_heads", happened, [
                    f"After {probe.name}, the cache your step returned holds layer {entry['layer']}'s "
                    f"{entry['kind']} ({entry['path']}) with {SIZES['n_heads']} heads, each key/value head "
                    f"repeated for its {group} query heads: {group} times the memory the cache needs."])
    return None


def _nothing_cached(t):
    """Every piece right, but every cache the step returned is plainly free of floating-point tensors
    (:func:`_holds_no_floats`): it keeps the tokens (or nothing) and runs the whole text through the
    model on every call."""
    extras = [(p, a.extra or {}) for p, a in t.pairs() if p.kind in ("prefill", "cached")]
    if not extras or any(extra.get("cache_floats") != 0 for _, extra in extras):
        return None
    probe, extra = extras[0]
    return t.problem(
        "every piece's logits are right, but the cache your step returns holds no keys or values.",
        [f"After {probe.name}, your step returned as its cache {extra['cache_is']}: no floating-point "
         "tensor, so no layer's keys and values. Each call then runs the whole text through the model "
         "again: right, but no faster than having no cache, which is what a KV cache is there to avoid."],
        fix="new_cache.append((key, value))   # each layer's keys and values, (batch, n_kv_heads, positions, "
            "d_head); only the new tokens go through the blocks",
    )


def _keys_values_not_cached(t):
    """Every piece right, the cache holds floating-point tensors, but none of them is any layer's keys
    or values (read as :func:`_summary` reads them): it keeps something else, say each block's input,
    and every call projects the whole text's keys and values again."""
    read = [(p, a.extra or {}) for p, a in t.pairs()
            if p.kind in ("prefill", "cached") and not p.facts["batch_one"]]
    # said only where the summary read no keys or values, and no tensor holds their numbers in another
    # layout (or in a buffer longer than the text)
    if not read or any(extra.get("summary") or extra.get("cache_has_their_numbers") is not False
                       for _, extra in read):
        return None
    probe, extra = read[0]
    return t.problem(
        "every piece's logits are right, but no tensor in your cache holds a layer's keys or values.",
        [f"After {probe.name}, your step returned as its cache {extra['cache_is']}. None of its tensors "
         "matches the keys or the values of any layer, in any layout: it keeps something else (each "
         "block's input, say), so every call projects the keys and values of the whole text again with "
         "W_k and W_v. The logits are right, but the projections a KV cache is there to save are done "
         "again at every step."],
        fix="new_cache.append((key, value))   # each layer's keys and values after W_k and W_v, "
            "(batch, n_kv_heads, positions, d_head)",
    )


def _cached_hypothesis(t):
    """The cached hypotheses (:func:`._rules.hypothesis`), with what a mask that hides a new query from
    itself does after a cache (the catalog's words are a prompt's: there its first query has no key)."""
    verdict = hypothesis(t)
    if verdict is not None and verdict.bug == "causal_excludes_self":
        verdict.observed.insert(1, "Your prefill is right; after it each new query sees the cached positions "
                                   "(and the new ones before it) but not its own key: the mask's diagonal is "
                                   "one too low, tril(past - 1) where tril(past) belongs.")
    return verdict


_KINDS = ("keys", "values")


def _prefill_paths(t):
    """``{(layer, kind): path}``: where the step's first prefill put each layer's keys (kind 0) and
    values (kind 1), every prefill position of them, in the cache it returned; None unless all are."""
    probe, ans = t.one("prefill")
    summary = (ans.extra or {}).get("summary") if ans is not None else None
    paths = {}
    for entry in summary or ():
        if entry["start"] == 0 and entry["length"] == probe.facts["positions"]:
            paths.setdefault((entry["layer"], _KINDS.index(entry["kind"])), entry["path"])
    return paths if len(paths) == 2 * SIZES["n_layers"] else None


def _reads_giving(pairs, positions):
    """Every way of reading the prefill's cache other than the right one, for each layer its cached keys
    and values from any layer's keys or values, that gives the step's logits on all ``pairs`` (the
    steps that read the prefill's cache): ``[((keys entry, values entry) per layer), ...]``."""
    truth, exact, layers = _SETUP["truth"], _SETUP["exact"], range(SIZES["n_layers"])
    cache = [(truth["keys"][layer][:, :, :positions], truth["values"][layer][:, :, :positions])
             for layer in layers]
    entries = [(layer, kind) for layer in layers for kind in (0, 1)]
    right = tuple(((layer, 0), (layer, 1)) for layer in layers)
    found = []
    with neutral(), torch.no_grad(), one_thread():
        for reads in itertools.product(itertools.product(entries, entries), repeat=len(layers)):
            if reads != right and all(
                    agrees(ans.output, decode(exact, probe.args["tokens"], cache, layer_read=reads)[0],
                           torch.ones(probe.expected.shape[:-1], dtype=torch.bool))
                    for probe, ans in pairs):
                found.append(reads)
    return found


def _layer_path(first, second):
    """Layer ``layer``'s path, from where layers 0 and 1 keep theirs: ("cache[0][1]", "cache[1][1]") ->
    "cache[layer][1]", ("cache[1]", "cache[3]") -> "cache[2 * layer + 1]"; None unless the two differ
    in one number, the second larger."""
    a, b = re.findall(r"\d+|\D+", first), re.findall(r"\d+|\D+", second)
    if len(a) != len(b):
        return None
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if len(differ) != 1 or not (a[differ[0]] + b[differ[0]]).isdigit():
        return None
    base, step = int(a[differ[0]]), int(b[differ[0]]) - int(a[differ[0]])
    if step <= 0:
        return None
    term = "layer" if step == 1 else f"{step} * layer"
    a[differ[0]] = term if base == 0 else f"{term} + {base}"
    return "".join(a)


def _reading(pairs) -> str:
    *before, last = [probe.name for probe, _ in pairs]
    if not before:
        return f"On {last}, which reads your prefill's cache,"
    return f"On the {len(pairs)} steps that read your prefill's cache ({', '.join(before)} and {last}),"


def _read_at_wrong_index(t):
    """The prefill right and its cache holding every layer's keys and values, the steps that read it
    wrong: one wrong way of reading its entries gives their logits (a cache indexed in the wrong order,
    a flat list read at cache[i] and cache[i + 1])."""
    prefill, _ = t.one("prefill")
    paths = _prefill_paths(t)
    if prefill is None or paths is None:
        return None
    pairs = [(p, a) for p, a in t.pairs() if p.facts.get("cache_from") == prefill.name
             and isinstance(a.output, torch.Tensor) and a.output.shape == p.expected.shape]
    if not pairs or all(t.right(p, a) for p, a in pairs):
        return None
    found = _reads_giving(pairs, prefill.facts["positions"])
    if len(found) != 1:
        return None
    [reads] = found
    misread = [f"layer {layer} reads its cached {_KINDS[kind]} from layer {entry[0]}'s {_KINDS[entry[1]]} "
               f"({paths[entry]})" for layer, both in enumerate(reads) for kind, entry in enumerate(both)
               if entry != (layer, kind)]
    kept = ", ".join(f"layer {layer}'s keys and values at {paths[(layer, 0)]} and {paths[(layer, 1)]}"
                     for layer in range(SIZES["n_layers"]))
    probe, ans = t.first_wrong()
    keys, values = (_layer_path(paths[(0, kind)], paths[(1, kind)]) for kind in (0, 1))
    fix = (f"past_keys, past_values = {keys}, {values}   # where your prefill put this layer's keys and "
           "values" if keys and values and (keys, values) != ("cache[layer][0]", "cache[layer][1]") else None)
    return t.bug(
        "cache_read_at_wrong_index", t.happened(probe, ans),
        [t.describe(probe, ans),
         f"{_reading(pairs)} your logits are those of a step in which {'; '.join(misread)}; every other "
         "read is right, and no other way of reading that cache gives them.",
         f"Your prefill's cache keeps {kept}: each layer reads its own entries there."],
        fix=fix,
    )


# A step kept in float32 meets the float64 recomputation to about 2e-7; a softmax, scores or cache
# rounded to float16 on the way stays inside the tolerance (1e-4) on this small model, at about 1e-4.
_FLOAT32_GAP = 1e-5


def _precision_note(t):
    """A pass whose logits are farther from the recomputation than a float32 step's are, said so."""
    gaps = [max_gap(ans.output, probe.expected, torch.ones(probe.expected.shape[:-1], dtype=torch.bool))
            for probe, ans in t.pairs() if isinstance(ans.output, torch.Tensor) and probe.expected is not None
            and ans.output.shape == probe.expected.shape]
    gap = max((g for g in gaps if g == g), default=0.0)
    if gap <= _FLOAT32_GAP:
        return []
    half = next((found for _, ans in t.pairs() if (found := (ans.extra or {}).get("cache_half"))), None)
    where = (f"your cache keeps {half[1]} tensors ({half[0]} among them), so every key and value read back "
             "from it is rounded"
             if half else "somewhere a tensor is rounded to a smaller type (a softmax, the scores or the "
             "cache in float16 or bfloat16?)")
    return [f"Your logits are within the check's tolerance, but they differ from the recomputation by up to "
            f"{gap:.1e}, where a step kept in float32 throughout differs by about 2e-7: {where}. On "
            "a trained model, whose attention is sharper, that rounding moves the logits more."]


def _passed(t):
    return _verdict.passed(NAME, "every piece's logits equal a full recomputation.", [_PASSED],
                           t.notes + _precision_note(t))


def _prefill_hypothesis(t):
    """The prefill hypotheses (:func:`._rules.hypothesis`), with one pair told apart: attention that adds
    nothing in any layer is a buffer's slots read before they were written (counter advanced before
    write), or, when the returned cache does hold each prefill's keys from position 0, key/value heads
    repeated 0 times (model.n_kv_heads // model.n_heads, the wrong way round: torch's fused attention
    returns zeros for 0 heads, without an error)."""
    verdict = hypothesis(t)
    if verdict is None or verdict.bug != "counter_advanced_before_write":
        return verdict
    read = [(probe, (ans.extra or {}).get("summary")) for probe, ans in t.main]
    kept = [any(seen["kind"] == "keys" and seen["start"] == 0 and seen["length"] == probe.facts["positions"]
                for seen in summary) for probe, summary in read if summary is not None]   # batch 2's read
    if not kept or not all(kept):
        return verdict
    probe, ans = t.first_wrong()
    group = SIZES["n_heads"] // SIZES["n_kv_heads"]
    return t.problem(
        f"{t.happened(probe, ans)}: attention added nothing in any layer.",
        [t.describe(probe, ans),
         "Your cache holds each prefill's keys, as it should, yet every block's attention added nothing (W_o "
         "of zeros): no key/value head was attended. A group of 0, model.n_kv_heads // model.n_heads (the "
         "division the wrong way round), repeats the key/value heads 0 times, and "
         "F.scaled_dot_product_attention returns zeros for that without an error."],
        fix=f"group = model.n_heads // model.n_kv_heads   # {group} query heads per key/value head",
    )


CACHED_RULES = (
    Rule("cache_wrong_axis", "wrong", _cat_axis),
    Rule("cache_grows", "wrong", _cache_grows),
    Rule("appended", "wrong", _appended),
    Rule("weights_meet_values", "wrong", _weights_meet_values),
    Rule("hypothesis", "wrong", _cached_hypothesis),
    Rule("positions_elsewhere", "wrong", _positions_elsewhere),
    Rule("mask_square", "wrong", _mask_square),
    Rule("cache_short", "wrong", _cache_short),
    Rule("cache_kind_changed", "wrong", _cache_kind_changed),
    Rule("raised", "wrong", raised),
    Rule("read_at_wrong_index", "wrong", _read_at_wrong_index),
    Rule("no_known_bug", "wrong", no_known_bug),
    Rule("cache_modified_in_place", "right", _branch),
    Rule("cache_holds_repeated_heads", "right", _repeated_heads),
    Rule("nothing_cached", "right", _nothing_cached),
    Rule("keys_values_not_cached", "right", _keys_values_not_cached),
    Rule("passed", "right", _passed),
)
"""The second stage's rules (main probes: the cached steps)."""

SPEC = Spec(
    NAME,
    subject="your step",
    output_dims=("vocabulary (last dimension)", "new positions n_new", "batch"),
    fix=_FIX,
    complaint_fix="return logits, new_cache   # logits (batch, n_new, vocab_size)",
    words={"output": "logits", "inputs:prefill": "prefills", "inputs:cached": "steps after the prefill",
           "gap": "the logits differ from a full recomputation by up to",
           "nan": "the logits hold NaN or inf.",
           "batch_one": "Only the batch of 2 goes wrong: take batch from tokens.shape[0], never 1.",
           "fix_names": DECODING_FIX_NAMES},
    rules=rules(
        replace={"passed": Rule("cached_steps", "right", _cached_stage),
                 "hypothesis": Rule("hypothesis", "wrong", _prefill_hypothesis)},
        before={"setup_failed": [Rule("delegated", "always", _delegated)],
                "contiguous_error": [Rule("last_position_only", "wrong", _last_only)],
                "raised": [Rule("kv_head_index", "wrong", _kv_head_index),
                           Rule("sizes_met", "wrong", _sizes_met),
                           Rule("kv_split_as_queries", "wrong", _kv_split_as_queries),
                           Rule("cache_none_read", "wrong", _cache_none_read)]},
        drop=("setup_failed", "large_scores_nan", "dead_rows_nan", "gradients", "other_dtypes",
              "large_scores_wrong", "matmul_everywhere"),
    ),
)
"""The first stage (main probes: the prefills): the shared rules, and the cached steps in place of
the pass."""


def _models_read(fn):
    """The global names ``fn``'s code reads (nested functions included) that hold a tiny GPT; only for
    a plain function (no attribute of an object the learner wrote is read in the kernel, as in
    :mod:`._stale`: its ``__getattr__`` could hang it)."""
    return [name for name, value in globals_read(fn).items() if isinstance(value, (TinyGPT, StepModel))]


def _with_shared_default(fn, result):
    """A failed step with a list or dict as a default argument (``new_cache=[]``): Python makes that
    object once, when ``def`` runs, and every call that leaves it out gets the same one, so what one
    call appends the next finds. Said first, since every later step goes wrong from it (a bug named from
    the symptom, a cat that refuses say, would send the learner elsewhere)."""
    shared = [] if result.passed else shared_defaults(fn)
    if not shared:
        return _with_shared_class_default(fn, result)
    name, default = shared[0]
    return _verdict.problem(NAME, f"your step's default argument {name}={default!r} is one "
                            f"{type(default).__name__} shared by every call.", [
        f"Python makes a default argument's {type(default).__name__} once, when def runs: every call that "
        f"leaves {name} out gets that same object, so what one call puts in it the next call finds there "
        "(a cache that keeps the entries of every earlier call, and changes under a caller who holds it).",
        *result.observed],
        fix=f"{name} = {'[]' if isinstance(default, list) else type(default).__name__ + '()'}   # inside the "
            "step: a new one on every call (or a default of None)")


def _with_shared_class_default(fn, result):
    """A failed step that makes objects of a class of the learner's whose ``__init__`` has a list, dict or
    set as a default (``def __init__(self, strata=[])``): every object made without it shares that one,
    so a new cache starts with every earlier one's entries and calls that should agree do not. Said
    first (a verdict named from the symptom, dropout say, would send the learner elsewhere), when
    ``__init__`` keeps the default itself (``self.strata = strata``); the Fix is that line, keeping a copy."""
    cls, shared = (None, []) if result.passed else shared_defaults_in_classes(fn)
    if not shared:
        return result
    (name, default), kind, owner = shared[0], type(shared[0][1]).__name__, cls.__name__
    keeps = [line for line in _lines_of(vars(cls)["__init__"]) if re.fullmatch(rf"[\w.]+ = {name}", line)]
    if len(keeps) != 1:
        return result
    fix = (f"{keeps[0][:-len(name)]}{kind}({name})   # in place of your line in {owner}.__init__: a new "
           f"{kind} for each {owner}(); the default {default!r} is one {kind}, made once")
    return _verdict.problem(NAME, f"your class {owner}'s default argument {name}={default!r} is one {kind} "
                            f"shared by every {owner}() made without it.", [
        f"Python makes a default argument's {kind} once, when def runs: every {owner}() that leaves {name} "
        f"out gets that same {kind}, so a cache your step makes starts with what every earlier one put in "
        "it, and two calls that should agree do not.", *result.observed], fix=fix)


def _with_state_on_itself(fn, result):
    """A failed step that keeps something on its own function object between calls (``decode_step.maski[
    novi] = gpt.decoding_mask(novi, vsogo)``, read back as ``dozvil = decode_step.maski[novi]``): what one
    call made, for its sizes, a later call with other sizes reads. Said first when no known bug was named
    (a known bug is fixed first); the Fix is the line that reads it back, making the value anew (when the
    code shows both lines)."""
    sizes = "raised RuntimeError" in result.headline or "returned the wrong logits" in result.headline
    if result.passed or result.bug is not None or not sizes or type(fn) is not types.FunctionType:
        return result
    try:
        tree = syntax_tree(source_of(fn))
    except (OSError, TypeError, SyntaxError):
        return result
    own = fn.__name__
    stored, read = {}, []
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Subscript) and _on_itself(target.value, own):
            stored[ast.unparse(target)] = ast.unparse(node.value)          # decode_step.maski[novi] = ...
        elif target is not None and isinstance(node.value, ast.Subscript) and \
                _on_itself(node.value.value, own):
            read.append((ast.unparse(target), ast.unparse(node.value)))    # dozvil = decode_step.maski[novi]
    if not stored:
        return result
    kept = next(iter(stored))
    made = [f"{name} = {stored[value]}" for name, value in read if value in stored]
    result.observed.insert(0, f"Your step keeps {kept.split('[')[0]} on the function itself, between calls: "
                              f"what one call made there for that call's sizes ({kept} = {stored[kept]}), "
                              "later calls read back, whatever their sizes. Make it anew on every call.")
    if len(made) == 1:
        result.fix = f"{made[0]}   # in place of your line: made on every call, for this call's sizes"
    return result


def _on_itself(node, own: str) -> bool:
    """Whether ``node`` is an attribute of the function named ``own`` (``decode_step.maski``)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == own


def _lines_of(function) -> list:
    """The stripped lines of ``function``'s text, or none when it has no text to read."""
    try:
        return [line.strip() for line in source_of(function).splitlines()]
    except (OSError, TypeError):
        return []


def _with_models_read(fn, result):
    """A failed verdict says first when the step read a model of the notebook (a global, say ``m``:
    a line copied from a cell that used one) instead of the one it is given."""
    names = [] if result.passed else _models_read(fn)
    if names:
        value, code = fn.__globals__[names[0]], fn.__code__
        given = code.co_varnames[0] if code.co_argcount else "model"     # the step's name for its model
        result.observed.insert(0, (
            f"Your step reads {names[0]}, the notebook's model (vocabulary {value.vocab_size}, "
            f"{value.n_heads} query heads), not the model it is given, its first argument {given} "
            f"(vocabulary {SIZES['vocab_size']}, {SIZES['n_heads']} query heads sharing "
            f"{SIZES['n_kv_heads']} key/value heads): inside the step, use {given} everywhere."))
        if result.status == "problem":
            result.fix = (f"{given}.n_heads, {given}.blocks, ...   # the step's own argument, never the "
                          f"notebook's {names[0]}")
            # the cause, first: "matches no known bug" sent a teacher's student to look for one
            result.headline = (f"your step reads {names[0]}, the notebook's model, where it should use "
                               f"{given}, the model it is given.")
    # a known bug named from a raise may be the notebook's tensors' doing (replay 23's 08Z4 cached the
    # notebook's key and value, 4 heads where its own had 6, and was told the cache's axis was wrong)
    raised = result.status == "bug" and " raised " in result.headline
    read = values_read(fn) if result.status == "problem" or raised else {}
    if read:                        # cell 011's group, keys, values, ... left under the step's own names
        result.observed.insert(0, (
            f"Your step reads the notebook's {', '.join(read.values())}, left by an earlier cell, not only "
            "what it is given: inside the step, compute every size and tensor from model, tokens and cache."))
        if not names:
            result.fix = (f"compute {', '.join(read)} inside the step, from model, tokens and cache"
                          + (" (group = model.n_heads // model.n_kv_heads)" if "group" in read else "")
                          + ", or use the name the step itself defines")
        if raised and not names:
            happened = result.headline.split(". It looks like the known bug")[0]
            result.headline = (f"{happened}, and it reads the notebook's {', '.join(read)}: that first (a "
                               "tensor left by an earlier cell has the notebook's sizes, not the model's).")
            result.bug, result.status, result.what, result.shows = None, "problem", "", ""
    return result


def _passes_is_causal(fn) -> bool:
    """Whether the step's code passes the keyword is_causal (to F.scaled_dot_product_attention): read
    from its code objects' keyword-name tuples, nothing called."""
    return type(fn) is types.FunctionType and any(
        type(const) is tuple and "is_causal" in const
        for code in code_objects(fn.__code__) for const in code.co_consts)


def _causal_mask_words(fn, result):
    """A step told its new queries' mask is top-left or missing gets the fix in the form its code needs
    (a teacher's rehearsal of lesson 4: the bare mask line, pasted beside is_causal=True or above scores
    written out, changed nothing): passed as attn_mask= without is_causal, or applied to the scores."""
    if result.status == "problem" and result.bug is None and _passes_is_causal(fn):
        # two mistakes at once match no one known bug: the one the code shows is still said (a reader's
        # step that also embedded without the offset lost this line)
        result.observed.append("Your step passes is_causal= to F.scaled_dot_product_attention: with True, "
                               "its triangle is the top-left one (section 3), right only while nothing is "
                               "cached. That may be one of the mistakes: attn_mask= with the bottom-right "
                               "mask in its place.")
        return result
    if result.bug not in ("is_causal_top_left", "causal_mask_missing") or type(fn) is not types.FunctionType:
        return result
    # each fix reads its sizes from the tensors it is pasted beside, so it needs no name that the
    # student's step may lack or the notebook may hold with another value (08 leaves keys and scores)
    if _passes_is_causal(fn):
        result.observed.insert(0, "Your step passes is_causal= to F.scaled_dot_product_attention: with True, "
                                  "its triangle is the top-left one (section 3), right only while nothing is "
                                  "cached.")
        result.fix = ("attn_mask=torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril("
                      "diagonal=k.shape[-2] - q.shape[-2])   # in place of is_causal=True: the bottom-right "
                      "mask, sized by your queries and keys")
    elif "scaled_dot_product_attention" not in names_used(fn):
        # the scores under the learner's name: the one name their softmax takes (w of w.softmax(-1) inside
        # an einsum; the catalog's scores were a notebook global there, a replay's 08 d11)
        taken = {softmax_input(node) for tree in trees(fn) for node in ast.walk(tree)} - {None}
        s = taken.pop() if len(taken) == 1 else "scores"
        result.fix = (f"{s} = {s}.masked_fill(~torch.ones({s}.shape[-2:], dtype=torch.bool).tril("
                      f"diagonal={s}.shape[-1] - {s}.shape[-2]), torch.finfo({s}.dtype).min)   # "
                      "your scores (batch, heads, n_new, n_all), before the softmax: the bottom-right mask")
    return result


def _library_note(fn, result):
    """A pass whose step hands its attention to the course's own cached attention (past the exercise's
    guard, which refuses the pieces it is given: with the weights rewrapped, say) says so, as
    check_multi_head does for the course's multi-head attention: the exercise is that step written out."""
    if result.passed and library_used(fn, {"cached_attention": cached_attention}):
        result.notes.append("Your step hands its attention to the course's attnviz.gpt.cached_attention: its "
                            "numbers are right, and the exercise asks you to write it: W_q, W_k and W_v, the "
                            "keys and values joined to the cache's in a new cache (torch.cat: the cache "
                            "you are given is read again), repeat_interleave for the query heads, "
                            "attention with a bottom-right causal mask, then W_o.")
    return result


@_verdict.never_raises
@with_stale_note
@in_neutral
def check_decoding_step(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(model, tokens, cache) -> (logits, cache)`` against full recomputation.

    ``model`` is a :class:`attnviz.gpt.StepModel` of a tiny GPT with 6 query heads sharing 2
    key/value heads (30 features, 2 layers); ``tokens`` ``(batch, n_new)``; ``cache`` None, then
    what the previous call returned. The pieces: a prefill of 4 tokens, three single tokens, a
    chunk of 3, a token after it, another token from the prefill's cache, a prefill of batch 1 and
    a token after it, the first prefill again, all in one child process with a time limit. Returns a
    :class:`CheckResult`.
    """
    if not callable(fn):
        return _verdict.problem(NAME, f"expected a function, got a {type(fn).__name__}.",
                                ["Pass the function itself: check_decoding_step(decode_step)."])
    result = _diagonal_tried(fn, _checked(fn, time_limit), time_limit)
    return _with_state_on_itself(fn, _library_note(fn, result))


def _checked(fn, time_limit):
    setup = _setup()
    spec = replace(SPEC, hypotheses=setup["prefill"])
    result = run_check(spec, setup["probes"], _steps(fn, setup), time_limit, read=_read, main_kind="prefill")
    result = _causal_mask_words(fn, _with_shared_default(fn, _with_models_read(fn, result)))
    return fix_in_your_names(fn, result)


def _nan(result) -> bool:
    return not result.passed and "NaN or inf" in result.headline


def _diagonal_tried(fn, result, time_limit):
    """A step whose logits are NaN, with no known bug named: where moving the diagonal of its tril (or
    triu) by one takes the NaN away (:func:`._repair.diagonal_moved`, each change checked whole, in a
    child), its mask hides each query's own key. Named so, with that line changed as the Fix, when the
    change makes the step right; said beside the other mistake the changed step then shows, when it does
    not (replay 23's 08Z3 had both, and the √d_model scale, and was told only of NaN)."""
    if result.bug is not None or not _nan(result) or not result.headline.endswith(NO_KNOWN_BUG):
        return result
    try:
        found = diagonal_moved(fn, lambda changed: _checked(changed, time_limit), _nan)
    except Exception:  # noqa: BLE001 - code the reader cannot follow keeps its verdict
        return result
    if found is None:
        return result
    fix, then = found
    happened = result.headline[: -len(NO_KNOWN_BUG)]
    change = fix.split(": ", 1)[-1]
    said = (f"With {change}, your step no longer gives NaN: your mask hides each query's own key, so the "
            "first query of a prefill has no key left to attend to (a row of -inf, and its softmax is NaN).")
    if then.passed:
        observed = [line for line in result.observed if not line.startswith("Every number it returned is")]
        found_bug = _verdict.bug_found(NAME, "causal_excludes_self", happened, [*observed, said], fix)
        found_bug.warnings = result.warnings
        return found_bug
    result.headline = (f"{happened}, and it matches no one known bug: two mistakes at once, and one of them "
                       "is its mask (below).")
    result.observed.append(f"{said} It then shows another mistake: {then.headline}")
    result.fix = fix
    return result
