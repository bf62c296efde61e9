"""The checker's own reference math and the bug hypotheses, private to attnviz.check.

Nothing here calls attnviz.core (or attnviz.zoo): a learner who rebinds
``attnviz.core.scaled_dot_product_attention`` cannot make wrong code pass. The
torch functions used are bound at import time.

Each hypothesis is a bug id with one or more *variants*: the reference with
that one thing done wrong, in the styles learners write it (-inf or
finfo.min fill, softmax over dim -2 or dim 0, ...). A learner's outputs that
agree with one variant on every probe get that bug's id.

Shapes: q ``(..., n_q, d_k)``, k ``(..., n_k, d_k)``, v ``(..., n_k, d_v)``,
mask bool broadcasting to ``(..., n_q, n_k)`` with True = may attend.
All math runs in float64.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch
import torch.nn.functional as F

from .._threads import one_thread
from ._sandbox import on_cpu

__all__ = ["neutral", "in_neutral", "attention", "multi_head", "ATTENTION_VARIANTS", "MULTI_HEAD_VARIANTS",
           "SCALE_BY_D_MODEL_TOO",
           "causal", "padding"]

_softmax, _log_softmax, _sigmoid, _exp = torch.softmax, torch.log_softmax, torch.sigmoid, torch.exp
_INF = float("inf")
_MIN = torch.finfo(torch.float32).min  # the fill the course teaches (the learner's dtype is float32)


@contextlib.contextmanager
def neutral():
    """The checker's own math runs on the CPU with autograd on, whatever the kernel has set
    (``torch.set_grad_enabled(False)``, ``torch.set_default_device(...)``)."""
    with on_cpu(), torch.enable_grad():
        yield


def in_neutral(check):
    """Decorator: the whole checker runs inside :func:`neutral`, on one CPU thread (its tensors are
    tiny: a second thread only adds waiting, milliseconds per product on a busy machine)."""
    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        with neutral(), one_thread():
            return check(*args, **kwargs)
    return wrapper


def _t(x):
    return x.transpose(-2, -1)


def _fill(scores, mask, value):
    return scores if mask is None else scores.masked_fill(~mask, value)


def _finish(scores, mask, v, fill=-_INF, dead="zero"):
    """Mask (fill blocked scores), softmax over keys, weights @ v. ``dead``: what a fully masked
    row gives, 'zero' (PyTorch's fused function), 'uniform' (a finite fill) or 'nan' (-inf)."""
    scores = _fill(scores, mask, fill)
    weights = _softmax(scores, dim=-1)
    if mask is not None and dead != "nan":
        dead_rows = ~mask.any(dim=-1, keepdim=True)
        if dead == "zero":
            weights = weights.masked_fill(dead_rows, 0.0)
        else:
            weights = torch.where(dead_rows, 1.0 / scores.shape[-1], weights)
    return weights @ v, weights


def attention(q, k, v, mask=None, dead="zero"):
    """Correct scaled dot-product attention (stable softmax); returns (output, weights)."""
    return _finish(q @ _t(k) / math.sqrt(q.shape[-1]), mask, v, dead=dead)


def causal(n_q, n_k=None):
    n_k = n_q if n_k is None else n_k
    return torch.arange(n_q)[:, None] >= torch.arange(n_k)[None, :]  # top-left aligned


def padding(lengths, n):
    return (torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None])[:, None, :]


# ---- attention hypotheses: bug id -> variants fn(q, k, v, mask) -> output -------------------------


def _scaled(scale):
    return lambda q, k, v, mask: _finish(q @ _t(k) * scale(q, k, v), mask, v)[0]


def _causal_and(dead):
    """Attention under a causal triangle of its own and the given mask together; ``dead``: what a row
    they block entirely gives (see :func:`_finish`)."""
    def attend(q, k, v, m):
        return attention(q, k, v, causal(q.shape[-2], k.shape[-2]) & (True if m is None else m), dead=dead)[0]
    return attend


def _low_precision_softmax(dtype, fill_first):
    """The softmax taken in a smaller dtype than the scores' (scores.half().softmax(-1).float()): the
    course's finfo(float32).min fill first (it rounds to -inf in float16: a fully masked row NaN), or
    the cast first and that dtype's own minimum (a fully masked row uniform)."""
    def variant(q, k, v, m):
        scores = q @ _t(k) / math.sqrt(q.shape[-1])
        if fill_first:
            small = _fill(scores, m, _MIN).to(dtype)
        else:
            small = _fill(scores.to(dtype), m, torch.finfo(dtype).min)
        return torch.softmax(small, dim=-1).to(scores.dtype) @ v

    return variant


def _fills(make):
    """The same variant with a -inf fill (a fully masked row NaN, or zero as PyTorch's fused function
    gives) and a finite finfo.min fill (a fully masked row uniform)."""
    return [make((-_INF, "nan")), make((-_INF, "zero")), make((_MIN, "uniform"))]


def _softmax_axis(axis, fill):
    def variant(q, k, v, mask):
        if axis >= q.dim() and axis != -2:
            raise IndexError("no such axis")
        weights = _softmax(_fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill), dim=axis)
        return weights @ v

    return variant


def _softmax_shifted_by_row(axis, fill):
    """A softmax by hand, shifted by each row's max (over the keys) but summed over ``axis``."""

    def variant(q, k, v, mask):
        scores = _fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill)
        e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
        return (e / e.sum(dim=axis, keepdim=True)) @ v

    return variant


def _softmax_no_dim(fill):
    """F.softmax(scores) with no dim: PyTorch picks dim 0 for 0-, 1- and 3-D scores, dim 1 otherwise
    (right for 2-D scores, the batch or the heads for batched ones), and warns."""

    def variant(q, k, v, mask):
        scores = _fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill)
        return _softmax(scores, dim=0 if scores.dim() in (0, 1, 3) else 1) @ v

    return variant


def _normalised(normalise, fill):
    def variant(q, k, v, mask):
        return normalise(_fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill)) @ v

    return variant


def _sum_not_kept(shift, fill):
    """A softmax by hand whose row sums lose their axis (e / e.sum(-1), no keepdim): each entry is divided
    by another row's sum, when the shapes broadcast at all. ``shift``: none, the row max, or the row max
    without keepdim either."""

    def variant(q, k, v, mask):
        scores = _fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill)
        if shift:
            scores = scores - scores.amax(dim=-1, keepdim=shift == "kept")
        e = _exp(scores)
        return (e / e.sum(dim=-1)) @ v

    return variant


def _softmax_twice(fill, dead):
    """Correct weights (each fill and dead row), then a second softmax over the keys of the weights."""
    def variant(q, k, v, mask):
        weights = _finish(q @ _t(k) / math.sqrt(q.shape[-1]), mask, v, fill=fill, dead=dead)[1]
        return _softmax(weights, dim=-1) @ v

    return variant


def _rsqrt_dk(q, k, v):
    return 1 / math.sqrt(q.shape[-1])


def _mask_read(how):
    """Correct attention on a mask changed by ``how`` first (inverted, transposed, ...), each fill."""
    return _fills(
        lambda f: lambda q, k, v, m: _finish(
            q @ _t(k) / math.sqrt(q.shape[-1]), None if m is None else how(m), v, fill=f[0], dead=f[1]
        )[0]
    )


def _additive(term):
    def variant(q, k, v, mask):
        scores = q @ _t(k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores + term(mask.to(scores.dtype))
        return _softmax(scores, dim=-1) @ v

    return variant


def _after_softmax(how):
    def variant(q, k, v, mask):
        weights = _softmax(q @ _t(k) / math.sqrt(q.shape[-1]), dim=-1)
        if mask is not None:
            weights = how(weights, mask)
        return weights @ v

    return variant


ATTENTION_VARIANTS = {
    "missing_scale": _fills(lambda f: lambda q, k, v, m: _finish(q @ _t(k), m, v, fill=f[0], dead=f[1])[0]),
    "scale_multiplied": [
        _scaled(lambda q, k, v: math.sqrt(q.shape[-1])),
        _scaled(lambda q, k, v: q.shape[-1]),
    ],
    "wrong_scale": [
        _scaled(lambda q, k, v: 1 / q.shape[-1]),  # / d_k
        _scaled(lambda q, k, v: 1 / math.sqrt(v.shape[-1])),  # / √d_v
        _scaled(lambda q, k, v: 1 / math.sqrt(k.shape[-2])),  # / √n_k
        _scaled(lambda q, k, v: 1 / math.sqrt(q.shape[-2])),  # / √n_q
        _scaled(lambda q, k, v: 2 / q.shape[-1]),  # / (d_k ** 1/2)
        _scaled(lambda q, k, v: 1 / (2 * q.shape[-1])),  # / d_k ** 1 / 2
        _scaled(lambda q, k, v: 1 / 2),
        _scaled(lambda q, k, v: 1 / 4),  # a stale global d_k = 4 (or √16)
        # 02's global d_k = 8, left over: / √d_k, / d_k, and / d_k ** 1/2 (read as / d_k / 2)
        _scaled(lambda q, k, v: 1 / math.sqrt(8)),
        _scaled(lambda q, k, v: 1 / 8),
        _scaled(lambda q, k, v: 1 / 16),
        _scaled(lambda q, k, v: 1 / 32),  # a stale d_k = 16 the same way
    ],
    "scale_after_softmax": [
        lambda q, k, v, m: _finish(q @ _t(k), m, v)[1] / math.sqrt(q.shape[-1]) @ v,
        lambda q, k, v, m: _finish(q @ _t(k), m, v)[1] / q.shape[-1] @ v,
    ],
    "softmax_wrong_axis": [_softmax_axis(axis, fill) for axis in (-2, 0, 1) for fill in (-_INF, _MIN)]
    + [_softmax_shifted_by_row(-2, _MIN)]
    + [_softmax_no_dim(fill) for fill in (-_INF, _MIN)],
    "scores_transposed": _fills(
        lambda f: (
            lambda q, k, v, m: _finish(k @ _t(q) / math.sqrt(q.shape[-1]), m, v, fill=f[0], dead=f[1])[0]
        )
    )
    + [
        lambda q, k, v, m: (
            _t(_finish(k @ _t(q) / math.sqrt(q.shape[-1]), None if m is None else _t(m), v)[1]) @ v
        )
    ],
    "missing_key_transpose": _fills(
        lambda f: lambda q, k, v, m: _finish(q @ k / math.sqrt(q.shape[-1]), m, v, fill=f[0], dead=f[1])[0]
    ),
    "key_reshaped_not_transposed": _fills(   # k.reshape(..., d_k, n_k) or a view: sizes swapped, not axes
        lambda f: lambda q, k, v, m: _finish(
            q @ k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2]) / math.sqrt(q.shape[-1]), m, v, fill=f[0],
            dead=f[1])[0]
    ),
    "mask_inverted": _mask_read(lambda m: ~m) + [_additive(lambda m: m * -1e9)],
    "softmax_low_precision": [_low_precision_softmax(dtype, first)
                              for dtype in (torch.float16, torch.bfloat16) for first in (True, False)],
    "mask_ignored": [lambda q, k, v, m: attention(q, k, v)[0]],
    "weights_transposed": _fills(   # weights.mT @ v, or an einsum summing over the queries' index
        lambda f: (
            lambda q, k, v, m: _t(
                _finish(q @ _t(k) / math.sqrt(q.shape[-1]), m, v, fill=f[0], dead=f[1])[1]
            ) @ v
        )
    ),
    "mask_transposed": _mask_read(_t),
    "mask_axis_misplaced": _mask_read(lambda m: m.unsqueeze(1)),   # (n, n) -> (n, 1, n): n against the heads
    "mask_replaced_by_causal": [    # always (is_causal=True), or wherever a mask is given
        lambda q, k, v, m: attention(q, k, v, causal(q.shape[-2], k.shape[-2]))[0],
        lambda q, k, v, m: attention(q, k, v, None if m is None else causal(q.shape[-2], k.shape[-2]))[0],
    ],
    "causal_when_no_mask": [
        lambda q, k, v, m: attention(q, k, v, causal(q.shape[-2], k.shape[-2]) if m is None else m)[0]
    ],
    "causal_added_to_mask": [       # a causal buffer of its own (nanoGPT's), and the mask given on top;
        _causal_and(dead) for dead in ("uniform", "zero", "nan")   # the rows the two block together
    ],
    "mask_after_softmax": [
        _after_softmax(lambda w, m: w * m),
        _after_softmax(lambda w, m: w.masked_fill(~m, -_INF)),
        _after_softmax(lambda w, m: w.masked_fill(~m, _MIN)),
    ],
    "mask_fill_zero": [
        lambda q, k, v, m: _finish(q @ _t(k) / math.sqrt(q.shape[-1]), m, v, fill=0.0)[0],
        lambda q, k, v, m: _softmax(q @ _t(k) / math.sqrt(q.shape[-1]) * (1 if m is None else m), dim=-1) @ v,
    ],
    "additive_mask_wrong": [
        _additive(lambda m: m),
        _additive(lambda m: 1 - m),
        _additive(lambda m: (1 - m) * -_INF),
        _additive(lambda m: m * -_INF),
        _additive(lambda m: (1 - m) * 1e9),
        _additive(lambda m: m * _INF),
    ],
    "forgot_values": [
        lambda q, k, v, m, f=f, d=d: _finish(q @ _t(k) / math.sqrt(q.shape[-1]), m, v, fill=f, dead=d)[1]
        for f in (-_INF, _MIN)
        for d in ("zero", "uniform")
    ],
    "weights_not_normalised": [
        _normalised(lambda s: s, 0.0),
        _normalised(lambda s: s, _MIN),
        _normalised(lambda s: _log_softmax(s, dim=-1), _MIN),
        _normalised(lambda s: _log_softmax(s, dim=-1), -_INF),
        _normalised(_sigmoid, -_INF),
        _normalised(_sigmoid, _MIN),
        _normalised(_exp, -_INF),
        _normalised(_exp, _MIN),
        _normalised(lambda s: _exp(s - s.amax(dim=-1, keepdim=True)), _MIN),
        _normalised(lambda s: _exp(s - s.amax(dim=-1, keepdim=True)), -_INF),
    ],
    "softmax_sum_not_kept": [
        _sum_not_kept(shift, fill) for shift in ("kept", None, "lost") for fill in (_MIN, -_INF)
    ],
    "softmax_applied_twice": _fills(lambda f: _softmax_twice(*f)),
    "keys_values_swapped": [
        lambda q, k, v, m: _finish(q @ _t(v) / math.sqrt(q.shape[-1]), m, k)[0],
        lambda q, k, v, m: attention(q, k, k, m)[0],
        lambda q, k, v, m: attention(q, v, v, m)[0],
    ],
    "queries_keys_swapped": [
        lambda q, k, v, m: attention(k, q, v, None if m is None else _t(m))[0],
        lambda q, k, v, m: attention(q, q, v, m)[0],
    ],
}


# ---- multi-head: x (batch, n, d_model), weights {W_q, W_k, W_v, W_o} (nn.Linear layout) -----------


def _split(x, h):
    batch, n, d_model = x.shape
    return x.reshape(batch, n, h, d_model // h).transpose(1, 2)  # (batch, h, n, d_k)


def _merge(x):
    batch, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, n, h * d_k)


def _project(x, weight):
    return x @ weight.T


def multi_head(
    x, weights, h, mask=None, *, attend=None, split=_split, merge=_merge, project_out=True, dead="zero",
    untransposed=(), split_only=None,
):
    """Multi-head self-attention with the given parts; ``attend(q, k, v, mask) -> output``;
    ``untransposed``: the projections computed as x @ weight (the bug), not x @ weight.T;
    ``split_only``: the projections ``split`` is used for (the others are split right; None: all)."""
    attend = attend or (lambda q, k, v, m: attention(q, k, v, m, dead=dead)[0])

    def project(t, name):
        return t @ weights[name] if name in untransposed else _project(t, weights[name])

    def split_of(name):
        return split if split_only is None or name in split_only else _split

    q, k, v = (split_of(name)(project(x, name), h) for name in ("W_q", "W_k", "W_v"))
    out = merge(attend(q, k, v, mask))
    return project(out, "W_o") if project_out else out


def _split_no_transpose(x, h):
    batch, n, d_model = x.shape
    return x.reshape(batch, h, n, d_model // h)


def _merge_no_transpose(x):
    batch, h, n, d_k = x.shape
    return x.reshape(batch, n, h * d_k)


def _merge_last_axes_swapped(x):  # transpose(-2, -1) where transpose(1, 2) belongs, then flattened
    batch, h, n, d_k = x.shape
    return x.transpose(-2, -1).reshape(batch, n, h * d_k)


def _merge_without(head):
    """A merge that leaves one head out (its d_k features zeros): a loop over the heads that misses
    the first (range(1, n_heads)) or the last (range(n_heads - 1)) and writes into zeros."""
    def merge(x):
        kept = torch.ones(x.shape[1], dtype=x.dtype)
        kept[head] = 0
        return _merge(x * kept[:, None, None])
    return merge


def _split_overlapping(x, h):  # head i gets features i .. i + d_k - 1 (h:h + d_k): neighbours overlap
    batch, n, d_model = x.shape
    d_k = d_model // h
    return torch.stack([x[..., i:i + d_k] for i in range(h)], dim=1)


def _split_interleaved(x, h):  # (batch, n, d_k, h): head i gets features i, i + h, i + 2h, ...
    batch, n, d_model = x.shape
    return x.reshape(batch, n, d_model // h, h).permute(0, 3, 1, 2)


def _merge_interleaved(x):  # (batch, n, d_k, h) flattened: feature j of head i lands at j * h + i
    batch, h, n, d_k = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, n, d_k * h)


def _heads_last(x, h):  # (batch, n, h, d_k): attention runs across the heads
    batch, n, d_model = x.shape
    return x.reshape(batch, n, h, d_model // h)


def _merge_heads_last(x):
    batch, n, h, d_k = x.shape
    return x.reshape(batch, n, h * d_k)


def _averaged_pattern(x, weights, h, mask, dead):
    q, k = (_split(_project(x, weights[name]), h) for name in ("W_q", "W_k"))
    pattern = _finish(q @ _t(k) / math.sqrt(q.shape[-1]), mask, q, dead=dead)[1].mean(dim=1)  # (batch, n, n)
    return _project(pattern @ _project(x, weights["W_v"]), weights["W_o"])


def _averaged_outputs(x, weights, h, mask, dead):
    q, k, v = (_split(_project(x, weights[name]), h) for name in ("W_q", "W_k", "W_v"))
    out = attention(q, k, v, mask, dead=dead)[0].mean(dim=1)  # (batch, n, d_k)
    return _project(out.repeat(1, 1, h), weights["W_o"])


def _averaged_scores(x, weights, h, mask, dead):
    q, k = (_split(_project(x, weights[name]), h) for name in ("W_q", "W_k"))
    scores = (q @ _t(k)).mean(dim=1) / math.sqrt(q.shape[-1])  # (batch, n, n)
    return _project(
        _finish(scores, mask, _project(x, weights["W_v"]), fill=_MIN, dead=dead)[0], weights["W_o"]
    )


def _one_head(scale_by_d_model):
    def variant(x, weights, h, mask, dead):
        q, k, v = (_project(x, weights[name]) for name in ("W_q", "W_k", "W_v"))
        d = x.shape[-1] if scale_by_d_model else x.shape[-1] // h
        return _project(_finish(q @ _t(k) / math.sqrt(d), mask, v, dead=dead)[0], weights["W_o"])

    return variant


def _with_scale(scale):
    def variant(x, weights, h, mask, dead):
        return multi_head(
            x,
            weights,
            h,
            mask,
            attend=lambda q, k, v, m: _finish(q @ _t(k) * scale(x, h), m, v, dead=dead)[0],
        )

    return variant


def _swapped_heads(learners_scale):
    """Split as (batch, n, d_k, h): d_k heads of h features each; the scale the learner's √d_k, or the
    √h of the tensor's own width."""
    def variant(x, weights, h, mask, dead):
        d_k = x.shape[-1] // h

        def attend(q, k, v, m):
            scale = 1 / math.sqrt(d_k) if learners_scale else 1 / math.sqrt(q.shape[-1])
            return _finish(q @ _t(k) * scale, m, v, fill=_MIN, dead=dead)[0]

        return multi_head(x, weights, d_k, mask, attend=attend, dead=dead)

    return variant


def _normed(where):
    """Multi-head attention with a LayerNorm (no scale or shift) on its output, its input or x + output."""
    def variant(x, weights, h, mask, dead):
        def norm(t):
            return F.layer_norm(t, t.shape[-1:])
        if where == "input":
            return multi_head(norm(x), weights, h, mask, dead=dead)
        out = multi_head(x, weights, h, mask, dead=dead)
        return norm(out) if where == "output" else norm(x + out)

    return variant


def _positions_split(scale_by_d_model):
    """Heads cut from the positions (q.chunk(h, dim=1)): each a block of positions with every feature."""
    def variant(x, weights, h, mask, dead):
        q, k, v = (_project(x, weights[name]).chunk(h, dim=1) for name in ("W_q", "W_k", "W_v"))
        d = x.shape[-1] if scale_by_d_model else x.shape[-1] // h
        outs = [_finish(a @ _t(b) / math.sqrt(d), mask, c, dead=dead)[0]
                for a, b, c in zip(q, k, v, strict=True)]
        return _project(torch.cat(outs, dim=1), weights["W_o"])

    return variant


def _parts(**parts):
    return lambda x, weights, h, mask, dead: multi_head(x, weights, h, mask, dead=dead, **parts)


MULTI_HEAD_VARIANTS = {
    "heads_split_without_transpose": [
        _parts(split=_split_no_transpose),
        _parts(split=_split_no_transpose, merge=_merge_no_transpose),
        _parts(split=_heads_last, merge=_merge_heads_last),
        # the transpose forgotten for one of the three only (written out per tensor)
        *(_parts(split=_split_no_transpose, split_only=(name,)) for name in ("W_q", "W_k", "W_v")),
    ],
    "heads_merged_without_transpose": [_parts(merge=_merge_no_transpose),
                                       _parts(merge=_merge_last_axes_swapped)],
    "heads_merged_interleaved": [_parts(merge=_merge_interleaved)],
    "heads_split_interleaved": [_parts(split=_split_interleaved, merge=_merge_interleaved),
                                _parts(split=_split_interleaved)],
    "heads_overlap": [_parts(split=_split_overlapping)],
    "head_left_out": [_parts(merge=_merge_without(-1)), _parts(merge=_merge_without(0))],
    "heads_split_along_positions": [_positions_split(False), _positions_split(True)],
    "weight_not_transposed": [_parts(untransposed=("W_q", "W_k", "W_v", "W_o")),
                              _parts(untransposed=("W_q", "W_k", "W_v"))],
    "heads_count_and_width_swapped": [_swapped_heads(True), _swapped_heads(False)],
    "residual_added": [lambda x, weights, h, mask, dead: x + multi_head(x, weights, h, mask, dead=dead)],
    # x read as (n, batch, d_model), nn.MultiheadAttention's default layout: attention across the batch
    "sequence_first_input": [lambda x, weights, h, mask, dead: multi_head(x.transpose(0, 1), weights, h, mask,
                                                                         dead=dead).transpose(0, 1)],
    "layer_norm_added": [_normed("output"), _normed("input"), _normed("sum")],
    "heads_averaged": [_averaged_pattern, _averaged_outputs, _averaged_scores],
    "heads_not_split": [_one_head(False), _one_head(True)],
    "scale_by_d_model": [_with_scale(lambda x, h: 1 / math.sqrt(x.shape[-1]))],
    "missing_output_projection": [
        _parts(project_out=False),
        # W_o applied to the values before the split (v = W_o(W_v(x))) and not to the merged heads
        lambda x, weights, h, mask, dead: multi_head(
            x, {**weights, "W_v": weights["W_o"] @ weights["W_v"]}, h, mask, project_out=False, dead=dead),
    ],
}
"""Structural multi-head bugs; each attention bug above, run inside correct multi-head attention, is
tried as well (the checker adds those)."""


def _scaled_by_d_model_too(axis=-1, fill=-_INF, **parts):
    """A structural bug (``parts`` as for :func:`multi_head`), or the softmax over ``axis`` where it is not
    -1 (blocked scores filled with ``fill``), with the scores divided by √d_model as well."""
    def variant(x, weights, h, mask, dead):
        scale = 1 / math.sqrt(x.shape[-1])

        def attend(q, k, v, m):
            if axis == -1:
                return _finish(q @ _t(k) * scale, m, v, dead=dead)[0]
            return _softmax(_fill(q @ _t(k) * scale, m, fill), dim=axis) @ v

        return multi_head(x, weights, h, mask, dead=dead, **parts, attend=attend)

    return variant


SCALE_BY_D_MODEL_TOO = {
    "heads_split_without_transpose": [
        _scaled_by_d_model_too(split=_split_no_transpose),
        _scaled_by_d_model_too(split=_split_no_transpose, merge=_merge_no_transpose),
    ],
    "heads_merged_without_transpose": [_scaled_by_d_model_too(merge=_merge_no_transpose),
                                       _scaled_by_d_model_too(merge=_merge_last_axes_swapped)],
    "heads_merged_interleaved": [_scaled_by_d_model_too(merge=_merge_interleaved)],
    "weight_not_transposed": [_scaled_by_d_model_too(untransposed=("W_q", "W_k", "W_v", "W_o"))],
    "missing_output_projection": [_scaled_by_d_model_too(project_out=False)],
    # replay 22's 05Y1: math.sqrt(d_model) and softmax(dim=-2), told it matched no known bug
    "softmax_wrong_axis": [_scaled_by_d_model_too(axis=-2, fill=fill) for fill in (-_INF, _MIN)],
}
"""Two known bugs at once: a structural one of :data:`MULTI_HEAD_VARIANTS`, or the softmax over the
queries, with scale_by_d_model, the commonest mistake of multi-head code (replay 20's 05W1 was told its
pair matched no known bug)."""


# ---- decoding: one cached step of a TinyGPT, from its public pieces --------------------------------
#
# ``model`` is anything with the agreed pieces (a TinyGPT or its StepModel view): ``embed(tokens,
# start)``, ``blocks[i]`` with ``norm_attention``, ``attention.W_q/W_k/W_v/W_o``, ``norm_mlp``, ``mlp``,
# ``unembed(x)`` and the sizes ``n_heads``, ``n_kv_heads``. The cache is None or a list of
# ``(keys, values)`` per layer, each ``(batch, n_kv_heads, positions, d_head)``. Each keyword of
# :func:`decode` is one thing a learner may do wrong; the defaults are the correct step.


def _decoding_mask(how, n_new, n_all, cached, past=None):
    """Bool (n_new, n_all), True = may attend, or None for no mask; ``how`` names the learner's choice,
    ``past`` the number of cached positions the learner counted (by default the true one)."""
    ones = torch.ones(n_new, n_all, dtype=torch.bool)
    past = n_all - n_new if past is None else past
    masks = {
        "bottom_right": lambda: ones.tril(past),
        "top_left": lambda: ones.tril(),                              # is_causal=True, or tril() by hand
        "none_for_one": lambda: None if n_new == 1 else ones.tril(),  # no mask for one, is_causal for several
        "prefill_only": lambda: None if cached else ones.tril(past),
        "none": lambda: None,
        "off_by_one": lambda: ones.tril(past + 1),
        "excludes_self": lambda: ones.tril(past - 1),
        "excludes_self_cached": lambda: ones.tril(past - 1) if cached else ones.tril(past),
        "future_visible": lambda: ones.triu(past),
        "offset_negated": lambda: ones.tril(-past),                  # tril(n_new - n_all)
        "cached_last": lambda: torch.cat([ones[:, :n_new].tril(), ones[:, n_new:]], dim=1),  # pieces swapped
        # the cached columns padded with False: the new queries see each other, never the cache
        "cache_hidden": lambda: torch.cat([~ones[:, :past], ones[:, past:].tril()], dim=1),
    }
    return masks[how]()


def _expand(how, tensor, group):
    """The key/value heads shared by ``group`` query heads each: head i uses kv head i // group."""
    if how == "repeat":                              # the bug: head i gets kv head i % n_kv_heads
        return tensor.repeat(1, group, 1, 1)
    return tensor.repeat_interleave(group, dim=1)


def decode(model, tokens, cache, *, attend=None, split=_split, merge=_merge, project_out=True,
           expand="interleave", causal_mask="bottom_right", advance=True, keep="appended", scale=None,
           final_norm=True, attend_new=True, at=None, projected="normed", residual="x", mlp="x",
           values_from="values", layer_read="own", kept_in=None, norms="own", blocks=None, buffer=False,
           counter=None, piece=None, stored_in=None, block_read="own", counted=None,
           counted_in_mask=True, twice=None):
    """The reference cached step ``(logits (batch, n_new, vocab), new cache)``; see the section note.

    ``attend(q, k, v, mask) -> output`` (default: :func:`attention`, with ``scale`` if given);
    ``keep``: what the returned cache holds ('appended', or the bugs 'given': the cache it was given,
    'newest': this step's keys and values only, 'swapped': (values, keys), read back as keys first);
    ``advance``: True (positions continue after the cache), False (they restart at 0), a number added
    to the first position once there is a cache (the bug of a position one off) or "none" (once
    there is a cache, the token embedding alone: "the positions are in the cache");
    ``final_norm``: False for logits read without the final LayerNorm (the unembedding alone), or
    'twice' (model.norm_final applied, then model.unembed, which applies it again);
    ``attend_new``: False for new queries that attend to the cache they were given without this
    step's keys and values (which still go into the returned cache);
    ``at``: the first position, whatever the cache (the bug of a chunk fed a token at a time, each at
    the chunk's first position);
    ``projected``: what W_q, W_k and W_v read: 'normed' (norm_attention(x)), or the bugs 'raw_v' (values
    from x), 'raw' (x for
    all three), 'raw_kv' (keys and values from x), 'raw_q' (queries from x);
    ``residual``: what attention's output is added to: 'x', or the bugs 'none' (x is replaced) and
    'normed' (x = norm_attention(x) first);
    ``mlp``: 'x' (x + mlp(norm_mlp(x))), or the bugs 'none' (x = mlp(norm_mlp(x))), 'normed'
    (x = norm_mlp(x), then x + mlp(x)), 'unnormed' (x + mlp(x)), 'skipped' (no MLP at all) and
    'parallel' (the MLP reads the block's input, not the stream attention wrote to) and
    'attention_dropped' (the MLP reads the stream attention wrote to, but its output is added to the
    block's input: attention's output feeds the MLP and leaves the stream);
    ``values_from``: 'values', or the bugs 'keys' (the cached keys read back in place of the values)
    and 'new_keys' (this step's keys joined to the cached values in place of its values);
    ``layer_read``: 'own' (cache[layer]), or the bugs 'shared' (every layer appends to entry 0 and
    attends to all it holds: a layer index that never advances), 'first' (every layer reads cache[0]), 'last'
    (every layer reads the last layer's entry: a cache list built as [[None, None]] * n_layers, one
    list aliased) and 'reversed' (layer i reads layer n_layers - 1 - i's: entries read back with pop()),
    or a tuple with, for each layer, the two entries ``((layer, kind), (layer, kind))`` it reads as its
    cached keys and values (kind 0 keys, 1 values: the bug of a cache read at the wrong index);
    ``blocks``: None (every block), or the bug of a number of blocks (1: a return inside the loop);
    ``block_read``: 'own', or the bugs 'first_attention' (every layer's norm_attention and attention
    are block 0's: a line of a cell that worked on model.blocks[0], pasted into the loop) and 'first'
    (every layer runs block 0 whole);
    ``buffer``: False, or the bug of attending to a whole preallocated buffer: the keys and values
    padded with zeros to ``model.max_len`` positions, the bottom-right mask over all of them;
    ``kept_in``: None, or the bug of a lower precision (torch.bfloat16, torch.float16) that this
    step's keys and values are rounded to as they are made; ``stored_in``: the same, for the keys and
    values kept in the returned cache only (this step attends to its own unrounded);
    ``norms``: 'own', or the bugs 'mlp_for_attention' (norm_mlp before attention), 'attention_for_mlp'
    (norm_attention before the MLP), 'swapped' (both) and 'final_for_mlp' (model.norm_final before the
    MLP);
    ``twice``: None, or the bug of an embedding added again on top of model.embed (which adds the token
    and the position embeddings): 'positions' or 'tokens';
    ``counted``: None, or the bug of the cached length read from the wrong place, ``counted(model,
    cache)`` (the number of key/value heads from axis 1, of layers from len(cache), ...), used once
    there is a cache as the new tokens' first position and, if ``counted_in_mask``, as the mask's
    offset too.

    On a prefill only (``cache`` None; these bugs are named from the prefills):
    ``counter``: None, or the bugs of a position counter shared by the layers and advanced inside
    their loop, 'mask_rows' (layer i slices its causal mask's rows from i * n_new, out of a
    max_len x max_len mask) and 'slots' (layer i writes to and reads from a buffer of zeros from
    slot i * n_new on, the slots before it empty), and of a counter advanced before the write,
    'before_write' (the slots attended hold zeros: this step's keys and values went after them);
    ``piece``: None, or the bug of a prompt prefilled ``piece`` tokens at a time, each piece
    attending to its own keys and values only.
    """
    if attend is None:
        def attend(q, k, v, m):
            return _finish(q @ _t(k) * (scale or 1 / math.sqrt(q.shape[-1])), m, v)[0]
    past = 0 if cache is None else cache[0][0].shape[-2]
    n_new = tokens.shape[1]
    miscounted = None if counted is None or cache is None else counted(model, cache)
    if miscounted is not None:                                          # the learner's own past
        at = miscounted
    if advance == "none":                                               # no position embedding once cached
        start = past
    else:
        start = past if advance is True else 0 if advance is False or cache is None else past + advance
    x = model.embed(tokens, start if at is None else at)                # (batch, n_new, d_model)
    if twice == "positions":                                            # model.embed has them already
        x = x + model.position_embedding(torch.arange(start, start + n_new))
    elif twice == "tokens":
        x = x + model.token_embedding(tokens)
    if advance == "none" and cache is not None:
        x = model.token_embedding(tokens)
    h, h_kv = model.n_heads, model.n_kv_heads
    kept = []
    for layer, own in enumerate(model.blocks if blocks is None else model.blocks[:blocks]):
        block = own if block_read == "own" else model.blocks[0]                # its attention half
        later = own if block_read == "first_attention" else block              # its MLP half
        norm_attention, norm_mlp = block.norm_attention, later.norm_mlp
        if norms in ("mlp_for_attention", "swapped"):
            norm_attention = block.norm_mlp
        if norms in ("attention_for_mlp", "swapped"):
            norm_mlp = block.norm_attention
        if norms == "final_for_mlp":
            norm_mlp = model.norm_final
        block_input, normed, parts = x, norm_attention(x), block.attention
        if residual == "normed":
            x = normed
        for_q = x if projected in ("raw", "raw_q") else normed
        for_k = x if projected in ("raw", "raw_kv") else normed
        for_v = x if projected in ("raw", "raw_kv", "raw_v") else normed
        query = split(parts.W_q(for_q), h)                              # (batch, h, n_new, d)
        key, value = split(parts.W_k(for_k), h_kv), split(parts.W_v(for_v), h_kv)
        if kept_in is not None:
            key, value = key.to(kept_in).to(key.dtype), value.to(kept_in).to(value.dtype)
        entries = layer_read[layer] if isinstance(layer_read, tuple) else None   # ((layer, kind), ...)
        read = layer if entries else {"own": layer, "first": 0, "shared": 0, "last": len(model.blocks) - 1,
                                      "reversed": len(model.blocks) - 1 - layer}[layer_read]
        if layer_read == "shared" and layer > 0:                        # the entry the last layer grew
            cache = kept[-1:]
        if cache is not None:
            past_keys, past_values = cache[read][0], cache[read][0 if values_from == "keys" else 1]
            if entries:
                (key_layer, key_kind), (value_layer, value_kind) = entries
                past_keys, past_values = cache[key_layer][key_kind], cache[value_layer][value_kind]
            key_all = torch.cat([past_keys, key], dim=-2)               # (batch, h_kv, n_all, d)
            value_all = torch.cat([past_values, key if values_from == "new_keys" else value], dim=-2)
        else:
            key_all, value_all = key, value
        given = (key, value) if cache is None else cache[read]
        kept.append({"appended": (key_all, value_all), "given": given, "newest": (key, value),
                     "swapped": (value_all, key_all)}[keep])
        if stored_in is not None:                                       # rounded as it is kept
            kept[-1] = tuple(t.to(stored_in).to(t.dtype) for t in kept[-1])
        seen_keys, seen_values = (key_all, value_all) if attend_new or cache is None else cache[read]
        if buffer:                                                      # the empty slots: zeros
            free = (0, 0, 0, model.max_len - seen_keys.shape[-2])
            seen_keys, seen_values = F.pad(seen_keys, free), F.pad(seen_values, free)
        offset = miscounted if counted_in_mask else None
        mask = _decoding_mask(causal_mask, n_new, seen_keys.shape[-2], cache is not None, offset)
        if cache is None and (counter or piece):
            seen_keys, seen_values, mask = _prefill_bug(counter, piece, layer, model.max_len,
                                                        seen_keys, seen_values, mask)
        group = h // h_kv
        heads = attend(query, _expand(expand, seen_keys, group), _expand(expand, seen_values, group), mask)
        mixed = merge(heads)                                            # (batch, n_new, d_model)
        out = parts.W_o(mixed) if project_out else mixed
        x = out if residual == "none" else x + out
        x = _add_mlp(mlp, later.mlp, norm_mlp, x, block_input)
    if layer_read == "shared":                                          # one entry, every layer's in it
        kept = kept[-1:]
    if final_norm == "twice":
        x = model.norm_final(x)
    return (model.unembed(x) if final_norm else model.unembedding(x)), kept


def _prefill_bug(counter, piece, layer, max_len, keys, values, mask):
    """What a prefill's queries attend to with one of :func:`decode`'s prefill-only bugs."""
    n_new = keys.shape[-2]
    if counter == "before_write":                                       # the slots read: still empty
        return torch.zeros_like(keys), torch.zeros_like(values), mask
    if counter == "mask_rows":                                          # rows layer * n_new on
        causal = torch.ones(max_len, max_len, dtype=torch.bool).tril()
        rows = causal[layer * n_new:(layer + 1) * n_new, :n_new]
        if rows.shape[0] != n_new:
            raise IndexError("the mask's rows ran past max_len")
        return keys, values, rows
    if counter == "slots":                                              # zeros, then this layer's own
        empty = (0, 0, layer * n_new, 0)
        if (layer + 1) * n_new > max_len:
            raise IndexError("the slots ran past max_len")
        ones = torch.ones(n_new, (layer + 1) * n_new, dtype=torch.bool)
        return F.pad(keys, empty), F.pad(values, empty), ones.tril(layer * n_new)
    where = torch.arange(n_new) // piece                                # each position's piece
    return keys, values, mask & (where[:, None] == where[None, :])


def _add_mlp(how, mlp, norm, x, block_input):
    """The block's second half, as the learner wrote it (``how``: see :func:`decode`)."""
    if how == "none":
        return mlp(norm(x))
    if how == "skipped":
        return x
    if how == "normed":
        x = norm(x)
        return x + mlp(x)
    if how == "unnormed":
        return x + mlp(x)
    if how == "parallel":
        return x + mlp(norm(block_input))
    if how == "attention_dropped":
        return block_input + mlp(norm(x))
    return x + mlp(norm(x))


def _per_token_at_one_position(model, tokens, cache):
    """A chunk fed one token at a time, every token embedded at the chunk's first position."""
    past = 0 if cache is None else cache[0][0].shape[-2]
    pieces = []
    for i in range(tokens.shape[1]):
        logits, cache = decode(model, tokens[:, i:i + 1], cache, at=past)
        pieces.append(logits)
    return torch.cat(pieces, dim=1), cache


def _step(**choices):
    return lambda model, tokens, cache: decode(model, tokens, cache, **choices)


def _dead(how):
    """attention whose fully masked rows give NaN, zeros or a uniform blend (the learner's fill)."""
    fill = _MIN if how == "uniform" else -_INF
    return lambda q, k, v, m: _finish(q @ _t(k) / math.sqrt(q.shape[-1]), m, v, fill=fill, dead=how)[0]


def _masks(how):
    return [_step(causal_mask=how, attend=_dead(dead)) for dead in ("nan", "zero", "uniform")]


def _scaled_by_kv_head_width(model, tokens, cache):
    """√(d_model // n_kv_heads): a key/value head's width, not a query head's, with grouped queries."""
    return decode(model, tokens, cache, scale=1 / math.sqrt(model.d_model // model.n_kv_heads))


_MISCOUNTS = (
    lambda model, cache: cache[0][0].shape[1],                          # axis 1: the key/value heads
    lambda model, cache: len(cache),                                    # the number of layers
    lambda model, cache: cache[0][0].shape[0],                          # axis 0: the batch
    lambda model, cache: len(cache[0]),                                 # 2: a layer's keys and values
)
"""Where a learner may read the number of cached positions from instead of axis -2 of the keys."""

_STEP_ONLY = {"wrong_scale": [_scaled_by_kv_head_width]}   # attention bugs' variants that need the model

PREFILL_VARIANTS = {
    bug_id: [_step(attend=fn) for fn in fns] + _STEP_ONLY.get(bug_id, [])
    for bug_id, fns in ATTENTION_VARIANTS.items()
    # with no mask argument, a step that never masks is causal_mask_missing; a causal mask is right here
    if bug_id not in ("mask_ignored", "mask_replaced_by_causal", "causal_added_to_mask")
} | {
    "heads_split_without_transpose": [
        _step(split=_split_no_transpose),
        _step(split=_split_no_transpose, merge=_merge_no_transpose),
        _step(split=_heads_last, merge=_merge_heads_last),
    ],
    "heads_merged_without_transpose": [_step(merge=_merge_no_transpose)],
    "heads_merged_interleaved": [_step(merge=_merge_interleaved)],
    "missing_output_projection": [_step(project_out=False)],
    "scale_by_d_model": [
        lambda model, tokens, cache: decode(model, tokens, cache, scale=1 / math.sqrt(model.d_model))
    ],
    "kv_heads_repeated_not_interleaved": [_step(expand="repeat")],
    "embedding_added_twice": [_step(twice="positions"), _step(twice="tokens")],
    "final_norm_skipped": [_step(final_norm=False)],
    "final_norm_twice": [_step(final_norm="twice")],
    "first_block_reused": [_step(block_read="first_attention"), _step(block_read="first")],
    "attention_norm_skipped": [_step(projected=how) for how in ("raw", "raw_kv", "raw_q", "raw_v")],
    "first_block_only": [_step(blocks=1)],
    "no_block_without_cache": [_step(blocks=0)],
    "static_buffer_whole_attended": [_step(buffer=True)],
    "cache_layer_not_advanced": [_step(layer_read="shared")],
    "counter_advanced_per_layer": [_step(counter="mask_rows"), _step(counter="slots")],
    "counter_advanced_before_write": [_step(counter="before_write")],
    "attention_residual_missing": [_step(residual="none")],
    "residual_from_normed": [_step(residual="normed"), _step(mlp="normed"),
                             _step(residual="normed", mlp="normed")],
    "mlp_residual_missing": [_step(mlp="none")],
    "attention_output_left_out": [_step(mlp="attention_dropped")],
    "mlp_skipped": [_step(mlp="skipped")],
    "mlp_norm_skipped": [_step(mlp="unnormed")],
    "parallel_block": [_step(mlp="parallel")],
    "norms_mixed_up": [_step(norms=how) for how in ("attention_for_mlp", "mlp_for_attention", "swapped",
                                                    "final_for_mlp")],
    "cache_low_precision": [_step(kept_in=torch.bfloat16)],   # float16's rounding stays within the tolerance
    # every token of a loop at the first position; or every position one on (past + 1), the prefill too
    "positions_not_advanced": [_per_token_at_one_position, _step(at=1)],
    "causal_mask_missing": [_step(causal_mask="none")],
    "causal_off_by_one": _masks("off_by_one"),
    "causal_future_visible": _masks("future_visible"),
    "causal_excludes_self": _masks("excludes_self"),  # last: with a -inf fill it gives NaN, as others do
    # after the masks: a piece of one token attends to itself alone, as a mask's diagonal would
    "prefill_pieces_isolated": [_step(piece=size) for size in (4, 3, 2, 5, 1)],
}
"""Bugs that show on a prefill (no cache yet): each attention bug inside the step, the structural
multi-head bugs, the causal mask of the prompt, grouped-query heads shared in the wrong order, the
logits read without the final LayerNorm, and the block's wiring (a norm skipped, a residual lost or
taken from the normed stream, the MLP beside attention instead of after it)."""

CACHED_VARIANTS = {
    "positions_not_advanced": [_step(advance=False), _step(advance=-1), _step(advance=1),
                               _step(advance="none")],
    "is_causal_top_left": [_step(causal_mask="top_left"), _step(causal_mask="none_for_one")],
    "causal_mask_missing": [_step(causal_mask="prefill_only")],
    "cache_masked_out": [_step(causal_mask="cache_hidden")],
    "cache_low_precision": [_step(stored_in=torch.bfloat16)],
    "cache_not_appended": [_step(keep="given"), _step(keep="newest"),   # and the given cache, even None:
                           lambda model, tokens, cache: (decode(model, tokens, cache)[0], cache)],
    "new_token_not_attended": [_step(attend_new=False), _step(attend_new=False, causal_mask="prefill_only")],
    "cache_keys_values_swapped": [_step(keep="swapped")],
    "values_from_cached_keys": [_step(values_from="keys"), _step(values_from="new_keys")],
    "cache_layer_mixed_up": [_step(layer_read=how) for how in ("first", "last", "reversed")],
    "causal_offset_negated": _masks("offset_negated"),
    # the cached length read from another axis or from the list: the positions (and the mask's offset)
    "cached_length_misread": [_step(counted=count, counted_in_mask=both) for both in (True, False)
                              for count in _MISCOUNTS],
    "mask_cached_columns_last": [_step(causal_mask="cached_last")],
    # the diagonal one too low once there is a cache (tril(past - 1)): each new query sees the cached
    # positions and not itself; the prompt's own triangle right (where it is wrong, the prefill names it)
    "causal_excludes_self": [_step(causal_mask="excludes_self_cached")],
}
"""Bugs that show only once there is a cache (the prefill is right)."""
