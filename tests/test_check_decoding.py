"""check_decoding_step: the right step passes, each written-out mistake is named, the rest gets a verdict."""

import pytest
import torch

from attnviz.check import check_decoding_step
from attnviz.check.decoding import DECODING_BUGS, DECODING_WORDS, reference_decode_step


def test_the_reference_step_passes():
    result = check_decoding_step(reference_decode_step)
    assert result.passed and result.status == "passed", result


@pytest.mark.parametrize("bug_id", sorted(DECODING_BUGS))
def test_each_mistake_is_named(bug_id):
    result = check_decoding_step(DECODING_BUGS[bug_id])
    assert not result.passed and result.bug == bug_id, result
    assert result.what == DECODING_WORDS[bug_id][0] and result.fix
    assert "On " in result.observed[0]


def test_the_bugs_are_required_to_be_at_least_these():
    assert {"cache_not_appended", "values_not_appended", "is_causal_top_left",
            "positions_not_advanced"} <= set(DECODING_BUGS)


def test_not_implemented_and_other_failures_are_verdicts():
    def stub(model, tokens, cache):
        raise NotImplementedError("append, attend, advance")

    assert check_decoding_step(stub).status == "not_implemented"
    assert "tuple of two" in check_decoding_step(lambda m, t, c: m(t)[0]).headline
    noisy = check_decoding_step(lambda m, t, c: (m(t)[0] + 1.0, c))   # shape right, numbers not
    assert noisy.status == "problem" and "differ" in noisy.observed[0]
    assert check_decoding_step(42).status == "problem"


def test_recomputing_everything_passes_too():
    """A step that keeps the tokens as its 'cache' and recomputes is slow but correct."""
    def recompute(model, tokens, cache):
        seen = tokens if cache is None else torch.cat([cache, tokens], dim=1)
        return model(seen)[0][:, -tokens.shape[1]:], seen

    assert check_decoding_step(recompute).passed
