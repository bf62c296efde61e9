"""A scale bug's Fix line in the learner's own names (attnviz/check/_yournames.py): pasted in place of
their scores line, it makes their code pass, whatever they called their queries, keys and scores."""

import importlib.util
import textwrap

import pytest

from attnviz.check import check_attention, check_decoding_step, check_multi_head
from attnviz.check._yournames import in_your_names, scores_names

HEAD = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

ATTENTION = """
def attend(Q, K, V, mask=None):
    S = Q @ K.transpose(-2, -1) / K.shape[-1]
    if mask is not None:
        S = S.masked_fill(~mask, torch.finfo(S.dtype).min)
    return S.softmax(dim=-1) @ V
"""

# 05's own solution's names (query, key, scores), the scale left out
MULTI_HEAD = """
class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

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
    assert result.fix.startswith("S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])"), result.fix
    fixed = _load(tmp_path, "a_fixed", _pasted(ATTENTION, "S = Q @", result.fix)).attend
    assert check_attention(fixed).passed


def test_multi_head_fix_in_the_notebooks_own_names_passes_when_pasted(tmp_path):
    result = check_multi_head(_load(tmp_path, "m", MULTI_HEAD).MHA)
    assert result.bug == "missing_scale"
    assert result.fix == "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])"
    fixed = _load(tmp_path, "m_fixed", _pasted(MULTI_HEAD, "scores = torch.matmul", result.fix)).MHA
    assert check_multi_head(fixed).passed


def test_decoding_fix_in_the_learners_names():
    from tests.learner_code import decoding

    step = next(case.obj for case in decoding.CASES if case.name == "divided_by_d_head")
    result = check_decoding_step(step)
    assert result.bug == "wrong_scale"
    assert result.fix.startswith("s = q @ k.transpose(-2, -1) / math.sqrt(model.d_head)"), result.fix


@pytest.mark.parametrize("body, names", [
    ("S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])", ("S", "Q", "K")),
    ("att = (qh @ kh.mT) * scale", ("att", "qh", "kh")),
    ("att = scale * torch.matmul(qh, kh.transpose(2, 3))", ("att", "qh", "kh")),
    ("s = a @ b.transpose(-2, -1) / d ** 1 / 2", ("s", "a", "b")),
    ("s = a @ torch.transpose(b, -2, -1)", ("s", "a", "b")),
    # the softmax of the product is the weights, not the scores: no names, the catalog's Fix stays
    ("w = (a @ b.mT).softmax(-1)", None),
    ("s = torch.einsum('qd,kd->qk', a, b)", None),
    ("s = a @ b", None),
    # two heads' scores under two sets of names: which is meant cannot be told
    ("s1 = a @ b.mT\n    s2 = c @ d.mT", None),
])
def test_scores_names(tmp_path, body, names):
    source = f"def f(a, b, c, d, Q, K, qh, kh, scale):\n    {body}\n    return 0\n"
    assert scores_names(_load(tmp_path, "s", source).f) == names


def test_only_the_fixs_code_and_only_whole_names_change(tmp_path):
    f = _load(tmp_path, "n", "def f(Q, K):\n    S = Q @ K.mT\n    return S\n").f
    fix = "scores = q @ k.transpose(-2, -1) / math.sqrt(self.q.shape[-1] + kq)   # q and k: yours"
    assert in_your_names(f, fix) == \
        "S = Q @ K.transpose(-2, -1) / math.sqrt(self.q.shape[-1] + kq)   # q and k: yours"
    assert in_your_names(len, fix) == fix              # a built-in: no text to read
