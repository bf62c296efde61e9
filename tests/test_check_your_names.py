"""A verdict's Fix line in the learner's own names (attnviz/check/_yournames.py): pasted in place of
their line, it makes their code pass, whatever they called their queries, keys and scores; a Fix line
their code already holds says so."""

import importlib.util
import re
import textwrap

import pytest

from attnviz.check import (
    check_attention,
    check_causal_mask,
    check_decoding_step,
    check_multi_head,
    check_padding_mask,
)
from attnviz.check._readers import your_names
from attnviz.check._yournames import in_your_names

HEAD = ("import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        "from attnviz.mha import merge_heads, split_heads\n\n")

ATTENTION = """
def attend(Q, K, V, mask=None):
    S = Q @ K.transpose(-2, -1) / K.shape[-1]
    if mask is not None:
        S = S.masked_fill(~mask, torch.finfo(S.dtype).min)
    return S.softmax(dim=-1) @ V
"""

# the exercise's module as 05 gives it; each test writes its own forward
MODULE = """
class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
"""

# 05's own solution's names (query, key, scores), the scale left out
MULTI_HEAD = MODULE + """
    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        def split(t):
            return t.view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        query, key, value = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        scores = torch.matmul(query, key.mT)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(dim=-1) @ value).transpose(1, 2).contiguous().view(batch, n, d_model)
        return self.W_o(merged)
"""


# 08's step in its solution's names (query, key, value), with the top-left triangle of is_causal=True
DECODING = """
def decode_step(model, tokens, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, past)
    new_cache = []
    for layer, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
        if cache is not None:
            key = torch.cat([cache[layer][0], key], dim=-2)
            value = torch.cat([cache[layer][1], value], dim=-2)
        new_cache.append((key, value))
        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, dim=1),
                                               value.repeat_interleave(group, dim=1), is_causal=True)
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), new_cache
"""

# the same step with the bottom-right mask written out: right, for tests of one mistake put into it
DECODING_RIGHT = DECODING.replace("is_causal=True", "attn_mask=torch.ones(query.shape[-2], key.shape[-2], "
                                  "dtype=torch.bool).tril(key.shape[-2] - query.shape[-2])")


def _load(tmp_path, name, source):
    """The module made of ``source`` in a file of its own, as a cell or a script gives it."""
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pasted(source, line_start, fix):
    """``source`` with the line that starts (after its indent) with ``line_start`` replaced by the
    code part of ``fix``, indented as that line was."""
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(line_start))
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at] = indent + fix.split("   #")[0]
    return "\n".join(lines) + "\n"


def test_attention_fix_in_the_learners_names_passes_when_pasted(tmp_path):
    result = check_attention(_load(tmp_path, "a", ATTENTION).attend)
    assert result.bug == "wrong_scale"
    # the learner's own size, under its root (root_of_the_divisor), in their line
    assert result.fix.startswith("S = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])   # in place of your "
                                 "line"), result.fix
    fixed = _load(tmp_path, "a_fixed", _pasted(ATTENTION, "S = Q @", result.fix)).attend
    assert check_attention(fixed).passed


def test_a_rule_that_raises_on_the_code_leaves_the_verdict_and_the_next_rules_line(tmp_path, monkeypatch):
    """The rules read the learner's code, of any shape: one that raises on a shape it did not foresee is
    skipped, and the learner gets the verdict (not the checker's own traceback) with the line the next
    rule finds."""
    from attnviz.check import _ownlines

    def slips(obj, result, renamed):
        raise IndexError("a rule's own slip")

    monkeypatch.setattr(_ownlines, "RULES", ((lambda result: True, slips),) + _ownlines.RULES)
    result = check_attention(_load(tmp_path, "a", ATTENTION).attend)
    assert result.bug == "wrong_scale", repr(result)
    assert result.fix.startswith("S = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])"), result.fix

    monkeypatch.setattr(_ownlines, "RULES", ((lambda result: 1 / 0, slips),))     # its test raises too
    result = check_attention(_load(tmp_path, "b", ATTENTION).attend)
    assert result.bug == "wrong_scale" and "ZeroDivisionError" not in str(result), repr(result)


@pytest.mark.parametrize("source, line, expected", [
    # a root left out, a key not transposed, a mask inverted in a helper: names with an accented letter
    ("""
def my_attention(qé, ké, vé, maské=None):
    scoresé = qé @ ké.transpose(-2, -1) / qé.shape[-1]
    if maské is not None:
        scoresé = scoresé.masked_fill(~maské, torch.finfo(scoresé.dtype).min)
    weightsé = torch.softmax(scoresé, dim=-1)
    return weightsé @ vé, weightsé
""", "scoresé = qé @", "scoresé = qé @ ké.transpose(-2, -1) / math.sqrt(qé.shape[-1])"),
    ("""
def my_attention(qé, ké, vé, maské=None):
    scoresé = qé @ ké / math.sqrt(qé.shape[-1])
    if maské is not None:
        scoresé = scoresé.masked_fill(~maské, torch.finfo(scoresé.dtype).min)
    weightsé = torch.softmax(scoresé, dim=-1)
    return weightsé @ vé, weightsé
""", "scoresé = qé @", "scoresé = qé @ ké.transpose(-2, -1) / math.sqrt(qé.shape[-1])"),
    ("""
def _finish(scoresé, vé, maské):
    if maské is not None:
        scoresé = scoresé.masked_fill(maské, torch.finfo(scoresé.dtype).min)
    weightsé = torch.softmax(scoresé, dim=-1)
    return weightsé @ vé, weightsé

def my_attention(qé, ké, vé, maské=None):
    return _finish(qé @ ké.transpose(-2, -1) / math.sqrt(qé.shape[-1]), vé, maské)
""", "scoresé = scoresé.masked_fill",
     "scoresé = scoresé.masked_fill(~maské, torch.finfo(scoresé.dtype).min)"),
    # weights times values entry by entry, in Vietnamese
    ("""
def my_attention(q, k, v, mask=None):
    điểm = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        điểm = điểm.masked_fill(~mask, torch.finfo(điểm.dtype).min)
    trọng_số = torch.softmax(điểm, dim=-1)
    đầu_ra = trọng_số.mul(v)
    return đầu_ra, trọng_số
""", "đầu_ra =", "đầu_ra = trọng_số.matmul(v)"),
])
def test_a_line_with_letters_outside_ascii_is_changed_where_its_fix_says(tmp_path, source, line, expected):
    """The rules cut a line at the columns of its parts: Python's parser counts them in UTF-8 bytes, and an
    é before the cut put it a byte off (``qé.math.sqrt(...)``, ``ma~maskéorch.finfo``), an ư or a ố two,
    and one of them raised (a fuzzing pass: 40 of 367 such Fixes garbled, 0 of the same names in ASCII)."""
    result = check_attention(_load(tmp_path, "uni", source).my_attention)
    assert result.fix.split("   #")[0] == expected, repr(result)
    fixed = _load(tmp_path, "uni_fixed", _pasted(source, line, result.fix)).my_attention
    assert check_attention(fixed).passed, result.fix


_SDPA = """        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, dim=1),
                                               value.repeat_interleave(group, dim=1), is_causal=True)
"""


def test_a_steps_scores_under_a_name_of_its_own_get_fixes_in_that_name(tmp_path):
    """Fixes that read ``scores``, where the step's scores were ``att`` or ``w``: pasted in 08, they read
    the notebook's own ``scores`` (no error said so), then chased other verdicts (a replay's 08 e01, d11)."""
    assert _SDPA in DECODING
    written = """        n_new = tokens.shape[1]
        att = query @ key.repeat_interleave(group, dim=1).transpose(-2, -1) / math.sqrt(model.d_head)
        allowed = torch.ones(n_new, key.shape[-2], dtype=torch.bool).tril(key.shape[-2] - n_new)
        att = att.masked_fill(~allowed, float("-inf"))
        att = att.softmax(dim=-2)
        heads = att @ value.repeat_interleave(group, dim=1)
"""
    source = DECODING.replace(_SDPA, written)
    result = check_decoding_step(_load(tmp_path, "e01", source).decode_step)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert result.fix.startswith("att = att.softmax(-1)   # in place"), result.fix
    assert check_decoding_step(_load(tmp_path, "e01_fixed", _pasted(source, "att = att.softmax", result.fix))
                               .decode_step).passed

    einsum = """        keys = key.repeat_interleave(group, dim=1)
        w = torch.einsum("bhqd,bhkd->bhqk", query, keys) / model.d_head ** 0.5
        heads = torch.einsum("bhqk,bhkd->bhqd", w.softmax(-1), value.repeat_interleave(group, dim=1))
"""
    source = DECODING.replace(_SDPA, einsum)
    result = check_decoding_step(_load(tmp_path, "d11", source).decode_step)
    assert result.bug == "causal_mask_missing" and result.fix.startswith("w = w.masked_fill("), repr(result)
    lines = source.split("\n")      # the line goes below the scores, before the softmax, as its comment says
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("w = torch.einsum"))
    lines.insert(at + 1, " " * 8 + result.fix.split("   #")[0])
    assert check_decoding_step(_load(tmp_path, "d11_fixed", "\n".join(lines)).decode_step).passed


@pytest.mark.parametrize("changed, bug", [
    ("lengths = lengths.clamp(min=1)", "padding_lengths_clamped"),
    ("lengths, _ = torch.sort(lengths, descending=True)", "padding_lengths_reordered"),
])
def test_lengths_clamped_or_sorted_get_that_line_to_delete(tmp_path, changed, bug):
    """The catalog's return line was the learner's own already: pasted, it changed nothing, and the same
    verdict came back round after round (a replay's 04 p14 and x05)."""
    source = f"""
def my_padding_mask(lengths, n):
    {changed}
    return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]
"""
    result = check_padding_mask(_load(tmp_path, "pl", source).my_padding_mask)
    assert result.bug == bug and result.fix.startswith(f"delete your line '{changed}'   #"), repr(result)
    fixed = source.replace(f"    {changed}\n", "")
    assert check_padding_mask(_load(tmp_path, "pl_fixed", fixed).my_padding_mask).passed


@pytest.mark.parametrize("right, wrong, bug, fix", [
    # the final norm on a line of its own: told to write logits = model.unembed(x), with no place for it
    ("    return model.unembed(x), new_cache",
     "    x = model.norm_final(x)\n    return model.unembed(x), new_cache",
     "final_norm_twice", "delete your line 'x = model.norm_final(x)'"),
    # stored keys first, read back values first: the Fix was their own append line, "already there"
    ("""            key = torch.cat([cache[layer][0], key], dim=-2)
            value = torch.cat([cache[layer][1], value], dim=-2)""",
     """            old_v, old_k = cache[layer]
            key = torch.cat([old_k, key], dim=-2)
            value = torch.cat([old_v, value], dim=-2)""",
     "cache_keys_values_swapped", "old_k, old_v = cache[layer]   # in place of your line"),
    # the sum started from the normed copy, named in a tuple assignment: the Fix was their mlp line
    ("        x = x + attention.W_o(merge_heads(heads))",
     "        x = normed + attention.W_o(merge_heads(heads))",
     "residual_from_normed", "x = x + attention.W_o(merge_heads(heads))   # in place of your line"),
])
def test_a_steps_own_line_is_the_fix_where_the_catalogs_was_its_right_line(tmp_path, right, wrong, bug, fix):
    """A replay's 08 d12, d16, d20: the Fix was a line the step had right already, or had no place."""
    assert right in DECODING_RIGHT
    source = DECODING_RIGHT.replace(right, wrong)
    result = check_decoding_step(_load(tmp_path, "own", source).decode_step)
    assert result.bug == bug and result.fix.startswith(fix), repr(result)
    if fix.startswith("delete your line"):
        fixed = source.replace("    x = model.norm_final(x)\n", "")
    else:                                       # in place of the one line of theirs that the Fix changes
        theirs = [line.strip() for line in wrong.split("\n") if line not in right.split("\n")]
        fixed = _pasted(source, theirs[0], result.fix)
    assert check_decoding_step(_load(tmp_path, "own_fixed", fixed).decode_step).passed, result.fix


def test_a_steps_parameters_under_other_names_are_the_names_its_fix_reads(tmp_path):
    """A step of (awose, ami, iranti) was told x = model.embed(tokens, past): pasted in 08, it embeds with
    the notebook's own model and tokens, and no error says so (a fuzzing pass)."""
    source = DECODING_RIGHT
    for written, theirs in (("model", "awose"), ("tokens", "ami"), ("cache", "iranti")):
        source = re.sub(rf"\b{written}\b", theirs, source)
    source = source.replace("x = awose.embed(ami, past)", "x = awose.embed(ami, 0)")
    result = check_decoding_step(_load(tmp_path, "yo", source).decode_step)
    assert result.bug == "positions_not_advanced", repr(result)
    assert result.fix.startswith("x = awose.embed(ami, past)   #"), result.fix
    fixed = _pasted(source, "x = awose.embed", result.fix)
    assert check_decoding_step(_load(tmp_path, "yo_fixed", fixed).decode_step).passed


def test_a_padding_loop_that_slices_the_query_axis_gets_the_keys_axis_sliced(tmp_path):
    """mask[b, :L] = True on a (batch, 1, n) mask lets every key through; the catalog's mask = ... line,
    pasted over the torch.zeros line, was undone by the loop below it (a replay's 04 p03)."""
    source = """
def my_padding_mask(lengths, n):
    mask = torch.zeros(len(lengths), 1, n, dtype=torch.bool)
    for b, L in enumerate(lengths):
        mask[b, :L] = True
    return mask
"""
    result = check_padding_mask(_load(tmp_path, "loop", source).my_padding_mask)
    assert result.fix.startswith("mask[b, :, :L] = True   # in place of your line"), repr(result)
    fixed = _pasted(source, "mask[b, :L]", result.fix)
    assert check_padding_mask(_load(tmp_path, "loop_fixed", fixed).my_padding_mask).passed


def test_a_steps_heads_viewed_without_a_transpose_get_their_three_lines(tmp_path):
    """view(b, model.n_heads, t, dh) for the queries, keys and values: the Fix was x.view(batch, n, n_heads,
    d_head).transpose(1, 2), none of the step's names, n_heads for keys and values too, and four rounds of
    NameError followed (a replay's 08 d18)."""
    split = """        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
"""
    viewed = """        b, t, dh = normed.shape[0], normed.shape[1], model.d_head
        query = attention.W_q(normed).view(b, model.n_heads, t, dh)
        key = attention.W_k(normed).view(b, model.n_kv_heads, t, dh)
        value = attention.W_v(normed).view(b, model.n_kv_heads, t, dh)
"""
    assert split in DECODING_RIGHT
    source = DECODING_RIGHT.replace(split, viewed)
    result = check_decoding_step(_load(tmp_path, "vw", source).decode_step)
    assert result.bug == "heads_split_without_transpose", repr(result)
    assert result.fix.startswith("query = attention.W_q(normed).view(b, t, model.n_heads, dh)"
                                 ".transpose(1, 2); key = "), result.fix
    assert "# in place of your three lines" in result.fix
    lines = source.split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("query = attention.W_q"))
    lines[at:at + 3] = [" " * 8 + line for line in result.fix.split("   #")[0].split("; ")]
    assert check_decoding_step(_load(tmp_path, "vw_fixed", "\n".join(lines)).decode_step).passed


def test_lengths_made_a_list_get_a_fix_that_reads_them_as_a_tensor(tmp_path):
    """lengths = lengths.tolist(), then a list comprehension: the Fix indexed the list [:, None], a
    TypeError, and the next verdict only said to run the function by hand (a replay's 04 p12)."""
    source = """
def my_padding_mask(lengths, n):
    lengths = lengths.tolist()
    return torch.tensor([[1] * l + [0] * (n - l) for l in lengths])
"""
    result = check_padding_mask(_load(tmp_path, "ls", source).my_padding_mask)
    assert "torch.as_tensor(lengths)[:, None]" in result.fix.split("   #")[0], repr(result)
    fixed = _pasted(source, "return torch.tensor", result.fix)
    assert check_padding_mask(_load(tmp_path, "ls_fixed", fixed).my_padding_mask).passed


# fully masked rows set to 0 then renormalised over a floor of 1e-12: 0 in float16, so 0 / 0
FLOORED = """
def attend(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, FILL)
    poids = torch.nan_to_num(s.softmax(dim=-1))
    poids = poids / (poids.sum(dim=-1, keepdim=True) + 1e-12)
    return poids @ v
"""


def test_a_floor_float16_rounds_to_0_is_named_and_gets_a_floor_it_holds_in_its_own_line(tmp_path):
    """The float16 NaN of a floor of 1e-12 was named fill_overflows_float16, and its Fix changed a fill of
    -inf that float16 holds. A fill float16 cannot hold is still named first: that one is told apart by the
    fill."""
    source = FLOORED.replace("FILL", 'float("-inf")')
    result = check_attention(_load(tmp_path, "fl", source).attend)
    assert result.bug == "floor_underflows_float16", repr(result)
    assert result.fix.startswith("poids = poids / (poids.sum(dim=-1, keepdim=True) + torch.finfo(poids.dtype)"
                                 ".tiny)   # in place of your line"), result.fix
    fixed = _load(tmp_path, "fl_fixed", _pasted(source, "poids = poids /", result.fix)).attend
    assert check_attention(fixed).passed

    result = check_attention(_load(tmp_path, "fl9", FLOORED.replace("FILL", "-1e9")).attend)
    assert result.bug == "fill_overflows_float16", repr(result)

    forward = MODULE + """
    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        split = lambda t: t.view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = torch.nan_to_num(s.softmax(dim=-1))
        w = w / w.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        return self.W_o((w @ v).transpose(1, 2).reshape(batch, n, d_model))
"""
    result = check_multi_head(_load(tmp_path, "flm", forward).MHA)
    assert result.bug == "floor_underflows_float16", repr(result)
    fixed = _load(tmp_path, "flm_fixed", _pasted(forward, "w = w /", result.fix)).MHA
    assert check_multi_head(fixed).passed


# the scores scaled into a name of their own, which the mask and the softmax then take
SCALED_FURTHER = """
def attend(q, k, v, mask=None):
    raw = q @ k.mT
    scaled = raw / math.sqrt(q.shape[-1])
    if mask is not None:
        scaled = scaled.masked_fill(~mask, torch.finfo(scaled.dtype).min)
    attn = scaled.softmax(-1)
    return attn @ v, attn
"""


@pytest.mark.parametrize("bug, wrong, right", [
    ("mask_inverted", "masked_fill(~mask,", "masked_fill(mask,"),
    ("softmax_wrong_axis", "softmax(-1)", "softmax(-2)"),
])
def test_scores_scaled_under_a_new_name_get_fixes_in_that_name(tmp_path, bug, wrong, right):
    """raw = q @ k.mT, then scaled = raw / r: a Fix that masked raw or took its softmax, pasted in place
    of the learner's line, masked a tensor nothing read after it, or left the scale and the mask out;
    the mask's Fix then came back again and again (replay 26)."""
    source = SCALED_FURTHER.replace(wrong, right)
    result = check_attention(_load(tmp_path, "sf", source).attend)
    assert result.bug == bug and "raw" not in result.fix and "scaled" in result.fix, repr(result)
    line = "scaled = scaled.masked_fill" if bug == "mask_inverted" else "attn = "
    fixed = _load(tmp_path, "sf_fixed", _pasted(source, line, result.fix)).attend
    assert check_attention(fixed).passed, result.fix


@pytest.mark.parametrize("softmax", ["torch.softmax(s, dim=-1)", "s.softmax(dim=-1)"])
def test_weights_masked_after_the_softmax_get_the_softmax_line_masked_and_the_rest_left_out(tmp_path,
                                                                                            softmax):
    """Weights masked after the softmax and renormalised (exact, but 0/0 on a fully masked row) were
    told "nan on fully masked row" with the fill alone: pasted above the softmax, the renormalising
    still divided 0 by 0, and the same verdict came back (replay 26's a30)."""
    source = """
def attend(q, k, v, mask=None):
    s = q @ k.mT / math.sqrt(q.shape[-1])
    w = torch.softmax(s, dim=-1)
    if mask is not None:
        w = w * mask
        w = w / w.sum(dim=-1, keepdim=True)
    return w @ v, w
""".replace("torch.softmax(s, dim=-1)", softmax)
    result = check_attention(_load(tmp_path, "ma", source).attend)
    assert result.bug == "softmax_max_over_blocked", repr(result)
    assert "leave out your lines 'if mask is not None:' and the lines under it" in result.fix, result.fix
    kept = "\n".join(source.splitlines()[:4] + source.splitlines()[-1:])
    fixed = _pasted(kept, "w = " + softmax[:5], result.fix)
    assert check_attention(_load(tmp_path, "ma_fixed", fixed).attend).passed, result.fix


def test_a_round_trip_through_numpy_is_told_to_stay_in_torch(tmp_path):
    """The catalog's weights = torch.softmax(s, dim=-1), where s was a NumPy array, raised TypeError when
    pasted, and the next Fix was generic (replay 26's 02 a12)."""
    source = """
import numpy as np


def attend(q, k, v, mask=None):
    Q, K, V = (t.detach().numpy() for t in (q, k, v))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask.numpy(), s, np.finfo(s.dtype).min)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return torch.from_numpy(w @ V), torch.from_numpy(w)
"""
    result = check_attention(_load(tmp_path, "np", source).attend)
    assert result.bug == "gradient_blocked", repr(result)
    assert result.fix.startswith("write each step with torch"), result.fix


def test_multi_head_fix_in_the_notebooks_own_names_passes_when_pasted(tmp_path):
    result = check_multi_head(_load(tmp_path, "m", MULTI_HEAD).MHA)
    assert result.bug == "missing_scale"
    assert result.fix == "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])"
    fixed = _load(tmp_path, "m_fixed", _pasted(MULTI_HEAD, "scores = torch.matmul", result.fix)).MHA
    assert check_multi_head(fixed).passed


@pytest.mark.parametrize("forward, line", [
    # the heads on axis 2 of q and k: q @ k.transpose(-2, -1) there multiplies heads by heads
    ("""
    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = (w(x).view(b, n, self.n_heads, self.d_k) for w in (self.W_q, self.W_k, self.W_v))
        s = torch.einsum("bihd,bjhd->bhij", q, k)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        o = torch.einsum("bhij,bjhd->bihd", s.softmax(dim=-1), v).reshape(b, n, d)
        return self.W_o(o)
""", "s = torch.einsum"),
    # a loop over each head's slice: no q or k of its own
    ("""
    def forward(self, x, mask=None):
        requetes, cles, valeurs = self.W_q(x), self.W_k(x), self.W_v(x)
        tetes = []
        for t in range(self.n_heads):
            debut, fin = t * self.d_k, (t + 1) * self.d_k
            notes = requetes[..., debut:fin] @ cles[..., debut:fin].transpose(-2, -1)
            if mask is not None:
                notes = notes.masked_fill(~mask, torch.finfo(notes.dtype).min)
            poids = notes.softmax(dim=-1)
            tetes.append(poids @ valeurs[..., debut:fin])
        return self.W_o(torch.cat(tetes, dim=-1))
""", "notes = requetes"),
])
def test_scores_never_scaled_get_their_own_line_divided(tmp_path, forward, line):
    """The catalog's q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), pasted over an einsum with the heads
    on axis 2, multiplied heads by heads and raised; in a loop over heads it named q and k the code does
    not have, and three rounds later the code was further from right (replay 26's 05 a05, a16)."""
    source = MODULE + "\n".join("    " + row if row else row for row in textwrap.dedent(forward).split("\n"))
    result = check_multi_head(_load(tmp_path, "ns", source).MHA)
    assert result.bug == "missing_scale" and "# in place of your line" in result.fix, repr(result)
    fixed = _load(tmp_path, "ns_fixed", _pasted(source, line, result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


def test_a_heads_slices_divided_by_d_k_not_its_root_get_that_line_with_the_root(tmp_path):
    """In a loop over each head's slices, wrong_scale's Fix named q and k, which the loop does not have:
    two rounds of NameError (replay 27's 05 n04)."""
    source = MODULE + """
    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        outs = []
        for h in range(self.n_heads):
            sl = slice(h * self.d_k, (h + 1) * self.d_k)
            att = Q[:, :, sl] @ K[:, :, sl].transpose(1, 2) / self.d_k
            if mask is not None:
                att = att.masked_fill(mask.logical_not(), torch.finfo(att.dtype).min)
            outs.append(torch.softmax(att, dim=-1) @ V[:, :, sl])
        return self.W_o(torch.cat(outs, dim=-1))
"""
    result = check_multi_head(_load(tmp_path, "sl", source).MHA)
    assert result.bug == "wrong_scale" and result.fix.startswith(
        "att = Q[:, :, sl] @ K[:, :, sl].transpose(1, 2) / math.sqrt(self.d_k)   # in place of your line"), \
        repr(result)
    fixed = _load(tmp_path, "sl_fixed", _pasted(source, "att = Q[", result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


def test_queries_divided_by_d_k_not_its_root_get_that_line_with_the_root(tmp_path):
    """q = q / self.d_k: the catalog's scores line, pasted over the learner's own scores line, divided
    twice, and the next verdict was "no known bug" (replay 26's 05 a21)."""
    source = MODULE + """
    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        q = self.W_q(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        q = q / self.d_k
        k = self.W_k(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        v = self.W_v(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = scores.softmax(dim=-1) @ v
        return self.W_o(out.transpose(1, 2).reshape(batch, n, d_model))
"""
    result = check_multi_head(_load(tmp_path, "dk", source).MHA)
    assert result.bug == "wrong_scale" and result.fix.startswith(
        "q = q / math.sqrt(self.d_k)   # in place of your line"), repr(result)
    fixed = _load(tmp_path, "dk_fixed", _pasted(source, "q = q / self.d_k", result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


@pytest.mark.parametrize("einsum", ['torch.einsum("bhqd,bhkd->bhkq", q, k)',
                                    'torch.einsum("bhkd,bhqd->bhkq", k, q)'])     # the keys handed first
def test_scores_transposed_by_an_einsum_get_that_einsum_a_row_per_query(tmp_path, einsum):
    """'bhqd,bhkd->bhkq', its scores named att: the catalog's scores = q @ k.transpose(-2, -1) ... set a
    name the code never reads (replay 26's 05 a18: one more round, an UnboundLocalError)."""
    source = MODULE + """
    def forward(self, x, mask=None):
        B, N, D = x.shape
        q, k, v = (w(x).view(B, N, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        att = torch.einsum("bhqd,bhkd->bhkq", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
        att = att.softmax(dim=-1)
        y = torch.einsum("bhqk,bhkd->bhqd", att, v).transpose(1, 2).reshape(B, N, D)
        return self.W_o(y)
""".replace('torch.einsum("bhqd,bhkd->bhkq", q, k)', einsum)
    result = check_multi_head(_load(tmp_path, "et", source).MHA)
    assert result.bug == "scores_transposed" and result.fix.startswith(
        "att = " + einsum.replace("->bhkq", "->bhqk")), repr(result)
    fixed = _load(tmp_path, "et_fixed", _pasted(source, "att = torch.einsum", result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


# a learner's own names everywhere: inputs, b/t/dm, weights @ v inline, out handed to W_o
MERGED_BY_VIEW = MODULE + """
    def forward(self, inputs, mask=None):
        b, t, dm = inputs.shape
        q, k, v = (w(inputs).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).reshape(b, t, dm)
        return self.W_o(out)
"""


@pytest.mark.parametrize("bug, wrong_line, source", [
    ("heads_merged_without_transpose", "out = (weights @ v)", MERGED_BY_VIEW),
    ("missing_output_projection", "return out",
     MERGED_BY_VIEW.replace("(weights @ v).reshape", "(weights @ v).transpose(1, 2).reshape")
     .replace("return self.W_o(out)", "return out")),
])
def test_multi_head_merge_fixes_in_the_learners_names_pass_when_pasted(tmp_path, bug, wrong_line, source):
    """The merge Fix named out, batch, n and d_model: out was the learner's merged tensor, and batch,
    n, d_model the notebook's 2, 4, 8 (a reader of 05 took three rounds)."""
    result = check_multi_head(_load(tmp_path, "mm", source).MHA)
    assert result.bug == bug, repr(result)
    code = result.fix.split("   #")[0]
    assert "batch" not in code and "heads" not in code, result.fix
    fixed = _load(tmp_path, "mm_fixed", _pasted(source, wrong_line, result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


@pytest.mark.parametrize("body, fix", [
    ("return torch.ones(n, n).tril()", "return torch.ones(n, n).tril().bool()"),
    ("return torch.zeros(n, n).masked_fill(torch.ones(n, n).triu(1).bool(), float('-inf'))",
     "return torch.zeros(n, n).masked_fill(torch.ones(n, n).triu(1).bool(), float('-inf')) == 0"),
])
def test_a_float_masks_fix_is_written_on_the_mask_the_function_returns(tmp_path, body, fix):
    """mask_not_bool's Fix said 'return mask.bool()' to a function with no mask (a NameError when
    pasted: a reader of 04)."""
    source = f"def my_causal_mask(n):\n    {body}\n"
    result = check_causal_mask(_load(tmp_path, "cm", source).my_causal_mask)
    assert result.bug == "mask_not_bool" and result.fix.split("   #")[0] == fix, repr(result)
    fixed = _load(tmp_path, "cm_fixed", f"def my_causal_mask(n):\n    {fix}\n").my_causal_mask
    assert check_causal_mask(fixed).passed


def test_a_name_read_before_it_is_set_is_not_taken_for_a_mask_bug_and_the_fix_names_yours(tmp_path):
    """A Fix line pasted with the catalog's scores into code whose scores are S: the name is read only
    where a mask is given, which looked like mask_axis_misplaced (right without a mask, raises with
    one) and sent a hurried learner round again (replay of session 29)."""
    source = MERGED_BY_VIEW.replace("scores = q @ k", "S = q @ k").replace(
        "torch.softmax(scores, dim=-1)", "torch.softmax(S, dim=-1)").replace(
        "(weights @ v).reshape", "(weights @ v).transpose(1, 2).reshape")
    result = check_multi_head(_load(tmp_path, "ub", source).MHA)
    assert result.bug is None and "UnboundLocalError" in result.headline, repr(result)
    assert result.fix.startswith("scores in a Fix line means your scores") and \
        result.fix.endswith("(in your code: S)"), result.fix


def test_a_name_with_no_value_gets_words_not_a_line_that_pastes_an_ellipsis(tmp_path):
    source = "def my_attention(q, k, v, mask=None):\n    att = att / 2\n    return v\n"
    result = check_attention(_load(tmp_path, "el", source).my_attention)
    assert "UnboundLocalError" in result.headline and "..." not in result.fix, result.fix
    assert result.fix.startswith("give att its value above its first use"), result.fix


def test_a_step_that_pasted_q_is_told_what_q_stands_for_and_its_own_name(tmp_path):
    """08's Fix lines named q and k; a step whose queries are query got 'run the cell that defines or
    imports q', which no cell does (a replay)."""
    source = DECODING.replace("is_causal=True", "attn_mask=torch.ones(q.shape[-2], key.shape[-2], "
                              "dtype=torch.bool).tril(diagonal=key.shape[-2] - q.shape[-2])")
    result = check_decoding_step(_load(tmp_path, "nq", source).decode_step)
    assert "NameError" in result.headline, repr(result)
    assert result.fix.startswith("q in a Fix line means your queries"), result.fix
    assert result.fix.endswith("(in your code: query)"), result.fix


def test_decoding_fix_in_the_learners_names():
    from tests.learner_code import decoding

    step = next(case.obj for case in decoding.CASES if case.name == "divided_by_d_head")
    result = check_decoding_step(step)
    assert result.bug == "wrong_scale"
    assert result.fix.startswith("s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)"), result.fix


@pytest.mark.parametrize("bug, wrong", [
    ("attention_residual_missing", "x = attention.W_o(merge_heads(heads))"),
    ("mlp_residual_missing", "x = block.mlp(block.norm_mlp(x))"),
])
def test_a_sublayer_put_in_place_of_the_stream_gets_its_own_line_added(tmp_path, bug, wrong):
    """The catalog's x = x + attention.W_o(merged) named a merged the step did not have (a NameError, and
    a line of its own to write: replay 26's 08 a27)."""
    assert check_decoding_step(_load(tmp_path, "sl_right", DECODING_RIGHT).decode_step).passed
    source = DECODING_RIGHT.replace("x = x + " + wrong.removeprefix("x = "), wrong)
    result = check_decoding_step(_load(tmp_path, "sl", source).decode_step)
    assert result.bug == bug and result.fix.startswith(
        "x = x + " + wrong.removeprefix("x = ") + "   # in place of your line"), repr(result)
    fixed = _load(tmp_path, "sl_fixed", _pasted(source, wrong, result.fix)).decode_step
    assert check_decoding_step(fixed).passed, result.fix


def test_decoding_mask_fix_in_the_names_handed_to_the_fused_function_passes_when_pasted(tmp_path):
    """is_causal=True's Fix named q and k; a step calling them query and key got a NameError, then
    "run the cell that defines q", which no cell does (a reader of 08, session 29)."""
    result = check_decoding_step(_load(tmp_path, "d", DECODING).decode_step)
    assert result.bug == "is_causal_top_left"
    code = result.fix.split("   #")[0]
    assert code.startswith("attn_mask=torch.ones(query.shape[-2], key.shape[-2]"), result.fix
    fixed = DECODING.replace("is_causal=True", code)
    assert check_decoding_step(_load(tmp_path, "d_fixed", fixed).decode_step).passed


def test_decoding_group_fix_in_the_learners_names_passes_when_pasted(tmp_path):
    # the key/value heads never repeated: 6 query heads meet 2 key/value heads
    source = DECODING.replace(".repeat_interleave(group, dim=1)", "").replace(
        "is_causal=True", "attn_mask=torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool)"
        ".tril(diagonal=key.shape[-2] - query.shape[-2])")
    result = check_decoding_step(_load(tmp_path, "g", source).decode_step)
    code = result.fix.split("   #")[0]
    repeat = "key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)"
    assert repeat in code, result.fix
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if "new_cache.append" in line)
    lines.insert(at + 1, "        " + code)
    assert check_decoding_step(_load(tmp_path, "g_fixed", "\n".join(lines) + "\n").decode_step).passed


def _repeated_before_caching(source: str, repeat: str) -> str:
    """DECODING with the key/value heads repeated by ``repeat``, a line just above the append, and
    attending to the keys and values as they are (with the bottom-right mask)."""
    source = source.replace("        new_cache.append((key, value))",
                            f"        {repeat}\n        new_cache.append((key, value))")
    return source.replace(".repeat_interleave(group, dim=1),\n", ",\n").replace(
        "value.repeat_interleave(group, dim=1), is_causal=True", "value, attn_mask=torch.ones("
        "query.shape[-2], key.shape[-2], dtype=torch.bool).tril(diagonal=key.shape[-2] - query.shape[-2])")


def test_a_fix_line_the_code_already_holds_says_so(tmp_path):
    # the heads repeated before caching, by a generator no own-line rule reads: the Fix's append is in
    # the code word for word
    source = _repeated_before_caching(
        DECODING, "key, value = (t.repeat_interleave(group, dim=1) for t in (key, value))")
    result = check_decoding_step(_load(tmp_path, "c", source).decode_step)
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    assert result.fix.startswith("new_cache.append((key, value))   # your code has this line already; "
                                 "the change is: "), result.fix


@pytest.mark.parametrize("line, shifted", [
    ("past = 0 if cache is None else cache[0][0].shape[-2]",
     "past = 0 if cache is None else cache[0][0].shape[-2] - 1"),
    ("past = cache[0][0].shape[2] if cache is not None else 0",
     "past = cache[0][0].shape[2] + 1 if cache is not None else 0"),
])
def test_a_past_one_short_gets_its_own_line_without_the_offset(tmp_path, line, shifted):
    """past = ... .shape[-2] - 1 was told its embed line, which it had already, with "past = positions
    already cached" (replay 26's 08 a14)."""
    source = DECODING_RIGHT.replace("past = 0 if cache is None else cache[0][0].shape[-2]", shifted)
    result = check_decoding_step(_load(tmp_path, "po", source).decode_step)
    assert result.bug == "positions_not_advanced" and result.fix.startswith(
        line + "   # in place of your line"), repr(result)
    fixed = _load(tmp_path, "po_fixed", _pasted(source, "past = ", result.fix)).decode_step
    assert check_decoding_step(fixed).passed, result.fix


def test_heads_repeated_as_a_block_inside_the_call_over_two_lines_get_that_call_on_one_line(tmp_path):
    """key.repeat(1, group, 1, 1) inside the fused function's call, over two lines: the catalog's line
    (key, value = key.repeat_interleave(...), ...) pasted above the call repeated the heads twice, and the
    next verdict blamed a cache that held none (replay 26's 08 a12)."""
    source = DECODING_RIGHT.replace(".repeat_interleave(group, dim=1)", ".repeat(1, group, 1, 1)")
    result = check_decoding_step(_load(tmp_path, "rb", source).decode_step)
    assert result.bug == "kv_heads_repeated_not_interleaved", repr(result)
    assert result.fix.startswith("heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, "
                                 "dim=1), value.repeat_interleave(group, dim=1), attn_mask="), result.fix
    assert "(one statement, over 2 lines)" in result.fix, result.fix
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("heads = F."))
    lines[at: at + 2] = [lines[at][: len(lines[at]) - len(lines[at].lstrip())] + result.fix.split("   #")[0]]
    assert check_decoding_step(_load(tmp_path, "rb_fixed", "\n".join(lines) + "\n").decode_step).passed


def test_heads_repeated_on_the_lines_that_project_them_get_those_lines_without_the_repeat(tmp_path):
    """Replay 18's 08U3 r2: k = split_heads(att.W_k(h), model.n_kv_heads).repeat_interleave(klompok, dim=1)
    (and v), then cached, was told 'new_cache.append((k, v))   # ...' in names the step does not have.
    The Fix is now those two lines without the repeat; pasted, the check says where to repeat them (after
    the append), and pasted there, the step passes."""
    source = _repeated_before_caching(DECODING, "pass").replace(
        "key = split_heads(attention.W_k(normed), model.n_kv_heads)",
        "key = split_heads(attention.W_k(normed), model.n_kv_heads).repeat_interleave(group, dim=1)").replace(
        "value = split_heads(attention.W_v(normed), model.n_kv_heads)",
        "value = split_heads(attention.W_v(normed), model.n_kv_heads).repeat_interleave(group, dim=1)")
    result = check_decoding_step(_load(tmp_path, "p", source).decode_step)
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    assert result.fix.startswith("key = split_heads(attention.W_k(normed), model.n_kv_heads); value = "
                                 "split_heads(attention.W_v(normed), model.n_kv_heads)   # in place of your "
                                 "two lines: "), result.fix
    lines = source.splitlines()
    projected = [i for i, line in enumerate(lines) if "split_heads(attention.W_" in line and "repeat" in line]
    assert len(projected) == 2, projected
    lines[projected[0]] = "        " + result.fix.split("   #")[0]       # in place of the two lines
    del lines[projected[1]]
    then = check_decoding_step(_load(tmp_path, "p2", "\n".join(lines) + "\n").decode_step)
    assert "6 query heads met 2 key/value heads" in then.headline, repr(then)
    assert then.fix.startswith("key, value = key.repeat_interleave(group, dim=1), "), then.fix
    at = next(i for i, line in enumerate(lines) if "new_cache.append" in line)
    lines.insert(at + 1, "        " + then.fix.split("   #")[0])          # after caching, as it says
    assert check_decoding_step(_load(tmp_path, "p3", "\n".join(lines) + "\n").decode_step).passed


@pytest.mark.parametrize("repeat", [
    "key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)",
    "key = key.repeat_interleave(group, dim=1); value = value.repeat_interleave(group, dim=1)",
    "key = key.repeat_interleave(group, 1)\n        value = value.repeat_interleave(group, 1)",
], ids=["one_line", "two_on_one_line", "two_lines"])
def test_heads_repeated_on_a_line_of_their_own_before_caching_get_that_line_moved(tmp_path, repeat):
    """Replay 17's 08T2 r2: k, v = k.repeat_interleave(buleg, dim=1), ... above torch.cat and the append was
    told 'shine_tuukh.append((k, v))   # your code has this line already; the change is: ...' in words.
    The Fix is now their repeat line, to move to just after the append; moved, the step passes."""
    source = _repeated_before_caching(DECODING, repeat)
    result = check_decoding_step(_load(tmp_path, "r", source).decode_step)
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    code, comment = result.fix.split("   #", 1)
    assert comment.startswith(" your line, moved to just after new_cache.append((key, value)):"), result.fix
    theirs = [line.strip() for line in repeat.split("\n")]
    lines = [line for line in source.splitlines() if line.strip() not in theirs]
    at = next(i for i, line in enumerate(lines) if "new_cache.append" in line)
    lines.insert(at + 1, "        " + code)
    assert check_decoding_step(_load(tmp_path, "r_moved", "\n".join(lines) + "\n").decode_step).passed


def test_heads_repeated_before_caching_and_used_in_between_are_not_told_to_move(tmp_path):
    # attending between the repeat and the append: moving the repeat below would attend unrepeated
    source = _repeated_before_caching(DECODING, "key, value = key.repeat_interleave(group, dim=1), "
                                                "value.repeat_interleave(group, dim=1)")
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if "new_cache.append" in line)
    lines.insert(at, "        scale = key.shape[-1] ** -0.5")
    result = check_decoding_step(_load(tmp_path, "u", "\n".join(lines) + "\n").decode_step)
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    assert "your line, moved" not in result.fix, result.fix


def test_two_mistakes_with_is_causal_still_say_it(tmp_path):
    # is_causal=True and no position offset: no one known bug matches both
    source = DECODING.replace("model.embed(tokens, past)", "model.embed(tokens)")
    result = check_decoding_step(_load(tmp_path, "t", source).decode_step)
    assert result.status == "problem" and result.bug is None, repr(result)
    assert any("passes is_causal=" in line for line in result.observed), repr(result)


@pytest.mark.parametrize("body, names", [
    ("S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])", {"scores": "S", "q": "Q", "k": "K"}),
    ("att = (qh @ kh.mT) * scale", {"scores": "att", "q": "qh", "k": "kh"}),
    ("att = scale * torch.matmul(qh, kh.transpose(2, 3))", {"scores": "att", "q": "qh", "k": "kh"}),
    ("s = a @ b.transpose(-2, -1) / d ** 1 / 2", {"scores": "s", "q": "a", "k": "b"}),
    ("s = a @ torch.transpose(b, -2, -1)", {"scores": "s", "q": "a", "k": "b"}),
    ("o = F.scaled_dot_product_attention(a, b.repeat_interleave(2, dim=1), c.contiguous())",
     {"q": "a", "k": "b", "v": "c", "heads": "o"}),
    ("o = F.scaled_dot_product_attention(a, torch.cat([b, c]), c)", {"q": "a", "v": "c", "heads": "o"}),
    # the softmax of the product is the weights, not the scores; the product's operands are q and k
    ("w = (a @ b.mT).softmax(-1)", {"weights": "w", "q": "a", "k": "b"}),
    ("w = torch.softmax(a @ b.mT / 2, dim=-1)", {"weights": "w", "q": "a", "k": "b"}),
    ("w = torch.softmax(s, dim=-1)\n    m = (w @ c).transpose(1, 2)", {"weights": "w", "v": "c",
                                                                     "heads": "(w @ c)"}),
    ("w = F.softmax(s, -1)\n    h = w @ c", {"weights": "w", "v": "c", "heads": "h"}),
    # the weights unnamed: what the softmax is multiplied by is the values (replay 08E, session 29)
    ("h = s.softmax(dim=-1) @ c", {"v": "c", "heads": "h"}),
    ("o = merge(torch.matmul(torch.softmax(s, -1), c))", {"v": "c"}),
    # einsum: queries by keys over their last axis are scores (replay 5's 02N2); a product that is not
    ("s = torch.einsum('qd,kd->qk', a, b)", {"scores": "s", "q": "a", "k": "b"}),
    ("s = torch.einsum('qk,kd->qd', a, b)", {}),
    ("s = torch.einsum('bqhd,bkhd->bhqk', a, b)", {}),
    ("s = a @ b", {}),
    # two heads' scores under two sets of names: which is meant cannot be told
    ("s1 = a @ b.mT\n    s2 = c @ d.mT", {}),
    ("s = a @ b.mT\n    o = F.scaled_dot_product_attention(c, b, d)",
     {"scores": "s", "k": "b", "v": "d", "heads": "o"}),
])
def test_your_names(tmp_path, body, names):
    source = f"def f(a, b, c, d, Q, K, qh, kh, scale):\n    {body}\n    return 0\n"
    assert your_names(_load(tmp_path, "s", source).f) == names


def test_sizes_are_the_learners_or_read_from_forwards_input(tmp_path):
    """05's notebook defines batch, n and d_model (2, 4, 8): a Fix line's batch and n, in a forward that
    never unpacked its own, read those silently (a replay's split Fix raised RuntimeError)."""
    unpacked = "class M:\n    def forward(self, inputs, mask=None):\n        b, t, dm = inputs.shape\n" \
               "        return inputs\n"
    sizes = {k: v for k, v in your_names(_load(tmp_path, "u", unpacked).M).items()
             if k in ("batch", "n", "d_model", "x")}
    assert sizes == {"batch": "b", "n": "t", "d_model": "dm", "x": "inputs"}
    source = "class M:\n    def forward(self, inputs, mask=None):\n        return inputs\n"
    bare = _load(tmp_path, "b", source).M
    split = "self.W_q(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)   # split"
    assert in_your_names(bare, split) == ("self.W_q(inputs).view(inputs.shape[0], inputs.shape[1], "
                                          "self.n_heads, self.d_k).transpose(1, 2)   # split")
    # a line that sets the sizes keeps their names
    sets = "batch, n, d_model = x.shape; q = self.W_q(x).view(batch, n, self.n_heads, self.d_k)"
    assert in_your_names(bare, sets) == sets.replace("x", "inputs")


def test_a_steps_stream_and_returned_cache_are_its_own_names(tmp_path):
    """A step's stream is what model.embed gives (h, not x); its new cache is what it returns, unless
    that is the cache it was given, changed in place (then 'new_cache = []' must stay a new name)."""
    step = ("def step(model, tokens, cache):\n    h = model.embed(tokens)\n    kv_out = []\n"
            "    return model.unembed(h), kv_out\n")
    names = your_names(_load(tmp_path, "st", step).step)
    assert names["x"] == "h" and names["new_cache"] == "kv_out" and "batch" not in names
    assert in_your_names(_load(tmp_path, "st2", step).step, "logits = model.unembed(x)   # every position") \
        == "logits = model.unembed(h)   # every position"
    in_place = step.replace("kv_out = []", "cache.append(1)").replace("kv_out", "cache")
    assert "new_cache" not in your_names(_load(tmp_path, "st3", in_place).step)


KV_STEP = """
def decode_step(model, tokens, cache):
    if cache is None:
        cache = gpt.KVCache()
    group = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, cache.length)
    for i, block in enumerate(model.blocks):
        normed, attention = block.norm_attention(x), block.attention
        query = split_heads(attention.W_q(normed), model.n_heads)
        key = split_heads(attention.W_k(normed), model.n_kv_heads)
        value = split_heads(attention.W_v(normed), model.n_kv_heads)
        key, value = cache.append(i, key, value)
        mask = gpt.decoding_mask(query.shape[-2], key.shape[-2])
        heads = F.scaled_dot_product_attention(query, key.repeat_interleave(group, dim=1),
                                               value.repeat_interleave(group, dim=1), attn_mask=mask)
        x = x + attention.W_o(merge_heads(heads))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), cache
"""


def test_a_kv_cache_step_gets_the_kv_cache_forms(tmp_path):
    """A gpt.KVCache is not subscriptable: 'cache[0][0].shape[-2]' raised TypeError in a replay's
    KVCache step, and 'new_cache = []' did nothing for one that changed its cache in place."""
    step = _load(tmp_path, "kv", "from attnviz import gpt\n" + KV_STEP).decode_step
    result = check_decoding_step(step)
    assert result.bug == "cache_modified_in_place", repr(result)
    code = result.fix.split("   #")[0]
    assert code == "cache = gpt.KVCache() if cache is None else cache.copy()", result.fix
    fixed = KV_STEP.replace("    if cache is None:\n        cache = gpt.KVCache()\n", "    " + code + "\n")
    fixed_step = _load(tmp_path, "kv_fixed", "from attnviz import gpt\n" + fixed).decode_step
    assert check_decoding_step(fixed_step).passed
    # (the step embeds at cache.length, no name of its own: the Fix gives the line that embeds at past)
    assert in_your_names(step, "past = 0 if cache is None else cache[0][0].shape[-2]   # cached") == \
        "past = 0 if cache is None else cache.length; x = model.embed(tokens, past)   # in place of " \
        "your line x = model.embed(...), which then embeds at past; cached"
    assert in_your_names(step, "past_keys, past_values = cache[layer]") == \
        "past_keys, past_values = (cache.keys[i], cache.values[i])"


def test_only_the_fixs_code_and_only_variables_change(tmp_path):
    source = "def f(Q, K, V):\n    S = Q @ K.mT\n    return F.scaled_dot_product_attention(Q, K, V)\n"
    f = _load(tmp_path, "n", source).f
    fix = "scores = q @ k.transpose(-2, -1) / math.sqrt(self.q.shape[-1] + kq)   # q and k: yours"
    assert in_your_names(f, fix) == \
        "S = Q @ K.transpose(-2, -1) / math.sqrt(self.q.shape[-1] + kq)   # q and k: yours"
    # query, key and value too; not a keyword argument's name, nor an attribute
    assert in_your_names(f, "out = f(query, key=value, x=key.value)") == "out = f(Q, key=V, x=K.value)"
    assert in_your_names(len, fix) == fix              # a built-in: no text to read
    # words are not code, and a line that defines the name a NameError was about keeps that name
    assert in_your_names(f, "run your function by hand on q and k") == "run your function by hand on q and k"
    from attnviz.check._catalog import ATTENTION_FIX_NAMES

    assert in_your_names(f, ATTENTION_FIX_NAMES["scores"]) == ATTENTION_FIX_NAMES["scores"]


# a hurried learner's step with no scores variable: the softmax takes them inline (replay 08C, session
# 29: the Fix said "scores = scores.masked_fill(...)", an UnboundLocalError, and the learner was stuck)
INLINE_STEP = """
def decode_step(model, tokens, cache):
    n_past = cache[0][0].size(2) if cache else 0
    hidden = model.embed(tokens, n_past)
    presents = []
    for li, blk in enumerate(model.blocks):
        a = blk.attention
        z = blk.norm_attention(hidden)
        qs = split_heads(a.W_q(z), model.n_heads)
        ks = split_heads(a.W_k(z), model.n_kv_heads)
        vs = split_heads(a.W_v(z), model.n_kv_heads)
        if cache:
            ks = torch.cat((cache[li][0], ks), dim=2)
            vs = torch.cat((cache[li][1], vs), dim=2)
        presents.append((ks, vs))
        g = model.n_heads // model.n_kv_heads
        ks_r, vs_r = ks.repeat_interleave(g, dim=1), vs.repeat_interleave(g, dim=1)
        att = (qs @ ks_r.transpose(-1, -2) / model.d_head ** 0.5).softmax(-1)
        hidden = hidden + a.W_o(merge_heads(att @ vs_r))
        hidden = hidden + blk.mlp(blk.norm_mlp(hidden))
    return model.unembed(hidden), presents
"""


def test_scores_written_inline_get_a_fix_that_replaces_the_line_that_holds_them(tmp_path):
    result = check_decoding_step(_load(tmp_path, "i", INLINE_STEP).decode_step)
    assert result.bug == "causal_mask_missing"
    code, _, comment = result.fix.partition("   #")
    assert code.startswith("scores = qs @ ks_r.transpose(-1, -2) / model.d_head ** 0.5; "
                           "scores = scores.masked_fill("), result.fix
    assert code.endswith("; att = scores.softmax(-1)") and "in place of your line att = ..." in comment
    fixed = _load(tmp_path, "i_fixed", _pasted(INLINE_STEP, "att = (qs", result.fix)).decode_step
    assert check_decoding_step(fixed).passed


def test_a_new_scale_goes_into_the_line_whose_scores_are_inline(tmp_path):
    inline = """
def attend(Q, K, V, mask=None):
    W = torch.softmax(Q @ K.mT, dim=-1)
    return W @ V
"""
    result = check_attention(_load(tmp_path, "s", inline).attend)
    code = result.fix.split("   #")[0]
    assert code == "W = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)", result.fix
    # pasted in place of the learner's line, the scale is right; the mask, left out, is what is left
    fixed = _load(tmp_path, "s_fixed", _pasted(inline, "W = torch.softmax", result.fix)).attend
    result = check_attention(fixed)
    assert result.bug == "mask_ignored"
    # its Fix, guarded by "if mask is not None", is one line still, and pasted makes the code pass
    assert result.fix.startswith("scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]); scores = "
                                 "scores.masked_fill(~mask, torch.finfo(scores.dtype).min) if mask is not "
                                 "None else scores; W = torch.softmax(scores, dim=-1)"), result.fix
    fixed = _load(tmp_path, "m_fixed", _pasted(inline, "W = torch.softmax", result.fix)).attend
    assert check_attention(fixed).passed


# 08H of the replay: the step keeps its position in a global between calls; the Fix's "past = ..."
# replaced the count's line, below the line that embeds at it: an UnboundLocalError, a round lost
GLOBAL_COUNTER = """
POSITION = 0

def decode_step(model, tokens, cache):
    global POSITION
    if cache is None:
        POSITION = 0
    mem = gpt.KVCache() if cache is None else cache.copy()
    hid = model.embed(tokens, POSITION)
    POSITION += tokens.shape[1]
    grp = model.n_heads // model.n_kv_heads
    for idx, block in enumerate(model.blocks):
        at = block.attention
        nx = block.norm_attention(hid)
        qq = split_heads(at.W_q(nx), model.n_heads)
        kk, vv = mem.append(idx, split_heads(at.W_k(nx), model.n_kv_heads),
                            split_heads(at.W_v(nx), model.n_kv_heads))
        kk, vv = kk.repeat_interleave(grp, dim=1), vv.repeat_interleave(grp, dim=1)
        mask = gpt.decoding_mask(qq.shape[-2], kk.shape[-2])
        ctx = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mask)
        hid = hid + at.W_o(merge_heads(ctx))
        hid = hid + block.mlp(block.norm_mlp(hid))
    return model.unembed(hid), mem
"""


def test_a_position_kept_between_calls_gets_a_fix_for_the_line_that_embeds(tmp_path):
    source = "from attnviz import gpt\n" + GLOBAL_COUNTER
    result = check_decoding_step(_load(tmp_path, "p", source).decode_step)
    assert result.bug == "state_outside_cache"
    code, _, comment = result.fix.partition("   #")
    assert code == "past = 0 if cache is None else cache.length; hid = model.embed(tokens, past)", result.fix
    assert comment.startswith(" in place of your line hid = model.embed(...)"), result.fix
    assert "in place of the count" not in comment, result.fix   # the embed line is the one it replaces
    fixed = _load(tmp_path, "p_fixed", _pasted(source, "hid = model.embed", result.fix)).decode_step
    assert check_decoding_step(fixed).passed


def test_a_position_misread_is_fixed_under_the_steps_own_name(tmp_path):
    source = DECODING.replace("past = 0 if cache is None else cache[0][0].shape[-2]",
                              "n_past = cache[0][0].shape[1] if cache else 0").replace(
        "model.embed(tokens, past)", "model.embed(tokens, n_past)").replace(
        "is_causal=True", "attn_mask=torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool)"
        ".tril(diagonal=key.shape[-2] - query.shape[-2])")
    result = check_decoding_step(_load(tmp_path, "n", source).decode_step)
    assert result.bug == "cached_length_misread"
    # their own line, the axis changed and their guard kept (replay 23's 08Z2: the catalog's guard, pasted
    # over theirs, raised KeyError on a cache made {} on the first call)
    assert result.fix.startswith("n_past = cache[0][0].shape[-2] if cache else 0   # in place of your"), \
        result.fix
    fixed = _load(tmp_path, "n_fixed", _pasted(source, "n_past = ", result.fix)).decode_step
    assert check_decoding_step(fixed).passed


def test_a_split_without_transpose_gets_one_line_for_all_three_in_the_learners_names(tmp_path):
    """The Fix split the queries in code and left the keys and values to its comment (replay 05E,
    session 29: a round lost)."""
    source = MODULE + """
    def forward(self, x, mask=None):
        B, T, C = x.shape
        queries = self.W_q(x).view(B, self.n_heads, T, self.d_k)
        keys = self.W_k(x).view(B, self.n_heads, T, self.d_k)
        values = self.W_v(x).view(B, self.n_heads, T, self.d_k)
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        out = (weights @ values).transpose(1, 2).contiguous().view(B, T, C)
        return self.W_o(out)
"""
    result = check_multi_head(_load(tmp_path, "e", source).MHA)
    assert result.bug == "heads_split_without_transpose"
    code = result.fix.split("   #")[0]
    assert code == ("queries, keys, values = (w(x).view(B, T, self.n_heads, self.d_k).transpose(1, 2) "
                    "for w in (self.W_q, self.W_k, self.W_v))"), result.fix
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("queries = "))
    lines[at:at + 3] = ["        " + code]
    assert check_multi_head(_load(tmp_path, "e_fixed", "\n".join(lines) + "\n").MHA).passed


def test_a_function_that_ends_without_a_return_is_told_to_return_its_last_name(tmp_path):
    """A replay's learner (04C, session 29) was shown the catalog's whole mask under "returned None"
    and had to work out the missing line; then the mask's Fix named mask, not their keep."""
    source = """
def my_padding_mask(lengths, n):
    pos = torch.arange(n)
    keep = (pos[None, :] <= lengths[:, None]).unsqueeze(1)
"""
    result = check_padding_mask(_load(tmp_path, "r", source).my_padding_mask)
    assert result.fix.startswith("return keep   #"), result.fix
    returned = source + "    return keep\n"
    result = check_padding_mask(_load(tmp_path, "r_returned", returned).my_padding_mask)
    assert result.bug == "padding_off_by_one" and result.fix.startswith("keep = ("), result.fix
    fixed = _load(tmp_path, "r_fixed", _pasted(returned, "keep = ", result.fix)).my_padding_mask
    assert check_padding_mask(fixed).passed
    # an attention whose output is never returned; a function that returns somewhere is left alone
    attention = "def attend(q, k, v, mask=None):\n    out = torch.softmax(q @ k.mT, -1) @ v\n"
    assert check_attention(_load(tmp_path, "r_a", attention).attend).fix.startswith("return out   #")
    early = "def attend(q, k, v, mask=None):\n    if mask is None:\n        return None\n    out = q\n"
    assert not check_attention(_load(tmp_path, "r_e", early).attend).fix.startswith("return out   #")


def test_the_notebooks_own_layer_called_in_forward_is_named_and_the_fix_is_the_learners_line(tmp_path):
    """A replay's learner (05J, session 29) called 05's global W_o (nn.Linear(8, 8)) in forward and
    was told of W_o applied to the heads before merging them, which their code did not do."""
    source = "W_o = nn.Linear(8, 8, bias=False)\n" + MODULE + """
    def forward(self, x, mask=None):
        b, n_, dm = x.shape
        q, k, v = (w(x).view(b, n_, self.n_heads, -1).transpose(1, 2) for w in (self.W_q, self.W_k, self.W_v))
        w = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            w = w.masked_fill(~mask, torch.finfo(w.dtype).min)
        heads_out = (w.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n_, dm)
        return W_o(heads_out)
"""
    result = check_multi_head(_load(tmp_path, "o", source).MHA)
    assert "calls the notebook's W_o, not self.W_o" in result.headline, repr(result)
    assert any("W_o = Linear(8, 8)" in line for line in result.observed), repr(result)
    assert not any("before merging" in line for line in result.observed), repr(result)
    assert result.fix.startswith("return self.W_o(heads_out)   #"), result.fix
    fixed = _load(tmp_path, "o_fixed", _pasted(source, "return W_o(", result.fix)).MHA
    assert check_multi_head(fixed).passed
    # with the notebook's d_k read as well (05J's second mistake), the Fix keeps the line, then says it
    both = _load(tmp_path, "o_both", source.replace("math.sqrt(self.d_k)", "math.sqrt(d_k)"))
    both.d_k = 4                       # as an earlier cell leaves it, not set in the learner's own cell
    result = check_multi_head(both.MHA)
    assert result.fix.startswith("return self.W_o(heads_out)   #"), result.fix
    assert "never the notebook's d_k" in result.fix, result.fix


def test_a_one_line_attention_gets_its_return_line_back_with_the_scale_then_the_mask(tmp_path):
    source = "def attend(q, k, v, mask=None):\n    return F.softmax(q @ k.transpose(-2, -1), dim=-1) @ v\n"
    result = check_attention(_load(tmp_path, "l", source).attend)
    code, _, comment = result.fix.partition("   #")
    assert code == "return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v", \
        result.fix
    assert comment.startswith(" in place of your return line"), result.fix
    scaled = _load(tmp_path, "l_scaled", _pasted(source, "return F.softmax", result.fix)).attend
    result = check_attention(scaled)
    assert result.bug == "mask_ignored"
    fixed = _load(tmp_path, "l_fixed", _pasted(source, "return F.softmax", result.fix)).attend
    assert check_attention(fixed).passed


@pytest.mark.parametrize("line", [
    "out = F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None)",   # replay 5's 02N4
    "out = F.scaled_dot_product_attention(q, k, v)",
])
def test_a_mask_fix_for_the_fused_function_hands_it_the_mask(tmp_path, line):
    """The Fix 'scores = scores.masked_fill(~mask, ...)' for code with no scores, only the fused
    function: an UnboundLocalError, and two rounds lost (session 30's replay 5)."""
    source = f"def attend(q, k, v, mask=None):\n    {line}\n    return out\n"
    result = check_attention(_load(tmp_path, "f", source).attend)
    fused = "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)"
    assert result.fix.startswith(fused + "   #"), result.fix
    fixed = _load(tmp_path, "f_fixed", _pasted(source, "out = F.", result.fix)).attend
    assert check_attention(fixed).passed


def test_a_module_never_imported_gets_its_import(tmp_path):
    """Notebook 05 never imports torch.nn.functional as F: 'run the cell that defines or imports F'
    sent replay 5's learners to a cell none has."""
    source = "def attend(q, k, v, mask=None):\n    return F.softmax(q @ k.mT, -1) @ v\n"
    module = _load(tmp_path, "i", source)
    del module.F                                    # as in a notebook that never imported it
    result = check_attention(module.attend)
    assert result.fix.startswith("import torch.nn.functional as F   #"), result.fix


def test_scores_masked_inline_get_the_new_scale_inside_and_the_new_fill_in_place_of_the_mask(tmp_path):
    """Replay 5 (session 30): 02N1's one-liner masks its inline scores with torch.where, so no scores
    line was found and the Fix 'scores = ...' replaced the whole line (the function returned None)."""
    every = "mask if mask is not None else torch.ones((), dtype=torch.bool)"
    where = (f"def attend(q, k, v, mask=None):\n    return torch.softmax(torch.where({every}, "
             "q @ k.mT / q.size(-1), torch.finfo(q.dtype).min), dim=-1) @ v\n")
    result = check_attention(_load(tmp_path, "w", where).attend)
    assert result.bug == "wrong_scale"
    scaled = f"torch.where({every}, q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), "
    assert result.fix.startswith("return torch.softmax(" + scaled), result.fix
    fixed = _load(tmp_path, "w_fixed", _pasted(where, "return torch", result.fix)).attend
    assert check_attention(fixed).passed
    # masked with 0 inline: the Fix takes the place of their masking, guarded for mask=None
    zero = (f"def attend(q, k, v, mask=None):\n    m = {every}\n"
            "    return (q @ k.mT / math.sqrt(q.shape[-1])).masked_fill(~m, 0).softmax(-1) @ v\n")
    result = check_attention(_load(tmp_path, "z", zero).attend)
    assert result.bug == "mask_fill_zero"
    ending = "if mask is not None else scores; return scores.softmax(-1) @ v"
    assert result.fix.split("   #")[0].endswith(ending), result.fix
    assert check_attention(_load(tmp_path, "z_fixed", _pasted(zero, "return (q", result.fix)).attend).passed


# Replay 5's steps (session 30): a list of [k, v] with einsum scores, a gpt.KVCache, a helper taking
# the scale. The Fix lines named the notebook's past_keys, new_cache, attention, normed, query and key.
LIST_STEP = """
def decode_step(model, tokens, cache):
    start = 0 if cache is None else cache[0][0].shape[2]
    hcur = model.embed(tokens, start)
    reps = model.n_heads // model.n_kv_heads
    states = []
    for layer_idx, blk in enumerate(model.blocks):
        z = blk.norm_attention(hcur)
        q_ = split_heads(blk.attention.W_q(z), model.n_heads)
        k_ = split_heads(blk.attention.W_k(z), model.n_kv_heads)
        v_ = split_heads(blk.attention.W_v(z), model.n_kv_heads)
        if cache is not None:
            k_ = torch.cat([cache[layer_idx][0], k_], dim=1)
            v_ = torch.cat([cache[layer_idx][1], v_], dim=1)
        states.append([k_, v_])
        kr, vr = k_.repeat_interleave(reps, dim=1), v_.repeat_interleave(reps, dim=1)
        sc = torch.einsum('bhqd,bhkd->bhqk', q_, kr) / math.sqrt(model.d_head)
        sc = sc.masked_fill(~gpt.decoding_mask(q_.shape[2], kr.shape[2]), torch.finfo(sc.dtype).min)
        hcur = hcur + blk.attention.W_o(merge_heads(torch.einsum('bhqk,bhkd->bhqd', sc.softmax(-1), vr)))
        hcur = hcur + blk.mlp(blk.norm_mlp(hcur))
    return model.unembed(hcur), states
"""

KVCACHE_STEP = """
def decode_step(model, tokens, cache):
    kvc = gpt.KVCache() if cache is None else cache.copy()
    stream = model.embed(tokens, kvc.length)
    g = model.n_heads // model.n_kv_heads
    for lyr, block in enumerate(model.blocks):
        att = block.attention
        nrm = block.norm_attention(stream)
        Q = split_heads(att.W_q(nrm), model.n_heads)
        K_new = split_heads(att.W_k(nrm), model.n_kv_heads)
        V_new = split_heads(att.W_v(nrm), model.n_kv_heads)
        if kvc.length:
            K_all = torch.cat([kvc.keys[lyr], K_new], dim=-2)
            V_all = torch.cat([kvc.values[lyr], V_new], dim=-2)
        else:
            K_all, V_all = K_new, V_new
        m = gpt.decoding_mask(Q.shape[-2], K_all.shape[-2])
        o = F.scaled_dot_product_attention(Q, K_all.repeat_interleave(g, dim=1),
                                           V_all.repeat_interleave(g, dim=1), attn_mask=m)
        stream = stream + att.W_o(merge_heads(o))
        stream = stream + block.mlp(block.norm_mlp(stream))
    return model.unembed(stream), kvc
"""

HELPER_STEP = """
def attend(qh, kh, vh, allowed, scale):
    s = (qh @ kh.transpose(-2, -1)) * scale
    s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
    return s.softmax(dim=-1) @ vh

def decode_step(model, tokens, cache):
    seen = cache[0][0].shape[-2] if cache else 0
    cur = model.embed(tokens, seen)
    rep = model.n_heads // model.n_kv_heads
    present = []
    for j, blk in enumerate(model.blocks):
        nx = blk.norm_attention(cur)
        qh = split_heads(blk.attention.W_q(nx), model.n_heads)
        pk = split_heads(blk.attention.W_k(nx), model.n_kv_heads)
        pv = split_heads(blk.attention.W_v(nx), model.n_kv_heads)
        if cache:
            pk = torch.cat([cache[j][0], pk], dim=-2)
            pv = torch.cat([cache[j][1], pv], dim=-2)
        present.append((pk, pv))
        allowed = gpt.decoding_mask(qh.shape[-2], pk.shape[-2])
        kr, vr = pk.repeat_interleave(rep, dim=1), pv.repeat_interleave(rep, dim=1)
        o = attend(qh, kr, vr, allowed, 1 / math.sqrt(model.d_head))
        cur = cur + blk.attention.W_o(merge_heads(o))
        cur = cur + blk.mlp(blk.norm_mlp(cur))
    return model.unembed(cur), present
"""


def _step(tmp_path, name, source):
    return _load(tmp_path, name, "from attnviz import gpt\n" + source).decode_step


def _pasted_over(source, lines_from, lines_to, fix):
    """``source`` with its lines from the one starting with ``lines_from`` to the one starting with
    ``lines_to`` replaced by the code part of ``fix``, indented as the first was."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(lines_from))
    end = next(i for i, line in enumerate(lines) if i >= start and line.strip().startswith(lines_to))
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    return "\n".join(lines[:start] + [indent + fix.split("   #")[0]] + lines[end + 1:]) + "\n"


def test_a_cache_joined_on_the_wrong_axis_gets_its_own_cat_lines(tmp_path):
    """08N1: the Fix named past_keys, key and cache[layer]; the step's are cache[layer_idx][0] and k_."""
    result = check_decoding_step(_step(tmp_path, "axis", LIST_STEP))
    assert result.bug == "cache_wrong_axis", repr(result)
    assert result.fix.startswith("k_, v_ = torch.cat([cache[layer_idx][0], k_], dim=-2), "
                                 "torch.cat([cache[layer_idx][1], v_], dim=-2)"), result.fix
    fixed = _pasted_over(LIST_STEP, "k_ = torch.cat", "v_ = torch.cat", result.fix)
    assert check_decoding_step(_step(tmp_path, "axis_fixed", fixed)).passed


def test_a_kvcache_step_that_never_appends_is_given_its_append(tmp_path):
    """08N2: a gpt.KVCache step joining with torch.cat and never appending was given the list form
    new_cache.append((K_all, V_all)), then return logits, new_cache: stuck six rounds."""
    result = check_decoding_step(_step(tmp_path, "kv", KVCACHE_STEP))
    assert result.bug == "cache_not_appended", repr(result)
    assert result.fix.startswith("K_all, V_all = kvc.append(lyr, K_new, V_new)   # in place of your lines"), \
        result.fix
    assert "and any if/else around them" in result.fix, result.fix
    fixed = _pasted_over(KVCACHE_STEP, "if kvc.length:", "K_all, V_all = K_new, V_new", result.fix)
    assert check_decoding_step(_step(tmp_path, "kv_fixed", fixed)).passed


def test_a_step_returning_the_cache_it_was_given_is_told_to_return_its_own(tmp_path):
    source = KVCACHE_STEP.replace("""        if kvc.length:
            K_all = torch.cat([kvc.keys[lyr], K_new], dim=-2)
            V_all = torch.cat([kvc.values[lyr], V_new], dim=-2)
        else:
            K_all, V_all = K_new, V_new""", "        K_all, V_all = kvc.append(lyr, K_new, V_new)").replace(
        "return model.unembed(stream), kvc", "return model.unembed(stream), cache")
    result = check_decoding_step(_step(tmp_path, "given", source))
    assert result.bug == "cache_not_appended", repr(result)
    assert result.fix.startswith("return model.unembed(stream), kvc   # the cache you made"), result.fix
    fixed = _pasted(source, "return model.unembed", result.fix)
    assert check_decoding_step(_step(tmp_path, "given_fixed", fixed)).passed


def test_keys_and_values_split_into_query_heads_get_the_steps_own_layer_and_normed(tmp_path):
    """08N3: the Fix named the notebook's attention and normed (cell 11's globals), read from the step."""
    source = HELPER_STEP.replace("(nx), model.n_kv_heads)", "(nx), model.n_heads)")
    result = check_decoding_step(_step(tmp_path, "split", source))
    assert result.fix.startswith("pk, pv = split_heads(blk.attention.W_k(nx), model.n_kv_heads), "
                                 "split_heads(blk.attention.W_v(nx), model.n_kv_heads)"), result.fix
    fixed = _pasted_over(source, "pk = split_heads", "pv = split_heads", result.fix)
    assert check_decoding_step(_step(tmp_path, "split_fixed", fixed)).passed


def test_a_scale_handed_to_a_helper_is_fixed_where_it_is_computed(tmp_path):
    """08N6: the Fix scores = query @ key ... / sqrt(d_head), pasted into the helper, read the notebook's
    query and key; the scale is computed in the call."""
    source = HELPER_STEP.replace("math.sqrt(model.d_head)", "math.sqrt(model.d_model)")
    result = check_decoding_step(_step(tmp_path, "helper", source))
    assert result.bug == "scale_by_d_model", repr(result)
    assert result.fix.startswith("o = attend(qh, kr, vr, allowed, 1 / math.sqrt(model.d_head))   #"), \
        result.fix
    fixed = _pasted(source, "o = attend(", result.fix)
    assert check_decoding_step(_step(tmp_path, "helper_fixed", fixed)).passed


def test_keys_cached_twice_get_the_steps_own_append_line(tmp_path):
    source = HELPER_STEP.replace("present.append((pk, pv))", "present.append((pk, pk))")
    result = check_decoding_step(_step(tmp_path, "twice", source))
    assert result.bug == "values_from_cached_keys", repr(result)
    assert result.fix.startswith("present.append((pk, pv))   # in place of your line"), result.fix
    fixed = _pasted(source, "present.append", result.fix)
    assert check_decoding_step(_step(tmp_path, "twice_fixed", fixed)).passed


# Replay 5's modules (session 30): the split Fix named the unsplit projection q (or the split qq) and
# the notebook's n_heads and d_k; W_o left out got the Observed line about layers of one's own.
INTERLEAVED = MODULE + """
    def forward(self, x, mask=None):
        bb, nn_, dd = x.shape
        Qs = self.W_q(x).view(bb, nn_, self.d_k, self.n_heads).permute(0, 3, 1, 2)
        Ks = self.W_k(x).view(bb, nn_, self.d_k, self.n_heads).permute(0, 3, 1, 2)
        Vs = self.W_v(x).view(bb, nn_, self.d_k, self.n_heads).permute(0, 3, 1, 2)
        logits = torch.einsum('bhid,bhjd->bhij', Qs, Ks) / math.sqrt(self.d_k)
        if mask is not None:
            logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        mix = torch.einsum('bhij,bhjd->bhid', logits.softmax(dim=-1), Vs)
        mix = mix.permute(0, 2, 3, 1).reshape(bb, nn_, dd)
        return self.W_o(mix)
"""

CHUNKED = MODULE + """
    def _heads(self, t):
        return torch.stack(t.chunk(self.n_heads, dim=1), dim=1)

    def forward(self, x, mask=None):
        qq, kk, vv = self._heads(self.W_q(x)), self._heads(self.W_k(x)), self._heads(self.W_v(x))
        sc = torch.matmul(qq, kk.transpose(-1, -2)) / math.sqrt(self.d_k)
        if mask is not None:
            sc = sc.masked_fill(~mask, torch.finfo(sc.dtype).min)
        return self.W_o(torch.cat(torch.matmul(torch.softmax(sc, dim=-1), vv).unbind(dim=1), dim=-1))
"""

NO_W_O = MODULE + """
    def forward(self, x, mask=None):
        Qall, Kall, Vall = self.W_q(x), self.W_k(x), self.W_v(x)
        outs = []
        for h in range(self.n_heads):
            sl = slice(h * self.d_k, (h + 1) * self.d_k)
            a = Qall[..., sl] @ Kall[..., sl].transpose(-2, -1) / self.d_k
            if mask is not None:
                a = a.masked_fill(~mask[:, 0] if mask.dim() == 4 else ~mask, torch.finfo(a.dtype).min)
            outs.append(a.softmax(-1) @ Vall[..., sl])
        return torch.cat(outs, dim=-1)
"""


def test_heads_split_interleaved_get_one_line_in_the_modules_names_then_the_merge(tmp_path):
    result = check_multi_head(_load(tmp_path, "inter", INTERLEAVED).MHA)
    assert result.bug == "heads_split_interleaved", repr(result)
    assert result.fix.startswith("Qs, Ks, Vs = (w(x).view(bb, nn_, self.n_heads, self.d_k).transpose(1, 2) "
                                 "for w in (self.W_q, self.W_k, self.W_v))   #"), result.fix
    split = _pasted_over(INTERLEAVED, "Qs = self.W_q", "Vs = self.W_v", result.fix)
    result = check_multi_head(_load(tmp_path, "inter_split", split).MHA)
    assert result.bug == "heads_merged_interleaved", repr(result)
    assert result.fix.startswith("mix = mix.transpose(1, 2).reshape(bb, nn_, dd)   #"), result.fix
    merged = _pasted(split, "mix = mix.permute", result.fix)
    assert check_multi_head(_load(tmp_path, "inter_merged", merged).MHA).passed


def test_heads_cut_along_the_positions_in_a_helper_get_a_split_line_in_the_modules_names(tmp_path):
    result = check_multi_head(_load(tmp_path, "chunk", CHUNKED).MHA)
    assert result.bug == "heads_split_along_positions", repr(result)
    assert result.fix.startswith("qq, kk, vv = (w(x).view(x.shape[0], x.shape[1], self.n_heads, self.d_k)"), \
        result.fix
    fixed = _pasted(CHUNKED, "qq, kk, vv = ", result.fix)
    assert check_multi_head(_load(tmp_path, "chunk_fixed", fixed).MHA).passed


def test_w_o_left_out_gets_the_modules_return_line_through_w_o(tmp_path):
    """05N1: W_o left out and the scores divided by d_k; told of layers of one's own (a list of linears,
    a c_attn layer) it did not have, and given q, k, v = ...; ...; return self.W_o(merged)."""
    result = check_multi_head(_load(tmp_path, "no_w_o", NO_W_O).MHA)
    assert "never uses self.W_o" in result.headline, repr(result)
    assert not any("layers of your own" in line for line in result.observed), repr(result)
    assert result.fix.startswith("return self.W_o(torch.cat(outs, dim=-1))   #"), result.fix
    fixed = _pasted(NO_W_O, "return torch.cat(outs", result.fix)
    result = check_multi_head(_load(tmp_path, "no_w_o_fixed", fixed).MHA)
    assert result.bug == "wrong_scale", repr(result)      # the one mistake left
    scaled = fixed.replace("/ self.d_k", "/ math.sqrt(self.d_k)")
    assert check_multi_head(_load(tmp_path, "no_w_o_scaled", scaled).MHA).passed


# Replay 5's 02 and 04 attempts (session 30), on the lines the Fix lines could not name: einsum with
# every axis written, a scale and a softmax in helpers, a padding mask returned as an expression.
EINSUM_4D = """
def my_attention(q, k, v, mask=None):
    sim = torch.einsum('bhqd,bhkd->bhqk', q, k) / math.sqrt(q.shape[-1])
    attn_p = sim.softmax(dim=-1)
    if mask is not None:
        attn_p = attn_p.masked_fill(~mask, 0.0)
    ctx = torch.einsum('bhqk,bhkd->bhqd', attn_p, v)
    return ctx, attn_p
"""

HELPERS = """
def _compare(a, b):
    return a @ b.transpose(-2, -1)

def _normalise(s):
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)

def my_attention(q, k, v, mask=None):
    raw = _compare(q, k) / math.sqrt(v.shape[-1])
    if mask is not None:
        raw = raw.masked_fill(~mask, torch.finfo(raw.dtype).min)
    probs = _normalise(raw)
    return probs @ v, probs
"""


def test_an_einsum_with_every_axis_written_then_a_mask_after_the_softmax(tmp_path):
    """02N2: 'run your function by hand ...' for the einsum, then a masked_fill in names it did not
    have, unguarded: six rounds for two mistakes."""
    result = check_attention(_load(tmp_path, "e4", EINSUM_4D).my_attention)
    expected = "sim = torch.einsum('...qd,...kd->...qk', q, k) / math.sqrt(q.shape[-1])   #"
    assert result.fix.startswith(expected), result.fix
    assert "the same in your other einsum" in result.fix, result.fix
    source = _pasted(EINSUM_4D, "sim = torch.einsum", result.fix)
    source = source.replace("'bhqk,bhkd->bhqd'", "'...qk,...kd->...qd'")         # "the same in your other"
    result = check_attention(_load(tmp_path, "e4_any", source).my_attention)
    assert result.bug == "mask_after_softmax", repr(result)
    expected = "sim = sim.masked_fill(~mask, torch.finfo(sim.dtype).min) if mask is not None else sim   #"
    assert result.fix.startswith(expected), result.fix
    source = _pasted_over(source, "attn_p = sim.softmax", "attn_p = attn_p.masked_fill", result.fix)
    source = source.replace("    ctx = ", "    attn_p = sim.softmax(dim=-1)\n    ctx = ")
    assert check_attention(_load(tmp_path, "e4_fixed", source).my_attention).passed


def test_a_scale_and_a_softmax_in_helpers_are_fixed_on_the_learners_own_lines(tmp_path):
    """02N5: the Fix 'scores = q @ k.transpose(...) / ...' for a function whose scores come from a
    helper, raw = _compare(q, k) / ..., pasted over that line, raised UnboundLocalError."""
    result = check_attention(_load(tmp_path, "h", HELPERS).my_attention)
    assert result.bug == "wrong_scale", repr(result)
    assert result.fix.startswith("raw = _compare(q, k) / math.sqrt(q.shape[-1])   # in place of your line"), \
        result.fix
    source = _pasted(HELPERS, "raw = _compare", result.fix)
    result = check_attention(_load(tmp_path, "h_scaled", source).my_attention)
    assert result.bug == "softmax_overflow", repr(result)
    expected = "e = torch.exp(s - s.amax(-1, keepdim=True))   # in place of your line"
    assert result.fix.startswith(expected), result.fix
    source = _pasted(source, "e = torch.exp", result.fix)
    assert check_attention(_load(tmp_path, "h_fixed", source).my_attention).passed


def test_a_padding_mask_returned_as_an_expression_gets_a_return_line(tmp_path):
    """04N3: 'mask = ...' pasted over the line that set real left 'return real.unsqueeze(-1)' reading
    the notebook's own real."""
    source = """
def my_padding_mask(lengths, n):
    real = torch.arange(n) < lengths.unsqueeze(-1)
    return real.unsqueeze(-1)
"""
    result = check_padding_mask(_load(tmp_path, "pm", source).my_padding_mask)
    # their own return line with the one token that is wrong changed (found by trying changes, _repair)
    expected = ("return real.unsqueeze(1)   # in place of your line: unsqueeze(1) where you wrote "
                "unsqueeze(-1)")
    assert result.fix == expected, result.fix
    fixed = _pasted(source, "return real", result.fix)
    assert check_padding_mask(_load(tmp_path, "pm_fixed", fixed).my_padding_mask).passed


def test_keys_not_transposed_get_the_learners_line_with_the_transpose(tmp_path):
    """02N3: torch.matmul(q, k) raised on every input whose n_k is not d_k, and the Fix was 'run your
    function by hand on tensors of these shapes and read the error's last line'."""
    source = """
def my_attention(q, k, v, mask=None):
    energy = torch.matmul(q, k) / math.sqrt(k.size(-1))
    if mask is not None:
        energy = energy.masked_fill(~mask, torch.finfo(energy.dtype).min)
    alpha = F.softmax(energy, dim=-1)
    return torch.matmul(alpha, v), alpha
"""
    result = check_attention(_load(tmp_path, "kt", source).my_attention)
    expected = "energy = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))   # in place of your"
    assert result.fix.startswith(expected), result.fix
    fixed = _pasted(source, "energy = torch.matmul", result.fix)
    assert check_attention(_load(tmp_path, "kt_fixed", fixed).my_attention).passed


# Replay 7's new learners (this session): a block read by index, a repeat under names of its own, a
# causal mask whose parameter is called size and built in place, a NumPy-style softmax of one's own, a
# float head width set in __init__.
BY_INDEX = HELPER_STEP.replace("for j, blk in enumerate(model.blocks):",
                               "for j in range(len(model.blocks)):\n        lay = model.blocks[j]")
BY_INDEX = BY_INDEX.replace("blk.", "lay.")


def test_a_block_read_by_index_gets_its_own_name(tmp_path):
    source = BY_INDEX.replace("cur = cur + lay.mlp(lay.norm_mlp(cur))", "cur = lay.mlp(lay.norm_mlp(cur))")
    result = check_decoding_step(_step(tmp_path, "idx", source))
    assert result.fix.startswith("cur = cur + lay.mlp(lay.norm_mlp(cur))   #"), result.fix
    fixed = _pasted(source, "cur = lay.mlp", result.fix)
    assert check_decoding_step(_step(tmp_path, "idx_fixed", fixed)).passed
    # a Fix line's block, pasted where the step has none: what it stands for, and the step's own name
    pasted = source.replace("cur = lay.mlp(lay.norm_mlp(cur))", "cur = cur + block.mlp(block.norm_mlp(cur))")
    result = check_decoding_step(_step(tmp_path, "idx_block", pasted))
    assert result.fix.startswith("block in a Fix line means your block"), result.fix
    assert result.fix.endswith("(in your code: lay)"), result.fix


def test_keys_tiled_under_names_of_their_own_get_the_repeat_under_those_names(tmp_path):
    """08M4: cles_r = cles.repeat(1, group, 1, 1); the Fix 'cles, valeurs = cles.repeat_interleave(...)'
    replaced the lines that set cles_r, which the attention still read: then 'run the cell that defines
    or imports cles_r'."""
    source = HELPER_STEP.replace(
        "kr, vr = pk.repeat_interleave(rep, dim=1), pv.repeat_interleave(rep, dim=1)",
        "pkr = pk.repeat(1, rep, 1, 1)\n        pvr = pv.repeat(1, rep, 1, 1)").replace(
        "o = attend(qh, kr, vr,", "o = attend(qh, pkr, pvr,")
    result = check_decoding_step(_step(tmp_path, "tile", source))
    assert result.bug == "kv_heads_repeated_not_interleaved", repr(result)
    # in the step's own name for the group, rep (it was the catalog's group, pasted as rep by hand), and
    # their own two lines, each repeated in place (replay 22's 08Y2)
    expected = "pkr = pk.repeat_interleave(rep, dim=1); pvr = pv.repeat_interleave(rep, dim=1)   # in place"
    assert result.fix.startswith(expected), result.fix
    pasted = _pasted_over(source, "pkr = pk.repeat", "pvr = pv.repeat", result.fix)
    assert check_decoding_step(_step(tmp_path, "tile_fixed", pasted)).passed
    # pasted under the names the catalog's line had: the step reads pkr, set nowhere now
    dangling = _pasted_over(source, "pkr = pk.repeat", "pvr = pv.repeat",
                            "pk, pv = pk.repeat_interleave(rep, dim=1), pv.repeat_interleave(rep, dim=1)")
    result = check_decoding_step(_step(tmp_path, "tile_dangling", dangling))
    assert result.fix.startswith("use pk in place of pkr"), result.fix


def test_a_causal_mask_built_in_place_under_another_parameter_name_gets_a_return_line(tmp_path):
    """04M1/04M2: the Fix's bare expression read the notebook's n (the parameter is size), and pasted as
    the value of the first assignment the lines after it (triu_, unsqueeze) undid it."""
    source = """
def my_causal_mask(size):
    blocked = torch.ones(size, size, dtype=torch.bool)
    blocked.triu_(1)
    return blocked.unsqueeze(0)
"""
    result = check_causal_mask(_load(tmp_path, "cm", source).my_causal_mask)
    expected = "return torch.ones(size, size, dtype=torch.bool).tril()   # in place of your return line"
    assert result.fix.startswith(expected), result.fix
    fixed = _pasted(source, "return blocked", result.fix)
    assert check_causal_mask(_load(tmp_path, "cm_fixed", fixed).my_causal_mask).passed


def test_a_softmax_of_ones_own_and_a_float_head_width_get_the_learners_names(tmp_path):
    source = """
def softmax(x, axis):
    e = torch.exp(x - x.amax(axis, keepdim=True))
    return e / e.sum(axis, keepdim=True)

def my_attention(q, k, v, mask=None):
    logits_qk = q @ torch.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits_qk = logits_qk.masked_fill(~mask, torch.finfo(logits_qk.dtype).min)
    p_attn = softmax(logits_qk, axis=-1)
    return p_attn, p_attn @ v
"""
    result = check_attention(_load(tmp_path, "sm", source).my_attention)
    assert result.fix.startswith("return p_attn @ v, p_attn   #"), result.fix
    fixed = _pasted(source, "return p_attn", result.fix)
    assert check_attention(_load(tmp_path, "sm_fixed", fixed).my_attention).passed
    module = MODULE.replace("self.n_heads, self.d_k = n_heads, d_model // n_heads",
                            "self.n_heads = n_heads\n        self.d_k = d_model / n_heads")
    module += MULTI_HEAD[len(MODULE):].replace("scores = torch.matmul(query, key.mT)",
                                               "scores = torch.matmul(query, key.mT) / math.sqrt(self.d_k)")
    result = check_multi_head(_load(tmp_path, "fw", module).MHA)
    assert result.fix.startswith("self.d_k = d_model // n_heads   # in place of your line"), result.fix
    fixed = _pasted(module, "self.d_k = d_model / n_heads", result.fix)
    assert check_multi_head(_load(tmp_path, "fw_fixed", fixed).MHA).passed


def test_an_input_changed_in_place_and_a_cast_get_the_learners_own_lines(tmp_path):
    """02M4: q.div_ then scores.float().softmax(-1); the dtype Fix was the mask line, already right."""
    source = """
def my_attention(q, k, v, mask=None):
    echelle = math.sqrt(q.shape[-1])
    requetes = q.div_(echelle)
    scores_bruts = requetes @ k.transpose(-2, -1)
    if mask is not None:
        scores_bruts = scores_bruts.masked_fill(~mask, torch.finfo(scores_bruts.dtype).min)
    poids = scores_bruts.float().softmax(dim=-1)
    return poids @ v, poids
"""
    result = check_attention(_load(tmp_path, "ip", source).my_attention)
    assert result.bug == "modifies_inputs", repr(result)
    assert result.fix.startswith("requetes = q.div(echelle)   # in place of your line"), result.fix
    source = _pasted(source, "requetes = q.div_", result.fix)
    result = check_attention(_load(tmp_path, "ip_cast", source).my_attention)
    assert result.bug == "dtype_changed", repr(result)
    assert result.fix.startswith("poids = scores_bruts.softmax(dim=-1)   # in place of your line"), result.fix
    assert not any("A tensor built inside your code" in line for line in result.observed), repr(result)
    fixed = _pasted(source, "poids = scores_bruts", result.fix)
    assert check_attention(_load(tmp_path, "ip_fixed", fixed).my_attention).passed


def test_casts_on_two_lines_are_both_named_in_the_fix(tmp_path):
    """Replay 19's 02V4 (stuck): softmax of pontszam.double(), then suly @ v.double(). The Fix was the
    catalog's `return suly @ v`, which left the float64 weights to meet float32 values (and dropped the
    weights from the return). Now: the first cast's line without it, and the second line named."""
    source = """
def my_attention(q, k, v, mask=None):
    pontszam = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        pontszam = pontszam.masked_fill(~mask, torch.finfo(pontszam.dtype).min)
    suly = F.softmax(pontszam.double(), dim=-1)
    kimenet = suly @ v.double()
    return kimenet, suly
"""
    result = check_attention(_load(tmp_path, "two_casts", source).my_attention)
    assert result.bug == "dtype_changed", repr(result)
    said = ("suly = F.softmax(pontszam, dim=-1)   # in place of your line: no cast, so all stays in the "
            "inputs' dtype; take the cast out of 'kimenet = suly @ v.double()' as well")
    assert result.fix == said, result.fix
    fixed = _pasted(source, "suly = F.softmax", result.fix).replace("v.double()", "v")
    assert check_attention(_load(tmp_path, "two_casts_fixed", fixed).my_attention).passed
    first = "q, k, v = q.double(), k.double(), v.double()"
    every = source.replace("mask=None):\n", f"mask=None):\n    {first}\n", 1)
    result = check_attention(_load(tmp_path, "three_casts", every).my_attention)
    assert result.fix.endswith(f"take out your line '{first}'"), result.fix


def test_two_mistakes_one_of_them_known_get_that_bugs_fix_in_the_learners_own_line(tmp_path):
    """Replay 19's 02V4 (round 3): "two mistakes, it seems, and one of them is wrong scale" gave the
    catalog's scores line in the learner's names, which dropped the [b] of their loop over the batch. That
    verdict's Fix is now the learner's own line with the root changed, as the wrong_scale verdict's is."""
    source = """
def my_attention(q, k, v, mask=None):
    pontszam = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(v.shape[-1])
    if mask is not None:
        pontszam = pontszam.masked_fill(~mask, 0.0)
    suly = torch.softmax(pontszam, dim=-1)
    return suly @ v, suly
"""
    result = check_attention(_load(tmp_path, "two_mistakes", source).my_attention)
    said = "two mistakes, it seems, and one of them is wrong scale"
    assert result.bug is None and said in result.headline, result
    assert result.fix == ("pontszam = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])   # in "
                          "place of your line: the root of q.shape[-1], not v.shape[-1]"), result.fix


def test_heads_folded_into_the_batch_get_a_merge_that_unfolds_them_first(tmp_path):
    """Replay 19's 05V4 (stuck): heads split as (batch * h, n, d_k) for torch.bmm, then merged by a plain
    view. The Fix, umphumela.transpose(1, 2).reshape(...), swapped positions and features of that 3-D
    tensor, three rounds in a row. Now the heads come out of the batch axis first, as the learner split
    them."""
    source = MODULE + """
    def forward(self, x, mask=None):
        iqoqo, n, d_model = x.shape
        h, d_k = self.n_heads, self.d_k

        def hlukanisa(t):
            return t.view(iqoqo, n, h, d_k).transpose(1, 2).reshape(iqoqo * h, n, d_k)

        umbuzo, ukhiye, inani = hlukanisa(self.W_q(x)), hlukanisa(self.W_k(x)), hlukanisa(self.W_v(x))
        amaphuzu = torch.bmm(umbuzo, ukhiye.transpose(1, 2)) / math.sqrt(d_k)
        if mask is not None:
            amaphuzu = amaphuzu.view(iqoqo, h, n, n).masked_fill(~mask, torch.finfo(x.dtype).min)
            amaphuzu = amaphuzu.view(iqoqo * h, n, n)
        umphumela = torch.bmm(F.softmax(amaphuzu, dim=-1), inani)
        umphumela = umphumela.view(iqoqo, n, d_model)
        return self.W_o(umphumela)
"""
    result = check_multi_head(_load(tmp_path, "folded", source).MHA)
    assert result.bug == "heads_merged_without_transpose", repr(result)
    said = ("umphumela = umphumela.view(iqoqo, h, n, d_k).transpose(1, 2).reshape(iqoqo, n, d_model)   # in "
            "place of your line: the heads out of the batch axis")
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "umphumela = umphumela.view", result.fix)
    assert check_multi_head(_load(tmp_path, "folded_fixed", fixed).MHA).passed


def test_a_minus_inf_fill_in_a_static_helper_gets_the_helpers_own_line(tmp_path):
    """Replay 19's 05V2 (rounds 3 to 5): a @staticmethod helper _dikkat(sorgu, anahtar, deger, maske) filled
    its scores (skorlar) with -inf. The Fix was the catalog's line in forward's names, scores = ... ~mask:
    pasted into the helper, an UnboundLocalError and then a NameError. A static method's function is the
    learner's own, and the Fix is now their line with the dtype's minimum in place of -inf."""
    source = MODULE + """
    @staticmethod
    def _dikkat(sorgu, anahtar, deger, maske=None):
        skorlar = sorgu @ anahtar.transpose(-2, -1) / math.sqrt(sorgu.shape[-1])
        if maske is not None:
            skorlar = skorlar.masked_fill(~maske, float("-inf"))
        return torch.softmax(skorlar, dim=-1) @ deger

    def forward(self, x, mask=None):
        parti, uzunluk, d_model = x.shape
        sorgu, anahtar, deger = (w(x).view(parti, uzunluk, self.n_heads, self.d_k).transpose(1, 2)
                                 for w in (self.W_q, self.W_k, self.W_v))
        cikti = self._dikkat(sorgu, anahtar, deger, mask)
        return self.W_o(cikti.transpose(1, 2).contiguous().view(parti, uzunluk, d_model))
"""
    result = check_multi_head(_load(tmp_path, "static", source).MHA)
    assert result.bug == "nan_on_fully_masked_row", repr(result)
    said = "skorlar = skorlar.masked_fill(~maske, torch.finfo(skorlar.dtype).min)   # in place of your line"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "skorlar = skorlar.masked_fill", result.fix)
    assert check_multi_head(_load(tmp_path, "static_fixed", fixed).MHA).passed


def test_weights_times_the_keys_then_a_scale_on_queries_and_keys_get_the_modules_own_lines(tmp_path):
    """05M2: told of 'layers of your own' it did not have, then given a scores line with a third
    division, for a module that multiplied the weights by the keys and divided q and k each by √d_k."""
    module = MODULE + """
    def forward(self, x, mask=None):
        b, t, d = x.shape
        def fold(u):
            return u.view(b, t, self.n_heads, self.d_k).transpose(1, 2).reshape(b * self.n_heads, t, self.d_k)
        anfragen = fold(self.W_q(x)) / math.sqrt(self.d_k)
        schluessel = fold(self.W_k(x)) / math.sqrt(self.d_k)
        werte = fold(self.W_v(x))
        bewertung = torch.bmm(anfragen, schluessel.transpose(1, 2))
        if mask is not None:
            bewertung = bewertung.masked_fill(~mask, torch.finfo(bewertung.dtype).min)
        gewichte = torch.softmax(bewertung, dim=-1)
        zusammen = torch.bmm(gewichte, schluessel)
        return self.W_o(zusammen.view(b, self.n_heads, t, self.d_k).transpose(1, 2).reshape(b, t, d))
"""
    result = check_multi_head(_load(tmp_path, "wk", module).MHA)
    assert not any("layers of your own" in line for line in result.observed), repr(result)
    assert result.fix.startswith("zusammen = torch.bmm(gewichte, werte)   # in place of your"), result.fix
    module = _pasted(module, "zusammen = torch.bmm", result.fix)
    result = check_multi_head(_load(tmp_path, "wk_values", module).MHA)
    assert result.fix.startswith("schluessel = fold(self.W_k(x))   # in place of your line"), result.fix
    fixed = _pasted(module, "schluessel = fold", result.fix)
    assert check_multi_head(_load(tmp_path, "wk_fixed", fixed).MHA).passed


# 08M3's step, right: one token at a time through every layer, at its own position
TOKEN_LOOP_STEP = """
def decode_step(model, tokens, cache):
    kv = [] if cache is None else [list(pair) for pair in cache]
    start = 0 if cache is None else cache[0][0].shape[-2]
    g = model.n_heads // model.n_kv_heads
    outs = []
    for t in range(tokens.shape[1]):
        y = model.embed(tokens[:, t:t + 1], start + t)
        for j in range(len(model.blocks)):
            blk = model.blocks[j]
            yn = blk.norm_attention(y)
            qt = split_heads(blk.attention.W_q(yn), model.n_heads)
            kt = split_heads(blk.attention.W_k(yn), model.n_kv_heads)
            vt = split_heads(blk.attention.W_v(yn), model.n_kv_heads)
            if j < len(kv):
                kv[j] = [torch.cat([kv[j][0], kt], dim=-2), torch.cat([kv[j][1], vt], dim=-2)]
            else:
                kv.append([kt, vt])
            ctx = F.scaled_dot_product_attention(qt, kv[j][0].repeat_interleave(g, 1),
                                                 kv[j][1].repeat_interleave(g, 1))
            y = y + blk.attention.W_o(merge_heads(ctx))
            y = y + blk.mlp(blk.norm_mlp(y))
        outs.append(model.unembed(y))
    return torch.cat(outs, dim=1), [tuple(p) for p in kv]
"""


def test_a_token_loop_embedding_every_token_at_one_position_gets_its_own_line(tmp_path):
    """08M3: the Fix 'y = model.embed(tokens, past)' embedded the whole chunk inside a loop over its
    tokens, under a name the step did not have (its position is start)."""
    source = TOKEN_LOOP_STEP.replace("start + t)", "start)")
    result = check_decoding_step(_step(tmp_path, "loop", source))
    assert result.bug == "positions_not_advanced", repr(result)
    assert result.fix.startswith("y = model.embed(tokens[:, t:t + 1], start + t)   # in place of your"), \
        result.fix
    fixed = _pasted(source, "y = model.embed(", result.fix)
    assert check_decoding_step(_step(tmp_path, "loop_fixed", fixed)).passed


BUFFER_STEP = """
def decode_step(model, tokens, cache):
    b, n_new = tokens.shape
    if cache is None:
        shape = (model.n_layers, b, model.n_kv_heads, model.max_len, model.d_head)
        kbuf = torch.zeros(shape, dtype=torch.bfloat16)
        vbuf = torch.zeros(shape, dtype=torch.bfloat16)
        pos = 0
    else:
        kbuf, vbuf, pos = cache['k'].clone(), cache['v'].clone(), cache['pos']
    end = pos + n_new
    x = model.embed(tokens, pos)
    g = model.n_heads // model.n_kv_heads
    allowed = gpt.decoding_mask(n_new, end)
    for i, block in enumerate(model.blocks):
        xn = block.norm_attention(x)
        q = split_heads(block.attention.W_q(xn), model.n_heads)
        kbuf[i, :, :, pos:end] = split_heads(block.attention.W_k(xn), model.n_kv_heads)
        vbuf[i, :, :, pos:end] = split_heads(block.attention.W_v(xn), model.n_kv_heads)
        K = kbuf[i, :, :, :end].float().repeat_interleave(g, dim=1)
        V = vbuf[i, :, :, :end].float().repeat_interleave(g, dim=1)
        s = q @ K.transpose(-2, -1) / math.sqrt(model.d_head)
        s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        x = x + block.attention.W_o(merge_heads(s.softmax(-1) @ V))
        x = x + block.mlp(block.norm_mlp(x))
    return model.unembed(x), {'k': kbuf, 'v': vbuf, 'pos': end}
"""


def test_a_cache_of_half_precision_buffers_is_read_and_its_own_lines_are_the_fix(tmp_path):
    """08M2: preallocated float16 buffers in a dict were told "no tensor in your cache holds a layer's
    keys or values" (the cache was compared within 1e-4, tighter than float16 rounds), with list-form
    Fix lines; bfloat16 buffers got the catalog's K, V = K.float(), V.float(), not the lines that make
    them."""
    result = check_decoding_step(_step(tmp_path, "bf16", BUFFER_STEP))
    assert result.bug == "cache_low_precision", repr(result)
    assert result.fix.startswith(
        "kbuf = torch.zeros(shape); vbuf = torch.zeros(shape)   # in place of your two lines"), result.fix
    fixed = _pasted_over(BUFFER_STEP, "kbuf = torch.zeros(", "vbuf = torch.zeros(", result.fix)
    assert check_decoding_step(_step(tmp_path, "bf16_fixed", fixed)).passed
    # float16 rounds within the check's tolerance: it passes, and the note names the cache's type
    half = check_decoding_step(_step(tmp_path, "f16", BUFFER_STEP.replace("bfloat16", "float16")))
    assert half.passed, repr(half)
    assert "your cache keeps float16 tensors (cache['k'][0] among them)" in str(half), str(half)


def test_a_buffer_cache_whose_position_never_moves_on_gets_its_return_line(tmp_path):
    """08M2: a dict of buffers returned with 'pos': pos was given the list line new_cache.append((K, V)),
    which it had no place for (NameError), then the same verdict: stuck six rounds."""
    source = BUFFER_STEP.replace(", dtype=torch.bfloat16", "").replace("'pos': end}", "'pos': pos}")
    result = check_decoding_step(_step(tmp_path, "pointer", source))
    assert result.bug == "cache_not_appended", repr(result)
    assert result.fix.startswith("return model.unembed(x), {'k': kbuf, 'v': vbuf, 'pos': end}   # in place "
                                 "of your return line"), result.fix
    fixed = _pasted(source, "return model.unembed(x)", result.fix)
    assert check_decoding_step(_step(tmp_path, "pointer_fixed", fixed)).passed


def test_logits_joined_on_the_batch_axis_are_said_so_and_get_the_steps_own_cat_line(tmp_path):
    """08M3: a token loop's logits joined with torch.cat(outs, dim=0), (8, 1, 11) for (2, 4, 11), were
    told only of dimension -2 and given the whole recipe as the Fix; three rounds went by."""
    source = TOKEN_LOOP_STEP.replace("torch.cat(outs, dim=1)", "torch.cat(outs, dim=0)")
    result = check_decoding_step(_step(tmp_path, "joined", source))
    assert "It holds the 8 rows it should, in another arrangement" in result.observed[0], result.observed
    assert result.fix.startswith(
        "return torch.cat(outs, dim=1), [tuple(p) for p in kv]   # in place of your line"), result.fix
    fixed = _pasted(source, "return torch.cat(outs", result.fix)
    assert check_decoding_step(_step(tmp_path, "joined_fixed", fixed)).passed


def test_code_of_lambdas_gets_its_own_lines_for_a_transpose_and_a_softmax(tmp_path):
    """02M3: the Fix scores = q @ k.transpose(-2, -1) / ... pasted into code made of lambdas (no scores,
    no function body) raised NameError before the check ran; then weights = torch.softmax(scores, dim=-1)
    named neither of its lambdas' values."""
    source = """
_scores = lambda q, k: q @ k.T / math.sqrt(q.shape[-1])
_masked = lambda s, m: s if m is None else s.masked_fill(~m, torch.finfo(s.dtype).min)
my_attention = lambda q, k, v, mask=None: (lambda w: (w @ v, w))(F.softmax(_masked(_scores(q, k), mask)))
"""
    result = check_attention(_load(tmp_path, "lambdas", source).my_attention)
    assert result.bug == "batch_one_only", repr(result)
    assert result.fix.startswith(
        "_scores = lambda q, k: q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # in place"), result.fix
    source = _pasted(source, "_scores = lambda", result.fix)
    result = check_attention(_load(tmp_path, "lambdas_2", source).my_attention)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert "F.softmax(_masked(_scores(q, k), mask), dim=-1))   # in place of your" in result.fix, result.fix
    source = _pasted(source, "my_attention = lambda", result.fix)
    assert check_attention(_load(tmp_path, "lambdas_3", source).my_attention).passed


def test_a_name_a_fix_line_uses_for_an_expression_says_the_expression(tmp_path):
    """A step that returns model.unembed(x) and reads logits (a Fix line's name) was told what logits
    stands for, but not where it is in their code: it has no name there."""
    source = DECODING.replace("    return model.unembed(x), new_cache",
                              "    logits = logits.float()\n    return model.unembed(x), new_cache")
    result = check_decoding_step(_load(tmp_path, "unnamed", source).decode_step)
    assert result.fix.startswith("logits in a Fix line means your step's logits"), result.fix
    assert result.fix.endswith("(in your code: model.unembed(x), which has no name of its own)"), result.fix


def _until_it_passes(check, load, source, pastes):
    """Checks ``source``, pastes each Fix in turn (``pastes``: (what the Fix must start with, the line it
    takes the place of, or a (first, last) pair of lines)), and checks again: it passes at the end."""
    for i, (starts, where) in enumerate(pastes):
        result = check(load(i, source))
        assert result.fix.startswith(starts), (i, result.fix)
        source = _pasted_over(source, *where, result.fix) if isinstance(where, tuple) else \
            _pasted(source, where, result.fix)
    assert check(load(len(pastes), source)).passed, source


def test_weights_and_scores_made_some_other_way_are_read_by_what_they_do(tmp_path):
    """Replay 9's 02P2 (scores from a broadcast product, log_softmax(...).exp()) and 02P3 (a softmax helper,
    Polish names): Fix lines named scores and weights, which neither had (NameError), and a helper's
    return line was replaced by an assignment (the helper then returned None)."""
    def load(name):
        return lambda i, source: _load(tmp_path, f"{name}{i}", source).my_attention
    broadcast = """
def my_attention(q, k, v, mask=None):
    prod = q[..., None, :, :] * k[..., :, None, :]
    logits = prod.sum(dim=-1) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits + (~mask).to(logits.dtype) * torch.finfo(logits.dtype).min
    attn = torch.log_softmax(logits, dim=-1).exp()
    return attn @ v, attn
"""
    _until_it_passes(check_attention, load("broadcast"), broadcast, [
        ("logits = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "logits = prod.sum"),
        ("logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)", "logits = logits +")])
    helper = """
def miekki_max(s):
    e = torch.exp(s - s.max())
    return e / e.sum(dim=-1)


def my_attention(q, k, v, mask=None):
    wyniki = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        wyniki = torch.where(mask, wyniki, torch.finfo(wyniki.dtype).min)
    wagi = miekki_max(wyniki)
    return torch.matmul(wagi, v), wagi
"""
    _until_it_passes(check_attention, load("helper"), helper, [
        ("return e / e.sum(dim=-1, keepdim=True)   # in place of your line", "return e / e.sum"),
        ("wagi = torch.softmax(wyniki, dim=-1)", "wagi = miekki_max")])


def test_a_steps_group_repeat_mask_and_stored_values_are_fixed_in_its_own_names(tmp_path):
    """Replay 9's 08P3 (grp, a namedtuple cache of this call's values) and 08P4 (Portuguese names, keys
    repeated along the positions, a mask off by one): Fix lines named group, key, value, mask, n_new
    and n_all, and a values line the step already had; both were stuck or near it."""
    def load(name):
        return lambda i, source: _step(tmp_path, f"{name}{i}", source)
    named = """
from collections import namedtuple

KV = namedtuple("KV", ["k", "v"])


def decode_step(model, tokens, cache):
    cache = cache or {}
    seen = cache["layer0"].k.shape[-2] if cache else 0
    x_t = model.embed(tokens, seen)
    grp = model.n_kv_heads // model.n_heads
    out = {}
    for idx, blk in enumerate(model.blocks):
        name = f"layer{idx}"
        xn = blk.norm_attention(x_t)
        q = split_heads(blk.attention.W_q(xn), model.n_heads)
        k_new = split_heads(blk.attention.W_k(xn), model.n_kv_heads)
        v_new = split_heads(blk.attention.W_v(xn), model.n_kv_heads)
        K = torch.cat([cache[name].k, k_new], dim=-2) if name in cache else k_new
        V = torch.cat([cache[name].v, v_new], dim=-2) if name in cache else v_new
        out[name] = KV(K, v_new)
        heads = F.scaled_dot_product_attention(q, K.repeat_interleave(grp, dim=1),
                                               V.repeat_interleave(grp, dim=1),
                                               attn_mask=gpt.decoding_mask(q.shape[-2], K.shape[-2]))
        x_t = x_t + blk.attention.W_o(merge_heads(heads))
        x_t = x_t + blk.mlp(blk.norm_mlp(x_t))
    return model.unembed(x_t), out
"""
    _until_it_passes(check_decoding_step, load("named"), named, [
        ("grp = model.n_heads // model.n_kv_heads", "grp = "),
        ("out[name] = KV(K, V)   # in place of your line", "out[name] = KV(")])
    portuguese = """
def decode_step(model, tokens, cache):
    anteriores = [] if cache is None else list(cache)
    passado = anteriores[0][0].shape[2] if anteriores else 0
    novos = tokens.shape[1]
    total = passado + novos
    grupo = model.n_heads // model.n_kv_heads
    estado = model.embed(tokens, passado)
    permitido = torch.arange(total)[None, :] <= torch.arange(novos)[:, None] + passado + 1
    nova_cache = []
    for camada, bloco in enumerate(model.blocks):
        normado = bloco.norm_attention(estado)
        consulta = split_heads(bloco.attention.W_q(normado), model.n_heads)
        chave = split_heads(bloco.attention.W_k(normado), model.n_kv_heads)
        valor = split_heads(bloco.attention.W_v(normado), model.n_kv_heads)
        if anteriores:
            chave = torch.cat([anteriores[camada][0], chave], dim=2)
            valor = torch.cat([anteriores[camada][1], valor], dim=2)
        nova_cache.append((chave, valor))
        chave_r = chave.repeat_interleave(grupo, dim=2)
        valor_r = valor.repeat_interleave(grupo, dim=2)
        pontuacao = consulta @ chave_r.transpose(-2, -1) / math.sqrt(model.d_head)
        pontuacao = torch.where(permitido, pontuacao, torch.finfo(pontuacao.dtype).min)
        pesos = torch.nn.functional.softmax(pontuacao, dim=-1, dtype=torch.float32)
        estado = estado + bloco.attention.W_o(merge_heads(pesos @ valor_r))
        estado = estado + bloco.mlp(bloco.norm_mlp(estado))
    return model.unembed(estado), nova_cache
"""
    _until_it_passes(check_decoding_step, load("portuguese"), portuguese, [
        ("chave_r, valor_r = chave.repeat_interleave(grupo, dim=1), valor.repeat_interleave(grupo, dim=1)",
         ("chave_r = ", "valor_r = ")),
        ("permitido = torch.ones(novos, total, dtype=torch.bool).tril(diagonal=total - novos)",
         "permitido = ")])


def test_heads_stacked_on_a_last_axis_and_a_shallow_copied_cache_get_their_own_lines(tmp_path):
    """Replay 9's 05P3: heads stacked on a new last axis and flattened (interleaved) got the Fix
    'unidas = torch.transpose(1, 2).reshape(B, T, _)', torch read as the heads' name (not code that
    runs); 08P2: a dataclass cache copied with replace(cache), its lists shared, got new_cache = []."""
    module = MODULE.replace("class MHA", "class Spanish") + """
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        consultas = self.W_q(x).view(B, T, self.n_heads, self.d_k)
        claves = self.W_k(x).view(B, T, self.n_heads, self.d_k)
        valores = self.W_v(x).view(B, T, self.n_heads, self.d_k)

        def atender(c, k, v):
            puntos = c @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                puntos = puntos.masked_fill(~mask, torch.finfo(puntos.dtype).min)
            return puntos.softmax(dim=-1) @ v

        salidas = [atender(consultas[:, :, h], claves[:, :, h], valores[:, :, h])
                   for h in range(self.n_heads)]
        unidas = torch.stack(salidas, dim=-1).flatten(2)
        return self.W_o(unidas)
"""
    def load(i, source):
        return _load(tmp_path, f"stack{i}", source).Spanish
    _until_it_passes(check_multi_head, load, module, [
        ("unidas = torch.stack(salidas, dim=-2).flatten(2)   # in place of your line", "unidas = ")])
    step = """
from dataclasses import dataclass, field, replace


@dataclass
class Memo:
    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)
    length: int = 0


def decode_step(model, tokens, cache):
    memo = Memo() if cache is None else replace(cache)
    h = model.embed(tokens, memo.length)
    group = model.n_heads // model.n_kv_heads
    for layer, block in enumerate(model.blocks):
        normed_h = block.norm_attention(h)
        q = split_heads(block.attention.W_q(normed_h), model.n_heads)
        k = split_heads(block.attention.W_k(normed_h), model.n_kv_heads)
        v = split_heads(block.attention.W_v(normed_h), model.n_kv_heads)
        if memo.length:
            k = torch.cat([memo.keys[layer], k], dim=-2)
            v = torch.cat([memo.values[layer], v], dim=-2)
            memo.keys[layer], memo.values[layer] = k, v
        else:
            memo.keys.append(k)
            memo.values.append(v)
        ctx = F.scaled_dot_product_attention(q, k.repeat_interleave(group, dim=1),
                                             v.repeat_interleave(group, dim=1),
                                             attn_mask=gpt.decoding_mask(tokens.shape[1], k.shape[-2]))
        h = h + block.attention.W_o(merge_heads(ctx))
        h = h + block.mlp(block.norm_mlp(h))
    memo.length += tokens.shape[1]
    return model.unembed(h), memo
"""
    _until_it_passes(check_decoding_step, lambda i, source: _step(tmp_path, f"memo{i}", source), step, [
        ("import copy; memo = Memo() if cache is None else copy.deepcopy(cache)   # in place of", "memo = ")])


def test_projections_split_into_pieces_of_n_heads_features_get_their_split_lines_with_d_k(tmp_path):
    """Replay 9's 05P1: torch.split(t, self.n_heads, dim=-1) (a piece's size taken for the number of
    pieces) got 'vr = vr.view(..., self.n_heads, self.d_k)', one piece of the split reshaped: it raised."""
    module = MODULE.replace("class MHA", "class Dutch") + """
    def forward(self, x, mask=None):
        vragen = torch.split(self.W_q(x), self.n_heads, dim=-1)
        sleutels = torch.split(self.W_k(x), self.n_heads, dim=-1)
        waarden = torch.split(self.W_v(x), self.n_heads, dim=-1)
        koppen = []
        for vr, sl, wa in zip(vragen, sleutels, waarden):
            scores = vr @ sl.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            koppen.append(F.softmax(scores, dim=-1) @ wa)
        return self.W_o(torch.cat(koppen, dim=-1))
"""
    def load(i, source):
        return _load(tmp_path, f"split{i}", source).Dutch
    _until_it_passes(check_multi_head, load, module, [
        ("vragen = torch.split(self.W_q(x), self.d_k, dim=-1); sleutels = torch.split(self.W_k(x), self.d_k, "
         "dim=-1); waarden = torch.split(self.W_v(x), self.d_k, dim=-1)   # in place of your three lines",
         ("vragen = ", "waarden = "))])


def test_a_forward_that_unpacks_positions_first_is_told_so_whatever_the_bug_it_looks_like(tmp_path):
    """Replay 9 and 10's 05P4 (stuck): length, batch, width = x.shape, then 'heads split without
    transpose' (the code transposes) for five rounds; the unpack was never named."""
    module = MODULE.replace("class MHA", "class Hinted") + """
    def _split(self, t: torch.Tensor, batch: int, length: int) -> torch.Tensor:
        return t.reshape(batch, length, self.n_heads, self.d_k).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        length, batch, width = x.shape
        q_h, k_h, v_h = self._split(self.W_q(x), batch, length), self._split(self.W_k(x), batch, length), \\
            self._split(self.W_v(x), batch, length)
        scores = q_h @ k_h.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        merged = (scores.softmax(dim=-1) @ v_h).permute(0, 2, 1, 3).reshape(batch, length, width)
        return self.W_o(merged)
"""
    result = check_multi_head(_load(tmp_path, "hinted", module).Hinted)
    assert result.observed[0].startswith("Your forward unpacks x.shape as length, batch, width"), \
        result.observed
    def load(i, source):
        return _load(tmp_path, f"hinted{i}", source).Hinted
    _until_it_passes(check_multi_head, load, module, [
        ("batch, length, width = x.shape   # in place of your line", "length, batch, width = x.shape")])


def test_a_decorator_that_blocks_the_gradient_and_scores_by_tensordot_get_the_learners_lines(tmp_path):
    """Replay 12's 02Q4 (stuck): @torch.no_grad() above the function got a softmax line in the notebook's
    name weights (the decorated function's parameters were not read), then that line again; 02Q3: scores
    from torch.tensordot got a Fix named scores (its are diem), then 'run the cell that defines diem'."""
    decorated = """
@torch.no_grad()
def my_attention(q, k, v, mask=None):
    puan = torch.matmul(q, k.transpose(-2, -1))
    if mask is not None:
        puan = puan.masked_fill(mask.logical_not(), torch.finfo(puan.dtype).min)
    agirlik = torch.softmax(puan, dim=-1) / math.sqrt(q.shape[-1])
    return torch.matmul(agirlik, v), agirlik
"""
    def load(name):
        return lambda i, source: _load(tmp_path, f"{name}{i}", source).my_attention
    _until_it_passes(check_attention, load("decorated"), decorated, [
        ("agirlik = torch.softmax(puan / math.sqrt(q.shape[-1]), dim=-1)", "agirlik = "),
        ("def my_attention(q, k, v, mask=None):   # in place of your lines @torch.no_grad() and def",
         ("@torch.no_grad()", "def my_attention"))])
    tensordot = """
def my_attention(q, k, v, mask=None):
    diem = torch.tensordot(q, k, dims=([-1], [-1])) / math.sqrt(q.shape[-1])
    if mask is not None:
        diem = diem.masked_fill(~mask, torch.finfo(diem.dtype).min)
    trong_so = torch.softmax(diem, dim=-1)
    return trong_so @ v, trong_so
"""
    _until_it_passes(check_attention, load("tensordot"), tensordot, [
        ("diem = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "diem = torch.tensordot")])


ESPERANTO_STEP = """
def decode_step(model, tokens, cache):
    pasinte = 0 if cache is None else cache[0][0].shape[-2]
    novaj = tokens.shape[1]
    grupo = model.n_heads // model.n_kv_heads
    stato = model.embed(tokens, pasinte)
    nova_memoro = []
    antaua = cache if cache is not None else [None] * model.n_layers
    for bloko, malnova in zip(model.blocks, antaua):
        normita = bloko.norm_attention(stato)
        demandoj = split_heads(bloko.attention.W_q(normita), model.n_heads)
        sxlosiloj = split_heads(bloko.attention.W_k(normita), model.n_kv_heads)
        valoroj = split_heads(bloko.attention.W_v(normita), model.n_kv_heads)
        if malnova is not None:
            sxlosiloj = torch.cat([malnova[0], sxlosiloj], dim=-2)
            valoroj = torch.cat([malnova[1], valoroj], dim=-2)
        nova_memoro.append((sxlosiloj, valoroj))
        sx = sxlosiloj.repeat_interleave(grupo, dim=1)
        pont = demandoj @ sx.transpose(-2, -1) / math.sqrt(model.d_head)
        maszk = gpt.decoding_mask(novaj, pasinte + novaj)
        pont = pont.masked_fill(~maszk, torch.finfo(pont.dtype).min)
        rezulto = F.softmax(pont, dim=-1) @ valoroj.repeat_interleave(grupo, dim=1)
        stato = stato + bloko.attention.W_o(merge_heads(rezulto))
        stato = stato + bloko.mlp(bloko.norm_mlp(stato))
    return model.unembed(stato), nova_memoro
"""


def test_a_steps_projections_of_the_stream_and_its_unnamed_key_count_get_its_own_lines(tmp_path):
    """Replay 12's 08Q4: W_k(stato) and W_v(stato) where normita belongs got its correct normita line in
    names it did not have (block: its loop is zip(model.blocks, ...)), then 'your code has this line
    already'; 08Q3: a square mask got a Fix with n_all, which it never names, then the notebook's keys."""
    def load(name):
        return lambda i, source: _step(tmp_path, f"{name}{i}", source)
    assert your_names(_step(tmp_path, "zipped", ESPERANTO_STEP))["block"] == "bloko"
    projected = ESPERANTO_STEP.replace("W_k(normita)", "W_k(stato)").replace("W_v(normita)", "W_v(stato)")
    _until_it_passes(check_decoding_step, load("projected"), projected, [
        ("sxlosiloj = split_heads(bloko.attention.W_k(normita), model.n_kv_heads); valoroj = split_heads("
         "bloko.attention.W_v(normita), model.n_kv_heads)   # in place of your two lines",
         ("sxlosiloj = split", "valoroj"))])
    square = ESPERANTO_STEP.replace("gpt.decoding_mask(novaj, pasinte + novaj)",
                                    "gpt.decoding_mask(novaj, novaj)")
    _until_it_passes(check_decoding_step, load("square"), square, [
        ("maszk = torch.ones(novaj, (pasinte + novaj), dtype=torch.bool).tril(diagonal=(pasinte + novaj) - "
         "novaj)", "maszk = ")])


def test_a_fix_line_found_only_as_the_first_branch_of_a_line_is_not_said_to_be_there(tmp_path):
    """Replay 12's 08Q4 r4: a new cache started as a copy of the given one (nova_memoro = [] if memoro is
    None else list(memoro)) was told 'your code has this line already' of nova_memoro = []."""
    copied = ESPERANTO_STEP.replace("    nova_memoro = []\n",
                                    "    nova_memoro = [] if cache is None else list(cache)\n")
    result = check_decoding_step(_step(tmp_path, "copied", copied))
    assert result.fix.startswith("nova_memoro = []   #"), result.fix
    assert "already" not in result.fix, result.fix
    fixed = _pasted(copied, "nova_memoro = [] if", result.fix)
    assert check_decoding_step(_step(tmp_path, "copied_fixed", fixed)).passed


# Replay 12's 08Q1: the cache one tensor (layers, 2, batch, kv heads, positions, d_head), Swahili names
STACKED_STEP = """
def decode_step(model, tokens, cache):
    kumbukumbu = cache              # (layers, 2, batch, kv heads, positions, d_head): [l, 0] keys
    zamani = 0 if kumbukumbu is None else kumbukumbu.shape[-2]
    mpya = tokens.shape[1]
    kundi = model.n_heads // model.n_kv_heads
    hali = model.embed(tokens, zamani)
    tabaka = []
    for safu, block in enumerate(model.blocks):
        kawaida = block.norm_attention(hali)
        swali = split_heads(block.attention.W_q(kawaida), model.n_heads)
        funguo = split_heads(block.attention.W_k(kawaida), model.n_kv_heads)
        thamani = split_heads(block.attention.W_v(kawaida), model.n_kv_heads)
        tabaka.append(torch.stack([funguo, thamani]))
        if kumbukumbu is not None:
            funguo = torch.cat([kumbukumbu[safu, 0], funguo], dim=-2)
            thamani = torch.cat([kumbukumbu[safu, 1], thamani], dim=-2)
        nje = F.scaled_dot_product_attention(swali, funguo.repeat_interleave(kundi, dim=1),
                                             thamani.repeat_interleave(kundi, dim=1),
                                             attn_mask=gpt.decoding_mask(mpya, zamani + mpya))
        hali = hali + block.attention.W_o(merge_heads(nje))
        hali = hali + block.mlp(block.norm_mlp(hali))
    mpya_kumbukumbu = torch.stack(tabaka)
    if kumbukumbu is not None:
        mpya_kumbukumbu = torch.cat([kumbukumbu, mpya_kumbukumbu], dim=-2)
    return model.unembed(hali), mpya_kumbukumbu
"""

# Replay 11's 08P1: the cache a flat list [k0, v0, k1, v1]
FLAT_STEP = """
def decode_step(model, tokens, cache):
    pos_start = 0 if cache is None else cache[0].shape[-2]
    res = model.embed(tokens, pos_start)
    n_new = tokens.shape[1]
    rep = model.n_heads // model.n_kv_heads
    flat = []
    for i, blk in enumerate(model.blocks):
        a = blk.norm_attention(res)
        lq = split_heads(blk.attention.W_q(a), model.n_heads)
        lk = split_heads(blk.attention.W_k(a), model.n_kv_heads)
        lv = split_heads(blk.attention.W_v(a), model.n_kv_heads)
        if cache is not None:
            lk = torch.cat([cache[2 * i], lk], dim=-2)
            lv = torch.cat([cache[2 * i + 1], lv], dim=-2)
        flat += [lk, lv]
        allowed = gpt.decoding_mask(n_new, lk.shape[-2])
        sc = lq @ lk.repeat_interleave(rep, 1).transpose(-2, -1) / math.sqrt(model.d_head)
        sc = sc.masked_fill(~allowed, torch.finfo(sc.dtype).min)
        res = res + blk.attention.W_o(merge_heads(sc.softmax(-1) @ lv.repeat_interleave(rep, 1)))
        res = res + blk.mlp(blk.norm_mlp(res))
    return model.unembed(res), flat
"""


@pytest.mark.parametrize("source, wrong, reads, fix", [
    (STACKED_STEP.replace("kumbukumbu[safu, 0]", "kumbukumbu[0, safu]").replace("kumbukumbu[safu, 1]",
                                                                                 "kumbukumbu[1, safu]"),
     ("funguo = torch.cat", "thamani = torch.cat"),
     "layer 0 reads its cached values from layer 1's keys (cache[1][0]); layer 1 reads its cached keys from "
     "layer 0's values (cache[0][1])",
     "funguo = torch.cat([kumbukumbu[safu, 0], funguo], dim=-2); thamani = torch.cat([kumbukumbu[safu, 1], "
     "thamani], dim=-2)   # in place of your two lines"),
    (FLAT_STEP.replace("cache[2 * i]", "cache[i]").replace("cache[2 * i + 1]", "cache[i + 1]"),
     ("lk = torch.cat", "lv = torch.cat"),
     "layer 1 reads its cached keys from layer 0's values (cache[1]); layer 1 reads its cached values from "
     "layer 1's keys (cache[2])",
     "lk = torch.cat([cache[2 * i], lk], dim=-2); lv = torch.cat([cache[2 * i + 1], lv], dim=-2)   # in "
     "place of your two lines"),
], ids=["indices_swapped", "flat_list_at_i"])
def test_a_cache_read_at_the_wrong_index_is_named_with_the_entries_read_and_its_own_lines(
        tmp_path, source, wrong, reads, fix):
    """Replays 11 and 12 (08P1, 08Q1): a (layers, 2, ...) cache read as (2, layers, ...), and a flat list
    [k0, v0, k1, v1] read at cache[i] and cache[i + 1], were told 'matches no known bug'. Now the check
    tries every way of reading the prefill's cache, names the entries each layer read, and gives the
    step's own lines with the indices where its prefill put them; pasted, they pass."""
    result = check_decoding_step(_step(tmp_path, "misread", source))
    assert result.bug == "cache_read_at_wrong_index", repr(result)
    assert any(reads in line for line in result.observed), result.observed
    assert result.fix.startswith(fix), result.fix
    fixed = _pasted_over(source, *wrong, result.fix)
    assert check_decoding_step(_step(tmp_path, "misread_fixed", fixed)).passed


# Replay 12's 05Q1: a loop over the heads, each projected with F.linear on its rows; Czech names
HEADS_IN_A_LIST = MODULE + """
    def forward(self, x, mask=None):
        hlavy = []
        for h in range(self.n_heads):
            radky = slice(h * self.d_k, (h + 1) * self.d_k)
            dotaz = F.linear(x, self.W_q.weight[radky], self.W_q.bias[radky])
            klic = F.linear(x, self.W_k.weight[radky], self.W_k.bias[radky])
            hodnota = F.linear(x, self.W_v.weight[radky], self.W_v.bias[radky])
            skore = dotaz @ klic.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                skore = skore.masked_fill(~mask, torch.finfo(skore.dtype).min)
            hlavy.append(skore.softmax(dim=-1) @ hodnota)
        return self.W_o(torch.cat(hlavy, dim=-1))
"""


@pytest.mark.parametrize("wrong, line", [
    ("return self.W_o(torch.cat(hlavy, dim=1))", "return self.W_o"),
    ("spojene = torch.cat(hlavy, 1)\n        return self.W_o(spojene)", "spojene = "),
], ids=["inside_W_o", "named_first"])
def test_heads_joined_along_the_positions_get_their_own_cat_line_along_the_features(tmp_path, wrong, line):
    """Replay 12's 05Q1: heads kept in a list and joined with torch.cat(hlavy, dim=1) were told 'applying
    W_o to the heads (batch, heads, n, d_k) before merging' with a Fix naming heads, which it had not."""
    source = HEADS_IN_A_LIST.replace("return self.W_o(torch.cat(hlavy, dim=-1))", wrong)
    result = check_multi_head(_load(tmp_path, "joined", source).MHA)
    assert "one head's d_k" in result.observed[1] and "torch.cat(heads, dim=1)" in result.observed[1]
    assert result.fix.split("   #")[0] == wrong.splitlines()[0].replace("dim=1", "dim=-1").replace(
        "hlavy, 1", "hlavy, -1").strip(), result.fix
    assert check_multi_head(_load(tmp_path, "joined_fixed", _pasted(source, line, result.fix)).MHA).passed


# Replay 12's 05Q4: Karpathy's lecture, a Head module of its own per head (its scores are wei)
HEAD_MODULES = """
class Head(nn.Module):
    def __init__(self, d_model, head_size):
        super().__init__()
        self.register_buffer("tril", torch.tril(torch.ones(512, 512, dtype=torch.bool)))

    def forward(self, q, k, v, mask=None):
        B, T, C = q.shape
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, torch.finfo(wei.dtype).min)
        wei = wei.softmax(dim=-1)
        return wei @ v


class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.heads = nn.ModuleList([Head(d_model, self.d_k) for _ in range(n_heads)])

    def forward(self, x, mask=None):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        s = [slice(i * self.d_k, (i + 1) * self.d_k) for i in range(self.n_heads)]
        out = torch.cat([h(q[..., s[i]], k[..., s[i]], v[..., s[i]], mask) for i, h in enumerate(self.heads)],
                        dim=-1)
        return self.W_o(out)
"""


@pytest.mark.parametrize("line, fix", [
    ("wei = wei.masked_fill(self.tril[:T, :T] == 0, torch.finfo(wei.dtype).min)",
     "if mask is not None: wei = wei.masked_fill(~mask, torch.finfo(wei.dtype).min)   # in place of your "
     "line: the mask you are given"),
    ("wei = wei.masked_fill(~mask, torch.finfo(wei.dtype).min)",
     "if mask is not None: wei = wei.masked_fill(~mask, torch.finfo(wei.dtype).min)   # in place of your "
     "line: mask=None means"),
], ids=["causal_buffer", "no_guard"])
def test_a_head_modules_mask_line_is_the_fix_in_its_own_names(tmp_path, line, fix):
    """Replay 12's 05Q4: a Head module's causal tril buffer where the given mask belongs got the Fix
    scores = scores.masked_fill(~mask, ...) (its scores are wei, in the Head's forward), and, once that
    was renamed, the same without the None guard; each took two more rounds. The Fix is now the Head's
    own line, guarded."""
    source = HEAD_MODULES.replace("wei = wei.masked_fill(self.tril[:T, :T] == 0, torch.finfo(wei.dtype).min)",
                                  line)
    _until_it_passes(check_multi_head, lambda i, text: _load(tmp_path, f"head{i}", text).MHA, source,
                     [(fix, "wei = wei.masked_fill")])


@pytest.mark.parametrize(("row", "column"), [("lengths.unsqueeze(0)", "lengths.unsqueeze(1)"),
                                           ("lengths[None, :]", "lengths[:, None]"),
                                           ("lengths.view(1, -1)", "lengths.view(-1, 1)")])
def test_lengths_made_a_row_get_the_line_that_does_it_as_a_column(tmp_path, row, column):
    """Replay 12's 04Q3: lengths.unsqueeze(0) (a row) in its comparison line got the catalog's return line
    as its Fix; pasted over the return, the line before still raised, and the learner took two more rounds
    to find it. The Fix is now that line with lengths[:, None]."""
    source = f"""
def my_padding_mask(lengths, n):
    ukuran = lengths.shape[0]
    posisi = torch.arange(n).expand(ukuran, n)
    nyata = posisi < {row}
    return nyata.unsqueeze(1)
"""
    result = check_padding_mask(_load(tmp_path, "row", source).my_padding_mask)
    assert result.bug == "batch_one_only", repr(result)
    assert result.fix.startswith(f"nyata = posisi < {column}   # in place of your line"), result.fix
    fixed = _pasted(source, "nyata = ", result.fix)
    assert check_padding_mask(_load(tmp_path, "row_fixed", fixed).my_padding_mask).passed


# Replay 13's 08R4: a typed step, Georgian names, attention by hand with einsum
GEORGIAN_STEP = '''
from typing import List, Optional, Tuple

Keshi = List[Tuple[torch.Tensor, torch.Tensor]]


def decode_step(model, tokens: torch.Tensor, cache: Optional[Keshi]) -> Tuple[torch.Tensor, Keshi]:
    tsarsuli = 0 if cache is None else cache[0][0].shape[-2]
    akhali = tokens.shape[1]
    jgupi = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, tsarsuli)
    akhali_keshi: Keshi = []
    for bloki, dzveli in zip(model.blocks, cache or []):
        yur = bloki.attention
        normuli = bloki.norm_attention(x)
        q = split_heads(yur.W_q(normuli), model.n_heads)
        k = split_heads(yur.W_k(normuli), model.n_kv_heads)
        v = split_heads(yur.W_v(normuli), model.n_kv_heads)
        if dzveli is not None:
            k = torch.cat([dzveli[0], k], dim=-2)
            v = torch.cat([dzveli[1], v], dim=-2)
        akhali_keshi.append((k, v))
        sul = k.shape[-2]
        kulebi = torch.einsum("bhqd,bhkd->bhqk", q, k.repeat_interleave(jgupi, dim=1)) / model.d_head ** 0.5
        nebartva = torch.ones(akhali, sul, dtype=torch.bool).tril(sul - akhali)
        kulebi = kulebi.masked_fill(~nebartva, torch.finfo(kulebi.dtype).min)
        tavebi = torch.einsum("bhqk,bhkd->bhqd", kulebi.softmax(dim=-1), v.repeat_interleave(jgupi, dim=1))
        x = x + yur.W_o(merge_heads(tavebi))
        x = x + bloki.mlp(bloki.norm_mlp(x))
    return model.unembed(x), akhali_keshi
'''


def test_a_loop_zipped_with_an_empty_cache_is_named_and_gets_its_loop_line(tmp_path):
    """Replay 13's 08R4: for bloki, dzveli in zip(model.blocks, cache or []) runs no block on a prefill
    (zip stops at the empty list): 'matches no known bug' with the recipe, five rounds. Now a prefill
    hypothesis of its own, and the Fix is the loop's line with one empty entry per block."""
    def load(i, source):
        return _step(tmp_path, f"zipped{i}", source)
    result = check_decoding_step(load(0, GEORGIAN_STEP))
    assert result.bug == "no_block_without_cache", repr(result)
    _until_it_passes(check_decoding_step, load, GEORGIAN_STEP, [
        ("for bloki, dzveli in zip(model.blocks, cache or [None] * len(model.blocks)):   # in place of your "
         "loop's first line", "for bloki")])



# Replay 13's 08R2: recursion over the layers, Maori names, F.scaled_dot_product_attention
MAORI_STEP = """
def decode_step(model, tokens, cache):
    mua = 0 if cache is None else cache[0][0].shape[-2]
    hou = tokens.shape[1]
    roopu = model.n_heads // model.n_kv_heads

    def haere(x, paparanga, putunga):
        if paparanga == model.n_layers:
            return x, putunga
        poraka = model.blocks[paparanga]
        aro = poraka.attention
        whakarite = poraka.norm_attention(x)
        patai = split_heads(aro.W_q(whakarite), model.n_heads)
        ki = split_heads(aro.W_k(whakarite), model.n_kv_heads)
        uara = split_heads(aro.W_v(whakarite), model.n_kv_heads)
        if cache is not None:
            ki = torch.cat([cache[paparanga][0], ki], dim=-2)
            uara = torch.cat([cache[paparanga][1], uara], dim=-2)
        katoa = ki.shape[-2]
        whakaaetanga = torch.ones(hou, katoa, dtype=torch.bool).tril(hou - katoa)
        upoko = F.scaled_dot_product_attention(patai, ki.repeat_interleave(roopu, dim=1),
                                               uara.repeat_interleave(roopu, dim=1),
                                               attn_mask=whakaaetanga)
        x = x + aro.W_o(upoko.reshape(x.shape))
        x = x + poraka.mlp(poraka.norm_mlp(x))
        return haere(x, paparanga + 1, putunga + [(ki, uara)])

    x, putunga_hou = haere(model.embed(tokens, mua), 0, [])
    return model.unembed(x), putunga_hou
"""


def test_a_recursive_steps_merge_and_mask_get_its_own_lines(tmp_path):
    """Replay 13's 08R2: its heads merged with upoko.reshape(x.shape) got the catalog's merged = ... line in
    four names it had not (batch, n_new, h, d: five rounds of NameError and 'run the cell that defines h');
    its mask's offset, negated, would have been told in the names mask, n_new and n_all (its stream is
    handed to a recursive helper, so the step's mask names were never read). Both are its own lines now."""
    def load(i, source):
        return _step(tmp_path, f"maori{i}", source)
    _until_it_passes(check_decoding_step, load, MAORI_STEP, [
        ("x = x + aro.W_o(upoko.transpose(1, 2).reshape(x.shape))   # in place of your line",
         "x = x + aro.W_o"),
        ("whakaaetanga = torch.ones(hou, katoa, dtype=torch.bool).tril(diagonal=katoa - hou)",
         "whakaaetanga = "),
    ])



# Replay 13's 08R3: functools.reduce over zip(model.blocks, ...), LLaMA's repeat_kv, Lithuanian names
LITHUANIAN_STEP = """
import functools


def kartoti_kv(b, kartai):
    partija, kv_galvos, ilgis, d = b.shape
    if kartai == 1:
        return b
    return (b[:, :, None, :, :].expand(partija, kv_galvos, kartai, ilgis, d)
            .reshape(partija, kv_galvos * kartai, ilgis, d))


def decode_step(model, tokens, cache):
    praeitis = 0 if cache is None else len(cache[0][0])
    nauji = tokens.shape[1]
    grupe = model.n_heads // model.n_kv_heads
    senas = cache or [None] * model.n_layers

    def sluoksnis(busena, pora):
        x, nauja_atmintis = busena
        blokas, ankstesnis = pora
        dem = blokas.attention
        normuota = blokas.norm_attention(x)
        uzklausa, raktas, reiksme = (split_heads(f(normuota), h) for f, h in
                                     ((dem.W_q, model.n_heads), (dem.W_k, model.n_kv_heads),
                                      (dem.W_v, model.n_kv_heads)))
        if ankstesnis is not None:
            raktas, reiksme = (torch.cat([a, b], dim=-2) for a, b in zip(ankstesnis, (raktas, reiksme)))
        visi = raktas.shape[-2]
        leidimas = torch.ones(nauji, visi, dtype=torch.bool).tril(visi - nauji)
        galvos = F.scaled_dot_product_attention(uzklausa, kartoti_kv(raktas, grupe),
                                                kartoti_kv(reiksme, grupe), attn_mask=leidimas)
        po_dem = x + dem.W_o(merge_heads(galvos))
        x = po_dem + blokas.mlp(blokas.norm_mlp(x))
        return x, nauja_atmintis + [(raktas, reiksme)]

    x, nauja = functools.reduce(sluoksnis, zip(model.blocks, senas), (model.embed(tokens, praeitis), []))
    return model.unembed(x), nauja
"""


def test_a_reduced_steps_mlp_and_cached_length_get_its_own_lines(tmp_path):
    """Replay 13's 08R3: its MLP read the block's input (x = po_dem + blokas.mlp(blokas.norm_mlp(x))) and
    got x = x + block.mlp(block.norm_mlp(x)) (block not its name, po_dem thrown away), and its cached
    length, len(cache[0][0]) (the batch), got past = ... where its name is praeitis (its embedding sits
    inside the reduce call): stuck. Now each Fix is its own line."""
    def load(i, source):
        return _step(tmp_path, f"reduced{i}", source)
    _until_it_passes(check_decoding_step, load, LITHUANIAN_STEP, [
        ("x = po_dem + blokas.mlp(blokas.norm_mlp(po_dem))   # in place of your line", "x = po_dem"),
        ("praeitis = 0 if cache is None else cache[0][0].shape[-2]", "praeitis = "),
    ])


# Replay 13's 08R1: a cache class of its own, Latin names, a walrus
LATIN_STEP = """
class Memoria:
    def __init__(self, strata=[]):
        self.strata = strata

    def longitudo(self):
        return self.strata[0][0].shape[-2] if self.strata else 0

    def stratum(self, i):
        return self.strata[i] if i < len(self.strata) else None

    def adde(self, claves, valores):
        self.strata.append((claves, valores))


def decode_step(model, tokens, cache):
    vetus = cache if cache is not None else Memoria()
    praeteritum = vetus.longitudo()
    grex = model.n_heads // model.n_kv_heads
    n_novi = tokens.shape[1]
    nova = Memoria()
    x = model.embed(tokens, praeteritum)
    for i, gradus in enumerate(model.blocks):
        normatum, att = gradus.norm_attention(x), gradus.attention
        quaestio = split_heads(att.W_q(normatum), model.n_heads)
        clavis = split_heads(att.W_k(normatum), model.n_kv_heads)
        valor = split_heads(att.W_v(normatum), model.n_kv_heads)
        if (prius := vetus.stratum(i)) is not None:
            clavis = torch.cat([clavis, prius[0]], dim=-2)
            valor = torch.cat([valor, prius[1]], dim=-2)
        nova.adde(clavis, valor)
        n_omnes = clavis.shape[-2]
        licet = torch.ones(n_novi, n_omnes, dtype=torch.bool).tril(n_omnes - n_novi)
        capita = F.scaled_dot_product_attention(quaestio, clavis.repeat_interleave(grex, dim=1),
                                                valor.repeat_interleave(grex, dim=1), attn_mask=licet)
        x = x + att.W_o(merge_heads(capita))
        x = x + gradus.mlp(gradus.norm_mlp(x))
    return model.unembed(x), nova
"""


def test_a_cache_class_with_a_list_default_and_new_keys_first_get_their_own_lines(tmp_path):
    """Replay 13's 08R1: Memoria(strata=[]) kept its default list, so every Memoria() shared one: told
    'dropout left on' (there is no dropout) six rounds running. Now the shared default is said first,
    with its __init__ line keeping a copy; then its new keys joined before the cached ones get its own two
    cat lines, swapped."""
    def load(i, source):
        return _step(tmp_path, f"latin{i}", source)
    result = check_decoding_step(load(0, LATIN_STEP))
    assert "Memoria's default argument strata=[] is one list" in result.headline, repr(result)
    _until_it_passes(check_decoding_step, load, LATIN_STEP, [
        ("self.strata = list(strata)   # in place of your line in Memoria.__init__", "self.strata = "),
        ("clavis = torch.cat([prius[0], clavis], dim=-2); valor = torch.cat([prius[1], valor], dim=-2)",
         ("clavis = torch.cat", "valor = torch.cat")),
    ])


# Replay 13's 02R3: the "equivalent to" code in the docs of F.scaled_dot_product_attention, Hebrew names
HEBREW_ATTENTION = """
def my_attention(q, k, v, mask=None):
    L, S = q.size(-2), q.size(-2)
    gorem = 1 / math.sqrt(q.size(-1))
    mutar = torch.ones(L, S, dtype=torch.bool)
    if mask is not None:
        mutar.logical_and_(mask)
    tsiyun = q @ k.transpose(-2, -1) * gorem
    tsiyun = tsiyun.masked_fill(~mutar, torch.finfo(tsiyun.dtype).min)
    mishkal = torch.softmax(tsiyun, dim=-1)
    return mishkal @ v, mishkal
"""


@pytest.mark.parametrize("in_place, fix", [
    ("mutar.logical_and_(mask)", "mutar = mutar.logical_and(mask)   # in place of your line: out of place"),
    ("mutar &= mask", "mutar = mutar & mask   # in place of your line: out of place"),
], ids=["method", "augmented"])
def test_sizes_read_from_the_queries_twice_and_an_in_place_and_get_their_own_lines(tmp_path, in_place, fix):
    """Replay 13's 02R3: L, S = q.size(-2), q.size(-2) (the keys' count read from q) was told 'batch one
    only' on an unbatched input, with a Fix it had already (two rounds lost); then an in-place
    mutar.logical_and_(mask), whose (L, S) tensor cannot take a batched mask, got 'run your function by
    hand'. Now: right whenever as many queries as keys, with its size line reading k; its in-place line
    out of place."""
    source = HEBREW_ATTENTION.replace("mutar.logical_and_(mask)", in_place)
    result = check_attention(_load(tmp_path, "hebrew", source).my_attention)
    assert result.headline.endswith("whenever their numbers differ.") and result.bug is None, repr(result)
    def load(i, text):
        return _load(tmp_path, f"hebrew{i}", text).my_attention
    _until_it_passes(check_attention, load, source, [
        ("L, S = q.size(-2), k.size(-2)   # in place of your line", "L, S ="),
        (fix, in_place),
    ])


def test_a_mask_with_special_cases_gets_its_fix_as_the_general_cases_return_line(tmp_path):
    """Replay 13's 04R2: a match statement returning for n = 0 and n = 1, then its grid: the Fix was a bare
    expression (no single return to put it in), which pasted as a line of its own did nothing."""
    source = """
def my_causal_mask(n):
    match n:
        case 0:
            return torch.zeros(0, 0, dtype=torch.bool)
        case 1:
            return torch.ones(1, 1, dtype=torch.bool)
        case _:
            grind = torch.zeros(n, n, dtype=torch.bool)
            grind[torch.tril_indices(n, n)] = True
            return grind
"""
    def load(i, text):
        return _load(tmp_path, f"match{i}", text).my_causal_mask
    _until_it_passes(check_causal_mask, load, source, [
        ("return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your line return grind",
         "return grind")])


def test_heads_merged_after_swapping_features_and_positions_get_their_own_line(tmp_path):
    """Replay 13's 05R3: (berat @ nilai).transpose(-2, -1).reshape(...) got merged = heads.transpose(1, 2)...
    (no heads in its code: NameError). Its own line with transpose(1, 2) now."""
    source = MODULE + """
    def forward(self, x, mask=None):
        kelompok, panjang, lebar = x.shape
        pecah = lambda t: t.view(kelompok, panjang, self.n_heads, self.d_k).transpose(1, 2)
        soalan, kunci, nilai = (pecah(f(x)) for f in (self.W_q, self.W_k, self.W_v))
        skor = soalan @ kunci.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            skor = skor.masked_fill(~mask, torch.finfo(skor.dtype).min)
        berat = skor.softmax(dim=-1)
        gabung = (berat @ nilai).transpose(-2, -1).reshape(kelompok, panjang, lebar)
        return self.W_o(gabung)
"""
    def load(i, text):
        return _load(tmp_path, f"malay{i}", text).MHA
    _until_it_passes(check_multi_head, load, source, [
        ("gabung = (berat @ nilai).transpose(1, 2).reshape(kelompok, panjang, lebar)   # in place of your "
         "line", "gabung = ")])


# Replay 13's 05R2: a typed helper that unflattens the heads, einsum for both products, Zulu names
ZULU_MODULE = """
def hlukanisa(t: torch.Tensor, amakhanda: int) -> torch.Tensor:
    return t.unflatten(-1, (amakhanda, -1))
""" + MODULE + """
    def forward(self, x, mask=None):
        imibuzo = hlukanisa(self.W_q(x), self.n_heads)
        okhiye = hlukanisa(self.W_k(x), self.n_heads)
        amanani = hlukanisa(self.W_v(x), self.n_heads)
        amaphuzu = torch.einsum("bqhd,bkhd->bhqk", imibuzo, okhiye) / math.sqrt(self.d_k)
        if mask is not None:
            mask.logical_not_()
            amaphuzu = amaphuzu.masked_fill(mask, torch.finfo(amaphuzu.dtype).min)
        izisindo = amaphuzu.softmax(dim=-1)
        okuphumayo = torch.einsum("bhqk,bqhd->bkhd", izisindo, amanani)
        return self.W_o(okuphumayo.flatten(-2))
"""


def test_an_einsum_blend_over_the_queries_and_a_mask_flipped_in_place_get_their_own_lines(tmp_path):
    """Replay 13's 05R2 (stuck): its blend "bhqk,bqhd->bkhd" (weights transposed) got out = izisindo @
    amanani, which cannot multiply its (b, n, h, d) values and replaced okuphumayo, its own name; the
    five rounds after it went round that. Now its einsum line with the letters swapped; then its
    mask.logical_not_() (the caller's mask flipped) gets mask = mask.logical_not()."""
    def load(i, text):
        return _load(tmp_path, f"zulu{i}", text).MHA
    _until_it_passes(check_multi_head, load, ZULU_MODULE, [
        ('okuphumayo = torch.einsum("bhqk,bkhd->bqhd", izisindo, amanani)   # in place of your line',
         "okuphumayo = "),
        ("mask = mask.logical_not()   # in place of your line", "mask.logical_not_()"),
    ])


def test_a_scale_rounded_to_a_whole_number_is_not_called_a_constant(tmp_path):
    """Replay 13's 02R4: math.isqrt(q.shape[-1]) was told 'it is 2 on every input, whatever their sizes: a
    constant', though it was right where d_k is 9 and 16."""
    source = """
def my_attention(q, k, v, mask=None):
    neurria = math.isqrt(q.shape[-1])
    puntuak = q @ k.transpose(-2, -1) / neurria
    if mask is not None:
        puntuak = puntuak.masked_fill(~mask, torch.finfo(puntuak.dtype).min)
    pisuak = puntuak.softmax(dim=-1)
    return pisuak @ v, pisuak
"""
    result = check_attention(_load(tmp_path, "isqrt", source).my_attention)
    assert result.bug == "wrong_scale", repr(result)
    assert not any("a constant" in line for line in result.observed), result.observed
    assert any("rounded down to a whole number" in line and "right where d_k is 9, 16" in line
               for line in result.observed), result.observed



# Replay 15's 05S4: JAX-style functions at module level (split, merge, attention), Albanian names
ALBANIAN_MODULE = """
def _ndaj(t, koka):                         # (b, n, d_model) -> (b, koka, n, d)
    b, n, gjeresi = t.shape
    return t.reshape(b, n, koka, gjeresi // koka).permute(0, 2, 1, 3)

def _bashko(t):                             # (b, koka, n, d) -> (b, n, koka * d)
    b, koka, n, d = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, n, koka * d)

def _vemendje(pyetje, celes, vlera, maska=None):
    piket = pyetje @ celes.mT / math.sqrt(pyetje.shape[-1])
    if maska is not None:
        piket = torch.where(maska.mT, piket, torch.finfo(piket.dtype).min)
    return piket.softmax(dim=-1) @ vlera

class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        pyetje, celes, vlera = (_ndaj(f(x), self.n_heads) for f in (self.W_q, self.W_k, self.W_v))
        koket = _vemendje(pyetje, celes, vlera, mask)
        return self.W_o(_bashko(koket))
"""


def test_a_mask_transposed_in_a_helper_gets_the_helpers_own_line(tmp_path):
    """Replay 15's 05S4 (stuck): torch.where(maska.mT, piket, ...) in a helper got scores =
    scores.masked_fill(~mask, ...) (its names are piket and maska, in the helper), then 'run the cell
    that defines mask'. The Fix is now the helper's own line without the transpose."""
    def load(i, text):
        return _load(tmp_path, f"albanian{i}", text).MHA
    _until_it_passes(check_multi_head, load, ALBANIAN_MODULE, [
        ("piket = torch.where(maska, piket, torch.finfo(piket.dtype).min)   # in place of your line",
         "piket = torch.where")])


def test_log_softmax_handed_to_a_factory_beside_the_def_gets_that_line(tmp_path):
    """Replay 15's 02S3: torch.log_softmax handed to a closure factory (_atencion = ruray(torch.log_softmax,
    ...)) got weights = torch.softmax(scores, dim=-1), names the learner's code has not (pasted, it read
    the notebook's scores). The Fix is now the factory line with softmax."""
    source = """
def ruray(hunt_achiy, pakay_chani):
    def atencion(q, k, v, mask=None):
        yupay = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            yupay = yupay.masked_fill(~mask, pakay_chani(yupay.dtype))
        llasay = hunt_achiy(yupay, dim=-1)
        return llasay @ v, llasay
    return atencion

_atencion = ruray(torch.log_softmax, lambda tipo: torch.finfo(tipo).min)

def my_attention(q, k, v, mask=None):
    return _atencion(q, k, v, mask)
"""
    def load(i, text):
        return _load(tmp_path, f"quechua{i}", text).my_attention
    _until_it_passes(check_attention, load, source, [
        ("_atencion = ruray(torch.softmax, lambda tipo: torch.finfo(tipo).min)   # in place of your line",
         "_atencion = ")])



# Replay 15's 08S1: a typing.NamedTuple per layer (fields kilt, man), attention by hand, Kazakh names
KAZAKH_STEP = """
from typing import NamedTuple

class Qabat(NamedTuple):
    kilt: torch.Tensor
    man: torch.Tensor

def decode_step(model, tokens, cache):
    burin = 0 if cache is None else cache[0].kilt.shape[-2]
    jana = tokens.shape[1]
    top = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, burin)
    jana_cache = []
    for qabat_no, blok in enumerate(model.blocks):
        norm, nazar = blok.norm_attention(x), blok.attention
        suraq = split_heads(nazar.W_q(norm), model.n_heads)
        kilt = split_heads(nazar.W_k(norm), model.n_kv_heads)
        man = split_heads(nazar.W_v(norm), model.n_kv_heads)
        if cache is not None:
            kilt = torch.cat([cache[qabat_no].kilt, kilt], dim=-2)
            man = torch.cat([cache[qabat_no].man, man], dim=-2)
        jana_cache.append(Qabat(man, kilt))
        barlygy = kilt.shape[-2]
        ruqsat = torch.ones(jana, barlygy, dtype=torch.bool).tril(barlygy - jana)
        upai = suraq @ kilt.repeat_interleave(top, dim=1).transpose(-2, -1) / math.sqrt(model.d_head)
        upai = upai.masked_fill(~ruqsat, torch.finfo(upai.dtype).min)
        basy = upai.softmax(dim=-1) @ man.repeat_interleave(top, dim=1)
        x = x + nazar.W_o(merge_heads(basy))
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(model.norm_final(x)), jana_cache
"""


def test_a_named_tuple_cache_in_values_first_order_and_a_second_final_norm_get_their_own_lines(tmp_path):
    """Replay 15's 08S1 (stuck): model.unembed(model.norm_final(x)) got logits = model.unembed(x) (pasted
    over its return line: no return), then 'return logits' (no cache), then names it had not; its
    Qabat(man, kilt), values first, would have got a plain (kilt, man) tuple that its next call cannot
    read as .kilt. Each Fix is now its own line."""
    def load(i, source):
        return _step(tmp_path, f"kazakh{i}", source)
    _until_it_passes(check_decoding_step, load, KAZAKH_STEP, [
        ("return model.unembed(x), jana_cache   # in place of your line", "return model.unembed"),
        ("jana_cache.append(Qabat(kilt, man))   # in place of your line", "jana_cache.append"),
    ])
    unreturned = KAZAKH_STEP.replace("    return model.unembed(model.norm_final(x)), jana_cache",
                                     "    logits = model.unembed(x)")
    assert check_decoding_step(load(9, unreturned)).fix.startswith("return logits, jana_cache   # at the end")



# Replay 15's 08S4: each layer's cache one stacked tensor, masks memoised on the function, Ukrainian names
UKRAINIAN_STEP = """
def decode_step(model, tokens, cache):
    # each layer's cache: torch.stack((keys, values)), shape (2, batch, n_kv_heads, positions, d_head)
    mynule = 0 if cache is None else cache[0].shape[-2]
    novi = tokens.shape[1]
    hrupa = model.n_heads // model.n_kv_heads
    vsogo = mynule + novi
    if not hasattr(decode_step, "maski"):
        decode_step.maski = {}
    if novi not in decode_step.maski:
        decode_step.maski[novi] = gpt.decoding_mask(novi, vsogo)
    dozvil = decode_step.maski[novi]
    x = model.embed(tokens, mynule)
    novyi_kesh = []
    for shar, blok in enumerate(model.blocks):
        norm, uvaha = blok.norm_attention(x), blok.attention
        zapyt = split_heads(uvaha.W_q(norm), model.n_heads)
        kv = torch.stack((split_heads(uvaha.W_k(norm), model.n_kv_heads),
                          split_heads(uvaha.W_v(norm), model.n_kv_heads)))
        if cache is not None:
            kv = torch.cat([cache[shar], kv], dim=2)
        novyi_kesh.append(kv)
        kluchi, znachennia = kv.unbind(0)
        holovy = F.scaled_dot_product_attention(zapyt, kluchi.repeat_interleave(hrupa, dim=1),
                                                znachennia.repeat_interleave(hrupa, dim=1), attn_mask=dozvil)
        x = x + uvaha.W_o(merge_heads(holovy))
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(x), novyi_kesh
"""


def test_a_stacked_cache_on_the_wrong_axis_and_masks_kept_on_the_function_get_their_own_lines(tmp_path):
    """Replay 15's 08S4 (stuck): torch.cat([cache[shar], kv], dim=2) on its stacked (2, batch, heads,
    positions, d) entries got a Fix for a (keys, values) cache in names it had not; its masks memoised in
    decode_step.maski by the number of new tokens were never named. Now its own cat line along dim=-2,
    then the line that reads the kept mask, made anew."""
    def load(i, source):
        return _step(tmp_path, f"ukrainian{i}", source)
    _until_it_passes(check_decoding_step, load, UKRAINIAN_STEP, [
        ("kv = torch.cat([cache[shar], kv], dim=-2)   # in place of your line", "kv = torch.cat"),
        ("dozvil = gpt.decoding_mask(novi, vsogo)   # in place of your line", "dozvil = "),
    ])


@pytest.mark.parametrize("blend", ["vazn.mul(v)", "torch.mul(vazn, v)", "vazn * v"])
def test_weights_multiplied_entry_by_entry_are_said_so_with_the_learners_line_as_a_product(tmp_path, blend):
    """Replay 15's 02S4: vazn.mul(arzesh) (.mul for .matmul) raised where the shapes do not broadcast and
    was told 'missing key transpose' (its keys were transposed) three rounds running."""
    source = f"""
def my_attention(q, k, v, mask=None):
    emtiaz = q.matmul(k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        emtiaz = emtiaz.masked_fill(mask.logical_not(), torch.finfo(emtiaz.dtype).min)
    vazn = emtiaz.softmax(dim=-1)
    khoruji = {blend}
    return khoruji, vazn
"""
    result = check_attention(_load(tmp_path, "mul", source).my_attention)
    assert result.bug is None and "entry by entry" in result.headline, repr(result)
    product = {"vazn.mul(v)": "vazn.matmul(v)", "torch.mul(vazn, v)": "torch.matmul(vazn, v)",
               "vazn * v": "vazn @ v"}[blend]
    assert result.fix.startswith(f"khoruji = {product}   # in place of your line"), result.fix
    fixed = _pasted(source, "khoruji = ", result.fix)
    assert check_attention(_load(tmp_path, "mul_fixed", fixed).my_attention).passed


SWAHILI = """
def pata_alama(swali, ufunguo):
    return (swali @ ufunguo.transpose(-2, -1)) / math.sqrt(swali.shape[-1])


def funika(alama, kinyago):
    if kinyago is None:
        return alama
    kidogo_kabisa = torch.finfo(alama.dtype).min
    return alama.masked_fill(kinyago, kidogo_kabisa)


def my_attention(q, k, v, mask=None):
    alama = pata_alama(q, k)
    alama = funika(alama, mask)
    uzito = torch.softmax(alama, dim=-1)
    return uzito @ v, uzito
"""


def test_a_mask_used_the_wrong_way_round_in_a_helper_gets_the_helpers_own_line(tmp_path):
    """Replay 16's 02T1: the mask handed to masked_fill as it is, in a helper (funika) where neither
    scores nor mask exist, got scores = scores.masked_fill(~mask, ...); pasted, it led to 'run the cell
    that defines q'. The Fix is now the helper's own line with the mask turned."""
    def load(i, text):
        return _load(tmp_path, f"swahili{i}", text).my_attention
    _until_it_passes(check_attention, load, SWAHILI, [
        ("return alama.masked_fill(~kinyago, kidogo_kabisa)   # in place of your line",
         "return alama.masked")])


ESTONIAN = MODULE + """
    def forward(self, x, mask=None):
        paringud, votmed, vaartused = self.W_q(x), self.W_k(x), self.W_v(x)
        vastused = []
        for pea in range(self.n_heads):
            veerud = slice(pea * self.d_k, (pea + 1) * self.d_k)
            skoorid = paringud[..., veerud] @ votmed[..., veerud].transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                skoorid = skoorid.masked_fill(mask, torch.finfo(skoorid.dtype).min)
            vastused.append(F.softmax(skoorid, dim=-1) @ vaartused[..., veerud])
        return self.W_o(torch.cat(vastused, dim=-1))
"""


def test_a_heads_scores_from_sliced_projections_are_read_as_its_scores(tmp_path):
    """Replay 16's 05T3: scores of one head sliced from the projections (paringud[..., veerud] @ ...) were
    not read as the scores, so the mask's Fix named scores, which the code has not (UnboundLocalError,
    a round lost). The Fix is now in the learner's name, skoorid."""
    def load(i, text):
        return _load(tmp_path, f"estonian{i}", text).MHA
    _until_it_passes(check_multi_head, load, ESTONIAN, [
        ("skoorid = skoorid.masked_fill(~mask, torch.finfo(skoorid.dtype).min)", "skoorid = skoorid.masked")])


ARMENIAN = """
def _glukhner(x, qanak):
    b, n, _ = x.shape
    return x.view(b, n, qanak, -1).transpose(1, 2)


def decode_step(model, tokens, cache):
    if cache is None:
        cache = gpt.KVCache()
    nakhord = cache.length
    x = model.embed(tokens)
    nor_qanak = tokens.shape[1]
    khumb = model.n_heads // model.n_kv_heads
    for shert, blok in enumerate(model.blocks):
        ush = blok.attention
        h = blok.norm_attention(x)
        harts = _glukhner(ush.W_q(h), model.n_heads)
        banali = _glukhner(ush.W_k(h), model.n_kv_heads)
        arjek = _glukhner(ush.W_v(h), model.n_kv_heads)
        bolor_banali, bolor_arjek = cache.append(shert, banali, arjek)
        bolor_banali = bolor_banali.repeat_interleave(khumb, dim=1)
        bolor_arjek = bolor_arjek.repeat_interleave(khumb, dim=1)
        dimak = gpt.decoding_mask(nor_qanak, nakhord + nor_qanak)
        gnahatakan = harts @ bolor_banali.transpose(-2, -1) / math.sqrt(harts.shape[-1])
        gnahatakan = gnahatakan.masked_fill(~dimak, float("-inf"))
        x = x + ush.W_o(merge_heads(gnahatakan.softmax(dim=-1) @ bolor_arjek))
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(x), cache
"""


def test_a_steps_count_of_cached_positions_is_the_one_its_embed_fix_names(tmp_path):
    """Replay 16's 08T1: a step that counts the cached positions (nakhord = cache.length) and embeds from
    0 got x = model.embed(tokens, past), then, after the NameError, past = ... cache[0][0].shape[-2] for
    its gpt.KVCache (a TypeError). The Fix now embeds at nakhord; the next one, a copy of the cache it
    was given, makes it pass."""
    def load(i, text):
        return _step(tmp_path, f"armenian{i}", text)
    _until_it_passes(check_decoding_step, load, ARMENIAN, [
        ("x = model.embed(tokens, nakhord)   # nakhord = positions already cached", "x = model.embed"),
        ("cache = gpt.KVCache() if cache is None else cache.copy()", ("if cache is None", "cache = gpt.KV"))])
    pasted = _pasted(ARMENIAN, "x = model.embed", "x = model.embed(tokens, past)")
    result = check_decoding_step(_step(tmp_path, "armenian_past", pasted))
    assert result.fix.startswith("past = 0 if cache is None else cache.length"), result.fix   # a KVCache's


INDONESIAN = """
def my_causal_mask(n):
    baris = torch.arange(n).view(n, 1)
    kolom = torch.arange(n).view(1, n)
    return (kolom < baris).unsqueeze(0)
"""

TAGALOG = """
class GumawaNgMaskara:
    saklaw = None

    def __call__(self, haba, n):
        if GumawaNgMaskara.saklaw is None:
            GumawaNgMaskara.saklaw = torch.arange(n)
        maskara = GumawaNgMaskara.saklaw[None, :] >= haba[:, None]
        return maskara[:, None, :]


_gumawa = GumawaNgMaskara()


def my_padding_mask(lengths, n):
    return _gumawa(lengths, n)
"""


def test_a_masks_wrong_values_are_said_with_its_wrong_shape(tmp_path):
    """Replay 16's 04T2 and 04T4: a (1, n, n) causal mask that also leaves out the diagonal, and a padding
    mask inverted and built over an arange kept from the first call, were told their shape only; the
    values (and the kept arange) went unsaid. Both are said now, and the Fix names which return line
    it replaces when the cell has others (the class's, which the function hands its work to)."""
    causal = check_causal_mask(_load(tmp_path, "indonesian", INDONESIAN).my_causal_mask)
    assert "returned shape (1, 4, 4)" in causal.headline, repr(causal)
    assert any('values are wrong as well: the known bug "causal excludes self"' in line
               for line in causal.observed), causal.observed
    fixed = _load(tmp_path, "indonesian_fixed", _pasted(INDONESIAN, "return", causal.fix)).my_causal_mask
    assert check_causal_mask(fixed).passed
    padding = check_padding_mask(_load(tmp_path, "tagalog", TAGALOG).my_padding_mask)
    observed = " ".join(padding.observed)
    assert "Its last dimension is 5, the n of an earlier call (lengths=[3], n=5)" in observed, observed
    assert 'its values are wrong as well: the known bug "mask inverted"' in observed, observed
    # in the __call__ my_padding_mask hands its lengths and n to, in its names (since replay 24's 02A1)
    said = ("return (torch.arange(n)[None, :] < haba[:, None])[:, None, :]   # in place of your line return "
            "maskara[:, None, :]")
    assert padding.fix.startswith(said), padding.fix
    fixed = _load(tmp_path, "tagalog_fixed", _pasted(TAGALOG, "return maskara", padding.fix)).my_padding_mask
    assert check_padding_mask(fixed).passed


ROMANIAN = """
class Atentie:
    def __init__(self):
        self.scala = None

    def __call__(self, q, k, v, mask=None):
        if q.dim() == 2:
            m = None if mask is None else mask.unsqueeze(0)
            o, p = self(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), m)
            return o[0], p[0]
        if self.scala is None:
            self.scala = 1.0 / math.sqrt(q.shape[-1])
        iesiri, ponderi = [], []
        for b in range(q.shape[0]):
            scoruri = q[b] @ k[b].transpose(-2, -1) * self.scala
            if mask is not None:
                scoruri = scoruri.masked_fill(~mask[b], torch.finfo(scoruri.dtype).min)
            p = torch.softmax(scoruri, dim=-1)
            ponderi.append(p)
            iesiri.append(p @ v[b])
        return torch.stack(iesiri), torch.stack(ponderi)


_atentie = Atentie()


def my_attention(q, k, v, mask=None):
    return _atentie(q, k, v, mask)
"""


def test_inputs_wrong_by_their_width_too_are_not_put_down_to_the_mask_alone(tmp_path):
    """Replay 16's 02T4: a scale computed on the first call and kept, and a mask indexed by the batch; the
    inputs of other widths (d_k = 9 and 5) all carry masks, so the verdict sent the learner to the mask
    alone for three rounds. It now says that every input of another width is wrong too."""
    result = check_attention(_load(tmp_path, "romanian", ROMANIAN).my_attention)
    observed = " ".join(result.observed)
    assert "only inputs with one go wrong: look at how the mask is applied" in observed, repr(result)
    assert "But every input with d_k = 5 and 9 is wrong too, where each right one has d_k = 16: look at " \
           "the scale as well" in observed, observed


def test_a_scale_set_once_and_kept_gets_its_line_set_on_each_call(tmp_path):
    """Replay 16's 02T4 r5: a scale set on the first call and kept on an object (if self.scala is None:
    self.scala = ...), in the __call__ of the object my_attention calls, got scores = q @ k... (the whole
    batch, where the learner's loop took q[b]): pasted, every output had an axis too many. The Fix is now
    the learner's own line without its guard."""
    fixed_mask = ROMANIAN.replace("~mask[b]", "~(mask[b] if mask.dim() == q.dim() else mask)")

    def load(i, text):
        return _load(tmp_path, f"romanian{i}", text).my_attention
    _until_it_passes(check_attention, load, fixed_mask, [
        ("self.scala = 1.0 / math.sqrt(q.shape[-1])   # in place of your lines 'if self.scala is None:'",
         ("if self.scala is None", "self.scala = 1.0"))])


SLOVAK = """
class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.pocet_hlav = n_heads
        self.rozmer_hlavy = d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def forward(self, x, mask=None):
        b, dlzka, d = x.shape
        q = self.W_q(x).view(b, self.pocet_hlav, dlzka, self.rozmer_hlavy)
        k = self.W_k(x).view(b, dlzka, self.pocet_hlav, self.rozmer_hlavy).transpose(1, 2)
        v = self.W_v(x).view(b, dlzka, self.pocet_hlav, self.rozmer_hlavy).transpose(1, 2)
        skore = q @ k.transpose(-2, -1) / self.rozmer_hlavy ** 0.5
        if mask is not None:
            skore = skore.masked_fill(~mask, torch.finfo(skore.dtype).min)
        vystup = (skore.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, dlzka, d)
        return self.W_o(vystup)
"""


def test_a_modules_own_names_for_its_head_count_and_width_are_the_fixs(tmp_path):
    """Replay 16's 05T2: a module that keeps its head count and width as self.pocet_hlav and
    self.rozmer_hlavy got Fix lines with self.n_heads and self.d_k (an AttributeError when pasted). The
    Fix now reads them under the module's own names."""
    result = check_multi_head(_load(tmp_path, "slovak", SLOVAK).MHA)
    assert "self.pocet_hlav" in result.fix and "self.n_heads" not in result.fix, repr(result)
    assert "self.rozmer_hlavy" in result.fix and "self.d_k" not in result.fix, result.fix
    # the Fix is what the queries are (the catalog's form for this bug): put after their q =
    fixed = _load(tmp_path, "slovak_fixed", _pasted(SLOVAK, "q = self.W_q", "q = " + result.fix)).MHA
    assert check_multi_head(fixed).passed, result.fix


def test_a_size_mismatch_raised_by_a_reversed_transpose_gets_the_line_with_the_last_two_axes(tmp_path):
    """Replay 16's 02T1 r1: keys transposed with .T in a helper (swali @ ufunguo.T) raised on every batched
    input, and the Fix said to call the function by hand and read the error the verdict had printed. The
    Fix is now that line with .transpose(-2, -1); the next, the helper's mask line turned, and it passes."""
    source = SWAHILI.replace("ufunguo.transpose(-2, -1)", "ufunguo.T")

    def load(i, text):
        return _load(tmp_path, f"swahili_t{i}", text).my_attention
    _until_it_passes(check_attention, load, source, [
        ("return (swali @ ufunguo.transpose(-2, -1)) / math.sqrt(swali.shape[-1])   # in place of your line",
         "return (swali @"),
        ("return alama.masked_fill(~kinyago, kidogo_kabisa)", "return alama.masked")])


SLOVENIAN = """
from dataclasses import dataclass

@dataclass
class Koracnik:
    polozaj: int = 0

    def korak(self, model, zetoni, predpomnilnik):
        if predpomnilnik is None:
            predpomnilnik = gpt.KVCache()
            self.polozaj = 0
        nov = predpomnilnik.copy()
        st_novih = zetoni.shape[1]
        x = model.embed(zetoni, start=self.polozaj)
        skupina = model.n_heads // model.n_kv_heads
        for i, sloj in enumerate(model.blocks):
            pozornost = sloj.attention
            h = sloj.norm_attention(x)
            poizvedbe = split_heads(pozornost.W_q(h), model.n_heads)
            kljuci, vrednosti = nov.append(i, split_heads(pozornost.W_k(h), model.n_kv_heads),
                                           split_heads(pozornost.W_v(h), model.n_kv_heads))
            kljuci = kljuci.repeat_interleave(skupina, dim=1)
            vrednosti = vrednosti.repeat_interleave(skupina, dim=1)
            ocene = poizvedbe @ kljuci.transpose(-1, -2)
            ocene /= model.d_head ** 0.5
            maska = gpt.decoding_mask(st_novih, kljuci.shape[-2])
            ocene.masked_fill_(~maska, float("-inf"))
            x += pozornost.W_o(merge_heads(torch.softmax(ocene, dim=-1) @ vrednosti))
            x += sloj.mlp(sloj.norm_mlp(x))
        self.polozaj += st_novih
        return model.unembed(x), nov


_koracnik = Koracnik()


def decode_step(model, tokens, cache):
    return _koracnik.korak(model, tokens, cache)
"""


def test_a_position_kept_on_an_object_is_embedded_from_the_cache_the_method_is_given(tmp_path):
    """Replay 16's 08T4 r2: a step that hands its work to a method of a dataclass of its own, which embeds
    at self.polozaj (a count kept between calls), got past = 0 if cache is None else cache[0][0]..., a
    cache the method does not name (its own is predpomnilnik): pasted, it read the notebook's global cache
    (a TypeError, then an IndexError). The Fix is now the method's embed line, at the positions its own
    cache holds."""
    def load(i, text):
        return _step(tmp_path, f"slovenian{i}", text)
    _until_it_passes(check_decoding_step, load, SLOVENIAN, [
        ("x = model.embed(zetoni, start=(0 if predpomnilnik is None else predpomnilnik.length))",
         "x = model.embed")])


def test_a_mask_indexed_by_the_loops_batch_index_is_broadcast_above_the_loop(tmp_path):
    """Replay 17's 02T4 (stuck in replays 16 and 17): a loop over the batch reads mask[b], and a mask that
    broadcasts ((4, 6) over batch 2 x 3 heads, or (3, 1, 5)) has no batch axis there; the Fix named the
    masked_fill line (then one it had, then 'mask ignored'). The Fix is now a line above the loop that
    expands the mask to the scores' shape; pasted there, the next verdict is the kept scale, and with
    that Fix pasted it passes."""
    result = check_attention(_load(tmp_path, "romanian_b0", ROMANIAN).my_attention)
    assert result.fix.startswith("if mask is not None: mask = mask.expand(*q.shape[:-1], k.shape[-2])   # "
                                 "above your loop"), repr(result)
    lines = ROMANIAN.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("for b in range"))
    lines.insert(at, lines[at][: len(lines[at]) - len(lines[at].lstrip())] + result.fix.split("   #")[0])
    source = "\n".join(lines) + "\n"

    def load(i, text):
        return _load(tmp_path, f"romanian_b{i + 1}", text).my_attention
    _until_it_passes(check_attention, load, source, [
        ("self.scala = 1.0 / math.sqrt(q.shape[-1])   # in place of your lines 'if self.scala is None:'",
         ("if self.scala is None", "self.scala = 1.0"))])


def test_a_function_that_only_hands_its_work_to_an_object_of_its_own_is_read_through_it(tmp_path):
    """Replay 16 and 17's 02T4: my_attention only returns _atentie(q, k, v, mask), the work in the
    __call__ of a class of the learner's, with the same parameters; its names (scoruri) were not read, so
    Fix lines named scores (an UnboundLocalError when pasted, a round lost). A helper of other parameter
    names is not read so: a Fix line reads the function's own (lengths, not haba)."""
    assert your_names(_load(tmp_path, "romanian_n", ROMANIAN).my_attention).get("scores") == "scoruri"
    assert "scores" not in your_names(_load(tmp_path, "tagalog_n", TAGALOG).my_padding_mask)


TAMIL = """
def my_attention(q, k, v, mask=None):
    alavu = q.shape[-1]
    q /= math.sqrt(alavu)
    mathippengal = torch.einsum("...qd,...kd->...qk", q, k)
    if mask is not None:
        mathippengal = mathippengal.masked_fill(~mask, torch.finfo(torch.float32).min)
    edaigal = mathippengal.softmax(-1)
    return torch.einsum("...qk,...kd->...qd", edaigal, v), edaigal
"""


def test_an_input_divided_in_place_by_an_augmented_assignment_gets_its_line_out_of_place(tmp_path):
    """Replay 17's 02T3: q /= math.sqrt(alavu) changed the caller's q, and the Fix was words ('use
    out-of-place operations: scores = scores / ...'), naming scores where the line divides q. The Fix
    is now that line out of place; the next, the float32 minimum in the scores' own dtype, and it passes."""
    def load(i, text):
        return _load(tmp_path, f"tamil{i}", text).my_attention
    _until_it_passes(check_attention, load, TAMIL, [
        ("q = q / math.sqrt(alavu)   # in place of your line", "q /= math"),
        ("mathippengal = mathippengal.masked_fill(~mask, torch.finfo(mathippengal.dtype).min)",
         "mathippengal = mathippengal.masked_fill")])


# replay 17's 08T4 r1: SLOVENIAN with its mask not yet turned
SLOVENIAN_STEPPER = SLOVENIAN.replace('ocene.masked_fill_(~maska, float("-inf"))',
                                      'ocene.masked_fill_(maska, float("-inf"))')
assert SLOVENIAN_STEPPER != SLOVENIAN


def test_a_mask_made_to_attend_filled_where_true_gets_its_line_turned(tmp_path):
    """Replay 17's 08T4 r1: maska = gpt.decoding_mask(...) then ocene.masked_fill_(maska, float("-inf")):
    NaN everywhere, which every variant of a turned mask gives with a -inf fill, so no known bug matched
    and the Fix was the whole recipe. The Fix is now that line with the mask turned; pasted, the next
    verdict names the learner's other mistake (the position kept on the object)."""
    source = SLOVENIAN_STEPPER
    result = check_decoding_step(_step(tmp_path, "t", source))
    assert result.bug is None and "NaN" in result.headline, repr(result)
    assert result.fix.startswith('ocene.masked_fill_(~maska, float("-inf"))   # in place of your line: the '
                                 "mask is True where a query may attend"), result.fix
    pasted = _pasted(source, "ocene.masked_fill_", result.fix)
    then = check_decoding_step(_step(tmp_path, "t2", pasted))
    assert then.bug == "state_outside_cache", repr(then)


def test_nan_from_a_mask_made_to_attend_but_not_filled_with_it_is_not_told_to_turn_it(tmp_path):
    # the mask made right and added as (1 - mask) * -inf: 0 * -inf is NaN; no masked_fill to turn
    source = SLOVENIAN_STEPPER.replace(
        'ocene.masked_fill_(maska, float("-inf"))', 'ocene = ocene + (1 - maska.float()) * float("-inf")')
    result = check_decoding_step(_step(tmp_path, "n", source))
    assert result.bug is None and "NaN" in result.headline, repr(result)
    assert "~maska" not in result.fix, result.fix


AMHARIC_BMM = """
def my_attention(q, k, v, mask=None):
    mejemeria = q.shape[:-2]                       # ye-batch/head lekek (leading dims)
    n_tiyake, ltet = q.shape[-2], q.shape[-1]      # n_q, d_k
    n_qulf, ye_eset_ltet = k.shape[-2], v.shape[-1]   # n_k, d_v
    # hulunim batch and ande lay asmetaw (flatten) le bmm
    tiyake = q.reshape(-1, n_tiyake, ltet)
    qulf = k.reshape(-1, n_qulf, ltet)
    eset = v.reshape(-1, n_qulf, ye_eset_ltet)
    wutet = torch.bmm(tiyake, qulf.transpose(1, 2)) / math.sqrt(ltet)
    if mask is not None:
        gembel = mask.expand(*mejemeria, n_tiyake, n_qulf).reshape(-1, n_tiyake, n_qulf)
        wutet = wutet.masked_fill(~gembel, torch.finfo(wutet.dtype).min)
    # float32 le mereget (stability)
    kebed = F.softmax(wutet, dim=-1, dtype=torch.float32)
    mels = torch.bmm(kebed, eset)
    mels = mels.reshape(*mejemeria, n_tiyake, ye_eset_ltet)
    kebed = kebed.reshape(*mejemeria, n_tiyake, n_qulf)
    return mels, kebed
"""


LATVIAN_LOOP = '''
def sadalit_galvas(t, galvas):
    """(batch, n, d_model) -> (batch, galvas, n, d_k)"""
    b, n, d = t.shape
    return t.view(b, n, galvas, d // galvas).permute(0, 2, 1, 3)


class MyMultiHeadAttention(nn.Module):
    """Daudzgalvu uzmanība (multi-head self-attention)."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        b, n, d_model = x.shape
        vaicajumi = sadalit_galvas(self.W_q(x), self.n_heads)
        atslegas = sadalit_galvas(self.W_k(x), self.n_heads)
        vertibas = sadalit_galvas(self.W_v(x), self.n_heads)
        izeja = torch.zeros(b, n, d_model)              # rezultāts, aizpildām pa piemēriem
        for i in range(b):                              # cilpa pa batch
            punkti = vaicajumi[i] @ atslegas[i].transpose(-2, -1)   # (galvas, n, n)
            punkti /= math.sqrt(self.d_k)
            if mask is not None:
                punkti.masked_fill_(~mask, -1e9)        # aizliegtās vietas
            svari = torch.softmax(punkti, dim=-1)   # over the keys: the last dimension
            galvu_izeja = svari @ vertibas[i]           # (galvas, n, d_k)
            izeja[i] = galvu_izeja.permute(1, 0, 2).reshape(n, d_model)
        return self.W_o(izeja)
'''


def test_a_softmax_made_float32_gets_its_line_without_the_dtype(tmp_path):
    """Replay 18's 02U2 (stuck): F.softmax(wutet, dim=-1, dtype=torch.float32), then torch.bmm with float64
    values, raised on float64 inputs: told dtype_changed, 'a tensor built inside your code', and the
    mask line as the Fix, which put back a mask the learner had flattened for bmm; three times. The Fix
    is now their softmax without the dtype=; pasted, the function passes."""
    result = check_attention(_load(tmp_path, "am", AMHARIC_BMM).my_attention)
    assert result.bug == "dtype_changed", repr(result)
    assert result.fix.startswith("kebed = F.softmax(wutet, dim=-1)   # in place of your line"), result.fix
    assert not any("A tensor built inside your code" in line for line in result.observed), repr(result)
    fixed = _pasted(AMHARIC_BMM, "kebed = F.softmax", result.fix)
    assert check_attention(_load(tmp_path, "am_fixed", fixed).my_attention).passed


def test_an_output_buffer_built_in_float32_gets_the_inputs_dtype(tmp_path):
    """Replay 18's 05U4 r2 and r3: izeja = torch.zeros(b, n, d_model), filled per batch row, raised on float64
    inputs; the Fix was the masked_fill line (then 'your code has this line already'). The Fix is now
    their zeros line with dtype=x.dtype; pasted, the module passes."""
    source = LATVIAN_LOOP.replace("punkti.masked_fill_(~mask, -1e9)",
                                  "punkti = punkti.masked_fill(~mask, torch.finfo(punkti.dtype).min)")
    result = check_multi_head(_load(tmp_path, "lv", source).MyMultiHeadAttention)
    assert result.bug == "dtype_changed", repr(result)
    built = "izeja = torch.zeros(b, n, d_model, dtype=x.dtype)   # in place of your line"
    assert result.fix.startswith(built), result.fix
    assert any("A tensor built inside your code" in line for line in result.observed), repr(result)
    fixed = _pasted(source, "izeja = torch.zeros", result.fix)
    assert check_multi_head(_load(tmp_path, "lv_fixed", fixed).MyMultiHeadAttention).passed


IRISH_FUSED = '''


class MyMultiHeadAttention(nn.Module):
    # Aird ilchinn: x (baisc, n, d_model) -> (baisc, n, d_model)

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        # an scalu mar mhaolán (buffer), 1 / sqrt(d_k)
        self.register_buffer("scala", torch.tensor(self.d_k ** -0.5))

    def roinn_ina_cinn(self, t):
        # roinn na gnéithe ina gcinn le torch.chunk, ansin cruach iad
        pioctai = torch.chunk(t, self.n_heads, dim=-1)   # n_heads x (baisc, n, d_k)
        return torch.stack(pioctai, dim=2)

    def forward(self, x, mask=None):
        ceist, eochair, luach = (w(x).view(x.shape[0], x.shape[1], self.n_heads, self.d_k).transpose(1, 2)
                                for w in (self.W_q, self.W_k, self.W_v))
        masc = None
        if mask is not None:
            masc = ~mask          # mar atá i nn.MultiheadAttention: True = déan neamhaird
        aschur = F.scaled_dot_product_attention(ceist, eochair, luach, attn_mask=masc,
                                                scale=float(self.scala))
        # ceangail na cinn le chéile arís
        return self.W_o(torch.cat(aschur.unbind(1), dim=-1))
'''


def test_a_mask_turned_into_a_name_for_the_fused_function_gets_that_line_kept_as_given(tmp_path):
    """Replay 18's 05U3 r3: masc = ~mask (nn.MultiheadAttention's way round), then attn_mask=masc in a call
    to F.scaled_dot_product_attention over two lines. The Fix was 'F.scaled_dot_product_attention(ceist,
    eochair, luach, attn_mask=mask)', a call with no name for its result (pasted, the return line's aschur
    was gone). The Fix is now their line, the mask kept as given; pasted, the module passes."""
    result = check_multi_head(_load(tmp_path, "ga", IRISH_FUSED).MyMultiHeadAttention)
    assert result.bug == "mask_inverted", repr(result)
    assert result.fix.startswith("masc = mask   # in place of your line masc = ~mask:"), result.fix
    fixed = _pasted(IRISH_FUSED, "masc = ~mask", result.fix)
    assert check_multi_head(_load(tmp_path, "ga_fixed", fixed).MyMultiHeadAttention).passed


KYRGYZ_PER_ROW = """
def decode_step(model, tokens, cache):
    murunku = 0 if cache is None else cache[0][0].shape[2]
    batch, jany = tokens.shape
    toptom = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, murunku)
    jany_kesh = []
    for katmar, blok in enumerate(model.blocks):
        dikkat = blok.attention
        n = blok.norm_attention(x)
        suroo = split_heads(dikkat.W_q(n), model.n_heads)
        achkych = split_heads(dikkat.W_k(n), model.n_kv_heads)
        maani = split_heads(dikkat.W_v(n), model.n_kv_heads)
        if cache is not None:
            achkych = torch.cat((cache[katmar][0], achkych), dim=2)
            maani = torch.cat((cache[katmar][1], maani), dim=2)
        jany_kesh.append((achkych, maani))
        chykyshtar = []
        for b in range(batch):   # ar bir yrattyn ozuncho
            chyk = F.scaled_dot_product_attention(
                suroo[b], achkych[b].repeat_interleave(toptom, dim=0),
                maani[b].repeat_interleave(toptom, dim=0),
                is_causal=jany > 1)   # bir token bolso maska kerek emes
            chykyshtar.append(chyk)
        bashtar = torch.stack(chykyshtar)      # (batch, h, jany, d)
        x = x + dikkat.W_o(merge_heads(bashtar))
        x = x + blok.mlp(blok.norm_mlp(x))
    logits = model.unembed(x)
    return logits, jany_kesh
"""


def test_is_causal_in_a_call_on_indexed_queries_gets_the_mask_in_the_calls_own_names(tmp_path):
    """Replay 18's 08U4 r3: F.scaled_dot_product_attention(suroo[b], achkych[b].repeat_interleave(...), ...,
    is_causal=jany > 1) per batch row was told 'attn_mask=torch.ones(q.shape[-2], achkych.shape[-2], ...)
    # in place of is_causal=True': q, which the step does not have (a NameError), and is_causal=True,
    which it does not write. The Fix now sizes the mask by the names the call's queries and keys start
    from, in place of the keyword as written; pasted, the step passes."""
    result = check_decoding_step(_load(tmp_path, "ky", KYRGYZ_PER_ROW).decode_step)
    assert result.bug == "is_causal_top_left", repr(result)
    code, comment = result.fix.split("   #", 1)
    assert code == ("attn_mask=torch.ones(suroo.shape[-2], achkych.shape[-2], dtype=torch.bool).tril("
                    "diagonal=achkych.shape[-2] - suroo.shape[-2])"), result.fix
    assert comment.startswith(" in place of is_causal=jany > 1:"), result.fix
    fixed = KYRGYZ_PER_ROW.replace("is_causal=jany > 1", code)
    assert check_decoding_step(_load(tmp_path, "ky_fixed", fixed).decode_step).passed


PERSIAN_KEPT = """
_mask_zakhire = None


def my_causal_mask(n):
    global _mask_zakhire
    if _mask_zakhire is not None:
        return _mask_zakhire
    kelid = torch.arange(n)[:, None]     # kelid-ha (keys)
    porsesh = torch.arange(n)[None, :]   # porsesh-ha (queries)
    _mask_zakhire = kelid <= porsesh     # kelid <= porsesh: faghat gozashte
    return _mask_zakhire
"""


def test_a_mask_handed_back_from_an_earlier_call_gets_the_mask_in_place_of_that_guard(tmp_path):
    """Replay 18's 04U2: a mask kept in a global and handed back (if _mask_zakhire is not None: return
    _mask_zakhire) was told 'return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your line
    return _mask_zakhire', a line the function has twice; neither alone mended it, and the next round's Fix
    named its own line. The Fix now goes in place of the guard and its return; pasted, the mask passes."""
    result = check_causal_mask(_load(tmp_path, "fa", PERSIAN_KEPT).my_causal_mask)
    assert result.fix.startswith("return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your "
                                 "lines 'if _mask_zakhire is not None:' and the one under it"), result.fix
    fixed = PERSIAN_KEPT.replace("    if _mask_zakhire is not None:\n        return _mask_zakhire\n",
                                 "    " + result.fix.split("   #")[0] + "\n")
    assert fixed != PERSIAN_KEPT
    assert check_causal_mask(_load(tmp_path, "fa_fixed", fixed).my_causal_mask).passed


GREEK_HINTED = """
def my_attention(q, k, v, mask=None):
    vathmoi: torch.Tensor = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        vathmoi = torch.where(mask, vathmoi, float("-inf"))
    vari: torch.Tensor = F.softmax(vathmoi, dim=-1)       # βάρη
    exodos: torch.Tensor = vari @ v                       # έξοδος
    return exodos, vari
"""


def test_scores_named_with_a_type_hint_are_read_as_the_scores(tmp_path):
    """From replay 18's 02U3 r2: vathmoi: torch.Tensor = ... then torch.where(mask, vathmoi, float("-inf"))
    was told 'scores = scores.masked_fill(~mask, ...)', names the function does not have (pasted:
    UnboundLocalError). An assignment with a type hint is now read as an assignment: the Fix is in their
    names; pasted in place of the torch.where line, it passes. (The replay's scores came from a helper of
    its own, which still leaves them unnamed: left as it was.)"""
    result = check_attention(_load(tmp_path, "el", GREEK_HINTED).my_attention)
    assert result.bug == "nan_on_fully_masked_row", repr(result)
    # their own torch.where line, with the minimum in place of -inf (it was a masked_fill in their names)
    line = "vathmoi = torch.where(mask, vathmoi, torch.finfo(vathmoi.dtype).min)"
    assert result.fix.startswith(line + "   # in place of your line"), result.fix
    fixed = _pasted(GREEK_HINTED, "vathmoi = torch.where", result.fix)
    assert check_attention(_load(tmp_path, "el_fixed", fixed).my_attention).passed


MINUS_INF_ELSEWHERE = """
def my_attention(q, k, v, mask=None):
    puan = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        puan = torch.where(mask, puan, -math.inf)
    return torch.softmax(puan, dim=-1) @ v
"""


def test_minus_inf_filled_through_where_or_an_index_gets_its_own_line_with_the_minimum(tmp_path):
    """-inf written with torch.where or by indexing (S[~m] = -inf) was given the catalog's masked_fill line
    in the names it found, a form the learner's line does not have: the rule that gives a learner's own
    line looked for masked_fill alone. Now it is their line with the dtype's own minimum in place of -inf;
    pasted in place of it, it passes."""
    indexed = MINUS_INF_ELSEWHERE.replace("puan = torch.where(mask, puan, -math.inf)",
                                          "puan[~mask.expand_as(puan)] = -math.inf")
    expected = {"where": "puan = torch.where(mask, puan, torch.finfo(puan.dtype).min)",
                "indexed": "puan[~mask.expand_as(puan)] = torch.finfo(puan.dtype).min"}
    for name, source, first in (("where", MINUS_INF_ELSEWHERE, "puan = torch.where"),
                                ("indexed", indexed, "puan[~mask")):
        result = check_attention(_load(tmp_path, f"tr_{name}", source).my_attention)
        assert result.bug == "nan_on_fully_masked_row", repr(result)
        assert result.fix.startswith(expected[name] + "   # in place of your line"), result.fix
        fixed = _pasted(source, first, result.fix)
        assert check_attention(_load(tmp_path, f"tr_{name}_fixed", fixed).my_attention).passed, fixed


PATHS = """
class Pansin:
    @staticmethod
    def sukat(tanong):
        return torch.rsqrt(torch.tensor(tanong.shape[-1], dtype=tanong.dtype))

    @staticmethod
    def tuos(tanong, susi, halaga, takip=None):
        puntos = tanong @ susi.transpose(-2, -1)
        if takip is None:
            timbang = torch.softmax(puntos * Pansin.sukat(tanong), dim=-1)
            return timbang @ halaga, timbang
        dagdag = torch.zeros_like(puntos)
        dagdag = dagdag.masked_fill(~takip, torch.finfo(puntos.dtype).min)
        timbang = torch.softmax(puntos + dagdag, dim=-1)
        return timbang @ halaga, timbang


def my_attention(q, k, v, mask=None):
    return Pansin.tuos(q, k, v, mask)
"""


def test_a_scale_on_one_path_only_is_said_and_moved_to_where_the_scores_are_made(tmp_path):
    """Replay 19's 02V3 (rounds 1 and 2): a static method scaled its scores only on its early return for
    no mask. Told "It is 1 on every input" (false: the inputs without a mask were right) and given the
    catalog's scores line in generic names, the learner scaled its shared scores line and so scaled the
    other path twice; then was given the same line again, which their code already had. The verdict now
    says which path goes wrong and how, and the Fix is their two lines (then their one line, for twice)."""
    result = check_attention(_load(tmp_path, "one_path", PATHS).my_attention)
    assert result.bug == "wrong_scale", repr(result)
    said = " ".join(result.observed)
    assert "It is 1 on every input," not in said and "It is 1 on every input it gets wrong" in said, said
    assert "right on all 4 main inputs without a mask and wrong on every one with a mask" in said, said
    assert "its path with a mask does not scale the scores at all" in said, said
    said = ("puntos = tanong @ susi.transpose(-2, -1) * Pansin.sukat(tanong); "
            "timbang = torch.softmax(puntos, dim=-1)   # in place of your two lines")
    assert result.fix.startswith(said), result.fix
    first, second = result.fix.split("   #")[0].split("; ")
    fixed = _pasted(_pasted(PATHS, "puntos = tanong @", first), "timbang = torch.softmax(puntos *", second)
    after = check_attention(_load(tmp_path, "one_path_fixed", fixed).my_attention)
    assert after.bug == "fill_overflows_float16", repr(after)     # the other planted mistake, next

    twice = PATHS.replace("puntos = tanong @ susi.transpose(-2, -1)",
                          "puntos = tanong @ susi.transpose(-2, -1) / math.sqrt(tanong.shape[-1])")
    result = check_attention(_load(tmp_path, "twice", twice).my_attention)
    assert result.bug == "wrong_scale", repr(result)
    said = " ".join(result.observed)
    assert "its path without a mask divides the scores by √d_k twice" in said, said
    said = "timbang = torch.softmax(puntos, dim=-1)   # in place of your line: the scores are scaled where"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(twice, "timbang = torch.softmax(puntos *", result.fix)
    assert check_attention(_load(tmp_path, "twice_fixed", fixed).my_attention).bug == "fill_overflows_float16"


def test_a_mask_added_to_the_scores_gets_a_fill_in_the_line_that_adds_it(tmp_path):
    """Replay 19's 02V3 (round 3): an additive mask (dagdag.masked_fill(~takip, finfo.min), then
    softmax(puntos + dagdag)) overflows in float16. The Fix was scores = scores.masked_fill(~mask, ...),
    names the static method has neither of (and scores was a global of the notebook's). It is now the
    line that adds the mask, with the scores filled there."""
    source = PATHS.replace("puntos = tanong @ susi.transpose(-2, -1)\n",
                           "puntos = tanong @ susi.transpose(-2, -1) * Pansin.sukat(tanong)\n")
    source = source.replace("softmax(puntos * Pansin.sukat(tanong), dim=-1)", "softmax(puntos, dim=-1)")
    result = check_attention(_load(tmp_path, "added", source).my_attention)
    assert result.bug == "fill_overflows_float16", repr(result)
    said = "timbang = torch.softmax(puntos.masked_fill(~takip, torch.finfo(puntos.dtype).min), dim=-1)"
    assert result.fix.startswith(said + "   # in place of your line"), result.fix
    fixed = _pasted(source, "timbang = torch.softmax(puntos + dagdag", result.fix)
    assert check_attention(_load(tmp_path, "added_fixed", fixed).my_attention).passed


def test_a_scale_fixed_in_an_in_place_line_is_given_out_of_place(tmp_path):
    """Replay 19's 02V2 (round 1): q *= 1 / d_k ** 0.5 read the notebook's d_k. The Fix kept the in-place
    *=, so the pasted line was itself a known bug (modifies_inputs), named the round after. It is now
    written out of place, and its comment says why."""
    source = """
d_k = 8

def my_attention(q, k, v, mask=None):
    q *= 1 / d_k ** 0.5
    kulebi = q @ k.transpose(-2, -1)
    if mask is not None:
        kulebi = kulebi.masked_fill(~mask, torch.finfo(kulebi.dtype).min)
    tsonebi = torch.softmax(kulebi, dim=-1)
    return tsonebi @ v, tsonebi
"""
    result = check_attention(_load(tmp_path, "augmented", source).my_attention)
    assert result.bug == "wrong_scale", repr(result)
    said = "q = q * (1 / q.shape[-1] ** 0.5)   # in place of your line: the root of q.shape[-1], not d_k, and"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "q *= 1", result.fix)
    assert check_attention(_load(tmp_path, "augmented_fixed", fixed).my_attention).passed


def test_a_loop_over_the_first_axis_that_raises_without_a_batch_is_named(tmp_path):
    """Replay 19's 02V4 (round 1): a loop for b in range(q.shape[0]) raised on an input with no batch axis,
    and the verdict quoted the error of the line it reached ('0D and 1D') and said to run it by hand. The
    Fix now names the loop and why it goes wrong there."""
    source = """
def my_attention(q, k, v, mask=None):
    kimenetek, sulyok = [], []
    for b in range(q.shape[0]):
        pontszam = q[b] @ k[b].transpose(-2, -1) / math.sqrt(v.shape[-1])
        if mask is not None:
            pontszam = pontszam.masked_fill(~mask, torch.finfo(pontszam.dtype).min)
        suly = F.softmax(pontszam, dim=-1)
        kimenetek.append(suly @ v[b])
        sulyok.append(suly)
    return torch.stack(kimenetek), torch.stack(sulyok)
"""
    result = check_attention(_load(tmp_path, "loop", source).my_attention)
    assert "raised" in result.headline and result.bug is None, repr(result)
    assert result.fix.startswith("take out the loop 'for b in range(q.shape[0])' and work on the whole "
                                 "tensors: it reads q's first axis as a batch"), result.fix
    whole = """
def my_attention(q, k, v, mask=None):
    pontszam = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    if mask is not None:
        pontszam = pontszam.masked_fill(~mask, torch.finfo(pontszam.dtype).min)
    suly = F.softmax(pontszam, dim=-1)
    return suly @ v, suly
"""
    assert check_attention(_load(tmp_path, "whole", whole).my_attention).bug == "wrong_scale"  # the next one


def test_a_past_read_from_the_cached_keys_last_axis_gets_that_line_on_the_positions_axis(tmp_path):
    """Replay 19's 08V1 (round 4): nawpaq = cache[0][0].shape[-1] read d_head for the count of cached
    positions. The verdict (positions not advanced) gave x = model.embed(tokens, past): the learner's own
    embed line under another name, a NameError pasted. The Fix is now their line reading the axis the
    step joins its keys along."""
    source = "from attnviz import gpt\n" + DECODING.replace(
        "past = 0 if cache is None else cache[0][0].shape[-2]",
        "past_n = 0 if cache is None else cache[0][0].shape[-1]").replace(
        "model.embed(tokens, past)", "model.embed(tokens, past_n)").replace(
        "is_causal=True", "attn_mask=gpt.decoding_mask(tokens.shape[1], key.shape[-2])")
    result = check_decoding_step(_load(tmp_path, "last_axis", source).decode_step)
    assert result.bug == "positions_not_advanced", repr(result)
    said = "past_n = 0 if cache is None else cache[0][0].shape[-2]   # in place of your line: the positions"
    assert result.fix.startswith(said), result.fix
    fixed = _load(tmp_path, "last_axis_fixed", _pasted(source, "past_n = ", result.fix)).decode_step
    assert check_decoding_step(fixed).passed


MALAY = """
def my_attention(q, k, v, mask=None):
    if q.dim() == 2:
        hasil, pemberat = my_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0),
                                       None if mask is None else mask.unsqueeze(0))
        return hasil.squeeze(0), pemberat.squeeze(0)
    depan = q.shape[:-2]
    n_q, d_k = q.shape[-2], q.shape[-1]
    n_k = k.shape[-2]
    q3, k3, v3 = q.flatten(0, -3), k.flatten(0, -3), v.flatten(0, -3)
    skor = torch.bmm(q3, k3.transpose(1, 2)) / d_k ** 0.5
    if mask is not None:
        topeng = mask.flatten(0, -3)
        skor = skor.masked_fill(~topeng, torch.finfo(skor.dtype).min)
    pemberat = F.softmax(skor, dim=-1)
    hasil = torch.bmm(pemberat, v3)
    return hasil.view(*depan, n_q, d_k), pemberat.view(*depan, n_q, n_k)
"""


def test_an_output_as_wide_as_the_keys_is_named_and_then_a_mask_flattened_before_its_broadcast(tmp_path):
    """Replay 20's 02W3 (rounds 1 to 3): the output viewed with d_k where d_v belongs was told 'right on
    inputs without batch dimensions' (batch one only) beside an unbatched input it raised on, and given a
    scores line it already had, twice. Then a mask flattened before it was broadcast got only 'run your
    function by hand'. Now each gets its own words and its own line, and pasted in turn they pass."""
    result = check_attention(_load(tmp_path, "malay", MALAY).my_attention)
    assert result.bug is None and "without batch dimensions" not in result.headline, repr(result)
    assert result.headline.endswith("is right whenever the values are as wide as the keys (d_v = d_k), and "
                                    "wrong (or raised) whenever their widths differ."), repr(result)
    said = "return hasil.view(*depan, n_q, v.shape[-1]), pemberat.view(*depan, n_q, n_k)   # in place of"
    assert result.fix.startswith(said), result.fix
    wide = _pasted(MALAY, "return hasil.view", result.fix)
    result = check_attention(_load(tmp_path, "malay_wide", wide).my_attention)
    said = "topeng = mask.expand(*q.shape[:-1], k.shape[-2]).flatten(0, -3)   # in place of your line"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(wide, "topeng = mask.flatten", result.fix)
    assert check_attention(_load(tmp_path, "malay_fixed", fixed).my_attention).passed


def test_a_softmax_module_over_the_wrong_axis_gets_the_line_that_makes_it(tmp_path):
    """Replay 20's 05W2 (round 2): self.softmax = nn.Softmax(dim=1) in __init__, called as
    self.softmax(akara) in a loop over the heads. The Fix was isi_niile.append(self.softmax(-1) @ v): the
    scores dropped, an AttributeError pasted. It is now the line that makes the module, over dim=-1."""
    source = MODULE + """
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x, mask=None):
        isi_niile = []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            q, k, v = self.W_q(x)[..., cols], self.W_k(x)[..., cols], self.W_v(x)[..., cols]
            akara = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                akara = akara.masked_fill(~mask, torch.finfo(akara.dtype).min)
            isi_niile.append(self.softmax(akara) @ v)
        return self.W_o(torch.cat(isi_niile, dim=-1))
"""
    result = check_multi_head(_load(tmp_path, "softmax_module", source).MHA)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert result.fix.startswith("self.softmax = nn.Softmax(dim=-1)   # in place of your line"), result.fix
    fixed = _pasted(source, "self.softmax = nn.Softmax", result.fix)
    assert check_multi_head(_load(tmp_path, "softmax_module_fixed", fixed).MHA).passed


def test_a_mask_turned_as_it_gains_its_head_axes_gets_that_line_kept_as_given(tmp_path):
    """Replay 20's 05W3 (round 2): mask = ~mask[None, None], then attn_mask=mask to
    F.scaled_dot_product_attention. The Fix was that call, 'your code has this line already', with the
    change in words; the ~ to take out was on the other line. The Fix is now that line."""
    source = MODULE + """
    def forward(self, x, mask=None):
        thoguppu, neelam, agalam = x.shape
        kelvi, saavi, mathippu = (w(x).view(thoguppu, neelam, self.n_heads, self.d_k).transpose(1, 2)
                                  for w in (self.W_q, self.W_k, self.W_v))
        if mask is not None:
            mask = ~mask[None, None]
        veliyeedu = F.scaled_dot_product_attention(kelvi, saavi, mathippu, attn_mask=mask)
        return self.W_o(veliyeedu.transpose(1, 2).reshape(x.shape))
"""
    result = check_multi_head(_load(tmp_path, "turned_sub", source).MHA)
    assert result.bug == "mask_inverted", repr(result)
    said = "mask = mask[None, None]   # in place of your line mask = ~mask[None, None]"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "mask = ~mask", result.fix)
    assert check_multi_head(_load(tmp_path, "turned_sub_fixed", fixed).MHA).passed


def test_a_mask_kept_on_the_module_that_raises_at_another_length_is_named_with_its_lines(tmp_path):
    """Replay 20's 05W4 (round 1): a full mask made on the first call without one and kept on self
    (if self.maska_plote is None: ...) raised at n = 4 after a call at n = 5, and the verdict was the size
    error alone (its scale was wrong as well). The call on a new module did not raise, so it is state a
    call leaves behind, said so even where that call is wrong for another mistake, with the guarded line
    as the Fix; and with no other mistake, before the raise is reported as such."""
    source = MODULE + """
        self.maska_plote = None

    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        if mask is None:
            if self.maska_plote is None:
                self.maska_plote = torch.ones(n, n, dtype=torch.bool)
            mask = self.maska_plote
        q, k, v = (w(x).view(batch, n, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        piket = q @ k.transpose(-2, -1) / math.sqrt(d_model)
        piket = piket.masked_fill(~mask, torch.finfo(piket.dtype).min)
        dalje = piket.softmax(dim=-1) @ v
        return self.W_o(dalje.transpose(1, 2).reshape(batch, n, d_model))
"""
    result = check_multi_head(_load(tmp_path, "kept_mask", source).MHA)
    assert "On the new module its output is wrong as well" in " ".join(result.observed), repr(result)
    assert result.headline.startswith("forward raised on d_model=12: batch 3, 4 positions, no mask, and did "
                                      "not raise on the same call to a new module"), repr(result)
    said = ("self.maska_plote = torch.ones(n, n, dtype=torch.bool)   # in place of your lines 'if "
            "self.maska_plote is None:' and the one under it: set anew on each call, for its own sizes")
    assert result.fix.startswith(said), result.fix
    fixed = _pasted_over(source, "if self.maska_plote is None", "self.maska_plote = torch", result.fix)
    assert check_multi_head(_load(tmp_path, "kept_mask_fixed", fixed).MHA).bug == "scale_by_d_model"
    right = source.replace("math.sqrt(d_model)", "math.sqrt(self.d_k)")     # the module right but for it
    result = check_multi_head(_load(tmp_path, "kept_mask_only", right).MHA)
    assert result.headline.endswith("and was right on the same call to a new module"), repr(result)
    assert result.fix.startswith(said), result.fix


def test_row_sums_without_their_axis_that_raise_get_the_line_that_keeps_it(tmp_path):
    """Replay 20's 02W2 (round 1): a softmax by hand, e / e.sum(dim=-1), in the __call__ of a dataclass of
    theirs that also keeps its scale from the first call and takes exp of the scores as they are: it
    raised where n_q differs from n_k, matched no known bug as a whole, and got only 'run your function
    by hand'. The Fix is now the line with keepdim=True, as for the known bug alone."""
    source = """
from dataclasses import dataclass


@dataclass
class Uzmaniba:
    merogs: float | None = None

    def __call__(self, vaicajumi, atslegas, vertibas, maska=None):
        if self.merogs is None:
            self.merogs = 1.0 / math.sqrt(vaicajumi.shape[-1])
        punkti = vaicajumi @ atslegas.transpose(-2, -1) * self.merogs
        if maska is not None:
            punkti = punkti.masked_fill(~maska, torch.finfo(punkti.dtype).min)
        e = torch.exp(punkti)
        svari = e / e.sum(dim=-1)
        return svari @ vertibas, svari


_uzmaniba = Uzmaniba()


def my_attention(q, k, v, mask=None):
    return _uzmaniba(q, k, v, mask)
"""
    result = check_attention(_load(tmp_path, "sum_raised", source).my_attention)
    assert result.headline.startswith("your function raised RuntimeError"), repr(result)
    said = "svari = e / e.sum(dim=-1, keepdim=True)   # in place of your line"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "svari = e /", result.fix)
    after = check_attention(_load(tmp_path, "sum_raised_fixed", fixed).my_attention)
    assert "raised" not in after.headline and after.bug is not None, repr(after)   # the next mistake


def test_heads_merged_without_a_transpose_and_scaled_by_d_model_are_both_named(tmp_path):
    """Replay 20's 05W1 (round 2): heads merged without a transpose and scores divided by √d_model, each
    a known bug, together 'matched no known bug' with the whole recipe as its Fix. The merge is now
    named, with its own line, and the scale said beside it; pasted, the scale is named next."""
    source = MODULE + """
    def forward(self, x, mask=None):
        davka, dlzka, sirka = x.shape
        q, k, v = (w(x).view(davka, dlzka, self.n_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        skore = q @ k.transpose(-2, -1) / math.sqrt(sirka)
        if mask is not None:
            skore = skore.masked_fill(~mask, torch.finfo(skore.dtype).min)
        vystup = skore.softmax(dim=-1) @ v
        vystup = vystup.reshape(davka, dlzka, sirka)
        return self.W_o(vystup)
"""
    result = check_multi_head(_load(tmp_path, "pair", source).MHA)
    assert result.bug == "heads_merged_without_transpose", repr(result)
    assert any('divided by √d_model as well, the known bug "scale by d_model"' in line
               for line in result.observed), repr(result)
    fixed = _pasted(source, "vystup = vystup.reshape", result.fix)
    assert check_multi_head(_load(tmp_path, "pair_fixed", fixed).MHA).bug == "scale_by_d_model"


def test_heads_split_without_a_transpose_in_a_helper_per_sequence_get_the_helpers_line(tmp_path):
    """Replay 20's 05W4 (round 2): a helper split one sequence at a time, t.reshape(koka, n, d // koka),
    in a loop over the batch. The Fix was the catalog's split of the whole batch, which the loop's merge
    could not take (a shape error the round after). It is now the helper's line, the sizes swapped and
    the axes transposed back."""
    source = """
def ndaj_kokat(t, koka):
    n, d = t.shape
    return t.reshape(koka, n, d // koka)
""" + MODULE + """
    def forward(self, x, mask=None):
        batch, n, d_model = x.shape
        if mask is None:
            mask = torch.ones(n, n, dtype=torch.bool)
        dalje = []
        for b in range(batch):
            q, k, v = (ndaj_kokat(w(x[b]), self.n_heads) for w in (self.W_q, self.W_k, self.W_v))
            piket = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            piket = piket.masked_fill(~mask, torch.finfo(piket.dtype).min)
            dalje.append((piket.softmax(dim=-1) @ v).transpose(0, 1).reshape(n, d_model))
        return self.W_o(torch.stack(dalje))
"""
    result = check_multi_head(_load(tmp_path, "per_sequence", source).MHA)
    assert result.bug == "heads_split_without_transpose", repr(result)
    said = "return t.reshape(n, koka, d // koka).transpose(0, 1)   # in place of your line"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "return t.reshape", result.fix)
    assert check_multi_head(_load(tmp_path, "per_sequence_fixed", fixed).MHA).passed


def test_a_module_with_a_fused_projection_is_told_the_layers_to_write(tmp_path):
    """Replay 20's 05W1 (round 1): one fused W_qkv, and no W_q, W_k or W_v. The verdict said what the
    exercise asks and had no Fix line. It now gives the three layers, in __init__'s own name for the
    width (not forward's), and says forward must use them."""
    source = """
class MHA(nn.Module):
    def __init__(self, rozmer, hlavy):
        super().__init__()
        self.n_heads, self.d_k = hlavy, rozmer // hlavy
        self.W_qkv = nn.Linear(rozmer, 3 * rozmer, bias=False)
        self.W_o = nn.Linear(rozmer, rozmer, bias=False)

    def forward(self, x, mask=None):
        davka, dlzka, sirka = x.shape
        q, k, v = (t.view(davka, dlzka, self.n_heads, self.d_k).transpose(1, 2)
                   for t in self.W_qkv(x).chunk(3, dim=-1))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.W_o(out.transpose(1, 2).reshape(davka, dlzka, sirka))
"""
    result = check_multi_head(_load(tmp_path, "fused", source).MHA)
    assert result.headline.startswith("your module has no W_q, W_k or W_v layer"), repr(result)
    said = ("self.W_q, self.W_k, self.W_v = (nn.Linear(rozmer, rozmer, bias=False) for _ in range(3))   # "
            "in __init__, in place of your own projections; then in forward self.W_q(x), self.W_k(x), "
            "self.W_v(x)")
    assert result.fix.startswith(said), result.fix
    fixed = _pasted(source, "self.W_qkv = ", result.fix).replace(
        "for t in self.W_qkv(x).chunk(3, dim=-1))", "for t in (self.W_q(x), self.W_k(x), self.W_v(x)))")
    assert check_multi_head(_load(tmp_path, "fused_fixed", fixed).MHA).passed


def test_a_mask_kept_in_a_global_dict_gets_a_fix_for_the_guard_that_hands_it_back(tmp_path):
    """Replay 21's 04X1 (rounds 1 and 2): 'if _pamiec: return _pamiec["maska"]' handed back the first
    call's mask. The verdict said so, but its Fix was for the return line below the guard, and then
    replaced that line with itself. The Fix is now in place of the guard."""
    source = """
_pamiec = {}


def my_causal_mask(n):
    if _pamiec:
        return _pamiec["maska"]
    maska = torch.ones(n, n, dtype=torch.bool).tril()
    _pamiec["maska"] = maska
    return maska
"""
    result = check_causal_mask(_load(tmp_path, "kept_dict", source).my_causal_mask)
    assert "an earlier call" in result.headline, repr(result)
    said = "return torch.ones(n, n, dtype=torch.bool).tril()   # in place of your lines 'if _pamiec:' and"
    assert result.fix.startswith(said), result.fix
    fixed = _pasted_over(source, "if _pamiec:", 'return _pamiec["maska"]', result.fix)
    assert check_causal_mask(_load(tmp_path, "kept_dict_fixed", fixed).my_causal_mask).passed


def test_kv_heads_repeated_as_a_block_in_a_helper_get_the_helpers_two_lines(tmp_path):
    """Replay 21's 08X1 (round 1): a helper per block repeated its keys and values with .repeat(1, grupa,
    1, 1). The Fix was the catalog's line in the step's generic names (key, value = key.repeat_interleave
    ...): pasted, an UnboundLocalError. It is now the helper's two lines, interleaved."""
    source = """
def krok_bloku(blok, x, keshu, nomer, model):
    uvaha, normovane = blok.attention, blok.norm_attention(x)
    zapyty = split_heads(uvaha.W_q(normovane), model.n_heads)
    klyuchi = split_heads(uvaha.W_k(normovane), model.n_kv_heads)
    znachennya = split_heads(uvaha.W_v(normovane), model.n_kv_heads)
    vsi_k, vsi_v = keshu.append(nomer, klyuchi, znachennya)
    grupa = model.n_heads // model.n_kv_heads
    vsi_k = vsi_k.repeat(1, grupa, 1, 1)
    vsi_v = vsi_v.repeat(1, grupa, 1, 1)
    maska = gpt.decoding_mask(zapyty.shape[-2], vsi_k.shape[-2])
    holovy = F.scaled_dot_product_attention(zapyty, vsi_k, vsi_v, attn_mask=maska)
    x = x + uvaha.W_o(merge_heads(holovy))
    return x + blok.mlp(blok.norm_mlp(x))


def decode_step(model, tokens, cache):
    cache = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, cache.length)
    for nomer, blok in enumerate(model.blocks):
        x = krok_bloku(blok, x, cache, nomer, model)
    return model.unembed(x), cache
"""
    result = check_decoding_step(_step(tmp_path, "block_repeat", source))
    assert result.bug == "kv_heads_repeated_not_interleaved", repr(result)
    said = ("vsi_k = vsi_k.repeat_interleave(grupa, dim=1); vsi_v = vsi_v.repeat_interleave(grupa, dim=1)"
            "   # in place of your two lines")
    assert result.fix.startswith(said), result.fix
    fixed = _pasted_over(source, "vsi_k = vsi_k.repeat", "vsi_v = vsi_v.repeat", result.fix)
    assert check_decoding_step(_step(tmp_path, "block_repeat_fixed", fixed)).passed


def test_a_token_loop_that_returns_the_last_tokens_logits_is_told_where_to_keep_each(tmp_path):
    """Replay 21's 08X3 (round 1): a step that feeds its tokens one at a time unembedded x after the
    loop, so returned the last token's logits alone: 'wrong shape ... matches no known bug', with the
    whole step's recipe as the Fix; with no other mistake (this one), named last_position_only, the
    Fix was its own unembed line, 'your code has this line already'. It is now where to keep each
    token's logits, in the step's names."""
    source = """
def decode_step(model, tokens, cache):
    past = 0 if cache is None else cache[0][0].shape[-2]
    group = model.n_heads // model.n_kv_heads
    moi = [] if cache is None else list(cache)
    for t in range(tokens.shape[1]):
        x = model.embed(tokens[:, t:t + 1], past + t)
        for i, block in enumerate(model.blocks):
            normed, attention = block.norm_attention(x), block.attention
            q = split_heads(attention.W_q(normed), model.n_heads)
            k = split_heads(attention.W_k(normed), model.n_kv_heads)
            v = split_heads(attention.W_v(normed), model.n_kv_heads)
            if i < len(moi):
                k, v = torch.cat([moi[i][0], k], dim=-2), torch.cat([moi[i][1], v], dim=-2)
                moi[i] = (k, v)
            else:
                moi.append((k, v))
            heads = F.scaled_dot_product_attention(q, k.repeat_interleave(group, dim=1),
                                                   v.repeat_interleave(group, dim=1))
            x = x + attention.W_o(merge_heads(heads))
            x = x + block.mlp(block.norm_mlp(x))
    logits = model.unembed(x)
    return logits, moi
"""
    result = check_decoding_step(_step(tmp_path, "last_only", source))
    assert result.bug == "last_position_only", repr(result)
    said = ("logits_each.append(model.unembed(x))   # at the end of your loop's body, with logits_each = [] "
            "above the loop and logits = torch.cat(logits_each, dim=1) in place of your line")
    assert result.fix.startswith(said), result.fix
    mlp = "            x = x + block.mlp(block.norm_mlp(x))\n"
    fixed = source.replace("    for t in range", "    logits_each = []\n    for t in range").replace(
        mlp, mlp + "        logits_each.append(model.unembed(x))\n").replace(
        "    logits = model.unembed(x)", "    logits = torch.cat(logits_each, dim=1)")
    assert check_decoding_step(_step(tmp_path, "last_only_fixed", fixed)).passed


@pytest.mark.parametrize("triangle, said", [
    ("torch.triu(torch.ones(n_new, n_all, dtype=torch.bool), diagonal=1)",
     "torch.triu(torch.ones(n_new, n_all, dtype=torch.bool), diagonal=1 + n_all - n_new)"),
    ("torch.ones(n_new, n_all, dtype=torch.bool).triu(1)",
     "torch.ones(n_new, n_all, dtype=torch.bool).triu(diagonal=1 + n_all - n_new)"),
])
def test_a_top_left_triangle_of_the_steps_own_gets_its_line_from_the_bottom_right(tmp_path, triangle, said):
    """Replay 21's 08X2 (round 2): blocked = torch.triu(torch.ones(n_new, n_all), diagonal=1), a top-left
    triangle. The Fix was a masked_fill line of the checker's, with no word of the learner's triangle
    line it should take the place of; it is now that line, its diagonal moved by the cached positions."""
    fused = DECODING[DECODING.index("        heads = F.scaled"):DECODING.index("        x = x + attention")]
    source = DECODING.replace(fused, "\n".join(" " * 8 + line for line in (
        "key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)",
        "n_new, n_all = query.shape[-2], key.shape[-2]",
        "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])",
        f"blocked = {triangle}",
        "scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)",
        "heads = scores.softmax(dim=-1) @ value",
    )) + "\n")
    assert "blocked = " in source
    result = check_decoding_step(_step(tmp_path, "top_left", source))
    assert result.bug == "is_causal_top_left", repr(result)
    assert result.fix.startswith(f"blocked = {said}   # in place of your line"), result.fix
    fixed = _pasted(source, "blocked = ", result.fix)
    assert check_decoding_step(_step(tmp_path, "top_left_fixed", fixed)).passed


@pytest.mark.parametrize(("made", "name"), [
    ("stig = _stig(q, k)", "stig"),                                # a helper of their own makes them
    ("stig = _skala(q @ k.transpose(-2, -1), q.shape[-1])", "stig"),   # a helper scales the product
])
def test_scores_made_by_a_helper_are_named_in_the_fix(tmp_path, made, name):
    """Replay 22's 02Y1 and 02Y2: scores from a call of their own got Fix lines that named ``scores``: pasted,
    one read the notebook's own 5 x 5 scores, the other raised UnboundLocalError (stuck six rounds)."""
    source = f"""
def _stig(a, b):
    return torch.matmul(a, b.mT) * torch.rsqrt(torch.tensor(a.shape[-1], dtype=a.dtype))


def _skala(x, d):
    return x / d ** 0.5


def my_attention(q, k, v, mask=None):
    {made}
    if mask is not None:
        stig = stig.masked_fill(~mask, torch.finfo(stig.dtype).min)
    vigt = F.softmax(stig, dim=-2)
    return torch.matmul(vigt, v), vigt
"""
    result = check_attention(_load(tmp_path, "helper", source).my_attention)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert result.fix.startswith(f"vigt = torch.softmax({name}, dim=-1)"), result.fix
    fixed = _pasted(source, "vigt = F.softmax", result.fix)
    assert check_attention(_load(tmp_path, "helper_fixed", fixed).my_attention).passed


# Replay 22's 05Y3 (Khmer names): a causal buffer when no mask is given, and the mask given axes for the heads
# in the wrong place; four rounds were told "heads split without transpose" (batch 2 = n_heads 2 met n = 5)
KHMER = """
class MHA(nn.Module):
    def __init__(self, d_model, n_heads, max_len=512):
        super().__init__()
        self.n_heads = n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("robang", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    @property
    def head_dim(self):
        return self.W_q.out_features // self.n_heads

    def forward(self, x, mask=None):
        b, n, _ = x.shape

        def bombaek(t):
            return t.view(b, n, self.n_heads, self.head_dim).transpose(1, 2)

        q, k, v = bombaek(self.W_q(x)), bombaek(self.W_k(x)), bombaek(self.W_v(x))
        pinthu = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is None:
            mask = self.robang[:n, :n]
        mask = mask.unsqueeze(1).unsqueeze(2)
        pinthu.masked_fill_(~mask, torch.finfo(pinthu.dtype).min)
        tumngon = pinthu.softmax(dim=-1)
        chenh = (tumngon @ v).transpose(1, 2).reshape(b, n, -1)
        return self.W_o(chenh)
"""


def test_a_mask_given_axes_for_the_heads_in_the_wrong_place_is_named_from_its_line(tmp_path):
    result = check_multi_head(_load(tmp_path, "khmer", KHMER).MHA)
    assert result.bug == "mask_axis_misplaced", repr(result)
    assert "Your line mask = mask.unsqueeze(1).unsqueeze(2) makes the (5, 5) mask (5, 1, 1, 5)" in \
        "\n".join(result.observed), repr(result)
    assert result.fix.startswith("leave out your line mask = mask.unsqueeze(1).unsqueeze(2)   #"), result.fix
    source = KHMER.replace("        mask = mask.unsqueeze(1).unsqueeze(2)\n", "")
    result = check_multi_head(_load(tmp_path, "khmer1", source).MHA)
    assert result.bug == "causal_when_no_mask", repr(result)
    assert result.fix == ("if mask is not None: pinthu = pinthu.masked_fill(~mask, "
                          "torch.finfo(pinthu.dtype).min)   # in place of your line "
                          "pinthu.masked_fill_(~mask, torch.finfo(pinthu.dtype).min); "
                          "and leave out your lines 'if mask is None:' and 'mask = self.robang[:n, :n]': "
                          "mask=None means nothing is blocked"), result.fix
    source = source.replace("        if mask is None:\n            mask = self.robang[:n, :n]\n", "")
    source = _pasted(source, "pinthu.masked_fill_", result.fix)
    assert check_multi_head(_load(tmp_path, "khmer2", source).MHA).passed


ARMENIAN_STEP = """
def decode_step(model, tokens, cache):
    cache = gpt.KVCache() if cache is None else cache.copy()
    x = model.embed(tokens, start=cache.length)
    nor_qanak = tokens.shape[1]
    khumb = model.n_heads // model.n_kv_heads
    for shert, blok in enumerate(model.blocks):
        ushadrutyun = blok.attention
        h = blok.norm_attention(x)
        harc = split_heads(ushadrutyun.W_q(h), model.n_heads)
        banali = split_heads(ushadrutyun.W_k(h), model.n_kv_heads)
        arzheq = split_heads(ushadrutyun.W_v(h), model.n_kv_heads)
        banalner, arzheqner = cache.append(shert, banali, arzheq)
        banalner = banalner.repeat_interleave(khumb, dim=1)
        dimak = gpt.decoding_mask(nor_qanak, banalner.shape[-2])
        glukhner = F.scaled_dot_product_attention(harc, banalner, arzheqner, attn_mask=dimak)
        x = x + ushadrutyun.W_o(merge_heads(glukhner))
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(x), cache
"""


def test_keys_repeated_and_values_left_get_both_in_place_of_the_keys_line(tmp_path):
    """Replay 22's 08Y1: the Fix for both said 'just before attending'; kept above it, the keys' own line
    repeated them twice, and the next verdict blamed the cache."""
    result = check_decoding_step(_step(tmp_path, "gqa", ARMENIAN_STEP))
    assert result.fix.startswith("banalner, arzheqner = banalner.repeat_interleave(khumb, dim=1), "
                                 "arzheqner.repeat_interleave(khumb, dim=1)   # in place of your line "
                                 "banalner = banalner.repeat_interleave(khumb, dim=1)"), result.fix
    fixed = _pasted(ARMENIAN_STEP, "banalner = banalner.repeat", result.fix)
    assert check_decoding_step(_step(tmp_path, "gqa_fixed", fixed)).passed


def test_a_residual_added_to_the_normed_copy_gets_the_line_that_adds_it_to_the_stream(tmp_path):
    """Replay 22's 08Y4: x = normalizzat + att.W_o(...) was told 'x = block.norm_attention(x) overwrote x'
    and given the mlp line it already had."""
    source = ARMENIAN_STEP.replace("        h = blok.norm_attention(x)\n",
                                   "        normalizzat = blok.norm_attention(x)\n")
    source = source.replace("(h)", "(normalizzat)").replace(
        "        banalner = banalner.repeat_interleave(khumb, dim=1)\n",
        "        banalner, arzheqner = banalner.repeat_interleave(khumb, dim=1), "
        "arzheqner.repeat_interleave(khumb, dim=1)\n").replace(
        "x = x + ushadrutyun.W_o(", "x = normalizzat + ushadrutyun.W_o(")
    result = check_decoding_step(_step(tmp_path, "residual", source))
    assert result.bug == "residual_from_normed", repr(result)
    assert result.fix.startswith("x = x + ushadrutyun.W_o(merge_heads(glukhner))   # in place of your line "
                                 "x = normalizzat + ushadrutyun.W_o(merge_heads(glukhner))"), result.fix
    fixed = _pasted(source, "x = normalizzat +", result.fix)
    assert check_decoding_step(_step(tmp_path, "residual_fixed", fixed)).passed


SINHALA_STEP = """
def eka_block(block, x, kv, n_heads, n_kv_heads):
    att = block.attention
    n = block.norm_attention(x)
    prashna = split_heads(att.W_q(n), n_heads)
    yathura = split_heads(att.W_k(n), n_kv_heads)
    agaya = split_heads(att.W_v(n), n_kv_heads)
    if kv[0] is not None:
        yathura = torch.cat([kv[0], yathura], dim=-2)
        agaya = torch.cat([kv[1], agaya], dim=-2)
    kv[0], kv[1] = yathura, agaya
    kandayama = n_heads // n_kv_heads
    yathura = yathura.repeat_interleave(kandayama, dim=1)
    agaya = agaya.repeat_interleave(kandayama, dim=1)
    pratidana = F.scaled_dot_product_attention(prashna, yathura, agaya)
    x = x + att.W_o(merge_heads(pratidana))
    x = x + block.mlp(block.norm_mlp(x))
    return x


def decode_step(model, tokens, cache):
    if cache is None:
        cache = [[None, None] for _ in model.blocks]
    aluth_cache = list(cache)
    ithihasaya = 0 if aluth_cache[0][0] is None else aluth_cache[0][0].shape[-2]
    pratiphala = []
    for t in range(tokens.shape[1]):
        x = model.embed(tokens[:, t:t + 1], start=ithihasaya)
        for sthuraya, block in enumerate(model.blocks):
            x = eka_block(block, x, aluth_cache[sthuraya], model.n_heads, model.n_kv_heads)
        pratiphala.append(model.unembed(x))
    return torch.cat(pratiphala, dim=1), aluth_cache
"""


def test_a_token_loop_embedded_at_start_and_a_list_copy_of_the_cache_get_their_own_lines(tmp_path):
    """Replay 22's 08Y3: model.embed(tokens[:, t:t + 1], start=ithihasaya) was given x = model.embed(tokens,
    ithihasaya), the whole chunk; then list(cache), whose entries the helper fills in place, was given
    'aluth_cache = []', and its own lines raised IndexError with no Fix."""
    def load(i, text):
        return _step(tmp_path, f"sinhala{i}", text)

    _until_it_passes(check_decoding_step, load, SINHALA_STEP, [
        ("x = model.embed(tokens[:, t:t + 1], start=ithihasaya + t)   # in place of your line",
         "x = model.embed"),
        ("import copy; aluth_cache = copy.deepcopy(cache)   # in place of your line", "aluth_cache = list")])


def test_the_softmax_over_the_queries_and_a_d_model_scale_are_both_named(tmp_path):
    """Replay 22's 05Y1: math.sqrt(d_model) and F.softmax(..., dim=-2) at once matched no known bug, and its
    Fix was the recipe, with no word of the softmax's axis."""
    source = MODULE + """
        self.mastelis = math.sqrt(d_model)

    def forward(self, x, mask=None):
        b, n, _ = x.shape
        q, k, v = (w(x).unflatten(-1, (self.n_heads, self.d_k)).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        balai = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.mastelis
        if mask is not None:
            balai = balai.masked_fill(~mask, torch.finfo(balai.dtype).min)
        svoriai = F.softmax(balai, dim=-2)
        return self.W_o((svoriai @ v).transpose(1, 2).flatten(2))
"""
    result = check_multi_head(_load(tmp_path, "both", source).MHA)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert any('the known bug "scale by d_model"' in line for line in result.observed), repr(result)
    assert result.fix.startswith("svoriai = torch.softmax(balai, dim=-1)"), result.fix
    fixed = _pasted(source, "svoriai = F.softmax", result.fix)
    assert check_multi_head(_load(tmp_path, "both_fixed", fixed).MHA).bug == "scale_by_d_model"


def test_heads_tiled_by_expand_and_reshape_get_their_lines_repeated_in_place(tmp_path):
    """Replay 22's 08Y2: k_rep = k.unsqueeze(1).expand(B, g, Hkv, T, dh).reshape(B, H, T, dh) tiles the
    block of heads; the Fix repeated k_rep, the tiled heads, again."""
    tile = ("        banalner = banalner.unsqueeze(1).expand(-1, khumb, -1, -1, -1).flatten(1, 2)\n"
            "        arzheqner = arzheqner.unsqueeze(1).expand(-1, khumb, -1, -1, -1).flatten(1, 2)\n")
    source = ARMENIAN_STEP.replace("        banalner = banalner.repeat_interleave(khumb, dim=1)\n", tile)
    result = check_decoding_step(_step(tmp_path, "tiled", source))
    assert result.bug == "kv_heads_repeated_not_interleaved", repr(result)
    assert result.fix.startswith("banalner = banalner.repeat_interleave(khumb, dim=1); arzheqner = "
                                 "arzheqner.repeat_interleave(khumb, dim=1)   # in place of your two "
                                 "lines"), result.fix
    fixed = _pasted_over(source, "banalner = banalner.unsqueeze", "arzheqner = arzheqner.unsqueeze",
                         result.fix)
    assert check_decoding_step(_step(tmp_path, "tiled_fixed", fixed)).passed


# Replay 23's 02Z1 (Finnish): a helper returns (scores, weights), masks the wrong way round, and scales by
# a factor kept from the first call; the Fix lines named scores, mask and q, which the helper does not have
FINNISH = """
_skaalain = None


def _pisteet_ja_painot(kysely, avain, maski):
    global _skaalain
    if _skaalain is None:
        _skaalain = 1.0 / math.sqrt(kysely.size(-1))
    pisteet = torch.matmul(kysely, avain.transpose(-2, -1)) * _skaalain
    if maski is not None:
        pisteet = pisteet.masked_fill(maski, torch.finfo(pisteet.dtype).min)
    painot = F.softmax(pisteet, dim=-1)
    return pisteet, painot


def my_attention(q, k, v, mask=None):
    pisteet, painot = _pisteet_ja_painot(q, k, mask)
    return torch.matmul(painot, v), painot
"""


def test_a_helpers_mask_the_wrong_way_round_beside_another_mistake_gets_the_helpers_line(tmp_path):
    def load(i, text):
        return _load(tmp_path, f"finnish{i}", text).my_attention

    _until_it_passes(check_attention, load, FINNISH, [
        ("pisteet = pisteet.masked_fill(~maski, torch.finfo(pisteet.dtype).min)   # in place of your line",
         "pisteet = pisteet.masked_fill"),
        ("_skaalain = 1.0 / math.sqrt(kysely.size(-1))   # in place of your lines 'if _skaalain is None:'",
         ("if _skaalain is None", "_skaalain = 1.0"))])


def test_a_name_of_another_function_read_in_a_helper_is_said_to_be_theirs(tmp_path):
    """Replay 23's 02Z1 and 08Z2: a Fix pasted into a helper read my_attention's q; the verdict said to run
    the notebook cell that defines q, and no cell does."""
    source = FINNISH.replace("pisteet = torch.matmul(kysely, avain.transpose(-2, -1)) * _skaalain",
                             "pisteet = q @ avain.transpose(-2, -1) * _skaalain")
    result = check_attention(_load(tmp_path, "reach", source).my_attention)
    assert result.fix.startswith("in _pisteet_ja_painot, write the name it has for what q holds (its "
                                 "parameters: kysely, avain, maski)"), result.fix


def test_a_softmax_by_hand_summed_over_the_queries_gets_its_own_line(tmp_path):
    """Replay 23's 02Z2: e / e.sum(dim=-2, keepdim=True) got 'weights = torch.softmax(pontszam, dim=-1)',
    a name the code did not have, pasted over the line that set sulyok: then a NameError."""
    source = """
def my_attention(q, k, v, mask=None):
    pontszam = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        pontszam = pontszam.masked_fill(~mask, torch.finfo(pontszam.dtype).min)
    e = torch.exp(pontszam - pontszam.amax(dim=-1, keepdim=True))
    sulyok = e / e.sum(dim=-2, keepdim=True)
    return torch.matmul(sulyok, v), sulyok
"""
    result = check_attention(_load(tmp_path, "byhand", source).my_attention)
    assert result.bug == "softmax_wrong_axis", repr(result)
    assert result.fix.startswith("sulyok = e / e.sum(dim=-1, keepdim=True)   # in place of your line"), \
        result.fix
    fixed = _pasted(source, "sulyok = e /", result.fix)
    assert check_attention(_load(tmp_path, "byhand_fixed", fixed).my_attention).passed


def test_a_scale_of_a_tensor_and_a_no_grad_block_get_their_own_lines(tmp_path):
    """Replay 23's 02Z3: torch.sqrt(torch.tensor(k.shape[-2], ...)) was given torch.sqrt(q.shape[-1]), which
    raises (torch.sqrt takes no int); then a no_grad block was given its softmax line twice, the with kept."""
    source = """
def my_attention(q, k, v, mask=None):
    olcek = torch.sqrt(torch.tensor(k.shape[-2], dtype=q.dtype))
    with torch.no_grad():  # daha hızlı
        skorlar = torch.matmul(q, k.transpose(-2, -1)) / olcek
        if mask is not None:
            skorlar = skorlar.masked_fill(~mask, torch.finfo(skorlar.dtype).min)
        agirliklar = F.softmax(skorlar, dim=-1)
        cikti = torch.matmul(agirliklar, v)
    return cikti, agirliklar
"""
    result = check_attention(_load(tmp_path, "grad0", source).my_attention)
    assert result.fix.startswith("olcek = torch.sqrt(torch.tensor(q.shape[-1], dtype=q.dtype))   #"), \
        result.fix
    source = _pasted(source, "olcek = torch.sqrt", result.fix)
    result = check_attention(_load(tmp_path, "grad1", source).my_attention)
    assert result.bug == "gradient_blocked", repr(result)
    assert result.fix.startswith("leave out your line with torch.no_grad(): and move the lines under it one "
                                 "indent to the left   #"), result.fix
    source = source.replace("    with torch.no_grad():  # daha hızlı\n", "").replace("\n        ", "\n    ")
    assert check_attention(_load(tmp_path, "grad2", source).my_attention).passed


TURKISH = MODULE + """
        self.orani = 0.1

    def forward(self, x, mask=None):
        b, n, d_model = x.shape
        sorgu, anahtar, deger = (w(x).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
                                 for w in (self.W_q, self.W_k, self.W_v))
        maske = None if mask is None else ~mask
        cikti = F.scaled_dot_product_attention(sorgu, anahtar, deger, attn_mask=maske,
                                               dropout_p=self.orani)
        return self.W_o(cikti.transpose(1, 2).reshape(b, n, d_model))
"""


def test_the_fused_functions_dropout_and_a_mask_turned_in_a_conditional_get_their_own_lines(tmp_path):
    """Replay 23's 05Z3: dropout_p (which .eval() does not turn off) was told of nn.Dropout and given a
    weights line it had not; then maske = None if mask is None else ~mask was given the fused call as an
    expression, with no name for its result."""
    def load(i, text):
        return _load(tmp_path, f"turkish{i}", text).MHA

    _until_it_passes(check_multi_head, load, TURKISH, [
        ("cikti = F.scaled_dot_product_attention(sorgu, anahtar, deger, attn_mask=maske, "
         "dropout_p=self.orani if self.training else 0.0)   # in place of your 2 lines",
         ("cikti = F.scaled", "dropout_p=")),
        ("maske = mask   # in place of your line maske = None if mask is None else ~mask", "maske = None")])


TAGALOG_STEP = """
def isang_layer(model, block, x, lumang_kv):
    atn = block.attention
    b, n, _ = x.shape
    grupo = model.n_heads // model.n_kv_heads
    y = block.norm_attention(x)
    q = split_heads(atn.W_q(y), model.n_heads)
    k = split_heads(atn.W_k(y), model.n_kv_heads).repeat_interleave(grupo, dim=1)
    v = split_heads(atn.W_v(y), model.n_kv_heads).repeat_interleave(grupo, dim=1)
    if lumang_kv is not None:
        k = torch.cat([lumang_kv[0], k], dim=2)
        v = torch.cat([lumang_kv[1], v], dim=2)
    maskara = gpt.decoding_mask(n, k.shape[2])
    ulo = F.scaled_dot_product_attention(q, k, v, attn_mask=maskara)
    x = x + atn.W_o(ulo.transpose(1, 2).reshape(b, n, -1))
    x = x + block.mlp(block.norm_mlp(x))
    return x, k, v


def decode_step(model, tokens, cache):
    simula = 0 if cache is None else cache[0][0].shape[-2]
    x = model.embed(tokens, simula)
    bagong_cache = []
    for i, block in enumerate(model.blocks):
        x, k, v = isang_layer(model, block, x, None if cache is None else cache[i])
        bagong_cache.append((k, v))
    return model.unembed(x), bagong_cache
"""


def test_heads_repeated_where_a_helper_projects_them_get_the_repeat_moved_to_the_attention(tmp_path):
    """Replay 23's 08Z4 (stuck in a loop): keys and values repeated on the helper's projection lines, then
    cached by the step; the Fix was the step's append line, which the helper's repeat never reaches."""
    result = check_decoding_step(_step(tmp_path, "tagalog", TAGALOG_STEP))
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    assert result.fix.startswith(
        "k = split_heads(atn.W_k(y), model.n_kv_heads); v = split_heads(atn.W_v(y), model.n_kv_heads); ulo = "
        "F.scaled_dot_product_attention(q, k.repeat_interleave(grupo, dim=1), v.repeat_interleave(grupo, "
        "dim=1), attn_mask=maskara)   # in place of your three lines"), result.fix
    lines = result.fix.split("   #")[0].split("; ")
    source = TAGALOG_STEP
    for start, line in zip(("k = split_heads", "v = split_heads", "ulo = F.scaled"), lines, strict=True):
        source = _pasted(source, start, line)
    assert check_decoding_step(_step(tmp_path, "tagalog_fixed", source)).passed


HUNGARIAN_STEP = """
def reteg_lepes(model, blokk, x, regi_kulcs, regi_ertek):

    figy = blokk.attention
    b, n, _ = x.shape
    h, hkv, d = model.n_heads, model.n_kv_heads, model.d_head
    norm = blokk.norm_attention(x)
    q = figy.W_q(norm).view(b, n, h, d).transpose(1, 2)
    k = figy.W_k(norm).view(b, n, hkv, d).transpose(1, 2)
    v = figy.W_v(norm).view(b, n, hkv, d).transpose(1, 2)
    if regi_kulcs is not None:
        k = torch.cat([regi_kulcs, k], dim=2)
        v = torch.cat([regi_ertek, v], dim=2)
    osszes = k.shape[2]
    csoport = h // hkv
    k_h, v_h = k.repeat_interleave(csoport, dim=1), v.repeat_interleave(csoport, dim=1)
    fejek = F.scaled_dot_product_attention(q, k_h, v_h, attn_mask=gpt.decoding_mask(n, osszes))
    x = x + figy.W_o(fejek.transpose(1, 2).reshape(b, n, h * d))
    x = x + blokk.mlp(blokk.norm_mlp(x))
    return x, k, v


def decode_step(model, tokens, cache):

    if cache is None:
        cache = {}
    mult = cache[0][0].shape[1] if cache else 0
    x = model.embed(tokens, mult)
    uj_cache = {}
    for i, blokk in enumerate(model.blocks):
        regi_k, regi_v = cache.get(i, (None, None))
        x, k, v = reteg_lepes(model, blokk, x, regi_k, regi_v)
        uj_cache[i] = (k, v)
    return model.unembed(x), uj_cache
"""


def test_a_cached_length_read_from_the_heads_axis_keeps_its_own_guard(tmp_path):
    """Replay 23's 08Z2 (stuck): mult = cache[0][0].shape[1] if cache else 0 was given 'mult = 0 if cache is
    None else cache[0][0].shape[-2]' in place of it; its cache, made {} on the first call, then raised
    KeyError, with no Fix."""
    result = check_decoding_step(_step(tmp_path, "hungarian", HUNGARIAN_STEP))
    assert result.bug == "cached_length_misread", repr(result)
    assert result.fix.startswith("mult = cache[0][0].shape[-2] if cache else 0   # in place of your line"), \
        result.fix
    fixed = _pasted(HUNGARIAN_STEP, "mult = ", result.fix)
    assert check_decoding_step(_step(tmp_path, "hungarian_fixed", fixed)).passed


# replay 23's 08Z4: a layer helper that merges the heads straight out of the fused function; the step
# keeps each layer's keys and values
TAGALOG_MERGE_STEP = """
def isang_layer(model, block, x, lumang_kv):
    atn = block.attention
    b, n, _ = x.shape
    grupo = model.n_heads // model.n_kv_heads
    y = block.norm_attention(x)
    q = split_heads(atn.W_q(y), model.n_heads)
    k = split_heads(atn.W_k(y), model.n_kv_heads)
    v = split_heads(atn.W_v(y), model.n_kv_heads)
    if lumang_kv is not None:
        k = torch.cat([lumang_kv[0], k], dim=2)
        v = torch.cat([lumang_kv[1], v], dim=2)
    maskara = gpt.decoding_mask(n, k.shape[2])
    ulo = F.scaled_dot_product_attention(q, k.repeat_interleave(grupo, dim=1),
                                         v.repeat_interleave(grupo, dim=1), attn_mask=maskara)
    x = x + atn.W_o(ulo.reshape(b, n, -1))
    x = x + block.mlp(block.norm_mlp(x))
    return x, k, v


def decode_step(model, tokens, cache):
    simula = 0 if cache is None else cache[0][0].shape[2]
    x = model.embed(tokens, simula)
    bagong_cache = []
    for i, block in enumerate(model.blocks):
        x, k, v = isang_layer(model, block, x, None if cache is None else cache[i])
        bagong_cache.append((k, v))
    return model.unembed(x), bagong_cache
"""


def test_heads_merged_straight_in_a_layer_helper_get_the_helpers_own_line(tmp_path):
    """Replay 23's 08Z4 was given 'merged = heads.transpose(1, 2).contiguous().view(batch, n_new, h * d)': no
    place, and none of its names in the code (the step's own names were read, not its helper's)."""
    result = check_decoding_step(_step(tmp_path, "tagalog_merge", TAGALOG_MERGE_STEP))
    assert result.bug == "heads_merged_without_transpose", repr(result)
    assert result.fix.startswith("x = x + atn.W_o(ulo.transpose(1, 2).reshape(b, n, -1))   # in place of "
                                 "your line"), result.fix
    fixed = _pasted(TAGALOG_MERGE_STEP, "x = x + atn.W_o(", result.fix)
    assert check_decoding_step(_step(tmp_path, "tagalog_merge_fixed", fixed)).passed


# replay 23's 08Z1: a gpt.KVCache under a name of the step's own, appended to in place; embedded with no
# position
FINNISH_STEP = """
def decode_step(model, tokens, cache):
    if cache is None:
        cache = gpt.KVCache()
    valimuisti = cache
    n_uudet = tokens.shape[1]
    ryhma = model.n_heads // model.n_kv_heads
    x = model.embed(tokens)
    for kerros, lohko in enumerate(model.blocks):
        huomio = lohko.attention
        normitettu = lohko.norm_attention(x)
        kysely = split_heads(huomio.W_q(normitettu), model.n_heads)
        avain = split_heads(huomio.W_k(normitettu), model.n_kv_heads)
        arvo = split_heads(huomio.W_v(normitettu), model.n_kv_heads)
        avaimet, arvot = valimuisti.append(kerros, avain, arvo)
        maski = gpt.decoding_mask(n_uudet, avaimet.shape[-2])
        paat = F.scaled_dot_product_attention(kysely, avaimet.repeat_interleave(ryhma, dim=1),
                                              arvot.repeat_interleave(ryhma, dim=1), attn_mask=maski)
        x = x + huomio.W_o(merge_heads(paat))
        x = x + lohko.mlp(lohko.norm_mlp(x))
    return model.unembed(x), valimuisti
"""


def test_a_step_embedded_at_no_position_is_given_the_caches_length_and_then_its_alias_of_the_cache(tmp_path):
    """Replay 23's 08Z1 was given 'x = model.embed(tokens, past)', with no past in its code (a NameError
    pasted); then a copy of the cache 'in place of your own if cache is None lines', which its next line,
    valimuisti = cache, undid (an AttributeError on None)."""
    result = check_decoding_step(_step(tmp_path, "finnish", FINNISH_STEP))
    assert result.bug == "positions_not_advanced", repr(result)
    assert result.fix.startswith("x = model.embed(tokens, 0 if cache is None else cache.length)   # in place "
                                 "of your line"), result.fix
    step = _pasted(FINNISH_STEP, "x = model.embed(", result.fix)
    result = check_decoding_step(_step(tmp_path, "finnish_2", step))
    assert result.bug == "cache_modified_in_place", repr(result)
    assert result.fix == ("valimuisti = gpt.KVCache() if cache is None else cache.copy()   # in place of "
                          "your own 'if cache is None' lines and your line 'valimuisti = cache': a copy, so "
                          "the cache you were given stays as it was"), result.fix
    step = _pasted_over(step, "if cache is None:", "valimuisti = cache", result.fix)
    assert check_decoding_step(_step(tmp_path, "finnish_3", step)).passed


# replay 23's 08Z3: a bottom-right mask built by hand one diagonal too low, so no query sees its own key
# (NaN), and the scores divided by the root of d_model
TURKISH_STEP = """
def decode_step(model, tokens, cache):
    gecmis = 0 if cache is None else cache[0][0].shape[2]
    yeni_sayi = tokens.shape[1]
    grup = model.n_heads // model.n_kv_heads
    x = model.embed(tokens, gecmis)
    yeni_onbellek = []
    for katman_no, blok in enumerate(model.blocks):
        dikkat = blok.attention
        h = blok.norm_attention(x)
        sorgu = split_heads(dikkat.W_q(h), model.n_heads)
        anahtar = split_heads(dikkat.W_k(h), model.n_kv_heads)
        deger = split_heads(dikkat.W_v(h), model.n_kv_heads)
        if cache is not None:
            anahtar = torch.cat([cache[katman_no][0], anahtar], dim=2)
            deger = torch.cat([cache[katman_no][1], deger], dim=2)
        yeni_onbellek.append((anahtar, deger))
        tum = anahtar.shape[2]
        A, D = anahtar.repeat_interleave(grup, dim=1), deger.repeat_interleave(grup, dim=1)
        skor = torch.einsum("bhqd,bhkd->bhqk", sorgu, A) / math.sqrt(model.d_model)
        maske = torch.ones(yeni_sayi, tum).tril(tum - yeni_sayi - 1)
        skor = skor.masked_fill(maske == 0, float("-inf"))
        cikti = torch.einsum("bhqk,bhkd->bhqd", skor.softmax(dim=-1), D)
        x = x + dikkat.W_o(merge_heads(cikti))
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(x), yeni_onbellek
"""


def test_a_mask_that_hides_each_querys_own_key_is_found_by_moving_its_diagonal(tmp_path):
    """Replay 23's 08Z3 was told only that its logits were NaN ('matches no known bug', the whole recipe as
    its Fix). Its diagonal, moved by one, takes the NaN away: that is said, with the line changed as the
    Fix, and beside the other mistake the step then shows; alone, it is the known bug."""
    result = check_decoding_step(_step(tmp_path, "turkish", TURKISH_STEP))
    assert result.bug is None and "two mistakes at once, and one of them is its mask" in result.headline, \
        repr(result)
    assert any("no longer gives NaN: your mask hides each query's own key" in line and
               "It then shows another mistake: your step returned the wrong logits on 2 of 2 prefills. It "
               'looks like the known bug "scale by d_model"' in line for line in result.observed), \
        result.observed
    assert result.fix == ("maske = torch.ones(yeni_sayi, tum).tril(tum - yeni_sayi)   # in place of your "
                          "line: tum - yeni_sayi where you wrote tum - yeni_sayi - 1"), result.fix
    mask_only = TURKISH_STEP.replace("math.sqrt(model.d_model)", "math.sqrt(model.d_head)")
    result = check_decoding_step(_step(tmp_path, "turkish_mask", mask_only))
    assert result.bug == "causal_excludes_self", repr(result)
    fixed = _pasted(mask_only, "maske =", result.fix)
    assert check_decoding_step(_step(tmp_path, "turkish_fixed", fixed)).passed
    step = _pasted(TURKISH_STEP, "maske =", result.fix)
    assert check_decoding_step(_step(tmp_path, "turkish_2", step)).bug == "scale_by_d_model"


# replay 24's 02A1: my_attention hands its parameters to an object of the learner's class, whose __call__
# has names of its own; the fill float32's minimum (float16 overflows)
POLISH_CALL = """
class Uwaga:
    def __init__(self):
        self.wypelnienie = torch.finfo(torch.float32).min

    def __call__(self, zapytania, klucze, wartosci, maska=None):
        skala = zapytania.shape[-1] ** -0.5
        wyniki = torch.einsum('...qd,...kd->...qk', zapytania, klucze) * skala
        if maska is not None:
            wyniki = wyniki.masked_fill(~maska, self.wypelnienie)
        wagi = torch.softmax(wyniki, dim=-1)
        return wagi @ wartosci, wagi


uwaga = Uwaga()


def my_attention(q, k, v, mask=None):
    return uwaga(q, k, v, mask)
"""


def test_a_function_that_hands_its_parameters_to_an_objects_call_gets_the_calls_names_and_its_mask(tmp_path):
    """Replay 24's 02A1 (stuck) was given 'scores = scores.masked_fill(~mask, ...)': none of its names is in
    __call__, and four rounds of NameErrors followed. The method is read as the function's own, and mask is
    the name its fourth parameter has (maska)."""
    result = check_attention(_load(tmp_path, "polish", POLISH_CALL).my_attention)
    assert result.bug == "fill_overflows_float16", repr(result)
    line = "wyniki = wyniki.masked_fill(~maska, torch.finfo(wyniki.dtype).min)"
    assert result.fix.startswith(line), result.fix
    fixed = _pasted(POLISH_CALL, "wyniki = wyniki.masked_fill(", result.fix)
    assert check_attention(_load(tmp_path, "polish_fixed", fixed).my_attention).passed


# replay 24's 02A4: one query row at a time, the mask under a name of its own and indexed by the row
WELSH_ROWS = """
def my_attention(q, k, v, mask=None):
    n_q, n_k = q.shape[-2], k.shape[-2]
    graddfa = math.sqrt(q.shape[-1])
    allbwn = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=v.dtype)
    pwysau = torch.zeros(*q.shape[:-1], n_k, dtype=q.dtype)
    mwgwd = mask
    for i in range(n_q):
        sgoriau = (k @ q[..., i, :].unsqueeze(-1)).squeeze(-1) / graddfa
        if mwgwd is not None:
            sgoriau = sgoriau.masked_fill(~mwgwd[..., i, :], torch.finfo(sgoriau.dtype).min)
        rhes = torch.softmax(sgoriau, dim=-1)
        pwysau[..., i, :] = rhes
        allbwn[..., i, :] = (rhes.unsqueeze(-2) @ v).squeeze(-2)
    return allbwn, pwysau
"""


def test_a_mask_indexed_by_a_loop_over_the_query_rows_gets_a_line_that_broadcasts_it_first(tmp_path):
    """Replay 24's 02A4 raised IndexError on a padding mask (3, 1, 5), whose query axis has size 1, and was
    told to run its function by hand; the line above the loop was given only for a loop over the batch."""
    result = check_attention(_load(tmp_path, "welsh", WELSH_ROWS).my_attention)
    assert "raised IndexError" in result.headline, repr(result)
    assert result.fix.startswith("if mwgwd is not None: mwgwd = mwgwd.expand(*q.shape[:-1], k.shape[-2])   # "
                                 "above your loop: mwgwd indexed by i reads an axis"), result.fix
    lines = WELSH_ROWS.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("for i in"))
    lines.insert(at, "    " + result.fix.split("   #")[0])
    assert check_attention(_load(tmp_path, "welsh_fixed", "\n".join(lines) + "\n").my_attention).passed


# replay 24's 05A1: heads merged by a method of the module's own, viewed straight after the transpose; the
# (n, n) mask given a heads' axis in front of its rows under a name of its own; a buffer of sqrt(d_model) as
# the scale
POLISH_MODULE = """
class MyMultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("skala", torch.tensor(math.sqrt(d_model)))

    def podziel_glowy(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.n_heads, -1).transpose(1, 2)

    def polacz_glowy(self, t):
        b, h, n, d_k = t.shape
        return t.transpose(1, 2).view(b, n, h * d_k)

    def forward(self, x, mask=None):
        zapytania = self.podziel_glowy(self.W_q(x))
        klucze = self.podziel_glowy(self.W_k(x))
        wartosci = self.podziel_glowy(self.W_v(x))
        wyniki = torch.matmul(zapytania, klucze.transpose(2, 3)) / self.skala
        if mask is not None:
            maska = mask.unsqueeze(1)
            wyniki = wyniki.masked_fill(~maska, torch.finfo(wyniki.dtype).min)
        wagi = torch.softmax(wyniki, dim=-1)
        return self.W_o(self.polacz_glowy(torch.matmul(wagi, wartosci)))
"""


def test_a_merge_method_viewed_after_a_transpose_and_a_mask_given_a_heads_axis_get_their_own_lines(tmp_path):
    """Replay 24's 05A1 was given 'merged = kontekst.transpose(1, 2).contiguous().view(x.shape)' (no such
    names in its merge method), then, for maska = mask.unsqueeze(1) on an (n, n) mask, no Fix at all."""
    def load(i, text):
        return _load(tmp_path, f"polish_module{i}", text).MyMultiHeadAttention

    _until_it_passes(check_multi_head, load, POLISH_MODULE, [
        ("return t.transpose(1, 2).contiguous().view(b, n, h * d_k)   # in place of your line: contiguous() "
         "before view", "return t.transpose(1, 2).view("),
        ("maska = mask   # in place of your line maska = mask.unsqueeze(1)", "maska = mask.unsqueeze(1)"),
        ('self.register_buffer("skala", torch.tensor(math.sqrt(self.d_k)))   # in place of your line',
         "self.register_buffer(")])


# replay 24's 08A3: the step an object of the learner's class; key/value heads tiled by [:, None].expand(...)
# .reshape(...) over two lines; its count of positions kept on the object; None made a tuple of None
YORUBA_OBJECT = """
class IgbeseDecode:
    def __init__(self):
        self.ipo = 0

    def _bulooki(self, model, bulooki, x, iranti_ipele):
        akiyesi = bulooki.attention
        b, n, _ = x.shape
        h = bulooki.norm_attention(x)
        ibeere = akiyesi.W_q(h).reshape(b, n, model.n_heads, model.d_head).transpose(1, 2)
        kokoro = akiyesi.W_k(h).reshape(b, n, model.n_kv_heads, model.d_head).transpose(1, 2)
        iye = akiyesi.W_v(h).reshape(b, n, model.n_kv_heads, model.d_head).transpose(1, 2)
        if iranti_ipele is not None:
            kokoro = torch.cat((iranti_ipele[0], kokoro), dim=2)
            iye = torch.cat((iranti_ipele[1], iye), dim=2)
        L = kokoro.shape[2]
        egbe = model.n_heads // model.n_kv_heads
        k_gbogbo = kokoro[:, None].expand(b, egbe, model.n_kv_heads, L, model.d_head).reshape(
            b, model.n_heads, L, model.d_head)
        v_gbogbo = iye[:, None].expand(b, egbe, model.n_kv_heads, L, model.d_head).reshape(
            b, model.n_heads, L, model.d_head)
        jade = F.scaled_dot_product_attention(ibeere, k_gbogbo, v_gbogbo, attn_mask=gpt.decoding_mask(n, L))
        x = x + akiyesi.W_o(jade.transpose(1, 2).reshape(b, n, -1))
        x = x + bulooki.mlp(bulooki.norm_mlp(x))
        return x, (kokoro, iye)

    def __call__(self, model, tokens, cache):
        if cache is None:
            self.ipo = 0
            cache = tuple(None for _ in model.blocks)
        x = model.embed(tokens, self.ipo)
        iranti_tuntun = []
        for bulooki, iranti_ipele in zip(model.blocks, cache):
            x, kv = self._bulooki(model, bulooki, x, iranti_ipele)
            iranti_tuntun.append(kv)
        self.ipo += tokens.shape[1]
        return model.unembed(x), tuple(iranti_tuntun)


decode_step = IgbeseDecode()
"""


def test_a_step_that_is_an_object_of_the_learners_class_gets_its_own_lines(tmp_path):
    """Replay 24's 08A3 (an object with __call__) had none of its lines read: it was given 'key, value =
    key.repeat_interleave(group, dim=1), ...' in names it had not, with no place. Its two tiling lines are
    now read (over two lines each), and a Fix that would read its cache where it is a tuple of None is
    not written into its embed line."""
    result = check_decoding_step(_step(tmp_path, "yoruba", YORUBA_OBJECT))
    assert result.bug == "kv_heads_repeated_not_interleaved", repr(result)
    assert result.fix.startswith("k_gbogbo = kokoro.repeat_interleave(egbe, dim=1); v_gbogbo = "
                                 "iye.repeat_interleave(egbe, dim=1)   # in place of your two lines"), \
        result.fix
    step = _pasted_over(YORUBA_OBJECT, "k_gbogbo = kokoro", "b, model.n_heads, L, model.d_head)",
                        result.fix.split("; ")[0])
    step = _pasted_over(step, "v_gbogbo = iye", "b, model.n_heads, L, model.d_head)",
                        result.fix.split("; ")[1])
    result = check_decoding_step(_step(tmp_path, "yoruba_2", step))
    assert result.bug == "state_outside_cache", repr(result)
    assert not result.fix.startswith("x = model.embed(tokens, (0 if cache is None"), result.fix


# replay 25's 02B1: my_attention builds an object of the learner's class with the mask and calls it; the
# mask is used the wrong way round in a torch.where
CZECH_CLASS = """
class Pozornost:
    def __init__(self, maska=None):
        self.maska = maska

    def __call__(self, dotazy, klice, hodnoty):
        skore = torch.matmul(dotazy, klice.mT) / math.sqrt(dotazy.shape[-1])
        if self.maska is not None:
            skore = torch.where(self.maska, torch.finfo(skore.dtype).min, skore)
        vahy = torch.softmax(skore, dim=-1)
        return torch.matmul(vahy, hodnoty), vahy


def my_attention(q, k, v, mask=None):
    pozornost = Pozornost(maska=mask)
    return pozornost(q, k, v)
"""


def test_a_where_the_wrong_way_round_in_a_class_the_function_builds_gets_its_branches_swapped(tmp_path):
    """Replay 25's 02B1 (stuck) was given 'scores = scores.masked_fill(~mask, ...)': none of those names is in
    Pozornost.__call__, where the mask is self.maska; six rounds went in a circle. The class's __call__ is
    read as a helper now, and the torch.where line gets its two branches swapped."""
    result = check_attention(_load(tmp_path, "czech", CZECH_CLASS).my_attention)
    assert result.bug == "mask_inverted", repr(result)
    assert result.fix.startswith("skore = torch.where(self.maska, skore, torch.finfo(skore.dtype).min)   # "
                                 "in place of your line"), result.fix
    fixed = _pasted(CZECH_CLASS, "skore = torch.where(", result.fix)
    assert check_attention(_load(tmp_path, "czech_fixed", fixed).my_attention).passed


# its float32 minimum made a tensor on a line of its own, the mask now the right way round
CZECH_FILL = CZECH_CLASS.replace(
    "            skore = torch.where(self.maska, torch.finfo(skore.dtype).min, skore)\n",
    "            minimum = torch.tensor(torch.finfo(torch.float32).min)\n"
    "            skore = torch.where(self.maska.bool(), skore, minimum)\n")

# -1e9 written into the scores by indexing
SUBSCRIPT_FILL = """
def my_attention(q, k, v, mask=None):
    wyniki = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        wyniki = wyniki.clone()
        wyniki[~mask.expand_as(wyniki)] = -1e9
    return torch.softmax(wyniki, dim=-1) @ v
"""


def test_a_fill_of_a_fixed_dtype_gets_the_scores_own_minimum_on_its_own_line(tmp_path):
    """Replay 25's 02B1, its mask mended: 'minimum = torch.tensor(torch.finfo(torch.float32).min)', then
    'skore = torch.where(m, skore, minimum)' in the __call__ of a class the function builds, was given
    the catalog's 'scores = scores.masked_fill(~mask, ...)', which names nothing it has. Now the line
    that writes the fill gets the minimum of the scores it fills, made a tensor in their dtype (a float32
    tensor turns float64's minimum into -inf); so does '-1e9' written by indexing."""
    for name, source, line, theirs in (
            ("cz", CZECH_FILL, "minimum = torch.tensor(torch.finfo(skore.dtype).min, dtype=skore.dtype)",
             "minimum ="),
            ("pl", SUBSCRIPT_FILL, "wyniki[~mask.expand_as(wyniki)] = torch.finfo(wyniki.dtype).min",
             "wyniki[~mask")):
        result = check_attention(_load(tmp_path, name, source).my_attention)
        assert result.bug == "fill_overflows_float16", repr(result)
        assert result.fix.startswith(f"{line}   # in place of your line"), result.fix
        fixed = _pasted(source, theirs, result.fix)
        assert check_attention(_load(tmp_path, f"{name}_fixed", fixed).my_attention).passed, fixed


def test_a_minimum_made_a_float32_tensor_is_made_in_the_scores_dtype(tmp_path):
    """'minimum = torch.tensor(torch.finfo(skore.dtype).min)' is float32: float64's minimum there is -inf,
    and a fully masked row NaN on float64 inputs alone. The Fix was the catalog's 'keep the scores in their
    own dtype: torch.softmax(scores, dim=-1), with no dtype= ...', a line with no softmax to change; now it
    is the learner's line with the tensor in the scores' dtype, and pasted it passes."""
    source = CZECH_FILL.replace("torch.finfo(torch.float32).min", "torch.finfo(skore.dtype).min")
    assert source != CZECH_FILL != CZECH_CLASS
    result = check_attention(_load(tmp_path, "cz64", source).my_attention)
    assert "NaN or inf on float64 inputs" in result.headline, repr(result)
    line = "minimum = torch.tensor(torch.finfo(skore.dtype).min, dtype=skore.dtype)"
    assert result.fix.startswith(f"{line}   # in place of your line"), result.fix
    fixed = _pasted(source, "minimum =", result.fix)
    assert check_attention(_load(tmp_path, "cz64_fixed", fixed).my_attention).passed, fixed


# the scale from a helper handed the values
VIETNAMESE_SCALE = """
ti_le = lambda t: t.shape[-1] ** -0.5   # he so ti le 1/sqrt(d)


def my_attention(q, k, v, mask=None):
    diem = q @ k.swapaxes(-1, -2)
    diem = diem * ti_le(v)
    if mask is not None:
        diem = diem.masked_fill(mask.int() == 0, torch.finfo(diem.dtype).min)
    trong_so = F.softmax(diem, dim=-1, dtype=torch.float32)
    return trong_so @ v, trong_so
"""


def test_a_scale_helper_handed_the_values_is_handed_the_queries(tmp_path):
    """Replay 24's 02A2 scaled by 'ti_le(v)', a lambda of its own taking the root of its input's last size,
    and was given 'diem = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])' with no place: pasted over the
    product, the helper's scale under it scaled the scores twice, and three rounds followed. Now the line
    that calls the helper hands it q; pasted, then the next Fix (the softmax's dtype=), it passes."""
    _until_it_passes(check_attention, lambda i, source: _load(tmp_path, f"vi{i}", source).my_attention,
                     VIETNAMESE_SCALE,
                     [("diem = diem * ti_le(q)   # in place of your line", "diem = diem * ti_le("),
                      ("trong_so = F.softmax(diem, dim=-1)   # in place of your line",
                       "trong_so = F.softmax(")])


# replay 24's 08A1: a list of [keys, values] lists, written into in place
POLISH_STEP = """
def decode_step(model, tokens, cache):
    if cache is None:
        cache = [[None, None] for _ in model.blocks]
        poprzednie = 0
    else:
        poprzednie = cache[0][0].size(2)
    b, n_nowe = tokens.shape
    x = model.embed(tokens, poprzednie)
    grupa = model.n_heads // model.n_kv_heads
    maska = gpt.decoding_mask(n_nowe, poprzednie + n_nowe)
    for nr, blok in enumerate(model.blocks):
        uwaga = blok.attention
        h = blok.norm_attention(x)
        q = uwaga.W_q(h).view(b, n_nowe, model.n_heads, model.d_head).transpose(1, 2)
        k = uwaga.W_k(h).view(b, n_nowe, model.n_kv_heads, model.d_head).transpose(1, 2)
        v = uwaga.W_v(h).view(b, n_nowe, model.n_kv_heads, model.d_head).transpose(1, 2)
        if cache[nr][0] is not None:
            k = torch.cat([cache[nr][0], k], dim=-2)
            v = torch.cat([cache[nr][1], v], dim=-2)
        cache[nr][0] = k
        cache[nr][1] = v
        wyniki = q @ k.repeat_interleave(grupa, dim=1).transpose(-2, -1) / math.sqrt(model.d_head)
        wagi = torch.softmax(wyniki.masked_fill(~maska, float('-inf')), dim=-1)
        o = (wagi @ v.repeat_interleave(grupa, dim=1)).transpose(1, 2).reshape(b, n_nowe, -1)
        x = x + uwaga.W_o(o)
        x = x + blok.mlp(blok.norm_mlp(x))
    return model.unembed(x), cache
"""


def test_a_step_that_writes_into_the_cache_it_is_given_gets_a_copy_of_its_entries_under_its_guard(tmp_path):
    """Replay 24's 08A1 wrote each layer's keys into the [keys, values] lists of the cache it was given,
    and was given 'new_cache = []   # build the returned cache anew', with no place and nothing its lines
    read. Now: a line of its own that copies the cache's entries, under its 'if cache is None:' lines;
    pasted there, it passes. A step whose guard leaves the cache None gets a line that keeps it None."""
    result = check_decoding_step(_step(tmp_path, "pl", POLISH_STEP))
    assert result.bug == "cache_modified_in_place", repr(result)
    line = "cache = [copy.copy(entry) for entry in cache]"
    assert result.fix.startswith(f"import copy; {line}   # a line of its own, under your 'if cache is None:' "
                                 "lines (after them, not in them)"), result.fix
    code = result.fix.split("   #")[0]
    start = "    b, n_nowe = tokens.shape\n"
    fixed = POLISH_STEP.replace(start, f"    {code}\n{start}")
    assert check_decoding_step(_step(tmp_path, "pl_fixed", fixed)).passed, fixed
    unmade = POLISH_STEP.replace("        cache = [[None, None] for _ in model.blocks]\n", "").replace(
        "    b, n_nowe = tokens.shape\n",
        "    b, n_nowe = tokens.shape\n    cache = cache or [[None, None] for _ in model.blocks]\n")
    result = check_decoding_step(_step(tmp_path, "pl_unmade", unmade))
    line = "cache = None if cache is None else [copy.copy(entry) for entry in cache]"
    assert result.fix.startswith(f"import copy; {line}   # a line of its own"), result.fix
    fixed = unmade.replace(start, f"    import copy; {line}\n{start}")
    assert check_decoding_step(_step(tmp_path, "pl_unmade_fixed", fixed)).passed, fixed


# buffers of every position, made once and written in place (the corpus's preallocated_in_place)
SPANISH_BUFFER_STEP = """
def decode_step(model, tokens, cache):
    lote, nuevos = tokens.shape
    if cache is None:
        forma = (lote, model.n_kv_heads, model.max_len, model.d_head)
        cache = {"pos": 0, "claves": [torch.zeros(forma) for _ in model.blocks],
                 "valores": [torch.zeros(forma) for _ in model.blocks]}
    pos = cache["pos"]
    x = model.embed(tokens, pos)
    grupo = model.n_heads // model.n_kv_heads
    mascara = gpt.decoding_mask(nuevos, pos + nuevos)
    for capa, bloque in enumerate(model.blocks):
        atencion = bloque.attention
        h = bloque.norm_attention(x)
        q = atencion.W_q(h).view(lote, nuevos, model.n_heads, model.d_head).transpose(1, 2)
        claves, valores = cache["claves"][capa], cache["valores"][capa]
        claves[:, :, pos:pos + nuevos] = atencion.W_k(h).view(lote, nuevos, -1, model.d_head).transpose(1, 2)
        valores[:, :, pos:pos + nuevos] = atencion.W_v(h).view(lote, nuevos, -1, model.d_head).transpose(1, 2)
        k = claves[:, :, :pos + nuevos].repeat_interleave(grupo, dim=1)
        v = valores[:, :, :pos + nuevos].repeat_interleave(grupo, dim=1)
        puntos = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)
        pesos = torch.softmax(puntos.masked_fill(~mascara, -1e9), -1)
        x = x + atencion.W_o((pesos @ v).transpose(1, 2).reshape(lote, nuevos, -1))
        x = x + bloque.mlp(bloque.norm_mlp(x))
    cache["pos"] = pos + nuevos
    return model.unembed(x), cache
"""


def test_buffers_written_in_place_get_a_copy_of_the_whole_cache_under_the_guard(tmp_path):
    """A step that makes buffers of every position once, in a dict, and writes each call's keys and values
    into them was told 'new_cache = []   # build the returned cache anew': a list its own lines never
    read. Now: a line of its own under its 'if cache is None:' lines that deep-copies the cache; pasted
    there, it passes. The same step returning a new dict around the same buffers (its writes reach the
    cache only through the buffers it took from it) gets the same line, and passes with it too."""
    start = '    pos = cache["pos"]\n'
    line = "cache = copy.deepcopy(cache)"
    written = '    cache["pos"] = pos + nuevos\n    return model.unembed(x), cache\n'
    returned = '    return model.unembed(x), {**cache, "pos": pos + nuevos}\n'
    shared = SPANISH_BUFFER_STEP.replace(written, returned)
    assert shared != SPANISH_BUFFER_STEP
    for name, source in (("es_buffers", SPANISH_BUFFER_STEP), ("es_shared", shared)):
        result = check_decoding_step(_step(tmp_path, name, source))
        assert result.bug == "cache_modified_in_place", repr(result)
        assert result.fix.startswith(f"import copy; {line}   # a line of its own, under your 'if cache is "
                                     "None:' lines (after them, not in them)"), result.fix
        fixed = source.replace(start, f"    {result.fix.split('   #')[0]}\n{start}")
        assert check_decoding_step(_step(tmp_path, f"{name}_fixed", fixed)).passed, fixed


# replay 24's 08A2: keys and values repeated where they are made, each appended to a dict's list
VIETNAMESE_STEP = """
import torch.nn.functional as F
from attnviz.mha import split_heads, merge_heads


def decode_step(model, tokens, cache):
    so_cu = 0 if cache is None else cache['k'][0].shape[2]
    so_moi = tokens.shape[1]
    x = model.embed(tokens, so_cu)
    nhom = model.n_heads // model.n_kv_heads
    mat_na = torch.ones(so_moi, so_cu + so_moi, dtype=torch.bool).tril(diagonal=so_cu)
    bo_nho_moi = {'k': [], 'v': []}
    for lop, khoi in enumerate(model.blocks):
        chu_y = khoi.attention
        h = khoi.norm_attention(x)
        truy_van = split_heads(chu_y.W_q(h), model.n_heads)
        khoa = split_heads(chu_y.W_k(h), model.n_kv_heads).repeat_interleave(nhom, dim=1)
        gia_tri = split_heads(chu_y.W_v(h), model.n_kv_heads).repeat_interleave(nhom, dim=1)
        if cache is not None:
            khoa = torch.cat([cache['k'][lop], khoa], dim=2)
            gia_tri = torch.cat([cache['v'][lop], gia_tri], dim=2)
        bo_nho_moi['k'].append(khoa)
        bo_nho_moi['v'].append(gia_tri)
        ra = F.scaled_dot_product_attention(truy_van, khoa, gia_tri, attn_mask=mat_na)
        x = x + chu_y.W_o(merge_heads(ra))
        x = x + khoi.mlp(khoi.norm_mlp(x))
    return model.unembed(x), bo_nho_moi
"""


def test_keys_and_values_repeated_before_each_is_appended_on_its_own_line_get_their_lines(tmp_path):
    """Replay 24's 08A2 repeated its keys and values where it made them, and appended each to its own list
    of a dict: the rule that gives those lines without the repeat looked for one line storing both, and
    the catalog's 'new_cache.append((khoa, gia_tri))' came instead, a line it has no form of. Now its three
    lines, the attention one below the cache lines said to stay there; each pasted where it was, it passes."""
    result = check_decoding_step(_step(tmp_path, "vi", VIETNAMESE_STEP))
    assert result.bug == "cache_holds_repeated_heads", repr(result)
    code, _, comment = result.fix.partition("   #")
    parts = code.split("; ")
    assert parts[:2] == ["khoa = split_heads(chu_y.W_k(h), model.n_kv_heads)",
                         "gia_tri = split_heads(chu_y.W_v(h), model.n_kv_heads)"], result.fix
    assert parts[2].startswith("ra = F.scaled_dot_product_attention(truy_van, khoa.repeat_interleave(nhom, "
                               "dim=1), gia_tri.repeat_interleave(nhom, dim=1)"), result.fix
    assert comment.startswith(" in place of your three lines, each where yours was (the last one below your "
                              "cache lines, as now)"), result.fix
    fixed = VIETNAMESE_STEP
    for part, theirs in zip(parts, ("khoa = split_heads", "gia_tri = split_heads", "ra = F."), strict=True):
        fixed = _pasted(fixed, theirs, part)
    assert check_decoding_step(_step(tmp_path, "vi_fixed", fixed)).passed, fixed


# replay 25's 04B4: a padding mask kept by n alone, in an object of the learner's class
CATALAN_CACHE = """
class GeneradorMascara:
    def __init__(self):
        self.cau = {}

    def __call__(self, lengths, n):
        if n in self.cau:
            return self.cau[n]
        mascara = (F.one_hot(lengths, num_classes=n + 1)[:, :n].cumsum(dim=-1) == 0)[:, None, :]
        self.cau[n] = mascara
        return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]


_generador = GeneradorMascara()


def my_padding_mask(lengths, n):
    return _generador(lengths, n)
"""


def test_a_padding_mask_kept_by_n_alone_gets_its_guard_replaced(tmp_path):
    """Replay 25's 04B4 kept each mask by n alone and handed it out for other lengths: 'the mask of an earlier
    call'. Its Fix replaced its return line with that same line, the guard above it left as it was (the
    words the Fix looked for were 'a mask kept from before', and this verdict says 'from an earlier call').
    Now the guard and the line under it are replaced; pasted there, it passes."""
    result = check_padding_mask(_load(tmp_path, "ca", CATALAN_CACHE).my_padding_mask)
    assert "the mask of an earlier call" in result.headline, repr(result)
    assert result.fix.startswith("return (torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # in "
                                 "place of your lines 'if n in self.cau:' and the one under it"), result.fix
    fixed = _pasted_over(CATALAN_CACHE, "if n in self.cau:", "return self.cau[n]", result.fix)
    assert check_padding_mask(_load(tmp_path, "ca_fixed", fixed).my_padding_mask).passed, fixed
