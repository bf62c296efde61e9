"""The numbers behind the explorers: a state goes in, arrays and metrics come out.

Torch only (no plotting), so every number a widget shows can be tested without a
kernel. Each ``*_state`` function returns a plain dict; the widgets in
:mod:`attnviz.widgets` only draw these dicts.

Matrices follow the course's layout: rows are queries (the positions asking),
columns are keys (the positions attended to). Masks are bool, True = may attend.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from ._validate import require_finite_number, require_positive_int, require_positive_number
from .core import causal_mask, padding_mask
from .cost import kv_cache_bytes
from .diagnostics import attention_entropy, row_max_weight, softmax_jacobian_norm

__all__ = [
    "MASKS",
    "FILLS",
    "DTYPES",
    "saturation_state",
    "saturation_states",
    "lookup_state",
    "mask_state",
    "kv_cache_state",
    "heads_state",
    "head_weights",
    "format_bytes",
    "binary_unit",
    "LOOKUP_WORDS",
    "KEY_ANGLES_DEG",
    "MASK_LENGTHS",
    "MAX_HEADS",
]

MASKS = ("none", "causal", "padding", "causal+padding")
FILLS = ("-inf", "finfo.min", "-1e9", "0")
DTYPES = ("float32", "float16", "bfloat16")
KV_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn")


def _choice(value, name: str, options) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(repr(o) for o in options)}; got {value!r}.")
    return value


def _seed(seed) -> int:
    return require_positive_int(seed, "seed", allow_zero=True)


def _padded_length(n: int) -> int:
    """How many real tokens the padded sequence of the saturation explorer has."""
    return max(1, n - max(1, n // 4))


def _mask_for(kind: str, n: int, n_real: int):
    """Bool ``(n, n)`` mask (True = may attend) for one sequence, or None for 'none'."""
    if kind == "none":
        return None
    allowed = torch.ones(n, n, dtype=torch.bool)
    if "causal" in kind:
        allowed &= causal_mask(n)
    if "padding" in kind:
        allowed &= padding_mask([n_real], n)[0]          # (1, n) broadcasts over the query rows
    return allowed


@lru_cache(maxsize=64)
def _raw_scores(n: int, d_k: int, seed: int) -> torch.Tensor:
    """``q @ kᵀ`` for ``n`` random queries and keys with ``d_k`` unit-variance features (float64)."""
    gen = torch.Generator().manual_seed(seed)
    query = torch.randn(n, d_k, generator=gen, dtype=torch.float64)   # (n, d_k)
    key = torch.randn(n, d_k, generator=gen, dtype=torch.float64)     # (n, d_k)
    raw = query @ key.T                                               # (n, n)
    raw.requires_grad_(False)
    return raw


def _row_metrics(weights: torch.Tensor, scores: torch.Tensor, allowed) -> list[dict]:
    """Metrics of a stack of weight matrices ``(S, n, n)``: one dict per matrix."""
    if allowed is None:
        allowed = torch.ones(weights.shape[-2:], dtype=torch.bool)
    entropy = attention_entropy(weights).mean(dim=-1).tolist()               # (S,)
    max_weight = row_max_weight(weights).mean(dim=-1).tolist()               # (S,)
    grad_norm = softmax_jacobian_norm(weights).mean(dim=-1).tolist()         # (S,)
    allowed_scores = scores[:, allowed]                                      # (S, allowed cells)
    score_std = (allowed_scores.std(dim=-1, unbiased=False).tolist() if allowed_scores.shape[-1] > 1
                 else [0.0] * len(entropy))
    uniform = float(torch.log(allowed.sum(dim=-1).double()).mean())
    return [{"entropy": e, "max_weight": m, "grad_norm": g, "score_std": sd, "uniform_entropy": uniform}
            for e, m, g, sd in zip(entropy, max_weight, grad_norm, score_std, strict=True)]


def saturation_states(d_k, temperature=1.0, mask="none", seed=0, n=8, settings=(True, False)) -> dict:
    """:func:`saturation_state` for several ``scaled`` settings at once, on the same vectors.

    Returns ``{True: state, False: state}`` (keys from ``settings``); computed as one stack,
    which is what the saturation explorer draws side by side.
    """
    d_k = require_positive_int(d_k, "d_k")
    n = require_positive_int(n, "n")
    temperature = require_positive_number(temperature, "temperature")
    for scaled in settings:
        if not isinstance(scaled, bool):
            raise TypeError(f"scaled must be True or False, got {scaled!r}.")
    mask = _choice(mask, "mask", MASKS)
    seed = _seed(seed)

    raw = _raw_scores(n, d_k, seed)                                   # (n, n)
    factors = torch.tensor([(1.0 / math.sqrt(d_k) if scaled else 1.0) / temperature for scaled in settings],
                           dtype=raw.dtype)
    scores = raw * factors[:, None, None]                             # (S, n, n) softmax inputs
    n_real = _padded_length(n) if "padding" in mask else n
    allowed = _mask_for(mask, n, n_real)
    blocked_scores = scores if allowed is None else scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(blocked_scores, dim=-1)                   # (S, n, n), rows sum to 1
    metrics = _row_metrics(weights, scores, allowed)
    raw_std = float(raw.std(unbiased=False)) if n > 1 else 0.0
    states = {}
    for index, scaled in enumerate(settings):
        metrics[index]["raw_score_std"] = raw_std
        states[scaled] = {
            "raw_scores": raw,
            "scores": scores[index],
            "weights": weights[index],
            "mask": allowed,
            "n_real": n_real,
            "metrics": metrics[index],
        }
    return states


def saturation_state(d_k, temperature=1.0, scaled=True, mask="none", seed=0, n=8) -> dict:
    """Random queries and keys, their scores, and how saturated the softmax over them is.

    ``n`` queries and ``n`` keys are drawn with ``d_k`` independent standard-normal
    features (the same draw for the same ``n``, ``d_k`` and ``seed``, so scaled and
    unscaled can be compared on identical vectors).

    Returns a dict:
        ``raw_scores``: ``(n, n)`` float64, ``q @ kᵀ`` (standard deviation about √d_k).
        ``scores``: ``(n, n)``, what enters the softmax: ``raw_scores / √d_k / temperature``
        when ``scaled`` else ``raw_scores / temperature``. Masked entries keep their value
        here; the mask is applied only inside the softmax.
        ``weights``: ``(n, n)``, softmax of each score row over the allowed keys; blocked
        keys get exactly 0.
        ``mask``: ``(n, n)`` bool, True = may attend, or None for ``mask='none'``.
        ``n_real``: real (unpadded) tokens; padding masks hide key columns ``n_real..n-1``.
        ``metrics``: means over the query rows of ``entropy`` (nats), ``max_weight`` (each
        row's largest weight), ``grad_norm`` (Frobenius norm of the row's softmax Jacobian:
        0 when saturated), ``score_std`` (std of the allowed entries of ``scores``, the
        softmax input), plus ``raw_score_std`` and ``uniform_entropy`` (entropy a flat row
        would have, log of the allowed keys).

    ``mask`` is one of ``'none'``, ``'causal'``, ``'padding'``, ``'causal+padding'``;
    every query row keeps at least key 0, so no row is fully masked here.
    """
    if not isinstance(scaled, bool):
        raise TypeError(f"scaled must be True or False, got {scaled!r}.")
    return saturation_states(d_k, temperature, mask, seed, n, settings=(scaled,))[scaled]


# ---------------------------------------------------------------------------------------------
# The soft dictionary lookup: a few words with 2-D keys and 2-D values.

LOOKUP_WORDS = ("cat", "dog", "car", "bus", "tree")
# Keys are unit vectors: similar words advertise similar directions (cat near dog, car near bus).
KEY_ANGLES_DEG = (20.0, 60.0, 160.0, 200.0, 290.0)
# Values are what each word contributes when attended to: a separate 2-D point per word.
_VALUES = ((1.0, 3.0), (2.0, 3.5), (4.0, 0.5), (4.5, 1.5), (0.5, 0.5))


def lookup_state(query_angle=30.0, temperature=1.0, query_word=None) -> dict:
    """A soft dictionary lookup over five words whose keys and values are 2-D.

    The query is the unit vector at ``query_angle`` degrees, or, if ``query_word`` is one
    of :data:`LOOKUP_WORDS`, exactly that word's key. Scores are ``key · query /
    temperature`` (keys and query have length 1, so a score is a cosine); weights are their
    softmax; the output is the weighted blend of the values.

    As ``temperature`` goes to 0 the output becomes the value of the best-matching key (an
    exact lookup); as it grows the output becomes the plain average of the values.

    Returns a dict with ``words`` (5 strings), ``keys`` ``(5, 2)``, ``values`` ``(5, 2)``,
    ``query`` ``(2,)``, ``scores`` ``(5,)``, ``weights`` ``(5,)``, ``output`` ``(2,)``,
    ``best`` (index of the largest weight), ``average`` ``(2,)`` and ``metrics``:
    ``entropy`` (nats), ``max_weight``, ``distance_to_best`` (output to the best key's value)
    and ``distance_to_average`` (output to the mean of the values).
    """
    temperature = require_positive_number(temperature, "temperature")
    angles = torch.tensor(KEY_ANGLES_DEG, dtype=torch.float64).deg2rad()
    keys = torch.stack([angles.cos(), angles.sin()], dim=-1)          # (5, 2)
    values = torch.tensor(_VALUES, dtype=torch.float64)               # (5, 2)
    if query_word is not None:
        word = _choice(query_word, "query_word", LOOKUP_WORDS)
        query = keys[LOOKUP_WORDS.index(word)].clone()
        query_angle = KEY_ANGLES_DEG[LOOKUP_WORDS.index(word)]
    else:
        angle = math.radians(require_finite_number(query_angle, "query_angle"))
        query = torch.tensor([math.cos(angle), math.sin(angle)], dtype=torch.float64)
    scores = keys @ query / temperature                               # (5,)
    weights = torch.softmax(scores, dim=-1)                           # (5,)
    output = weights @ values                                         # (2,)
    best = int(weights.argmax())
    average = values.mean(dim=0)
    return {
        "words": LOOKUP_WORDS,
        "keys": keys,
        "values": values,
        "query": query,
        "query_angle": float(query_angle),
        "scores": scores,
        "weights": weights,
        "output": output,
        "best": best,
        "average": average,
        "metrics": {
            "entropy": float(attention_entropy(weights)),
            "max_weight": float(weights.max()),
            "best_word": LOOKUP_WORDS[best],
            "distance_to_best": float((output - values[best]).norm()),
            "distance_to_average": float((output - average).norm()),
        },
    }


# ---------------------------------------------------------------------------------------------
# Masks and fill values: a small batch of sequences of different lengths.

MASK_LENGTHS = (5, 3, 0)   # the last sequence is empty: every key is padding, so its rows are fully masked
_MASK_N = 5
_MASK_D_K = 4


def _fill_value(fill: str, dtype: torch.dtype) -> float:
    if fill == "-inf":
        return float("-inf")
    if fill == "finfo.min":
        return float(torch.finfo(dtype).min)
    if fill == "-1e9":
        return -1e9
    return 0.0


@lru_cache(maxsize=8)
def _mask_scores(seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    batch = len(MASK_LENGTHS)
    query = torch.randn(batch, _MASK_N, _MASK_D_K, generator=gen)      # (batch, n, d_k)
    key = torch.randn(batch, _MASK_N, _MASK_D_K, generator=gen)        # (batch, n, d_k)
    return query @ key.transpose(-2, -1) / math.sqrt(_MASK_D_K)        # (batch, n, n) float32


def mask_state(mask="none", fill="-inf", dtype="float32", seed=0) -> dict:
    """Mask a small batch's scores with a chosen fill value and dtype, then take the softmax.

    The batch holds ``len(MASK_LENGTHS)`` sequences padded to 5 positions, with
    :data:`MASK_LENGTHS` real tokens each; the last has none, so under a padding mask every
    one of its query rows is fully masked (the case where ``-inf`` turns into NaN).

    Steps, as a learner would write them: ``scores`` (float32, scaled by √d_k) are cast to
    ``dtype``; ``scores.masked_fill(~mask, fill_value)`` writes the fill where the mask is
    False; ``torch.softmax`` over the keys gives the weights (in ``dtype``).

    ``fill`` is ``'-inf'``, ``'finfo.min'`` (``torch.finfo(dtype).min``), ``'-1e9'`` or
    ``'0'``; ``dtype`` is ``'float32'``, ``'float16'`` or ``'bfloat16'``.

    Returns a dict with ``lengths``, ``mask`` ``(batch, n, n)`` bool (True = may attend; all
    True for ``'none'``), ``scores`` ``(batch, n, n)`` float32 before filling,
    ``filled_scores`` and ``weights`` (``(batch, n, n)``, converted to float64 for display,
    NaN kept; None if PyTorch raised), ``fill_value`` and ``metrics``:
        ``nan_rows``: query rows whose weights contain NaN (None if PyTorch raised);
        ``dead_rows``: query rows with no allowed key at all;
        ``leaked_weight``: the largest total weight that any row *with* an allowed key puts
        on its blocked keys (0 when masking works; None if PyTorch raised);
        ``error``: None, or a plain-words account of the error PyTorch raised.
    """
    mask = _choice(mask, "mask", MASKS)
    fill = _choice(fill, "fill", FILLS)
    dtype_name = _choice(dtype, "dtype", DTYPES)
    torch_dtype = getattr(torch, dtype_name)
    seed = _seed(seed)

    scores = _mask_scores(seed)                                        # (batch, n, n)
    batch, n = scores.shape[0], _MASK_N
    allowed = torch.ones(batch, n, n, dtype=torch.bool)
    for index, n_real in enumerate(MASK_LENGTHS):
        one = _mask_for(mask, n, n_real)
        if one is not None:
            allowed[index] = one
    dead = ~allowed.any(dim=-1)                                        # (batch, n) rows with no key
    fill_value = _fill_value(fill, torch_dtype)
    result = {
        "lengths": MASK_LENGTHS,
        "mask": allowed,
        "scores": scores,
        "filled_scores": None,
        "weights": None,
        "fill_value": fill_value,
        "dtype": dtype_name,
        "metrics": {"nan_rows": None, "dead_rows": int(dead.sum()), "leaked_weight": None, "error": None},
    }
    typed = scores.to(torch_dtype)
    try:
        filled = typed if mask == "none" else typed.masked_fill(~allowed, fill_value)
        weights = torch.softmax(filled, dim=-1)
    except RuntimeError as err:
        result["metrics"]["error"] = (
            f"PyTorch refused: scores.masked_fill(~mask, {fill}) on {dtype_name} scores raised "
            f"RuntimeError: \"{err}\". The fill {fill} cannot be stored in {dtype_name} "
            f"(its most negative finite number is {torch.finfo(torch_dtype).min:g}). "
            f"Use torch.finfo(scores.dtype).min, or fill in float32."
        )
        return result
    weights = weights.double()                                         # (batch, n, n)
    nan_row = weights.isnan().any(dim=-1)                              # (batch, n)
    on_blocked = torch.nan_to_num(weights, nan=0.0).masked_fill(allowed, 0.0).sum(dim=-1)
    live = ~dead
    result["filled_scores"] = filled.double()
    result["weights"] = weights
    result["metrics"]["nan_rows"] = int(nan_row.sum())
    result["metrics"]["leaked_weight"] = float(on_blocked[live].max()) if bool(live.any()) else 0.0
    return result


# ---------------------------------------------------------------------------------------------
# The KV cache.

def binary_unit(n_bytes) -> tuple[str, int]:
    """The largest binary unit that ``n_bytes`` fills, and its size: ``('ZiB', 1024**7)`` down to
    ``('B', 1)``. Up to ZiB, so that the KV-cache explorer's largest settings still read in at most
    four digits (a chart's axis labels then fit beside its title)."""
    for unit, power in (("ZiB", 7), ("EiB", 6), ("PiB", 5), ("TiB", 4), ("GiB", 3), ("MiB", 2),
                        ("KiB", 1)):
        if n_bytes >= 1024**power:
            return unit, 1024**power
    return "B", 1


def format_bytes(n_bytes) -> str:
    """``2147483648`` -> ``'2.00 GiB'``, in binary units (1 KiB = 1024 B)."""
    n_bytes = int(n_bytes)
    unit, size = binary_unit(n_bytes)
    if size == 1:
        return f"{n_bytes:,} B"
    return f"{n_bytes / size:,.2f} {unit}"


def kv_cache_state(n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, seq_len=4096,
                   dtype="float16", batch=1) -> dict:
    """KV-cache bytes for one model shape, with multi-head, grouped-query and multi-query keys.

    ``n_heads`` query heads share ``n_kv_heads`` key/value heads (grouped-query attention,
    GQA); multi-head (MHA) has ``n_kv_heads = n_heads``, multi-query (MQA) has 1. Bytes come
    from :func:`attnviz.kv_cache_bytes`; the element size from ``dtype``.

    Returns a dict with ``bytes`` (``{'MHA': ..., 'GQA': ..., 'MQA': ...}``),
    ``per_token`` (bytes per position for the chosen ``n_kv_heads``), ``bytes_per_element``
    and ``metrics`` (``bytes``, ``per_token_bytes``, ``text`` and ``heads_per_kv_head``).
    Raises ValueError, in words, when ``n_kv_heads`` does not divide ``n_heads``.
    """
    n_heads = require_positive_int(n_heads, "n_heads")
    n_kv_heads = require_positive_int(n_kv_heads, "n_kv_heads")
    dtype = _choice(dtype, "dtype", KV_DTYPES)
    if n_kv_heads > n_heads:
        raise ValueError(
            f"n_kv_heads={n_kv_heads} is more than n_heads={n_heads}: each key/value head is "
            f"shared by a group of query heads, so there can be at most as many as query heads."
        )
    if n_heads % n_kv_heads:
        options = [h for h in range(1, n_heads + 1) if n_heads % h == 0]
        raise ValueError(
            f"n_heads={n_heads} is not divisible by n_kv_heads={n_kv_heads}: every key/value head "
            f"serves the same number of query heads. n_kv_heads could be one of {options}."
        )
    element = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    sizes = {
        name: kv_cache_bytes(n_layers, kv, d_head, seq_len, bytes_per_element=element, batch=batch)
        for name, kv in (("MHA", n_heads), ("GQA", n_kv_heads), ("MQA", 1))
    }
    per_token = kv_cache_bytes(n_layers, n_kv_heads, d_head, 1, bytes_per_element=element, batch=1)
    return {
        "bytes": sizes,
        "per_token": per_token,
        "bytes_per_element": element,
        "metrics": {
            "bytes": sizes["GQA"],
            "per_token_bytes": per_token,
            "text": format_bytes(sizes["GQA"]),
            "heads_per_kv_head": n_heads // n_kv_heads,
        },
    }


# ---------------------------------------------------------------------------------------------
# Heads: one head picked from every head of a model.

MAX_HEADS = 96      # the head explorer's grid shows at most this many (layers x heads)


def head_weights(weights) -> torch.Tensor:
    """``weights`` checked and as float64 ``(n_layers, n_heads, n_q, n_k)`` (a copy).

    ``weights``: ``(n_heads, n_q, n_k)`` (one layer) or ``(n_layers, n_heads, n_q, n_k)``, a torch
    tensor, numpy array or nested list of numbers. Attention weights lie in [0, 1]; NaN is allowed
    (a fully masked row filled with -inf). At most :data:`MAX_HEADS` heads in all.
    """
    try:
        if isinstance(weights, torch.Tensor):
            tensor = weights.detach().to("cpu", torch.float64).clone()
        else:
            tensor = torch.tensor(weights, dtype=torch.float64)           # numpy arrays and lists
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"weights must be a torch tensor, a numpy array or a list of numbers, "
                        f"got {type(weights).__name__}.") from None
    if tensor.dim() == 3:
        tensor = tensor[None]
    if tensor.dim() != 4:
        raise ValueError(
            f"weights has shape {tuple(tensor.shape)} ({tensor.dim()} dimensions); the head explorer needs "
            f"(n_heads, n_q, n_k) or (n_layers, n_heads, n_q, n_k). For a batch, pick one sequence "
            f"first, e.g. weights[0]."
        )
    n_layers, n_heads, _n_q, _n_k = tensor.shape
    if min(tensor.shape) == 0:
        raise ValueError(f"weights has shape {tuple(tensor.shape)}: every dimension must be at least 1.")
    if n_layers * n_heads > MAX_HEADS:
        raise ValueError(
            f"weights holds {n_layers} layers x {n_heads} heads = {n_layers * n_heads} heads; the grid "
            f"shows at most {MAX_HEADS}. Pass a few layers, e.g. weights[:4]."
        )
    checks = ((tensor.isinf(), "infinite"), (tensor < 0, "negative"), (tensor > 1 + 1e-6, "above 1"))
    for bad, words in checks:
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(
                f"weights has {int(bad.sum())} {words} entries (the first at index {where}, "
                f"value {float(tensor[where]):g}). Attention weights come out of a softmax, so each lies "
                f"between 0 and 1 and each row sums to 1; pass the weights, not the scores. "
                f"(NaN is allowed: it is drawn pink.)")
    return tensor


def heads_state(weights, layer=0, head=0, tokens=None, mask=None) -> dict:
    """One head of a model, picked by ``layer`` and ``head``, and how sharply it attends.

    ``weights``: every head's attention weights for one sequence, as :func:`head_weights` takes them.
    ``tokens``: one label per key position (used for the queries too when ``n_q == n_k``), or None.
    ``mask``: the mask the model attended under (bool, True = may attend, broadcasting to
    ``(n_q, n_k)``, such as :func:`attnviz.causal_mask`), or None; returned as ``mask``, drawn grey
    by the head explorer so that a blocked key is not read as a weight the model learned to give 0.

    Returns a dict with ``layer``, ``head``, ``weights`` (that head's ``(n_q, n_k)``, float64, NaN
    kept), ``top`` ``(n_q,)`` (each query's largest weight's key), ``nan_rows`` ``(n_q,)`` bool,
    ``key_labels`` and ``query_labels`` (lists of strings, or None) and ``metrics``: ``layer``,
    ``head``, ``entropy`` (nats) and ``max_weight`` (means over the queries whose row holds no NaN;
    NaN if none does) and ``nan_rows`` (how many rows hold NaN).
    """
    stack = head_weights(weights)                                     # (n_layers, n_heads, n_q, n_k)
    n_layers, n_heads, n_q, n_k = stack.shape
    layer = require_positive_int(layer, "layer", allow_zero=True, maximum=n_layers - 1)
    head = require_positive_int(head, "head", allow_zero=True, maximum=n_heads - 1)
    if tokens is not None:
        tokens = [str(token) for token in tokens]
        if len(tokens) != n_k:
            raise ValueError(
                f"tokens has {len(tokens)} entries but weights has n_k={n_k} keys (its last "
                f"dimension); give one token per position."
            )
    if mask is not None:
        mask = torch.as_tensor(mask)
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}.")
        try:
            mask = torch.broadcast_to(mask, (n_q, n_k))
        except RuntimeError:
            raise ValueError(f"mask has shape {tuple(mask.shape)}, which does not broadcast to one head's "
                             f"(n_q, n_k) = ({n_q}, {n_k}).") from None
    one = stack[layer, head]                                          # (n_q, n_k)
    nan = one.isnan()
    nan_rows = nan.any(dim=-1)                                        # (n_q,)
    shown = one.masked_fill(nan, float("-inf"))
    live = ~nan_rows
    entropy = attention_entropy(one.nan_to_num(nan=0.0))              # (n_q,)
    return {
        "layer": layer,
        "head": head,
        "weights": one,
        "top": shown.argmax(dim=-1),                                  # (n_q,) the first largest
        "nan_rows": nan_rows,
        "key_labels": tokens,
        "query_labels": tokens if tokens is not None and n_q == n_k else None,
        "mask": mask,
        "metrics": {
            "layer": layer,
            "head": head,
            "entropy": float(entropy[live].mean()) if bool(live.any()) else float("nan"),
            "max_weight": float(shown.amax(dim=-1)[live].mean()) if bool(live.any()) else float("nan"),
            "nan_rows": int(nan_rows.sum()),
        },
    }
