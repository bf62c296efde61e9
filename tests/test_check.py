"""The checkers never crash on learner code, and their verdicts say what they saw."""

import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
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
    assert "features d_v (last dimension)" in repr(result) and "(4, 6)" in repr(result)


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
    assert "Right on:" in repr(result) and "Wrong on:" in repr(result)


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


# ---- masks ------------------------------------------------------------------------------------


def test_causal_mask_problems():
    assert check_causal_mask(lambda n: torch.ones(n, n).tril()).status == "problem"  # float 0/1
    assert "not bool" in repr(check_causal_mask(lambda n: torch.ones(n, n).tril()))
    assert "does not broadcast" in repr(check_causal_mask(lambda n: torch.ones(n + 1, n, dtype=torch.bool)))
    assert check_causal_mask(lambda n: None).status == "problem"
    everything = check_causal_mask(lambda n: torch.ones(n, n, dtype=torch.bool))
    assert everything.bug is None and "comes after it" in repr(everything)
    stub = check_causal_mask(lambda n: (_ for _ in ()).throw(NotImplementedError("use tril")))
    assert stub.status == "not_implemented"


def test_padding_mask_problems():
    flat = check_padding_mask(lambda lengths, n: torch.arange(n)[None, :] < lengths[:, None])  # (batch, n)
    assert not flat.passed and "mask[:, None, :]" in repr(flat)
    everything = check_padding_mask(lambda lengths, n: torch.ones(len(lengths), 1, n, dtype=torch.bool))
    assert everything.bug is None and "may attend to key" in repr(everything)


# ---- layering ---------------------------------------------------------------------------------


def test_check_and_zoo_import_torch_only():
    code = (
        "import sys, attnviz.check, attnviz.zoo; "
        "bad = [m for m in ('ipywidgets', 'plotly', 'IPython') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_code_that_only_works_in_two_dimensions_gets_a_pointed_note():
    def second_axis(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[1])  # d_k read from dimension 1
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        return scores.softmax(-1) @ v

    result = check_attention(second_axis)
    assert not result.passed and result.bug == "batch_one_only"
    assert "q.shape[-1] rather than q.shape[1]" in repr(result)


def test_catalog_doc_is_up_to_date():
    from pathlib import Path

    from attnviz.check._catalog import catalog_markdown

    doc = Path(__file__).resolve().parent.parent / "docs" / "checkers.md"
    assert doc.read_text() == catalog_markdown(), "run: python -m attnviz.check._catalog > docs/checkers.md"
