"""The bug zoo: the classic attention mistakes, each written out small and named.

Every entry is a real implementation with exactly one thing wrong, so a
notebook can run it beside the correct version and show its symptom, and the
checkers in :mod:`attnviz.check` can recognise it in a learner's code. Torch
only.

Four families, each a dict from bug id to implementation, with the same call
signature as the exercise it belongs to:

* ``ATTENTION_BUGS``: ``fn(q, k, v, mask=None) -> (output, weights)``, the
  shapes of :func:`attnviz.scaled_dot_product_attention` (mask bool, True =
  may attend).
* ``MULTI_HEAD_BUGS``: ``cls(d_model, n_heads)``, an ``nn.Module`` with
  ``W_q``, ``W_k``, ``W_v``, ``W_o`` and ``forward(x, mask=None) -> output``
  where x is ``(batch, n, d_model)``.
* ``CAUSAL_MASK_BUGS``: ``fn(n)`` -> bool mask, meant to be ``(n, n)``.
* ``PADDING_MASK_BUGS``: ``fn(lengths, n)`` -> bool mask, meant to be ``(batch, 1, n)``
  (``padding_masks_queries`` returns ``(batch, n, 1)``: that is its bug).

``get(bug_id)`` returns the entry for an id, ``BUG_IDS`` lists them all.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "ATTENTION_BUGS",
    "MULTI_HEAD_BUGS",
    "CAUSAL_MASK_BUGS",
    "PADDING_MASK_BUGS",
    "BUG_IDS",
    "SHOWS_ONLY_ON_EDGES",
    "get",
    "MultiHeadWith",
]


def _scores(q, k):
    return q @ k.transpose(-2, -1)                      # (..., n_q, n_k)


def _blocked(mask):
    return ~mask                                        # True where a key may NOT be attended to


# --------------------------------------------------------------------------
# Scaled dot-product attention: fn(q, k, v, mask=None) -> (output, weights)
# --------------------------------------------------------------------------

def missing_scale(q, k, v, mask=None):
    """The scores are never divided by sqrt(d_k)."""
    scores = _scores(q, k)                              # BUG: no / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def wrong_scale(q, k, v, mask=None):
    """The scores are divided by d_k instead of sqrt(d_k)."""
    scores = _scores(q, k) / q.shape[-1]                # BUG: should be math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def scale_after_softmax(q, k, v, mask=None):
    """The division by sqrt(d_k) is applied to the weights, after the softmax."""
    scores = _scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1) / math.sqrt(q.shape[-1])   # BUG: too late
    return weights @ v, weights


def softmax_wrong_axis(q, k, v, mask=None):
    """The softmax normalises over the queries (dim=-2) instead of the keys."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-2)             # BUG: should be dim=-1
    return weights @ v, weights


def scores_transposed(q, k, v, mask=None):
    """The scores are k @ qᵀ (keys as rows) instead of q @ kᵀ."""
    scores = k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])   # BUG: (n_k, n_q), not (n_q, n_k)
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def mask_inverted(q, k, v, mask=None):
    """The mask is read the wrong way round: True is treated as 'blocked'."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)   # BUG: fill where ~mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def mask_after_softmax(q, k, v, mask=None):
    """The mask zeroes the weights after the softmax, so rows no longer sum to 1."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(_blocked(mask), 0.0)   # BUG: mask the scores, before softmax
    return weights @ v, weights


def mask_fill_zero(q, k, v, mask=None):
    """Blocked scores are set to 0, an ordinary score, instead of -inf."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), 0.0)     # BUG: torch.finfo(scores.dtype).min
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def nan_on_fully_masked_row(q, k, v, mask=None):
    """Correct, except that a query with every key blocked gets NaN (softmax of all -inf)."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), float("-inf"))   # BUG: a row of only -inf ...
    weights = torch.softmax(scores, dim=-1)                          # ... is 0/0 = NaN here
    return weights @ v, weights


def forgot_values(q, k, v, mask=None):
    """The weights are returned as the output; the values are never mixed."""
    scores = _scores(q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights, weights                             # BUG: should be weights @ v


def _finite(scores, mask):
    """The course's mask step: blocked scores get the dtype's most negative finite number."""
    return scores if mask is None else scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)


def _scaled_scores(q, k):
    return _scores(q, k) / math.sqrt(q.shape[-1])


def missing_key_transpose(q, k, v, mask=None):
    """q @ k instead of q @ kᵀ: PyTorch refuses it unless n_k happens to equal d_k."""
    scores = q @ k / math.sqrt(q.shape[-1])                       # BUG: k.transpose(-2, -1)
    scores = _finite(scores, mask)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def scale_multiplied(q, k, v, mask=None):
    """The scores are multiplied by sqrt(d_k) instead of divided."""
    scores = _scores(q, k) * math.sqrt(q.shape[-1])               # BUG: should be /
    scores = _finite(scores, mask)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def mask_ignored(q, k, v, mask=None):
    """The mask is accepted and never used."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        pass                                                         # BUG: the mask is never applied
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def additive_mask_wrong(q, k, v, mask=None):
    """The bool mask is added as numbers (1 where allowed), which blocks nothing."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores + mask.float()                               # BUG: fill blocked scores instead
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def fill_overflows_float16(q, k, v, mask=None):
    """Blocked scores filled with -1e9: right in float32, not representable in float16."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), -1e9)            # BUG: torch.finfo(scores.dtype).min
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def weights_not_normalised(q, k, v, mask=None):
    """The scores are used as weights directly: no softmax."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = scores                                                 # BUG: torch.softmax(scores, dim=-1)
    return weights @ v, weights


def keys_values_swapped(q, k, v, mask=None):
    """The weights blend the keys instead of the values."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    return weights @ k                                               # BUG: weights @ v


def queries_keys_swapped(q, k, v, mask=None):
    """The keys ask and the queries answer: attention(k, q, v) in effect."""
    scores = _finite(_scaled_scores(k, q), None if mask is None else mask.transpose(-2, -1))   # BUG
    weights = torch.softmax(scores, dim=-1)                          # (n_k, n_q)
    return weights @ v, weights


def dropout_left_on(q, k, v, mask=None):
    """Dropout on the weights with training=True: a different output on every call."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), p=0.2, training=True)   # BUG
    return weights @ v, weights


def softmax_overflow(q, k, v, mask=None):
    """A softmax written by hand without subtracting the row maximum: exp overflows."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)   # BUG: no max subtracted
    return weights @ v, weights


def gradient_blocked(q, k, v, mask=None):
    """The weights are detached: right numbers, no gradient to q and k."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = torch.softmax(scores, dim=-1).detach()                 # BUG: no detach
    return weights @ v, weights


def dtype_changed(q, k, v, mask=None):
    """The output comes back in float64 whatever the inputs' dtype."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    return (weights @ v).double()                                    # BUG: keep the inputs' dtype


def batch_one_only(q, k, v, mask=None):
    """k.T and q.shape[1]: right for (n, d) inputs, wrong with batch or head dimensions in front."""
    scores = q @ k.mT / math.sqrt(q.shape[1])                     # BUG: q.shape[-1]
    scores = _finite(scores, mask)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


ATTENTION_BUGS = {
    fn.__name__: fn
    for fn in (
        missing_scale, wrong_scale, scale_after_softmax, softmax_wrong_axis, scores_transposed,
        mask_inverted, mask_after_softmax, mask_fill_zero, nan_on_fully_masked_row, forgot_values,
        missing_key_transpose, scale_multiplied, mask_ignored, additive_mask_wrong, fill_overflows_float16,
        weights_not_normalised, keys_values_swapped, queries_keys_swapped, dropout_left_on, softmax_overflow,
        gradient_blocked, dtype_changed, batch_one_only,
    )
}
"""Bugs that show only on some inputs (float16, large scores, a backward pass, a second call, the
output dtype, batch dimensions) give the same numbers as correct attention on an ordinary float32
input: ``SHOWS_ONLY_ON_EDGES`` lists them."""

SHOWS_ONLY_ON_EDGES = ("fill_overflows_float16", "softmax_overflow", "gradient_blocked", "dtype_changed",
                       "batch_one_only", "nan_on_fully_masked_row")


# --------------------------------------------------------------------------
# Multi-head attention: cls(d_model, n_heads), forward(x, mask=None) -> output
# --------------------------------------------------------------------------

def _finite_attention(q, k, v, mask=None, scale=None):
    """Correct attention used inside the multi-head zoo (fully masked rows give zeros)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = _scores(q, k) * scale
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


class MultiHeadWith(nn.Module):
    """Textbook multi-head attention whose per-head attention is ``attention``.

    ``MultiHeadWith(d_model, n_heads, attention=zoo.missing_scale)`` is
    multi-head attention with that one attention bug inside; the default
    attention is correct. The subclasses below each get one structural step
    of the multi-head bookkeeping wrong.
    """

    def __init__(self, d_model, n_heads, attention=None):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.attention = attention or _finite_attention
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def split(self, x):                                  # (B, T, d_model) -> (B, h, T, d_k)
        batch, n, _ = x.shape
        return x.view(batch, n, self.n_heads, self.d_k).transpose(1, 2)

    def merge(self, x):                                  # (B, h, T, d_k) -> (B, T, d_model)
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).contiguous().view(batch, n, self.d_model)

    def heads(self, x, mask):                            # (B, h, T, d_k)
        query, key, value = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        output, _ = self.attention(query, key, value, mask)
        return output

    def forward(self, x, mask=None):
        return self.W_o(self.merge(self.heads(x, mask)))


class HeadsSplitWithoutTranspose(MultiHeadWith):
    """Heads are split with .view(B, h, T, d_k) straight away, with no transpose."""

    def split(self, x):
        batch, n, _ = x.shape
        return x.view(batch, self.n_heads, n, self.d_k)    # BUG: view(B, T, h, d_k).transpose(1, 2)


class HeadsMergedWithoutTranspose(MultiHeadWith):
    """Heads are merged with .reshape(B, T, d_model) straight from (B, h, T, d_k)."""

    def merge(self, x):
        batch, _, n, _ = x.shape
        return x.reshape(batch, n, self.d_model)           # BUG: transpose(1, 2) first


class HeadsAveraged(MultiHeadWith):
    """The heads' attention patterns are averaged into one, applied to the full-width values."""

    def forward(self, x, mask=None):
        query, key = self.split(self.W_q(x)), self.split(self.W_k(x))
        _, weights = self.attention(query, key, key, mask)   # (B, h, T, T)
        blended = weights.mean(dim=1) @ self.W_v(x)          # BUG: one averaged pattern for all
        return self.W_o(blended)


class ScaleByDModel(MultiHeadWith):
    """Each head's scores are divided by sqrt(d_model) instead of sqrt(d_k)."""

    def heads(self, x, mask):
        query, key, value = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        output, _ = _finite_attention(query, key, value, mask,
                                      scale=1.0 / math.sqrt(self.d_model))   # BUG: sqrt(self.d_k)
        return output


class MissingOutputProjection(MultiHeadWith):
    """The concatenated heads are returned without the final W_o projection."""

    def forward(self, x, mask=None):
        return self.merge(self.heads(x, mask))               # BUG: self.W_o(...) missing


class HeadsNotSplit(MultiHeadWith):
    """One attention over the full d_model: one head, whatever n_heads says."""

    def heads(self, x, mask):
        query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)   # BUG: never split into heads
        output, _ = _finite_attention(query, key, value, mask, scale=1.0 / math.sqrt(self.d_k))
        return output

    def merge(self, x):
        return x


class MissingContiguous(MultiHeadWith):
    """.view after .transpose without .contiguous(): PyTorch raises."""

    def merge(self, x):
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).view(batch, n, self.d_model)     # BUG: .contiguous() before .view


MULTI_HEAD_BUGS = {
    "heads_not_split": HeadsNotSplit,
    "missing_contiguous": MissingContiguous,
    "heads_split_without_transpose": HeadsSplitWithoutTranspose,
    "heads_merged_without_transpose": HeadsMergedWithoutTranspose,
    "heads_averaged": HeadsAveraged,
    "scale_by_d_model": ScaleByDModel,
    "missing_output_projection": MissingOutputProjection,
}


# --------------------------------------------------------------------------
# Masks: causal fn(n) -> (n, n); padding fn(lengths, n) -> (batch, 1, n)
# --------------------------------------------------------------------------

def causal_future_visible(n):
    """Upper triangle instead of lower: each position sees itself and the future."""
    return torch.ones(n, n, dtype=torch.bool).triu()     # BUG: .tril()


def causal_excludes_self(n):
    """The diagonal is blocked: a position may not attend to itself."""
    return torch.ones(n, n, dtype=torch.bool).tril(-1)   # BUG: .tril() keeps the diagonal


def causal_mask_inverted(n):
    """True marks the blocked (future) positions: the 'True = ignore' convention."""
    return torch.ones(n, n, dtype=torch.bool).triu(1)    # BUG: True must mean may attend


def padding_masks_queries(lengths, n):
    """Padding blocks query rows (batch, n, 1) instead of key columns (batch, 1, n)."""
    real = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]   # (batch, n)
    return real[:, :, None]                              # BUG: should be real[:, None, :]


def padding_mask_inverted(lengths, n):
    """True marks the padding: the 'True = ignore' convention."""
    real = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]   # (batch, n)
    return ~real[:, None, :]                             # BUG: True must mean may attend


def causal_off_by_one(n):
    """The diagonal shifted by one: each position also sees the next one."""
    return torch.ones(n, n, dtype=torch.bool).tril(1)    # BUG: .tril() (diagonal=0)


def padding_lengths_modified(lengths, n):
    """Right mask, but lengths is turned into a column in place: the caller's tensor changes."""
    lengths = torch.as_tensor(lengths)
    lengths.unsqueeze_(-1)                               # BUG: lengths[:, None] (a new view)
    return (torch.arange(n)[None, :] < lengths)[:, None, :]


CAUSAL_MASK_BUGS = {
    "causal_off_by_one": causal_off_by_one,
    "causal_future_visible": causal_future_visible,
    "causal_excludes_self": causal_excludes_self,
    "mask_inverted": causal_mask_inverted,
}

PADDING_MASK_BUGS = {
    "padding_lengths_modified": padding_lengths_modified,
    "padding_masks_queries": padding_masks_queries,
    "mask_inverted": padding_mask_inverted,
}

BUG_IDS = tuple(dict.fromkeys([*ATTENTION_BUGS, *MULTI_HEAD_BUGS, *CAUSAL_MASK_BUGS, *PADDING_MASK_BUGS]))


def get(bug_id, family=None):
    """The zoo entry for ``bug_id``; ``family`` is 'attention', 'multi_head', 'causal' or 'padding'.

    ``mask_inverted`` exists in three families; without ``family`` the
    attention version is returned.
    """
    families = {
        "attention": ATTENTION_BUGS, "multi_head": MULTI_HEAD_BUGS,
        "causal": CAUSAL_MASK_BUGS, "padding": PADDING_MASK_BUGS,
    }
    if family is not None:
        if family not in families:
            raise ValueError(f"family must be one of {sorted(families)}, got {family!r}.")
        search = [families[family]]
    else:
        search = list(families.values())
    for table in search:
        if bug_id in table:
            return table[bug_id]
    raise KeyError(f"no bug {bug_id!r} in the zoo; known ids: {', '.join(BUG_IDS)}.")
