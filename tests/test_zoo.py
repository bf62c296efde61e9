"""The bug zoo: every member is named by its own id, and every correct alternative passes."""

import ast
import functools
import inspect
import math
import textwrap

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attnviz
from attnviz import zoo
from attnviz.check import (
    BUGS,
    check_attention,
    check_causal_mask,
    check_decoding_step,
    check_multi_head,
    check_padding_mask,
)

ISSUE_IDS = {
    "missing_scale",
    "wrong_scale",
    "scale_after_softmax",
    "softmax_wrong_axis",
    "scores_transposed",
    "mask_inverted",
    "mask_after_softmax",
    "mask_fill_zero",
    "nan_on_fully_masked_row",
    "forgot_values",
    "heads_split_without_transpose",
    "heads_merged_without_transpose",
    "heads_averaged",
    "scale_by_d_model",
    "missing_output_projection",
    "causal_future_visible",
    "causal_excludes_self",
    "padding_masks_queries",
}


def test_zoo_holds_every_bug_id_from_the_issue_and_each_has_verdict_words():
    assert ISSUE_IDS <= set(zoo.BUG_IDS)
    for bug_id in zoo.BUG_IDS:
        bug = BUGS[bug_id]
        assert bug.what and bug.shows and bug.fix, bug_id


@pytest.mark.parametrize("bug_id", sorted(zoo.ATTENTION_BUGS))
def test_each_attention_bug_is_named_by_its_own_id(bug_id):
    result = check_attention(zoo.ATTENTION_BUGS[bug_id])
    assert not result.passed
    assert result.bug == bug_id, repr(result)


@pytest.mark.parametrize("bug_id", sorted(zoo.MULTI_HEAD_BUGS))
def test_each_multi_head_bug_is_named_by_its_own_id(bug_id):
    result = check_multi_head(zoo.MULTI_HEAD_BUGS[bug_id])
    assert not result.passed
    assert result.bug == bug_id, repr(result)


@pytest.mark.parametrize("bug_id", ["missing_scale", "softmax_wrong_axis", "mask_inverted", "mask_fill_zero",
                                    "additive_mask_too_small", "softmax_max_over_blocked"])
def test_an_attention_bug_inside_multi_head_is_named_too(bug_id):
    cls = lambda d_model, n_heads: zoo.MultiHeadWith(d_model, n_heads, attention=zoo.ATTENTION_BUGS[bug_id])
    assert check_multi_head(cls).bug == bug_id


@pytest.mark.parametrize("bug_id", sorted(zoo.CAUSAL_MASK_BUGS))
def test_each_causal_mask_bug_is_named(bug_id):
    result = check_causal_mask(zoo.CAUSAL_MASK_BUGS[bug_id])
    assert not result.passed and result.bug == bug_id, repr(result)


@pytest.mark.parametrize("bug_id", sorted(zoo.PADDING_MASK_BUGS))
def test_each_padding_mask_bug_is_named(bug_id):
    result = check_padding_mask(zoo.PADDING_MASK_BUGS[bug_id])
    assert not result.passed and result.bug == bug_id, repr(result)


def test_get_finds_members_and_rejects_unknown_ids():
    assert zoo.get("missing_scale") is zoo.missing_scale
    assert zoo.get("mask_inverted", "causal") is zoo.causal_mask_inverted
    with pytest.raises(KeyError, match="known ids"):
        zoo.get("no_such_bug")


def test_zoo_members_really_differ_from_the_reference():
    """Each attention bug changes the numbers on an ordinary input, with a causal mask, a padding mask
    or none (not only on edge cases); a causal mask used in place of the given one shows on the padding
    mask alone, and one used when no mask is given on no mask alone."""
    torch.manual_seed(0)
    q, k, v = torch.randn(4, 16), torch.randn(4, 16), torch.randn(4, 3)
    padding = torch.tensor([True, True, True, False]).expand(4, 4)      # the last key blocked
    masks = {"causal": attnviz.causal_mask(4), "padding": padding, "none": None}
    for bug_id, fn in zoo.ATTENTION_BUGS.items():
        differs = []
        for name, mask in masks.items():
            expected, _ = attnviz.scaled_dot_product_attention(q, k, v, mask)
            try:
                output = fn(q, k, v, mask)
                output = output[0] if isinstance(output, tuple) else output
            except (RuntimeError, IndexError):      # q @ k, bmm on 2-D: PyTorch refuses, which differs too
                differs.append(name)
                continue
            same = output.shape == expected.shape and torch.allclose(output.double(), expected.double(),
                                                                     atol=1e-4)
            if not same:
                differs.append(name)
        assert differs or bug_id in zoo.SHOWS_ONLY_ON_EDGES, bug_id
        if bug_id == "mask_replaced_by_causal":
            assert differs == ["padding"], differs


# ---- correct alternatives: written differently, all must pass -------------------------------------


def einsum_version(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return torch.einsum("...qk,...kv->...qv", weights, v)


def scale_q_first(q, k, v, mask=None):
    q = q / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v


def additive_float_mask(q, k, v, mask=None):
    scores = q @ k.mT / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + torch.zeros_like(mask, dtype=scores.dtype).masked_fill(
            ~mask, torch.finfo(q.dtype).min / 2
        )
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def additive_float_mask_at_the_minimum(q, k, v, mask=None):
    scores = q @ k.mT / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + torch.zeros_like(mask, dtype=scores.dtype).masked_fill(
            ~mask, torch.finfo(q.dtype).min
        )
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def test_an_additive_mask_at_the_dtypes_minimum_overflows_float16():
    """finfo.min plus a negative score is -inf in float16: a fully masked row of such scores is NaN
    (a fresh reader's find); half the minimum leaves room, as additive_float_mask above does."""
    result = check_attention(additive_float_mask_at_the_minimum)
    assert result.bug == "fill_overflows_float16", repr(result)
    assert "its scores all below -16" in repr(result)


def finfo_min_fill(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


def fused_wrapper(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def loop_over_queries(q, k, v, mask=None):
    """A slow but correct version: one query row at a time."""
    rows = []
    for i in range(q.shape[-2]):
        scores = (q[..., i : i + 1, :] @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (..., 1, n_k)
        if mask is not None:     # a mask may broadcast, e.g. (batch, 1, n_k): index it at full size
            row_mask = mask.broadcast_to(*scores.shape[:-2], q.shape[-2], k.shape[-2])[..., i : i + 1, :]
            scores = scores.masked_fill(~row_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
        rows.append(weights @ v)
    return torch.cat(rows, dim=-2)


@pytest.mark.parametrize(
    "fn",
    [
        einsum_version,
        scale_q_first,
        additive_float_mask,
        finfo_min_fill,
        fused_wrapper,
        loop_over_queries,
        attnviz.scaled_dot_product_attention,
    ],
    ids=lambda f: f.__name__,
)
def test_correct_attention_alternatives_pass(fn):
    result = check_attention(fn)
    assert result.passed and result.bug is None, repr(result)


class LoopOverHeads(nn.Module):
    """Multi-head attention written as a Python loop over the heads' feature slices."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x, mask=None):
        query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)
        heads = []
        for h in range(self.n_heads):
            part = slice(h * self.d_k, (h + 1) * self.d_k)
            out, _ = attnviz.scaled_dot_product_attention(
                query[..., part], key[..., part], value[..., part], mask
            )
            heads.append(out)
        return self.W_o(torch.cat(heads, dim=-1))


class FusedHeads(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h = n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        split = lambda t: t.reshape(batch, n, self.h, d_model // self.h).permute(0, 2, 1, 3)
        out = F.scaled_dot_product_attention(
            split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x)), attn_mask=mask
        )
        return self.W_o(out.permute(0, 2, 1, 3).reshape(batch, n, d_model))


@pytest.mark.parametrize(
    "cls",
    [LoopOverHeads, FusedHeads, attnviz.MultiHeadAttention, zoo.MultiHeadWith],
    ids=lambda c: c.__name__,
)
def test_correct_multi_head_alternatives_pass(cls):
    result = check_multi_head(cls)
    assert result.passed and result.bug is None, repr(result)


@pytest.mark.parametrize(
    "fn",
    [
        lambda n: torch.ones(n, n, dtype=torch.bool).tril(),
        lambda n: torch.arange(n)[:, None] >= torch.arange(n)[None, :],
        lambda n: ~torch.ones(n, n, dtype=torch.bool).triu(1),
        attnviz.causal_mask,
    ],
)
def test_correct_causal_masks_pass(fn):
    assert check_causal_mask(fn).passed


@pytest.mark.parametrize(
    "fn",
    [
        attnviz.padding_mask,
        lambda lengths, n: (torch.arange(n)[None, :] < lengths[:, None])[:, None, :],
        lambda lengths, n: (torch.arange(n) < lengths[:, None, None]).expand(len(lengths), n, n),
    ],
)
def test_correct_padding_masks_pass(fn):
    assert check_padding_mask(fn).passed


# ---- the same mistakes written the way learners write them -------------------------------------


def _fill_min(scores, mask):
    return scores if mask is None else scores.masked_fill(~mask, torch.finfo(scores.dtype).min)


def variant_missing_scale_finfo(q, k, v, mask=None):
    return torch.softmax(_fill_min(q @ k.transpose(-2, -1), mask), dim=-1) @ v


def variant_mask_inverted_where(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, torch.finfo(scores.dtype).min, scores)
    return torch.softmax(scores, dim=-1) @ v


def variant_mask_fill_zero_multiply(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores * mask
    return torch.softmax(scores, dim=-1) @ v


def variant_mask_after_softmax_multiply(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights


def variant_renormalised_after_softmax(q, k, v, mask=None):
    """Masking after the softmax but renormalising: right, except 0/0 on a fully masked row."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v


def variant_softmax_wrong_axis_finfo(q, k, v, mask=None):
    scores = _fill_min(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), mask)
    return F.softmax(scores, dim=0 if q.dim() == 2 else -2) @ v


def variant_forgot_values_output_only(q, k, v, mask=None):
    return torch.softmax(_fill_min(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), mask), dim=-1)


def variant_scores_transposed_mT(q, k, v, mask=None):
    scores = k @ q.mT / math.sqrt(q.shape[-1])
    return torch.softmax(_fill_min(scores, mask), dim=-1) @ v


@pytest.mark.parametrize(
    "fn, bug_id",
    [
        (variant_missing_scale_finfo, "missing_scale"),
        (variant_mask_inverted_where, "mask_inverted"),
        (variant_mask_fill_zero_multiply, "mask_fill_zero"),
        (variant_mask_after_softmax_multiply, "mask_after_softmax"),
        # the catalog's own words for it ("torch.softmax(scores), then times the mask and divided by the new
        # row sum"), named before the fully masked row's NaN, as check_multi_head names it (replay 26)
        (variant_renormalised_after_softmax, "softmax_max_over_blocked"),
        (variant_softmax_wrong_axis_finfo, "softmax_wrong_axis"),
        (variant_forgot_values_output_only, "forgot_values"),
        (variant_scores_transposed_mT, "scores_transposed"),
    ],
    ids=lambda x: x if isinstance(x, str) else x.__name__,
)
def test_learner_style_variants_are_named_too(fn, bug_id):
    assert check_attention(fn).bug == bug_id, repr(check_attention(fn))


class _FusedVariant(FusedHeads):
    """Multi-head attention on the fused function, with one step changed by a subclass."""

    scale = None

    def split(self, t, batch, n, d_model):
        return t.reshape(batch, n, self.h, d_model // self.h).transpose(1, 2)

    def merge(self, out, batch, n, d_model):
        return out.transpose(1, 2).reshape(batch, n, d_model)

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        q, k, v = (self.split(layer(x), batch, n, d_model) for layer in (self.W_q, self.W_k, self.W_v))
        scale = None if self.scale is None else self.scale(d_model)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        return self.project(self.merge(out, batch, n, d_model))

    def project(self, merged):
        return self.W_o(merged)


class MergeByReshape(_FusedVariant):
    def merge(self, out, batch, n, d_model):
        return out.reshape(batch, n, -1)


class SplitByReshape(_FusedVariant):
    def split(self, t, batch, n, d_model):
        return t.reshape(batch, self.h, n, -1)


class ScaleFromDModel(_FusedVariant):
    scale = staticmethod(lambda d_model: d_model**-0.5)


class NoProjection(_FusedVariant):
    def project(self, merged):
        return merged


@pytest.mark.parametrize(
    "cls, bug_id",
    [
        (_FusedVariant, None),
        (MergeByReshape, "heads_merged_without_transpose"),
        (SplitByReshape, "heads_split_without_transpose"),
        (ScaleFromDModel, "scale_by_d_model"),
        (NoProjection, "missing_output_projection"),
    ],
    ids=lambda x: x if isinstance(x, str) or x is None else x.__name__,
)
def test_learner_style_multi_head_variants_are_named(cls, bug_id):
    result = check_multi_head(cls)
    assert result.bug == bug_id and result.passed == (bug_id is None), repr(result)


# ---- every Fix line, applied, gives code that passes ---------------------------------------------

ADVICE_ONLY = {"queries_keys_swapped": "the swap runs through the scores and the mask: two lines"}


def _apply_fix(fn, fix):
    """``fn``'s source with its one ``# BUG`` line replaced by the Fix line (code before '   #').

    A fix that says 'before the softmax' goes in front of the softmax line instead."""
    lines = textwrap.dedent(inspect.getsource(fn)).split("\n")
    (bug,) = [i for i, line in enumerate(lines) if "# BUG" in line]
    code = fix.split("   #")[0]
    if "before the softmax" in fix:
        del lines[bug]
        if lines[bug - 1].strip() == "if mask is not None:":       # the block is empty now
            del lines[bug - 1]
        softmax = next(i for i, line in enumerate(lines) if "torch.softmax" in line)
        indent = lines[softmax][: len(lines[softmax]) - len(lines[softmax].lstrip())]
        lines.insert(softmax, f"{indent}if mask is not None: {code}")
    else:
        indent = lines[bug][: len(lines[bug]) - len(lines[bug].lstrip())]
        lines[bug] = indent + code
    space = dict(vars(zoo))
    exec("\n".join(lines), space)                      # noqa: S102 - the zoo's own source
    return space[fn.__name__]


@pytest.mark.parametrize("bug_id", sorted(zoo.ATTENTION_BUGS))
def test_each_attention_fix_line_applied_to_its_zoo_member_passes(bug_id):
    if bug_id in ADVICE_ONLY:
        pytest.skip(ADVICE_ONLY[bug_id])
    fixed = _apply_fix(zoo.ATTENTION_BUGS[bug_id], BUGS[bug_id].fix)
    result = check_attention(fixed)
    assert result.passed, (BUGS[bug_id].fix, repr(result))


@functools.cache
def _zoo_classes() -> dict:
    """The text of each class the zoo defines, by name, from one reading of its file (inspect.getsource
    reads a class by parsing its whole file, each time)."""
    text = inspect.getsource(zoo)
    lines = text.split("\n")
    return {node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno]) for node in ast.parse(text).body
            if isinstance(node, ast.ClassDef)}


def _fix_decoding_member(step, fix):
    """A decoding zoo member's class with its one ``# BUG`` line replaced by the fix line (code before
    '   #'; an expression replacing a ``return`` line is returned)."""
    cls = type(step)
    lines = _zoo_classes()[cls.__name__].split("\n")
    (bug,) = [i for i, line in enumerate(lines) if "# BUG" in line]
    code = fix.split("   #")[0]
    indent = lines[bug][: len(lines[bug]) - len(lines[bug].lstrip())]
    if lines[bug].lstrip().startswith("return ") and " = " not in code and not code.startswith("return"):
        code = "return " + code                          # an expression fix for a `return ...` line
    lines[bug] = indent + code
    space = dict(vars(zoo))
    exec("\n".join(lines), space)                      # noqa: S102 - the zoo's own source
    return space[cls.__name__]()


@pytest.mark.parametrize("bug_id", sorted(zoo.DECODING_BUGS))
def test_each_decoding_fix_line_applied_to_its_zoo_member_passes(bug_id):
    fix = BUGS[bug_id].fix_for("check_decoding_step")
    result = check_decoding_step(_fix_decoding_member(zoo.DECODING_BUGS[bug_id], fix))
    assert result.passed, (fix, repr(result))


def test_no_fix_line_suggests_a_minus_inf_fill():
    """The 02 and 05 exercises must not give NaN on a fully masked row: no fix teaches -inf."""
    for bug in BUGS.values():
        assert "float('-inf')" not in bug.fix and 'float("-inf")' not in bug.fix, bug.id


@pytest.mark.parametrize(
    "bug_id, family, fixed",
    [
        ("causal_future_visible", "causal", lambda n: torch.ones(n, n, dtype=torch.bool).tril()),
        (
            "mask_inverted",
            "padding",
            lambda lengths, n: (torch.arange(n)[None, :] < lengths[:, None])[:, None, :],
        ),
    ],
)
def test_mask_fix_lines_pass(bug_id, family, fixed):
    check = check_causal_mask if family == "causal" else check_padding_mask
    assert check(fixed).passed
