"""Learner versions of notebook 05's ``MyMultiHeadAttention(d_model, n_heads)``, for check_multi_head.

An ``nn.Module`` with ``nn.Linear`` layers ``W_q``, ``W_k``, ``W_v``, ``W_o`` (each d_model x d_model)
and ``forward(x, mask=None)``: x ``(batch, n, d_model)``, mask None or bool broadcasting to
``(n, n)``, True = may attend; returns ``(batch, n, d_model)`` or ``(output, weights)``. A row with
every key masked must not come out NaN. Written independently of the checkers and of attnviz.zoo.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

import attnviz

from ._case import FAIL, PASS, Case

# notebook 05 leaves these globals behind (section 1): code that reads them works only there
batch, n, d_model, n_heads = 2, 4, 8, 2
d_k = d_model // n_heads


class Linears(nn.Module):
    """The exercise's given __init__: four d_model x d_model projections."""

    bias = False

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=self.bias)
        self.W_k = nn.Linear(d_model, d_model, bias=self.bias)
        self.W_v = nn.Linear(d_model, d_model, bias=self.bias)
        self.W_o = nn.Linear(d_model, d_model, bias=self.bias)


# ---------------------------------------------------------------- correct -----------------------------

class Solution(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):
            return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        merged = (weights @ v).transpose(1, 2).contiguous().view(b, t, dm)
        return self.W_o(merged)


class ReshapePermute(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)    # (b, h, t, d_k)
        k = self.W_k(x).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)
        v = self.W_v(x).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.permute(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(out), weights


class UnflattenFlatten(Linears):
    def forward(self, x, mask=None):
        q, k, v = (w(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(-3, -2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.mT * self.d_k ** -0.5
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
        out = scores.softmax(-1) @ v                                  # (b, h, t, d_k)
        return self.W_o(out.transpose(-3, -2).flatten(-2))


class LoopOverHeads(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        heads = []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            s = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            heads.append(torch.softmax(s, -1) @ v[..., cols])
        return self.W_o(torch.cat(heads, dim=-1))


class ChunkHeads(Linears):
    def forward(self, x, mask=None):
        q = torch.stack(self.W_q(x).chunk(self.n_heads, dim=-1), dim=1)     # (b, h, t, d_k)
        k = torch.stack(self.W_k(x).chunk(self.n_heads, dim=-1), dim=1)
        v = torch.stack(self.W_v(x).chunk(self.n_heads, dim=-1), dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = scores.softmax(-1) @ v
        return self.W_o(torch.cat(out.unbind(dim=1), dim=-1))


class SplitHeads(Linears):
    def forward(self, x, mask=None):
        outs = []
        pieces = zip(*(torch.split(w(x), self.d_k, dim=-1) for w in (self.W_q, self.W_k, self.W_v)),
                     strict=True)
        for qh, kh, vh in pieces:
            s = torch.einsum("btd,bsd->bts", qh, kh) / math.sqrt(self.d_k)
            if mask is not None:
                s = torch.where(mask, s, torch.finfo(s.dtype).min)
            outs.append(torch.einsum("bts,bsd->btd", s.softmax(-1), vh))
        return self.W_o(torch.cat(outs, -1))


class EinsumHeads(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).view(b, t, self.n_heads, self.d_k)
        k = self.W_k(x).view(b, t, self.n_heads, self.d_k)
        v = self.W_v(x).view(b, t, self.n_heads, self.d_k)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        out = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, t, dm)
        return self.W_o(out), weights


class FusedSDPA(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.W_o(out.transpose(1, 2).reshape(b, t, dm))


class BmmFoldedHeads(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        h, dk = self.n_heads, self.d_k
        def fold(z):                                   # (b, t, dm) -> (b*h, t, dk)
            return z.view(b, t, h, dk).transpose(1, 2).reshape(b * h, t, dk)
        q, k, v = fold(self.W_q(x)), fold(self.W_k(x)), fold(self.W_v(x))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dk)
        if mask is not None:
            scores = scores.masked_fill(~torch.broadcast_to(mask, (t, t)), torch.finfo(scores.dtype).min)
        out = torch.bmm(scores.softmax(-1), v).view(b, h, t, dk).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(out)


class LoopBatchAndHeads(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        rows = []
        for i in range(x.shape[0]):
            heads = []
            for h in range(self.n_heads):
                c = slice(h * self.d_k, (h + 1) * self.d_k)
                s = q[i, :, c] @ k[i, :, c].T / math.sqrt(self.d_k)
                if mask is not None:
                    s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
                heads.append(s.softmax(-1) @ v[i, :, c])
            rows.append(torch.cat(heads, -1))
        return self.W_o(torch.stack(rows))


class WithBias(Solution):
    bias = True                      # the checker sets biases to 0


class MinusInfGuarded(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            has_key = mask.any(-1, keepdim=True)
            scores = torch.where(has_key, scores, torch.zeros_like(scores))   # no -inf-only rows
        out = (scores.softmax(-1) @ v).transpose(1, 2).contiguous().view(b, t, dm)
        return self.W_o(out)


class CourseFunctionPerHead(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        out, weights = attnviz.scaled_dot_product_attention(q, k, v, mask)
        return self.W_o(out.transpose(1, 2).reshape(b, t, dm)), weights


class StableSoftmaxByHand(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).reshape(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        e = (s - s.max(dim=-1, keepdim=True).values).exp()
        w = e / e.sum(-1, keepdim=True)
        return self.W_o((w @ v).transpose(1, 2).reshape(b, t, dm))


class DropoutZero(Solution):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x, mask=None):
        return self.dropout(super().forward(x, mask))


class FunctionalLinear(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (F.linear(x, w.weight, w.bias).view(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q.matmul(k.transpose(2, 3)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
        out = scores.softmax(dim=3).matmul(v).permute(0, 2, 1, 3).contiguous().view(b, t, dm)
        return F.linear(out, self.W_o.weight, self.W_o.bias)


class SoftmaxModuleAttribute(Linears):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.softmax = nn.Softmax(dim=-1)
        self.scale = 1 / math.sqrt(self.d_k)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).reshape(b, -1, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores.masked_fill(~mask.bool(), torch.finfo(scores.dtype).min)
        weights = self.softmax(scores)
        return self.W_o((weights @ v).transpose(1, 2).reshape(b, -1, dm)), weights


class LoopHeadsReturnsWeights(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        outs, all_weights = [], []
        heads = zip(q.split(self.d_k, -1), k.split(self.d_k, -1), v.split(self.d_k, -1), strict=True)
        for qh, kh, vh in heads:
            s = qh @ kh.mT / self.d_k ** 0.5
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            w = s.softmax(-1)
            outs.append(w @ vh)
            all_weights.append(w)
        return self.W_o(torch.cat(outs, -1)), torch.stack(all_weights, dim=1)


# ---------------------------------------------------------------- buggy: reshapes ---------------------

class SplitViewNoTranspose(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):
            return z.view(b, self.n_heads, t, self.d_k)             # no transpose
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(-1) @ v).transpose(1, 2).contiguous().view(b, t, dm)
        return self.W_o(merged)


class SplitReshapeNoTranspose(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).reshape(b, self.n_heads, t, -1) for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        out = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
        return self.W_o(out.permute(0, 2, 1, 3).reshape(b, t, dm))


class HeadsNeverTransposed(Linears):
    """Attends over the head axis: (b, t, h, d_k) straight into q @ kᵀ."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k) for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)         # (b, t, h, h)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).reshape(b, t, dm))


class HeadsNeverTransposedUnflatten(Linears):
    def forward(self, x, mask=None):
        q, k, v = (w(x).unflatten(-1, (self.n_heads, self.d_k)) for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.mT / math.sqrt(self.d_k)
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).flatten(-2))


class SplitTransposeDroppedMergeKept(Linears):
    """The course's recipe with only the split's transpose deleted: heads left on axis 2, the merge
    still transposes back; a mask of (n, n) then meets scores of (b, t, h, h)."""

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        def split(t):
            return t.view(batch, n, self.n_heads, self.d_k)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(batch, n, d_model)
        return self.W_o(merged)


class SplitReshapeKeptWhereMask(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).reshape(b, t, self.n_heads, self.d_k)
        k = self.W_k(x).reshape(b, t, self.n_heads, self.d_k)
        v = self.W_v(x).reshape(b, t, self.n_heads, self.d_k)
        att = torch.einsum("bthd,btgd->bthg", q, k) * self.d_k ** -0.5
        if mask is not None:
            att = torch.where(mask, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        out = torch.einsum("bthg,btgd->bthd", att.softmax(-1), v)
        return self.W_o(out.permute(0, 2, 1, 3).reshape(b, t, dm))


class SplitWrittenPerTensor(Linears):
    """Each of the three split on its own line, the notebook's way, then merged with permute."""

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        query = self.W_q(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        key = self.W_k(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        value = self.W_v(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        scores = query @ key.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(dim=-1) @ value).permute(0, 2, 1, 3).reshape(batch, n, d_model)
        return self.W_o(merged)


class EinsumIntoOutputLayout(Linears):
    """The blend written by einsum straight into (batch, n, heads, d_k), then flattened: right."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            att = torch.where(mask, att, torch.finfo(att.dtype).min)
        y = torch.einsum("bhqk,bhkd->bqhd", att.softmax(-1), v)
        return self.W_o(y.flatten(-2))


class KeysSplitWithoutTranspose(Linears):
    """Queries and values split right; the keys viewed straight as (b, h, t, d_k)."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).reshape(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
        k = self.W_k(x).reshape(b, self.n_heads, t, self.d_k)
        v = self.W_v(x).reshape(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, t, dm))


class MergeSwapsLastTwoAxes(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        att = (q @ k.transpose(-2, -1)) * self.d_k ** -0.5
        if mask is not None:
            att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
        y = att.softmax(dim=-1) @ v                       # (b, h, t, d_k)
        return self.W_o(y.transpose(-2, -1).reshape(b, t, dm))


class MergeViewNoTransposeFinfo(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):
            return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # notebook 05's advice
        merged = (scores.softmax(-1) @ v).contiguous().view(b, t, dm)           # no transpose back
        return self.W_o(merged)


class MergeReshapeNoTransposeFinfo(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return self.W_o(torch.matmul(scores.softmax(-1), v).reshape(b, t, dm))


class MergePermuteHeadsLast(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-1, -2) / self.d_k ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        heads = scores.softmax(dim=-1) @ v                                   # (b, h, t, d_k)
        return self.W_o(heads.permute(0, 2, 3, 1).reshape(b, t, dm))       # (b, t, d_k, h) flattened


class MergeEinsumFeaturesFirst(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        h = self.n_heads
        q = self.W_q(x).reshape(b, t, h, dm // h)
        k = self.W_k(x).reshape(b, t, h, dm // h)
        v = self.W_v(x).reshape(b, t, h, dm // h)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dm // h)
        if mask is not None:
            scores = torch.where(mask, scores, torch.full_like(scores, -1e9))
        out = torch.einsum("bhqk,bkhd->bqdh", scores.softmax(-1), v)       # d before h
        return self.W_o(out.reshape(b, t, dm))


class SplitFeaturesStrided(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):                                             # (b, t, d_k, h) -> (b, h, t, d_k)
            return z.reshape(b, t, self.d_k, self.n_heads).permute(0, 3, 1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = scores.softmax(-1) @ v
        return self.W_o(out.transpose(1, 2).reshape(b, t, dm))


class SplitStridedMergedBack(Linears):
    def forward(self, x, mask=None):
        h = self.n_heads
        q, k, v = (w(x).unflatten(-1, (-1, h)).movedim(-1, 1) for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        out = torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
        return self.W_o(out.movedim(1, -1).flatten(-2))                     # back the same strided way


class RawWeightProducts(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = x @ self.W_q.weight, x @ self.W_k.weight, x @ self.W_v.weight
        q, k, v = (z.view(b, t, self.n_heads, self.d_k).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)
        return merged @ self.W_o.weight


class MatmulWithWeightMatrices(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        weights = {name: getattr(self, name).weight for name in ("W_q", "W_k", "W_v")}
        q, k, v = (torch.matmul(x, weights[n]).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)
                   for n in ("W_q", "W_k", "W_v"))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        out = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, dm)
        return self.W_o(out)


class ReturnsWithSkipConnection(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)
        return x + self.W_o(out)                                     # "like in the Transformer"


class ResidualViaEinsum(Linears):
    def forward(self, x, mask=None):
        h = self.n_heads
        q, k, v = (w(x).unflatten(-1, (h, -1)) for w in (self.W_q, self.W_k, self.W_v))   # (b, t, h, d_k)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        heads = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).flatten(-2)
        out = self.W_o(heads)
        out += x                                                       # the residual, kept here
        return out


class NormedOutput(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).reshape(b, t, self.n_heads, -1).permute(0, 2, 1, 3)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = self.W_o(torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, dm))
        return F.layer_norm(out, (dm,))                                # "keeps the scale stable"


class PreNormInside(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        x = F.layer_norm(x, (dm,))                                     # pre-norm, inside the layer
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class HeadWidthBeforeHeads(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.d_k, self.n_heads).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class UnflattenWidthFirst(Linears):
    def forward(self, x, mask=None):
        q, k, v = (w(x).unflatten(-1, (self.d_k, self.n_heads)).transpose(-3, -2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.mT / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(-3, -2).flatten(-2))


class MergeNoTransposeMinusInf(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):
            return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return self.W_o((scores.softmax(-1) @ v).reshape(b, t, dm))


class NoTransposeEitherWay(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, self.n_heads, t, self.d_k) for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).view(b, t, dm))


class MissingContiguous(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        def split(z):
            return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(-1) @ v).transpose(1, 2).view(b, t, dm)     # view right after transpose
        return self.W_o(merged)


class MissingContiguousPermute(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        out = (scores.softmax(-1) @ v).permute(0, 2, 1, 3)
        return self.W_o(out.view(b, t, dm))


class HeadsAveragedWeights(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1).mean(dim=1)                     # one pattern for all heads
        return self.W_o(weights @ self.W_v(x)), weights


class HeadsAveragedOutputs(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        per_head = scores.softmax(-1) @ v                            # (b, h, t, d_k)
        averaged = per_head.mean(dim=1)                              # (b, t, d_k)
        return self.W_o(averaged.repeat(1, 1, self.n_heads))


class HeadsAveragedScores(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        cols = [slice(h * self.d_k, (h + 1) * self.d_k) for h in range(self.n_heads)]
        scores = torch.stack([q[..., c] @ k[..., c].transpose(-2, -1) for c in cols]).mean(0)
        scores = scores / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o(scores.softmax(-1) @ v)


class NeverSplitScaledByHead(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)      # full-width scores, per-head scale
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o(scores.softmax(-1) @ v)


class NeverSplitScaledByModel(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return self.W_o(torch.einsum("bqk,bkd->bqd", scores.softmax(-1), v))


class KeyNotTransposed(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k / math.sqrt(self.d_k)                        # works only when t == d_k
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class KeyDotT(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.matmul(q, k.T) / math.sqrt(self.d_k)           # .T on a 4-D tensor
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


# ---------------------------------------------------------------- buggy: one line of the recipe -------

class _OneLine(Linears):
    """The recipe with hooks; each buggy subclass below changes one step, as a learner would."""

    def split(self, z):
        b, t, _ = z.shape
        return z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)

    def scale(self, scores):
        return scores / math.sqrt(self.d_k)

    def apply_mask(self, scores, mask):
        return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)

    def normalise(self, scores):
        return scores.softmax(dim=-1)

    def after_softmax(self, weights, mask):
        return weights

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.split(self.W_q(x)), self.split(self.W_k(x)), self.split(self.W_v(x))
        scores = self.scale(q @ k.transpose(-2, -1))
        if mask is not None:
            scores = self.apply_mask(scores, mask)
        weights = self.after_softmax(self.normalise(scores), mask)
        merged = (weights @ v).transpose(1, 2).contiguous().view(b, t, dm)
        return self.W_o(merged)


class OneLineCorrect(_OneLine):
    pass


class NoScale(_OneLine):
    def scale(self, scores):
        return scores


class ScaleByDModel(_OneLine):
    def scale(self, scores):
        return scores / math.sqrt(self.n_heads * self.d_k)


class StaleGlobalDk(_OneLine):
    def scale(self, scores):
        return scores / math.sqrt(d_k)                       # notebook 05's global d_k = 4


class DkPowerOneHalf(_OneLine):
    def scale(self, scores):
        return scores / self.d_k ** 1 / 2


class DivideByDk(_OneLine):
    def scale(self, scores):
        return scores / self.d_k


class MultiplyBySqrtDk(_OneLine):
    def scale(self, scores):
        return scores * math.sqrt(self.d_k)


class SoftmaxOverQueries(_OneLine):
    def normalise(self, scores):
        return scores.softmax(dim=-2)


class SoftmaxOverHeads(_OneLine):
    def normalise(self, scores):
        return torch.softmax(scores, dim=1)


class SoftmaxOverBatch(_OneLine):
    def normalise(self, scores):
        return F.softmax(scores, dim=0)


class SoftmaxByHandNoMax(_OneLine):
    def normalise(self, scores):
        e = torch.exp(scores)
        return e / e.sum(-1, keepdim=True)


class LogSoftmax(_OneLine):
    def normalise(self, scores):
        return scores.log_softmax(-1)


class MaskIgnored(_OneLine):
    def apply_mask(self, scores, mask):
        return scores


class MaskNotAssigned(_OneLine):
    def apply_mask(self, scores, mask):
        scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return scores


class MaskInverted(_OneLine):
    def apply_mask(self, scores, mask):
        return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


class MaskAfterSoftmax(_OneLine):
    def apply_mask(self, scores, mask):
        return scores

    def after_softmax(self, weights, mask):
        return weights if mask is None else weights.masked_fill(~mask, 0.0)


class MaskAfterSoftmaxMinusInf(_OneLine):
    def apply_mask(self, scores, mask):
        return scores

    def after_softmax(self, weights, mask):
        return weights if mask is None else weights.masked_fill(~mask, float("-inf"))


class MaskFillZero(_OneLine):
    def apply_mask(self, scores, mask):
        return scores.masked_fill(~mask, 0)


class MaskMinusInf(_OneLine):
    def apply_mask(self, scores, mask):
        return scores.masked_fill(~mask, float("-inf"))


class AdditiveMaskFloat(_OneLine):
    def apply_mask(self, scores, mask):
        return scores + mask.float()


class AdditiveOneMinusMaskInf(_OneLine):
    def apply_mask(self, scores, mask):
        return scores + (1.0 - mask.float()) * float("-inf")


class FillMinus1e9(_OneLine):
    def apply_mask(self, scores, mask):
        return scores.masked_fill(~mask, -1e9)


class DropoutLayerOnWeights(_OneLine):
    """Dropout on the attention weights as a layer, as in many tutorials' modules: off after eval().
    Not a case of CASES (in training mode it is random, which _probe calls a symptom):
    tests/test_check.py holds that check_multi_head, which calls eval(), passes it and says so."""

    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.attention_dropout = nn.Dropout(0.1)

    def after_softmax(self, weights, mask):
        return self.attention_dropout(weights)


class DropoutOnWeights(_OneLine):
    def after_softmax(self, weights, mask):
        return F.dropout(weights, p=0.1)             # training=True, whatever the module's mode


class DetachedWeights(_OneLine):
    def after_softmax(self, weights, mask):
        return weights.detach()


class MaskUnsqueezedInPlace(_OneLine):
    def apply_mask(self, scores, mask):
        mask.unsqueeze_(0).unsqueeze_(0)             # (1, 1, n, n) for the heads, on the caller's mask
        return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)


class NoOutputProjection(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)


class OutputProjectionOnValues(Linears):
    """Round 26's learner: W_o applied to the values before the split, and not after the merge."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (t_.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for t_ in (self.W_q(x), self.W_k(x), self.W_o(self.W_v(x))))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)


class LoopHeadsNoOutputProjection(Linears):
    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        heads = []
        for h in range(self.n_heads):
            c = slice(h * self.d_k, (h + 1) * self.d_k)
            s = q[..., c] @ k[..., c].transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                s = torch.where(mask, s, torch.finfo(s.dtype).min)
            heads.append(s.softmax(-1) @ v[..., c])
        return torch.cat(heads, -1)


class FirstSequenceOnly(Linears):
    def forward(self, x, mask=None):
        t, dm = x.shape[1], x.shape[2]
        x0 = x[0]                                                     # (t, d_model)
        q, k, v = (w(x0).view(t, self.n_heads, self.d_k).transpose(0, 1)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = (scores.softmax(-1) @ v).transpose(0, 1).reshape(t, dm)
        return self.W_o(out).unsqueeze(0).expand_as(x)


class SqueezedBatch(Linears):
    def forward(self, x, mask=None):
        x = x.squeeze(0)                                              # (t, d_model) when batch == 1
        t, dm = x.shape
        q, k, v = (w(x).view(t, self.n_heads, self.d_k).transpose(0, 1)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(0, 1).reshape(t, dm)).unsqueeze(0)


class StaleGlobalShapes(Linears):
    def forward(self, x, mask=None):
        def split(z):
            return z.view(batch, n, self.n_heads, self.d_k).transpose(1, 2)   # notebook's batch=2, n=4
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(x.shape))


class WeightsTimesKeys(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2) for w in (self.W_q, self.W_k))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ k).transpose(1, 2).reshape(b, t, dm))


class KeyValueProjectionsSwapped(_OneLine):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.split(self.W_q(x)), self.split(self.W_v(x)), self.split(self.W_k(x))
        scores = self.scale(q @ k.transpose(-2, -1))
        if mask is not None:
            scores = self.apply_mask(scores, mask)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class QueryKeyProjectionsSwapped(_OneLine):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = self.split(self.W_k(x)), self.split(self.W_q(x)), self.split(self.W_v(x))
        scores = self.scale(q @ k.transpose(-2, -1))
        if mask is not None:
            scores = self.apply_mask(scores, mask)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class UnderNoGrad(Solution):
    def forward(self, x, mask=None):
        with torch.no_grad():
            return super().forward(x, mask)


class OutputToFloat32(Solution):
    def forward(self, x, mask=None):
        return super().forward(x, mask).to(torch.float32)      # float64 module, float32 out


class ScalesInputInPlace(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x.div_(math.sqrt(self.d_k)))             # scales the caller's x (and so k and v)
        q, k, v = (z.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for z in (q, self.W_k(x), self.W_v(x)))
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class WrongAttributeNames(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (p(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        return self.out_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


# ---------------------------------------------------------------- round 4 of fresh learners ----------

class SqueezesTheResult(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q = self.W_q(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
        k = self.W_k(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
        v = self.W_v(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = (scores.softmax(-1) @ v).transpose(1, 2).flatten(2)
        return self.W_o(out).squeeze()                                # "clean" output


class EinsumSqueezeBatch(Linears):
    def forward(self, x, mask=None):
        h = self.n_heads
        q, k, v = (w(x).reshape(x.shape[0], x.shape[1], h, -1) for w in (self.W_q, self.W_k, self.W_v))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k).squeeze(0) / self.d_k ** 0.5   # per-head scores
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        o = torch.einsum("...hqk,...khd->...qhd", s.softmax(-1), v.squeeze(0))
        return self.W_o(o.flatten(-2))


class ScaleFoldedIntoWeight(Linears):
    def forward(self, x, mask=None):
        with torch.no_grad():
            self.W_q.weight.mul_(self.d_k ** -0.5)                        # scale once, in the weight
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class KeyWeightScaledViaData(Linears):
    def forward(self, x, mask=None):
        self.W_k.weight.data = self.W_k.weight.data / math.sqrt(self.d_k)    # "pre-scaled keys"
        b, t, dm = x.shape
        def split(z):
            return z.view(b, t, self.n_heads, self.d_k).permute(0, 2, 1, 3)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return self.W_o(torch.matmul(torch.softmax(scores, -1), v).permute(0, 2, 1, 3).reshape(b, t, dm))


class MaskGetsHeadAxisAtOne(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(1), torch.finfo(scores.dtype).min)   # for the heads
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class EinsumBlendOverQueries(Linears):
    def forward(self, x, mask=None):
        q, k, v = (w(x).unflatten(-1, (self.n_heads, self.d_k)) for w in (self.W_q, self.W_k, self.W_v))
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        o = torch.einsum("bhij,bihd->bjhd", s.softmax(-1), v)         # sums over i, the queries
        return self.W_o(o.flatten(-2))


class SlicesOverlapping(Linears):
    def forward(self, x, mask=None):
        q_all, k_all, v_all = self.W_q(x), self.W_k(x), self.W_v(x)
        outs = []
        for h in range(self.n_heads):
            cols = slice(h, h + self.d_k)                             # meant h * d_k : (h + 1) * d_k
            s = q_all[..., cols] @ k_all[..., cols].transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
            outs.append(s.softmax(-1) @ v_all[..., cols])
        return self.W_o(torch.cat(outs, dim=-1))


class StackedOverlappingViews(Linears):
    def forward(self, x, mask=None):
        def heads(z):                                                 # (b, t, d_model) -> (b, h, t, d_k)
            return torch.stack([z[:, :, i:i + self.d_k] for i in range(self.n_heads)], dim=1)
        q, k, v = heads(self.W_q(x)), heads(self.W_k(x)), heads(self.W_v(x))
        att = torch.softmax(torch.where(mask, q @ k.mT / self.d_k ** 0.5, -1e9) if mask is not None
                            else q @ k.mT / self.d_k ** 0.5, dim=-1)
        return self.W_o((att @ v).permute(0, 2, 1, 3).flatten(2))


class BooleanIndexedMask(Linears):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores[~mask] = torch.finfo(scores.dtype).min             # mask (t, t) vs scores (b, h, t, t)
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm))


class AdditiveDtypeMin(Solution):
    """An additive mask filled with the dtype's own minimum: in float16 a negative score plus it is -inf."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores + torch.zeros_like(scores).masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(out)


class AdditiveWhereMin(Solution):
    def forward(self, x, mask=None):
        b, t, dm = x.shape
        heads = [w(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
                 for w in (self.W_q, self.W_k, self.W_v)]
        scores = heads[0] @ heads[1].mT * self.d_k**-0.5
        if mask is not None:
            low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype)
            scores = scores + torch.where(mask, torch.zeros((), dtype=scores.dtype), low)
        return self.W_o((scores.softmax(-1) @ heads[2]).transpose(1, 2).flatten(2))


class AdditiveHalfMin(Solution):
    """An additive mask at half the dtype's minimum: room left for any score, finite in float16 too."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores + (~mask).to(scores.dtype) * (torch.finfo(scores.dtype).min / 2)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dm)
        return self.W_o(out)


class BertAdditiveMask(Linears):
    """BERT's old extended attention mask: (1 - mask) * -10000 added to the scores."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        heads = [w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                 for w in (self.W_q, self.W_k, self.W_v)]
        scores = heads[0] @ heads[1].transpose(-1, -2) / self.d_k ** 0.5
        if mask is not None:
            scores = scores + (1.0 - mask.to(scores.dtype)) * -10000.0
        context = torch.softmax(scores, dim=-1) @ heads[2]
        return self.W_o(context.transpose(1, 2).reshape(b, t, dm))


class CausalBufferToo(Linears):
    """A GPT block's attention: a causal buffer registered in __init__, combined with the mask given."""

    def __init__(self, d_model, n_heads, block_size=32):
        super().__init__(d_model, n_heads)
        self.register_buffer("tri", torch.ones(block_size, block_size, dtype=torch.bool).tril())

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        allowed = self.tri[:t, :t] if mask is None else self.tri[:t, :t] & mask
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return self.W_o(out.transpose(1, 2).reshape(b, t, dm))


class HandSoftmaxMaxFirst(Linears):
    """A softmax by hand, stable by the row's max, with the mask as a 0/1 factor on the exps."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        if mask is not None:
            e = e * mask
        weights = e / e.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(e.dtype).tiny)
        return self.W_o((weights @ v).transpose(1, 2).reshape(b, t, dm))


class HandSoftmaxMaskedFirst(Linears):
    """The same softmax by hand, with the blocked scores filled before the max is taken: right."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        weights = e / e.sum(dim=-1, keepdim=True)
        return self.W_o((weights @ v).transpose(1, 2).reshape(b, t, dm))


class SoftmaxAlwaysFloat32(Solution):
    """Hugging Face's modeling code: F.softmax(..., dtype=torch.float32) whatever the module's dtype;
    in float64 the fill finfo(float64).min becomes -inf and a fully masked position is NaN."""

    def forward(self, x, mask=None):
        b, t, dm = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = torch.matmul(q, k.transpose(2, 3)) * self.d_k**-0.5
        if mask is not None:
            scores = torch.where(mask, scores, torch.tensor(torch.finfo(scores.dtype).min,
                                                            dtype=scores.dtype))
        weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.W_o((weights @ v).transpose(1, 2).reshape(b, t, dm))


# ---- round 19 of unseen learner code ---------------------------------------------------------------

class SequenceFirstBmm(Linears):
    """nn.MultiheadAttention's own layout, (L, N, E), read into the exercise's (batch, n, d_model)."""

    def forward(self, x, mask=None):
        L, N, E = x.shape                                 # BUG: x is (batch, n, d_model)
        q = self.W_q(x).contiguous().view(L, N * self.n_heads, self.d_k).transpose(0, 1)
        k = self.W_k(x).contiguous().view(L, N * self.n_heads, self.d_k).transpose(0, 1)
        v = self.W_v(x).contiguous().view(L, N * self.n_heads, self.d_k).transpose(0, 1)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = torch.bmm(scores.softmax(dim=-1), v).transpose(0, 1).contiguous().view(L, N, E)
        return self.W_o(out)


class TransposedToSequenceFirst(Solution):
    """Turns x to (n, batch, d_model) "as PyTorch expects", then runs the right module on it."""

    def forward(self, x, mask=None):
        return super().forward(x.transpose(0, 1), mask).transpose(0, 1)      # BUG: it was batch first


class HeadLoopStopsShort(Linears):
    def forward(self, x, mask=None):
        B, T, D = x.shape
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        outs = []
        for i in range(1, self.n_heads):                              # heads numbered from 1
            lo, hi = i * self.d_k, (i + 1) * self.d_k
            att = Q[:, :, lo:hi] @ K[:, :, lo:hi].mT / self.d_k ** 0.5
            if mask is not None:
                att = att.masked_fill(mask == 0, torch.finfo(att.dtype).min)
            outs.append(F.softmax(att, dim=-1) @ V[:, :, lo:hi])
        return self.W_o(torch.cat(outs, dim=2))


class HeadsFilledIntoZeros(Linears):
    def forward(self, x, mask=None):
        b, t, _ = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        out = torch.zeros_like(q)
        for head in range(self.n_heads - 1):
            a = torch.einsum("bqd,bkd->bqk", q[:, head], k[:, head]) / math.sqrt(self.d_k)
            if mask is not None:
                a = a.masked_fill(~mask, -1e9)
            out[:, head] = a.softmax(dim=-1) @ v[:, head]
        return self.W_o(out.transpose(1, 2).reshape(b, t, -1))


class HeadsFilledOneByOne(Linears):
    def forward(self, x, mask=None):
        b, t, _ = x.shape
        q, k, v = (w(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        out = torch.empty_like(q)
        for head in range(self.n_heads):
            a = torch.einsum("bqd,bkd->bqk", q[:, head], k[:, head]) / math.sqrt(self.d_k)
            if mask is not None:
                a = a.masked_fill(~mask, torch.finfo(a.dtype).min)
            out[:, head] = a.softmax(dim=-1) @ v[:, head]
        return self.W_o(out.transpose(1, 2).reshape(b, t, -1))


class ChunkAlongPositions(Linears):
    """A list of heads with torch.chunk, one attention each, then cat: cut along dim 1, the positions."""

    def forward(self, x, mask=None):
        heads = zip(self.W_q(x).chunk(self.n_heads, dim=1), self.W_k(x).chunk(self.n_heads, dim=1),
                    self.W_v(x).chunk(self.n_heads, dim=1), strict=True)     # BUG: dim=-1, the features
        outs = []
        for q, k, v in heads:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            outs.append(scores.softmax(dim=-1) @ v)
        return self.W_o(torch.cat(outs, dim=1))


class SlicedPositionBlocks(Linears):
    """Heads as slices of width ceil(n / n_heads), taken from the second axis (the positions)."""

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        width = -(-x.shape[1] // self.n_heads)
        outs = []
        for start in range(0, x.shape[1], width):                        # BUG: slices positions, not features
            part = slice(start, start + width)
            scores = torch.einsum("bqd,bkd->bqk", q[:, part], k[:, part]) / math.sqrt(x.shape[-1])
            if mask is not None:
                scores = torch.where(mask, scores, torch.tensor(-1e9, dtype=scores.dtype))
            outs.append(torch.einsum("bqk,bkd->bqd", scores.softmax(-1), v[:, part]))
        return self.W_o(torch.cat(outs, dim=1))


CASES = [
    # correct
    Case("solution", Solution, PASS),
    Case("reshape_permute", ReshapePermute, PASS),
    Case("unflatten_flatten", UnflattenFlatten, PASS),
    Case("loop_over_heads", LoopOverHeads, PASS),
    Case("chunk_heads", ChunkHeads, PASS),
    Case("split_heads_einsum", SplitHeads, PASS),
    Case("einsum_heads", EinsumHeads, PASS),
    Case("fused_sdpa", FusedSDPA, PASS),
    Case("bmm_folded_heads", BmmFoldedHeads, PASS),
    Case("loop_batch_and_heads", LoopBatchAndHeads, PASS),
    Case("with_bias", WithBias, PASS),
    Case("minus_inf_guarded", MinusInfGuarded, PASS),
    Case("course_function_per_head", CourseFunctionPerHead, PASS),
    Case("stable_softmax_by_hand", StableSoftmaxByHand, PASS),
    Case("dropout_zero", DropoutZero, PASS),
    Case("one_line_recipe", OneLineCorrect, PASS),
    Case("functional_linear", FunctionalLinear, PASS),
    Case("softmax_module_attribute", SoftmaxModuleAttribute, PASS),
    Case("loop_heads_returns_weights", LoopHeadsReturnsWeights, PASS),
    Case("heads_filled_one_by_one", HeadsFilledOneByOne, PASS),
    # reshapes
    Case("split_view_no_transpose", SplitViewNoTranspose, "heads_split_without_transpose"),
    Case("split_reshape_no_transpose", SplitReshapeNoTranspose, "heads_split_without_transpose"),
    Case("heads_never_transposed", HeadsNeverTransposed, "heads_split_without_transpose"),
    Case("heads_never_transposed_unflatten", HeadsNeverTransposedUnflatten, "heads_split_without_transpose"),
    Case("split_transpose_dropped_merge_kept", SplitTransposeDroppedMergeKept,
         "heads_split_without_transpose"),
    Case("split_reshape_kept_where_mask", SplitReshapeKeptWhereMask, "heads_split_without_transpose"),
    Case("split_written_per_tensor", SplitWrittenPerTensor, PASS),
    Case("merge_by_einsum_output_layout", EinsumIntoOutputLayout, PASS),
    Case("keys_split_without_transpose", KeysSplitWithoutTranspose, "heads_split_without_transpose"),
    Case("merge_swaps_last_two_axes", MergeSwapsLastTwoAxes, "heads_merged_without_transpose"),
    Case("merge_view_no_transpose_finfo", MergeViewNoTransposeFinfo, "heads_merged_without_transpose"),
    Case("merge_reshape_no_transpose_finfo", MergeReshapeNoTransposeFinfo, "heads_merged_without_transpose"),
    Case("merge_permute_heads_last", MergePermuteHeadsLast, "heads_merged_interleaved"),
    Case("merge_einsum_features_first", MergeEinsumFeaturesFirst, "heads_merged_interleaved"),
    Case("split_features_strided", SplitFeaturesStrided, "heads_split_interleaved"),
    Case("split_strided_merged_back", SplitStridedMergedBack, "heads_split_interleaved"),
    Case("raw_weight_products", RawWeightProducts, "weight_not_transposed"),
    Case("matmul_with_weight_matrices", MatmulWithWeightMatrices, "weight_not_transposed"),
    Case("returns_with_skip_connection", ReturnsWithSkipConnection, "residual_added"),
    Case("residual_via_einsum", ResidualViaEinsum, "residual_added"),
    Case("normed_output", NormedOutput, "layer_norm_added"),
    Case("pre_norm_inside", PreNormInside, "layer_norm_added"),
    Case("head_width_before_heads", HeadWidthBeforeHeads, "heads_count_and_width_swapped"),
    Case("unflatten_width_first", UnflattenWidthFirst, "heads_count_and_width_swapped"),
    Case("merge_no_transpose_minus_inf", MergeNoTransposeMinusInf,
         {"heads_merged_without_transpose", "nan_on_fully_masked_row"}),
    Case("no_transpose_either_way", NoTransposeEitherWay,
         {"heads_split_without_transpose", "heads_merged_without_transpose"}),
    Case("missing_contiguous", MissingContiguous, "missing_contiguous"),
    Case("missing_contiguous_permute", MissingContiguousPermute, "missing_contiguous"),
    Case("heads_averaged_weights", HeadsAveragedWeights, "heads_averaged"),
    Case("heads_averaged_outputs", HeadsAveragedOutputs, "heads_averaged"),
    Case("heads_averaged_scores", HeadsAveragedScores, "heads_averaged"),
    Case("never_split_scaled_by_head", NeverSplitScaledByHead, "heads_not_split"),
    Case("never_split_scaled_by_model", NeverSplitScaledByModel, "heads_not_split"),
    Case("key_not_transposed", KeyNotTransposed, "missing_key_transpose"),
    Case("key_dot_T", KeyDotT, "missing_key_transpose"),
    # one line of the recipe
    Case("no_scale", NoScale, "missing_scale"),
    Case("scale_by_d_model", ScaleByDModel, {"wrong_scale", "scale_by_d_model"}),
    Case("stale_global_d_k", StaleGlobalDk, "wrong_scale"),
    Case("d_k_power_one_half", DkPowerOneHalf, "wrong_scale"),
    Case("divide_by_d_k", DivideByDk, "wrong_scale"),
    Case("multiply_by_sqrt_d_k", MultiplyBySqrtDk, "scale_multiplied"),
    Case("softmax_over_queries", SoftmaxOverQueries, "softmax_wrong_axis"),
    Case("softmax_over_heads", SoftmaxOverHeads, "softmax_wrong_axis"),
    Case("softmax_over_batch", SoftmaxOverBatch, "softmax_wrong_axis"),
    Case("softmax_by_hand_no_max", SoftmaxByHandNoMax, "softmax_overflow"),
    Case("log_softmax", LogSoftmax, "weights_not_normalised"),
    Case("mask_ignored", MaskIgnored, "mask_ignored"),
    Case("mask_not_assigned", MaskNotAssigned, "mask_ignored"),
    Case("mask_inverted", MaskInverted, "mask_inverted"),
    Case("mask_after_softmax", MaskAfterSoftmax, "mask_after_softmax"),
    Case("mask_after_softmax_minus_inf", MaskAfterSoftmaxMinusInf, "mask_after_softmax"),
    Case("mask_fill_zero", MaskFillZero, "mask_fill_zero"),
    Case("mask_minus_inf", MaskMinusInf, "nan_on_fully_masked_row"),
    Case("additive_mask_float", AdditiveMaskFloat, {"additive_mask_wrong", "mask_ignored"}),
    Case("additive_one_minus_mask_inf", AdditiveOneMinusMaskInf, "additive_mask_wrong"),
    Case("fill_minus_1e9", FillMinus1e9, "fill_overflows_float16",
         note="shows only when the checker runs the module in float16"),
    Case("dropout_on_weights", DropoutOnWeights, "dropout_left_on"),
    Case("detached_weights", DetachedWeights, "gradient_blocked"),
    Case("under_no_grad", UnderNoGrad, "gradient_blocked"),
    Case("mask_unsqueezed_in_place", MaskUnsqueezedInPlace, {"inputs_modified", "modifies_inputs"}),
    Case("scales_input_in_place", ScalesInputInPlace, {"inputs_modified", "modifies_inputs"}),
    Case("output_to_float32", OutputToFloat32, "dtype_changed",
         note="shows only when the checker runs the module in another dtype than float32"),
    Case("no_output_projection", NoOutputProjection, "missing_output_projection"),
    Case("loop_heads_no_output_projection", LoopHeadsNoOutputProjection, "missing_output_projection"),
    Case("output_projection_on_values", OutputProjectionOnValues, "missing_output_projection"),
    Case("first_sequence_only", FirstSequenceOnly, "batch_one_only"),
    Case("squeezed_batch", SqueezedBatch, "batch_one_only"),
    Case("stale_global_shapes", StaleGlobalShapes, FAIL),
    Case("weights_times_keys", WeightsTimesKeys, "keys_values_swapped"),
    Case("key_value_projections_swapped", KeyValueProjectionsSwapped, "keys_values_swapped"),
    Case("query_key_projections_swapped", QueryKeyProjectionsSwapped,
         {"queries_keys_swapped", "scores_transposed"}),
    Case("squeezes_the_result", SqueezesTheResult, "squeeze_drops_batch"),
    Case("einsum_squeeze_batch", EinsumSqueezeBatch, "squeeze_drops_batch"),
    Case("scale_folded_into_weight", ScaleFoldedIntoWeight, "weights_modified_in_place"),
    Case("key_weight_scaled_via_data", KeyWeightScaledViaData, "weights_modified_in_place"),
    Case("mask_gets_head_axis_at_one", MaskGetsHeadAxisAtOne, "mask_axis_misplaced"),
    Case("einsum_blend_over_queries", EinsumBlendOverQueries, "weights_transposed"),
    Case("slices_overlapping", SlicesOverlapping, "heads_overlap"),
    Case("stacked_overlapping_views", StackedOverlappingViews, "heads_overlap"),
    Case("boolean_indexed_mask", BooleanIndexedMask, "mask_boolean_indexed"),
    Case("wrong_attribute_names", WrongAttributeNames, FAIL),
    Case("additive_half_min", AdditiveHalfMin, PASS),
    Case("bert_additive_mask", BertAdditiveMask, "additive_mask_too_small"),
    Case("hand_softmax_max_first", HandSoftmaxMaxFirst, "softmax_max_over_blocked"),
    Case("causal_buffer_too", CausalBufferToo, "causal_added_to_mask"),
    Case("hand_softmax_masked_first", HandSoftmaxMaskedFirst, PASS),
    Case("additive_dtype_min", AdditiveDtypeMin, "fill_overflows_float16",
         note="float16's minimum plus a score below -16 is -inf: a fully masked position is NaN"),
    Case("additive_where_min", AdditiveWhereMin, "fill_overflows_float16"),
    Case("softmax_always_float32", SoftmaxAlwaysFloat32, FAIL,
         note="right in float32; in float64 a fully masked position is NaN (said in plain words)"),
    Case("sequence_first_bmm", SequenceFirstBmm, "sequence_first_input"),
    Case("transposed_to_sequence_first", TransposedToSequenceFirst, "sequence_first_input"),
    Case("chunk_along_positions", ChunkAlongPositions, "heads_split_along_positions"),
    Case("sliced_position_blocks", SlicedPositionBlocks, "heads_split_along_positions"),
    Case("head_loop_stops_short", HeadLoopStopsShort, "head_left_out"),
    Case("heads_filled_into_zeros", HeadsFilledIntoZeros, "head_left_out"),
]
