"""The checkers never crash on learner code, and their verdicts say what they saw."""

import math
import threading
import time

import numpy as np
import pytest
import torch
from _fresh import modules_after
from torch import nn

import attnviz
from attnviz import zoo
from attnviz.check import (
    CheckResult,
    check_attention,
    check_causal_mask,
    check_multi_head,
    check_padding_mask,
)


def _reference(q, k, v, mask=None):
    return attnviz.scaled_dot_product_attention(q, k, v, mask)


def test_result_shows_itself_as_text_and_html():
    result = check_attention(zoo.mask_fill_zero)
    assert isinstance(result, CheckResult)
    text, page = repr(result), result._repr_html_()
    for part in ("mask_fill_zero", "What is wrong", "How it shows", "Fix", "finfo"):
        assert part in text and part in page, part
    assert "<div" in page and "<script" not in page


def test_show_fixes_false_leaves_the_fix_line_out_and_true_brings_it_back():
    """An nbgrader release calls show_fixes(False): the verdict names the bug, not the answer."""
    from attnviz.check import show_fixes

    result = check_attention(zoo.mask_fill_zero)
    assert result.fix and "finfo" in result.fix
    show_fixes(False)
    try:
        text, page = repr(result), result._repr_html_()
        assert "finfo" not in text and "finfo" not in page
        assert "Fix: not shown in a graded assignment" in text and "What is wrong" in text
        assert "not shown in a graded assignment" in page and "mask_fill_zero" in page
        assert result.fix and "finfo" in result.fix                    # kept: a default, not a lock
    finally:
        show_fixes(True)
    assert "finfo" in repr(result)
    with pytest.raises(TypeError, match="shown must be True or False"):
        show_fixes("no")


def test_verdict_html_escapes_learner_text():
    def sneaky(q, k, v, mask=None):
        raise ValueError("<b>bold</b>")

    page = check_attention(sneaky)._repr_html_()
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


def test_passing_verdict():
    result = check_attention(_reference)
    assert result.passed and result.bug is None and result.status == "passed"
    assert "correct" in repr(result)


def test_not_implemented_is_a_verdict_with_the_hint():
    def stub(q, k, v, mask=None):
        raise NotImplementedError("scores, scale, mask, softmax, weights @ v")

    result = check_attention(stub)
    assert not result.passed and result.bug is None and result.status == "not_implemented"
    assert "not written yet" in repr(result) and "weights @ v" in repr(result)


def test_other_exceptions_are_reported_with_the_input_shapes():
    def broken(q, k, v, mask=None):
        return q @ k  # forgot the transpose: shapes do not line up

    result = check_attention(broken)
    assert not result.passed and result.status == "problem"
    assert "RuntimeError" in repr(result) and "q (4, 16)" in repr(result)


@pytest.mark.parametrize(
    "returned, words",
    [
        (None, "returned None"),
        (np.zeros((4, 3)), "NumPy array"),
        ("output", "returned a str"),
        ((), "empty tuple"),
    ],
)
def test_wrong_return_types(returned, words):
    result = check_attention(lambda q, k, v, mask=None: returned)
    assert not result.passed and words in repr(result), repr(result)


def test_wrong_shape_names_the_dimension():
    def too_wide(q, k, v, mask=None):
        out, _ = _reference(q, k, v, mask)
        return torch.cat([out, out], dim=-1)

    result = check_attention(too_wide)
    assert not result.passed and result.bug is None
    assert "in the features d_v (dimension -1)" in repr(result) and "(4, 6)" in repr(result)


def test_nan_everywhere_is_observed():
    result = check_attention(lambda q, k, v, mask=None: torch.full((*q.shape[:-1], v.shape[-1]), math.nan))
    assert not result.passed and "NaN" in repr(result)


def test_rows_not_summing_to_one_are_observed():
    def half(q, k, v, mask=None):  # two bugs at once: no known single bug, but rows sum to 0.5
        out, _ = zoo.missing_scale(q, k, v, mask)
        return out * 0.5

    result = check_attention(half)
    assert not result.passed and result.bug is None
    assert "do not sum to 1" in repr(result) and "0.5" in repr(result)


def test_two_bugs_at_once_get_observations_not_a_wrong_name():
    def double(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1)  # missing scale ...
        if mask is not None:
            scores = scores.masked_fill(~mask, 0.0)  # ... and a zero fill
        return torch.softmax(scores, dim=-1) @ v

    result = check_attention(double)
    assert not result.passed and result.bug is None and result.status == "problem"
    # the inputs without a mask show the one mistake; the masked ones are said to hold another
    assert "two mistakes, it seems, and one of them is missing scale" in repr(result)
    assert "On the inputs without a mask your output matches the known bug missing_scale" in repr(result)
    assert "is the mask used" in repr(result)


def test_two_bugs_both_in_every_input_get_observations_not_a_wrong_name():
    def double(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / q.shape[-1]  # divided by d_k ...
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-2) @ v      # ... and over the queries

    result = check_attention(double)
    assert not result.passed and result.bug is None and result.status == "problem"
    assert "matches no known bug" in repr(result) and "Wrong on every one of these" in repr(result)


def _tiled(rescale_sum=True, tile=32):
    """Attention over key tiles with an online softmax (as FlashAttention does it), by hand."""
    def attention(q, k, v, mask=None):
        scale = 1 / math.sqrt(q.shape[-1])
        top = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
        total = torch.zeros_like(top)
        out = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
        for start in range(0, k.shape[-2], tile):
            s = q @ k[..., start:start + tile, :].transpose(-2, -1) * scale
            if mask is not None:
                s = s.masked_fill(~mask[..., start:start + tile], torch.finfo(s.dtype).min)
            new_top = torch.maximum(top, s.amax(-1, keepdim=True))
            e = (s - new_top).exp()
            shrink = (top - new_top).exp()
            total = (total * shrink if rescale_sum else total) + e.sum(-1, keepdim=True)
            out = out * shrink + e @ v[..., start:start + tile, :]
            top = new_top
        return out / total
    return attention


def test_attention_written_in_tiles_is_tried_past_one_tile():
    """An online softmax is exact within one tile: only many keys show a rescaling mistake."""
    assert check_attention(_tiled()).passed
    forgot = check_attention(_tiled(rescale_sum=False))
    assert not forgot.passed and forgot.bug is None
    assert forgot.headline.endswith("is right on short inputs (up to 6 keys), wrong with 300 keys.")
    assert "exp(old maximum - new maximum)" in repr(forgot)


def test_multi_head_attention_in_tiles_is_tried_past_one_tile():
    """The same online softmax inside multi-head attention: 130 positions, past a tile of 32."""
    def with_tiles(rescale_sum):
        tiled = _tiled(rescale_sum=rescale_sum)
        return lambda d, h: zoo.MultiHeadWith(d, h, attention=lambda q, k, v, m: (tiled(q, k, v, m), None))

    assert check_multi_head(with_tiles(True)).passed
    forgot = check_multi_head(with_tiles(False))
    assert not forgot.passed and forgot.bug is None
    assert forgot.headline.endswith("is right on short inputs (up to 5 positions), wrong with 130 positions.")


def test_a_nan_gradient_through_a_fully_masked_row_fails():
    """A -inf fill and nan_to_num on the output keep the output finite, and the NaN of the softmax still
    reaches the gradient: in training it reaches the weights, so the check fails (it passed with a note
    until a reader read the ✓ beside "checked gradients" and "NaN" as a mixed message)."""
    def wiped(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.nan_to_num(torch.softmax(scores, dim=-1) @ v, nan=0.0)

    result = check_attention(wiped)
    assert not result.passed and "gradient of" in result.observed[0] and "holds NaN" in result.observed[0]
    plain = check_attention(attnviz.scaled_dot_product_attention)
    assert plain.passed and not any("NaN" in line for line in plain.observed + plain.notes)


def test_in_place_change_of_inputs_is_the_bug():
    def divides_q_in_place(q, k, v, mask=None):
        q /= math.sqrt(q.shape[-1])
        out, _ = attnviz.scaled_dot_product_attention(q, k, v, mask, scale=1.0)
        return out

    result = check_attention(divides_q_in_place)
    assert not result.passed and result.bug == "modifies_inputs"
    assert "q" in repr(result)


def test_slow_code_times_out_with_a_verdict_and_the_kernel_lives_on():
    release = threading.Event()

    def slow(q, k, v, mask=None):
        release.wait(10)  # stands in for a loop that never ends
        return _reference(q, k, v, mask)[0]

    start = time.perf_counter()
    result = check_attention(slow, time_limit=0.2)
    elapsed = time.perf_counter() - start
    release.set()
    assert not result.passed and "did not finish within 0.2 s" in repr(result)
    assert elapsed < 2


def test_function_without_mask_argument():
    result = check_attention(lambda q, k, v: _reference(q, k, v)[0])
    assert not result.passed and "TypeError" in repr(result)


def test_not_a_function():
    assert "expected a function" in repr(check_attention(3))


def test_weights_returned_must_be_right_too():
    def bad_weights(q, k, v, mask=None):
        out, weights = _reference(q, k, v, mask)
        return out, weights * 2

    result = check_attention(bad_weights)
    assert not result.passed and "weights you return" in repr(result)


def test_output_only_or_output_and_weights_both_pass():
    assert check_attention(lambda q, k, v, mask=None: _reference(q, k, v, mask)[0]).passed
    assert check_attention(lambda q, k, v, mask=None: list(_reference(q, k, v, mask))).passed


# ---- multi-head -------------------------------------------------------------------------------


class _Stub(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, mask=None):
        raise NotImplementedError("split heads, attend, merge heads, W_o")


def test_multi_head_not_implemented_in_forward_or_init():
    assert check_multi_head(_Stub).status == "not_implemented"

    class NoInit(nn.Module):
        def __init__(self, d_model, n_heads):
            raise NotImplementedError("build W_q, W_k, W_v, W_o")

    result = check_multi_head(NoInit)
    assert result.status == "not_implemented" and "build W_q" in repr(result)


def test_multi_head_missing_layer_is_named():
    class NoWo(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model) for _ in range(3))

        def forward(self, x, mask=None):
            return x

    result = check_multi_head(NoWo)
    assert not result.passed and "no W_o layer" in repr(result)


def test_multi_head_every_missing_layer_is_named():
    """Replay 18's 05U1: W_q, W_k and W_v as nn.ModuleLists of one layer per head (no .weight) were told
    of W_q alone; the learner found the other two by the next round's error."""
    class PerHead(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (nn.ModuleList([nn.Linear(d_model, d_model // n_heads)
                                                           for _ in range(n_heads)]) for _ in range(3))
            self.W_o = nn.Linear(d_model, d_model)

        def forward(self, x, mask=None):
            return x

    result = check_multi_head(PerHead)
    assert not result.passed and "no W_q, W_k or W_v layer with a .weight" in repr(result), repr(result)
    assert "the same for W_k and W_v." in repr(result), repr(result)


def test_wrong_on_every_input_says_so_without_an_empty_right_on_list():
    def doubled(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return 2 * torch.softmax(scores, dim=-1) @ v

    result = check_attention(doubled)
    assert not result.passed and result.bug is None
    assert "Wrong on every one of these: 4 queries, 4 keys, no mask;" in repr(result)
    assert "Right on" not in repr(result)


def test_the_general_fix_line_assigns_the_masked_scores():
    fix = check_attention(lambda q, k, v, mask=None: 2 * v[..., :1, :].expand(*q.shape[:-1], v.shape[-1])).fix
    assert "scores = scores.masked_fill(" in fix


def test_multi_head_wrong_output_shape_and_errors_are_reported():
    class Halves(zoo.MultiHeadWith):
        def forward(self, x, mask=None):
            return super().forward(x, mask)[..., :6]

    result = check_multi_head(Halves)
    assert not result.passed and "features d_model (last dimension)" in repr(result)

    class Raises(zoo.MultiHeadWith):
        def forward(self, x, mask=None):
            raise ValueError("oops")

    assert "ValueError: oops" in repr(check_multi_head(Raises))


class _Heads(nn.Module):
    """A learner's module that attends per head right, then ends one of two wrong ways."""

    ending = "unmerged"

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x, mask=None):
        batch, n, _ = x.shape
        q, k, v = (w(x).view(batch, n, self.h, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        heads = scores.softmax(dim=-1) @ v
        return heads if self.ending == "unmerged" else self.W_o(heads)


def test_multi_head_heads_left_unmerged_are_told_to_merge():
    result = check_multi_head(_Heads)
    assert not result.passed and result.bug is None
    assert "4 dimensions instead of 3. The heads are not merged back" in repr(result)
    assert "untouched" not in repr(result)


def test_multi_head_output_projection_before_the_merge_is_named_as_such():
    class WoFirst(_Heads):
        ending = "W_o first"

    result = check_multi_head(WoFirst)
    assert not result.passed and result.bug is None       # not missing_key_transpose: the scores are right
    assert "a linear layer got inputs of width 4, not d_model = 12" in repr(result)
    assert "before merging them back" in repr(result)


D_K_FROM_AN_EARLIER_CELL = 4      # notebook 05 leaves a global d_k = 4 behind


class _Split(_Heads):
    """Right multi-head attention but for the head width it splits into (``self.width``)."""

    def width(self):
        return self.d_k

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        q, k, v = (w(x).view(batch, n, self.h, self.width()).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.width())
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        heads = scores.softmax(dim=-1) @ v
        return self.W_o(self.merge(heads, batch, n, d_model))

    def merge(self, heads, batch, n, d_model):
        return heads.transpose(1, 2).reshape(batch, n, d_model)


def test_multi_head_a_head_width_that_ignores_the_layers_sizes_is_named_as_such():
    class StaleGlobal(_Split):
        def width(self):
            return D_K_FROM_AN_EARLIER_CELL            # the learner's global d_k, not d_model // n_heads

    class Typed(_Split):
        def width(self):
            return 4

    assert check_multi_head(_Split).passed
    for cls in (StaleGlobal, Typed):
        result = check_multi_head(cls)
        assert not result.passed and result.bug is None, cls
        assert "split the heads 4 wide whatever the layer's size: with d_model = 10 and n_heads = 2 each " \
               "head is 5 wide" in repr(result), repr(result)
        assert result.fix.startswith("self.d_k = d_model // n_heads")

    class BadMerge(_Split):               # a view error at the layer's own head width is something else
        def merge(self, heads, batch, n, d_model):
            return heads.transpose(1, 2).reshape(batch, n, self.h, d_model)

    result = check_multi_head(BadMerge)
    assert not result.passed and "split the heads" not in repr(result), repr(result)


def test_multi_head_sizes_left_over_from_the_notebook_are_said_in_plain_words():
    n_heads, d_k, d_model = 2, 4, 8                            # notebook 05's section 1 leaves these behind

    class GlobalHeads(_Split):
        def forward(self, x, mask=None):
            batch, n, _ = x.shape
            q, k, v = (w(x).view(batch, n, n_heads, d_k).transpose(1, 2)
                       for w in (self.W_q, self.W_k, self.W_v))
            heads = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(dim=-1) @ v
            return self.W_o(heads.transpose(1, 2).reshape(batch, n, -1))

    class GlobalWidth(_Split):
        def merge(self, heads, batch, n, _):
            return heads.transpose(1, 2).reshape(batch, n, d_model)

    for cls, sizes in ((GlobalHeads, "(2, 4)"), (GlobalWidth, "(8)")):
        result = check_multi_head(cls)
        assert not result.passed and result.bug is None, repr(result)
        assert f"reshaped to the same sizes {sizes} whatever the layer's size" in repr(result), repr(result)
        assert "n_heads = 2, d_k = 4 and d_model = 8 are still defined" in repr(result)


def test_multi_head_a_float_head_width_is_said_in_plain_words():
    class TrueDivision(_Split):
        def width(self):
            return self.W_q.in_features / self.h              # d_model / n_heads: 4.0, a float

    result = check_multi_head(TrueDivision)
    assert not result.passed and result.bug is None, repr(result)
    assert "a head width that is a float, such as d_model / n_heads = 4.0, not the whole number 4" \
        in repr(result)
    assert result.fix.startswith("self.d_k = d_model // n_heads")


def test_multi_head_layers_of_its_own_are_told_the_projections_go_unused():
    """The Annotated Transformer's four clones(nn.Linear) beside the exercise's W_q..W_o: forward uses
    its own, which the checker never set, so every output is off; a backward pass shows which go
    unused."""
    class OwnLinears(_Split):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.linears = nn.ModuleList(nn.Linear(d_model, d_model, bias=False) for _ in range(4))

        def forward(self, x, mask=None):
            self.W_q, self.W_k, self.W_v, self.W_o, saved = *self.linears, (self.W_q, self.W_k, self.W_v,
                                                                            self.W_o)
            try:
                return super().forward(x, mask)
            finally:
                self.W_q, self.W_k, self.W_v, self.W_o = saved

    result = check_multi_head(OwnLinears)
    assert not result.passed and result.bug is None, repr(result)
    assert "never uses self.W_q, self.W_k, self.W_v, self.W_o: in a backward pass they got no gradient" \
        in result.headline
    assert result.fix.startswith("q, k, v = self.W_q(x)")


def test_multi_head_keys_projected_with_w_q_get_a_fix_that_names_w_k():
    class KeysFromWq(_Split):
        def forward(self, x, mask=None):
            self.W_k, saved = self.W_q, self.W_k                # the keys come from W_q
            try:
                return super().forward(x, mask)
            finally:
                self.W_k = saved

    result = check_multi_head(KeysFromWq)
    assert result.bug == "queries_keys_swapped", result
    assert "keys projected with W_q" in result.what and result.fix.startswith("key = self.W_k(x)"), result


def test_multi_head_nan_on_fully_masked_position():
    cls = lambda d, h: zoo.MultiHeadWith(d, h, attention=zoo.nan_on_fully_masked_row)
    assert check_multi_head(cls).bug == "nan_on_fully_masked_row"


def test_multi_head_in_place_input_change():
    class Scales(zoo.MultiHeadWith):
        def forward(self, x, mask=None):
            out = super().forward(x, mask)
            x.mul_(0)
            return out

    assert check_multi_head(Scales).bug == "modifies_inputs"


def test_a_mask_used_without_checking_for_none_is_said_in_plain_words():
    def no_none_check(q, k, v, mask=None):
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, -1e4)
        return torch.softmax(scores, dim=-1) @ v

    class NoNoneCheck(_Split):
        def forward(self, x, mask=None):
            return super().forward(x, mask & mask)              # TypeError on None

    for result in (check_attention(no_none_check), check_multi_head(NoNoneCheck)):
        assert not result.passed and result.bug is None, repr(result)
        assert "whenever no mask is given (mask=None), and is right whenever one is" in repr(result)
        assert result.fix.startswith("if mask is not None:")


# ---- masks ------------------------------------------------------------------------------------


def test_causal_mask_problems():
    floats = check_causal_mask(lambda n: torch.ones(n, n).tril())  # float 0/1: named, and the dtype said
    assert floats.bug == "mask_not_bool" and "the dtype is float32: a float mask is ADDED" in repr(floats)
    ints = check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.int64).tril())  # PyTorch raises on it
    assert ints.bug == "mask_not_bool" and "returned a mask of dtype int64, not bool" in repr(ints)
    assert "the dtype is int64: F.scaled_dot_product_attention raises on an integer mask" in repr(ints)
    # n = 4 comes first: (5, 4) does not broadcast against the scores' (4, 4)
    taller = repr(check_causal_mask(lambda n: torch.ones(n + 1, n, dtype=torch.bool)))
    assert "returned shape (5, 4), which does not broadcast to the scores' shape (4, 4)." in taller
    # a batch dimension in front broadcasts, but changes the scores' shape: said as such
    extra = repr(check_causal_mask(lambda n: torch.ones(1, n, n, dtype=torch.bool).tril()))
    assert "does not broadcast" not in extra and "more dimensions: remove the extra one" in extra
    assert check_causal_mask(lambda n: None).status == "problem"
    everything = check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool))
    assert everything.bug == "mask_blocks_nothing" and "comes after it" in repr(everything)
    # a triangle sliced from a fixed 8 x 8 one: named, with the size where it stops
    fixed = check_causal_mask(lambda n: torch.ones(8, 8, dtype=torch.bool).tril()[:n, :n])
    assert fixed.bug == "mask_fixed_size" and "Right for every n up to 8" in repr(fixed)
    # an optional second parameter that is not a size (device, diagonal) is left alone: a right mask
    # passes (round 10 of unseen code: (3, 5) went in as device=5 and raised)
    def with_device(n, device="cpu"):
        idx = torch.arange(n, device=device)
        return idx[None, :] <= idx[:, None]

    assert check_causal_mask(with_device).passed
    assert check_causal_mask(lambda n, diagonal=0: torch.ones(n, n, dtype=torch.bool).tril(diagonal)).passed
    rectangle = check_causal_mask(lambda n, n_k=None: torch.ones(n, n if n_k is None else n_k,
                                                                   dtype=torch.bool).tril())
    assert rectangle.passed and "(n_q, n_k) = (3, 5), (5, 3)" in rectangle.headline
    # nanoGPT's buffer of 256 positions, sliced: n = 300 finds it
    buffer = torch.ones(256, 256, dtype=torch.bool).tril()
    nanogpt = check_causal_mask(lambda n: buffer[:n, :n])
    assert nanogpt.bug == "mask_fixed_size" and "Right for every n up to 256" in repr(nanogpt)
    stub = check_causal_mask(lambda n: (_ for _ in ()).throw(NotImplementedError("use tril")))
    assert stub.status == "not_implemented"


def test_a_padding_mask_cached_by_its_shape_is_told_so():
    """Round 10 of unseen code: a mask kept in a dict keyed by (batch, n) passed, since no two probes
    shared a shape; the last probe now repeats the first one's shape with other lengths."""
    kept = {}

    def cached(lengths, n):
        key = (len(lengths), n)
        if key not in kept:
            kept[key] = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]
        return kept[key]

    result = check_padding_mask(cached)
    assert not result.passed and result.bug is None
    assert result.headline.endswith("for lengths=[5, 1, 3, 2], n=5, the mask of an earlier call with the "
                                    "same shape.")
    assert "It is the right mask for lengths=[2, 5, 1, 3], n=5" in repr(result)


def test_padding_mask_problems():
    flat = check_padding_mask(lambda lengths, n: torch.arange(n)[None, :] < lengths[:, None])  # (batch, n)
    assert flat.bug == "padding_query_axis_misplaced" and "[:, None, :]" in flat.fix
    assert "has no query axis" in repr(flat)
    everything = check_padding_mask(lambda lengths, n: torch.ones(len(lengths), 1, n, dtype=torch.bool))
    assert everything.bug == "mask_blocks_nothing" and "may attend to key" in repr(everything)
    narrow = check_padding_mask(lambda lengths, n: (torch.arange(max(lengths)) < lengths[:, None])[:, None])
    assert narrow.bug == "padding_width_from_lengths" and "not n = 5" in repr(narrow)
    # right pattern, right shape, wrong dtype: named, with the dtype
    ints = check_padding_mask(lambda lengths, n: (torch.arange(n) < lengths[:, None]).int()[:, None])
    assert ints.bug == "mask_not_bool" and "the dtype is int32" in repr(ints)


# ---- layering ---------------------------------------------------------------------------------


def test_check_and_zoo_import_torch_only():
    bad = modules_after("import attnviz.check, attnviz.zoo") & {"ipywidgets", "plotly", "IPython"}
    assert not bad, bad


def test_code_that_only_works_in_two_dimensions_gets_a_pointed_note():
    def second_axis(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[1])  # d_k read from dimension 1
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        return scores.softmax(-1) @ v

    result = check_attention(second_axis)
    assert not result.passed and result.bug == "batch_one_only"
    assert "q.shape[-1] rather than q.shape[1]" in repr(result)


def test_multi_head_that_only_works_for_one_sequence_gets_a_batch_aware_fix():
    class OneSequence(_Split):
        def forward(self, x, mask=None):
            n, d_model = x.shape[1], x.shape[2]
            q, k, v = (w(x).view(-1, self.h, self.d_k).transpose(0, 1)      # (h, batch * n, d_k)
                       for w in (self.W_q, self.W_k, self.W_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)       # (h, batch * n, batch * n)
            if mask is not None and scores.shape[-1] == mask.shape[-1]:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            heads = scores.softmax(dim=-1) @ v
            return self.W_o(heads.transpose(0, 1).reshape(-1, n, d_model))

    result = check_multi_head(OneSequence)
    assert result.bug == "batch_one_only", result
    assert result.fix.startswith("batch, n, d_model = x.shape"), result.fix


def test_catalog_doc_is_up_to_date():
    from pathlib import Path

    from attnviz.check._catalog import catalog_markdown

    doc = Path(__file__).resolve().parent.parent / "docs" / "checkers.md"
    assert doc.read_text() == catalog_markdown(), "run: python -m attnviz.check._catalog > docs/checkers.md"


# ---- issue 20: one engine, verdicts that say what happened ----------------------------------------


def test_not_written_yet_reads_the_same_for_every_checker():
    from attnviz.check import check_decoding_step
    from attnviz.check._verdict import NOT_WRITTEN

    def stub(*args, **kwargs):
        raise NotImplementedError("write your code here")

    class Stub(nn.Module):
        def __init__(self, d_model, n_heads):
            raise NotImplementedError("write your code here")

    assert NOT_WRITTEN == ("not written yet: write your code in the cell above, run it, then run this cell "
                           "again.")
    for check, fn in ((check_attention, stub), (check_multi_head, Stub), (check_causal_mask, stub),
                      (check_padding_mask, stub), (check_decoding_step, stub)):
        result = check(fn)
        assert result.status == "not_implemented" and result.headline == NOT_WRITTEN, result
        assert result.observed == [] and "Traceback" not in repr(result)   # no hint for the default one


def _zeros_mask(scores, mask):
    """An additive mask built with torch.zeros(mask.shape): float32, whatever the scores' dtype."""
    return scores + torch.zeros(mask.shape).masked_fill(~mask, -1e4)


def test_a_float32_additive_mask_on_float16_inputs_is_dtype_changed():
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = _zeros_mask(scores, mask)
        return scores.softmax(-1) @ v

    class Heads(zoo.MultiHeadWith):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads, attention=lambda *qkvm: (attention(*qkvm), None))

    for result in (check_attention(attention), check_multi_head(Heads)):
        assert result.bug == "dtype_changed", result
        # the fix replaces the blocked scores: an added float mask of finfo.min would overflow in float16
        assert "float16" in result.headline and result.fix.startswith("scores = scores.masked_fill(~mask")


def test_a_bug_verdict_says_what_happened_first():
    result = check_attention(zoo.missing_scale)
    assert result.headline.startswith("your function returned the wrong output on ")
    assert result.headline.endswith("It looks like the known bug \"missing scale\".")
    raised = check_multi_head(zoo.MULTI_HEAD_BUGS["missing_contiguous"])
    assert raised.headline.startswith("forward raised RuntimeError on ")
    assert raised.bug == "missing_contiguous"


def test_probes_are_one_dataclass_never_read_by_index():
    """Every checker builds engine Probes; none reads a probe, an answer or a list of them by position."""
    import ast
    import dataclasses
    from pathlib import Path

    from attnviz.check._engine import Probe

    assert dataclasses.is_dataclass(Probe)
    root = Path(attnviz.__file__).parent / "check"
    for name in ("attention.py", "multi_head.py", "masks.py", "decoding.py", "_rules.py", "_engine.py"):
        for node in ast.walk(ast.parse((root / name).read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                index = node.slice
                if node.value.id in ("p", "probe", "probes", "answers", "ans", "calls", "pairs") and (
                        isinstance(index, ast.Constant) and isinstance(index.value, int)):
                    raise AssertionError(f"{name}:{node.lineno} reads {node.value.id}[{index.value}]")


def test_attention_and_multi_head_share_one_decision_sequence():
    """Both checkers decide with the engine's shared rules; neither writes verdicts of bugs itself."""
    from pathlib import Path

    from attnviz.check import attention, multi_head
    from attnviz.check._rules import RULES

    for module in (attention, multi_head):
        shared = [rule.name for rule in module.SPEC.rules if rule in RULES]
        assert shared == [rule.name for rule in RULES if rule.name in shared]     # in the shared order
        assert len(shared) == len(RULES)                                          # and all of them
        assert "bug_found(" not in Path(module.__file__).read_text()


def test_a_headline_names_the_bug_in_words_with_sizes_spelled_as_in_code():
    """'the known bug scale by d_model', not 'scale by d model'; other ids read as words."""
    from attnviz.check._verdict import bug_words

    assert bug_words("cache_not_appended") == "cache not appended"
    assert bug_words("scale_by_d_model") == "scale by d_model"
    result = check_multi_head(zoo.MULTI_HEAD_BUGS["scale_by_d_model"])
    assert result.headline.endswith("It looks like the known bug \"scale by d_model\"."), result.headline


def test_a_name_not_defined_says_to_run_the_cells_above():
    """After a kernel restart the notebook's imports are gone: a NameError says which name, and to run
    the cell that defines or imports it (or Run All), in every checker."""
    def my_attention(q, k, v, mask=None):
        return softmax_of(q @ k.transpose(-2, -1)) @ v  # noqa: F821 - the name a restart left undefined

    result = check_attention(my_attention)
    assert result.headline.startswith("your function raised NameError"), result
    assert "softmax_of is not defined where your code runs" in repr(result)
    assert "Run All Cells" in result.fix and "softmax_of" in result.fix


def test_a_module_with_dropout_passes_and_its_pass_says_the_check_switched_it_off():
    from learner_code.multi_head import DropoutLayerOnWeights, Solution

    result = check_multi_head(DropoutLayerOnWeights)
    assert result.passed
    note = " ".join(result.notes)
    assert "self.attention_dropout (p = 0.1)" in note and "module.eval()" in note
    # a module without dropout gets no such note
    assert not any("dropout" in line for line in check_multi_head(Solution).notes)


def test_a_key_padding_mask_convention_is_told_its_shape_and_its_meaning():
    """nn.MultiheadAttention's key_padding_mask is (batch, n) and True on the padding: both differ."""
    def key_padding_mask(lengths, n):
        return torch.arange(n)[None, :] >= lengths[:, None]

    result = check_padding_mask(key_padding_mask)
    text = repr(result)
    assert "has no query axis" in text and "key_padding_mask" in text and "inverted too" in text
    assert "[:, None, :]" in result.fix and "<" in result.fix
    # the right values in the (batch, n) shape: only the shape is said
    assert "inverted too" not in repr(check_padding_mask(lambda lengths, n: ~key_padding_mask(lengths, n)))


# ---- round 15 of unseen learner code, and a fresh reader of 02 -------------------------------------


def _masked_attention(scale_of, fill=None):
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) * scale_of(q)
        if mask is not None:
            scores = (fill(scores, mask) if fill else
                      scores.masked_fill(~mask, torch.finfo(scores.dtype).min))
        return scores.softmax(dim=-1) @ v
    return attention


def test_a_stale_d_k_divided_as_d_k_to_the_one_half_is_named_wrong_scale():
    d_k = 8                                            # 02's global, read as / d_k ** 1 / 2 = / 16
    result = check_attention(_masked_attention(lambda q: 1 / (d_k ** 1 / 2)))
    assert result.bug == "wrong_scale" and "is the mask used" not in repr(result)


def test_a_bool_mask_times_a_float64_minimum_says_every_row_goes_nan():
    fill = lambda scores, mask: scores + (~mask) * torch.finfo(scores.dtype).min   # float32 0 * -inf
    result = check_attention(_masked_attention(lambda q: q.shape[-1] ** -0.5, fill))
    text = repr(result)
    assert not result.passed and "at each allowed position False × -inf = 0 × -inf = NaN" in text
    assert "a fully masked row's softmax" not in text
    # the cause first, not Hugging Face's float32 softmax (which the learner never wrote: a reader's finding)
    assert result.observed[1].startswith("Your rows with keys to attend to are NaN too, the mark of a mask "
                                         "added as a bool times the fill") and "Hugging Face" not in text


def test_print_inside_the_learners_code_is_said_not_shown():
    right = _masked_attention(lambda q: q.shape[-1] ** -0.5)

    def chatty(q, k, v, mask=None):
        print("DEBUG shapes", tuple(q.shape))
        return right(q, k, v, mask)

    result = check_attention(chatty)
    assert result.passed and any("Your code printed during" in note and "DEBUG shapes" in note
                                 for note in result.notes)
    assert not any("printed" in note for note in check_attention(right).notes)


def test_a_not_implemented_error_on_some_inputs_only_is_not_not_written_yet():
    right = _masked_attention(lambda q: q.shape[-1] ** -0.5)

    def no_half(q, k, v, mask=None):
        if q.dtype == torch.float16:
            raise NotImplementedError("no half precision")
        return right(q, k, v, mask)

    result = check_attention(no_half)
    assert result.status == "problem" and "raised NotImplementedError on float16" in result.headline


def test_a_def_without_the_mask_argument_gets_the_exercises_signature():
    def three(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v

    result = check_attention(three)
    assert "your def takes others" in repr(result)
    assert result.fix.startswith("def my_attention(q, k, v, mask=None)")


def test_a_mask_tiled_over_batch_and_heads_is_caught_on_a_head_axis_padding_mask():
    def tiled(q, k, v, mask=None):
        lead = q.shape[:-2]
        q3, k3, v3 = (t.reshape(-1, *t.shape[-2:]) for t in (q, k, v))
        scores = q3 @ k3.transpose(1, 2) / math.sqrt(q.shape[-1])
        if mask is not None:
            m = mask.expand(*mask.shape[:-2], q.shape[-2], k.shape[-2]).reshape(-1, q.shape[-2], k.shape[-2])
            m = m.repeat(q3.shape[0] // m.shape[0], 1, 1)     # tiles where each entry should repeat
            scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
        return (scores.softmax(-1) @ v3).reshape(*lead, q.shape[-2], v.shape[-1])

    result = check_attention(tiled)
    assert not result.passed and "mask.repeat" in repr(result)


def test_a_running_softmax_that_forgets_to_rescale_is_not_called_batch_one_only():
    def online(q, k, v, mask=None, block=2):
        scale, low = q.shape[-1] ** -0.5, torch.finfo(q.dtype).min
        if mask is not None:
            mask = mask.broadcast_to(mask.shape[:-2] + (q.shape[-2], k.shape[-2]))
        m = total = acc = None
        for start in range(0, k.shape[-2], block):
            s = q @ k[..., start:start + block, :].transpose(-2, -1) * scale
            if mask is not None:
                s = s.masked_fill(~mask[..., start:start + block], low)
            new = s.amax(-1, keepdim=True) if m is None else torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - new)
            part = p @ v[..., start:start + block, :]
            if m is None:
                total, acc = p.sum(-1, keepdim=True), part
            else:
                total = total * torch.exp(m - new) + p.sum(-1, keepdim=True)
                acc = acc + part                          # not rescaled by exp(m - new)
            m = new
        return acc / total

    result = check_attention(online)
    assert not result.passed and result.bug != "batch_one_only"


def test_multi_head_state_kept_between_calls_is_told_apart_from_dropout():
    class KeepsMask(_Split):
        def forward(self, x, mask=None):
            if mask is not None and getattr(self, "kept", None) is None:
                self.kept = mask                         # the first mask, used on every later call
            return super().forward(x, getattr(self, "kept", None))

    result = check_multi_head(KeepsMask)
    assert not result.passed and result.bug != "dropout_left_on"
    assert "stored on self" in repr(result)


def test_an_output_returned_transposed_is_said_so():
    def transposed(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return (scores.softmax(dim=-1) @ v).transpose(-2, -1)

    result = check_attention(transposed)
    assert not result.passed and "the right ones, transposed" in repr(result)


def test_a_fixed_fill_of_minus_ten_thousand_is_caught_when_the_allowed_keys_score_below_it():
    result = check_attention(_masked_attention(lambda q: q.shape[-1] ** -0.5,
                                               lambda scores, mask: scores.masked_fill(~mask, -1e4)))
    assert not result.passed and "the blocked key won" in repr(result)


def test_multi_head_keys_and_values_kept_from_earlier_calls_are_not_called_dropout():
    class KeepsPast(_Split):
        def forward(self, x, mask=None):
            batch, n, d_model = x.shape
            q, k, v = (w(x).view(batch, n, self.h, self.d_k).transpose(1, 2)
                       for w in (self.W_q, self.W_k, self.W_v))
            past = getattr(self, "past", None)
            if past is not None and past[0].shape[0] == batch and past[0].shape[-1] == self.d_k:
                k, v = torch.cat([past[0], k], dim=-2), torch.cat([past[1], v], dim=-2)   # never cleared
            self.past = (k.detach(), v.detach())
            weights = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1)
            return self.W_o(self.merge(weights @ v, batch, n, d_model))

    result = check_multi_head(KeepsPast)
    assert not result.passed and result.bug != "dropout_left_on" and "stored on self" in repr(result)


def test_multi_head_dropout_in_forward_is_still_named_dropout():
    class Dropped(_Split):
        def forward(self, x, mask=None):
            return nn.functional.dropout(super().forward(x, mask), p=0.5, training=True)

    assert check_multi_head(Dropped).bug == "dropout_left_on"


# ---- round 17 of unseen learner code and the readers of 04 and 05 ------------------------------

def _tril(n_q, n_k=None, diagonal=0):
    return torch.ones(n_q, n_q if n_k is None else n_k, dtype=torch.bool).tril(diagonal)


def test_a_float_mask_with_a_wrong_pattern_is_named_by_its_pattern_not_called_right():
    result = check_causal_mask(lambda n: torch.ones(n, n).triu())       # n = 1's [[1.]] fits any pattern
    assert result.bug == "causal_future_visible" and "the pattern is right but" not in repr(result), result
    assert "float32 mask, not bool, as well" in repr(result)


@pytest.mark.parametrize("fill", [float("-inf"), torch.finfo(torch.float32).min, -1e9])
def test_an_additive_float_mask_is_read_as_mask_equal_to_zero(fill):
    def additive(n):
        return torch.zeros(n, n).masked_fill(~_tril(n), fill)

    def additive_off_by_one(n):
        return torch.zeros(n, n).masked_fill(~_tril(n, diagonal=1), fill)

    right = check_causal_mask(additive)
    assert right.bug == "mask_not_bool" and "valid mask" in repr(right)
    # on the mask the function returns (it has no name mask): tests/test_check_your_names.py
    assert right.fix.startswith("return torch.zeros(n, n).masked_fill(~_tril(n), fill) == 0"), right.fix
    wrong = check_causal_mask(additive_off_by_one)
    assert wrong.bug == "causal_off_by_one" and "valid mask" not in repr(wrong), wrong
    assert "read here as mask == 0" in repr(wrong)

    def padding_additive(lengths, n):
        real = (torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None])[:, None, :]
        return torch.zeros(real.shape).masked_fill(~real, fill)

    assert check_padding_mask(padding_additive).bug == "mask_not_bool"


def test_a_rectangle_passes_from_either_corner_but_not_from_both():
    top_left = check_causal_mask(lambda n_q, n_k=None: _tril(n_q, n_k))
    bottom_right = check_causal_mask(lambda n_q, n_k=None: _tril(n_q, n_k, (n_k or n_q) - n_q))
    assert top_left.passed and "top-left corner" in top_left.headline
    assert bottom_right.passed and "bottom-right corner" in bottom_right.headline
    mixed = check_causal_mask(lambda n_q, n_k=None: _tril(n_q, n_k, max(0, (n_k or n_q) - n_q)))
    assert mixed.bug == "causal_not_rectangular" and "keep to one" in repr(mixed), mixed


def test_a_full_padding_matrix_passes_with_a_note_about_one_query():
    def full(lengths, n):
        real = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]
        return real[:, None, :].expand(-1, n, -1)

    result = check_padding_mask(full)
    assert result.passed and any("mask[:, :1, :]" in note for note in result.notes), result


def test_a_padding_slice_to_length_minus_one_is_off_by_one_even_for_a_length_of_zero():
    def sliced(lengths, n):
        mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
        for b, length in enumerate(lengths.tolist()):
            mask[b, 0, :length - 1] = True                  # length 0: [:-1], every position but the last
        return mask

    assert check_padding_mask(sliced).bug == "padding_off_by_one"


def test_mask_shape_words_count_the_extra_dimensions_and_a_numpy_mask_gets_no_shape_line():
    four_d = check_causal_mask(lambda n: _tril(n).view(1, 1, n, n))
    assert "remove the 2 extra ones" in four_d.headline, four_d
    numpy_mask = check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool)))
    assert "NumPy" in numpy_mask.headline and not any("should have shape" in o for o in numpy_mask.observed)


def _scores_and_values(self, x):
    """A _Split module's scaled scores (batch, heads, n, n) and values (batch, heads, n, d_k)."""
    batch, n, _ = x.shape
    q, k, v = (w(x).view(batch, n, self.h, self.d_k).transpose(1, 2) for w in (self.W_q, self.W_k, self.W_v))
    return q @ k.transpose(-2, -1) / math.sqrt(self.d_k), v


def _right_forward(self, x, mask=None):
    scores, v = _scores_and_values(self, x)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape))


def test_multi_head_a_forward_taking_attn_mask_is_told_its_signature():
    class AttnMask(_Split):
        def forward(self, x, attn_mask=None):
            return _right_forward(self, x, attn_mask)

    result = check_multi_head(AttnMask)
    assert result.bug is None and "your def takes others" in repr(result), result
    assert result.fix.startswith("def forward(self, x, mask=None)")


def test_multi_head_softmax_then_mask_then_renormalise_is_the_softmax_over_blocked_keys():
    class Renormalised(_Split):
        def forward(self, x, mask=None):
            scores, v = _scores_and_values(self, x)
            weights = scores.softmax(dim=-1)
            if mask is not None:
                weights = weights * mask
                weights = weights / weights.sum(dim=-1, keepdim=True)
            return self.W_o(self.merge(weights @ v, *x.shape))

    assert check_multi_head(Renormalised).bug == "softmax_max_over_blocked"


def test_multi_head_keys_and_values_cached_by_shape_are_told_so():
    class CachedByShape(_Split):
        def forward(self, x, mask=None):
            batch, n, d_model = x.shape
            q = self.W_q(x).view(batch, n, self.h, self.d_k).transpose(1, 2)
            kept = getattr(self, "kept", None)
            if kept is None or kept[0].shape[0] != batch or kept[0].shape[2] != n or kept[0].dtype != x.dtype:
                self.kept = tuple(w(x).view(batch, n, self.h, self.d_k).transpose(1, 2).detach()
                                  for w in (self.W_k, self.W_v))
            k, v = self.kept
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return self.W_o(self.merge(scores.softmax(dim=-1) @ v, batch, n, d_model))

    result = check_multi_head(CachedByShape)
    assert not result.passed and "a new x of a shape it had seen" in result.headline, result
    assert "store nothing on self" in result.fix


def test_multi_head_notes_biases_and_a_tuple_on_a_pass():
    class Biased(_Split):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

        def forward(self, x, mask=None):
            batch, n, _ = x.shape
            return _right_forward(self, x, mask), torch.zeros(batch, self.h, n, n)   # (output, weights)

    result = check_multi_head(Biased)
    assert result.passed, result
    notes = " ".join(result.notes)
    assert "self.W_q.bias" in notes and "set them to 0" in notes and "returned a tuple" in notes


def test_multi_head_returning_the_weights_is_told_it_returned_the_weights():
    class Weights(_Split):
        def forward(self, x, mask=None):
            return _scores_and_values(self, x)[0].softmax(dim=-1)

    assert "the attention weights' shape" in repr(check_multi_head(Weights))


SECTION_1_BATCH, SECTION_1_N = 2, 4      # notebook 05's section 1 leaves batch = 2, n = 4 defined


def test_multi_head_sizes_read_from_the_notebook_are_named():
    class FromNotebook(_Split):
        def forward(self, x, mask=None):
            q, k, v = (w(x).view(SECTION_1_BATCH, SECTION_1_N, self.h, self.d_k).transpose(1, 2)
                       for w in (self.W_q, self.W_k, self.W_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return self.W_o((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(x.shape))

    result = check_multi_head(FromNotebook)
    assert "reads SECTION_1_BATCH and SECTION_1_N from the notebook" in result.headline, result
    assert result.fix.startswith("batch, n, d_model = x.shape")


def test_multi_head_a_float32_where_mask_in_float64_is_explained():
    class Where(_Split):
        def forward(self, x, mask=None):
            if mask is None:
                return _right_forward(self, x)
            scores, v = _scores_and_values(self, x)
            scores = scores + torch.where(mask, 0.0, torch.finfo(scores.dtype).min).to(scores.dtype)
            return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape))

    result = check_multi_head(Where)
    assert "torch.where(mask, 0.0, fill)" in repr(result)
    assert result.fix.startswith("scores = scores.masked_fill")


def test_multi_head_a_nan_gradient_through_a_fully_masked_position_fails():
    class WipedNan(_Split):
        def forward(self, x, mask=None):
            scores, v = _scores_and_values(self, x)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape)).nan_to_num(0.0)

    result = check_multi_head(WipedNan)
    assert not result.passed and "gradient of x holds NaN" in result.observed[0], result
    assert result.headline.endswith("gives NaN gradients."), result


def test_an_additive_mask_whose_fill_is_too_small_to_block_is_not_called_valid():
    result = check_causal_mask(lambda n: torch.zeros(n, n).masked_fill(~_tril(n), -1.0))
    assert result.bug == "mask_not_bool" and "valid" not in repr(result) and "by only 1" in repr(result)


def test_a_padding_mask_cached_by_n_alone_is_told_as_an_earlier_calls_mask():
    """Round 21: masks 'expensive', so remembered by their width: a later batch of the same n gets the
    first call's (1, 1, n) mask, which broadcasts."""
    kept = {}

    def cached(lengths, n):
        if n not in kept:
            kept[n] = (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]
        return kept[n]

    result = check_padding_mask(cached)
    assert not result.passed and result.headline.endswith("the mask of an earlier call."), result
    assert "It is the right mask for lengths=[3], n=5" in result.observed[1], result
    assert "arange" in result.fix, result


def test_a_mask_kept_from_the_first_call_is_told_so_where_its_shape_is_wrong():
    kept = {}

    def causal_kept(n):
        kept.setdefault("causal", _tril(n))                      # a global set on the first call
        return kept["causal"]

    def padding_kept(lengths, n):
        kept.setdefault("padding", (torch.arange(n)[None, :] < lengths[:, None])[:, None, :])
        return kept["padding"]

    for check, fn in ((check_causal_mask, causal_kept), (check_padding_mask, padding_kept)):
        result = check(fn)
        assert not result.passed and "the mask of an earlier call" in repr(result), result


def test_a_mask_kept_from_an_earlier_call_says_so_in_its_first_line():
    """Replay 19's 04V2: a global mask built at n=4 and handed back at n=1 was told "returned shape (4, 4):
    against the scores' shape (1, 1) it gives (4, 4), which changes the scores' shape", its cause two
    lines later."""
    kept = {}

    def causal_kept(n):
        kept.setdefault("causal", _tril(n))
        return kept["causal"]

    result = check_causal_mask(causal_kept)
    said = "your function returned shape (4, 4) for n=1: a mask sized by an earlier call, used again."
    assert result.headline == said, result


def test_multi_head_a_mask_on_the_first_head_only_is_pointed_at_the_mask():
    class FirstHeadOnly(_Split):
        def forward(self, x, mask=None):
            scores, v = _scores_and_values(self, x)
            if mask is not None:
                scores[:, 0] = scores[:, 0].masked_fill(~mask, torch.finfo(scores.dtype).min)
            return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape))

    result = check_multi_head(FirstHeadOnly)
    assert not result.passed and result.bug is None, result
    assert any("Every input without a mask is right" in o for o in result.observed), result
    assert result.fix.startswith("scores = scores.masked_fill(~mask"), result


def test_attention_a_mask_on_the_first_batch_entry_only_is_pointed_at_the_mask():
    def first_entry_only(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None and scores.dim() > 2:
            scores[0] = scores[0].masked_fill(~mask[0] if mask.dim() == scores.dim() else ~mask, -1e9)
        elif mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        return scores.softmax(dim=-1) @ v

    result = check_attention(first_entry_only)
    assert not result.passed and result.bug is None, result
    assert any("Every input without a mask is right" in o for o in result.observed), result
    assert "before the softmax" in result.fix, result


def test_attention_renormalised_after_the_softmax_is_not_blamed_on_a_fill_it_does_not_have():
    """1e-9 rounds to 0 in float16, so the row is 0/0 there too: the blocked-far probe names the bug
    before the float16 probe could call it a fill that overflows."""
    def renormalised(q, k, v, mask=None):
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        if mask is not None:
            weights = weights * mask
            weights = weights / (weights.sum(-1, keepdim=True) + 1e-9)
        return weights @ v, weights

    result = check_attention(renormalised)
    assert result.bug == "softmax_max_over_blocked", result
    assert result.fix.startswith("weights = torch.softmax(scores.masked_fill(~mask"), result


def test_attention_an_in_place_change_autograd_needed_is_told_as_such():
    def in_place(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        e = (scores - scores.amax(-1, keepdim=True)).exp_()
        e /= e.sum(-1, keepdim=True)
        return e @ v, e

    result = check_attention(in_place)
    assert result.bug is None and "changed in place" in result.headline, result
    assert "w = w / s" in result.fix


def test_attention_reading_the_notebooks_tensors_is_named():
    space = {"torch": torch, "math": math,
             "Q": torch.randn(5, 8), "K": torch.randn(5, 8), "V": torch.randn(5, 6)}
    exec("def my_attention(q, k, v, mask=None):\n"                      # noqa: S102 - the test's own code
         "    scores = Q @ K.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "    if mask is not None:\n"
         "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
         "    return torch.softmax(scores, dim=-1) @ V\n", space)
    result = check_attention(space["my_attention"])
    assert not result.passed and "the notebook's Q (a tensor of shape (5, 8))" in result.observed[0], result
    assert "never the notebook's Q, K, V" in result.fix


@pytest.mark.parametrize(("divisor", "said"), [
    (lambda q, k: math.sqrt(2 * q.shape[-1]), "it is math.sqrt(2 * q.shape[-1])"),
    (lambda q, k: math.sqrt(k.shape[0]), "it is math.sqrt(k.shape[0])"),   # √n_k in 2-D, the batch in 4-D
    # right where d_k = 9: "every input it gets wrong", not "every input"
    (lambda q, k: 3.0, "It is 3 on every input it gets wrong, whatever their sizes: a constant"),
])
def test_attention_any_other_divisor_is_named_wrong_scale_with_the_number(divisor, said):
    """Divisors the catalog's hypotheses do not list are read off the outputs (a fresh reader's
    sqrt(k.shape[0]) and sqrt(2 * d_k) got 'matches no known bug')."""
    def scaled(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / divisor(q, k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    result = check_attention(scaled)
    assert result.bug == "wrong_scale", result
    assert "your output is attention with the scores divided by" in result.observed[0], result
    assert any(said in line for line in result.observed), result


def test_a_sliding_window_a_flipped_causal_mask_and_a_padding_mask_with_swapped_axes_are_said():
    """Round 21: a Mistral-style window left in a causal mask; triu flipped; lengths across."""
    def windowed(n):
        i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
        return (j <= i) & (j > i - 8)

    def swapped(lengths, n):
        return (torch.arange(n)[:, None] < lengths[None, :])[:, None, :]

    result = check_causal_mask(windowed)
    assert not result.passed and "a sliding window (each query sees itself and the 7 before it" in \
        result.observed[0], result
    result = check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).triu().flip(-1))
    assert not result.passed and "Your mask is the causal mask flipped" in result.observed[0], result
    result = check_padding_mask(swapped)
    assert not result.passed, result
    assert any("first and last axes swapped" in line for line in result.observed), result


def test_a_mask_with_true_and_false_swapped_and_a_second_known_bug_is_named_with_both():
    """Replay 18's 04U4: arange(n) >= length (True on the padding), unsqueezed to (batch, n, 1) (on the query
    rows), was told "matches no known bug", naming neither. The mask swapped back is a known bug's: that bug
    is named, and the swap said with it. A mask that blocks everything is not a swapped one that blocks
    nothing."""
    def both(lengths, n):
        return torch.stack([torch.arange(n) >= int(length) for length in lengths]).unsqueeze(-1)

    swapped = 'Its True and False are swapped as well, the known bug "mask inverted"'
    result = check_padding_mask(both)
    assert result.bug == "padding_masks_queries" and any(swapped in line for line in result.observed), result
    result = check_causal_mask(lambda n: ~torch.ones(n, n, dtype=torch.bool).tril(1))     # triu(2)
    assert result.bug == "causal_off_by_one" and any(swapped in line for line in result.observed), result
    for result in (check_causal_mask(lambda n: torch.zeros(n, n, dtype=torch.bool)),
                   check_padding_mask(lambda lengths, n: torch.zeros(len(lengths), 1, n, dtype=torch.bool))):
        assert result.bug is None and swapped not in repr(result), result


def test_a_mask_used_the_wrong_way_round_beside_a_second_known_bug_is_named_with_both():
    """Replay 18's 05U2 (heads merged without a transpose) and 02U1 (d_k read as k.shape[1]), each with
    masked_fill(mask, ...), were told "matches no known bug". Given the mask swapped, the answers are the
    other bug's: that bug is named, and the mask said with it."""
    class Merged(_Heads):
        def forward(self, x, mask=None):
            b, n, _ = x.shape
            q, k, v = (w(x).view(b, n, self.h, self.d_k).transpose(1, 2)
                       for w in (self.W_q, self.W_k, self.W_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
            return self.W_o((scores.softmax(-1) @ v).reshape(b, n, -1))

    def unscaled(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        return weights @ v, weights

    def unbatched_only(q, k, v, mask=None):            # replay 18's 02U1: d_k is k.shape[1] without a batch
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[1])
        if mask is not None:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        return weights @ v, weights

    said = 'it is used the wrong way round as well, the known bug "mask inverted"'
    for result, bug in ((check_multi_head(Merged), "heads_merged_without_transpose"),
                        (check_attention(unscaled), "missing_scale"),
                        (check_attention(unbatched_only), "batch_one_only")):
        assert result.bug == bug and any(said in line for line in result.observed), result


def test_attention_a_max_without_keepdim_is_said():
    """A softmax by hand whose row max lost its axis: a shape error when n_q ≠ n_k (round 21's file)."""
    def by_hand(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        exps = torch.exp(scores - scores.max(dim=-1).values)
        return exps / exps.sum(dim=-1, keepdim=True) @ v

    result = check_attention(by_hand)
    assert not result.passed and any("without keepdim=True" in line for line in result.observed), result
    assert "keepdim=True" in result.fix, result


def test_masks_started_from_torch_empty_say_what_torch_empty_hands_back():
    """torch.empty's memory is what was there (round 22's file got 'matches no known bug' alone). The
    functions below fill what they take from torch.empty wrongly but the same way every run, so the
    verdict does not depend on what the memory held."""
    def from_empty(n):
        return torch.empty(n, n, dtype=torch.bool).fill_(False).tril()

    def padding_from_empty(lengths, n):
        mask = torch.empty(len(lengths), 1, n, dtype=torch.bool).fill_(True)
        for row, length in enumerate(lengths.tolist()):
            mask[row, 0, length + 1:] = False
        return mask

    for result in (check_causal_mask(from_empty), check_padding_mask(padding_from_empty)):
        assert not result.passed and result.observed[0].startswith("Your code calls torch.empty"), result
    right = check_causal_mask(lambda n: torch.empty(n, n, dtype=torch.bool).fill_(True).tril())
    assert right.passed and "torch.empty" not in repr(right), right


def test_torch_empty_as_the_input_baddbmm_scales_away_is_not_warned_of():
    """baddbmm(input, a, b, beta=0) reads none of its input: replay 22's 02Y4 started its scores from
    torch.empty so, and was warned of torch.empty three times, before and after its real mistakes."""
    def scores_from_empty(q, k, v, mask=None):
        q3, k3 = q.reshape(-1, *q.shape[-2:]), k.reshape(-1, *k.shape[-2:])
        start = torch.empty(q3.shape[0], q3.shape[1], k3.shape[1], dtype=q.dtype)
        scores = torch.baddbmm(start, q3, k3.transpose(1, 2), beta=0, alpha=1 / q.shape[-1])  # d_k, no root
        weights = scores.softmax(dim=-1).reshape(*q.shape[:-1], k.shape[-2])
        return weights @ v, weights

    def inline(q, k, v, mask=None):
        q3, k3 = q.reshape(-1, *q.shape[-2:]), k.reshape(-1, *k.shape[-2:])
        empty = torch.empty(q3.shape[0], q3.shape[1], k3.shape[1], dtype=q.dtype)
        scores = empty.baddbmm(q3, k3.transpose(1, 2), beta=0, alpha=1 / q.shape[-1])
        weights = scores.softmax(dim=-1).reshape(*q.shape[:-1], k.shape[-2])
        return weights @ v, weights

    for fn in (scores_from_empty, inline):
        result = check_attention(fn)
        assert not result.passed and not any("torch.empty" in line for line in result.observed), result

    def kept(q, k, v, mask=None):                                 # beta=1 reads the empty memory: said
        q3, k3 = q.reshape(-1, *q.shape[-2:]), k.reshape(-1, *k.shape[-2:])
        start = torch.empty(q3.shape[0], q3.shape[1], k3.shape[1], dtype=q.dtype)
        scores = torch.baddbmm(start, q3, k3.transpose(1, 2), alpha=1 / q.shape[-1])
        weights = scores.softmax(dim=-1).reshape(*q.shape[:-1], k.shape[-2])
        return weights @ v, weights

    result = check_attention(kept)
    assert result.observed[0].startswith("Your code calls torch.empty"), result


def test_padding_additive_minus_10000_is_not_called_valid_and_an_int64_shape_bug_says_its_dtype():
    """BERT's -10000 blocks only keys less than 10000 above (check_multi_head fails it); HF's int64
    (batch, n) attention_mask gets both its mistakes at once (a fresh reader's findings)."""
    def bert(lengths, n):
        real = (torch.arange(n)[None, :] < lengths[:, None]).float()
        return (1.0 - real[:, None, :]) * -10000.0

    said = check_padding_mask(bert)
    assert said.bug == "mask_not_bool" and "valid" not in said.observed[0], said
    assert "less than 1e+04 above" in said.observed[0] and "additive_mask_too_small" in said.observed[0], said

    def hf(lengths, n):
        return (torch.arange(n)[None, :] < lengths[:, None]).long()

    both = check_padding_mask(hf)
    assert both.bug == "padding_query_axis_misplaced", both
    assert any(line.startswith("It is an int64 mask as well, not bool") for line in both.observed), both
    shape_only = check_padding_mask(lambda lengths, n: torch.arange(n)[None, :] < lengths[:, None])
    assert not any("as well, not bool" in line for line in shape_only.observed), shape_only


def test_multi_head_heads_chunked_along_positions_and_stacked_is_named():
    """torch.stack(W_q(x).chunk(n_heads, dim=1), dim=1) raises when n_heads does not divide n: named
    heads_split_along_positions, not a bare RuntimeError (a fresh reader's finding)."""
    class Chunked(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.n_heads, self.d_k = n_heads, d_model // n_heads
            self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=False)
                                                      for _ in range(4))

        def forward(self, x, mask=None):
            b, n, d = x.shape
            q, k, v = (torch.stack(w(x).chunk(self.n_heads, dim=1), dim=1)
                       for w in (self.W_q, self.W_k, self.W_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))

    result = check_multi_head(Chunked)
    assert result.bug == "heads_split_along_positions", result
    assert any("do not split evenly" in line for line in result.observed), result


def test_a_name_torch_does_not_have_is_said_with_what_pytorch_writes():
    """torch.sequence_mask (a TensorFlow habit) got a bare AttributeError (a fresh reader's finding)."""
    result = check_padding_mask(lambda lengths, n: torch.sequence_mask(lengths, n)[:, None, :])
    assert any("that is TensorFlow's tf.sequence_mask" in line for line in result.observed), result
    assert result.fix == "torch.arange(n)[None, :] < lengths[:, None]", result
    typo = check_causal_mask(lambda n: torch.tri(n, n).bool())
    assert any("PyTorch has no torch.tri: a name from another library, or a typo?" in line
               for line in typo.observed), typo


def test_attention_a_scale_is_not_read_into_other_mistakes():
    def mask_ignored_and_scaled(q, k, v, mask=None):
        return torch.softmax(q @ k.transpose(-2, -1) / 3.0, dim=-1) @ v

    result = check_attention(mask_ignored_and_scaled)
    assert not result.passed and "divided by 3" not in repr(result), result


@pytest.mark.parametrize("typed", ["q @ K.transpose(-2, -1)", "Q @ k.transpose(-2, -1)"])
def test_attention_the_notebooks_K_typed_for_k_is_not_named_a_missing_transpose(typed):
    """02's likeliest typo: K's shape makes the product fail as a missing transpose would; the verdict
    names the capital, not a transpose the line already has (a fresh reader's finding)."""
    space = {"torch": torch, "math": math, "Q": torch.randn(5, 8), "K": torch.randn(5, 8)}
    exec("def my_attention(q, k, v, mask=None):\n"                       # noqa: S102 - the test's own code
         f"    scores = {typed} / math.sqrt(q.shape[-1])\n"
         "    if mask is not None:\n"
         "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
         "    return torch.softmax(scores, dim=-1) @ v\n", space)
    result = check_attention(space["my_attention"])
    capital = "K" if "K" in typed else "Q"
    assert not result.passed and result.bug is None, result
    assert f"{capital} is not {capital.lower()}" in result.observed[0], result
    assert not any("usual cause" in line for line in result.observed), result
    assert result.fix.endswith(f"never the notebook's {capital}"), result


def test_masks_reading_the_notebooks_sizes_are_named():
    """04 leaves n = 5 and batch = 2 behind: a mask built from them is right only by hand."""
    space = {"torch": torch, "n": 5, "batch": 2}
    exec("def my_causal_mask(size):\n"                                     # noqa: S102 - the test's own code
         "    return torch.ones(n, n, dtype=torch.bool).tril()\n"
         "def my_padding_mask(lengths, width):\n"
         "    return (torch.arange(width)[None, :] < lengths.reshape(batch, 1))[:, None, :]\n", space)
    for check, name, said in ((check_causal_mask, "my_causal_mask", "n = 5"),
                              (check_padding_mask, "my_padding_mask", "batch = 2")):
        result = check(space[name])
        assert not result.passed and f"reads the notebook's {said}" in result.observed[0], result
        assert result.fix.endswith(f"never the notebook's {said.split()[0]}"), result


def test_a_named_bug_from_the_notebooks_d_k_says_so():
    """02 leaves d_k = 8 behind: "/ math.sqrt(d_k)" is wrong_scale, whose text lists five ways to get the
    scale wrong; the verdict says which one this code took (round 26's reader)."""
    space = {"torch": torch, "math": math, "d_k": 8}
    exec("def my_attention(q, k, v, mask=None):\n"                         # noqa: S102 - the test's own code
         "    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)\n"
         "    if mask is not None:\n"
         "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
         "    return torch.softmax(scores, dim=-1) @ v\n", space)
    result = check_attention(space["my_attention"])
    assert result.bug == "wrong_scale" and "reads the notebook's d_k = 8" in result.observed[0], result
    assert "(q.shape[-1], k.shape[-2])" in result.observed[0], result


def test_a_result_dropped_on_a_line_of_its_own_is_said():
    """scores.masked_fill(...) with nothing to keep what it returns changes nothing: the verdict (mask
    ignored, rightly) says why, with the line (round 26's reader disagreed with "never applied")."""
    def dropped_fill(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    def dropped_where(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    def dropped_tril(n):
        mask = torch.ones(n, n, dtype=torch.bool)
        mask.tril()
        return mask

    for result, call, keep in ((check_attention(dropped_fill), "masked_fill", "t = t.masked_fill(...)"),
                               (check_attention(dropped_where), "torch.where", "t = torch.where(...)"),
                               (check_causal_mask(dropped_tril), "tril", "t = t.tril(...)")):
        first = result.observed[0]
        assert not result.passed, result
        assert first.startswith(f"Your code calls {call}(...) on a line of its own"), result
        assert keep in first and ", line " in first, first
    assert "masked_fill_" in check_attention(dropped_fill).observed[0]
    assert not any("line of its own" in line for line in check_attention(zoo.mask_fill_zero).observed)


def test_multi_head_reading_a_notebook_tensor_or_a_fix_lines_name_is_said():
    """05 leaves merged, weights and value behind: a forward that reads one is told so first; a Fix
    line's own name (out) that the code lacks is said to stand for the student's tensor, not defined
    from names the notebook also holds (round 26's hurried students went round that chain)."""
    space = {"torch": torch, "math": math, "nn": torch.nn, "merged": torch.randn(2, 4, 8)}
    body = ("class M(torch.nn.Module):\n"
            "    def __init__(self, d_model, n_heads):\n"
            "        super().__init__()\n"
            "        self.n_heads, self.d_k = n_heads, d_model // n_heads\n"
            "        for name in ('W_q', 'W_k', 'W_v', 'W_o'):\n"
            "            setattr(self, name, torch.nn.Linear(d_model, d_model, bias=False))\n"
            "    def forward(self, x, mask=None):\n"
            "        return self.W_o({})\n")
    exec(body.format("merged"), space)                                  # noqa: S102 - the test's own code
    result = check_multi_head(space["M"])
    assert "reads the notebook's merged (a tensor of shape (2, 4, 8))" in result.observed[0], result
    assert result.fix.endswith("never the notebook's merged"), result
    exec(body.format("out"), space)                                     # noqa: S102 - the test's own code
    result = check_multi_head(space["M"])
    assert result.fix.startswith("out in a Fix line means your"), result


def test_a_name_read_before_its_value_is_said_with_a_fix():
    """A Fix line pasted with the Fix's own name (scores) into code that calls it otherwise raises
    UnboundLocalError: the verdict says why, and defines the name (round 26's hurried students)."""
    def pasted(q, k, v, mask=None):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # noqa: F821, F841
        return out

    result = check_attention(pasted)
    assert result.bug is None and "scores is read before your code gives it a value" in repr(result), result
    assert result.fix.startswith("scores = q @ k.transpose(-2, -1)"), result


def test_attention_right_outputs_whose_gradients_hold_nan_fail():
    """NaN wiped from the output with nan_to_num still goes backward: the check fails (it passed with a
    note, which a fresh reader read as a mixed message: a ✓, "checked gradients" and "NaN")."""
    def log_mask(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores + torch.log(mask.to(scores.dtype))
        return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v

    result = check_attention(log_mask)
    assert not result.passed and result.headline.endswith("gives NaN gradients."), result
    assert "holds NaN" in result.observed[0] and "finfo(scores.dtype).min" in result.fix, result
    right = check_attention(attnviz.scaled_dot_product_attention)
    assert right.passed and "NaN" not in right.headline, right


def test_attention_if_mask_a_float64_fill_and_transposed_weights_are_said_in_plain_words():
    def scores_of(q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

    def truthiness(q, k, v, mask=None):
        scores = scores_of(q, k)
        if mask:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    def float64_fill(q, k, v, mask=None):
        scores = scores_of(q, k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(torch.float64).min)
        return torch.softmax(scores, dim=-1) @ v

    def transposed(q, k, v, mask=None):
        scores = scores_of(q, k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights.mT

    assert check_attention(truthiness).fix.startswith("if mask is not None:")
    assert "does not fit in float32" in check_attention(float64_fill).observed[-1]
    said = check_attention(transposed).observed[0]
    assert "the right weights transposed" in said and "Return the softmax" not in said


def test_attention_a_pass_that_calls_a_ready_made_attention_says_so_in_a_note():
    def fused(q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    for fn in (fused, attnviz.scaled_dot_product_attention):
        result = check_attention(fn)
        assert result.passed and any("ready-made attention" in n for n in result.notes), result
    def written_out(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    written = check_attention(written_out)
    assert written.passed and not any("ready-made" in n for n in written.notes), written


def test_causal_mask_a_squeeze_that_drops_both_axes_at_n_1_passes_with_a_note():
    squeezed = check_causal_mask(lambda n: torch.ones(1, n, n, dtype=torch.bool).tril().squeeze())
    assert squeezed.passed and "your mask has shape (), not (1, 1)" in squeezed.notes[0], squeezed
    assert not check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool).tril()).notes


def test_multi_head_if_mask_is_told_the_none_check_not_a_misplaced_axis():
    class Truthiness(_Split):
        def forward(self, x, mask=None):
            scores, v = _scores_and_values(self, x)
            if mask:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape))

    result = check_multi_head(Truthiness)
    assert result.bug is None and result.fix.startswith("if mask is not None:"), result


class _SplitAndMergeWithoutTranspose(nn.Module):
    """view(batch, h, n, d_k) to split and reshape(batch, n, d_model) to merge, no transpose either way."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = (w(x).view(b, self.h, n, d // self.h) for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return self.W_o((scores.softmax(-1) @ v).reshape(b, n, d))


def test_multi_head_split_and_merge_both_without_transpose_are_both_told():
    result = check_multi_head(_SplitAndMergeWithoutTranspose)
    assert result.bug == "heads_split_without_transpose", result
    assert any("The merge has the same slip" in line for line in result.observed), result
    assert "merge: out.transpose(1, 2)" in result.fix
    # the split alone (the zoo's member) keeps the catalog's one-line fix
    alone = check_multi_head(zoo.MULTI_HEAD_BUGS["heads_split_without_transpose"])
    assert alone.bug == "heads_split_without_transpose" and "merge" not in alone.fix, alone


class _FirstMaskKept(_Split):
    """Keeps the first mask it is given per length, "to save building it again"."""

    def forward(self, x, mask=None):
        n = x.shape[1]
        keep = vars(self).setdefault("kept", {}).setdefault(n, torch.ones(n, n, dtype=torch.bool)
                                                           if mask is None else mask)
        return _right_forward(self, x, keep)


class _FirstMaskEverKept(_Split):
    """Keeps the first mask it is ever given, whatever the length: a later length raises."""

    def forward(self, x, mask=None):
        return _right_forward(self, x, None if mask is None else vars(self).setdefault("kept_mask", mask))


class _AllowAllKept(_Split):
    """With no mask, builds an all-True mask once and keeps it on self (round 26's learner): a later call
    without a mask on a shorter x raises."""

    def forward(self, x, mask=None):
        if mask is None:
            n = x.shape[1]
            mask = vars(self).setdefault("allow_all", torch.ones(n, n, dtype=torch.bool))
        return _right_forward(self, x, mask)


class _InvertedMaskKeptByShape(_Split):
    """Keeps the inverted mask per shape "to avoid inverting it on every call" (round 24's learner):
    every main call is right; only a later call with another mask of a seen shape goes wrong."""

    def forward(self, x, mask=None):
        if mask is None:
            return _right_forward(self, x, None)
        blocked = vars(self).setdefault("blocked", {}).setdefault(tuple(mask.shape), ~mask)
        return _right_forward(self, x, ~blocked)


def test_multi_head_state_left_by_one_call_for_the_next_is_told():
    for module, did in ((_FirstMaskKept, "gave a wrong output"), (_FirstMaskEverKept, "raised"),
                        (_InvertedMaskKeptByShape, "gave a wrong output"), (_AllowAllKept, "raised")):
        result = check_multi_head(module)
        assert not result.passed and result.headline.startswith(f"forward {did} on "), result
        assert result.headline.endswith("was right on the same call to a new module"), result
        assert "store nothing on self" in result.fix


class _FillMinus1e4(_Split):
    """The fill BERT once used, -10000, in place of the dtype's own minimum."""

    def forward(self, x, mask=None):
        scores, v = _scores_and_values(self, x)
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e4)
        return self.W_o(self.merge(scores.softmax(dim=-1) @ v, *x.shape))


def test_multi_head_a_fixed_fill_of_minus_1e4_fails_where_allowed_scores_are_lower():
    result = check_multi_head(_FillMinus1e4)
    assert not result.passed and "all score far below 0" in result.headline, result
    assert "finfo(scores.dtype).min" in result.fix


# ---- a pass that hands the work to the course's own function says so (as check_attention does)


def _calls_library_causal(n):
    return attnviz.causal_mask(n)


def _imports_library_padding(lengths, n):
    from attnviz.core import padding_mask as ready
    return ready(lengths.tolist(), n)


def _own_causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


class _DerivedMultiHead(attnviz.MultiHeadAttention):
    def forward(self, x, mask=None):
        return super().forward(x, mask=mask)[0]


@pytest.mark.parametrize("check, fn, name", [
    (check_causal_mask, _calls_library_causal, "attnviz.causal_mask"),
    (check_causal_mask, attnviz.causal_mask, "attnviz.causal_mask"),
    (check_padding_mask, _imports_library_padding, "attnviz.padding_mask"),
    (check_multi_head, _DerivedMultiHead, "attnviz.mha.MultiHeadAttention"),
])
def test_a_pass_that_calls_the_course_answer_says_so(check, fn, name):
    result = check(fn)
    assert result.passed
    assert any(name in note and "the exercise asks you to" in note for note in result.notes), result.notes


def test_a_mask_built_by_hand_gets_no_library_note():
    result = check_causal_mask(_own_causal)
    assert result.passed and not any("course's" in note for note in result.notes)


def test_one_output_for_every_query_is_said_when_no_known_bug_matches():
    """Round 24: an einsum naming the values' position axis apart from the keys' sums the weights away."""
    def summed(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        return torch.einsum("...qk,...vd->...qd", weights, v), weights

    said = "Every query gets the same output, one blend for all"
    result = check_attention(summed)
    assert not result.passed and result.bug is None and any(said in line for line in result.observed), result
    # not said where the queries do get different outputs
    scale_wrong = check_attention(_masked_attention(lambda q: 1.7))
    assert not any(said in line for line in scale_wrong.observed), scale_wrong


def test_how_a_bug_shows_is_said_in_the_exercises_own_code():
    """batch_one_only's 'How it shows' names what goes wrong in the code being checked: a padding mask
    built for one sequence hears of lengths, not of attention's k.T (a fresh reader read past it)."""
    def first_length_only(lengths, n):
        return (torch.arange(n) < lengths[0]).expand(len(lengths), 1, n)   # every row the first length's

    mask = check_padding_mask(first_length_only)
    assert mask.bug == "batch_one_only", repr(mask)
    assert "lengths[0]" in mask.shows and "k.T" not in repr(mask), repr(mask)
    assert mask.shows == attnviz.check.BUGS["batch_one_only"].shows_for("check_padding_mask")
    def k_dot_t(q, k, v, mask=None):
        scores = q @ k.T / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) @ v

    scores = check_attention(k_dot_t)
    assert scores.bug == "batch_one_only" and "k.T" in scores.shows and "lengths" not in scores.shows


def test_a_mask_function_that_raises_is_told_where_and_what_to_do():
    """A fresh reader's `(torch.arange(n) < lengths)[:, None, :]` raised IndexError: the verdict gave
    neither the line nor a Fix line, where every other verdict gives both."""
    def my_padding_mask(lengths, n):
        row = torch.arange(n) < lengths                                  # (n,) for one sequence
        return row[:, None, :]

    result = check_padding_mask(my_padding_mask)
    assert result.status == "problem" and "raised IndexError" in result.headline, repr(result)
    line = my_padding_mask.__code__.co_firstlineno + 2                    # the return line
    assert f"(in my_padding_mask, line {line})" in repr(result), repr(result)
    assert result.fix.startswith("call your function by hand"), repr(result)


def test_a_step_that_raises_on_the_notebooks_tensors_is_told_of_them_before_any_bug():
    """Replay 23's 08Z4 cached the notebook's key and value (cell 11's, 4 heads) where its own had 6: it
    raised in torch.cat, and was told 'cache wrong axis', though it joined along the positions. The
    notebook's tensors come first, in the headline, and no bug is named from that raise."""
    from attnviz import gpt
    from attnviz.check import check_decoding_step
    from attnviz.mha import split_heads

    space = {"torch": torch, "F": torch.nn.functional, "gpt": gpt, "split_heads": split_heads,
             "key": torch.randn(2, 4, 1, 8), "value": torch.randn(2, 4, 1, 8)}
    exec(                                                                # noqa: S102 - the test's own code
        "def decode_step(model, tokens, cache):\n"
        "    past = 0 if cache is None else cache[0][0].shape[2]\n"
        "    x = model.embed(tokens, past)\n"
        "    new_cache = []\n"
        "    g = model.n_heads // model.n_kv_heads\n"
        "    for i, block in enumerate(model.blocks):\n"
        "        a, y = block.attention, block.norm_attention(x)\n"
        "        q = split_heads(a.W_q(y), model.n_heads)\n"
        "        k = split_heads(a.W_k(y), model.n_kv_heads).repeat_interleave(g, dim=1)\n"
        "        v = split_heads(a.W_v(y), model.n_kv_heads).repeat_interleave(g, dim=1)\n"
        "        if cache is not None:\n"
        "            k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)\n"
        "        new_cache.append((key, value))\n"
        "        m = gpt.decoding_mask(q.shape[2], k.shape[2])\n"
        "        o = F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
        "        x = x + a.W_o(o.transpose(1, 2).flatten(2))\n"
        "        x = x + block.mlp(block.norm_mlp(x))\n"
        "    return model.unembed(x), new_cache\n", space)
    result = check_decoding_step(space["decode_step"])
    assert result.bug is None and " raised RuntimeError" in result.headline, repr(result)
    assert result.headline.endswith("and it reads the notebook's key, value: that first (a tensor left by "
                                    "an earlier cell has the notebook's sizes, not the model's)."), \
        result.headline
    said = "Your step reads the notebook's key (a tensor of shape (2, 4, 1, 8))"
    assert result.observed[0].startswith(said), result.observed
    assert result.fix.startswith("compute key, value inside the step"), result.fix
