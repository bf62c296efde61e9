"""What each known bug is, how it shows, and the one-line fix: the words of a verdict."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bug", "BUGS"]


@dataclass(frozen=True)
class Bug:
    id: str
    what: str      # what is wrong, in one sentence
    shows: str     # how it shows in the numbers
    fix: str       # the one-line fix (code)


_ENTRIES = [
    Bug("missing_scale",
        "The scores are never divided by √d_k.",
        "Your output equals attention with scale 1: the weights are more peaked than they should be, "
        "and the larger d_k, the closer each row gets to a hard one-hot pick with almost no gradient.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"),
    Bug("wrong_scale",
        "The scores are divided by d_k instead of √d_k.",
        "The weights are flatter than they should be (closer to a plain average), and more so as "
        "d_k grows.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)   # not / d_k"),
    Bug("scale_after_softmax",
        "The division by √d_k is applied after the softmax, to the weights.",
        "Each weight row sums to 1/√d_k instead of 1, so the output is the right blend shrunk by √d_k.",
        "divide the scores by math.sqrt(d_k) first, then take torch.softmax(scores, dim=-1)"),
    Bug("softmax_wrong_axis",
        "The softmax normalises over the queries (dim=-2) instead of over the keys.",
        "The columns of the weights sum to 1 instead of the rows, so a query's weights are not a "
        "blend and its output is not an average of the values.",
        "weights = torch.softmax(scores, dim=-1)"),
    Bug("scores_transposed",
        "The scores are keys times queries (k @ qᵀ) instead of queries times keys.",
        "It breaks as soon as there are more keys than queries (or fewer); when the counts are equal, "
        "each query gets the blend meant for another position.",
        "scores = q @ k.transpose(-2, -1)   # (n_q, n_k): one row per query"),
    Bug("mask_inverted",
        "The mask is used the wrong way round: in this course (and PyTorch's fused function) "
        "True means 'may attend'.",
        "Each query attends to exactly the positions it should not see and ignores the ones it should.",
        "scores = scores.masked_fill(~mask, float('-inf'))   # block where mask is False"),
    Bug("mask_after_softmax",
        "The mask is applied to the weights after the softmax.",
        "Blocked keys get weight 0, but the remaining weights are not renormalised, so rows sum to "
        "less than 1 and the output is shrunk.",
        "mask the scores before the softmax: scores.masked_fill(~mask, float('-inf'))"),
    Bug("mask_fill_zero",
        "Blocked scores are set to 0 instead of -inf.",
        "A score of 0 is an ordinary score, so blocked keys still get a sizeable share of the weight "
        "(the future leaks in).",
        "scores = scores.masked_fill(~mask, float('-inf'))"),
    Bug("nan_on_fully_masked_row",
        "A query whose keys are all blocked gets NaN.",
        "The softmax of a row of only -inf is 0/0 = NaN, and NaN then spreads through every later "
        "layer. (PyTorch's fused function gives zeros there; a torch.finfo(...).min fill gives a "
        "uniform blend; both are finite.)",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"),
    Bug("forgot_values",
        "The weights are returned, but never used to mix the values.",
        "The output has one column per key (n_k) instead of the values' width d_v, and holds weights, "
        "not values.",
        "return weights @ v"),
    Bug("heads_split_without_transpose",
        "The heads are split with .view(batch, n_heads, n, d_k) directly.",
        "Without the transpose each 'head' gets a slice that runs across several positions, so "
        "positions are scrambled together before attention even starts.",
        "x.view(batch, n, n_heads, d_k).transpose(1, 2)   # (batch, n_heads, n, d_k)"),
    Bug("heads_merged_without_transpose",
        "The heads are merged with .view/.reshape(batch, n, d_model) straight from "
        "(batch, n_heads, n, d_k).",
        "The shape comes out right, but each output row mixes pieces of different positions.",
        "out.transpose(1, 2).contiguous().view(batch, n, d_model)"),
    Bug("heads_averaged",
        "The heads are averaged into one attention pattern.",
        "Every feature uses the same blend, so the layer can only follow one relationship at a time; "
        "heads are meant to be kept apart, concatenated and projected by W_o.",
        "run each head on its own d_k slice, concatenate them (merge heads), then self.W_o(...)"),
    Bug("scale_by_d_model",
        "Each head's scores are divided by √d_model instead of √d_k.",
        "The weights are too flat: the scores are √n_heads times smaller than they should be. "
        "It is the per-head size d_k that sets the spread of a head's dot products.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)   # d_k = d_model // n_heads"),
    Bug("missing_output_projection",
        "The concatenated heads are returned without the output projection W_o.",
        "The shape is right but the numbers are the heads' raw concatenation; the layer cannot mix "
        "information across heads.",
        "return self.W_o(out)"),
    Bug("causal_future_visible",
        "The causal mask is the upper triangle instead of the lower one.",
        "Each position may attend to itself and the future but not to the past: training looks "
        "superb because the model reads ahead, and generation is nonsense.",
        "torch.ones(n, n, dtype=torch.bool).tril()"),
    Bug("causal_excludes_self",
        "The causal mask blocks the diagonal, so a position may not attend to itself.",
        "The first position has no key left at all (a fully masked row, NaN with a -inf fill), and "
        "every position loses its own value.",
        "torch.ones(n, n, dtype=torch.bool).tril()   # diagonal=0 keeps i == j"),
    Bug("padding_masks_queries",
        "The padding mask blocks query rows instead of key columns.",
        "Real tokens still attend to the padding keys, so their results change with how much "
        "padding the batch happens to have.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # (batch, 1, n)"),
    Bug("modifies_inputs",
        "Your function changes its inputs in place (for example q /= ..., or masked_fill_ on the mask).",
        "The caller's tensors are different after the call, so calling it twice gives different answers.",
        "use out-of-place operations: scores = scores / ..., scores.masked_fill(...) (no underscore)"),
]

BUGS = {bug.id: bug for bug in _ENTRIES}
