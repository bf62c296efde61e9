"""The bug zoo: the classic attention mistakes, each written out small and named.

Every entry is a real implementation with exactly one thing wrong, so a
notebook can run it beside the correct version and show its symptom, and the
checkers in :mod:`attnviz.check` can recognise it in a learner's code. Torch
only.

Five families, each a dict from bug id to implementation, with the same call
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
* ``DECODING_BUGS``: ``step(model, tokens, cache) -> (logits, cache)``, notebook 08's cached
  decoding step for a :class:`attnviz.gpt.TinyGPT` (or its ``model.pieces()`` view), written from
  the model's public pieces; ``decode_step`` is the correct one. The cache is a list of
  ``(keys, values)`` per layer, each ``(batch, n_kv_heads, positions, d_head)``.

``get(bug_id)`` returns the entry for an id, ``BUG_IDS`` lists them all.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .gpt import PiecesOnlyError, StepModel

__all__ = [
    "ATTENTION_BUGS",
    "MULTI_HEAD_BUGS",
    "CAUSAL_MASK_BUGS",
    "PADDING_MASK_BUGS",
    "DECODING_BUGS",
    "DecodeStep",
    "decode_step",
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


def key_reshaped_not_transposed(q, k, v, mask=None):
    """k 'transposed' by reshape: the right shape, but each column mixes several keys' numbers."""
    scores = q @ k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2]) / math.sqrt(q.shape[-1])  # BUG: transpose
    scores = _finite(scores, mask)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def additive_mask_too_small(q, k, v, mask=None):
    """An additive mask of -10000: a blocked key scoring over 10000 above the allowed ones still wins."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores + _blocked(mask).to(scores.dtype) * -10000.0   # BUG: masked_fill(..., finfo.min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def softmax_max_over_blocked(q, k, v, mask=None):
    """A softmax over every key, blocked ones included; then the blocked weights are zeroed and the
    rest renormalised (the same sum on ordinary scores; all 0 when a blocked key scores far above)."""
    scores = _scaled_scores(q, k)
    mask = torch.ones(scores.shape, dtype=torch.bool) if mask is None else mask.expand(scores.shape)
    weights = torch.softmax(scores, dim=-1)                       # BUG: mask the scores before it
    weights = weights.masked_fill(~mask, 0.0)
    weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
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


def mask_replaced_by_causal(q, k, v, mask=None):
    """A causal mask is applied in place of the one given."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)   # BUG: ~mask, the given one
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_when_no_mask(q, k, v, mask=None):
    """No mask given, and a causal one is applied anyway: mask=None means every key may be seen."""
    scores = _scaled_scores(q, k)
    given = torch.ones(scores.shape[-2:], dtype=torch.bool).tril() if mask is None else mask
    scores = scores.masked_fill(_blocked(given), torch.finfo(scores.dtype).min)   # BUG: only a given mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_added_to_mask(q, k, v, mask=None):
    """A causal triangle of its own on every call (nanoGPT's buffer), and the mask given on top."""
    scores = _scaled_scores(q, k)
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    scores = scores.masked_fill(_blocked(causal), torch.finfo(scores.dtype).min)   # BUG: only a given mask
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), torch.finfo(scores.dtype).min)
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


def floor_underflows_float16(q, k, v, mask=None):
    """Weights set to 0 where a row is fully masked, then divided by their sum over a floor of 1e-12,
    which is 0 in float16."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(_blocked(mask), float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1))
    weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-12)   # BUG: finfo(...).tiny
    return weights @ v, weights


def weights_not_normalised(q, k, v, mask=None):
    """The scores are used as weights directly: no softmax."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = scores                                                 # BUG: torch.softmax(scores, dim=-1)
    return weights @ v, weights


def softmax_applied_twice(q, k, v, mask=None):
    """A second softmax over the weights, already a softmax: every row flattened, the mask leaking."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = torch.softmax(torch.softmax(scores, dim=-1), dim=-1)   # BUG: torch.softmax(scores, dim=-1)
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


def softmax_low_precision(q, k, v, mask=None):
    """The softmax taken in float16 on float32 scores, "to save memory"."""
    scores = _finite(_scaled_scores(q, k), mask)
    weights = torch.softmax(scores.half(), dim=-1).to(scores.dtype)    # BUG: in the scores' own dtype
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



def three_dims_only(q, k, v, mask=None):
    """d2l's torch.bmm: right for (batch, n, d) inputs only."""
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])   # BUG: @ and transpose(-2, -1)
    scores = _finite(scores, mask)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def squeeze_drops_batch(q, k, v, mask=None):
    """A bare .squeeze() on the output: a batch of one loses its batch dimension."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    out = (weights @ v).squeeze()                                    # BUG: keep every dimension
    return out, weights


def output_and_weights_swapped(q, k, v, mask=None):
    """Returns (weights, output) instead of (output, weights)."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    return weights, weights @ v                                      # BUG: the output first


def weights_transposed(q, k, v, mask=None):
    """The blend sums over the queries' index: the weights used transposed."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    out = torch.einsum("...qk,...qd->...kd", weights, v)            # BUG: weights @ v
    return out, weights

def output_transposed(q, k, v, mask=None):
    """The blend comes out transposed: one row per value feature instead of one per query."""
    weights = torch.softmax(_finite(_scaled_scores(q, k), mask), dim=-1)
    out = v.transpose(-2, -1) @ weights.transpose(-2, -1)          # BUG: weights @ v
    return out, weights


def mask_transposed(q, k, v, mask=None):
    """The mask is transposed before it is applied, as if its rows were the keys."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask.transpose(-2, -1), torch.finfo(scores.dtype).min)   # BUG: mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def mask_axis_misplaced(q, k, v, mask=None):
    """mask.unsqueeze(1) "for the heads": an (n, n) mask becomes (n, 1, n)."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)   # BUG: ~mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights

def softmax_sum_not_kept(q, k, v, mask=None):
    """A softmax by hand whose row sums lose their axis: e.sum(dim=-1) without keepdim."""
    scores = _finite(_scaled_scores(q, k), mask)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1)                                     # BUG: e.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def mask_boolean_indexed(q, k, v, mask=None):
    """Blocked scores set through a boolean index, which needs a mask of the scores' exact shape."""
    scores = _scaled_scores(q, k)
    if mask is not None:
        scores[~mask] = torch.finfo(scores.dtype).min               # BUG: scores.masked_fill(~mask, ...)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


ATTENTION_BUGS = {
    fn.__name__: fn
    for fn in (
        missing_scale, wrong_scale, scale_after_softmax, softmax_wrong_axis, scores_transposed,
        mask_inverted, mask_after_softmax, mask_fill_zero, nan_on_fully_masked_row, forgot_values,
        missing_key_transpose, scale_multiplied, mask_ignored, mask_replaced_by_causal, additive_mask_wrong,
        fill_overflows_float16, floor_underflows_float16,
        weights_not_normalised, keys_values_swapped, queries_keys_swapped, dropout_left_on, softmax_overflow,
        gradient_blocked, dtype_changed, batch_one_only, three_dims_only, squeeze_drops_batch,
        output_and_weights_swapped,
        mask_transposed, mask_axis_misplaced, weights_transposed, output_transposed, softmax_sum_not_kept,
        mask_boolean_indexed,
        key_reshaped_not_transposed, additive_mask_too_small, softmax_max_over_blocked, causal_when_no_mask,
        causal_added_to_mask, softmax_low_precision, softmax_applied_twice,
    )
}
"""Bugs that show only on some inputs (float16, large scores, a backward pass, a second call, the
output dtype, batch dimensions, a mask that only broadcasts to the scores) give the same numbers as
correct attention on an ordinary float32 input: ``SHOWS_ONLY_ON_EDGES`` lists them."""

SHOWS_ONLY_ON_EDGES = ("fill_overflows_float16", "floor_underflows_float16", "softmax_overflow",
                       "gradient_blocked", "dtype_changed", "batch_one_only",
                       "nan_on_fully_masked_row", "squeeze_drops_batch",
                       "mask_boolean_indexed", "additive_mask_too_small", "softmax_max_over_blocked")


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


class HeadsSplitInterleaved(MultiHeadWith):
    """Heads are split through (B, T, d_k, h): head i gets every h-th feature, not a block of d_k."""

    def split(self, x):
        batch, n, _ = x.shape
        return x.view(batch, n, self.d_k, self.n_heads).permute(0, 3, 1, 2)   # BUG: (B, T, h, d_k), transpose


class HeadsOverlap(MultiHeadWith):
    """Head i takes the features i .. i + d_k - 1, not its own block of d_k: neighbouring heads overlap."""

    def split(self, x):
        return torch.stack([x[..., i:i + self.d_k] for i in range(self.n_heads)], dim=1)  # BUG: i * d_k


class WeightNotTransposed(MultiHeadWith):
    """The projections are written as x @ W.weight; nn.Linear computes x @ W.weight.T."""

    def heads(self, x, mask):
        query, key, value = (self.split(x @ W.weight) for W in (self.W_q, self.W_k, self.W_v))  # BUG: W(x)
        output, _ = self.attention(query, key, value, mask)
        return output


class HeadsMergedInterleaved(MultiHeadWith):
    """Heads are merged through (B, T, d_k, h): each head's features end up spread across d_model."""

    def merge(self, x):
        batch, _, n, _ = x.shape
        return x.permute(0, 2, 3, 1).reshape(batch, n, self.d_model)   # BUG: transpose(1, 2), (B, T, h, d_k)


class HeadsAveraged(MultiHeadWith):
    """The heads' attention patterns are averaged into one, applied to the full-width values."""

    def forward(self, x, mask=None):
        query, key = self.split(self.W_q(x)), self.split(self.W_k(x))
        _, weights = self.attention(query, key, key, mask)   # (B, h, T, T)
        blended = weights.mean(dim=1) @ self.W_v(x)          # BUG: one averaged pattern for all
        return self.W_o(blended)


class HeadLeftOut(MultiHeadWith):
    """A loop over the heads, one slice of the features each, that stops one head short."""

    def heads(self, x, mask):
        query, key, value = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        output = torch.zeros_like(query)
        for h in range(self.n_heads - 1):                    # BUG: range(self.n_heads)
            head = slice(h, h + 1)                               # (B, 1, T, d_k): head h
            output[:, head], _ = self.attention(query[:, head], key[:, head], value[:, head], mask)
        return output


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


class ResidualAdded(MultiHeadWith):
    """The input is added to the output: the block's residual, inside the attention layer."""

    def forward(self, x, mask=None):
        return x + self.W_o(self.merge(self.heads(x, mask)))    # BUG: the block adds x, not attention


class LayerNormAdded(MultiHeadWith):
    """The output is normed: the block's LayerNorm, inside the attention layer."""

    def forward(self, x, mask=None):
        out = self.W_o(self.merge(self.heads(x, mask)))
        return F.layer_norm(out, out.shape[-1:])                 # BUG: return out, the block norms


class HeadsCountAndWidthSwapped(MultiHeadWith):
    """The split views (B, T, d_k, h): d_k heads of h features."""

    def split(self, x):
        batch, n, _ = x.shape
        return x.view(batch, n, self.d_k, self.n_heads).transpose(1, 2)   # BUG: (B, T, h, d_k)

    def merge(self, x):
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).contiguous().view(batch, n, self.d_model)


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



class SqueezeDropsBatch(MultiHeadWith):
    """A bare .squeeze() on the output: a batch of one comes back as (n, d_model)."""

    def forward(self, x, mask=None):
        out = self.W_o(self.merge(self.heads(x, mask)))
        return out.squeeze()                                       # BUG: return out, every dimension kept


class WeightsModifiedInPlace(MultiHeadWith):
    """The scale folded into W_q's weight in place, on every call."""

    def heads(self, x, mask):
        with torch.no_grad():
            self.W_q.weight /= math.sqrt(self.d_k)                 # BUG: scale q, not the weight
        query, key, value = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        output, _ = _finite_attention(query, key, value, mask, scale=1.0)
        return output

MULTI_HEAD_BUGS = {
    "heads_not_split": HeadsNotSplit,
    "missing_contiguous": MissingContiguous,
    "heads_split_without_transpose": HeadsSplitWithoutTranspose,
    "heads_merged_without_transpose": HeadsMergedWithoutTranspose,
    "heads_merged_interleaved": HeadsMergedInterleaved,
    "heads_split_interleaved": HeadsSplitInterleaved,
    "weight_not_transposed": WeightNotTransposed,
    "residual_added": ResidualAdded,
    "layer_norm_added": LayerNormAdded,
    "heads_count_and_width_swapped": HeadsCountAndWidthSwapped,
    "heads_averaged": HeadsAveraged,
    "scale_by_d_model": ScaleByDModel,
    "missing_output_projection": MissingOutputProjection,
    "squeeze_drops_batch": SqueezeDropsBatch,
    "weights_modified_in_place": WeightsModifiedInPlace,
    "heads_overlap": HeadsOverlap,
    "head_left_out": HeadLeftOut,
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


def padding_off_by_one(lengths, n):
    """Positions compared with <= length: each sequence gets one padding key too many."""
    real = torch.arange(n)[None, :] <= torch.as_tensor(lengths)[:, None]  # BUG: < length
    return real[:, None, :]


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


def causal_mask_not_bool(n):
    """The right triangle as 0/1 floats: masked_fill(~mask) refuses it, an additive use blocks nothing."""
    return torch.ones(n, n).tril()                         # BUG: dtype=torch.bool


_TRIANGLE_32 = torch.ones(32, 32, dtype=torch.bool).tril()   # built once, at import


def causal_mask_fixed_size(n):
    """A triangle built once at 32 x 32 and sliced: too small for n > 32."""
    return _TRIANGLE_32[:n, :n]                            # BUG: torch.ones(n, n, dtype=torch.bool).tril()


def causal_blocks_nothing(n):
    """A loop meant to fill each row up to the diagonal fills the whole row."""
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        mask[i] = True                                     # BUG: mask[i, : i + 1] = True
    return mask


def padding_width_from_lengths(lengths, n):
    """The mask is as wide as the longest sequence, not n."""
    lengths = torch.as_tensor(lengths)
    width = int(lengths.max())                             # BUG: n
    return (torch.arange(width)[None, :] < lengths[:, None])[:, None, :]


def padding_query_axis_misplaced(lengths, n):
    """No query axis: (batch, n) lines the batch up with the queries."""
    return torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]   # BUG: [:, None, :]


def padding_masks_queries_too(lengths, n):
    """Padded query rows are blocked too: every padded position's row is fully masked."""
    real = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]   # (batch, n)
    return real[:, None, :] & real[:, :, None]             # BUG: real[:, None, :], the keys alone


def causal_first_row_blocked(n):
    """A loop over the rows that starts at 1: query 0 is left with no key at all."""
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(1, n):                                  # BUG: range(n)
        mask[i, : i + 1] = True
    return mask


def causal_last_row_blocked(n):
    """A loop over the rows that stops one short: the last query is left with no key at all."""
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n - 1):                                 # BUG: range(n)
        mask[i, : i + 1] = True
    return mask


def padding_left_aligned(lengths, n):
    """The real tokens taken to be the last ones (left padding); the course pads after them."""
    lengths = torch.as_tensor(lengths)
    return (torch.arange(n)[None, :] >= n - lengths[:, None])[:, None, :]   # BUG: < lengths[:, None]


def padding_lengths_as_pad_counts(lengths, n):
    """lengths read as padding counts: the first n - length positions are taken to be the real ones."""
    real = n - torch.as_tensor(lengths)                    # BUG: lengths[b] is the number of real tokens
    return (torch.arange(n)[None, :] < real[:, None])[:, None, :]


def padding_combined_with_causal(lengths, n):
    """The padding mask and'ed with a causal triangle: each query also loses the real keys after it."""
    keys = (torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None])[:, None, :]
    return keys & torch.ones(n, n, dtype=torch.bool).tril()   # BUG: the padding mask alone


def padding_full_sequence_blocked(lengths, n):
    """Padding cleared with a negative slice: for a full-length sequence -(n - length) is 0, the whole row."""
    mask = torch.ones(len(lengths), 1, n, dtype=torch.bool)
    for b, length in enumerate(torch.as_tensor(lengths).tolist()):
        mask[b, :, -(n - length):] = False                 # BUG: mask[b, :, length:] = False
    return mask


def padding_lengths_clamped(lengths, n):
    """Lengths clamped to at least 1: an empty sequence keeps key 0."""
    lengths = torch.as_tensor(lengths).clamp(min=1)        # BUG: the lengths as given
    return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]


def padding_lengths_reordered(lengths, n):
    """The lengths sorted longest first (as for pack_padded_sequence): masks land on the wrong sequences."""
    lengths = torch.as_tensor(lengths).sort(descending=True).values   # BUG: keep the batch's order
    return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]


CAUSAL_MASK_BUGS = {
    "causal_off_by_one": causal_off_by_one,
    "causal_future_visible": causal_future_visible,
    "causal_excludes_self": causal_excludes_self,
    "mask_inverted": causal_mask_inverted,
    "mask_not_bool": causal_mask_not_bool,
    "mask_fixed_size": causal_mask_fixed_size,
    "mask_blocks_nothing": causal_blocks_nothing,
    "causal_first_row_blocked": causal_first_row_blocked,
    "causal_last_row_blocked": causal_last_row_blocked,
}

PADDING_MASK_BUGS = {
    "padding_lengths_modified": padding_lengths_modified,
    "padding_masks_queries": padding_masks_queries,
    "padding_off_by_one": padding_off_by_one,
    "mask_inverted": padding_mask_inverted,
    "padding_width_from_lengths": padding_width_from_lengths,
    "padding_query_axis_misplaced": padding_query_axis_misplaced,
    "padding_masks_queries_too": padding_masks_queries_too,
    "padding_full_sequence_blocked": padding_full_sequence_blocked,
    "padding_lengths_clamped": padding_lengths_clamped,
    "padding_lengths_reordered": padding_lengths_reordered,
    "padding_left_aligned": padding_left_aligned,
    "padding_lengths_as_pad_counts": padding_lengths_as_pad_counts,
    "padding_combined_with_causal": padding_combined_with_causal,
}

# --------------------------------------------------------------------------
# Decoding (notebook 08): step(model, tokens, cache) -> (logits, cache)
# --------------------------------------------------------------------------

class DecodeStep:
    """A cached decoding step written from a TinyGPT's public pieces, one method per step of the recipe.

    ``DecodeStep()(model, tokens, cache)``: ``tokens`` ``(batch, n_new)`` are the positions after the
    cached ones; ``cache`` None or a list of ``(keys, values)`` per layer. The subclasses below each
    get one method wrong.
    """

    def __call__(self, model, tokens, cache):
        if type(self) is DecodeStep and isinstance(model, StepModel):   # the zoo's right step, handed in
            raise PiecesOnlyError("attnviz.zoo.decode_step is the course's own answer to this exercise; "
                                  "write the step yourself from the model's pieces.")
        past = self.count(cache)                                     # positions already cached
        x = self.embed(model, tokens, past)                          # (batch, n_new, d_model)
        new_cache = self.start_cache(cache)
        for layer, block in enumerate(self.blocks(model)):
            attention, block_input = block.attention, x
            normed = self.norm_attention(block, x)                            # x stays for the residual
            query = self.split(attention.W_q(normed), model.n_heads)           # (batch, h, n_new, d)
            key = self.split(attention.W_k(normed), model.n_kv_heads)          # (batch, h_kv, n_new, d)
            value = self.split(attention.W_v(normed), model.n_kv_heads)
            kept = None if cache is None else self.cached(cache, layer)        # what was cached
            key, value = self.append(kept, key, value)                         # (batch, h_kv, n_all, d)
            self.keep(new_cache, layer, kept, key, value)
            key, value = self.share(key, value, model.n_heads // model.n_kv_heads)         # (batch, h, ..)
            heads = self.attend(model, query, key, value)                      # (batch, h, n_new, d)
            x = self.add_attention(x, attention, self.merge(heads))
            x = self.add_mlp(x, block, block_input)
        return self.unembed(model, x), new_cache

    def blocks(self, model):
        return model.blocks                                          # every block, in order

    def norm_attention(self, block, x):
        normed = block.norm_attention(x)                             # a new name: x stays for the residual
        return normed

    def count(self, cache):                                          # keys: (batch, h_kv, positions, d)
        past = 0 if cache is None else cache[0][0].shape[-2]
        return past

    def embed(self, model, tokens, past):
        x = model.embed(tokens, past)                                # positions past .. past + n_new - 1
        return x

    def cached(self, cache, layer):                                  # this layer's (keys, values)
        past_keys, past_values = cache[layer]
        return past_keys, past_values

    def split(self, x, n_heads):                                     # (batch, n, h * d) -> (batch, h, n, d)
        batch, n, width = x.shape
        d_head = width // n_heads
        return x.view(batch, n, n_heads, d_head).transpose(1, 2)

    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            key = torch.cat([past_keys, key], dim=-2)                # along the positions
            value = torch.cat([past_values, value], dim=-2)
        return key, value

    def start_cache(self, cache):
        new_cache = []                                               # a new list: the given cache stays
        return new_cache

    def keep(self, new_cache, layer, kept, key, value):
        if layer < len(new_cache):
            new_cache[layer] = (key, value)
        else:
            new_cache.append((key, value))
        return new_cache

    def share(self, key, value, group):                              # query head i uses kv head i // group
        key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
        return key, value

    def attend(self, model, query, key, value):
        n_new, n_all = query.shape[-2], key.shape[-2]
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)   # bottom right
        scores = query @ key.transpose(-2, -1) / math.sqrt(model.d_head)  # (batch, h, n_new, n_all)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        return weights @ value

    def merge(self, heads):                                          # (batch, h, n, d) -> (batch, n, h * d)
        batch, h, n_new, d = heads.shape
        merged = heads.transpose(1, 2).contiguous().view(batch, n_new, h * d)
        return merged

    def add_attention(self, x, attention, merged):
        x = x + attention.W_o(merged)
        return x

    def add_mlp(self, x, block, block_input):                        # block_input: x before attention
        x = x + block.mlp(block.norm_mlp(x))                         # the stream attention just wrote to
        return x

    def unembed(self, model, x):                                     # (batch, n, d_model) -> logits
        logits = model.unembed(x)                                    # the final LayerNorm, then unembedding
        return logits


decode_step = DecodeStep()


class _Attend(DecodeStep):
    """The attention of the new queries, written out for a subclass to get one line of it wrong."""

    def attend(self, model, query, key, value):
        n_new, n_all = query.shape[-2], key.shape[-2]
        mask = self.mask(n_new, n_all)
        scores = self.scores(model, query, key)
        scores = self.fill(scores, mask)
        weights = self.normalise(scores)
        return weights @ value

    def mask(self, n_new, n_all):
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)
        return mask

    def scores(self, model, query, key):
        scores = query @ key.transpose(-2, -1) / math.sqrt(model.d_head)
        return scores

    def fill(self, scores, mask):
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return scores

    def normalise(self, scores):
        weights = torch.softmax(scores, dim=-1)
        return weights


class StepMissingScale(_Attend):
    def scores(self, model, query, key):
        scores = query @ key.transpose(-2, -1)                               # BUG: / math.sqrt(model.d_head)
        return scores


class StepWrongScale(_Attend):
    def scores(self, model, query, key):
        scores = query @ key.transpose(-2, -1) / model.d_head               # BUG: the square root of d_head
        return scores


class StepScaleMultiplied(_Attend):
    def scores(self, model, query, key):
        scores = query @ key.transpose(-2, -1) * math.sqrt(model.d_head)    # BUG: divide
        return scores


class StepScaleByDModel(_Attend):
    def scores(self, model, query, key):
        scores = query @ key.transpose(-2, -1) / math.sqrt(model.d_model)   # BUG: per head, d_head
        return scores


class StepSoftmaxWrongAxis(_Attend):
    def normalise(self, scores):
        weights = torch.softmax(scores, dim=-2)                              # BUG: over the keys, dim=-1
        return weights


class StepMaskInverted(_Attend):
    def fill(self, scores, mask):
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)    # BUG: ~mask
        return scores


class StepAdditiveMaskWrong(_Attend):
    def fill(self, scores, mask):
        scores = scores + mask.float()                                       # BUG: adding 1 blocks nothing
        return scores


class StepCausalOffByOne(_Attend):
    def mask(self, n_new, n_all):
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new + 1)   # BUG: no + 1
        return mask


class StepTopLeft(_Attend):
    def mask(self, n_new, n_all):
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril()           # BUG: top left, not bottom right
        return mask


class StepCausalOffsetNegated(_Attend):
    def mask(self, n_new, n_all):
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_new - n_all)   # BUG: n_all - n_new
        return mask


class StepMaskCachedColumnsLast(_Attend):
    def mask(self, n_new, n_all):
        triangle = torch.ones(n_new, n_new, dtype=torch.bool).tril()           # the new tokens' own
        cached = torch.ones(n_new, n_all - n_new, dtype=torch.bool)              # every cached position
        mask = torch.cat([triangle, cached], dim=1)                              # BUG: the cached ones first
        return mask


class StepStaticBufferWholeAttended(_Attend):
    """Keys and values in a preallocated buffer of max_len positions, zeros where nothing is written."""

    def attend(self, model, query, key, value):
        filled = key.shape[-2]                                                 # positions written so far
        key_buffer = F.pad(key, (0, 0, 0, model.max_len - filled))             # the rest of the buffer: 0
        value_buffer = F.pad(value, (0, 0, 0, model.max_len - filled))
        key, value = key_buffer, value_buffer                                  # BUG: [:, :, :filled]
        return super().attend(model, query, key, value)


class StepCounterAdvancedPerLayer(_Attend):
    """The causal mask's rows sliced from one max_len x max_len mask at a counter that every block
    advances (one counter shared by the blocks)."""

    def __call__(self, model, tokens, cache):
        self.row = None                                                        # set by the first block
        self.causal = torch.ones(model.max_len, model.max_len, dtype=torch.bool).tril()
        return super().__call__(model, tokens, cache)

    def mask(self, n_new, n_all):
        past, causal = n_all - n_new, self.causal
        if self.row is None:                                                   # the counter starts at past
            self.row = past
        rows = causal[self.row:self.row + n_new, :n_all]                      # BUG: past, in every block
        self.row += n_new                                                      # advanced by every block
        return rows


class StepCounterAdvancedBeforeWrite(DecodeStep):
    """Keys and values in preallocated buffers of max_len positions, and the count of slots filled."""

    def __call__(self, model, tokens, cache):
        batch, n_new = tokens.shape
        if cache is None:
            empty = (batch, model.n_kv_heads, model.max_len, model.d_head)
            cache = [torch.zeros(empty) for _ in model.blocks], [torch.zeros(empty) for _ in model.blocks], 0
        k_bufs = [k.clone() for k in cache[0]]                           # copies: the given cache stays
        v_bufs = [v.clone() for v in cache[1]]
        past = cache[2]
        x = self.embed(model, tokens, past)
        filled = past + n_new                                                  # the count, advanced first
        for k_buf, v_buf, block in zip(k_bufs, v_bufs, model.blocks, strict=True):
            attention, block_input = block.attention, x
            normed = self.norm_attention(block, x)
            query = self.split(attention.W_q(normed), model.n_heads)
            key = self.split(attention.W_k(normed), model.n_kv_heads)
            value = self.split(attention.W_v(normed), model.n_kv_heads)
            k_buf[:, :, filled:filled + n_new], v_buf[:, :, filled:filled + n_new] = key, value  # BUG
            key, value = k_buf[:, :, :filled], v_buf[:, :, :filled]  # the slots filled so far
            key, value = self.share(key, value, model.n_heads // model.n_kv_heads)
            heads = self.attend(model, query, key, value)
            x = self.add_attention(x, attention, self.merge(heads))
            x = self.add_mlp(x, block, block_input)
        return self.unembed(model, x), (k_bufs, v_bufs, filled)


class StepPrefillPiecesIsolated(_Attend):
    """A prompt longer than 4 tokens prefilled 4 tokens at a time, so that each score matrix stays small."""

    start = 0                                                                  # the piece's first position

    def __call__(self, model, tokens, cache):
        if cache is not None or tokens.shape[1] <= 4:
            return super().__call__(model, tokens, cache)
        logits = []
        for self.start in range(0, tokens.shape[1], 4):                        # the cache grows each piece
            out, cache = super().__call__(model, tokens[:, self.start:self.start + 4], cache)
            logits.append(out)
        self.start = 0
        return torch.cat(logits, dim=1), cache

    def mask(self, n_new, n_all):
        own = torch.arange(n_all) >= self.start                                # this piece's columns
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new) & own  # BUG
        return mask


class StepNoCausalMask(_Attend):
    def mask(self, n_new, n_all):
        mask = torch.ones(n_new, n_all, dtype=torch.bool)                    # BUG: no causal triangle
        return mask


class StepDropoutLeftOn(DecodeStep):
    def attend(self, model, query, key, value):
        n_new, n_all = query.shape[-2], key.shape[-2]
        mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)
        heads = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=0.1)   # BUG
        return heads


class StepHeadsSplitWithoutTranspose(DecodeStep):
    def split(self, x, n_heads):
        batch, n, width = x.shape
        d_head = width // n_heads
        return x.view(batch, n_heads, n, d_head)                             # BUG: (b, n, h, d), transpose


class StepHeadsMergedWithoutTranspose(DecodeStep):
    def merge(self, heads):
        batch, h, n_new, d = heads.shape
        merged = heads.reshape(batch, n_new, h * d)                          # BUG: transpose(1, 2) first
        return merged


class StepMissingContiguous(DecodeStep):
    def merge(self, heads):
        batch, h, n_new, d = heads.shape
        merged = heads.transpose(1, 2).view(batch, n_new, h * d)             # BUG: .contiguous() before .view
        return merged


class StepBatchOneOnly(DecodeStep):
    def split(self, x, n_heads):
        batch, n, width = 1, x.shape[-2], x.shape[-1]                        # BUG: batch = x.shape[0]
        d_head = width // n_heads
        return x.view(batch, n, n_heads, d_head).transpose(1, 2)


class StepMissingOutputProjection(DecodeStep):
    def add_attention(self, x, attention, merged):
        x = x + merged                                                       # BUG: attention.W_o(merged)
        return x


class StepAttentionNormSkipped(DecodeStep):
    def norm_attention(self, block, x):
        normed = x                                                           # BUG: block.norm_attention(x)
        return normed


class StepResidualFromNormed(DecodeStep):
    def add_mlp(self, x, block, block_input):
        normed = block.norm_mlp(x)
        x = normed + block.mlp(normed)                                       # BUG: x + ..., not normed + ...
        return x


class StepAttentionResidualMissing(DecodeStep):
    def add_attention(self, x, attention, merged):
        x = attention.W_o(merged)                                            # BUG: x + attention.W_o(merged)
        return x


class StepNormsMixedUp(DecodeStep):
    def add_mlp(self, x, block, block_input):
        x = x + block.mlp(block.norm_attention(x))                           # BUG: block.norm_mlp(x)
        return x


class StepMlpResidualMissing(DecodeStep):
    def add_mlp(self, x, block, block_input):
        x = block.mlp(block.norm_mlp(x))                                     # BUG: x + block.mlp(...)
        return x


class StepMlpSkipped(DecodeStep):
    def add_mlp(self, x, block, block_input):
        x = x                                                   # BUG: x + block.mlp(block.norm_mlp(x))
        return x


class StepFirstBlockOnly(DecodeStep):
    def blocks(self, model):
        return model.blocks[:1]                                      # BUG: model.blocks, every block


class StepStateOutsideCache(DecodeStep):
    seen = 0                                                         # positions so far, kept on the step

    def count(self, cache):
        past = 0 if cache is None else self.seen                     # BUG: from the cache given: cache[0][0]
        return past

    def embed(self, model, tokens, past):
        self.seen = past + tokens.shape[1]
        x = model.embed(tokens, past)
        return x


class StepMlpNormSkipped(DecodeStep):
    def add_mlp(self, x, block, block_input):
        x = x + block.mlp(x)                                                 # BUG: block.norm_mlp(x) first
        return x


class StepParallelBlock(DecodeStep):
    def add_mlp(self, x, block, block_input):
        x = x + block.mlp(block.norm_mlp(block_input))                       # BUG: norm_mlp(x), the new x
        return x


class StepKvHeadsRepeated(DecodeStep):
    def share(self, key, value, group):
        key, value = key.repeat(1, group, 1, 1), value.repeat(1, group, 1, 1)   # BUG: repeat_interleave
        return key, value


class StepFinalNormSkipped(DecodeStep):
    def unembed(self, model, x):
        logits = model.unembedding(x)                                        # BUG: model.norm_final(x) first
        return logits


class StepPositionsNotAdvanced(DecodeStep):
    def embed(self, model, tokens, past):
        x = model.embed(tokens, 0)                                           # BUG: start at past
        return x


class StepEmbeddingAddedTwice(DecodeStep):
    def embed(self, model, tokens, past):
        positions = torch.arange(past, past + tokens.shape[1])
        x = model.embed(tokens, past) + model.position_embedding(positions)    # BUG: embed adds them
        return x


class StepCachedLengthMisread(DecodeStep):
    def count(self, cache):
        past = 0 if cache is None else cache[0][0].shape[1]          # BUG: axis 1 holds the kv heads
        return past


class StepSqueezeDropsBatch(DecodeStep):
    def embed(self, model, tokens, past):
        x = model.embed(tokens, past).squeeze(0)                             # BUG: keep the batch of one
        return x


class StepKvHeadIndexWrong(DecodeStep):
    def share(self, key, value, group):
        n_kv = key.shape[1]
        n_heads = n_kv * group
        index = torch.arange(n_heads) // n_kv                                # BUG: // group
        return key[:, index], value[:, index]

class StepCacheNotAppended(DecodeStep):
    def keep(self, new_cache, layer, kept, key, value):
        new_cache.append(kept if kept is not None else (key, value))        # BUG: (key, value), appended
        return new_cache


class StepNewTokenNotAttended(DecodeStep):
    """Puts the appended keys and values in the cache it returns, but attends to the given cache."""

    def append(self, kept, key, value):
        if kept is None:
            return key, value
        past_keys, past_values = kept
        self.for_cache = torch.cat([past_keys, key], dim=-2), torch.cat([past_values, value], dim=-2)
        key, value = past_keys, past_values                                  # BUG: the appended ones
        return key, value

    def keep(self, new_cache, layer, kept, key, value):
        new_cache.append((key, value) if kept is None else self.for_cache)
        return new_cache


class StepCacheKeysValuesSwapped(DecodeStep):
    def keep(self, new_cache, layer, kept, key, value):
        new_cache.append((value, key))                                       # BUG: (key, value)
        return new_cache


class StepCacheLayerMixedUp(DecodeStep):
    def cached(self, cache, layer):
        past_keys, past_values = cache[0]                                    # BUG: cache[layer]
        return past_keys, past_values


class StepCacheReadAtWrongIndex(DecodeStep):
    def cached(self, cache, layer):
        past_keys, past_values = cache[0][layer], cache[1][layer]            # BUG: cache[layer]
        return past_keys, past_values


class StepNoBlockWithoutCache(DecodeStep):
    """The recipe's steps, the loop over the blocks zipped with the cache's entries."""

    def __call__(self, model, tokens, cache):
        past = self.count(cache)                                     # positions already cached
        x = self.embed(model, tokens, past)                          # (batch, n_new, d_model)
        new_cache = self.start_cache(cache)
        for (layer, block), _ in zip(enumerate(model.blocks), cache or [], strict=False):  # BUG
            attention, block_input = block.attention, x
            normed = self.norm_attention(block, x)
            query = self.split(attention.W_q(normed), model.n_heads)           # (batch, h, n_new, d)
            key = self.split(attention.W_k(normed), model.n_kv_heads)          # (batch, h_kv, n_new, d)
            value = self.split(attention.W_v(normed), model.n_kv_heads)
            kept = None if cache is None else self.cached(cache, layer)        # what was cached
            key, value = self.append(kept, key, value)                         # (batch, h_kv, n_all, d)
            self.keep(new_cache, layer, kept, key, value)
            key, value = self.share(key, value, model.n_heads // model.n_kv_heads)
            heads = self.attend(model, query, key, value)                      # (batch, h, n_new, d)
            x = self.add_attention(x, attention, self.merge(heads))
            x = self.add_mlp(x, block, block_input)
        return self.unembed(model, x), new_cache


class StepCacheLayerNotAdvanced(DecodeStep):
    """The recipe's steps, with the layer index set once and never advanced."""

    def __call__(self, model, tokens, cache):
        past = self.count(cache)                                     # positions already cached
        x = self.embed(model, tokens, past)                          # (batch, n_new, d_model)
        new_cache = [] if cache is None else list(cache)             # a new list: the given cache stays
        layer = 0
        for block in model.blocks:                                           # BUG: enumerate(model.blocks)
            attention, block_input = block.attention, x
            normed = self.norm_attention(block, x)
            query = self.split(attention.W_q(normed), model.n_heads)           # (batch, h, n_new, d)
            key = self.split(attention.W_k(normed), model.n_kv_heads)          # (batch, h_kv, n_new, d)
            value = self.split(attention.W_v(normed), model.n_kv_heads)
            kept = new_cache[layer] if layer < len(new_cache) else None        # this layer's entry so far
            key, value = self.append(kept, key, value)                         # (batch, h_kv, n_all, d)
            self.keep(new_cache, layer, kept, key, value)
            key, value = self.share(key, value, model.n_heads // model.n_kv_heads)
            heads = self.attend(model, query, key, value)                      # (batch, h, n_new, d)
            x = self.add_attention(x, attention, self.merge(heads))
            x = self.add_mlp(x, block, block_input)
        return self.unembed(model, x), new_cache


class StepCachePrepended(DecodeStep):
    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            key, value = torch.cat([key, past_keys], dim=-2), torch.cat([value, past_values], dim=-2)  # BUG
        return key, value


class StepLastPositionOnly(DecodeStep):
    def unembed(self, model, x):
        logits = model.unembed(x)[:, -1:]                                    # BUG: every position
        return logits


class StepCacheLowPrecision(DecodeStep):
    def append(self, kept, key, value):
        key, value = key.bfloat16().float(), value.bfloat16().float()        # BUG: float32 as it came
        return super().append(kept, key, value)


class StepValuesFromCachedKeys(DecodeStep):
    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            key = torch.cat([past_keys, key], dim=-2)
            value = torch.cat([past_keys, value], dim=-2)                   # BUG: past_values
        return key, value


class StepKeysNotAppended(DecodeStep):
    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            pass                                                             # BUG: keys not appended
            value = torch.cat([past_values, value], dim=-2)
        return key, value


class StepValuesNotAppended(DecodeStep):
    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            key = torch.cat([past_keys, key], dim=-2)
            pass                                                             # BUG: values not appended
        return key, value


class StepCacheWrongAxis(DecodeStep):
    def append(self, kept, key, value):
        if kept is not None:
            past_keys, past_values = kept
            key, value = torch.cat([past_keys, key], dim=1), torch.cat([past_values, value], dim=1)  # BUG
        return key, value


class StepCachesRepeatedHeads(DecodeStep):
    """The key/value heads go into the cache after repeat_interleave: n_heads of them, not n_kv_heads."""

    def __call__(self, model, tokens, cache):
        self.group = model.n_heads // model.n_kv_heads
        return super().__call__(model, tokens, cache)

    def keep(self, new_cache, layer, kept, key, value):
        new_cache.append(self.share(key, value, self.group))         # BUG: new_cache.append((key, value))
        return new_cache


class StepCacheModifiedInPlace(DecodeStep):
    def start_cache(self, cache):
        new_cache = cache if cache is not None else []                       # BUG: the caller's list, changed
        return new_cache


DECODING_BUGS = {
    "missing_scale": StepMissingScale(),
    "wrong_scale": StepWrongScale(),
    "scale_multiplied": StepScaleMultiplied(),
    "scale_by_d_model": StepScaleByDModel(),
    "softmax_wrong_axis": StepSoftmaxWrongAxis(),
    "mask_inverted": StepMaskInverted(),
    "additive_mask_wrong": StepAdditiveMaskWrong(),
    "causal_off_by_one": StepCausalOffByOne(),
    "causal_mask_missing": StepNoCausalMask(),
    "heads_split_without_transpose": StepHeadsSplitWithoutTranspose(),
    "heads_merged_without_transpose": StepHeadsMergedWithoutTranspose(),
    "missing_contiguous": StepMissingContiguous(),
    "batch_one_only": StepBatchOneOnly(),
    "dropout_left_on": StepDropoutLeftOn(),
    "missing_output_projection": StepMissingOutputProjection(),
    "kv_heads_repeated_not_interleaved": StepKvHeadsRepeated(),
    "final_norm_skipped": StepFinalNormSkipped(),
    "attention_norm_skipped": StepAttentionNormSkipped(),
    "attention_residual_missing": StepAttentionResidualMissing(),
    "residual_from_normed": StepResidualFromNormed(),
    "mlp_residual_missing": StepMlpResidualMissing(),
    "mlp_skipped": StepMlpSkipped(),
    "first_block_only": StepFirstBlockOnly(),
    "state_outside_cache": StepStateOutsideCache(),
    "norms_mixed_up": StepNormsMixedUp(),
    "mlp_norm_skipped": StepMlpNormSkipped(),
    "parallel_block": StepParallelBlock(),
    "positions_not_advanced": StepPositionsNotAdvanced(),
    "cached_length_misread": StepCachedLengthMisread(),
    "embedding_added_twice": StepEmbeddingAddedTwice(),
    "is_causal_top_left": StepTopLeft(),
    "cache_not_appended": StepCacheNotAppended(),
    "squeeze_drops_batch": StepSqueezeDropsBatch(),
    "kv_head_index_wrong": StepKvHeadIndexWrong(),
    "new_token_not_attended": StepNewTokenNotAttended(),
    "cache_keys_values_swapped": StepCacheKeysValuesSwapped(),
    "values_from_cached_keys": StepValuesFromCachedKeys(),
    "cache_low_precision": StepCacheLowPrecision(),
    "cache_layer_mixed_up": StepCacheLayerMixedUp(),
    "cache_read_at_wrong_index": StepCacheReadAtWrongIndex(),
    "no_block_without_cache": StepNoBlockWithoutCache(),
    "cache_layer_not_advanced": StepCacheLayerNotAdvanced(),
    "cache_prepended": StepCachePrepended(),
    "last_position_only": StepLastPositionOnly(),
    "causal_offset_negated": StepCausalOffsetNegated(),
    "mask_cached_columns_last": StepMaskCachedColumnsLast(),
    "static_buffer_whole_attended": StepStaticBufferWholeAttended(),
    "counter_advanced_per_layer": StepCounterAdvancedPerLayer(),
    "counter_advanced_before_write": StepCounterAdvancedBeforeWrite(),
    "prefill_pieces_isolated": StepPrefillPiecesIsolated(),
    "keys_not_appended": StepKeysNotAppended(),
    "values_not_appended": StepValuesNotAppended(),
    "cache_wrong_axis": StepCacheWrongAxis(),
    "cache_modified_in_place": StepCacheModifiedInPlace(),
    "cache_holds_repeated_heads": StepCachesRepeatedHeads(),
}

BUG_IDS = tuple(dict.fromkeys([*ATTENTION_BUGS, *MULTI_HEAD_BUGS, *CAUSAL_MASK_BUGS, *PADDING_MASK_BUGS,
                               *DECODING_BUGS]))


def get(bug_id, family=None):
    """The zoo entry for ``bug_id``; ``family`` is 'attention', 'multi_head', 'causal', 'padding' or
    'decoding'.

    Several ids (``mask_inverted``, ``missing_scale``, ...) exist in more than one family; without
    ``family`` the first family's version is returned, in that order.
    """
    families = {
        "attention": ATTENTION_BUGS, "multi_head": MULTI_HEAD_BUGS,
        "causal": CAUSAL_MASK_BUGS, "padding": PADDING_MASK_BUGS, "decoding": DECODING_BUGS,
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
