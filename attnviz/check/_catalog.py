"""What each known bug is, how it shows, and the one-line fix: the words of a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Bug", "BUGS", "DECODING_FIX_NAMES", "ATTENTION_FIX_NAMES", "MULTI_HEAD_FIX_NAMES"]


@dataclass(frozen=True)
class Bug:
    id: str
    what: str  # what is wrong, in one sentence
    shows: str  # how it shows in the numbers
    fix: str  # the one-line fix (code)
    fixes: dict = field(default_factory=dict)  # checker name -> the fix in that exercise's own words
    shown: dict = field(default_factory=dict)  # checker name -> how it shows, in that exercise's code

    def fix_for(self, checker: str) -> str:
        return self.fixes.get(checker, self.fix)

    def shows_for(self, checker: str) -> str:
        return self.shown.get(checker, self.shows)


DECODING = "check_decoding_step"
_SCORES = "scores = query @ key.transpose(-2, -1) / math.sqrt(model.d_head)"
_BOTTOM_RIGHT = "mask = torch.ones(n_new, n_all, dtype=torch.bool).tril(diagonal=n_all - n_new)"
_SPLIT_ALL = ("q, k, v = (w(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2) "
              "for w in (self.W_q, self.W_k, self.W_v))")
_MERGE = "merged = heads.transpose(1, 2).contiguous().view(batch, n_new, h * d)"

DECODING_FIX_NAMES = {
    "n_new": "n_new = tokens.shape[1]   # the positions this call adds",
    "n_all": "n_all = keys.shape[-2]   # keys: yours after joining the cache, every key the new queries "
             "attend to",
    "past": "past = 0 if cache is None else cache[0][0].shape[-2]   # positions already cached "
            "(cache.length for a gpt.KVCache)",
    "past_keys": "past_keys, past_values = cache[layer]   # this layer's cached keys and values (cache "
                 "not None)",
    "past_values": "past_keys, past_values = cache[layer]   # this layer's cached keys and values (cache "
                   "not None)",
    "group": "group = model.n_heads // model.n_kv_heads   # query heads per key/value head",
    "merged": "merged = heads.transpose(1, 2).reshape(tokens.shape[0], tokens.shape[1], -1)   # the heads "
              "side by side: (batch, n_new, d_model)",
    "new_cache": "new_cache = []   # a new list each call (or gpt.KVCache(), or cache.copy()); append each "
                 "layer's (keys, values)",
    "mask": _BOTTOM_RIGHT + "   # n_new: this call's positions; n_all: every key attended to",
    "scores": _SCORES + "   # query and key: this layer's, split into heads",
    "normed": "normed = block.norm_attention(x)   # what W_q, W_k and W_v read",
    "batch": "batch = tokens.shape[0]",
    # the tensors a step names its own way: a definition would read another such name, so the Fix
    # says what the name stands for (a replay's step, its queries Q, was sent to a cell defining q)
    **{name: f"{name} in a Fix line means your {what}: write your own variable's name in its place"
       for name, what in (("q", "queries, this layer's, split into heads"),
                          ("k", "keys, this layer's, split into heads (after joining the cache)"),
                          ("v", "values, this layer's, split into heads (after joining the cache)"),
                          ("heads", "heads' outputs, weights @ values or the fused function's"),
                          ("layer", "loop's index of the block it is at (for layer, block in "
                                    "enumerate(model.blocks))"),
                          ("block", "block, the one the loop is at (for layer, block in "
                                    "enumerate(model.blocks), or model.blocks[layer])"),
                          ("logits", "step's logits, model.unembed(...) of the stream at the end"))},
}
"""The names decoding's Fix lines use for values a step computes itself, each with a line that defines
it: a Fix line pasted into a step that calls them otherwise raises NameError, and no cell defines them."""

ATTENTION_FIX_NAMES = {
    "scores": "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # your function's q and k",
    "weights": "weights = torch.softmax(scores, dim=-1)   # over the keys",
}
MULTI_HEAD_FIX_NAMES = {
    "batch": "batch, n, d_model = x.shape",
    "n": "batch, n, d_model = x.shape",
    "d_model": "batch, n, d_model = x.shape",
    # the tensors inside forward a student names their own way: a definition pasted here would read
    # another such name, or one of 05's globals (merged, weights, value ...) with another value, so the
    # Fix says what the name stands for instead (round 26's hurried students went round that chain)
    **{name: f"{name} in a Fix line means your {what}: write your own variable's name in its place"
       for name, what in (("q", "queries split into heads, (batch, n_heads, n, d_k)"),
                          ("k", "keys split into heads, (batch, n_heads, n, d_k)"),
                          ("v", "values split into heads, (batch, n_heads, n, d_k)"),
                          ("scores", "scores, q @ k.transpose(-2, -1) / sqrt(d_k), (batch, n_heads, n, n)"),
                          ("weights", "softmax of the scores over the keys, (batch, n_heads, n, n)"),
                          ("heads", "heads' outputs, weights @ v, (batch, n_heads, n, d_k)"),
                          ("out", "heads' outputs before the merge, or the merged heads before W_o"),
                          ("merged", "heads side by side again, (batch, n, d_model), before W_o"))},
}


_ENTRIES = [
    Bug(
        "missing_scale",
        "The scores are never divided by √d_k.",
        "Your output equals attention with scale 1: the weights are more peaked than they should be, "
        "and the larger d_k, the closer each row gets to a hard one-hot pick with almost no gradient.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
        fixes={DECODING: _SCORES + "   # or F.scaled_dot_product_attention, which divides for you"},
    ),
    Bug(
        "wrong_scale",
        "The scores are divided by the wrong number: d_k, √d_v, √n_k, d_k ** 1/2 (which is d_k / 2), "
        "or a d_k left over from another cell instead of this input's own √d_k.",
        "The weights are too flat or too peaked, and by how much changes with the input's sizes: "
        "right for one shape, wrong for the next.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # this input's own d_k",
        fixes={DECODING: _SCORES + "   # this model's own d_head"},
    ),
    Bug(
        "scale_multiplied",
        "The scores are multiplied by √d_k instead of divided by it.",
        "The weights are far too peaked: the scores are d_k times larger than they should be.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # divide, do not multiply",
        fixes={DECODING: _SCORES + "   # divide, do not multiply"},
    ),
    Bug(
        "scale_after_softmax",
        "The division by √d_k is applied after the softmax, to the weights.",
        "Each weight row sums to 1/√d_k instead of 1, so the output is the right blend shrunk by √d_k.",
        "weights = torch.softmax(scores / math.sqrt(q.shape[-1]), dim=-1)   # the scores, not the weights",
    ),
    Bug(
        "softmax_wrong_axis",
        "The softmax normalises over another dimension than the keys: the queries (dim=-2), a batch or "
        "head dimension, or the one PyTorch picks when no dim= is given (dim 0 or 1, and a warning).",
        "A query's weights over the keys do not sum to 1 (with dim=-2 the columns do instead of the "
        "rows), so they are not a blend and its output is not an average of the values.",
        "weights = torch.softmax(scores, dim=-1)   # over the keys: the last dimension",
    ),
    Bug(
        "scores_transposed",
        "The scores are keys times queries (k @ qᵀ) instead of queries times keys.",
        "It breaks as soon as there are more keys than queries (or fewer); when the counts are equal it "
        "runs, but each row is one key's softmax over the queries, which is no query's blend.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (n_q, n_k): one row per query",
    ),
    Bug(
        "mask_inverted",
        "The mask is used the wrong way round: in this course (and PyTorch's fused function) "
        "True means 'may attend'.",
        "Each query attends to exactly the positions it should not see and ignores the ones it should.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # block where mask is False",
    ),
    Bug(
        "mask_after_softmax",
        "The mask is applied to the weights after the softmax.",
        "Blocked keys get weight 0, but the remaining weights are not renormalised, so rows sum to "
        "less than 1 and the output is shrunk.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min) if mask is not None else scores   "
        "# before the softmax, in place of masking the weights after it",
    ),
    Bug(
        "mask_fill_zero",
        "Blocked scores are set to 0 (or multiplied by the mask) instead of a very negative number.",
        "A score of 0 is an ordinary score, so blocked keys still get a sizeable share of the weight "
        "(the future leaks in).",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # very negative, finite",
    ),
    Bug(
        "nan_on_fully_masked_row",
        "A query whose keys are all blocked gets NaN.",
        "Somewhere that row is 0/0 = NaN: the softmax of a row of only -inf, or weights divided by a row "
        "sum of 0. NaN then spreads through every later layer. (PyTorch's fused function gives zeros "
        "there; a torch.finfo(...).min fill gives a uniform blend; both are finite.)",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
    ),
    Bug(
        "forgot_values",
        "The weights are returned, but never used to mix the values.",
        "The output has one column per key (n_k) instead of the values' width d_v, and holds weights, "
        "not values.",
        "return weights @ v",
    ),
    Bug(
        "heads_split_without_transpose",
        "The heads are split without the transpose: .view(batch, n_heads, n, d_k) directly, or "
        ".view(batch, n, n_heads, d_k) left with the heads on axis 2.",
        "Without the transpose each 'head' gets a slice that runs across several positions, so "
        "positions are scrambled together before attention even starts (left on axis 2, the heads "
        "attend to each other within one position, and an (n, n) mask no longer fits the scores).",
        _SPLIT_ALL + "   # each (batch, n_heads, n, d_k): in place of your lines that split them",
        fixes={DECODING: "x.view(batch, n, n_heads, d_head).transpose(1, 2)   # (batch, n_heads, n, d_head)"},
    ),
    Bug(
        "heads_merged_without_transpose",
        "The heads are merged without transpose(1, 2): .view/.reshape(batch, n, d_model) straight from "
        "(batch, n_heads, n, d_k), or after transposing other axes.",
        "The shape comes out right, but each output row mixes pieces of different positions.",
        "merged = heads.transpose(1, 2).contiguous().view(x.shape)   # heads: weights @ v, (batch, n_heads, "
        "n, d_k); the transpose puts each position's heads side by side before the view",
        fixes={DECODING: _MERGE},
    ),
    Bug(
        "heads_split_interleaved",
        "The heads are split with their features interleaved: (batch, n, d_model) unflattened to "
        "(batch, n, d_k, n_heads), so head i gets features i, i + n_heads, ... instead of one block of d_k.",
        "Each head works on the wrong slice of the projections, so the output differs from the "
        "reference's; with one head it would be right.",
        _SPLIT_ALL + "   # heads first, each a block of d_k features: in place of your lines that split "
        "them; merge back the same way, heads.transpose(1, 2).reshape(batch, n, d_model)",
    ),
    Bug(
        "weight_not_transposed",
        "The projections are written as x @ W.weight; nn.Linear stores its weight as (out, in) and "
        "computes x @ W.weight.T.",
        "The shapes come out right (the layers are square), but every projection uses the transposed "
        "matrix.",
        "query = self.W_q(x)   # or x @ self.W_q.weight.T; the same for W_k, W_v and W_o",
    ),
    Bug(
        "heads_count_and_width_swapped",
        "The heads are split with view(batch, n, d_k, n_heads): d_k heads of n_heads features each, "
        "where the layer has n_heads heads of d_k features.",
        "Every output is off: each 'head' sees other features and other scores than the real heads do.",
        "q = q.view(batch, n, self.n_heads, self.d_k).transpose(1, 2)   # n_heads first, then d_k",
    ),
    Bug(
        "residual_added",
        "forward returns x + W_o(...): the residual belongs to the Transformer block around the "
        "attention layer, not inside it.",
        "The output is the right attention output plus the input itself.",
        "return self.W_o(merged)   # the block adds x around it: x = x + attention(x)",
    ),
    Bug(
        "layer_norm_added",
        "A LayerNorm is applied inside the attention layer (to its input, its output, or the sum with x); "
        "the exercise's layer has none: the block around it holds the norms.",
        "The output is the attention output (or of the normed input) rescaled to mean 0 and variance 1 "
        "per position.",
        "return self.W_o(merged)   # no layer_norm here: the block around it norms",
    ),
    Bug(
        "heads_merged_interleaved",
        "The heads are merged with their features interleaved: (batch, n_heads, n, d_k) permuted to "
        "(batch, n, d_k, n_heads) before the reshape, so feature j of head i lands at j * n_heads + i.",
        "Each position's merged vector holds the right numbers in the wrong order, so W_o mixes them "
        "with the wrong weights; with one head the output would be right.",
        "merged = heads.transpose(1, 2).reshape(batch, n, d_model)   # via (batch, n, n_heads, d_k): heads "
        "kept whole",
        fixes={DECODING: _MERGE},
    ),
    Bug(
        "heads_averaged",
        "The heads are averaged into one attention pattern.",
        "Every feature uses the same blend, so the layer can only follow one relationship at a time; "
        "heads are meant to be kept apart, concatenated and projected by W_o.",
        "run each head on its own d_k slice, concatenate them (merge heads), then self.W_o(...)",
    ),
    Bug(
        "head_left_out",
        "One head is left out: the loop over the heads misses the first or the last.",
        "That head's d_k features reach W_o as zeros (or, when the heads are concatenated, the merged "
        "vector is d_k short of d_model and W_o refuses it): the layer has one head fewer than it was "
        "built with. range(n_heads) already stops before n_heads.",
        "for h in range(self.n_heads):   # every head: 0, 1, ..., n_heads - 1",
    ),
    Bug(
        "scale_by_d_model",
        "Each head's scores are divided by √d_model instead of √d_k.",
        "The weights are too flat: the scores are √n_heads times smaller than they should be. "
        "It is the per-head size d_k that sets the spread of a head's dot products.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)   # d_k = d_model // n_heads",
        fixes={DECODING: _SCORES + "   # per head: d_head, not d_model"},
        shown={DECODING: "The weights are too flat: the scores are √n_heads times smaller than they should "
                         "be. It is the width of one head, d_k (model.d_head in this model), that sets the "
                         "spread of a head's dot products."},
    ),
    Bug(
        "missing_output_projection",
        "The concatenated heads are returned without the output projection W_o: left out, or applied "
        "to the values before the heads are split (v = W_o(W_v(x))), where it mixes the values' features "
        "before attention instead of the heads' outputs after it.",
        "The shape is right but the numbers are the heads' raw concatenation (of values W_o already "
        "went through, if it came first); the layer cannot mix information across heads.",
        "return self.W_o(merged)   # merged: the heads side by side, (batch, n, d_model); W_o nowhere else",
        fixes={DECODING: "x = x + attention.W_o(merged)"},
    ),
    Bug(
        "causal_future_visible",
        "The causal mask is the upper triangle instead of the lower one.",
        "Each position may attend to itself and the future but not to the past: training looks "
        "superb because the model reads ahead, and generation is nonsense.",
        "torch.ones(n, n, dtype=torch.bool).tril()",
        fixes={DECODING: _BOTTOM_RIGHT},
    ),
    Bug(
        "causal_excludes_self",
        "The causal mask blocks the diagonal, so a position may not attend to itself.",
        "Every position loses its own value, and where the mask starts at position 0 (a whole sequence, "
        "a prefill) the first position has no key left at all (a fully masked row, NaN with a -inf fill).",
        "torch.ones(n, n, dtype=torch.bool).tril()   # diagonal=0 keeps i == j",
        fixes={DECODING: _BOTTOM_RIGHT},
    ),
    Bug(
        "causal_off_by_one",
        "The causal mask's diagonal is shifted by one: each position also sees the next one.",
        "Position i may attend to key i + 1, one step into the future: each position sees the very token "
        "it is meant to predict.",
        "torch.ones(n, n, dtype=torch.bool).tril()   # diagonal=0",
        fixes={DECODING: _BOTTOM_RIGHT},
    ),
    Bug(
        "causal_not_rectangular",
        "The causal mask is only right for square masks (n_q == n_k).",
        "With fewer queries than keys (or more) the triangle starts in no corner (or the shape is "
        "wrong). Either corner passes: the top-left, query i sees keys j <= i; or the bottom-right, the "
        "last query sees every key, as a KV cache needs (notebook 08).",
        "torch.ones(n_q, n_k, dtype=torch.bool).tril()   # top-left; .tril(n_k - n_q): bottom-right",
    ),
    Bug(
        "heads_not_split",
        "Attention runs once over the full d_model instead of once per head.",
        "There is a single attention pattern for all features: the module is one-head attention.",
        "self.W_q(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)   # the same for W_k and W_v; "
        "then attention per head, then merge",
    ),
    Bug(
        "causal_first_row_blocked",
        "The causal mask's first row is all False: a loop over the rows that starts at 1 (range(1, n)) "
        "leaves query 0 with no key.",
        "Every row is right but the first: the first position may not even attend to itself, a fully "
        "masked row (NaN with a -inf fill, an even spread over the future with a finite one).",
        "torch.ones(n, n, dtype=torch.bool).tril()   # or a loop over range(n): row 0 keeps key 0",
    ),
    Bug(
        "causal_last_row_blocked",
        "The causal mask's last row is all False: a loop over the rows that stops one short "
        "(range(n - 1)) leaves the last query with no key.",
        "Every row is right but the last: the last position may not even attend to itself, a fully "
        "masked row (NaN with a -inf fill, an even spread over the earlier positions with a finite one). "
        "In a language model that is the position whose output predicts the next token.",
        "torch.ones(n, n, dtype=torch.bool).tril()   # or a loop over range(n): every row keeps its own key",
    ),
    Bug(
        "padding_left_aligned",
        "The mask takes the real tokens to be the last length positions (left padding: positions "
        ">= n - length), but here the padding comes after the real tokens.",
        "Right only for sequences that fill all n positions (and for empty ones); a shorter sequence "
        "attends to its padding and not to its first tokens.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # the first length positions",
    ),
    Bug(
        "padding_lengths_as_pad_counts",
        "lengths is read as the number of padding positions in each sequence, not the number of real "
        "tokens: the first n - length positions are marked real.",
        "Right only where length is exactly half of n; a short sequence attends to its padding and a "
        "long one loses its last tokens.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # lengths[b] real tokens",
    ),
    Bug(
        "padding_combined_with_causal",
        "The padding mask is combined with a causal one (& tril): this exercise asks for the padding "
        "mask alone, which blocks only the padded keys.",
        "Each query also loses the real keys after it. A GPT-style model over a padded batch does need "
        "both, but combines them where the attention is called (padding & causal); a padding mask that is "
        "already causal cannot serve a model that looks both ways.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # (batch, 1, n): no tril",
    ),
    Bug(
        "padding_full_sequence_blocked",
        "A sequence that fills all n positions gets no key at all: the padding is cleared with a "
        "negative slice, mask[b, :, -(n - length):] = False, and for length == n that is -0, which is 0, "
        "so the slice is the whole row.",
        "Right for every sequence shorter than n; each full-length sequence is fully masked (NaN with a "
        "-inf fill).",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # or mask[b, :, length:] = False",
    ),
    Bug(
        "padding_lengths_clamped",
        "The lengths are clamped to at least 1 (lengths.clamp(min=1)), so an empty sequence keeps key 0.",
        "Right for every sequence with a real token; an all-padding sequence attends to a padding "
        "position instead of being fully masked. If a fully masked row's NaN is the worry, deal with "
        "it where the attention is computed (notebook 04), not by changing what is real.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # lengths as given, 0 included",
    ),
    Bug(
        "padding_lengths_reordered",
        "The lengths are sorted (as pack_padded_sequence wants) before the mask is built, so each "
        "sequence gets another sequence's mask.",
        "Right for a batch of one or a batch already in that order; otherwise sequence b's row follows "
        "some other length, blocking real tokens or letting padding through.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # lengths in the batch's order",
    ),
    Bug(
        "padding_lengths_modified",
        "The padding-mask function changes lengths in place.",
        "The caller's lengths are different after the call, so the next mask built from them is wrong.",
        "lengths = lengths.unsqueeze(1)   # not lengths.unsqueeze_(1): no method ending in _ on lengths",
    ),
    Bug(
        "padding_off_by_one",
        "The padding mask is one position off: position < length compared as <= (as if a length were the "
        "last real index), or length - 1 used as the count.",
        "Each sequence may attend to one padding position too many (or not to its last real token).",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # <: positions 0..length - 1",
    ),
    Bug(
        "padding_masks_queries",
        "The padding mask blocks query rows instead of key columns.",
        "Real tokens still attend to the padding keys, so their results change with how much "
        "padding the batch happens to have.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # (batch, 1, n)",
    ),
    Bug(
        "padding_masks_queries_too",
        "The padding mask blocks padded query rows as well as padded key columns: (batch, n, n), "
        "real[:, :, None] & real[:, None, :].",
        "Each padded position's query row has no key left (a fully masked row: NaN with a -inf fill), "
        "and the mask no longer repeats one key pattern per row. Blocking the padding keys is enough: "
        "the outputs at padded positions are thrown away.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # keys only: (batch, 1, n)",
    ),
    Bug(
        "padding_width_from_lengths",
        "The padding mask is as wide as the longest sequence, max(lengths), instead of n.",
        "Right whenever some sequence fills all n positions; when every sequence is shorter than n the "
        "mask has too few key columns and no longer fits the scores.",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # arange(n), not max(lengths)",
    ),
    Bug(
        "padding_query_axis_misplaced",
        "The padding mask has no query axis after the batch: (batch, n), or (1, batch, n), instead of "
        "(batch, 1, n).",
        "Right for a batch of one; with more sequences, broadcasting lines the batch up with the "
        "queries, so the shapes clash (or, when batch == n, sequence b's pattern lands on query b).",
        "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # insert the query axis",
    ),
    Bug(
        "mask_not_bool",
        "The mask is a float or int tensor (1/0, 0/-inf, uint8) instead of a bool one.",
        "masked_fill(~mask, ...) refuses it, and F.scaled_dot_product_attention adds a float mask to the "
        "scores instead of blocking: a 1/0 mask blocks nothing (an additive 0/-inf one does block, but "
        "is not what the exercise asks).",
        "return mask.bool()   # or build it with dtype=torch.bool; True = may attend",
    ),
    Bug(
        "mask_blocks_nothing",
        "The mask is True everywhere (a padding mask: everywhere in each non-empty sequence), so it "
        "blocks nothing: a loop that fills whole rows, or a slice on the wrong axis.",
        "Attention runs as if there were no mask: a causal model reads the future, padding keys get "
        "weight.",
        "torch.ones(n, n, dtype=torch.bool).tril()",
        fixes={"check_padding_mask": "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]"
                                     "   # True = real token"},
    ),
    Bug(
        "mask_fixed_size",
        "The causal mask is built once at a fixed size and sliced: torch.ones(32, 32).tril()[:n, :n].",
        "Right for every n up to the fixed size; beyond it the slice stays the fixed size, so longer "
        "sequences get a mask that does not fit their scores.",
        "torch.ones(n, n, dtype=torch.bool).tril()   # built at this call's own n",
    ),
    Bug(
        "mask_boolean_indexed",
        "Blocked scores are set through a boolean index, scores[~mask] = value, which needs a mask of "
        "exactly the scores' shape.",
        "Right whenever the mask has the scores' own shape; a mask that only broadcasts to them (one "
        "(n_q, n_k) mask for a batch of heads, a padding mask (batch, 1, n_k)) raises IndexError.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # masked_fill broadcasts",
    ),
    Bug(
        "softmax_sum_not_kept",
        "A softmax written by hand divides by e.sum(dim=-1) without keepdim=True, so the row sums lose "
        "their axis.",
        "Broadcasting then lines the sums up with the keys: each weight is divided by another row's sum, "
        "so rows do not sum to 1 (when n_q == n_k), or the division raises (when they differ).",
        "weights = e / e.sum(dim=-1, keepdim=True)   # or torch.softmax(scores, dim=-1)",
    ),
    Bug(
        "heads_overlap",
        "Head i takes the features i : i + d_k instead of its own i * d_k : (i + 1) * d_k, so neighbouring "
        "heads share all but one feature and the last features belong to no head.",
        "The heads see nearly the same slices of q, k and v; with more than one head the merged output "
        "is wrong.",
        "q[..., i * self.d_k:(i + 1) * self.d_k]   # head i's own slice; or view(batch, n, n_heads, d_k)"
        ".transpose(1, 2)",
    ),
    Bug(
        "missing_key_transpose",
        "The scores are q @ k instead of q @ kᵀ.",
        "PyTorch refuses the product (its shapes do not line up) unless n_k happens to equal d_k; then "
        "it runs and gives wrong numbers.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (.., n_q, d_k) @ (.., d_k, n_k)",
    ),
    Bug(
        "key_reshaped_not_transposed",
        "k is 'transposed' with reshape or view (k.reshape(..., d_k, n_k)) instead of transpose: the shape "
        "comes out right, but reshape keeps the numbers in memory order, so each column mixes several keys.",
        "The scores have the right shape and the wrong numbers: query i is compared with a scramble of "
        "the keys' features, so the weights follow no key.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # transpose swaps the axes",
    ),
    Bug(
        "additive_mask_too_small",
        "The mask is added to the scores as a fixed finite number, such as -10000 (BERT's old convention), "
        "so a blocked key whose score is higher than that number above the allowed ones still wins.",
        "Right on ordinary scores; when a blocked key scores far above the allowed ones (here 20000 above), "
        "it takes the weight it should not have. masked_fill with the dtype's own minimum replaces the "
        "score instead of adding to it, whatever its size.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # replace, do not add",
    ),
    Bug(
        "softmax_max_over_blocked",
        "The softmax runs over every key, blocked ones included, and the blocked weights are zeroed after "
        "it: by hand, exp(scores - max) * mask with the row's largest score taken before masking; or "
        "torch.softmax(scores), then times the mask and divided by the new row sum.",
        "Right on ordinary scores (renormalised, it is the same sum); when a blocked key scores far above "
        "the allowed ones, every allowed weight underflows to 0 and the row is 0/0 (NaN) or all 0.",
        "weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)"
        "   # the scores masked first, nothing done to the weights after (by hand: the row's max taken "
        "after masking)",
    ),
    Bug(
        "missing_contiguous",
        ".view(...) is called on a transposed tensor.",
        "PyTorch raises 'view size is not compatible with input tensor's size and stride': after "
        "transpose the numbers are no longer laid out in memory in the order view needs.",
        "merged = heads.transpose(1, 2).contiguous().view(x.shape)   # contiguous() before view (or "
        ".reshape(x.shape)); heads: weights @ v",
        fixes={DECODING: _MERGE + "   # or .reshape(batch, n_new, h * d)"},
    ),
    Bug(
        "mask_replaced_by_causal",
        "The mask you are given is never used: a causal mask (is_causal=True, or a tril of your own) is "
        "applied instead.",
        "The output is right for a causal mask and wrong for any other: a padding mask, or none at all.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # the mask you are given "
        "(or attn_mask=mask), not a causal one",
    ),
    Bug(
        "causal_when_no_mask",
        "When no mask is given, a causal mask is applied anyway; mask=None means every query may attend "
        "to every key.",
        "Right whenever a mask is given; with no mask each query sees only itself and the keys before it.",
        "if mask is not None: scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"
        "   # no mask: nothing blocked",
    ),
    Bug(
        "causal_added_to_mask",
        "A causal triangle of your own is always applied, and the mask you are given on top of it (a "
        "causal buffer as in nanoGPT's attention, registered once and used on every call).",
        "Right for a causal mask; with no mask each query also loses the keys after it, and with any "
        "other mask (padding, a key vector) it loses them on top of what that mask blocks.",
        "if mask is not None: scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)"
        "   # only the mask you are given: no causal triangle of your own",
    ),
    Bug(
        "mask_ignored",
        "The mask is accepted but never applied to the scores.",
        "The output equals attention without a mask: every query attends to every key, blocked "
        "ones included.",
        "if mask is not None: scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # use the "
        "mask, above the softmax (mask=None: nothing to block)",
    ),
    Bug(
        "additive_mask_wrong",
        "The mask is added to the scores as numbers, but not as 0 for allowed and a very negative "
        "number for blocked (e.g. + mask.float(), or (1 - mask) * -inf).",
        "Adding 1 where allowed blocks nothing; 0 * -inf is NaN, so (1 - mask) * -inf turns allowed "
        "scores into NaN; a positive constant favours the blocked keys.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # a bool mask: fill, do not add",
    ),
    Bug(
        "fill_overflows_float16",
        "Blocked scores get a fill float16 cannot hold: a fixed number such as -1e9 (or float32's "
        "minimum), or float16's own minimum added to a negative score.",
        "In float16 (largest magnitude 65504) the fill becomes -inf or masked_fill refuses it, so a fully "
        "masked row is NaN or the call raises, although float32 is fine.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # the dtype's own minimum",
    ),
    Bug(
        "floor_underflows_float16",
        "A floor that keeps a sum from being 0 (clamp_min(1e-12), + 1e-9) is a number float16 cannot hold: "
        "its smallest positive number is about 6e-8, and anything below half of that is 0 there.",
        "In float16 the floor is 0, so a fully masked row, whose weights sum to 0, divides 0 by 0: NaN, "
        "although float32 is fine.",
        "weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)"
        "   # a floor float16 holds too",
    ),
    Bug(
        "weights_not_normalised",
        "The weights are not a softmax over the keys (no softmax, log_softmax, sigmoid or exp alone).",
        "A row of weights does not sum to 1, so the output is not a blend (an average) of the values.",
        "weights = torch.softmax(scores, dim=-1)",
    ),
    Bug(
        "softmax_applied_twice",
        "The softmax is applied twice: once to the scores, then again to the weights it gave "
        "(softmax(softmax(scores)), or an nn.Softmax and torch.softmax one after the other).",
        "Each row still sums to 1, but it is flattened towards an even spread: the second softmax reads "
        "numbers between 0 and 1, so no key weighs more than e times another (with n_k keys, at most "
        "e / (n_k - 1 + e)), and a blocked key, weight 0 after the first, gets exp(0) back: the mask leaks.",
        "weights = torch.softmax(scores, dim=-1)   # once: the weights already sum to 1",
    ),
    Bug(
        "keys_values_swapped",
        "The keys and the values are mixed up (scores from the values, or the keys blended).",
        "It breaks as soon as d_v differs from d_k; when they are equal the numbers are wrong.",
        "return weights @ v   # scores from q and k, the blend of the values v",
    ),
    Bug(
        "queries_keys_swapped",
        "The queries and keys swap roles (the keys ask and the queries answer), or the queries stand in "
        "for the keys (q @ q.T, or keys projected with W_q).",
        "The output gets one row per key instead of one per query (n_k rows instead of n_q), or, with "
        "equal counts, each position gets another position's blend, or each query is scored against "
        "the other queries.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # rows: queries, columns: keys",
        fixes={"check_multi_head": "key = self.W_k(x)   # keys from W_k; scores = query @ "
               "key.transpose(-2, -1) / math.sqrt(d_k): rows queries, columns keys"},
    ),
    Bug(
        "dropout_left_on",
        "Dropout is applied to the weights with training on (F.dropout(..., training=True), an "
        "nn.Dropout in train mode, or F.scaled_dot_product_attention's dropout_p, which .eval() does not "
        "turn off).",
        "The same input gives a different output on each call, and rows of weights do not sum to 1.",
        "weights = torch.softmax(scores, dim=-1)   # no dropout here; in a module: training=self.training",
        fixes={DECODING: "heads = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)"},
    ),
    Bug(
        "softmax_overflow",
        "The softmax is written as exp(scores) / exp(scores).sum() without subtracting each row's own "
        "maximum (none at all, or one maximum taken over the whole tensor).",
        "With large scores exp overflows to inf and inf / inf is NaN; after subtracting a maximum over the "
        "whole tensor, a row far below it underflows to 0 and 0 / 0 is NaN. Small scores work.",
        "weights = torch.softmax(scores, dim=-1)   # or exp(scores - scores.amax(-1, keepdim=True))",
    ),
    Bug(
        "gradient_blocked",
        "Part of the computation is cut off from autograd (.detach(), torch.no_grad(), a round trip "
        "through NumPy or .item(), a new torch.tensor(...)).",
        "The output is right, but no gradient (or a wrong one) flows back to q, k, v: a model built on "
        "it cannot learn.",
        "weights = torch.softmax(scores, dim=-1)   # no .detach(), torch.no_grad() or NumPy round trip",
    ),
    Bug(
        "softmax_low_precision",
        "The softmax is taken in a smaller dtype than the scores' (scores.half().softmax(dim=-1).float(), "
        "or bfloat16), to save memory.",
        "Every output is a little off: float16 keeps about 3 significant digits (bfloat16 about 2), so "
        "the weights are off by up to about 5e-4 of their size (bfloat16: 4e-3) where float32's are off "
        "by about 6e-8; and float32's most negative number, the course's fill, becomes -inf in float16, "
        "so a fully masked row comes out NaN.",
        "weights = torch.softmax(scores, dim=-1)   # in the scores' own dtype: no .half() before it",
    ),
    Bug(
        "dtype_changed",
        "The output's dtype differs from the inputs' (for example float64 out for float32 in), or a tensor "
        "built inside the code in the default float32 (torch.zeros(mask.shape) for an additive mask) meets "
        "float16 or float64 inputs.",
        "The numbers are right, but the next layer gets a dtype it does not expect (and float64 is "
        "slower and twice the memory); a float32 tensor mixed into float16 work turns the result into "
        "float32, or PyTorch refuses the mix (expected m1 and m2 to have the same dtype).",
        "return weights @ v   # no .double(): constants with dtype=q.dtype, torch.finfo(scores.dtype)",
    ),
    Bug(
        "three_dims_only",
        "The code works only for inputs with exactly one batch dimension, (batch, n, d): torch.bmm, or "
        "transpose(1, 2) and other dimensions counted from the front (as in d2l's DotProductAttention).",
        "Inputs of shape (batch, n, d) are right; unbatched (n, d) inputs and (batch, heads, n, d) ones "
        "raise or go wrong.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # @ and dimensions from the end: "
        "any number of batch dimensions",
    ),
    Bug(
        "batch_one_only",
        "The code only works without batch/head dimensions in front (or for batch 1).",
        "Unbatched inputs (or a batch of one) are right; with more in the batch the call fails or mixes "
        "entries, because something reads the wrong dimension: in attention k.T or q.shape[1], in a "
        "module x[0] or squeeze(), in a padding mask lengths[0], lengths.item() or lengths compared as a "
        "row.",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # index from the end",
        shown={"check_attention": "Unbatched inputs (or a batch of one) are right; with batch or head "
               "dimensions in front the call fails or mixes entries, because something reads the wrong "
               "dimension: k.T (which reverses every axis, not only the last two) or q.shape[1] where "
               "q.shape[-1] belongs.",
               "check_multi_head": "A batch of one is right; with more in the batch the call fails or mixes "
               "sequences, because something reads the wrong dimension: x[0], squeeze(), or a batch of 1 "
               "written into a view or reshape.",
               DECODING: "A batch of one is right; with more in the batch the step fails or mixes "
               "sequences, because something reads the wrong dimension: x[0], squeeze(), or a batch of 1 "
               "written into a view or reshape.",
               "check_padding_mask": "A batch of one is right; with more sequences the call fails or mixes "
               "them up, because something reads the wrong dimension: lengths[0], lengths.item(), or the "
               "lengths compared as a row (lengths[None, :]) where a column belongs."},
        fixes={DECODING: "batch, n, width = x.shape   # the batch from the tensor: never 1, never x[0]",
               "check_multi_head": "batch, n, d_model = x.shape; q = self.W_q(x).view(batch, n, "
               "self.n_heads, self.d_k).transpose(1, 2)   # the batch from the tensor, never 1",
               "check_padding_mask": "mask = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]"
               "   # lengths[:, None]: one row per sequence"},
    ),
    Bug(
        "squeeze_drops_batch",
        "A bare .squeeze() (or squeeze(0)) removes every dimension of size 1, so a batch of one loses "
        "its batch dimension.",
        "Batches of two or more are right (unless another dimension is 1 as well, a single new token); "
        "a batch of one comes back without its batch dimension, or the code raises a step later, when a "
        "shape no longer lines up.",
        "out = weights @ v   # no bare .squeeze(): keep the batch, even when it is 1",
        fixes={DECODING: "x = model.embed(tokens, past)   # keep (batch, n_new, d_model): never a bare "
               ".squeeze(), even for a batch of one",
               "check_multi_head": "return out   # keep (batch, n, d_model): never a bare "
               ".squeeze(), even for a batch of one"},
    ),
    Bug(
        "output_and_weights_swapped",
        "The function returns (weights, output) where (output, weights) is expected.",
        "Both are right, in the wrong order: the first thing returned, read as the output, holds the "
        "weights (one column per key).",
        "return weights @ v, weights   # the output first, then the weights",
    ),
    Bug(
        "weights_transposed",
        "The weights are applied transposed: weights.transpose(-2, -1) @ v, or an einsum that sums over "
        "the queries' index ('...qk,...qd->...kd') where the keys' belongs.",
        "Inputs with n_q ≠ n_k raise or come back with n_k rows; square ones are wrong: row i blends the "
        "values with the weights every query gave key i, a column of the weights, not a row.",
        "out = weights @ v   # (n_q, n_k) @ (n_k, d_v): each query's row of weights blends the values",
    ),
    Bug(
        "output_transposed",
        "The output comes out with its last two axes swapped: v.transpose(-2, -1) @ "
        "weights.transpose(-2, -1), or weights @ v transposed at the end.",
        "Its numbers are the right ones, arranged (..., d_v, n_q): one row per value feature instead of one "
        "per query. Where d_v ≠ n_q the shape is wrong; where they are equal it runs, and whatever comes "
        "next reads features as positions.",
        "out = weights @ v   # (..., n_q, n_k) @ (..., n_k, d_v) = (..., n_q, d_v): one row per query",
    ),
    Bug(
        "mask_transposed",
        "The mask is transposed (mask.T or mask.transpose(-2, -1)) before it is applied, as if its rows "
        "were the keys.",
        "A mask that is not square raises; a square one blocks the wrong entries: a causal mask becomes "
        "its mirror, and each query is masked by its own column instead of its row.",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # mask as given: rows = queries",
    ),
    Bug(
        "heads_split_along_positions",
        "The heads are cut along the positions (q.chunk(n_heads, dim=1)), not along the features: each "
        "\"head\" is a block of neighbouring positions with all d_model features.",
        "Without a mask each position attends only to the positions of its own block; with an (n, n) mask "
        "the call raises, the mask meeting a block's smaller scores (and torch.stack of the blocks raises "
        "whenever n_heads does not divide n).",
        _SPLIT_ALL + "   # split the features (the last axis) into heads: in place of your lines that "
        "split them",
    ),
    Bug(
        "sequence_first_input",
        "forward reads x as (n, batch, d_model), the layout nn.MultiheadAttention takes by default "
        "(batch_first=False), where the exercise gives (batch, n, d_model): attention runs across the "
        "batch instead of the positions.",
        "Without a mask each position's output blends the same position of the other sequences (a batch "
        "of one gives each position its own value); with a mask the call raises, the (n, n) mask meeting "
        "(batch, batch) scores.",
        "batch, n, d_model = x.shape   # batch first: no transpose(0, 1) to (n, batch, d_model)",
    ),
    Bug(
        "mask_axis_misplaced",
        "The mask gets axes in the wrong place: mask.unsqueeze(1) turns an (n, n) mask into (n, 1, n), "
        "and Hugging Face's mask[:, None, None, :] (written for a (batch, n) padding mask) turns it into "
        "(n, 1, 1, n); broadcasting then lines its first n up with the heads or the batch.",
        "Without a mask the output is right; with one the call raises a size mismatch (or, when the "
        "number of heads or the batch happens to equal n, each head or sequence gets another query's "
        "row).",
        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # (n, n) broadcasts over "
        "batch and heads as it is",
    ),
    Bug(
        "weights_modified_in_place",
        "forward changes the module's own weights in place (self.W_q.weight /= ..., .mul_, .data = ...).",
        "The first call may be right; each later call starts from other weights, so the same input "
        "gives a different output every time.",
        "q = self.W_q(x) / math.sqrt(self.d_k)   # scale the activations; never change a weight in forward",
    ),
    Bug(
        "modifies_inputs",
        "Your function changes its inputs in place (for example q /= ..., or masked_fill_ on the mask).",
        "The caller's tensors are different after the call, so calling it twice gives different answers.",
        "use out-of-place operations: scores = scores / ..., scores.masked_fill(...) (no underscore)",
        fixes={DECODING: "leave tokens and the cache you are given as they are: no tokens.zero_() or other "
               "in-place change; build the new cache from copies (torch.cat makes new tensors)"},
    ),
    # ---- notebook 08: a cached decoding step (check_decoding_step) ----
    Bug(
        "positions_not_advanced",
        "The new tokens' positions do not continue after the cache: they restart at 0, start one "
        "place off (past - 1 or past + 1), are left out once there is a cache (the token embedding "
        "alone), or, fed a token at a time, every token is embedded at the first one's position.",
        "The prefill is right (unless its tokens are fed one at a time at one position, or all start one "
        "place on with past + 1); every later token is read at a wrong position, as if it stood at the "
        "start of the text or one place off.",
        "x = model.embed(tokens, past)   # past = positions already cached (past + i for a loop's i-th)",
    ),
    Bug(
        "cached_length_misread",
        "The number of cached positions (past) is read from the wrong place: axis 1 of the cached keys "
        "(the number of key/value heads: the keys are (batch, n_kv_heads, positions, d_head)), axis 0 "
        "(the batch), len(cache) (the number of layers) or len(cache[0]) (2: a layer's keys and "
        "values). The new tokens are embedded at that position, and where the mask is built from it, "
        "its diagonal sits there too.",
        "The prefill is right (there is no cache to count); after it every new token is read at a "
        "position that does not depend on how long the text is, and a mask built from the same number "
        "hides cached keys or shows later ones.",
        "past = 0 if cache is None else cache[0][0].shape[-2]   # keys: (batch, h_kv, positions, d_head)",
    ),
    Bug(
        "embedding_added_twice",
        "An embedding is added again on top of model.embed(tokens, past), which already sums the token "
        "embeddings and the position embeddings: model.embed(...) + model.position_embedding(positions) "
        "(the GPT-2 habit of x = wte(tokens) + wpe(positions)), or + model.token_embedding(tokens).",
        "Every position's input counts that embedding twice, on the prefill as much as after it: every "
        "logit is off, though each block is right.",
        "x = model.embed(tokens, past)   # the token and the position embeddings, each once",
    ),
    Bug(
        "final_norm_skipped",
        "The logits are read from the last block's output without the final LayerNorm: "
        "model.unembedding(x) alone, where the model applies model.norm_final first.",
        "Every position's logits are off, on the prefill as much as after it, though each block is right: "
        "the unembedding sees the residual stream at its raw scale.",
        "logits = model.unembed(x)   # model.unembedding(model.norm_final(x)): the final LayerNorm first",
    ),
    Bug(
        "final_norm_twice",
        "The final LayerNorm is applied twice: model.norm_final(x) of your own, then model.unembed(x), "
        "which applies it again.",
        "Every position's logits are off, on the prefill as much as after it, though each block is right: "
        "a LayerNorm of a LayerNorm applies the scale and shift twice.",
        "logits = model.unembed(x)   # it applies model.norm_final itself: no final norm of your own "
        "before it",
    ),
    Bug(
        "attention_norm_skipped",
        "W_q, W_k or W_v read the residual stream x itself, not block.norm_attention(x): the block's "
        "first LayerNorm is skipped for some or all of the queries, keys and values.",
        "Every position's logits are off, on the prefill as much as after it: the projections see the "
        "stream at its raw scale, not at LayerNorm's.",
        "normed = block.norm_attention(x)   # queries, keys and values from normed; x kept for the residual",
    ),
    Bug(
        "attention_residual_missing",
        "Attention's output replaces the residual stream instead of being added to it: "
        "x = W_o(merged), where the block has x = x + W_o(merged).",
        "Every position's logits are off, on the prefill as much as after it: each block forgets the "
        "token's own embedding and everything the blocks before it wrote.",
        "x = x + attention.W_o(merged)   # add to the stream, do not replace it",
    ),
    Bug(
        "attention_output_left_out",
        "Attention's output feeds the MLP but leaves the residual stream: h = x + W_o(merged), then "
        "x = x + mlp(norm_mlp(h)), where the block has x = h + mlp(norm_mlp(h)).",
        "Every position's logits are off, on the prefill as much as after it: what attention found reaches "
        "the next block only through the MLP.",
        "x = x + attention.W_o(merged); x = x + block.mlp(block.norm_mlp(x))   # one stream, updated in turn",
    ),
    Bug(
        "residual_from_normed",
        "A residual adds to the normed stream, not to the stream: x = block.norm_attention(x) (or "
        "norm_mlp) overwrote x before the sublayer, so x = x + ... adds to the normed copy, or the sum "
        "starts from the normed copy itself (x = normed + ...).",
        "Every position's logits are off, on the prefill as much as after it: the stream is squashed to "
        "LayerNorm's scale inside every block, which a pre-norm block never does.",
        "x = x + block.mlp(block.norm_mlp(x))   # norm a copy, add to x itself (so too for attention: "
        "normed = block.norm_attention(x), x kept)",
    ),
    Bug(
        "norms_mixed_up",
        "A sublayer is normed with another LayerNorm than its own: norm_attention before the MLP, "
        "norm_mlp before attention, or the model's norm_final before the MLP (each block has its own two, "
        "with their own scales).",
        "Every position's logits are off, on the prefill as much as after it: the norms differ only in "
        "their learned scale and shift, so a model fresh from initialisation would hide it.",
        "x = x + block.mlp(block.norm_mlp(x))   # norm_mlp before the MLP, norm_attention before W_q/W_k/W_v",
    ),
    Bug(
        "mlp_residual_missing",
        "The MLP's output replaces the residual stream instead of being added to it: "
        "x = block.mlp(block.norm_mlp(x)), where the block has x = x + ....",
        "Every position's logits are off, on the prefill as much as after it: each block ends by "
        "forgetting what attention and the blocks before it wrote.",
        "x = x + block.mlp(block.norm_mlp(x))   # add to the stream, do not replace it",
    ),
    Bug(
        "mlp_skipped",
        "The block's second half is left out: after attention, x goes on to the next block without "
        "x = x + block.mlp(block.norm_mlp(x)).",
        "Every position's logits are off, on the prefill as much as after it: the model was trained with "
        "an MLP in every block, and the step computes a different network.",
        "x = x + block.mlp(block.norm_mlp(x))   # after attention, in every block",
    ),
    Bug(
        "mlp_norm_skipped",
        "The MLP reads the residual stream x itself: x = x + block.mlp(x), without the block's second "
        "LayerNorm.",
        "Every position's logits are off, on the prefill as much as after it: the MLP sees the stream at "
        "its raw scale.",
        "x = x + block.mlp(block.norm_mlp(x))   # the second LayerNorm before the MLP",
    ),
    Bug(
        "parallel_block",
        "The MLP reads the block's input, not the stream after attention was added: both halves of the "
        "block see the same x (a parallel block, as in GPT-J), where this model runs them one after the "
        "other.",
        "Every position's logits are off, on the prefill as much as after it: what attention wrote in "
        "this block is missing from the MLP's input.",
        "x = x + block.mlp(block.norm_mlp(x))   # after x = x + W_o(merged): the MLP reads the new x",
    ),
    Bug(
        "cache_not_appended",
        "This step's keys and values are not added to the cache it returns (it returns the cache it was "
        "given, even the prefill's None, or one holding only the newest tokens).",
        "Every later token attends to too few positions, as if the tokens generated in between did not "
        "exist (when the prefill's keys and values were kept, the first token after the prompt is still "
        "right); handed back None after the prefill, every step starts afresh at position 0.",
        "new_cache.append((key, value))   # after torch.cat with the cached ones, not the given cache (a "
        "preallocated cache: write at the write pointer, then move the pointer on by n_new)",
    ),
    Bug(
        "new_token_not_attended",
        "The new queries attend to the cache they were given, without this step's own keys and values "
        "(it appends them to the cache it returns only after attending).",
        "The prefill is right; after it no new token sees itself (nor, in a chunk, the new tokens before "
        "it), so its logits come from the earlier positions alone.",
        "key, value = torch.cat([past_keys, key], dim=-2), torch.cat([past_values, value], dim=-2)"
        "   # this layer's cached keys and values (cache[layer]) first; append, then attend to these",
    ),
    Bug(
        "cache_layer_mixed_up",
        "A layer reads another layer's cache: cache[0] where cache[layer] belongs, a cache list built as "
        "[[None, None]] * n_layers (one list, so every layer's entry is the last layer's), or entries "
        "read back in the wrong order (list.pop() takes the last layer's first).",
        "The prefill is right; after it a layer attends to another layer's keys and values for the "
        "cached positions.",
        "past_keys, past_values = cache[layer]   # this layer's own entry, not cache[0]",
    ),
    Bug(
        "cache_read_at_wrong_index",
        "A layer reads its cached keys or values from another entry of the cache than the one they were "
        "stored in: the indices in the wrong order (cache[0, layer] for a cache kept as (layers, 2, ...)), "
        "or a flat list [k0, v0, k1, v1, ...] read at cache[i] and cache[i + 1], where layer i's are at "
        "2 * i and 2 * i + 1.",
        "The prefill is right; after it some layer attends to another layer's keys or values, or to values "
        "in place of keys. The check tries every way the layers could read the prefill's cache and names "
        "the one that gives your step's logits.",
        "past_keys, past_values = cache[layer]   # the entry this layer's keys and values were stored in",
    ),
    Bug(
        "cache_layer_not_advanced",
        "Every block appends to the same layer's cache entry: the layer index is set once before the loop "
        "over the blocks and never advances (cache.append(0, ...), or layer = 0 and no enumerate), so "
        "a later block attends to the earlier blocks' keys and values as well as its own.",
        "From the second block on every position's logits are off, on the prefill already; the cache "
        "holds a single entry with every layer's keys one after another (n_layers times as many "
        "positions as the text), and the next step's positions start after all of them.",
        "for layer, block in enumerate(model.blocks):   # each block appends to its own entry: cache[layer]",
    ),
    Bug(
        "static_buffer_whole_attended",
        "With keys and values kept in a preallocated buffer of max_len positions, the new queries attend "
        "to the whole buffer: its empty slots (zeros) as well as the filled ones, under a mask aligned to "
        "the buffer's end.",
        "Every position's logits are off, on the prefill already: the zero keys of the empty slots take "
        "weight (a score of 0), and a mask aligned to the buffer's end lets each new query see every "
        "filled position, later ones too.",
        "key, value = key_buffer[:, :, :filled], value_buffer[:, :, :filled]   # only the positions "
        "filled so far (past + n_new), then the bottom-right mask over them",
    ),
    Bug(
        "counter_advanced_per_layer",
        "One position counter is shared by every layer and advanced inside the loop over the blocks (as "
        "LLMs-from-scratch's ptr_current_pos would be if one counter served every attention module), so "
        "a later block thinks its n_new positions start n_new further along for each block before it.",
        "The first block is right; from the second on, every position's logits are off, on the prefill "
        "already: the block takes its causal mask's rows from too far down (rows that hide nothing), or "
        "writes its keys and values past empty slots of zeros that its queries then attend to; and the "
        "counter the step returns has grown n_layers times as fast as the text.",
        "rows = causal[past:past + n_new, :n_all]   # the same rows in every block: advance a shared "
        "counter once per step, after the loop (or keep one per layer)",
    ),
    Bug(
        "counter_advanced_before_write",
        "With keys and values kept in a preallocated buffer, the counter of filled slots is advanced "
        "before this step's keys and values are written, so they go n_new slots further along than the "
        "slots the new queries read.",
        "Every position's logits are off, on the prefill already: the slots attended still hold zeros, "
        "so every block's attention adds nothing (W_o of zeros) and the prompt's tokens never meet; "
        "after it, the queries read slots shifted n_new along, zeros among them.",
        "k_buf[:, :, past:past + n_new], v_buf[:, :, past:past + n_new] = key, value   # the slots from "
        "the count before this step (past); advance the count after writing",
    ),
    Bug(
        "prefill_pieces_isolated",
        "A long prompt is prefilled a piece at a time (to keep each score matrix small), and each piece "
        "attends only to its own keys and values, not to the earlier pieces' (is_causal=True within the "
        "piece, or the cache appended only after attending).",
        "The first piece of a prompt is right, and so is a step after the prefill; from the second "
        "piece on, the prompt's tokens never see the pieces before them, so their logits are off.",
        _BOTTOM_RIGHT + "   # over every key so far: each piece's queries see the pieces before it "
        "too (append to the cache first, then attend)",
    ),
    Bug(
        "first_block_only",
        "Only the first block runs: the return statement sits inside the loop over the blocks (one "
        "indent too deep), or the loop goes over model.blocks[:1].",
        "Every position's logits are off, on the prefill as much as after it, and the cache holds the "
        "first layer alone.",
        "model.blocks   # every block: return (logits, cache) after the loop over them, not inside it",
    ),
    Bug(
        "no_block_without_cache",
        "With no cache yet no block runs: the loop goes over zip(model.blocks, cache or []), which stops at "
        "the shorter of the two, and [] has no entries (or it goes over the cache's entries alone).",
        "Every prefill's logits are the embeddings read out directly, model.unembed(model.embed(tokens, 0)): "
        "no attention and no MLP, and the cache it returns holds no layer.",
        "for layer, block in enumerate(model.blocks):   # every block, cache or not; cache[layer] only when "
        "there is a cache",
    ),
    Bug(
        "first_block_reused",
        "Every layer runs block 0's attention (or all of block 0): model.blocks[0] in a line copied from "
        "a cell that worked on the first block, pasted into the loop over the blocks.",
        "Every position's logits are off, on the prefill as much as after it (with one layer it would be "
        "right), and every layer caches block 0's keys and values.",
        "for layer, block in enumerate(model.blocks): normed = block.norm_attention(x)   # the loop's own "
        "block, its attention and its MLP",
    ),
    Bug(
        "state_outside_cache",
        "The step keeps something it needs outside the cache it returns (the number of positions so far "
        "in a global, an attribute of the function or a default argument), so a call with an older cache "
        "reads what a later call left there.",
        "Generating straight on works; a caller that goes back to an earlier cache (two continuations of "
        "one prompt, as beam search does) gets the other continuation's state. The cache itself was "
        "left as it was.",
        "past = 0 if cache is None else cache[0][0].shape[-2]   # in place of the count kept between calls: "
        "the positions the cache you are given holds, read anew each call (cache.length for a gpt.KVCache)",
    ),
    Bug(
        "cache_prepended",
        "This step's keys or values are put before the cached ones (torch.cat([new, past])), not after.",
        "The prefill is right; after it the cache holds the positions out of order, so a mask over the "
        "key positions blocks the wrong ones.",
        "key, value = torch.cat([past_keys, key], dim=-2), torch.cat([past_values, value], dim=-2)"
        "   # this layer's cached keys and values (cache[layer]) first, the new ones after",
    ),
    Bug(
        "last_position_only",
        "Only the last new position's logits are returned (what generation needs next), not one row per "
        "new token.",
        "The logits have shape (batch, 1, vocab), or (batch, vocab) with logits[:, -1], where a prefill or "
        "a chunk of n_new tokens needs (batch, n_new, vocab); with [:, -1:] a single token's are right.",
        "logits = model.unembed(x)   # every new position: (batch, n_new, vocab_size), not [:, -1:] or "
        "[:, -1]",
    ),
    Bug(
        "cache_low_precision",
        "The keys and values are kept in bfloat16 (half the bytes), then attended to as they were "
        "rounded: as they are made, or once cached and read back.",
        "The logits are a little off (bfloat16 keeps about three significant digits): on the prefill "
        "already when the rounding comes before attending, from the first cached step on when only the "
        "cache is rounded. Not the model's own float32 numbers, which the exercise asks for. Halving the "
        "cache is a real trade-off; notebook 06 counts its bytes.",
        "key, value = key.float(), value.float()   # the model's float32 from the projection on: no "
        ".to(torch.bfloat16) before attending or caching",
    ),
    Bug(
        "values_from_cached_keys",
        "The step puts keys where the values belong: the cached keys read back as values "
        "(value = torch.cat([past_keys, value], ...)), the keys stored in the values' place in the cache "
        "(cache.append((key, key))), or this step's keys joined to the cached values "
        "(value = torch.cat([past_values, key], ...)).",
        "The prefill is right; every later token blends keys in place of values: the cached positions' "
        "keys (its own position's value is right), or its own position's key and, as the cache grows, "
        "every new position's.",
        "value = torch.cat([past_values, value], dim=-2)   # the cached values (cache[layer][1]) and this "
        "step's values (W_v): no keys",
    ),
    Bug(
        "cache_keys_values_swapped",
        "The cache stores each layer's values first and its keys second, and the next step reads them "
        "back as (keys, values).",
        "The prefill is right; every later token scores the cached positions by their values and blends "
        "their keys.",
        "new_cache.append((key, value))   # keys first, the order the next step reads them back in",
    ),
    Bug(
        "causal_offset_negated",
        "The bottom-right mask's offset has the wrong sign: tril(diagonal=n_new - n_all) instead of "
        "n_all - n_new.",
        "Right on the prefill, where the offset is 0; after it new query i may see only the keys up to "
        "i - past, so a single new token sees no key at all and its row is fully masked (zeros, NaN or "
        "an even blend, as the fill decides).",
        _BOTTOM_RIGHT,
    ),
    Bug(
        "mask_cached_columns_last",
        "The mask for new tokens after a cache is joined from two pieces in the wrong order: the new "
        "tokens' causal triangle first, then the cached positions' columns, though the keys hold the "
        "cached positions first (torch.cat([past_keys, key])).",
        "Right on the prefill and for one new token at a time (its triangle is one allowed cell); in a "
        "chunk of several new tokens after a cache, a new query is blocked from some cached positions "
        "and sees new tokens after itself.",
        "mask = torch.cat([torch.ones(n_new, n_all - n_new, dtype=torch.bool), torch.ones(n_new, n_new, "
        "dtype=torch.bool).tril()], dim=1)   # the cached positions' columns first, as in the keys",
    ),
    Bug(
        "keys_not_appended",
        "The new values are appended to the cache but the new keys are not.",
        "The cache holds more values than keys, so the next step's weights @ values fails or pairs each "
        "weight with the value of another position.",
        "key = torch.cat([past_keys, key], dim=-2)   # past_keys: this layer's cached keys "
        "(cache[layer][0]); keys AND values, both along the positions",
    ),
    Bug(
        "values_not_appended",
        "The new keys are appended to the cache but the new values are not.",
        "There are more keys than values, so weights @ values fails (or pairs each weight with the value "
        "of another position).",
        "value = torch.cat([past_values, value], dim=-2)   # past_values: this layer's cached values "
        "(cache[layer][1]), as for the keys",
    ),
    Bug(
        "cache_wrong_axis",
        "The cached and new keys and values are concatenated along the wrong axis (heads, batch or "
        "features) instead of the positions.",
        "torch.cat refuses as soon as a step adds fewer positions than the cache holds: the sizes differ "
        "on the positions axis, which is the one that should grow.",
        "key, value = torch.cat([past_keys, key], dim=-2), torch.cat([past_values, value], dim=-2)"
        "   # this layer's cached keys and values (cache[layer]), along the positions axis (dim=-2 in the "
        "(batch, heads, positions, d_head) layout; in another "
        "layout, the axis that holds the positions)",
    ),
    Bug(
        "is_causal_top_left",
        "The new queries' causal triangle is aligned to the top left of the scores: "
        "F.scaled_dot_product_attention(..., is_causal=True) does that, and so does "
        "torch.ones(n_new, n_all).tril() without an offset.",
        "Right on the prefill, where the new queries are all the positions; after it, new query i may see "
        "keys 0..i only instead of every cached key and the new ones up to itself. With that triangle on "
        "every step, one new token is computed from the first token alone; with no mask for one token "
        "(which is right) and that triangle for several, only the chunks go wrong.",
        _BOTTOM_RIGHT + "   # bottom right; one new query needs no mask",
    ),
    Bug(
        "causal_mask_missing",
        "Several new tokens at once (the prompt, or a chunk after it) are attended without a causal mask.",
        "Each of the new queries also sees the new tokens after it: the prompt's logits (or the chunk's) "
        "are computed from the future, while single tokens come out right.",
        _BOTTOM_RIGHT + "   # needed whenever n_new > 1",
    ),
    Bug(
        "cache_masked_out",
        "The mask blocks every cached position: the cached columns padded with False "
        "(torch.cat([torch.zeros(n_new, past, dtype=torch.bool), tril], dim=1)), so the new tokens see "
        "each other and never the cache.",
        "The prefill is right; after it each new token attends to this step's tokens alone (a single new "
        "token to itself), as if the text began with it.",
        _BOTTOM_RIGHT + "   # every cached position True: all of the cache is in the new tokens' past",
    ),
    Bug(
        "kv_heads_repeated_not_interleaved",
        "The shared key/value heads are repeated with .repeat (kv 0, 1, 0, 1) instead of "
        ".repeat_interleave (kv 0, 0, 1, 1).",
        "With grouped-query attention query head i must use key/value head i // group; with .repeat it "
        "uses head i % n_kv_heads, so most query heads read another head's keys and values.",
        "key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)"
        "   # group = n_heads // n_kv_heads",
    ),
    Bug(
        "kv_head_index_wrong",
        "Query head h reads the wrong key/value head: h // n_kv_heads (or h % group) where h // group "
        "belongs, group = n_heads // n_kv_heads: the group size and the number of key/value heads mixed up.",
        "The index runs past the last key/value head and PyTorch raises IndexError; where the two sizes "
        "happen to be equal (4 query heads sharing 2) the mistake hides.",
        "index = torch.arange(n_heads) // group   # query head h shares key/value head h // group",
    ),
    Bug(
        "cache_holds_repeated_heads",
        "The cache keeps the key/value heads repeated for the query heads (repeat_interleave before "
        "caching): n_heads of them instead of n_kv_heads.",
        "The logits can still be right, but the cache takes n_heads / n_kv_heads times the memory it "
        "needs, the very saving grouped-query attention is for; joined with new keys that are not "
        "repeated, torch.cat refuses (sizes n_heads and n_kv_heads), and repeated once more to attend, "
        "they are too many for the query heads.",
        "new_cache.append((key, value))   # key and value with their n_kv_heads heads: no repeat_interleave "
        "before this line; repeat them (group, dim=1) only where you attend, after it",
    ),
    Bug(
        "cache_modified_in_place",
        "The step changes the cache it was given (appends to it in place, or writes into a buffer that "
        "every cache it returns shares) instead of returning a new one.",
        "Generating straight on works, but a caller that reuses a cache (two continuations of one prompt, "
        "as beam search does) finds it already holding the other continuation's tokens.",
        "new_cache = []   # build the returned cache anew (or cache = cache.copy() for a gpt.KVCache)",
    ),
]

BUGS = {bug.id: bug for bug in _ENTRIES}


def catalog_markdown() -> str:
    """docs/checkers.md: how the checkers decide, how to add a bug, and every bug id with its words."""
    out = [
        "# Checker catalog",
        "",
        "Every bug id the checkers in `attnviz.check` can name (`check_attention`, `check_multi_head`,",
        "`check_causal_mask`, `check_padding_mask`, `check_decoding_step`): what is wrong, how it shows, the",
        "fix. Generated from `attnviz/check/_catalog.py` by `make docs`; do not edit by hand.",
        "",
        "## How a checker decides",
        "",
        "Every checker runs on one engine (`attnviz/check/_engine.py`): its *probes* (one `Probe` each:",
        "the arguments, the checker's own float64 reference result, a kind such as `main`, `repeat`,",
        "`float16` or `backward`) run the learner's code in one forked child process with a time budget,",
        "and one ordered list of *rules* (`attnviz/check/_rules.py`) reads the answers. A checker is its",
        "probes plus the rules that differ. The rules say first what happened (timed out, the process",
        "ended, not written yet, raised, returned something unreadable), then which bug it looks like: a",
        "bug id is named only when a *hypothesis* (`attnviz/check/_reference.py`: the reference with that",
        "one thing done wrong) reproduces the learner's outputs on every main probe, or when one of the",
        "shared rules recognises its symptom (NaN on a fully masked row, inputs changed in place, a",
        "`.view` after `transpose`, a changed dtype, gradients cut off, ...). `check_decoding_step` decides",
        "in two stages: the prefills first (no cache yet, where every attention-level bug already shows),",
        "then the cached steps, where it also reads which keys and values the returned cache holds.",
        "",
        "The fix lines below use the exercises' names (`scores`, `q`, `k`, `v`, `weights`, `heads` for",
        "weights @ v, `merged` for what W_o is handed, `x`; `query`, `key`, `value` in",
        "`check_decoding_step`). A verdict shows its fix in the learner's own names instead where their",
        "code shows them (the line that multiplies a tensor by another's transpose, `S = Q @ K.mT / ...`,",
        "the tensors handed to `F.scaled_dot_product_attention`, what a softmax is assigned to, what W_o",
        "is handed, forward's input), and says when the line is in their code already (the change is",
        "then in its comment). Where their scores have no name (`att = (q @ k.mT / s).softmax(-1)`), a",
        "fix `scores = ...` is written as their own line with the new scores in it, to paste in its place:",
        "`attnviz/check/_readers.py` reads the names from the code's text; `_yournames.py` writes the line;",
        "`_ownlines.py` gives the learner's own line, changed, where the catalog's line would not fit (a",
        "scale handed to a helper, a softmax written by hand, an einsum that names every axis): its table",
        "`RULES` says when each rule applies. The rules are in five modules by what they change:",
        "`_ownlines_scores.py` (the scale, the softmax, casts, fills), `_ownlines_masks.py`,",
        "`_ownlines_shapes.py` (sizes, axes, names, no_grad, dropout), `_ownlines_heads.py` and",
        "`_ownlines_step.py` (a decoding step's cache and stream); `_learner_lines.py` gives them the",
        "learner's one-line statements. The code's text is parsed by `_stale.syntax_tree`, whose columns",
        "count characters (Python's parser counts UTF-8 bytes): read a node's text with `_stale.segment`,",
        "never `ast.get_source_segment`, and a learner's object only through `_stale.code_of`, never",
        "`getattr` (its own `__getattr__` would run in the kernel).",
        "",
        "Whatever a checker's own reading still raises on a shape of code nobody foresaw becomes a verdict",
        "that says so in plain words (`_verdict.never_raises`, the outermost decorator of each public",
        "checker), never a traceback in the learner's notebook; the tests set `ATTNVIZ_CHECK_RAISE=1`,",
        "under which the error is raised as it is, so that no test passes on such a verdict.",
        "",
        "## Adding a bug",
        "",
        "1. A `Bug(id, what, shows, fix)` entry in `attnviz/check/_catalog.py` (with `fixes={checker: ...}`",
        "   and `shown={checker: ...}` when an exercise names things its own way), then `make docs` to",
        "   regenerate this file.",
        "2. The hypothesis that reproduces it, in `attnviz/check/_reference.py`, in the table of the",
        "   checker that should name it (`ATTENTION_VARIANTS`, `MULTI_HEAD_VARIANTS`, `PREFILL_VARIANTS`,",
        "   `CACHED_VARIANTS`; the masks' tables are in `attnviz/check/masks.py`), or a rule in",
        "   `_rules.py` (or the checker's own rules) when no hypothesis can reproduce it. Without one",
        "   of these the id is never named. A table is tried in its order and the first variant that",
        "   reproduces every main probe wins. `ATTENTION_VARIANTS` feeds three checkers: `check_multi_head`",
        "   tries each inside correct multi-head attention, and `PREFILL_VARIANTS` (`check_decoding_step`)",
        "   is built from it.",
        "3. A member of the bug zoo, `attnviz/zoo.py`, in the family's `*_BUGS` dict, written the way a",
        "   learner would, with its one wrong line marked `# BUG`.",
        "4. Tests: `tests/test_zoo.py` checks that the checker names the zoo member by its id, and that",
        "   the fix line put in place of the `# BUG` line passes (the fix is code up to its first `   #`,",
        "   and replaces that one line, indentation kept: so the zoo's bug sits on one line). Write two",
        "   cases in the learner corpus, `tests/learner_code/<family>.py`, each in a style of your own,",
        "   and add the id to `LATER_IDS` in `tests/test_learner_corpus_sound.py`. The corpus runs",
        "   through the checkers only in `make test`, not in `make check`; after a new hypothesis run",
        "   `ATTNVIZ_CORPUS=1 .venv/bin/python -m pytest tests/test_learner_corpus.py -n 2 -k \"not hostile\"`",  # noqa: E501
        "   (one to two minutes): a new hypothesis can take over cases another id used to name.",
        "",
        "## The bug ids",
        "",
    ]
    for bug in sorted(BUGS.values(), key=lambda b: b.id):
        out += [
            f"### `{bug.id}`",
            "",
            f"**What is wrong:** {bug.what}",
            "",
            f"**How it shows:** {bug.shows}",
            "",
            f"**Fix:** `{bug.fix}`",
            "",
        ]
        out += [f"**How it shows in `{checker}`:** {shown}\n" for checker, shown in sorted(bug.shown.items())]
        out += [f"**Fix in `{checker}`:** `{fix}`\n" for checker, fix in sorted(bug.fixes.items())]
    return "\n".join(out)


if __name__ == "__main__":
    print(catalog_markdown(), end="")
