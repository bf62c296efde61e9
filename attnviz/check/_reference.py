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

__all__ = ["neutral", "in_neutral", "attention", "multi_head", "ATTENTION_VARIANTS", "MULTI_HEAD_VARIANTS",
           "causal", "padding"]

_softmax, _log_softmax, _sigmoid, _exp = torch.softmax, torch.log_softmax, torch.sigmoid, torch.exp
_INF = float("inf")
_MIN = torch.finfo(torch.float32).min  # the fill the course teaches (the learner's dtype is float32)


@contextlib.contextmanager
def neutral():
    """The checker's own math runs on the CPU with autograd on, whatever the kernel has set
    (``torch.set_grad_enabled(False)``, ``torch.set_default_device(...)``)."""
    with torch.device("cpu"), torch.enable_grad():
        yield


def in_neutral(check):
    """Decorator: the whole checker runs inside :func:`neutral`."""
    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        with neutral():
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


def _normalised(normalise, fill):
    def variant(q, k, v, mask):
        return normalise(_fill(q @ _t(k) / math.sqrt(q.shape[-1]), mask, fill)) @ v

    return variant


def _rsqrt_dk(q, k, v):
    return 1 / math.sqrt(q.shape[-1])


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
        _scaled(lambda q, k, v: 1 / 4),  # a stale global d_k = 4
        _scaled(lambda q, k, v: 1 / math.sqrt(8)),
        _scaled(lambda q, k, v: 1 / 8),
    ],
    "scale_after_softmax": [
        lambda q, k, v, m: _finish(q @ _t(k), m, v)[1] / math.sqrt(q.shape[-1]) @ v,
        lambda q, k, v, m: _finish(q @ _t(k), m, v)[1] / q.shape[-1] @ v,
    ],
    "softmax_wrong_axis": [_softmax_axis(axis, fill) for axis in (-2, 0, 1) for fill in (-_INF, _MIN)],
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
    "mask_inverted": _fills(
        lambda f: (
            lambda q, k, v, m: _finish(
                q @ _t(k) / math.sqrt(q.shape[-1]), None if m is None else ~m, v, fill=f[0], dead=f[1]
            )[0]
        )
    )
    + [_additive(lambda m: m * -1e9)],
    "mask_ignored": [lambda q, k, v, m: attention(q, k, v)[0]],
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
    x, weights, h, mask=None, *, attend=None, split=_split, merge=_merge, project_out=True, dead="zero"
):
    """Multi-head self-attention with the given parts; ``attend(q, k, v, mask) -> output``."""
    attend = attend or (lambda q, k, v, m: attention(q, k, v, m, dead=dead)[0])
    q, k, v = (split(_project(x, weights[name]), h) for name in ("W_q", "W_k", "W_v"))
    out = merge(attend(q, k, v, mask))
    return _project(out, weights["W_o"]) if project_out else out


def _split_no_transpose(x, h):
    batch, n, d_model = x.shape
    return x.reshape(batch, h, n, d_model // h)


def _merge_no_transpose(x):
    batch, h, n, d_k = x.shape
    return x.reshape(batch, n, h * d_k)


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


def _parts(**parts):
    return lambda x, weights, h, mask, dead: multi_head(x, weights, h, mask, dead=dead, **parts)


MULTI_HEAD_VARIANTS = {
    "heads_split_without_transpose": [
        _parts(split=_split_no_transpose),
        _parts(split=_split_no_transpose, merge=_merge_no_transpose),
        _parts(split=_heads_last, merge=_merge_heads_last),
    ],
    "heads_merged_without_transpose": [_parts(merge=_merge_no_transpose)],
    "heads_averaged": [_averaged_pattern, _averaged_outputs, _averaged_scores],
    "heads_not_split": [_one_head(False), _one_head(True)],
    "scale_by_d_model": [_with_scale(lambda x, h: 1 / math.sqrt(x.shape[-1]))],
    "missing_output_projection": [_parts(project_out=False)],
}
"""Structural multi-head bugs; each attention bug above, run inside correct multi-head attention, is
tried as well (the checker adds those)."""
