"""A deterministic fuzz of the core: several hundred calls with every kind of argument.

Each call's arguments are drawn as *good* (the docstrings allow them) or *maybe bad*. Every call
must either return finite, correctly shaped results whose weight rows sum to 1 (or 0 for a row with
every key blocked), or raise ValueError/TypeError from attnviz's own code whose message names one
of the maybe-bad arguments. A call whose arguments are all good must succeed. Never an IndexError,
ZeroDivisionError, OverflowError or a RuntimeError from inside torch, and never a silent NaN.
"""

from __future__ import annotations

import math
import random
import re
import traceback
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

import attnviz

N_CALLS = 700
FLOATS = [torch.float32, torch.float32, torch.float64, torch.float16, torch.bfloat16]
NOT_FLOATS = [torch.int64, torch.bool, torch.complex64]


@dataclass
class Call:
    """One fuzzed call: the function, its arguments, and which of them may be bad."""
    label: str
    fn: object
    args: dict
    maybe_bad: set = field(default_factory=set)
    check: object = None  # checks a successful result; gets (args, result)


def _pick(rng, good, bad, p_bad):
    """(value, is_bad): a good choice, or with probability p_bad a maybe-bad one."""
    if rng.random() < p_bad:
        return rng.choice(bad), True
    return rng.choice(good), False


def _tensor(rng, shape, dtype, magnitude, specials=False):
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    t = torch.randn(shape, generator=gen, dtype=torch.float64) * magnitude
    if specials and t.numel():
        t.view(-1)[rng.randrange(t.numel())] = rng.choice([math.nan, math.inf, -math.inf])
    if dtype.is_complex:
        return t.to(dtype)
    return t.to(dtype) if dtype != torch.bool else t > 0


def _leading(rng):
    return tuple(rng.choice([1, 2, 3]) for _ in range(rng.choice([0, 0, 1, 2])))


def _broadcast_like(rng, shape, min_dims=1):
    """A shape that broadcasts to ``shape``: some leading dimensions dropped, some sizes 1."""
    keep = rng.randrange(min(min_dims, len(shape)), len(shape) + 1)
    return tuple(s if rng.random() < 0.6 else 1 for s in shape[-keep:])


def _mask(rng, scores_shape, min_dims=1, hostile=1.0):
    """(mask, is_bad). Good masks are bool or float (0 / -inf) and broadcast to the scores."""
    if rng.random() >= 0.2 * hostile:
        kind = rng.choice(["none", "bool", "bool", "float"])
    else:
        kind = rng.choice(["bad_shape", "int", "list", "nan", "zero_dim"])
    shape = _broadcast_like(rng, scores_shape, min_dims)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    if kind == "none":
        return None, False
    if kind == "bool":
        return torch.rand(shape, generator=gen) > rng.choice([0.0, 0.3, 0.8, 1.0]), False
    if kind == "float":
        blocked = torch.rand(shape, generator=gen) < rng.choice([0.0, 0.3, 1.0])
        return torch.zeros(shape).masked_fill(blocked, -math.inf), False
    if kind == "bad_shape":
        wrong = list(shape)
        wrong[rng.randrange(len(wrong))] += rng.choice([1, 2])
        return torch.ones(wrong, dtype=torch.bool), True
    if kind == "int":
        return torch.ones(shape, dtype=torch.int64), True
    if kind == "list":
        return [[True]], True
    if kind == "nan":
        return torch.full(shape, math.nan), True
    return torch.tensor(True), True


SCALES_GOOD = [None, None, 0.5, 2.0, 0.0, -1.0, torch.tensor(0.25)]
SCALES_BAD = [math.inf, math.nan, 1e39, 10**400, "a", True, torch.ones(3), torch.tensor(1, dtype=torch.int64)]
TEMPS_GOOD = [1.0, 1.0, 0.1, 20.0, torch.tensor(2.0)]
TEMPS_BAD = [0, -1.0, math.nan, math.inf, 1e-40, 10**400, "hot", None, torch.tensor(-1.0)]
ODD_TENSORS = [None, [[1.0, 2.0]], 3.0, "q"]


def _attention_call(rng) -> Call:
    maybe_bad = set()
    hostile = rng.choice([0.0, 1.5])  # half the calls are all good; the other half may be bad anywhere
    lead = _leading(rng)
    n_q, n_k, d_k, d_v = rng.randrange(0, 6), rng.randrange(1, 6), rng.randrange(1, 6), rng.randrange(1, 5)
    dims = {"q": lead + (n_q, d_k), "k": lead + (n_k, d_k), "v": lead + (n_k, d_v)}
    if rng.random() < 0.15 * hostile:  # a shape mistake in one argument
        name, mistake = rng.choice("qkv"), rng.choice(["wider", "one_dim", "no_positions", "no_features"])
        shape = dims[name]
        dims[name] = {"wider": shape[:-1] + (shape[-1] + 1,), "one_dim": shape[-1:],
                      "no_positions": shape[:-2] + (0, shape[-1]), "no_features": shape[:-1] + (0,)}[mistake]
        harmless = ((name == "v" and mistake in ("wider", "no_features"))  # d_v is free, and may be 0
                    or (name == "q" and mistake == "no_positions"))         # no queries: empty results
        if not harmless:
            maybe_bad |= {"q", "k", "v"}
    dtype = rng.choice(FLOATS)
    dtypes = {name: dtype for name in "qkv"}
    if rng.random() < 0.1 * hostile:  # one argument of another dtype
        other = torch.float64 if dtype != torch.float64 else torch.float32
        dtypes[rng.choice("qkv")] = rng.choice(NOT_FLOATS + [other])
        maybe_bad |= {"q", "k", "v"}
    magnitude = rng.choice([1.0, 1.0, 3.0, 1e-30])
    if rng.random() < 0.15 * hostile:
        magnitude = rng.choice([300.0, 1e20, 1e200])
    # 1e20 overflows float32 scores (float16 and bfloat16 are computed in float32); 1e200 overflows float64
    if magnitude >= 1e20 and not (dtype == torch.float64 and magnitude == 1e20):
        maybe_bad |= {"q", "k"}
    if magnitude * 10 > torch.finfo(dtype).max:  # the inputs themselves become inf
        maybe_bad |= {"q", "k", "v"}
    special = rng.choice("qkv") if rng.random() < 0.08 * hostile else None
    if special:
        maybe_bad.add(special)
    args = {name: _tensor(rng, dims[name], dtypes[name], magnitude, specials=name == special)
            for name in "qkv"}
    if rng.random() < 0.05 * hostile:
        name = rng.choice("qkv")
        args[name] = rng.choice(ODD_TENSORS)
        maybe_bad.add(name)
    args["scale"], bad = _pick(rng, SCALES_GOOD, SCALES_BAD, 0.15 * hostile)
    if bad:
        maybe_bad.add("scale")
    args["temperature"], bad = _pick(rng, TEMPS_GOOD, TEMPS_BAD, 0.12 * hostile)
    if bad:
        maybe_bad |= {"temperature", "scale"}  # 1e-40 is reported as scale / temperature
    if rng.random() < 0.3:
        scores_bad = maybe_bad - {"v", "mask"}
        if dtype == torch.float16 and magnitude >= 3:
            scores_bad |= {"q", "k"}  # the returned float16 scores may not hold the product
        return Call("attention_scores", attnviz.attention_scores,
                    {n: args[n] for n in ("q", "k", "scale", "temperature")}, scores_bad, check=_check_scores)
    if len(dims["q"]) >= 2:
        n_q = dims["q"][-2]  # 0 after a harmless "no positions" mistake in q
    args["mask"], bad = _mask(rng, lead + (n_q, n_k), hostile=hostile)
    if bad or maybe_bad & {"q", "k", "v"}:
        maybe_bad.add("mask")  # a good mask for the intended shapes may not fit broken ones
    return Call("scaled_dot_product_attention", attnviz.scaled_dot_product_attention, args, maybe_bad,
                check=_check_attention)


def _expected_dead_rows(mask, weights_shape):
    if mask is None:
        return torch.zeros(weights_shape[:-1], dtype=torch.bool)
    blocked = ~mask if mask.dtype == torch.bool else torch.isneginf(mask)
    return blocked.expand(weights_shape).all(-1)


def _check_attention(args, result):
    q, k, v, mask = args["q"], args["k"], args["v"], args["mask"]
    out, weights = result
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        lead = torch.broadcast_shapes(lead, mask.shape[:-2])
    assert weights.shape == lead + (q.shape[-2], k.shape[-2]), weights.shape
    assert out.shape == lead + (q.shape[-2], v.shape[-1]), out.shape
    assert out.dtype == weights.dtype == q.dtype
    assert torch.isfinite(out).all() and torch.isfinite(weights).all(), "NaN or inf returned"
    assert (weights >= 0).all()
    dead = _expected_dead_rows(mask, weights.shape)
    sums = weights.double().sum(-1)
    tol = 1e-2 if q.dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert (sums[dead] == 0).all(), "a fully blocked row does not sum to 0"
    assert ((sums[~dead] - 1).abs() < tol).all(), f"rows sum to {sums[~dead]}"
    if mask is not None:
        blocked = ~mask if mask.dtype == torch.bool else torch.isneginf(mask)
        assert (weights[blocked.expand(weights.shape)] == 0).all(), "a blocked key has weight"
    return _compare_with_torch(args, out)


def _compare_with_torch(args, out) -> bool:
    """Agreement with F.scaled_dot_product_attention where it computes the same thing."""
    q, k, v, mask, scale, temperature = (args[n] for n in ("q", "k", "v", "mask", "scale", "temperature"))
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        return False
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if scale == 0 or q.shape[-2] == 0:
        return False
    if mask is not None:  # torch's attn_mask wants the full (..., n_q, n_k) shape
        mask = mask.expand(out.shape[:-1] + (k.shape[-2],))
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale / float(temperature))
    tol = 1e-2 if q.dtype in (torch.float16, torch.bfloat16) else 1e-5
    torch.testing.assert_close(out, theirs, atol=tol, rtol=tol)
    return True


def _check_scores(args, scores):
    q, k = args["q"], args["k"]
    assert scores.shape == torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    assert scores.dtype == q.dtype and torch.isfinite(scores).all(), "NaN or inf scores returned"


def _mha_call(rng) -> Call:
    maybe_bad = set()
    d_model = rng.choice([4, 8, 12])
    n_heads = rng.choice([1, 2, 4])
    if d_model % n_heads:
        maybe_bad |= {"d_model", "n_heads"}
    if rng.random() < 0.05:
        d_model = rng.choice([0, -3, 10**400, 2.5, "8"])
        maybe_bad.add("d_model")
    batch, n_q, n_k = rng.randrange(1, 3), rng.randrange(1, 6), rng.randrange(1, 6)
    cross = rng.random() < 0.4
    dtype = torch.float32
    if rng.random() < 0.15:
        dtype = rng.choice([torch.float16, torch.float64, torch.int64, torch.bool, torch.complex64])
        maybe_bad |= {"x", "context"}
    width = d_model if isinstance(d_model, int) and 0 < d_model < 100 else 4
    x_shape = (batch, n_q, width)
    if rng.random() < 0.1:
        x_shape = rng.choice([(n_q, width), (batch, n_q, width + 1), (batch, 0, width)])
        maybe_bad |= {"x", "context"}
    magnitude = 1e20 if rng.random() < 0.05 else 1.0
    if magnitude > 1:
        maybe_bad |= {"x", "context"}
    x = _tensor(rng, x_shape, dtype, magnitude)
    context = _tensor(rng, (batch, n_k, width), dtype, magnitude) if cross else None
    queries = x_shape[1] if len(x_shape) == 3 else n_q
    keys = n_k if cross else queries
    if rng.random() < 0.3:  # a per-head mask: (batch, n_heads, n_q, n_k), some sizes 1
        mask, bad = _mask(rng, (batch, n_heads, queries, keys), min_dims=4)
    else:                   # (n_k,), (n_q, n_k) or (batch, n_q, n_k), some sizes 1: every head
        mask, bad = _mask(rng, (batch, queries, keys))
    if bad or maybe_bad & {"x", "context"}:
        maybe_bad.add("mask")

    def run(d_model, n_heads, x, context, mask):
        torch.manual_seed(0)
        return attnviz.MultiHeadAttention(d_model, n_heads)(x, context=context, mask=mask)

    return Call("MultiHeadAttention", run,
                {"d_model": d_model, "n_heads": n_heads, "x": x, "context": context, "mask": mask},
                maybe_bad, check=_check_mha)


def _check_mha(args, result):
    out, weights = result
    x, context, mask = args["x"], args["context"], args["mask"]
    keys = (context if context is not None else x).shape[1]
    assert out.shape == x.shape and out.dtype == x.dtype
    assert weights.shape == (x.shape[0], args["n_heads"], x.shape[1], keys)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all(), "NaN or inf returned"
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    dead = _expected_dead_rows(mask, weights.shape)
    sums = weights.double().sum(-1)
    assert (sums[dead] == 0).all() and ((sums[~dead] - 1).abs() < 1e-5).all()
    return False


def _mask_call(rng) -> Call:
    sizes_good, sizes_bad = [1, 2, 5, 64], [0, -1, 10**400, 100_000, 2.0, "5", True]
    if rng.random() < 0.5:
        n_q, bad_q = _pick(rng, sizes_good, sizes_bad + [None], 0.3)
        n_k, bad_k = _pick(rng, sizes_good + [None], sizes_bad, 0.2)
        # 100_000 × 5 is fine; 100_000 × 100_000 is too large and the message names both
        return Call("causal_mask", attnviz.causal_mask, {"n_q": n_q, "n_k": n_k},
                    {"n_q", "n_k"} if bad_q or bad_k else set(), check=_check_causal)
    n, bad_n = _pick(rng, [3, 6, 64], sizes_bad + [None], 0.25)
    lengths, bad_lengths = _pick(rng, [[3, 1, 0], [2], torch.tensor([1, 3])],
                                 [[], [7], [-1], [2.5], "3", torch.tensor([1.0]), [10**400], [[1]], 4], 0.3)
    maybe_bad = ({"n"} if bad_n else set()) | ({"lengths", "n"} if bad_lengths else set())
    return Call("padding_mask", attnviz.padding_mask, {"lengths": lengths, "n": n}, maybe_bad,
                check=_check_padding)


def _check_causal(args, mask):
    n_q = args["n_q"]
    n_k = n_q if args["n_k"] is None else args["n_k"]
    assert mask.dtype == torch.bool and mask.shape == (n_q, n_k)
    assert torch.equal(mask, torch.ones(n_q, n_k, dtype=torch.bool).tril())
    return False


def _check_padding(args, mask):
    lengths = torch.as_tensor(args["lengths"])
    assert mask.dtype == torch.bool and mask.shape == (len(lengths), 1, args["n"])
    assert torch.equal(mask.sum(-1).flatten(), lengths), "each row allows exactly its length"
    return False


def _calls():
    rng = random.Random(12)
    makers = [_attention_call] * 6 + [_mha_call] * 3 + [_mask_call]
    return [rng.choice(makers)(rng) for _ in range(N_CALLS)]


def _names(message: str, names) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(])", message) for name in names)


def _run(call: Call):
    """'ok', 'compared' or 'error'; raises AssertionError with a description on a broken promise."""
    label = f"{call.label}({', '.join(f'{n}={_describe(v)}' for n, v in call.args.items())})"
    try:
        result = call.fn(**call.args)
    except (ValueError, TypeError) as err:
        frames = traceback.extract_tb(err.__traceback__)
        assert "/attnviz/" in frames[-1].filename, f"{label}: raised from {frames[-1].filename}: {err}"
        assert call.maybe_bad, f"{label}: all arguments are good but it raised {err!r}"
        assert _names(str(err), call.maybe_bad), f"{label}: message names none of {call.maybe_bad}: {err}"
        return "error"
    except Exception as err:  # any other exception is the failure being looked for
        raise AssertionError(f"{label}: raised {type(err).__name__}: {err}") from err
    try:
        return "compared" if call.check(call.args, result) else "ok"
    except AssertionError as err:
        raise AssertionError(f"{label}: {err}") from err


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}:{str(value.dtype).removeprefix('torch.')}"
    text = repr(value)
    return text if len(text) < 20 else text[:17] + "..."


def test_fuzz_every_call_returns_good_results_or_names_a_bad_argument():
    outcomes, failures = {"ok": 0, "compared": 0, "error": 0}, []
    for call in _calls():
        try:
            outcomes[_run(call)] += 1
        except AssertionError as err:
            failures.append(str(err))
    assert not failures, f"{len(failures)} of {N_CALLS} calls broke a promise:\n" + "\n".join(failures[:15])
    # the fuzz exercises both sides: many successes, many errors, many checked against PyTorch
    assert outcomes["ok"] + outcomes["compared"] > N_CALLS // 3, outcomes
    assert outcomes["error"] > N_CALLS // 5, outcomes
    assert outcomes["compared"] > 100, outcomes
